package spark

import (
	"fmt"
	"hash/crc32"
	"maps"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stratatrace/strata/agent/hooksrv"
	"github.com/stratatrace/strata/agent/procmem"
	"github.com/stratatrace/strata/test/sparkjob"
	"github.com/stratatrace/strata/test/testenv"
)

// walkObjectLimit is the runs' walk-objects=: above every partition's
// objects but the big RDD's, whose walk is cut.
const walkObjectLimit = 5000

// walkStep is one of StrataWalkJob's steps: its line and its details.
type walkStep struct {
	sparkjob.Step
	RDDs    map[string]int      `json:"rdds"`
	Columns map[string][]string `json:"columns"`
	// Buffers: each cached DataFrame block's buffers as the job read them,
	// per column (Arrow: one), {length, CRC-32} per batch in batch order.
	Buffers map[string][][][2]uint64 `json:"buffers"`
	Parts   int                      `json:"parts"`
	Records int                      `json:"records"`
	Big     int                      `json:"big"`
	// ManyBatch: df_many's rows per batch.
	ManyBatch int `json:"many_batch"`
	// YoungGCs: the young collections of step young.
	YoungGCs int `json:"young_gcs"`
	// arrow: the run caches DataFrames as Arrow batches (set by the test).
	arrow bool
}

// next waits for StrataWalkJob's step name and reads its details.
func nextWalkStep(t *testing.T, j *sparkjob.Job, dir, name string) walkStep {
	t.Helper()
	s := walkStep{Step: j.Next(t, name)}
	details(t, dir, s.Step, &s)
	return s
}

// The DataFrames of StrataWalkJob; df_many's partitions are hundreds of
// small batches.
var walkTables = []string{"df_ints", "df_strings", "df_mixed", "beans", "df_many"}

// TestHookWalk runs StrataWalkJob under the hook (Spark 3.5 with G1, Spark
// 4 with ParallelGC) and checks that every cached byte of its deserialized
// blocks is resolved: object graphs walked (byte[] records, records of
// objects and strings, a MEMORY_AND_DISK RDD), cached DataFrames and a
// Dataset of beans registered per column with every batch's buffer in the
// column's walk (a DataFrame of hundreds of batches a partition among
// them, whose walks take several WALK frames), before and after full GCs
// that move them and after the agent restarts, against Spark's live REST
// API, the buffers the job read from the block manager (every buffer's
// length and CRC-32, per column) and the markers every record carries,
// read through /proc/PID/mem. Objects two RDDs share count once; a walk
// over its object budget says it was cut; no stale walk is ever usable;
// unpersisting frees every range, and no walk follows a FREE.
func TestHookWalk(t *testing.T) {
	testenv.RequireJava(t)
	for _, c := range []walkCase{
		// G1's full GC leaves regions almost wholly live where they are
		// (MarkSweepDeadRatio, 5 % by default): 0 has it compact them all,
		// so that the cached objects move.
		{series: "3.5", gc: "G1", flags: "-XX:+UseG1GC -XX:MarkSweepDeadRatio=0"},
		{series: "4", gc: "Parallel", flags: "-XX:+UseParallelGC", arrow: true},
	} {
		name := "spark" + c.series + "-" + c.gc
		if c.arrow {
			name += "-arrow"
		}
		t.Run(name, func(t *testing.T) { runWalk(t, c) })
	}
}

// TestHookWalkUnsupportedGC: under ZGC, which moves objects while Java
// threads run, the hook says in HELLO that it does not walk, and why; it
// walks no object graph, and still registers cached DataFrames' columns
// with their buffers (JDK 17's ZGC maps the heap at its coloured addresses,
// so object arrays are registered too, as their references only).
func TestHookWalkUnsupportedGC(t *testing.T) {
	testenv.RequireJava(t)
	home := testenv.SparkHome(t, "3.5")
	rec, srv := startHookServer(t)
	dir := t.TempDir()
	j := sparkjob.Start(t, home, "local[2]", walkConf(t, sparkjob.HookOpts(t, srv.Path())+" -XX:+UseZGC"), "walk", "--out", dir)
	s := nextWalkStep(t, j, dir, "cached")
	evs := rec.all()
	if len(evs) == 0 || evs[0].Session.Walk != hooksrv.WalkUnsupportedGC {
		t.Fatalf("HELLO's walk mode %v, want %v", evs[0].Session.Walk, hooksrv.WalkUnsupportedGC)
	}
	for _, e := range evs {
		if e.Kind == hooksrv.EventWalk && !e.Block.CachedBatch {
			t.Errorf("walk of object graph %s under ZGC", e.Block.Name)
		}
	}
	for _, tb := range walkTables {
		checkColumns(t, rec, s.Step, s.RDDs[tb], s.Parts, s.Columns[tb], s.Buffers, tb != "df_many", "cached under ZGC")
	}
}

