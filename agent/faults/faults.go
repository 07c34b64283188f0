package faults

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/stratatrace/strata/agent/annotator"
	"github.com/stratatrace/strata/agent/perfstat"
	"github.com/stratatrace/strata/agent/procmem"
	"github.com/stratatrace/strata/agent/tracer"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// Tracer is what Faults uses of *tracer.Tracer.
type Tracer interface {
	Track(pid uint32) error
	Untrack(pid uint32) error
	RegisterBlock(pid uint32, id, start, end uint64) error
	MoveBlock(pid uint32, id, start, end uint64) error
	SetWeakRanges(pid uint32, id uint64, ranges []tracer.Range) error
	FreeBlock(pid uint32, id uint64) (tracer.Counters, error)
	Snapshot() ([]tracer.BlockSnapshot, error)
	Events() <-chan tracer.Event
	SampleWalks(tracer.SampleEvent) error
	WalkSampleCounts(pid uint32) (total, matched uint64, err error)
	Stats() (tracer.Stats, error)
	Hook() tracer.Hook
	AttachFills(path string) (bool, error)
	TakeFill(pid uint32, key uint64) (tracer.Fill, bool, error)
	Close() error
}

// Loader loads the tracer and hands it onExit as tracer.Config.OnExit.
type Loader func(onExit func(tracer.ExitReport)) (Tracer, error)

// Workload is perf-stat counting of one process; *perfstat.Workload
// satisfies it.
type Workload interface {
	Read() (perfstat.Counts, error)
	Close() error
}

// Sink is where the records go; *annotator.Annotator satisfies it.
type Sink interface {
	// AddFaults records sampled faults of registered blocks.
	AddFaults([]annotator.Fault) int
	// AddCounters records a registered block's cumulative counters when
	// they changed since the last it recorded; it drops those of blocks
	// it no longer has.
	AddCounters(pid uint32, blockID uint64, fc *stratav1.FaultCounts, when time.Time) bool
	// AddWorkload queues the perf-stat counters of a process.
	AddWorkload(*stratav1.WorkloadCounters)
}

// Config of Open; zero values take defaults.
type Config struct {
	// Interval is how often the block counters (the Sink records those
	// that changed) and the counters of every workload are sent (default
	// 2 s). Exits and ended sessions are sent as soon as they happen.
	Interval time.Duration
	// CPUNodes is the NUMA node of each CPU (procmem.FS.LoadCPUNodes);
	// nil leaves sampled faults without a CPU node.
	CPUNodes []int32
	// OpenWorkload starts perf-stat counting of a process the first time
	// it registers a block; nil sends no workload counters.
	OpenWorkload func(pid uint32) (Workload, error)
	// PMU and Walk are the node's hardware PMU and page-walk events
	// (perfstat.DetectPMU, perfstat.SelectWalkEvents). With a core PMU and
	// PEBS STLB-miss events, Open samples data addresses so that workload
	// counters carry walk_cycles_rdd; otherwise that field stays absent.
	PMU  perfstat.PMUInfo
	Walk *perfstat.WalkEvents
	// HookLibraries are files of the JVM hook's library (libstratahook.so)
	// the fill probes attach to at Open, so that a JVM's fills count from
	// its first put; those that do not exist are skipped. nil takes
	// DefaultHookLibraries(). StartProcess attaches to the file a hooked
	// JVM maps too, wherever it is.
	HookLibraries []string
	// FS is where a hooked JVM's maps are read (StartProcess); zero takes
	// procmem.Default().
	FS procmem.FS
	// Logger defaults to discarding.
	Logger *slog.Logger
}

// walkSamplePeriod takes one PEBS sample per this many STLB-miss loads (or
// stores) per CPU: at a few million misses a second, a few thousand runs of
// the walk_sample program.
const walkSamplePeriod = 1000

// maxFaultBatch bounds the sampled faults resolved together.
const maxFaultBatch = 1024

