package annotator

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stratatrace/strata/agent/hooksrv"
	"github.com/stratatrace/strata/agent/resolver"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
	"google.golang.org/protobuf/proto"
)

// rangeResolver answers with one present run per range and counts calls;
// the real resolver is exercised by the end-to-end test in test/e2e.
type rangeResolver struct {
	mu    sync.Mutex
	calls int
	flags []resolver.FlagsMode // of every request, in order
	dead  map[uint32]bool
}

var errGone = errors.New("process gone")

func (r *rangeResolver) ResolveFor(t resolver.Tenant, reqs []resolver.Request, out []resolver.Result) error {
	pid := t.PID
	r.mu.Lock()
	r.calls++
	for _, q := range reqs {
		r.flags = append(r.flags, q.Flags)
	}
	r.mu.Unlock()
	if r.dead[pid] {
		for i := range reqs {
			out[i] = resolver.Result{Err: errGone}
		}
		return errGone
	}
	for i, q := range reqs {
		state := uint32(1)
		if q.CPUNode >= 0 && q.CPUNode != 0 { // every page of this resolver is on node 0
			state |= uint32(stratav1.PageState_PAGE_STATE_CROSS_NODE)
		}
		out[i] = resolver.Result{Runs: []*stratav1.PageRun{{Vaddr: q.VAddr, Count: max(uint32(q.Length/4096), 1), State: state, Pfn: q.VAddr >> 12}}}
	}
	return nil
}

type memSink struct {
	mu      sync.Mutex
	batches []*stratav1.Batch
	refuse  bool
}

func (s *memSink) Append(b *stratav1.Batch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refuse {
		return errors.New("full")
	}
	s.batches = append(s.batches, b)
	return nil
}

func (s *memSink) records() []*stratav1.Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*stratav1.Record
	for _, b := range s.batches {
		out = append(out, b.Records...)
	}
	return out
}

type kernelLog struct {
	mu      sync.Mutex
	ops     []string
	procs   []Process                        // as RegisterBlock named them
	started []Process                        // as StartProcess named them
	fills   map[string]*stratav1.FaultCounts // by block name, each claimed once
}

func (k *kernelLog) StartProcess(p Process) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.started = append(k.started, p)
	return nil
}

func (k *kernelLog) ClaimFill(pid uint32, name string) *stratav1.FaultCounts {
	k.mu.Lock()
	defer k.mu.Unlock()
	fc := k.fills[name]
	delete(k.fills, name)
	return fc
}

func (k *kernelLog) RegisterBlock(p Process, id, start, end uint64) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.ops = append(k.ops, "reg")
	k.procs = append(k.procs, p)
	return nil
}
func (k *kernelLog) MoveBlock(pid uint32, id, start, end uint64) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.ops = append(k.ops, "move")
	return nil
}
func (k *kernelLog) SetWeakRanges(pid uint32, id uint64, ranges []Range) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.ops = append(k.ops, "weak")
	return nil
}
func (k *kernelLog) FreeBlock(pid uint32, id uint64) (*stratav1.FaultCounts, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.ops = append(k.ops, "free")
	return &stratav1.FaultCounts{Read: id, Write: 10 * id}, nil
}
func (k *kernelLog) ForgetProcess(pid uint32) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.ops = append(k.ops, "forget")
	return nil
}

func ev(s *hooksrv.Session, kind hooksrv.EventKind, access stratav1.AccessKind, id uint64, vaddr, length uint64) hooksrv.Event {
	return hooksrv.Event{Kind: kind, Session: s, Access: access, Time: time.Unix(100, int64(id)),
		Block: hooksrv.Block{HookID: id, RDDID: 7, Partition: int32(id), Name: "rdd_7_" + string(rune('0'+id)),
			Mode: stratav1.MemoryMode_MEMORY_MODE_STORAGE, Location: stratav1.MemoryLocation_MEMORY_LOCATION_OFF_HEAP,
			Kind: hooksrv.KindRDD, Chunk: 0, Chunks: 1, StageID: 5, StageAttempt: 0, TaskAttemptID: 40 + int64(id)},
		Vaddr: vaddr, Length: length}
}

