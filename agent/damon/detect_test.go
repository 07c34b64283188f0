package damon

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// TestDetect: the mode and the reason for each tree, and nothing written.
func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tree   func(f *fakeKernel)
		mode   Mode
		reason string
	}{
		{"no damon", func(f *fakeKernel) { os.RemoveAll(filepath.Join(f.root, "kernel")) }, Unavailable,
			"no DAMON sysfs interface ("},
		{"empty admin dir", func(f *fakeKernel) {}, Own, ""},
		{"a running paddr kdamond with a scheme", func(f *fakeKernel) { f.thisMachine() }, Shared, ""},
		{"a running vaddr kdamond", func(f *fakeKernel) {
			f.thisMachine()
			f.file("kdamonds/0/contexts/0/operations", "vaddr")
		}, Unavailable, "kdamond 0 runs without a paddr context with a scheme: nothing to share, and the kernel refuses another kdamond while one runs"},
		{"a running kdamond without schemes", func(f *fakeKernel) {
			f.thisMachine()
			f.file("kdamonds/0/contexts/0/schemes/nr_schemes", "0")
		}, Unavailable, "kdamond 0 runs without a paddr context with a scheme"},
		{"someone else's kdamond, off", func(f *fakeKernel) {
			f.thisMachine()
			f.file("kdamonds/0/state", "off")
		}, Unavailable, "1 kdamond(s) configured by something else, none on: adding one would erase their configuration"},
		{"unreadable kdamond", func(f *fakeKernel) {
			f.thisMachine()
			os.Remove(filepath.Join(f.root, adminDir, "kdamonds/0/contexts/0/schemes/0/action"))
		}, Unavailable, "read damon kdamonds/0/contexts/0/schemes/0/action: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeKernel(t)
			tc.tree(f)
			d := f.sysfs().Detect()
			if d.Mode != tc.mode || !strings.HasPrefix(d.Reason, tc.reason) || (tc.reason == "") != (d.Reason == "") {
				t.Fatalf("Detect = %v %q, want %v %q", d.Mode, d.Reason, tc.mode, tc.reason)
			}
			if len(f.writes) != 0 {
				t.Fatalf("Detect wrote %v", f.writes)
			}
		})
	}
}

// TestOwnOperations: where no kdamond runs, the operations of the
// agent's kdamond follow the kernel's avail_operations and --damon-ops:
// fvaddr (mode own-vaddr) where listed unless paddr is forced, else paddr
// (own); a kernel with neither leaves no kdamond behind.
func TestOwnOperations(t *testing.T) {
	for _, tc := range []struct {
		name, avail, ops string
		mode             Mode
		written          string // the operations file after Open
		status           string // its prefix
	}{
		{"vaddr, fvaddr and paddr", "vaddr\nfvaddr\npaddr", "auto", OwnVaddr, "fvaddr",
			"own-vaddr: kdamond 0 of the agent's, fvaddr, a target per hooked process and a stat scheme per target over every region"},
		{"empty ops is auto", "vaddr fvaddr paddr", "", OwnVaddr, "fvaddr", "own-vaddr: "},
		{"virtual only", "vaddr\nfvaddr", "auto", OwnVaddr, "fvaddr", "own-vaddr: "},
		{"paddr forced", "vaddr\nfvaddr\npaddr", "paddr", Own, "paddr", "own: kdamond 0 scheme 0 stat, every region"},
		{"paddr alone (this kernel)", "paddr", "auto", Own, "paddr", "own: kdamond 0 scheme 0 stat, every region"},
		{"vaddr without fvaddr", "vaddr\npaddr", "auto", Own, "paddr", "own: "},
		{"no avail_operations file", "", "auto", Own, "paddr", "own: "},
		{"paddr forced, kernel without it", "vaddr\nfvaddr", "paddr", Unavailable, "",
			"unavailable: cannot make a kdamond: no physical-address operations (avail_operations: vaddr fvaddr)"},
		{"neither", "vaddr", "auto", Unavailable, "",
			"unavailable: cannot make a kdamond: neither fixed-virtual-address nor physical-address operations (avail_operations: vaddr)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeKernel(t)
			f.avail = tc.avail
			cfg := DefaultConfig()
			cfg.Ops = tc.ops
			h, err := Open(f.sysfs(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			if h.Mode() != tc.mode || !strings.HasPrefix(h.Status(), tc.status) {
				t.Fatalf("%v %q, want %v %q", h.Mode(), h.Status(), tc.mode, tc.status)
			}
			if tc.mode == Unavailable {
				if n := f.read("kdamonds/nr_kdamonds"); n != "0" {
					t.Fatalf("nr_kdamonds %s after the refusal, want 0", n)
				}
				return
			}
			if ops := f.read("kdamonds/0/contexts/0/operations"); ops != tc.written {
				t.Fatalf("operations %q, want %q", ops, tc.written)
			}
		})
	}
	cfg := DefaultConfig()
	cfg.Ops = "vaddr"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), `damon ops = "vaddr", want auto or paddr`) {
		t.Fatalf("Validate: %v", err)
	}
}

