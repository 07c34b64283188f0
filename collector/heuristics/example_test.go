package heuristics_test

import (
	"fmt"

	"github.com/stratatrace/strata/collector/heuristics"
	"github.com/stratatrace/strata/collector/job"
)

// An engine with the default thresholds rates a job. A MapReduce job that
// succeeded without a single task gets one result, No Data Received, at
// LOW with score 0 (docs/heuristics.md#severity-and-score).
func ExampleEngine_Analyze() {
	eng, err := heuristics.NewEngine(heuristics.DefaultConfig())
	if err != nil {
		panic(err)
	}
	res := eng.Analyze(&job.Job{
		ID:     "job_1700000000000_0001",
		AppID:  "application_1700000000000_0001",
		Type:   job.MapReduce,
		Status: job.Succeeded,
		Conf:   map[string]string{"mapred.child.java.opts": "-Xmx1g"},
	})
	for _, h := range res.Heuristics {
		fmt.Println(h.Name, h.Severity, h.Score)
	}
	fmt.Println("job:", res.Severity, res.Score)
	// Output:
	// No Data Received SEVERITY_LOW 0
	// job: SEVERITY_LOW 0
}
