package fetcher_test

import (
	"context"
	"fmt"
	"os"

	"github.com/stratatrace/strata/collector/fetcher"
	"github.com/stratatrace/strata/collector/job"
	"github.com/stratatrace/strata/test/gen"
)

// Fetch walks a directory of job histories (here one generated MapReduce
// job in Hadoop's done layout, its _conf.xml beside it) and hands each job
// to the callback as soon as it is read.
func ExampleFetch() {
	dir, err := os.MkdirTemp("", "histories")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	if _, err := gen.WriteMRJob(dir, gen.MRJob{JobID: "job_1700000000000_0001", Maps: 30, Reduces: 4, Seed: 1}); err != nil {
		panic(err)
	}

	err = fetcher.Fetch(context.Background(), dir, func(j *job.Job) error {
		fmt.Println(j.ID, j.AppID, j.Type, j.Status, len(j.MapTasks), len(j.ReduceTasks), len(j.Warnings))
		return nil
	})
	fmt.Println("err:", err)
	// Output:
	// job_1700000000000_0001 application_1700000000000_0001 mapreduce SUCCEEDED 30 4 0
	// err: <nil>
}
