package annotator

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stratatrace/strata/agent/hooksrv"
	"github.com/stratatrace/strata/agent/resolver"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// scatterResolver answers every range with runs of up to runPages pages
// whose PFNs step randomly, as a block faulted in out of order resolves;
// with runPages 0, one untouched run of the whole range, as the resolver
// folds never-touched memory.
type scatterResolver struct {
	runPages uint32
	calls    int
}

func (r *scatterResolver) ResolveFor(t resolver.Tenant, reqs []resolver.Request, out []resolver.Result) error {
	r.calls++
	rng := rand.New(rand.NewPCG(uint64(t.PID), 1))
	for i, q := range reqs {
		n := uint32(q.Length / 4096)
		if r.runPages == 0 {
			out[i] = resolver.Result{Runs: []*stratav1.PageRun{{Vaddr: q.VAddr, Count: n, NumaNode: -1}}}
			continue
		}
		var runs []*stratav1.PageRun
		for a := uint32(0); a < n; a += r.runPages {
			run := &stratav1.PageRun{Vaddr: q.VAddr + uint64(a)*4096, Count: min(r.runPages, n-a), State: 1, Pfn: 1 + rng.Uint64N(1<<30)}
			for range run.Count - 1 {
				run.PfnDeltas = append(run.PfnDeltas, int64(rng.IntN(1<<22))-(1<<21))
			}
			runs = append(runs, run)
		}
		out[i] = resolver.Result{Runs: runs}
	}
	return nil
}

func pagesOf(recs []*stratav1.Record) (n uint64) {
	for _, r := range recs {
		for _, run := range r.GetRuns() {
			n += uint64(run.GetCount())
		}
	}
	return n
}

// TestUntouchedBlockRunsFitTheCollector: an untouched 2 GiB block is one
// run of 2^19 pages as resolved; its record carries runs of at most
// stratav1.MaxRunPages, every page kept.
func TestUntouchedBlockRunsFitTheCollector(t *testing.T) {
	sink := &memSink{}
	a := New(&scatterResolver{}, sink, Config{})
	s := &hooksrv.Session{PID: 1, AppID: "app"}
	a.HandleEvent(context.Background(), ev(s, hooksrv.EventRegister, stratav1.AccessKind_ACCESS_KIND_ALLOC, 1, 0x7f0000000000, 2<<30))
	a.Flush()
	recs := sink.records()
	if len(recs) != 1 || pagesOf(recs) != 1<<19 {
		t.Fatalf("%d records with %d pages, want 1 with 2^19", len(recs), pagesOf(recs))
	}
	for _, run := range recs[0].GetRuns() {
		if run.GetCount() > stratav1.MaxRunPages {
			t.Fatalf("run of %d pages, over MaxRunPages", run.GetCount())
		}
	}
}

