package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stratatrace/strata/test/testenv"
)

// TestDemo runs `make demo`'s script unattended (no terminal, no stdin) and
// checks that it exits 0 and shows what the README promises: the trace of
// the THP block, the NUMA summary, exact fault counts, the heuristics
// report and, when Spark is installed and the hook built, a real Spark job's
// blocks under the hook.
func TestDemo(t *testing.T) {
	testenv.RequireRoot(t)
	// The demo runs what make build puts in bin/ (strata-gen and the hook
	// too), not the subset the other tests build for themselves.
	bin := filepath.Dir(testenv.Built(t, "strata-gen"))
	cmd := exec.Command("bash", filepath.Join(testenv.RepoRoot(), "test", "demo", "demo.sh"))
	cmd.Env = append(os.Environ(), "STRATA_BIN="+bin, "STRATA_DEMO_NONINTERACTIVE=1", "STRATA_DEMO_SPARK=3.5")
	cmd.Stdin = nil
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo failed: %v\n%s", err, out)
	}
	s := string(out)
	want := []*regexp.Regexp{
		regexp.MustCompile(`alloc\s+7\s+2\s+rdd_7_2\s+buffers\s+\d+\s+0x[0-9a-f]+000\s+\d+\s+0x[0-9a-f]+\s+0\s+present\+thp\s+\S*compound_head`),
		regexp.MustCompile(`(?m)^7\s+0\s+4096\s+16777216$`), // 4096 resident pages of RDD 7 on node 0
		regexp.MustCompile(`(?m)^3\s+0\s+rdd_3_0\s+1\s+\d+\s+0\s+3072\s+0\s+0\s+0$`),
		regexp.MustCompile(`unavailable: no hardware PMU`),
		regexp.MustCompile(`job_1700000000000_0001\s+mapreduce\s+severe`),
		regexp.MustCompile(`web UI: http://127\.0\.0\.1:\d+/`),
		regexp.MustCompile(`demo finished`),
	}
	if reason, ok := demoSpark(t, bin); ok {
		want = append(want,
			// RDD 1 cached OFF_HEAP: chunk 0 of each block is 1 MiB of
			// records, chunk 1 the serializer's tail.
			regexp.MustCompile(`alloc\s+1\s+0\s+rdd_1_0\s+0/2\s+-\s+rdd\s+\d+\.\d+/\d+\s+\d+\s+0x[0-9a-f]+\s+1048576\s+25[67]\s+buffers\s+1048576\s`),
			regexp.MustCompile(`alloc\s+1\s+0\s+rdd_1_0\s+1/2\s+-\s+rdd\s+\d+\.\d+/\d+\s+\d+\s+0x[0-9a-f]+\s+\d+\s+[12]\s+buffers\s`),
			// its pages, resident
			regexp.MustCompile(`alloc\s+1\s+0\s+rdd_1_0\s+buffers\s+\d+\s+0x[0-9a-f]+000\s+\d+\s+0x[0-9a-f]+000\s+0\s+present\s`),
			// the report: RDD 1 off heap and the heap-serialized RDD as
			// buffers, the deserialized RDD (rdd.cache()'s level) walked,
			// the cached DataFrame (two partitions) as its column buffers
			regexp.MustCompile(`(?m)^1\s+4\s+4\s+4\.0\s+4\.0\s.*\sbuffers 100 %$`),
			regexp.MustCompile(`(?m)^\d+\s+4\s+4\s+4\.0\s+4\.0\s.*\swalked (9\d\.\d|100) %$`),
			regexp.MustCompile(`(?m)^\d+\s+2\s+2\s+0\.\d\s.*\sbuffers (9\d\.\d|100) %$`),
			// a deserialized block: its array while the walk is pending,
			// then every object it reaches
			regexp.MustCompile(`alloc\s+\d+\s+0\s+rdd_\d+_0\s+0/1\s+-\s+rdd\s.*\sreferences\s+\d+\s+-\s+walk pending`),
			regexp.MustCompile(`move\s+\d+\s+0\s+rdd_\d+_0\s+0/1\s+-\s+rdd\s+\S+\s+\d+\s+0x[0-9a-f]+\s+\d+\s+2[5-9]\d\s+walked\s+10[0-9]{5}\s`),
			// the NUMA summary: RDD 1's 4 MiB on node 0
			regexp.MustCompile(`(?m)^1\s+0\s+10[23]\d\s+\d+$`),
			// write faults in the sort's Tungsten pages
			regexp.MustCompile(`(?m)^\d+\s+\d+\s+page_\d+_\d+\s+driver\s+\d+\s+\d+\s+[1-9]\d*\s`),
			// an on-heap serialized block moved by the GCs, cleared at exit
			regexp.MustCompile(`move\s+5\s+0\s+rdd_5_0\s+0/2\s+-\s+rdd\s`),
			regexp.MustCompile(`free\s+5\s+0\s+rdd_5_0\s+0/2\s+-\s+rdd\s.*\scleared`),
			// why blocks were freed
			regexp.MustCompile(`\d+ tungsten_page page_freed`),
			regexp.MustCompile(`\d+ rdd removed`),
			regexp.MustCompile(`\d+ rdd evicted`),
		)
	} else {
		t.Logf("not checking the demo's Spark part: %s", reason)
		if !strings.Contains(s, "skipping the Spark part: ") {
			t.Errorf("the demo does not say why it skipped the Spark part")
		}
	}
	for _, w := range want {
		if !w.MatchString(s) {
			t.Errorf("demo output lacks %v", w)
		}
	}
	if t.Failed() || strings.Contains(s, "timed out") {
		t.Logf("demo output:\n%s", s)
	}
}

// demoSpark says whether the demo can run its Spark part: Spark 3.5
// installed (make deps), the hook and the test job built, java on PATH.
func demoSpark(t *testing.T, bin string) (string, bool) {
	t.Helper()
	if _, err := exec.LookPath("java"); err != nil {
		return "no java on PATH", false
	}
	home, err := exec.Command("make", "-s", "-C", testenv.RepoRoot(), "spark-home", "SPARK=3.5").Output()
	if err != nil {
		return "Spark 3.5 not installed (make deps)", false
	}
	ver := strings.TrimPrefix(filepath.Base(strings.TrimSpace(string(home))), "spark-")
	for _, f := range []string{filepath.Join("sparkjob", "sparkjob-"+ver+".jar"), filepath.Join("jvmhook", "strata-hook.jar")} {
		if _, err := os.Stat(filepath.Join(bin, f)); err != nil {
			return f + " not built (make build)", false
		}
	}
	return "", true
}
