package faults

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stratatrace/strata/agent/annotator"
	"github.com/stratatrace/strata/agent/hooksrv"
	"github.com/stratatrace/strata/agent/perfstat"
	"github.com/stratatrace/strata/agent/resolver"
	"github.com/stratatrace/strata/agent/tracer"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// rig is a Faults on a fake tracer and fake workloads.
type rig struct {
	f  *Faults
	t  *fakeTracer
	wl *fakeWorkloads
	s  *sink
}

func newRig(t *testing.T, cfg Config) *rig {
	t.Helper()
	r := &rig{t: newFakeTracer(), wl: newFakeWorkloads(), s: &sink{}}
	if cfg.OpenWorkload == nil {
		cfg.OpenWorkload = r.wl.openWorkload
	}
	f, err := Open(r.t.load, cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.f = f
	t.Cleanup(func() { f.Close() })
	return r
}

var (
	app5 = annotator.Process{PID: 5, AppID: "app-1", ExecutorID: "3"}
	app6 = annotator.Process{PID: 6, AppID: "app-1", ExecutorID: "4"}
)

// register registers blocks 1..n of p, 1 MiB each.
func (r *rig) register(t *testing.T, p annotator.Process, n uint64) {
	t.Helper()
	for id := uint64(1); id <= n; id++ {
		if err := r.f.RegisterBlock(p, id, id<<20, id<<20+1<<20); err != nil {
			t.Fatal(err)
		}
	}
}

func sortCounters(cs []counterRec) []counterRec {
	slices.SortFunc(cs, func(a, b counterRec) int {
		if a.pid != b.pid {
			return int(a.pid) - int(b.pid)
		}
		return int(a.id) - int(b.id)
	})
	return cs
}

// owner is a real annotator over a rig's Faults, as the agent wires them:
// the registry that says which blocks are live and which of their counters
// become records.
type owner struct {
	a     *annotator.Annotator
	out   *batches
	procs map[uint32]*hooksrv.Session
}

func newOwner(r *rig) *owner {
	out := &batches{}
	return &owner{a: annotator.New(noPages{}, out, annotator.Config{Kernel: r.f.Kernel()}), out: out, procs: map[uint32]*hooksrv.Session{}}
}

// event hands the annotator a hook event of block id of p, 1 MiB at id MiB.
func (o *owner) event(p annotator.Process, kind hooksrv.EventKind, id uint64) {
	s := o.procs[p.PID]
	if s == nil {
		s = &hooksrv.Session{ID: uint64(len(o.procs) + 1), PID: p.PID, AppID: p.AppID, ExecutorID: p.ExecutorID}
		o.procs[p.PID] = s
	}
	access := stratav1.AccessKind_ACCESS_KIND_ALLOC
	if kind == hooksrv.EventFree {
		access = stratav1.AccessKind_ACCESS_KIND_FREE
	}
	o.a.HandleEvent(context.Background(), hooksrv.Event{Kind: kind, Access: access, Session: s, Time: time.Now(),
		Block: hooksrv.Block{HookID: id, Name: fmt.Sprintf("rdd_1_%d", id)}, Vaddr: id << 20, Length: 1 << 20})
}

// records returns the records flushed since the last call: counter records
// as counterRec, sorted, and the FREE records.
func (o *owner) records() (counters []counterRec, frees []*stratav1.Record) {
	o.a.Flush()
	o.out.mu.Lock()
	defer o.out.mu.Unlock()
	for _, b := range o.out.b {
		for _, rec := range b.GetRecords() {
			switch rec.GetAccess() {
			case stratav1.AccessKind_ACCESS_KIND_FAULT:
				counters = append(counters, counterRec{rec.GetPid(), rec.GetBlock().GetHookBlockId(), rec.GetFaults()})
			case stratav1.AccessKind_ACCESS_KIND_FREE:
				frees = append(frees, rec)
			}
		}
	}
	o.out.b = nil
	return sortCounters(counters), frees
}

// noPages resolves every range to no pages.
type noPages struct{}

func (noPages) ResolveFor(_ resolver.Tenant, _ []resolver.Request, _ []resolver.Result) error {
	return nil
}

// batches keeps what the annotator flushes.
type batches struct {
	mu sync.Mutex
	b  []*stratav1.Batch
}

func (s *batches) Append(b *stratav1.Batch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b = append(s.b, b)
	return nil
}

// TestCounterDiffing: what reaches the records from Faults' flushes through
// the annotator, the owner of the live blocks.
func TestCounterDiffing(t *testing.T) {
	r := newRig(t, Config{})
	o := newOwner(r)
	o.event(app5, hooksrv.EventRegister, 1)
	o.event(app5, hooksrv.EventRegister, 2)
	o.event(app6, hooksrv.EventRegister, 1)
	r.t.fault(5, 1, tracer.Counters{Write: 3})

	// First sight: every block, zero counters included.
	r.f.flush(o.a)
	got, _ := o.records()
	if len(got) != 3 || got[0].fc.GetWrite() != 3 || got[1].fc.GetWrite() != 0 || got[2].pid != 6 {
		t.Fatalf("first flush recorded %v, want 3 blocks, block 5/1 with 3 writes", got)
	}
	// Nothing changed: nothing recorded.
	r.f.flush(o.a)
	if got, _ := o.records(); len(got) != 0 {
		t.Fatalf("unchanged counters recorded again: %v", got)
	}
	// One block changed: that block, with its cumulative counters.
	r.t.fault(5, 2, tracer.Counters{Read: 4, Major: 1})
	r.f.flush(o.a)
	got, _ = o.records()
	if len(got) != 1 || got[0].pid != 5 || got[0].id != 2 || got[0].fc.GetRead() != 4 || got[0].fc.GetMajor() != 1 {
		t.Fatalf("after a change recorded %v, want block 5/2 read 4 major 1", got)
	}
	r.t.fault(5, 2, tracer.Counters{Read: 1})
	r.f.flush(o.a)
	if got, _ := o.records(); len(got) != 1 || got[0].fc.GetRead() != 5 {
		t.Fatalf("cumulative counters: %v, want read 5", got)
	}
	// A freed block's FREE carries its final counters, and the block is
	// forgotten: registered again, it is new.
	o.event(app5, hooksrv.EventFree, 2)
	if _, frees := o.records(); len(frees) != 1 || frees[0].GetFaults().GetRead() != 5 || frees[0].GetFaults().GetMajor() != 1 {
		t.Fatalf("FREE records %v, want block 5/2's with read 5 major 1", frees)
	}
	o.event(app5, hooksrv.EventRegister, 2)
	r.f.flush(o.a)
	if got, _ := o.records(); len(got) != 1 || got[0].id != 2 || got[0].fc.GetRead() != 0 {
		t.Fatalf("re-registered block: %v, want it recorded with zero counters", got)
	}
}

// TestProcessExitsBeforeSessionEnds: the tracer forgets the process first.
// Its final counters are sent at once, and the FREE records of the
// session's end claim them, once.
func TestProcessExitsBeforeSessionEnds(t *testing.T) {
	r := newRig(t, Config{})
	r.register(t, app5, 2)
	r.f.flush(r.s)
	r.s.take()
	r.t.fault(5, 1, tracer.Counters{Write: 1024})
	r.wl.get(5).set(func(c *perfstat.Counts) { c.MinorFaults = 2048 })

	r.t.exit(5)
	r.f.sendEnded(r.s, time.Now())
	got, wls := r.s.take()
	sortCounters(got)
	if len(got) != 2 || got[0].id != 1 || got[0].fc.GetWrite() != 1024 || got[1].id != 2 || got[1].fc.GetWrite() != 0 {
		t.Fatalf("exit sent %v, want the final counters of block 1 (1024 writes) and block 2 (none)", got)
	}
	if len(wls) != 1 || wls[0].GetPid() != 5 || wls[0].GetMinorFaults() != 2048 || wls[0].GetAppId() != "app-1" || wls[0].GetExecutorId() != "3" {
		t.Fatalf("exit sent workloads %v, want pid 5's last counters named app-1/3", wls)
	}
	if !r.wl.get(5).isClosed() {
		t.Fatal("workload of an exited process still open")
	}

	// The session ends: the annotator frees every block, then forgets.
	for id, want := range map[uint64]uint64{1: 1024, 2: 0} {
		fc, err := r.f.FreeBlock(5, id)
		if err != nil || fc.GetWrite() != want {
			t.Fatalf("free block %d after exit = %v, %v; want %d writes", id, fc, err, want)
		}
		if _, err := r.f.FreeBlock(5, id); !errors.Is(err, tracer.ErrNotTracked) {
			t.Fatalf("final counters of block %d claimed twice: %v", id, err)
		}
	}
	if err := r.f.ForgetProcess(5); err != nil {
		t.Fatalf("forget after exit: %v", err)
	}
	r.f.flush(r.s)
	if got, wls := r.s.take(); len(got) != 0 || len(wls) != 0 {
		t.Fatalf("after the session: %v %v", got, wls)
	}
}

// TestSessionEndsBeforeExit: the FREE records read the tracer, and the
// process is untracked; its later exit is nobody's business.
func TestSessionEndsBeforeExit(t *testing.T) {
	r := newRig(t, Config{})
	r.register(t, app5, 2)
	r.t.fault(5, 2, tracer.Counters{Read: 7})
	r.wl.get(5).set(func(c *perfstat.Counts) { c.TaskClockNs = 99 })
	for id, want := range map[uint64]uint64{1: 0, 2: 7} {
		if fc, err := r.f.FreeBlock(5, id); err != nil || fc.GetRead() != want {
			t.Fatalf("free block %d = %v, %v; want %d reads", id, fc, err, want)
		}
	}
	if err := r.f.ForgetProcess(5); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.t.untracked, []uint32{5}) || r.t.tracked[5] {
		t.Fatalf("untracked %v, tracked %v", r.t.untracked, r.t.tracked)
	}
	r.f.sendEnded(r.s, time.Now())
	got, wls := r.s.take()
	if len(got) != 0 || len(wls) != 1 || wls[0].GetTaskClockNs() != 99 || wls[0].GetExecutorId() != "3" {
		t.Fatalf("session end sent %v and workloads %v, want pid 5's last workload counters", got, wls)
	}
	// A FREE the tracer cannot answer, with no exit report, is an error.
	if _, err := r.f.FreeBlock(5, 1); !errors.Is(err, tracer.ErrNotTracked) {
		t.Fatalf("free after forget: %v", err)
	}
}

