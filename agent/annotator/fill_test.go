package annotator

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/stratatrace/strata/agent/hooksrv"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// TestFillRecordFollowsAlloc: a session's start reaches the kernel side;
// a REGISTER whose put the kernel measured is followed by one FILL record
// with the fill's faults, taken by the block's first range only; a block
// without a measured put has none.
func TestFillRecordFollowsAlloc(t *testing.T) {
	sink := &memSink{}
	fill := &stratav1.FaultCounts{Read: 3, Write: 300, Major: 1}
	k := &kernelLog{fills: map[string]*stratav1.FaultCounts{"rdd_7_1": fill}}
	a := New(&rangeResolver{}, sink, Config{Kernel: k})
	s := &hooksrv.Session{PID: 42, AppID: "app-1", ExecutorID: "3"}
	ctx := context.Background()
	alloc := stratav1.AccessKind_ACCESS_KIND_ALLOC
	a.HandleEvent(ctx, hooksrv.Event{Kind: hooksrv.EventSessionStart, Session: s})
	first := ev(s, hooksrv.EventRegister, alloc, 1, 0x10000, 0x4000)
	first.TID = 77
	a.HandleEvent(ctx, first)
	second := ev(s, hooksrv.EventRegister, alloc, 9, 0x20000, 0x4000) // another range of the block
	second.Block.Name = "rdd_7_1"
	a.HandleEvent(ctx, second)
	a.HandleEvent(ctx, ev(s, hooksrv.EventRegister, alloc, 2, 0x30000, 0x4000))
	a.Flush()

	var got []string
	for _, r := range sink.records() {
		got = append(got, r.GetAccess().String()+" "+r.GetBlock().GetBlockId())
	}
	want := "ACCESS_KIND_ALLOC rdd_7_1, ACCESS_KIND_FILL rdd_7_1, ACCESS_KIND_ALLOC rdd_7_1, ACCESS_KIND_ALLOC rdd_7_2"
	if strings.Join(got, ", ") != want {
		t.Fatalf("records: %s\nwant     %s", strings.Join(got, ", "), want)
	}
	r := sink.records()[1]
	if !proto.Equal(r.GetFaults(), fill) || r.GetTid() != 77 || r.GetPid() != 42 || r.GetVaddr() != 0x10000 ||
		r.GetLength() != 0x4000 || len(r.GetRuns()) != 0 || r.GetBlock().GetHookBlockId() != 1 || r.GetBlock().GetAppId() != "app-1" {
		t.Errorf("FILL record = %v", r)
	}
	if want := (Process{PID: 42, AppID: "app-1", ExecutorID: "3"}); len(k.started) != 1 || k.started[0] != want {
		t.Errorf("processes started in the kernel: %v, want %v", k.started, want)
	}
	if st := a.Stats(); st.Fills != 1 {
		t.Errorf("stats: %d fills, want 1", st.Fills)
	}
}
