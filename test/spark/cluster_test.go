package spark

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stratatrace/strata/agent/tracer"
	"github.com/stratatrace/strata/test/sparkjob"
	"github.com/stratatrace/strata/test/testenv"
)

// TestHookCluster runs the job on a standalone cluster the test starts
// (master, one worker, an executor launched by Spark with the hook in
// spark.executor.extraJavaOptions) with the real agent and collector, on
// both Spark series, and checks what a user sees in `strata trace`,
// `strata records` and `strata faults`, and the agent's registry and kernel
// maps (/metrics), against Spark's REST API and the executor's memory; it
// also stops the agent during the job and restarts it, and checks that
// `strata hook-opts --ship` refuses the standalone master.
func TestHookCluster(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireJava(t)
	for _, v := range series {
		t.Run("spark"+v, func(t *testing.T) { runCluster(t, v) })
	}
}

// cluster is one run of the job on the standalone cluster.
type cluster struct {
	n   *node
	s   sparkjob.Step // the job's "cached" step
	pid uint32        // the executor's pid, from its first block
	ref uint64        // the executor JVM's reference size, from a deserialized block
}

func runCluster(t *testing.T, v string) {
	home := testenv.SparkHome(t, v)
	n := startNode(t)
	work := filepath.Join(n.dir, "work")
	master := startCluster(t, home, work)

	// Off-heap storage and Tungsten memory, plus an on-heap serialized RDD:
	// a page is registered when allocatePage returns, before the sort writes
	// it, so its first-touch faults land in a registered range (heap memory
	// is already touched). ParallelGC moves every heap block.
	opts := sparkjob.HookOpts(t, n.socket) + " -XX:+UseParallelGC"
	j := sparkjob.Start(t, home, master, sparkConf(true,
		"spark.executor.extraJavaOptions="+opts, "spark.executor.memory=700m", "spark.executor.cores=2",
		"spark.cores.max=2", "spark.driver.memory=512m", "spark.ui.port="+strconv.Itoa(freePort(t))),
		append(jobFlags(true), "--gc-steps", "2")...)
	c := &cluster{n: n, s: j.Next(t, "cached")}
	checkShipRefused(t, master)

	// Every block Spark lists, in strata trace and strata records, exactly.
	c.checkTrace(t)
	c.checkStorage(t, c.cached(), time.Time{})
	c.checkWalked(t, time.Time{})
	t.Logf("executor pid %d, references of %d bytes", c.pid, c.ref)
	c.checkTungsten(t)
	c.checkFaults(t)
	c.checkRegistry(t, "after caching")

	// Full GCs with the agent up: heap blocks moved (MOVE records) and their
	// bytes are at the new addresses.
	moves := len(n.records(t, c.s.App, "--access", "move"))
	gcs := time.Now()
	j.Proceed(t)
	j.Next(t, "gc")
	eventually(t, "MOVE records after the full GCs", 30*time.Second, func() error {
		if m := len(n.records(t, c.s.App, "--access", "move")); m <= moves {
			return fmt.Errorf("%d MOVE records, %d before the GCs", m, moves)
		}
		return nil
	})
	c.checkStorage(t, c.cached(), time.Time{})
	c.checkWalked(t, gcs) // walked again where the GCs moved them
	c.checkRegistry(t, "after the GCs")

	// The agent stops during the next gc step: the job goes on and reads
	// every block of the deserialized RDD; the hook drops those ACCESS
	// frames and counts them (not the state frames it drops, whose state it
	// sends again). Restarted, the agent gets every live block again,
	// at its current address, and hears of the drops.
	n.agent.Stop()
	j.Proceed(t)
	j.Next(t, "gc")
	restart := time.Now()
	n.startAgent(t)
	c.checkStorage(t, c.cached(), restart)
	c.checkWalked(t, restart) // the restarted agent has every walk again
	c.checkRegistry(t, "after the agent restart")
	eventually(t, "the reads' drops reported to the restarted agent", 30*time.Second, func() error {
		if d := n.metric(t, "strata_hook_frames_dropped_by_peer_total"); d < float64(c.s.Parts) {
			return fmt.Errorf("%v drops reported, want at least the %d reads of RDD %d's blocks", d, c.s.Parts, c.s.Deser)
		}
		return nil
	})
	// Those reads are all it lost: one ACCESS per block of the RDD.
	if drops := n.metric(t, "strata_hook_frames_dropped_by_peer_total"); drops != float64(c.s.Parts) {
		t.Errorf("the hook reported %v frames dropped while the agent was down, want the %d reads", drops, c.s.Parts)
	}

	// Unpersist the off-heap RDD: every chunk the restarted agent knows is
	// freed as removed, and leaves the registry and the kernel's maps.
	live, kern := n.metric(t, "strata_live_blocks"), n.metric(t, "strata_faults_blocks")
	j.Proceed(t)
	c.checkRemoved(t, j.Next(t, "unpersisted").RDD, restart, live, kern)

	// Overfill off-heap storage: the victim's blocks are evicted.
	j.Proceed(t)
	c.checkEvicted(t, j.Next(t, "evicted"))
	c.checkRegistry(t, "after the eviction")

	j.Proceed(t)
	j.Finish(t)
	// The executor is gone with the application: nothing of it stays live,
	// in the registry, the kernel or the records.
	eventually(t, "an empty registry after the executor exited", 60*time.Second, func() error {
		l, k := n.metric(t, "strata_live_blocks"), n.metric(t, "strata_faults_blocks")
		left := len(n.records(t, c.s.App).live())
		if l != 0 || k != 0 || left != 0 {
			return fmt.Errorf("%v blocks live in the agent, %v in the kernel, %d in strata records", l, k, left)
		}
		return nil
	})
}

