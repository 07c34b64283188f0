package damon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// Config of the heat sampler: the mode to take and the agent's own
// kdamond's monitoring attributes (a shared kdamond keeps its own).
type Config struct {
	// Mode is "auto" (own or shared as Detect finds, else none), "on"
	// (Open fails when neither is possible) or "off".
	Mode string
	// Ops is what the agent's own kdamond monitors: "auto" (or empty) the
	// virtual ranges of each hooked process where the kernel has fvaddr
	// operations, else physical ranges; "paddr" physical ranges always.
	Ops string
	// Sample and Aggr are DAMON's sampling interval (one access check per
	// region) and aggregation interval (nr_accesses counts the checks
	// that found an access within it); Update is its regions-update
	// interval.
	Sample, Aggr, Update time.Duration
	// MinRegions and MaxRegions bound the regions DAMON splits its
	// targets into (DAMON wants at least 3). The agent gives it at most
	// MaxRegions/2 target regions, leaving it room to split them.
	MinRegions, MaxRegions int
	// ReadInterval is how often the tried regions are read; the
	// aggregation interval when longer.
	ReadInterval time.Duration
	PageSize     uint64 // base page size (default 4096)
	Logger       *slog.Logger
}

// DefaultConfig is the cheap default: one check per region every 200 ms,
// at most 1000 regions, read every 10 s.
func DefaultConfig() Config {
	return Config{Mode: "auto", Ops: "auto", Sample: 200 * time.Millisecond, Aggr: 4 * time.Second, Update: time.Minute,
		MinRegions: 10, MaxRegions: 1000, ReadInterval: 10 * time.Second}
}

// Validate reports settings DAMON would refuse.
func (c Config) Validate() error {
	var errs []error
	if m := strings.ToLower(c.Mode); m != "auto" && m != "on" && m != "off" {
		errs = append(errs, fmt.Errorf("damon = %q, want one of auto, on, off", c.Mode))
	}
	if o := strings.ToLower(c.Ops); o != "" && o != "auto" && o != opsPaddr {
		errs = append(errs, fmt.Errorf("damon ops = %q, want auto or paddr", c.Ops))
	}
	if c.Sample < time.Microsecond || c.Update < time.Microsecond {
		errs = append(errs, errors.New("damon sample and update intervals must be at least 1us"))
	}
	if c.Aggr < c.Sample {
		errs = append(errs, fmt.Errorf("damon aggregation interval %s is shorter than the sampling interval %s", c.Aggr, c.Sample))
	}
	if c.MinRegions < 3 || c.MaxRegions < c.MinRegions {
		errs = append(errs, fmt.Errorf("damon regions %d..%d: want 3 <= min <= max", c.MinRegions, c.MaxRegions))
	}
	if c.ReadInterval < 0 {
		errs = append(errs, errors.New("damon read interval must not be negative"))
	}
	return errors.Join(errs...)
}

// ErrUnavailable is Open's error with Mode "on" when DAMON cannot be used.
var ErrUnavailable = errors.New("DAMON unavailable")

// Sink takes heat samples; *annotator.Annotator satisfies it, sending
// them in its batches.
type Sink interface {
	AddHeat(*stratav1.HeatSample)
}

// Heat samples the access heat of live blocks from DAMON; see the package
// comment.
type Heat struct {
	cfg Config
	sys Sysfs
	log *slog.Logger
	// mu guards det, own and views against Mode and Status while Run sets
	// them up again after a busy start; Run alone writes them after Open.
	mu    sync.RWMutex
	det   Detection
	own   *ownKdamond
	views []view
	// pending counts tried-region updates still waiting in the kernel,
	// which Close waits for in Own and OwnVaddr modes.
	pending sync.WaitGroup

	reads, regions, samples, commits, errs atomic.Uint64
	noPages                                atomic.Int64
}

