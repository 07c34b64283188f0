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
	for _, tc := range []struct{ diag, want string }{
		{"java.lang.RuntimeException: boom", "java.lang.RuntimeException: boom"},
		{"", noDiagnostics},
	} {
		j := mrJob(nil, nil, nil)
		j.Status, j.Diagnostics = job.Failed, tc.diag
		r := (Exception{}).Apply(j)
		if r.Skip || r.Severity != Moderate || r.Score != 0 {
			t.Fatalf("failed job: %+v, want MODERATE score 0", r)
		}
		if v, _ := findDetail(r, "Error"); v != tc.want {
			t.Fatalf("Error detail %q, want %q", v, tc.want)
		}
	}
}
