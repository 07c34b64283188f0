package resolver

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"google.golang.org/protobuf/proto"

	"github.com/stratatrace/strata/agent/procmem"
	"golang.org/x/sys/unix"
)

// reserve maps n bytes of this process that are never touched.
func reserve(t testing.TB, n int) uint64 {
	t.Helper()
	mem, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(mem) })
	return uint64(uintptr(unsafe.Pointer(&mem[0])))
}

// otherProcess starts a process that sleeps until the test ends.
func otherProcess(t testing.TB) int {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd.Process.Pid
}

// TestPoolSmallPeerNotStarvedByHugeRange is the regression for a peer
// whose huge ranges held every Resolver for minutes: with one Resolver,
// a peer resolving 16 GiB (the largest range the hook server accepts) and
// a small peer in another process arriving just after it, every one of
// the small peer's resolutions must finish before the huge one does.
func TestPoolSmallPeerNotStarvedByHugeRange(t *testing.T) {
	const huge = 16 << 30
	base := reserve(t, huge)
	small := otherProcess(t)
	p, err := NewPool(procmem.Default(), 1, Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// The small peer arrives once the huge range holds the Resolver.
	hugeHolds := make(chan struct{})
	var once sync.Once
	p.q.took = func(tn Tenant) {
		if tn.PID == uint32(os.Getpid()) {
			once.Do(func() { close(hugeHolds) })
		}
	}

	var hugeDone atomic.Bool
	hugeErr := make(chan error, 1)
	go func() {
		out := make([]Result, 1)
		err := p.ResolveBatch(os.Getpid(), []Request{{VAddr: base, Length: huge, CPUNode: -1}}, out)
		if err == nil && out[0].Pages != huge/procmem.PageSize() {
			err = fmt.Errorf("huge range: %d pages, want %d", out[0].Pages, huge/procmem.PageSize())
		}
		hugeDone.Store(true)
		hugeErr <- err
	}()
	<-hugeHolds
	var before int
	for range 5 {
		out := make([]Result, 1)
		if err := p.ResolveBatch(small, []Request{{VAddr: 0x10000, Length: 64 << 10, CPUNode: -1}}, out); err != nil {
			t.Fatal(err)
		}
		if !hugeDone.Load() {
			before++
		}
	}
	if err := <-hugeErr; err != nil {
		t.Fatal(err)
	}
	if before != 5 {
		t.Fatalf("%d of the small peer's 5 resolutions finished before the 16 GiB one; want all 5 (taking turns)", before)
	}
}

// served returns which of waits (nil: already served) holds a Resolver,
// failing t unless exactly one does: the queue hands a Resolver out before
// the put or wait that frees it or asks for it returns.
func served(t *testing.T, waits []<-chan *Resolver) (int, *Resolver) {
	t.Helper()
	k, got := -1, (*Resolver)(nil)
	for i, ch := range waits {
		if ch == nil {
			continue
		}
		select {
		case r := <-ch:
			if k >= 0 {
				t.Fatalf("waiters %d and %d both served", k, i)
			}
			k, got = i, r
		default:
		}
	}
	if k < 0 {
		t.Fatal("no waiter served")
	}
	return k, got
}

// TestFairQueueTurns: a free Resolver goes round-robin over uids, then
// over pids of a uid, FIFO within a pid.
func TestFairQueueTurns(t *testing.T) {
	q := newFairQueue()
	// Waiters in arrival order: uid 1 has pids 10 (twice) and 11; uid 2 pid 20.
	arrivals := []Tenant{{1, 10}, {1, 10}, {1, 11}, {2, 20}}
	waits := make([]<-chan *Resolver, len(arrivals))
	for i, tn := range arrivals {
		waits[i] = q.wait(tn) // no Resolver yet: queued in this order
	}
	q.n = 1
	q.put(Tenant{UID: 99}, &Resolver{}, 0) // one Resolver enters; each holder passes it on
	var seq []Tenant
	for range arrivals {
		k, r := served(t, waits)
		seq = append(seq, arrivals[k])
		waits[k] = nil
		q.put(arrivals[k], r, 0)
	}
	want := []Tenant{{1, 10}, {2, 20}, {1, 11}, {1, 10}}
	if !slices.Equal(seq, want) {
		t.Fatalf("turns = %v, want %v", seq, want)
	}
}

// TestPoolSlicesJoinIntoTheSameRuns: resolving in slices of 2 MiB yields
// exactly the runs one Resolver makes of the whole range: runs cut by a
// slice boundary are joined again, scattered PFNs keep their deltas.
func TestPoolSlicesJoinIntoTheSameRuns(t *testing.T) {
	const n = 4096 // 16 MiB of 4 KiB pages, 8 slices
	ps := int(procmem.PageSize())
	mem, err := unix.Mmap(-1, 0, n*ps, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	if err := unix.Madvise(mem, unix.MADV_NOHUGEPAGE); err != nil {
		t.Fatal(err)
	}
	// Touch pages in a shuffled order, leaving holes, so PFNs scatter and
	// present and absent runs alternate across slice boundaries.
	idx := rand.Perm(n)
	sort.Ints(idx[:n/8]) // some stretches in order: consecutive PFNs
	for _, i := range idx {
		if i%97 != 0 {
			mem[i*ps] = 1
		}
	}
	base := uint64(uintptr(unsafe.Pointer(&mem[0])))
	req := []Request{{VAddr: base + 100, Length: uint64(n*ps) - 200, CPUNode: -1}}

	r, err := New(procmem.Default(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	p, err := NewPool(procmem.Default(), 1, Options{}, nil, WithSlicePages(512))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for attempt := 0; ; attempt++ {
		whole := make([]Result, 1)
		sliced := make([]Result, 1)
		if err := r.ResolveBatch(os.Getpid(), req, whole); err != nil {
			t.Fatal(err)
		}
		if err := p.ResolveBatch(os.Getpid(), req, sliced); err != nil {
			t.Fatal(err)
		}
		w, s := whole[0], sliced[0]
		same := len(w.Runs) == len(s.Runs) && w.Pages == s.Pages && w.Present == s.Present
		for i := 0; same && i < len(w.Runs); i++ {
			same = proto.Equal(w.Runs[i], s.Runs[i])
		}
		if same {
			if len(w.Runs) < 16 {
				t.Fatalf("only %d runs: the test needs runs crossing slice boundaries", len(w.Runs))
			}
			return
		}
		if attempt == 3 { // a page may move between two reads; not four times
			t.Fatalf("sliced: %d runs %d pages; whole: %d runs %d pages", len(s.Runs), s.Pages, len(w.Runs), w.Pages)
		}
	}
}

// TestFairQueueShareWhileContended: while another uid asked within a
// second, a uid holds at most half the Resolvers, even with one free, and
// the queue arms its timer; once the other uid is quiet, the timer's
// dispatch gives the uid the free one. The test's clock and timer are its
// own: it fires the timer itself.
func TestFairQueueShareWhileContended(t *testing.T) {
	q := newFairQueue()
	q.add(&Resolver{})
	q.add(&Resolver{})
	now := time.Unix(1000, 0)
	q.now = func() time.Time { return now } // read under q.mu, on this goroutine only
	var fire func()
	q.afterFunc = func(d time.Duration, f func()) *time.Timer {
		if d <= 0 || d > contendedWindow {
			t.Errorf("re-dispatch armed for %v, want within %v", d, contendedWindow)
		}
		fire = f
		tm := time.NewTimer(time.Hour) // stands in for the timer; never fires
		t.Cleanup(func() { tm.Stop() })
		return tm
	}
	a1, a2, b := Tenant{UID: 1, PID: 10}, Tenant{UID: 1, PID: 11}, Tenant{UID: 2, PID: 20}
	q.put(b, q.get(b), 0) // uid 2 asked just now
	first := q.get(a1)
	got := q.wait(a2)
	select {
	case <-got:
		t.Fatal("uid 1 took a second Resolver while uid 2 is active")
	default:
	}
	if fire == nil {
		t.Fatal("a waiter was left beside a free Resolver and no re-dispatch was armed")
	}
	now = now.Add(2 * contendedWindow) // uid 2 has been quiet since
	fire()
	select {
	case r := <-got:
		q.put(a2, r, 0)
	default:
		t.Fatal("uid 1 alone did not get the free Resolver when the timer fired")
	}
	q.put(a1, first, 0)
	if len(q.free) != 2 || len(q.busy) != 0 || q.timer != nil {
		t.Fatalf("free %d busy %v timer %v, want both back and no timer", len(q.free), q.busy, q.timer)
	}
}

// TestFairQueueUIDBudget: a uid that held a Resolver for longer than its
// burst waits, even beside a free Resolver and with no other uid asking,
// until its share refills the debt; another uid is served at once
// meanwhile; the debt is counted once and told once.
func TestFairQueueUIDBudget(t *testing.T) {
	q := newFairQueue()
	q.rate = 0.25 // a quarter of a CPU
	var told []uint32
	q.spentBy = func(uid uint32) { told = append(told, uid) }
	q.add(&Resolver{})
	q.add(&Resolver{})
	now := time.Unix(1000, 0)
	q.now = func() time.Time { return now }
	var fire func()
	var armed time.Duration
	q.afterFunc = func(d time.Duration, f func()) *time.Timer {
		fire, armed = f, d
		tm := time.NewTimer(time.Hour)
		t.Cleanup(func() { tm.Stop() })
		return tm
	}
	a, b := Tenant{UID: 1, PID: 10}, Tenant{UID: 2, PID: 20}
	r := q.get(a)
	q.put(a, r, 1500*time.Millisecond) // 0.5 s past its burst
	got := q.wait(a)
	select {
	case <-got:
		t.Fatal("uid 1 took a Resolver in debt")
	default:
	}
	if fire == nil || armed <= 0 || armed > contendedWindow/4 {
		t.Fatalf("re-dispatch armed for %v, want within %v", armed, contendedWindow/4)
	}
	q.put(b, q.get(b), 0)                  // another uid is served at once
	now = now.Add(1900 * time.Millisecond) // the debt (0.5 s at 0.25/s) needs 2 s
	fire()
	select {
	case <-got:
		t.Fatal("uid 1 served before its debt was repaid")
	default:
	}
	now = now.Add(100 * time.Millisecond)
	q.timer = nil // the test's timer stands in for one that fired
	fire()
	select {
	case r := <-got:
		q.put(a, r, 0)
	default:
		t.Fatal("uid 1 not served once its debt was repaid")
	}
	if q.spent != 1 || len(told) != 1 || told[0] != 1 {
		t.Fatalf("spent %d, told %v; want one debt of uid 1", q.spent, told)
	}
}

// TestPoolUIDBudgetBoundsResolving: a peer resolving touched memory back
// to back is stretched by its budget to at least its resolving CPU time
// (what it was charged, less the burst and the one slice that may overdraw
// it) over its share, while a peer of another uid still resolves a small
// range within a slice's time. The peer resolves until it has been charged
// four bursts and has gone into debt, however fast this machine reads
// pagemap; its share, 2% of a CPU, is well below what even a loaded
// machine gives it, so that it does go into debt.
func TestPoolUIDBudgetBoundsResolving(t *testing.T) {
	const size, maxRounds = 256 << 20, 200
	const burst = 10 * time.Millisecond
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	unix.Madvise(mem, unix.MADV_NOHUGEPAGE) // base pages: the costly case
	for i := 0; i < size; i += 4096 {
		mem[i] = 1
	}
	base := uint64(uintptr(unsafe.Pointer(&mem[0])))
	small := otherProcess(t)
	peer := Tenant{UID: 1000, PID: uint32(os.Getpid())}
	var work, slice time.Duration // the peer's time holding a Resolver, as charged, and its largest charge
	resolveAll := func(p *Pool) time.Duration {
		start := time.Now()
		for range maxRounds {
			p.q.mu.Lock()
			charged := work
			p.q.mu.Unlock()
			if charged >= 4*burst && p.BudgetSpent() > 0 {
				break
			}
			out := make([]Result, 1)
			if err := p.ResolveFor(peer, []Request{{VAddr: base, Length: size, CPUNode: -1}}, out); err != nil {
				t.Fatal(err)
			}
			if out[0].Present != size/4096 {
				t.Fatalf("%d pages present of %d", out[0].Present, size/4096)
			}
		}
		return time.Since(start)
	}

	const share = 0.02
	p, err := NewPool(procmem.Default(), 1, Options{}, nil, WithUIDBudget(int(share*1000)))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.q.burst = burst.Seconds()
	p.q.held = func(tn Tenant, d time.Duration) {
		if tn == peer {
			work += d
			slice = max(slice, d)
		}
	}
	done := make(chan time.Duration, 1)
	go func() { done <- resolveAll(p) }()
	var smallWorst time.Duration
	for {
		select {
		case took := <-done:
			p.q.mu.Lock()
			want := time.Duration(float64(work-burst-slice) / share * 0.9)
			p.q.mu.Unlock()
			t.Logf("resolving %v (slices up to %v), at %.0f%% of a CPU %v (%d debts), the other uid's worst wait %v",
				work, slice, share*100, took, p.BudgetSpent(), smallWorst)
			if took < want {
				t.Fatalf("the budgeted peer took %v for %v of resolving: want at least %v at its share", took, work, want)
			}
			if p.BudgetSpent() == 0 {
				t.Fatal("no debt counted")
			}
			if smallWorst > 300*time.Millisecond {
				t.Fatalf("the other uid waited %v for one page", smallWorst)
			}
			return
		default:
		}
		out := make([]Result, 1)
		s := time.Now()
		if err := p.ResolveFor(Tenant{UID: 2000, PID: uint32(small)}, []Request{{VAddr: 0x400000, Length: 4096, CPUNode: -1}}, out); err != nil {
			t.Fatal(err)
		}
		smallWorst = max(smallWorst, time.Since(s))
		time.Sleep(20 * time.Millisecond)
	}
}
