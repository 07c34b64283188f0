package query

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/stratatrace/strata/collector/answer"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// Bounds of a block's life: the pages read through Trace (a block of
// 16 GiB is 4 Mi pages per record), the PFN ranges listed per step and
// the steps listed.
const (
	maxLifePages   = 4 << 20
	maxStepRanges  = 32
	maxStepRecords = 10000
)

// BlockLife is one block's life: its records, grouped into steps, with
// the pages each held. Kind and Mode are lowercase names ("rdd",
// "storage").
type BlockLife struct {
	App, ExecutorID, BlockID string
	RDD, Partition           int32
	Kind, Mode               string
	Steps                    []LifeStep
	// Truncated says the pages were not all read (over 4 Mi) or the
	// records not all listed (over 10,000 steps).
	Truncated bool
}

// LifeStep is one moment of a block's life: the records of one time,
// access and process (an agent splits a large record into several over
// sub-ranges) with the pages they held. Access, FreeReason and FaultKind
// are lowercase names ("read", "evicted"), "" when the records carry none.
type LifeStep struct {
	TimeNs     int64
	Access     string
	PID        uint32
	Vaddr      uint64 // the lowest start of the records' ranges
	Length     uint64
	Pages      uint64 // as the records say
	Present    uint64
	Swapped    uint64
	THP        uint64
	Nodes      map[int32]uint64 // present pages per NUMA node (-1 unknown)
	Ranges     []PFNRange       // the first 32 PFN ranges, ascending
	MoreRanges uint64           // ranges not listed
	FreeReason string
	FaultKind  string
	Faults     *stratav1.FaultCounts // counters since registration, when sent
	// ResolveError says why the range was not resolved.
	ResolveError string
	// Holds: what the step's pages hold of the block, in words
	// (HoldsWords); CoverageBytes: how many bytes of its data, 0 when the
	// record carries no coverage.
	Holds         string
	CoverageBytes uint64

	lastPFN  uint64 // the page added last, which the next may continue
	lastNode int32
}

// PFNRange is a range of consecutive PFNs [First, Last] on one node.
type PFNRange struct {
	First, Last uint64
	Node        int32
}

func enumName(full, prefix string) string { return strings.ToLower(strings.TrimPrefix(full, prefix)) }

type stepKey struct {
	t      int64
	access stratav1.AccessKind
	pid    uint32
}

// BlockLife reads one block's records and the pages each held (Trace over
// the block's RDD and partition, kept to the block); answer.ErrNotFound
// when the block has no record.
func (s *Service) BlockLife(ctx context.Context, app, exec, block string) (*BlockLife, error) {
	life := &BlockLife{App: app, ExecutorID: exec, BlockID: block, Steps: []LifeStep{}}
	index := map[stepKey]int{}
	var first *stratav1.SparkBlock
	err := s.store.Records(ctx, answer.RecordsQuery{AppID: app, BlockID: block}, func(r *stratav1.RecordRow) error {
		if r.GetBlock().GetExecutorId() != exec {
			return nil
		}
		if first == nil {
			first = r.GetBlock()
		}
		k := stepKey{r.GetTimeUnixNano(), r.GetAccess(), r.GetPid()}
		if i, ok := index[k]; ok {
			st := &life.Steps[i]
			st.Length += r.GetLength()
			st.Pages += r.GetPages()
			st.Vaddr = min(st.Vaddr, r.GetVaddr())
			return nil
		}
		if len(life.Steps) >= maxStepRecords {
			life.Truncated = true
			return nil
		}
		st := LifeStep{TimeNs: r.GetTimeUnixNano(), Access: enumName(r.GetAccess().String(), "ACCESS_KIND_"), PID: r.GetPid(),
			Vaddr: r.GetVaddr(), Length: r.GetLength(), Pages: r.GetPages(), Nodes: map[int32]uint64{}, Ranges: []PFNRange{},
			Faults: r.GetFaults(), ResolveError: r.GetResolveError(), Holds: HoldsWords(r.GetCoverage()),
			CoverageBytes: r.GetCoverage().GetBytes()}
		if r.GetFreeReason() != stratav1.FreeReason_FREE_REASON_UNSPECIFIED {
			st.FreeReason = enumName(r.GetFreeReason().String(), "FREE_REASON_")
		}
		if r.GetFaultKind() != stratav1.FaultKind_FAULT_KIND_UNSPECIFIED {
			st.FaultKind = enumName(r.GetFaultKind().String(), "FAULT_KIND_")
		}
		index[k] = len(life.Steps)
		life.Steps = append(life.Steps, st)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if first == nil {
		return nil, fmt.Errorf("block %s of executor %s in %s: %w", block, exec, app, answer.ErrNotFound)
	}
	life.RDD, life.Partition = first.GetRddId(), first.GetPartition()
	life.Kind = enumName(first.GetKind().String(), "BLOCK_KIND_")
	life.Mode = enumName(first.GetMode().String(), "MEMORY_MODE_")
	rdd, part := first.GetRddId(), first.GetPartition()
	var read uint64
	err = s.store.Trace(ctx, answer.TraceQuery{AppID: app, RDD: &rdd, Partition: &part, Limit: maxLifePages}, func(p *stratav1.TracePage) error {
		read++
		b := p.GetBlock()
		if b.GetBlockId() != block || b.GetExecutorId() != exec {
			return nil
		}
		if i, ok := index[stepKey{p.GetTimeUnixNano(), p.GetAccess(), p.GetPid()}]; ok {
			life.Steps[i].addPage(p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if read >= maxLifePages {
		life.Truncated = true
	}
	for i := range life.Steps {
		slices.SortFunc(life.Steps[i].Ranges, func(a, b PFNRange) int { return cmp.Compare(a.First, b.First) })
	}
	return life, nil
}

// addPage counts one page of the step and extends its PFN ranges: a page
// continuing the last range (next PFN, same node) joins it.
func (st *LifeStep) addPage(p *stratav1.TracePage) {
	state := p.GetState()
	if state&uint32(stratav1.PageState_PAGE_STATE_SWAPPED) != 0 {
		st.Swapped++
	}
	if state&uint32(stratav1.PageState_PAGE_STATE_PRESENT) == 0 {
		return
	}
	st.Present++
	st.Nodes[p.GetNumaNode()]++
	if state&uint32(stratav1.PageState_PAGE_STATE_THP) != 0 {
		st.THP++
	}
	pfn, node := p.GetPfn(), p.GetNumaNode()
	if pfn == 0 {
		return
	}
	continues := st.lastPFN != 0 && st.lastPFN+1 == pfn && st.lastNode == node
	st.lastPFN, st.lastNode = pfn, node
	switch {
	case continues && st.MoreRanges == 0:
		st.Ranges[len(st.Ranges)-1].Last = pfn
		return
	case continues:
		return
	case len(st.Ranges) >= maxStepRanges:
		st.MoreRanges++
		return
	}
	st.Ranges = append(st.Ranges, PFNRange{First: pfn, Last: pfn, Node: node})
}
