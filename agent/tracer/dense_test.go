package tracer

import (
	"fmt"
	"os"
	"testing"
	"time"
)

// span is a block laid out by a test: [start, end) of the child's mapping.
type span struct {
	id         uint64
	start, end uint64
}

// owner finds the block holding addr by a linear search: the ground truth
// the kernel's attribution is checked against.
func owner(blocks []span, addr uint64) (uint64, bool) {
	for _, b := range blocks {
		if addr >= b.start && addr < b.end {
			return b.id, true
		}
	}
	return 0, false
}

func registerSpans(t *testing.T, tr *Tracer, c *child, blocks []span) {
	t.Helper()
	for _, b := range blocks {
		if err := tr.RegisterBlock(c.pid, b.id, b.start, b.end); err != nil {
			t.Fatalf("register block %d [%#x,%#x) (page %d, offset %d): %v", b.id, b.start, b.end,
				(b.start-c.base)/uint64(os.Getpagesize()), (b.start-c.base)%uint64(os.Getpagesize()), err)
		}
	}
}

// denseRound touches one byte of every page of the child's mapping.
type denseRound struct {
	mode string // r, w or rw
	off  int    // byte offset in each page
}

// denseRun runs rounds of one touch per page of [0, pages) at a byte offset
// (each followed by MADV_DONTNEED), and checks what every registered block
// in blocks counted meanwhile, and every sampled event, against owner().
func denseRun(t *testing.T, tr *Tracer, c *child, pages int, blocks []span, rounds []denseRound) {
	t.Helper()
	base := map[uint64]Counters{}
	for _, b := range blocks {
		base[b.id] = counters(t, tr, c.pid, b.id)
	}
	want := map[uint64]Counters{}
	var matched uint64
	ps := os.Getpagesize()
	for _, r := range rounds {
		for p := 0; p < pages; p++ {
			id, ok := owner(blocks, c.page(p)+uint64(r.off))
			if !ok {
				continue
			}
			w := want[id]
			if r.mode != "w" {
				w.Read++ // a first read maps the zero page
				matched++
			}
			if r.mode != "r" {
				w.Write++ // a write, or the copy-on-write of the zero page
				matched++
			}
			want[id] = w
		}
	}
	events := map[uint64]Counters{}
	var badEvents []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for n := uint64(0); n < matched; n++ {
			var ev Event
			select {
			case ev = <-tr.Events():
			case <-time.After(5 * time.Second):
				badEvents = append(badEvents, fmt.Sprintf("only %d of %d events", n, matched))
				return
			}
			if id, ok := owner(blocks, ev.Addr); !ok || id != ev.BlockID || ev.TGID != c.pid {
				badEvents = append(badEvents, fmt.Sprintf("event at %#x of pid %d says block %d, owner %d %v", ev.Addr, ev.TGID, ev.BlockID, id, ok))
			}
			e := events[ev.BlockID]
			switch ev.Kind {
			case KindRead:
				e.Read++
			case KindWrite:
				e.Write++
			}
			events[ev.BlockID] = e
		}
	}()
	before, _ := tr.Stats()
	for _, r := range rounds {
		c.do("%s 0 %d %d", r.mode, pages, r.off%ps)
		c.do("d")
	}
	after, _ := tr.Stats()
	wrong := 0
	for _, b := range blocks {
		got := counters(t, tr, c.pid, b.id)
		got = Counters{Read: got.Read - base[b.id].Read, Write: got.Write - base[b.id].Write}
		if got != want[b.id] {
			if wrong++; wrong <= 10 {
				t.Errorf("block %d [%#x,%#x): %+v, want %+v", b.id, b.start, b.end, got, want[b.id])
			}
		}
	}
	if wrong > 0 {
		t.Errorf("%d of %d blocks miscounted", wrong, len(blocks))
	}
	if got := after.MatchedFaults - before.MatchedFaults; got != matched {
		t.Errorf("matched faults %d, want %d", got, matched)
	}
	<-done
	for i, s := range badEvents {
		if i == 10 {
			break
		}
		t.Error(s)
	}
	if !mapsEqual(events, want) {
		t.Errorf("events per block differ from the counters (%d blocks with events, %d counted)", len(events), len(want))
	}
	t.Logf("%d blocks, %d matched faults, %d index cells, %d run entries", len(blocks), matched, after.RangeSets, after.RunEntries)
}

