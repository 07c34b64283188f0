package spark

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stratatrace/strata/agent/hooksrv"
	"github.com/stratatrace/strata/test/sparkjob"
	"github.com/stratatrace/strata/test/testenv"
)

// ---- StrataWalkJob's steps

// details reads what StrataWalkJob wrote of its step into v (its --out
// directory holds one STEP.json per step).
func details(t *testing.T, dir string, s sparkjob.Step, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, s.Step+".json"))
	if err != nil {
		t.Fatalf("step %s: %v", s.Step, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("step %s: %s: %v", s.Step, b, err)
	}
}

// ---- what the hook said of walks, replayed in frame order

// blockWalk is a block's latest walk and the GC epoch it holds at (its
// own, raised by every CHECKED that covers it).
type blockWalk struct {
	walk  *hooksrv.Walk
	holds uint32
	block hooksrv.Event // the walk's event (block as registered)
}

// walkView is the walks of the latest session as the agent would keep them.
type walkView struct {
	gc      uint32 // the latest GC frame's epoch
	walks   map[uint64]*blockWalk
	freed   map[uint64]bool
	stale   int  // STALE marks seen
	checked bool // a CHECKED came
	// checkedAt is the latest CHECKED's epoch: every frame of that epoch's
	// rescan (MOVEs, cached columns' walks) came before it.
	checkedAt uint32
	errors    []string // frames that broke the protocol's promises
}

// walks replays rec's events: GC frames, walks, CHECKED and FREE; a new
// session starts afresh (hook ids are per session).
func (r *recorder) walks() *walkView {
	v := &walkView{}
	for _, e := range r.all() {
		switch e.Kind {
		case hooksrv.EventSessionStart:
			errs := v.errors
			*v = walkView{walks: map[uint64]*blockWalk{}, freed: map[uint64]bool{}, errors: errs}
		case hooksrv.EventGC:
			if e.GCEpoch < v.gc {
				v.errors = append(v.errors, fmt.Sprintf("GC frame of epoch %d after one of %d", e.GCEpoch, v.gc))
			}
			v.gc = e.GCEpoch
		case hooksrv.EventChecked:
			if e.GCEpoch > v.gc {
				v.errors = append(v.errors, fmt.Sprintf("CHECKED %d before its GC frame (latest %d)", e.GCEpoch, v.gc))
			}
			v.checked = true
			v.checkedAt = e.GCEpoch
			for _, w := range v.walks {
				if w.walk.State != hooksrv.WalkStale && w.holds < e.GCEpoch {
					w.holds = e.GCEpoch
				}
			}
		case hooksrv.EventWalk:
			if v.freed[e.Block.HookID] {
				v.errors = append(v.errors, fmt.Sprintf("WALK of block %s (id %d) after its FREE", e.Block.Name, e.Block.HookID))
			}
			if e.Walk.State != hooksrv.WalkStale && e.Walk.GCEpoch > v.gc {
				v.errors = append(v.errors, fmt.Sprintf("walk of %s at epoch %d before the GC frame of that epoch (latest %d)",
					e.Block.Name, e.Walk.GCEpoch, v.gc))
			}
			if old := v.walks[e.Block.HookID]; old != nil && e.Walk.Seq != old.walk.Seq+1 {
				v.errors = append(v.errors, fmt.Sprintf("walk of %s: seq %d after %d", e.Block.Name, e.Walk.Seq, old.walk.Seq))
			}
			if e.Walk.State == hooksrv.WalkStale {
				v.stale++
			}
			v.walks[e.Block.HookID] = &blockWalk{walk: e.Walk, holds: e.Walk.GCEpoch, block: e}
		case hooksrv.EventFree:
			v.freed[e.Block.HookID] = true
		}
	}
	return v
}

// usable is the block's walk when the agent could use it now: not stale and
// holding at the latest GC epoch.
func (v *walkView) usable(id uint64) *hooksrv.Walk {
	w := v.walks[id]
	if w == nil || w.walk.State == hooksrv.WalkStale || w.holds != v.gc {
		return nil
	}
	return w.walk
}

// rescannedAfter waits, up to a minute, until the hook has sent a GC frame
// past epoch and a CHECKED of the latest GC frame's epoch: the hook
// thread's rescan for it (its MOVEs, the cached columns' walks) has come.
func rescannedAfter(t *testing.T, rec *recorder, epoch uint32) {
	t.Helper()
	err := testenv.WaitFor(fmt.Sprintf("the rescan after GC epoch %d", epoch), time.Minute, nil, func() bool {
		v := rec.walks()
		return v.gc > epoch && v.checkedAt == v.gc
	})
	if err != nil {
		t.Log(err)
	}
}

