package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/stratatrace/strata/collector/answer"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// What Strata resolved of an RDD's blocks against what Spark accounts for
// them (RddReport's spark_bytes, resolved_bytes, parts; the UI's Blocks):
// each buffer of the cached blocks as last resolved while live
// (lastBuffer, report.go's lastBuffers), summed here.

// lastBuffer is one buffer of a cached block as last resolved while it
// was live (lastRecsWhere): its latest records that hold (holdsSQL), taken
// together. An agent splits a
// record too large for one batch into pieces over sub-ranges, each
// carrying the record's whole coverage and Spark size: those are read
// once (max), lengths and pages are summed.
type lastBuffer struct {
	rdd, partition int32
	exec           string
	pid            uint32
	block          string
	chunk          uint32
	hook           uint64
	time           int64
	chunks         uint32
	resolution     int8
	bytes, objects uint64
	sharedObjects  uint64
	sharedBytes    uint64
	opaque         uint64
	detail         string
	length, pages  uint64
	sparkBytes     uint64
	cachedBatch    bool
	column         int32
	columnName     string
}

// lastBufferCols are the aggregates lastBuffers selects after a buffer's
// key (rdd_id, partition_id, executor_id, pid, block_id, chunk,
// hook_block_id), in read's order.
const lastBufferCols = `max(time_ns), max(chunks), max(resolution), max(cov_bytes), max(cov_objects),
	max(cov_shared_objects), max(cov_shared_bytes), max(cov_opaque_objects), max(cov_detail), sum(length), sum(pages),
	max(spark_bytes), max(cached_batch), max(column_index), max(column_name)`

// read reads a lastBuffer, in the order selected.
func (b *lastBuffer) read(r row) {
	b.rdd, b.partition, b.exec, b.pid, b.block, b.chunk, b.hook = r.i32(), r.i32(), r.str(), r.u32(), r.str(), r.u32(), r.u64()
	b.time, b.chunks, b.resolution = r.i64(), r.u32(), r.i8()
	b.bytes, b.objects, b.sharedObjects, b.sharedBytes, b.opaque = r.u64(), r.u64(), r.u64(), r.u64(), r.u64()
	b.detail, b.length, b.pages, b.sparkBytes = r.str(), r.u64(), r.u64(), r.u64()
	b.cachedBatch, b.column, b.columnName = r.boolean(), r.i32(), r.str()
}

// dataBytes is what the buffer holds of its block's data: its coverage's
// bytes, or the range's length when its records carry no coverage.
func (b *lastBuffer) dataBytes() uint64 {
	if b.resolution == int8(stratav1.Resolution_RESOLUTION_UNSPECIFIED) {
		return b.length
	}
	return b.bytes
}

// blockKey names a Spark block as RDDs counts them: per executor.
type blockKey struct{ exec, block string }

// coverageSum sums buffers of one RDD or one block.
type coverageSum struct {
	parts  map[stratav1.Resolution]*stratav1.ResolvedPart
	blocks map[stratav1.Resolution]map[blockKey]bool
	detail map[stratav1.Resolution]map[string]bool
	sizes  map[blockKey]uint64 // Spark's size of each block, 0 unknown
}

func newCoverageSum() *coverageSum {
	return &coverageSum{parts: map[stratav1.Resolution]*stratav1.ResolvedPart{},
		blocks: map[stratav1.Resolution]map[blockKey]bool{}, detail: map[stratav1.Resolution]map[string]bool{},
		sizes: map[blockKey]uint64{}}
}

func (c *coverageSum) add(b *lastBuffer) {
	res := stratav1.Resolution(b.resolution)
	p := c.parts[res]
	if p == nil {
		p = &stratav1.ResolvedPart{Resolution: res}
		c.parts[res] = p
		c.blocks[res], c.detail[res] = map[blockKey]bool{}, map[string]bool{}
	}
	k := blockKey{b.exec, b.block}
	p.Buffers++
	p.Bytes += b.dataBytes()
	p.Objects += b.objects
	p.SharedObjects += b.sharedObjects
	p.SharedBytes += b.sharedBytes
	p.OpaqueObjects += b.opaque
	c.blocks[res][k] = true
	if b.detail != "" {
		c.detail[res][b.detail] = true
	}
	c.sizes[k] = max(c.sizes[k], b.sparkBytes)
}

// resolvedTotals is what a coverageSum says in RddReport's terms.
type resolvedTotals struct {
	bytes, sparkBytes, sized, resolved, shared uint64
	share                                      *float64
	parts                                      []*stratav1.ResolvedPart
}

