package loadgen_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stratatrace/strata/test/chserver"
	"github.com/stratatrace/strata/test/loadgen"
	"github.com/stratatrace/strata/test/testenv"
)

func TestMain(m *testing.M) { os.Exit(chserver.Main(m)) }

// envDuration reads a duration from the environment, def when unset.
func envDuration(tb testing.TB, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	return d
}

// collector is a strata-collector process the benchmark runs, restarts
// and kills.
type collector struct {
	bin, addr string
	args      []string
	cmd       *exec.Cmd
	exited    chan struct{}
	stderr    strings.Builder
	mu        sync.Mutex
	peakKiB   int64 // the highest VmRSS sampled
}

// start runs the collector and waits until it listens.
func (c *collector) start() error {
	c.cmd = exec.Command(c.bin, append([]string{"--listen", c.addr, "--log-level", "warn", "--insecure"}, c.args...)...)
	c.cmd.Stderr = &lockedWriter{mu: &c.mu, w: &c.stderr}
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := c.cmd.Start(); err != nil {
		return err
	}
	c.exited = make(chan struct{})
	go func() { c.cmd.Wait(); close(c.exited) }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "listening ") {
		return fmt.Errorf("collector: %q %v\n%s", line, err, c.log())
	}
	go io.Copy(io.Discard, out)
	go c.sample(c.cmd.Process.Pid, c.exited)
	return nil
}

// sample records the process's resident set every 500 ms until it exits.
func (c *collector) sample(pid int, exited chan struct{}) {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-exited:
			return
		case <-t.C:
		}
		if kib := loadgen.RSSKiB(pid, false); kib > 0 {
			c.mu.Lock()
			c.peakKiB = max(c.peakKiB, kib)
			c.mu.Unlock()
		}
	}
}

func (c *collector) peak() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.peakKiB
}

func (c *collector) log() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stderr.String()
}

func (c *collector) kill9() {
	c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.exited
}

