package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stratatrace/strata/test/testenv"
	"github.com/stratatrace/strata/test/workload"
)

// TestCollectorOutageAndAgentRestart: the collector goes away, a workload
// reports its blocks, the agent is restarted while the collector is still
// away, and the collector comes back on the same store. Every page the
// agent accepted arrives, exactly once.
func TestCollectorOutageAndAgentRestart(t *testing.T) {
	testenv.RequireRoot(t)
	bin := bins(t)
	wbin := workload.Build(t)
	listen, storeDir, agentDir := freePort(t), filepath.Join(t.TempDir(), "store"), t.TempDir()

	col, addr := startCollectorAt(t, bin, listen, storeDir)
	col.stop(t) // the collector is away from the start

	ag := startAgentIn(t, bin, addr, agentDir, "--faults", "off", "--drain-timeout", "500ms")
	app := fmt.Sprintf("app-outage-%d", os.Getpid())
	w := workload.Start(t, wbin, workload.Options{Socket: ag.socket, AppID: app, ExecutorID: "1", RDD: 5})
	var pages uint64
	for _, r := range w.Regions {
		pages += r.Pages
	}
	// ALLOC, WRITE, READ per block; then FREE when the workload stops.
	waitFor(t, "the agent to spool the records", 30*time.Second, func() bool {
		v, _ := ag.metric("strata_records_total")
		return v >= 9
	})
	if _, err := w.Stop(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the FREE records", 30*time.Second, func() bool {
		v, _ := ag.metric("strata_records_total")
		return v >= 12
	})
	if v, _ := ag.metric("strata_stream_acks_total"); v != 0 {
		t.Fatalf("acks while the collector is down: %v", v)
	}
	ag.stop(t) // keeps the unacknowledged batches in its spool

	ag = startAgentIn(t, bin, addr, agentDir, "--faults", "off")
	col, _ = startCollectorAt(t, bin, listen, storeDir)
	waitFor(t, "the spool to drain", 60*time.Second, func() bool {
		v, err := ag.metric("strata_spool_pending_batches")
		return err == nil && v == 0
	})
	got := trace(t, bin, addr, app)
	if want := int(3 * pages); len(got) != want {
		t.Fatalf("collector holds %d pages after the outage, want %d (each record once)", len(got), want)
	}
	perAccess := map[string]int{}
	for _, p := range got {
		perAccess[p.Access]++
	}
	for _, acc := range []string{"alloc", "write", "read"} {
		if perAccess[acc] != int(pages) {
			t.Fatalf("%s pages = %d, want %d (%v)", acc, perAccess[acc], pages, perAccess)
		}
	}
	ag.stop(t)
	col.stop(t)
}
