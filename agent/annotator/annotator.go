package annotator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/stratatrace/strata/agent/fit"
	"github.com/stratatrace/strata/agent/hooksrv"
	"github.com/stratatrace/strata/agent/resolver"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// Resolver reads the pages behind address ranges of one process (t.PID);
// *resolver.Pool satisfies it, taking turns between tenants so that one
// hook peer's large ranges cannot starve another's. A request's CPUNode is
// the NUMA node of the CPU that touched the range, -1 when unknown; pages
// on another node are marked CROSS_NODE. When the whole batch fails (the
// process is gone), every out[i].Err must say so too, as Pool does.
type Resolver interface {
	ResolveFor(t resolver.Tenant, reqs []resolver.Request, out []resolver.Result) error
}

// Sink takes finished batches; *spool.Spool satisfies it.
type Sink interface {
	Append(*stratav1.Batch) error
}

// Kernel mirrors the registry into the kernel's fault attribution: each
// change of a block's liveness, range or walk is one call, which is how the
// kernel side follows the registry without a list of its own;
// *faults.Faults satisfies it. It is optional: a nil Kernel means no probes
// are loaded. The annotator calls it and never the other way round: what
// the kernel side records reaches the annotator through AddFaults,
// AddCounters and AddWorkload.
type Kernel interface {
	// StartProcess says a hook session of p began: its faults are counted
	// from now on, its fills (the faults of MemoryStore puts) too.
	StartProcess(p Process) error
	// RegisterBlock starts counting faults in [start, end) as the block of
	// the process p, which names the Spark application and executor so the
	// kernel side need not ask.
	RegisterBlock(p Process, blockID, start, end uint64) error
	// MoveBlock changes a registered block's range, keeping its counters.
	MoveBlock(pid uint32, blockID, start, end uint64) error
	// SetWeakRanges replaces the ranges of a registered block's walked
	// objects, which count faults into the block's counters but give way
	// to every other block's range; nil drops them. MoveBlock keeps them,
	// FreeBlock drops them.
	SetWeakRanges(pid uint32, blockID uint64, ranges []Range) error
	// FreeBlock stops counting and returns the block's final counters.
	FreeBlock(pid uint32, blockID uint64) (*stratav1.FaultCounts, error)
	// ForgetProcess drops whatever the kernel still holds for pid.
	ForgetProcess(pid uint32) error
	// ClaimFill returns, once, the faults pid's thread took while Spark
	// filled the block named name (the put that stored it); nil when the
	// kernel has none for it.
	ClaimFill(pid uint32, name string) *stratav1.FaultCounts
}

// Range is [Start, End) of a process's address space.
type Range struct{ Start, End uint64 }

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
	MaxBatchBytes int                // ... or this encoded size (default and ceiling fit.BatchBudget)
	FlushInterval time.Duration      // ... or when the oldest record is this old (default 1 s)
	ReuseWindow   time.Duration      // reuse a block's pages for accesses this soon after resolving (default 1 s; <0 never)
	// MaxCacheBytes bounds the pages kept for reuse across all live
	// blocks (default 256 MiB); past it a block's pages are not kept and
	// its next access resolves again.
	MaxCacheBytes int64
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
	Split        uint64 // records over the batch budget, sent as several sub-range records
	KernelErrors uint64 // blocks the kernel side could not mirror (its map full, ...)
	// WalkKernelErrors counts walks whose extents the kernel side could
	// not take (its index full, ...): the block's faults count in its
	// range alone until its next walk.
	WalkKernelErrors uint64
	CacheBytes       int64  // pages kept for reuse, estimated bytes
	CacheSkipped     uint64 // resolutions not kept because the cache was full
	LiveBlocks       int
	Processes        int
	Walks            uint64 // complete walks recorded
	WalksStale       uint64 // STALE marks recorded
	Fills            uint64 // FILL records: the faults of filling a block, claimed at its REGISTER
	// WalkExtents are the extents of the live blocks' latest walks, which
	// the annotator keeps (to resolve accesses, and to mirror the walks into
	// the kernel once they hold), in all and per process.
	WalkExtents        int
	ProcessWalkExtents map[uint32]int
}