func mapsEqual(a, b map[uint64]Counters) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestManyBlocksInOneGranule is the failure seen under Spark: small heap
// blocks (broadcast pieces, reference arrays of deserialized blocks, small
// serialized chunks) share one 64 KiB granule, 40 of them here, more than
// the 8 ranges one index entry holds. Every block registers, and each fault
// counts for the block holding its address.
func TestManyBlocksInOneGranule(t *testing.T) {
	const pages = 32
	tr := loadTracer(t, Config{SampleEvery: 1, NoMajorFaults: true})
	c := startChild(t, pages)
	if err := tr.Track(c.pid); err != nil {
		t.Fatal(err)
	}
	ps := uint64(os.Getpagesize())
	// The first page of the mapping that starts a 64 KiB granule.
	g := int((((c.base + 0xffff) &^ 0xffff) - c.base) / ps)
	var blocks []span
	for p := g; p < g+16; p++ {
		a := c.page(p)
		blocks = append(blocks,
			span{uint64(len(blocks) + 1), a + 256, a + 768},   // a small serialized chunk
			span{uint64(len(blocks) + 2), a + 1024, a + 1124}, // a reference array
		)
		if p%2 == 0 { // a piece straddling into the next page
			blocks = append(blocks, span{uint64(len(blocks) + 1), a + 3000, a + ps + 200})
		}
	}
	registerSpans(t, tr, c, blocks)
	denseRun(t, tr, c, pages, blocks, []denseRound{
		{"w", 8}, {"r", 1100}, {"rw", 3500}, {"w", 300}, {"r", 767}, {"w", 1030}, {"rw", 2000},
	})
}

// TestTinyBlocksExact registers 5,247 blocks of 64 bytes to 4 KiB on 256
// pages (16 per page, 64 packed per page, one per page, and 4 KiB blocks
// straddling page boundaries), touches every page at 64 offsets with reads,
// writes and read-then-writes, and checks every block's counters and every
// sampled event against a linear search.
func TestTinyBlocksExact(t *testing.T) {
	const pages = 256
	tr := loadTracer(t, Config{SampleEvery: 1, NoMajorFaults: true})
	c := startChild(t, pages)
	if err := tr.Track(c.pid); err != nil {
		t.Fatal(err)
	}
	ps := uint64(os.Getpagesize())
	var blocks []span
	add := func(start, end uint64) { blocks = append(blocks, span{uint64(len(blocks) + 1), start, end}) }
	for p := 0; p < 64; p++ {
		for j := uint64(0); j < 16; j++ {
			add(c.page(p)+j*256+32, c.page(p)+j*256+96)
		}
	}
	for p := 64; p < 128; p++ {
		for j := uint64(0); j < 64; j++ {
			add(c.page(p)+j*64, c.page(p)+(j+1)*64)
		}
	}
	for p := 128; p < 192; p++ {
		add(c.page(p)+1000, c.page(p)+1064)
	}
	for p := 192; p < pages-1; p++ {
		add(c.page(p)+ps/2, c.page(p+1)+ps/2)
	}
	var rounds []denseRound
	for r := 0; r < 64; r++ {
		rounds = append(rounds, denseRound{[]string{"r", "w", "rw"}[r%3], r*64 + 40})
	}
	registerSpans(t, tr, c, blocks)
	denseRun(t, tr, c, pages, blocks, rounds)

	// Free every other block: faults at their addresses count nowhere, the
	// rest stay exact.
	var kept []span
	for i, b := range blocks {
		if i%2 == 0 {
			if _, err := tr.FreeBlock(c.pid, b.id); err != nil {
				t.Fatal(err)
			}
		} else {
			kept = append(kept, b)
		}
	}
	denseRun(t, tr, c, pages, kept, rounds[:12])
	for _, b := range kept {
		if _, err := tr.FreeBlock(c.pid, b.id); err != nil {
			t.Fatal(err)
		}
	}
	if n, _, _ := kernelEntries(t, tr, c.pid); n != 0 {
		t.Fatalf("%d index entries after freeing every block", n)
	}
	// Their run segments are free again after a grace period.
	tr.reclaimRuns()
	if st, _ := tr.Stats(); st.RunEntries != 0 {
		t.Errorf("%d run entries in use after freeing every block", st.RunEntries)
	}
}
