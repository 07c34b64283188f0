package web_test

import (
	"testing"

	"github.com/stratatrace/strata/collector/store/storetest"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// The faults of filling blocks where users look: the app's RDD table
// has each RDD's (its blocks' puts summed, "-" without any), the RDD page
// the RDD's and each block's, and a FILL record, which carries no pages,
// leaves a block's latest access and pages as its other records say.
func TestFillFaults(t *testing.T) {
	srv := serve(t, []*stratav1.Batch{storetest.Sample(1), storetest.FillBatch(2)}, nil)
	app := storetest.App
	wantPages(t, srv, []page{
		{"/apps/" + app, 200, []string{"<th class=\"num\">Fill faults r/w/maj</th>",
			`<td class="num" data-col="faults">9/3/1/1</td>
<td class="num" data-col="fill">1/266/2</td>`,
			`<td class="num" data-col="fill">0/4/0</td>`}},
		{"/apps/" + app + "/rdds/7", 200, []string{`<span data-col="rdd-fill">1/266/2</span>`,
			`<td class="num">4</td><td>read</td><td class="num" data-col="pages">6</td>`,
			`<td class="num" data-col="fill">1/266/2</td>`}},
		{"/apps/" + app + "/rdds/8", 200, []string{`<span data-col="rdd-fill">0/4/0</span>`}},
		{"/api/v1/apps/" + app + "/rdds", 200, []string{`"fill_faults":{"read":1,"write":266,"exec":0,"major":2,"unclassified":0}`}},
	})
	without := serve(t, []*stratav1.Batch{storetest.Sample(1)}, nil)
	wantPages(t, without, []page{
		{"/apps/" + app, 200, []string{`<td class="num" data-col="fill">-</td>`}},
		{"/apps/" + app + "/rdds/7", 200, []string{`<span data-col="rdd-fill">-</span>`, `<td class="num" data-col="fill">-</td>`}},
	})
}