// Open detects the mode (Sysfs.Detect) and, for Own, makes the agent's
// kdamond (OwnVaddr when it got fvaddr operations), which stays off until
// Run has blocks to monitor; Status says the mode, for the caller to log
// once. With Mode "on" a DAMON it cannot use is an error wrapping
// ErrUnavailable; with "auto" the Heat is Unavailable and Run returns at
// once. Either way, a DAMON whose sysfs lock another reader or writer
// holds longer than startWait is no error: the Heat starts Unavailable
// (Detection.Busy) and Run looks again every period until it finds a mode
// or a lasting reason.
func Open(sys Sysfs, cfg Config) (*Heat, error) {
	if cfg.PageSize == 0 {
		cfg.PageSize = 4096
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	h := &Heat{cfg: cfg, sys: sys, log: cfg.Logger.With("component", "damon")}
	mode := strings.ToLower(cfg.Mode)
	if mode == "off" {
		h.det = Detection{Reason: "disabled (--damon off)"}
	} else {
		// A start does not wait out another agent's long command: busy for
		// startWait, it runs without heat and Run looks again.
		quick := sys
		quick.wait = startWait
		h.setup(quick.Detect())
	}
	if h.det.Mode == Unavailable && !h.det.Busy && mode == "on" {
		return nil, fmt.Errorf("%w: %s", ErrUnavailable, h.det.Reason)
	}
	return h, nil
}

// startWait bounds how long Open waits out DAMON's sysfs lock.
const startWait = time.Second

// setup takes the mode d detected: it makes the own kdamond, or the views
// of the shared ones.
func (h *Heat) setup(d Detection) {
	h.det = d
	switch d.Mode {
	case Own:
		o, err := h.sys.makeOwn(h.cfg)
		if err != nil {
			reason := fmt.Sprintf("cannot make a kdamond: %v", err)
			if denied(err) {
				reason = "not root: DAMON's sysfs files are root's"
			}
			h.det = Detection{Reason: reason, Busy: busy(err)}
			return
		}
		h.own = o
		if o.virtual() {
			h.det.Mode = OwnVaddr
			return
		}
		h.views = []view{newView(true, o.ctx, o.ctx.Schemes[0])}
	case Shared:
		h.views = sharedViews(d.Kdamonds)
	}
}

// Mode is the mode Open took, or Run took later after DAMON's sysfs was
// busy at the start.
func (h *Heat) Mode() Mode {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.det.Mode
}

// Status says the mode and what it reads, or why there is no heat:
// "unavailable: no DAMON sysfs interface (/sys/kernel/mm/damon/admin)".
// After a busy start it ends with "; looking again every PERIOD".
func (h *Heat) Status() string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.statusLocked()
}

func (h *Heat) statusLocked() string {
	switch h.det.Mode {
	case Own:
		c := h.own.ctx
		return fmt.Sprintf("%s (sampling %s, aggregation %s, %d..%d regions)", h.views[0].source, c.Sample, c.Aggr,
			h.cfg.MinRegions, h.cfg.MaxRegions)
	case OwnVaddr:
		c := h.own.ctx
		return fmt.Sprintf("own-vaddr: kdamond %d of the agent's, %s, a target per hooked process and a stat scheme "+
			"per target over every region (sampling %s, aggregation %s, %d..%d regions)", ownIndex, c.Ops, c.Sample, c.Aggr,
			h.cfg.MinRegions, h.cfg.MaxRegions)
	case Shared:
		var parts []string
		partial := false
		for _, v := range h.views {
			parts = append(parts, v.source)
			partial = partial || v.partial
		}
		s := strings.Join(parts, "; ")
		if partial {
			s += "; partial: only the regions a scheme matched are seen"
		}
		return s
	}
	if h.det.Busy {
		return "unavailable: " + h.det.Reason + "; looking again every " + h.period().String()
	}
	return "unavailable: " + h.det.Reason
}

