package server_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stratatrace/strata/collector/server"
	"github.com/stratatrace/strata/collector/server/servertest"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
	"github.com/stratatrace/strata/test/gen"
)

// TestPollerAnalysesWithTraces: the collector holds traces of app X (RDD 5:
// 3000 base pages, 1000 THP pages, 100 swapped pages), then a finished
// Spark event log of X appears in a polled directory. The stored analysis
// must carry Dr. Elephant's Spark heuristics and the cross-layer ones with
// the severities the default thresholds give these numbers.
func TestPollerAnalysesWithTraces(t *testing.T) {
	const app = "application_1700000000000_0042"
	present := uint32(stratav1.PageState_PAGE_STATE_PRESENT)
	batch := &stratav1.Batch{NodeName: "n1", BootId: "b", Seq: 1, Records: []*stratav1.Record{{
		TimeUnixNano: 1, Access: stratav1.AccessKind_ACCESS_KIND_ALLOC, Pid: 10, PageSize: 4096, CpuNumaNode: -1,
		Block: &stratav1.SparkBlock{AppId: app, ExecutorId: "1", RddId: 5, Partition: 0, BlockId: "rdd_5_0",
			Mode: stratav1.MemoryMode_MEMORY_MODE_STORAGE, Location: stratav1.MemoryLocation_MEMORY_LOCATION_ON_HEAP, HookBlockId: 1},
		Vaddr: 0x10000000, Length: 4100 * 4096,
		Runs: []*stratav1.PageRun{
			{Vaddr: 0x10000000, Count: 3000, State: present, Pfn: 0x1000, Kpagecount: 1},
			{Vaddr: 0x10000000 + 3000*4096, Count: 1000, State: present | uint32(stratav1.PageState_PAGE_STATE_THP), Pfn: 0x40000, FolioPages: 512, Kpagecount: 1},
			{Vaddr: 0x10000000 + 4000*4096, Count: 100, State: uint32(stratav1.PageState_PAGE_STATE_SWAPPED), SwapOffset: 7, NumaNode: -1},
		},
	}}}
	// 1200 sampled faults in the block, 800 of them from a CPU of node 1 on
	// node-0 pages: remote share 0.667, ascending [0.1 0.25 0.4 0.5].
	for i := range 1200 {
		cpu := int32(0)
		if i < 800 {
			cpu = 1
		}
		va := uint64(0x10000000 + (i%3000)*4096)
		batch.Records = append(batch.Records, &stratav1.Record{
			TimeUnixNano: int64(2 + i), Access: stratav1.AccessKind_ACCESS_KIND_FAULT, Pid: 10, PageSize: 4096,
			CpuNumaNode: cpu, FaultKind: stratav1.FaultKind_FAULT_KIND_READ, Block: batch.Records[0].Block,
			Vaddr: va + 0x10, Length: 1, Runs: []*stratav1.PageRun{{Vaddr: va, Count: 1, State: present, Pfn: 0x1000 + uint64(i), NumaNode: 0}},
		})
	}
	dir := t.TempDir()
	c := servertest.StartWith(t, []*stratav1.Batch{batch}, nil, func(cfg *server.Config) {
		cfg.History = []string{dir}
		cfg.HistoryInterval = server.Duration(100 * time.Millisecond)
	})
	f, err := os.Create(filepath.Join(dir, app))
	if err != nil {
		t.Fatal(err)
	}
	if err := gen.WriteSparkLog(f, gen.SparkApp{AppID: app}); err != nil {
		t.Fatal(err)
	}
	f.Close()

	q := stratav1.NewQueryServiceClient(c.Dial(t))
	var res *stratav1.JobResult
	deadline := time.Now().Add(30 * time.Second)
	for res == nil {
		if time.Now().After(deadline) {
			t.Fatal("the poller did not store the job within 30s")
		}
		r, err := q.Job(context.Background(), &stratav1.JobRequest{JobId: app})
		if err == nil {
			res = r
		}
		time.Sleep(50 * time.Millisecond)
	}
	got := map[string]stratav1.Severity{}
	for _, h := range res.GetHeuristics() {
		got[h.GetName()] = h.GetSeverity()
	}
	want := map[string]stratav1.Severity{
		// 1000 of 4000 resident pages on THP: 0.25, descending [0.5 0.25 0.1 0.05].
		"THP Coverage of Cached Blocks": stratav1.Severity_SEVERITY_MODERATE,
		// 100 of 4100 pages swapped: 0.024, ascending [0.001 0.01 0.05 0.1].
		"Swapped Cached Blocks": stratav1.Severity_SEVERITY_MODERATE,
		"Remote-Node Faults":    stratav1.Severity_SEVERITY_CRITICAL,
	}
	for name, sev := range want {
		if g, ok := got[name]; !ok || g != sev {
			t.Errorf("%s = %v (present %v), want %v; all: %v", name, g, ok, sev, got)
		}
	}
	if _, ok := got["Spark Configuration"]; !ok {
		t.Errorf("Dr. Elephant's Spark heuristics missing: %v", got)
	}
	if res.GetType() != "spark" || res.GetAppId() != app {
		t.Errorf("job = %s %s", res.GetType(), res.GetAppId())
	}
}