// settledAfter waits, up to a minute, until the hook has sent a GC frame
// past epoch and every live object-graph block's latest walk is usable at
// the latest epoch: what the checks after a collection read. A timeout is
// logged; the checks that follow say what is missing.
func settledAfter(t *testing.T, rec *recorder, epoch uint32) {
	t.Helper()
	err := testenv.WaitFor(fmt.Sprintf("every walk usable after GC epoch %d", epoch), time.Minute, nil, func() bool {
		v := rec.walks()
		if v.gc <= epoch {
			return false
		}
		for id, w := range v.walks {
			if w.block.Block.ObjectGraph && !v.freed[id] && v.usable(id) == nil {
				return false
			}
		}
		return true
	})
	if err != nil {
		t.Log(err)
	}
}

// ---- markers

// objMarkers are the markers of an object record of (rdd, part): its
// strings' prefix and its marker long (StrataWalkJob).
func objMarkers(rdd, part int) [][]byte {
	l := make([]byte, 8)
	binary.LittleEndian.PutUint64(l, 0x4F424A0000000000|uint64(rdd)<<20|uint64(part))
	return [][]byte{[]byte(fmt.Sprintf("STRATA-OBJ-r%06d-p%06d-", rdd, part)), l}
}

// stampMarkers is the stamp prefix of StrataJob's records of (rdd, part).
func stampMarkers(rdd, part int) [][]byte {
	return [][]byte{[]byte(fmt.Sprintf("STRATAr%06dp%06d", rdd, part))}
}

func holdsAny(b []byte, markers [][]byte) bool {
	for _, m := range markers {
		if bytes.Contains(b, m) {
			return true
		}
	}
	return false
}

// pageMarks reads [addr, addr+n) of pid page by page and counts the pages
// that hold one of the markers, of those with at least minBytes of the
// range (a range's last few bytes on a page cannot hold a whole marker);
// whole is whether the range holds one at all. A page that holds any of
// own, the block's array of references (which holds no marker), counts as
// marked: those bytes are the block's.
func pageMarks(pid int, addr, n uint64, page uint64, markers [][]byte, minBytes uint64, own hooksrv.Extent) (marked, judged int, whole bool, err error) {
	m, err := readMem(pid, addr, n)
	if err != nil {
		return 0, 0, false, err
	}
	for lo := addr; lo < addr+n; {
		hi := min((lo/page+1)*page, addr+n)
		if hi-lo >= minBytes {
			judged++
			ownLo, ownHi := max(lo, own.Vaddr), min(hi, own.Vaddr+own.Length)
			if holdsAny(m[lo-addr:hi-addr], markers) || ownHi > ownLo {
				marked++
			}
		}
		lo = hi
	}
	return marked, judged, holdsAny(m, markers), nil
}

// TestPageShares: a page two walks hold counts half to each, three a third.
func TestPageShares(t *testing.T) {
	const pg = 4096
	walk := func(xs ...hooksrv.Extent) *hooksrv.Walk { return &hooksrv.Walk{Extents: xs} }
	ws := []*hooksrv.Walk{
		walk(hooksrv.Extent{Vaddr: 0, Length: 3 * pg}),                                                  // pages 0 1 2
		walk(hooksrv.Extent{Vaddr: 2 * pg, Length: 2 * pg}, hooksrv.Extent{Vaddr: 10 * pg, Length: pg}), // pages 2 3 10
		walk(hooksrv.Extent{Vaddr: 2 * pg, Length: pg}),                                                 // page 2
	}
	shares, shared := pageShares(ws, pg)
	want := []float64{2*pg + pg/3.0, 2*pg + pg/3.0, pg / 3.0}
	wantShared := []int{1, 1, 1}
	for i := range ws {
		if math.Abs(shares[i]-want[i]) > 1e-6 || shared[i] != wantShared[i] {
			t.Errorf("walk %d: share %.1f, %d shared pages; want %.1f, %d", i, shares[i], shared[i], want[i], wantShared[i])
		}
	}
	if sum := shares[0] + shares[1] + shares[2]; math.Abs(sum-5*pg) > 1e-6 {
		t.Errorf("shares add up to %.1f, want the 5 distinct pages' %d", sum, 5*pg)
	}
}
