package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// setting is one row of the table: a flag --name, the variable
// STRATA_NAME (name in upper case, - as _) unless env names another, and
// the config file's key name_with_underscores.
type setting struct {
	name  string
	env   string // the variable when it is not derived from name
	usage string
	field func(*Config) any // a pointer to the field the setting sets
}

// settings is the agent's one table of settings.
var settings = []setting{
	{"node-name", "", "node name carried by every batch (also $NODE_NAME, as the downward API sets it)", func(c *Config) any { return &c.NodeName }},
	{"collector", "", "collector gRPC address", func(c *Config) any { return &c.Collector }},
	{"spool-dir", "", "directory for batches not yet acknowledged", func(c *Config) any { return &c.SpoolDir }},
	{"spool-max-bytes", "", "refuse new batches past this many spooled bytes (0 = 1 GiB)", func(c *Config) any { return &c.SpoolMaxBytes }},
	{"proc", "", "procfs mount", func(c *Config) any { return &c.ProcRoot }},
	{"sys", "", "sysfs mount", func(c *Config) any { return &c.SysRoot }},
	{"http", "", "address for /metrics and /healthz (empty: off)", func(c *Config) any { return &c.HTTPAddr }},
	{"flush-interval", "", "cut a batch at least this often", func(c *Config) any { return &c.FlushInterval }},
	{"drain-timeout", "", "on shutdown, wait this long for acks", func(c *Config) any { return &c.DrainTimeout }},
	{"faults", "", "kernel fault attribution: auto, on or off", func(c *Config) any { return &c.Faults }},
	{"workload-counters", "", "hooked processes' task clock, switches and faults: procfs (no cost to them), perf (exact; every switch pays), or auto (perf where a PMU is)",
		func(c *Config) any { return &c.WorkloadCounters }},
	{"cpu-policy", "", "scheduling of the agent's threads: batch (SCHED_BATCH: its fair share, without preempting the workload each time it wakes) or normal",
		func(c *Config) any { return &c.CPUPolicy }},
	{"nice", "", "nice value of the agent's threads, 0 to 19: when the workload and the agent both want a CPU, the workload goes first",
		func(c *Config) any { return &c.Nice }},
	{"page-flags", "", "pages that get kpageflags: all, or sampled (block pages without flags, several times faster)", func(c *Config) any { return &c.PageFlags }},
	{"sample-every", "", "emit one sampled fault event per N faults in a block (0: the tracer's 64)", func(c *Config) any { return &c.SampleEvery }},
	{"counters-interval", "", "send changed fault and workload counters, and hooked processes' resident memory (VmRSS, VmHWM), this often",
		func(c *Config) any { return &c.CountersInterval }},
	{"stats-interval", "", "log counters this often (0: never)", func(c *Config) any { return &c.StatsInterval }},

	{"hook-socket", "", "Unix socket for JVM hooks", func(c *Config) any { return &c.Hook.Path }},
	{"hook-socket-mode", "", "hook socket file mode, octal (0660 with --hook-socket-group restricts who may report)", func(c *Config) any { return &c.Hook.Mode }},
	{"hook-socket-group", "", "group (name or gid) of the hook socket file", func(c *Config) any { return &c.HookSocketGroup }},
	{"hook-max-sessions", "", "open hook sessions on the node; more are closed at accept", func(c *Config) any { return &c.Hook.MaxSessions }},
	{"hook-max-sessions-per-uid", "", "open hook sessions per peer uid", func(c *Config) any { return &c.Hook.MaxSessionsPerUID }},
	{"hook-max-sessions-per-pid", "", "open hook sessions per peer process", func(c *Config) any { return &c.Hook.MaxSessionsPerPID }},
	{"hook-hello-timeout", "", "close a hook connection that sends no HELLO in this time", func(c *Config) any { return &c.Hook.HelloTimeout }},
	{"hook-idle-timeout", "", "close a hook session without a frame for this long (hooks keep alive every 30s; <0: never)", func(c *Config) any { return &c.Hook.IdleTimeout }},
	{"hook-max-range-bytes", "", "longest range a REGISTER or MOVE may name; longer ones are dropped", func(c *Config) any { return &c.Hook.MaxRangeBytes }},
	{"hook-max-blocks-per-session", "", "live blocks of one hook session; a session past it is closed", func(c *Config) any { return &c.Hook.MaxBlocks }},
	{"hook-max-blocks-per-uid", "", "live blocks of one peer uid; REGISTERs past it are dropped", func(c *Config) any { return &c.Hook.MaxBlocksPerUID }},
	{"max-live-blocks", "", "live blocks on the node; REGISTERs past it are dropped", func(c *Config) any { return &c.Hook.MaxLiveBlocks }},
	{"hook-max-walk-extents", "", "extents of one object-graph walk; a longer walk is refused and its block keeps its array", func(c *Config) any { return &c.Hook.MaxWalkExtents }},
	{"hook-max-session-extents", "", "extents of the current walks of one hook session; walks past it are refused", func(c *Config) any { return &c.Hook.MaxSessionExtents }},
	{"max-live-extents", "", "extents of the current walks on the node; walks past it are refused", func(c *Config) any { return &c.Hook.MaxLiveExtents }},
	{"resolve-slice-pages", "", "resolve ranges in slices of this many pages, taking turns between peers", func(c *Config) any { return &c.ResolveSlicePages }},
	{"resolve-uid-budget-ms", "", "milliseconds of page resolution a second one peer uid may use (1000 = one CPU), after a burst of one second; 0: no bound", func(c *Config) any { return &c.ResolveUIDBudget }},
	{"page-cache-bytes", "", "memory for pages kept for reuse by accesses, over all blocks", func(c *Config) any { return &c.PageCacheBytes }},
	{"kernel-max-blocks", "", "blocks the kernel fault tracer counts at once", func(c *Config) any { return &c.KernelMaxBlocks }},

	{"damon", "", "access heat from DAMON: auto (own kdamond, or share a running one, else none), on (must work) or off", func(c *Config) any { return &c.Damon.Mode }},
	{"damon-ops", "", "what the agent's own kdamond monitors: auto (each hooked process's virtual ranges where the kernel has fvaddr, else physical ranges) or paddr (physical ranges always)",
		func(c *Config) any { return &c.Damon.Ops }},
	{"damon-sample", "", "DAMON sampling interval of the agent's own kdamond: one access check per region this often", func(c *Config) any { return &c.Damon.Sample }},
	{"damon-aggr", "", "DAMON aggregation interval of the agent's own kdamond: nr_accesses counts checks within it", func(c *Config) any { return &c.Damon.Aggr }},
	{"damon-update", "", "DAMON regions-update interval of the agent's own kdamond", func(c *Config) any { return &c.Damon.Update }},
	{"damon-min-regions", "", "fewest regions the agent's own kdamond splits the blocks' memory into (3 or more)", func(c *Config) any { return &c.Damon.MinRegions }},
	{"damon-max-regions", "", "most regions of the agent's own kdamond; its cost grows with them", func(c *Config) any { return &c.Damon.MaxRegions }},
	{"damon-read-interval", "", "read DAMON's regions and send heat samples this often (at least one aggregation interval)", func(c *Config) any { return &c.Damon.ReadInterval }},

	{"log-level", "", "debug, info, warn or error", func(c *Config) any { return &c.LogLevel }},
	{"log-burst", "", "lines of one log message per --log-interval; the rest are counted", func(c *Config) any { return &c.LogBurst }},
	{"log-interval", "", "window of --log-burst", func(c *Config) any { return &c.LogInterval }},

	{"tls-ca", "", "PEM CA that signed the collector's certificate (empty with --tls-cert: the system roots)", func(c *Config) any { return &c.TLSCA }},
	{"tls-cert", "", "PEM client certificate (OU agent) presented to the collector", func(c *Config) any { return &c.TLSCert }},
	{"tls-key", "", "PEM private key of --tls-cert", func(c *Config) any { return &c.TLSKey }},
	{"tls-server-name", "", "name the collector's certificate must carry (default: the host of --collector)", func(c *Config) any { return &c.TLSServerName }},
	{"http-tls-cert", "", "PEM certificate to serve --http over TLS", func(c *Config) any { return &c.HTTPTLSCert }},
	{"http-tls-key", "", "PEM private key of --http-tls-cert", func(c *Config) any { return &c.HTTPTLSKey }},
	{"http-client-ca", "", "PEM CA verifying client certificates on --http", func(c *Config) any { return &c.HTTPClientCA }},
	{"http-token-file", "", "bearer tokens accepted on --http, one per line", func(c *Config) any { return &c.HTTPTokenFile }},
	{"http-insecure", "", "serve --http without authentication (development only)", func(c *Config) any { return &c.HTTPInsecure }},
	{"install-hook", "STRATA_HOOK_INSTALL_DIR", "copy the JVM hook files into this directory at start (a host path executors mount)", func(c *Config) any { return &c.HookInstallDir }},
	{"hook-files", "STRATA_HOOK_FILES_DIR", "directory holding the JVM hook files to install", func(c *Config) any { return &c.HookFilesDir }},
	{"pyroscope-server", "", "Pyroscope server URL for continuous profiling (empty: off)", func(c *Config) any { return &c.PyroscopeServer }},
}

