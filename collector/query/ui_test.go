package query_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/stratatrace/strata/collector/query"
	"github.com/stratatrace/strata/collector/store"
	"github.com/stratatrace/strata/collector/store/storetest"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// sampleService is the query service over a real store holding the
// storetest sample.
func sampleService(t *testing.T) *query.Service {
	t.Helper()
	s := storetest.Open(t)
	if _, err := s.Append(context.Background(), storetest.Sample(1)); err != nil {
		t.Fatal(err)
	}
	return query.New(s)
}

// A block's life is its records grouped into steps, each with the pages
// the store holds for it: rdd_7_3 was allocated and read over the same
// six pages (three on node 0, two THP pages on node 1, one swapped).
func TestBlockLife(t *testing.T) {
	ctx := context.Background()
	q := sampleService(t)
	life, err := q.BlockLife(ctx, storetest.App, "1", "rdd_7_3")
	if err != nil {
		t.Fatal(err)
	}
	if life.RDD != 7 || life.Partition != 3 || life.Mode != "storage" || len(life.Steps) != 2 || life.Truncated {
		t.Fatalf("life = %+v", life)
	}
	ranges := []query.PFNRange{{First: 0x1000, Last: 0x1002, Node: 0}, {First: 0x2000, Last: 0x2001, Node: 1}}
	for i, access := range []string{"alloc", "read"} {
		s := life.Steps[i]
		if s.Access != access || s.PID != 100 || s.Vaddr != storetest.BlockA || s.Length != 6*storetest.PageSize || s.Pages != 6 ||
			s.Present != 5 || s.Swapped != 1 || s.THP != 2 || !reflect.DeepEqual(s.Nodes, map[int32]uint64{0: 3, 1: 2}) ||
			!reflect.DeepEqual(s.Ranges, ranges) || s.MoreRanges != 0 {
			t.Errorf("step %d = %+v", i, s)
		}
	}
	if f := life.Steps[1].Faults; f.GetRead() != 9 || f.GetUnclassified() != 4 {
		t.Errorf("read step's faults = %v, want the sample's r9 u4", f)
	}
	for _, c := range [][2]string{{"1", "rdd_7_9"}, {"2", "rdd_7_3"}} {
		if _, err := q.BlockLife(ctx, storetest.App, c[0], c[1]); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("block %s of executor %s: %v, want ErrNotFound", c[1], c[0], err)
		}
	}
}

// App finds an application among Apps or says ErrNotFound; Occupancy
// groups the store's points by RDD, in RDD order.
func TestAppAndOccupancy(t *testing.T) {
	ctx := context.Background()
	q := sampleService(t)
	a, err := q.App(ctx, storetest.App)
	if err != nil || a.Records != 3 || a.Executors != 2 {
		t.Fatalf("app = %+v, %v", a, err)
	}
	if _, err := q.App(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown app: %v", err)
	}
	series, err := q.Occupancy(ctx, storetest.App, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(series) != 2 || series[0].RDD != 7 || series[1].RDD != 8 {
		t.Fatalf("series = %+v", series)
	}
	for _, s := range series {
		if len(s.Points) == 0 {
			t.Errorf("RDD %d: no points", s.RDD)
		}
		for _, p := range s.Points {
			if p.RDDID != s.RDD {
				t.Errorf("RDD %d holds a point of RDD %d", s.RDD, p.RDDID)
			}
		}
	}
	if last := series[1].Points[len(series[1].Points)-1]; last.Pages != 4 {
		t.Errorf("RDD 8 ends with %d pages, want its 4", last.Pages)
	}
}

func TestParseAccessAndSeverity(t *testing.T) {
	got, err := query.ParseAccess("alloc, READ,move")
	want := []stratav1.AccessKind{stratav1.AccessKind_ACCESS_KIND_ALLOC, stratav1.AccessKind_ACCESS_KIND_READ,
		stratav1.AccessKind_ACCESS_KIND_MOVE}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ParseAccess = %v, %v", got, err)
	}
	for _, bad := range []string{"bogus", "unspecified", "read,"} {
		if _, err := query.ParseAccess(bad); !errors.Is(err, store.ErrInvalidQuery) {
			t.Errorf("ParseAccess(%q) = %v, want ErrInvalidQuery", bad, err)
		}
	}
	for in, want := range map[string]stratav1.Severity{"": stratav1.Severity_SEVERITY_NONE, "Severe": stratav1.Severity_SEVERITY_SEVERE,
		"SEVERITY_CRITICAL": stratav1.Severity_SEVERITY_CRITICAL} {
		if got, err := query.ParseSeverity(in); err != nil || got != want {
			t.Errorf("ParseSeverity(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := query.ParseSeverity("meh"); !errors.Is(err, store.ErrInvalidQuery) {
		t.Errorf("ParseSeverity(meh) = %v", err)
	}
}
