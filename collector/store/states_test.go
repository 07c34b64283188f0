package store

import (
	"fmt"
	"strings"
	"testing"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// The SQL names page-state bits; their numbers come from the proto enum.
func TestWithStates(t *testing.T) {
	got := withStates("r.state & {PRESENT} <> 0 AND r.state & {PFN_HIDDEN} = 0 OR r.state & {CROSS_NODE} <> 0")
	want := fmt.Sprintf("r.state & %d <> 0 AND r.state & %d = 0 OR r.state & %d <> 0",
		stratav1.PageState_PAGE_STATE_PRESENT, stratav1.PageState_PAGE_STATE_PFN_HIDDEN, stratav1.PageState_PAGE_STATE_CROSS_NODE)
	if got != want {
		t.Fatalf("withStates = %q, want %q", got, want)
	}
	for name, q := range map[string]string{"numa": numaSQL, "cached": cachedSQL, "fault nodes": faultNodesSQL} {
		if strings.ContainsAny(q, "{}") {
			t.Errorf("%s SQL keeps a placeholder:\n%s", name, q)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("an unknown state name did not panic")
		}
	}()
	withStates("{PRESNT}")
}
