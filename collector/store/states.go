package store

import (
	"regexp"
	"strconv"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// stateRE matches a page-state name in braces, e.g. {PRESENT}.
var stateRE = regexp.MustCompile(`\{([A-Z_]+)\}`)

// withStates returns q with every {NAME} replaced by the value of the
// stratav1.PageState PAGE_STATE_NAME, so the SQL names the bits it tests
// (r.state & {SWAPPED} <> 0) and the numbers come from the proto enum,
// defined once. An unknown name panics: the SQL is a package constant, so
// that happens at init, in every test run.
func withStates(q string) string {
	return stateRE.ReplaceAllStringFunc(q, func(m string) string {
		name := "PAGE_STATE_" + m[1:len(m)-1]
		v, ok := stratav1.PageState_value[name]
		if !ok {
			panic("store: SQL names unknown page state " + name)
		}
		return strconv.Itoa(int(v))
	})
}
