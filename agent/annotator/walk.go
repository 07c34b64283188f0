package annotator

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/stratatrace/strata/agent/hooksrv"
	"github.com/stratatrace/strata/agent/resolver"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// This file holds what deserialized blocks and cached DataFrame columns
// add to the registry: each session's GC epoch, each block's latest walk,
// the records walks make and their mirror in the kernel (see the package
// comment).

// session is what the annotator keeps of a hook session.
type session struct {
	started bool   // its SessionStart was seen (Processes lists it)
	gcEpoch uint32 // the highest GC count any of its frames named
	// walked are its object-graph blocks whose latest walk is not stale,
	// by hook id: those a CHECKED speaks for.
	walked map[uint64]*liveBlock
}

// saw raises the session's GC epoch to e: a frame named it, so that many
// collections have finished.
func (ss *session) saw(e uint32) { ss.gcEpoch = max(ss.gcEpoch, e) }

// usable reports whether lb's walk may stand for its data now: an object
// graph's when it is not stale and holds at the session's latest GC epoch,
// a cached batch column's always (the hook sends a new one when a
// collection moved a buffer, before anything else).
func (ss *session) usable(lb *liveBlock) bool {
	if lb.walk == nil || lb.walk.State == hooksrv.WalkStale {
		return false
	}
	return lb.block.CachedBatch || lb.holds >= ss.gcEpoch
}

// firstBuffer is the detail of a cached batch column's record whose runs
// are its range alone: the column's buffer in the block's first batch.
const firstBuffer = "the first batch's buffer; the column's buffers follow"

// session returns the state of s, made on first sight; the caller holds mu.
func (a *Annotator) session(s *hooksrv.Session) *session {
	ss := a.sessions[s]
	if ss == nil {
		ss = &session{walked: map[uint64]*liveBlock{}}
		a.sessions[s] = ss
	}
	return ss
}

// resolveWalk fills rec's pages with those of walk w of block b (its
// walkRanges), one request each, in one call: the resolver reads
// neighbouring extents together. An extent that cannot be resolved leaves
// its pages out and rec's resolve_error says why.
func (a *Annotator) resolveWalk(s *hooksrv.Session, rec *stratav1.Record, b hooksrv.Block, w *hooksrv.Walk) {
	extents := walkRanges(b, w, uint64(a.cfg.PageSize))
	reqs := make([]resolver.Request, len(extents))
	for i, e := range extents {
		reqs[i] = resolver.Request{VAddr: e.Vaddr, Length: e.Length, CPUNode: rec.GetCpuNumaNode()}
	}
	out := make([]resolver.Result, len(reqs))
	a.res.ResolveFor(tenant(s, rec.GetPid()), reqs, out)
	n := 0
	for i := range out {
		n += len(out[i].Runs)
	}
	runs := make([]*stratav1.PageRun, 0, n)
	var err error
	for i := range out {
		runs = append(runs, out[i].Runs...)
		if err == nil {
			err = out[i].Err
		}
	}
	a.setPages(rec, &resolver.Result{Runs: runs, Err: err})
}

// walkRanges are the ranges whose pages a record of walk w of block b
// holds: an object graph's extents as they are (page aligned), a cached
// batch column's buffers as the runs of pages that hold them, each page
// once (buffers of a few hundred bytes share a page).
func walkRanges(b hooksrv.Block, w *hooksrv.Walk, page uint64) []hooksrv.Extent {
	if !b.CachedBatch {
		return w.Extents
	}
	var out []hooksrv.Extent
	for _, e := range w.Extents {
		lo, hi := e.Vaddr&^(page-1), (e.End()+page-1)&^(page-1)
		if n := len(out); n > 0 && lo <= out[n-1].End() {
			out[n-1].Length = max(out[n-1].End(), hi) - out[n-1].Vaddr
			continue
		}
		out = append(out, hooksrv.Extent{Vaddr: lo, Length: hi - lo})
	}
	return out
}

// rangeCoverage is the coverage of a record whose runs are lb's range of
// length bytes (of it): the block's own buffer (a cached batch column's
// first buffer, and so said), or an object-graph block's array of
// references and why its objects are not there. The caller holds mu.
func (a *Annotator) rangeCoverage(ss *session, lb *liveBlock, length uint64) *stratav1.Coverage {
	if !lb.block.ObjectGraph {
		c := &stratav1.Coverage{Resolution: stratav1.Resolution_RESOLUTION_BUFFERS, Bytes: length}
		if lb.block.CachedBatch {
			c.Detail = firstBuffer
		}
		return c
	}
	var why string
	switch w := lb.walk; {
	case lb.session.Walk != hooksrv.WalkOn:
		why = lb.session.Walk.String()
	case w == nil:
		why = "walk pending"
	case w.State == hooksrv.WalkStale:
		why = fmt.Sprintf("stale: objects moved by GC %d, walk pending", w.GCEpoch)
	case !ss.usable(lb):
		why = fmt.Sprintf("walk unsure: GC %d not checked yet", ss.gcEpoch)
	default:
		why = fmt.Sprintf("the array alone: its objects are walked at GC %d", lb.holds)
	}
	return &stratav1.Coverage{Resolution: stratav1.Resolution_RESOLUTION_REFERENCES, Bytes: length, Detail: why}
}

