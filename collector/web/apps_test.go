package web_test

import (
	"testing"

	"github.com/stratatrace/strata/collector/store/storetest"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// The applications list names each app by its analysed job and counts its
// cached RDD blocks live now, in the HTML and the JSON.
func TestAppsNameAndLiveBlocks(t *testing.T) {
	srv := serve(t, []*stratav1.Batch{storetest.Sample(1)}, storetest.Jobs())
	wantPages(t, srv, []page{
		{"/apps", 200, []string{`<td data-col="name">etl-SEVERITY_CRITICAL</td>`, `<td class="num" data-col="live">2</td>`}},
		{"/api/v1/apps", 200, []string{`"name":"etl-SEVERITY_CRITICAL"`, `"records":3,"live_blocks":2,`}},
	})
	without := serve(t, []*stratav1.Batch{storetest.Sample(1)}, nil)
	wantPages(t, without, []page{{"/apps", 200, []string{`<td data-col="name">-</td>`}}, {"/api/v1/apps", 200, []string{`"name":""`}}})
}
