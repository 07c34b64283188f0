package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stratatrace/strata/test/testenv"
	"github.com/stratatrace/strata/test/workload"
)

// TestFaults runs the agent with its BPF fault attribution loaded: a
// process registers 4 blocks of 4 MiB (base pages), then drops and rewrites
// them 3 times. Each block must show exactly 3 x 1024 write faults and no
// read faults, through `strata faults`; `strata overhead` must show the
// process's fault counters and say the page-walk share is unavailable
// rather than print a number.
func TestFaults(t *testing.T) {
	testenv.RequireRoot(t)
	bin := bins(t)
	wbin := workload.Compile(t, "blocks", "test/e2e/blocks.c")
	col, addr := startCollector(t, bin)
	ag := startAgent(t, bin, addr, "--faults", "on", "--counters-interval", "200ms")

	app := fmt.Sprintf("app-faults-%d", time.Now().UnixNano())
	cmd, in := runFaultWorkload(t, wbin, ag, app)
	defer cmd.Wait()
	defer cmd.Process.Kill()

	var rows []faultRow
	waitFor(t, "fault counters of 4 blocks", 30*time.Second, func() bool {
		rows = faultRows(t, bin, addr, app)
		if len(rows) != 4 {
			return false
		}
		for _, r := range rows {
			if r.Write < faultRounds*pagesPerBlock {
				return false
			}
		}
		return true
	})
	for _, r := range rows {
		if r.Write != faultRounds*pagesPerBlock || r.Read != 0 || r.Exec != 0 || r.Major != 0 {
			t.Fatalf("block %s: read %d write %d exec %d major %d; want write %d and nothing else (all: %+v)",
				r.BlockID, r.Read, r.Write, r.Exec, r.Major, faultRounds*pagesPerBlock, rows)
		}
	}

	// Hotness: every sampled fault is a write on one of the blocks' pages,
	// and `strata hot` counts exactly the samples `strata trace` lists. The
	// samples travel in the records' batches, which may come after the
	// counters: wait until both views hold them.
	type hotPage struct {
		Samples, Reads, Writes uint64
		Partition              int32
	}
	var hot []hotPage
	var hotSamples, hotWrites, traced uint64
	waitFor(t, "sampled faults in hot and trace", 30*time.Second, func() bool {
		hot, hotSamples, hotWrites, traced = nil, 0, 0, 0
		out := strings.TrimSpace(runCLI(t, bin, "hot", "--collector", addr, "--app", app, "--limit", "0", "-o", "json"))
		for _, l := range strings.Split(out, "\n") {
			if l == "" {
				continue
			}
			var h hotPage
			if err := json.Unmarshal([]byte(l), &h); err != nil {
				t.Fatalf("hot line %q: %v", l, err)
			}
			hot = append(hot, h)
			hotSamples += h.Samples
			hotWrites += h.Writes
		}
		for _, p := range trace(t, bin, addr, app) {
			if p.Access == "fault" {
				traced++
			}
		}
		return hotSamples > 0 && hotSamples == traced
	})
	for _, h := range hot {
		if h.Reads != 0 || h.Partition < 0 || h.Partition > 3 {
			t.Fatalf("hot page %+v", h)
		}
	}
	if hotWrites != hotSamples {
		t.Fatalf("hot: %d samples (%d writes), trace lists %d fault pages", hotSamples, hotWrites, traced)
	}

	var ov []map[string]any
	waitFor(t, "workload counters", 30*time.Second, func() bool {
		ov = ov[:0]
		for _, l := range strings.Split(strings.TrimSpace(runCLI(t, bin, "overhead", "--collector", addr, "--app", app, "-o", "json")), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) == nil {
				ov = append(ov, m)
			}
		}
		return len(ov) == 1 && ov[0]["minor_faults"].(float64) >= faultRounds*mib<<20/4096
	})
	o := ov[0]
	if rf := o["rdd_faults"].(map[string]any); rf["write"].(float64) != 4*faultRounds*pagesPerBlock {
		t.Fatalf("overhead rdd_faults = %v, want write %d", rf, 4*faultRounds*pagesPerBlock)
	}
	if _, ok := o["walk_pct"]; ok {
		t.Fatalf("overhead printed a page-walk share without a PMU: %v", o)
	}
	if s, _ := o["pmu_status"].(string); !strings.HasPrefix(s, "unavailable") && !strings.HasPrefix(s, "available") {
		t.Fatalf("pmu_status = %q", s)
	}
	if v, _ := ag.metric("strata_faults_kernel_drops_total"); v != 0 {
		t.Fatalf("kernel dropped %v fault events", v)
	}
	in.Close()
	cmd.Wait()
	ag.stop(t)
	col.stop(t)
}

