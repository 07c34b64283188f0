package hooksrv

import (
	"slices"
	"strings"
	"testing"
	"time"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// TestSessionCaps: past a session cap a connection is closed at accept and
// counted; a slot freed by a session's end is taken again.
func TestSessionCaps(t *testing.T) {
	tests := []struct {
		name  string
		cfg   Config
		open  int
		which func(Refusals) uint64
	}{
		{"per pid", Config{MaxSessionsPerPID: 2}, 2, func(r Refusals) uint64 { return r.SessionsPerPID }},
		{"per uid", Config{MaxSessionsPerPID: 100, MaxSessionsPerUID: 3}, 3, func(r Refusals) uint64 { return r.SessionsPerUID }},
		{"node", Config{MaxSessionsPerPID: 100, MaxSessions: 4}, 4, func(r Refusals) uint64 { return r.SessionsTotal }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t, tc.cfg)
			var open []*peer
			for i := range tc.open {
				p := dial(t, ts.Path())
				p.send(hello("app-" + string(rune('a'+i))))
				open = append(open, p)
			}
			waitUntil(t, "sessions open", func() bool { return ts.Stats().Active == uint64(tc.open) })
			for range 3 {
				dial(t, ts.Path()).waitClosed()
			}
			if got := tc.which(ts.Refusals()); got != 3 {
				t.Fatalf("refusals = %+v, want 3 of this cap", ts.Refusals())
			}
			if st := ts.Stats(); st.Active != uint64(tc.open) || st.Sessions != uint64(tc.open) {
				t.Fatalf("stats = %+v, want only the %d admitted sessions", st, tc.open)
			}
			if l := ts.logs.String(); !strings.Contains(l, "hook connection refused") || !strings.Contains(l, "too many hook sessions") {
				t.Errorf("refusal not logged with its reason:\n%s", l)
			}
			open[0].c.Close()
			waitUntil(t, "a slot freed", func() bool { return ts.Stats().Active == uint64(tc.open-1) })
			p := dial(t, ts.Path())
			p.send(hello("app-late"))
			waitUntil(t, "the late session", func() bool { return len(ts.rec.of("app-late")) == 1 })
		})
	}
}

// TestIdleSessionClosed: no frame for IdleTimeout after HELLO closes the
// session, its blocks freed; a session that keeps sending DROPPED stays,
// here for twice the timeout.
func TestIdleSessionClosed(t *testing.T) {
	const idleTimeout = 500 * time.Millisecond
	ts := startServer(t, Config{IdleTimeout: idleTimeout})
	idle := dial(t, ts.Path())
	idle.send(hello("app-idle"))
	idle.send(register(1, 0x7f0000001000, me))
	alive := dial(t, ts.Path())
	alive.send(hello("app-alive"))
	// Keepalives at a twentieth of the timeout: only a stall of this whole
	// process for nearly the timeout can make one late.
	start := time.Now()
	for time.Since(start) < 2*idleTimeout || ts.Refusals().Idle == 0 {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("idle session still open after %v", time.Since(start))
		}
		time.Sleep(idleTimeout / 20)
		alive.send(&Dropped{})
	}
	idle.waitClosed()
	evs := ts.rec.of("app-idle")
	if end := evs[len(evs)-1]; end.Kind != EventSessionEnd || !strings.Contains(end.Err.Error(), "idle") {
		t.Fatalf("idle session end = %+v, want an idle error", end)
	}
	if r := ts.Refusals(); r.Idle != 1 {
		t.Fatalf("refusals = %+v, want 1 idle", r)
	}
	if ts.Stats().Active != 1 || ts.LiveBlocks() != 0 {
		t.Fatalf("stats %+v live blocks %d: want the keepalive session open and no block left", ts.Stats(), ts.LiveBlocks())
	}
}

// TestRangeAndAccessBounds: a REGISTER or MOVE naming more than
// MaxRangeBytes, or an ACCESS outside its block, is dropped and counted;
// the session goes on.
func TestRangeAndAccessBounds(t *testing.T) {
	ts := startServer(t, Config{MaxRangeBytes: 1 << 20})
	p := dial(t, ts.Path())
	p.send(hello("app-r"))
	huge := register(1, 0x1000, me)
	huge.Length = 1<<47 - 0x2000 // the whole user address space
	p.send(huge)
	p.send(register(2, 0x7f0000001000, me)) // 8 KiB
	p.send(&Move{BlockID: 2, Vaddr: 0x1000, Length: 1<<20 + 1, PID: me})
	p.send(&Access{BlockID: 2, Offset: 8192, Length: 1, Kind: stratav1.AccessKind_ACCESS_KIND_READ})
	p.send(&Access{BlockID: 2, Offset: 4096, Length: 1 << 62, Kind: stratav1.AccessKind_ACCESS_KIND_READ})
	p.send(&Access{BlockID: 2, Offset: 4096, Length: 4096, Kind: stratav1.AccessKind_ACCESS_KIND_READ})
	waitUntil(t, "the good access", func() bool { return len(ts.rec.of("app-r")) == 3 })
	evs := ts.rec.of("app-r")
	if evs[1].Kind != EventRegister || evs[1].Block.HookID != 2 || evs[2].Kind != EventAccess || evs[2].Vaddr != 0x7f0000001000 {
		t.Fatalf("events = %+v, want start, register of 2 at its range, one access", evs)
	}
	if r := ts.Refusals(); r.RangeTooLong != 2 || r.AccessOutside != 2 {
		t.Fatalf("refusals = %+v, want 2 ranges too long, 2 accesses outside", r)
	}
}