func TestLifecycleRecordsAndRegistry(t *testing.T) {
	res := &rangeResolver{}
	sink := &memSink{}
	k := &kernelLog{}
	node := &stratav1.NodeInfo{NumaNodes: 2, PageSize: 4096, MemTotalBytes: 24 << 30}
	a := New(res, sink, Config{NodeName: "n1", BootID: "b1", Node: node, Kernel: k, ReuseWindow: time.Hour, MaxRecords: 4})
	s := &hooksrv.Session{PID: 42, AppID: "app-1", ExecutorID: "3"}
	ctx := context.Background()
	const (
		alloc = stratav1.AccessKind_ACCESS_KIND_ALLOC
		read  = stratav1.AccessKind_ACCESS_KIND_READ
		move  = stratav1.AccessKind_ACCESS_KIND_MOVE
		free  = stratav1.AccessKind_ACCESS_KIND_FREE
	)
	a.HandleEvent(ctx, ev(s, hooksrv.EventRegister, alloc, 1, 0x10000, 0x4000))
	a.HandleEvent(ctx, ev(s, hooksrv.EventRegister, alloc, 2, 0x20000, 0x2000))
	a.HandleEvent(ctx, ev(s, hooksrv.EventAccess, read, 1, 0x10000, 0x4000)) // reuses pages
	a.HandleEvent(ctx, ev(s, hooksrv.EventMove, move, 1, 0x30000, 0x4000))
	a.HandleEvent(ctx, ev(s, hooksrv.EventAccess, read, 1, 0x30000, 0x4000)) // reuses the moved pages
	if st := a.Stats(); st.LiveBlocks != 2 || st.Processes != 1 || st.Reused != 2 {
		t.Fatalf("stats = %+v", st)
	}
	if res.calls != 3 {
		t.Fatalf("resolver calls = %d, want 3 (2 registers + 1 move)", res.calls)
	}
	// The kernel side learns the Spark identity with the registration.
	owner := Process{PID: 42, AppID: "app-1", ExecutorID: "3"}
	if len(k.procs) != 2 || k.procs[0] != owner || k.procs[1] != owner {
		t.Fatalf("registered processes = %+v, want %+v twice", k.procs, owner)
	}
	evicted := ev(s, hooksrv.EventFree, free, 2, 0x20000, 0x2000)
	evicted.FreeReason = hooksrv.FreeEvicted
	a.HandleEvent(ctx, evicted)
	a.HandleEvent(ctx, hooksrv.Event{Kind: hooksrv.EventSessionEnd, Session: s, Time: time.Unix(200, 0)})
	if st := a.Stats(); st.LiveBlocks != 0 || st.Processes != 0 {
		t.Fatalf("after session end: %+v", st)
	}
	a.Flush()
	recs := sink.records()
	var kinds []stratav1.AccessKind
	for _, r := range recs {
		kinds = append(kinds, r.GetAccess())
		b := r.GetBlock()
		if b.GetAppId() != "app-1" || r.GetPid() != 42 || b.GetKind() != stratav1.BlockKind_BLOCK_KIND_RDD || b.GetChunks() != 1 ||
			b.GetStageId() != 5 || b.GetTaskAttemptId() != 40+int64(b.GetHookBlockId()) {
			t.Fatalf("record lost its semantics: %v", r)
		}
	}
	want := []stratav1.AccessKind{alloc, alloc, read, move, read, free, free}
	if len(kinds) != len(want) {
		t.Fatalf("kinds = %v, want %v", kinds, want)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Fatalf("kinds = %v, want %v", kinds, want)
		}
	}
	if r := recs[4]; r.GetVaddr() != 0x30000 || r.GetRuns()[0].GetPfn() != 0x30 {
		t.Fatalf("access after move = %v", r)
	}
	if r := recs[6]; r.GetBlock().GetHookBlockId() != 1 || len(r.GetRuns()) != 0 || r.GetFaults().GetRead() != 1 || r.GetFaults().GetWrite() != 10 ||
		r.GetFreeReason() != stratav1.FreeReason_FREE_REASON_SESSION_END {
		t.Fatalf("session-end free = %v", r)
	}
	if r := recs[5]; r.GetBlock().GetHookBlockId() != 2 || r.GetFaults().GetRead() != 2 || r.GetFaults().GetWrite() != 20 ||
		r.GetFreeReason() != stratav1.FreeReason_FREE_REASON_EVICTED {
		t.Fatalf("free of block 2 = %v", r)
	}
	// register x2, move, free of block 2, session end: free of block 1, forget
	if got := strings.Join(k.ops, " "); got != "reg reg move free free forget" {
		t.Fatalf("kernel ops = %v", k.ops)
	}
	if len(sink.batches) != 2 {
		t.Fatalf("%d batches, want 2 (4 records each at most)", len(sink.batches))
	}
	for _, b := range sink.batches {
		if b.GetNodeName() != "n1" || b.GetBootId() != "b1" || !proto.Equal(b.GetNode(), node) {
			t.Fatalf("batch identity = %v, want node n1, boot b1, %v", b, node)
		}
	}
}

