package spark

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratatrace/strata/agent/hooksrv"
	"github.com/stratatrace/strata/test/sparkjob"
	"github.com/stratatrace/strata/test/testenv"
)

// benchResult is StrataBench's output line.
type benchResult struct {
	GetNs          float64 `json:"get_ns"`
	PutRemoveNs    float64 `json:"put_remove_ns"`
	GetCPUNs       float64 `json:"get_cpu_ns"`        // the whole JVM's CPU time per call
	PutRemoveCPUNs float64 `json:"put_remove_cpu_ns"` // the same, hook thread included
}

// BenchmarkHook measures the hook inside a real Spark executor (local[1],
// Spark's own MemoryStore called in a loop by StrataBench): the cost added
// to an instrumented call with nothing to report (getBytes of a block not
// stored; target 150 ns), and to a reported operation (putBytes + remove of
// a 4 KiB block: a REGISTER and a FREE written to the agent's socket, so the
// cost per reported operation is half of it; target 5 us). The baseline is
// the same program without the hook, run in the same benchmark, in
// alternating pairs (STRATA_BENCH_PAIRS, default 3). Wall time is the
// target's measure; the JVM's CPU time per call is printed beside it, as
// other work on a shared machine inflates wall time and not CPU time.
func BenchmarkHook(b *testing.B) {
	testenv.RequireJava(b)
	home := testenv.SparkHome(b, "3.5")
	jar := sparkjob.Jar(b, home)
	hook, frames := benchHookServer(b)
	run := func(opts string) benchResult {
		cmd := exec.Command(filepath.Join(home, "bin", "spark-submit"), "--master", "local[1]",
			"--driver-memory", "1g", "--conf", "spark.driver.extraJavaOptions="+opts,
			"--class", "org.stratatrace.sparkjob.StrataBench", jar, "400000")
		cmd.Env = append(os.Environ(), "SPARK_HOME="+home, "SPARK_LOCAL_IP=127.0.0.1")
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("StrataBench: %v", err)
		}
		var r benchResult
		for _, l := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(l, "{") {
				if err := json.Unmarshal([]byte(l), &r); err != nil {
					b.Fatalf("bench output %q: %v", l, err)
				}
			}
		}
		return r
	}
	pairs := benchPairs(b, 3)
	for i := 0; i < b.N; i++ {
		// Alternating pairs, medians: other work shares the machine.
		var bg, hg, bp, hp, bgc, hgc, bpc, hpc []float64
		for p := 0; p < pairs; p++ {
			var base, with benchResult
			if p%2 == 0 {
				base, with = run("-XX:+UseParallelGC"), run(hook+" -XX:+UseParallelGC")
			} else {
				with, base = run(hook+" -XX:+UseParallelGC"), run("-XX:+UseParallelGC")
			}
			bg, hg = append(bg, base.GetNs), append(hg, with.GetNs)
			bp, hp = append(bp, base.PutRemoveNs), append(hp, with.PutRemoveNs)
			bgc, hgc = append(bgc, base.GetCPUNs), append(hgc, with.GetCPUNs)
			bpc, hpc = append(bpc, base.PutRemoveCPUNs), append(hpc, with.PutRemoveCPUNs)
		}
		baseGet, hookGet, basePut, hookPut := median(bg), median(hg), median(bp), median(hp)
		getAdded, perOp := hookGet-baseGet, (hookPut-basePut)/2
		getCPU, perOpCPU := median(hgc)-median(bgc), (median(hpc)-median(bpc))/2
		b.ReportMetric(getAdded, "ns-added/unreported-call")
		b.ReportMetric(perOp, "ns-added/reported-op")
		b.ReportMetric(getCPU, "cpu-ns-added/unreported-call")
		b.ReportMetric(perOpCPU, "cpu-ns-added/reported-op")
		b.ReportMetric(hookGet/baseGet, "x-unreported-call")
		b.ReportMetric(hookPut/basePut, "x-put-remove")
		b.Logf("getBytes (nothing to report): %.1f ns with the hook, %.1f without (%.2fx, +%.1f ns; target +150 ns); JVM CPU time +%.1f ns per call",
			hookGet, baseGet, hookGet/baseGet, getAdded, getCPU)
		b.Logf("putBytes+remove (REGISTER+FREE sent): %.0f ns with the hook, %.0f without (%.2fx, +%.0f ns per reported operation; target 5000 ns); "+
			"JVM CPU time +%.0f ns per reported operation, the hook's sender thread included; %d events received over %d pairs",
			hookPut, basePut, hookPut/basePut, perOp, perOpCPU, frames.Load(), pairs)
	}
}

