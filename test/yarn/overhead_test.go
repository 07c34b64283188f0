package yarn

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stratatrace/strata/test/sparkjob"
	"github.com/stratatrace/strata/test/testenv"
)

// TestYarnOverhead times STRATA_YARN_OVERHEAD pairs of client-mode runs
// of StrataJob on the cluster: one with no Strata on the node (no agent,
// no hook), one traced (the agent and collector running, the hook in both
// executors), in alternating order, and logs each run's wall time from
// spark-submit to its exit and the median of the pairs' ratios. It
// asserts nothing; make test-yarn leaves it out (docs/yarn.md has its
// numbers).
func TestYarnOverhead(t *testing.T) {
	pairs, _ := strconv.Atoi(os.Getenv("STRATA_YARN_OVERHEAD"))
	if pairs <= 0 {
		t.Skip("skipping: STRATA_YARN_OVERHEAD=N times N pairs of traced and untraced runs")
	}
	requireCluster(t)
	testenv.RequireRoot(t)
	home := testenv.SparkHome(t, "3.5")
	var ratios []float64
	for i := range pairs {
		var plain, traced time.Duration
		untracedRun := func() {
			t.Run(fmt.Sprintf("pair %d untraced", i), func(t *testing.T) { plain = timeRun(t, home, nil) })
		}
		tracedRun := func() {
			t.Run(fmt.Sprintf("pair %d traced", i), func(t *testing.T) {
				n := startNode(t) // stopped when this subtest ends
				traced = timeRun(t, home, []string{"spark.executor.extraJavaOptions=" + sparkjob.HookOpts(t, n.socket)})
			})
		}
		if i%2 == 0 {
			untracedRun()
			tracedRun()
		} else {
			tracedRun()
			untracedRun()
		}
		if plain == 0 || traced == 0 {
			t.Fatalf("pair %d: a run failed", i)
		}
		r := traced.Seconds() / plain.Seconds()
		ratios = append(ratios, r)
		t.Logf("pair %d: untraced %v, traced %v, ratio %.3f", i, plain.Round(time.Millisecond), traced.Round(time.Millisecond), r)
	}
	slices.Sort(ratios)
	median := (ratios[(len(ratios)-1)/2] + ratios[len(ratios)/2]) / 2
	t.Logf("%d pairs: median ratio %.3f, min %.3f, max %.3f", pairs, median, ratios[0], ratios[len(ratios)-1])
}

// timeRun runs StrataJob through every step in client mode with the extra
// settings and returns its wall time.
func timeRun(t *testing.T, home string, extra []string) time.Duration {
	began := time.Now()
	conf := append(append(jobConf(t, home), "spark.submit.deployMode=client"), extra...)
	j := sparkjob.Start(t, home, "yarn", conf, jobFlags...)
	for _, step := range []string{"cached", "gc", "unpersisted", "evicted"} {
		j.Next(t, step)
		j.Proceed(t)
	}
	j.Finish(t)
	return time.Since(began)
}
