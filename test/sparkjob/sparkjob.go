// Package sparkjob runs Strata's test Spark job (StrataJob, test/spark/job,
// built by make into bin/sparkjob/sparkjob-VERSION.jar) under spark-submit
// with the JVM hook, and follows it step by step.
//
// The job prints one JSON line per step ("cached", "gc", "unpersisted",
// "evicted", "done") and waits for a line on its stdin before it goes on,
// so a test can look at the executor's memory at each step while it lives.
// Tests get a SPARK_HOME from testenv.SparkHome and the hook's options from
// HookOpts; a job still running when its test ends is killed.
package sparkjob

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stratatrace/strata/test/testenv"
)

// HookOpts runs the real `strata hook-opts` for the hook files make build
// put in bin/jvmhook, with the agent's hook socket.
func HookOpts(tb testing.TB, socket string) string {
	tb.Helper()
	strata := testenv.Built(tb, "strata")
	jar := testenv.Built(tb, "jvmhook/strata-hook.jar")
	out, err := exec.Command(strata, "hook-opts", "--install-hook", filepath.Dir(jar), "--hook-socket", socket).Output()
	if err != nil {
		tb.Fatalf("strata hook-opts: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// JavaagentOpts is the hook's older form of JVM options, the bare library
// beside -javaagent:strata-hook.jar (the Java agent starting the hook
// through java.lang.instrument), still accepted from configurations
// written that way.
func JavaagentOpts(tb testing.TB, socket string) string {
	tb.Helper()
	jar := testenv.Built(tb, "jvmhook/strata-hook.jar")
	lib := filepath.Join(filepath.Dir(jar), "libstratahook.so")
	return fmt.Sprintf("-agentpath:%s -javaagent:%s=lib=%s,socket=%s", lib, jar, lib, socket)
}

// Jar returns bin/sparkjob/sparkjob-VERSION.jar for a SPARK_HOME, skipping
// the test when it is not built.
func Jar(tb testing.TB, home string) string {
	tb.Helper()
	v := strings.TrimPrefix(filepath.Base(home), "spark-")
	return testenv.Built(tb, filepath.Join("sparkjob", "sparkjob-"+v+".jar"))
}

// Step is one JSON line of the job.
type Step struct {
	Step     string `json:"step"`
	App      string `json:"app"`
	UI       string `json:"ui"` // the driver's UI (its live REST API)
	PID      int    `json:"pid"`
	Master   string `json:"master"`
	Ser      int    `json:"ser"`
	SerHeap  int    `json:"ser_heap"` // the on-heap MEMORY_ONLY_SER RDD of an --offheap run
	Deser    int    `json:"deser"`
	DF       int    `json:"df"`
	RDD      int    `json:"rdd"`
	Victim   int    `json:"victim"`
	SerLevel string `json:"ser_level"`
	Parts    int    `json:"parts"`
	Records  int    `json:"records"`
	Record   int    `json:"record"`
}

// Job is StrataJob running under spark-submit.
type Job struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	steps  chan Step
	stderr *testenv.Output
	done   chan error
}

// Start runs spark-submit with the given --conf settings and job flags.
// The job is killed when the test ends; its stderr's tail is logged if the
// test failed.
func Start(t *testing.T, home, master string, conf []string, args ...string) *Job {
	t.Helper()
	argv := []string{"--master", master, "--class", "org.stratatrace.sparkjob.StrataJob"}
	for _, c := range conf {
		argv = append(argv, "--conf", c)
	}
	argv = append(append(argv, Jar(t, home)), args...)
	j := &Job{
		cmd:    exec.Command(filepath.Join(home, "bin", "spark-submit"), argv...),
		steps:  make(chan Step, 8),
		stderr: &testenv.Output{},
		done:   make(chan error, 1),
	}
	j.cmd.Env = append(os.Environ(), "SPARK_HOME="+home, "SPARK_LOCAL_IP=127.0.0.1")
	j.cmd.Stderr = j.stderr
	var err error
	if j.stdin, err = j.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := j.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := j.cmd.Start(); err != nil {
		t.Fatalf("start spark-submit: %v", err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var s Step
			if json.Unmarshal(sc.Bytes(), &s) == nil && s.Step != "" {
				j.steps <- s
			}
		}
		close(j.steps)
		j.done <- j.cmd.Wait()
	}()
	t.Cleanup(func() {
		j.cmd.Process.Kill()
		if t.Failed() {
			t.Logf("--- job stderr (last 6000 bytes):\n%s", Tail(j.stderr.String(), 6000))
		}
	})
	return j
}

// Tail returns the last n bytes of s.
func Tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// Next waits for the step named name; any other step fails the test.
func (j *Job) Next(t *testing.T, name string) Step {
	t.Helper()
	timeout := time.After(5 * time.Minute)
	for {
		select {
		case s, ok := <-j.steps:
			if !ok {
				t.Fatalf("job ended before step %q", name)
			}
			if s.Step == name {
				return s
			}
			t.Fatalf("job step %q, want %q", s.Step, name)
		case <-timeout:
			t.Fatalf("no step %q after 5 minutes", name)
		}
	}
}

// Proceed lets the job go on to its next step.
func (j *Job) Proceed(t *testing.T) {
	t.Helper()
	if _, err := io.WriteString(j.stdin, "next\n"); err != nil {
		t.Fatalf("tell job to proceed: %v", err)
	}
}

// Finish lets the job end and waits for its exit; it returns the driver
// JVM's stderr.
func (j *Job) Finish(t *testing.T) string {
	t.Helper()
	j.Next(t, "done")
	j.stdin.Close()
	select {
	case err := <-j.done:
		if err != nil {
			t.Fatalf("job exited: %v", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("job did not exit")
	}
	return j.stderr.String()
}

// HookCounters parses the hook's last "strata-hook: sent=N dropped=N ..."
// line in a JVM's stderr, failing the test without one.
func HookCounters(t *testing.T, stderr string) map[string]int64 {
	t.Helper()
	m, err := ParseHookCounters(stderr)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// ParseHookCounters parses the hook's last "strata-hook: sent=N dropped=N
// ..." line, the counters it prints at the JVM's exit, by name.
func ParseHookCounters(stderr string) (map[string]int64, error) {
	i := strings.LastIndex(stderr, "strata-hook: sent=")
	if i < 0 {
		return nil, fmt.Errorf("no strata-hook counters line in the JVM's stderr (hook not loaded?)")
	}
	line, _, _ := strings.Cut(stderr[i+len("strata-hook: "):], "\n")
	m := map[string]int64{}
	for _, kv := range strings.Fields(line) {
		k, v, _ := strings.Cut(kv, "=")
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("hook counters %q: %w", line, err)
		}
		m[k] = n
	}
	return m, nil
}
