package web

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stratatrace/strata/collector/answer"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// Many read times share columns: each of maxHeatColumns spans holds the
// samples read in it.
func TestHeatColumns(t *testing.T) {
	var times []int64
	for i := range int64(100) {
		times = append(times, 1000+i*10)
	}
	cols := heatColumns(times)
	if len(cols) != maxHeatColumns || cols[0].Start != 1000 || cols[len(cols)-1].End != 1990 {
		t.Fatalf("columns %+v", cols)
	}
	for i := 1; i < len(cols); i++ {
		if cols[i].Start != cols[i-1].End+1 {
			t.Fatalf("columns %d and %d leave a gap: %+v %+v", i-1, i, cols[i-1], cols[i])
		}
	}
	if got := heatColumns([]int64{5, 3, 5}); len(got) != 2 || got[0] != (heatColumn{3, 3}) || got[1] != (heatColumn{5, 5}) {
		t.Errorf("two read times: %+v", got)
	}
}

// The colour scale runs from pale yellow at 0 to dark red at its top.
func TestHeatColor(t *testing.T) {
	for _, tc := range []struct {
		v, top float64
		want   string
	}{{0, 5, "#fff7bc"}, {5, 5, "#bd0026"}, {4, 5, "#ca3144"}, {9, 5, "#bd0026"}, {1, 0, "#fff7bc"}} {
		if got := heatColor(tc.v, tc.top); got != tc.want {
			t.Errorf("heatColor(%v, %v) = %s, want %s", tc.v, tc.top, got, tc.want)
		}
	}
}

// A map of more partitions than maxHeatRows draws the lowest and says how
// many more there are.
func TestHeatMapRows(t *testing.T) {
	rate := 0.5
	var blocks []answer.HeatBlock
	for p := range int32(maxHeatRows + 3) {
		blocks = append(blocks, answer.HeatBlock{NodeName: "n", Samples: []*stratav1.HeatSample{{ExecutorId: "1", RddId: 1,
			Partition: p, BlockId: fmt.Sprintf("rdd_1_%d", p), TimeUnixNano: 1e9, SampleIntervalNs: 2e8, ResolvedBytes: 4096,
			CoveredBytes: 4096, AccessRate: &rate}}})
	}
	out := string(heatMap(&answer.Heat{ColdFor: time.Minute, RDDs: []answer.HeatRDD{{RDD: 1, Blocks: blocks}}}, 0))
	if n := strings.Count(out, `class="heat-cell"`); n != maxHeatRows {
		t.Errorf("%d cells, want %d", n, maxHeatRows)
	}
	if !strings.Contains(out, "3 more partitions not drawn") || strings.Contains(out, fmt.Sprintf(`data-partition="%d"`, maxHeatRows)) {
		t.Error("the partitions beyond the bound are drawn or not counted")
	}
}
