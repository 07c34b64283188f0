package fetcher

import (
	"bytes"
	"io"
	"testing"

	"github.com/stratatrace/strata/collector/job"
	"github.com/stratatrace/strata/test/gen"
)

func jhistSeed(t testing.TB) []byte {
	var b bytes.Buffer
	if err := gen.WriteJhist(&b, gen.MRJob{Maps: 2, Reduces: 1}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func FuzzJhist(f *testing.F) {
	seed := jhistSeed(f)
	f.Add(seed)
	f.Add(seed[:len(seed)/2])
	f.Add([]byte("Avro-Json\n{}\n{\"type\":\"JOB_SUBMITTED\",\"event\":{\"x\":{\"jobid\":\"job_1_1\",\"jobName\":{\"string\":\"n\"}}}}\n"))
	addDeepJhist(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		j, err := parseJhist(bytes.NewReader(b))
		if err == nil && j.ID == "" {
			t.Fatal("job without id")
		}
		if err == nil {
			for _, tk := range j.MapTasks {
				tk.Times()
				tk.PeakMemory()
			}
		}
	})
}

// FuzzJhistScanner checks the hand-written line decoder against
// encoding/json: both must read the same job from any input.
func FuzzJhistScanner(f *testing.F) {
	seed := jhistSeed(f)
	f.Add(seed)
	f.Add([]byte("Avro-Json\n{}\n{\"type\":\"TASK_FINISHED\",\"event\":{\"x\":{\"taskid\":\"task_1_1_m_000001\",\"status\":{\"string\":\"SUCCEEDED\"},\"counters\":{\"org.apache.hadoop.mapreduce.jobhistory.JhCounters\":{\"groups\":[{\"counts\":[{\"name\":\"A\",\"value\":1}]}]}}}}}\n"))
	f.Add([]byte("Avro-Json\n{}\n{\"type\":\"JOB_SUBMITTED\",\"event\":{\"x\":{\"jobid\":\"job_1_1\",\"JOBNAME\":\"n\\u0041\",\"userName\":7}}}\n"))
	f.Add([]byte("Avro-Json\n{}\n{\"type\":\"TASK_STARTED\",\"event\":{\"x\":{\"taskid\":\"task_1_1_m_000001\",\"TASKTYPE\":\"MAP\",\"\u017ftartTime\":5,\"\xc5\xbftartTime\":6,\"HTTPPort\":1}}}\n"))
	for _, n := range []string{"9223372036854775807", "-9223372036854775808", "9223372036854775808", "-0", "1e3", "007"} {
		f.Add([]byte("Avro-Json\n{}\n{\"type\":\"JOB_SUBMITTED\",\"event\":{\"x\":{\"jobid\":\"job_1_1\",\"submitTime\":" + n + "}}}\n"))
	}
	addDeepJhist(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		fast, errFast := parseJhistWith(bytes.NewReader(b), true)
		ref, errRef := parseJhistWith(bytes.NewReader(b), false)
		if (errFast == nil) != (errRef == nil) {
			t.Fatalf("errors differ: scanner %v, encoding/json %v", errFast, errRef)
		}
		if errFast != nil {
			return
		}
		if a, b := jsonOf(fast), jsonOf(ref); a != b {
			t.Fatalf("scanner and encoding/json disagree:\n%s\n%s", a, b)
		}
	})
}

