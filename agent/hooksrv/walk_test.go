package hooksrv

import (
	"reflect"
	"testing"
)

// graph registers block id as an object graph.
func graph(id uint64) *Register {
	r := register(id, 0x7f0000000000+id<<20, me)
	r.Flags = FlagObjectGraph
	r.SparkBytes = 1 << 20
	return r
}

// extents returns n page-sized extents a page apart from base.
func extents(base uint64, n int) []Extent { return spaced(base, n, 8192, 4096) }

// spaced returns n extents of length bytes, one every step bytes from base.
func spaced(base uint64, n int, step, length uint64) []Extent {
	out := make([]Extent, n)
	for i := range out {
		out[i] = Extent{Vaddr: base + uint64(i)*step, Length: length}
	}
	return out
}

// sendWalk sends a walk of ext in parts of at most per extents.
func (p *peer) sendWalk(id uint64, seq, epoch uint32, state WalkState, ext []Extent, per int) {
	p.t.Helper()
	parts := max(1, (len(ext)+per-1)/per)
	sum := WalkSummary{GCEpoch: epoch, Seq: seq, State: state, Objects: uint64(len(ext)) * 10,
		Bytes: uint64(len(ext)) * 4000, SharedObjects: 2, SharedBytes: 48, OpaqueObjects: 1, TotalExtents: uint32(len(ext))}
	for i := 0; i < parts; i++ {
		p.send(&WalkPart{BlockID: id, Part: uint16(i), Parts: uint16(parts), WalkSummary: sum,
			Extents: ext[i*per : min(len(ext), (i+1)*per)]})
	}
}

// extentsHeld is the extents the node's current walks hold.
func (ts *testServer) extentsHeld() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.liveExtents
}

// walks returns the EventWalk events of app.
func (r *recorder) walks(app string) []Event {
	var out []Event
	for _, ev := range r.of(app) {
		if ev.Kind == EventWalk {
			out = append(out, ev)
		}
	}
	return out
}

