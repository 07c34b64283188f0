package agent

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/stratatrace/strata/agent/annotator"
	"github.com/stratatrace/strata/agent/hooksrv"
	"github.com/stratatrace/strata/agent/resolver"
	"github.com/stratatrace/strata/agent/tracer"
)

// Config of a node agent.
type Config struct {
	NodeName      string        // defaults to the host name
	HookSocket    string        // Unix socket the JVM hooks connect to
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
	// FLAGS_NOT_READ; sampled fault pages get their flags), which resolves
	// 4 KiB pages several times faster.
	PageFlags string
	// WorkloadCounters says how a hooked process's task clock, context
	// switches, migrations and faults are counted: "procfs" (read from
	// /proc, at no cost to the process), "perf" (perf events on every
	// thread: exact, but each context switch of the process then pays for
	// them), or "auto": perf where a hardware PMU gives the page-walk and
	// cycle counts that need per-thread perf events anyway, else procfs.
	WorkloadCounters string
	// CPUPolicy is the scheduling policy of the agent's threads: "batch"
	// (SCHED_BATCH: its fair share, without preempting the workload's
	// threads each time it wakes; see CPUBatch) or "normal" (as started).
	CPUPolicy        string
	SampleEvery      uint32        // emit one fault event in N (0 = tracer default, 64)
	CountersInterval time.Duration // send changed fault and workload counters, and hooked processes' resident memory, this often
	StatsInterval    time.Duration // log counters this often (0 = never)

	// Bounds that keep one hook peer from denying service to the others
	// (agent/hooksrv "Bounds"; README "Reliability").
	HookMaxSessions         int           // open hook sessions on the node
	HookMaxSessionsPerUID   int           // ... per peer uid
	HookMaxSessionsPerPID   int           // ... per peer process
	HookHelloTimeout        time.Duration // close a connection without HELLO after this
	HookIdleTimeout         time.Duration // close a session without a frame for this long (<0 never)
	HookMaxRangeBytes       uint64        // longest range a REGISTER or MOVE may name
	HookMaxBlocksPerSession int           // live blocks of one session (past it: closed)
	HookMaxBlocksPerUID     int           // live blocks of one peer uid (past it: REGISTER dropped)
	MaxLiveBlocks           int           // live blocks on the node (past it: REGISTER dropped)
	ResolveSlicePages       int           // resolve in slices of this many pages, taking turns between peers
	PageCacheBytes          int64         // pages kept for reuse by accesses, over all blocks
	KernelMaxBlocks         uint32        // blocks the kernel's fault tracer can count (BPF map slots)
	LogBurst                int           // lines of one message logged per LogInterval; the rest are counted
	LogInterval             time.Duration

	// Security and observability (config_ops.go).
	Ops
}

// DefaultConfig returns the defaults; env and flags override them.
//
// FlushInterval is 1 s: each batch is a gRPC message and one transaction
// (with its fsync) in the collector's store, and at 200 ms a 7 s Spark run
// made 18 batches and cost the collector 0.11 s of CPU, at 1 s 4 and 0.04 s.
func DefaultConfig() Config {
	host, _ := os.Hostname()
	return Config{
		NodeName:         host,
		HookSocket:       hooksrv.DefaultPath,
		Collector:        "127.0.0.1:7070",
		SpoolDir:         "/var/lib/strata/spool",
		ProcRoot:         "/proc",
		SysRoot:          "/sys",
		FlushInterval:    time.Second,
		DrainTimeout:     5 * time.Second,
		Faults:           "auto",
		PageFlags:        "all",
		WorkloadCounters: "auto",
		CPUPolicy:        CPUBatch,
		CountersInterval: 2 * time.Second,
		StatsInterval:    time.Minute,

		HookMaxSessions:         hooksrv.DefaultMaxSessions,
		HookMaxSessionsPerUID:   hooksrv.DefaultMaxSessionsPerUID,
		HookMaxSessionsPerPID:   hooksrv.DefaultMaxSessionsPerPID,
		HookHelloTimeout:        hooksrv.DefaultHelloTimeout,
		HookIdleTimeout:         hooksrv.DefaultIdleTimeout,
		HookMaxRangeBytes:       hooksrv.DefaultMaxRangeBytes,
		HookMaxBlocksPerSession: hooksrv.DefaultMaxBlocks,
		HookMaxBlocksPerUID:     hooksrv.DefaultMaxBlocksPerUID,
		MaxLiveBlocks:           hooksrv.DefaultMaxLiveBlocks,
		ResolveSlicePages:       resolver.DefaultSlicePages,
		PageCacheBytes:          annotator.DefaultMaxCacheBytes,
		KernelMaxBlocks:         tracer.DefaultMaxBlocks,
		LogBurst:                5,
		LogInterval:             10 * time.Second,

		Ops: Ops{HookSocketMode: hooksrv.DefaultMode, HookFilesDir: DefaultHookFilesDir},
	}
}

