package heuristics

import (
	"strings"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// Severity is Dr. Elephant's five-level severity. The integer values are the
// ones used for scoring (docs/heuristics.md#severity-and-score) and equal stratav1.Severity's.
type Severity int

// Severities in ascending order.
const (
	None     Severity = 0
	Low      Severity = 1
	Moderate Severity = 2
	Severe   Severity = 3
	Critical Severity = 4
)

var severityNames = [...]string{"NONE", "LOW", "MODERATE", "SEVERE", "CRITICAL"}

// String returns the upper-case name ("MODERATE"); unknown values are NONE.
func (s Severity) String() string {
	if s < None || s > Critical {
		return severityNames[0]
	}
	return severityNames[s]
}

// Proto returns the wire severity.
func (s Severity) Proto() stratav1.Severity {
	if s < None || s > Critical {
		return stratav1.Severity_SEVERITY_NONE
	}
	return stratav1.Severity(s)
}

// ParseSeverity maps a name ("moderate", "SEVERITY_MODERATE") to a
// severity; ok is false for unknown names.
func ParseSeverity(name string) (Severity, bool) {
	for i, n := range severityNames {
		if strings.EqualFold(name, n) || strings.EqualFold(name, "SEVERITY_"+n) {
			return Severity(i), true
		}
	}
	return None, false
}

// MaxSeverity returns the highest of its arguments, None for none.
func MaxSeverity(s ...Severity) Severity {
	m := None
	for _, x := range s {
		if x > m {
			m = x
		}
	}
	return m
}

// Score is Dr. Elephant's heuristic score (docs/heuristics.md#severity-and-score): 0 for NONE and LOW,
// otherwise severity × n, n being the number of tasks looked at.
func Score(s Severity, n int) int64 {
	if s <= Low {
		return 0
	}
	return int64(s) * int64(n)
}