func FuzzRumen(f *testing.F) {
	f.Add([]byte(`{"jobID":"job_1_1","mapTasks":[{"taskID":"t","taskStatus":"SUCCESS","attempts":[{"attemptID":"a","result":"SUCCESS","clockSplits":[1,2],"physMemKbytes":[0,5,0,0,7]}]}]} {"jobID":"job_1_2"}`))
	f.Add([]byte(`{"jobID":"job_1_1","reduceTasks":[{"taskID":"r","attempts":[{"attemptID":"b","result":"FAILED","shuffleFinished":-1}]}]`))
	// The crash depth (testdata/fuzz holds shallower deep seeds).
	f.Add([]byte(`{"jobID":"job_1_1","mapTasks":[{"taskID":"t","attempts":` + nested("[", "]", deepBrackets) + `}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = parseRumen(bytes.NewReader(b), "fuzz", func(j *job.Job) error {
			for _, tk := range j.MapTasks {
				if a := tk.AnalyzedAttempt(); a != nil && a.Splits != nil {
					if n := len(a.Splits.PhysMemKbytes); n != 0 && n != job.SplitBuckets {
						t.Fatalf("%d buckets", n)
					}
				}
			}
			return nil
		})
	})
}

func FuzzSparkLog(f *testing.F) {
	var b bytes.Buffer
	gen.WriteSparkLog(&b, gen.SparkApp{Executors: 2, Stages: 2, TasksPerStage: 3, FailedTasks: 1})
	f.Add(b.Bytes())
	f.Add(b.Bytes()[:b.Len()/3])
	f.Add(append(b.Bytes()[:b.Len():b.Len()], `{"Event":"SparkListenerTaskEnd","Task Info":{"Task ID":1},"x":`+nested("[", "]", deepBrackets)+"}\n"...))
	f.Fuzz(func(t *testing.T, in []byte) {
		app, _, err := parseSparkLog(bytes.NewReader(in))
		if err == nil {
			app.toJob("fuzz", nil)
		}
	})
}

func FuzzLZ4Block(f *testing.F) {
	f.Add(lz4Block(f, []byte(`{"Event":"SparkListenerLogStart"}`+"\n"), true))
	f.Add(lz4Block(f, bytes.Repeat([]byte("abc"), 30000), false))
	f.Fuzz(func(t *testing.T, in []byte) {
		io.Copy(io.Discard, io.LimitReader(newLZ4BlockReader(bytes.NewReader(in)), 64<<20))
	})
}

func FuzzSnappyStream(f *testing.F) {
	f.Add(snappyStream(f, []byte(`{"Event":"SparkListenerLogStart"}`+"\n")))
	f.Fuzz(func(t *testing.T, in []byte) {
		io.Copy(io.Discard, io.LimitReader(newSnappyStreamReader(bytes.NewReader(in)), 64<<20))
	})
}

// addDeepJhist adds job histories with one line nested as deep as the one
// that overflowed the scanner's stack, in each shape the scanner recurses
// on (testdata/fuzz holds shallower ones, 100 000 levels).
func addDeepJhist(f *testing.F) {
	for _, line := range deepJhistLines(deepBrackets) {
		f.Add([]byte(jhistHead + goodSubmit + "\n" + line + "\n"))
	}
}

func FuzzConfXML(f *testing.F) {
	f.Add([]byte(`<?xml version="1.0"?><configuration><property><name>a</name><value>1</value></property></configuration>`))
	f.Add([]byte(`<configuration><property><name>a</name>` + nested("<x>", "</x>", 1_000_000) + `</property></configuration>`))
	f.Fuzz(func(t *testing.T, in []byte) {
		conf, err := parseConfXML(bytes.NewReader(in))
		if err == nil && conf == nil {
			t.Fatal("nil configuration without an error")
		}
	})
}

// FuzzNesting holds the two nesting checks, one over a line and one over a
// stream read in small pieces, to the same verdict.
func FuzzNesting(f *testing.F) {
	f.Add([]byte(nested("[", "]", maxNesting)))
	f.Add([]byte(nested(`{"a":[`, "]}", maxNesting)))
	f.Add([]byte(`["\\\"[[[",` + nested("[", "]", maxNesting) + `]`))
	f.Add([]byte(nested("[", "]", deepBrackets)))
	f.Fuzz(func(t *testing.T, in []byte) {
		line := checkNesting(in)
		_, stream := io.Copy(io.Discard, &nestingReader{r: &smallReads{r: bytes.NewReader(in), n: 3}})
		if (line == nil) != (stream == nil) {
			t.Fatalf("checkNesting %v, nestingReader %v", line, stream)
		}
	})
}
