package resolver

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stratatrace/strata/agent/procmem"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// Pool lends its Resolvers (whose scratch buffers cannot be shared) to
// concurrent callers, so that hook sessions and fault samples resolve in
// parallel, and shares them fairly between tenants (Tenant: a hook peer's
// uid and pid). It is safe for concurrent use.
//
// Fairness: a request is resolved in slices of at most SlicePages pages,
// cut at multiples of that many pages in the address space (a multiple of
// 2 MiB, so a PMD-mapped THP is never cut), and the caller gives its
// Resolver back after each slice. A free Resolver goes to the waiting
// tenants in turn: round-robin over uids, and within a uid round-robin over
// pids, each pid's own slices in order. A peer that registers a 16 GiB
// range therefore holds a Resolver for one slice at a time, and a small
// peer waits at most one slice per other waiting tenant, never the whole
// range. While more than one uid asks for Resolvers (within a second),
// each uid holds at most half of them (at least one), so a peer resolving
// without pause leaves CPU to the others' records and stream too; a uid
// alone uses them all. Slices of one request are joined back into the
// runs one Resolver would have produced (runs continuing across a cut are
// merged).
//
// Budget (WithUIDBudget): each uid may also be held to a share of one CPU,
// counted as the CPU time of its slices (the resolving thread's own):
// it may spend one second at once, then its share each second; past that
// its slices wait for the budget to refill, whether or not others wait,
// so a peer that keeps re-registering huge ranges holds the agent to its
// share and no more, while its own small blocks still resolve in turn.
//
// Each kind of degraded answer (a Result.Warning: hidden PFNs, unreadable
// kpageflags) is logged once, at warn level, the first time a Resolver
// gives it.
type Pool struct {
	q          fairQueue
	slicePages uint64
	pageSize   uint64
	log        *slog.Logger

	mu     sync.Mutex
	warned map[string]bool
}

// Tenant is whom a resolution is for: the pool takes turns between uids,
// then between pids of one uid. PID is also the process whose memory is
// read.
type Tenant struct {
	UID, PID uint32
}

// DefaultSlicePages is the slice size unless WithSlicePages says otherwise:
// 64 MiB of 4 KiB pages, about 10 ms of resolving touched base pages on the
// development VM (1.5-2 M pages per CPU-second), less for untouched or THP
// memory.
const DefaultSlicePages = 16384

// PoolOption tunes NewPool.
type PoolOption func(*Pool)

// WithSlicePages sets the slice size in pages, rounded up to a multiple of
// 512 (n < 1 keeps the default).
func WithSlicePages(n int) PoolOption {
	return func(p *Pool) {
		if n > 0 {
			p.slicePages = (uint64(n) + 511) &^ 511
		}
	}
}

// WithUIDBudget holds each uid to ms milliseconds of resolving per second
// (1000 is one CPU), with a burst of one second; ms <= 0 sets no bound.
func WithUIDBudget(ms int) PoolOption {
	return func(p *Pool) {
		if ms > 0 {
			p.q.rate = float64(ms) / 1000
		}
	}
}

// BudgetSpent is how many times a uid spent its budget (WithUIDBudget)
// and its slices began to wait for it to refill.
func (p *Pool) BudgetSpent() uint64 {
	p.q.mu.Lock()
	defer p.q.mu.Unlock()
	return p.q.spent
}

// NewPool opens n Resolvers on fs with opts (n < 1 means one). Give it one
// per CPU: a Resolver is CPU-bound while it reads.
func NewPool(fs procmem.FS, n int, opts Options, log *slog.Logger, popts ...PoolOption) (*Pool, error) {
	n = max(n, 1)
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Pool{log: log, warned: map[string]bool{}, slicePages: DefaultSlicePages, pageSize: procmem.PageSize()}
	p.q = newFairQueue()
	p.q.spentBy = func(uid uint32) {
		log.Warn("a peer uid spent its page resolution budget; its ranges now resolve at its share", "uid", uid)
	}
	for _, o := range popts {
		o(p)
	}
	for range n {
		r, err := New(fs, opts)
		if err != nil {
			p.Close()
			return nil, fmt.Errorf("open resolver pool: %w", err)
		}
		p.q.add(r)
	}
	return p, nil
}

