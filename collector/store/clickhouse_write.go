package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/stratatrace/strata/collector/store/ddl"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// batchKey identifies a batch: (node_name, boot_id, seq) is unique.
type batchKey struct {
	node, boot string
	seq        uint64
}

// chEntry is one batch encoded for a group commit, and its outcome.
type chEntry struct {
	key      batchKey
	uid      uint64 // this write attempt; see visibleSQL
	received uint32 // the collector's time of receipt, seconds
	records  uint32
	apps     []string
	node     nodeInfo // zero: the batch carried none
	// rows are RowBinary rows for records, runs, workloads,
	// process_memory and heat.
	rows [5][]byte
	size int64

	res  AppendResult
	err  error
	done chan struct{}
}

// Tables written per entry, in the order of chEntry.rows.
var entryTables = [5]string{"records", "runs", "workloads", "process_memory", "heat"}

// Workload hardware counters present, as bits of workloads.hw_mask.
const (
	hwCycles = 1 << iota
	hwInstructions
	hwDTLB
	hwWalkLoad
	hwWalkStore
	hwWalkRDD
)

// encodeBatch turns b into the rows of its tables. It runs on the
// caller's goroutine, so agents' batches are encoded in parallel and the
// committer only concatenates them.
func encodeBatch(b *stratav1.Batch, uid uint64, received uint32) *chEntry {
	e := &chEntry{key: batchKey{b.GetNodeName(), b.GetBootId(), b.GetSeq()}, uid: uid, received: received,
		records: uint32(len(b.GetRecords())), done: make(chan struct{})}
	ni := b.GetNode()
	e.node = nodeInfo{ni.GetNumaNodes(), ni.GetPageSize(), ni.GetMemTotalBytes()}
	apps := map[string]bool{}
	var rec, run, wl, mem, ht, prefix, runPrefix rowWriter
	for i, r := range b.GetRecords() {
		blk := r.GetBlock()
		f := r.GetFaults()
		apps[blk.GetAppId()] = true
		// recordCols, written once per record and copied into its rows.
		prefix.b = prefix.b[:0]
		p := &prefix
		p.i64(r.GetTimeUnixNano())
		p.i8(int8(r.GetAccess()))
		p.u32(r.GetPid())
		p.str(blk.GetAppId())
		p.str(blk.GetExecutorId())
		p.i32(blk.GetRddId())
		p.i32(blk.GetPartition())
		p.str(blk.GetBlockId())
		p.u64(blk.GetHookBlockId())
		p.i8(int8(blk.GetMode()))
		p.i8(int8(blk.GetLocation()))
		p.i8(int8(blk.GetKind()))
		p.boolean(blk.GetObjectGraph())
		p.u32(blk.GetChunk())
		p.u32(blk.GetChunks())
		p.i32(blk.GetStageId())
		p.i32(blk.GetStageAttempt())
		p.i64(blk.GetTaskAttemptId())
		p.u32(r.GetPageSize())
		p.i32(r.GetCpuNumaNode())
		p.boolean(f != nil)
		p.i8(int8(r.GetFaultKind()))

		runPrefix.b = runPrefix.b[:0]
		runPrefix.u32(received)
		runPrefix.u64(uid)
		runPrefix.str(e.key.node)
		runPrefix.u32(uint32(i))
		runPrefix.b = append(runPrefix.b, prefix.b...)
		var pages uint64
		for _, pr := range r.GetRuns() {
			pages += uint64(pr.GetCount())
			run.b = append(run.b, runPrefix.b...)
			run.u64(pr.GetVaddr())
			run.u32(pr.GetCount())
			run.u32(pr.GetState())
			run.u64(pr.GetPfn())
			run.u64(pr.GetKpageflags())
			run.u32(pr.GetFolioPages())
			run.u64(pr.GetKpagecount())
			run.i32(pr.GetNumaNode())
			run.u32(pr.GetSwapType())
			run.u64(pr.GetSwapOffset())
			run.bytes(encodeDeltas(pr.GetPfnDeltas()))
		}
		rec.batch(received, uid, e.key)
		rec.u32(uint32(i))
		rec.b = append(rec.b, prefix.b...)
		rec.u32(r.GetTid())
		rec.u64(r.GetVaddr())
		rec.u64(r.GetLength())
		rec.u32(uint32(len(r.GetRuns())))
		rec.u64(pages)
		rec.u64(f.GetRead())
		rec.u64(f.GetWrite())
		rec.u64(f.GetExec())
		rec.u64(f.GetMajor())
		rec.u64(f.GetUnclassified())
		rec.i8(int8(r.GetFreeReason()))
		rec.str(r.GetResolveError())
		rec.coverage(r)
	}
	for _, w := range b.GetWorkloads() {
		apps[w.GetAppId()] = true
		wl.batch(received, uid, e.key)
		wl.str(w.GetAppId())
		wl.str(w.GetExecutorId())
		wl.u32(w.GetPid())
		wl.i64(w.GetStartUnixNano())
		wl.i64(w.GetEndUnixNano())
		wl.u64(w.GetTaskClockNs())
		wl.u64(w.GetContextSwitches())
		wl.u64(w.GetCpuMigrations())
		wl.u64(w.GetMinorFaults())
		wl.u64(w.GetMajorFaults())
		var mask uint8
		for i, v := range []*uint64{w.Cycles, w.Instructions, w.DtlbMisses, w.WalkCyclesLoad, w.WalkCyclesStore, w.WalkCyclesRdd} {
			if v != nil {
				mask |= 1 << i
				wl.u64(*v)
			} else {
				wl.u64(0)
			}
		}
		wl.u8(mask)
		wl.str(w.GetPmuStatus())
	}
	for _, m := range b.GetProcesses() {
		apps[m.GetAppId()] = true
		mem.batch(received, uid, e.key)
		mem.str(m.GetAppId())
		mem.str(m.GetExecutorId())
		mem.u32(m.GetPid())
		mem.i64(m.GetTimeUnixNano())
		mem.u64(m.GetRssBytes())
		mem.u64(m.GetRssAnonBytes())
		mem.u64(m.GetRssFileBytes())
		mem.u64(m.GetRssShmemBytes())
		mem.u64(m.GetHwmBytes())
	}
	for _, h := range b.GetHeat() {
		apps[h.GetAppId()] = true
		v := heatValuesOf(h)
		ht.batch(received, uid, e.key)
		ht.str(h.GetAppId())
		ht.str(h.GetExecutorId())
		ht.u32(h.GetPid())
		ht.i32(h.GetRddId())
		ht.i32(h.GetPartition())
		ht.str(h.GetBlockId())
		ht.u64(h.GetHookBlockId())
		ht.i64(h.GetTimeUnixNano())
		ht.i64(h.GetIntervalNs())
		ht.i64(h.GetSampleIntervalNs())
		ht.u64(h.GetResolvedBytes())
		ht.u64(v.monitored)
		ht.u64(h.GetCoveredBytes())
		ht.f64(v.rate)
		ht.u64(h.GetColdBytes())
		ht.f64(v.coldAge)
		ht.f64(v.coldMinAge)
		ht.u8(v.mask)
		ht.i8(int8(h.GetSourceKind()))
		ht.boolean(h.GetPartial())
		ht.str(h.GetSource())
	}
	e.rows = [5][]byte{rec.b, run.b, wl.b, mem.b, ht.b}
	for a := range apps {
		e.apps = append(e.apps, a)
	}
	e.size = int64(len(rec.b) + len(run.b) + len(wl.b) + len(mem.b) + len(ht.b) + 256)
	return e
}

