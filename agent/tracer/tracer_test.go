package tracer

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/stratatrace/strata/test/testenv"
)

func testLogger(tb testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{tb}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testWriter struct{ tb testing.TB }

func (w testWriter) Write(p []byte) (int, error) { w.tb.Log(string(p)); return len(p), nil }

func loadTracer(tb testing.TB, cfg Config) *Tracer {
	tb.Helper()
	testenv.RequireRoot(tb)
	if cfg.Logger == nil {
		cfg.Logger = testLogger(tb)
	}
	tr, err := Load(cfg)
	if errors.Is(err, ErrUnsupported) {
		tb.Skipf("skipping: %v", err)
	}
	if err != nil {
		tb.Fatalf("load tracer: %v", err)
	}
	tb.Cleanup(func() {
		if err := tr.Close(); err != nil {
			tb.Errorf("close: %v", err)
		}
	})
	return tr
}

// kernelEntries counts the buckets-map entries of tgid and reports whether
// its pid bit and tgid counters are still present.
func kernelEntries(tb testing.TB, tr *Tracer, tgid uint32) (ranges int, bit, tgidEntry bool) {
	tb.Helper()
	var k strataCellKey
	var v strataRangeSet
	it := tr.maps[strataMapCells].Iterate()
	for it.Next(&k, &v) {
		if k.Tgid == tgid {
			ranges++
		}
	}
	if err := it.Err(); err != nil {
		tb.Fatal(err)
	}
	bit = *tr.pidWord(tgid)>>(tgid&63)&1 == 1
	var per []strataTgidCounters
	tgidEntry = tr.maps[strataMapTgids].Lookup(tgid, &per) == nil
	return ranges, bit, tgidEntry
}

func counters(tb testing.TB, tr *Tracer, tgid uint32, id uint64) Counters {
	tb.Helper()
	c, err := tr.blockCounters(tgid, id)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// TestFaultCountsExact touches R pages by reading and W by writing inside
// two registered blocks and K pages outside them, on every fault hook.
func TestFaultCountsExact(t *testing.T) {
	const (
		R, W, K = 10, 12, 8
		blockA  = 101 // pages [0,16)
		blockB  = 202 // pages [16,32); pages [32,48) are outside
	)
	for _, hook := range []Hook{HookBTF, HookRaw, HookPerf} {
		t.Run(string(hook), func(t *testing.T) {
			var mu sync.Mutex
			var exits []ExitReport
			tr := loadTracer(t, Config{Hook: hook, SampleEvery: 1, OnExit: func(r ExitReport) {
				mu.Lock()
				exits = append(exits, r)
				mu.Unlock()
			}})
			c := startChild(t, 48)
			other := startChild(t, 48) // untraced, same loop
			if err := tr.Track(c.pid); err != nil {
				t.Fatal(err)
			}
			if err := tr.RegisterBlock(c.pid, blockA, c.page(0), c.page(16)); err != nil {
				t.Fatal(err)
			}
			if err := tr.RegisterBlock(c.pid, blockB, c.page(16), c.page(32)); err != nil {
				t.Fatal(err)
			}
			before, _ := tr.Stats()

			// Round 1: first touches. Reads map the zero page (one read fault).
			for _, w := range []*child{c, other} {
				w.do("r 0 %d", R)
				w.do("w 16 %d", 16+W)
				w.do("w 32 %d", 32+K)
				w.do("r 40 48")
			}
			// Round 2: re-fault; read-then-write faults twice per page.
			for _, w := range []*child{c, other} {
				w.do("d")
				w.do("rw 0 %d", R)
				w.do("w 16 %d", 16+W)
			}
			a, b := counters(t, tr, c.pid, blockA), counters(t, tr, c.pid, blockB)
			wantA, wantB := Counters{Read: 2 * R, Write: R}, Counters{Write: 2 * W}
			if hook == HookPerf {
				wantA, wantB = Counters{Unclassified: 3 * R}, Counters{Unclassified: 2 * W}
			}
			if a != wantA || b != wantB {
				t.Errorf("block A %+v want %+v; block B %+v want %+v", a, wantA, b, wantB)
			}
			after, _ := tr.Stats()
			matched := after.MatchedFaults - before.MatchedFaults
			if want := wantA.Read + wantA.Write + wantA.Unclassified + wantB.Write + wantB.Unclassified; matched != want {
				t.Errorf("matched faults %d, want %d (pages outside the blocks or the untraced child counted?)", matched, want)
			}
			if traced := after.TracedFaults - before.TracedFaults; traced < matched+K+8 {
				t.Errorf("traced faults %d: the %d outside faults are missing", traced, K+8)
			}

			// Events: one per matched fault (SampleEvery 1), all of the traced child.
			got := map[uint64]Counters{}
			deadline := time.After(2 * time.Second)
			for n := uint64(0); n < matched; {
				select {
				case ev := <-tr.Events():
					if ev.TGID != c.pid || ev.TID == 0 {
						t.Fatalf("event of pid %d tid %d, want %d", ev.TGID, ev.TID, c.pid)
					}
					if ev.Addr < c.page(0) || ev.Addr >= c.page(32) || ev.Time.IsZero() {
						t.Fatalf("event %+v outside the blocks", ev)
					}
					if int(ev.CPU) >= runtime.NumCPU() {
						t.Fatalf("event on CPU %d of %d", ev.CPU, runtime.NumCPU())
					}
					cc := got[ev.BlockID]
					switch ev.Kind {
					case KindRead:
						cc.Read++
					case KindWrite:
						cc.Write++
					case KindUnclassified:
						cc.Unclassified++
					}
					got[ev.BlockID] = cc
					n++
				case <-deadline:
					t.Fatalf("events: got %d of %d: %+v", n, matched, got)
				}
			}
			if got[blockA] != wantA || got[blockB] != wantB {
				t.Errorf("events per block %+v, want A %+v B %+v", got, wantA, wantB)
			}
			st, _ := tr.Stats()
			if st.KernelDrops != 0 || st.UserDrops != 0 {
				t.Errorf("drops: kernel %d user %d", st.KernelDrops, st.UserDrops)
			}

			// Exit: every kernel entry of the child goes away.
			if n, _, _ := kernelEntries(t, tr, c.pid); n == 0 {
				t.Fatal("no bucket entries before exit")
			}
			c.quit()
			deadline = time.After(3 * time.Second)
			for {
				n, bit, ent := kernelEntries(t, tr, c.pid)
				if n == 0 && !bit && !ent {
					break
				}
				select {
				case <-deadline:
					t.Fatalf("after exit: %d range sets, pid bit %v, tgid entry %v", n, bit, ent)
				case <-time.After(20 * time.Millisecond):
				}
			}
			if _, err := tr.blockCounters(c.pid, blockA); !errors.Is(err, ErrNotTracked) {
				t.Errorf("block counters after exit: %v, want ErrNotTracked", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(exits) != 1 || exits[0].TGID != c.pid || len(exits[0].Blocks) != 2 {
				t.Fatalf("exit reports %+v", exits)
			}
			for _, bs := range exits[0].Blocks {
				if want := map[uint64]Counters{blockA: wantA, blockB: wantB}[bs.BlockID]; bs.Counters != want {
					t.Errorf("final counters of block %d: %+v, want %+v", bs.BlockID, bs.Counters, want)
				}
			}
			if st, _ := tr.Stats(); st.Blocks != 0 || st.RangeSets != 0 || st.Exits == 0 {
				t.Errorf("stats after exit %+v", st)
			}
		})
	}
}

// TestClassifyErrorCode runs the raw tracepoint program with synthetic
// arguments (BPF_PROG_TEST_RUN): the x86 error code decides the counter.
func TestClassifyErrorCode(t *testing.T) {
	tr := loadTracer(t, Config{Hook: HookRaw, DisableEvents: true, NoMajorFaults: true})
	self := uint32(os.Getpid())
	if err := tr.Track(self); err != nil {
		t.Fatal(err)
	}
	const start, end = 0x7e0000000000, 0x7e0000100000
	if err := tr.RegisterBlock(self, 1, start, end); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		addr uint64
		code uint64
		want Counters
	}{
		{"read not-present", start + 0x10, 0x4, Counters{Read: 1}},
		{"write not-present", start + 0x1000, 0x6, Counters{Write: 1}},
		{"write protection (COW)", end - 1, 0x7, Counters{Write: 1}},
		{"instruction fetch", start + 0x2000, 0x14, Counters{Exec: 1}},
		{"instruction fetch, protection", start + 0x2000, 0x15, Counters{Exec: 1}},
		{"read below the block", start - 1, 0x4, Counters{}},
		{"write at the end", end, 0x6, Counters{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := counters(t, tr, self, 1)
			ret, err := tr.fault.Run(&ebpf.RunOptions{Context: []uint64{tc.addr, 0, tc.code}})
			if err != nil {
				testenv.RequireRoot(t)
				t.Skipf("skipping: BPF_PROG_TEST_RUN for raw_tp: %v", err)
			}
			if ret != 0 {
				t.Errorf("return %d", ret)
			}
			after := counters(t, tr, self, 1)
			d := Counters{Read: after.Read - before.Read, Write: after.Write - before.Write, Exec: after.Exec - before.Exec}
			if d != tc.want {
				t.Errorf("counted %+v, want %+v", d, tc.want)
			}
		})
	}
}

// TestMajorFaults reads evicted pages of a file mapping (MADV_RANDOM: one
// major fault per page) and compares the per-block count with the child's
// own getrusage.
func TestMajorFaults(t *testing.T) {
	const pages = 32
	path := filepath.Join(os.TempDir(), fmt.Sprintf("strata-major-%d", os.Getpid()))
	if err := os.WriteFile(path, bytes.Repeat([]byte{7}, pages*os.Getpagesize()), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(path) })
	tr := loadTracer(t, Config{})
	c := startChildFile(t, 1, path)
	if err := tr.Track(c.pid); err != nil {
		t.Fatal(err)
	}
	ps := uint64(os.Getpagesize())
	if err := tr.RegisterBlock(c.pid, 5, c.fbase, c.fbase+16*ps); err != nil {
		t.Fatal(err)
	}
	c.do("fr 0 %d", pages) // bring the file in once, then evict it
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Sync()
	f.Close()
	before := counters(t, tr, c.pid, 5)
	c.do("fevict")
	_, inBlock := c.doMajor("fr 0 16")
	_, outside := c.doMajor("fr 16 %d", pages)
	if inBlock == 0 {
		t.Skip("skipping: eviction did not cause major faults (page cache kept the file)")
	}
	got := counters(t, tr, c.pid, 5)
	if d := got.Major - before.Major; d != uint64(inBlock) {
		t.Errorf("major faults in block %d, child saw %d (and %d outside)", d, inBlock, outside)
	}
	t.Logf("major faults: block %d (getrusage %d), outside %d", got.Major-before.Major, inBlock, outside)
}

// TestMoveAndFree moves a block between rounds and frees it.
func TestMoveAndFree(t *testing.T) {
	tr := loadTracer(t, Config{DisableEvents: true, NoMajorFaults: true})
	c := startChild(t, 32)
	if err := tr.Track(c.pid); err != nil {
		t.Fatal(err)
	}
	if err := tr.RegisterBlock(c.pid, 1, c.page(0), c.page(8)); err != nil {
		t.Fatal(err)
	}
	c.do("w 0 8")
	if err := tr.MoveBlock(c.pid, 1, c.page(16), c.page(24)); err != nil {
		t.Fatal(err)
	}
	c.do("w 0 8")   // old place: not counted any more (already present anyway)
	c.do("w 16 20") // new place
	final, err := tr.FreeBlock(c.pid, 1)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Counters{Write: 12}); final != want {
		t.Errorf("final %+v, want %+v", final, want)
	}
	c.do("w 20 24")
	if _, err := tr.blockCounters(c.pid, 1); !errors.Is(err, ErrUnknownBlock) {
		t.Errorf("after free: %v", err)
	}
	if n, _, _ := kernelEntries(t, tr, c.pid); n != 0 {
		t.Errorf("%d range sets after free", n)
	}
	// The slot is reused with zeroed counters.
	if err := tr.RegisterBlock(c.pid, 2, c.page(24), c.page(32)); err != nil {
		t.Fatal(err)
	}
	if got := counters(t, tr, c.pid, 2); got != (Counters{}) {
		t.Errorf("reused slot counters %+v", got)
	}
}

// TestRingDropsCounted overfills a one-page ring: reserve failures are
// counted in the kernel, every fault is still counted per block, and each
// sampled fault is either submitted or counted as dropped. Whether a round
// of faults outruns the reader depends on both sides' speed: the pages are
// dropped and written again, up to 20 rounds, until the ring overflowed.
func TestRingDropsCounted(t *testing.T) {
	const pages, maxRounds = 4096, 20
	tr := loadTracer(t, Config{RingBytes: 4096, SampleEvery: 1, NoMajorFaults: true})
	c := writeOneBlock(t, tr, pages)
	rounds := 1
	for ; rounds < maxRounds; rounds++ {
		if st, err := tr.Stats(); err != nil || st.KernelDrops > 0 {
			break
		}
		c.do("d")
		c.do("w 0 %d", pages)
	}
	time.Sleep(3 * tr.cfg.DrainInterval)
	st, err := tr.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if got := counters(t, tr, c.pid, 1); got.Write != uint64(rounds*pages) {
		t.Errorf("counted %d writes in %d rounds, want %d despite drops", got.Write, rounds, rounds*pages)
	}
	if st.KernelDrops == 0 {
		t.Skipf("skipping: the reader kept up with a 4 KiB ring for %d rounds (%+v)", rounds, st)
	}
	if st.KernelEvents+st.KernelDrops != st.MatchedFaults {
		t.Errorf("events %d + drops %d != matched %d", st.KernelEvents, st.KernelDrops, st.MatchedFaults)
	}
	t.Logf("4 KiB ring, %d rounds: %d submitted, %d kernel drops, %d delivered", rounds, st.KernelEvents, st.KernelDrops, st.Delivered)
}

func openFDs(tb testing.TB) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		tb.Fatal(err)
	}
	return len(ents)
}