// envPrefix starts every variable the agent reads.
const envPrefix = "STRATA_"

// Variable returns the environment variable of the setting whose flag is
// name.
func Variable(name string) string {
	for _, s := range settings {
		if s.name == name && s.env != "" {
			return s.env
		}
	}
	return envPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// Variables lists every variable the agent reads: each setting's,
// STRATA_CONFIG and NODE_NAME.
func Variables() []string {
	vars := []string{envPrefix + "CONFIG", "NODE_NAME"}
	for _, s := range settings {
		vars = append(vars, Variable(s.name))
	}
	return vars
}

// fileKey is a flag's key in the config file.
func fileKey(name string) string { return strings.ReplaceAll(name, "-", "_") }

// ConfigFlag names the config file: --config, or $STRATA_CONFIG.
const ConfigFlag = "config"

// bind defines every setting's flag on fs, setting c's fields, with c's
// values as the defaults shown.
func (c *Config) bind(fs *flag.FlagSet) {
	for _, s := range settings {
		usage := s.usage + " ($" + Variable(s.name) + ")"
		switch p := s.field(c).(type) {
		case *string:
			fs.StringVar(p, s.name, *p, usage)
		case *int:
			fs.IntVar(p, s.name, *p, usage)
		case *int64:
			fs.Int64Var(p, s.name, *p, usage)
		case *uint64:
			fs.Uint64Var(p, s.name, *p, usage)
		case *bool:
			fs.BoolVar(p, s.name, *p, usage)
		case *time.Duration:
			fs.DurationVar(p, s.name, *p, usage)
		case *uint32:
			fs.Var((*uint32Value)(p), s.name, usage)
		case *os.FileMode:
			fs.Var((*modeValue)(p), s.name, usage)
		default:
			panic(fmt.Sprintf("config: setting %s has a field of type %T", s.name, p))
		}
	}
}

// Load layers the settings: Default, then the JSON file named by --config
// in args or by $STRATA_CONFIG, then the environment, then the flags in
// args, which it parses with fs (where the caller may have defined flags
// of its own). It does not Validate.
func Load(fs *flag.FlagSet, args []string, getenv func(string) string) (Config, error) {
	file := getenv(envPrefix + "CONFIG")
	// A first pass over args learns only --config; every other flag is
	// bound to a scratch copy. Parse errors show in the second pass.
	scratch := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	scratch.SetOutput(io.Discard)
	fs.VisitAll(func(f *flag.Flag) { scratch.Var(f.Value, f.Name, f.Usage) })
	var sc Config
	sc.bind(scratch)
	scratch.StringVar(&file, ConfigFlag, file, "")
	_ = scratch.Parse(args)

	c := Default()
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return c, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		if err := c.decodeFile(b); err != nil {
			return c, fmt.Errorf("%w: %s: %w", ErrConfig, file, err)
		}
	}
	if err := c.fromEnv(getenv); err != nil {
		return c, err
	}
	c.bind(fs)
	fs.String(ConfigFlag, file, "JSON object of settings, keyed by flag name with _ for - ($"+envPrefix+"CONFIG)")
	return c, fs.Parse(args)
}