// checkShipRefused: `strata hook-opts --ship` refuses this standalone
// master with the reason (the executor fetches spark.files into its working
// directory only once its JVM runs, after -agentpath's library was looked
// for; docs/deploy.md), while the hook files it would ship are at hand.
func checkShipRefused(t *testing.T, master string) {
	t.Helper()
	hook := filepath.Dir(testenv.Built(t, "jvmhook/strata-hook.jar"))
	cmd := exec.Command(testenv.Built(t, "strata"), "hook-opts", "--ship", "--master", master, "--install-hook", hook)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || stdout.Len() != 0 ||
		!strings.Contains(stderr.String(), "--ship needs --master yarn, not "+master+": only YARN puts shipped files in an executor's working directory before its JVM starts") {
		t.Errorf("strata hook-opts --ship --master %s: %v, stdout %q, stderr %q; want exit 2 and the reason", master, err, stdout.String(), stderr.String())
	}
}

// startCluster starts a standalone master and one worker with the given
// work directory and returns the master's URL.
func startCluster(t *testing.T, home, work string) string {
	t.Helper()
	env := []string{"SPARK_HOME=" + home, "SPARK_LOCAL_IP=127.0.0.1", "SPARK_NO_DAEMONIZE=1"}
	class := filepath.Join(home, "bin", "spark-class")
	mport, mweb := freePort(t), freePort(t)
	master := fmt.Sprintf("spark://127.0.0.1:%d", mport)
	startDaemon(t, "master", env, class, "org.apache.spark.deploy.master.Master",
		"--host", "127.0.0.1", "--port", strconv.Itoa(mport), "--webui-port", strconv.Itoa(mweb))
	waitFor(t, "master", 60*time.Second, func() bool { return testenv.Listening(fmt.Sprintf("127.0.0.1:%d", mport)) })
	startDaemon(t, "worker", env, class, "org.apache.spark.deploy.worker.Worker",
		"--host", "127.0.0.1", "--cores", "2", "--memory", "1g", "--webui-port", strconv.Itoa(freePort(t)),
		"--work-dir", work, master)
	waitFor(t, "a worker registered with the master", 60*time.Second, func() bool {
		var st struct {
			AliveWorkers int `json:"aliveworkers"`
		}
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/json/", mweb))
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return json.NewDecoder(resp.Body).Decode(&st) == nil && st.AliveWorkers == 1
	})
	return master
}

