package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stratatrace/strata/collector/query/jsonform"
	"github.com/stratatrace/strata/collector/store/storetest"
)

// `strata hot --by heat` ranks blocks by their latest DAMON sample's
// accesses per second per GiB: rdd_7_1 (4) before rdd_7_3 (1.25), the
// partial rdd_8_0 last; --rdd and --limit cut the list; without samples
// it says so.
func TestHotByHeat(t *testing.T) {
	addr := heatCollector(t)
	app := storetest.App
	got := jsonLines[jsonform.HeatBlock](t, strata(t, "hot", "--collector", addr, "--app", app, "--by", "heat", "-o", "json"))
	var order []string
	for _, b := range got {
		order = append(order, b.BlockID)
	}
	if strings.Join(order, " ") != "rdd_7_1 rdd_7_3 rdd_8_0" {
		t.Fatalf("ranked %v, want rdd_7_1 rdd_7_3 rdd_8_0", order)
	}
	if b := got[1]; b.AccessesPerSecGiB == nil || *b.AccessesPerSecGiB != 1.25 || b.Samples != 2 || b.ColdBytes != 1<<30 {
		t.Errorf("rdd_7_3 = %+v", b)
	}
	table := strata(t, "hot", "--collector", addr, "--app", app, "--by", "heat", "--limit", "2")
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) != 4 || lines[0] != heatMethod || !strings.HasPrefix(lines[2], "4 ") || !strings.HasPrefix(lines[3], "1.25 ") ||
		!strings.Contains(lines[3], "1024.0") {
		t.Errorf("table:\n%s", table)
	}
	only8 := strata(t, "hot", "--collector", addr, "--app", app, "--by", "heat", "--rdd", "8")
	if !strings.Contains(only8, "partial") || strings.Contains(only8, "rdd_7_") {
		t.Errorf("--rdd 8:\n%s", only8)
	}
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"hot", "--collector", addr, "--app", "application_0_0", "--by", "heat"}, &out, &errOut); err != nil ||
		!strings.Contains(errOut.String(), jsonform.NoHeat) {
		t.Errorf("no samples: %v, stderr %q", err, errOut.String())
	}
	if err := run(context.Background(), []string{"hot", "--collector", addr, "--app", app, "--by", "walks"}, &out, &errOut); err == nil ||
		!strings.Contains(err.Error(), "want faults or heat") {
		t.Errorf("--by walks: %v", err)
	}
}
