package annotator

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stratatrace/strata/agent/hooksrv"
	"github.com/stratatrace/strata/agent/resolver"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// Resolver reads the pages behind address ranges of one process;
// *resolver.Pool satisfies it. A request's CPUNode is the NUMA node of the
// CPU that touched the range, -1 when unknown; pages on another node are
// marked CROSS_NODE. When the whole batch fails (the process is gone), every
// out[i].Err must say so too, as Pool does.
type Resolver interface {
	ResolveBatch(pid int, reqs []resolver.Request, out []resolver.Result) error
}

// Sink takes finished batches; *spool.Spool satisfies it.
type Sink interface {
	Append(*stratav1.Batch) error
}

// Kernel mirrors the registry into the kernel's fault attribution;
// *faults.Faults satisfies it. It is optional: a nil Kernel means no probes
// are loaded. The annotator calls it and never the other way round: what
// the kernel side records reaches the annotator through AddFaults,
// AddCounters and AddWorkload.
type Kernel interface {
	// RegisterBlock starts counting faults in [start, end) as the block of
	// the process p, which names the Spark application and executor so the
	// kernel side need not ask.
	RegisterBlock(p Process, blockID, start, end uint64) error
	// MoveBlock changes a registered block's range, keeping its counters.
	MoveBlock(pid uint32, blockID, start, end uint64) error
	// FreeBlock stops counting and returns the block's final counters.
	FreeBlock(pid uint32, blockID uint64) (*stratav1.FaultCounts, error)
	// ForgetProcess drops whatever the kernel still holds for pid.
	ForgetProcess(pid uint32) error
}

// Process is a hook session's process as the kernel side needs it.
type Process struct {
	PID               uint32
	AppID, ExecutorID string
}

// Config of an annotator; zero values take defaults.
type Config struct {
	NodeName      string
	BootID        string
	Node          *stratav1.NodeInfo // carried by every batch; nil when unknown
	PageSize      uint32             // base page size (default 4096)
	MaxRecords    int                // flush a batch at this many records (default 1024)
	MaxRuns       int                // ... or this many page runs (default 65536)
	FlushInterval time.Duration      // ... or when the oldest record is this old (default 200 ms)
	ReuseWindow   time.Duration      // reuse a block's pages for accesses this soon after resolving (default 1 s; <0 never)
	Kernel        Kernel
	Logger        *slog.Logger
}

// Stats are counters since New.
type Stats struct {
	Events       uint64
	Records      uint64 // records handed to the sink
	Batches      uint64
	Dropped      uint64 // records lost because the sink refused their batch
	ResolveError uint64 // records whose range could not be resolved
	Reused       uint64 // access records that reused recent pages
	LiveBlocks   int
	Processes    int
}

type blockKey struct {
	pid uint32
	id  uint64
}

type liveBlock struct {
	session  *hooksrv.Session
	block    hooksrv.Block
	vaddr    uint64
	length   uint64
	runs     []*stratav1.PageRun
	resolved time.Time
}

// Annotator builds records; see the package comment.
type Annotator struct {
	res  Resolver
	sink Sink
	cfg  Config
	log  *slog.Logger

	mu      sync.Mutex
	blocks  map[blockKey]*liveBlock
	perPID  map[uint32]int
	pending *stratav1.Batch
	runs    int
	oldest  time.Time

	// sinkMu serialises Append so batches reach the sink in the order they
	// were cut, without holding mu during disk writes.
	sinkMu sync.Mutex

	events, records, batches, dropped, resolveErr, reused atomic.Uint64
}