// walkConf is StrataWalkJob's configuration with the driver's JVM options.
func walkConf(t *testing.T, opts string) []string {
	return sparkConf(false, "spark.driver.extraJavaOptions="+opts, "spark.driver.memory=700m",
		"spark.ui.port="+strconv.Itoa(freePort(t)),
		// The markers must be readable in the column buffers.
		"spark.sql.inMemoryColumnarStorage.compressed=false")
}

// walkCase is one run of StrataWalkJob: a Spark series, a collector and its
// flags, and whether DataFrames are cached by Spark 4's Arrow serializer
// (one buffer of every column per batch) instead of the default one.
type walkCase struct {
	series, gc, flags string
	arrow             bool
}

func runWalk(t *testing.T, c walkCase) {
	home := testenv.SparkHome(t, c.series)
	rec, srv := startHookServer(t)
	opts := sparkjob.HookOpts(t, srv.Path()) + ",walk-objects=" + strconv.Itoa(walkObjectLimit) + " " + c.flags
	dir := t.TempDir()
	conf := walkConf(t, opts)
	if c.arrow {
		conf = append(conf, "spark.sql.cache.serializer=org.apache.spark.sql.execution.columnar.ArrowCachedBatchSerializer")
	}
	j := sparkjob.Start(t, home, "local[2]", conf, "walk", "--out", dir)

	s := nextWalkStep(t, j, dir, "cached")
	s.arrow = c.arrow
	evs := rec.all()
	if len(evs) == 0 || evs[0].Session.Walk != hooksrv.WalkOn {
		t.Fatalf("no session walking object graphs (%v)", evs)
	}
	before, beforeCols := checkResolved(t, rec, s, "cached")
	checkManyBatches(t, s, beforeCols)
	if n := threadNice(t, s.PID, "strata-walk"); n != 10 {
		t.Errorf("the walker thread runs at nice %d, want walk-nice's default 10", n)
	}

	gc0 := rec.walks().gc
	j.Proceed(t)
	j.Next(t, "gc")
	// Every walk usable at the latest epoch: its CHECKED came, after the
	// rescan's frames (the moved columns' walks).
	settledAfter(t, rec, gc0)
	after, afterCols := checkResolved(t, rec, s, "after full GCs")
	if v := rec.walks(); v.stale == 0 {
		t.Errorf("no STALE walk after full GCs (GC epoch %d)", v.gc)
	}
	// Every walk was made again, and the objects moved.
	moved := 0
	for name, w := range before {
		a := after[name]
		if a.Seq <= w.Seq || a.GCEpoch <= w.GCEpoch {
			t.Errorf("block %s: walk %d at epoch %d before the full GCs, %d at %d after: not walked again", name, w.Seq, w.GCEpoch, a.Seq, a.GCEpoch)
		}
		if len(a.Extents) > 0 && len(w.Extents) > 0 && a.Extents[0] != w.Extents[0] {
			moved++
		}
	}
	if moved == 0 {
		t.Errorf("no walked block moved in the full GCs")
	}
	t.Logf("%d of %d walked blocks moved in the full GCs", moved, len(before))
	// A column's walk is sent again when a collection moved one of its
	// buffers, and only then (a G1 humongous buffer stays).
	moved = 0
	for name, w := range beforeCols {
		a := afterCols[name]
		switch {
		case a.Seq < w.Seq || (a.Seq == w.Seq && !sameWalk(a, w)):
			t.Errorf("column %s: walk %d before the full GCs, %d after and another", name, w.Seq, a.Seq)
		case a.Seq > w.Seq && sameWalk(a, w):
			t.Errorf("column %s: walk %d sent again as %d, its buffers where they were", name, w.Seq, a.Seq)
		case a.Seq > w.Seq:
			moved++
		}
	}
	if moved == 0 {
		t.Errorf("no column's buffers moved in the full GCs")
	}
	t.Logf("%d of %d columns' buffers moved in the full GCs", moved, len(beforeCols))

	// Young collections move no old object: the walks hold (CHECKED), the
	// markers are where they say (checkResolved reads them again).
	gc1 := rec.walks().gc
	j.Proceed(t)
	y := nextWalkStep(t, j, dir, "young")
	moves := youngMoves(rec, y.RDDs["fresh"])
	settledAfter(t, rec, gc1)
	checkPostponed(t, rec, y, s.Parts, moves, c.gc == "G1")
	kept := 0
	young, _ := checkResolved(t, rec, s, "after young GCs")
	for name, w := range young {
		if w.Seq == after[name].Seq {
			kept++
		}
	}
	t.Logf("%d young GCs: %d of %d walks held through them", y.YoungGCs, kept, len(after))
	if y.YoungGCs < 3 || kept == 0 {
		t.Errorf("%d young GCs: %d walks held through them, want some", y.YoungGCs, kept)
	}

	// The agent restarts: the hook registers every block again and sends
	// each latest walk, a GC frame and a CHECKED.
	rec = checkRestart(t, rec, srv)
	checkResolved(t, rec, s, "after the agent restarted")

	j.Proceed(t)
	u := nextWalkStep(t, j, dir, "unpersisted")
	for name, rdd := range u.RDDs {
		t.Logf("unpersisted %s (RDD %d)", name, rdd)
		checkGone(t, rec, u.Step, rdd, hooksrv.FreeRemoved)
	}
	for _, e := range rec.walks().errors {
		t.Error(e)
	}

	j.Proceed(t)
	counters := sparkjob.HookCounters(t, j.Finish(t))
	t.Logf("hook counters: %v", counters)
	if counters["errors"] != 0 || counters["walk-errors"] != 0 || counters["walks"] == 0 || counters["cut"] < 1 ||
		counters["stale"] < 1 || counters["postponed"] < 1 || counters["objects"] == 0 || counters["connects"] != 2 {
		t.Errorf("hook counters %v: want no errors, walks, a cut walk, stale and postponed walks, two connects", counters)
	}
}

