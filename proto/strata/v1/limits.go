package stratav1

// Wire limits shared by the agent, which cuts batches and runs to fit them,
// and the collector, which refuses what exceeds them. Both sides import
// these constants; neither spells the numbers itself.
const (
	// MaxBatchBytes bounds one Batch message on the wire (its proto size):
	// the collector's gRPC receive limit and the agent's send limit.
	MaxBatchBytes = 64 << 20

	// MaxRunPages bounds the pages of one PageRun: 1 GiB of 4 KiB pages,
	// larger than any folio (a PUD THP is 262144 pages). A larger count is
	// corrupt input, and would let one message expand into an unbounded
	// trace; the agent splits longer runs.
	MaxRunPages = 1 << 18
)