// Run reads DAMON's regions every period until ctx ends, joins them with
// blocks' pages and hands each live block's sample to sink. In Own mode it
// also commits the blocks' physical ranges as the kdamond's target regions
// when they changed (the first commit turns the kdamond on); in OwnVaddr
// mode the processes with blocks as its targets, each with its blocks'
// virtual ranges. It returns at once when Unavailable.
func (h *Heat) Run(ctx context.Context, blocks func() []Block, sink Sink) {
	if h.det.Mode == Unavailable && !h.det.Busy {
		return
	}
	t := time.NewTicker(h.period())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if h.det.Mode == Unavailable { // busy at the last look: look again
			if !h.retry() {
				return
			}
			if h.det.Mode == Unavailable {
				continue
			}
			t.Reset(h.period())
		}
		h.round(ctx, blocks, sink)
	}
}

// retry detects again after DAMON's sysfs was busy, and reports whether
// Run should go on (a mode was found, or it is still only busy).
func (h *Heat) retry() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.setup(h.sys.Detect())
	switch {
	case h.det.Mode != Unavailable:
		h.log.Info("DAMON heat available after its sysfs was busy", "status", h.statusLocked())
	case !h.det.Busy:
		h.log.Warn("no DAMON heat", "reason", h.det.Reason)
		return false
	}
	return true
}

// period is how often Run reads: ReadInterval, or the longest aggregation
// interval read when that is longer.
func (h *Heat) period() time.Duration {
	p := h.cfg.ReadInterval
	for _, v := range h.views {
		p = max(p, v.ctx.Aggr)
	}
	if h.own != nil {
		p = max(p, h.own.ctx.Aggr)
	}
	return max(p, 100*time.Millisecond)
}

// snapshot is the live blocks with their extents, read once per round.
type snapshot struct {
	blocks   []Block
	exts     [][]Range
	resolved []uint64
}

// snapshot lists the blocks with their extents: physical (their runs'
// PFNs), or virtual for the agent's fvaddr kdamond.
func (h *Heat) snapshot(blocks func() []Block) snapshot {
	s := snapshot{blocks: blocks()}
	s.exts, s.resolved = make([][]Range, len(s.blocks)), make([]uint64, len(s.blocks))
	virtual := h.own != nil && h.own.virtual()
	noPages := 0
	for i, b := range s.blocks {
		if virtual {
			s.exts[i], s.resolved[i] = virtualExtents(b, h.cfg.PageSize)
			if s.resolved[i] == 0 && b.Runs == nil {
				noPages++
			}
			continue
		}
		if b.Runs == nil {
			noPages++
		}
		s.exts[i], s.resolved[i] = extents(b.Runs, h.cfg.PageSize)
	}
	h.noPages.Store(int64(noPages))
	return s
}

// round is one read (and, Own and OwnVaddr, one commit).
func (h *Heat) round(ctx context.Context, blocks func() []Block, sink Sink) {
	if h.own != nil && h.own.virtual() {
		h.roundVaddr(ctx, blocks, sink)
		return
	}
	if h.own != nil {
		var snap snapshot
		if h.own.on {
			v := h.views[0]
			v.ctx.Ranges = h.own.ranges
			snap = h.read(ctx, ownIndex, []view{v}, blocks, sink)
		} else {
			snap = h.snapshot(blocks)
		}
		if ctx.Err() != nil {
			return
		}
		if rs := targetRanges(snap.exts, h.cfg.MaxRegions/2); len(rs) > 0 && !slices.Equal(rs, h.own.ranges) {
			if err := h.own.commit(rs); err != nil {
				h.fail("commit target regions", err)
				return
			}
			h.commits.Add(1)
		}
		return
	}
	for i := 0; i < len(h.views); {
		k := h.views[i].ctx.Kdamond
		j := i
		for j < len(h.views) && h.views[j].ctx.Kdamond == k {
			j++
		}
		h.read(ctx, k, h.views[i:j], blocks, sink)
		if ctx.Err() != nil {
			return
		}
		i = j
	}
}

