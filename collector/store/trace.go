package store

import (
	"fmt"
	"log/slog"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// traceRun is one stored run with its record's fields, as both backends'
// Trace read it.
type traceRun struct {
	time     int64
	access   int8
	pid      uint32
	pageSize uint32
	blk      *stratav1.SparkBlock // shared by the pages of the run
	cov      *stratav1.Coverage   // the record's, shared likewise
	run      stratav1.PageRun
	deltas   []byte // the run's PFN steps as stored (encodeDeltas)
}

// pageEmitter expands the stored runs of one Trace call into pages, up to
// the query's limit. A run that cannot be expanded (left by a collector
// that validated less) is skipped and counted, so one corrupt row never
// fails every trace of its application; warn reports the count once.
type pageEmitter struct {
	q             TraceQuery
	fn            func(*stratav1.TracePage) error
	sent, skipped uint32
	firstSkip     error
}

// emit calls fn for each page of r. done reports that the limit is
// reached; err is fn's first error.
func (e *pageEmitter) emit(r *traceRun) (done bool, err error) {
	if e.q.Limit > 0 && e.sent >= e.q.Limit {
		return true, nil
	}
	var ferr error
	xerr := expandRun(&r.run, r.deltas, r.pageSize, func(p stratav1.Page) bool {
		if e.q.Limit > 0 && e.sent >= e.q.Limit {
			return false
		}
		ferr = e.fn(&stratav1.TracePage{
			TimeUnixNano: r.time,
			Access:       stratav1.AccessKind(r.access),
			Block:        r.blk,
			Pid:          r.pid,
			Vaddr:        p.VAddr,
			State:        p.State,
			Pfn:          p.PFN,
			Paddr:        p.PAddr(uint64(r.pageSize)),
			Kpageflags:   p.KPageFlags,
			Kpagecount:   p.KPageCount,
			NumaNode:     p.NUMANode,
			Coverage:     r.cov,
		})
		if ferr != nil {
			return false
		}
		e.sent++
		return true
	})
	if xerr != nil {
		if e.skipped == 0 {
			e.firstSkip = fmt.Errorf("%s at %#x (time %d): %w", r.blk.GetBlockId(), r.run.GetVaddr(), r.time, xerr)
		}
		e.skipped++
		return false, nil
	}
	if ferr != nil {
		return true, ferr
	}
	return e.q.Limit > 0 && e.sent >= e.q.Limit, nil
}

// warn logs the runs this Trace skipped, if any.
func (e *pageEmitter) warn(log *slog.Logger) {
	if e.skipped > 0 {
		log.Warn("trace skipped stored runs that cannot be expanded", "app_id", e.q.AppID, "runs", e.skipped, "first", e.firstSkip)
	}
}