// ResolveBatch is ResolveFor on behalf of pid, with uid 0.
func (p *Pool) ResolveBatch(pid int, reqs []Request, out []Result) error {
	return p.ResolveFor(Tenant{PID: uint32(pid)}, reqs, out)
}

// ResolveFor is Resolver.ResolveBatch of t.PID on a free Resolver, taken in
// t's turn and given back after every slice (see the Pool comment). One
// difference: when it fails as a whole (the process is gone), every
// out[i].Err is that error too, so callers can read the results alone.
func (p *Pool) ResolveFor(t Tenant, reqs []Request, out []Result) error {
	if len(out) < len(reqs) {
		return fmt.Errorf("resolve batch: %d results for %d requests", len(out), len(reqs))
	}
	pieces := p.slice(reqs)
	res := make([]Result, len(pieces))
	for lo := 0; lo < len(pieces); {
		hi, pages := lo, uint64(0)
		for hi < len(pieces) && (hi == lo || pages+pieces[hi].pages <= p.slicePages) {
			pages += pieces[hi].pages
			hi++
		}
		sreqs := make([]Request, hi-lo)
		for i := range sreqs {
			sreqs[i] = pieces[lo+i].req
		}
		r := p.q.get(t)
		// The slice's cost is its thread's CPU time, not its wall time: on
		// a busy machine the slice waits for a CPU without spending any.
		runtime.LockOSThread()
		c0 := threadCPU()
		err := r.ResolveBatch(int(t.PID), sreqs, res[lo:hi])
		used := threadCPU() - c0
		runtime.UnlockOSThread()
		p.q.put(t, r, used)
		if err != nil {
			for i := range reqs {
				out[i] = Result{Err: err}
			}
			return err
		}
		lo = hi
	}
	for i := range reqs {
		out[i] = Result{}
	}
	for i, pc := range pieces {
		join(&out[pc.of], &res[i], p.pageSize)
	}
	for i := range reqs {
		if w := out[i].Warning; w != nil {
			p.warnOnce(w)
		}
	}
	return nil
}

// piece is one slice-sized part of request of.
type piece struct {
	req   Request
	of    int
	pages uint64
}

// slice cuts every request at multiples of slicePages pages.
func (p *Pool) slice(reqs []Request) []piece {
	ps, step := p.pageSize, p.slicePages*p.pageSize
	out := make([]piece, 0, len(reqs))
	for i, q := range reqs {
		last := q.VAddr + q.Length - 1
		if q.Length == 0 || last < q.VAddr { // the Resolver says why
			out = append(out, piece{req: q, of: i, pages: 1})
			continue
		}
		for a := q.VAddr; ; {
			start := a &^ (ps - 1)
			cut := (start/step + 1) * step // next multiple of the slice
			if cut == 0 || cut > last {
				out = append(out, piece{req: Request{VAddr: a, Length: last - a + 1, CPUNode: q.CPUNode}, of: i, pages: (last&^(ps-1)-start)/ps + 1})
				break
			}
			out = append(out, piece{req: Request{VAddr: a, Length: cut - a, CPUNode: q.CPUNode}, of: i, pages: (cut - start) / ps})
			a = cut
		}
	}
	return out
}