// TestExitThroughOwner: a process exits before its session ends, with the
// annotator as the sink. The exit records the final counters that changed,
// and the session's end gives every block a FREE record with its final
// counters and leaves no block whose counters are recorded later.
func TestExitThroughOwner(t *testing.T) {
	r := newRig(t, Config{})
	o := newOwner(r)
	o.event(app5, hooksrv.EventRegister, 1)
	o.event(app5, hooksrv.EventRegister, 2)
	r.f.flush(o.a)
	if got, _ := o.records(); len(got) != 2 {
		t.Fatalf("first flush recorded %v, want both blocks", got)
	}
	r.t.fault(5, 1, tracer.Counters{Write: 1024})

	r.t.exit(5)
	r.f.sendEnded(o.a, time.Now())
	if got, _ := o.records(); len(got) != 1 || got[0].id != 1 || got[0].fc.GetWrite() != 1024 {
		t.Fatalf("exit recorded %v, want the changed block 1 with 1024 writes", got)
	}
	o.event(app5, hooksrv.EventSessionEnd, 0)
	got, frees := o.records()
	if len(got) != 0 || len(frees) != 2 {
		t.Fatalf("session end recorded counters %v and %d FREE records, want none and 2", got, len(frees))
	}
	for _, rec := range frees {
		id, want := rec.GetBlock().GetHookBlockId(), map[uint64]uint64{1: 1024, 2: 0}
		if rec.GetFreeReason() != stratav1.FreeReason_FREE_REASON_SESSION_END || rec.GetFaults() == nil || rec.GetFaults().GetWrite() != want[id] {
			t.Fatalf("FREE of block %d = %v, want session end with %d writes", id, rec, want[id])
		}
	}
	r.f.flush(o.a)
	if got, _ := o.records(); len(got) != 0 || len(r.f.finals) != 0 || o.a.Stats().LiveBlocks != 0 {
		t.Fatalf("after the session: recorded %v, finals %v, live %d", got, r.f.finals, o.a.Stats().LiveBlocks)
	}
}

