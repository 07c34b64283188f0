package tracer

import (
	"fmt"
	"log/slog"
	"math/bits"
	"time"

	"github.com/stratatrace/strata/agent/procmem"
)

// Hook selects the program that sees every page fault.
type Hook string

// Hooks, in the order HookAuto tries them.
const (
	HookAuto Hook = ""
	HookBTF  Hook = "tp_btf"  // tp_btf/page_fault_user: typed args, cheapest
	HookRaw  Hook = "raw_tp"  // raw_tp/page_fault_user: no BTF needed
	HookPerf Hook = "perf_sw" // PERF_COUNT_SW_PAGE_FAULTS per CPU: no read/write split
	hookNone Hook = "none"
)

// Config sets what Load builds. Zero values take the defaults below.
type Config struct {
	// SampleEvery emits one event per this many matched faults (per CPU);
	// 0 takes the default 64, and DisableEvents turns events off.
	SampleEvery   uint32
	DisableEvents bool
	// MaxBlocks is the number of counter slots (blocks registered at once
	// on the node). Default 65536. Memory: MaxBlocks × 64 bytes, whatever
	// the number of CPUs.
	MaxBlocks uint32
	// MaxRangeSets bounds the address index's cells (2 MiB buckets plus
	// 64 KiB granules of dense buckets). Default 8 × MaxBlocks. Cells are
	// allocated on use (~330 bytes each), but the kernel's hash table heads
	// take 16 bytes × MaxRangeSets rounded up to a power of two at once.
	MaxRangeSets uint32
	// MaxRunEntries is the length of the runs array, where granules of more
	// than 8 blocks list them (a block once per dense granule it overlaps,
	// in power-of-two segments of 16 entries and up). Rounded up to a power
	// of two; default 4 × MaxBlocks. Memory: 32 bytes each, at once.
	MaxRunEntries uint32
	// MaxFills bounds the puts that stored their block and wait for the
	// agent to claim them at the block's REGISTER (AttachFills). Default
	// 16384; 64 bytes each, allocated as used.
	MaxFills uint32
	// RingBytes is the ring buffer size, a power of two ≥ 4096. Default 8 MiB.
	RingBytes uint32
	// EventBuffer is the capacity of the Events channel: how far its
	// consumer may lag behind the reader. Default 16384: 10 ms at 1.6 M
	// events/s, or 1-in-64 sampling of 100 M faults/s.
	EventBuffer int
	// Hook forces one fault hook; HookAuto probes.
	Hook Hook
	// NoMajorFaults skips the per-CPU major-fault perf events.
	NoMajorFaults bool
	// DrainInterval is the ring reader's deadline while records come.
	// Default 50 ms: records wait at most that long, far less than the
	// annotator's flush interval, and the agent wakes at most 20 times a
	// second however the events come.
	DrainInterval time.Duration
	// IdleDrainInterval is the longest deadline: each drain that finds the
	// ring empty doubles the deadline up to it, so an idle node wakes the
	// agent twice a second; a ring a quarter full wakes the reader at once.
	// Default 500 ms.
	IdleDrainInterval time.Duration
	// LivenessInterval is how often tracked processes are checked for exit,
	// a backstop for exit notices lost to a full ring, and the online CPUs
	// for hotplug. Default 1 s.
	LivenessInterval time.Duration
	// CPUs lists the online CPUs, on which the per-CPU perf events are
	// opened and kept (CPU hotplug). Default procmem.Default(); the agent
	// passes its --sys.
	CPUs CPUSource
	// OnExit, when set, receives the final counters of a traced process that
	// exited, from the reader goroutine; it must not block for long.
	OnExit func(ExitReport)
	// Logger defaults to slog.Default().
	Logger *slog.Logger

	manualDrain bool // tests: Load does not start the reader goroutine
}

// DefaultMaxBlocks is Config.MaxBlocks's default.
const DefaultMaxBlocks = 65536

func (c *Config) setDefaults() {
	if c.SampleEvery == 0 {
		c.SampleEvery = 64
	}
	if c.MaxBlocks == 0 {
		c.MaxBlocks = DefaultMaxBlocks
	}
	if c.MaxRangeSets == 0 {
		c.MaxRangeSets = 8 * c.MaxBlocks
	}
	if c.MaxRunEntries == 0 {
		c.MaxRunEntries = 4 * c.MaxBlocks
	}
	c.MaxRunEntries = max(1<<minRunOrder, uint32(1)<<bits.Len32(c.MaxRunEntries-1))
	if c.RingBytes == 0 {
		c.RingBytes = 8 << 20
	}
	if c.MaxFills == 0 {
		c.MaxFills = 16384
	}
	if c.EventBuffer == 0 {
		c.EventBuffer = 16384
	}
	if c.DrainInterval == 0 {
		c.DrainInterval = 50 * time.Millisecond
	}
	if c.IdleDrainInterval == 0 {
		c.IdleDrainInterval = 500 * time.Millisecond
	}
	c.IdleDrainInterval = max(c.IdleDrainInterval, c.DrainInterval)
	if c.LivenessInterval == 0 {
		c.LivenessInterval = time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.CPUs == nil {
		c.CPUs = procmem.Default()
	}
}

// Validate reports the first setting Load cannot use.
func (c *Config) Validate() error {
	if c.RingBytes != 0 && (c.RingBytes < 4096 || c.RingBytes&(c.RingBytes-1) != 0) {
		return fmt.Errorf("validate config: ring bytes %d: not a power of two >= 4096", c.RingBytes)
	}
	if c.MaxBlocks > 1<<24 {
		return fmt.Errorf("validate config: max blocks %d: above 16 Mi", c.MaxBlocks)
	}
	if c.MaxRunEntries > 1<<26 {
		return fmt.Errorf("validate config: max run entries %d: above 64 Mi", c.MaxRunEntries)
	}
	if c.MaxFills > 1<<22 {
		return fmt.Errorf("validate config: max fills %d: above 4 Mi", c.MaxFills)
	}
	if c.EventBuffer < 0 {
		return fmt.Errorf("validate config: event buffer %d: negative", c.EventBuffer)
	}
	switch c.Hook {
	case HookAuto, HookBTF, HookRaw, HookPerf:
	default:
		return fmt.Errorf("validate config: hook %q: unknown", c.Hook)
	}
	return nil
}