// threadNice is the nice value of pid's thread named comm; the test fails
// when there is none.
func threadNice(t *testing.T, pid int, comm string) int {
	t.Helper()
	fs := procmem.Default()
	tids, err := fs.Tasks(pid)
	if err != nil {
		t.Fatal(err)
	}
	for _, tid := range tids {
		c, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/comm", pid, tid))
		if err != nil || strings.TrimSpace(string(c)) != comm {
			continue
		}
		st, err := fs.TaskStat(pid, tid)
		if err != nil {
			t.Fatal(err)
		}
		return st.Nice
	}
	t.Fatalf("no thread %q in process %d", comm, pid)
	return 0
}

// walkCount is what the hook sent of one block's walks: complete walks and
// STALE marks.
type walkCount struct{ walks, stale int }

// youngMoves counts, per block of rdd, the walks and STALE marks the hook
// has sent so far.
func youngMoves(rec *recorder, rdd int) map[string]walkCount {
	n := map[string]walkCount{}
	prefix := fmt.Sprintf("rdd_%d_", rdd)
	for _, e := range rec.all() {
		if e.Kind != hooksrv.EventWalk || !strings.HasPrefix(e.Block.Name, prefix) {
			continue
		}
		c := n[e.Block.Name]
		if e.Walk.State == hooksrv.WalkStale {
			c.stale++
		} else {
			c.walks++
		}
		n[e.Block.Name] = c
	}
	return n
}

