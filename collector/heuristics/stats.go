package heuristics

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The statistics primitives of docs/heuristics.md#statistics. Their integer semantics (truncation,
// nearest rank, the two-group split) are deliberate: they decide severities
// at the boundaries, so they follow Dr. Elephant exactly.

// Average returns the mean of xs, summed in float64 and truncated toward
// zero; 0 for an empty list.
func Average(xs []int64) int64 {
	if len(xs) == 0 {
		return 0
	}
	var sum float64
	for _, x := range xs {
		sum += float64(x)
	}
	return int64(sum / float64(len(xs)))
}

// Median returns the middle element of xs sorted, or the truncated mean of
// the two middle elements for an even count; 0 for an empty list (callers
// in Dr. Elephant guard against that case). xs is not modified.
func Median(xs []int64) int64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Percentile returns the nearest-rank p-th percentile of xs: 0 when p is 0
// (not the minimum) or xs is empty, otherwise the element at rank
// ceil(n·p/100). p is clamped to [0, 100].
func Percentile(xs []int64, p int) int64 {
	if p <= 0 || len(xs) == 0 {
		return 0
	}
	p = min(p, 100)
	s := slices.Clone(xs)
	slices.Sort(s)
	pos := int(math.Ceil(float64(len(s)) * float64(p) / 100))
	return s[max(pos, 1)-1]
}

// FindTwoGroups splits values into a smaller and a larger group the way Dr.
// Elephant's skew heuristics do: start from the average, then twice replace
// the split point by avg(larger) − avg(smaller) (a difference, not a
// midpoint), and split a last time. Values < split go to a, the rest to b;
// order is preserved.
func FindTwoGroups(values []int64) (a, b []int64) {
	middle := Average(values)
	for range 2 {
		a, b = splitAt(values, middle)
		middle = Average(b) - Average(a)
	}
	return splitAt(values, middle)
}

func splitAt(values []int64, middle int64) (a, b []int64) {
	for _, v := range values {
		if v < middle {
			a = append(a, v)
		} else {
			b = append(b, v)
		}
	}
	return a, b
}

// DescribeFactor returns "(v/c formatted %.2f + suffix)", or "" when v/c
// is NaN.
func DescribeFactor(v, c int64, suffix string) string {
	f := float64(v) / float64(c)
	if math.IsNaN(f) {
		return ""
	}
	return "(" + strconv.FormatFloat(f, 'f', 2, 64) + suffix + ")"
}

// ReadableTimespan formats ms as "H hr M min S sec" leaving out zero parts;
// "0 sec" for 0. Sub-second remainders are dropped.
func ReadableTimespan(ms int64) string {
	if ms == 0 {
		return "0 sec"
	}
	sec := ms / 1000
	h, m, s := sec/3600, sec/60%60, sec%60
	var parts []string
	if h > 0 {
		parts = append(parts, strconv.FormatInt(h, 10)+" hr")
	}
	if m > 0 {
		parts = append(parts, strconv.FormatInt(m, 10)+" min")
	}
	if s > 0 {
		parts = append(parts, strconv.FormatInt(s, 10)+" sec")
	}
	return strings.Join(parts, " ")
}

// MBSecondsToGBHours converts MB·s to GB·h.
func MBSecondsToGBHours(mbs int64) float64 { return float64(mbs) / 1024 / 3600 }

// GBHoursString formats MB·s as Dr. Elephant's UI does: "%.3f GB Hours",
// or "0 GB Hours" when the value is 0 or rounds below 0.001.
func GBHoursString(mbs int64) string {
	v := MBSecondsToGBHours(mbs)
	s := strconv.FormatFloat(v, 'f', 3, 64)
	if mbs == 0 || s == "0.000" || s == "-0.000" {
		return "0 GB Hours"
	}
	return s + " GB Hours"
}

// ErrMemoryString is returned by StringToBytes for a malformed or negative
// memory string.
var ErrMemoryString = errors.New("bad memory string")

var memoryRE = regexp.MustCompile(`^([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)\s*(?:([tTgGmMkK])[bB]?|[bB])?$`)

// StringToBytes parses a Spark/Dr. Elephant memory string ("2G", "512m",
// "8.79e0 MB", "1,024 KB") into bytes. Commas are ignored; a bare number is
// bytes ("384" is 384 B); units are binary (K = 1024). The empty string is
// 0.
func StringToBytes(s string) (int64, error) {
	t := strings.TrimSpace(strings.ReplaceAll(s, ",", ""))
	if t == "" {
		return 0, nil
	}
	m := memoryRE.FindStringSubmatch(t)
	if m == nil {
		return 0, fmt.Errorf("parse %q: %w", s, ErrMemoryString)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, fmt.Errorf("parse %q: %w", s, ErrMemoryString)
	}
	if v < 0 {
		return 0, fmt.Errorf("parse %q: negative: %w", s, ErrMemoryString)
	}
	shift := 0
	switch strings.ToUpper(m[2]) {
	case "K":
		shift = 10
	case "M":
		shift = 20
	case "G":
		shift = 30
	case "T":
		shift = 40
	}
	f := v * float64(int64(1)<<shift)
	if f >= math.MaxInt64 {
		return math.MaxInt64, nil
	}
	return int64(f), nil
}

// BytesToString formats bytes in the largest binary unit not above the
// value, with up to two decimals and thousands separators: 9000 →
// "8.79 KB", 1000 GiB → "1,000 GB".
func BytesToString(b int64) string {
	units := []struct {
		name string
		size float64
	}{{"TB", 1 << 40}, {"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10}}
	for _, u := range units {
		if float64(b) >= u.size {
			return groupDecimal(float64(b)/u.size) + " " + u.name
		}
	}
	return groupDecimal(float64(b)) + " B"
}

// groupDecimal formats v like Java's "#,##0.##": at most two decimals
// (half-even), trailing zeros dropped, thousands grouped.
func groupDecimal(v float64) string {
	s := strconv.FormatFloat(v, 'f', 2, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	intPart, frac, _ := strings.Cut(s, ".")
	var g strings.Builder
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			g.WriteByte(',')
		}
		g.WriteRune(c)
	}
	out := g.String()
	if frac != "" {
		out += "." + frac
	}
	if neg {
		out = "-" + out
	}
	return out
}

// PercentString formats num/den×100 the way Dr. Elephant's UI does: "NaN"
// when den is 0; "0 %" when the percentage truncates to 0, which is any
// value strictly between -1 and 1 (a Java (long) cast, so 0.5 % and
// -0.999 % both print "0 %"); otherwise two decimals, rounded half to even
// on the exact binary value, and " %" (Java's DecimalFormat "0.00").
func PercentString(num, den int64) string {
	if den == 0 {
		return "NaN"
	}
	v := float64(num) / float64(den) * 100
	if math.Abs(v) < 1 {
		return "0 %"
	}
	return decimal2(v) + " %"
}

// decimal2 formats v with exactly two decimals like Java's DecimalFormat
// "0.00": digits beyond the shortest representation of v are zeros (so
// 9.223372036854776e20 prints ...477600000.00, not its exact binary
// expansion), and rounding to two decimals is half to even on v's exact
// value.
func decimal2(v float64) string {
	s := strconv.FormatFloat(v, 'f', -1, 64)
	_, frac, _ := strings.Cut(s, ".")
	if len(frac) <= 2 {
		if frac == "" {
			s += "."
		}
		return s + strings.Repeat("0", 2-len(frac))
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}