func TestWalkAssembly(t *testing.T) {
	ts := startServer(t, Config{})
	p := dial(t, ts.cfg.Path)
	h := hello("app-w")
	h.Walk = WalkOn
	p.send(h)
	p.send(graph(1))
	p.send(graph(2))

	// A walk of 600 extents in three parts arrives whole.
	big := extents(0x7f1000000000, 600)
	p.sendWalk(1, 1, 4, WalkDone, big, WalkExtentsMax)
	// A single-part cut walk of another block.
	p.sendWalk(2, 1, 4, WalkCut, extents(0x7f2000000000, 3), WalkExtentsMax)
	// A walk whose middle part is missing is lost; an ACCESS between two
	// parts of the next one loses it too.
	lost := extents(0x7f3000000000, 500)
	sum := WalkSummary{GCEpoch: 5, Seq: 2, State: WalkDone, TotalExtents: 500}
	p.send(&WalkPart{BlockID: 1, Part: 0, Parts: 3, WalkSummary: sum, Extents: lost[:248]})
	p.send(&WalkPart{BlockID: 1, Part: 2, Parts: 3, WalkSummary: sum, Extents: lost[496:]})
	sum.Seq, sum.TotalExtents = 3, 496
	p.send(&WalkPart{BlockID: 1, Part: 0, Parts: 2, WalkSummary: sum, Extents: lost[:248]})
	p.send(&Access{BlockID: 1, Kind: 2})
	p.send(&WalkPart{BlockID: 1, Part: 1, Parts: 2, WalkSummary: sum, Extents: lost[248:496]})
	// Parts whose summaries differ do not make a walk.
	sum.Seq = 4
	p.send(&WalkPart{BlockID: 1, Part: 0, Parts: 2, WalkSummary: sum, Extents: lost[:248]})
	sum.Objects = 99
	p.send(&WalkPart{BlockID: 1, Part: 1, Parts: 2, WalkSummary: sum, Extents: lost[248:496]})
	// STALE, then GC and CHECKED.
	p.sendWalk(2, 2, 6, WalkStale, nil, 1)
	p.send(&GC{GCEpoch: 6})
	p.send(&Checked{GCEpoch: 6})
	p.send(&Free{BlockID: 1, Reason: FreeRemoved})
	waitUntil(t, "the checked event", func() bool {
		evs := ts.rec.of("app-w")
		return len(evs) > 0 && evs[len(evs)-1].Kind == EventFree
	})

	ws := ts.rec.walks("app-w")
	if len(ws) != 3 {
		t.Fatalf("%d walks delivered, want 3: %+v", len(ws), ws)
	}
	if w := ws[0]; w.Block.HookID != 1 || w.Walk.Seq != 1 || w.Walk.State != WalkDone || w.Walk.GCEpoch != 4 ||
		w.GCEpoch != 4 || !reflect.DeepEqual(w.Walk.Extents, big) || w.Walk.Objects != 6000 || w.Walk.Bytes != 2400000 ||
		w.Walk.SharedObjects != 2 || w.Walk.SharedBytes != 48 || w.Walk.OpaqueObjects != 1 || !w.Block.ObjectGraph ||
		w.Vaddr != 0x7f0000000000+1<<20 || w.Length != 8192 || w.Block.SparkBytes != 1<<20 {
		t.Errorf("walk 1: %+v %+v (%d extents)", w, w.Walk, len(w.Walk.Extents))
	}
	if w := ws[1]; w.Block.HookID != 2 || w.Walk.State != WalkCut || len(w.Walk.Extents) != 3 {
		t.Errorf("walk 2: %+v %+v", w, w.Walk)
	}
	if w := ws[2]; w.Block.HookID != 2 || w.Walk.State != WalkStale || w.Walk.Seq != 2 || w.Walk.GCEpoch != 6 || len(w.Walk.Extents) != 0 {
		t.Errorf("stale: %+v %+v", w, w.Walk)
	}
	var gc, checked []uint32
	for _, ev := range ts.rec.of("app-w") {
		switch ev.Kind {
		case EventGC:
			gc = append(gc, ev.GCEpoch)
		case EventChecked:
			checked = append(checked, ev.GCEpoch)
		}
	}
	if !reflect.DeepEqual(gc, []uint32{6}) || !reflect.DeepEqual(checked, []uint32{6}) {
		t.Errorf("gc events %v, checked events %v, want [6] [6]", gc, checked)
	}
	if s := ts.Stats(); s.Walks != 3 || s.WalksIncomplete != 3 {
		t.Errorf("stats: %d walks, %d incomplete, want 3 and 3", s.Walks, s.WalksIncomplete)
	}
	if s := ts.rec.of("app-w")[0].Session; s.Walk != WalkOn {
		t.Errorf("session walk mode %v, want %v", s.Walk, WalkOn)
	}
	// Block 2's walk is stale (0 extents) and block 1 was freed: the node
	// holds no extents.
	n := ts.extentsHeld()
	if n != 0 {
		t.Errorf("node holds %d extents after the stale walk and the free, want 0", n)
	}
}

func TestWalkBounds(t *testing.T) {
	ts := startServer(t, Config{MaxWalkExtents: 300, MaxSessionExtents: 400})
	p := dial(t, ts.cfg.Path)
	p.send(hello("app-b"))
	p.send(graph(1))
	p.send(graph(2))
	p.send(register(3, 0x7f4000000000, me)) // not an object graph
	// Over the walk cap: refused, its later parts pass silently.
	p.sendWalk(1, 1, 1, WalkDone, extents(0x7f1000000000, 301), WalkExtentsMax)
	// Within: 300 for block 1; then 200 for block 2 would make the session
	// hold 500 > 400: refused, block 2 keeps nothing.
	p.sendWalk(1, 2, 1, WalkDone, extents(0x7f1000000000, 300), WalkExtentsMax)
	p.sendWalk(2, 1, 1, WalkDone, extents(0x7f2000000000, 200), WalkExtentsMax)
	// A new walk of block 1 replaces its 300: now 100 + 200 fit.
	p.sendWalk(1, 3, 2, WalkDone, extents(0x7f1000000000, 100), WalkExtentsMax)
	p.sendWalk(2, 2, 2, WalkDone, extents(0x7f2000000000, 200), WalkExtentsMax)
	// Walks of a block that is not a graph, or not live.
	p.sendWalk(3, 1, 2, WalkDone, extents(0x7f4000000000, 2), WalkExtentsMax)
	p.sendWalk(9, 1, 2, WalkDone, extents(0x7f5000000000, 260), WalkExtentsMax)
	p.send(&Checked{GCEpoch: 2})
	waitUntil(t, "the checked event", func() bool {
		evs := ts.rec.of("app-b")
		return len(evs) > 0 && evs[len(evs)-1].Kind == EventChecked
	})
	var got []int
	for _, w := range ts.rec.walks("app-b") {
		got = append(got, int(w.Block.HookID)*1000+len(w.Walk.Extents))
	}
	if want := []int{1300, 1100, 2200}; !reflect.DeepEqual(got, want) {
		t.Errorf("walks delivered (block*1000+extents) %v, want %v", got, want)
	}
	r := ts.Refusals()
	if r.WalkTooLarge != 2 || r.WalkNotGraphOrBatch != 1 {
		t.Errorf("refusals %+v, want 2 too large, 1 not a graph", r)
	}
	if s := ts.Stats(); s.WalksIncomplete != 0 || s.Unknown != 1 {
		t.Errorf("stats %+v: want no incomplete walk (refused parts pass silently), one unknown", s)
	}
	n := ts.extentsHeld()
	if n != 300 {
		t.Errorf("node holds %d extents, want 300", n)
	}
	p.c.Close()
	waitUntil(t, "the session end", func() bool {
		evs := ts.rec.of("app-b")
		return evs[len(evs)-1].Kind == EventSessionEnd
	})
	n = ts.extentsHeld()
	if n != 0 {
		t.Errorf("node holds %d extents after the session ended, want 0", n)
	}
}