// checkPostponed: the fresh RDD, cached just before young collections,
// was moved by them (its objects were young), and the walker did not walk
// it after every move: a new block waits for the next young collection,
// and one young collections keep moving for more of them (1, 3, 7, 15),
// before its next walk. G1 keeps a young block
// in survivor regions for several collections (moved at least twice is
// required); ParallelGC here promotes it at its first scavenge (moved at
// least once). Once collections stopped it was walked again, and its walk
// holds its records' markers.
func checkPostponed(t *testing.T, rec *recorder, y walkStep, parts int, moves map[string]walkCount, g1 bool) {
	t.Helper()
	want := 1
	if g1 {
		want = 2
	}
	moved := 0
	for name, c := range moves {
		t.Logf("young: block %s of the fresh RDD: %d walks, %d STALE marks by the end of %d young GCs", name, c.walks, c.stale, y.YoungGCs)
		if c.stale >= want {
			moved++
		}
		// Walked after young collections 1, 3 and 7 when each moves it;
		// walked after every move, it would be 9 times in 8 collections.
		if c.stale >= 2 && 2*c.walks > y.YoungGCs {
			t.Errorf("young: block %s: %d walks in %d young GCs that moved it %d times: walked again after most moves",
				name, c.walks, y.YoungGCs, c.stale)
		}
	}
	if len(moves) == 0 || moved == 0 {
		t.Errorf("young: no block of the fresh RDD %d moved %d times in %d young GCs (%v)", y.RDDs["fresh"], want, y.YoungGCs, moves)
	}
	walks := map[string]*hooksrv.Walk{}
	checkWalks(t, rec, y.Step, y.RDDs["fresh"], parts, objMarkers, "after young GCs, the fresh RDD", walks)
}

// checkRestart stops the hook server and starts another on its socket;
// the hook must connect again and re-send every live block, each
// object-graph block's and cached batch column's latest walk (the same
// walk, unless a collection made a new one meanwhile), a GC frame and a
// CHECKED. It returns the new server's recorder.
func checkRestart(t *testing.T, old *recorder, srv *hooksrv.Server) *recorder {
	t.Helper()
	was := old.walks()
	live := map[uint64]hooksrv.Event{}
	old.mu.Lock()
	for id, e := range old.live {
		live[id] = e
	}
	old.mu.Unlock()
	srv.Close()
	time.Sleep(settle / 4)
	rec, _ := startHookServerAt(t, srv.Path())
	if err := testenv.WaitFor("the hook to register its blocks again", 30*time.Second, nil, func() bool {
		rec.mu.Lock()
		n := len(rec.live)
		rec.mu.Unlock()
		return n >= len(live) && rec.walks().checked
	}); err != nil {
		t.Fatalf("%v: %d blocks live before the restart", err, len(live))
	}
	now := rec.walks()
	rec.mu.Lock()
	for id, e := range live {
		if _, ok := rec.live[id]; !ok {
			t.Errorf("block %s (id %d) not registered again", e.Block.Name, id)
		}
	}
	rec.mu.Unlock()
	for id, e := range live {
		if (!e.Block.ObjectGraph && !e.Block.CachedBatch) || was.walks[id] == nil {
			continue
		}
		w, before := now.walks[id], was.walks[id].walk
		if w == nil || w.walk.Seq < before.Seq || (w.walk.Seq == before.Seq && !sameWalk(w.walk, before)) {
			t.Errorf("block %s: after the restart walk %+v, before %+v", e.Block.Name, w, before)
		}
	}
	t.Logf("agent restarted: %d blocks registered again, %d walks re-sent, GC epoch %d", len(live), len(now.walks), now.gc)
	return rec
}

func sameWalk(a, b *hooksrv.Walk) bool {
	if a.State != b.State || a.GCEpoch != b.GCEpoch || a.Objects != b.Objects || a.Bytes != b.Bytes || len(a.Extents) != len(b.Extents) {
		return false
	}
	for i := range a.Extents {
		if a.Extents[i] != b.Extents[i] {
			return false
		}
	}
	return true
}

// checkResolved checks every cached RDD of the job at one moment; it
// returns the walks it checked, of object graphs by block and of cached
// DataFrame columns by block and column ("rdd_9_0/1").
func checkResolved(t *testing.T, rec *recorder, s walkStep, when string) (graphs, columns map[string]*hooksrv.Walk) {
	t.Helper()
	st := s.Step
	walks := map[string]*hooksrv.Walk{}
	checkWalks(t, rec, st, s.RDDs["bytes"], s.Parts, stampMarkers, when, walks)
	checkWalks(t, rec, st, s.RDDs["objects"], s.Parts, objMarkers, when, walks)
	checkWalks(t, rec, st, s.RDDs["disk"], s.Parts, objMarkers, when, walks)
	checkShared(t, rec, st, s, when)
	checkCut(t, rec, st, s.RDDs["big"], when)
	cols := map[string]*hooksrv.Walk{}
	for _, tb := range walkTables {
		columns := s.Columns[tb]
		if s.arrow {
			columns = nil
		}
		maps.Copy(cols, checkColumns(t, rec, st, s.RDDs[tb], s.Parts, columns, s.Buffers, tb != "df_many", when))
	}
	for _, e := range rec.walks().errors {
		t.Error(e)
	}
	return walks, cols
}

