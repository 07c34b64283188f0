package heuristics

import (
	"slices"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// SummarizeRecords builds the cross-layer input of one application from
// Strata's own records, for a collector that holds them:
//
//   - RDDs: for every cached RDD block (storage mode, rdd_id ≥ 0) of appID,
//     the latest record that carries page runs, unless the block's latest
//     record frees it. Present pages count per NUMA node (unknown nodes are
//     left out of PagesByNode), swapped pages and THP-backed present pages
//     are counted, and TotalPages counts every mapped page.
//   - Faults: one per FAULT record of an RDD block, remote when the page
//     was on another node than the faulting CPU (both known, or the run is
//     marked CROSS_NODE); nil when there is no FAULT record.
//   - Workloads: the counters of appID, as given.
//
// pageSize is the base page size in bytes (records carry it too; the first
// non-zero one wins when pageSize is 0).
func SummarizeRecords(appID string, pageSize int64, records []*stratav1.Record, workloads []*stratav1.WorkloadCounters) *TraceSummary {
	ts := &TraceSummary{AppID: appID, PageSize: pageSize}
	type blockKey struct{ executor, block string }
	latest := map[blockKey]*stratav1.Record{}
	freed := map[blockKey]int64{}
	var faults FaultShare
	var sawFault bool
	nodes := map[int32]bool{}
	for _, r := range records {
		b := r.GetBlock()
		if b.GetAppId() != appID || b.GetRddId() < 0 || b.GetMode() == stratav1.MemoryMode_MEMORY_MODE_EXECUTION {
			continue
		}
		if ts.PageSize == 0 && r.GetPageSize() > 0 {
			ts.PageSize = int64(r.GetPageSize())
		}
		k := blockKey{b.GetExecutorId(), b.GetBlockId()}
		switch r.GetAccess() {
		case stratav1.AccessKind_ACCESS_KIND_FAULT:
			sawFault = true
			if faultIsRemote(r) {
				faults.Remote++
			} else {
				faults.Local++
			}
			continue
		case stratav1.AccessKind_ACCESS_KIND_FREE:
			freed[k] = max(freed[k], r.GetTimeUnixNano())
			continue
		}
		if len(r.GetRuns()) == 0 {
			continue
		}
		if old, ok := latest[k]; !ok || r.GetTimeUnixNano() >= old.GetTimeUnixNano() {
			latest[k] = r
		}
	}
	byRDD := map[int32]*RDDPages{}
	for k, r := range latest {
		if t, ok := freed[k]; ok && t >= r.GetTimeUnixNano() {
			continue
		}
		id := r.GetBlock().GetRddId()
		rp := byRDD[id]
		if rp == nil {
			rp = &RDDPages{RDDID: id, PagesByNode: map[int32]int64{}}
			byRDD[id] = rp
		}
		for _, run := range r.GetRuns() {
			n := int64(run.GetCount())
			st := run.GetState()
			if st&uint32(stratav1.PageState_PAGE_STATE_UNMAPPED) != 0 {
				continue
			}
			rp.TotalPages += n
			if st&uint32(stratav1.PageState_PAGE_STATE_SWAPPED) != 0 {
				rp.SwappedPages += n
			}
			if st&uint32(stratav1.PageState_PAGE_STATE_PRESENT) == 0 {
				continue
			}
			if st&uint32(stratav1.PageState_PAGE_STATE_THP) != 0 {
				rp.THPPages += n
			}
			if node := run.GetNumaNode(); node >= 0 {
				rp.PagesByNode[node] += n
				nodes[node] = true
			}
		}
	}
	ids := make([]int32, 0, len(byRDD))
	for id := range byRDD {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		ts.RDDs = append(ts.RDDs, *byRDD[id])
	}
	ts.NUMANodes = len(nodes)
	if sawFault {
		ts.Faults = &faults
	}
	for _, w := range workloads {
		if w.GetAppId() == appID {
			ts.Workloads = append(ts.Workloads, w)
		}
	}
	return ts
}

// faultIsRemote reports whether a FAULT record hit a page on another node
// than the faulting CPU's.
func faultIsRemote(r *stratav1.Record) bool {
	cpu := r.GetCpuNumaNode()
	for _, run := range r.GetRuns() {
		if run.GetState()&uint32(stratav1.PageState_PAGE_STATE_CROSS_NODE) != 0 {
			return true
		}
		if cpu >= 0 && run.GetNumaNode() >= 0 && run.GetNumaNode() != cpu {
			return true
		}
	}
	return false
}