// eventually retries check until it returns nil, and fails the test with
// its last error after timeout (records reach the collector in batches;
// Spark's REST API follows the block manager asynchronously).
func eventually(t *testing.T, what string, timeout time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v (after %v)", what, err, timeout)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// cachedRDD is what a cached RDD must look like in strata records.
type cachedRDD struct {
	id    int
	loc   string // on_heap or off_heap
	graph bool   // deserialized: the block is its array of references
	batch bool   // a cached DataFrame: the block is its columns, each with its buffers
	parts int    // partitions Spark must list; 0: those it lists in memory
	bytes func(b []byte, part int) error
}

// dfColumns are the columns of StrataJob's cached DataFrame.
var dfColumns = []string{"id", "v"}

// cached lists the RDDs the job cached: serialized off and on the heap
// (stamped bytes), deserialized (references) and the DataFrame (its
// columns' buffers).
func (c *cluster) cached() []cachedRDD {
	return []cachedRDD{
		{id: c.s.Deser, loc: "on_heap", graph: true, parts: c.s.Parts, bytes: c.refs}, // first: it tells the reference size
		{id: c.s.DF, loc: "on_heap", batch: true},
		c.stamped(c.s.Ser, "off_heap", c.s.Parts),
		c.stamped(c.s.SerHeap, "on_heap", c.s.Parts),
	}
}

func (c *cluster) stamped(rdd int, loc string, parts int) cachedRDD {
	return cachedRDD{id: rdd, loc: loc, parts: parts, bytes: func(b []byte, part int) error {
		return checkStamps(b, rdd, part, c.s.Records, c.s.Record)
	}}
}

func (c *cluster) refs(b []byte, _ int) error { return checkRefs(b, c.ref) }

// checkTrace: every block Spark lists is in strata trace with its RDD and
// partition, from the executor (the driver runs without the hook).
func (c *cluster) checkTrace(t *testing.T) {
	t.Helper()
	for _, want := range c.cached() {
		r := c.listed(t, want)
		eventually(t, fmt.Sprintf("RDD %d in strata trace", want.id), 30*time.Second, func() error {
			seen := map[string]tracePage{}
			for _, p := range c.n.trace(t, c.s.App, "--rdd", strconv.Itoa(want.id)) {
				if p.Access == "alloc" {
					seen[p.BlockID] = p
				}
			}
			for _, p := range r.Partitions {
				tp, ok := seen[p.BlockName]
				if !ok || int(tp.RDD) != want.id || int(tp.Partition) != partitionOf(t, p.BlockName) || tp.ExecutorID == "driver" {
					return fmt.Errorf("block %s (Spark: %d bytes in memory) in strata trace as %+v (found %v)", p.BlockName, p.MemoryUsed, tp, ok)
				}
			}
			return nil
		})
	}
}

// listed returns Spark's view of a cached RDD once it lists what want says.
func (c *cluster) listed(t *testing.T, want cachedRDD) restRDD {
	t.Helper()
	r, ok := storageUntil(t, c.s, want.id, func(r restRDD, ok bool) bool {
		return ok && len(r.Partitions) > 0 && (want.parts == 0 || len(r.Partitions) == want.parts)
	})
	if !ok || len(r.Partitions) == 0 || (want.parts > 0 && len(r.Partitions) != want.parts) {
		t.Fatalf("Spark lists %d cached partitions of RDD %d, want %d", len(r.Partitions), want.id, want.parts)
	}
	return r
}

// checkStorage: every block Spark lists in memory for each RDD is live in
// strata records, one range per chunk, with its RDD, partition, location and
// the executor's pid; a serialized block's ranges add up to Spark's
// memoryUsed exactly (Spark reports the ChunkedByteBuffer's size, and every
// chunk is reported with its length: no tolerance); a cached DataFrame's
// chunks are its columns, each latest recorded with every buffer of its
// batches (coverage BUFFERS with their count, bytes and extents), their
// bytes adding up to 0.8-1.6 of memoryUsed; and the bytes at the latest
// address of every range, read through /proc/PID/mem, are the block's.
// With since set, every range must have been registered after it (the
// agent restarted then).
func (c *cluster) checkStorage(t *testing.T, rdds []cachedRDD, since time.Time) {
	t.Helper()
	for _, want := range rdds {
		r := c.listed(t, want)
		what := fmt.Sprintf("RDD %d (%s) in strata records and memory", want.id, want.loc)
		if !since.IsZero() {
			what += ", registered again after the agent restart"
		}
		eventually(t, what, 30*time.Second, func() error {
			h := c.n.records(t, c.s.App, "--rdd", strconv.Itoa(want.id))
			again := h.since(since).with("alloc")
			for _, p := range r.Partitions {
				if p.MemoryUsed == 0 {
					continue
				}
				if err := c.checkBlock(t, h.chunks(p.BlockName), again, want, p); err != nil {
					return fmt.Errorf("block %s: %w", p.BlockName, err)
				}
			}
			return nil
		})
	}
}

// checkBlock checks one block's live ranges against Spark and memory.
func (c *cluster) checkBlock(t *testing.T, ch []recordLine, again history, want cachedRDD, p restPartition) error {
	part := partitionOf(t, p.BlockName)
	if len(ch) == 0 || len(ch) != int(ch[0].Chunks) || (want.graph && len(ch) != 1) {
		return fmt.Errorf("%d live ranges, want all its chunks (%+v)", len(ch), ch)
	}
	if c.pid == 0 {
		c.pid = ch[0].PID
	}
	var sum uint64
	var data []byte
	for i, r := range ch {
		if r.Kind != "rdd" || int(r.RDD) != want.id || int(r.Partition) != part || int(r.Chunk) != i || r.Mode != "storage" ||
			r.Location != want.loc || r.ObjectGraph != want.graph || r.ExecutorID == "driver" || r.PID != c.pid {
			return fmt.Errorf("chunk %d recorded as %+v (executor pid %d)", i, r, c.pid)
		}
		registered := false
		for _, a := range again {
			registered = registered || a.key() == r.key()
		}
		if !registered {
			return fmt.Errorf("chunk %d has no ALLOC record since the agent restart", i)
		}
		if want.batch {
			cov := r.Coverage
			if !r.CachedBatch || r.Column == nil || int(*r.Column) != i || r.ColumnName != dfColumns[i] || cov == nil ||
				cov.Resolution != "buffers" || cov.Objects == 0 || uint64(cov.Extents) != cov.Objects || cov.Detail != "" ||
				cov.Bytes < r.Length {
				return fmt.Errorf("column %d recorded as %+v, coverage %+v: want its walk's record, every buffer of the column", i, r, cov)
			}
			sum += cov.Bytes
		} else {
			sum += r.Length
		}
		m, err := readMem(int(r.PID), r.addr(t), r.Length)
		if err != nil {
			return err
		}
		data = append(data, m...)
	}
	if want.graph {
		if want.id == c.s.Deser { // one reference per record
			if ref := sum / uint64(c.s.Records); c.ref == 0 && sum%uint64(c.s.Records) == 0 {
				c.ref = ref
			}
			if sum != uint64(c.s.Records)*c.ref {
				return fmt.Errorf("array of %d bytes, want %d references", sum, c.s.Records)
			}
		}
		if c.ref == 0 {
			return fmt.Errorf("reference size unknown: check RDD %d first", c.s.Deser)
		}
	} else if want.batch {
		// Spark's size of a cached batch is its buffers' and a few hundred
		// bytes of batch objects and statistics.
		if r := float64(sum) / float64(p.MemoryUsed); r < 0.8 || r > 1.6 {
			return fmt.Errorf("column buffers add up to %d bytes, %.2f of Spark's %d", sum, r, p.MemoryUsed)
		}
	} else if sum != uint64(p.MemoryUsed) {
		return fmt.Errorf("ranges add up to %d bytes, Spark says %d", sum, p.MemoryUsed)
	}
	if want.bytes == nil {
		return nil
	}
	if err := want.bytes(data, part); err != nil {
		return fmt.Errorf("bytes at the recorded ranges: %w", err)
	}
	return nil
}

// checkTungsten: the sort's Tungsten pages are in strata records as
// off-heap execution memory with their task's stage, partition and RDD (one
// of the stage's RDDs in Spark's API), and every one was freed when the
// sort or its task ended.
func (c *cluster) checkTungsten(t *testing.T) {
	t.Helper()
	stages := map[[2]int32]restStage{}
	eventually(t, "Tungsten pages allocated and freed in strata records", 30*time.Second, func() error {
		allocs, freed := map[rangeKey]recordLine{}, map[rangeKey]string{}
		for _, r := range c.n.records(t, c.s.App) {
			if r.Kind != "tungsten_page" {
				continue
			}
			switch r.Access {
			case "alloc":
				allocs[r.key()] = r
			case "free":
				freed[r.key()] = r.FreeReason
			}
		}
		if len(allocs) == 0 {
			return fmt.Errorf("no Tungsten page")
		}
		reasons := map[string]int{}
		for k, a := range allocs {
			if a.Mode != "execution" || a.Location != "off_heap" || a.StageID < 0 || a.StageAttempt < 0 || a.Partition < 0 ||
				a.RDD < 0 || a.PID != c.pid || !strings.HasPrefix(a.BlockID, fmt.Sprintf("page_%d_", a.TaskAttemptID)) {
				return fmt.Errorf("page recorded as %+v (executor pid %d)", a, c.pid)
			}
			key := [2]int32{a.StageID, a.StageAttempt}
			st, ok := stages[key]
			if !ok {
				st = stageInfo(t, c.s, int(a.StageID), int(a.StageAttempt))
				stages[key] = st
			}
			found := false
			for _, id := range st.RDDIDs {
				found = found || id == int(a.RDD)
			}
			if !found {
				return fmt.Errorf("page %s: RDD %d is not one of stage %d's RDDs %v", a.BlockID, a.RDD, a.StageID, st.RDDIDs)
			}
			why := freed[k]
			if why != "page_freed" && why != "task_end" {
				return fmt.Errorf("page %s: freed as %q, want page_freed or task_end", a.BlockID, why)
			}
			reasons[why]++
		}
		t.Logf("%d Tungsten pages in %d stages, freed %v", len(allocs), len(stages), reasons)
		return nil
	})
}

// checkFaults: strata faults attributes page faults to the executor's
// blocks, each a block strata records knows for that pid, and no more faults
// than the block could take: each 4 KiB page of a registered range faults
// at most twice (a read mapping the zero page, then a write).
func (c *cluster) checkFaults(t *testing.T) {
	t.Helper()
	type row struct {
		BlockID    string `json:"block_id"`
		ExecutorID string `json:"executor_id"`
		PID        uint32 `json:"pid"`
		Read       uint64 `json:"read"`
		Write      uint64 `json:"write"`
	}
	eventually(t, "faults attributed to the executor's blocks", 30*time.Second, func() error {
		pages := map[string]uint64{} // pages registered per block name
		for _, r := range c.n.records(t, c.s.App, "--access", "alloc") {
			if r.PID == c.pid {
				pages[r.BlockID] += (r.Length + 4095) / 4096
			}
		}
		var rows []row
		dec := json.NewDecoder(strings.NewReader(c.n.strata(t, "faults", "--app", c.s.App, "-o", "json")))
		for dec.More() {
			var r row
			if err := dec.Decode(&r); err != nil {
				return err
			}
			if r.Read+r.Write == 0 {
				continue
			}
			if r.PID != c.pid || r.ExecutorID == "driver" || pages[r.BlockID] == 0 {
				return fmt.Errorf("faults of %+v: not a block of the executor (pid %d)", r, c.pid)
			}
			if r.Read+r.Write > 2*pages[r.BlockID] {
				return fmt.Errorf("block %s: %d faults in %d registered pages", r.BlockID, r.Read+r.Write, pages[r.BlockID])
			}
			rows = append(rows, r)
		}
		if len(rows) == 0 {
			return fmt.Errorf("no faults attributed")
		}
		t.Logf("%d blocks with faults, e.g. %+v", len(rows), rows[0])
		return nil
	})
}

// checkRegistry: the agent's registry (strata_live_blocks) holds exactly
// the ranges strata records shows live, and the kernel's maps
// (strata_faults_blocks) hold the same number; and the kernel took every
// MOVE of a heap block (a MOVE onto a range another block still held
// would leave the block at its old range in the kernel: the agent logs it).
func (c *cluster) checkRegistry(t *testing.T, when string) {
	t.Helper()
	if l := c.n.agent.Output(1 << 30); strings.Contains(l, tracer.ErrOverlap.Error()) {
		t.Errorf("%s: the agent's kernel index refused a move:\n%s", when, sparkjob.Tail(l, 3000))
	}
	eventually(t, "registry, kernel maps and strata records agree "+when, 30*time.Second, func() error {
		live := len(c.n.records(t, c.s.App).live())
		l, k := c.n.metric(t, "strata_live_blocks"), c.n.metric(t, "strata_faults_blocks")
		if l != float64(live) || k != l {
			return fmt.Errorf("agent: %v live blocks, kernel: %v, strata records: %d live; the kernel refused %v registrations or moves (strata_kernel_mirror_errors_total, reasons in the agent's log)",
				l, k, live, c.n.metric(t, "strata_kernel_mirror_errors_total"))
		}
		return nil
	})
}

// checkRemoved: Spark no longer lists the unpersisted RDD; every range of
// it the restarted agent registered has a FREE record with reason removed;
// the registry and the kernel's maps lost exactly those ranges.
func (c *cluster) checkRemoved(t *testing.T, rdd int, restart time.Time, live, kern float64) {
	t.Helper()
	if r, ok := storageUntil(t, c.s, rdd, func(r restRDD, ok bool) bool { return !ok || len(r.Partitions) == 0 }); ok && len(r.Partitions) > 0 {
		t.Errorf("Spark still lists %d partitions of RDD %d", len(r.Partitions), rdd)
	}
	eventually(t, fmt.Sprintf("RDD %d freed as removed", rdd), 30*time.Second, func() error {
		h := c.n.records(t, c.s.App, "--rdd", strconv.Itoa(rdd)).since(restart)
		reg := h.with("alloc")
		why := map[rangeKey]string{}
		for _, r := range h.with("free") {
			why[r.key()] = r.FreeReason
		}
		if b := reg.blocks(); len(b) != c.s.Parts {
			return fmt.Errorf("%d blocks registered after the restart, want %d", len(b), c.s.Parts)
		}
		for _, r := range reg {
			if why[r.key()] != "removed" {
				return fmt.Errorf("block %s chunk %d: freed as %q, want removed", r.BlockID, r.Chunk, why[r.key()])
			}
		}
		if l, k := c.n.metric(t, "strata_live_blocks"), c.n.metric(t, "strata_faults_blocks"); l != live-float64(len(reg)) || k != kern-float64(len(reg)) {
			return fmt.Errorf("%d ranges freed: %v live blocks in the agent (%v before), %v in the kernel (%v before)", len(reg), l, live, k, kern)
		}
		return nil
	})
}

// checkEvicted: the victim's blocks were evicted (FREE records with reason
// evicted for every chunk), Spark no longer lists them in memory, and what
// it lists of the evicting RDD is in strata records exactly.
func (c *cluster) checkEvicted(t *testing.T, e sparkjob.Step) {
	t.Helper()
	var evicted map[string]bool
	eventually(t, "evicted blocks in strata records", 30*time.Second, func() error {
		h := c.n.records(t, c.s.App)
		evicted = map[string]bool{}
		for _, r := range h.with("free") {
			if r.FreeReason == "evicted" {
				if int(r.RDD) != e.Victim {
					return fmt.Errorf("block %s of RDD %d evicted, want blocks of the victim RDD %d", r.BlockID, r.RDD, e.Victim)
				}
				evicted[r.BlockID] = true
			}
		}
		if len(evicted) == 0 {
			return fmt.Errorf("no block evicted")
		}
		for name := range evicted {
			if ch := h.chunks(name); len(ch) > 0 {
				return fmt.Errorf("evicted block %s: %d ranges still live", name, len(ch))
			}
		}
		return nil
	})
	r, _ := storage(t, c.s, e.Victim)
	for _, p := range r.Partitions {
		if evicted[p.BlockName] && p.MemoryUsed > 0 {
			t.Errorf("evicted block %s: Spark lists %d bytes in memory", p.BlockName, p.MemoryUsed)
		}
	}
	c.checkStorage(t, []cachedRDD{c.stamped(e.RDD, "off_heap", 0)}, time.Time{})
	t.Logf("%d blocks of RDD %d evicted", len(evicted), e.Victim)
}
