package main

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stratatrace/strata/agent/resolver/resolvertest"
	"github.com/stratatrace/strata/collector/server/servertest"
	"github.com/stratatrace/strata/collector/store/storetest"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
	"github.com/stratatrace/strata/test/testenv"
)

// fields is out's lines, each as its fields: a table's rows compared
// whatever their padding (which the header's width changes).
func fields(out string) [][]string {
	var rows [][]string
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		rows = append(rows, strings.Fields(l))
	}
	return rows
}

// TestNoHeaders: on every command that prints a table, --no-headers leaves
// out the header line and the comment lines around the table (head lines
// before it, tail after) and nothing else: the rows are those of the
// table with headers, field by field.
func TestNoHeaders(t *testing.T) {
	c := apiCollector(t)
	app := storetest.App
	for _, tc := range []struct {
		args       []string
		head, tail int
	}{
		{[]string{"trace", "--collector", c.Addr, "--app", app}, 1, 0},
		{[]string{"records", "--collector", c.Addr, "--app", app}, 1, 0},
		{[]string{"numa", "--collector", c.Addr, "--app", "app-pmu"}, 1, 0},
		{[]string{"faults", "--collector", c.Addr, "--app", app}, 1, 0},
		{[]string{"overhead", "--collector", c.Addr, "--app", "app-pmu"}, 1, 0},
		{[]string{"heat", "--collector", c.Addr, "--app", app}, 1, 0},
		{[]string{"hot", "--collector", c.Addr, "--app", app}, 2, 0},
		{[]string{"hot", "--by", "heat", "--collector", c.Addr, "--app", app}, 2, 0},
		{[]string{"jobs", "--collector", c.Addr}, 1, 0},
		{[]string{"report", "--collector", c.Addr, "--app", app, "--app", "app-pmu"}, 1, 0},
		{[]string{"apps", "--http", c.HTTPAddr}, 1, 0},
		{[]string{"analyze", "-q", writeTrace(t, t.TempDir(), 2)}, 1, 0},
	} {
		wantNoHeaders(t, tc.args, tc.head, tc.tail)
	}
	t.Run("resolve", func(t *testing.T) {
		testenv.RequireRoot(t)
		p := resolvertest.Start(t, []resolvertest.Region{{Name: "a", Pages: 8}}, nil)
		wantNoHeaders(t, []string{"resolve", "--pid", strconv.Itoa(p.Pid), "--addr", hexArg(p.Addr["a"]), "--len", "32K", "--no-flags"}, 1, 2)
	})
}

// wantNoHeaders runs strata with args with and without --no-headers and
// checks that the second prints the first's lines but its head first and
// tail last ones, and that those hold rows.
func wantNoHeaders(t *testing.T, args []string, head, tail int) {
	t.Helper()
	with := fields(strata(t, args...))
	without := fields(strata(t, append(args, "--no-headers")...))
	if len(with) <= head+tail {
		t.Errorf("strata %s: %d lines with headers, want rows besides %d", args[0], len(with), head+tail)
		return
	}
	rows := with[head : len(with)-tail]
	if !slices.EqualFunc(rows, without, func(a, b []string) bool { return slices.Equal(a, b) }) {
		t.Errorf("%v --no-headers:\n%q\nwant the rows of the table with headers:\n%q", args, without, rows)
	}
}

// TestNoHeadersReport: the report of one application without headers
// keeps its lines of prose and its rows; its tables lose their header
// lines and the notes under them.
func TestNoHeadersReport(t *testing.T) {
	addr := servertest.Start(t, append(reportBatches(), storetest.FillBatch(990)), []*stratav1.JobResult{reportJob()}).Addr
	out := strata(t, "report", "--collector", addr, "--app", storetest.App, "--no-headers")
	for _, l := range strings.Split(out, "\n") {
		for _, header := range []string{"RDD  BLOCKS", "EXECUTOR  PID", "MiB: ", "RESOLVED: ", "HEAT: ", "FILL R/W/MAJ: "} {
			if strings.HasPrefix(l, header) {
				t.Errorf("report --no-headers has the line %q:\n%s", l, out)
			}
		}
	}
	for _, want := range []string{"application " + storetest.App + " (LogisticRegression", "RDD memory occupation: ",
		"page-walk share of cycles: ", "\n7 ", "\n9 "} {
		if !strings.Contains(out, want) {
			t.Errorf("report --no-headers lacks %q:\n%s", want, out)
		}
	}
}
