package agent

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"strconv"

	"github.com/stratatrace/strata/authn"
)

// Ops are the agent's security and observability settings: credentials
// towards the collector, who may read its HTTP endpoint, who may connect
// to the hook socket, profiling, and the hook files it installs. Each is
// a flag of cmd/strata-agent and a STRATA_ variable (listed in fromEnv).
type Ops struct {
	// TLSCA verifies the collector's certificate (empty with TLSCert set:
	// the system roots); TLSCert and TLSKey are the agent's client
	// certificate (OU agent). All empty: plain TCP to the collector.
	TLSCA, TLSCert, TLSKey string
	// TLSServerName is the name the collector's certificate must carry,
	// when it is not the host of --collector.
	TLSServerName string

	// HTTPTLSCert and HTTPTLSKey serve the HTTP endpoint over TLS.
	HTTPTLSCert, HTTPTLSKey string
	// HTTPClientCA verifies client certificates on the HTTP endpoint
	// (needs HTTPTLSCert).
	HTTPClientCA string
	// HTTPTokenFile lists bearer tokens accepted on the HTTP endpoint.
	HTTPTokenFile string
	// HTTPInsecure serves /metrics and /healthz to anyone. The agent
	// refuses to serve HTTP without HTTPClientCA, HTTPTokenFile or this.
	HTTPInsecure bool

	// HookSocketMode is the hook socket file's mode (default 0666: every
	// local user; SO_PEERCRED binds each report to its sender anyway);
	// with 0660 only HookSocketGroup's members (and root) may connect.
	HookSocketMode os.FileMode
	// HookSocketGroup is the group (name or gid) given the socket file;
	// empty: the agent's.
	HookSocketGroup string

	// HookInstallDir, when set, receives a copy of the JVM hook's files
	// (strata-hook.jar, libstratahook.so) from HookFilesDir at start, for
	// executors to load from a host path (strata hook-opts --dir).
	HookInstallDir string
	// HookFilesDir holds the hook files the image ships; default
	// /usr/share/strata/jvmhook.
	HookFilesDir string

	// PyroscopeServer is the URL continuous profiles go to; empty: off.
	PyroscopeServer string
}

// DefaultHookFilesDir is where the agent's image puts the JVM hook files.
const DefaultHookFilesDir = "/usr/share/strata/jvmhook"

// fromEnv overrides o from STRATA_TLS_CA, _TLS_CERT, _TLS_KEY,
// _TLS_SERVER_NAME, _HTTP_TLS_CERT, _HTTP_TLS_KEY, _HTTP_CLIENT_CA,
// _HTTP_TOKEN_FILE, _HTTP_INSECURE, _HOOK_SOCKET_MODE, _HOOK_SOCKET_GROUP,
// _HOOK_INSTALL_DIR, _HOOK_FILES_DIR and _PYROSCOPE_SERVER.
func (o *Ops) fromEnv(getenv func(string) string) []error {
	strs := map[string]*string{
		"STRATA_TLS_CA": &o.TLSCA, "STRATA_TLS_CERT": &o.TLSCert, "STRATA_TLS_KEY": &o.TLSKey,
		"STRATA_TLS_SERVER_NAME": &o.TLSServerName, "STRATA_HTTP_TLS_CERT": &o.HTTPTLSCert,
		"STRATA_HTTP_TLS_KEY": &o.HTTPTLSKey, "STRATA_HTTP_CLIENT_CA": &o.HTTPClientCA,
		"STRATA_HTTP_TOKEN_FILE": &o.HTTPTokenFile, "STRATA_HOOK_SOCKET_GROUP": &o.HookSocketGroup,
		"STRATA_HOOK_INSTALL_DIR": &o.HookInstallDir, "STRATA_HOOK_FILES_DIR": &o.HookFilesDir,
		"STRATA_PYROSCOPE_SERVER": &o.PyroscopeServer,
	}
	for k, dst := range strs {
		if v := getenv(k); v != "" {
			*dst = v
		}
	}
	var errs []error
	if v := getenv("STRATA_HTTP_INSECURE"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("STRATA_HTTP_INSECURE=%q: %w", v, err))
		}
		o.HTTPInsecure = b
	}
	if v := getenv("STRATA_HOOK_SOCKET_MODE"); v != "" {
		if err := o.SetSocketMode(v); err != nil {
			errs = append(errs, fmt.Errorf("STRATA_HOOK_SOCKET_MODE=%q: %w", v, err))
		}
	}
	return errs
}

// SetSocketMode parses an octal mode such as 0660.
func (o *Ops) SetSocketMode(v string) error {
	m, err := strconv.ParseUint(v, 8, 32)
	if err != nil || m&^0o777 != 0 || m == 0 {
		return fmt.Errorf("mode %q: want octal permission bits such as 0660", v)
	}
	o.HookSocketMode = os.FileMode(m)
	return nil
}

// collectorTLS returns the TLS files towards the collector; ok is false
// for plain TCP.
func (o Ops) collectorTLS() (authn.TLSFiles, bool) {
	f := authn.TLSFiles{CA: o.TLSCA, Cert: o.TLSCert, Key: o.TLSKey}
	return f, f.CA != "" || f.Cert != ""
}

// socketGroup resolves HookSocketGroup to a gid; -1 when unset.
func (o Ops) socketGroup() (int, error) {
	if o.HookSocketGroup == "" {
		return -1, nil
	}
	if gid, err := strconv.Atoi(o.HookSocketGroup); err == nil && gid >= 0 {
		return gid, nil
	}
	g, err := user.LookupGroup(o.HookSocketGroup)
	if err != nil {
		return -1, fmt.Errorf("hook socket group: %w", err)
	}
	return strconv.Atoi(g.Gid)
}

// validate reports settings that cannot work, given the HTTP address.
func (o Ops) validate(httpAddr string) []error {
	var errs []error
	if f, ok := o.collectorTLS(); ok {
		if err := f.Check(); err != nil {
			errs = append(errs, err)
		}
	}
	hf := authn.TLSFiles{CA: o.HTTPClientCA, Cert: o.HTTPTLSCert, Key: o.HTTPTLSKey}
	if err := hf.Check(); err != nil {
		errs = append(errs, fmt.Errorf("http: %w", err))
	}
	if o.HTTPClientCA != "" && o.HTTPTLSCert == "" {
		errs = append(errs, errors.New("--http-client-ca needs --http-tls-cert and --http-tls-key: client certificates come over TLS"))
	}
	if httpAddr != "" {
		if _, _, err := net.SplitHostPort(httpAddr); err != nil {
			errs = append(errs, fmt.Errorf("http address %q: %w", httpAddr, err))
		}
		if o.HTTPClientCA == "" && o.HTTPTokenFile == "" && !o.HTTPInsecure {
			errs = append(errs, errors.New("refusing to serve HTTP without authentication: set --http-token-file and/or "+
				"--http-client-ca (with --http-tls-cert, --http-tls-key), or --http-insecure"))
		}
	}
	if _, err := o.socketGroup(); err != nil {
		errs = append(errs, err)
	}
	return errs
}