// TestBatchesCutByEncodedSize: a block of scattered pages (about 300 KB of
// runs) read 300 times made one ~90 MB batch under a record-count cut. Now
// no batch exceeds the byte budget, every record arrives, and a record over
// the budget alone goes as sub-range records with all its pages.
func TestBatchesCutByEncodedSize(t *testing.T) {
	sink := &memSink{}
	const budget = 1 << 20 // a small budget keeps the test light; the default is fit.BatchBudget
	a := New(&scatterResolver{runPages: 4096}, sink, Config{MaxBatchBytes: budget, NodeName: "n", BootID: "b"})
	s := &hooksrv.Session{PID: 2, AppID: "app"}
	const blockLen = 256 << 20 // 65536 pages
	a.HandleEvent(context.Background(), ev(s, hooksrv.EventRegister, stratav1.AccessKind_ACCESS_KIND_ALLOC, 1, 0x7f0000000000, blockLen))
	for range 300 {
		a.HandleEvent(context.Background(), ev(s, hooksrv.EventAccess, stratav1.AccessKind_ACCESS_KIND_READ, 1, 0x7f0000000000, blockLen))
	}
	// A record alone over the budget: 2 GiB of scattered pages.
	a.HandleEvent(context.Background(), ev(s, hooksrv.EventRegister, stratav1.AccessKind_ACCESS_KIND_ALLOC, 2, 0x7e0000000000, 2<<30))
	a.Flush()
	var total int
	for i, b := range sink.batches {
		b.Seq = 1 << 60 // as the spool numbers it
		if n := proto.Size(b); n > budget {
			t.Fatalf("batch %d is %d bytes, over the %d budget", i, n, budget)
		}
		total += proto.Size(b)
	}
	if total < 60<<20 {
		t.Fatalf("only %d bytes in all: the test must carry more than one 64 MiB message's worth", total)
	}
	var block1, block2 []*stratav1.Record
	for _, r := range sink.records() {
		if r.GetBlock().GetHookBlockId() == 1 {
			block1 = append(block1, r)
		} else {
			block2 = append(block2, r)
		}
	}
	if len(block1) != 301 || pagesOf(block1) != 301*65536 {
		t.Fatalf("block 1: %d records, %d pages; want 301 records of 65536 pages", len(block1), pagesOf(block1))
	}
	if len(block2) < 2 || pagesOf(block2) != 1<<19 || a.Stats().Split != 1 {
		t.Fatalf("block 2: %d records with %d pages, split %d; want several sub-ranges with all 2^19 pages", len(block2), pagesOf(block2), a.Stats().Split)
	}
	end := uint64(0x7e0000000000)
	for _, r := range block2 {
		if r.GetVaddr() != end {
			t.Fatalf("sub-range at %#x, want %#x (contiguous)", r.GetVaddr(), end)
		}
		end += r.GetLength()
	}
	if end != 0x7e0000000000+2<<30 {
		t.Fatalf("sub-ranges end at %#x", end)
	}
}

// TestPageCacheBounded: pages kept for reuse stop at MaxCacheBytes; a block
// that did not fit is resolved again on its next access. (A reuse window
// of an hour: only the cache bound decides, not how soon the access came.)
func TestPageCacheBounded(t *testing.T) {
	res := &scatterResolver{runPages: 1}
	a := New(res, &memSink{}, Config{MaxCacheBytes: 300 * runOverhead, ReuseWindow: time.Hour})
	s := &hooksrv.Session{PID: 3, AppID: "app"}
	ctx := context.Background()
	a.HandleEvent(ctx, ev(s, hooksrv.EventRegister, stratav1.AccessKind_ACCESS_KIND_ALLOC, 1, 0x10000000, 256*4096)) // 256 runs: kept
	a.HandleEvent(ctx, ev(s, hooksrv.EventRegister, stratav1.AccessKind_ACCESS_KIND_ALLOC, 2, 0x20000000, 256*4096)) // no room
	calls := res.calls
	a.HandleEvent(ctx, ev(s, hooksrv.EventAccess, stratav1.AccessKind_ACCESS_KIND_READ, 1, 0x10000000, 256*4096))
	a.HandleEvent(ctx, ev(s, hooksrv.EventAccess, stratav1.AccessKind_ACCESS_KIND_READ, 2, 0x20000000, 256*4096))
	st := a.Stats()
	if res.calls-calls != 1 || st.Reused != 1 || st.CacheSkipped < 1 || st.CacheBytes > 300*runOverhead {
		t.Fatalf("resolutions %d, stats %+v: want block 1 reused, block 2 resolved again, cache within bound", res.calls-calls, st)
	}
	a.HandleEvent(ctx, ev(s, hooksrv.EventFree, stratav1.AccessKind_ACCESS_KIND_FREE, 1, 0x10000000, 256*4096))
	if st := a.Stats(); st.CacheBytes != 0 {
		t.Fatalf("cache holds %d bytes after the cached block was freed", st.CacheBytes)
	}
}

type fullKernel struct{ kernelLog }

