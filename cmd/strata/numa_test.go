package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/stratatrace/strata/collector/query/jsonform"
	"github.com/stratatrace/strata/collector/store/storetest"
)

func TestNuma(t *testing.T) {
	addr := collector(t)
	got := jsonLines[jsonform.Numa](t, strata(t, "numa", "--collector", addr, "--app", storetest.App, "-o", "json"))
	want := []jsonform.Numa{{RDD: 7, NumaNode: -1, Pages: 1, Bytes: 4096}, {RDD: 7, NumaNode: 0, Pages: 3, Bytes: 12288},
		{RDD: 7, NumaNode: 1, Pages: 2, Bytes: 8192}, {RDD: 8, NumaNode: 1, Pages: 4, Bytes: 16384}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("numa = %v, want %v", got, want)
	}
	table := strata(t, "numa", "--collector", addr, "--app", storetest.App)
	if !strings.Contains(table, "unknown") || strings.Count(table, "\n") != 5 {
		t.Fatalf("numa table:\n%s", table)
	}
}
