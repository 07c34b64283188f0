package main

import (
	"strings"
	"testing"

	"github.com/stratatrace/strata/collector/store/storetest"
)

func TestRecordsJSON(t *testing.T) {
	addr := collector(t)
	got := jsonLines[map[string]any](t, strata(t, "records", "--collector", addr, "--app", storetest.App, "-o", "json"))
	if len(got) != 3 {
		t.Fatalf("%d records, want the sample's 3", len(got))
	}
	r := got[1]
	want := map[string]any{"access": "read", "rdd": 7.0, "partition": 3.0, "block_id": "rdd_7_3", "hook_block_id": 11.0,
		"executor_id": "1", "node": storetest.Node, "pid": 100.0, "tid": 102.0, "mode": "storage", "location": "on_heap",
		"vaddr": "0x7f0000000000", "length": 6.0 * 4096, "pages": 6.0}
	for k, v := range want {
		if r[k] != v {
			t.Errorf("%s = %v, want %v (%v)", k, r[k], v, r)
		}
	}
	if f, _ := r["faults"].(map[string]any); f["read"] != 9.0 || f["unclassified"] != 4.0 {
		t.Errorf("faults = %v, want the sample's read 9, unclassified 4", r["faults"])
	}
	if _, ok := r["kind"]; ok {
		t.Errorf("a record the hook did not describe has a kind: %v", r)
	}
}

func TestRecordsFilters(t *testing.T) {
	addr := collector(t)
	out := strata(t, "records", "--collector", addr, "--app", storetest.App, "--rdd", "8", "--access", "alloc")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "TIME") || !strings.Contains(lines[1], "rdd_8_0") {
		t.Fatalf("table:\n%s", out)
	}
	if out := strata(t, "records", "--collector", addr, "--app", storetest.App, "--access", "free"); strings.Count(out, "\n") != 1 {
		t.Fatalf("the sample has no FREE record; got:\n%s", out)
	}
	var errOut strings.Builder
	if err := run(t.Context(), []string{"records", "--collector", addr, "--app", storetest.App, "--access", "bogus"}, &errOut, &errOut); err == nil {
		t.Fatal("--access bogus accepted")
	}
}
