package fetcher

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stratatrace/strata/collector/job"
)

// deepBrackets is the shape that crashed the jhist scanner: millions of
// nested arrays (or objects) in one line, well under the line limit.
const deepBrackets = 5_000_000

func nested(open, close string, n int) string {
	return strings.Repeat(open, n) + strings.Repeat(close, n)
}

// deepJhistLines are event lines nested far past maxNesting where each of
// the scanner's recursive paths would follow them: an unknown key's value,
// an Avro string union, a counters record, and an event record itself. The
// counters shape is 53 bytes a level, so it gets a fifth of n to stay under
// the line bound.
func deepJhistLines(n int) map[string]string {
	objs := strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n)
	return map[string]string{
		"arrays":   `{"type":"TASK_STARTED","event":{"x":{"taskid":"task_1_1_m_000009","other":` + nested("[", "]", n) + `}}}`,
		"objects":  `{"type":"TASK_STARTED","event":{"x":{"taskid":"task_1_1_m_000009","other":` + objs + `}}}`,
		"union":    `{"type":"JOB_SUBMITTED","event":{"x":{"jobid":"job_1_2","jobName":` + strings.Repeat(`{"string":`, n) + `"n"` + strings.Repeat("}", n) + `}}}`,
		"counters": `{"type":"TASK_FINISHED","event":{"x":{"taskid":"task_1_1_m_000009","counters":` + strings.Repeat(`{"org.apache.hadoop.mapreduce.jobhistory.JhCounters":`, n/5) + "null" + strings.Repeat("}", n/5) + `}}}`,
		"bare":     nested("[", "]", n),
	}
}

const jhistHead = "Avro-Json\n{}\n"

const goodSubmit = `{"type":"JOB_SUBMITTED","event":{"x":{"jobid":"job_1_1","jobName":"n","userName":"u"}}}`

// A line of millions of nested brackets is a malformed line with a clear
// warning, on the parallel, the sequential and the encoding/json path; the
// job around it is read. Before the depth limit this overflowed the
// goroutine stack: a fatal error that no recover catches.
func TestJhistDeepNesting(t *testing.T) {
	for name, line := range deepJhistLines(deepBrackets) {
		in := jhistHead + goodSubmit + "\n" + line + "\n" + `{"type":"JOB_FINISHED","event":{"x":{"finishTime":5}}}` + "\n"
		for _, path := range []struct {
			name  string
			procs int
			scan  bool
		}{{"parallel", 2, true}, {"sequential", 1, true}, {"encoding-json", 2, false}} {
			t.Run(name+"/"+path.name, func(t *testing.T) {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(path.procs))
				j, err := parseJhistWith(strings.NewReader(in), path.scan)
				if err != nil {
					t.Fatal(err)
				}
				if j.ID != "job_1_1" || j.FinishMs != 5 {
					t.Errorf("job %q finish %d: the lines around the deep one were lost", j.ID, j.FinishMs)
				}
				if len(j.Warnings) != 1 || !strings.Contains(j.Warnings[0], "skipped 1 malformed line(s), first at line 4: input nested too deeply: more than 128 levels") {
					t.Errorf("warnings %q", j.Warnings)
				}
			})
		}
	}
}

// A line over the line bound costs that line only, not the rest of the file.
func TestJhistLongLineSkipped(t *testing.T) {
	long := `{"type":"X","event":{"x":{"jobName":"` + strings.Repeat("a", maxLineBytes) + `"}}}`
	in := jhistHead + goodSubmit + "\n" + long + "\n" + `{"type":"JOB_FINISHED","event":{"x":{"finishTime":5}}}` + "\n"
	for _, procs := range []int{1, 2} {
		func() {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			j, err := parseJhist(strings.NewReader(in))
			if err != nil {
				t.Fatal(err)
			}
			if j.FinishMs != 5 || len(j.Warnings) != 1 || !strings.Contains(j.Warnings[0], "skipped 1 malformed line(s), first at line 4: input too large: line longer than 64 MiB") {
				t.Errorf("GOMAXPROCS %d: finish %d, warnings %q", procs, j.FinishMs, j.Warnings)
			}
		}()
	}
}

// A history whose only event is the deep line cannot be read: the error
// says why, and Fetch returns it for that file while reading the others.
func TestJhistDeepNestingOnlyLine(t *testing.T) {
	dir := t.TempDir()
	bad := write(t, filepath.Join(dir, "job_1_9-bad.jhist"), []byte(jhistHead+deepJhistLines(deepBrackets)["arrays"]+"\n"))
	write(t, filepath.Join(dir, "job_1_1-good.jhist"), []byte(jhistHead+goodSubmit+"\n"))
	err := Fetch(context.Background(), bad, func(j *job.Job) error { t.Fatalf("job %s from the bad file", j.ID); return nil })
	if !errors.Is(err, ErrNoJob) || !strings.Contains(err.Error(), "nested too deeply") || !strings.Contains(err.Error(), bad) {
		t.Fatalf("err = %v", err)
	}
	var ids []string
	err = Fetch(context.Background(), dir, func(j *job.Job) error { ids = append(ids, j.ID); return nil })
	if len(ids) != 1 || ids[0] != "job_1_1" || err == nil || !strings.Contains(err.Error(), "nested too deeply") {
		t.Fatalf("directory: jobs %v, err %v", ids, err)
	}
}

// checkNesting and nestingReader agree with each other at the boundary and
// ignore brackets inside strings, escaped quotes included.
func TestNestingBound(t *testing.T) {
	for _, tc := range []struct {
		in   string
		deep bool
	}{
		{nested("[", "]", maxNesting), false},
		{nested("[", "]", maxNesting+1), true},
		{strings.Repeat(`{"k":`, maxNesting) + "1" + strings.Repeat("}", maxNesting), false},
		{strings.Repeat(`{"k":`, maxNesting+1) + "1" + strings.Repeat("}", maxNesting+1), true},
		{`["` + strings.Repeat("[", 10*maxNesting) + `"]`, false},
		{`["\"` + strings.Repeat("[", 10*maxNesting) + `"]`, false},
		{`["\\",` + nested("[", "]", maxNesting-1) + `]`, false},
		{`["\\",` + nested("[", "]", maxNesting) + `]`, true},
		{strings.Repeat("[", deepBrackets), true},
	} {
		err := checkNesting([]byte(tc.in))
		if (err != nil) != tc.deep || (err != nil && !errors.Is(err, ErrTooDeep)) {
			t.Errorf("checkNesting(%.40q…) = %v, want deep %v", tc.in, err, tc.deep)
		}
		// The reader sees the same stream in small reads.
		_, rerr := io.Copy(io.Discard, &nestingReader{r: &smallReads{r: strings.NewReader(tc.in), n: 7}})
		if (rerr != nil) != tc.deep || (rerr != nil && !errors.Is(rerr, ErrTooDeep)) {
			t.Errorf("nestingReader(%.40q…) = %v, want deep %v", tc.in, rerr, tc.deep)
		}
	}
}

// smallReads returns at most n bytes per Read.
type smallReads struct {
	r io.Reader
	n int
}

func (s *smallReads) Read(p []byte) (int, error) { return s.r.Read(p[:min(len(p), s.n)]) }
