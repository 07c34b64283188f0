package store_test

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/stratatrace/strata/collector/store/storetest"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// The report scenario's RDDs and occupation, worked out by hand in
// storetest: last-live pages per block buffer, accesses counted once per
// block, execution memory left out, the peak of what the blocks held
// against the peak resident set and the node's memory.
func TestReportQueries(t *testing.T) {
	s := storetest.Open(t)
	for _, b := range storetest.ReportBatches() {
		mustAppend(t, s, b)
	}
	ctx := context.Background()
	rdds, err := s.RDDs(ctx, storetest.App)
	if err != nil {
		t.Fatal(err)
	}
	want := storetest.ReportRDDs()
	if len(rdds) != len(want) {
		t.Fatalf("RDDs: %d rows, want %d: %v", len(rdds), len(want), rdds)
	}
	for i := range want {
		if !proto.Equal(rdds[i], want[i]) {
			t.Errorf("RDD row %d:\n got %v\nwant %v", i, rdds[i], want[i])
		}
	}
	occ, err := s.Occupation(ctx, storetest.App)
	if err != nil {
		t.Fatal(err)
	}
	wocc := storetest.ReportOccupation()
	if len(occ) != len(wocc) {
		t.Fatalf("Occupation: %d rows, want %d: %v", len(occ), len(wocc), occ)
	}
	for i := range wocc {
		if !proto.Equal(occ[i], wocc[i]) {
			t.Errorf("occupation row %d:\n got %v\nwant %v", i, occ[i], wocc[i])
		}
	}
	// An app without records has no rows; an empty app id is refused.
	if r, err := s.RDDs(ctx, "application_0_0"); err != nil || len(r) != 0 {
		t.Errorf("RDDs of an unknown app: %v %v", r, err)
	}
	if _, err := s.Occupation(ctx, ""); err == nil {
		t.Errorf("Occupation of an empty app id: no error")
	}
}

// A batch whose process memory sample names no app or pid is refused.
func TestProcessMemoryValidated(t *testing.T) {
	s := storetest.Open(t)
	for _, bad := range []*stratav1.ProcessMemory{{Pid: 1}, {AppId: storetest.App}, {AppId: "\xff", Pid: 1}} {
		b := storetest.Sample(1)
		b.Processes = []*stratav1.ProcessMemory{bad}
		if _, err := s.Append(context.Background(), b); err == nil {
			t.Errorf("append of %v: no error", bad)
		}
	}
}