// The node's cap holds across sessions.
func TestWalkNodeCap(t *testing.T) {
	ts := startServer(t, Config{MaxLiveExtents: 250})
	a, b := dial(t, ts.cfg.Path), dial(t, ts.cfg.Path)
	a.send(hello("app-a"))
	b.send(hello("app-b"))
	a.send(graph(1))
	b.send(graph(1))
	a.sendWalk(1, 1, 1, WalkDone, extents(0x7f1000000000, 200), WalkExtentsMax)
	a.send(&Checked{GCEpoch: 1})
	waitUntil(t, "a's walk", func() bool { return len(ts.rec.walks("app-a")) == 1 })
	b.sendWalk(1, 1, 1, WalkDone, extents(0x7f2000000000, 100), WalkExtentsMax)
	b.send(&Checked{GCEpoch: 1})
	waitUntil(t, "b's checked", func() bool {
		evs := ts.rec.of("app-b")
		return len(evs) > 0 && evs[len(evs)-1].Kind == EventChecked
	})
	if n := len(ts.rec.walks("app-b")); n != 0 || ts.Refusals().WalkTooLarge != 1 {
		t.Errorf("b: %d walks, %d refused; want its walk refused at the node's cap", n, ts.Refusals().WalkTooLarge)
	}
}

// A block registered again starts without a walk: its old walk's extents
// are given back.
func TestWalkReRegister(t *testing.T) {
	ts := startServer(t, Config{MaxSessionExtents: 300})
	p := dial(t, ts.cfg.Path)
	p.send(hello("app-r"))
	p.send(graph(1))
	p.sendWalk(1, 1, 1, WalkDone, extents(0x7f1000000000, 200), WalkExtentsMax)
	p.send(graph(1))
	p.sendWalk(1, 2, 1, WalkDone, extents(0x7f1000000000, 250), WalkExtentsMax)
	p.send(&Checked{GCEpoch: 1})
	waitUntil(t, "the checked event", func() bool {
		evs := ts.rec.of("app-r")
		return len(evs) > 0 && evs[len(evs)-1].Kind == EventChecked
	})
	if n := len(ts.rec.walks("app-r")); n != 2 || ts.Refusals().WalkTooLarge != 0 {
		t.Errorf("%d walks, %d refused: the second walk must fit once the re-registration gave back the first's extents", n, ts.Refusals().WalkTooLarge)
	}
	n := ts.extentsHeld()
	if n != 250 {
		t.Errorf("node holds %d extents, want 250", n)
	}
}

// column registers block id as column col (chunk col of 3) of a cached
// DataFrame block: the range is its first batch's buffer.
func column(id uint64, col int32) *Register {
	r := register(id, 0x7f6000000000+id<<20+24, me)
	r.Length, r.Flags, r.Chunk, r.Chunks, r.Column, r.Label = 40964, FlagCachedBatch, uint32(col), 3, col, "price"
	return r
}

