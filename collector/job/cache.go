package job

// CachedBlock is one cached RDD block of an application as Strata's traces
// saw it over its whole life: the JVM hook's reports (its put, every
// MemoryStore get, its free), its pages as last resolved while it was live,
// its fault counters and sampled faults, and its latest DAMON heat sample.
// The cross-layer heuristics read it; the collector fills it from its store
// (store.CachedBlocks). A block is (Node, ExecutorID, PID, BlockID); its
// buffers (a serialized block's chunks) are counted once.
//
// A zero count is "none seen" for what the hook always reports (gets,
// frees); maps are empty, never nil, once filled; Heat is nil without a
// DAMON sample.
type CachedBlock struct {
	Node       string // the machine (agent node name)
	ExecutorID string
	PID        uint32
	BlockID    string
	RDD        int32
	Partition  int32

	// CachedNs is when the block was first registered (its put), FreedNs
	// when its latest registration was freed: 0 while it was still live at
	// the end of the traces (the job ended with it cached, or the traces
	// stop). FreeReason is the free's reason as the records name it
	// ("removed", "evicted", …; "" when not freed).
	CachedNs   int64
	FreedNs    int64
	FreeReason string

	// Gets counts the MemoryStore gets the hook reported (a get of a block
	// in several buffers is one), PutReads those that were the put's own
	// read-back: the first get on the thread that put the block, which is
	// how Spark returns a block it has just cached (getOrElseUpdate) — no
	// use of the cache. Reads() is the rest. LastGetNs is the latest get.
	Gets      uint64
	PutReads  uint64
	LastGetNs int64
	// GetsByNode counts gets by the NUMA node of the CPU the reading
	// thread ran on (-1: unknown).
	GetsByNode map[int32]uint64

	// Pages as last resolved while live: every base page of its buffers
	// (holes excluded), those swapped out, the present ones per NUMA node
	// (-1: PFN hidden). PageSize is their base page size in bytes.
	Pages        uint64
	SwappedPages uint64
	PagesByNode  map[int32]uint64
	PageSize     uint32

	// MajorFaults is the kernel's count of major faults in the block's
	// ranges (pages read back from swap or disk) over its registrations;
	// SampledFaultsByNode the sampled faults by the node of the faulting
	// CPU (-1: unknown). Both zero when fault tracing was off.
	MajorFaults         uint64
	SampledFaultsByNode map[int32]uint64

	Heat *BlockHeat
}

// Reads is the block's gets after its put: the uses of the cache.
func (b *CachedBlock) Reads() uint64 { return b.Gets - min(b.PutReads, b.Gets) }

// Bytes is the block's pages in bytes (0 when its page size is unknown).
func (b *CachedBlock) Bytes() uint64 { return b.Pages * uint64(b.PageSize) }

// PresentPages sums PagesByNode.
func (b *CachedBlock) PresentPages() uint64 {
	var n uint64
	for _, p := range b.PagesByNode {
		n += p
	}
	return n
}

// BlockHeat is a block's latest DAMON access heat sample (docs/damon.md):
// AccessRate is the share of DAMON's checks of its covered bytes that found
// them accessed (nil: unknown), AccessesPerSecGiB the same per second and
// GiB; ColdBytes of CoveredBytes were in regions DAMON saw unaccessed, the
// youngest of them for ColdMinAgeSeconds (nil: unknown). Partial: a shared
// kdamond's scheme saw only the regions it matched, so bytes outside them
// are neither hot nor cold.
type BlockHeat struct {
	TimeNs            int64
	AccessRate        *float64
	AccessesPerSecGiB *float64
	MonitoredBytes    uint64
	CoveredBytes      uint64
	ColdBytes         uint64
	ColdMinAgeSeconds *float64
	Partial           bool
}
