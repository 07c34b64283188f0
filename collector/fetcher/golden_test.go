package fetcher

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stratatrace/strata/collector/job"
	"github.com/stratatrace/strata/test/gen"
)

// TestGeneratedGolden pins the summaries of generated inputs of every kind
// in testdata/generated.golden.json (rewrite with -update), so regressions
// show even where the third-party samples are absent.
func TestGeneratedGolden(t *testing.T) {
	dir := t.TempDir()
	for _, s := range []gen.MRJob{
		{JobID: "job_1700000000000_0001", Maps: 30, Reduces: 4, Skew: 4, GCRatio: 0.05, Seed: 1},
		{JobID: "job_1700000000000_0002", Maps: 4, Failed: true, Seed: 2},
	} {
		if _, err := gen.WriteMRJob(filepath.Join(dir, "mr"), s); err != nil {
			t.Fatal(err)
		}
	}
	spark := gen.SparkApp{AppID: "application_1700000000000_0003", Executors: 3, Stages: 3, TasksPerStage: 40, Skew: 3, FailedTasks: 2, Seed: 3}
	plain := sparkLog(t, spark)
	write(t, filepath.Join(dir, "spark", spark.AppID), plain)
	write(t, filepath.Join(dir, "spark", spark.AppID+"_1.lz4"), lz4Block(t, plain, true))
	write(t, filepath.Join(dir, "spark", spark.AppID+"_2.snappy"), snappyStream(t, plain))
	got := map[string][]summary{}
	if err := Fetch(context.Background(), dir, func(j *job.Job) error {
		rel, _ := filepath.Rel(dir, j.Source)
		got[rel] = append(got[rel], summarize(j))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want, ok := golden(t, "generated.golden.json", got)
	if !ok {
		return
	}
	if b, _ := json.MarshalIndent(got, "", "  "); string(want) != string(b)+"\n" {
		t.Errorf("generated inputs differ from testdata/generated.golden.json:\n%s", b)
	}
}