func (k *fullKernel) RegisterBlock(Process, uint64, uint64, uint64) error {
	return errors.New("block table full")
}

// TestKernelMirrorErrorsCounted: blocks the kernel side cannot take are
// counted; the records still go out.
func TestKernelMirrorErrorsCounted(t *testing.T) {
	sink := &memSink{}
	a := New(&rangeResolver{}, sink, Config{Kernel: &fullKernel{}})
	s := &hooksrv.Session{PID: 4, AppID: "app"}
	for i := uint64(1); i <= 100; i++ {
		a.HandleEvent(context.Background(), ev(s, hooksrv.EventRegister, stratav1.AccessKind_ACCESS_KIND_ALLOC, i, i<<20, 4096))
	}
	a.Flush()
	if st := a.Stats(); st.KernelErrors != 100 || len(sink.records()) != 100 {
		t.Fatalf("stats %+v, %d records; want 100 kernel errors and 100 records", st, len(sink.records()))
	}
}

// refuseOnce refuses the first registration of block 2, as the tracer does
// while a block's new range still overlaps another's old one, and the
// first move of block 1 (the tracer then keeps it at its old range).
type refuseOnce struct {
	kernelLog
	refused, refusedMove bool
}

// refuse logs op and returns the tracer's overlap error the first time
// *once is false.
func (k *refuseOnce) refuse(once *bool, op string) error {
	if *once {
		return nil
	}
	*once = true
	k.mu.Lock()
	defer k.mu.Unlock()
	k.ops = append(k.ops, op)
	return errors.New("range overlaps a registered block")
}

func (k *refuseOnce) MoveBlock(pid uint32, id, start, end uint64) error {
	if id == 1 {
		if err := k.refuse(&k.refusedMove, "refused-move"); err != nil {
			return err
		}
	}
	return k.kernelLog.MoveBlock(pid, id, start, end)
}

func (k *refuseOnce) RegisterBlock(p Process, id, start, end uint64) error {
	if id == 2 {
		if err := k.refuse(&k.refused, "refused"); err != nil {
			return err
		}
	}
	return k.kernelLog.RegisterBlock(p, id, start, end)
}

// TestKernelMirrorRetriedAtMove: a block whose registration the kernel
// refused is registered at its next move, and moved after that; a block
// whose move was refused is moved at its next move.
func TestKernelMirrorRetriedAtMove(t *testing.T) {
	k := &refuseOnce{}
	a := New(&rangeResolver{}, &memSink{}, Config{Kernel: k})
	s := &hooksrv.Session{PID: 4, AppID: "app"}
	ctx := context.Background()
	a.HandleEvent(ctx, ev(s, hooksrv.EventRegister, stratav1.AccessKind_ACCESS_KIND_ALLOC, 1, 1<<20, 4096))
	a.HandleEvent(ctx, ev(s, hooksrv.EventRegister, stratav1.AccessKind_ACCESS_KIND_ALLOC, 2, 1<<20, 4096))
	a.HandleEvent(ctx, ev(s, hooksrv.EventMove, stratav1.AccessKind_ACCESS_KIND_MOVE, 1, 2<<20, 4096))
	a.HandleEvent(ctx, ev(s, hooksrv.EventMove, stratav1.AccessKind_ACCESS_KIND_MOVE, 2, 3<<20, 4096))
	a.HandleEvent(ctx, ev(s, hooksrv.EventMove, stratav1.AccessKind_ACCESS_KIND_MOVE, 2, 4<<20, 4096))
	a.HandleEvent(ctx, ev(s, hooksrv.EventMove, stratav1.AccessKind_ACCESS_KIND_MOVE, 1, 5<<20, 4096))
	const want = "reg refused refused-move reg move move"
	if got := strings.Join(k.ops, " "); got != want {
		t.Fatalf("kernel ops = %q, want %q", got, want)
	}
	if st := a.Stats(); st.KernelErrors != 2 {
		t.Fatalf("kernel errors %d, want 2", st.KernelErrors)
	}
}
