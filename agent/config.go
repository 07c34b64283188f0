package agent

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/stratatrace/strata/agent/hooksrv"
)

// Config of a node agent.
type Config struct {
	NodeName         string        // defaults to the host name
	HookSocket       string        // Unix socket the JVM hooks connect to
	Collector        string        // collector gRPC address
	SpoolDir         string        // durable spool; keep it across restarts (hostPath)
	SpoolMaxBytes    int64         // refuse new batches past this (0 = 1 GiB)
	ProcRoot         string        // procfs mount (the host's, with hostPID)
	SysRoot          string        // sysfs mount
	HTTPAddr         string        // /metrics and /healthz; empty = off
	FlushInterval    time.Duration // cut a batch at least this often
	DrainTimeout     time.Duration // on shutdown, wait this long for the collector to ack the spool
	Faults           string        // "auto" (load BPF if possible), "on" (must load), "off"
	SampleEvery      uint32        // emit one fault event in N (0 = tracer default, 64)
	CountersInterval time.Duration // send changed fault and workload counters this often
	StatsInterval    time.Duration // log counters this often (0 = never)
}

// DefaultConfig returns the defaults; env and flags override them.
func DefaultConfig() Config {
	host, _ := os.Hostname()
	return Config{
		NodeName:         host,
		HookSocket:       hooksrv.DefaultPath,
		Collector:        "127.0.0.1:7070",
		SpoolDir:         "/var/lib/strata/spool",
		ProcRoot:         "/proc",
		SysRoot:          "/sys",
		FlushInterval:    200 * time.Millisecond,
		DrainTimeout:     5 * time.Second,
		Faults:           "auto",
		CountersInterval: 2 * time.Second,
		StatsInterval:    time.Minute,
	}
}

// FromEnv overrides c from STRATA_* variables (NODE_NAME too, as the
// Kubernetes downward API sets it).
func (c *Config) FromEnv() {
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
	if c.FlushInterval <= 0 {
		errs = append(errs, errors.New("flush interval must be positive"))
	}
	if err := (hooksrv.Config{Path: c.HookSocket}).Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil
}