// Append stores b through the next group commit and returns once that
// commit is over: the batch's rows, then its commit rows (batch_apps),
// then its key (batches). A batch whose key is stored is a Duplicate and
// is not written. If ctx ends first the caller stops waiting, but the
// commit goes on; a replay of the batch learns its outcome.
func (s *ClickHouse) Append(ctx context.Context, b *stratav1.Batch) (AppendResult, error) {
	if err := ValidateBatch(b); err != nil {
		return AppendResult{}, err
	}
	res, err := s.appendEntry(ctx, encodeBatch(b, randomUint64(), uint32(s.now().Unix())))
	if err != nil {
		return AppendResult{}, fmt.Errorf("append batch %s/%d: %w", b.GetNodeName(), b.GetSeq(), err)
	}
	return res, nil
}

func (s *ClickHouse) appendEntry(ctx context.Context, e *chEntry) (AppendResult, error) {
	if s.closed() {
		return AppendResult{}, ErrClosed
	}
	c := s.commit
	if err := c.budget.acquire(ctx, e.size, s.closing); err != nil {
		return AppendResult{}, err
	}
	select {
	case c.in <- e:
	case <-s.closing:
		c.budget.release(e.size)
		return AppendResult{}, ErrClosed
	case <-ctx.Done():
		c.budget.release(e.size)
		return AppendResult{}, ctx.Err()
	}
	select {
	case <-e.done:
		return e.res, e.err
	case <-ctx.Done():
		return AppendResult{}, ctx.Err()
	}
}