// join appends slice result s to request result r.
func join(r, s *Result, pageSize uint64) {
	if r.Err != nil {
		return
	}
	if s.Err != nil {
		*r = Result{Err: s.Err}
		return
	}
	runs := s.Runs
	if k := len(r.Runs); k > 0 && len(runs) > 0 {
		if m := mergeRuns(r.Runs[k-1], runs[0], pageSize); m != nil {
			r.Runs[k-1] = m
			runs = runs[1:]
		}
	}
	r.Runs = append(r.Runs, runs...)
	r.Pages += s.Pages
	r.Present += s.Present
	r.Swapped += s.Swapped
	r.Unmapped += s.Unmapped
	r.Hidden += s.Hidden
	r.Raced += s.Raced
	r.THP += s.THP
	switch {
	case r.Warning == nil:
		r.Warning = s.Warning
	case s.Warning != nil && s.Warning.Error() != r.Warning.Error():
		r.Warning = errors.Join(r.Warning, s.Warning)
	}
}

// mergeRuns returns the one run a Resolver makes of a followed by b when
// the cut between two slices fell inside it, or nil when a and b are
// distinct runs by the run rule (the same rule as Resolver.add).
func mergeRuns(a, b *stratav1.PageRun, pageSize uint64) *stratav1.PageRun {
	n := uint64(a.GetCount())
	if a.GetState() != b.GetState() || a.GetKpageflags() != b.GetKpageflags() || a.GetKpagecount() != b.GetKpagecount() ||
		a.GetNumaNode() != b.GetNumaNode() || a.GetFolioPages() != b.GetFolioPages() || a.GetSwapType() != b.GetSwapType() ||
		a.GetVaddr()+n*pageSize != b.GetVaddr() || n+uint64(b.GetCount()) >= 1<<31 {
		return nil
	}
	if a.GetState()&uint32(stratav1.PageState_PAGE_STATE_SWAPPED) != 0 && b.GetSwapOffset() != a.GetSwapOffset()+n {
		return nil
	}
	if f := uint64(b.GetFolioPages()); f != 0 && b.GetPfn()%f == 0 {
		return nil // b starts a folio
	}
	deltas, ok := stratav1.JoinPFNs(a, b)
	if !ok || deltas != nil && a.GetFolioPages() != 0 {
		return nil // a folio's PFNs never step
	}
	return &stratav1.PageRun{Vaddr: a.GetVaddr(), Count: a.GetCount() + b.GetCount(), State: a.GetState(), Pfn: a.GetPfn(),
		Kpageflags: a.GetKpageflags(), FolioPages: a.GetFolioPages(), Kpagecount: a.GetKpagecount(),
		NumaNode: a.GetNumaNode(), SwapType: a.GetSwapType(), SwapOffset: a.GetSwapOffset(), PfnDeltas: deltas}
}

func (p *Pool) warnOnce(w error) {
	p.mu.Lock()
	first := !p.warned[w.Error()]
	p.warned[w.Error()] = true
	p.mu.Unlock()
	if first {
		p.log.Warn("page resolution degraded", "reason", w)
	}
}

