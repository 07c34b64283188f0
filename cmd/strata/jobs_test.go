package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stratatrace/strata/collector/query/jsonform"
	"github.com/stratatrace/strata/collector/store/storetest"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

func TestJobs(t *testing.T) {
	addr := collector(t)
	jobs := storetest.Jobs()
	got := jsonLines[jsonform.Job](t, strata(t, "jobs", "--collector", addr, "--severity", "MODERATE", "-o", "json"))
	if len(got) != 2 || got[0].JobID != jobs[2].GetJobId() || got[0].Severity != "critical" ||
		got[1].JobID != jobs[1].GetJobId() || got[1].Severity != "moderate" {
		t.Fatalf("jobs >= MODERATE = %v", got)
	}
	if all := jsonLines[jsonform.Job](t, strata(t, "jobs", "--collector", addr, "-o", "json")); len(all) != 3 {
		t.Fatalf("all jobs: %v", all)
	}
	// The heuristics come with the jobs, each detail's long text included.
	h := got[0].Heuristics
	if len(h) != 1 || len(h[0].Details) != 2 || h[0].Details[1] != (jsonform.Detail{Name: "spark.serializer",
		Value: "org.apache.spark.serializer.JavaSerializer", Details: storetest.JobAdvice}) || h[0].Details[0].Details != "" {
		t.Fatalf("jobs JSON heuristics %+v", h)
	}
	show := strata(t, "job", jobs[0].GetJobId(), "--collector", addr)
	for _, want := range []string{jobs[0].GetJobId(), "severity  low", "Executor GC: low", "  GC time: 12%\n",
		"  spark.serializer: org.apache.spark.serializer.JavaSerializer\n    Kryo is not the serializer:\n    set spark.serializer to"} {
		if !strings.Contains(show, want) {
			t.Errorf("job output lacks %q:\n%s", want, show)
		}
	}
	var one map[string]any
	if err := json.Unmarshal([]byte(strata(t, "job", jobs[0].GetJobId(), "--collector", addr, "-o", "json")), &one); err != nil {
		t.Fatal(err)
	}
	d := one["heuristics"].([]any)[0].(map[string]any)["details"].([]any)[1].(map[string]any)
	if d["details"] != storetest.JobAdvice {
		t.Errorf("job -o json detail %v, want the long text under \"details\"", d)
	}
	// The job's own figures: score a number, severity and times in words.
	if one["score"] != 0.0 || one["severity"] != "low" || one["started"] != "1970-01-01T00:00:01Z" ||
		one["finished"] != "1970-01-01T00:00:02Z" || one["metrics"].(map[string]any)["runtime_ms"] != 60000.0 {
		t.Errorf("job -o json = %v", one)
	}
}

func TestParseSeverity(t *testing.T) {
	for in, want := range map[string]stratav1.Severity{
		"MODERATE": stratav1.Severity_SEVERITY_MODERATE, "severe": stratav1.Severity_SEVERITY_SEVERE,
		"SEVERITY_CRITICAL": stratav1.Severity_SEVERITY_CRITICAL, " none ": stratav1.Severity_SEVERITY_NONE,
	} {
		if got, err := parseSeverity(in); err != nil || got != want {
			t.Errorf("parseSeverity(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
}

// FuzzParseSeverity: any input parses to a known severity or fails.
func FuzzParseSeverity(f *testing.F) {
	f.Add("moderate")
	f.Add("SEVERITY_LOW")
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseSeverity(s)
		if err == nil {
			if _, ok := stratav1.Severity_name[int32(v)]; !ok {
				t.Fatalf("parseSeverity(%q) = unknown %d", s, v)
			}
		}
	})
}
