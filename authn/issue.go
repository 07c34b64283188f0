package authn

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// CA is a certificate authority that issues Strata's certificates: what
// `strata certs` writes for tests and small clusters. Larger ones use
// their own PKI (cert-manager, Vault) with the same roles in the OU.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
}

// NewCA makes a self-signed CA valid for validity.
func NewCA(name string, validity time.Duration) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate CA key: %w", err)
	}
	tmpl, err := template(name, validity)
	if err != nil {
		return nil, err
	}
	tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.MaxPathLenZero = true, true, true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("create CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse CA certificate: %w", err)
	}
	return &CA{Cert: cert, Key: key}, nil
}

// Leaf is an issued certificate and its key.
type Leaf struct {
	Cert *x509.Certificate
	Key  crypto.Signer
}

// Issue signs a certificate for role named name. Agents and clients get a
// client certificate; a collector's is good for both ends, so it can serve
// and probe itself. hosts (DNS names and IP addresses) go into the subject
// alternative names of a certificate that may serve: collectors always,
// and agents (their HTTP endpoint) when hosts are given.
func (ca *CA) Issue(role Role, name string, hosts []string, validity time.Duration) (*Leaf, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate key: %w", err)
	}
	tmpl, err := template(name, validity)
	if err != nil {
		return nil, err
	}
	tmpl.Subject.OrganizationalUnit = []string{string(role)}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	switch {
	case role == RoleCollector, role == RoleAgent && len(hosts) > 0:
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
		for _, h := range hosts {
			if ip := net.ParseIP(h); ip != nil {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			} else {
				tmpl.DNSNames = append(tmpl.DNSNames, h)
			}
		}
	case role != RoleAgent && role != RoleClient:
		return nil, fmt.Errorf("issue certificate: unknown role %q", role)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return nil, fmt.Errorf("issue certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse certificate: %w", err)
	}
	return &Leaf{Cert: cert, Key: key}, nil
}

func template(name string, validity time.Duration) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generate serial: %w", err)
	}
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name, Organization: []string{"Strata"}},
		NotBefore:    now.Add(-5 * time.Minute), // tolerate clocks slightly behind
		NotAfter:     now.Add(validity),
	}, nil
}

// WriteFiles writes the certificate to dir/name.crt and the key to
// dir/name.key (mode 0600), and returns their paths.
func WriteFiles(dir, name string, cert *x509.Certificate, key crypto.Signer) (certPath, keyPath string, err error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", "", fmt.Errorf("marshal key: %w", err)
	}
	certPath, keyPath = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := writeFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), 0o644); err != nil {
		return "", "", err
	}
	if err := writeFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return "", "", err
	}
	return certPath, keyPath, nil
}

// LoadCA reads a CA written by WriteFiles as dir/ca.crt and dir/ca.key.
func LoadCA(dir string) (*CA, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		return nil, fmt.Errorf("read CA: %w", err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, "ca.key"))
	if err != nil {
		return nil, fmt.Errorf("read CA key: %w", err)
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, errors.New("read CA: no PEM block in ca.crt or ca.key")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse CA: %w", err)
	}
	k, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse CA key: %w", err)
	}
	signer, ok := k.(crypto.Signer)
	if !ok || !cert.IsCA {
		return nil, errors.New("read CA: ca.crt is not a CA or its key cannot sign")
	}
	return &CA{Cert: cert, Key: signer}, nil
}

// NewToken returns a random bearer token: 32 bytes, hex.
func NewToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// writeFile writes data to path through a temporary file and a rename, so
// a reader never sees half a file.
func writeFile(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// WriteToken writes tokens to path (mode 0600), one per line.
func WriteToken(path string, tokens ...string) error {
	var b []byte
	for _, t := range tokens {
		b = append(b, t...)
		b = append(b, '\n')
	}
	return writeFile(path, b, 0o600)
}