// Faults is the kernel side of the agent; see the package comment. Its
// methods are safe for concurrent use.
type Faults struct {
	t            Tracer // nil when unavailable
	reason       string // why t is nil
	cfg          Config
	log          *slog.Logger
	walkSampling bool          // SampleWalks runs: workloads carry walk_cycles_rdd
	wake         chan struct{} // something ended: send it now

	mu        sync.Mutex
	workloads map[uint32]*workload
	exits     []tracer.ExitReport // not yet sent
	// finals holds what the tracer reported of blocks whose process exited
	// before its hook session ended: the tracer has already forgotten them,
	// and the session's end claims them in FreeBlock (or drops them in
	// ForgetProcess). It is the kernel's last word on those blocks, not a
	// record of which are live: that is the annotator's.
	finals map[annotator.BlockKey]tracer.Counters
	ended  []*stratav1.WorkloadCounters // last counters of closed workloads, not yet sent
}

// workload is one process's perf-stat counting; w is nil when it could not
// be opened (not retried per block).
type workload struct {
	mu            sync.Mutex // serialises Read and Close of w
	w             Workload
	closed        bool
	app, executor string // guarded by Faults.mu
}

// walkShare is a process's walk samples: taken, and inside a block.
type walkShare struct {
	total, matched uint64
	ok             bool
}

