package agent

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestBoundsFromEnv: every bound reads its STRATA_* variable; a value that
// does not parse is an error naming the variable, and a bound that is not
// positive does not validate.
func TestBoundsFromEnv(t *testing.T) {
	env := map[string]string{
		"STRATA_HOOK_MAX_SESSIONS": "10", "STRATA_HOOK_MAX_SESSIONS_PER_UID": "5",
		"STRATA_HOOK_MAX_SESSIONS_PER_PID": "2", "STRATA_HOOK_HELLO_TIMEOUT": "3s",
		"STRATA_HOOK_IDLE_TIMEOUT": "90s", "STRATA_HOOK_MAX_RANGE_BYTES": "1048576",
		"STRATA_HOOK_MAX_BLOCKS_PER_SESSION": "7", "STRATA_HOOK_MAX_BLOCKS_PER_UID": "8",
		"STRATA_MAX_LIVE_BLOCKS": "9", "STRATA_RESOLVE_SLICE_PAGES": "1024",
		"STRATA_PAGE_CACHE_BYTES": "4096", "STRATA_KERNEL_MAX_BLOCKS": "2048",
		"STRATA_LOG_BURST": "3", "STRATA_LOG_INTERVAL": "1m", "STRATA_SPOOL_MAX_BYTES": "65536",
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	c := DefaultConfig()
	if err := c.FromEnv(); err != nil {
		t.Fatal(err)
	}
	got := []any{c.HookMaxSessions, c.HookMaxSessionsPerUID, c.HookMaxSessionsPerPID, c.HookHelloTimeout,
		c.HookIdleTimeout, c.HookMaxRangeBytes, c.HookMaxBlocksPerSession, c.HookMaxBlocksPerUID,
		c.MaxLiveBlocks, c.ResolveSlicePages, c.PageCacheBytes, c.KernelMaxBlocks, c.LogBurst, c.LogInterval, c.SpoolMaxBytes}
	want := []any{10, 5, 2, 3 * time.Second, 90 * time.Second, uint64(1 << 20), 7, 8, 9, 1024, int64(4096), uint32(2048), 3, time.Minute, int64(65536)}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("bound %d = %v, want %v", i, got[i], want[i])
		}
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("validate: %v", err)
	}

	t.Setenv("STRATA_HOOK_IDLE_TIMEOUT", "soon")
	c = DefaultConfig()
	if err := c.FromEnv(); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "STRATA_HOOK_IDLE_TIMEOUT") {
		t.Fatalf("unparsable variable: %v", err)
	}
	c = DefaultConfig()
	c.MaxLiveBlocks = 0
	if err := c.Validate(); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "max live blocks") {
		t.Fatalf("zero bound: %v", err)
	}
}

// TestOpsFromEnv: the security and observability settings read their
// STRATA_ variables; settings that cannot work do not validate.
func TestOpsFromEnv(t *testing.T) {
	env := map[string]string{
		"STRATA_TLS_CA": "/ca", "STRATA_TLS_CERT": "/c", "STRATA_TLS_KEY": "/k", "STRATA_TLS_SERVER_NAME": "collector",
		"STRATA_HTTP": "127.0.0.1:9464", "STRATA_HTTP_TLS_CERT": "/hc", "STRATA_HTTP_TLS_KEY": "/hk",
		"STRATA_HTTP_CLIENT_CA": "/hca", "STRATA_HTTP_TOKEN_FILE": "/tok", "STRATA_HTTP_INSECURE": "false",
		"STRATA_HOOK_SOCKET_MODE": "0660", "STRATA_HOOK_SOCKET_GROUP": "4242",
		"STRATA_HOOK_INSTALL_DIR": "/opt/strata/jvmhook", "STRATA_PYROSCOPE_SERVER": "http://p:4040",
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	c := DefaultConfig()
	if err := c.FromEnv(); err != nil {
		t.Fatal(err)
	}
	want := Ops{TLSCA: "/ca", TLSCert: "/c", TLSKey: "/k", TLSServerName: "collector", HTTPTLSCert: "/hc", HTTPTLSKey: "/hk",
		HTTPClientCA: "/hca", HTTPTokenFile: "/tok", HookSocketMode: 0o660, HookSocketGroup: "4242",
		HookInstallDir: "/opt/strata/jvmhook", HookFilesDir: DefaultHookFilesDir, PyroscopeServer: "http://p:4040"}
	if c.Ops != want || c.HTTPAddr != "127.0.0.1:9464" {
		t.Fatalf("ops = %+v (http %q), want %+v", c.Ops, c.HTTPAddr, want)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("validate: %v", err)
	}
	if h := c.hookConfig(); h.Mode != 0o660 || h.GID != 4242 {
		t.Fatalf("hook socket mode %o gid %d", h.Mode, h.GID)
	}
	for name, tc := range map[string]struct {
		tweak func(*Config)
		says  string
	}{
		"http without auth":     {func(c *Config) { c.HTTPTokenFile, c.HTTPClientCA = "", "" }, "refusing to serve HTTP"},
		"client ca without tls": {func(c *Config) { c.HTTPTLSCert, c.HTTPTLSKey = "", "" }, "--http-client-ca needs"},
		"cert without key":      {func(c *Config) { c.TLSKey = "" }, "certificate and key"},
		"unknown group":         {func(c *Config) { c.HookSocketGroup = "no-such-group-here" }, "hook socket group"},
	} {
		c2 := c
		tc.tweak(&c2)
		if err := c2.Validate(); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v; want an error saying %q", name, err, tc.says)
		}
	}
	t.Setenv("STRATA_HOOK_SOCKET_MODE", "rw-rw----")
	c = DefaultConfig()
	if err := c.FromEnv(); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "STRATA_HOOK_SOCKET_MODE") {
		t.Fatalf("bad mode: %v", err)
	}
}