// fromEnv overrides c from every setting's variable that is set, and
// NodeName from NODE_NAME when STRATA_NODE_NAME is not set. It reports the
// values it could not parse; the others are applied.
func (c *Config) fromEnv(getenv func(string) string) error {
	fs := flag.NewFlagSet("env", flag.ContinueOnError)
	c.bind(fs)
	if v := getenv("NODE_NAME"); v != "" && getenv(Variable("node-name")) == "" {
		c.NodeName = v
	}
	var errs []error
	for _, s := range settings {
		key := Variable(s.name)
		if v := getenv(key); v != "" {
			if err := fs.Lookup(s.name).Value.Set(v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %w", key, v, err))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil
}

// decodeFile overrides c from a JSON object whose keys are settings'
// flag names with _ for -; a value is a string as a flag takes it, a
// number or a boolean. Unknown keys are errors.
func (c *Config) decodeFile(b []byte) error {
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&obj); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	fs := flag.NewFlagSet("file", flag.ContinueOnError)
	c.bind(fs)
	byKey := map[string]*flag.Flag{}
	fs.VisitAll(func(f *flag.Flag) { byKey[fileKey(f.Name)] = f })
	var errs []error
	for key, raw := range obj {
		f, ok := byKey[key]
		if !ok {
			errs = append(errs, fmt.Errorf("unknown setting %q", key))
			continue
		}
		v := string(bytes.TrimSpace(raw))
		if strings.HasPrefix(v, `"`) {
			if err := json.Unmarshal(raw, &v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", key, err))
				continue
			}
		}
		if err := f.Value.Set(v); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", key, err))
		}
	}
	return errors.Join(errs...)
}

type uint32Value uint32

func (v *uint32Value) String() string { return strconv.FormatUint(uint64(*v), 10) }

func (v *uint32Value) Set(s string) error {
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return err
	}
	*v = uint32Value(n)
	return nil
}

// modeValue is an octal file mode such as 0660.
type modeValue os.FileMode

func (v *modeValue) String() string { return fmt.Sprintf("%#o", uint32(*v)) }

func (v *modeValue) Set(s string) error {
	m, err := strconv.ParseUint(s, 8, 32)
	if err != nil || m&^0o777 != 0 || m == 0 {
		return fmt.Errorf("mode %q: want octal permission bits such as 0660", s)
	}
	*v = modeValue(m)
	return nil
}