func (c *coverageSum) totals() resolvedTotals {
	var t resolvedTotals
	for res, p := range c.parts {
		p.Blocks = uint64(len(c.blocks[res]))
		for d := range c.detail[res] {
			p.Details = append(p.Details, d)
		}
		slices.Sort(p.Details)
		t.bytes += p.Bytes
		t.shared += p.SharedBytes
		if isResolved(res) {
			t.resolved += p.Bytes
		}
		t.parts = append(t.parts, p)
	}
	slices.SortFunc(t.parts, func(a, b *stratav1.ResolvedPart) int { return cmp.Compare(a.Resolution, b.Resolution) })
	for _, n := range c.sizes {
		t.sparkBytes += n
		if n > 0 {
			t.sized++
		}
	}
	if t.sparkBytes > 0 && t.sized == uint64(len(c.sizes)) {
		v := float64(t.resolved) / float64(t.sparkBytes)
		t.share = &v
	}
	return t
}

// setResolved sets each RDD's bytes and what they hold from its buffers
// as last resolved (RddReport's fields 4 and 19-24).
func setResolved(byRDD map[int32]*stratav1.RddReport, bufs []lastBuffer) {
	sums := map[int32]*coverageSum{}
	for i := range bufs {
		b := &bufs[i]
		if byRDD[b.rdd] == nil {
			continue
		}
		c := sums[b.rdd]
		if c == nil {
			c = newCoverageSum()
			sums[b.rdd] = c
		}
		c.add(b)
	}
	for rdd, c := range sums {
		x, t := byRDD[rdd], c.totals()
		x.Bytes, x.SparkBytes, x.SizedBlocks = t.bytes, t.sparkBytes, t.sized
		x.ResolvedBytes, x.SharedBytes, x.ResolvedShare, x.Parts = t.resolved, t.shared, t.share, t.parts
	}
}

// blocksOf groups buffers into blocks, in lastBuffers' order (partition,
// executor, block).
func blocksOf(bufs []lastBuffer) []answer.BlockCoverage {
	var out []answer.BlockCoverage
	sums := map[blockKey]*coverageSum{}
	index := map[blockKey]int{}
	for i := range bufs {
		b := &bufs[i]
		k := blockKey{b.exec, b.block}
		j, ok := index[k]
		if !ok {
			j = len(out)
			index[k] = j
			out = append(out, answer.BlockCoverage{ExecutorID: b.exec, BlockID: b.block, Partition: b.partition})
			sums[k] = newCoverageSum()
		}
		sums[k].add(b)
		buf := answer.BufferCoverage{Chunk: b.chunk, Chunks: b.chunks, PID: b.pid, TimeNs: b.time, CachedBatch: b.cachedBatch,
			ColumnName: b.columnName, Length: b.length, Pages: b.pages}
		if b.column >= 0 {
			col := b.column
			buf.Column = &col
		}
		if b.resolution != 0 || b.bytes != 0 || b.detail != "" {
			buf.Coverage = &stratav1.Coverage{Resolution: stratav1.Resolution(b.resolution), Bytes: b.bytes, Objects: b.objects,
				SharedObjects: b.sharedObjects, SharedBytes: b.sharedBytes, OpaqueObjects: b.opaque, Detail: b.detail}
		}
		out[j].Buffers = append(out[j].Buffers, buf)
	}
	for k, j := range index {
		t := sums[k].totals()
		o := &out[j]
		o.SparkBytes, o.Bytes, o.ResolvedBytes, o.SharedBytes, o.ResolvedShare, o.Parts =
			t.sparkBytes, t.bytes, t.resolved, t.shared, t.share, t.parts
		slices.SortFunc(o.Buffers, func(a, b answer.BufferCoverage) int {
			return cmp.Or(cmp.Compare(a.Chunk, b.Chunk), cmp.Compare(a.PID, b.PID))
		})
	}
	return out
}

// Blocks returns the Spark blocks of one of an app's RDDs and what Strata
// resolved of each; see BlockCoverage.
func (q *querier) Blocks(ctx context.Context, appID string, rdd int32) ([]answer.BlockCoverage, error) {
	if err := q.check(appID); err != nil {
		return nil, err
	}
	bufs, err := q.lastBuffers(ctx, appID, &rdd, 0)
	if err != nil {
		return nil, err
	}
	return blocksOf(bufs), nil
}

// BlocksAt returns the Spark blocks of one of an app's RDDs live at a
// moment (unix nanoseconds) and what Strata resolved of each then.
func (q *querier) BlocksAt(ctx context.Context, appID string, rdd int32, at int64) ([]answer.BlockCoverage, error) {
	if err := q.check(appID); err != nil {
		return nil, err
	}
	if at <= 0 {
		return nil, fmt.Errorf("blocks of %s at %d: %w: a moment is after 1970", appID, at, ErrInvalidQuery)
	}
	bufs, err := q.lastBuffers(ctx, appID, &rdd, at)
	if err != nil {
		return nil, err
	}
	return blocksOf(bufs), nil
}
