package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/stratatrace/strata/collector/store/storetest"
)

func TestNuma(t *testing.T) {
	addr := collector(t)
	got := jsonLines[numaRow](t, strata(t, "numa", "--collector", addr, "--app", storetest.App, "-o", "json"))
	want := []numaRow{{7, -1, 1, 4096}, {7, 0, 3, 12288}, {7, 1, 2, 8192}, {8, 1, 4, 16384}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("numa = %v, want %v", got, want)
	}
	table := strata(t, "numa", "--collector", addr, "--app", storetest.App)
	if !strings.Contains(table, "unknown") || strings.Count(table, "\n") != 5 {
		t.Fatalf("numa table:\n%s", table)
	}
}
