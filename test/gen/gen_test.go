package gen

import (
	"bytes"
	"strings"
	"testing"
)

func TestDeterministic(t *testing.T) {
	var a, b bytes.Buffer
	spec := MRJob{Maps: 10, Reduces: 2, Skew: 3, Seed: 9}
	WriteJhist(&a, spec)
	WriteJhist(&b, spec)
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("same spec, different job histories")
	}
	lines := strings.Count(a.String(), "\n")
	// header, schema, submitted, inited, 4 lines per task, finished
	if want := 2 + 2 + 4*12 + 1; lines != want {
		t.Errorf("%d lines, want %d", lines, want)
	}
	a.Reset()
	b.Reset()
	WriteSparkLog(&a, SparkApp{Seed: 3, FailedTasks: 2})
	WriteSparkLog(&b, SparkApp{Seed: 3, FailedTasks: 2})
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("same spec, different event logs")
	}
	if n := strings.Count(a.String(), `"Event":"SparkListenerTaskEnd"`); n != 2*100+2 {
		t.Errorf("%d task ends", n)
	}
}

func TestWriteMRJobLayout(t *testing.T) {
	dir := t.TempDir()
	p, err := WriteMRJob(dir, MRJob{Maps: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p, "/2023/11/14/000000/job_1700000000000_0001-") || !strings.HasSuffix(p, "-1-0-SUCCEEDED-default-1700000005000.jhist") {
		t.Errorf("path %s", p)
	}
}
