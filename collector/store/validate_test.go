package store_test

import (
	"encoding/binary"
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/stratatrace/strata/collector/store"
	"github.com/stratatrace/strata/collector/store/storetest"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// checkExpansion expands an accepted run as Trace does and fails t on
// anything the queries would not survive: an error, a page count other
// than the run's, an address or PFN that wraps or leaves what Linux can
// address, a swap offset that wraps.
func checkExpansion(t *testing.T, run *stratav1.PageRun, pageSize uint32) {
	t.Helper()
	ps := uint64(pageSize)
	if run.GetVaddr()+uint64(run.GetCount())*ps < run.GetVaddr() {
		t.Fatalf("accepted run's range wraps: %v", run)
	}
	var i uint64
	err := store.ExpandStored(run, pageSize, func(p stratav1.Page) bool {
		switch {
		case p.VAddr != run.GetVaddr()+i*ps || p.VAddr+ps > 1<<56:
			t.Fatalf("page %d of accepted run at %#x: vaddr %#x", i, run.GetVaddr(), p.VAddr)
		case run.GetPfn() != 0 && (p.PFN == 0 || p.PFN >= (1<<52)/ps || p.PAddr(ps)/ps != p.PFN):
			t.Fatalf("page %d of accepted run %v: pfn %#x", i, run, p.PFN)
		case p.Is(stratav1.PageState_PAGE_STATE_SWAPPED) && (p.SwapOffset < run.GetSwapOffset() || p.SwapOffset >= 1<<50):
			t.Fatalf("page %d of accepted run %v: swap offset %#x", i, run, p.SwapOffset)
		}
		i++
		return true
	})
	if err != nil {
		t.Fatalf("accepted run does not expand: %v (%v)", err, run)
	}
	if i != uint64(run.GetCount()) {
		t.Fatalf("accepted run expanded to %d pages, want %d", i, run.GetCount())
	}
}

// FuzzValidateBatch decodes arbitrary bytes as a Batch: every run of a
// batch ValidateBatch accepts must expand, as Trace expands it, into sane
// pages.
func FuzzValidateBatch(f *testing.F) {
	seed, _ := proto.Marshal(storetest.Sample(1))
	f.Add(seed)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		var b stratav1.Batch
		if proto.Unmarshal(data, &b) != nil {
			return
		}
		if err := store.ValidateBatch(&b); err != nil {
			if !errors.Is(err, store.ErrInvalidBatch) {
				t.Fatalf("refusal not ErrInvalidBatch: %v", err)
			}
			return
		}
		for _, r := range b.GetRecords() {
			for _, run := range r.GetRuns() {
				checkExpansion(t, run, r.GetPageSize())
			}
		}
	})
}

// FuzzValidateRun builds one run from its fields (PFN steps as varints),
// so the fuzzer reaches the run checks directly: whatever ValidateBatch
// accepts expands.
func FuzzValidateRun(f *testing.F) {
	present := uint32(stratav1.PageState_PAGE_STATE_PRESENT)
	f.Add(uint64(0x7f00_0000_0000), uint32(3), present, uint64(0x1000), uint32(0), uint32(0), uint64(0), int32(0), uint32(4096), []byte{})
	f.Add(uint64(0x7f00_0000_0000), uint32(4), present, uint64(0x5000), uint32(0), uint32(0), uint64(0), int32(1), uint32(4096),
		binary.AppendVarint(binary.AppendVarint(binary.AppendVarint(nil, 9), -0x4000), 1))
	f.Add(uint64(0x7f00_0020_0000), uint32(512), present|32, uint64(0x20000), uint32(512), uint32(0), uint64(0), int32(0), uint32(4096), []byte{})
	f.Add(uint64(0x7f00_0000_0000), uint32(2), uint32(stratav1.PageState_PAGE_STATE_SWAPPED), uint64(0), uint32(0), uint32(1), uint64(77), int32(-1), uint32(65536), []byte{})
	f.Fuzz(func(t *testing.T, vaddr uint64, count, state uint32, pfn uint64, folio, swapType uint32, swapOff uint64,
		node int32, pageSize uint32, steps []byte) {
		var deltas []int64
		for len(steps) > 0 {
			x, n := binary.Varint(steps)
			if n <= 0 {
				return
			}
			deltas = append(deltas, x)
			steps = steps[n:]
		}
		run := &stratav1.PageRun{Vaddr: vaddr, Count: count, State: state, Pfn: pfn, FolioPages: folio,
			SwapType: swapType, SwapOffset: swapOff, NumaNode: node, PfnDeltas: deltas}
		b := storetest.Sample(1)
		b.Records = b.Records[:1]
		b.Records[0].PageSize = pageSize
		b.Records[0].Runs = []*stratav1.PageRun{run}
		if store.ValidateBatch(b) != nil {
			return
		}
		checkExpansion(t, run, pageSize)
	})
}