// TestKernelAddressesRefused: a REGISTER, a MOVE or a walk naming memory
// above UserSpaceEnd (here the kernel's direct map) is dropped and counted
// at the socket; a moved block keeps its last range, and the session goes
// on.
func TestKernelAddressesRefused(t *testing.T) {
	ts := startServer(t, Config{})
	p := dial(t, ts.Path())
	p.send(hello("app-k"))
	p.send(register(1, 0xffff888000000000, me))
	wrap := register(2, UserSpaceEnd-4096, me)
	wrap.Length = 8192 // ends past UserSpaceEnd
	p.send(wrap)
	p.send(graph(3))
	p.send(&Move{BlockID: 3, Vaddr: 0xffffffff81000000, Length: 4096, PID: me})
	p.sendWalk(3, 1, 0, WalkDone, []Extent{{Vaddr: 0x7f0000001000, Length: 4096}, {Vaddr: 0xffff888000010000, Length: 4096}}, 8)
	p.sendWalk(3, 2, 0, WalkDone, extents(0x7f1000000000, 2), 8)
	p.send(&Access{BlockID: 3, Offset: 0, Length: 8, Kind: stratav1.AccessKind_ACCESS_KIND_READ})
	waitUntil(t, "the access", func() bool {
		evs := ts.rec.of("app-k")
		return len(evs) > 0 && evs[len(evs)-1].Kind == EventAccess
	})
	var kinds []EventKind
	for _, ev := range ts.rec.of("app-k")[1:] {
		kinds = append(kinds, ev.Kind)
		if ev.Vaddr >= UserSpaceEnd || (ev.Kind == EventAccess && ev.Vaddr != graph(3).Vaddr) {
			t.Errorf("event %+v: a kernel address got through, or the block lost its range", ev)
		}
		if ev.Walk != nil && ev.Walk.Seq != 2 {
			t.Errorf("walk %+v with a kernel extent got through", ev.Walk)
		}
	}
	if want := []EventKind{EventRegister, EventWalk, EventAccess}; !slices.Equal(kinds, want) {
		t.Errorf("events %v, want %v", kinds, want)
	}
	if r := ts.Refusals(); r.OutsideUserSpace != 4 {
		t.Errorf("refusals = %+v, want 4 outside user space", r)
	}
	if !inUserSpace(UserSpaceEnd-4096, 4096) || inUserSpace(UserSpaceEnd-4096, 4097) || inUserSpace(1<<63, 0) || inUserSpace(4096, 1<<64-1) {
		t.Error("inUserSpace's bound is off")
	}
}

// TestBlockCaps: past the uid's or the node's live-block cap a REGISTER is
// dropped and counted, the session goes on, and a FREE or a session's end
// gives the slots back.
func TestBlockCaps(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   Config
		which func(Refusals) uint64
	}{
		{"per uid", Config{MaxBlocksPerUID: 3, MaxLiveBlocks: 100}, func(r Refusals) uint64 { return r.BlocksPerUID }},
		{"node", Config{MaxBlocksPerUID: 100, MaxLiveBlocks: 3}, func(r Refusals) uint64 { return r.BlocksPerNode }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t, tc.cfg)
			a := dial(t, ts.Path())
			a.send(hello("app-a"))
			a.send(register(1, 0x10000, me))
			a.send(register(2, 0x20000, me))
			waitUntil(t, "a's registers", func() bool { return len(ts.rec.of("app-a")) == 3 })
			b := dial(t, ts.Path())
			b.send(hello("app-b"))
			b.send(register(1, 0x30000, me))
			b.send(register(2, 0x40000, me)) // over the cap
			b.send(register(1, 0x50000, me)) // re-register of a live block: no new slot
			waitUntil(t, "b's registers", func() bool { return len(ts.rec.of("app-b")) == 3 })
			if got := tc.which(ts.Refusals()); got != 1 || ts.LiveBlocks() != 3 {
				t.Fatalf("refusals %+v, live %d: want 1 refusal, 3 live", ts.Refusals(), ts.LiveBlocks())
			}
			a.send(&Free{BlockID: 1})
			waitUntil(t, "a's free", func() bool { return len(ts.rec.of("app-a")) == 4 })
			b.send(register(2, 0x40000, me))
			waitUntil(t, "b's register after a's free", func() bool { return len(ts.rec.of("app-b")) == 4 })
			a.c.Close()
			b.c.Close()
			waitUntil(t, "sessions gone", func() bool { return ts.Stats().Active == 0 })
			if n := ts.LiveBlocks(); n != 0 {
				t.Fatalf("live blocks after both sessions ended = %d", n)
			}
		})
	}
}
