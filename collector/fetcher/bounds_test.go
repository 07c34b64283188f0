package fetcher_test

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/stratatrace/strata/collector/fetcher"
	"github.com/stratatrace/strata/collector/job"
)

// The memory bounds of history inputs, each proven on an input several
// times larger than what the bound lets the fetcher hold, by the peak heap
// of the read. The inputs are generated while they are compressed, so they
// cost a few MiB of disk and seconds of CPU.

const mib = 1 << 20

// writeCompressed streams fill through a compressor into path.
func writeCompressed(t *testing.T, path string, compress func(io.Writer) io.WriteCloser, fill func(w *bufio.Writer)) string {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zw := compress(f)
	bw := bufio.NewWriterSize(zw, 1<<20)
	fill(bw)
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func gzipWriter(w io.Writer) io.WriteCloser {
	zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
	return zw
}

func zstdWriter(w io.Writer) io.WriteCloser {
	zw, _ := zstd.NewWriter(w, zstd.WithEncoderLevel(zstd.SpeedFastest))
	return zw
}

// fetchPeak fetches path and returns its jobs, error and peak heap.
func fetchPeak(t *testing.T, path string) ([]*job.Job, error, uint64) {
	t.Helper()
	var jobs []*job.Job
	var err error
	peak := peakHeap(func() {
		err = fetcher.Fetch(context.Background(), path, func(j *job.Job) error { jobs = append(jobs, j); return nil })
	})
	return jobs, err, peak
}

// A rumen job whose name is one 256 MiB string (a 256 KiB gzip) is refused
// once the string passes the 64 MiB value bound; before, the decoder
// buffered the whole string and then copied it (the reported 47 MB gzip
// went past 12 GB this way). The decoder's buffer doubles as it fills, so
// the peak, garbage included, is about 3.5 times the bound.
func TestRumenHugeStringBounded(t *testing.T) {
	const size = 256 * mib
	path := writeCompressed(t, filepath.Join(t.TempDir(), "trace.json.gz"), gzipWriter, func(w *bufio.Writer) {
		w.WriteString(`{"jobID":"job_1_1","jobName":"`)
		chunk := strings.Repeat("a", mib)
		for range size / mib {
			w.WriteString(chunk)
		}
		w.WriteString(`"}`)
	})
	jobs, err, peak := fetchPeak(t, path)
	t.Logf("peak heap %d MiB reading a %d MiB string", peak/mib, size/mib)
	if !errors.Is(err, fetcher.ErrTooLarge) || !strings.Contains(err.Error(), "longer than 64 MiB") || len(jobs) != 0 {
		t.Errorf("jobs %d, err %v; want ErrTooLarge for the 256 MiB value", len(jobs), err)
	}
	if peak > 288*mib {
		t.Errorf("peak heap %d MiB for a value bound of 64 MiB", peak/mib)
	}
}

// A rumen job of 20 000 tasks, each carrying 8 KiB the model does not keep
// (160 MiB of JSON in one object, one line), is read one task at a time:
// the peak heap is the model's, not the object's. Before, the decoder held
// the whole object and every decoded task at once (a 1 GB line took 3.1 GB).
func TestRumenLargeObjectStreamed(t *testing.T) {
	const tasks = 20_000
	pad := strings.Repeat("x", 8<<10)
	path := writeCompressed(t, filepath.Join(t.TempDir(), "trace.json.gz"), gzipWriter, func(w *bufio.Writer) {
		w.WriteString(`{"jobID":"job_1_1","outcome":"SUCCESS","mapTasks":[`)
		for i := range tasks {
			if i > 0 {
				w.WriteByte(',')
			}
			fmt.Fprintf(w, `{"taskID":"task_1_1_m_%06d","taskStatus":"SUCCESS","notes":"%s","attempts":[{"attemptID":"attempt_1_1_m_%06d_0","result":"SUCCESS","startTime":1,"finishTime":2,"hdfsBytesRead":5}]}`, i, pad, i)
		}
		w.WriteString(`]}`)
	})
	jobs, err, peak := fetchPeak(t, path)
	input := int64(tasks) * int64(len(pad)+200)
	t.Logf("peak heap %d MiB reading a %d MiB job object", peak/mib, input/mib)
	if err != nil || len(jobs) != 1 || len(jobs[0].MapTasks) != tasks {
		t.Fatalf("err %v, %d jobs", err, len(jobs))
	}
	if peak > uint64(input)/4 {
		t.Errorf("peak heap %d MiB, over a quarter of the %d MiB object: the object was buffered", peak/mib, input/mib)
	}
}

// A Spark event log's per-task details stop at their 128 MiB bound while
// the stage and executor totals count every task: 3 000 failed tasks with
// 64 KiB error messages (190 MiB of messages) leave a model under the
// bound. Before, every task was kept (10 M tasks took 6.8 GB).
func TestSparkTaskDetailsBounded(t *testing.T) {
	const tasks = 3000
	msg := strings.Repeat("at org.example.Foo.bar(Foo.java:1) ", (64<<10)/35)
	const app = "application_1_1"
	path := writeCompressed(t, filepath.Join(t.TempDir(), app+".zstd"), zstdWriter, func(w *bufio.Writer) {
		fmt.Fprintf(w, `{"Event":"SparkListenerApplicationStart","App Name":"a","App ID":"%s","Timestamp":1,"User":"u"}`+"\n", app)
		w.WriteString(`{"Event":"SparkListenerStageSubmitted","Stage Info":{"Stage ID":0,"Stage Attempt ID":0,"Stage Name":"s","Number of Tasks":3000}}` + "\n")
		for i := range tasks {
			fmt.Fprintf(w, `{"Event":"SparkListenerTaskEnd","Stage ID":0,"Stage Attempt ID":0,"Task End Reason":{"Reason":"ExceptionFailure","Class Name":"java.lang.RuntimeException","Description":"%s"},"Task Info":{"Task ID":%d,"Index":%d,"Attempt":0,"Launch Time":10,"Executor ID":"1","Host":"h","Finish Time":20,"Failed":true},"Task Metrics":{"Executor Run Time":7}}`+"\n", msg, i, i)
		}
		w.WriteString(`{"Event":"SparkListenerApplicationEnd","Timestamp":100}` + "\n")
	})
	var j *job.Job
	var err error
	retained := uint64(0)
	peak := peakHeap(func() {
		err = fetcher.Fetch(context.Background(), path, func(x *job.Job) error { j = x; return nil })
		retained = liveHeap()
	})
	if err != nil || j == nil {
		t.Fatal(err)
	}
	st := j.Spark.Stages[0]
	t.Logf("peak heap %d MiB, model %d MiB, %d of %d task details kept", peak/mib, retained/mib, len(st.Tasks), tasks)
	if e := j.Spark.Executors; st.NumFailedTasks != tasks || st.ExecutorRunTimeMs != 7*tasks || len(e) != 1 || e[0].FailedTasks != tasks {
		t.Errorf("totals: failed %d, run time %d, executors %+v; want every task counted", st.NumFailedTasks, st.ExecutorRunTimeMs, e)
	}
	if len(st.Tasks) == 0 || len(st.Tasks) >= tasks || !hasWarning(j, "kept the details of") {
		t.Errorf("%d task details kept, warnings %q", len(st.Tasks), j.Warnings)
	}
	if retained > 160*mib || peak > 300*mib {
		t.Errorf("model %d MiB, peak %d MiB: task details past their 128 MiB bound were kept", retained/mib, peak/mib)
	}
}

func hasWarning(j *job.Job, s string) bool {
	for _, w := range j.Warnings {
		if strings.Contains(w, s) {
			return true
		}
	}
	return false
}
