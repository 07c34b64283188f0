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
// the THP block, the NUMA summary, exact fault counts and the heuristics
// report.
func TestDemo(t *testing.T) {
	testenv.RequireRoot(t)
	bin := bins(t)
	cmd := exec.Command("bash", filepath.Join(testenv.RepoRoot(), "test", "demo", "demo.sh"))
	cmd.Env = append(os.Environ(), "STRATA_BIN="+bin, "STRATA_DEMO_NONINTERACTIVE=1")
	cmd.Stdin = nil
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo failed: %v\n%s", err, out)
	}
	s := string(out)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`alloc\s+7\s+2\s+rdd_7_2\s+\d+\s+0x[0-9a-f]+000\s+\d+\s+0x[0-9a-f]+\s+0\s+present\+thp\s+\S*compound_head`),
		regexp.MustCompile(`(?m)^7\s+0\s+4096\s+16777216$`), // 4096 resident pages of RDD 7 on node 0
		regexp.MustCompile(`(?m)^3\s+0\s+rdd_3_0\s+1\s+\d+\s+0\s+3072\s+0\s+0\s+0$`),
		regexp.MustCompile(`unavailable: no hardware PMU`),
		regexp.MustCompile(`job_1700000000000_0001\s+mapreduce\s+severe`),
		regexp.MustCompile(`web UI: http://127\.0\.0\.1:\d+/`),
		regexp.MustCompile(`demo finished`),
	} {
		if !want.MatchString(s) {
			t.Errorf("demo output lacks %v", want)
		}
	}
	if t.Failed() || strings.Contains(s, "timed out") {
		t.Logf("demo output:\n%s", s)
	}
}
