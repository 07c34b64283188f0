package fetcher_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stratatrace/strata/collector/fetcher"
	"github.com/stratatrace/strata/collector/heuristics"
	"github.com/stratatrace/strata/collector/job"
	"github.com/stratatrace/strata/test/gen"
)

// benchTasks is the size of the synthetic job the benchmark parses.
const benchTasks = 100_000

var (
	benchOnce sync.Once
	benchDir  string
	benchPath string
	benchErr  error
)

// TestMain removes the benchmark's 400 MiB history after the run.
func TestMain(m *testing.M) {
	code := m.Run()
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

// benchHistory writes a 100 000-task job history (90 000 maps, 10 000
// reduces, skewed) once per test binary run.
func benchHistory(b *testing.B) string {
	benchOnce.Do(func() {
		benchDir, benchErr = os.MkdirTemp("", "strata-bench-")
		if benchErr != nil {
			return
		}
		benchPath, benchErr = gen.WriteMRJob(benchDir, gen.MRJob{Maps: benchTasks * 9 / 10, Reduces: benchTasks / 10, Skew: 3, Seed: 1})
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchPath
}

// peakHeap samples the heap in use (objects, live or not yet swept) while
// f runs and returns its peak.
func peakHeap(f func()) uint64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak atomic.Uint64
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	f()
	close(done)
	return peak.Load()
}

// cpuTime is the process's user+system CPU time: on a shared machine it
// tells how much work the parse was, whatever share of the cores it got.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// liveHeap is the heap still reachable after a collection.
func liveHeap() uint64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}

// plainDecode is the baseline: encoding/json decoding every value of the
// same file into interface values, nothing else.
func plainDecode(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 256<<10)
	if _, err := br.ReadString('\n'); err != nil { // "Avro-Json"
		return err
	}
	return decodeAll(br)
}

// decodeAll decodes every JSON value of r into interface values.
func decodeAll(r io.Reader) error {
	dec := json.NewDecoder(r)
	for {
		var v any
		if err := dec.Decode(&v); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
	}
}

// BenchmarkJobHistory100k parses (and analyses) a synthetic 100 000-task job
// history and reports the time against a plain encoding/json decode of the
// same file measured in the same run, and the peak live heap of the parse.
func BenchmarkJobHistory100k(b *testing.B) {
	path := benchHistory(b)
	st, _ := os.Stat(path)
	eng, err := heuristics.NewEngine(heuristics.DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	var base, parse, analyse, parseCPU time.Duration
	var peak, retained uint64
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if err := plainDecode(path); err != nil {
			b.Fatal(err)
		}
		base += time.Since(t0)
		var j *job.Job
		peak = max(peak, peakHeap(func() {
			t1, c1 := time.Now(), cpuTime()
			err = fetcher.Fetch(context.Background(), path, func(x *job.Job) error { j = x; return nil })
			parse += time.Since(t1)
			parseCPU += cpuTime() - c1
		}))
		if err != nil {
			b.Fatal(err)
		}
		if n := len(j.MapTasks) + len(j.ReduceTasks); n != benchTasks {
			b.Fatalf("%d tasks", n)
		}
		retained = max(retained, liveHeap()) // the parsed job itself
		t2 := time.Now()
		if r := eng.Analyze(j); r == nil || len(r.Heuristics) == 0 {
			b.Fatal("no analysis")
		}
		analyse += time.Since(t2)
	}
	n := float64(b.N)
	ratio := float64(parse+analyse) / float64(base)
	b.ReportMetric(float64(parse.Milliseconds())/n, "parse-ms")
	b.ReportMetric(float64(parseCPU.Milliseconds())/n, "parse-cpu-ms")
	b.ReportMetric(float64(analyse.Milliseconds())/n, "analyse-ms")
	b.ReportMetric(float64(base.Milliseconds())/n, "json-baseline-ms")
	b.ReportMetric(ratio, "x-baseline")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(retained)/(1<<20), "job-heap-MiB")
	b.Logf("%s: %d tasks, %.0f MiB; parse %v (CPU %v on %d threads) + analyse %v vs plain encoding/json %v: ratio %.2f (limit 3); peak heap in use %.0f MiB (garbage not yet collected included), parsed job %.0f MiB",
		filepath.Base(path), benchTasks, float64(st.Size())/(1<<20), parse/time.Duration(b.N), parseCPU/time.Duration(b.N),
		runtime.GOMAXPROCS(0), analyse/time.Duration(b.N), base/time.Duration(b.N), ratio, float64(peak)/(1<<20), float64(retained)/(1<<20))
}

// BenchmarkSparkLog100k replays a synthetic 100 000-task Spark event log,
// against a plain encoding/json decode of the same lines.
func BenchmarkSparkLog100k(b *testing.B) {
	dir := b.TempDir()
	path := filepath.Join(dir, "application_1700000000000_0100")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := gen.WriteSparkLog(f, gen.SparkApp{AppID: "application_1700000000000_0100", Executors: 50, Stages: 10, TasksPerStage: benchTasks / 10}); err != nil {
		b.Fatal(err)
	}
	f.Close()
	var base, parse time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if err := plainLines(path); err != nil {
			b.Fatal(err)
		}
		base += time.Since(t0)
		t1 := time.Now()
		var tasks int
		if err := fetcher.Fetch(context.Background(), path, func(j *job.Job) error {
			for _, st := range j.Spark.Stages {
				tasks += len(st.Tasks)
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		parse += time.Since(t1)
		if tasks != benchTasks {
			b.Fatalf("%d tasks", tasks)
		}
	}
	ratio := float64(parse) / float64(base)
	b.ReportMetric(float64(parse.Milliseconds())/float64(b.N), "parse-ms")
	b.ReportMetric(ratio, "x-baseline")
	b.Logf("spark event log, %d tasks: replay %v vs plain encoding/json %v: ratio %.2f",
		benchTasks, parse/time.Duration(b.N), base/time.Duration(b.N), ratio)
}

// plainLines decodes every line of a file into interface values.
func plainLines(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return decodeAll(bufio.NewReaderSize(f, 256<<10))
}
