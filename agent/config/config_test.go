package config

import (
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// load runs Load as the command does, with env as the whole environment.
func load(t *testing.T, args []string, env map[string]string) (Config, error) {
	t.Helper()
	fs := flag.NewFlagSet("strata-agent", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return Load(fs, args, func(k string) string { return env[k] })
}

// sample returns a value the flag f accepts that differs from its default.
func sample(t *testing.T, f *flag.Flag) string {
	t.Helper()
	for _, v := range []string{"0640", "7s", "true", "sample"} {
		if err := f.Value.Set(v); err == nil && f.Value.String() != f.DefValue {
			return v
		}
	}
	t.Fatalf("no sample value for --%s (default %q)", f.Name, f.DefValue)
	return ""
}

// TestEverySettingThreeWays: every flag of the command has a variable and
// a file key, and the flag, the variable and the file key set the same
// field to the same value, and only that field.
func TestEverySettingThreeWays(t *testing.T) {
	base, err := load(t, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("strata-agent", flag.ContinueOnError)
	var scratch Config
	scratch.bind(fs)
	vars := map[string]string{}
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		n++
		v := sample(t, f)
		key := Variable(f.Name)
		if !strings.HasPrefix(key, "STRATA_") {
			t.Errorf("--%s: variable %q", f.Name, key)
		}
		if other, dup := vars[key]; dup {
			t.Errorf("--%s and --%s share %s", f.Name, other, key)
		}
		vars[key] = f.Name
		byFlag, err := load(t, []string{"--" + f.Name + "=" + v}, nil)
		if err != nil {
			t.Fatalf("--%s=%s: %v", f.Name, v, err)
		}
		byEnv, err := load(t, nil, map[string]string{key: v})
		if err != nil {
			t.Fatalf("%s=%s: %v", key, v, err)
		}
		file := filepath.Join(t.TempDir(), "agent.json")
		b, _ := json.Marshal(map[string]string{fileKey(f.Name): v})
		os.WriteFile(file, b, 0o600)
		byFile, err := load(t, []string{"--config", file}, nil)
		if err != nil {
			t.Fatalf("file %s: %v", b, err)
		}
		if d := diff(base, byFlag); len(d) != 1 {
			t.Errorf("--%s=%s changed %v; want one field", f.Name, v, d)
		}
		if !reflect.DeepEqual(byFlag, byEnv) || !reflect.DeepEqual(byFlag, byFile) {
			t.Errorf("--%s=%s: flag changed %v, %s %v, file %v", f.Name, v, diff(base, byFlag), key, diff(base, byEnv), diff(base, byFile))
		}
	})
	if n != len(settings) {
		t.Fatalf("%d flags for %d settings", n, len(settings))
	}
}

// diff names the fields of b that differ from a, Hook's fields as Hook.X.
func diff(a, b Config) []string {
	var out []string
	var walk func(prefix string, x, y reflect.Value)
	walk = func(prefix string, x, y reflect.Value) {
		for i := range x.NumField() {
			name := prefix + x.Type().Field(i).Name
			if x.Field(i).Kind() == reflect.Struct {
				walk(name+".", x.Field(i), y.Field(i))
				continue
			}
			if !reflect.DeepEqual(x.Field(i).Interface(), y.Field(i).Interface()) {
				out = append(out, name)
			}
		}
	}
	walk("", reflect.ValueOf(a), reflect.ValueOf(b))
	return out
}

// TestLayers: the file overrides the defaults, the environment the file
// and the flags the environment; NODE_NAME names the node when
// STRATA_NODE_NAME does not; the variables kept from earlier releases
// still set their fields; file values may be numbers and booleans.
func TestLayers(t *testing.T) {
	file := filepath.Join(t.TempDir(), "agent.json")
	os.WriteFile(file, []byte(`{"collector": "file:1", "spool_dir": "/file", "hook_max_sessions": 12,
		"hook_socket_mode": "0660", "http_insecure": true, "flush_interval": "3s"}`), 0o600)
	env := map[string]string{"STRATA_CONFIG": file, "STRATA_SPOOL_DIR": "/env", "STRATA_HOOK_MAX_SESSIONS": "13",
		"NODE_NAME": "downward", "STRATA_HOOK_INSTALL_DIR": "/opt/hook", "STRATA_HOOK_FILES_DIR": "/usr/hook"}
	c, err := load(t, []string{"--hook-max-sessions", "14"}, env)
	if err != nil {
		t.Fatal(err)
	}
	got := []any{c.Collector, c.SpoolDir, c.Hook.MaxSessions, c.Hook.Mode, c.HTTPInsecure, c.FlushInterval, c.NodeName, c.HookInstallDir, c.HookFilesDir}
	want := []any{"file:1", "/env", 14, os.FileMode(0o660), true, 3 * time.Second, "downward", "/opt/hook", "/usr/hook"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	env["STRATA_NODE_NAME"] = "strata"
	if c, _ := load(t, nil, env); c.NodeName != "strata" {
		t.Fatalf("node name %q with STRATA_NODE_NAME and NODE_NAME set", c.NodeName)
	}
}

// TestLoadErrors: a value that does not parse names its variable or file
// key; an unknown file key is refused; a bound that is not positive and
// security settings that cannot work do not validate.
func TestLoadErrors(t *testing.T) {
	if _, err := load(t, nil, map[string]string{"STRATA_HOOK_IDLE_TIMEOUT": "soon"}); !errors.Is(err, ErrConfig) ||
		!strings.Contains(err.Error(), "STRATA_HOOK_IDLE_TIMEOUT") {
		t.Errorf("unparsable variable: %v", err)
	}
	if _, err := load(t, nil, map[string]string{"STRATA_HOOK_SOCKET_MODE": "rw-rw----"}); !errors.Is(err, ErrConfig) ||
		!strings.Contains(err.Error(), "STRATA_HOOK_SOCKET_MODE") {
		t.Errorf("bad mode: %v", err)
	}
	file := filepath.Join(t.TempDir(), "agent.json")
	os.WriteFile(file, []byte(`{"hook_max_sesions": 3, "log_burst": "many"}`), 0o600)
	_, err := load(t, []string{"--config=" + file}, nil)
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), `"hook_max_sesions"`) || !strings.Contains(err.Error(), "log_burst") {
		t.Errorf("bad file: %v", err)
	}

	c := Default()
	c.Hook.MaxLiveBlocks = 0
	if err := c.Validate(); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "max live blocks") {
		t.Errorf("zero bound: %v", err)
	}
	c = Default()
	c.HTTPAddr, c.TLSCA, c.TLSCert, c.TLSKey = "127.0.0.1:9464", "/ca", "/c", "/k"
	c.HTTPTLSCert, c.HTTPTLSKey, c.HTTPClientCA, c.HTTPTokenFile = "/hc", "/hk", "/hca", "/tok"
	c.HookSocketGroup = "4242"
	if err := c.Validate(); err != nil {
		t.Fatalf("validate: %v", err)
	}
	for name, tc := range map[string]struct {
		tweak func(*Config)
		says  string
	}{
		"http without auth":     {func(c *Config) { c.HTTPTokenFile, c.HTTPClientCA = "", "" }, "refusing to serve HTTP"},
		"client ca without tls": {func(c *Config) { c.HTTPTLSCert, c.HTTPTLSKey = "", "" }, "--http-client-ca needs"},
		"cert without key":      {func(c *Config) { c.TLSKey = "" }, "certificate and key"},
		"unknown group":         {func(c *Config) { c.HookSocketGroup = "no-such-group-here" }, "hook socket group"},
		"workload counters":     {func(c *Config) { c.WorkloadCounters = "pmu" }, `workload counters = "pmu"`},
		"cpu policy":            {func(c *Config) { c.CPUPolicy = "idle" }, `cpu policy = "idle"`},
		"log level":             {func(c *Config) { c.LogLevel = "loud" }, "log level"},
	} {
		c2 := c
		tc.tweak(&c2)
		if err := c2.Validate(); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v; want an error saying %q", name, err, tc.says)
		}
	}
	if gid, err := c.SocketGroup(); gid != 4242 || err != nil {
		t.Errorf("socket group %d, %v", gid, err)
	}
}
