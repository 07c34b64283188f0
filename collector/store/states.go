package store

import (
	"math"
	"regexp"
	"strconv"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// stateRE matches a page-state name in braces, e.g. {PRESENT}.
var stateRE = regexp.MustCompile(`\{([A-Z_]+)\}`)

// withStates returns q with every {NAME} replaced by the value of the
// stratav1.PageState PAGE_STATE_NAME, so the SQL names the bits it tests
// (r.state & {SWAPPED} <> 0) and the numbers come from the proto enum,
// defined once. Two more names are constants: {UBIGINT_MAX} (2^64-1) and
// {MAX_RUN_PAGES} (stratav1.MaxRunPages). An unknown name panics: the SQL
// is a package constant, so that happens at init, in every test run.
func withStates(q string) string {
	return stateRE.ReplaceAllStringFunc(q, func(m string) string {
		switch m {
		case "{UBIGINT_MAX}":
			return strconv.FormatUint(math.MaxUint64, 10)
		case "{MAX_RUN_PAGES}":
			return strconv.Itoa(stratav1.MaxRunPages)
		}
		name := "PAGE_STATE_" + m[1:len(m)-1]
		v, ok := stratav1.PageState_value[name]
		if !ok {
			panic("store: SQL names unknown page state " + name)
		}
		return strconv.Itoa(int(v))
	})
}
