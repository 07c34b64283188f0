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
func extents(base uint64, n int) []Extent {
	out := make([]Extent, n)
	for i := range out {
		out[i] = Extent{Vaddr: base + uint64(i)*8192, Length: 4096}
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
	ts.mu.Lock()
	n := ts.liveExtents
	ts.mu.Unlock()
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
	if r.WalkTooLarge != 2 || r.WalkNotGraph != 1 {
		t.Errorf("refusals %+v, want 2 too large, 1 not a graph", r)
	}
	if s := ts.Stats(); s.WalksIncomplete != 0 || s.Unknown != 1 {
		t.Errorf("stats %+v: want no incomplete walk (refused parts pass silently), one unknown", s)
	}
	ts.mu.Lock()
	n := ts.liveExtents
	ts.mu.Unlock()
	if n != 300 {
		t.Errorf("node holds %d extents, want 300", n)
	}
	p.c.Close()
	waitUntil(t, "the session end", func() bool {
		evs := ts.rec.of("app-b")
		return evs[len(evs)-1].Kind == EventSessionEnd
	})
	ts.mu.Lock()
	n = ts.liveExtents
	ts.mu.Unlock()
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
	ts.mu.Lock()
	n := ts.liveExtents
	ts.mu.Unlock()
	if n != 250 {
		t.Errorf("node holds %d extents, want 250", n)
	}
}
