package web

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/stratatrace/strata/collector/query"
	"github.com/stratatrace/strata/collector/store"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// Bounds of a block's life page: the pages read through Trace (a block of
// 16 GiB is 4 Mi pages per record), and the PFN ranges listed per step.
const (
	maxLifePages   = 4 << 20
	maxStepRanges  = 32
	maxStepRecords = 10000
)

// pfnRange is a range of consecutive PFNs [First, Last] on one node.
type pfnRange struct {
	First uint64 `json:"first"`
	Last  uint64 `json:"last"`
	Node  int32  `json:"node"`
}

// lifeStep is one moment of a block's life: the records of one time and
// access (an agent splits a large record into several over sub-ranges),
// with the pages they held.
type lifeStep struct {
	TimeNs       int64                 `json:"time_ns"`
	Access       string                `json:"access"`
	PID          uint32                `json:"pid"`
	Vaddr        uint64                `json:"vaddr"`
	Length       uint64                `json:"length"`
	Pages        uint64                `json:"pages"` // as the records say
	Present      uint64                `json:"present"`
	Swapped      uint64                `json:"swapped"`
	THP          uint64                `json:"thp"`
	Nodes        map[int32]uint64      `json:"nodes"`         // present pages per NUMA node (-1 unknown)
	Ranges       []pfnRange            `json:"ranges"`        // the first maxStepRanges PFN ranges
	MoreRanges   uint64                `json:"more_ranges"`   // ranges not listed
	FreeReason   string                `json:"free_reason"`   // free steps
	FaultKind    string                `json:"fault_kind"`    // sampled-fault steps
	Faults       *stratav1.FaultCounts `json:"faults"`        // counters since registration, when sent
	ResolveError string                `json:"resolve_error"` // why the range was not resolved
	// Holds: what the step's pages hold of the block, in words
	// ("walked objects", "references only: walk pending"); CoverageBytes:
	// how many bytes of its data (the walked objects' sizes, a buffer's
	// length), 0 when the record carries no coverage.
	Holds         string `json:"holds"`
	CoverageBytes uint64 `json:"coverage_bytes"`

	lastPFN  uint64 // the page added last, which the next may continue
	lastNode int32
}

// blockLife is /api/v1/apps/{app}/blocks/{exec}/{block}.
type blockLife struct {
	App        string     `json:"app"`
	ExecutorID string     `json:"executor_id"`
	BlockID    string     `json:"block_id"`
	RDD        int32      `json:"rdd"`
	Partition  int32      `json:"partition"`
	Kind       string     `json:"kind"`
	Mode       string     `json:"mode"`
	Steps      []lifeStep `json:"steps"`
	// Truncated says the pages were not all read (over maxLifePages) or
	// the records not all listed (over maxStepRecords).
	Truncated bool `json:"truncated"`
}

func enumName(full, prefix string) string { return strings.ToLower(strings.TrimPrefix(full, prefix)) }

type stepKey struct {
	t      int64
	access stratav1.AccessKind
	pid    uint32
}

