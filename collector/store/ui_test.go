package store_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stratatrace/strata/collector/answer"
	"github.com/stratatrace/strata/collector/store"
	"github.com/stratatrace/strata/collector/store/storetest"
)

// A store whose jobs were written before the filter columns existed gets
// them filled from the stored results when it is opened.
func TestSearchJobsBackfill(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := store.Open(ctx, store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range storetest.UIJobs() {
		if err := s.PutJob(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("duckdb", filepath.Join(dir, store.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("UPDATE jobs SET user_name = NULL, queue = NULL, job_type = NULL, score = NULL"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s, err = store.Open(ctx, store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	page, err := s.SearchJobs(ctx, answer.JobQuery{User: "bob", Queue: "etl", Type: "mapreduce"})
	if err != nil || page.Total != 1 || page.Jobs[0].GetJobId() != "job_1526555215992_0009" {
		t.Fatalf("after backfill: %+v, %v", page, err)
	}
	page, err = s.SearchJobs(ctx, answer.JobQuery{Order: answer.JobsWorst, Limit: 2})
	if err != nil || !reflect.DeepEqual(storetest.JobIDs(page.Jobs), []string{"job_1526555215992_0003", "job_1526555215992_0009"}) {
		t.Fatalf("worst after backfill: %v, %v", storetest.JobIDs(page.Jobs), err)
	}
}
