package fetcher

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stratatrace/strata/test/testenv"
)

func TestDoneDir(t *testing.T) {
	got, err := DoneDir("/done", "job_1461566847127_84624", time.Date(2016, 7, 30, 12, 0, 0, 0, time.UTC).UnixMilli(), time.UTC)
	if err != nil || got != "/done/2016/07/30/000084" {
		t.Errorf("DoneDir = %q, %v", got, err)
	}
	pst, _ := time.LoadLocation("America/Los_Angeles")
	// 2018-05-17 01:00 UTC is still the 16th in PST.
	got, _ = DoneDir("/done", "job_1_1", time.Date(2018, 5, 17, 1, 0, 0, 0, time.UTC).UnixMilli(), pst)
	if got != "/done/2018/05/16/000000" {
		t.Errorf("DoneDir in PST = %q", got)
	}
}

func TestParseHistoryFileName(t *testing.T) {
	h, err := ParseHistoryFileName("job_1329348432655_0001-1329348443227-user-Sleep+job-1329348468601-10-1-SUCCEEDED-default.jhist")
	if err != nil || h.Name != "Sleep job" || h.Maps != 10 || h.Reduces != 1 || h.StartMs != 0 || h.FinishMs != 1329348468601 {
		t.Errorf("%+v %v", h, err)
	}
	h, _ = ParseHistoryFileName("job_1_1-5-u-a%2Db-9-1-0-FAILED-q%2Dx-6.jhist")
	if h.Name != "a-b" || h.Queue != "q-x" || h.StartMs != 6 || h.Status != "FAILED" {
		t.Errorf("%+v", h)
	}
	if _, err := ParseHistoryFileName("x.jhist"); !errors.Is(err, ErrUnknownFormat) {
		t.Errorf("bad name: %v", err)
	}
}

// Dr. Elephant's MapReduceFSFetcherHadoop2Test vectors FF-1, FF-3, FF-5.
func TestLocateAndBackfillSamples(t *testing.T) {
	data := testenv.Samples(t)
	done := filepath.Join(data, "drelephant/history/done")
	inter := filepath.Join(data, "drelephant/history/done_intermediate")
	jh, conf, err := LocateJobHistory(done, inter, "job_1526555215992_0001", "user", 1526555658299, time.UTC)
	if err != nil || !strings.Contains(jh, "job_1526555215992_0001-") || !strings.HasSuffix(conf, "job_1526555215992_0001_conf.xml") {
		t.Errorf("FF-1: %s %s %v", jh, conf, err)
	}
	if j := fetchOne(t, jh); j.ID != "job_1526555215992_0001" {
		t.Errorf("FF-1 fetch: %s", j.ID)
	}
	jh, _, err = LocateJobHistory(done, inter, "job_1526555215992_0004", "user", 1526567243482, time.UTC)
	if err != nil || !strings.Contains(jh, "done_intermediate") {
		t.Errorf("intermediate fallback: %s %v", jh, err)
	}
	for _, c := range []struct {
		id     string
		finish int64
		dir    string
	}{
		{"job_1526555315992_0007", 1526567243567, "2018/05/17"},
		{"job_1526555315992_0008", 1525567243567, "2018/05/06"},
	} {
		_, _, err := LocateJobHistory(done, inter, c.id, "user", c.finish, time.UTC)
		if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), c.dir) {
			t.Errorf("FF-3 %s: %v, want not found in %s", c.id, err, c.dir)
		}
	}
	for _, c := range []struct {
		start, end int64
		want       string
	}{
		{1526520000000, 1526600000000, "job_1526555215992_0001 job_1526555215992_0002"},
		{1526555658200, 1526555658400, "job_1526555215992_0001"},
	} {
		hs, err := Backfill(done, c.start, c.end)
		var ids []string
		for _, h := range hs {
			ids = append(ids, h.JobID)
			if h.Queue != "default" || h.User != "user" || h.Status != "SUCCEEDED" {
				t.Errorf("FF-5 %+v", h)
			}
		}
		if err != nil || strings.Join(ids, " ") != c.want {
			t.Errorf("FF-5 [%d, %d]: %v %v, want %s", c.start, c.end, ids, err, c.want)
		}
	}
}