// TestExitFinalsForgottenWithSession: a session ending without freeing a
// block (it was never registered in the annotator) drops its final.
func TestExitFinalsForgottenWithSession(t *testing.T) {
	r := newRig(t, Config{})
	r.register(t, app5, 1)
	r.t.fault(5, 1, tracer.Counters{Write: 2})
	r.t.exit(5)
	if err := r.f.ForgetProcess(5); err != nil {
		t.Fatal(err)
	}
	if _, err := r.f.FreeBlock(5, 1); err == nil {
		t.Fatal("final counters outlived the session")
	}
	if len(r.f.finals) != 0 {
		t.Fatalf("finals kept: %v", r.f.finals)
	}
}

func TestWorkloadOpenClose(t *testing.T) {
	r := newRig(t, Config{})
	r.wl.fail[7] = true
	r.register(t, app5, 3) // one workload for three blocks
	r.register(t, app6, 1)
	r.register(t, annotator.Process{PID: 7, AppID: "app-2", ExecutorID: "1"}, 2)
	if r.wl.opened[5] != 1 || r.wl.opened[6] != 1 || r.wl.opened[7] != 1 {
		t.Fatalf("opened %v, want each pid once (a failure is not retried per block)", r.wl.opened)
	}
	r.f.flush(r.s)
	_, wls := r.s.take()
	names := map[uint32]string{}
	for _, w := range wls {
		names[w.GetPid()] = w.GetAppId() + "/" + w.GetExecutorId()
	}
	if len(wls) != 2 || names[5] != "app-1/3" || names[6] != "app-1/4" {
		t.Fatalf("periodic workloads %v, want pids 5 and 6 with their Spark names", names)
	}
	if err := r.f.ForgetProcess(6); err != nil {
		t.Fatal(err)
	}
	if !r.wl.get(6).isClosed() || r.wl.get(5).isClosed() {
		t.Fatal("ForgetProcess(6) must close 6's counting and only it")
	}
	r.f.flush(r.s)
	_, wls = r.s.take()
	if len(wls) != 2 {
		t.Fatalf("flush after pid 6 ended sent %d workloads, want 6's last and 5's", len(wls))
	}
	// A process registered again after its session ended counts afresh.
	r.register(t, app6, 1)
	if r.wl.opened[6] != 2 {
		t.Fatalf("pid 6 reopened %d times", r.wl.opened[6]-1)
	}
	r.f.Close()
	if !r.wl.get(5).isClosed() || !r.wl.get(6).isClosed() || !r.t.closed {
		t.Fatal("Close left counting or the tracer open")
	}
}

