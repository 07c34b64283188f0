package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stratatrace/strata/agent/annotator"
	"github.com/stratatrace/strata/agent/damon"
	"github.com/stratatrace/strata/agent/hooksrv"
	"github.com/stratatrace/strata/agent/resolver"
	"github.com/stratatrace/strata/agent/tracer"
	"github.com/stratatrace/strata/authn"
)

// Config of a node agent. Each field is a setting of the table in
// settings.go, but for Hook's GID and FS (Run sets them) and its walk
// extent caps (hooksrv's defaults), and Damon's PageSize and Logger (Run
// sets them).
type Config struct {
	NodeName      string        // defaults to the host name
	Collector     string        // collector gRPC address
	SpoolDir      string        // durable spool; keep it across restarts (hostPath)
	SpoolMaxBytes int64         // refuse new batches past this (0 = 1 GiB)
	ProcRoot      string        // procfs mount (the host's, with hostPID)
	SysRoot       string        // sysfs mount
	HTTPAddr      string        // /metrics and /healthz; empty = off
	FlushInterval time.Duration // cut a batch at least this often
	DrainTimeout  time.Duration // on shutdown, wait this long for the collector to ack the spool
	Faults        string        // "auto" (load BPF if possible), "on" (must load), "off"
	// PageFlags says which pages get kpageflags and kpagecount: "all", or
	// "sampled" (block pages get PFN, presence, THP and node only, marked
	// FLAGS_NOT_READ; sampled fault pages get their flags).
	PageFlags string
	// WorkloadCounters says how a hooked process's task clock, context
	// switches, migrations and faults are counted: "procfs" (read from
	// /proc, at no cost to the process), "perf" (perf events on every
	// thread: exact, but each context switch of the process pays for
	// them), or "auto": perf where a hardware PMU is, else procfs.
	WorkloadCounters string
	// CPUPolicy is the scheduling policy of the agent's threads: CPUBatch
	// or CPUNormal.
	CPUPolicy string
	// Nice is the nice value of the agent's threads (0 to 19); a thread
	// started with a higher one keeps it.
	Nice             int
	SampleEvery      uint32        // emit one fault event in N (0 = tracer default, 64)
	CountersInterval time.Duration // send changed fault and workload counters, and hooked processes' resident memory, this often
	StatsInterval    time.Duration // log counters this often (0 = never)

	// Hook is the hook server's configuration: the socket's path and mode
	// and the bounds that keep one peer from denying service to the others
	// (agent/hooksrv "Bounds").
	Hook hooksrv.Config
	// HookSocketGroup is the group (name or gid) given the socket file;
	// empty: the agent's.
	HookSocketGroup   string
	ResolveSlicePages int    // resolve in slices of this many pages, taking turns between peers
	ResolveUIDBudget  int    // milliseconds of resolving per second one peer uid may use; 0: no bound
	PageCacheBytes    int64  // pages kept for reuse by accesses, over all blocks
	KernelMaxBlocks   uint32 // blocks the kernel's fault tracer can count (BPF map slots)
	// Damon is the access-heat sampler's configuration (agent/damon); Run
	// sets its PageSize and Logger.
	Damon damon.Config

	LogLevel    string // debug, info, warn or error
	LogBurst    int    // lines of one message logged per LogInterval; the rest are counted
	LogInterval time.Duration

	// TLSCA verifies the collector's certificate (empty with TLSCert set:
	// the system roots); TLSCert and TLSKey are the agent's client
	// certificate (OU agent). All empty: plain TCP to the collector.
	TLSCA, TLSCert, TLSKey string
	// TLSServerName is the name the collector's certificate must carry,
	// when it is not the host of Collector.
	TLSServerName string
	// HTTPTLSCert and HTTPTLSKey serve the HTTP endpoint over TLS;
	// HTTPClientCA verifies client certificates there (needs HTTPTLSCert);
	// HTTPTokenFile lists bearer tokens accepted there. HTTPInsecure serves
	// it to anyone: without one of these three the agent refuses to serve.
	HTTPTLSCert, HTTPTLSKey, HTTPClientCA, HTTPTokenFile string
	HTTPInsecure                                         bool

	// HookInstallDir, when set, receives a copy of the JVM hook's files
	// from HookFilesDir at start, for executors to load from a host path.
	HookInstallDir, HookFilesDir string
	PyroscopeServer              string // continuous profiles go there; empty: off
}

