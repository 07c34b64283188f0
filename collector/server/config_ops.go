package server

import (
	"flag"
	"fmt"
	"net"
	"strings"

	"github.com/stratatrace/strata/authn"
)

// Ops are the settings of who may connect (see package authn) and of the
// collector's own observability. Each has a flag, a JSON key and a
// STRATA_COLLECTOR_ variable (--tls-cert, tls_cert,
// STRATA_COLLECTOR_TLS_CERT, ...).
type Ops struct {
	// TLSCert and TLSKey are the collector's certificate and key, served
	// on the gRPC and the HTTP listener. Empty: plain TCP.
	TLSCert string `json:"tls_cert"`
	TLSKey  string `json:"tls_key"`
	// TLSClientCA verifies client certificates (mutual TLS): agents and
	// users authenticate with certificates it signed, their role in the
	// subject's OU. Without TokenFile a certificate is required at the
	// handshake.
	TLSClientCA string `json:"tls_client_ca"`
	// TokenFile lists bearer tokens accepted from clients (queries, HTTP
	// endpoints), one per line; re-read when it changes.
	TokenFile string `json:"token_file"`
	// Insecure serves TCP listeners to anyone without credentials. For a
	// laptop or a test; a collector refuses to start on TCP without
	// TLSClientCA, TokenFile or Insecure.
	Insecure bool `json:"insecure"`
	// HTTP is host:port of the HTTP endpoint: /metrics, /healthz and the
	// handlers mounted with WithHTTPHandler, behind the same
	// authentication. Empty: off.
	HTTP string `json:"http"`
	// PyroscopeServer is the URL of a Pyroscope server to send continuous
	// profiles to. Empty: no profiling.
	PyroscopeServer string `json:"pyroscope_server"`
}

func (o *Ops) flags(fs *flag.FlagSet) {
	fs.StringVar(&o.TLSCert, "tls-cert", o.TLSCert, "PEM certificate the collector serves (gRPC and HTTP); empty: plain TCP")
	fs.StringVar(&o.TLSKey, "tls-key", o.TLSKey, "PEM private key of --tls-cert")
	fs.StringVar(&o.TLSClientCA, "tls-client-ca", o.TLSClientCA, "PEM CA that signs agents' and users' client certificates (mutual TLS)")
	fs.StringVar(&o.TokenFile, "token-file", o.TokenFile, "file of bearer tokens accepted from clients, one per line")
	fs.BoolVar(&o.Insecure, "insecure", o.Insecure, "serve TCP without authentication (development only)")
	fs.StringVar(&o.HTTP, "http", o.HTTP, "host:port for /metrics, /healthz and mounted handlers (empty: off)")
	fs.StringVar(&o.PyroscopeServer, "pyroscope-server", o.PyroscopeServer, "Pyroscope server URL for continuous profiling (empty: off)")
}

// validate checks the settings against the gRPC listen address.
func (o Ops) validate(listen string) error {
	files := o.tlsFiles()
	if err := files.Check(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if o.TLSClientCA != "" && o.TLSCert == "" {
		return fmt.Errorf("%w: --tls-client-ca needs --tls-cert and --tls-key: client certificates come over TLS", ErrInvalidConfig)
	}
	if !o.authenticates() && !o.Insecure && (!strings.HasPrefix(listen, "unix:") || o.HTTP != "") {
		return fmt.Errorf("%w: refusing to serve TCP without authentication: set --tls-client-ca (with --tls-cert, --tls-key) "+
			"and/or --token-file, or --insecure for development", ErrInvalidConfig)
	}
	if o.HTTP != "" {
		if _, _, err := net.SplitHostPort(o.HTTP); err != nil {
			return fmt.Errorf("%w: http address %q: %w", ErrInvalidConfig, o.HTTP, err)
		}
	}
	return nil
}

// authenticates reports whether some credential is configured.
func (o Ops) authenticates() bool { return o.TLSClientCA != "" || o.TokenFile != "" }

func (o Ops) tlsFiles() authn.TLSFiles {
	return authn.TLSFiles{CA: o.TLSClientCA, Cert: o.TLSCert, Key: o.TLSKey}
}