// TestDetectSharedReadsTheKdamond: everything the shared mode reports of
// this machine's kdamond, and the source its samples cite.
func TestDetectSharedReadsTheKdamond(t *testing.T) {
	f := newFakeKernel(t)
	f.thisMachine()
	d := f.sysfs().Detect()
	want := []Kdamond{{Index: 0, On: true, PID: 77, Contexts: []Context{{
		Ops: "paddr", AddrUnit: 1, Sample: 500 * time.Millisecond, Aggr: 5 * time.Second, Update: time.Minute,
		Ranges: []Range{{4 << 30, 15703474176}},
		Schemes: []Scheme{{Action: "pageout", Quota: true,
			Pattern: Pattern{SzMax: math.MaxUint64, NrMax: 1, AgeMin: 12, AgeMax: math.MaxUint32}}},
	}}}}
	if !reflect.DeepEqual(d.Kdamonds, want) {
		t.Fatalf("kdamonds = %+v\nwant %+v", d.Kdamonds, want)
	}
	h, err := Open(f.sysfs(), DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	const status = "shared: kdamond 0 scheme 0 pageout, regions nr_accesses <= 1 age >= 12 (1m0s) (within a quota); " +
		"partial: only the regions a scheme matched are seen"
	if h.Mode() != Shared || h.Status() != status {
		t.Fatalf("%v %q, want shared %q", h.Mode(), h.Status(), status)
	}
	if err := h.Close(); err != nil || len(f.writes) != 0 {
		t.Fatalf("Close: %v; writes %v", err, f.writes)
	}
}

// TestOpenOnRefusesUnavailable: --damon on fails with the reason, auto
// runs without heat, off detects nothing.
func TestOpenOnRefusesUnavailable(t *testing.T) {
	f := newFakeKernel(t)
	f.thisMachine()
	f.file("kdamonds/0/contexts/0/operations", "vaddr")
	cfg := DefaultConfig()
	cfg.Mode = "on"
	if _, err := Open(f.sysfs(), cfg); err == nil || !strings.Contains(err.Error(), "DAMON unavailable: kdamond 0 runs without") {
		t.Fatalf("Open on: %v", err)
	}
	cfg.Mode = "auto"
	h, err := Open(f.sysfs(), cfg)
	if err != nil || h.Mode() != Unavailable || !strings.HasPrefix(h.Status(), "unavailable: kdamond 0 runs") {
		t.Fatalf("Open auto: %v, %v", err, h.Status())
	}
	cfg.Mode = "off"
	if h, err = Open(Sysfs{Root: t.TempDir()}, cfg); err != nil || h.Status() != "unavailable: disabled (--damon off)" {
		t.Fatalf("Open off: %v, %q", err, h.Status())
	}
}

func TestPatternDescribe(t *testing.T) {
	c := Context{Sample: 100 * time.Millisecond, Aggr: 2 * time.Second}
	for _, tc := range []struct {
		p    Pattern
		want string
	}{
		{Pattern{SzMax: math.MaxUint64, NrMax: math.MaxUint32, AgeMax: math.MaxUint32}, "every region"},
		{Pattern{SzMax: math.MaxUint64, NrMax: 20, AgeMax: math.MaxUint32}, "every region"},
		{Pattern{SzMax: math.MaxUint64, NrMin: 5, NrMax: 20, AgeMax: math.MaxUint32}, "regions nr_accesses 5..20"},
		{Pattern{SzMin: 4096, SzMax: math.MaxUint64, NrMax: 0, AgeMin: 3, AgeMax: 30}, "regions size >= 4096 nr_accesses <= 0 age 3 (6s)..30 (1m0s)"},
	} {
		if got := tc.p.describe(c); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.p, got, tc.want)
		}
	}
}