// checkManyBatches: df_many's partitions hold more batches than one WALK
// frame holds extents, so its columns' walks came in several parts.
func checkManyBatches(t *testing.T, s walkStep, cols map[string]*hooksrv.Walk) {
	t.Helper()
	n := 0
	for name, w := range cols {
		if strings.HasPrefix(name, fmt.Sprintf("rdd_%d_", s.RDDs["df_many"])) {
			n++
			if len(w.Extents) <= hooksrv.WalkExtentsMax {
				t.Errorf("column %s of df_many (batches of %d rows): a walk of %d buffers, want more than a WALK frame's %d",
					name, s.ManyBatch, len(w.Extents), hooksrv.WalkExtentsMax)
			}
		}
	}
	if n == 0 {
		t.Errorf("no column of df_many checked")
	}
}

// listedParts waits for Spark to list parts cached partitions of rdd.
func listedParts(t *testing.T, s sparkjob.Step, rdd, parts int, when string) []restPartition {
	t.Helper()
	r, ok := storageUntil(t, s, rdd, func(r restRDD, ok bool) bool { return ok && len(r.Partitions) == parts })
	if !ok || len(r.Partitions) != parts {
		t.Fatalf("%s: Spark lists %d cached partitions of RDD %d, want %d", when, len(r.Partitions), rdd, parts)
	}
	return r.Partitions
}