// TestCloseReleasesEverything: nothing is pinned, so after Close the
// kernel frees every program and map; a Load that fails half-way closes
// what it opened; Close is nil-safe and idempotent.
func TestCloseReleasesEverything(t *testing.T) {
	testenv.RequireRoot(t)
	var nilTracer *Tracer
	if err := nilTracer.Close(); err != nil {
		t.Errorf("nil close: %v", err)
	}
	fds := openFDs(t)
	tr, err := Load(Config{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	var progIDs []ebpf.ProgramID
	for _, p := range []*ebpf.Program{tr.fault} {
		info, err := p.Info()
		if err != nil {
			t.Fatal(err)
		}
		id, _ := info.ID()
		progIDs = append(progIDs, id)
	}
	var mapIDs []ebpf.MapID
	for _, m := range tr.maps {
		info, err := m.Info()
		if err != nil {
			t.Fatal(err)
		}
		id, _ := info.ID()
		mapIDs = append(mapIDs, id)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tr.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	if _, ok := <-tr.Events(); ok {
		t.Error("events channel open after Close")
	}
	if err := tr.Track(1); !errors.Is(err, ErrClosed) {
		t.Errorf("track after close: %v", err)
	}
	// The kernel frees them after an RCU grace period: poll for a while.
	gone := func(what string, open func() (io.Closer, error)) {
		for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			obj, err := open()
			if err != nil {
				return
			}
			obj.Close()
			if time.Now().After(deadline) {
				t.Fatalf("%s still exists after Close", what)
			}
		}
	}
	for _, id := range progIDs {
		gone(fmt.Sprintf("program %d", id), func() (io.Closer, error) { return ebpf.NewProgramFromID(id) })
	}
	for _, id := range mapIDs {
		gone(fmt.Sprintf("map %d", id), func() (io.Closer, error) { return ebpf.NewMapFromID(id) })
	}
	if _, err := Load(Config{MaxBlocks: 1 << 31}); err == nil {
		t.Fatal("load with 2^31 block slots succeeded")
	}
	// An index table far beyond memory fails after pid_bits was made.
	if _, err := Load(Config{MaxRangeSets: 1 << 31, NoMajorFaults: true, Logger: testLogger(t)}); err == nil {
		t.Fatal("load with 2^31 range sets succeeded")
	} else {
		t.Logf("half-way failure: %v", err)
	}
	if got := openFDs(t); got != fds {
		t.Errorf("open fds %d after failed load, %d before", got, fds)
	}
}

// TestLivenessBackstop: with no reader running, the exit notice stays in
// the ring, and the pidfd poll alone must clean up after the exit.
func TestLivenessBackstop(t *testing.T) {
	var reports []ExitReport
	tr := loadTracer(t, Config{NoMajorFaults: true, manualDrain: true,
		OnExit: func(r ExitReport) { reports = append(reports, r) }})
	c := startChild(t, 8)
	if err := tr.Track(c.pid); err != nil {
		t.Fatal(err)
	}
	if err := tr.RegisterBlock(c.pid, 3, c.page(0), c.page(8)); err != nil {
		t.Fatal(err)
	}
	c.do("w 0 8")
	tr.checkLiveness()
	if n, _, _ := kernelEntries(t, tr, c.pid); n == 0 {
		t.Fatal("live process forgotten")
	}
	c.quit()
	tr.checkLiveness()
	n, bit, ent := kernelEntries(t, tr, c.pid)
	if n != 0 || bit || ent {
		t.Errorf("after exit: %d range sets, pid bit %v, tgid entry %v", n, bit, ent)
	}
	if len(reports) != 1 || len(reports[0].Blocks) != 1 || reports[0].Blocks[0].Write != 8 {
		t.Errorf("exit reports %+v", reports)
	}
}

// TestEveryProgramLoads passes every program of the object through this
// kernel's verifier, fallbacks included (exit_raw is never picked here).
func TestEveryProgramLoads(t *testing.T) {
	tr := loadTracer(t, Config{NoMajorFaults: true})
	for name := range tr.spec.Programs {
		t.Run(name, func(t *testing.T) {
			if _, err := tr.loadProgram(name); err != nil {
				t.Fatalf("%+v", err)
			}
		})
	}
}

// blockCounters returns one block's counters, summed over CPUs.
func (t *Tracer) blockCounters(tgid uint32, id uint64) (Counters, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, err := t.procLocked("read block counters", tgid)
	if err != nil {
		return Counters{}, err
	}
	b, ok := p.idx.blocks[id]
	if !ok {
		return Counters{}, fmt.Errorf("read block counters %d: %w", id, ErrUnknownBlock)
	}
	return t.readSlot(b.slot)
}

// writeOneBlock starts a child with pages pages, registers them all as
// block 1 of a tracked process and has the child write each once.
func writeOneBlock(tb testing.TB, tr *Tracer, pages int) *child {
	tb.Helper()
	c := startChild(tb, pages)
	if err := tr.Track(c.pid); err != nil {
		tb.Fatal(err)
	}
	if err := tr.RegisterBlock(c.pid, 1, c.page(0), c.page(pages)); err != nil {
		tb.Fatal(err)
	}
	c.do("w 0 %d", pages)
	return c
}

// TestRingWakesReader: records are submitted without a wakeup and drained on
// a deadline, but once a quarter of the ring waits the kernel wakes the
// reader: with a 20 s deadline, a burst of faults arrives in a second.
func TestRingWakesReader(t *testing.T) {
	const pages = 1024 // 1024 records of 56 bytes: above 16 KiB, within 64 KiB
	tr := loadTracer(t, Config{RingBytes: 64 << 10, SampleEvery: 1, NoMajorFaults: true,
		DrainInterval: 20 * time.Second, IdleDrainInterval: 20 * time.Second})
	writeOneBlock(t, tr, pages)
	wake := (64 << 10) / 4 / (int(unsafe.Sizeof(strataEvent{})) + 8)
	got := 0
	timeout := time.After(5 * time.Second)
	for got < wake {
		select {
		case <-tr.Events():
			got++
		case <-timeout:
			t.Fatalf("%d records within 5 s of the burst, want at least the %d that fill a quarter of the ring", got, wake)
		}
	}
}