func TestWorkloadNamedByLaterRegistration(t *testing.T) {
	r := newRig(t, Config{})
	r.register(t, annotator.Process{PID: 5}, 1)
	if err := r.f.RegisterBlock(app5, 9, 90<<20, 91<<20); err != nil {
		t.Fatal(err)
	}
	r.f.flush(r.s)
	if _, wls := r.s.take(); len(wls) != 1 || wls[0].GetAppId() != "app-1" {
		t.Fatalf("workloads %v, want the Spark name learned later", wls)
	}
}

// TestDrainBatching: waiting events are drained in batches of at most
// maxFaultBatch; exit notices and walk samples are not faults; CPUs map to
// their NUMA node.
func TestDrainBatching(t *testing.T) {
	r := newRig(t, Config{CPUNodes: []int32{0, 1}, Interval: time.Hour})
	const n = 2000
	for i := range n {
		ev := tracer.Event{TGID: 5, TID: 8, BlockID: 1, Addr: 1<<20 + uint64(i)*4096, Kind: tracer.KindWrite, CPU: uint16(i % 3), Time: time.Unix(50, int64(i))}
		if i%2 == 0 {
			ev.Kind = tracer.KindRead
		}
		r.t.events <- ev
		if i%100 == 0 {
			r.t.events <- tracer.Event{TGID: 5, Kind: tracer.KindExit}
			r.t.events <- tracer.Event{TGID: 5, Kind: tracer.KindWalkSample, Addr: 1 << 20}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.f.Run(ctx, r.s); close(done) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.s.mu.Lock()
		total := 0
		for _, b := range r.s.faults {
			total += len(b)
		}
		r.s.mu.Unlock()
		if total == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d faults recorded", total, n)
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	var sizes []int
	for b, batch := range r.s.faults {
		sizes = append(sizes, len(batch))
		for i, f := range batch {
			if f.PID != 5 || f.TID != 8 || f.BlockID != 1 || f.Kind == stratav1.FaultKind_FAULT_KIND_UNSPECIFIED {
				t.Fatalf("batch %d fault %d = %+v", b, i, f)
			}
		}
	}
	// 2000 faults and 40 other events, all waiting: 1024 events, then the rest.
	if !slices.Equal(sizes, []int{1024 - 22, n - (1024 - 22)}) {
		t.Fatalf("batch sizes %v", sizes)
	}
	all := slices.Concat(r.s.faults...)
	for i, f := range all {
		wantKind, wantNode := stratav1.FaultKind_FAULT_KIND_WRITE, []int32{0, 1, -1}[i%3]
		if i%2 == 0 {
			wantKind = stratav1.FaultKind_FAULT_KIND_READ
		}
		if f.Kind != wantKind || f.CPUNode != wantNode || f.Addr != 1<<20+uint64(i)*4096 || !f.Time.Equal(time.Unix(50, int64(i))) {
			t.Fatalf("fault %d = %+v, want kind %v on node %d", i, f, wantKind, wantNode)
		}
	}
}

// TestRunSendsEndsAtOnce: with a one-hour interval, an exit and an ended
// session still reach the sink without waiting for the tick, and the end
// of Run flushes.
func TestRunSendsEndsAtOnce(t *testing.T) {
	r := newRig(t, Config{Interval: time.Hour})
	r.register(t, app5, 1)
	r.register(t, app6, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.f.Run(ctx, r.s); close(done) }()
	r.t.fault(5, 1, tracer.Counters{Write: 5})
	r.t.exit(5)
	r.f.ForgetProcess(6)
	var counters []counterRec
	var wls []*stratav1.WorkloadCounters
	deadline := time.Now().Add(10 * time.Second)
	for len(counters) < 1 || len(wls) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("after exit and session end: counters %v, workloads %v", counters, wls)
		}
		time.Sleep(time.Millisecond)
		c, w := r.s.take()
		counters, wls = append(counters, c...), append(wls, w...)
	}
	if counters[0].pid != 5 || counters[0].fc.GetWrite() != 5 {
		t.Fatalf("exit counters %v", counters)
	}
	r.register(t, annotator.Process{PID: 8, AppID: "app-3"}, 1)
	cancel()
	<-done
	if c, w := r.s.take(); len(c) != 1 || c[0].pid != 8 || len(w) != 1 || w[0].GetAppId() != "app-3" {
		t.Fatalf("final flush sent %v and %v, want pid 8's block and workload", c, w)
	}
}

