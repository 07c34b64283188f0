package annotator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stratatrace/strata/agent/hooksrv"
	"github.com/stratatrace/strata/agent/procmem"
	"github.com/stratatrace/strata/agent/resolver"
	"github.com/stratatrace/strata/agent/resolver/resolvertest"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
	"github.com/stratatrace/strata/test/testenv"
)

// The tests of this file resolve this process's own memory with the real
// resolver: a mapping stands for the JVM heap, a page of it for a block's
// array of references, other pages for the objects its walks find.

const (
	alloc = stratav1.AccessKind_ACCESS_KIND_ALLOC
	read  = stratav1.AccessKind_ACCESS_KIND_READ
	write = stratav1.AccessKind_ACCESS_KIND_WRITE
	move  = stratav1.AccessKind_ACCESS_KIND_MOVE
	free  = stratav1.AccessKind_ACCESS_KIND_FREE

	buffers    = stratav1.Resolution_RESOLUTION_BUFFERS
	walked     = stratav1.Resolution_RESOLUTION_WALKED
	walkCut    = stratav1.Resolution_RESOLUTION_WALK_CUT
	references = stratav1.Resolution_RESOLUTION_REFERENCES
)

// heap maps n pages of this process, each written once, and returns the
// address of page i.
func heap(t *testing.T, n int) func(i int) uint64 {
	base := resolvertest.Touched(t, n)
	ps := procmem.PageSize()
	return func(i int) uint64 { return base + uint64(i)*ps }
}

