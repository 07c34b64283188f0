package heuristics

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ErrThresholdOrder is returned when a threshold set is not ordered for its
// direction (docs/heuristics.md#thresholds).
var ErrThresholdOrder = errors.New("thresholds out of order")

// ErrBadParam is returned for a threshold parameter that is not a list of
// the expected number of arithmetic expressions
// (docs/heuristics.md#override-file).
var ErrBadParam = errors.New("bad threshold parameter")

// Thresholds are the four limits (low, moderate, severe, critical) of one
// severity scale. Whether bigger or smaller is worse is a property of the
// heuristic, not of the numbers: see Ascending and Descending.
//
// In YAML a Thresholds is a sequence of four numbers or arithmetic
// expressions ([10, 50, 100, 200], ["1/8", "1/4", "1/2", 1]) or one string
// with four comma-separated expressions ("1/8, 1/4, 1/2, 1").
type Thresholds [4]float64

// Ascending returns the severity of v when bigger is worse: CRITICAL if
// v ≥ critical, else SEVERE if v ≥ severe, and so on; NONE below low. NaN
// is NONE; +Inf is CRITICAL.
func (t Thresholds) Ascending(v float64) Severity {
	for i := 3; i >= 0; i-- {
		if v >= t[i] {
			return Severity(i + 1)
		}
	}
	return None
}

// Descending returns the severity of v when smaller is worse: CRITICAL if
// v ≤ critical, else SEVERE if v ≤ severe, and so on; NONE above low. NaN
// is NONE.
func (t Thresholds) Descending(v float64) Severity {
	for i := 3; i >= 0; i-- {
		if v <= t[i] {
			return Severity(i + 1)
		}
	}
	return None
}

// Scale returns the thresholds multiplied by f (minutes to ms, fractions of
// a block to bytes, …).
func (t Thresholds) Scale(f float64) Thresholds {
	for i := range t {
		t[i] *= f
	}
	return t
}

// CheckAscending returns ErrThresholdOrder unless low ≤ moderate ≤ severe ≤
// critical.
func (t Thresholds) CheckAscending() error {
	if t[0] <= t[1] && t[1] <= t[2] && t[2] <= t[3] {
		return nil
	}
	return fmt.Errorf("check ascending %v: %w", t, ErrThresholdOrder)
}

// CheckDescending returns ErrThresholdOrder unless low ≥ moderate ≥ severe
// ≥ critical.
func (t Thresholds) CheckDescending() error {
	if t[0] >= t[1] && t[1] >= t[2] && t[2] >= t[3] {
		return nil
	}
	return fmt.Errorf("check descending %v: %w", t, ErrThresholdOrder)
}

// UnmarshalYAML accepts the forms described on Thresholds.
func (t *Thresholds) UnmarshalYAML(n *yaml.Node) error {
	var parts []string
	switch n.Kind {
	case yaml.ScalarNode:
		parts = strings.Split(n.Value, ",")
	case yaml.SequenceNode:
		for _, c := range n.Content {
			if c.Kind != yaml.ScalarNode {
				return fmt.Errorf("line %d: %w: want 4 numbers", n.Line, ErrBadParam)
			}
			parts = append(parts, c.Value)
		}
	default:
		return fmt.Errorf("line %d: %w: want 4 numbers", n.Line, ErrBadParam)
	}
	v, err := parseExprs(parts, 4)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	copy(t[:], v)
	return nil
}

// MarshalYAML writes the four numbers as a sequence.
func (t Thresholds) MarshalYAML() (any, error) { return t[:], nil }

// ParseParam parses a Dr. Elephant threshold parameter: n comma-separated
// arithmetic expressions ("10, 50, 100, 200", "1/8,1/4,1/2,1"). ok is false
// when s is empty, has another number of entries, or an entry does not
// evaluate. Dr. Elephant then silently keeps its defaults; Strata's
// override file refuses such a list (docs/heuristics.md#override-file).
func ParseParam(s string, n int) (v []float64, ok bool) {
	if strings.TrimSpace(s) == "" {
		return nil, false
	}
	v, err := parseExprs(strings.Split(s, ","), n)
	return v, err == nil
}

func parseExprs(parts []string, n int) ([]float64, error) {
	if len(parts) != n {
		return nil, fmt.Errorf("%w: %d entries, want %d", ErrBadParam, len(parts), n)
	}
	out := make([]float64, n)
	for i, p := range parts {
		x, err := evalExpr(p)
		if err != nil {
			return nil, err
		}
		out[i] = x
	}
	return out, nil
}

// evalExpr evaluates an arithmetic expression of numbers, + - * /, unary
// signs and parentheses, in float64.
func evalExpr(s string) (float64, error) {
	p := exprParser{s: s}
	v, err := p.sum()
	if err == nil {
		p.space()
		if p.i != len(p.s) {
			err = fmt.Errorf("%w: unexpected %q in %q", ErrBadParam, p.s[p.i:], s)
		}
	}
	return v, err
}

type exprParser struct {
	s string
	i int
}

func (p *exprParser) space() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n') {
		p.i++
	}
}

func (p *exprParser) peek() byte {
	p.space()
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *exprParser) sum() (float64, error) {
	v, err := p.product()
	for err == nil {
		switch p.peek() {
		case '+':
			p.i++
			var w float64
			w, err = p.product()
			v += w
		case '-':
			p.i++
			var w float64
			w, err = p.product()
			v -= w
		default:
			return v, nil
		}
	}
	return v, err
}

func (p *exprParser) product() (float64, error) {
	v, err := p.unary()
	for err == nil {
		switch p.peek() {
		case '*':
			p.i++
			var w float64
			w, err = p.unary()
			v *= w
		case '/':
			p.i++
			var w float64
			w, err = p.unary()
			v /= w
		default:
			return v, nil
		}
	}
	return v, err
}

func (p *exprParser) unary() (float64, error) {
	switch p.peek() {
	case '-':
		p.i++
		v, err := p.unary()
		return -v, err
	case '+':
		p.i++
		return p.unary()
	case '(':
		p.i++
		v, err := p.sum()
		if err != nil {
			return 0, err
		}
		if p.peek() != ')' {
			return 0, fmt.Errorf("%w: missing ) in %q", ErrBadParam, p.s)
		}
		p.i++
		return v, nil
	}
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		if ('0' <= c && c <= '9') || c == '.' {
			p.i++
			continue
		}
		if (c == 'e' || c == 'E') && p.i > start {
			p.i++
			if p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
				p.i++
			}
			continue
		}
		break
	}
	if start == p.i {
		return 0, fmt.Errorf("%w: number expected in %q", ErrBadParam, p.s)
	}
	v, err := strconv.ParseFloat(p.s[start:p.i], 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q", ErrBadParam, p.s[start:p.i])
	}
	return v, nil
}
