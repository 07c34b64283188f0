package storetest

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/stratatrace/strata/collector/answer"
	"github.com/stratatrace/strata/collector/store"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// testCoverageRoundTrip: every record of the coverage scenario reads back
// with the block and coverage it was sent with (Records), and every page
// carries its record's (Trace): a walked block's pages are its objects',
// its array's are marked REFERENCES with why, a column buffer names its
// column.
func testCoverageRoundTrip(t *testing.T, be Backend) {
	s := be.open(t)
	sent := CoverageBatches()
	for _, b := range sent {
		MustAppend(t, s, b)
	}
	var want []*stratav1.Record
	for _, b := range sent {
		want = append(want, b.Records...)
	}
	var rows []*stratav1.RecordRow
	if err := s.Records(context.Background(), answer.RecordsQuery{AppID: CoverageApp}, func(r *stratav1.RecordRow) error {
		rows = append(rows, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(want) {
		t.Fatalf("%d records, want %d", len(rows), len(want))
	}
	for i, r := range rows {
		w := want[i]
		if !proto.Equal(r.GetBlock(), w.GetBlock()) || !proto.Equal(r.GetCoverage(), w.GetCoverage()) ||
			r.GetTimeUnixNano() != w.GetTimeUnixNano() {
			t.Errorf("record %d: block %v coverage %v, want %v %v", i, r.GetBlock(), r.GetCoverage(), w.GetBlock(), w.GetCoverage())
		}
	}

	// rdd_4_0's pages, record by record: its array (walk pending), its
	// first walk's 3 pages, the STALE array, the second walk in two
	// pieces (3 + 1 pages), and the read of it.
	rdd, part := int32(4), int32(0)
	pages := Trace(t, s, answer.TraceQuery{AppID: CoverageApp, RDD: &rdd, Partition: &part})
	var got []string
	for _, p := range pages {
		c, b := p.GetCoverage(), p.GetBlock()
		if b.GetSparkBytes() != CoverRDD40Spark || !b.GetObjectGraph() {
			t.Errorf("page %#x block %v, want Spark's size and object_graph", p.GetVaddr(), b)
		}
		got = append(got, fmt.Sprintf("%d:%s:%d", (p.GetTimeUnixNano()-T0)/1e9,
			strings.TrimPrefix(c.GetResolution().String(), "RESOLUTION_"), c.GetBytes()))
	}
	wantPages := "2:REFERENCES:4016 3:WALKED:10000 3:WALKED:10000 3:WALKED:10000 4:REFERENCES:4016 " +
		"5:WALKED:10400 5:WALKED:10400 5:WALKED:10400 5:WALKED:10400 6:WALKED:10400 6:WALKED:10400 6:WALKED:10400 6:WALKED:10400"
	if strings.Join(got, " ") != wantPages {
		t.Errorf("rdd_4_0's pages:\n%s\nwant\n%s", strings.Join(got, " "), wantPages)
	}
	if d := pages[4].GetCoverage().GetDetail(); d != "stale: objects moved by GC 2, walk pending" {
		t.Errorf("the STALE array's detail %q", d)
	}
	// rdd_3_0's pages: each column's first buffer at t1 (coverAddr(2) of
	// column 0, (3) of column 1), then a nanosecond later its walk's, both
	// batches' buffers (and coverAddr(4), (5)), every page naming its
	// column.
	rdd = 3
	got = got[:0]
	for _, p := range Trace(t, s, answer.TraceQuery{AppID: CoverageApp, RDD: &rdd, Partition: &part}) {
		b, c := p.GetBlock(), p.GetCoverage()
		col := int32((p.GetVaddr() - coverAddr(2)) >> 20 % 2)
		if !b.GetCachedBatch() || b.Column == nil || b.GetColumn() != col || b.GetColumnName() != []string{"id", "name"}[col] {
			t.Errorf("rdd_3_0 page %#x: block %v, want column %d", p.GetVaddr(), b, col)
		}
		got = append(got, fmt.Sprintf("%d+%d:%d:%d:%d", (p.GetTimeUnixNano()-T0)/1e9, (p.GetTimeUnixNano()-T0)%1e9,
			(p.GetVaddr()-coverBase)>>20, c.GetBytes(), c.GetObjects()))
	}
	slices.Sort(got)
	if want := "1+0:2:4096:0 1+0:3:4096:0 1+1:2:5120:2 1+1:3:6144:2 1+1:4:5120:2 1+1:5:6144:2"; strings.Join(got, " ") != want {
		t.Errorf("rdd_3_0's pages (time:range:bytes:objects):\n%s\nwant\n%s", strings.Join(got, " "), want)
	}
}

// testCoverageReport: the coverage scenario's RDDs, Numa, physical map and
// blocks while every block is live, then, after the session's end, the
// same RDDs (none live) and the occupation over time: a walked block is
// its latest walk's objects, not the array of references a STALE mark or
// a pending walk names.
func testCoverageReport(t *testing.T, be Backend) {
	ctx := context.Background()
	s := be.open(t)
	batches := CoverageBatches()
	MustAppend(t, s, batches[0])
	rdds, err := s.RDDs(ctx, CoverageApp)
	if err != nil {
		t.Fatal(err)
	}
	EqualRows(t, rdds, CoverageRDDs(true))
	wantNumaOf(t, s, CoverageApp, CoverageNuma())
	for _, rdd := range []int32{3, 4} {
		got, err := s.Blocks(ctx, CoverageApp, rdd)
		if err != nil {
			t.Fatal(err)
		}
		EqualBlocks(t, got, CoverageBlocks(rdd))
	}
	if got, err := s.Blocks(ctx, CoverageApp, 99); err != nil || len(got) != 0 {
		t.Errorf("blocks of RDD 99: %v %v", got, err)
	}

	// The map holds the latest walks' frames (rdd_4_0's second at 0x2300,
	// rdd_4_1's at 0x2200), not the first walk of rdd_4_0 (0x2000, 0x2100),
	// the arrays the STALE marks name (0x1500, 0x1600) nor those of the
	// blocks walked since (0x1300, 0x1301); rdd_5_0's array it holds.
	held := map[uint64]string{}
	var m *answer.PhysMap
	for _, from := range []uint64{0x1000, 0x2000} {
		if m, err = s.PhysMap(ctx, answer.PhysMapQuery{AppID: CoverageApp, From: from, To: from + 0x800, Buckets: 0x800}); err != nil {
			t.Fatal(err)
		}
		for _, b := range m.Buckets {
			if b.Block != nil {
				held[b.Start] = b.Block.BlockID
			}
		}
	}
	for pfn, want := range map[uint64]string{0x2200: "rdd_4_1", 0x2000: "", 0x2300: "rdd_4_0", 0x1400: "rdd_5_0",
		0x1500: "", 0x1600: "", 0x1300: "", 0x1301: "", 0x2100: ""} {
		if held[pfn] != want {
			t.Errorf("PFN %#x holds %q, want %q", pfn, held[pfn], want)
		}
	}
	wantRDDs := []answer.RDDPages{{RDDID: 2, Present: 4}, {RDDID: 3, Present: 4}, {RDDID: 4, Present: 5, Swapped: 1}, {RDDID: 5, Present: 2}}
	if !reflect.DeepEqual(m.RDDs, wantRDDs) {
		t.Errorf("map's RDDs %+v, want %+v", m.RDDs, wantRDDs)
	}

	MustAppend(t, s, batches[1])
	if rdds, err = s.RDDs(ctx, CoverageApp); err != nil {
		t.Fatal(err)
	}
	EqualRows(t, rdds, CoverageRDDs(false))
	wantNumaOf(t, s, CoverageApp, nil)
	got, err := s.Blocks(ctx, CoverageApp, 4)
	if err != nil {
		t.Fatal(err)
	}
	EqualBlocks(t, got, CoverageBlocks(4))
	occ, err := s.Occupation(ctx, CoverageApp)
	if err != nil {
		t.Fatal(err)
	}
	EqualRows(t, occ, CoverageOccupation())
	points, err := s.Occupancy(ctx, CoverageApp, 9)
	if err != nil {
		t.Fatal(err)
	}
	var steps []string
	for _, p := range points {
		steps = append(steps, fmt.Sprintf("%d@%d:%d", p.RDDID, (p.TimeNs-T0)/1e9, p.Pages))
	}
	if strings.Join(steps, " ") != CoverageOccupancy {
		t.Errorf("occupancy = %s\nwant %s", strings.Join(steps, " "), CoverageOccupancy)
	}
}

// wantNumaOf checks the NUMA rows of app.
func wantNumaOf(tb testing.TB, s store.Store, app string, want []*stratav1.NumaRow) {
	tb.Helper()
	rows, err := s.Numa(context.Background(), app)
	if err != nil {
		tb.Fatal(err)
	}
	EqualRows(tb, rows, want)
}

// EqualBlocks fails tb unless got and want hold the same blocks in order.
func EqualBlocks(tb testing.TB, got, want []answer.BlockCoverage) {
	tb.Helper()
	if len(got) != len(want) {
		tb.Fatalf("got %d blocks %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		same := g.ExecutorID == w.ExecutorID && g.BlockID == w.BlockID && g.Partition == w.Partition &&
			g.SparkBytes == w.SparkBytes && g.Bytes == w.Bytes && g.ResolvedBytes == w.ResolvedBytes &&
			g.SharedBytes == w.SharedBytes && reflect.DeepEqual(g.ResolvedShare, w.ResolvedShare) &&
			len(g.Parts) == len(w.Parts) && len(g.Buffers) == len(w.Buffers)
		for j := 0; same && j < len(w.Parts); j++ {
			same = proto.Equal(g.Parts[j], w.Parts[j])
		}
		for j := 0; same && j < len(w.Buffers); j++ {
			gb, wb := g.Buffers[j], w.Buffers[j]
			same = proto.Equal(gb.Coverage, wb.Coverage) && reflect.DeepEqual(gb.Column, wb.Column)
			gb.Coverage, wb.Coverage, gb.Column, wb.Column = nil, nil, nil, nil
			same = same && gb == wb
		}
		if !same {
			tb.Errorf("block %d = %s\nwant %s", i, blockString(g), blockString(w))
		}
	}
}

func blockString(b answer.BlockCoverage) string {
	s := fmt.Sprintf("%+v", b)
	for _, p := range b.Parts {
		s += " part{" + p.String() + "}"
	}
	for _, x := range b.Buffers {
		s += fmt.Sprintf(" buffer{%+v cov{%v}}", x, x.Coverage)
	}
	return s
}

// PreviousBatch is ChunkBatch(1) in the coverage scenario's application,
// as a collector that predates coverage stored it: rdd_9_1 in two
// buffers, with no coverage and no Spark size.
func PreviousBatch() *stratav1.Batch {
	b := ChunkBatch(1)
	for _, r := range b.Records {
		r.Block.AppId = CoverageApp
	}
	return b
}

// WantMigrated checks a store that holds PreviousBatch, stored before the
// store had coverage columns, and was opened since: it stores the coverage
// scenario beside it, PreviousBatch's records read without coverage, Spark
// size or column, and RDDs gives the scenario's answer and RDD 9's, whose
// buffers are counted by their lengths.
func WantMigrated(t *testing.T, s store.Store) {
	t.Helper()
	ctx := context.Background()
	for _, b := range CoverageBatches() {
		b.Seq += 10
		MustAppend(t, s, b)
	}
	nine := int32(9)
	n := 0
	if err := s.Records(ctx, answer.RecordsQuery{AppID: CoverageApp, RDD: &nine}, func(r *stratav1.RecordRow) error {
		n++
		if b := r.GetBlock(); r.GetCoverage() != nil || b.GetSparkBytes() != 0 || b.Column != nil || b.GetCachedBatch() {
			t.Errorf("old record %v: want no coverage, size or column", r)
		}
		return nil
	}); err != nil || n != 2 {
		t.Fatalf("%d old records, %v", n, err)
	}
	rdds, err := s.RDDs(ctx, CoverageApp)
	if err != nil {
		t.Fatal(err)
	}
	old := &stratav1.RddReport{RddId: 9, Blocks: 1, Partitions: 1, Bytes: 5 * PageSize, Pages: 5, Present: 5,
		Nodes: []*stratav1.NodePages{{NumaNode: 0, Pages: 3}, {NumaNode: 1, Pages: 2}}, Writes: 1, Faults: &stratav1.FaultCounts{},
		PageSize: PageSize, LiveBlocks: 1, Parts: []*stratav1.ResolvedPart{{Blocks: 1, Buffers: 2, Bytes: 5 * PageSize}}}
	EqualRows(t, rdds, append(CoverageRDDs(false), old))
}