// committer is the one goroutine that writes batches: it gathers the
// entries that arrive within FlushInterval of the previous commit (or
// until half the byte budget is pending) and writes them together.
type committer struct {
	s        *ClickHouse
	in       chan *chEntry
	budget   *byteBudget
	interval time.Duration
	// maxGroup: a group this large is written without waiting out the
	// interval.
	maxGroup int64
	quit     chan struct{}
	done     chan struct{}
	// nodes is the NodeInfo last committed per machine, so a batch
	// repeating it writes no row; only the committer touches it.
	nodes map[nodeKey]nodeInfo
	// hook, set only by tests, runs before each step of a commit; its
	// error fails the commit at that step.
	hookMu sync.Mutex
	hook   func(step string) error
}

// CommitSteps are the steps of a ClickHouse group commit, in order.
var CommitSteps = []string{"lookup", "rows", "nodes", "commit", "key"}

// writeTimeout bounds one group commit's requests to the server.
const writeTimeout = 5 * time.Minute

func newCommitter(s *ClickHouse) *committer {
	c := &committer{s: s, in: make(chan *chEntry), budget: newByteBudget(s.opts.MaxPendingBytes),
		interval: s.opts.FlushInterval, maxGroup: max(s.opts.MaxPendingBytes/2, 1),
		quit: make(chan struct{}), done: make(chan struct{}), nodes: map[nodeKey]nodeInfo{}}
	go c.run()
	return c
}

func (c *committer) stop() error {
	close(c.quit)
	<-c.done
	return nil
}

func (c *committer) run() {
	defer close(c.done)
	var last time.Time
	for {
		var group []*chEntry
		var size int64
		select {
		case e := <-c.in:
			group, size = append(group, e), e.size
		case <-c.quit:
			return
		}
		timer := time.NewTimer(time.Until(last.Add(c.interval)))
	gather:
		for size < c.maxGroup {
			select {
			case e := <-c.in:
				group, size = append(group, e), size+e.size
			case <-timer.C:
				break gather
			case <-c.quit:
				break gather
			}
		}
		timer.Stop()
		last = time.Now()
		c.write(group)
		for _, e := range group {
			c.budget.release(e.size)
			close(e.done)
		}
	}
}

func (c *committer) step(name string) error {
	c.hookMu.Lock()
	defer c.hookMu.Unlock()
	if c.hook == nil {
		return nil
	}
	return c.hook(name)
}

// write commits a group and sets every entry's outcome.
func (c *committer) write(group []*chEntry) {
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	// A key twice in one group (a replay racing its original) is written
	// once; the later entries are its duplicates.
	first := map[batchKey]*chEntry{}
	var fresh []*chEntry
	for _, e := range group {
		if f, ok := first[e.key]; ok {
			e.res = AppendResult{Duplicate: true, Records: f.records}
			continue
		}
		first[e.key] = e
		fresh = append(fresh, e)
	}
	stored, err := c.lookup(ctx, fresh)
	if err != nil {
		c.fail(group, fmt.Errorf("look up batches: %w", err))
		return
	}
	var write []*chEntry
	for _, e := range fresh {
		if n, ok := stored[e.key]; ok {
			e.res = AppendResult{Duplicate: true, Records: n}
			continue
		}
		write = append(write, e)
	}
	if len(write) > 0 {
		if err := c.writeRows(ctx, write); err != nil {
			c.fail(group, err)
			return
		}
	}
	for _, e := range write {
		e.res = AppendResult{Records: e.records}
	}
	for range group {
		c.s.onWrite(nil)
	}
}

// fail gives every entry of the group err: nothing of the group is
// visible (the commit rows were not all written) or, if only the keys
// failed, a replay stores the batch again and reads still see it once.
func (c *committer) fail(group []*chEntry, err error) {
	for _, e := range group {
		e.res, e.err = AppendResult{}, err
		c.s.onWrite(err)
	}
}