// blockLife reads a block's records (Records) and the pages each held
// (Trace over the block's RDD and partition, kept to the block).
func (h *Handler) blockLife(ctx context.Context, app, exec, block string) (*blockLife, error) {
	life := &blockLife{App: app, ExecutorID: exec, BlockID: block, Steps: []lifeStep{}}
	index := map[stepKey]int{}
	var first *stratav1.SparkBlock
	err := h.r.Records(ctx, store.RecordsQuery{AppID: app, BlockID: block}, func(r *stratav1.RecordRow) error {
		if r.GetBlock().GetExecutorId() != exec {
			return nil
		}
		if first == nil {
			first = r.GetBlock()
		}
		k := stepKey{r.GetTimeUnixNano(), r.GetAccess(), r.GetPid()}
		if i, ok := index[k]; ok {
			s := &life.Steps[i]
			s.Length += r.GetLength()
			s.Pages += r.GetPages()
			s.Vaddr = min(s.Vaddr, r.GetVaddr())
			return nil
		}
		if len(life.Steps) >= maxStepRecords {
			life.Truncated = true
			return nil
		}
		s := lifeStep{TimeNs: r.GetTimeUnixNano(), Access: enumName(r.GetAccess().String(), "ACCESS_KIND_"), PID: r.GetPid(),
			Vaddr: r.GetVaddr(), Length: r.GetLength(), Pages: r.GetPages(), Nodes: map[int32]uint64{}, Ranges: []pfnRange{},
			Faults: r.GetFaults(), ResolveError: r.GetResolveError(), Holds: query.HoldsWords(r.GetCoverage()),
			CoverageBytes: r.GetCoverage().GetBytes()}
		if r.GetFreeReason() != stratav1.FreeReason_FREE_REASON_UNSPECIFIED {
			s.FreeReason = enumName(r.GetFreeReason().String(), "FREE_REASON_")
		}
		if r.GetFaultKind() != stratav1.FaultKind_FAULT_KIND_UNSPECIFIED {
			s.FaultKind = enumName(r.GetFaultKind().String(), "FAULT_KIND_")
		}
		index[k] = len(life.Steps)
		life.Steps = append(life.Steps, s)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if first == nil {
		return nil, fmt.Errorf("block %s of executor %s in %s: %w", block, exec, app, store.ErrNotFound)
	}
	life.RDD, life.Partition = first.GetRddId(), first.GetPartition()
	life.Kind = enumName(first.GetKind().String(), "BLOCK_KIND_")
	life.Mode = enumName(first.GetMode().String(), "MEMORY_MODE_")
	rdd, part := first.GetRddId(), first.GetPartition()
	var read uint64
	err = h.r.Trace(ctx, store.TraceQuery{AppID: app, RDD: &rdd, Partition: &part, Limit: maxLifePages}, func(p *stratav1.TracePage) error {
		read++
		b := p.GetBlock()
		if b.GetBlockId() != block || b.GetExecutorId() != exec {
			return nil
		}
		i, ok := index[stepKey{p.GetTimeUnixNano(), p.GetAccess(), p.GetPid()}]
		if !ok {
			return nil
		}
		life.Steps[i].addPage(p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if read >= maxLifePages {
		life.Truncated = true
	}
	for i := range life.Steps {
		s := &life.Steps[i]
		slices.SortFunc(s.Ranges, func(a, b pfnRange) int {
			switch {
			case a.First < b.First:
				return -1
			case a.First > b.First:
				return 1
			}
			return 0
		})
	}
	return life, nil
}

// addPage counts one page of the step and extends its PFN ranges: a page
// continuing the last range (next PFN, same node) joins it.
func (s *lifeStep) addPage(p *stratav1.TracePage) {
	st := p.GetState()
	if st&uint32(stratav1.PageState_PAGE_STATE_SWAPPED) != 0 {
		s.Swapped++
	}
	if st&uint32(stratav1.PageState_PAGE_STATE_PRESENT) == 0 {
		return
	}
	s.Present++
	s.Nodes[p.GetNumaNode()]++
	if st&uint32(stratav1.PageState_PAGE_STATE_THP) != 0 {
		s.THP++
	}
	pfn, node := p.GetPfn(), p.GetNumaNode()
	if pfn == 0 {
		return
	}
	continues := s.lastPFN != 0 && s.lastPFN+1 == pfn && s.lastNode == node
	s.lastPFN, s.lastNode = pfn, node
	switch {
	case continues && s.MoreRanges == 0:
		s.Ranges[len(s.Ranges)-1].Last = pfn
		return
	case continues:
		return
	case len(s.Ranges) >= maxStepRanges:
		s.MoreRanges++
		return
	}
	s.Ranges = append(s.Ranges, pfnRange{First: pfn, Last: pfn, Node: p.GetNumaNode()})
}