// realPool is a resolver pool over the running system's /proc.
func realPool(t *testing.T) *resolver.Pool {
	t.Helper()
	testenv.RequireRoot(t)
	p, err := resolver.NewPool(procmem.Default(), 2, resolver.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// checkPages checks that runs are exactly the pages of extents, in order,
// each present with the PFN /proc/self/pagemap gives it now.
func checkPages(t *testing.T, runs []*stratav1.PageRun, extents []hooksrv.Extent) {
	t.Helper()
	ps := procmem.PageSize()
	var want []uint64
	for _, e := range extents {
		for a := e.Vaddr &^ (ps - 1); a < e.End(); a += ps {
			want = append(want, a)
		}
	}
	pm, err := procmem.Default().OpenPagemap(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	defer pm.Close()
	var ent [1]procmem.Entry
	k := 0
	for _, r := range runs {
		r.ForEachPage(ps, func(_ uint32, p stratav1.Page) bool {
			if k >= len(want) || p.VAddr != want[k] {
				t.Fatalf("page %d of the runs at %#x, want %s", k, p.VAddr, pageAt(want, k))
			}
			if err := pm.Read(ent[:], p.VAddr); err != nil {
				t.Fatal(err)
			}
			if !p.Is(stratav1.PageState_PAGE_STATE_PRESENT) || p.PFN == 0 || p.PFN != ent[0].PFN() {
				t.Fatalf("page %#x: PFN %#x state %#x, pagemap says PFN %#x", p.VAddr, p.PFN, p.State, ent[0].PFN())
			}
			k++
			return true
		})
	}
	if k != len(want) {
		t.Fatalf("runs hold %d pages, want %d", k, len(want))
	}
}

func pageAt(want []uint64, k int) string {
	if k < len(want) {
		return fmt.Sprintf("%#x", want[k])
	}
	return "no more pages"
}

// weakKernel logs the kernel calls and keeps every block's weak ranges.
type weakKernel struct {
	kernelLog
	weak map[uint64][]Range
}

func newWeakKernel() *weakKernel { return &weakKernel{weak: map[uint64][]Range{}} }

func (k *weakKernel) SetWeakRanges(pid uint32, id uint64, ranges []Range) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.ops = append(k.ops, fmt.Sprintf("weak %d:%d", id, len(ranges)))
	if ranges == nil {
		delete(k.weak, id)
	} else {
		k.weak[id] = ranges
	}
	return nil
}

func (k *weakKernel) FreeBlock(pid uint32, id uint64) (*stratav1.FaultCounts, error) {
	k.mu.Lock()
	delete(k.weak, id)
	k.mu.Unlock()
	return k.kernelLog.FreeBlock(pid, id)
}

// since returns the kernel calls after the first n, and how many there are.
func (k *weakKernel) since(n int) (string, int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return strings.Join(k.ops[n:], " "), len(k.ops)
}

func (k *weakKernel) weakOf(id uint64) []Range {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.weak[id]
}

func rangesOf(extents []hooksrv.Extent) []Range {
	out := make([]Range, len(extents))
	for i, e := range extents {
		out[i] = Range{e.Vaddr, e.End()}
	}
	return out
}

// rig is an annotator over the real resolver, this process as the JVM.
type rig struct {
	t    *testing.T
	a    *Annotator
	sink *memSink
	k    *weakKernel
	s    *hooksrv.Session
	page func(int) uint64
	seen int // records checked so far
}

func newRig(t *testing.T, pages int, cfg Config) *rig {
	r := &rig{t: t, sink: &memSink{}, k: newWeakKernel(), page: heap(t, pages)}
	if cfg.ReuseWindow == 0 {
		cfg.ReuseWindow = time.Hour
	}
	cfg.Kernel = r.k
	r.a = New(realPool(t), r.sink, cfg)
	r.s = &hooksrv.Session{ID: 1, PID: uint32(os.Getpid()), AppID: "app-7", ExecutorID: "2", Walk: hooksrv.WalkOn}
	r.a.HandleEvent(context.Background(), hooksrv.Event{Kind: hooksrv.EventSessionStart, Session: r.s})
	return r
}

// graph is a deserialized block's REGISTER: its array of references,
// 1000 bytes at page p.
func (r *rig) graph(id uint64, p int) hooksrv.Event {
	e := ev(r.s, hooksrv.EventRegister, alloc, id, r.page(p), 1000)
	e.Block.ObjectGraph, e.Block.SparkBytes = true, 5<<20
	return e
}

func (r *rig) send(evs ...hooksrv.Event) {
	for _, e := range evs {
		r.a.HandleEvent(context.Background(), e)
	}
}

// on makes a block event of e's block: kind, access and range as given.
func on(e hooksrv.Event, kind hooksrv.EventKind, access stratav1.AccessKind, vaddr uint64) hooksrv.Event {
	e.Kind, e.Access, e.Vaddr = kind, access, vaddr
	return e
}

// walkOf is an EventWalk of e's block (array at vaddr).
func walkOf(e hooksrv.Event, vaddr uint64, w *hooksrv.Walk) hooksrv.Event {
	e = on(e, hooksrv.EventWalk, move, vaddr)
	e.Walk = w
	return e
}

func (r *rig) epoch(kind hooksrv.EventKind, e uint32) hooksrv.Event {
	return hooksrv.Event{Kind: kind, Session: r.s, GCEpoch: e, Time: time.Unix(100, 0)}
}

// next flushes and returns the records since the last call; there must
// be n of them.
func (r *rig) next(n int) []*stratav1.Record {
	r.t.Helper()
	r.a.Flush()
	all := r.sink.records()
	got := all[r.seen:]
	r.seen = len(all)
	if len(got) != n {
		r.t.Fatalf("%d new records, want %d: %v", len(got), n, got)
	}
	for _, rec := range got {
		if rec.GetBlock().GetSparkBytes() != 5<<20 && rec.GetBlock().GetSparkBytes() != 3<<20 {
			r.t.Fatalf("record without Spark's size of its block: %v", rec)
		}
	}
	return got
}

// onArray checks a record of the block's array alone: its page, coverage
// REFERENCES of the array's 1000 bytes, and why.
func (r *rig) onArray(rec *stratav1.Record, access stratav1.AccessKind, vaddr uint64, why string) {
	r.t.Helper()
	want := &stratav1.Coverage{Resolution: references, Bytes: 1000, Detail: why}
	if rec.GetAccess() != access || rec.GetVaddr() != vaddr || rec.GetLength() != 1000 || !proto.Equal(rec.GetCoverage(), want) {
		r.t.Fatalf("record %v %#x+%d coverage %v, want %v of the array at %#x: %v", rec.GetAccess(), rec.GetVaddr(), rec.GetLength(), rec.GetCoverage(), access, vaddr, want)
	}
	checkPages(r.t, rec.GetRuns(), []hooksrv.Extent{{Vaddr: vaddr, Length: 1000}})
}

// onWalk checks a record of walk w's pages, holding at epoch holds.
func (r *rig) onWalk(rec *stratav1.Record, access stratav1.AccessKind, array uint64, w *hooksrv.Walk, holds uint32) {
	r.t.Helper()
	res := walked
	if w.State == hooksrv.WalkCut {
		res = walkCut
	}
	want := &stratav1.Coverage{Resolution: res, Bytes: w.Bytes, Objects: w.Objects, SharedObjects: w.SharedObjects,
		SharedBytes: w.SharedBytes, OpaqueObjects: w.OpaqueObjects, GcEpoch: holds, Extents: uint32(len(w.Extents))}
	if rec.GetAccess() != access || rec.GetVaddr() != array || rec.GetLength() != 1000 || !proto.Equal(rec.GetCoverage(), want) {
		r.t.Fatalf("record %v %#x+%d coverage %v, want %v at the array %#x with %v", rec.GetAccess(), rec.GetVaddr(), rec.GetLength(), rec.GetCoverage(), access, array, want)
	}
	checkPages(r.t, rec.GetRuns(), w.Extents)
}

// extents are n extents of size pages every step pages from page p.
func (r *rig) extents(p, n, size, step int) []hooksrv.Extent {
	ps := procmem.PageSize()
	out := make([]hooksrv.Extent, n)
	for i := range out {
		out[i] = hooksrv.Extent{Vaddr: r.page(p + i*step), Length: uint64(size) * ps}
	}
	return out
}

// TestWalkRecords follows one deserialized block through every record a
// walk makes: registered (walk pending), walked (the objects' pages, the
// walk's numbers), read (its pages again, reused), unsure after a GC
// (the array alone, and why) until CHECKED, moved, stale, walked again
// with 600 extents (three WALK frames as the hook sent them, assembled),
// read (the new walk's pages, never the old's), freed. The kernel holds
// the walk's extents as weak ranges while it holds, and keeps them while
// unsure.
func TestWalkRecords(t *testing.T) {
	r := newRig(t, 1400, Config{})
	b := r.graph(1, 0)
	r.send(b)
	r.onArray(r.next(1)[0], alloc, r.page(0), "walk pending")
	if rec := r.sink.records()[0]; !rec.GetBlock().GetObjectGraph() || rec.GetBlock().GetCachedBatch() || rec.GetBlock().Column != nil {
		t.Fatalf("block of an object graph: %v", rec.GetBlock())
	}

	first := &hooksrv.Walk{Seq: 1, GCEpoch: 0, State: hooksrv.WalkDone, Objects: 50, Bytes: 20000, SharedObjects: 3, SharedBytes: 72, OpaqueObjects: 1,
		Extents: []hooksrv.Extent{{Vaddr: r.page(4), Length: 2 * 4096}, {Vaddr: r.page(10), Length: 4096}, {Vaddr: r.page(20), Length: 4 * 4096}}}
	r.send(walkOf(b, r.page(0), first))
	r.onWalk(r.next(1)[0], move, r.page(0), first, 0)
	if got := r.k.weakOf(1); !slices.Equal(got, rangesOf(first.Extents)) {
		t.Fatalf("kernel weak ranges %v, want the walk's extents", got)
	}
	ops, n := r.k.since(0)
	if ops != "reg weak 1:3" {
		t.Fatalf("kernel calls %q", ops)
	}
	reused := r.a.Stats().Reused
	r.send(on(b, hooksrv.EventAccess, read, r.page(0)))
	r.onWalk(r.next(1)[0], read, r.page(0), first, 0)
	if r.a.Stats().Reused != reused+1 {
		t.Fatal("the read did not reuse the walk's pages")
	}

	// A GC: the walk is unsure until CHECKED; the kernel keeps its ranges.
	r.send(r.epoch(hooksrv.EventGC, 1), on(b, hooksrv.EventAccess, write, r.page(0)))
	r.onArray(r.next(1)[0], write, r.page(0), "walk unsure: GC 1 not checked yet")
	r.send(r.epoch(hooksrv.EventChecked, 1), on(b, hooksrv.EventAccess, read, r.page(0)))
	r.onWalk(r.next(1)[0], read, r.page(0), first, 1)

	// Another GC moves the array, then its objects: the MOVE makes no
	// record (the STALE mark says the same), the STALE does.
	mv := on(b, hooksrv.EventMove, move, r.page(1))
	mv.GCEpoch = 2
	r.send(r.epoch(hooksrv.EventGC, 2), mv)
	r.next(0)
	r.send(walkOf(b, r.page(1), &hooksrv.Walk{Seq: 2, GCEpoch: 2, State: hooksrv.WalkStale}))
	r.onArray(r.next(1)[0], move, r.page(1), "stale: objects moved by GC 2, walk pending")
	r.send(r.epoch(hooksrv.EventChecked, 2), on(b, hooksrv.EventAccess, read, r.page(1)))
	r.onArray(r.next(1)[0], read, r.page(1), "stale: objects moved by GC 2, walk pending")
	if ops, n = r.k.since(n); ops != "move weak 1:0" || r.k.weakOf(1) != nil {
		t.Fatalf("kernel calls %q, weak ranges %v; want the move, then the stale walk's ranges dropped", ops, r.k.weakOf(1))
	}

	// The next walk: 600 extents, cut by the hook's budget.
	second := &hooksrv.Walk{Seq: 3, GCEpoch: 2, State: hooksrv.WalkCut, Objects: 16777216, Bytes: 600 << 12, Extents: r.extents(100, 600, 1, 2)}
	r.send(walkOf(b, r.page(1), second))
	r.onWalk(r.next(1)[0], move, r.page(1), second, 2)
	if st := r.a.Stats(); st.WalkExtents != 600 || st.ProcessWalkExtents[r.s.PID] != 600 || st.Walks != 2 || st.WalksStale != 1 {
		t.Fatalf("stats %+v, want 600 walk extents kept, 2 walks and 1 stale mark", st)
	}
	r.send(on(b, hooksrv.EventAccess, read, r.page(1)))
	r.onWalk(r.next(1)[0], read, r.page(1), second, 2)
	if ops, n = r.k.since(n); ops != "weak 1:600" || !slices.Equal(r.k.weakOf(1), rangesOf(second.Extents)) {
		t.Fatalf("kernel calls %q", ops)
	}

	// A walk older than the block's latest, and one of a block that is no
	// object graph, are ignored.
	r.send(walkOf(b, r.page(1), first))
	plain := ev(r.s, hooksrv.EventRegister, alloc, 2, r.page(2), 4096)
	plain.Block.SparkBytes = 3 << 20
	r.send(plain, walkOf(plain, r.page(2), &hooksrv.Walk{Seq: 1, State: hooksrv.WalkDone, Extents: r.extents(30, 1, 1, 1)}))
	rec := r.next(1)[0]
	if want := (&stratav1.Coverage{Resolution: buffers, Bytes: 4096}); !proto.Equal(rec.GetCoverage(), want) {
		t.Fatalf("a plain block's coverage %v, want %v", rec.GetCoverage(), want)
	}

	fr := on(b, hooksrv.EventFree, free, r.page(1))
	fr.FreeReason = hooksrv.FreeEvicted
	r.send(fr)
	if rec := r.next(1)[0]; rec.GetAccess() != free || rec.GetCoverage() != nil || len(rec.GetRuns()) != 0 || rec.GetFaults() == nil {
		t.Fatalf("free record %v", rec)
	}
	if st := r.a.Stats(); st.WalkExtents != 0 || len(st.ProcessWalkExtents) != 0 || st.LiveBlocks != 1 {
		t.Fatalf("stats after the free %+v", st)
	}
	if ops, _ = r.k.since(n); ops != "reg free" || r.k.weakOf(1) != nil {
		t.Fatalf("kernel calls %q", ops)
	}
}

// TestWalkBeforeItsGC: the walker's frames and the hook thread's are not
// ordered, so a walk can hold at a GC whose frame has not come yet. It is
// used at once (its epoch says that GC happened), the other blocks' walks
// turn unsure meanwhile, and the GC frame changes nothing for it.
func TestWalkBeforeItsGC(t *testing.T) {
	r := newRig(t, 64, Config{})
	a, b := r.graph(1, 0), r.graph(2, 1)
	wa := &hooksrv.Walk{Seq: 1, State: hooksrv.WalkDone, Objects: 4, Bytes: 4000, Extents: r.extents(8, 2, 1, 2)}
	wb := &hooksrv.Walk{Seq: 1, State: hooksrv.WalkDone, Objects: 9, Bytes: 9000, Extents: r.extents(20, 3, 2, 3)}
	r.send(a, b, walkOf(a, r.page(0), wa), walkOf(b, r.page(1), wb))
	r.next(4)
	wa2 := &hooksrv.Walk{Seq: 2, GCEpoch: 1, State: hooksrv.WalkDone, Objects: 4, Bytes: 4000, Extents: r.extents(40, 2, 1, 2)}
	r.send(walkOf(a, r.page(0), wa2), on(a, hooksrv.EventAccess, read, r.page(0)), on(b, hooksrv.EventAccess, read, r.page(1)))
	recs := r.next(3)
	r.onWalk(recs[0], move, r.page(0), wa2, 1)
	r.onWalk(recs[1], read, r.page(0), wa2, 1)
	r.onArray(recs[2], read, r.page(1), "walk unsure: GC 1 not checked yet")
	if !slices.Equal(r.k.weakOf(1), rangesOf(wa2.Extents)) || !slices.Equal(r.k.weakOf(2), rangesOf(wb.Extents)) {
		t.Fatalf("kernel weak ranges %v and %v, want the new walk's and the unsure walk's", r.k.weakOf(1), r.k.weakOf(2))
	}
	r.send(r.epoch(hooksrv.EventGC, 1), on(a, hooksrv.EventAccess, read, r.page(0)))
	r.onWalk(r.next(1)[0], read, r.page(0), wa2, 1)
	r.send(r.epoch(hooksrv.EventChecked, 1), on(b, hooksrv.EventAccess, read, r.page(1)))
	r.onWalk(r.next(1)[0], read, r.page(1), wb, 1)
}

// TestWalkUnsureOnArrival: a walk made before a GC whose frame came first
// is recorded, but it is not used, nor mirrored (the block's previous
// walk's ranges leave the kernel), until CHECKED says it holds.
func TestWalkUnsureOnArrival(t *testing.T) {
	r := newRig(t, 64, Config{})
	b := r.graph(1, 0)
	w1 := &hooksrv.Walk{Seq: 1, GCEpoch: 3, State: hooksrv.WalkDone, Objects: 2, Bytes: 100, Extents: r.extents(10, 1, 1, 1)}
	r.send(r.epoch(hooksrv.EventGC, 3), b, walkOf(b, r.page(0), w1))
	r.next(2)
	_, n := r.k.since(0)
	w2 := &hooksrv.Walk{Seq: 2, GCEpoch: 4, State: hooksrv.WalkDone, Objects: 3, Bytes: 300, Extents: r.extents(12, 2, 1, 4)}
	r.send(r.epoch(hooksrv.EventGC, 5), walkOf(b, r.page(0), w2), on(b, hooksrv.EventAccess, read, r.page(0)))
	recs := r.next(2)
	r.onWalk(recs[0], move, r.page(0), w2, 4)
	r.onArray(recs[1], read, r.page(0), "walk unsure: GC 5 not checked yet")
	if ops, _ := r.k.since(n); ops != "weak 1:0" {
		t.Fatalf("kernel calls %q, want the old walk's ranges dropped and the new walk's not set", ops)
	}
	r.send(r.epoch(hooksrv.EventChecked, 5), on(b, hooksrv.EventAccess, read, r.page(0)))
	r.onWalk(r.next(1)[0], read, r.page(0), w2, 5)
	if ops, _ := r.k.since(n); ops != "weak 1:0 weak 1:2" || !slices.Equal(r.k.weakOf(1), rangesOf(w2.Extents)) {
		t.Fatalf("kernel calls %q", ops)
	}
}

// TestSessionEndsWithWalkedBlocks: every block of the session is freed
// (FREE records, the kernel's blocks and their weak ranges), its walks'
// extents are no longer kept, and the walked block of another session of
// the process (a hook that connected again) stays.
func TestSessionEndsWithWalkedBlocks(t *testing.T) {
	r := newRig(t, 64, Config{})
	other := &hooksrv.Session{ID: 2, PID: r.s.PID, AppID: "app-7", ExecutorID: "2", Walk: hooksrv.WalkOn}
	a, b := r.graph(1, 0), r.graph(2, 1)
	plain := ev(r.s, hooksrv.EventRegister, alloc, 3, r.page(2), 4096)
	plain.Block.SparkBytes = 3 << 20
	o := r.graph(4, 3)
	o.Session = other
	w := func(p int) *hooksrv.Walk {
		return &hooksrv.Walk{Seq: 1, State: hooksrv.WalkDone, Objects: 1, Bytes: 10, Extents: r.extents(p, 3, 1, 2)}
	}
	r.send(a, b, plain, o, walkOf(a, r.page(0), w(10)), walkOf(b, r.page(1), w(20)), walkOf(o, r.page(3), w(30)))
	r.next(7)
	if st := r.a.Stats(); st.WalkExtents != 9 || st.ProcessWalkExtents[r.s.PID] != 9 {
		t.Fatalf("stats %+v", st)
	}
	_, n := r.k.since(0)
	r.send(hooksrv.Event{Kind: hooksrv.EventSessionEnd, Session: r.s, Time: time.Unix(200, 0)})
	recs := r.next(3)
	for i, rec := range recs {
		if rec.GetAccess() != free || rec.GetFreeReason() != stratav1.FreeReason_FREE_REASON_SESSION_END || rec.GetBlock().GetHookBlockId() != uint64(i+1) || rec.GetCoverage() != nil {
			t.Fatalf("record %d at the session's end: %v", i, rec)
		}
	}
	if ops, _ := r.k.since(n); ops != "free free free" || r.k.weakOf(2) != nil {
		t.Fatalf("kernel calls %q, want the session's blocks freed and the process kept for its other session", ops)
	}
	if st := r.a.Stats(); st.WalkExtents != 3 || st.ProcessWalkExtents[r.s.PID] != 3 || st.LiveBlocks != 1 {
		t.Fatalf("stats after the session %+v, want the other session's walk alone", st)
	}
	// A CHECKED of the other session still speaks for its block.
	r.send(hooksrv.Event{Kind: hooksrv.EventGC, Session: other, GCEpoch: 1}, hooksrv.Event{Kind: hooksrv.EventChecked, Session: other, GCEpoch: 1},
		on(o, hooksrv.EventAccess, read, r.page(3)))
	r.onWalk(r.next(1)[0], read, r.page(3), w(30), 1)
	_, n = r.k.since(0)
	r.send(hooksrv.Event{Kind: hooksrv.EventSessionEnd, Session: other})
	r.next(1)
	if ops, _ := r.k.since(n); ops != "free forget" {
		t.Fatalf("kernel calls %q at the last session's end", ops)
	}
}

// TestWalkModes: a hook that does not walk says why on every record of an
// object-graph block.
func TestWalkModes(t *testing.T) {
	r := newRig(t, 8, Config{})
	for i, mode := range []hooksrv.WalkMode{hooksrv.WalkOff, hooksrv.WalkUnsupportedGC, hooksrv.WalkNoLayout} {
		s := *r.s
		s.ID, s.Walk = uint64(10+i), mode
		b := r.graph(uint64(i+1), i)
		b.Session = &s
		// A hook that does not walk: the array's MOVE is a record of its own.
		mv := on(b, hooksrv.EventMove, move, r.page(i))
		r.send(b, on(b, hooksrv.EventAccess, read, r.page(i)), mv)
		for _, rec := range r.next(3) {
			if rec.GetCoverage().GetResolution() != references || rec.GetCoverage().GetDetail() != mode.String() {
				t.Fatalf("mode %v: coverage %v", mode, rec.GetCoverage())
			}
		}
	}
}

// column is the REGISTER of a cached DataFrame block's column: its first
// batch's buffer, first (column -1: an Arrow block's buffers of every
// column).
func (r *rig) column(id uint64, col int32, name string, first hooksrv.Extent) hooksrv.Event {
	e := ev(r.s, hooksrv.EventRegister, alloc, id, first.Vaddr, first.Length)
	e.Block.Name, e.Block.Chunk, e.Block.Chunks, e.Block.SparkBytes = "rdd_12_0", uint32(max(col, 0)), 2, 3<<20
	e.Block.CachedBatch, e.Block.Column, e.Block.ColumnName = true, col, name
	e.Block.Location = stratav1.MemoryLocation_MEMORY_LOCATION_ON_HEAP
	return e
}

// columnWalk is a column's walk of its buffers (ascending).
func columnWalk(seq, epoch uint32, bufs ...hooksrv.Extent) *hooksrv.Walk {
	w := &hooksrv.Walk{Seq: seq, GCEpoch: epoch, State: hooksrv.WalkDone, Objects: uint64(len(bufs)), Extents: bufs}
	for _, b := range bufs {
		w.Bytes += b.Length
	}
	return w
}

// onFirst checks a record of a column's range alone: its first batch's
// buffer, and so said.
func (r *rig) onFirst(rec *stratav1.Record, access stratav1.AccessKind, first hooksrv.Extent) {
	r.t.Helper()
	want := &stratav1.Coverage{Resolution: buffers, Bytes: first.Length, Detail: "the first batch's buffer; the column's buffers follow"}
	if rec.GetAccess() != access || rec.GetVaddr() != first.Vaddr || rec.GetLength() != first.Length || !proto.Equal(rec.GetCoverage(), want) {
		r.t.Fatalf("record %v %#x+%d coverage %v, want %v of the first buffer %#x+%d: %v", rec.GetAccess(), rec.GetVaddr(), rec.GetLength(),
			rec.GetCoverage(), access, first.Vaddr, first.Length, want)
	}
	checkPages(r.t, rec.GetRuns(), []hooksrv.Extent{first})
}

// onBuffers checks a record of column walk w, registered at first: the
// pages that hold the buffers (each page once), BUFFERS with every
// buffer's bytes and their count.
func (r *rig) onBuffers(rec *stratav1.Record, access stratav1.AccessKind, first hooksrv.Extent, w *hooksrv.Walk, pages []hooksrv.Extent) {
	r.t.Helper()
	want := &stratav1.Coverage{Resolution: buffers, Bytes: w.Bytes, Objects: w.Objects, Extents: uint32(len(w.Extents))}
	if rec.GetAccess() != access || rec.GetVaddr() != first.Vaddr || rec.GetLength() != first.Length || !proto.Equal(rec.GetCoverage(), want) {
		r.t.Fatalf("record %v %#x+%d coverage %v, want %v at the first buffer %#x with %v", rec.GetAccess(), rec.GetVaddr(), rec.GetLength(),
			rec.GetCoverage(), access, first.Vaddr, want)
	}
	checkPages(r.t, rec.GetRuns(), pages)
}

// TestCachedBatchColumn follows one column of a cached DataFrame block:
// its REGISTER (the first batch's buffer, and so said), its walk (a MOVE
// record of the pages that hold its buffers, each page once, BUFFERS with
// every buffer's bytes and count; the kernel counts the buffers' bytes as
// weak ranges), reads (the walk's pages, also after a GC frame: a column's
// walk needs no CHECKED), a collection that moved the first buffer (a
// MOVE record of it alone, then the new walk, whose ranges replace the old
// ones in the kernel), walks it ignores (older, or in another state than
// DONE), an Arrow block's column, the FREE.
func TestCachedBatchColumn(t *testing.T) {
	r := newRig(t, 64, Config{})
	ps := procmem.PageSize()
	// Three small buffers share page 2, one spans pages 4-6 (the first
	// batch's), one lies on page 8.
	bufs := []hooksrv.Extent{{Vaddr: r.page(2) + 24, Length: 700}, {Vaddr: r.page(2) + 744, Length: 700},
		{Vaddr: r.page(2) + 1464, Length: 300}, {Vaddr: r.page(4) + 3000, Length: 6000}, {Vaddr: r.page(8) + 16, Length: 100}}
	pages := []hooksrv.Extent{{Vaddr: r.page(2), Length: ps}, {Vaddr: r.page(4), Length: 3 * ps}, {Vaddr: r.page(8), Length: ps}}
	first := bufs[3]
	c := r.column(1, 1, "price", first)
	r.send(c)
	rec := r.next(1)[0]
	r.onFirst(rec, alloc, first)
	if b := rec.GetBlock(); !b.GetCachedBatch() || b.GetObjectGraph() || b.Column == nil || b.GetColumn() != 1 || b.GetColumnName() != "price" ||
		b.GetChunk() != 1 || b.GetChunks() != 2 {
		t.Fatalf("block of a column: %v", b)
	}
	w1 := columnWalk(1, 0, bufs...)
	r.send(walkOf(c, first.Vaddr, w1))
	r.onBuffers(r.next(1)[0], move, first, w1, pages)
	if ops, _ := r.k.since(0); ops != "reg weak 1:5" || !slices.Equal(r.k.weakOf(1), rangesOf(bufs)) {
		t.Fatalf("kernel calls %q, weak ranges %v: want the buffers' bytes", ops, r.k.weakOf(1))
	}
	reused := r.a.Stats().Reused
	r.send(r.epoch(hooksrv.EventGC, 1), on(c, hooksrv.EventAccess, read, first.Vaddr))
	r.onBuffers(r.next(1)[0], read, first, w1, pages)
	if r.a.Stats().Reused != reused+1 {
		t.Fatal("the read did not reuse the walk's pages")
	}

	// A collection moved the first buffer and two others: a MOVE, then the
	// new walk.
	moved := []hooksrv.Extent{bufs[0], bufs[1], {Vaddr: r.page(10) + 24, Length: 300}, {Vaddr: r.page(12) + 24, Length: 6000}, bufs[4]}
	slices.SortFunc(moved, func(x, y hooksrv.Extent) int { return cmp.Compare(x.Vaddr, y.Vaddr) })
	movedPages := []hooksrv.Extent{{Vaddr: r.page(2), Length: ps}, {Vaddr: r.page(8), Length: ps}, {Vaddr: r.page(10), Length: ps},
		{Vaddr: r.page(12), Length: 2 * ps}}
	first2 := hooksrv.Extent{Vaddr: r.page(12) + 24, Length: 6000}
	mv := on(c, hooksrv.EventMove, move, first2.Vaddr)
	mv.GCEpoch = 2
	w2 := columnWalk(2, 2, moved...)
	_, n := r.k.since(0)
	r.send(r.epoch(hooksrv.EventGC, 2), mv, walkOf(c, first2.Vaddr, w2))
	recs := r.next(2)
	r.onFirst(recs[0], move, first2)
	r.onBuffers(recs[1], move, first2, w2, movedPages)
	if ops, _ := r.k.since(n); ops != "move weak 1:5" || !slices.Equal(r.k.weakOf(1), rangesOf(moved)) {
		t.Fatalf("kernel calls %q, weak ranges %v: want the move, then the new walk's buffers", ops, r.k.weakOf(1))
	}

	// An older walk, and walks of a state a column never has, change nothing.
	cut := columnWalk(3, 2, bufs...)
	cut.State = hooksrv.WalkCut
	r.send(walkOf(c, first2.Vaddr, w1), walkOf(c, first2.Vaddr, cut),
		walkOf(c, first2.Vaddr, &hooksrv.Walk{Seq: 4, GCEpoch: 2, State: hooksrv.WalkStale}), on(c, hooksrv.EventAccess, read, first2.Vaddr))
	r.onBuffers(r.next(1)[0], read, first2, w2, movedPages)
	if st := r.a.Stats(); st.Walks != 2 || st.WalkExtents != 5 || st.ProcessWalkExtents[r.s.PID] != 5 {
		t.Fatalf("stats %+v, want 2 walks recorded and the latest's 5 extents kept", st)
	}

	// An Arrow block's column: every column's buffers, no column index.
	arrowFirst := hooksrv.Extent{Vaddr: r.page(20) + 16, Length: 9000}
	arrow := r.column(2, -1, "", arrowFirst)
	wa := columnWalk(1, 2, arrowFirst, hooksrv.Extent{Vaddr: r.page(24) + 16, Length: 9000})
	r.send(arrow, walkOf(arrow, arrowFirst.Vaddr, wa))
	recs = r.next(2)
	r.onFirst(recs[0], alloc, arrowFirst)
	r.onBuffers(recs[1], move, arrowFirst, wa, []hooksrv.Extent{{Vaddr: r.page(20), Length: 3 * ps}, {Vaddr: r.page(24), Length: 3 * ps}})
	if b := recs[1].GetBlock(); !b.GetCachedBatch() || b.Column != nil {
		t.Fatalf("block of an Arrow column: %v", b)
	}

	_, n = r.k.since(0)
	r.send(on(c, hooksrv.EventFree, free, first2.Vaddr))
	if rec := r.next(1)[0]; rec.GetAccess() != free || rec.GetCoverage() != nil {
		t.Fatalf("free record %v", rec)
	}
	if ops, _ := r.k.since(n); ops != "free" || r.k.weakOf(1) != nil {
		t.Fatalf("kernel calls %q, weak ranges %v after the free", ops, r.k.weakOf(1))
	}
}

// refusingRegister refuses a block's first registration, as the kernel's
// index does a range that overlaps one whose move has not come yet.
type refusingRegister struct {
	*weakKernel
	refused map[uint64]bool
}

func (k *refusingRegister) RegisterBlock(p Process, id, start, end uint64) error {
	if !k.refused[id] {
		k.refused[id] = true
		k.weakKernel.RegisterBlock(p, id, start, end)
		return errors.New("overlaps a block's old range")
	}
	return k.weakKernel.RegisterBlock(p, id, start, end)
}

// TestCachedBatchColumnMirroredLate: a column whose registration the
// kernel refused has its walk mirrored when its next MOVE registers it.
func TestCachedBatchColumnMirroredLate(t *testing.T) {
	r := newRig(t, 16, Config{})
	k := &refusingRegister{weakKernel: r.k, refused: map[uint64]bool{}}
	r.a.cfg.Kernel = k
	first := hooksrv.Extent{Vaddr: r.page(2) + 24, Length: 5000}
	c := r.column(1, 0, "id", first)
	w := columnWalk(1, 0, first, hooksrv.Extent{Vaddr: r.page(6) + 24, Length: 5000})
	r.send(c, walkOf(c, first.Vaddr, w))
	r.next(2)
	if ops, _ := k.since(0); ops != "reg" || k.weakOf(1) != nil {
		t.Fatalf("kernel calls %q, weak ranges %v: want the refused registration only", ops, k.weakOf(1))
	}
	r.send(on(c, hooksrv.EventMove, move, first.Vaddr))
	r.next(1)
	if ops, _ := k.since(0); ops != "reg reg weak 1:2" || !slices.Equal(k.weakOf(1), rangesOf(w.Extents)) {
		t.Fatalf("kernel calls %q, weak ranges %v: want the block registered at its move, then its walk", ops, k.weakOf(1))
	}
	if st := r.a.Stats(); st.KernelErrors != 1 {
		t.Fatalf("stats %+v, want the refused registration counted", st)
	}
}

// TestWalkedRecordSplit: a walk's record over the batch budget goes as
// several records, each naming the array and the walk's resolution, the
// walk's numbers on the first, all its pages in order.
func TestWalkedRecordSplit(t *testing.T) {
	r := newRig(t, 1400, Config{MaxBatchBytes: 4096})
	b := r.graph(1, 0)
	w := &hooksrv.Walk{Seq: 1, State: hooksrv.WalkDone, Objects: 1234, Bytes: 600 << 12, SharedObjects: 5, SharedBytes: 500, Extents: r.extents(100, 600, 1, 2)}
	r.send(b, walkOf(b, r.page(0), w))
	r.a.Flush()
	recs := r.sink.records()[1:]
	if len(recs) < 3 || r.a.Stats().Split != 1 {
		t.Fatalf("%d records, split %d: want the walk's record in several pieces", len(recs), r.a.Stats().Split)
	}
	var runs []*stratav1.PageRun
	for i, rec := range recs {
		c := rec.GetCoverage()
		if rec.GetVaddr() != r.page(0) || rec.GetLength() != 1000 || c.GetResolution() != walked || (c.GetObjects() == 1234) != (i == 0) ||
			(c.GetExtents() == 600) != (i == 0) || (c.GetBytes() == 600<<12) != (i == 0) {
			t.Fatalf("piece %d: %#x+%d coverage %v", i, rec.GetVaddr(), rec.GetLength(), c)
		}
		runs = append(runs, rec.GetRuns()...)
	}
	checkPages(t, runs, w.Extents)
}

// TestWalksOfManySessions: sessions walk, collect and check at once; each
// session's epochs are its own.
func TestWalksOfManySessions(t *testing.T) {
	r := newRig(t, 256, Config{ReuseWindow: -1})
	var wg sync.WaitGroup
	for i := range 4 {
		s := *r.s
		s.ID = uint64(100 + i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := r.graph(uint64(i+1), i)
			b.Session = &s
			w := &hooksrv.Walk{Seq: 1, State: hooksrv.WalkDone, Objects: 1, Bytes: 1, Extents: r.extents(10+60*i, 20, 1, 2)}
			r.send(b, walkOf(b, r.page(i), w))
			for e := uint32(1); e <= 20; e++ {
				r.send(hooksrv.Event{Kind: hooksrv.EventGC, Session: &s, GCEpoch: e}, on(b, hooksrv.EventAccess, read, r.page(i)),
					hooksrv.Event{Kind: hooksrv.EventChecked, Session: &s, GCEpoch: e}, on(b, hooksrv.EventAccess, read, r.page(i)))
			}
		}()
	}
	wg.Wait()
	r.a.Flush()
	counts := map[stratav1.Resolution]int{}
	for _, rec := range r.sink.records() {
		if rec.GetAccess() == read {
			counts[rec.GetCoverage().GetResolution()]++
		}
	}
	if counts[walked] != 80 || counts[references] != 80 {
		t.Fatalf("reads by resolution %v, want 80 walked (after CHECKED) and 80 references (after GC)", counts)
	}
}

// refusingKernel refuses every block's weak ranges, as a full index does.
type refusingKernel struct{ weakKernel }

func (k *refusingKernel) SetWeakRanges(pid uint32, id uint64, ranges []Range) error {
	k.weakKernel.SetWeakRanges(pid, id, ranges)
	return errors.New("address index full")
}

// TestWalkNotMirrored: a walk the kernel refuses is counted and asked
// again only with the block's next walk; its records are not affected.
func TestWalkNotMirrored(t *testing.T) {
	r := newRig(t, 32, Config{})
	k := &refusingKernel{weakKernel: *newWeakKernel()}
	r.a.cfg.Kernel = k
	b := r.graph(1, 0)
	w1 := &hooksrv.Walk{Seq: 1, State: hooksrv.WalkDone, Objects: 1, Bytes: 8, Extents: r.extents(4, 2, 1, 2)}
	r.send(b, walkOf(b, r.page(0), w1), r.epoch(hooksrv.EventGC, 1), r.epoch(hooksrv.EventChecked, 1), on(b, hooksrv.EventAccess, read, r.page(0)))
	r.onWalk(r.next(3)[2], read, r.page(0), w1, 1)
	if ops, _ := k.since(0); ops != "reg weak 1:2" || r.a.Stats().WalkKernelErrors != 1 || r.a.Stats().KernelErrors != 0 {
		t.Fatalf("kernel calls %q, stats %+v: want one refused walk, not asked again at CHECKED", ops, r.a.Stats())
	}
	w2 := &hooksrv.Walk{Seq: 2, GCEpoch: 1, State: hooksrv.WalkDone, Objects: 1, Bytes: 8, Extents: r.extents(10, 1, 1, 1)}
	r.send(walkOf(b, r.page(0), w2))
	r.onWalk(r.next(1)[0], move, r.page(0), w2, 1)
	if ops, _ := k.since(0); ops != "reg weak 1:2 weak 1:1" || r.a.Stats().WalkKernelErrors != 2 {
		t.Fatalf("kernel calls %q, stats %+v: want the next walk asked for", ops, r.a.Stats())
	}
}

// TestWalkPendingArrayMoves: an object-graph block with no walk yet (the
// walker has not reached it) has no STALE to come: its array's MOVE is a
// record of the array's new pages.
func TestWalkPendingArrayMoves(t *testing.T) {
	r := newRig(t, 4, Config{})
	b := r.graph(1, 0)
	r.send(b)
	r.onArray(r.next(1)[0], alloc, r.page(0), "walk pending")
	mv := on(b, hooksrv.EventMove, move, r.page(2))
	mv.GCEpoch = 1
	r.send(r.epoch(hooksrv.EventGC, 1), mv)
	r.onArray(r.next(1)[0], move, r.page(2), "walk pending")
}
