package answer

import stratav1 "github.com/stratatrace/strata/proto/strata/v1"

// BlockCoverage is one Spark block of an RDD (an executor's
// rdd_<id>_<partition>) and what Strata resolved of it: its buffers each
// as last resolved while it was live, as the RDD's report counts them.
type BlockCoverage struct {
	ExecutorID string
	BlockID    string
	Partition  int32
	// SparkBytes is Spark's size of the block, 0 when its records did not
	// say it.
	SparkBytes uint64
	// Bytes, ResolvedBytes, SharedBytes, ResolvedShare and Parts mean
	// what RddReport's fields of those names mean, for this block.
	Bytes, ResolvedBytes, SharedBytes uint64
	ResolvedShare                     *float64
	Parts                             []*stratav1.ResolvedPart
	Buffers                           []BufferCoverage // by chunk
}

// BufferCoverage is one buffer of a block as last resolved: a serialized
// block's buffer, a cached batch's column buffer, a deserialized block's
// array with its objects.
type BufferCoverage struct {
	Chunk, Chunks uint32
	PID           uint32
	TimeNs        int64 // of the record(s) that resolved it
	Coverage      *stratav1.Coverage
	// CachedBatch: a column buffer of a cached DataFrame batch; Column is
	// its column's index (nil: every column, an Arrow batch) and
	// ColumnName its name ("" unknown).
	CachedBatch bool
	Column      *int32
	ColumnName  string
	Length      uint64 // the range(s) the records named
	Pages       uint64
}
