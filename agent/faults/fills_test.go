package faults

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stratatrace/strata/agent/hooksrv"
	"github.com/stratatrace/strata/agent/procmem"
	"github.com/stratatrace/strata/agent/tracer"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// TestFillKey: the key the hook marks a put with (jvmhook's FillKeyTest
// holds the same values).
func TestFillKey(t *testing.T) {
	for name, want := range map[string]uint64{"": 0xcbf29ce484222325, "rdd_3_0": 0x2664b0e2b8411de8} {
		if got := FillKey(name); got != want {
			t.Errorf("FillKey(%q) = %#x, want %#x", name, got, want)
		}
	}
}

// TestFillProbesAttach: the installed libraries that exist get the probes at
// Open; a session's start tracks its process and attaches the library it
// maps, through /proc/PID/root, once however many mappings name it.
func TestFillProbesAttach(t *testing.T) {
	dir := t.TempDir()
	installed := filepath.Join(dir, "jvmhook", HookLibraryName)
	if err := os.MkdirAll(filepath.Dir(installed), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(installed, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	proc := filepath.Join(dir, "proc")
	if err := os.MkdirAll(filepath.Join(proc, "5"), 0o755); err != nil {
		t.Fatal(err)
	}
	maps := "7f0000000000-7f0000010000 r--p 00000000 08:01 77 /opt/hook/libstratahook.so\n" +
		"7f0000010000-7f0000020000 r-xp 00010000 08:01 77 /opt/hook/libstratahook.so\n" +
		"7f0000020000-7f0000030000 rw-p 00000000 00:00 0 \n" +
		"7f0000030000-7f0000040000 r-xp 00000000 08:01 78 /usr/lib/jvm/lib/server/libjvm.so\n"
	if err := os.WriteFile(filepath.Join(proc, "5", "maps"), []byte(maps), 0o644); err != nil {
		t.Fatal(err)
	}
	r := newRig(t, Config{HookLibraries: []string{installed, filepath.Join(dir, "none", HookLibraryName)},
		FS: procmem.FS{Proc: proc, Sys: filepath.Join(dir, "sys")}})
	if want := []string{installed}; !slices.Equal(r.t.attached, want) {
		t.Fatalf("attached at Open: %q, want %q", r.t.attached, want)
	}
	if err := r.f.StartProcess(app5); err != nil {
		t.Fatal(err)
	}
	if !r.t.tracked[5] {
		t.Error("the session's process is not tracked")
	}
	want := []string{installed, filepath.Join(proc, "5", "root", "/opt/hook/libstratahook.so")}
	if !slices.Equal(r.t.attached, want) {
		t.Errorf("attached: %q, want %q", r.t.attached, want)
	}
}

// TestFillClaimedAtRegister: through the annotator, as the agent wires it:
// a REGISTER claims its put's fill, which becomes the FILL record after the
// ALLOC; a fill of a block no REGISTER claims goes with its session.
func TestFillClaimedAtRegister(t *testing.T) {
	r := newRig(t, Config{HookLibraries: []string{}})
	o := newOwner(r)
	s := &hooksrv.Session{ID: 1, PID: 5, AppID: "app-1", ExecutorID: "3"}
	o.procs[5] = s
	o.a.HandleEvent(context.Background(), hooksrv.Event{Kind: hooksrv.EventSessionStart, Session: s})
	r.t.storeFill(5, "rdd_1_1", tracer.Counters{Read: 2, Write: 256, Major: 1})
	r.t.storeFill(5, "rdd_1_9", tracer.Counters{Write: 9}) // never registered
	o.event(app5, hooksrv.EventRegister, 1)
	o.event(app5, hooksrv.EventRegister, 2)
	o.a.Flush()
	var fills []*stratav1.Record
	o.out.mu.Lock()
	for _, b := range o.out.b {
		for _, rec := range b.GetRecords() {
			if rec.GetAccess() == stratav1.AccessKind_ACCESS_KIND_FILL {
				fills = append(fills, rec)
			}
		}
	}
	o.out.b = nil
	o.out.mu.Unlock()
	want := &stratav1.FaultCounts{Read: 2, Write: 256, Major: 1}
	if len(fills) != 1 || fills[0].GetBlock().GetBlockId() != "rdd_1_1" || !proto.Equal(fills[0].GetFaults(), want) {
		t.Fatalf("FILL records %v, want one of rdd_1_1 with %v", fills, want)
	}
	o.a.HandleEvent(context.Background(), hooksrv.Event{Kind: hooksrv.EventSessionEnd, Session: s, Time: time.Now()})
	if _, ok, _ := r.t.TakeFill(5, FillKey("rdd_1_9")); ok {
		t.Error("the unclaimed fill outlived its process's session")
	}
}