// lookup returns the stored record counts of the entries' keys that are
// stored.
func (c *committer) lookup(ctx context.Context, es []*chEntry) (map[batchKey]uint32, error) {
	if err := c.step("lookup"); err != nil {
		return nil, err
	}
	out := map[batchKey]uint32{}
	const chunk = 500 // keys per query, well inside max_query_size
	for i := 0; i < len(es); i += chunk {
		part := es[i:min(i+chunk, len(es))]
		var in []byte
		for j, e := range part {
			if j > 0 {
				in = append(in, ", "...)
			}
			in = fmt.Appendf(in, "(%s, %s, %d)", quote(e.key.node), quote(e.key.boot), e.key.seq)
		}
		q := "SELECT " + rowSelect + ", node_name, boot_id, seq, any(records) FROM batches WHERE (node_name, boot_id, seq) IN (" +
			string(in) + ") GROUP BY node_name, boot_id, seq"
		err := c.s.c.query(ctx, q, func(r *rowReader) {
			k := batchKey{r.str(), r.str(), r.u64()}
			out[k] = r.u32()
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// writeRows writes the entries' rows (the five tables at once), the
// machines' NodeInfo that changed, the commit rows, and the keys.
func (c *committer) writeRows(ctx context.Context, es []*chEntry) error {
	if err := c.step("rows"); err != nil {
		return err
	}
	errs := make([]error, len(entryTables))
	var wg sync.WaitGroup
	for t, table := range entryTables {
		parts := make([][]byte, 0, len(es))
		for _, e := range es {
			parts = append(parts, e.rows[t])
		}
		if total := sumLen(parts); total == 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[t] = c.s.c.insert(ctx, table, ddl.TableByName(table).InsertCols(), joinBytes(parts))
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}

	if err := c.step("nodes"); err != nil {
		return err
	}
	changed := map[nodeKey]nodeInfo{}
	var nodes rowWriter
	now := time.Now().UnixNano()
	for _, e := range es {
		k := nodeKey{e.key.node, e.key.boot}
		if e.node == (nodeInfo{}) || c.nodes[k] == e.node || changed[k] == e.node {
			continue
		}
		changed[k] = e.node
		nodes.u32(e.received)
		nodes.str(k.name)
		nodes.str(k.boot)
		nodes.u32(e.node.numaNodes)
		nodes.u32(e.node.pageSize)
		nodes.u64(e.node.memTotal)
		nodes.i64(now)
	}
	if len(nodes.b) > 0 {
		if err := c.s.c.insert(ctx, "nodes", ddl.TableByName("nodes").InsertCols(), joinBytes([][]byte{nodes.b})); err != nil {
			return fmt.Errorf("store node info: %w", err)
		}
	}

	if err := c.step("commit"); err != nil {
		return err
	}
	var apps, keys rowWriter
	for _, e := range es {
		for _, a := range e.apps {
			apps.u32(e.received)
			apps.str(a)
			apps.str(e.key.node)
			apps.str(e.key.boot)
			apps.u64(e.key.seq)
			apps.u64(e.uid)
		}
		keys.u32(e.received)
		keys.str(e.key.node)
		keys.str(e.key.boot)
		keys.u64(e.key.seq)
		keys.u64(e.uid)
		keys.u32(e.records)
	}
	if len(apps.b) > 0 {
		if err := c.s.c.insert(ctx, "batch_apps", ddl.TableByName("batch_apps").InsertCols(), joinBytes([][]byte{apps.b})); err != nil {
			return fmt.Errorf("commit batches: %w", err)
		}
	}
	for k, n := range changed {
		c.nodes[k] = n
	}
	if err := c.step("key"); err != nil {
		return err
	}
	if err := c.s.c.insert(ctx, "batches", ddl.TableByName("batches").InsertCols(), joinBytes([][]byte{keys.b})); err != nil {
		return fmt.Errorf("insert batch keys: %w", err)
	}
	return nil
}

func sumLen(parts [][]byte) int {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	return n
}

// byteBudget bounds the bytes of entries pending or being written.
type byteBudget struct {
	mu    sync.Mutex
	max   int64
	avail int64
	freed chan struct{} // closed and replaced at every release
}

func newByteBudget(n int64) *byteBudget {
	return &byteBudget{max: n, avail: n, freed: make(chan struct{})}
}

// acquire takes n bytes, waiting until they are free; an entry larger
// than the whole budget waits until nothing else is pending.
func (b *byteBudget) acquire(ctx context.Context, n int64, closing <-chan struct{}) error {
	for {
		b.mu.Lock()
		if b.avail >= n || b.avail == b.max {
			b.avail -= n
			b.mu.Unlock()
			return nil
		}
		freed := b.freed
		b.mu.Unlock()
		select {
		case <-freed:
		case <-closing:
			return ErrClosed
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (b *byteBudget) release(n int64) {
	b.mu.Lock()
	b.avail += n
	close(b.freed)
	b.freed = make(chan struct{})
	b.mu.Unlock()
}

// batch writes the columns that name a row's batch, first in the records,
// workloads and process memory tables: when it was received, the agent's
// uid, and the node, boot and sequence the agent gave it.
func (w *rowWriter) batch(received uint32, uid uint64, k batchKey) {
	w.u32(received)
	w.u64(uid)
	w.str(k.node)
	w.str(k.boot)
	w.u64(k.seq)
}
