package main

import (
	"reflect"
	"testing"

	"github.com/stratatrace/strata/collector/store/storetest"
)

func TestFaults(t *testing.T) {
	addr := collector(t)
	got := jsonLines[faultRow](t, strata(t, "faults", "--collector", addr, "--app", storetest.App, "-o", "json"))
	want := []faultRow{{RDD: 7, Partition: 3, BlockID: "rdd_7_3", ExecutorID: "1", PID: 100, Read: 9, Write: 3, Exec: 1, Major: 1, Unclassified: 4}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("faults = %v, want %v", got, want)
	}
}
