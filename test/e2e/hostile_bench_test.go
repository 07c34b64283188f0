package e2e

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stratatrace/strata/test/testenv"
	"github.com/stratatrace/strata/test/workload"
)

// BenchmarkWellBehavedUnderHostilePeer gives the hardening issue's closing
// figures: the throughput a well-behaved peer gets through the real agent
// to the real collector (pages per second of records the collector
// acknowledged; blocks.c, 1 GiB in 4 MiB blocks, registered then read 3
// times; the median of 3 runs) and the agent's peak RSS, while a hostile
// peer of another uid sits at each bound with the agent's defaults, as a
// ratio against the same load with no hostile peer, measured in the same
// run.
func BenchmarkWellBehavedUnderHostilePeer(b *testing.B) {
	testenv.RequireRoot(b)
	bin, pbin := bins(b), buildPeer(b)
	wbin := workload.Compile(b, "blocks", "test/e2e/blocks.c")
	var baseRate float64
	for _, c := range []struct {
		name   string
		faults string
		start  func(b *testing.B, ag *agentProc) string // starts the hostile peer, says what it holds
	}{
		{"baseline", "off", func(*testing.B, *agentProc) string { return "no hostile peer" }},
		{"sessions-at-uid-cap", "off", func(b *testing.B, ag *agentProc) string {
			// 70 processes x 4 sessions (the per-pid cap): the uid's 256
			// are held, the other 24 refused at accept.
			for range 70 {
				startPeer(b, pbin, nobody, ag.socket, "sessions", "4")
			}
			return "256 idle sessions held, 24 refused"
		}},
		{"range-at-max", "off", func(b *testing.B, ag *agentProc) string {
			// Two peers re-resolving 16 GiB ranges without pause: both
			// resolvers always have their slices queued.
			for range 2 {
				startPeer(b, pbin, nobody, ag.socket, "range", strconv.FormatUint(16<<30, 10), "1")
			}
			return "2 peers MOVEing a 16 GiB range in a loop"
		}},
		{"range-whole-space", "off", func(b *testing.B, ag *agentProc) string {
			for range 2 {
				startPeer(b, pbin, nobody, ag.socket, "range", strconv.FormatUint(0x7fffffff0000, 10), "0")
			}
			return "2 peers registering the whole user address space (refused)"
		}},
		{"blocks-at-uid-cap", "off", func(b *testing.B, ag *agentProc) string {
			// 140000 one-page blocks over 3 sessions: 131072 live.
			startPeer(b, pbin, nobody, ag.socket, "blocks", "140000", "4", "3")
			waitFor(b, "the hostile blocks", 5*time.Minute, func() bool {
				r, _ := ag.metric(`strata_hook_frames_refused_total{reason="blocks_uid"}`)
				return r >= 140000-131072
			})
			return "131072 live blocks (the uid's cap), 8928 refused"
		}},
		{"kernel-table-full", "on", func(b *testing.B, ag *agentProc) string {
			startPeer(b, pbin, nobody, ag.socket, "blocks", "70000", "64", "2")
			waitFor(b, "the hostile blocks", 5*time.Minute, func() bool {
				v, _ := ag.metric("strata_live_blocks")
				return v >= 70000
			})
			return "70000 blocks, over the kernel table's 65536 slots"
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			_, addr := startCollector(b, bin)
			dir := b.TempDir()
			openToAll(b, dir)
			ag := startAgentOpts(b, bin, addr, dir, agentOpts{}, "--faults", c.faults, "--stats-interval", "0", "--flush-interval", "200ms")
			held := c.start(b, ag)
			const mib, blockMiB, rounds = 1024, 4, 3
			b.StopTimer()
			var rates []float64
			var elapsed time.Duration
			for rep := range 3 {
				w := startBlocks(b, wbin, ag.socket, fmt.Sprintf("bench-good-%s-%d-%d", c.name, rep, time.Now().UnixNano()), mib, blockMiB, false, rounds)
				records := float64(mib / blockMiB * (1 + rounds))
				pages := float64(w.pages) * (1 + rounds)
				base, _ := ag.metric("strata_stream_records_acked_total")
				b.StartTimer()
				start := time.Now()
				io.WriteString(w.in, "go\n")
				waitFor(b, "the well-behaved peer's records acknowledged", 5*time.Minute, func() bool {
					v, _ := ag.metric("strata_stream_records_acked_total")
					return v-base >= records
				})
				d := time.Since(start)
				b.StopTimer()
				elapsed += d
				rates = append(rates, pages/d.Seconds())
				w.in.Close() // frees its blocks and exits
				w.cmd.Wait()
			}
			slices.Sort(rates)
			rate := rates[1]
			if c.name == "baseline" {
				baseRate = rate
			}
			rss := float64(peakRSS(ag.cmd.Process.Pid)) / 1024
			logKiB := float64(len(ag.out.String())) / 1024
			b.ReportMetric(rate, "good-pages/s")
			b.ReportMetric(rss, "agent-peak-MiB")
			b.ReportMetric(logKiB, "agent-log-KiB")
			if baseRate > 0 {
				b.ReportMetric(rate/baseRate, "ratio-vs-baseline")
			}
			b.Logf("%s (%s): well-behaved peer %.2f M pages/s (%.2fx baseline) in %v; agent peak RSS %.0f MiB, log %.0f KiB; refusals: %s",
				c.name, held, rate/1e6, rate/max(baseRate, 1), elapsed.Round(time.Millisecond), rss, logKiB, refusals(ag))
		})
	}
}

// refusals summarises the agent's non-zero refusal counters.
func refusals(ag *agentProc) string {
	var out []string
	for _, m := range []string{
		`strata_hook_sessions_refused_total{cap="node"}`, `strata_hook_sessions_refused_total{cap="uid"}`,
		`strata_hook_sessions_refused_total{cap="pid"}`, `strata_hook_sessions_closed_total{reason="idle"}`,
		`strata_hook_frames_refused_total{reason="range_length"}`, `strata_hook_frames_refused_total{reason="blocks_uid"}`,
		`strata_hook_frames_refused_total{reason="blocks_node"}`, "strata_kernel_mirror_errors_total", "strata_log_suppressed_total",
	} {
		if v, err := ag.metric(m); err == nil && v > 0 {
			out = append(out, fmt.Sprintf("%s=%v", m, v))
		}
	}
	return strings.Join(out, " ")
}
