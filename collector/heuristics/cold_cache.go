package heuristics

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/stratatrace/strata/collector/job"
)

// Cold Cache (cross-layer, docs/heuristics.md#cold-cache): an RDD cached
// and not read again before it was freed or the traces end costs its memory
// for nothing. From the hook's gets per block (job.CachedBlock.Reads: the
// gets after the put's own read-back), an RDD is cold when no block of it
// was read more than max_reads times; with DAMON samples, an RDD read more
// is also cold when its blocks' latest samples show at least
// damon_cold_share of their monitored bytes cold for damon_cold_for_sec.
// Severity of the cold RDDs' bytes over all cached bytes, rated when the
// cached bytes are at least min_bytes; score = severity × cold RDDs.

// ColdCacheParams are the parameters of Cold Cache.
type ColdCacheParams struct {
	Common            `yaml:",inline"`
	ColdShareSeverity Thresholds `yaml:"cold_share_severity" check:"asc" help:"bytes of cold cached RDDs / bytes of all cached RDDs"`
	MaxReads          int64      `yaml:"max_reads" check:"nonnegative" help:"an RDD none of whose blocks was read more often after its put is cold"`
	DAMONColdShare    float64    `yaml:"damon_cold_share" check:"positive" help:"an RDD whose latest DAMON samples show this share of its monitored bytes cold is cold"`
	DAMONColdForSec   float64    `yaml:"damon_cold_for_sec" check:"nonnegative" help:"how long DAMON must have seen those bytes unaccessed"`
	MinBytes          int64      `yaml:"min_bytes" help:"fewer cached bytes in all are not rated"`
}

var coldCache = register(def[ColdCacheParams]{Key: "cold_cache", Name: "Cold Cache", Order: 306,
	Defaults: ColdCacheParams{ColdShareSeverity: Thresholds{0.05, 0.1, 0.25, 0.5}, MaxReads: 0, DAMONColdShare: 0.9,
		DAMONColdForSec: 60, MinBytes: 16 << 20},
	BuildTrace: func(p ColdCacheParams) TraceHeuristic { return &ColdCache{p: p} }})

// ColdCache is the cold cache heuristic.
type ColdCache struct{ p ColdCacheParams }

// rddUse is what the cold cache heuristic sums of one RDD's blocks.
type rddUse struct {
	rdd                  int32
	blocks, freed        int
	bytes                uint64
	reads, maxReads      uint64
	heatBlocks           int
	coldBytes, monitored uint64 // of the blocks with DAMON samples: cold long enough, monitored
}

// ApplyTrace implements TraceHeuristic.
func (h *ColdCache) ApplyTrace(_ *job.Job, ts *TraceSummary) Result {
	byRDD := map[int32]*rddUse{}
	var total uint64
	for i := range ts.Blocks {
		b := &ts.Blocks[i]
		u := byRDD[b.RDD]
		if u == nil {
			u = &rddUse{rdd: b.RDD}
			byRDD[b.RDD] = u
		}
		u.blocks++
		if b.FreedNs != 0 {
			u.freed++
		}
		u.bytes += b.Bytes()
		total += b.Bytes()
		r := b.Reads()
		u.reads += r
		u.maxReads = max(u.maxReads, r)
		if hb := b.Heat; hb != nil {
			u.heatBlocks++
			u.monitored += max(hb.MonitoredBytes, hb.CoveredBytes)
			if hb.ColdMinAgeSeconds != nil && *hb.ColdMinAgeSeconds >= h.p.DAMONColdForSec {
				u.coldBytes += hb.ColdBytes
			}
		}
	}
	if total == 0 || total < uint64(max(h.p.MinBytes, 0)) {
		return skip
	}
	rdds := make([]*rddUse, 0, len(byRDD))
	for _, u := range byRDD {
		rdds = append(rdds, u)
	}
	slices.SortFunc(rdds, func(a, b *rddUse) int { return cmp.Compare(a.rdd, b.rdd) })
	var cold uint64
	var n int
	var d []Detail
	for _, u := range rdds {
		unread := u.maxReads <= uint64(max(h.p.MaxReads, 0))
		damonCold := u.monitored > 0 && float64(u.coldBytes)/float64(u.monitored) >= h.p.DAMONColdShare
		if !unread && !damonCold {
			continue
		}
		cold += u.bytes
		n++
		d = append(d, explained("rdd "+strconv.Itoa(int(u.rdd)), h.rddWords(u, unread), coldAdvice))
	}
	share := float64(cold) / float64(total)
	sev := h.p.ColdShareSeverity.Ascending(share)
	d = append([]Detail{
		detail("Cold share of cached bytes", strconv.FormatFloat(share, 'f', 4, 64)),
		detail("Cached data", BytesToString(int64(total))),
		detail("Cold cached data", BytesToString(int64(cold))),
	}, d...)
	return Result{Severity: sev, Score: Score(sev, n), Details: d}
}

// coldAdvice is what a cold RDD's detail suggests.
const coldAdvice = "Unpersist the RDD after its last use, or do not cache it: its blocks hold storage memory that other " +
	"RDDs and execution could use."

// rddWords says why an RDD is cold, with its numbers.
func (h *ColdCache) rddWords(u *rddUse, unread bool) string {
	s := BytesToString(int64(u.bytes)) + " in " + strconv.Itoa(u.blocks) + " blocks, "
	if unread {
		s += "read " + strconv.FormatUint(u.reads, 10) + " times after caching"
	} else {
		s += "read " + strconv.FormatUint(u.reads, 10) + " times after caching, then idle"
	}
	switch {
	case u.freed == u.blocks:
		s += ", then freed"
	case u.freed == 0:
		s += ", cached to the end"
	default:
		s += ", " + strconv.Itoa(u.freed) + " blocks freed"
	}
	if u.monitored > 0 {
		s += "; DAMON: " + strconv.FormatFloat(100*float64(u.coldBytes)/float64(u.monitored), 'f', 1, 64) +
			" % of its monitored bytes cold for at least " + strconv.FormatFloat(h.p.DAMONColdForSec, 'f', -1, 64) + " s"
	} else {
		s += "; DAMON: no samples"
	}
	return s
}
