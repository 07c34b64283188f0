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

// TestNUMABalanceEndToEnd follows the NUMA node count from the agent's
// batches to a job's result: batches pushed over gRPC into the store of
// one collector, that collector stopped, a second one started on the same
// store with a job-history source, a finished Spark event log dropped
// there. An application whose machine reported two NUMA nodes and holds
// every cached page on node 0 — the worst case — is CRITICAL (imbalance
// 2.0, thresholds [1.25 1.5 1.75 2.0]); the same pages from a machine
// whose agent sent no NodeInfo give no NUMA verdict, because one node seen
// is not proof of one node.
func TestNUMABalanceEndToEnd(t *testing.T) {
	const (
		twoNodes = "application_1700000000000_0101"
		unknown  = "application_1700000000000_0102"
	)
	present := uint32(stratav1.PageState_PAGE_STATE_PRESENT)
	batch := func(node string, seq uint64, app string, ni *stratav1.NodeInfo) *stratav1.Batch {
		b := &stratav1.Batch{NodeName: node, BootId: "boot-" + node, Seq: seq, Node: ni}
		// Two cached partitions of RDD 4, 1500 pages each, all on node 0.
		for p := range int32(2) {
			va := uint64(0x20000000) + uint64(p)*0x1000000
			b.Records = append(b.Records, &stratav1.Record{
				TimeUnixNano: int64(1 + p), Access: stratav1.AccessKind_ACCESS_KIND_ALLOC, Pid: 40, PageSize: 4096, CpuNumaNode: 0,
				Block: &stratav1.SparkBlock{AppId: app, ExecutorId: "1", RddId: 4, Partition: p, BlockId: "rdd_4_" + string(rune('0'+p)),
					Mode: stratav1.MemoryMode_MEMORY_MODE_STORAGE, Location: stratav1.MemoryLocation_MEMORY_LOCATION_ON_HEAP, HookBlockId: uint64(p + 1)},
				Vaddr: va, Length: 1500 * 4096,
				Runs: []*stratav1.PageRun{{Vaddr: va, Count: 1500, State: present, Pfn: 0x100000 + uint64(p)*0x1000, Kpagecount: 1, NumaNode: 0}},
			})
		}
		return b
	}
	first := servertest.Start(t, nil, nil)
	stream, err := stratav1.NewIngestServiceClient(first.Dial(t)).Push(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range []*stratav1.Batch{
		batch("two-node", 1, twoNodes, &stratav1.NodeInfo{NumaNodes: 2, PageSize: 4096, MemTotalBytes: 64 << 30}),
		batch("old-agent", 1, unknown, nil),
	} {
		if err := stream.Send(b); err != nil {
			t.Fatal(err)
		}
		if ack, err := stream.Recv(); err != nil || ack.GetRecords() != 2 {
			t.Fatalf("ack %d = %v, %v", i, ack, err)
		}
	}
	if err := first.Stop(); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	second := servertest.StartWith(t, nil, nil, func(cfg *server.Config) {
		cfg.StoreDir = first.StoreDir
		cfg.History = []string{dir}
		cfg.HistoryInterval = server.Duration(100 * time.Millisecond)
	})
	for _, app := range []string{twoNodes, unknown} {
		f, err := os.Create(filepath.Join(dir, app))
		if err != nil {
			t.Fatal(err)
		}
		if err := gen.WriteSparkLog(f, gen.SparkApp{AppID: app}); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	q := stratav1.NewQueryServiceClient(second.Dial(t))
	result := func(app string) map[string]*stratav1.HeuristicResult {
		deadline := time.Now().Add(30 * time.Second)
		for {
			r, err := q.Job(context.Background(), &stratav1.JobRequest{JobId: app})
			if err == nil {
				out := map[string]*stratav1.HeuristicResult{}
				for _, h := range r.GetHeuristics() {
					out[h.GetName()] = h
				}
				return out
			}
			if time.Now().After(deadline) {
				t.Fatalf("the poller did not store %s within 30s: %v", app, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	const numa = "NUMA Balance of Cached RDDs"
	h := result(twoNodes)[numa]
	if h.GetSeverity() != stratav1.Severity_SEVERITY_CRITICAL || h.GetScore() != 4 {
		t.Fatalf("%s of a two-node machine with every page on node 0 = %v; want CRITICAL, score 4", numa, h)
	}
	details := map[string]string{}
	for _, d := range h.GetDetails() {
		details[d.GetName()] = d.GetValue()
	}
	if details["NUMA nodes"] != "2" || details["rdd 4"] == "" {
		t.Errorf("details %v: want 2 NUMA nodes and a line for rdd 4", details)
	}
	if h, ok := result(unknown)[numa]; ok {
		t.Errorf("%s without the node count = %v; want no verdict", numa, h)
	}
}
