package main

import (
	"reflect"
	"testing"

	"github.com/stratatrace/strata/collector/query/jsonform"
	"github.com/stratatrace/strata/collector/store/storetest"
)

func TestFaults(t *testing.T) {
	addr := collector(t)
	got := jsonLines[jsonform.Faults](t, strata(t, "faults", "--collector", addr, "--app", storetest.App, "-o", "json"))
	want := []jsonform.Faults{{RDD: 7, Partition: 3, BlockID: "rdd_7_3", ExecutorID: "1", PID: 100,
		FaultCounts: jsonform.FaultCounts{Read: 9, Write: 3, Exec: 1, Major: 1, Unclassified: 4}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("faults = %v, want %v", got, want)
	}
}
