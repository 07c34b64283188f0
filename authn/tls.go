package authn

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync"
)

// TLSFiles names the PEM files of one end of a TLS connection.
type TLSFiles struct {
	// CA verifies the other end: the server's client CA (mutual TLS), or
	// the client's root for the server (empty: the system roots).
	CA string
	// Cert and Key are this end's certificate chain and private key; a
	// server needs them, a client presents them when set.
	Cert, Key string
}

// ErrTLSConfig is wrapped by every reason TLSFiles cannot be used.
var ErrTLSConfig = errors.New("bad TLS configuration")

// Check reports settings that cannot work: a certificate without its key
// or the other way round.
func (f TLSFiles) Check() error {
	if (f.Cert == "") != (f.Key == "") {
		return fmt.Errorf("%w: certificate and key go together (cert %q, key %q)", ErrTLSConfig, f.Cert, f.Key)
	}
	return nil
}

// ServerConfig returns the TLS configuration of a server with f.Cert and
// f.Key. With f.CA it verifies client certificates against it: required
// when requireClientCert, else checked when given (bearer-token clients
// may come without one). The key pair is read again at the next handshake
// after its files change; the CA is read once.
func (f TLSFiles) ServerConfig(requireClientCert bool) (*tls.Config, error) {
	if err := f.Check(); err != nil {
		return nil, err
	}
	if f.Cert == "" {
		return nil, fmt.Errorf("%w: a TLS server needs a certificate and key", ErrTLSConfig)
	}
	kp := &keyPair{cert: f.Cert, key: f.Key}
	if _, err := kp.get(); err != nil {
		return nil, err
	}
	cfg := &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return kp.get() },
	}
	if f.CA != "" {
		pool, err := readCA(f.CA)
		if err != nil {
			return nil, err
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
		if requireClientCert {
			cfg.ClientAuth = tls.RequireAndVerifyClientCert
		}
	}
	return cfg, nil
}

// ClientConfig returns the TLS configuration of a client: the server is
// verified against f.CA (the system roots when empty) under serverName
// (the dialled host when empty), and f.Cert and f.Key, when set, are
// presented to it, read again after their files change.
func (f TLSFiles) ClientConfig(serverName string) (*tls.Config, error) {
	if err := f.Check(); err != nil {
		return nil, err
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName}
	if f.CA != "" {
		pool, err := readCA(f.CA)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	if f.Cert != "" {
		kp := &keyPair{cert: f.Cert, key: f.Key}
		if _, err := kp.get(); err != nil {
			return nil, err
		}
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return kp.get() }
	}
	return cfg, nil
}

// keyPair is a certificate and key read from files, read again when
// either file's stamp changes.
type keyPair struct {
	cert, key string

	mu     sync.Mutex
	stamps [2]fileStamp
	c      *tls.Certificate
}

func (k *keyPair) get() (*tls.Certificate, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	stamps, err := statAll(k.cert, k.key)
	if err != nil && k.c != nil {
		return k.c, nil // mid-rotation: keep serving the pair read before
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTLSConfig, err)
	}
	if k.c != nil && stamps == k.stamps {
		return k.c, nil
	}
	c, err := tls.LoadX509KeyPair(k.cert, k.key)
	if err != nil {
		if k.c != nil {
			return k.c, nil
		}
		return nil, fmt.Errorf("%w: load key pair %s: %w", ErrTLSConfig, k.cert, err)
	}
	k.c, k.stamps = &c, stamps
	return k.c, nil
}

// readCA reads a PEM bundle of CA certificates.
func readCA(path string) (*x509.CertPool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: read CA: %w", ErrTLSConfig, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("%w: read CA: no PEM certificate in %s", ErrTLSConfig, path)
	}
	return pool, nil
}

func statAll(paths ...string) ([2]fileStamp, error) {
	var out [2]fileStamp
	for i, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return out, fmt.Errorf("stat %s: %w", p, err)
		}
		out[i] = stampOf(st)
	}
	return out, nil
}

// SelfTLS is the client TLS configuration of a process probing its own
// server (a container's health check): the server must present the
// certificate of the key pair certFile and keyFile — no CA or host name to
// agree on, it is the process next door — and the client presents
// clientCert and clientKey when set.
func SelfTLS(certFile, keyFile, clientCert, clientKey string) (*tls.Config, error) {
	own, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("%w: load key pair %s: %w", ErrTLSConfig, certFile, err)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true,
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 || !bytes.Equal(raw[0], own.Certificate[0]) {
				return fmt.Errorf("%w: the server does not present %s", ErrTLSConfig, certFile)
			}
			return nil
		}}
	if clientCert != "" {
		c, err := tls.LoadX509KeyPair(clientCert, clientKey)
		if err != nil {
			return nil, fmt.Errorf("%w: load key pair %s: %w", ErrTLSConfig, clientCert, err)
		}
		cfg.Certificates = []tls.Certificate{c}
	}
	return cfg, nil
}