// New returns an annotator writing to sink.
func New(res Resolver, sink Sink, cfg Config) *Annotator {
	if cfg.PageSize == 0 {
		cfg.PageSize = 4096
	}
	if cfg.MaxRecords <= 0 {
		cfg.MaxRecords = 1024
	}
	if cfg.MaxRuns <= 0 {
		cfg.MaxRuns = 65536
	}
	if cfg.FlushInterval <= 0 {
		cfg.FlushInterval = 200 * time.Millisecond
	}
	if cfg.ReuseWindow == 0 {
		cfg.ReuseWindow = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Annotator{
		res: res, sink: sink, cfg: cfg,
		log:    cfg.Logger.With("component", "annotator"),
		blocks: map[blockKey]*liveBlock{},
		perPID: map[uint32]int{},
	}
}

// HandleEvent implements hooksrv.Handler.
func (a *Annotator) HandleEvent(_ context.Context, ev hooksrv.Event) {
	a.events.Add(1)
	switch ev.Kind {
	case hooksrv.EventRegister, hooksrv.EventMove:
		a.place(ev)
	case hooksrv.EventAccess:
		a.access(ev)
	case hooksrv.EventFree:
		a.free(ev)
	case hooksrv.EventSessionEnd:
		a.endSession(ev)
	}
}

func (a *Annotator) record(ev hooksrv.Event, vaddr, length uint64) *stratav1.Record {
	return &stratav1.Record{
		TimeUnixNano: ev.Time.UnixNano(),
		Access:       ev.Access,
		Pid:          ev.Session.PID,
		Tid:          ev.TID,
		Block:        sparkBlock(ev.Session, ev.Block),
		Vaddr:        vaddr,
		Length:       length,
		PageSize:     a.cfg.PageSize,
		CpuNumaNode:  -1,
	}
}

// resolve fills rec's pages, or its resolve_error.
func (a *Annotator) resolve(rec *stratav1.Record) {
	req := [1]resolver.Request{{VAddr: rec.GetVaddr(), Length: rec.GetLength(), CPUNode: rec.GetCpuNumaNode()}}
	var out [1]resolver.Result
	a.res.ResolveBatch(int(rec.GetPid()), req[:], out[:])
	a.setPages(rec, &out[0])
}

func (a *Annotator) setPages(rec *stratav1.Record, r *resolver.Result) {
	rec.Runs = r.Runs
	if r.Err != nil {
		rec.ResolveError = r.Err.Error()
		a.resolveErr.Add(1)
	}
}

func (a *Annotator) place(ev hooksrv.Event) {
	rec := a.record(ev, ev.Vaddr, ev.Length)
	a.resolve(rec)
	key := blockKey{ev.Session.PID, ev.Block.HookID}
	a.mu.Lock()
	lb, existed := a.blocks[key]
	if !existed {
		lb = &liveBlock{}
		a.blocks[key] = lb
		a.perPID[key.pid]++
	}
	*lb = liveBlock{session: ev.Session, block: ev.Block, vaddr: ev.Vaddr, length: ev.Length, runs: rec.Runs, resolved: time.Now()}
	a.mu.Unlock()
	if k := a.cfg.Kernel; k != nil {
		var err error
		if existed {
			err = k.MoveBlock(key.pid, key.id, ev.Vaddr, ev.Vaddr+ev.Length)
		} else {
			p := Process{PID: key.pid, AppID: ev.Session.AppID, ExecutorID: ev.Session.ExecutorID}
			err = k.RegisterBlock(p, key.id, ev.Vaddr, ev.Vaddr+ev.Length)
		}
		if err != nil {
			a.log.Warn("mirror block in kernel", "pid", key.pid, "block", ev.Block.Name, "event", ev.Kind, "err", err)
		}
	}
	a.add(rec)
}

func (a *Annotator) access(ev hooksrv.Event) {
	vaddr, length := ev.Vaddr, ev.Length
	whole := ev.AccessLength == 0 || (ev.AccessOffset == 0 && ev.AccessLength >= ev.Length)
	if !whole {
		vaddr, length = ev.Vaddr+ev.AccessOffset, ev.AccessLength
	}
	rec := a.record(ev, vaddr, length)
	key := blockKey{ev.Session.PID, ev.Block.HookID}
	a.mu.Lock()
	lb := a.blocks[key]
	fresh := whole && lb != nil && lb.vaddr == ev.Vaddr && lb.length == ev.Length &&
		a.cfg.ReuseWindow > 0 && time.Since(lb.resolved) < a.cfg.ReuseWindow
	if fresh {
		rec.Runs = lb.runs
	}
	a.mu.Unlock()
	if fresh {
		a.reused.Add(1)
	} else {
		a.resolve(rec)
		if whole {
			a.mu.Lock()
			if lb := a.blocks[key]; lb != nil && lb.vaddr == ev.Vaddr {
				lb.runs, lb.resolved = rec.Runs, time.Now()
			}
			a.mu.Unlock()
		}
	}
	a.add(rec)
}

func (a *Annotator) free(ev hooksrv.Event) {
	key := blockKey{ev.Session.PID, ev.Block.HookID}
	a.mu.Lock()
	if _, ok := a.blocks[key]; ok {
		delete(a.blocks, key)
		a.dropPID(key.pid)
	}
	a.mu.Unlock()
	rec := a.record(ev, ev.Vaddr, ev.Length)
	rec.Faults = a.freeInKernel(key, ev.Block.Name)
	a.add(rec)
}

// freeInKernel returns the block's final fault counters, nil without probes.
func (a *Annotator) freeInKernel(key blockKey, name string) *stratav1.FaultCounts {
	k := a.cfg.Kernel
	if k == nil {
		return nil
	}
	fc, err := k.FreeBlock(key.pid, key.id)
	if err != nil {
		a.log.Debug("free block in kernel", "pid", key.pid, "block", name, "err", err)
		return nil
	}
	return fc
}

func (a *Annotator) dropPID(pid uint32) {
	if a.perPID[pid]--; a.perPID[pid] <= 0 {
		delete(a.perPID, pid)
	}
}

// endSession frees every block the session's process still had, with a
// FREE record each, so the collector never shows a dead JVM's blocks as live.
func (a *Annotator) endSession(ev hooksrv.Event) {
	pid := ev.Session.PID
	var gone []*liveBlock
	a.mu.Lock()
	for key, lb := range a.blocks {
		if key.pid == pid && lb.session == ev.Session {
			gone = append(gone, lb)
			delete(a.blocks, key)
			a.dropPID(pid)
		}
	}
	a.mu.Unlock()
	slices.SortFunc(gone, func(x, y *liveBlock) int { return cmp.Compare(x.block.HookID, y.block.HookID) })
	for _, lb := range gone {
		fe := hooksrv.Event{Kind: hooksrv.EventFree, Session: lb.session, Access: stratav1.AccessKind_ACCESS_KIND_FREE, Time: ev.Time, Block: lb.block}
		rec := a.record(fe, lb.vaddr, lb.length)
		rec.Faults = a.freeInKernel(blockKey{pid, lb.block.HookID}, lb.block.Name)
		a.add(rec)
	}
	if k := a.cfg.Kernel; k != nil {
		if err := k.ForgetProcess(pid); err != nil {
			a.log.Debug("forget process in kernel", "pid", pid, "err", err)
		}
	}
	if ev.Err != nil {
		a.log.Info("hook session ended", "pid", pid, "app", ev.Session.AppID, "executor", ev.Session.ExecutorID, "blocks", len(gone), "reason", ev.Err)
	}
}

// Fault is one sampled page fault the kernel matched to a block.
type Fault struct {
	PID, TID uint32
	BlockID  uint64
	Addr     uint64
	Time     time.Time
	Kind     stratav1.FaultKind
	CPUNode  int32 // NUMA node of the CPU the fault ran on, -1 unknown
}

// AddFaults records sampled faults, each with the Spark names of its block
// and the page the fault mapped, resolved now: one resolution per process
// for the whole slice. Faults in blocks no longer registered (freed since
// the sample was taken) are dropped; it returns how many were recorded.
func (a *Annotator) AddFaults(fs []Fault) int {
	page := uint64(a.cfg.PageSize)
	byPID := map[uint32][]*stratav1.Record{}
	var pids []uint32
	a.mu.Lock()
	for _, f := range fs {
		lb, ok := a.blocks[blockKey{f.PID, f.BlockID}]
		if !ok {
			continue
		}
		if _, seen := byPID[f.PID]; !seen {
			pids = append(pids, f.PID)
		}
		byPID[f.PID] = append(byPID[f.PID], &stratav1.Record{
			TimeUnixNano: f.Time.UnixNano(), Access: stratav1.AccessKind_ACCESS_KIND_FAULT,
			Pid: f.PID, Tid: f.TID, Block: sparkBlock(lb.session, lb.block), Vaddr: f.Addr, Length: 1,
			PageSize: a.cfg.PageSize, CpuNumaNode: f.CPUNode, FaultKind: f.Kind,
		})
	}
	a.mu.Unlock()
	n := 0
	for _, pid := range pids {
		recs := byPID[pid]
		reqs := make([]resolver.Request, len(recs))
		for i, r := range recs {
			reqs[i] = resolver.Request{VAddr: r.GetVaddr() &^ (page - 1), Length: page, CPUNode: r.GetCpuNumaNode()}
		}
		out := make([]resolver.Result, len(reqs))
		a.res.ResolveBatch(int(pid), reqs, out)
		for i := range recs {
			a.setPages(recs[i], &out[i])
			a.add(recs[i])
			n++
		}
	}
	return n
}

// AddCounters records a block's cumulative fault counters.
func (a *Annotator) AddCounters(pid uint32, blockID uint64, fc *stratav1.FaultCounts, when time.Time) bool {
	a.mu.Lock()
	lb, ok := a.blocks[blockKey{pid, blockID}]
	var rec *stratav1.Record
	if ok {
		rec = &stratav1.Record{
			TimeUnixNano: when.UnixNano(), Access: stratav1.AccessKind_ACCESS_KIND_FAULT,
			Pid: pid, Block: sparkBlock(lb.session, lb.block), Vaddr: lb.vaddr, Length: lb.length,
			PageSize: a.cfg.PageSize, CpuNumaNode: -1, Faults: fc,
		}
	}
	a.mu.Unlock()
	if !ok {
		return false
	}
	a.add(rec)
	return true
}

// AddWorkload queues perf-stat style counters of a traced process.
func (a *Annotator) AddWorkload(w *stratav1.WorkloadCounters) {
	a.mu.Lock()
	a.batch().Workloads = append(a.pending.Workloads, w)
	a.mu.Unlock()
}

func (a *Annotator) batch() *stratav1.Batch {
	if a.pending == nil {
		a.pending = &stratav1.Batch{NodeName: a.cfg.NodeName, BootId: a.cfg.BootID, Node: a.cfg.Node}
		a.oldest = time.Now()
		a.runs = 0
	}
	return a.pending
}

func (a *Annotator) add(rec *stratav1.Record) {
	a.mu.Lock()
	b := a.batch()
	b.Records = append(b.Records, rec)
	a.runs += len(rec.GetRuns())
	var full *stratav1.Batch
	if len(b.Records) >= a.cfg.MaxRecords || a.runs >= a.cfg.MaxRuns {
		full = a.cut()
	}
	a.mu.Unlock()
	if full != nil {
		a.emit(full)
	}
}

// cut takes the pending batch; the caller holds mu.
func (a *Annotator) cut() *stratav1.Batch {
	b := a.pending
	a.pending = nil
	a.sinkMu.Lock() // taken before mu is released: keeps cut order = append order
	return b
}

// emit appends a cut batch; the caller got sinkMu from cut.
func (a *Annotator) emit(b *stratav1.Batch) {
	defer a.sinkMu.Unlock()
	if err := a.sink.Append(b); err != nil {
		a.dropped.Add(uint64(len(b.GetRecords())))
		a.log.Warn("batch not spooled; records dropped", "records", len(b.GetRecords()), "err", err)
		return
	}
	a.batches.Add(1)
	a.records.Add(uint64(len(b.GetRecords())))
}

// Flush hands the pending batch to the sink now.
func (a *Annotator) Flush() {
	a.mu.Lock()
	if a.pending == nil {
		a.mu.Unlock()
		return
	}
	b := a.cut()
	a.mu.Unlock()
	a.emit(b)
}

// Run flushes batches that grew old until ctx ends, then flushes once more.
func (a *Annotator) Run(ctx context.Context) error {
	t := time.NewTicker(a.cfg.FlushInterval / 2)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			a.Flush()
			return nil
		case <-t.C:
			a.mu.Lock()
			old := a.pending != nil && time.Since(a.oldest) >= a.cfg.FlushInterval
			a.mu.Unlock()
			if old {
				a.Flush()
			}
		}
	}
}