// BlockKey names a live block: its process and the hook's id of it. It
// keys the annotator's registry and whatever the kernel side keeps per
// block.
type BlockKey struct {
	PID uint32
	ID  uint64
}

type liveBlock struct {
	session  *hooksrv.Session
	block    hooksrv.Block
	vaddr    uint64
	length   uint64
	runs     []*stratav1.PageRun // kept for reuse; nil when not kept
	runBytes int64               // runs' estimated memory, counted in Annotator.cacheBytes
	resolved time.Time
	// runsOf says whose pages runs are: 0 the range's, else the walk's
	// with that Seq, so a new walk is never served an old one's pages.
	runsOf uint32
	// walk is the block's latest complete walk or STALE mark (nil before
	// the first); holds is the GC epoch the walk holds at (its own, raised
	// by CHECKED). weak says the kernel counts faults in its extents;
	// refused that it would not take them (not asked again for this walk).
	walk    *hooksrv.Walk
	holds   uint32
	weak    bool
	refused bool
	// mirrored says the kernel's fault tracer took the block. A
	// registration it refused (a range that overlaps one whose move the
	// hook has not sent yet, after a GC; a full table) is tried again at
	// the block's next move; a refused move leaves the block where it was
	// in the kernel, so the next one is a move again.
	mirrored bool
	// counters are the block's fault counters last recorded (AddCounters),
	// nil before the first.
	counters *stratav1.FaultCounts
}

// Annotator builds records; see the package comment.
type Annotator struct {
	res  Resolver
	sink Sink
	cfg  Config
	log  *slog.Logger

	mu       sync.Mutex
	blocks   map[BlockKey]*liveBlock
	perPID   map[uint32]int
	sessions map[*hooksrv.Session]*session
	extents  map[uint32]int // walk extents kept per process
	nExtents int            // ... in all
	pending  *stratav1.Batch
	started  chan struct{} // receives when pending goes from nil to a new batch (1-buffered)
	runs     int
	bytes    int // pending's encoded size, header included
	oldest   time.Time
	header   int // encoded size of an empty batch, with room for its seq

	cacheBytes int64 // sum of liveBlock.runBytes

	// sinkMu serialises Append so batches reach the sink in the order they
	// were cut, without holding mu during disk writes.
	sinkMu sync.Mutex

	events, records, batches, dropped, resolveErr, reused, split, kernelErr, cacheSkipped atomic.Uint64
	walks, stale, walkKernelErr, fills                                                    atomic.Uint64
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
		cfg.FlushInterval = time.Second
	}
	if cfg.MaxBatchBytes <= 0 || cfg.MaxBatchBytes > fit.BatchBudget {
		cfg.MaxBatchBytes = fit.BatchBudget
	}
	if cfg.ReuseWindow == 0 {
		cfg.ReuseWindow = time.Second
	}
	if cfg.MaxCacheBytes == 0 {
		cfg.MaxCacheBytes = DefaultMaxCacheBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Annotator{
		res: res, sink: sink, cfg: cfg,
		log:      cfg.Logger.With("component", "annotator"),
		blocks:   map[BlockKey]*liveBlock{},
		perPID:   map[uint32]int{},
		sessions: map[*hooksrv.Session]*session{},
		extents:  map[uint32]int{},
		started:  make(chan struct{}, 1),
		header:   proto.Size(&stratav1.Batch{NodeName: cfg.NodeName, BootId: cfg.BootID, Node: cfg.Node, Seq: math.MaxUint64}),
	}
}

// DefaultMaxCacheBytes is Config.MaxCacheBytes's default.
const DefaultMaxCacheBytes = 256 << 20