// The fault workload: 4 blocks of 4 MiB in base pages, dropped and
// rewritten faultRounds times after the agent registered them.
const (
	mib, blockMiB, faultRounds = 16, 4, 3
	pagesPerBlock              = blockMiB << 20 / 4096
)

// runFaultWorkload starts test/e2e/blocks.c reporting to ag as app, waits
// until the agent has its blocks in the kernel, lets it fault, and returns
// it still running, waiting on its stdin: closing it frees the blocks and
// ends the workload.
func runFaultWorkload(t *testing.T, wbin string, ag *agentProc, app string, env ...string) (*exec.Cmd, io.WriteCloser) {
	t.Helper()
	cmd := exec.Command(wbin, ag.socket, app, fmt.Sprint(mib), fmt.Sprint(blockMiB), "0", "0", fmt.Sprint(faultRounds))
	cmd.Env = append(os.Environ(), env...)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })
	lines := make(chan string, 4)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func(what string) string {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("workload exited before %s: %s", what, errb.String())
			}
			return l
		case <-time.After(60 * time.Second):
			t.Fatalf("workload: no %s after 60s", what)
		}
		return ""
	}
	next("touched")
	io.WriteString(in, "go\n")
	if l := next("sent"); !strings.Contains(l, `"sent":true`) {
		t.Fatalf("workload said %s", l)
	}
	waitFor(t, "the agent to register 4 blocks in the kernel", 30*time.Second, func() bool {
		v, _ := ag.metric("strata_faults_blocks")
		return v == 4
	})
	io.WriteString(in, "fault\n")
	if l := next("faulted"); !strings.Contains(l, `"faulted":true`) {
		t.Fatalf("workload said %s", l)
	}
	return cmd, in
}

type faultRow struct {
	Partition   int32  `json:"partition"`
	BlockID     string `json:"block_id"`
	Read, Write uint64
	Exec, Major uint64
}

func faultRows(t *testing.T, bin, addr, app string) []faultRow {
	t.Helper()
	var rows []faultRow
	for _, l := range strings.Split(strings.TrimSpace(runCLI(t, bin, "faults", "--collector", addr, "--app", app, "-o", "json")), "\n") {
		var r faultRow
		if json.Unmarshal([]byte(l), &r) == nil {
			rows = append(rows, r)
		}
	}
	return rows
}

// TestFaultsOfKilledProcess: the workload is killed (SIGKILL: no FREE
// frames) right after faulting, and periodic counters are off, so the
// blocks' final counters can only reach the collector on the FREE records
// of the session's end. Either order of "process exited" (the tracer
// forgets it) and "session ended" must give exact counters; a forked child
// holding the socket makes the exit come first.
func TestFaultsOfKilledProcess(t *testing.T) {
	testenv.RequireRoot(t)
	bin := bins(t)
	wbin := workload.Compile(t, "blocks", "test/e2e/blocks.c")
	col, addr := startCollector(t, bin)
	ag := startAgent(t, bin, addr, "--faults", "on", "--counters-interval", "1h")
	for _, c := range []struct {
		name string
		env  []string
	}{
		{"session-ends-with-process", nil},
		{"process-exits-first", []string{"BLOCKS_HOLD_MS=1500"}},
	} {
		app := fmt.Sprintf("app-killed-%s-%d", c.name, time.Now().UnixNano())
		cmd, _ := runFaultWorkload(t, wbin, ag, app, c.env...)
		cmd.Process.Kill()
		cmd.Wait()
		var rows []faultRow
		waitFor(t, c.name+": final counters of 4 blocks", 30*time.Second, func() bool {
			rows = faultRows(t, bin, addr, app)
			return len(rows) == 4
		})
		for _, r := range rows {
			if r.Write != faultRounds*pagesPerBlock || r.Read != 0 {
				t.Fatalf("%s: block %s read %d write %d, want write %d (all: %+v)", c.name, r.BlockID, r.Read, r.Write, faultRounds*pagesPerBlock, rows)
			}
		}
	}
	ag.stop(t)
	col.stop(t)
}