// buffers returns n byte-exact buffer ranges from base, 40964 bytes each,
// 28 bytes of array header and padding between them, as a column's walk
// has.
func buffers(base uint64, n int) []Extent { return spaced(base, n, 40992, 40964) }

// TestWalkCachedBatch: a cached batch column's walk (its buffers, state
// DONE) is assembled and delivered as an object graph's is, with the
// column's block, and counts against the extent caps; a column's walk in
// any other state, and a STALE mark, are refused and leave the block its
// walk.
func TestWalkCachedBatch(t *testing.T) {
	ts := startServer(t, Config{})
	p := dial(t, ts.cfg.Path)
	p.send(hello("app-c"))
	p.send(column(1, 1))
	bufs := buffers(0x7f6000100018, 300)
	sum := WalkSummary{GCEpoch: 2, Seq: 1, State: WalkDone, Objects: 300, Bytes: 300 * 40964, TotalExtents: 300}
	p.send(&WalkPart{BlockID: 1, Part: 0, Parts: 2, WalkSummary: sum, Extents: bufs[:WalkExtentsMax]})
	p.send(&WalkPart{BlockID: 1, Part: 1, Parts: 2, WalkSummary: sum, Extents: bufs[WalkExtentsMax:]})
	cut := sum
	cut.Seq, cut.State = 2, WalkCut
	p.send(&WalkPart{BlockID: 1, Part: 0, Parts: 2, WalkSummary: cut, Extents: bufs[:WalkExtentsMax]})
	p.send(&WalkPart{BlockID: 1, Part: 1, Parts: 2, WalkSummary: cut, Extents: bufs[WalkExtentsMax:]})
	p.send(&WalkPart{BlockID: 1, Parts: 1, WalkSummary: WalkSummary{GCEpoch: 3, Seq: 3, State: WalkStale}})
	moved := buffers(0x7f6000900018, 2)
	p.send(&Move{BlockID: 1, Vaddr: moved[0].Vaddr, Length: moved[0].Length, PID: me, GCEpoch: 4})
	p.send(&WalkPart{BlockID: 1, Parts: 1, WalkSummary: WalkSummary{GCEpoch: 4, Seq: 4, State: WalkDone, Objects: 2,
		Bytes: 2 * 40964, TotalExtents: 2}, Extents: moved})
	p.send(&Checked{GCEpoch: 4})
	waitUntil(t, "the checked event", func() bool {
		evs := ts.rec.of("app-c")
		return len(evs) > 0 && evs[len(evs)-1].Kind == EventChecked
	})
	ws := ts.rec.walks("app-c")
	if len(ws) != 2 {
		t.Fatalf("%d walks delivered, want 2: %+v", len(ws), ws)
	}
	if w := ws[0]; !w.Block.CachedBatch || w.Block.ObjectGraph || w.Block.Column != 1 || w.Block.Chunk != 1 || w.Block.Chunks != 3 ||
		w.Block.ColumnName != "price" || w.Vaddr != 0x7f6000100018 || w.Length != 40964 || w.Walk.Seq != 1 || w.Walk.State != WalkDone ||
		w.Walk.Objects != 300 || w.Walk.Bytes != 300*40964 || !reflect.DeepEqual(w.Walk.Extents, bufs) {
		t.Errorf("column walk: %+v %+v", w, w.Walk)
	}
	if w := ws[1]; w.Walk.Seq != 4 || w.Vaddr != moved[0].Vaddr || w.GCEpoch != 4 || !reflect.DeepEqual(w.Walk.Extents, moved) {
		t.Errorf("column walk after the move: %+v %+v", w, w.Walk)
	}
	if r := ts.Refusals(); r.WalkNotGraphOrBatch != 2 || r.WalkTooLarge != 0 {
		t.Errorf("refusals %+v, want the cut walk and the STALE mark refused", r)
	}
	if s := ts.Stats(); s.WalksIncomplete != 0 || s.Walks != 2 {
		t.Errorf("stats %+v: want 2 walks, none incomplete (a refused walk's parts pass silently)", s)
	}
	if n := ts.extentsHeld(); n != 2 {
		t.Errorf("node holds %d extents, want the latest walk's 2", n)
	}
}