func TestDeadProcessRecordSaysWhy(t *testing.T) {
	res := &rangeResolver{dead: map[uint32]bool{9: true}}
	sink := &memSink{}
	a := New(res, sink, Config{})
	s := &hooksrv.Session{PID: 9}
	a.HandleEvent(context.Background(), ev(s, hooksrv.EventRegister, stratav1.AccessKind_ACCESS_KIND_ALLOC, 1, 0x1000, 0x1000))
	a.Flush()
	r := sink.records()[0]
	if r.GetResolveError() != errGone.Error() || len(r.GetRuns()) != 0 {
		t.Fatalf("record = %v", r)
	}
	if a.Stats().ResolveError != 1 {
		t.Fatalf("stats = %+v", a.Stats())
	}
}

// TestBatchesCutBySizeAndTime: a batch is cut at MaxRecords, and Run
// flushes the rest once it is FlushInterval old (on synctest's clock:
// exactly then); a batch the sink refuses is counted as dropped.
func TestBatchesCutBySizeAndTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := &memSink{}
		const every = 20 * time.Millisecond
		a := New(&rangeResolver{}, sink, Config{MaxRecords: 3, FlushInterval: every})
		s := &hooksrv.Session{PID: 1}
		for i := uint64(1); i <= 7; i++ {
			a.HandleEvent(context.Background(), ev(s, hooksrv.EventRegister, stratav1.AccessKind_ACCESS_KIND_ALLOC, i, i<<20, 4096))
		}
		sink.mu.Lock()
		n := len(sink.batches)
		sink.mu.Unlock()
		if n != 2 {
			t.Fatalf("batches by size = %d, want 2", n)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { a.Run(ctx); close(done) }()
		time.Sleep(every)
		synctest.Wait()
		if n := len(sink.records()); n != 7 {
			t.Fatalf("%d records after the flush interval, want 7", n)
		}
		cancel()
		<-done
		sink.refuse = true
		a.HandleEvent(context.Background(), ev(s, hooksrv.EventFree, stratav1.AccessKind_ACCESS_KIND_FREE, 1, 1<<20, 4096))
		a.Flush()
		if st := a.Stats(); st.Dropped != 1 || st.Records != 7 {
			t.Fatalf("stats = %+v", st)
		}
	})
}

