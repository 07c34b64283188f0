package fetcher

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ErrNotFound means a job's history file is in neither the done nor the
// intermediate directory.
var ErrNotFound = errors.New("job history not found")

// HistoryFile is what a job history file's name says about its job.
// Hadoop names done files
// <jobid>-<submit>-<user>-<jobname>-<finish>-<maps>-<reduces>-<status>-<queue>[-<start>].jhist
// with each field URL-escaped ('-' as %2D).
type HistoryFile struct {
	Path     string
	JobID    string
	User     string
	Name     string
	Queue    string
	Status   string
	SubmitMs int64
	FinishMs int64
	StartMs  int64 // 0 when the name has no start time (older Hadoop)
	Maps     int
	Reduces  int
}

// ParseHistoryFileName reads the job index from a .jhist file name.
func ParseHistoryFileName(name string) (HistoryFile, error) {
	base := strings.TrimSuffix(filepath.Base(name), ".jhist")
	parts := strings.Split(base, "-")
	if len(parts) < 9 || !strings.HasPrefix(parts[0], "job_") {
		return HistoryFile{}, fmt.Errorf("parse history file name %q: %w", name, ErrUnknownFormat)
	}
	for i, p := range parts {
		if u, err := url.QueryUnescape(p); err == nil {
			parts[i] = u
		}
	}
	num := func(s string) int64 { v, _ := strconv.ParseInt(s, 10, 64); return v }
	h := HistoryFile{
		Path: name, JobID: parts[0], SubmitMs: num(parts[1]), User: parts[2], Name: parts[3],
		FinishMs: num(parts[4]), Maps: int(num(parts[5])), Reduces: int(num(parts[6])),
		Status: parts[7], Queue: parts[8],
	}
	if len(parts) > 9 {
		h.StartMs = num(parts[9])
	}
	return h, nil
}

// DoneDir returns the directory Hadoop's JobHistory server moves a job's
// files to: <done>/yyyy/mm/dd/<serial>, the date being the job's finish time
// in loc and the serial the first six digits of the job's sequence number
// zero-padded to nine (job_1461566847127_84624 → 000084).
func DoneDir(done, jobID string, finishMs int64, loc *time.Location) (string, error) {
	i := strings.LastIndexByte(jobID, '_')
	seq, err := strconv.Atoi(jobID[i+1:])
	if i < 0 || err != nil || seq < 0 {
		return "", fmt.Errorf("parse job id %q: %w", jobID, ErrUnknownFormat)
	}
	if loc == nil {
		loc = time.UTC
	}
	t := time.UnixMilli(finishMs).In(loc)
	serial := fmt.Sprintf("%09d", seq)[:6]
	return filepath.Join(done, fmt.Sprintf("%04d", t.Year()), fmt.Sprintf("%02d", int(t.Month())),
		fmt.Sprintf("%02d", t.Day()), serial), nil
}

// LocateJobHistory finds a job's .jhist and _conf.xml as Dr. Elephant's
// job-history fetcher does: in its done directory (see DoneDir), else in
// the intermediate directory <intermediate>/<user>/. The error names the
// directories searched.
func LocateJobHistory(done, intermediate, jobID, user string, finishMs int64, loc *time.Location) (jhist, conf string, err error) {
	dir, err := DoneDir(done, jobID, finishMs, loc)
	if err != nil {
		return "", "", err
	}
	dirs := []string{dir}
	if intermediate != "" && user != "" {
		dirs = append(dirs, filepath.Join(intermediate, user))
	}
	for _, d := range dirs {
		ents, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		jhist, conf = "", ""
		for _, e := range ents {
			n := e.Name()
			switch {
			case !strings.Contains(n, jobID):
			case strings.HasSuffix(n, "_conf.xml"):
				conf = filepath.Join(d, n)
			case strings.HasSuffix(n, ".jhist"):
				jhist = filepath.Join(d, n)
			}
		}
		if jhist != "" {
			return jhist, conf, nil
		}
	}
	return "", "", fmt.Errorf("locate %s: %w in %s", jobID, ErrNotFound, strings.Join(dirs, ", "))
}

// Backfill lists the job histories under a done directory whose finish
// time (from the file name) is within [startMs, endMs], oldest first.
func Backfill(done string, startMs, endMs int64) ([]HistoryFile, error) {
	var out []HistoryFile
	err := filepath.WalkDir(done, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(d.Name(), ".jhist") {
			return nil
		}
		h, err := ParseHistoryFileName(path)
		if err != nil || h.FinishMs < startMs || h.FinishMs > endMs {
			return nil
		}
		out = append(out, h)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list job histories: %w", err)
	}
	sort.SliceStable(out, func(i, k int) bool { return out[i].FinishMs < out[k].FinishMs })
	return out, nil
}
