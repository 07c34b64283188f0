package spark

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stratatrace/strata/agent/hooksrv"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
	"github.com/stratatrace/strata/test/sparkjob"
	"github.com/stratatrace/strata/test/testenv"
)

// localCase is one run of the job in local[2]: a Spark series, a collector
// and on- or off-heap storage and Tungsten memory, and the hook's options
// in their older -javaagent form when javaagent is set.
type localCase struct {
	series    string
	gc        string
	offheap   bool
	javaagent bool
}

func (c localCase) name() string {
	mode := "onheap"
	if c.offheap {
		mode = "offheap"
	}
	name := fmt.Sprintf("spark%s-%s-%s", c.series, mode, strings.TrimPrefix(strings.TrimSuffix(c.gc, "GC"), "-XX:+Use"))
	if c.javaagent {
		name += "-javaagent"
	}
	return name
}

// TestHookLocal runs the job in local mode under the hook on both Spark
// series, each with ParallelGC (moves everything) and G1 (humongous arrays
// stay), and checks the hook's reports against Spark's live REST API and
// the executor's memory. One run loads the hook in its older -javaagent
// form.
func TestHookLocal(t *testing.T) {
	testenv.RequireJava(t)
	for _, c := range []localCase{
		{"3.5", "-XX:+UseParallelGC", false, false},
		{"3.5", "-XX:+UseG1GC", true, false},
		{"4", "-XX:+UseG1GC", false, false},
		{"4", "-XX:+UseParallelGC", true, true},
	} {
		t.Run(c.name(), func(t *testing.T) { runLocal(t, c) })
	}
}

// sparkConf is the job's configuration: small memory so that eviction
// happens, small pages so that a sort takes several.
func sparkConf(offheap bool, extra ...string) []string {
	conf := []string{
		"spark.ui.showConsoleProgress=false",
		"spark.testing.memory=536870912", // unified memory (512-300 MiB) * fraction
		"spark.memory.fraction=0.2",      // ~42 MiB for storage and execution
		"spark.sql.shuffle.partitions=2",
		"spark.buffer.pageSize=1m",
		"spark.sql.adaptive.enabled=false",
		// The stamps must be readable in memory: Spark 4 compresses
		// serialized RDD blocks by default, 3.5 does not.
		"spark.rdd.compress=false",
	}
	if offheap {
		conf = append(conf, "spark.memory.offHeap.enabled=true", "spark.memory.offHeap.size=32m")
	}
	return append(conf, extra...)
}

func jobFlags(offheap bool) []string {
	f := []string{"--parts", "4", "--records", "8", "--record", "131072", "--evict-mb", "48"}
	if offheap {
		f = append(f, "--offheap")
	}
	return f
}

func runLocal(t *testing.T, c localCase) {
	home := testenv.SparkHome(t, c.series)
	rec, srv := startHookServer(t)
	opts := sparkjob.HookOpts(t, srv.Path())
	if c.javaagent {
		opts = sparkjob.JavaagentOpts(t, srv.Path())
	}
	opts += " " + c.gc
	j := sparkjob.Start(t, home, "local[2]", sparkConf(c.offheap,
		"spark.driver.extraJavaOptions="+opts, "spark.driver.memory=700m",
		"spark.ui.port="+strconv.Itoa(freePort(t))), jobFlags(c.offheap)...)

	s := j.Next(t, "cached")
	serLoc := stratav1.MemoryLocation_MEMORY_LOCATION_ON_HEAP
	if c.offheap {
		serLoc = stratav1.MemoryLocation_MEMORY_LOCATION_OFF_HEAP
	}
	checkSession(t, rec, s)
	checkSerialized(t, rec, s, s.Ser, serLoc)
	if s.SerHeap >= 0 { // an off-heap run caches a MEMORY_ONLY_SER RDD too
		checkSerialized(t, rec, s, s.SerHeap, stratav1.MemoryLocation_MEMORY_LOCATION_ON_HEAP)
	}
	checkDeserialized(t, rec, s, s.Deser, s.Records)
	checkColumns(t, rec, s, s.DF, 2, dfColumns, nil, true, "cached")
	checkPages(t, rec, s, c.offheap)

	movesBefore, gcBefore := count(rec.all(), hooksrv.EventMove), rec.walks().gc
	j.Proceed(t)
	j.Next(t, "gc")
	// The GCs' MOVEs: a moved chunk's old copy still holds its bytes, so
	// the checks wait for the CHECKED that follows the latest rescan.
	rescannedAfter(t, rec, gcBefore)
	moves := count(rec.all(), hooksrv.EventMove)
	if moves == movesBefore {
		t.Errorf("no MOVE after the job's full GCs (%d before)", movesBefore)
	}
	t.Logf("%d MOVE frames after the GCs (%d before)", moves, movesBefore)
	// The bytes are at the new addresses.
	checkSerialized(t, rec, s, s.Ser, serLoc)
	if s.SerHeap >= 0 {
		checkSerialized(t, rec, s, s.SerHeap, stratav1.MemoryLocation_MEMORY_LOCATION_ON_HEAP)
	}
	checkDeserialized(t, rec, s, s.Deser, s.Records)

	j.Proceed(t)
	s = j.Next(t, "unpersisted")
	checkGone(t, rec, s, s.RDD, hooksrv.FreeRemoved)

	j.Proceed(t)
	s = j.Next(t, "evicted")
	checkEvicted(t, rec, s, serLoc)

	// The agent stops before the job ends: the job finishes all the same.
	// The frames of its end (Spark clears its MemoryStore: FREEs) find no
	// agent and are not counted as dropped, since a connect would send the
	// registry's state again; nothing is read then, so nothing is lost.
	srv.Close()
	j.Proceed(t)
	counters := sparkjob.HookCounters(t, j.Finish(t))
	t.Logf("hook counters: %v", counters)
	if counters["errors"] != 0 || counters["connects"] != 1 || counters["live"] != 0 || counters["sent"] == 0 || counters["dropped"] != 0 {
		t.Errorf("hook counters %v: want no errors, one connect, nothing live at exit, frames sent, none dropped", counters)
	}
}

