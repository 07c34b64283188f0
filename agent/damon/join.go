package damon

import (
	"math"
	"time"

	"google.golang.org/protobuf/proto"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// Block is a live block with its range and the pages of its latest
// resolution.
type Block struct {
	PID   uint32
	Block *stratav1.SparkBlock
	// Vaddr and Length are its range in the process's address space, as
	// the hook last reported it.
	Vaddr, Length uint64
	// Runs are its pages as last resolved (of its range, or of its walk's
	// objects), nil when the annotator does not keep them; pages moved
	// since are not followed.
	Runs     []*stratav1.PageRun
	Resolved time.Time
}

// virtualExtents returns the virtual pages of b, those holding a byte of
// its range and those of its runs (a walk's objects lie outside the
// range), sorted and merged, and their bytes.
func virtualExtents(b Block, pageSize uint64) ([]Range, uint64) {
	var rs []Range
	page := func(start, end uint64) {
		start -= start % pageSize
		if r := end % pageSize; r != 0 {
			if end > math.MaxUint64-(pageSize-r) {
				return
			}
			end += pageSize - r
		}
		if end > start {
			rs = append(rs, Range{start, end})
		}
	}
	if b.Length > 0 && b.Vaddr <= math.MaxUint64-b.Length {
		page(b.Vaddr, b.Vaddr+b.Length)
	}
	for _, r := range b.Runs {
		if n := uint64(r.GetCount()) * pageSize; r.GetVaddr() <= math.MaxUint64-n {
			page(r.GetVaddr(), r.GetVaddr()+n)
		}
	}
	rs = mergeRanges(rs)
	return rs, rangeBytes(rs)
}

// extents returns the physical ranges of the pages of runs that have a
// PFN, sorted and merged (a page named twice counts once), and their bytes.
func extents(runs []*stratav1.PageRun, pageSize uint64) ([]Range, uint64) {
	var rs []Range
	for _, r := range runs {
		r.ForEachPFNSpan(func(first uint64, n uint32) bool {
			rs = append(rs, Range{first * pageSize, (first + uint64(n)) * pageSize})
			return true
		})
	}
	rs = mergeRanges(rs)
	return rs, rangeBytes(rs)
}

// rangeBytes is the bytes of disjoint ranges.
func rangeBytes(rs []Range) uint64 {
	var n uint64
	for _, r := range rs {
		n += r.End - r.Start
	}
	return n
}

// blockHeat is one block's pages joined with one read of regions.
type blockHeat struct {
	resolved, monitored, covered, cold uint64
	accesses                           float64 // covered bytes times their region's nr_accesses, summed
	coldAge                            float64 // cold bytes times their region's age, summed
	coldMinAge                         uint64  // the youngest cold region's age
}

// joinBlock joins a block's extents (sorted, disjoint, resolved bytes)
// with the monitored ranges (sorted, disjoint; nil unknown) and the regions
// read (sorted, disjoint).
func joinBlock(ext []Range, resolved uint64, monitored []Range, regions []Region) blockHeat {
	h := blockHeat{resolved: resolved, coldMinAge: ^uint64(0)}
	h.monitored = overlap(ext, monitored)
	j := 0
	for _, e := range ext {
		for j < len(regions) && regions[j].End <= e.Start {
			j++
		}
		for k := j; k < len(regions) && regions[k].Start < e.End; k++ {
			r := regions[k]
			n := min(e.End, r.End) - max(e.Start, r.Start)
			h.covered += n
			h.accesses += float64(n) * float64(r.NrAccesses)
			if r.NrAccesses == 0 {
				h.cold += n
				h.coldAge += float64(n) * float64(r.Age)
				h.coldMinAge = min(h.coldMinAge, r.Age)
			}
		}
	}
	return h
}

// overlap is the bytes two sorted, disjoint range lists share.
func overlap(a, b []Range) uint64 {
	var n uint64
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		lo, hi := max(a[i].Start, b[j].Start), min(a[i].End, b[j].End)
		if lo < hi {
			n += hi - lo
		}
		if a[i].End < b[j].End {
			i++
		} else {
			j++
		}
	}
	return n
}

// sample is the heat sample of block b from h, read through v at time at.
func (v view) sample(b Block, h blockHeat, at time.Time) *stratav1.HeatSample {
	sb := b.Block
	s := &stratav1.HeatSample{
		AppId: sb.GetAppId(), ExecutorId: sb.GetExecutorId(), Pid: b.PID,
		RddId: sb.GetRddId(), Partition: sb.GetPartition(), BlockId: sb.GetBlockId(), HookBlockId: sb.GetHookBlockId(),
		TimeUnixNano: at.UnixNano(), IntervalNs: int64(v.ctx.Aggr), SampleIntervalNs: int64(v.ctx.Sample),
		ResolvedBytes: h.resolved, CoveredBytes: h.covered, ColdBytes: h.cold,
		SourceKind: stratav1.HeatSourceKind_HEAT_SOURCE_KIND_SHARED, Partial: v.partial, Source: v.source,
	}
	if v.own {
		s.SourceKind = stratav1.HeatSourceKind_HEAT_SOURCE_KIND_OWN
	}
	if v.ctx.Ranges != nil {
		s.MonitoredBytes = proto.Uint64(h.monitored)
	}
	// With intervals the kernel tunes, nr_accesses and ages have no known
	// unit: no rate, no age.
	if maxNr := v.ctx.maxAccesses(); maxNr > 0 && h.covered > 0 {
		s.AccessRate = proto.Float64(h.accesses / float64(h.covered) / float64(maxNr))
	}
	if !v.ctx.Tuned && h.cold > 0 {
		aggr := v.ctx.Aggr.Seconds()
		s.ColdAgeSeconds = proto.Float64(h.coldAge / float64(h.cold) * aggr)
		s.ColdMinAgeSeconds = proto.Float64(float64(h.coldMinAge) * aggr)
	}
	return s
}