// The agent's CPU policies (Config.CPUPolicy).
const (
	// CPUBatch runs every thread of the agent under SCHED_BATCH: its fair
	// share of CPU, but a thread that wakes up does not preempt the thread
	// running on its core. Nothing the agent does is urgent to a
	// millisecond: frames wait in the socket, fault events in the ring.
	CPUBatch = "batch"
	// CPUNormal leaves the agent's threads as they were started.
	CPUNormal = "normal"
)

// DefaultResolveUIDBudget is Config.ResolveUIDBudget's default: half a CPU
// of page resolution per peer uid, so one uid re-registering huge ranges
// without pause holds the agent to half a core (a Spark executor's blocks
// take a few hundred milliseconds over a whole run; docs/reliability.md).
const DefaultResolveUIDBudget = 500

// DefaultNice is Config.Nice's default: the agent's work waits for the
// workload's when both want a CPU, and takes the CPU the workload leaves.
const DefaultNice = 10

// DefaultHookFilesDir is where the agent's image puts the JVM hook files.
const DefaultHookFilesDir = "/usr/share/strata/jvmhook"

// Default returns the configuration nothing has overridden yet. The bounds
// are the defaults of the packages that enforce them.
func Default() Config {
	host, _ := os.Hostname()
	return Config{
		NodeName:          host,
		Collector:         "127.0.0.1:7070",
		SpoolDir:          "/var/lib/strata/spool",
		ProcRoot:          "/proc",
		SysRoot:           "/sys",
		FlushInterval:     time.Second,
		DrainTimeout:      5 * time.Second,
		Faults:            "auto",
		PageFlags:         "all",
		WorkloadCounters:  "auto",
		CPUPolicy:         CPUBatch,
		Nice:              DefaultNice,
		CountersInterval:  2 * time.Second,
		StatsInterval:     time.Minute,
		Hook:              hooksrv.DefaultConfig(),
		ResolveSlicePages: resolver.DefaultSlicePages,
		ResolveUIDBudget:  DefaultResolveUIDBudget,
		PageCacheBytes:    annotator.DefaultMaxCacheBytes,
		KernelMaxBlocks:   tracer.DefaultMaxBlocks,
		Damon:             damon.DefaultConfig(),
		LogLevel:          "info",
		LogBurst:          5,
		LogInterval:       10 * time.Second,
		HookFilesDir:      DefaultHookFilesDir,
	}
}

