package tracer

import (
	"debug/elf"
	"os"
	"testing"
	"time"

	"github.com/stratatrace/strata/agent/tracer/internal/fillmark"
)

// fillTracer loads a tracer with the fill probes on this test binary, which
// holds the hook's two natives (internal/fillmark).
func fillTracer(t *testing.T, hook Hook) *Tracer {
	t.Helper()
	if !fillmark.Available {
		t.Skip("skipping: the fill natives need cgo")
	}
	tr := loadTracer(t, Config{Hook: hook})
	attachSelf(t, tr)
	exe, _ := os.Executable()
	if again, err := tr.AttachFills(exe); err != nil || again {
		t.Fatalf("attach fills again: %v, %v (want false, nil)", again, err)
	}
	return tr
}

// attachSelf attaches the fill probes to this test binary's copies of the
// natives. go test strips the symbol table of the binary it runs, so they
// are found by address: the binary is not position independent, so their
// addresses are the ELF's, which its load segments map to file offsets.
func attachSelf(tb testing.TB, tr *Tracer) {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	f, err := elf.Open(exe)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if f.Type != elf.ET_EXEC {
		tb.Skipf("skipping: the test binary is %v, not a fixed-address executable", f.Type)
	}
	offset := func(addr uintptr) uint64 {
		for _, p := range f.Progs {
			if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 && uint64(addr) >= p.Vaddr && uint64(addr) < p.Vaddr+p.Memsz {
				return uint64(addr) - p.Vaddr + p.Off
			}
		}
		tb.Fatalf("address %#x in no executable segment of %s", addr, exe)
		return 0
	}
	begin, end := fillmark.Addresses()
	if attached, err := tr.attachFills(exe, offset(begin), offset(end)); err != nil || !attached {
		tb.Fatalf("attach fills: %v, %v", attached, err)
	}
}

func takeFill(t *testing.T, tr *Tracer, pid uint32, key uint64) (Counters, bool) {
	t.Helper()
	f, ok, err := tr.TakeFill(pid, key)
	if err != nil {
		t.Fatal(err)
	}
	if ok && (f.End.IsZero() || time.Since(f.End) > time.Minute || time.Until(f.End) > time.Second) {
		t.Errorf("fill %d ended at %v, not just now", key, f.End)
	}
	return f.Counters, ok
}