func (c *collector) stop() {
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(30 * time.Second):
		c.kill9()
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func freeAddr(tb testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// backend is one store configuration of the benchmark: args returns the
// collector's flags and, for ClickHouse, the database it writes. DuckDB
// comes first: it is the baseline ClickHouse's rate is divided by.
type backend struct {
	name string
	args func(tb testing.TB) (flags []string, db string)
}

func backends(srv *chserver.Server) []backend {
	return []backend{
		{"duckdb", func(tb testing.TB) ([]string, string) {
			return []string{"--store", "duckdb", "--store-dir", tb.TempDir(), "--memory-limit", "1GB"}, ""
		}},
		{"clickhouse", func(tb testing.TB) ([]string, string) {
			db := srv.Database(tb)
			return []string{"--store", "clickhouse", "--clickhouse-url", srv.URL, "--clickhouse-database", db}, db
		}},
	}
}

// targetPages is the figure: 500 k page records per second.
const targetPages = 500_000

// BenchmarkScaleOut plays 16 simulated agents against one real collector
// on each backend for $STRATA_LOAD_DURATION (default 5 m, the issue's
// figure) and reports the pages, runs and records stored per second, the
// ratio to the 500 k pages/s target and to DuckDB measured in the same
// run, and the collector's peak RSS; every record is then read back
// through the query service (0 lost, 0 duplicated). The "worst" variants
// cut every block into one-page runs, one stored row per page, for a
// fifth of the time.
func BenchmarkScaleOut(b *testing.B) {
	bin := testenv.Built(b, "strata-collector")
	srv := chserver.Shared(b)
	dur := envDuration(b, "STRATA_LOAD_DURATION", 5*time.Minute)
	b.Logf("clickhouse-server %s; %v of load per backend", srv.Version, dur)
	rates := map[string]float64{}
	for _, worst := range []bool{false, true} {
		for _, be := range backends(srv) {
			name, d, runPages := be.name, dur, 0
			if worst {
				name, d, runPages = be.name+"-worst", max(dur/5, 10*time.Second), 1
			}
			b.Run(name, func(b *testing.B) {
				args, _ := be.args(b)
				c := &collector{bin: bin, addr: freeAddr(b), args: args}
				if err := c.start(); err != nil {
					b.Fatal(err)
				}
				defer c.stop()
				res, err := loadgen.Run(context.Background(), loadgen.Config{Collectors: []string{c.addr}, Agents: 16,
					Duration: d, RunPages: runPages})
				if err != nil {
					b.Fatalf("%v\n%s", err, c.log())
				}
				check, err := loadgen.Verify(context.Background(), c.addr, res)
				if err != nil || !check.OK() {
					b.Fatalf("verify: %v %v", check, err)
				}
				recs, pages, runs := res.Rate(res.Produced + res.Drained)
				rates[name] = pages
				b.ReportMetric(pages, "pages/s")
				b.ReportMetric(runs, "runs/s")
				b.ReportMetric(recs, "records/s")
				b.ReportMetric(pages/targetPages, "x-target")
				if base, ok := rates[strings.Replace(name, be.name, "duckdb", 1)]; ok && be.name != "duckdb" {
					b.ReportMetric(pages/base, "x-duckdb")
				}
				b.ReportMetric(float64(c.peak())/1024, "peakRSS-MiB")
				b.Logf("%s: %d batches, %d records, %d pages, %d runs in %v (+%v drain): %.0f pages/s (%.2fx the 500k target), %.0f runs/s, %.0f records/s; collector peak RSS %d MiB; %s",
					name, res.Batches, res.Records, res.Pages, res.Runs, res.Produced.Round(time.Second), res.Drained.Round(time.Second),
					pages, pages/targetPages, runs, recs, c.peak()/1024, check)
			})
		}
	}
	if ch, dd := rates["clickhouse"], rates["duckdb"]; ch > 0 && dd > 0 {
		b.Logf("clickhouse / duckdb pages/s: %.2f", ch/dd)
	}
}

// BenchmarkKill9 kills the collector with SIGKILL a third of the way into
// $STRATA_KILL_LOAD (default 2 m) of 16 agents' load, restarts it after
// $STRATA_KILL_OUTAGE (default 1 m, the figure) on the same
// address and store, lets the agents replay, and reads every record back:
// 0 lost, 0 duplicated. It reports how many batches the restarted
// collector acknowledged as already stored (the replays).
func BenchmarkKill9(b *testing.B) {
	bin := testenv.Built(b, "strata-collector")
	srv := chserver.Shared(b)
	load := envDuration(b, "STRATA_KILL_LOAD", 2*time.Minute)
	outage := envDuration(b, "STRATA_KILL_OUTAGE", time.Minute)
	for _, be := range backends(srv) {
		b.Run(be.name, func(b *testing.B) {
			args, db := be.args(b)
			c := &collector{bin: bin, addr: freeAddr(b), args: args}
			if err := c.start(); err != nil {
				b.Fatal(err)
			}
			restarted := make(chan error, 1)
			go func() {
				time.Sleep(load / 3)
				c.kill9()
				time.Sleep(outage)
				restarted <- c.start()
			}()
			res, err := loadgen.Run(context.Background(), loadgen.Config{Collectors: []string{c.addr}, Agents: 16,
				Duration: load, DrainTimeout: outage + 5*time.Minute})
			if rerr := <-restarted; rerr != nil {
				b.Fatalf("restart: %v", rerr)
			}
			defer c.stop()
			if err != nil {
				b.Fatalf("%v\n%s", err, c.log())
			}
			check, err := loadgen.Verify(context.Background(), c.addr, res)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(check.Lost), "lost")
			b.ReportMetric(float64(check.Duplicated), "duplicated")
			b.ReportMetric(float64(res.Duplicates), "replayed-batches")
			orphans := ""
			if db != "" {
				// Write attempts with rows but no commit rows: batches the
				// kill cut mid-commit, which no query reads.
				out, err := srv.Query(context.Background(), "SELECT uniqExact(uid) FROM "+db+".records WHERE uid NOT IN (SELECT uid FROM "+db+".batch_apps)")
				if err != nil {
					b.Fatal(err)
				}
				orphans = ", " + strings.TrimSpace(out) + " write attempts cut mid-commit (not read)"
			}
			b.Logf("%s: kill -9 at %v, restart after %v: %d batches acknowledged, %d of them replays found stored%s, %d reconnects; %s",
				be.name, (load / 3).Round(time.Second), outage, res.Batches, res.Duplicates, orphans, res.Reconnects, check)
			if !check.OK() {
				b.Fatalf("%s: %s (got %v, want %v)", be.name, check, check.Got, check.Want)
			}
		})
	}
}
