package authn

import (
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Bundle is a directory as `strata certs init` fills it:
//
//	ca.crt, ca.key                 the CA (keep ca.key off the nodes)
//	collector.crt, collector.key   OU collector, server and client use, SANs = hosts
//	agent.crt, agent.key           OU agent, client use
//	client.crt, client.key         OU client, client use (the CLI, Prometheus)
//	tokens                         one bearer token (client role)
type Bundle struct{ Dir string }

// CA is the CA certificate's path.
func (b Bundle) CA() string { return filepath.Join(b.Dir, "ca.crt") }

// Files returns the TLS files of role with the bundle's CA.
func (b Bundle) Files(role Role) TLSFiles {
	return TLSFiles{CA: b.CA(), Cert: filepath.Join(b.Dir, string(role)+".crt"), Key: filepath.Join(b.Dir, string(role)+".key")}
}

// ClientTLS is the TLS configuration of a client trusting the bundle's
// CA and presenting role's certificate (none for RoleAny).
func (b Bundle) ClientTLS(role Role) (*tls.Config, error) {
	f := TLSFiles{CA: b.CA()}
	if role != RoleAny {
		rf := b.Files(role)
		f.Cert, f.Key = rf.Cert, rf.Key
	}
	return f.ClientConfig("")
}

// TokenFile is the token file's path.
func (b Bundle) TokenFile() string { return filepath.Join(b.Dir, "tokens") }

// WriteBundle makes a CA in dir (created 0700 when missing) and issues the
// collector's certificate for hosts, one agent and one client certificate,
// and a token, each valid for validity.
func WriteBundle(dir string, hosts []string, validity time.Duration) (Bundle, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Bundle{}, fmt.Errorf("create certs dir: %w", err)
	}
	ca, err := NewCA("Strata CA", validity)
	if err != nil {
		return Bundle{}, err
	}
	if _, _, err := WriteFiles(dir, "ca", ca.Cert, ca.Key); err != nil {
		return Bundle{}, err
	}
	for _, l := range []struct {
		role  Role
		name  string
		hosts []string
	}{{RoleCollector, "strata-collector", hosts}, {RoleAgent, "strata-agent", nil}, {RoleClient, "strata-client", nil}} {
		leaf, err := ca.Issue(l.role, l.name, l.hosts, validity)
		if err != nil {
			return Bundle{}, err
		}
		if _, _, err := WriteFiles(dir, string(l.role), leaf.Cert, leaf.Key); err != nil {
			return Bundle{}, err
		}
	}
	tok, err := NewToken()
	if err != nil {
		return Bundle{}, err
	}
	b := Bundle{Dir: dir}
	return b, WriteToken(b.TokenFile(), tok)
}