// TestTimeFlushWhileRunning: with Run already waiting (nothing pending, no
// timer), each batch is flushed once it is FlushInterval old: not a
// nanosecond before on synctest's clock, and at that instant, the second
// as well as the first.
func TestTimeFlushWhileRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := &memSink{}
		const every = 100 * time.Millisecond
		a := New(&rangeResolver{}, sink, Config{FlushInterval: every})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { a.Run(ctx); close(done) }()
		s := &hooksrv.Session{PID: 1}
		for i := 1; i <= 2; i++ {
			synctest.Wait() // Run waits for a batch to start
			a.HandleEvent(context.Background(), ev(s, hooksrv.EventRegister, stratav1.AccessKind_ACCESS_KIND_ALLOC, uint64(i), uint64(i)<<20, 4096))
			time.Sleep(every - time.Nanosecond)
			synctest.Wait()
			if n := len(sink.records()); n != i-1 {
				t.Fatalf("record %d flushed before the %v flush interval (%d records)", i, every, n)
			}
			time.Sleep(time.Nanosecond)
			synctest.Wait()
			if n := len(sink.records()); n != i {
				t.Fatalf("record %d not flushed at the %v flush interval (%d records)", i, every, n)
			}
		}
		cancel()
		<-done
	})
}

func TestFaultSamplesAndCounters(t *testing.T) {
	sink := &memSink{}
	a := New(&rangeResolver{}, sink, Config{})
	s := &hooksrv.Session{PID: 5, AppID: "app", ExecutorID: "2"}
	a.HandleEvent(context.Background(), ev(s, hooksrv.EventRegister, stratav1.AccessKind_ACCESS_KIND_ALLOC, 3, 0x100000, 0x10000))
	now := time.Unix(300, 0)
	if n := a.AddFaults([]Fault{
		{PID: 5, TID: 6, BlockID: 3, Addr: 0x104123, Time: now, Kind: stratav1.FaultKind_FAULT_KIND_WRITE, CPUNode: 1},
		{PID: 5, BlockID: 4, Addr: 0x1, Time: now}, // no such block: dropped
	}); n != 1 {
		t.Fatalf("AddFaults recorded %d, want 1", n)
	}
	if !a.AddCounters(5, 3, &stratav1.FaultCounts{Read: 7, Write: 9}, now) {
		t.Fatal("counters of a live block were dropped")
	}
	// The registry keeps the block's last counters: the same again, or a
	// block it does not have, make no record.
	if a.AddCounters(5, 3, &stratav1.FaultCounts{Read: 7, Write: 9}, now) || a.AddCounters(5, 4, &stratav1.FaultCounts{Read: 1}, now) {
		t.Fatal("unchanged counters, or a dead block's, recorded")
	}
	a.Flush()
	recs := sink.records()
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3", len(recs))
	}
	f := recs[1]
	if f.GetAccess() != stratav1.AccessKind_ACCESS_KIND_FAULT || f.GetFaultKind() != stratav1.FaultKind_FAULT_KIND_WRITE ||
		f.GetVaddr() != 0x104123 || f.GetTid() != 6 || f.GetBlock().GetPartition() != 3 || f.GetFaults() != nil {
		t.Fatalf("sample record = %v", f)
	}
	// The faulted page, resolved: the resolver saw the page-aligned address.
	if f.GetCpuNumaNode() != 1 || f.GetRuns()[0].GetState()&uint32(stratav1.PageState_PAGE_STATE_CROSS_NODE) == 0 {
		t.Fatalf("sample from a CPU of node 1 on a node-0 page: cpu node %d, state %#x", f.GetCpuNumaNode(), f.GetRuns()[0].GetState())
	}
	if len(f.GetRuns()) != 1 || f.GetRuns()[0].GetVaddr() != 0x104000 || f.GetRuns()[0].GetCount() != 1 {
		t.Fatalf("sample runs = %v", f.GetRuns())
	}
	c := recs[2]
	if c.GetFaults().GetRead() != 7 || c.GetFaults().GetWrite() != 9 || c.GetVaddr() != 0x100000 || c.GetLength() != 0x10000 || len(c.GetRuns()) != 0 {
		t.Fatalf("counter record = %v", c)
	}
}