// Stats returns a snapshot of the counters.
func (a *Annotator) Stats() Stats {
	a.mu.Lock()
	live, procs := len(a.blocks), len(a.perPID)
	a.mu.Unlock()
	return Stats{
		Events: a.events.Load(), Records: a.records.Load(), Batches: a.batches.Load(),
		Dropped: a.dropped.Load(), ResolveError: a.resolveErr.Load(), Reused: a.reused.Load(),
		LiveBlocks: live, Processes: procs,
	}
}

// sparkBlock names a hook block the way records carry it.
func sparkBlock(s *hooksrv.Session, b hooksrv.Block) *stratav1.SparkBlock {
	return &stratav1.SparkBlock{
		AppId: s.AppID, ExecutorId: s.ExecutorID,
		RddId: b.RDDID, Partition: b.Partition, BlockId: b.Name,
		Mode: b.Mode, Location: b.Location, HookBlockId: b.HookID,
	}
}

var _ hooksrv.Handler = (*Annotator)(nil)

// String helps logs.
func (s Stats) String() string {
	return fmt.Sprintf("events=%d records=%d batches=%d dropped=%d resolve_errors=%d live_blocks=%d", s.Events, s.Records, s.Batches, s.Dropped, s.ResolveError, s.LiveBlocks)
}
