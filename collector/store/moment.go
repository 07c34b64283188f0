package store

import (
	"cmp"
	"context"
	"fmt"
	"github.com/stratatrace/strata/collector/answer"
	"slices"
	"strconv"
	"sync"
)

// Looking back: what an application's blocks held at one moment of its
// life (the physical map, an RDD's blocks and Trace at a time). A buffer
// of a block (executor, pid, block_id, chunk) is live at t when, of its
// records at or before t that are frees or hold (holdsSQL), those of the
// latest time include one that holds; it then holds those records' pages.
// That is what heldSteps counts at t, so the pages a moment shows of the
// cached RDD blocks add up to the running sum Occupancy draws and the
// peak is taken from.
//
// The default moment of an application (Moment): for one still running
// — a buffer of one of its blocks is live, its latest lifecycle records
// not including a free, as RDDs counts live blocks — now; for one that has
// ended (every buffer freed: removed, evicted, or its session's end), the
// first time at which its cached RDD blocks held the most bytes, the
// maximum over time of heldSteps' running sum over all its buffers.

// Moment resolves mq to a moment of the app's life; see MomentQuery and
// the comment at the top of this file. An app without lifecycle records
// is ErrNotFound; a moment asked for before the app's first record or
// after its last is answered (nothing live before, the last state after).
func (q *querier) Moment(ctx context.Context, mq answer.MomentQuery) (answer.Moment, error) {
	if err := q.check(mq.AppID); err != nil {
		return answer.Moment{}, fmt.Errorf("moment: %w", err)
	}
	base, err := q.momentBase(ctx, mq.AppID)
	if err != nil {
		return answer.Moment{}, err
	}
	m := answer.Moment{FirstNs: base.first, LastNs: base.last, Ended: base.ended}
	held := base.held
	for _, h := range held {
		if h.bytes > int64(m.PeakBytes) {
			m.PeakNs, m.PeakBytes, m.PeakPages = h.t, uint64(h.bytes), uint64(max(h.pages, 0))
		}
	}
	m.Kind = mq.Want
	if m.Kind == answer.MomentDefault {
		m.Default, m.Kind = true, answer.MomentNow
		if m.Ended && m.PeakNs != 0 {
			m.Kind = answer.MomentPeak
		}
	}
	switch m.Kind {
	case answer.MomentPeak:
		if m.PeakNs == 0 {
			return answer.Moment{}, fmt.Errorf("moment %s: %w: its cached RDD blocks never held a page", mq.AppID, ErrNotFound)
		}
		m.AtNs = m.PeakNs
	case answer.MomentAt:
		m.AtNs = mq.At
		if mq.SinceStart {
			m.AtNs = m.FirstNs + mq.At
		}
		if m.AtNs <= 0 {
			return answer.Moment{}, fmt.Errorf("moment %s: %w: time %d is not after 1970", mq.AppID, ErrInvalidQuery, m.AtNs)
		}
	case answer.MomentNow:
	default:
		return answer.Moment{}, fmt.Errorf("moment %s: %w: kind %d", mq.AppID, ErrInvalidQuery, mq.Want)
	}
	// What the cached blocks held at the moment: the running sum's last
	// value at or before it (now: the last value).
	i := len(held)
	if m.AtNs != 0 {
		i, _ = slices.BinarySearchFunc(held, m.AtNs+1, func(h heldTotal, t int64) int { return cmp.Compare(h.t, t) })
	}
	if i > 0 {
		m.Bytes, m.Pages = uint64(max(held[i-1].bytes, 0)), uint64(max(held[i-1].pages, 0))
	}
	return m, nil
}

// momentBase is what Moment reads of an app, whatever the moment asked:
// its first and last lifecycle record, whether it has ended, and what its
// cached blocks held over time. It is kept per app until a batch of the
// app may have been stored (the physical map's stamp), so a map redrawn
// at each zoom or moment does not read it again.
type momentBase struct {
	stamp       int64
	first, last int64
	ended       bool
	held        []heldTotal
}

// momentCache keeps the latest momentBases.
type momentCache struct {
	mu   sync.Mutex
	apps map[string]*momentBase
}

// momentCacheApps bounds the apps momentCache keeps.
const momentCacheApps = 8

