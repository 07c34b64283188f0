package store_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/stratatrace/strata/collector/store"
	"github.com/stratatrace/strata/collector/store/storetest"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// NodeInfo is kept per (node_name, boot_id) across restarts; a later batch
// with an unknown (zero) field keeps the known value; a machine whose agent
// never sent NodeInfo is listed with zeros and its records' page size; a
// machine holding only another app's records is not listed.
func TestMachines(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := store.Open(ctx, store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	batch := func(node, boot string, seq uint64, ni *stratav1.NodeInfo) *stratav1.Batch {
		b := storetest.Sample(seq)
		b.NodeName, b.BootId, b.Node = node, boot, ni
		return b
	}
	mustAppend(t, s, batch("a", "boot-1", 1, &stratav1.NodeInfo{NumaNodes: 2, PageSize: 4096, MemTotalBytes: 64 << 30}))
	mustAppend(t, s, batch("a", "boot-1", 2, &stratav1.NodeInfo{NumaNodes: 2, PageSize: 4096})) // memory unknown this time
	mustAppend(t, s, batch("a", "boot-2", 1, &stratav1.NodeInfo{NumaNodes: 4, PageSize: 4096, MemTotalBytes: 128 << 30}))
	mustAppend(t, s, batch("b", "boot-9", 1, nil))
	other := batch("c", "boot-3", 1, &stratav1.NodeInfo{NumaNodes: 8, PageSize: 4096})
	for _, r := range other.Records {
		r.Block.AppId = "application_other"
	}
	other.Workloads = nil
	mustAppend(t, s, other)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = store.Open(ctx, store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.Machines(ctx, storetest.App)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Machine{
		{NodeName: "a", BootID: "boot-1", NUMANodes: 2, PageSize: 4096, MemTotalBytes: 64 << 30},
		{NodeName: "a", BootID: "boot-2", NUMANodes: 4, PageSize: 4096, MemTotalBytes: 128 << 30},
		{NodeName: "b", BootID: "boot-9", PageSize: storetest.PageSize},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("machines after reopen = %+v\nwant %+v", got, want)
	}
	if got, err := s.Machines(ctx, "application_none"); err != nil || len(got) != 0 {
		t.Fatalf("machines of an unknown app = %+v, %v", got, err)
	}
}