func walkCounts(load, store uint64) func(*perfstat.Counts) {
	return func(c *perfstat.Counts) {
		c.WalkCyclesLoad, c.WalkCyclesStore = &load, &store
		c.PMUStatus = "available"
	}
}

// TestWalkCyclesRDD: with a core PMU and PEBS events, both STLB-miss
// events are sampled and the walk cycles split by the samples' share.
func TestWalkCyclesRDD(t *testing.T) {
	intel := perfstat.PMUInfo{Core: []perfstat.PMU{{Name: "cpu", Type: 4}}}
	walk, err := perfstat.SelectWalkEvents(cpuModel("GenuineIntel", 6, 0x55))
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, Config{PMU: intel, Walk: &walk})
	want := []tracer.SampleEvent{{Type: 4, Config: 0x11d0, Period: walkSamplePeriod, Precise: 2}, {Type: 4, Config: 0x12d0, Period: walkSamplePeriod, Precise: 2}}
	if !slices.Equal(r.t.sampled, want) || !strings.Contains(r.f.Status(), "walk sampling on") {
		t.Fatalf("sampled %v, status %q; want %v", r.t.sampled, r.f.Status(), want)
	}
	r.register(t, app5, 1)
	r.wl.get(5).set(walkCounts(600, 400))
	r.t.walk[5] = [2]uint64{100, 25}
	r.f.flush(r.s)
	_, wls := r.s.take()
	if len(wls) != 1 || wls[0].WalkCyclesRdd == nil || wls[0].GetWalkCyclesRdd() != 250 {
		t.Fatalf("workloads %v, want walk_cycles_rdd 250 (1000 cycles, 25 of 100 samples)", wls)
	}
	// No samples yet: no figure, not zero.
	r.t.walk[5] = [2]uint64{0, 0}
	r.f.flush(r.s)
	if _, wls := r.s.take(); len(wls) != 1 || wls[0].WalkCyclesRdd != nil {
		t.Fatalf("without samples: %v", wls)
	}
	// The exit report's samples serve the last counters.
	r.t.walk[5] = [2]uint64{10, 5}
	r.t.exit(5)
	r.f.sendEnded(r.s, time.Now())
	if _, wls := r.s.take(); len(wls) != 1 || wls[0].GetWalkCyclesRdd() != 500 {
		t.Fatalf("at exit: %v, want 500", wls)
	}

	// Sampling refused (no PEBS): the figure is absent.
	ft := newFakeTracer()
	ft.sampleErr = errors.New("perf_event_open: no such device")
	wl := newFakeWorkloads()
	f, err := Open(ft.load, Config{PMU: intel, Walk: &walk, OpenWorkload: wl.openWorkload})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.RegisterBlock(app5, 1, 1<<20, 2<<20); err != nil {
		t.Fatal(err)
	}
	wl.get(5).set(walkCounts(600, 400))
	ft.walk[5] = [2]uint64{100, 25}
	s := &sink{}
	f.flush(s)
	if len(s.workloads) != 1 || s.workloads[0].WalkCyclesRdd != nil || !strings.Contains(f.Status(), "walk sampling off") {
		t.Fatalf("sampling refused: %v, status %q", s.workloads, f.Status())
	}
	// No PMU: nothing is sampled at all.
	ft = newFakeTracer()
	if _, err := Open(ft.load, Config{Walk: &walk}); err != nil || len(ft.sampled) != 0 {
		t.Fatalf("without a PMU sampled %v (%v)", ft.sampled, err)
	}
}