func fillStats(t *testing.T, tr *Tracer) Stats {
	t.Helper()
	s, err := tr.Stats()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestFillCountsExact: a thread's faults between fillBegin and fillEnd
// count for the fill whatever their address, exactly, on every fault hook;
// the process is traced by its first fill, with no Track.
func TestFillCountsExact(t *testing.T) {
	for _, hook := range []Hook{HookBTF, HookRaw, HookPerf} {
		t.Run(string(hook), func(t *testing.T) {
			tr := fillTracer(t, hook)
			c := startChild(t, 64)
			// The first fill pages in the code the others run.
			c.do("fb 1; w 0 1; fe 1")
			if _, ok := takeFill(t, tr, c.pid, 1); !ok {
				t.Fatal("the first fill was not stored")
			}
			c.do("fb 11; w 1 17; r 17 21; fe 1")
			got, ok := takeFill(t, tr, c.pid, 11)
			want := Counters{Write: 16, Read: 4}
			if hook == HookPerf {
				want = Counters{Unclassified: 20}
			}
			if !ok || got != want {
				t.Errorf("fill 11: %+v (stored %v), want %+v", got, ok, want)
			}
			if _, ok := takeFill(t, tr, c.pid, 11); ok {
				t.Error("fill 11 taken twice")
			}
			// Faults outside a fill count for none.
			c.do("w 21 30; fb 12; fe 1")
			if got, _ := takeFill(t, tr, c.pid, 12); got != (Counters{}) {
				t.Errorf("fill 12: %+v, want none (the faults came before it)", got)
			}
		})
	}
}

// TestFillNestingAndOutcomes: nested puts count their own faults only, a
// put that did not store its block leaves nothing, puts beyond the depth
// are counted too deep, an end without a begin unmatched, and stored fills
// no claim took are dropped with their process (tracked or not) or by age.
func TestFillNestingAndOutcomes(t *testing.T) {
	tr := fillTracer(t, HookAuto)
	c := startChild(t, 128)
	c.do("fb 1; w 0 1; fe 1")
	takeFill(t, tr, c.pid, 1)
	before := fillStats(t, tr)

	c.do("fb 21; w 1 5; fb 22; w 5 11; fe 1; w 11 13; fe 1")
	if got, _ := takeFill(t, tr, c.pid, 21); got.Write != 6 {
		t.Errorf("outer fill: %+v, want 6 writes (4 before the nested put, 2 after)", got)
	}
	if got, _ := takeFill(t, tr, c.pid, 22); got.Write != 6 {
		t.Errorf("nested fill: %+v, want 6 writes", got)
	}

	c.do("fb 23; w 13 20; fe 0")
	if _, ok := takeFill(t, tr, c.pid, 23); ok {
		t.Error("a put that stored nothing left a fill")
	}

	c.do("fb 31; fb 32; fb 33; fb 34; fb 35; w 20 24; fe 1; w 24 26; fe 1; fe 1; fe 1; fe 1")
	if _, ok := takeFill(t, tr, c.pid, 35); ok {
		t.Error("the fifth nested put left a fill")
	}
	if got, _ := takeFill(t, tr, c.pid, 34); got.Write != 2 {
		t.Errorf("fourth nested fill: %+v, want the 2 writes after the fifth ended", got)
	}
	for _, k := range []uint64{31, 32, 33} {
		if got, ok := takeFill(t, tr, c.pid, k); !ok || got != (Counters{}) {
			t.Errorf("outer fill %d: %+v (stored %v), want none: its puts nested in it took them", k, got, ok)
		}
	}
	c.do("fe 1")

	c.do("fb 41; w 26 28; fe 1")
	c.do("fb 41; w 28 31; fe 1") // the same block put again, unclaimed between
	if got, _ := takeFill(t, tr, c.pid, 41); got.Write != 3 {
		t.Errorf("fill 41: %+v, want the later put's 3 writes", got)
	}

	after := fillStats(t, tr)
	for _, d := range []struct {
		name      string
		got, want uint64
	}{
		{"begun", after.FillsBegun - before.FillsBegun, 2 + 1 + 4 + 2},
		{"stored", after.FillsStored - before.FillsStored, 2 + 4 + 2},
		{"failed", after.FillsFailed - before.FillsFailed, 1},
		{"too deep", after.FillsTooDeep - before.FillsTooDeep, 1},
		{"replaced", after.FillsReplaced - before.FillsReplaced, 1},
		{"unmatched", after.FillsUnmatched - before.FillsUnmatched, 1},
		{"claimed", after.FillsClaimed - before.FillsClaimed, 2 + 4 + 1},
		{"lost", after.FillsLost - before.FillsLost, 0},
	} {
		if d.got != d.want {
			t.Errorf("fills %s: %d, want %d", d.name, d.got, d.want)
		}
	}

	// Unclaimed: by age, by Untrack of a tracked process, by the exit of
	// a process only its fills traced.
	c.do("fb 51; w 31 32; fe 1")
	tr.sweepFills(time.Now())
	if _, ok := takeFill(t, tr, c.pid, 51); !ok {
		t.Fatal("a fresh fill was swept")
	}
	c.do("fb 52; w 32 33; fe 1")
	tr.sweepFills(time.Now().Add(fillMaxAge + time.Second))
	if _, ok := takeFill(t, tr, c.pid, 52); ok {
		t.Error("a fill older than fillMaxAge was not swept")
	}
	if err := tr.Track(c.pid); err != nil {
		t.Fatal(err)
	}
	c.do("fb 53; w 33 34; fe 1")
	if err := tr.Untrack(c.pid); err != nil {
		t.Fatal(err)
	}
	if _, ok := takeFill(t, tr, c.pid, 53); ok {
		t.Error("Untrack left the process's fill")
	}
	c.do("fb 54; w 34 35; fe 1") // traced again by this fill
	c.quit()
	deadline := time.Now().Add(10 * time.Second)
	for fillStats(t, tr).FillsUnclaimed-before.FillsUnclaimed < 3 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := fillStats(t, tr).FillsUnclaimed - before.FillsUnclaimed; n != 3 {
		t.Errorf("fills dropped unclaimed: %d, want 3 (aged, untracked, exited)", n)
	}
}

// TestFillOtherProcesses: another process's faults never count for a
// fill.
func TestFillOtherProcesses(t *testing.T) {
	tr := fillTracer(t, HookAuto)
	a, b := startChild(t, 64), startChild(t, 64)
	a.do("fb 61")
	b.do("w 0 32")
	a.do("w 0 3; fe 1")
	// Between its two commands a's thread read and wrote its pipes, which
	// may fault too; b's 32 writes must not be there.
	if got, _ := takeFill(t, tr, a.pid, 61); got.Write < 3 || got.Write >= 32 {
		t.Errorf("fill 61: %+v, want its own thread's 3 writes and none of the other process's 32", got)
	}
	if _, ok := takeFill(t, tr, b.pid, 61); ok {
		t.Error("a fill under the other process's pid")
	}
}
