package query

import (
	"fmt"
	"strings"

	"github.com/stratatrace/strata/collector/answer"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// ParseAccess reads a comma-separated list of access kinds ("alloc,read";
// any case), as `strata records --access` and /api/v1's access= take it;
// "" is every kind (nil). An unknown name is answer.ErrInvalidQuery.
func ParseAccess(s string) ([]stratav1.AccessKind, error) {
	if s == "" {
		return nil, nil
	}
	var out []stratav1.AccessKind
	for _, name := range strings.Split(s, ",") {
		v, ok := stratav1.AccessKind_value["ACCESS_KIND_"+strings.ToUpper(strings.TrimSpace(name))]
		if !ok || v == 0 {
			return nil, fmt.Errorf("%w: access %q: want alloc, read, write, free, fault or move", answer.ErrInvalidQuery, name)
		}
		out = append(out, stratav1.AccessKind(v))
	}
	return out, nil
}

// ParseSeverity reads a severity in any case, with or without its
// SEVERITY_ prefix ("moderate", "SEVERITY_CRITICAL"); "" is NONE. An
// unknown name is answer.ErrInvalidQuery.
func ParseSeverity(s string) (stratav1.Severity, error) {
	name := strings.ToUpper(strings.TrimSpace(s))
	if name == "" {
		return stratav1.Severity_SEVERITY_NONE, nil
	}
	if !strings.HasPrefix(name, "SEVERITY_") {
		name = "SEVERITY_" + name
	}
	v, ok := stratav1.Severity_value[name]
	if !ok {
		return 0, fmt.Errorf("%w: severity %q: want none, low, moderate, severe or critical", answer.ErrInvalidQuery, s)
	}
	return stratav1.Severity(v), nil
}
