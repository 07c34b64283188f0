package jsonform

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// Encoder writes forms as JSON, each value on one line.
type Encoder struct{ enc *json.Encoder }

// NewEncoder returns an Encoder that writes to w. Characters HTML treats
// specially are written as they are: a heuristic's "<" stays "<".
func NewEncoder(w io.Writer) *Encoder {
	e := json.NewEncoder(w)
	e.SetEscapeHTML(false)
	return &Encoder{enc: e}
}

// Encode writes v, one of this package's forms or a slice of them, and a
// newline.
func (e *Encoder) Encode(v any) error {
	if err := e.enc.Encode(v); err != nil {
		return fmt.Errorf("encode %T: %w", v, err)
	}
	return nil
}

// Error is a failed answer: {"error": "..."}; an NDJSON stream that fails
// after its first line ends with one.
type Error struct {
	Message string `json:"error"`
}

// List is the forms of xs, each made by form: an array, never null.
func List[T, F any](xs []T, form func(T) F) []F {
	out := make([]F, 0, len(xs))
	for _, x := range xs {
		out = append(out, form(x))
	}
	return out
}

// Hex is an address as the kernel's tools print it: "0x7f0000001000".
func Hex(v uint64) string { return fmt.Sprintf("%#x", v) }

// Time is an instant in nanoseconds since the epoch as RFC 3339 in UTC,
// with the fraction digits it needs.
func Time(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339Nano) }

// timeMs is an instant in milliseconds since the epoch as Time writes it,
// "" for 0 (unknown).
func timeMs(ms int64) string {
	if ms == 0 {
		return ""
	}
	return Time(ms * int64(time.Millisecond))
}

// enum is a proto enum value's name without its prefix, lowercased:
// ACCESS_KIND_READ -> read.
func enum(full, prefix string) string { return strings.ToLower(strings.TrimPrefix(full, prefix)) }

// Severity names a severity as the form writes it: "none" … "critical".
func Severity(s stratav1.Severity) string { return enum(s.String(), "SEVERITY_") }

// Access names an access kind as the form writes it: "alloc", "read", …
func Access(a stratav1.AccessKind) string { return enum(a.String(), "ACCESS_KIND_") }

// Resolution names a resolution as the form writes it: "buffers",
// "walked", "walk_cut", "references", "unspecified".
func Resolution(r stratav1.Resolution) string { return enum(r.String(), "RESOLUTION_") }

// FaultCounts are page-fault counters kept in the kernel. Unclassified
// faults were seen by the perf-event fallback hook, which cannot tell
// reads from writes.
type FaultCounts struct {
	Read         uint64 `json:"read"`
	Write        uint64 `json:"write"`
	Exec         uint64 `json:"exec"`
	Major        uint64 `json:"major"`
	Unclassified uint64 `json:"unclassified"`
}

// NewFaultCounts is f's form (zero for nil).
func NewFaultCounts(f *stratav1.FaultCounts) FaultCounts {
	return FaultCounts{Read: f.GetRead(), Write: f.GetWrite(), Exec: f.GetExec(), Major: f.GetMajor(), Unclassified: f.GetUnclassified()}
}

// Add adds g's counters to f's.
func (f *FaultCounts) Add(g FaultCounts) {
	f.Read += g.Read
	f.Write += g.Write
	f.Exec += g.Exec
	f.Major += g.Major
	f.Unclassified += g.Unclassified
}

// Total is the sum of the counters.
func (f FaultCounts) Total() uint64 { return f.Read + f.Write + f.Exec + f.Major + f.Unclassified }
