package heuristics

import (
	"testing"

	"github.com/stratatrace/strata/collector/job"
)

func TestException(t *testing.T) {
	ok := mrJob(nil, nil, nil)
	if r := (Exception{}).Apply(ok); !r.Skip {
		t.Fatalf("succeeded job: %+v, want skip", r)
	}
	// The stack trace is the long text of an "Error: Stacktrace" line, as
	// in Dr. Elephant; without one the value says where to look.
	for _, tc := range []struct{ diag, value, text string }{
		{"java.lang.RuntimeException: boom\n\tat Foo.bar(Foo.java:1)", "Stacktrace", "java.lang.RuntimeException: boom\n\tat Foo.bar(Foo.java:1)"},
		{"", noDiagnostics, ""},
	} {
		j := mrJob(nil, nil, nil)
		j.Status, j.Diagnostics = job.Failed, tc.diag
		r := (Exception{}).Apply(j)
		if r.Skip || r.Severity != Moderate || r.Score != 0 {
			t.Fatalf("failed job: %+v, want MODERATE score 0", r)
		}
		if d, _ := findLine(r, "Error"); d.Value != tc.value || d.Text != tc.text {
			t.Fatalf("Error detail %+v, want value %q, long text %q", d, tc.value, tc.text)
		}
	}
}
