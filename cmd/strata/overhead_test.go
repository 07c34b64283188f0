package main

import (
	"strings"
	"testing"

	"github.com/stratatrace/strata/collector/store/storetest"
)

func TestOverhead(t *testing.T) {
	addr := collector(t)
	out := strata(t, "overhead", "--collector", addr, "--app", storetest.App, "-o", "json")
	got := jsonLines[map[string]any](t, out)
	if len(got) != 2 {
		t.Fatalf("overhead: %s", out)
	}
	if _, has := got[0]["walk_pct"]; has || got[0]["pmu_status"] != "unavailable: no hardware PMU" || got[0]["fault_rate_per_sec"] != 20.0 {
		t.Errorf("no-PMU row = %v: want no walk_pct and the reason", got[0])
	}
	if got[1]["walk_pct"] != 7.5 || got[1]["walk_pct_read"] != 5.0 || got[1]["walk_pct_write"] != 2.5 || got[1]["walk_pct_rdd"] != 1.0 {
		t.Errorf("PMU row = %v: want walk 7.5 (5 read, 2.5 write, 1 rdd)", got[1])
	}
	table := strata(t, "overhead", "--collector", addr, "--app", storetest.App)
	if !strings.Contains(table, "unavailable: no hardware PMU") || !strings.Contains(table, "7.50% (read 5.00%, write 2.50%, rdd 1.00%)") {
		t.Errorf("overhead table:\n%s", table)
	}
}