// hookConfig is the hook server's part of c.
func (c Config) hookConfig() hooksrv.Config {
	gid, _ := c.socketGroup() // checked by Validate
	return hooksrv.Config{GID: max(gid, 0),
		Path: c.HookSocket, Mode: c.HookSocketMode, MaxBlocks: c.HookMaxBlocksPerSession, HelloTimeout: c.HookHelloTimeout,
		IdleTimeout: c.HookIdleTimeout, MaxSessions: c.HookMaxSessions, MaxSessionsPerUID: c.HookMaxSessionsPerUID,
		MaxSessionsPerPID: c.HookMaxSessionsPerPID, MaxRangeBytes: c.HookMaxRangeBytes,
		MaxBlocksPerUID: c.HookMaxBlocksPerUID, MaxLiveBlocks: c.MaxLiveBlocks,
	}
}

// FromEnv overrides c from STRATA_* variables (NODE_NAME too, as the
// Kubernetes downward API sets it). It reports the variables it could not
// parse; the others are applied.
func (c *Config) FromEnv() error {
	set := func(dst *string, keys ...string) {
		for _, k := range keys {
			if v := os.Getenv(k); v != "" {
				*dst = v
				return
			}
		}
	}
	set(&c.NodeName, "STRATA_NODE_NAME", "NODE_NAME")
	set(&c.HookSocket, "STRATA_HOOK_SOCKET")
	set(&c.Collector, "STRATA_COLLECTOR")
	set(&c.SpoolDir, "STRATA_SPOOL_DIR")
	set(&c.ProcRoot, "STRATA_PROC")
	set(&c.SysRoot, "STRATA_SYS")
	set(&c.Faults, "STRATA_FAULTS")
	set(&c.PageFlags, "STRATA_PAGE_FLAGS")
	set(&c.WorkloadCounters, "STRATA_WORKLOAD_COUNTERS")
	set(&c.CPUPolicy, "STRATA_CPU_POLICY")
	set(&c.HTTPAddr, "STRATA_HTTP")

	var errs []error
	parse := func(key string, apply func(string) error) {
		if v := os.Getenv(key); v != "" {
			if err := apply(v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %w", key, v, err))
			}
		}
	}
	ints := map[string]*int{
		"STRATA_HOOK_MAX_SESSIONS":           &c.HookMaxSessions,
		"STRATA_HOOK_MAX_SESSIONS_PER_UID":   &c.HookMaxSessionsPerUID,
		"STRATA_HOOK_MAX_SESSIONS_PER_PID":   &c.HookMaxSessionsPerPID,
		"STRATA_HOOK_MAX_BLOCKS_PER_SESSION": &c.HookMaxBlocksPerSession,
		"STRATA_HOOK_MAX_BLOCKS_PER_UID":     &c.HookMaxBlocksPerUID,
		"STRATA_MAX_LIVE_BLOCKS":             &c.MaxLiveBlocks,
		"STRATA_RESOLVE_SLICE_PAGES":         &c.ResolveSlicePages,
		"STRATA_LOG_BURST":                   &c.LogBurst,
	}
	for key, dst := range ints {
		parse(key, func(v string) (err error) { *dst, err = strconv.Atoi(v); return err })
	}
	durs := map[string]*time.Duration{
		"STRATA_HOOK_HELLO_TIMEOUT": &c.HookHelloTimeout,
		"STRATA_HOOK_IDLE_TIMEOUT":  &c.HookIdleTimeout,
		"STRATA_LOG_INTERVAL":       &c.LogInterval,
	}
	for key, dst := range durs {
		parse(key, func(v string) (err error) { *dst, err = time.ParseDuration(v); return err })
	}
	parse("STRATA_HOOK_MAX_RANGE_BYTES", func(v string) (err error) { c.HookMaxRangeBytes, err = strconv.ParseUint(v, 10, 64); return err })
	parse("STRATA_PAGE_CACHE_BYTES", func(v string) (err error) { c.PageCacheBytes, err = strconv.ParseInt(v, 10, 64); return err })
	parse("STRATA_SPOOL_MAX_BYTES", func(v string) (err error) { c.SpoolMaxBytes, err = strconv.ParseInt(v, 10, 64); return err })
	parse("STRATA_KERNEL_MAX_BLOCKS", func(v string) error {
		n, err := strconv.ParseUint(v, 10, 32)
		c.KernelMaxBlocks = uint32(n)
		return err
	})
	errs = append(errs, c.Ops.fromEnv(os.Getenv)...)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil
}