// TestCapturedKdamond0 reads testdata/sys-kdamond0, a copy of this VM's
// DAMON sysfs tree taken on 2026-11-27 after update_schemes_tried_regions:
// kdamond 0 shared, its 14 tried regions (numbered 0, 2, ..., 26) summing
// to total_bytes, and a block across the first two joined exactly.
func TestCapturedKdamond0(t *testing.T) {
	s := Sysfs{Root: "testdata/sys-kdamond0"}
	d := s.Detect()
	if d.Mode != Shared || len(d.Kdamonds) != 1 || d.Kdamonds[0].PID != 77 {
		t.Fatalf("detect %+v", d)
	}
	v := sharedViews(d.Kdamonds)[0]
	regions, err := s.TriedRegions(0, 0, 0, v.ctx.AddrUnit)
	if err != nil {
		t.Fatal(err)
	}
	total, err := s.readUint("kdamonds/0/contexts/0/schemes/0/tried_regions/total_bytes")
	if err != nil {
		t.Fatal(err)
	}
	var sum uint64
	for _, r := range regions {
		sum += r.End - r.Start
	}
	first := Region{Range: Range{5972623360, 5981978624}, NrAccesses: 0, Age: 27}
	last := Region{Range: Range{14157209600, 14161874944}, NrAccesses: 0, Age: 29}
	if len(regions) != 14 || sum != total || regions[0] != first || regions[13] != last {
		t.Fatalf("%d regions, %d bytes of %d; first %+v last %+v", len(regions), sum, total, regions[0], regions[13])
	}
	// Pages 1460442-1460445: two at the end of region 0 (age 27), two at
	// the start of region 1 (age 26), aggregation interval 5 s.
	across := block(1, 5981978624/page-2, 4)
	below := block(2, 0x1000, 4) // under 4 GiB: outside the kdamond's target
	var got []*stratav1.HeatSample
	for _, b := range []Block{across, below} {
		ext, resolved := extents(b.Runs, page)
		got = append(got, v.sample(b, joinBlock(ext, resolved, v.ctx.Ranges, regions), time.Unix(1, 0)))
	}
	a, b := got[0], got[1]
	if a.GetMonitoredBytes() != 4*page || a.GetCoveredBytes() != 4*page || a.GetColdBytes() != 4*page || a.GetAccessRate() != 0 ||
		a.GetColdAgeSeconds() != 132.5 || a.GetColdMinAgeSeconds() != 130 || !a.GetPartial() {
		t.Fatalf("across: %v", a)
	}
	if b.MonitoredBytes == nil || b.GetMonitoredBytes() != 0 || b.GetCoveredBytes() != 0 || b.AccessRate != nil || b.ColdAgeSeconds != nil {
		t.Fatalf("below: %v", b)
	}
}

// TestBusyAtStartLooksAgain: a kdamond's state that stays busy (EBUSY,
// another reader's or writer's command) longer than a read waits makes
// the start unavailable, saying so and that it will look again; Run looks
// again each period and takes the shared mode once the lock is free.
func TestBusyAtStartLooksAgain(t *testing.T) {
	defer func(w time.Duration) { busyWait = w }(busyWait)
	busyWait = 50 * time.Millisecond
	f := newFakeKernel(t)
	f.thisMachine()
	f.fixedTried = true
	var held atomic.Bool
	var refused atomic.Int64 // reads of a state answered EBUSY
	held.Store(true)
	s := f.sysfs()
	s.refuse = func(rel string) error {
		if held.Load() && strings.HasSuffix(rel, "/state") {
			refused.Add(1)
			return syscall.EBUSY
		}
		return nil
	}
	cfg := DefaultConfig()
	cfg.ReadInterval = 20 * time.Millisecond
	h, err := Open(s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if st := h.Status(); h.Mode() != Unavailable || !strings.Contains(st, "device or resource busy") || !strings.Contains(st, "looking again every") {
		t.Fatalf("busy start: %v %q", h.Mode(), st)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	opened := refused.Load()
	go func() { defer close(done); h.Run(ctx, func() []Block { return nil }, &heatSink{}) }()
	// Still busy: Run keeps looking (a look reads a state at least twice,
	// before and after busyWait) and stays unavailable.
	for deadline := time.Now().Add(5 * time.Second); refused.Load() < opened+4; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d busy reads of a state since Open, want Run to look again", refused.Load()-opened)
		}
	}
	if h.Mode() != Unavailable {
		t.Fatalf("mode %v while busy", h.Mode())
	}
	held.Store(false)
	for deadline := time.Now().Add(5 * time.Second); h.Mode() != Shared; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("still %v (%s) after the lock was freed", h.Mode(), h.Status())
		}
	}
	if !strings.HasPrefix(h.Status(), "shared: kdamond 0") {
		t.Fatalf("status %q", h.Status())
	}
	cancel()
	<-done
	h.pending.Wait()
}