// Close closes the Resolvers; call it when no ResolveFor runs.
func (p *Pool) Close() error {
	p.q.mu.Lock()
	free := p.q.free
	p.q.free = nil
	if p.q.timer != nil {
		p.q.timer.Stop()
	}
	p.q.mu.Unlock()
	var errs []error
	for _, r := range free {
		errs = append(errs, r.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close resolver pool: %w", err)
	}
	return nil
}

// contendedWindow is how recently another uid must have asked for a
// Resolver for a uid to be held to its share.
const contendedWindow = time.Second

// fairQueue hands free Resolvers to waiting tenants in turn: round-robin
// over uids, within a uid round-robin over pids, FIFO within a pid. While
// another uid has asked for a Resolver within contendedWindow, a uid holds
// at most its share (half the Resolvers, at least one), even when more are
// free: what it leaves idle is CPU for the other peers' records, spool and
// stream, not only their page reads. A uid alone on the node uses them all.
type fairQueue struct {
	mu    sync.Mutex
	n     int // Resolvers in all
	free  []*Resolver
	uids  []*uidQueue // uids with waiters, in turn order
	turn  int         // index into uids of the next uid served
	byUID map[uint32]*uidQueue
	busy  map[uint32]int       // Resolvers held per uid
	asked map[uint32]time.Time // last request per uid
	timer *time.Timer          // re-dispatches when a share may have lapsed
	now   func() time.Time
	// afterFunc arms timer: time.AfterFunc (tests fire it themselves).
	afterFunc func(time.Duration, func()) *time.Timer
	// took, when set (tests), is told under mu of each Resolver handed out.
	took func(Tenant)
	// held, when set (tests), is told under mu the CPU time t's slice used.
	held func(t Tenant, d time.Duration)

	rate    float64               // budget: seconds of Resolver time per second per uid; 0: none
	burst   float64               // budget: seconds a uid may spend at once (budgetBurst)
	budget  map[uint32]*allowance // uids that spent some of it
	spent   uint64                // times a uid went into debt
	spentBy func(uint32)          // told (outside mu) when a uid goes into debt, at most once a minute per uid
	warned  map[uint32]time.Time
}

// budgetBurst is what a uid may spend at once before its share applies.
const budgetBurst = 1.0 // seconds

// allowance is a uid's budget: seconds it may still spend (negative: in
// debt), as of at.
type allowance struct {
	left float64
	at   time.Time
}

type uidQueue struct {
	uid   uint32
	pids  []*pidQueue
	turn  int
	byPID map[uint32]*pidQueue
}

type pidQueue struct {
	pid     uint32
	waiters []chan *Resolver
}

func newFairQueue() fairQueue {
	return fairQueue{byUID: map[uint32]*uidQueue{}, busy: map[uint32]int{}, asked: map[uint32]time.Time{},
		now: time.Now, afterFunc: time.AfterFunc, budget: map[uint32]*allowance{},
		warned: map[uint32]time.Time{}, burst: budgetBurst}
}

// add puts r in the free list; call it while building the queue.
func (q *fairQueue) add(r *Resolver) {
	q.free = append(q.free, r)
	q.n++
}

// get returns a Resolver, waiting for t's turn and share.
func (q *fairQueue) get(t Tenant) *Resolver {
	return <-q.wait(t)
}

// wait queues t for a Resolver and returns the channel it comes on: at
// once, before wait returns, when t's turn and share allow.
func (q *fairQueue) wait(t Tenant) <-chan *Resolver {
	ch := make(chan *Resolver, 1)
	q.mu.Lock()
	q.asked[t.UID] = q.now()
	u := q.byUID[t.UID]
	if u == nil {
		u = &uidQueue{uid: t.UID, byPID: map[uint32]*pidQueue{}}
		q.byUID[t.UID] = u
		q.uids = append(q.uids, u)
	}
	pq := u.byPID[t.PID]
	if pq == nil {
		pq = &pidQueue{pid: t.PID}
		u.byPID[t.PID] = pq
		u.pids = append(u.pids, pq)
	}
	pq.waiters = append(pq.waiters, ch)
	q.dispatch()
	q.mu.Unlock()
	return ch
}

// put gives back a Resolver t held, charging used (the CPU time it
// spent) to t's uid when budgets are on.
func (q *fairQueue) put(t Tenant, r *Resolver, used time.Duration) {
	q.mu.Lock()
	now := q.now()
	if q.busy[t.UID]--; q.busy[t.UID] <= 0 {
		delete(q.busy, t.UID)
	}
	var tell bool
	if q.held != nil {
		q.held(t, used)
	}
	if q.rate > 0 {
		a := q.allowance(t.UID, now)
		wasOK := a.left >= 0
		a.left -= used.Seconds()
		if wasOK && a.left < 0 {
			q.spent++
			if w, ok := q.warned[t.UID]; !ok || now.Sub(w) >= time.Minute {
				q.warned[t.UID] = now
				tell = q.spentBy != nil
			}
		}
	}
	q.free = append(q.free, r)
	q.dispatch()
	q.mu.Unlock()
	if tell {
		q.spentBy(t.UID)
	}
}

// allowance returns uid's budget refilled to now; the caller holds mu.
func (q *fairQueue) allowance(uid uint32, now time.Time) *allowance {
	a := q.budget[uid]
	if a == nil {
		a = &allowance{left: q.burst, at: now}
		q.budget[uid] = a
	}
	if d := now.Sub(a.at).Seconds(); d > 0 {
		a.left = min(q.burst, a.left+d*q.rate)
		a.at = now
	}
	return a
}

// overBudget returns how long uid must wait for its budget to refill to
// zero, or 0 when it may take a Resolver; it forgets full allowances of
// uids that hold none. The caller holds mu.
func (q *fairQueue) overBudget(uid uint32, now time.Time) time.Duration {
	if q.rate <= 0 || q.budget[uid] == nil {
		return 0
	}
	a := q.allowance(uid, now)
	if a.left >= 0 {
		if a.left >= q.burst && q.busy[uid] == 0 {
			delete(q.budget, uid)
		}
		return 0
	}
	return time.Duration(-a.left / q.rate * float64(time.Second))
}

// dispatch hands free Resolvers to eligible waiters in turn; the caller
// holds mu. When a waiter is left waiting beside a free Resolver (its uid
// is at its share), a timer dispatches again once the share may lapse.
func (q *fairQueue) dispatch() {
	now := q.now()
	for len(q.free) > 0 && len(q.uids) > 0 {
		k, refill := q.eligible(now)
		if k < 0 {
			if q.timer == nil {
				wait := contendedWindow / 4
				if refill > 0 {
					wait = min(wait, refill)
				}
				q.timer = q.afterFunc(wait, func() {
					q.mu.Lock()
					q.timer = nil
					q.dispatch()
					q.mu.Unlock()
				})
			}
			return
		}
		u := q.uids[k]
		u.turn %= len(u.pids)
		pq := u.pids[u.turn]
		ch := pq.waiters[0]
		pq.waiters = pq.waiters[1:]
		if len(pq.waiters) == 0 { // the next pid moves into this index
			u.pids = slices.Delete(u.pids, u.turn, u.turn+1)
			delete(u.byPID, pq.pid)
		} else {
			u.turn++
		}
		q.turn = k + 1
		if len(u.pids) == 0 {
			q.uids = slices.Delete(q.uids, k, k+1)
			delete(q.byUID, u.uid)
			q.turn = k
		}
		r := q.free[len(q.free)-1]
		q.free = q.free[:len(q.free)-1]
		q.busy[u.uid]++
		ch <- r
		if q.took != nil {
			q.took(Tenant{UID: u.uid, PID: pq.pid})
		}
	}
}

// eligible returns the index in uids of the next uid in turn that may
// take a Resolver now, or -1 and the shortest wait for a uid's budget to
// refill (0 when none waits on its budget).
func (q *fairQueue) eligible(now time.Time) (int, time.Duration) {
	share := max(1, q.n/2)
	var refill time.Duration
	for i := range q.uids {
		k := (q.turn + i) % len(q.uids)
		uid := q.uids[k].uid
		if w := q.overBudget(uid, now); w > 0 {
			if refill == 0 || w < refill {
				refill = w
			}
			continue
		}
		if q.busy[uid] < share || !q.contended(uid, now) {
			return k, 0
		}
	}
	return -1, refill
}

// contended reports whether a uid other than uid asked for a Resolver
// within contendedWindow; it forgets uids that did not.
func (q *fairQueue) contended(uid uint32, now time.Time) bool {
	for other, at := range q.asked {
		if now.Sub(at) >= contendedWindow && q.busy[other] == 0 && q.byUID[other] == nil {
			delete(q.asked, other)
			continue
		}
		if other != uid {
			return true
		}
	}
	return false
}

// threadCPU is the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID).
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
