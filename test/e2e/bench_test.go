package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stratatrace/strata/agent/procmem"
	"github.com/stratatrace/strata/agent/resolver"
	"github.com/stratatrace/strata/test/testenv"
	"github.com/stratatrace/strata/test/workload"
)

// peakRSS returns VmHWM of pid in KiB.
func peakRSS(pid int) uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			n, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

type blocksProc struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan map[string]any
	pid   int
	pages uint64
	base  uint64
}

func startBlocks(b *testing.B, bin, socket, app string, mib, blockMiB int, thp bool, rounds int) *blocksProc {
	b.Helper()
	t := "0"
	if thp {
		t = "1"
	}
	p := &blocksProc{cmd: exec.Command(bin, socket, app, strconv.Itoa(mib), strconv.Itoa(blockMiB), t, strconv.Itoa(rounds)), lines: make(chan map[string]any, 4)}
	p.cmd.Stderr = os.Stderr
	p.in, _ = p.cmd.StdinPipe()
	out, _ := p.cmd.StdoutPipe()
	if err := p.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.in.Close(); p.cmd.Wait() })
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				p.lines <- m
			}
		}
		close(p.lines)
	}()
	select {
	case m := <-p.lines:
		p.pid, p.pages, p.base = int(m["pid"].(float64)), uint64(m["pages"].(float64)), uint64(m["base"].(float64))
	case <-time.After(5 * time.Minute):
		b.Fatal("blocks workload did not finish touching its memory")
	}
	return p
}

// BenchmarkAgentToCollector measures pages per second from the hook socket
// to records the collector acknowledged as stored, with the real binaries,
// against the baseline of resolving every page of those records in-process
// (no records, no spool, no gRPC, no store), and reports both daemons'
// peak RSS. A ratio near 1 on the register cases means the pipeline costs
// little beyond reading the kernel's files; above 1 on the read cases is
// the annotator's page reuse.
func BenchmarkAgentToCollector(b *testing.B) {
	testenv.RequireRoot(b)
	bin := bins(b)
	wbin := workload.Compile(b, "blocks", "test/e2e/blocks.c")
	for _, c := range []struct {
		name     string
		thp      bool
		mib      int
		blockMiB int
		rounds   int
	}{
		// Registers only: the agent resolves every page it sends.
		{"4KiB-register", false, 1024, 4, 0},
		{"THP-register", true, 1024, 8, 0},
		// Registers then 3 reads per block: reads within the annotator's
		// reuse window carry the pages resolved at registration.
		{"4KiB-read3", false, 1024, 4, 3},
		{"THP-read3", true, 1024, 8, 3},
	} {
		b.Run(c.name, func(b *testing.B) {
			col, addr := startCollector(b, bin)
			// The agent as deployed: default batching delay (the harness
			// shortens it for the tests).
			ag := startAgent(b, bin, addr, "--faults", "off", "--stats-interval", "0", "--flush-interval", "200ms")
			app := fmt.Sprintf("bench-%s-%d", c.name, time.Now().UnixNano())
			w := startBlocks(b, wbin, ag.socket, app, c.mib, c.blockMiB, c.thp, c.rounds)
			nblocks := c.mib / c.blockMiB
			records := float64(nblocks * (1 + c.rounds))
			pages := float64(w.pages) * float64(1+c.rounds)
			base, _ := ag.metric("strata_stream_records_acked_total")

			b.ResetTimer()
			start := time.Now()
			io.WriteString(w.in, "go\n")
			deadline := start.Add(5 * time.Minute)
			for {
				v, err := ag.metric("strata_stream_records_acked_total")
				if err == nil && v-base >= records {
					break
				}
				if time.Now().After(deadline) {
					b.Fatalf("collector acknowledged %v of %v records in 5 minutes", v-base, records)
				}
				time.Sleep(5 * time.Millisecond)
			}
			elapsed := time.Since(start)
			b.StopTimer()

			// Baseline: the same ranges resolved in-process, once per record.
			res, err := resolver.New(procmem.Default(), resolver.Options{})
			if err != nil {
				b.Fatal(err)
			}
			blen := uint64(c.blockMiB) << 20
			bstart := time.Now()
			var resolved uint64
			for r := 0; r < 1+c.rounds; r++ {
				for i := 0; i < nblocks; i++ {
					out, err := res.Resolve(w.pid, w.base+uint64(i)*blen, blen)
					if err != nil {
						b.Fatal(err)
					}
					resolved += out.Pages
				}
			}
			belapsed := time.Since(bstart)
			res.Close()
			e2eRate := pages / elapsed.Seconds()
			baseRate := float64(resolved) / belapsed.Seconds()
			b.ReportMetric(e2eRate, "pages/s")
			b.ReportMetric(baseRate, "resolve-only-pages/s")
			b.ReportMetric(e2eRate/baseRate, "ratio-vs-resolve")
			b.ReportMetric(float64(peakRSS(ag.cmd.Process.Pid))/1024, "agent-peak-MiB")
			b.ReportMetric(float64(peakRSS(col.cmd.Process.Pid))/1024, "collector-peak-MiB")
			b.Logf("%s: %.0f pages (%v records) end to end in %v = %.2f M pages/s; resolve-only %.2f M pages/s; ratio %.3f; agent peak RSS %d MiB, collector peak RSS %d MiB",
				c.name, pages, records, elapsed, e2eRate/1e6, baseRate/1e6, e2eRate/baseRate, peakRSS(ag.cmd.Process.Pid)/1024, peakRSS(col.cmd.Process.Pid)/1024)
		})
	}
}