// usableWalk waits for the object-graph block registered as name to have
// a usable walk, and returns its registration and walk.
func usableWalk(t *testing.T, rec *recorder, name string) (hooksrv.Event, *hooksrv.Walk) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ch := waitChunks(t, rec, name)
		if len(ch) != 1 || !ch[0].Block.ObjectGraph {
			t.Fatalf("block %s registered as %d ranges, first %+v: want one object graph", name, len(ch), ch[0].Block)
		}
		if w := rec.walks().usable(ch[0].Block.HookID); w != nil {
			return ch[0], w
		}
		if time.Now().After(deadline) {
			v := rec.walks()
			t.Fatalf("block %s: no usable walk after 30 s (latest %+v, GC epoch %d)", name, v.walks[ch[0].Block.HookID], v.gc)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkWalks: every partition Spark lists of an object-graph RDD has a
// complete walk whose pages add up to 0.8-1.6 of Spark's memoryUsed, at
// least 90 % of them holding the partition's markers and every extent some
// (but the one with the block's array of references). The walks go in
// walks by block.
//
// A page that two partitions' walks both hold counts half to each (a third
// to each of three): tasks that cache partitions at the same time allocate
// from the same heap, and a busy machine's G1 (its TLABs, its copying
// workers) can interleave their records, so that each partition's objects
// really do span up to twice their bytes in pages, every such page holding
// both partitions' records. The RDD's pages counted once each are then
// what a partition's share adds up to.
func checkWalks(t *testing.T, rec *recorder, s sparkjob.Step, rdd, parts int, markers func(rdd, part int) [][]byte, when string,
	walks map[string]*hooksrv.Walk) {
	t.Helper()
	listed := listedParts(t, s, rdd, parts, when)
	mine := make([]*hooksrv.Walk, len(listed))
	var pageSize uint64
	for i, p := range listed {
		part := partitionOf(t, p.BlockName)
		var err error
		var w *hooksrv.Walk
		for try := 0; try < 5; try++ { // a GC may move the objects between the walk and the read
			var e hooksrv.Event
			e, w = usableWalk(t, rec, p.BlockName)
			if e.Block.SparkBytes != uint64(p.MemoryUsed) {
				t.Errorf("%s: block %s: REGISTER's Spark size %d, Spark says %d", when, p.BlockName, e.Block.SparkBytes, p.MemoryUsed)
			}
			if w.State != hooksrv.WalkDone || w.Objects == 0 || w.Bytes == 0 {
				t.Fatalf("%s: block %s: walk %+v, want a complete one", when, p.BlockName, w)
			}
			pageSize = uint64(e.Session.PageSize)
			if err = extentMarks(s.PID, e, w.Extents, markers(rdd, part)); err == nil {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if err != nil {
			t.Errorf("%s: block %s: %v", when, p.BlockName, err)
		}
		mine[i] = w
		walks[p.BlockName] = w
	}
	shares, shared := pageShares(mine, pageSize)
	for i, p := range listed {
		w := mine[i]
		var pages uint64
		for _, x := range w.Extents {
			pages += x.Length
		}
		ratio := shares[i] / float64(p.MemoryUsed)
		if ratio < 0.8 || ratio > 1.6 {
			t.Errorf("%s: block %s: walk's pages %d bytes (%d of its pages shared with another partition), its share %.0f bytes, "+
				"%.2f of Spark's %d (objects %d bytes %d)", when, p.BlockName, pages, shared[i], shares[i], ratio, p.MemoryUsed, w.Objects, w.Bytes)
		}
		t.Logf("%s: %s: %d objects, %d bytes, %d extents, pages %d bytes (%d shared), share %.2f of Spark's %d", when, p.BlockName,
			w.Objects, w.Bytes, len(w.Extents), pages, shared[i], ratio, p.MemoryUsed)
	}
}

// pageShares returns, per walk, its pages' bytes with each page that k of
// the walks hold counted 1/k, and how many of its pages another walk holds.
func pageShares(ws []*hooksrv.Walk, pageSize uint64) (shares []float64, shared []int) {
	holders := map[uint64]int{}
	for _, w := range ws {
		for _, x := range w.Extents {
			for a := x.Vaddr / pageSize; a < (x.End()+pageSize-1)/pageSize; a++ {
				holders[a]++
			}
		}
	}
	shares, shared = make([]float64, len(ws)), make([]int, len(ws))
	for i, w := range ws {
		for _, x := range w.Extents {
			for a := x.Vaddr / pageSize; a < (x.End()+pageSize-1)/pageSize; a++ {
				shares[i] += float64(pageSize) / float64(holders[a])
				if holders[a] > 1 {
					shared[i]++
				}
			}
		}
	}
	return shares, shared
}

// extentMarks reads every extent of the walk of the block registered as
// reg: 90 % of the pages hold the partition's bytes — a marker, or the
// block's array of references (the array is the block's too, and marks
// nothing) — and every extent a marker but one that holds the array.
func extentMarks(pid int, reg hooksrv.Event, ext []hooksrv.Extent, markers [][]byte) error {
	array := hooksrv.Extent{Vaddr: reg.Vaddr, Length: reg.Length}
	marked, judged := 0, 0
	var each []string
	for _, x := range ext {
		m, j, whole, err := pageMarks(pid, x.Vaddr, x.Length, uint64(reg.Session.PageSize), markers, 64, array)
		if err != nil {
			return err
		}
		holdsArray := reg.Vaddr < x.Vaddr+x.Length && x.Vaddr < reg.Vaddr+reg.Length
		if !whole && !holdsArray {
			return fmt.Errorf("extent %#x+%d holds no marker of the partition", x.Vaddr, x.Length)
		}
		marked += m
		judged += j
		each = append(each, fmt.Sprintf("%#x+%d: %d of %d", x.Vaddr, x.Length, m, j))
	}
	if judged == 0 || marked*10 < judged*9 {
		return fmt.Errorf("%d of %d pages hold the partition's bytes (array %#x+%d; extents %s)",
			marked, judged, reg.Vaddr, reg.Length, strings.Join(each, ", "))
	}
	return nil
}

// checkShared: the filtered RDD holds the objects RDD's records, so its
// walks count only their own arrays and find every record shared.
func checkShared(t *testing.T, rec *recorder, s sparkjob.Step, js walkStep, when string) {
	t.Helper()
	for _, p := range listedParts(t, s, js.RDDs["filtered"], js.Parts, when) {
		e, w := usableWalk(t, rec, p.BlockName)
		_, own := usableWalk(t, rec, fmt.Sprintf("rdd_%d_%d", js.RDDs["objects"], partitionOf(t, p.BlockName)))
		array := e.Length + 64 // the elements and any array header
		if w.Objects != 1 || w.Bytes > array || w.SharedObjects != uint64(js.Records) || w.SharedBytes < uint64(js.Records)*16 ||
			w.SharedBytes >= own.Bytes {
			t.Errorf("%s: filtered block %s: walk %d objects %d bytes, shared %d objects %d bytes; want its array only (%d bytes) "+
				"and the %d records shared (the objects RDD's walk: %d bytes)",
				when, p.BlockName, w.Objects, w.Bytes, w.SharedObjects, w.SharedBytes, e.Length, js.Records, own.Bytes)
		}
	}
}

// checkCut: the big RDD's walk stopped at walk-objects.
func checkCut(t *testing.T, rec *recorder, s sparkjob.Step, rdd int, when string) {
	t.Helper()
	p := listedParts(t, s, rdd, 1, when)[0]
	_, w := usableWalk(t, rec, p.BlockName)
	if w.State != hooksrv.WalkCut || w.Objects != walkObjectLimit {
		t.Errorf("%s: big block %s: walk %v of %d objects, want cut at %d", when, p.BlockName, w.State, w.Objects, walkObjectLimit)
	}
}

// checkColumns: every partition of a cached DataFrame is registered as its
// columns (nil columns: Arrow batches, one column -1), each with its
// column's name and a walk of its buffers: one extent per batch, byte
// exact, whose count and bytes are the walk's. With the job's buffers
// (bufs, by block), each column's walk holds exactly its batches' buffers
// (their lengths summed are the walk's bytes, and the bytes read at the
// extents through /proc/PID/mem have the lengths and CRC-32s the job
// read), and its REGISTER range is the first batch's buffer. With ratio,
// the columns' bytes are 0.8-1.6 of Spark's memoryUsed (a block's batch
// objects and statistics are the rest; tiny batches have more of them).
// It returns the walks by block and column ("rdd_9_0/1").
func checkColumns(t *testing.T, rec *recorder, s sparkjob.Step, rdd, parts int, columns []string, bufs map[string][][][2]uint64,
	ratio bool, when string) map[string]*hooksrv.Walk {
	t.Helper()
	walks := map[string]*hooksrv.Walk{}
	for _, p := range listedParts(t, s, rdd, parts, when) {
		part := partitionOf(t, p.BlockName)
		want, known := bufs[p.BlockName]
		var err error
		var sum, buffers uint64
		var ch []column
		for until := time.Now().Add(agreeWithin); ; { // a GC may move the buffers; their walk comes after
			ch = waitColumns(t, rec, p.BlockName)
			n := len(columns)
			if columns == nil {
				n = 1
			}
			if len(ch) != n || (known && len(want) != n) {
				t.Fatalf("%s: block %s registered as %d columns, want %d (the job's batches have %d)", when, p.BlockName, len(ch), n, len(want))
			}
			sum, buffers, err = 0, 0, nil
			for i, c := range ch {
				b := c.reg.Block
				col, name := int32(i), ""
				if columns == nil {
					col = -1
				} else {
					name = columns[i]
				}
				if !b.CachedBatch || b.ObjectGraph || int(b.Chunk) != i || int(b.RDDID) != rdd || int(b.Partition) != part ||
					b.Column != col || b.ColumnName != name || b.SparkBytes != uint64(p.MemoryUsed) {
					t.Fatalf("%s: block %s column %d registered as %+v (columns %v, Spark's size %d)", when, p.BlockName, i, b, columns, p.MemoryUsed)
				}
				w := c.walk
				sum += w.Bytes
				buffers += w.Objects
				walks[fmt.Sprintf("%s/%d", p.BlockName, i)] = w
				if err == nil {
					var batches [][2]uint64
					if known {
						batches = want[i]
					}
					err = checkBuffers(s.PID, c.reg, w, batches)
					if err != nil {
						err = fmt.Errorf("column %d (%s): %w", i, name, err)
					}
				}
			}
			if err == nil || time.Now().After(until) {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if err != nil {
			t.Errorf("%s: block %s: %v", when, p.BlockName, err)
		}
		r := float64(sum) / float64(p.MemoryUsed)
		if ratio && (r < 0.8 || r > 1.6) {
			t.Errorf("%s: block %s: buffers %d bytes, %.2f of Spark's %d", when, p.BlockName, sum, r, p.MemoryUsed)
		}
		t.Logf("%s: %s: %d columns, %d buffers, %d bytes, %.2f of Spark's %d", when, p.BlockName, len(ch), buffers, sum, r, p.MemoryUsed)
	}
	return walks
}

// column is one column of a cached DataFrame block: its latest REGISTER
// or MOVE and its latest walk.
type column struct {
	reg  hooksrv.Event
	walk *hooksrv.Walk
}

// waitColumns waits until every column of the cached DataFrame block named
// name is registered and has a walk, and returns them by column.
func waitColumns(t *testing.T, rec *recorder, name string) []column {
	t.Helper()
	deadline := time.Now().Add(settle)
	for {
		ch := waitChunks(t, rec, name)
		v := rec.walks()
		out := make([]column, 0, len(ch))
		for _, e := range ch {
			if bw := v.walks[e.Block.HookID]; bw != nil {
				out = append(out, column{e, bw.walk})
			}
		}
		if len(out) == len(ch) {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("block %s: %d of its %d columns have a walk", name, len(out), len(ch))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkBuffers checks a column's walk w (registered as reg): complete, its
// extents ascending with a buffer each, their count and bytes the walk's,
// the REGISTER range one of them; with the job's buffers of the column
// ({length, CRC-32} per batch), the buffers at the extents are those, and
// the REGISTER range the first batch's.
func checkBuffers(pid int, reg hooksrv.Event, w *hooksrv.Walk, batches [][2]uint64) error {
	if w.State != hooksrv.WalkDone || w.SharedObjects != 0 || w.SharedBytes != 0 || w.OpaqueObjects != 0 || w.Objects != uint64(len(w.Extents)) {
		return fmt.Errorf("walk %+v: want DONE, its buffers as objects, nothing shared or opaque", w)
	}
	var bytes uint64
	first := false
	for i, x := range w.Extents {
		if i > 0 && x.Vaddr < w.Extents[i-1].End() {
			return fmt.Errorf("extent %d %#x+%d not after the one before", i, x.Vaddr, x.Length)
		}
		bytes += x.Length
		first = first || (x.Vaddr == reg.Vaddr && x.Length == reg.Length)
	}
	if bytes != w.Bytes || !first {
		return fmt.Errorf("extents of %d bytes, walk's %d; REGISTER range %#x+%d among them: %v", bytes, w.Bytes, reg.Vaddr, reg.Length, first)
	}
	if batches == nil {
		return nil
	}
	var jobBytes uint64
	want := map[[2]uint64]int{}
	for _, b := range batches {
		jobBytes += b[0]
		want[b]++
	}
	if uint64(len(batches)) != w.Objects || jobBytes != w.Bytes {
		return fmt.Errorf("walk of %d buffers, %d bytes; the job's batches have %d, %d bytes", w.Objects, w.Bytes, len(batches), jobBytes)
	}
	got, err := bufferSums(pid, w.Extents)
	if err != nil {
		return err
	}
	for i, g := range got {
		if want[g]--; want[g] < 0 {
			return fmt.Errorf("extent %d %#x+%d holds %d bytes of CRC-32 %#x, no buffer of the column's batches", i, w.Extents[i].Vaddr, w.Extents[i].Length, g[0], g[1])
		}
		if w.Extents[i].Vaddr == reg.Vaddr && g != batches[0] {
			return fmt.Errorf("REGISTER range %#x+%d holds %v, the first batch's buffer %v", reg.Vaddr, reg.Length, g, batches[0])
		}
	}
	return nil
}

// bufferSums reads every extent of pid's memory and returns its length and
// CRC-32 (the IEEE polynomial, java.util.zip.CRC32's).
func bufferSums(pid int, ext []hooksrv.Extent) ([][2]uint64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := make([][2]uint64, len(ext))
	for i, x := range ext {
		b := make([]byte, x.Length)
		if _, err := f.ReadAt(b, int64(x.Vaddr)); err != nil {
			return nil, fmt.Errorf("read %#x+%d: %w", x.Vaddr, x.Length, err)
		}
		out[i] = [2]uint64{x.Length, uint64(crc32.ChecksumIEEE(b))}
	}
	return out, nil
}