func TestAttributeWalkCycles(t *testing.T) {
	for _, tc := range []struct {
		cycles, samples, matched, want uint64
		ok                             bool
	}{
		{1000, 100, 25, 250, true},
		{1000, 0, 0, 0, false},
		{1000, 10, 11, 0, false},
		{0, 10, 5, 0, true},
	} {
		got, ok := attributeWalkCycles(tc.cycles, tc.samples, tc.matched)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%+v: got %d %v", tc, got, ok)
		}
	}
}

func TestUnavailable(t *testing.T) {
	f := Unavailable("disabled (--faults off)")
	if f.Kernel() != nil {
		t.Fatal("Kernel of an unavailable Faults is not nil")
	}
	if f.Status() != "unavailable: disabled (--faults off)" {
		t.Fatalf("status %q", f.Status())
	}
	metrics := scrape(t, f)
	drops := []string{"{kernel,ring_full}", "{agent,fault_events_behind}", "{kernel,fill_put_failed}", "{kernel,fill_too_deep}",
		"{kernel,fill_no_room}", "{agent,fill_unregistered}"}
	if len(metrics) != 1+len(drops) || metrics["strata_faults_available"] != 0 {
		t.Fatalf("metrics %v", metrics)
	}
	for _, d := range drops {
		if v, ok := metrics["strata_dropped_total"+d]; !ok || v != 0 {
			t.Fatalf("metrics %v: want strata_dropped_total%s 0", metrics, d)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f.Run(ctx, &sink{}) // returns
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(func(func(tracer.ExitReport)) (Tracer, error) { return nil, tracer.ErrUnsupported }, Config{}); !errors.Is(err, tracer.ErrUnsupported) {
		t.Fatalf("failed load: %v", err)
	}
	r := newRig(t, Config{})
	if r.f.Kernel() == nil {
		t.Fatal("Kernel of a loaded Faults is nil")
	}
	metrics = scrape(t, r.f)
	if metrics["strata_faults_available"] != 1 || metrics["strata_faults_traced_total"] != 7 {
		t.Fatalf("metrics %v", metrics)
	}
}

// TestWeakRanges: a block's walked ranges reach the tracer as they are,
// replace the block's earlier ones, are refused for a block the tracer does
// not hold, and go with the block's free; the metric counts them.
func TestWeakRanges(t *testing.T) {
	r := newRig(t, Config{})
	r.register(t, app5, 2)
	walk := []annotator.Range{{Start: 1<<30 + 4096, End: 1<<30 + 8192}, {Start: 1<<30 + 3*4096, End: 1<<30 + 5*4096}}
	if err := r.f.SetWeakRanges(5, 1, walk); err != nil {
		t.Fatal(err)
	}
	if err := r.f.SetWeakRanges(5, 2, walk[:1]); err != nil {
		t.Fatal(err)
	}
	want := []tracer.Range{{Start: 1<<30 + 4096, End: 1<<30 + 8192}, {Start: 1<<30 + 3*4096, End: 1<<30 + 5*4096}}
	if got := r.t.weak[annotator.BlockKey{PID: 5, ID: 1}]; !slices.Equal(got, want) {
		t.Fatalf("tracer holds %v for block 1, want %v", got, want)
	}
	metric := func() float64 { return scrape(t, r.f)["strata_faults_weak_ranges"] }
	if m := metric(); m != 3 {
		t.Fatalf("strata_faults_weak_ranges = %v, want 3", m)
	}
	if err := r.f.SetWeakRanges(5, 1, walk[1:]); err != nil {
		t.Fatal(err)
	}
	if err := r.f.SetWeakRanges(5, 9, walk); !errors.Is(err, tracer.ErrUnknownBlock) {
		t.Fatalf("weak ranges of an unknown block: %v", err)
	}
	if _, err := r.f.FreeBlock(5, 2); err != nil {
		t.Fatal(err)
	}
	if m := metric(); m != 1 {
		t.Fatalf("after replacing block 1's and freeing block 2: %v weak ranges, want 1", m)
	}
}

// scrape gathers f's Collector through a pedantic registry: every series
// by name, strata_dropped_total's as strata_dropped_total{stage,reason}.
func scrape(t *testing.T, f *Faults) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(f))
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, fam := range fams {
		for _, m := range fam.GetMetric() {
			name := fam.GetName()
			if name == "strata_dropped_total" {
				l := map[string]string{}
				for _, p := range m.GetLabel() {
					l[p.GetName()] = p.GetValue()
				}
				name += "{" + l["stage"] + "," + l["reason"] + "}"
			}
			out[name] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	return out
}