// HandleEvent implements hooksrv.Handler.
func (a *Annotator) HandleEvent(_ context.Context, ev hooksrv.Event) {
	a.events.Add(1)
	switch ev.Kind {
	case hooksrv.EventSessionStart:
		a.mu.Lock()
		a.session(ev.Session).started = true
		a.mu.Unlock()
		if k := a.cfg.Kernel; k != nil {
			p := Process{PID: ev.Session.PID, AppID: ev.Session.AppID, ExecutorID: ev.Session.ExecutorID}
			if err := k.StartProcess(p); err != nil {
				a.log.Debug("start process in kernel", "pid", p.PID, "err", err)
			}
		}
	case hooksrv.EventRegister, hooksrv.EventMove:
		a.place(ev)
	case hooksrv.EventAccess:
		a.access(ev)
	case hooksrv.EventFree:
		a.free(ev)
	case hooksrv.EventWalk:
		a.walk(ev)
	case hooksrv.EventGC:
		a.mu.Lock()
		a.session(ev.Session).saw(ev.GCEpoch)
		a.mu.Unlock()
	case hooksrv.EventChecked:
		a.checked(ev)
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
func (a *Annotator) resolve(s *hooksrv.Session, rec *stratav1.Record) {
	req := [1]resolver.Request{{VAddr: rec.GetVaddr(), Length: rec.GetLength(), CPUNode: rec.GetCpuNumaNode()}}
	var out [1]resolver.Result
	a.res.ResolveFor(tenant(s, rec.GetPid()), req[:], out[:])
	a.setPages(rec, &out[0])
}

// tenant is whom the resolver pool serves a resolution for: the hook
// peer's uid and the process.
func tenant(s *hooksrv.Session, pid uint32) resolver.Tenant {
	return resolver.Tenant{UID: s.UID, PID: pid}
}

// setPages puts r's runs on rec, cut to the collector's run limit.
func (a *Annotator) setPages(rec *stratav1.Record, r *resolver.Result) {
	rec.Runs = fit.Runs(r.Runs, uint64(a.cfg.PageSize))
	if r.Err != nil {
		rec.ResolveError = r.Err.Error()
		a.resolveErr.Add(1)
	}
}

func (a *Annotator) place(ev hooksrv.Event) {
	key := BlockKey{ev.Session.PID, ev.Block.HookID}
	// An object-graph array whose walk stands moves only with its objects
	// (it is its walk's witness of its region): the walk's STALE mark
	// follows, so the MOVE makes no record of its own (the kernel's range
	// still follows it).
	quiet := false
	if ev.Kind == hooksrv.EventMove && ev.Block.ObjectGraph && ev.Session.Walk == hooksrv.WalkOn {
		a.mu.Lock()
		lb := a.blocks[key]
		quiet = lb != nil && lb.walk != nil && lb.walk.State != hooksrv.WalkStale
		a.mu.Unlock()
	}
	rec := a.record(ev, ev.Vaddr, ev.Length)
	if !quiet {
		a.resolve(ev.Session, rec)
	}
	a.mu.Lock()
	ss := a.session(ev.Session)
	if ev.Kind == hooksrv.EventMove {
		ss.saw(ev.GCEpoch)
	}
	lb, existed := a.blocks[key]
	if !existed {
		lb = &liveBlock{}
		a.blocks[key] = lb
		a.perPID[key.PID]++
	}
	a.uncache(lb)
	// A registration starts without a walk: a block registered again is
	// another block, and its old walk's ranges leave the kernel.
	dropWeak := false
	if ev.Kind == hooksrv.EventRegister {
		dropWeak = lb.weak
		a.setWalk(a.sessions[lb.session], key, lb, nil)
	}
	lb.session, lb.block, lb.vaddr, lb.length = ev.Session, ev.Block, ev.Vaddr, ev.Length
	mirrored := lb.mirrored
	rec.Coverage = a.rangeCoverage(ss, lb, rec.GetLength())
	if !quiet {
		a.cache(lb, rec.Runs, 0)
	}
	a.mu.Unlock()
	if k := a.cfg.Kernel; k != nil {
		var err error
		if dropWeak {
			err = k.SetWeakRanges(key.PID, key.ID, nil)
		}
		if mirrored {
			err = errors.Join(err, k.MoveBlock(key.PID, key.ID, ev.Vaddr, ev.Vaddr+ev.Length))
		} else {
			p := Process{PID: key.PID, AppID: ev.Session.AppID, ExecutorID: ev.Session.ExecutorID}
			if errReg := k.RegisterBlock(p, key.ID, ev.Vaddr, ev.Vaddr+ev.Length); errReg != nil {
				err = errors.Join(err, errReg)
			} else {
				// A walk that holds already (a cached batch column's, which
				// follows its REGISTER at once) is mirrored now.
				var w *hooksrv.Walk
				a.mu.Lock()
				if lb := a.blocks[key]; lb != nil {
					lb.mirrored = true
					if !lb.weak && !lb.refused && ss.usable(lb) {
						lb.weak, w = true, lb.walk
					}
				}
				a.mu.Unlock()
				if w != nil {
					a.mirrorWalk(key, w)
				}
			}
		}
		if err != nil {
			// Once the kernel's block table is full this happens for every
			// block: counted, and the log line is rate limited (ratelog).
			a.kernelErr.Add(1)
			a.log.Warn("block not mirrored in kernel; its faults are not attributed", "pid", key.PID, "block", ev.Block.Name, "event", ev.Kind, "err", err)
		}
	}
	if !quiet {
		a.add(rec)
	}
	if ev.Kind == hooksrv.EventRegister {
		a.addFill(ev)
	}
}

// addFill records, as a FILL record after the block's ALLOC, the faults
// the kernel counted while Spark filled the block, when it has them: the
// first of a block's ranges to register takes them.
func (a *Annotator) addFill(ev hooksrv.Event) {
	k := a.cfg.Kernel
	if k == nil {
		return
	}
	fc := k.ClaimFill(ev.Session.PID, ev.Block.Name)
	if fc == nil {
		return
	}
	rec := a.record(ev, ev.Vaddr, ev.Length)
	rec.Access = stratav1.AccessKind_ACCESS_KIND_FILL
	rec.Faults = fc
	a.fills.Add(1)
	a.add(rec)
}

func (a *Annotator) access(ev hooksrv.Event) {
	key := BlockKey{ev.Session.PID, ev.Block.HookID}
	a.mu.Lock()
	ss := a.session(ev.Session)
	lb := a.blocks[key]
	if lb != nil && (lb.block.ObjectGraph || lb.block.CachedBatch) && ss.usable(lb) {
		// The walk's pages, for a whole access or a part of the range.
		w := lb.walk
		rec := a.record(ev, ev.Vaddr, ev.Length)
		rec.Coverage = walkCoverage(lb.block, w, lb.holds)
		fresh := a.fresh(lb, w.Seq)
		if fresh {
			rec.Runs = lb.runs
		}
		a.mu.Unlock()
		if fresh {
			a.reused.Add(1)
		} else {
			a.resolveWalk(ev.Session, rec, ev.Block, w)
			a.mu.Lock()
			if lb := a.blocks[key]; lb != nil && lb.walk == w {
				a.uncache(lb)
				a.cache(lb, rec.Runs, w.Seq)
			}
			a.mu.Unlock()
		}
		a.add(rec)
		return
	}
	vaddr, length := ev.Vaddr, ev.Length
	whole := ev.AccessLength == 0 || (ev.AccessOffset == 0 && ev.AccessLength >= ev.Length)
	if !whole {
		vaddr, length = ev.Vaddr+ev.AccessOffset, ev.AccessLength
	}
	rec := a.record(ev, vaddr, length)
	fresh := whole && lb != nil && lb.vaddr == ev.Vaddr && lb.length == ev.Length && a.fresh(lb, 0)
	if fresh {
		rec.Runs = lb.runs
	}
	if lb != nil {
		rec.Coverage = a.rangeCoverage(ss, lb, length)
	}
	a.mu.Unlock()
	if fresh {
		a.reused.Add(1)
	} else {
		a.resolve(ev.Session, rec)
		if whole {
			a.mu.Lock()
			if lb := a.blocks[key]; lb != nil && lb.vaddr == ev.Vaddr {
				a.uncache(lb)
				a.cache(lb, rec.Runs, 0)
			}
			a.mu.Unlock()
		}
	}
	a.add(rec)
}

// fresh reports whether lb keeps the pages of of (0 its range, else its
// walk's Seq) resolved within the reuse window; the caller holds mu.
func (a *Annotator) fresh(lb *liveBlock, of uint32) bool {
	return lb.runs != nil && lb.runsOf == of && a.cfg.ReuseWindow > 0 && time.Since(lb.resolved) < a.cfg.ReuseWindow
}

func (a *Annotator) free(ev hooksrv.Event) {
	key := BlockKey{ev.Session.PID, ev.Block.HookID}
	a.mu.Lock()
	if lb, ok := a.blocks[key]; ok {
		a.forget(key, lb)
	}
	a.mu.Unlock()
	rec := a.record(ev, ev.Vaddr, ev.Length)
	rec.FreeReason = ev.FreeReason.Proto()
	rec.Faults = a.freeInKernel(key, ev.Block.Name)
	a.add(rec)
}

// freeInKernel returns the block's final fault counters, nil without probes.
func (a *Annotator) freeInKernel(key BlockKey, name string) *stratav1.FaultCounts {
	k := a.cfg.Kernel
	if k == nil {
		return nil
	}
	fc, err := k.FreeBlock(key.PID, key.ID)
	if err != nil {
		a.log.Debug("free block in kernel", "pid", key.PID, "block", name, "err", err)
		return nil
	}
	return fc
}

// forget removes a block from the registry; the caller holds mu.
func (a *Annotator) forget(key BlockKey, lb *liveBlock) {
	a.uncache(lb)
	a.setWalk(a.sessions[lb.session], key, lb, nil)
	delete(a.blocks, key)
	a.dropPID(key.PID)
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
		if key.PID == pid && lb.session == ev.Session {
			gone = append(gone, lb)
			a.forget(key, lb)
		}
	}
	delete(a.sessions, ev.Session)
	// The kernel forgets the process when its last session ends (a hook
	// that connected again still has its blocks there).
	last := true
	for s := range a.sessions {
		last = last && s.PID != pid
	}
	a.mu.Unlock()
	slices.SortFunc(gone, func(x, y *liveBlock) int { return cmp.Compare(x.block.HookID, y.block.HookID) })
	for _, lb := range gone {
		fe := hooksrv.Event{Kind: hooksrv.EventFree, Session: lb.session, Access: stratav1.AccessKind_ACCESS_KIND_FREE, Time: ev.Time, Block: lb.block}
		rec := a.record(fe, lb.vaddr, lb.length)
		rec.FreeReason = stratav1.FreeReason_FREE_REASON_SESSION_END
		rec.Faults = a.freeInKernel(BlockKey{pid, lb.block.HookID}, lb.block.Name)
		a.add(rec)
	}
	if k := a.cfg.Kernel; k != nil && last {
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
	tenants := map[uint32]resolver.Tenant{}
	var pids []uint32
	a.mu.Lock()
	for _, f := range fs {
		lb, ok := a.blocks[BlockKey{f.PID, f.BlockID}]
		if !ok {
			continue
		}
		if _, seen := byPID[f.PID]; !seen {
			pids = append(pids, f.PID)
			tenants[f.PID] = tenant(lb.session, f.PID)
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
			// A sampled page always gets its flags, whatever the pool's
			// default: it is the page a user looks at (strata hot).
			reqs[i] = resolver.Request{VAddr: r.GetVaddr() &^ (page - 1), Length: page, CPUNode: r.GetCpuNumaNode(), Flags: resolver.FlagsRead}
		}
		out := make([]resolver.Result, len(reqs))
		a.res.ResolveFor(tenants[pid], reqs, out)
		for i := range recs {
			a.setPages(recs[i], &out[i])
			a.add(recs[i])
			n++
		}
	}
	return n
}

// AddCounters records a live block's cumulative fault counters when they
// differ from the last it recorded for the block, or are its first; it
// returns whether it recorded them. Counters of a block not live are
// dropped: the registry, not the caller, says which blocks are.
func (a *Annotator) AddCounters(pid uint32, blockID uint64, fc *stratav1.FaultCounts, when time.Time) bool {
	a.mu.Lock()
	lb, ok := a.blocks[BlockKey{pid, blockID}]
	ok = ok && !sameCounts(lb.counters, fc)
	var rec *stratav1.Record
	if ok {
		lb.counters = fc
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

// sameCounts reports whether last, the counters recorded before (nil for
// none), equal fc.
func sameCounts(last, fc *stratav1.FaultCounts) bool {
	return last != nil && last.GetRead() == fc.GetRead() && last.GetWrite() == fc.GetWrite() && last.GetExec() == fc.GetExec() &&
		last.GetMajor() == fc.GetMajor() && last.GetUnclassified() == fc.GetUnclassified()
}

// AddWorkload queues perf-stat style counters of a traced process.
func (a *Annotator) AddWorkload(w *stratav1.WorkloadCounters) {
	a.addSide(protowire.SizeTag(5)+protowire.SizeBytes(proto.Size(w)), func(b *stratav1.Batch) {
		b.Workloads = append(b.Workloads, w)
	})
}

// AddHeat queues a block's access heat sample (agent/damon).
func (a *Annotator) AddHeat(h *stratav1.HeatSample) {
	a.addSide(protowire.SizeTag(8)+protowire.SizeBytes(proto.Size(h)), func(b *stratav1.Batch) {
		b.Heat = append(b.Heat, h)
	})
}

// BlockRuns is a live block with the pages of its latest resolution.
type BlockRuns struct {
	PID   uint32
	Block *stratav1.SparkBlock
	// Vaddr and Length are the block's range in the process's address
	// space as the hook last reported it (after its latest move).
	Vaddr, Length uint64
	// Runs are the pages of the block's range, or of its walk's objects,
	// as last resolved; nil when the annotator does not keep them (its
	// page cache full, or the block moved and has not been resolved since).
	Runs     []*stratav1.PageRun
	Resolved time.Time
}

// LiveRuns lists every live block, by pid and hook id, with its range and
// the runs it keeps for the block. The runs are shared: callers must not modify them.
func (a *Annotator) LiveRuns() []BlockRuns {
	a.mu.Lock()
	out := make([]BlockRuns, 0, len(a.blocks))
	for key, lb := range a.blocks {
		out = append(out, BlockRuns{PID: key.PID, Block: sparkBlock(lb.session, lb.block), Vaddr: lb.vaddr, Length: lb.length,
			Runs: lb.runs, Resolved: lb.resolved})
	}
	a.mu.Unlock()
	slices.SortFunc(out, func(x, y BlockRuns) int {
		return cmp.Or(cmp.Compare(x.PID, y.PID), cmp.Compare(x.Block.GetHookBlockId(), y.Block.GetHookBlockId()))
	})
	return out
}

// Processes lists the processes with an open hook session, one entry per
// pid, named after their latest session's application and executor.
func (a *Annotator) Processes() []Process {
	a.mu.Lock()
	defer a.mu.Unlock()
	latest := map[uint32]*hooksrv.Session{}
	for s, ss := range a.sessions {
		if !ss.started {
			continue
		}
		if l, ok := latest[s.PID]; !ok || s.ID > l.ID {
			latest[s.PID] = s
		}
	}
	out := make([]Process, 0, len(latest))
	for pid, s := range latest {
		out = append(out, Process{PID: pid, AppID: s.AppID, ExecutorID: s.ExecutorID})
	}
	slices.SortFunc(out, func(x, y Process) int { return cmp.Compare(x.PID, y.PID) })
	return out
}

// AddMemory queues a sample of a hooked process's resident memory.
func (a *Annotator) AddMemory(m *stratav1.ProcessMemory) {
	a.addSide(protowire.SizeTag(7)+protowire.SizeBytes(proto.Size(m)), func(b *stratav1.Batch) {
		b.Processes = append(b.Processes, m)
	})
}

// addSide adds n encoded bytes to the pending batch with add, cutting the
// batch first when they would not fit.
func (a *Annotator) addSide(n int, add func(*stratav1.Batch)) {
	a.mu.Lock()
	var full []*stratav1.Batch
	if a.pending != nil && a.bytes+n > a.cfg.MaxBatchBytes {
		full = append(full, a.take())
	}
	add(a.batch())
	a.bytes += n
	a.emitAll(full) // unlocks mu
}

func (a *Annotator) batch() *stratav1.Batch {
	if a.pending == nil {
		a.pending = &stratav1.Batch{NodeName: a.cfg.NodeName, BootId: a.cfg.BootID, Node: a.cfg.Node}
		a.oldest = time.Now()
		a.runs = 0
		a.bytes = a.header
		select {
		case a.started <- struct{}{}: // Run times its flush from here
		default: // Run has one to take already
		}
	}
	return a.pending
}

// add queues rec, split into sub-range records when it alone would exceed
// the batch budget, and cuts batches by record count, runs and encoded
// size, so no batch ever exceeds what the collector accepts.
func (a *Annotator) add(rec *stratav1.Record) {
	parts := fit.Record(rec, a.cfg.MaxBatchBytes-a.header, uint64(a.cfg.PageSize))
	if len(parts) > 1 {
		a.split.Add(1)
	}
	sizes := make([]int, len(parts))
	for i, p := range parts {
		sizes[i] = fit.RecordSize(p)
	}
	a.mu.Lock()
	var full []*stratav1.Batch
	for i, p := range parts {
		if a.pending != nil && a.bytes+sizes[i] > a.cfg.MaxBatchBytes {
			full = append(full, a.take())
		}
		b := a.batch()
		b.Records = append(b.Records, p)
		a.runs += len(p.GetRuns())
		a.bytes += sizes[i]
		if len(b.Records) >= a.cfg.MaxRecords || a.runs >= a.cfg.MaxRuns || a.bytes >= a.cfg.MaxBatchBytes {
			full = append(full, a.take())
		}
	}
	a.emitAll(full)
}

// take detaches the pending batch; the caller holds mu.
func (a *Annotator) take() *stratav1.Batch {
	b := a.pending
	a.pending = nil
	return b
}

// emitAll appends full batches in the order they were cut. The caller
// holds mu, which emitAll releases: sinkMu is taken before mu is released,
// so batches reach the sink in cut order without holding mu during disk
// writes.
func (a *Annotator) emitAll(full []*stratav1.Batch) {
	if len(full) == 0 {
		a.mu.Unlock()
		return
	}
	a.sinkMu.Lock()
	a.mu.Unlock()
	defer a.sinkMu.Unlock()
	for _, b := range full {
		a.emit(b)
	}
}

// emit appends one batch; the caller holds sinkMu.
func (a *Annotator) emit(b *stratav1.Batch) {
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
	a.emitAll([]*stratav1.Batch{a.take()})
}

// runOverhead is the estimated memory of one cached PageRun besides its
// deltas: the struct, its pointer and proto's internal state.
const runOverhead = 128

// cache keeps runs, the pages of of (0 lb's range, else its walk's Seq),
// on lb for reuse when the cache has room; the caller holds mu.
func (a *Annotator) cache(lb *liveBlock, runs []*stratav1.PageRun, of uint32) {
	n := int64(0)
	for _, r := range runs {
		n += runOverhead + 8*int64(len(r.GetPfnDeltas()))
	}
	if a.cacheBytes+n > a.cfg.MaxCacheBytes {
		a.cacheSkipped.Add(1)
		return
	}
	lb.runs, lb.runBytes, lb.resolved, lb.runsOf = runs, n, time.Now(), of
	a.cacheBytes += n
}

// uncache forgets lb's kept runs; the caller holds mu.
func (a *Annotator) uncache(lb *liveBlock) {
	a.cacheBytes -= lb.runBytes
	lb.runs, lb.runBytes, lb.resolved = nil, 0, time.Time{}
}

// Run flushes each batch once it is FlushInterval old (unless a size limit
// cut it sooner) until ctx ends, then flushes once more. It sleeps while
// nothing is pending: an idle agent has no timer of its own here.
func (a *Annotator) Run(ctx context.Context) error {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-ctx.Done():
			a.Flush()
			return nil
		case <-a.started:
		}
		for {
			a.mu.Lock()
			pending, due := a.pending != nil, a.oldest.Add(a.cfg.FlushInterval)
			a.mu.Unlock()
			if !pending {
				break
			}
			wait := time.Until(due)
			if wait <= 0 {
				a.Flush()
				break
			}
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				timer.Stop()
				a.Flush()
				return nil
			case <-timer.C:
			}
		}
	}
}

// Stats returns a snapshot of the counters.
func (a *Annotator) Stats() Stats {
	a.mu.Lock()
	live, procs, cached := len(a.blocks), len(a.perPID), a.cacheBytes
	extents, perPID := a.nExtents, maps.Clone(a.extents)
	a.mu.Unlock()
	return Stats{
		Events: a.events.Load(), Records: a.records.Load(), Batches: a.batches.Load(),
		Dropped: a.dropped.Load(), ResolveError: a.resolveErr.Load(), Reused: a.reused.Load(),
		Split: a.split.Load(), KernelErrors: a.kernelErr.Load(), CacheBytes: cached,
		CacheSkipped: a.cacheSkipped.Load(), LiveBlocks: live, Processes: procs,
		Walks: a.walks.Load(), WalksStale: a.stale.Load(), WalkKernelErrors: a.walkKernelErr.Load(), Fills: a.fills.Load(),
		WalkExtents: extents, ProcessWalkExtents: perPID,
	}
}

// sparkBlock names a hook block the way records carry it.
func sparkBlock(s *hooksrv.Session, b hooksrv.Block) *stratav1.SparkBlock {
	return &stratav1.SparkBlock{
		AppId: s.AppID, ExecutorId: s.ExecutorID,
		RddId: b.RDDID, Partition: b.Partition, BlockId: b.Name,
		Mode: b.Mode, Location: b.Location, HookBlockId: b.HookID,
		Kind: b.Kind.Proto(), ObjectGraph: b.ObjectGraph, Chunk: b.Chunk, Chunks: b.Chunks,
		StageId: b.StageID, StageAttempt: b.StageAttempt, TaskAttemptId: b.TaskAttemptID,
		SparkBytes: b.SparkBytes, CachedBatch: b.CachedBatch, Column: column(b), ColumnName: b.ColumnName,
	}
}

// column is a cached batch's buffer's column, nil for a buffer of every
// column and for other blocks.
func column(b hooksrv.Block) *int32 {
	if !b.CachedBatch || b.Column < 0 {
		return nil
	}
	c := b.Column
	return &c
}

var _ hooksrv.Handler = (*Annotator)(nil)

// String helps logs.
func (s Stats) String() string {
	return fmt.Sprintf("events=%d records=%d batches=%d dropped=%d resolve_errors=%d live_blocks=%d", s.Events, s.Records, s.Batches, s.Dropped, s.ResolveError, s.LiveBlocks)
}