// walkCoverage is the coverage of a record whose runs are the pages of
// walk w of block b, holding at GC epoch holds: a cached batch column's
// buffers (BUFFERS, every buffer's bytes), or an object graph's objects.
func walkCoverage(b hooksrv.Block, w *hooksrv.Walk, holds uint32) *stratav1.Coverage {
	if b.CachedBatch {
		return &stratav1.Coverage{Resolution: stratav1.Resolution_RESOLUTION_BUFFERS, Bytes: w.Bytes, Objects: w.Objects,
			Extents: uint32(len(w.Extents))}
	}
	res := stratav1.Resolution_RESOLUTION_WALKED
	if w.State == hooksrv.WalkCut {
		res = stratav1.Resolution_RESOLUTION_WALK_CUT
	}
	return &stratav1.Coverage{Resolution: res, Bytes: w.Bytes, Objects: w.Objects, SharedObjects: w.SharedObjects,
		SharedBytes: w.SharedBytes, OpaqueObjects: w.OpaqueObjects, GcEpoch: holds, Extents: uint32(len(w.Extents))}
}

// setWalk makes w lb's walk, counting the extents kept, under ss, the
// session whose walk it is (nil for none); the caller holds mu.
func (a *Annotator) setWalk(ss *session, key BlockKey, lb *liveBlock, w *hooksrv.Walk) {
	d := 0
	if lb.walk != nil {
		d -= len(lb.walk.Extents)
	}
	if w != nil {
		d += len(w.Extents)
	}
	if d != 0 {
		a.nExtents += d
		if a.extents[key.PID] += d; a.extents[key.PID] == 0 {
			delete(a.extents, key.PID)
		}
	}
	lb.walk, lb.holds, lb.weak, lb.refused = w, 0, false, false
	switch {
	case ss == nil:
	case w != nil && w.State != hooksrv.WalkStale && !lb.block.CachedBatch:
		lb.holds = w.GCEpoch
		ss.walked[key.ID] = lb
	default:
		delete(ss.walked, key.ID)
	}
}

// walk records a complete walk as a MOVE record of its pages, or a STALE
// mark as a MOVE record of the array's, and mirrors the walk into the
// kernel once it holds (a cached batch column's at once).
func (a *Annotator) walk(ev hooksrv.Event) {
	w := ev.Walk
	key := BlockKey{ev.Session.PID, ev.Block.HookID}
	a.mu.Lock()
	a.session(ev.Session).saw(w.GCEpoch)
	lb := a.blocks[key]
	walkable := lb != nil && (lb.block.ObjectGraph || (lb.block.CachedBatch && w.State == hooksrv.WalkDone))
	take := walkable && (lb.walk == nil || w.Seq > lb.walk.Seq)
	a.mu.Unlock()
	if !take {
		return
	}
	stale := w.State == hooksrv.WalkStale
	rec := a.record(ev, ev.Vaddr, ev.Length)
	if stale {
		a.resolve(ev.Session, rec)
		a.stale.Add(1)
	} else {
		a.resolveWalk(ev.Session, rec, ev.Block, w)
		a.walks.Add(1)
	}
	a.mu.Lock()
	ss := a.session(ev.Session)
	if lb = a.blocks[key]; lb == nil { // this session's goroutine alone frees it
		a.mu.Unlock()
		return
	}
	hadWeak := lb.weak
	a.uncache(lb)
	a.setWalk(ss, key, lb, w)
	lb.vaddr, lb.length = ev.Vaddr, ev.Length
	setWeak := lb.mirrored && ss.usable(lb)
	lb.weak = setWeak
	if stale {
		rec.Coverage = a.rangeCoverage(ss, lb, rec.GetLength())
		a.cache(lb, rec.Runs, 0)
	} else {
		rec.Coverage = walkCoverage(lb.block, w, lb.holds)
		a.cache(lb, rec.Runs, w.Seq)
	}
	a.mu.Unlock()
	switch {
	case setWeak:
		a.mirrorWalk(key, w)
	case hadWeak:
		// Stale, or a new walk that does not hold yet: the old walk's
		// ranges go.
		a.mirrorWalk(key, nil)
	}
	a.add(rec)
}

// mirrorWalk makes w's extents (none for nil) the kernel's weak ranges of
// the block. When the kernel refuses, the block counts faults in its array
// alone until its next walk.
func (a *Annotator) mirrorWalk(key BlockKey, w *hooksrv.Walk) {
	k := a.cfg.Kernel
	if k == nil {
		return
	}
	var ranges []Range
	if w != nil {
		ranges = make([]Range, len(w.Extents))
		for i, e := range w.Extents {
			ranges[i] = Range{e.Vaddr, e.End()}
		}
	}
	if err := k.SetWeakRanges(key.PID, key.ID, ranges); err != nil {
		a.mu.Lock()
		if lb := a.blocks[key]; lb != nil && lb.walk == w {
			lb.weak, lb.refused = false, true
		}
		a.mu.Unlock()
		a.walkKernelErr.Add(1)
		a.log.Warn("walk not mirrored in kernel; faults on its objects are not attributed", "pid", key.PID, "block", key.ID, "extents", len(ranges), "err", err)
	}
}

// checked raises the walks of the session that still hold to the CHECKED
// epoch, and mirrors into the kernel those that hold again.
func (a *Annotator) checked(ev hooksrv.Event) {
	type mirror struct {
		key BlockKey
		w   *hooksrv.Walk
	}
	var todo []mirror
	a.mu.Lock()
	ss := a.session(ev.Session)
	ss.saw(ev.GCEpoch)
	for id, lb := range ss.walked {
		lb.holds = max(lb.holds, ev.GCEpoch)
		if lb.mirrored && !lb.weak && !lb.refused && ss.usable(lb) {
			lb.weak = true
			todo = append(todo, mirror{BlockKey{ev.Session.PID, id}, lb.walk})
		}
	}
	a.mu.Unlock()
	slices.SortFunc(todo, func(x, y mirror) int { return cmp.Compare(x.key.ID, y.key.ID) })
	for _, m := range todo {
		a.mirrorWalk(m.key, m.w)
	}
}
