package query_test

import (
	"testing"

	"github.com/stratatrace/strata/collector/query"
	"github.com/stratatrace/strata/collector/store/storetest"
)

// The words of the coverage scenario's RDDs (storetest), and of RDDs an
// agent without coverage reported.
func TestResolvedWords(t *testing.T) {
	want := map[int32]string{
		2: "buffers 100 %",
		3: "buffers 93.8 %", // 11,264 of 12,000: 93.86, floored
		4: "walked 49.5 % (1 block); walk cut 28.5 % (1 block)",
		5: "references only: walking off",
	}
	for _, x := range storetest.CoverageRDDs(true) {
		if got := query.ResolvedWords(x.GetParts(), x.GetSparkBytes()); got != want[x.GetRddId()] {
			t.Errorf("RDD %d: %q, want %q", x.GetRddId(), got, want[x.GetRddId()])
		}
	}
	old := storetest.ReportRDDs()[0]
	if got := query.ResolvedWords(old.GetParts(), old.GetSparkBytes()); got != "not reported by the agent" {
		t.Errorf("without coverage: %q", got)
	}
	x := storetest.CoverageRDDs(true)[2]
	if got := query.ResolvedWords(x.GetParts(), 0); got != "walked (1 block); walk cut (1 block)" {
		t.Errorf("Spark's size unknown: %q", got)
	}
	if got := query.ResolvedWords(nil, 10); got != "-" {
		t.Errorf("no parts: %q", got)
	}
}

func TestShareWords(t *testing.T) {
	for _, c := range []struct {
		part, whole uint64
		want        string
	}{
		{1, 1, "100 %"}, {999, 1000, "99.9 %"}, {9999, 10000, "99.9 %"}, {1, 3, "33.3 %"}, {0, 5, "0 %"},
		{5, 4, "125 %"}, {1, 0, "-"}, {1 << 63, 1, "-"}, {1 << 62, 1 << 62, "100 %"},
	} {
		if got := query.ShareWords(c.part, c.whole); got != c.want {
			t.Errorf("ShareWords(%d, %d) = %q, want %q", c.part, c.whole, got, c.want)
		}
	}
}