// benchPairs is the number of paired runs: STRATA_BENCH_PAIRS, or def.
func benchPairs(b *testing.B, def int) int {
	s := os.Getenv("STRATA_BENCH_PAIRS")
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		b.Fatalf("STRATA_BENCH_PAIRS=%q: want a positive number", s)
	}
	return n
}

// median returns the median of v (sorting it).
func median(v []float64) float64 {
	sort.Float64s(v)
	if n := len(v); n%2 == 0 {
		return (v[n/2-1] + v[n/2]) / 2
	}
	return v[len(v)/2]
}

// benchHookServer listens with the agent's hook server, counting the
// events it decodes, and returns the hook's JVM options for its socket.
// The agent's own work (resolving pages, the kernel side) is not in the
// JVM and is measured by the agent's benchmarks.
func benchHookServer(b *testing.B) (string, *atomic.Uint64) {
	b.Helper()
	frames := new(atomic.Uint64)
	srv, err := hooksrv.Listen(hooksrv.Config{Path: filepath.Join(b.TempDir(), "hook.sock")},
		hooksrv.HandlerFunc(func(context.Context, hooksrv.Event) { frames.Add(1) }),
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go srv.Serve(ctx)
	b.Cleanup(func() {
		cancel()
		srv.Close()
	})
	return sparkjob.HookOpts(b, srv.Path()), frames
}

// BenchmarkCachingJob: the wall time of a caching Spark job
// (StrataCacheBench in local[2]: RDDs cached deserialized and serialized,
// read and unpersisted, a DataFrame cached, aggregated and sorted) with the
// hook and without it (target: at most 1.02x). Runs alternate, the order
// within a pair swapping each time, so drift from other work on the
// machine falls on both sides; the figure is the median of the pairs'
// ratios. job = from the job's main (Spark's class loading, where the hook
// instruments, included) to its last action; process = spark-submit's
// whole run, JVM start-up and the agent's premain included; cpu = the CPU
// time spark-submit and its JVM used, which other work on the machine
// disturbs less than wall time (a cross-check, not the target).
// STRATA_BENCH_PAIRS sets the number of pairs (default 5).
func BenchmarkCachingJob(b *testing.B) {
	testenv.RequireJava(b)
	home := testenv.SparkHome(b, "3.5")
	jar := sparkjob.Jar(b, home)
	hook, frames := benchHookServer(b)
	type result struct{ job, process, cpu float64 } // ms
	run := func(opts string) result {
		cmd := exec.Command(filepath.Join(home, "bin", "spark-submit"), "--master", "local[2]", "--driver-memory", "1g",
			"--conf", "spark.driver.extraJavaOptions="+opts, "--class", "org.stratatrace.sparkjob.StrataCacheBench", jar)
		cmd.Env = append(os.Environ(), "SPARK_HOME="+home, "SPARK_LOCAL_IP=127.0.0.1")
		start := time.Now()
		out, err := cmd.Output()
		process := float64(time.Since(start).Microseconds()) / 1e3
		if err != nil {
			b.Fatalf("StrataCacheBench: %v", err)
		}
		var r struct {
			JobMs float64 `json:"job_ms"`
		}
		for _, l := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(l, "{") {
				if err := json.Unmarshal([]byte(l), &r); err != nil {
					b.Fatalf("bench output %q: %v", l, err)
				}
			}
		}
		if r.JobMs == 0 {
			b.Fatalf("StrataCacheBench printed no job_ms:\n%s", out)
		}
		cpu := float64((cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Microseconds()) / 1e3
		return result{r.JobMs, process, cpu}
	}
	pairs := benchPairs(b, 5)
	for i := 0; i < b.N; i++ {
		var jobRatio, procRatio, cpuRatio, baseJob, hookJob []float64
		for p := 0; p < pairs; p++ {
			var base, with result
			if p%2 == 0 {
				base, with = run(""), run(hook)
			} else {
				with, base = run(hook), run("")
			}
			jobRatio = append(jobRatio, with.job/base.job)
			procRatio = append(procRatio, with.process/base.process)
			cpuRatio = append(cpuRatio, with.cpu/base.cpu)
			baseJob, hookJob = append(baseJob, base.job), append(hookJob, with.job)
			b.Logf("pair %d: job %.0f ms with the hook, %.0f without (%.3fx); process %.0f / %.0f ms (%.3fx); cpu %.0f / %.0f ms (%.3fx)",
				p+1, with.job, base.job, with.job/base.job, with.process, base.process, with.process/base.process,
				with.cpu, base.cpu, with.cpu/base.cpu)
		}
		lo, hi := minMax(jobRatio)
		jr, pr, cr := median(jobRatio), median(procRatio), median(cpuRatio)
		b.ReportMetric(jr, "x-job-wall")
		b.ReportMetric(pr, "x-process-wall")
		b.ReportMetric(cr, "x-cpu")
		b.Logf("caching job wall time with the hook / without: median %.3fx over %d pairs (range %.3f-%.3f; target 1.02x); "+
			"medians %.0f ms with, %.0f ms without; whole spark-submit %.3fx; CPU time %.3fx; %d hook events received",
			jr, pairs, lo, hi, median(hookJob), median(baseJob), pr, cr, frames.Load())
	}
}

func minMax(v []float64) (float64, float64) {
	lo, hi := v[0], v[0]
	for _, x := range v {
		lo, hi = min(lo, x), max(hi, x)
	}
	return lo, hi
}

// BenchmarkWalk measures the walker in a real executor (StrataWalkBench in
// local[2] on Spark 3.5 with G1: one RDD of records of three objects each
// cached deserialized, then full GCs): the CPU time of the strata-walk
// thread (/proc/PID/task/TID/schedstat) until every block had a walk, per
// object walked (walks that young collections made stale and the walker
// made again included) and per GiB of cached objects, and per object for
// the walks again after the full GCs, with the hook's exit counters beside
// them; and the job's CPU time with walking on against the same job with
// walk=off, run in the same benchmark (STRATA_BENCH_PAIRS pairs, default 1; STRATA_WALK_RECORDS records
// per partition, default 400000). The walker runs with walk-cpu=100 so
// that its budget does not stretch the run; its CPU per object does not
// depend on the budget.
func BenchmarkWalk(b *testing.B) {
	testenv.RequireJava(b)
	home := testenv.SparkHome(b, "3.5")
	jar := sparkjob.Jar(b, home)
	rec, srv := startHookServer(b)
	hook := sparkjob.HookOpts(b, srv.Path())
	records := 400_000
	if s := os.Getenv("STRATA_WALK_RECORDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("STRATA_WALK_RECORDS=%q: want a positive number", s)
		}
		records = n
	}
	const parts = 2
	pairs := benchPairs(b, 1)
	for i := 0; i < b.N; i++ {
		var first, again, perGiB, ratio []float64
		for p := 0; p < pairs; p++ {
			off := runWalkBench(b, rec, home, jar, hook+",walk=off", parts, records)
			on := runWalkBench(b, rec, home, jar, hook+",walk-cpu=100", parts, records)
			first = append(first, float64(on.firstCPU.Nanoseconds())/float64(on.firstWalked))
			again = append(again, float64(on.againCPU.Nanoseconds())/float64(on.againWalked))
			perGiB = append(perGiB, float64(on.firstCPU.Milliseconds())/(float64(on.firstBytes)/(1<<30)))
			ratio = append(ratio, float64(on.processCPU)/float64(off.processCPU))
			b.Logf("pair %d: cached %d objects, %d MiB: walked %d objects in %v of walker CPU; after the full GCs %d in %v; "+
				"hook counters %v; job CPU %v with walking, %v with walk=off",
				p+1, on.firstObjects, on.firstBytes>>20, on.firstWalked, on.firstCPU, on.againWalked, on.againCPU, on.counters,
				on.processCPU, off.processCPU)
		}
		b.ReportMetric(median(first), "walker-ns/object")
		b.ReportMetric(median(perGiB), "walker-ms/GiB")
		b.ReportMetric(median(again), "rewalk-ns/object")
		b.ReportMetric(median(ratio), "x-job-cpu")
		b.Logf("walk: %.0f ns of walker CPU per object walked, %.0f ms per GiB of cached objects; after a full GC %.0f ns per object; "+
			"the job's CPU %.3fx of the same job with walk=off (%d records in %d partitions, %d pairs)",
			median(first), median(perGiB), median(again), median(ratio), records, parts, pairs)
	}
}