func count(evs []hooksrv.Event, k hooksrv.EventKind) int {
	n := 0
	for _, e := range evs {
		if e.Kind == k {
			n++
		}
	}
	return n
}

// checkSession: one session, named after the application, executor "driver".
func checkSession(t *testing.T, rec *recorder, s sparkjob.Step) {
	t.Helper()
	evs := rec.all()
	if len(evs) == 0 || evs[0].Kind != hooksrv.EventSessionStart {
		t.Fatalf("no hook session")
	}
	ss := evs[0].Session
	if ss.AppID != s.App || ss.ExecutorID != "driver" || int(ss.PID) != s.PID || ss.RefSize == 0 {
		t.Errorf("session %+v, want app %s executor driver pid %d", *ss, s.App, s.PID)
	}
}

// partitionOf parses rdd_<rdd>_<partition>.
func partitionOf(t *testing.T, name string) int {
	t.Helper()
	f := strings.Split(name, "_")
	p, err := strconv.Atoi(f[len(f)-1])
	if len(f) != 3 || f[0] != "rdd" || err != nil {
		t.Fatalf("block name %q", name)
	}
	return p
}

// waitChunks waits until every chunk of the named block is registered.
func waitChunks(t *testing.T, rec *recorder, name string) []hooksrv.Event {
	t.Helper()
	deadline := time.Now().Add(settle)
	for {
		ch := rec.blocks(name)
		if len(ch) > 0 && len(ch) == int(ch[0].Block.Chunks) {
			return ch
		}
		if time.Now().After(deadline) {
			t.Fatalf("block %s: %d live ranges registered, want all its chunks (%v)", name, len(ch), ch)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkSerialized: every block Spark lists is registered, one range per
// chunk, the ranges add up to Spark's memory size exactly (a serialized
// block is its ChunkedByteBuffer, whose size Spark reports), and the bytes at
// those addresses are the block's records.
func checkSerialized(t *testing.T, rec *recorder, s sparkjob.Step, rdd int, loc stratav1.MemoryLocation) {
	t.Helper()
	r, ok := storageUntil(t, s, rdd, func(r restRDD, ok bool) bool { return ok && len(r.Partitions) == s.Parts })
	if !ok || len(r.Partitions) != s.Parts {
		t.Fatalf("Spark lists %d cached partitions of RDD %d, want %d", len(r.Partitions), rdd, s.Parts)
	}
	for _, p := range r.Partitions {
		part := partitionOf(t, p.BlockName)
		var err error
		for until := time.Now().Add(agreeWithin); ; { // a GC moves chunks; their MOVE comes after
			ch := waitChunks(t, rec, p.BlockName)
			var sum uint64
			var data []byte
			for i, e := range ch {
				b := e.Block
				if b.Kind != hooksrv.KindRDD || int(b.RDDID) != rdd || int(b.Partition) != part ||
					b.Mode != stratav1.MemoryMode_MEMORY_MODE_STORAGE || b.Location != loc || b.ObjectGraph ||
					int(b.Chunk) != i || b.StageID < 0 || b.TaskAttemptID < 0 {
					t.Fatalf("block %s chunk %d registered as %+v", p.BlockName, i, b)
				}
				sum += e.Length
				var m []byte
				if m, err = readMem(s.PID, e.Vaddr, e.Length); err != nil {
					break
				}
				data = append(data, m...)
			}
			if sum != uint64(p.MemoryUsed) {
				t.Fatalf("block %s: ranges add up to %d bytes, Spark says %d", p.BlockName, sum, p.MemoryUsed)
			}
			if err == nil {
				if err = checkStamps(data, rdd, part, s.Records, s.Record); err == nil {
					break
				}
			}
			if time.Now().After(until) {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if err != nil {
			t.Errorf("block %s: bytes at the reported ranges: %v", p.BlockName, err)
		}
	}
}

// checkDeserialized: every block is registered as the reference array of an
// object graph (records references when records >= 0), and every reference
// in it is set.
func checkDeserialized(t *testing.T, rec *recorder, s sparkjob.Step, rdd int, records int) {
	t.Helper()
	r, ok := storageUntil(t, s, rdd, func(r restRDD, ok bool) bool { return ok && len(r.Partitions) > 0 })
	if !ok || len(r.Partitions) == 0 {
		t.Fatalf("Spark lists no cached partitions of RDD %d", rdd)
	}
	for _, p := range r.Partitions {
		part := partitionOf(t, p.BlockName)
		ch := waitChunks(t, rec, p.BlockName)
		e := ch[0]
		ref := uint64(e.Session.RefSize)
		b := e.Block
		if len(ch) != 1 || !b.ObjectGraph || b.Kind != hooksrv.KindRDD || int(b.RDDID) != rdd || int(b.Partition) != part ||
			b.Location != stratav1.MemoryLocation_MEMORY_LOCATION_ON_HEAP || e.Length%ref != 0 ||
			(records >= 0 && e.Length != uint64(records)*ref) {
			t.Fatalf("deserialized block %s registered as %d ranges, first %+v length %d", p.BlockName, len(ch), b, e.Length)
		}
		var err error
		for try := 0; try < 5; try++ {
			e = waitChunks(t, rec, p.BlockName)[0]
			var m []byte
			if m, err = readMem(s.PID, e.Vaddr, e.Length); err == nil {
				err = checkRefs(m, ref)
			}
			if err == nil {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if err != nil {
			t.Errorf("block %s: %v", p.BlockName, err)
		}
	}
}

// checkPages: the sort allocated Tungsten pages with their task's stage,
// partition and RDD (one of the stage's RDDs in Spark's API), and freed all.
func checkPages(t *testing.T, rec *recorder, s sparkjob.Step, offheap bool) {
	t.Helper()
	loc := stratav1.MemoryLocation_MEMORY_LOCATION_ON_HEAP
	if offheap {
		loc = stratav1.MemoryLocation_MEMORY_LOCATION_OFF_HEAP
	}
	freed := map[uint64]hooksrv.FreeReason{}
	var pages []hooksrv.Event
	for _, e := range rec.all() {
		if e.Block.Kind != hooksrv.KindTungstenPage {
			continue
		}
		switch e.Kind {
		case hooksrv.EventRegister:
			pages = append(pages, e)
		case hooksrv.EventFree:
			freed[e.Block.HookID] = e.FreeReason
		}
	}
	if len(pages) == 0 {
		t.Fatal("no Tungsten page registered by the sort")
	}
	stages := map[[2]int32]restStage{}
	reasons := map[hooksrv.FreeReason]int{}
	for _, e := range pages {
		b := e.Block
		want := fmt.Sprintf("page_%d_", b.TaskAttemptID)
		if b.Mode != stratav1.MemoryMode_MEMORY_MODE_EXECUTION || b.Location != loc || b.StageID < 0 ||
			b.StageAttempt < 0 || b.Partition < 0 || b.RDDID < 0 || b.TaskAttemptID < 0 || !strings.HasPrefix(b.Name, want) {
			t.Errorf("page %+v", b)
			continue
		}
		key := [2]int32{b.StageID, b.StageAttempt}
		st, ok := stages[key]
		if !ok {
			st = stageInfo(t, s, int(b.StageID), int(b.StageAttempt))
			stages[key] = st
		}
		found := false
		for _, id := range st.RDDIDs {
			found = found || id == int(b.RDDID)
		}
		if !found {
			t.Errorf("page %s: RDD %d is not one of stage %d's RDDs %v", b.Name, b.RDDID, b.StageID, st.RDDIDs)
		}
		r, ok := freed[b.HookID]
		if !ok || (r != hooksrv.FreePageFreed && r != hooksrv.FreeTaskEnd) {
			t.Errorf("page %s not freed (reason %v)", b.Name, r)
		}
		reasons[r]++
	}
	t.Logf("%d Tungsten pages in %d stages, freed %v", len(pages), len(stages), reasons)
}

// checkGone: Spark no longer lists the RDD, and every block of it the hook
// registered was freed with reason.
func checkGone(t *testing.T, rec *recorder, s sparkjob.Step, rdd int, reason hooksrv.FreeReason) {
	t.Helper()
	if r, ok := storageUntil(t, s, rdd, func(r restRDD, ok bool) bool { return !ok || len(r.Partitions) == 0 }); ok && len(r.Partitions) > 0 {
		t.Errorf("Spark still lists %d partitions of RDD %d", len(r.Partitions), rdd)
	}
	prefix := fmt.Sprintf("rdd_%d_", rdd)
	_ = testenv.WaitFor("the FREEs of "+prefix+"*", 30*time.Second, nil, func() bool {
		var mine []hooksrv.Event
		for _, e := range rec.all() {
			if strings.HasPrefix(e.Block.Name, prefix) {
				mine = append(mine, e)
			}
		}
		registered := count(mine, hooksrv.EventRegister)
		return registered > 0 && count(mine, hooksrv.EventFree) >= registered
	})
	registered, freed := 0, 0
	for _, e := range rec.all() {
		if !strings.HasPrefix(e.Block.Name, prefix) {
			continue
		}
		switch e.Kind {
		case hooksrv.EventRegister:
			registered++
		case hooksrv.EventFree:
			freed++
			if e.FreeReason != reason {
				t.Errorf("block %s freed as %v, want %v", e.Block.Name, e.FreeReason, reason)
			}
		}
	}
	if registered == 0 || freed != registered {
		t.Errorf("RDD %d: %d ranges registered, %d freed", rdd, registered, freed)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, e := range rec.live {
		if strings.HasPrefix(e.Block.Name, prefix) {
			t.Errorf("block %s still live in the registry", e.Block.Name)
		}
	}
}

// checkEvicted: overfilling storage memory evicted blocks (FREE reason
// evicted) that Spark no longer lists in memory, and what Spark lists of the
// evicting RDD is registered.
func checkEvicted(t *testing.T, rec *recorder, s sparkjob.Step, loc stratav1.MemoryLocation) {
	t.Helper()
	evicted := map[string]bool{}
	_ = testenv.WaitFor("a FREE of an evicted block", 30*time.Second, nil, func() bool {
		for _, e := range rec.all() {
			if e.Kind == hooksrv.EventFree && e.FreeReason == hooksrv.FreeEvicted {
				evicted[e.Block.Name] = true
			}
		}
		return len(evicted) > 0
	})
	if len(evicted) == 0 {
		t.Fatal("no block evicted")
	}
	inMemory := map[string]bool{}
	for _, rdd := range []int{s.RDD} {
		r, _ := storage(t, s, rdd)
		for _, p := range r.Partitions {
			if p.MemoryUsed > 0 {
				inMemory[p.BlockName] = true
				ch := waitChunks(t, rec, p.BlockName)
				var sum uint64
				for _, e := range ch {
					sum += e.Length
				}
				if sum != uint64(p.MemoryUsed) || ch[0].Block.Location != loc {
					t.Errorf("block %s: ranges %d bytes at %v, Spark says %d", p.BlockName, sum, ch[0].Block.Location, p.MemoryUsed)
				}
			}
		}
	}
	for name := range evicted {
		if inMemory[name] || len(rec.blocks(name)) > 0 {
			t.Errorf("evicted block %s is still in memory (Spark %v) or live in the registry", name, inMemory[name])
		}
	}
	t.Logf("%d blocks evicted, %d of the evicting RDD in memory", len(evicted), len(inMemory))
}
