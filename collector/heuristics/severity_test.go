package heuristics

import (
	"errors"
	"math"
	"testing"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// SV-1..SV-7 (docs/heuristics.md#test-vectors) plus the proto mapping and
// scoring.
func TestSeverityVectors(t *testing.T) {
	if MaxSeverity(Critical, Severe) != Critical || MaxSeverity(Low, Low, Critical) != Critical {
		t.Error("SV-1: max should be CRITICAL")
	}
	if MaxSeverity() != None {
		t.Error("max of nothing should be NONE")
	}
	if s := (Thresholds{2, 4, 6, 8}).Ascending(8); s != Critical {
		t.Errorf("SV-3 ascending(8; 2,4,6,8) = %v", s)
	}
	if s := (Thresholds{2, 4, 6, 12}).Ascending(10); s != Severe {
		t.Errorf("SV-3 ascending(10; 2,4,6,12) = %v", s)
	}
	want := []Severity{None, Low, Low, Moderate, Moderate, Severe, Severe, Critical, Critical}
	th := Thresholds{0.2, 0.4, 0.6, 0.8}
	for i, w := range want {
		v := float64(i+1) / 10
		if got := th.Ascending(v); got != w {
			t.Errorf("SV-5 ascending(%.1f) = %v, want %v", v, got, w)
		}
	}
	if err := (Thresholds{0.8, 0.6, 0.4, 0.2}).CheckAscending(); !errors.Is(err, ErrThresholdOrder) {
		t.Errorf("SV-7 ascending 0.8,0.6,0.4,0.2: %v", err)
	}
	if err := (Thresholds{0.2, 0.4, 0.6, 0.8}).CheckDescending(); !errors.Is(err, ErrThresholdOrder) {
		t.Errorf("SV-7 descending 0.2,0.4,0.6,0.8: %v", err)
	}
	if err := (Thresholds{0.1, 0.3, 0.5, 0.5}).CheckAscending(); err != nil {
		t.Errorf("severe == critical must be legal: %v", err)
	}
}

func TestThresholdEdges(t *testing.T) {
	asc, desc := Thresholds{1, 2, 3, 4}, Thresholds{4, 3, 2, 1}
	for _, tc := range []struct {
		name string
		got  Severity
		want Severity
	}{
		{"asc NaN", asc.Ascending(math.NaN()), None},
		{"asc +Inf", asc.Ascending(math.Inf(1)), Critical},
		{"asc below", asc.Ascending(0.99), None},
		{"asc low bound", asc.Ascending(1), Low},
		{"desc NaN", desc.Descending(math.NaN()), None},
		{"desc bound", desc.Descending(2), Severe},
		{"desc above", desc.Descending(4.01), None},
		{"desc -Inf", desc.Descending(math.Inf(-1)), Critical},
		{"severe==critical", Thresholds{0.1, 0.3, 0.5, 0.5}.Ascending(0.5), Critical},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

func TestSeverityNamesAndScore(t *testing.T) {
	for s := None; s <= Critical; s++ {
		if s.Proto() != stratav1.Severity(s) {
			t.Errorf("%v.Proto() = %v", s, s.Proto())
		}
		p, ok := ParseSeverity(s.String())
		if !ok || p != s {
			t.Errorf("ParseSeverity(%q) = %v, %v", s.String(), p, ok)
		}
		if p, ok := ParseSeverity("severity_" + s.String()); !ok || p != s {
			t.Errorf("ParseSeverity(severity_%s) = %v, %v", s, p, ok)
		}
	}
	if Severity(9).String() != "NONE" {
		t.Error("unknown severity should print NONE")
	}
	if _, ok := ParseSeverity("awful"); ok {
		t.Error("ParseSeverity accepted a bad name")
	}
	for _, tc := range []struct {
		s    Severity
		n    int
		want int64
	}{{None, 10, 0}, {Low, 10, 0}, {Moderate, 10, 20}, {Severe, 101, 303}, {Critical, 401, 1604}} {
		if got := Score(tc.s, tc.n); got != tc.want {
			t.Errorf("Score(%v, %d) = %d, want %d", tc.s, tc.n, got, tc.want)
		}
	}
}