// ErrConfig marks an invalid configuration.
var ErrConfig = errors.New("invalid config")

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	var errs []error
	if c.NodeName == "" {
		errs = append(errs, errors.New("node name is empty"))
	}
	if c.Collector == "" {
		errs = append(errs, errors.New("collector address is empty"))
	}
	if c.SpoolDir == "" {
		errs = append(errs, errors.New("spool dir is empty"))
	}
	switch strings.ToLower(c.Faults) {
	case "auto", "on", "off":
	default:
		errs = append(errs, fmt.Errorf("faults = %q, want auto, on or off", c.Faults))
	}
	switch c.PageFlags {
	case "all", "sampled":
	default:
		errs = append(errs, fmt.Errorf("page flags = %q, want all or sampled", c.PageFlags))
	}
	switch c.WorkloadCounters {
	case "auto", "procfs", "perf":
	default:
		errs = append(errs, fmt.Errorf("workload counters = %q, want auto, procfs or perf", c.WorkloadCounters))
	}
	switch c.CPUPolicy {
	case CPUBatch, CPUNormal:
	default:
		errs = append(errs, fmt.Errorf("cpu policy = %q, want batch or normal", c.CPUPolicy))
	}
	if c.FlushInterval <= 0 {
		errs = append(errs, errors.New("flush interval must be positive"))
	}
	if c.CountersInterval <= 0 {
		errs = append(errs, errors.New("counters interval must be positive"))
	}
	if err := c.hookConfig().Validate(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, c.Ops.validate(c.HTTPAddr)...)
	for _, b := range []struct {
		name string
		v    int64
	}{
		{"hook max sessions", int64(c.HookMaxSessions)}, {"hook max sessions per uid", int64(c.HookMaxSessionsPerUID)},
		{"hook max sessions per pid", int64(c.HookMaxSessionsPerPID)}, {"hook max blocks per session", int64(c.HookMaxBlocksPerSession)},
		{"hook max blocks per uid", int64(c.HookMaxBlocksPerUID)}, {"max live blocks", int64(c.MaxLiveBlocks)},
		{"hook max range bytes", int64(min(c.HookMaxRangeBytes, 1<<62))}, {"resolve slice pages", int64(c.ResolveSlicePages)},
		{"page cache bytes", c.PageCacheBytes}, {"log burst", int64(c.LogBurst)}, {"hook hello timeout", int64(c.HookHelloTimeout)},
	} {
		if b.v <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive", b.name))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil
}