// walkBenchRun is what one StrataWalkBench run measured.
type walkBenchRun struct {
	firstObjects, firstBytes uint64        // the cached objects, as the blocks' latest walks count them
	firstWalked, againWalked uint64        // objects of every walk in each phase
	firstCPU, againCPU       time.Duration // the walker thread's CPU time in each phase
	processCPU               time.Duration // spark-submit's and the JVM's
	counters                 map[string]int64
}

// runWalkBench runs StrataWalkBench with the hook options opts. With
// walking on it waits, at each step, until every block of the job's RDD
// has a walk made after the step began, and reads the walker's CPU time.
func runWalkBench(b *testing.B, rec *recorder, home, jar, opts string, parts, records int) walkBenchRun {
	b.Helper()
	dir := b.TempDir()
	walking := !strings.Contains(opts, "walk=off")
	cmd := exec.Command(filepath.Join(home, "bin", "spark-submit"), "--master", "local[2]", "--driver-memory", "3g",
		"--conf", "spark.driver.extraJavaOptions="+opts, "--conf", "spark.ui.enabled=false",
		"--conf", "spark.ui.showConsoleProgress=false",
		"--class", "org.stratatrace.sparkjob.StrataWalkBench", jar, "--out", dir,
		"--parts", strconv.Itoa(parts), "--records", strconv.Itoa(records))
	cmd.Env = append(os.Environ(), "SPARK_HOME="+home, "SPARK_LOCAL_IP=127.0.0.1")
	stderr := &testenv.Output{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer cmd.Process.Kill()
	var r walkBenchRun
	var cpu time.Duration
	seen := map[string]uint32{} // block: seq of the walk counted
	for _, step := range []string{"cached", "gc"} {
		var st struct{ RDD, PID int }
		if err := testenv.WaitFor("StrataWalkBench step "+step, 10*time.Minute, nil, func() bool {
			body, err := os.ReadFile(filepath.Join(dir, step+".json"))
			return err == nil && json.Unmarshal(body, &st) == nil
		}); err != nil {
			b.Fatalf("%v\n%s", err, sparkjob.Tail(stderr.String(), 4000))
		}
		if walking {
			objects, bytes, walked := waitWalked(b, rec, st.RDD, parts, seen)
			now := threadCPU(b, st.PID, "strata-walk")
			if step == "cached" {
				r.firstObjects, r.firstBytes, r.firstWalked, r.firstCPU = objects, bytes, walked, now
			} else {
				r.againWalked, r.againCPU = walked, now-cpu
			}
			cpu = now
		}
		if err := os.WriteFile(filepath.Join(dir, "go-"+step), nil, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if err := cmd.Wait(); err != nil {
		b.Fatalf("StrataWalkBench: %v\n%s", err, sparkjob.Tail(stderr.String(), 4000))
	}
	r.processCPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	if walking {
		var err error
		if r.counters, err = sparkjob.ParseHookCounters(stderr.String()); err != nil {
			b.Fatal(err)
		}
	}
	return r
}

// waitWalked waits until every block of rdd has a complete walk newer
// than the one seen counted last, and returns the objects and bytes of
// those walks and the objects of every walk of the blocks since.
func waitWalked(b *testing.B, rec *recorder, rdd, parts int, seen map[string]uint32) (objects, bytes, walked uint64) {
	b.Helper()
	err := testenv.WaitFor("the walks of RDD "+strconv.Itoa(rdd), 10*time.Minute, nil, func() bool {
		v := rec.walks()
		objects, bytes = 0, 0
		done := 0
		for _, w := range v.walks {
			name := w.block.Block.Name
			if w.block.Block.RDDID != int32(rdd) || w.walk.State == hooksrv.WalkStale || w.walk.Seq <= seen[name] {
				continue
			}
			done++
			objects += w.walk.Objects
			bytes += w.walk.Bytes
		}
		return done == parts
	})
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range rec.all() { // this session's: the hook ids of earlier ones differ or repeat
		if e.Kind == hooksrv.EventSessionStart {
			walked = 0
		}
		if e.Kind == hooksrv.EventWalk && e.Block.RDDID == int32(rdd) && e.Walk.State != hooksrv.WalkStale &&
			e.Walk.Seq > seen[e.Block.Name] {
			walked += e.Walk.Objects
		}
	}
	for _, w := range rec.walks().walks {
		if w.block.Block.RDDID == int32(rdd) {
			seen[w.block.Block.Name] = w.walk.Seq
		}
	}
	return objects, bytes, walked
}

// threadCPU is the CPU time so far of pid's thread named name, from
// /proc/PID/task/TID/schedstat (nanoseconds on CPU, its first field).
func threadCPU(b *testing.B, pid int, name string) time.Duration {
	b.Helper()
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, t := range tasks {
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/comm", pid, t.Name()))
		if err != nil || strings.TrimSpace(string(comm)) != name {
			continue
		}
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
		if err != nil {
			b.Fatal(err)
		}
		ns, err := strconv.ParseInt(strings.Fields(string(st))[0], 10, 64)
		if err != nil {
			b.Fatalf("schedstat %q: %v", st, err)
		}
		return time.Duration(ns)
	}
	b.Fatalf("no thread %s in process %d", name, pid)
	return 0
}
