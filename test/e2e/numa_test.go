package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stratatrace/strata/test/gen"
	"github.com/stratatrace/strata/test/testenv"
	"github.com/stratatrace/strata/test/workload"
)

// twoNodeSys writes a sysfs tree that describes this machine as two NUMA
// nodes: node 0 holds every memory block the real machine has and its
// CPUs, node 1 holds one memory block past the end of RAM and no CPU. Every
// page the agent resolves is therefore on node 0 of a two-node machine -
// the worst case NUMA balance exists for.
func twoNodeSys(t *testing.T) string {
	t.Helper()
	real := "/sys/devices/system"
	root := t.TempDir()
	sys := filepath.Join(root, "devices", "system")
	copyFile := func(rel string) {
		b, err := os.ReadFile(filepath.Join(real, rel))
		if err != nil {
			t.Skipf("SKIP: this machine's sysfs lacks %s: %v", rel, err)
		}
		write(t, filepath.Join(sys, rel), string(b))
	}
	copyFile("memory/block_size_bytes")
	copyFile("node/node0/cpulist")
	write(t, filepath.Join(sys, "node", "online"), "0-1\n")
	write(t, filepath.Join(sys, "node", "possible"), "0-1\n")
	write(t, filepath.Join(sys, "node", "has_memory"), "0-1\n")
	write(t, filepath.Join(sys, "node", "node1", "cpulist"), "\n")
	ents, err := os.ReadDir(filepath.Join(real, "node", "node0"))
	if err != nil {
		t.Fatal(err)
	}
	last := 0
	for _, e := range ents {
		var n int
		if _, err := fmt.Sscanf(e.Name(), "memory%d", &n); err == nil && e.Name() == fmt.Sprintf("memory%d", n) {
			mkdir(t, filepath.Join(sys, "node", "node0", e.Name()))
			last = max(last, n)
		}
	}
	if last == 0 {
		t.Skip("SKIP: /sys/devices/system/node/node0 lists no memory blocks")
	}
	mkdir(t, filepath.Join(sys, "node", "node1", fmt.Sprintf("memory%d", last+1000)))
	return root
}

func write(t *testing.T, path, s string) {
	t.Helper()
	mkdir(t, filepath.Dir(path))
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestNUMABalanceEndToEnd follows the NUMA link through every process: the
// agent reads a two-node topology from --sys and says so in its batches,
// the collector keeps that beside the records, and when the job history of
// the same application arrives the cross-layer NUMA balance heuristic rates
// a cached RDD whose pages all sit on node 0 as CRITICAL (2.0× the even
// share, the top threshold).
func TestNUMABalanceEndToEnd(t *testing.T) {
	testenv.RequireRoot(t)
	bin := bins(t)
	wbin := workload.Build(t)
	history := t.TempDir()
	col, addr := startCollectorWith(t, bin, "--history", history, "--history-interval", "200ms")
	ag := startAgent(t, bin, addr, "--faults", "off", "--sys", twoNodeSys(t))

	app := fmt.Sprintf("application_%d_0001", time.Now().UnixMilli())
	w := workload.Start(t, wbin, workload.Options{Socket: ag.socket, AppID: app, ExecutorID: "1", RDD: 7})
	var want int
	for _, r := range w.Regions {
		want += int(3 * r.Pages) // ALLOC + write + read, every page
	}
	waitFor(t, "the collector to hold every page", 60*time.Second, func() bool {
		return len(trace(t, bin, addr, app)) >= want
	})
	for _, p := range trace(t, bin, addr, app) {
		if p.Present && p.NUMANode != 0 {
			t.Fatalf("page %s on node %d; the fixture puts all memory on node 0", p.VAddr, p.NUMANode)
		}
	}

	// The job history arrives after the traces, as a finished job's does.
	f, err := os.Create(filepath.Join(history, app))
	if err != nil {
		t.Fatal(err)
	}
	if err := gen.WriteSparkLog(f, gen.SparkApp{AppID: app, StartMs: time.Now().Add(-time.Minute).UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	f.Close()

	type heuristic struct {
		Name     string `json:"name"`
		Severity string `json:"severity"`
		Details  []struct {
			Name  string `json:"name"`
			Value string `json:"value"`
		} `json:"details"`
	}
	var job struct {
		Heuristics []heuristic `json:"heuristics"`
	}
	waitFor(t, "the poller to analyse the job", 60*time.Second, func() bool {
		out, err := runCLIErr(bin, "job", "--collector", addr, "-o", "json", app)
		return err == nil && json.Unmarshal([]byte(out), &job) == nil
	})
	var numa *heuristic
	for i, h := range job.Heuristics {
		if h.Name == "NUMA Balance of Cached RDDs" {
			numa = &job.Heuristics[i]
		}
	}
	if numa == nil {
		t.Fatalf("job has no NUMA balance result: %+v", job.Heuristics)
	}
	if numa.Severity != "critical" {
		t.Fatalf("NUMA balance severity %s, want CRITICAL: %+v", numa.Severity, numa.Details)
	}
	var nodes, rdd string
	for _, d := range numa.Details {
		switch {
		case d.Name == "NUMA nodes":
			nodes = d.Value
		case strings.HasPrefix(d.Name, "rdd 7"):
			rdd = d.Value
		}
	}
	if nodes != "2" || !strings.Contains(rdd, "on node 0") {
		t.Fatalf("details say nodes %q, rdd 7 %q; want 2 nodes and rdd 7 on node 0", nodes, rdd)
	}
	if _, err := w.Stop(); err != nil {
		t.Fatal(err)
	}
	ag.stop(t)
	col.stop(t)
}