// momentBase returns app's momentBase, read again when a batch of it may
// have been stored since it was kept.
func (q *querier) momentBase(ctx context.Context, app string) (*momentBase, error) {
	stamp, err := q.src.physStamp(ctx, app)
	if err != nil {
		return nil, fmt.Errorf("moment %s: %w", app, err)
	}
	c := &q.moments
	c.mu.Lock()
	b := c.apps[app]
	c.mu.Unlock()
	if b != nil && b.stamp == stamp {
		return b, nil
	}
	d := q.src
	scope := lifecycleScope(d, app)
	b = &momentBase{stamp: stamp}
	var n uint64
	err = q.each(ctx, d.sel("min(time_ns), max(time_ns), count(*)")+" FROM records WHERE "+scope,
		func(r row) { b.first, b.last, n = r.i64(), r.i64(), r.u64() })
	if err != nil {
		return nil, fmt.Errorf("query moment %s: %w", app, err)
	}
	if n == 0 {
		return nil, fmt.Errorf("moment %s: %w: no lifecycle records", app, ErrNotFound)
	}
	// Live buffers now, as RDDs counts live blocks: a buffer's latest
	// records do not include a free.
	free := "access_kind = " + itoa(accessFree)
	live := d.sel("count(*)") + ` FROM (
	SELECT executor_id, pid, block_id, chunk, ` + d.argMax() + `(f, time_ns) AS freed FROM (
		SELECT executor_id, pid, block_id, chunk, time_ns, max(CASE WHEN ` + free + ` THEN 1 ELSE 0 END) AS f
		FROM records WHERE ` + scope + ` GROUP BY executor_id, pid, block_id, chunk, time_ns
	)` + d.as("bt") + ` GROUP BY executor_id, pid, block_id, chunk
)` + d.as("bf") + ` WHERE freed = 0`
	var liveBufs uint64
	if err := q.each(ctx, live, func(r row) { liveBufs = r.u64() }); err != nil {
		return nil, fmt.Errorf("query live buffers %s: %w", app, err)
	}
	b.ended = liveBufs == 0
	steps, _, _, _, err := q.heldSteps(ctx, app)
	if err != nil {
		return nil, err
	}
	b.held = heldTotals(steps)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.apps == nil || len(c.apps) >= momentCacheApps {
		c.apps = map[string]*momentBase{}
	}
	c.apps[app] = b
	return b, nil
}

// heldTotal is what every cached block of an app held together from time
// t on.
type heldTotal struct {
	t            int64
	pages, bytes int64
}

// heldTotals is the running sum of steps over every buffer, one value per
// time, in time order.
func heldTotals(steps []heldStep) []heldTotal {
	steps = slices.Clone(steps)
	slices.SortStableFunc(steps, func(a, b heldStep) int { return cmp.Compare(a.t, b.t) })
	var out []heldTotal
	var pages, bytes int64
	for i, s := range steps {
		pages, bytes = pages+s.dPages, bytes+s.dBytes
		if i+1 < len(steps) && steps[i+1].t == s.t {
			continue // the rest of this time first
		}
		out = append(out, heldTotal{t: s.t, pages: pages, bytes: bytes})
	}
	return out
}

// atRecsWhere selects, among the records of scope, those that the buffers
// live at t hold then: for each buffer (executor_id, pid, block_id,
// chunk), its records of the latest time at or before t among its frees
// and its records that hold (holdsSQL), but the frees. A buffer whose
// latest such time holds only a free holds nothing.
func atRecsWhere(d dialect, scope string, t int64) string {
	free := "access_kind = " + itoa(accessFree)
	held := scope + " AND time_ns <= " + strconv.FormatInt(t, 10) + " AND (" + free + " OR " + holdsSQL(scope) + ")"
	return held + ` AND access_kind != ` + itoa(accessFree) + ` AND (executor_id, pid, block_id, chunk, time_ns) IN (
	SELECT executor_id, pid, block_id, chunk, max(time_ns) FROM records
	WHERE ` + held + ` GROUP BY executor_id, pid, block_id, chunk)`
}

// momentRecsWhere selects the records the buffers of scope hold at t:
// atRecsWhere, or with t 0 (now) the live buffers' (liveRecsWhere).
func momentRecsWhere(d dialect, scope string, t int64) string {
	if t == 0 {
		return liveRecsWhere(d, scope)
	}
	return atRecsWhere(d, scope, t)
}