func TestFaultSamplesResolveOncePerProcess(t *testing.T) {
	res := &rangeResolver{}
	sink := &memSink{}
	a := New(res, sink, Config{})
	for _, pid := range []uint32{5, 6} {
		s := &hooksrv.Session{PID: pid, AppID: "app"}
		a.HandleEvent(context.Background(), ev(s, hooksrv.EventRegister, stratav1.AccessKind_ACCESS_KIND_ALLOC, 1, 0x100000, 0x10000))
	}
	before, asked := res.calls, len(res.flags)
	for _, f := range res.flags {
		if f != resolver.FlagsDefault {
			t.Fatalf("a block registration asked for flags mode %v, want the pool's default", f)
		}
	}
	now := time.Unix(300, 0)
	n := a.AddFaults([]Fault{
		{PID: 5, BlockID: 1, Addr: 0x101000, Time: now},
		{PID: 6, BlockID: 1, Addr: 0x102000, Time: now},
		{PID: 5, BlockID: 1, Addr: 0x103000, Time: now},
	})
	if n != 3 || res.calls-before != 2 {
		t.Fatalf("recorded %d with %d resolver calls, want 3 with 2", n, res.calls-before)
	}
	// A sampled page always gets its flags, even from a pool that skips
	// them for blocks (--page-flags sampled).
	for _, f := range res.flags[asked:] {
		if f != resolver.FlagsRead {
			t.Fatalf("a fault sample asked for flags mode %v, want FlagsRead", f)
		}
	}
	a.Flush()
	got := map[uint32][]uint64{}
	for _, r := range sink.records()[2:] {
		got[r.GetPid()] = append(got[r.GetPid()], r.GetRuns()[0].GetVaddr())
	}
	if !slices.Equal(got[5], []uint64{0x101000, 0x103000}) || !slices.Equal(got[6], []uint64{0x102000}) {
		t.Fatalf("sampled pages per pid = %v", got)
	}
}

// Processes lists each pid with an open session once, named after its
// latest session; AddMemory samples travel in the batches, with the size
// bound respected like workloads.
func TestProcessesAndMemorySamples(t *testing.T) {
	sink := &memSink{}
	a := New(&rangeResolver{}, sink, Config{NodeName: "n1", BootID: "b1"})
	ctx := context.Background()
	old := &hooksrv.Session{ID: 1, PID: 42, AppID: "app-0", ExecutorID: "1"}
	s42 := &hooksrv.Session{ID: 3, PID: 42, AppID: "app-1", ExecutorID: "1"}
	s7 := &hooksrv.Session{ID: 2, PID: 7, AppID: "app-1", ExecutorID: "driver"}
	for _, s := range []*hooksrv.Session{old, s42, s7} {
		a.HandleEvent(ctx, hooksrv.Event{Kind: hooksrv.EventSessionStart, Session: s})
	}
	want := []Process{{PID: 7, AppID: "app-1", ExecutorID: "driver"}, {PID: 42, AppID: "app-1", ExecutorID: "1"}}
	if got := a.Processes(); !slices.Equal(got, want) {
		t.Fatalf("Processes = %+v, want %+v", got, want)
	}
	a.HandleEvent(ctx, hooksrv.Event{Kind: hooksrv.EventSessionEnd, Session: s7})
	a.HandleEvent(ctx, hooksrv.Event{Kind: hooksrv.EventSessionEnd, Session: old})
	if got := a.Processes(); !slices.Equal(got, want[1:]) {
		t.Fatalf("Processes after two sessions ended = %+v, want %+v", got, want[1:])
	}
	a.AddMemory(&stratav1.ProcessMemory{AppId: "app-1", ExecutorId: "1", Pid: 42, TimeUnixNano: 5, RssBytes: 1 << 30, HwmBytes: 2 << 30})
	a.Flush()
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if len(sink.batches) != 1 || len(sink.batches[0].GetProcesses()) != 1 || sink.batches[0].GetProcesses()[0].GetHwmBytes() != 2<<30 ||
		sink.batches[0].GetNodeName() != "n1" {
		t.Fatalf("batches = %v", sink.batches)
	}
}