// roundVaddr reads the agent's fvaddr kdamond's targets' regions, then
// commits the processes with live blocks as its targets when they or their
// ranges changed.
func (h *Heat) roundVaddr(ctx context.Context, blocks func() []Block, sink Sink) {
	var snap snapshot
	if h.own.on {
		snap = h.read(ctx, ownIndex, h.own.views(), blocks, sink)
	} else {
		snap = h.snapshot(blocks)
	}
	if ctx.Err() != nil {
		return
	}
	ts := vaddrTargets(snap.blocks, snap.exts, h.cfg.MaxRegions/2)
	if slices.EqualFunc(ts, h.own.targets, target.equal) {
		return
	}
	if err := h.own.commitTargets(ts); err != nil {
		h.fail("commit targets", err)
		return
	}
	h.commits.Add(1)
}

// read has kdamond k fill its tried regions, then joins each view's with
// the blocks live then and hands on their samples; it returns the
// snapshot of the blocks (taken all the same when the update failed).
func (h *Heat) read(ctx context.Context, k int, views []view, blocks func() []Block, sink Sink) snapshot {
	if err := h.update(ctx, k); err != nil {
		if ctx.Err() == nil {
			h.fail("update tried regions", err)
		}
		return h.snapshot(blocks)
	}
	at := time.Now()
	snap := h.snapshot(blocks)
	for _, v := range views {
		regions, err := h.sys.TriedRegions(k, v.ctx.Index, v.scheme.Index, v.ctx.AddrUnit)
		if err != nil {
			h.fail("read tried regions", err)
			continue
		}
		h.reads.Add(1)
		h.regions.Add(uint64(len(regions)))
		h.join(v, snap, regions, at, sink)
	}
	return snap
}

// join hands sink a sample of each block of snap in v's address space
// with resolved bytes, joined with v's regions read at time at.
func (h *Heat) join(v view, snap snapshot, regions []Region, at time.Time, sink Sink) {
	for i, b := range snap.blocks {
		if snap.resolved[i] == 0 || !v.takes(b) {
			continue
		}
		sink.AddHeat(v.sample(b, joinBlock(snap.exts[i], snap.resolved[i], v.ctx.Ranges, regions), at))
		h.samples.Add(1)
	}
}

// update runs UpdateTried(k), which blocks in the kernel until the next
// aggregation interval ends, and stops waiting when ctx ends (Close waits
// for it).
func (h *Heat) update(ctx context.Context, k int) error {
	done := make(chan error, 1)
	h.pending.Add(1)
	go func() {
		defer h.pending.Done()
		done <- h.sys.UpdateTried(k)
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// fail counts an error; EBUSY (another writer holds DAMON's sysfs lock)
// is expected now and then and logged at debug level only.
func (h *Heat) fail(what string, err error) {
	h.errs.Add(1)
	if busy(err) {
		h.log.Debug(what, "err", err)
		return
	}
	h.log.Warn(what, "err", err)
}

// Close, in Own and OwnVaddr modes, waits for an update still in the
// kernel (it holds DAMON's sysfs lock), then turns the agent's kdamond off
// and removes it, logging a failure as well as returning it; in the other
// modes it has nothing to undo and returns at once. Run must have
// returned.
func (h *Heat) Close() error {
	if h.own == nil {
		return nil
	}
	h.pending.Wait()
	err := h.own.remove()
	h.own = nil
	if err != nil {
		h.log.Warn("could not remove the agent's kdamond", "err", err)
	}
	return err
}

// Stats are counters since Open.
type Stats struct {
	Mode    Mode
	Reads   uint64 // tried-region lists read
	Regions uint64 // regions in them
	Samples uint64 // heat samples handed on
	Commits uint64 // target-region sets committed to the agent's kdamond
	Errors  uint64 // updates, reads and commits that failed
	// NoPages is the live blocks at the last read whose pages the
	// annotator does not keep (its page cache full), which get no sample;
	// with virtual addresses only those with an empty range too.
	NoPages int64
}

// Stats returns a snapshot of the counters.
func (h *Heat) Stats() Stats {
	return Stats{Mode: h.Mode(), Reads: h.reads.Load(), Regions: h.regions.Load(), Samples: h.samples.Load(),
		Commits: h.commits.Load(), Errors: h.errs.Load(), NoPages: h.noPages.Load()}
}
