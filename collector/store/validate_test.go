package store_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/stratatrace/strata/collector/store"
	"github.com/stratatrace/strata/collector/store/storetest"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// TestShortDeltasRefused is issue 8's poisoned application: a run with
// fewer PFN steps than pages was stored, and from then on every trace of
// its application failed. It must be refused at the door, and what was
// stored before it must still trace.
func TestShortDeltasRefused(t *testing.T) {
	s := storetest.Open(t)
	mustAppend(t, s, storetest.Sample(1))
	bad := storetest.Sample(2)
	bad.Records[0].Runs[0].PfnDeltas = []int64{7} // 3 pages need 2 steps
	if _, err := s.Append(context.Background(), bad); !errors.Is(err, store.ErrInvalidBatch) ||
		!strings.Contains(err.Error(), "1 pfn_deltas for 3 pages") {
		t.Fatalf("append of a run with 1 PFN step for 3 pages: %v, want ErrInvalidBatch naming the steps", err)
	}
	if n := len(trace(t, s, store.TraceQuery{AppID: storetest.App})); n != storetest.SamplePages {
		t.Fatalf("trace after the refusal: %d pages, want %d", n, storetest.SamplePages)
	}
}

// TestCorruptStoredRows: rows a collector that validated less may have
// stored (a run with short PFN steps, counters near 2^64) cost only
// themselves. Trace skips the run it cannot expand and says so in one
// warning with the count, and returns every other page; the summing
// queries saturate instead of failing.
func TestCorruptStoredRows(t *testing.T) {
	var logs bytes.Buffer
	s, err := store.Open(context.Background(), store.Options{Dir: t.TempDir(), MemoryLimit: "256MB",
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mustAppend(t, s, storetest.Sample(1))
	bad := storetest.Sample(2)
	bad.Records[0].Runs[0].PfnDeltas = []int64{7}                     // 3 pages, 1 step
	bad.Records[1].Faults.Read = math.MaxUint64                       // summed with…
	bad.Workloads[0].TaskClockNs = math.MaxUint64                     // …
	bad.Workloads[0].StartUnixNano = bad.Workloads[0].EndUnixNano - 1 // a second interval
	if err := store.AppendUnchecked(s, bad); err != nil {
		t.Fatal(err)
	}
	re := storetest.Sample(3) // rdd_7_3 registered again: its fault counters are summed
	re.Records = re.Records[1:2]
	re.Records[0].Block.HookBlockId = 99
	re.Records[0].Faults.Read = math.MaxUint64
	re.Workloads = nil
	mustAppend(t, s, re)

	// Sample 1 and 3 whole, sample 2 without its 3-page run.
	want := 2*storetest.SamplePages + 6 - 3
	if n := len(trace(t, s, store.TraceQuery{AppID: storetest.App})); n != want {
		t.Fatalf("trace: %d pages, want %d (all but the corrupt run)", n, want)
	}
	if !strings.Contains(logs.String(), "trace skipped stored runs") || !strings.Contains(logs.String(), "runs=1 ") ||
		!strings.Contains(logs.String(), "1 steps for 3 pages") {
		t.Fatalf("no warning counting the skipped run:\n%s", logs.String())
	}

	faults, err := s.Faults(context.Background(), storetest.App)
	if err != nil {
		t.Fatalf("faults: %v", err)
	}
	if len(faults) != 1 || faults[0].GetFaults().GetRead() != math.MaxUint64 {
		t.Fatalf("faults = %v, want rdd_7_3's reads saturated at 2^64-1", faults)
	}
	over, err := s.Overhead(context.Background(), storetest.App)
	if err != nil {
		t.Fatalf("overhead: %v", err)
	}
	if len(over) != 2 || over[0].GetCounters().GetTaskClockNs() != math.MaxUint64 {
		t.Fatalf("overhead = %v, want executor 1's task clock saturated", over)
	}
	if _, err := s.Numa(context.Background(), storetest.App); err != nil {
		t.Fatalf("numa: %v", err)
	}
}

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
