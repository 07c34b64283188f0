package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stratatrace/strata/agent/config"
	"github.com/stratatrace/strata/authn"
	"github.com/stratatrace/strata/test/testenv"
)

// TestEveryFlagHasAVariable: every flag the command takes, but --version,
// is a setting whose variable changes the configuration as the flag does
// (--config is named by STRATA_CONFIG).
func TestEveryFlagHasAVariable(t *testing.T) {
	newFlags := func() *flag.FlagSet {
		fs := flag.NewFlagSet("strata-agent", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fs.Bool("version", false, "")
		return fs
	}
	fs := newFlags()
	base, err := config.Load(fs, nil, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "agent.json")
	os.WriteFile(file, []byte(`{"collector": "from-file:1"}`), 0o600)
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name == "version" {
			return
		}
		variable, value := config.Variable(f.Name), ""
		for _, v := range []string{"0640", "7s", "true", "sample"} { // f's field is Load's copy, not base
			if f.Value.Set(v) == nil && f.Value.String() != f.DefValue {
				value = v
				break
			}
		}
		if f.Name == config.ConfigFlag {
			variable, value = "STRATA_CONFIG", file
		}
		byVar, err := config.Load(newFlags(), nil, func(k string) string {
			if k == variable {
				return value
			}
			return ""
		})
		if err != nil {
			t.Errorf("--%s: %s=%s: %v", f.Name, variable, value, err)
			return
		}
		byFlag, err := config.Load(newFlags(), []string{"--" + f.Name + "=" + value}, func(string) string { return "" })
		if err != nil {
			t.Errorf("--%s %s: %v", f.Name, value, err)
			return
		}
		if reflect.DeepEqual(byVar, base) || !reflect.DeepEqual(byVar, byFlag) {
			t.Errorf("--%s: %s=%s sets %+v, the flag %+v", f.Name, variable, value, byVar, byFlag)
		}
	})
}

// TestProbe runs the command twice, as the container does: the agent, and
// its probe with the same flags, which reaches /healthz with the agent's
// own credentials (a token over plain HTTP, its client certificate over
// TLS); with a token the agent does not accept the probe exits 1.
func TestProbe(t *testing.T) {
	b, err := authn.WriteBundle(t.TempDir(), []string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	srv, ag := b.Files(authn.RoleCollector), b.Files(authn.RoleAgent)
	wrong := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(wrong, []byte(strings.Repeat("0", 64)+"\n"), 0o600)
	for name, creds := range map[string][]string{
		"token": {"--http-token-file", b.TokenFile()},
		"certificate": {"--http-tls-cert", srv.Cert, "--http-tls-key", srv.Key, "--http-client-ca", b.CA(),
			"--tls-ca", b.CA(), "--tls-cert", ag.Cert, "--tls-key", ag.Key},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			port, err := testenv.FreePort()
			if err != nil {
				t.Fatal(err)
			}
			args := append([]string{"--node-name", "node-p", "--collector", "127.0.0.1:1", "--faults", "off", "--cpu-policy", "normal",
				"--hook-socket", filepath.Join(dir, "hook.sock"), "--spool-dir", filepath.Join(dir, "spool"),
				"--drain-timeout", "10ms", "--http", fmt.Sprintf("127.0.0.1:%d", port)}, creds...)
			noEnv := func(string) string { return "" }
			ctx, cancel := context.WithCancel(context.Background())
			code := make(chan int, 1)
			go func() { code <- run(ctx, args, noEnv, io.Discard, io.Discard) }()
			var stderr strings.Builder
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				stderr.Reset()
				if run(context.Background(), append([]string{"probe"}, args...), noEnv, io.Discard, &stderr) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("probe: %s", stderr.String())
				}
			}
			if name == "token" {
				stderr.Reset()
				bad := append(append([]string{"probe"}, args...), "--http-token-file", wrong)
				if c := run(context.Background(), bad, noEnv, io.Discard, &stderr); c != 1 || !strings.Contains(stderr.String(), "401") {
					t.Errorf("probe with a token the agent does not accept: exit %d, %q; want 1, 401", c, stderr.String())
				}
			}
			cancel()
			if c := <-code; c != 0 {
				t.Fatalf("agent exited %d", c)
			}
		})
	}
}
