package main

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/stratatrace/strata/collector/query/jsonform"
	"github.com/stratatrace/strata/collector/store/storetest"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

func TestTraceJSON(t *testing.T) {
	addr := collector(t)
	got := jsonLines[map[string]any](t, strata(t, "trace", "--collector", addr, "--app", storetest.App,
		"--rdd", "7", "--partition", "3", "--limit", "6", "-o", "json"))
	if len(got) != 6 {
		t.Fatalf("got %d pages, want 6", len(got))
	}
	flags := func(names ...string) []any {
		out := make([]any, len(names))
		for i, n := range names {
			out[i] = n
		}
		return out
	}
	want := []map[string]any{
		{"vaddr": "0x7f0000000000", "present": true, "swapped": false, "pfn": 4096.0, "paddr": "0x1000000", "numa_node": 0.0, "thp": false, "flags": flags("uptodate", "lru", "anon")},
		{"vaddr": "0x7f0000001000", "present": true, "swapped": false, "pfn": 4097.0, "paddr": "0x1001000", "numa_node": 0.0, "thp": false, "flags": flags("uptodate", "lru", "anon")},
		{"vaddr": "0x7f0000002000", "present": true, "swapped": false, "pfn": 4098.0, "paddr": "0x1002000", "numa_node": 0.0, "thp": false, "flags": flags("uptodate", "lru", "anon")},
		{"vaddr": "0x7f0000003000", "present": true, "swapped": false, "pfn": 8192.0, "paddr": "0x2000000", "numa_node": 1.0, "thp": true, "flags": flags("uptodate", "lru", "anon", "compound_head", "thp")},
		{"vaddr": "0x7f0000004000", "present": true, "swapped": false, "pfn": 8193.0, "paddr": "0x2001000", "numa_node": 1.0, "thp": true, "flags": flags("uptodate", "lru", "anon", "compound_tail", "thp")},
		{"vaddr": "0x7f0000005000", "present": false, "swapped": true, "pfn": 0.0, "paddr": "0x0", "numa_node": -1.0, "thp": false, "flags": flags()},
	}
	for i, w := range want {
		w["rdd"], w["partition"], w["block_id"], w["executor_id"], w["pid"] = 7.0, 3.0, "rdd_7_3", "1", 100.0
		w["hook_block_id"], w["mode"], w["location"] = 11.0, "storage", "on_heap"
		w["access"], w["time"] = "alloc", "2023-11-14T22:13:20Z"
		w["kpagecount"] = 1.0
		if i == 5 {
			w["kpagecount"] = 0.0
		}
		if !reflect.DeepEqual(got[i], w) {
			t.Errorf("page %d =\n%v\nwant\n%v", i, got[i], w)
		}
	}
}

func TestTraceTable(t *testing.T) {
	addr := collector(t)
	out := strata(t, "trace", "--collector", addr, "--app", storetest.App, "--rdd", "8")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "TIME") ||
		!strings.Contains(lines[1], "0x7f1000000000") || !strings.Contains(lines[1], "0x3000000") || !strings.Contains(lines[1], "lru,anon") {
		t.Fatalf("table:\n%s", out)
	}
}

// A page of a block the JVM hook reported carries the hook's words for it.
func TestTracePageHookFields(t *testing.T) {
	p := jsonform.NewPage(&stratav1.TracePage{Block: &stratav1.SparkBlock{BlockId: "page_42_0",
		Kind: stratav1.BlockKind_BLOCK_KIND_TUNGSTEN_PAGE, Chunk: 0, Chunks: 1, StageId: 3, StageAttempt: 1, TaskAttemptId: 42},
		State: uint32(stratav1.PageState_PAGE_STATE_PRESENT | stratav1.PageState_PAGE_STATE_FLAGS_UNKNOWN | stratav1.PageState_PAGE_STATE_FLAGS_NOT_READ)})
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"kind": "tungsten_page", "chunk": 0.0, "chunks": 1.0, "stage_id": 3.0, "stage_attempt": 1.0,
		"task_attempt_id": 42.0, "flags_not_read": true}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (%s)", k, got[k], v, b)
		}
	}
	if _, ok := got["object_graph"]; ok {
		t.Errorf("object_graph present on a page that is not an object graph: %s", b)
	}
}
