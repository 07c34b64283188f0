package query

import (
	"fmt"
	"math/bits"
	"strings"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// ResolvedWords says what Strata resolved of some blocks (an RDD's, or
// one block's: their ResolvedParts) in the words `strata report` and the
// web UI both print: one phrase per part, e.g. "buffers 100 %",
// "walked 97.2 %", "walk cut 61 %", "references only: walk pending",
// "not reported by the agent" (records without coverage, from an agent
// that predates it). A share is the part's bytes over sparkBytes, Spark's size of the
// blocks; sparkBytes 0 (unknown) leaves shares out. With several parts
// each says how many blocks it holds.
func ResolvedWords(parts []*stratav1.ResolvedPart, sparkBytes uint64) string {
	if len(parts) == 0 {
		return "-"
	}
	phrases := make([]string, 0, len(parts))
	for _, p := range parts {
		var s string
		switch p.GetResolution() {
		case stratav1.Resolution_RESOLUTION_BUFFERS:
			s = "buffers" + shareWords(p.GetBytes(), sparkBytes)
		case stratav1.Resolution_RESOLUTION_WALKED:
			s = "walked" + shareWords(p.GetBytes(), sparkBytes)
		case stratav1.Resolution_RESOLUTION_WALK_CUT:
			s = "walk cut" + shareWords(p.GetBytes(), sparkBytes)
		case stratav1.Resolution_RESOLUTION_REFERENCES:
			s = "references only"
			if len(p.GetDetails()) > 0 {
				s += ": " + strings.Join(p.GetDetails(), ", ")
			}
		default:
			s = "not reported by the agent"
		}
		if len(parts) > 1 {
			s += fmt.Sprintf(" (%d %s)", p.GetBlocks(), plural(p.GetBlocks(), "block", "blocks"))
		}
		phrases = append(phrases, s)
	}
	return strings.Join(phrases, "; ")
}

// shareWords is " 97.2 %" (ShareWords with a space), "" when whole is
// unknown.
func shareWords(part, whole uint64) string {
	if whole == 0 {
		return ""
	}
	return " " + ShareWords(part, whole)
}

// ShareWords is part over whole as printed beside the words, "97.2 %":
// floored to a tenth, so a share just short of complete never reads
// 100 %; "-" when whole is 0 (unknown).
func ShareWords(part, whole uint64) string {
	if whole == 0 {
		return "-"
	}
	hi, lo := bits.Mul64(part, 1000)
	if hi >= whole { // over 2^64 tenths of a percent: no real share
		return "-"
	}
	t, _ := bits.Div64(hi, lo, whole)
	if t%10 == 0 {
		return fmt.Sprintf("%d %%", t/10)
	}
	return fmt.Sprintf("%d.%d %%", t/10, t%10)
}

func plural(n uint64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// ResolutionWord names one record's resolution for a column of a table:
// "buffers", "walked", "walk cut", "references", or "-" when the record
// carries none.
func ResolutionWord(r stratav1.Resolution) string {
	switch r {
	case stratav1.Resolution_RESOLUTION_BUFFERS:
		return "buffers"
	case stratav1.Resolution_RESOLUTION_WALKED:
		return "walked"
	case stratav1.Resolution_RESOLUTION_WALK_CUT:
		return "walk cut"
	case stratav1.Resolution_RESOLUTION_REFERENCES:
		return "references"
	}
	return "-"
}

// HoldsWords says what one record's pages hold of its block (its
// Coverage), as `strata trace` prints it beside each page and the web
// UI's block page beside each step: "buffers", "walked objects",
// "walk cut: its objects", "references only: walk pending", or "-" when
// the record carries no coverage.
func HoldsWords(c *stratav1.Coverage) string {
	switch c.GetResolution() {
	case stratav1.Resolution_RESOLUTION_BUFFERS:
		return "buffers"
	case stratav1.Resolution_RESOLUTION_WALKED:
		return "walked objects"
	case stratav1.Resolution_RESOLUTION_WALK_CUT:
		return "walk cut: its objects"
	case stratav1.Resolution_RESOLUTION_REFERENCES:
		if c.GetDetail() != "" {
			return "references only: " + c.GetDetail()
		}
		return "references only"
	}
	return "-"
}