// ErrConfig marks an invalid configuration.
var ErrConfig = errors.New("invalid config")

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	var errs []error
	for _, s := range []struct{ name, v string }{{"node name", c.NodeName}, {"collector address", c.Collector}, {"spool dir", c.SpoolDir}} {
		if s.v == "" {
			errs = append(errs, fmt.Errorf("%s is empty", s.name))
		}
	}
	for _, e := range []struct {
		name, v string
		want    []string
	}{
		{"faults", strings.ToLower(c.Faults), []string{"auto", "on", "off"}},
		{"page flags", c.PageFlags, []string{"all", "sampled"}},
		{"workload counters", c.WorkloadCounters, []string{"auto", "procfs", "perf"}},
		{"cpu policy", c.CPUPolicy, []string{CPUBatch, CPUNormal}},
	} {
		if !slices.Contains(e.want, e.v) {
			errs = append(errs, fmt.Errorf("%s = %q, want one of %s", e.name, e.v, strings.Join(e.want, ", ")))
		}
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(c.LogLevel)); err != nil {
		errs = append(errs, fmt.Errorf("log level: %w", err))
	}
	for _, b := range []struct {
		name string
		v    int64
	}{
		{"flush interval", int64(c.FlushInterval)}, {"counters interval", int64(c.CountersInterval)},
		{"hook max sessions", int64(c.Hook.MaxSessions)}, {"hook max sessions per uid", int64(c.Hook.MaxSessionsPerUID)},
		{"hook max sessions per pid", int64(c.Hook.MaxSessionsPerPID)}, {"hook max blocks per session", int64(c.Hook.MaxBlocks)},
		{"hook max blocks per uid", int64(c.Hook.MaxBlocksPerUID)}, {"max live blocks", int64(c.Hook.MaxLiveBlocks)},
		{"hook max range bytes", int64(min(c.Hook.MaxRangeBytes, 1<<62))},
		{"hook max walk extents", int64(c.Hook.MaxWalkExtents)}, {"hook max session extents", int64(c.Hook.MaxSessionExtents)},
		{"max live extents", int64(c.Hook.MaxLiveExtents)}, {"resolve slice pages", int64(c.ResolveSlicePages)},
		{"page cache bytes", c.PageCacheBytes}, {"log burst", int64(c.LogBurst)}, {"hook hello timeout", int64(c.Hook.HelloTimeout)},
	} {
		if b.v <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive", b.name))
		}
	}
	if c.ResolveUIDBudget < 0 {
		errs = append(errs, fmt.Errorf("resolve uid budget = %d ms a second, want 0 (no bound) or more", c.ResolveUIDBudget))
	}
	if c.Nice < 0 || c.Nice > 19 {
		errs = append(errs, fmt.Errorf("nice = %d, want 0 to 19", c.Nice))
	}
	if err := c.Hook.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Damon.Validate(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, c.validateOps()...)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil
}

// validateOps reports security and observability settings that cannot
// work.
func (c Config) validateOps() []error {
	var errs []error
	if f, ok := c.CollectorTLS(); ok {
		if err := f.Check(); err != nil {
			errs = append(errs, err)
		}
	}
	hf := authn.TLSFiles{CA: c.HTTPClientCA, Cert: c.HTTPTLSCert, Key: c.HTTPTLSKey}
	if err := hf.Check(); err != nil {
		errs = append(errs, fmt.Errorf("http: %w", err))
	}
	if c.HTTPClientCA != "" && c.HTTPTLSCert == "" {
		errs = append(errs, errors.New("--http-client-ca needs --http-tls-cert and --http-tls-key: client certificates come over TLS"))
	}
	if c.HTTPAddr != "" {
		if _, _, err := net.SplitHostPort(c.HTTPAddr); err != nil {
			errs = append(errs, fmt.Errorf("http address %q: %w", c.HTTPAddr, err))
		}
		if c.HTTPClientCA == "" && c.HTTPTokenFile == "" && !c.HTTPInsecure {
			errs = append(errs, errors.New("refusing to serve HTTP without authentication: set --http-token-file and/or "+
				"--http-client-ca (with --http-tls-cert, --http-tls-key), or --http-insecure"))
		}
	}
	if _, err := c.SocketGroup(); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// CollectorTLS returns the TLS files towards the collector; ok is false
// for plain TCP.
func (c Config) CollectorTLS() (authn.TLSFiles, bool) {
	f := authn.TLSFiles{CA: c.TLSCA, Cert: c.TLSCert, Key: c.TLSKey}
	return f, f.CA != "" || f.Cert != ""
}

// SocketGroup resolves HookSocketGroup to a gid; -1 when unset.
func (c Config) SocketGroup() (int, error) {
	if c.HookSocketGroup == "" {
		return -1, nil
	}
	if gid, err := strconv.Atoi(c.HookSocketGroup); err == nil && gid >= 0 {
		return gid, nil
	}
	g, err := user.LookupGroup(c.HookSocketGroup)
	if err != nil {
		return -1, fmt.Errorf("hook socket group: %w", err)
	}
	return strconv.Atoi(g.Gid)
}