func newFaults(cfg Config) *Faults {
	if cfg.Interval <= 0 {
		cfg.Interval = 2 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.HookLibraries == nil {
		cfg.HookLibraries = DefaultHookLibraries()
	}
	if cfg.FS == (procmem.FS{}) {
		cfg.FS = procmem.Default()
	}
	return &Faults{cfg: cfg, log: cfg.Logger.With("component", "faults"), wake: make(chan struct{}, 1),
		workloads: map[uint32]*workload{}, finals: map[annotator.BlockKey]tracer.Counters{}}
}

// Unavailable returns a Faults without a tracer: Kernel is nil, Run only
// waits, and Status says reason.
func Unavailable(reason string) *Faults {
	f := newFaults(Config{})
	f.reason = reason
	return f
}

// Open loads the tracer with load and starts walk sampling when the PMU
// allows it. A failed load is returned; the caller decides whether the
// agent runs without fault attribution (Unavailable).
func Open(load Loader, cfg Config) (*Faults, error) {
	f := newFaults(cfg)
	t, err := load(f.onExit)
	if err != nil {
		return nil, fmt.Errorf("load fault tracer: %w", err)
	}
	f.t = t
	f.startWalkSampling()
	f.attachInstalledFills()
	return f, nil
}

// startWalkSampling samples STLB-miss loads and stores with their data
// address, when the CPU model has both them and walk-cycle counters.
func (f *Faults) startWalkSampling() {
	core, ok := f.cfg.PMU.BigCore()
	wk := f.cfg.Walk
	if !ok || wk == nil || wk.LoadWalk == nil || wk.StoreWalk == nil || wk.SampleLoads == nil || wk.SampleStores == nil {
		return
	}
	for _, ev := range []*perfstat.RawEvent{wk.SampleLoads, wk.SampleStores} {
		err := f.t.SampleWalks(tracer.SampleEvent{Type: core.Type, Config: ev.Config, Period: walkSamplePeriod, Precise: 2})
		if err != nil {
			f.log.Warn("page-walk sampling unavailable; workloads will carry no RDD share of walk cycles", "event", ev.Name, "err", err)
			return
		}
	}
	f.walkSampling = true
}

// StartProcess implements annotator.Kernel: a hook session began. The
// process is tracked from now on, and the fill probes are attached to the
// hook library it maps, unless they are already (see fills.go).
func (f *Faults) StartProcess(p annotator.Process) error {
	if err := f.t.Track(p.PID); err != nil {
		return err
	}
	f.attachMappedFills(p.PID)
	return nil
}

// Status is "on (...)" or "unavailable: <reason>".
func (f *Faults) Status() string {
	if f.t == nil {
		return "unavailable: " + f.reason
	}
	walk := "off"
	if f.walkSampling {
		walk = "on"
	}
	return fmt.Sprintf("on (hook %s, pmu %s, walk sampling %s)", f.t.Hook(), f.cfg.PMU.Status(), walk)
}

// Kernel is the annotator's view of f, nil without a tracer.
func (f *Faults) Kernel() annotator.Kernel {
	if f.t == nil {
		return nil
	}
	return f
}

// RegisterBlock implements annotator.Kernel: it tracks the process, starts
// its workload counters (named after p's application and executor) and
// registers the block.
func (f *Faults) RegisterBlock(p annotator.Process, id, start, end uint64) error {
	if err := f.t.Track(p.PID); err != nil {
		return err
	}
	f.openWorkload(p)
	return f.t.RegisterBlock(p.PID, id, start, end)
}

// MoveBlock implements annotator.Kernel.
func (f *Faults) MoveBlock(pid uint32, id, start, end uint64) error {
	return f.t.MoveBlock(pid, id, start, end)
}

// SetWeakRanges implements annotator.Kernel: the block's walked objects
// count faults into its counters, giving way to every other block's range.
func (f *Faults) SetWeakRanges(pid uint32, id uint64, ranges []annotator.Range) error {
	rs := make([]tracer.Range, len(ranges))
	for i, r := range ranges {
		rs[i] = tracer.Range{Start: r.Start, End: r.End}
	}
	return f.t.SetWeakRanges(pid, id, rs)
}

// FreeBlock implements annotator.Kernel. When the process has exited, the
// tracer no longer knows the block, and the final counters of its exit
// report answer instead.
func (f *Faults) FreeBlock(pid uint32, id uint64) (*stratav1.FaultCounts, error) {
	c, err := f.t.FreeBlock(pid, id)
	key := annotator.BlockKey{PID: pid, ID: id}
	f.mu.Lock()
	if final, ok := f.finals[key]; ok && errors.Is(err, tracer.ErrNotTracked) {
		c, err = final, nil
	}
	delete(f.finals, key)
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return faultCounts(c), nil
}

// ForgetProcess implements annotator.Kernel: the hook session ended. The
// workload's last counters are sent, then the tracer forgets the process
// (unless its exit did first).
func (f *Faults) ForgetProcess(pid uint32) error {
	f.mu.Lock()
	for key := range f.finals {
		if key.PID == pid {
			delete(f.finals, key)
		}
	}
	f.mu.Unlock()
	f.closeWorkload(pid, f.liveShare(pid)) // before Untrack, which drops the walk samples
	err := f.t.Untrack(pid)
	if errors.Is(err, tracer.ErrNotTracked) {
		return nil // the exit was first
	}
	return err
}

// onExit runs on the tracer's reader goroutine when a traced process
// exits. Run sends its blocks' final counters while the annotator still
// has them registered; FREE records of the session's end claim them too.
func (f *Faults) onExit(rep tracer.ExitReport) {
	f.mu.Lock()
	f.exits = append(f.exits, rep)
	for _, b := range rep.Blocks {
		f.finals[annotator.BlockKey{PID: b.TGID, ID: b.BlockID}] = b.Counters
	}
	f.mu.Unlock()
	f.poke()
}

func (f *Faults) poke() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// openWorkload starts perf-stat counting of p once.
func (f *Faults) openWorkload(p annotator.Process) {
	if f.cfg.OpenWorkload == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if wl, ok := f.workloads[p.PID]; ok {
		if wl.app == "" && p.AppID != "" {
			wl.app, wl.executor = p.AppID, p.ExecutorID
		}
		return
	}
	wl := &workload{app: p.AppID, executor: p.ExecutorID}
	w, err := f.cfg.OpenWorkload(p.PID)
	if err != nil {
		f.log.Warn("workload counters unavailable", "pid", p.PID, "err", err)
	} else {
		wl.w = w
	}
	f.workloads[p.PID] = wl
}

// closeWorkload queues pid's last counters and stops counting.
func (f *Faults) closeWorkload(pid uint32, share walkShare) {
	f.mu.Lock()
	wl := f.workloads[pid]
	delete(f.workloads, pid)
	f.mu.Unlock()
	if wl == nil || wl.w == nil {
		return
	}
	wc := f.readWorkload(pid, wl, share)
	wl.mu.Lock()
	wl.closed = true
	wl.w.Close()
	wl.mu.Unlock()
	if wc != nil {
		f.mu.Lock()
		f.ended = append(f.ended, wc)
		f.mu.Unlock()
		f.poke()
	}
}

// liveShare reads a tracked process's walk samples.
func (f *Faults) liveShare(pid uint32) walkShare {
	if !f.walkSampling {
		return walkShare{}
	}
	total, matched, err := f.t.WalkSampleCounts(pid)
	return walkShare{total, matched, err == nil}
}

// readWorkload turns a workload's counts into a record, nil when they
// cannot be read (closed, or the counters failed).
func (f *Faults) readWorkload(pid uint32, wl *workload, share walkShare) *stratav1.WorkloadCounters {
	wl.mu.Lock()
	if wl.closed {
		wl.mu.Unlock()
		return nil
	}
	c, err := wl.w.Read()
	wl.mu.Unlock()
	if err != nil {
		f.log.Debug("read workload counters", "pid", pid, "err", err)
		return nil
	}
	f.mu.Lock()
	app, executor := wl.app, wl.executor
	f.mu.Unlock()
	wc := &stratav1.WorkloadCounters{
		AppId: app, ExecutorId: executor, Pid: pid,
		StartUnixNano: c.Start.UnixNano(), EndUnixNano: c.End.UnixNano(),
		TaskClockNs: c.TaskClockNs, ContextSwitches: c.ContextSwitches, CpuMigrations: c.CPUMigrations,
		MinorFaults: c.MinorFaults, MajorFaults: c.MajorFaults,
		Cycles: c.Cycles, Instructions: c.Instructions, DtlbMisses: c.DTLBMisses,
		WalkCyclesLoad: c.WalkCyclesLoad, WalkCyclesStore: c.WalkCyclesStore,
		PmuStatus: c.PMUStatus,
	}
	if c.WalkCyclesLoad != nil && c.WalkCyclesStore != nil && share.ok {
		if rdd, ok := attributeWalkCycles(*c.WalkCyclesLoad+*c.WalkCyclesStore, share.total, share.matched); ok {
			wc.WalkCyclesRdd = &rdd
		}
	}
	return wc
}

// attributeWalkCycles splits a process's counted page-walk cycles by the
// share of its address samples that hit registered blocks: the sampled
// estimate of walk cycles spent on RDD data. ok is false without samples
// (or with inconsistent ones), and the caller must then report no figure
// rather than zero.
func attributeWalkCycles(walkCycles, samples, matched uint64) (rdd uint64, ok bool) {
	if samples == 0 || matched > samples {
		return 0, false
	}
	return uint64(float64(walkCycles) * float64(matched) / float64(samples)), true
}

// Run turns sampled faults into records as they come, sends the counters
// of exited processes and ended sessions at once, and every Interval sends
// every block's counters (the sink records those that changed) and every
// workload's counters. It returns when ctx ends, after sending once more.
func (f *Faults) Run(ctx context.Context, sink Sink) {
	if f.t == nil {
		<-ctx.Done()
		return
	}
	tick := time.NewTicker(f.cfg.Interval)
	defer tick.Stop()
	events := f.t.Events()
	var batch []annotator.Fault
	for {
		select {
		case <-ctx.Done():
			f.flush(sink)
			return
		case ev, ok := <-events:
			if !ok {
				events = nil // the tracer closed
				continue
			}
			batch = f.drain(batch[:0], ev, events)
			if len(batch) > 0 {
				sink.AddFaults(batch)
			}
		case <-f.wake:
			f.sendEnded(sink, time.Now())
		case <-tick.C:
			f.flush(sink)
		}
	}
}

// drain adds ev and whatever else is waiting, up to maxFaultBatch events,
// so that the pages are resolved per process, not per sample.
func (f *Faults) drain(batch []annotator.Fault, ev tracer.Event, events <-chan tracer.Event) []annotator.Fault {
	batch = f.appendFault(batch, ev)
	for n := 1; n < maxFaultBatch; n++ {
		select {
		case ev, ok := <-events:
			if !ok {
				return batch
			}
			batch = f.appendFault(batch, ev)
		default:
			return batch
		}
	}
	return batch
}

// appendFault adds a sampled fault event to batch; exit notices and walk
// samples are not faults.
func (f *Faults) appendFault(batch []annotator.Fault, ev tracer.Event) []annotator.Fault {
	if ev.Kind == tracer.KindExit || ev.Kind == tracer.KindWalkSample {
		return batch
	}
	return append(batch, annotator.Fault{PID: ev.TGID, TID: ev.TID, BlockID: ev.BlockID, Addr: ev.Addr, Time: ev.Time,
		Kind: faultKind(ev.Kind), CPUNode: f.cpuNode(ev.CPU)})
}

// cpuNode is the NUMA node of cpu, -1 when unknown.
func (f *Faults) cpuNode(cpu uint16) int32 {
	if int(cpu) < len(f.cfg.CPUNodes) {
		return f.cfg.CPUNodes[cpu]
	}
	return -1
}

// sendCounters hands every block's cumulative counters to the sink, which
// records those that changed since it last did for a block it still has.
func sendCounters(sink Sink, blocks []tracer.BlockSnapshot, now time.Time) {
	for _, b := range blocks {
		sink.AddCounters(b.TGID, b.BlockID, faultCounts(b.Counters), now)
	}
}

// sendEnded sends what exited processes left (their blocks' final
// counters, their workloads' last counters) and the last counters of the
// workloads of ended sessions.
func (f *Faults) sendEnded(sink Sink, now time.Time) {
	f.mu.Lock()
	exits := f.exits
	f.exits = nil
	f.mu.Unlock()
	var blocks []tracer.BlockSnapshot
	for _, rep := range exits {
		blocks = append(blocks, rep.Blocks...)
	}
	sendCounters(sink, blocks, now)
	for _, rep := range exits {
		f.closeWorkload(rep.TGID, walkShare{rep.WalkSamples, rep.WalkSamplesMatched, f.walkSampling})
	}
	f.mu.Lock()
	ended := f.ended
	f.ended = nil
	f.mu.Unlock()
	for _, wc := range ended {
		sink.AddWorkload(wc)
	}
}

// flush sends every block's counters (the sink keeps those that changed),
// what ended, and the counters of every workload still open.
func (f *Faults) flush(sink Sink) {
	now := time.Now()
	snap, err := f.t.Snapshot()
	if err != nil {
		f.log.Warn("read block counters", "err", err)
	}
	sendCounters(sink, snap, now)
	f.sendEnded(sink, now)
	f.mu.Lock()
	open := make(map[uint32]*workload, len(f.workloads))
	for pid, wl := range f.workloads {
		if wl.w != nil {
			open[pid] = wl
		}
	}
	f.mu.Unlock()
	for pid, wl := range open {
		if wc := f.readWorkload(pid, wl, f.liveShare(pid)); wc != nil {
			sink.AddWorkload(wc)
		}
	}
}

// Close stops every workload's counting and closes the tracer. Call it
// after Run has returned.
func (f *Faults) Close() error {
	f.mu.Lock()
	wls := f.workloads
	f.workloads = map[uint32]*workload{}
	f.mu.Unlock()
	for _, wl := range wls {
		if wl.w != nil {
			wl.mu.Lock()
			wl.closed = true
			wl.w.Close()
			wl.mu.Unlock()
		}
	}
	if f.t == nil {
		return nil
	}
	return f.t.Close()
}

func faultCounts(c tracer.Counters) *stratav1.FaultCounts {
	return &stratav1.FaultCounts{Read: c.Read, Write: c.Write, Exec: c.Exec, Major: c.Major, Unclassified: c.Unclassified}
}

func faultKind(k tracer.Kind) stratav1.FaultKind {
	switch k {
	case tracer.KindRead:
		return stratav1.FaultKind_FAULT_KIND_READ
	case tracer.KindWrite:
		return stratav1.FaultKind_FAULT_KIND_WRITE
	case tracer.KindExec:
		return stratav1.FaultKind_FAULT_KIND_EXEC
	case tracer.KindMajor:
		return stratav1.FaultKind_FAULT_KIND_MAJOR
	case tracer.KindUnclassified:
		return stratav1.FaultKind_FAULT_KIND_UNCLASSIFIED
	}
	return stratav1.FaultKind_FAULT_KIND_UNSPECIFIED
}

var (
	_ annotator.Kernel = (*Faults)(nil)
	_ Tracer           = (*tracer.Tracer)(nil)
	_ Workload         = (*perfstat.Workload)(nil)
	_ Sink             = (*annotator.Annotator)(nil)
)
