package resolver

import (
	"errors"
	"fmt"
	"math/bits"
	"path/filepath"

	"github.com/stratatrace/strata/agent/procmem"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// Errors a caller tells apart with errors.Is.
var (
	// ErrProcessGone: the process exited before or while it was read.
	ErrProcessGone = procmem.ErrProcessGone
	// ErrPFNHidden: pagemap gave PFN 0 for present pages because the
	// reader lacks CAP_SYS_ADMIN; those pages are marked PFN_HIDDEN.
	ErrPFNHidden = errors.New("PFNs need CAP_SYS_ADMIN")
	// ErrFlagsUnavailable: /proc/kpageflags or /proc/kpagecount could not
	// be read; present pages are marked FLAGS_UNKNOWN.
	ErrFlagsUnavailable = procmem.ErrFlagsUnavailable
	// ErrFlagsNotRead: the request asked for no kpageflags (Options.NoFlags,
	// Request.Flags); present pages are marked FLAGS_UNKNOWN, except the
	// PFN-hidden ones, whose flags are unknown anyway. AddFlags reads them
	// later for the pages that need them.
	ErrFlagsNotRead = errors.New("kpageflags not read (resolved without flags)")
	// ErrBadRange: an empty range, or one that wraps around.
	ErrBadRange = errors.New("bad address range")
	// ErrOutOfRange: the range reaches beyond the process's user space.
	ErrOutOfRange = procmem.ErrOutOfRange
)

// Options tune a Resolver; the zero value is the default.
type Options struct {
	// ChunkPages is how many pages one pagemap pread covers (rounded up to
	// a multiple of 512; default 262144, 1 GiB of 4 KiB pages). The
	// kpageflags of a chunk's pages are read together, sorted by PFN, so
	// scattered pages of a larger chunk share more preads. A Resolver keeps
	// scratch for the largest chunk it has read: 16 bytes per page (8 more
	// for pages not exclusively mapped) and 24 per span of consecutive PFNs,
	// about 5 MiB after a range of 1 GiB of scattered 4 KiB pages.
	ChunkPages int
	// NoRecheck skips the second pagemap read that detects pages reused
	// between the pagemap and kpageflags reads. It saves one pagemap read
	// per page; pages that kpageflags shows as free are still RACED.
	NoRecheck bool
	// ReadAllCounts reads kpagecount for every page. By default it is read
	// only for pages whose pagemap entry lacks bit 56 (exclusively mapped):
	// the kernel sets that bit exactly when the page's precise mapcount,
	// which kpagecount reports, is 1 (CONFIG_PAGE_MAPCOUNT kernels such as
	// 6.18; on kernels without it an exclusive large folio mapped twice in
	// the same process would read 1 here).
	ReadAllCounts bool
	// MergeGap is the largest PFN hole read through to merge two spans in
	// one kpageflags pread (default procmem.DefaultMergeGap).
	MergeGap uint64
	// NoFlags resolves requests without kpageflags and kpagecount unless a
	// request says otherwise (Request.Flags): pages get their presence,
	// swap entry, PFN, NUMA node and, for PMD-mapped folios found with
	// PAGEMAP_SCAN, folio size and THP or HUGETLB, at the cost of the
	// pagemap read alone. Present pages are FLAGS_UNKNOWN and the result
	// warns ErrFlagsNotRead; AddFlags fills in the runs a caller samples or
	// shows.
	NoFlags bool
}

// FlagsMode says whether a request reads kpageflags and kpagecount.
type FlagsMode uint8

// Flags modes of a Request.
const (
	FlagsDefault FlagsMode = iota // as Options.NoFlags says
	FlagsRead                     // read them, whatever Options.NoFlags says
	FlagsSkip                     // do not read them (see Options.NoFlags)
)

// Request is one range of a batch.
type Request struct {
	VAddr   uint64
	Length  uint64 // bytes; the range is widened to whole pages
	CPUNode int32  // NUMA node of the accessing CPU; set -1 when unknown (0 is node 0)
	Flags   FlagsMode
}

// Result is the answer for one range.
type Result struct {
	Runs []*stratav1.PageRun
	// Page counts by state, for callers that want a summary without
	// expanding runs.
	Pages, Present, Swapped, Unmapped, Hidden, Raced, THP uint64
	// Warning is non-nil when the runs are complete but less detailed than
	// a full resolution: ErrPFNHidden, ErrFlagsUnavailable, ErrFlagsNotRead
	// (joined when several).
	Warning error
	// Err is why this range could not be resolved (ResolveBatch only).
	Err error
}

// Resolver resolves address ranges to pages. Build one with New and keep it.
type Resolver struct {
	fs       procmem.FS
	opts     Options
	kp       *procmem.KPages // nil when kpageflags or kpagecount is unreadable
	kpErr    error           // why kp is nil
	nodes    *procmem.NodeMap
	liveProc bool // fs.Proc is the running system's /proc (move_pages reaches it)
	noScan   bool // the kernel lacks PAGEMAP_SCAN

	// What a batch and its requests are read into, kept between calls.
	maps *procmem.MapsFile // of the batch's process, opened on first need
	cur  chunk             // the chunk being read (steps 1-5)
	out  runs              // the runs of the request being resolved (step 6)
}

// New opens /proc/kpageflags, /proc/kpagecount and the sysfs node map under
// fs. Neither being unreadable is an error: results then carry
// FLAGS_UNKNOWN or node -1 and a Warning.
func New(fs procmem.FS, opts Options) (*Resolver, error) {
	if opts.ChunkPages <= 0 {
		opts.ChunkPages = 1 << 18
	}
	opts.ChunkPages = (opts.ChunkPages + pmdPages - 1) &^ (pmdPages - 1)
	if opts.MergeGap == 0 {
		opts.MergeGap = procmem.DefaultMergeGap
	}
	ps := procmem.PageSize()
	r := &Resolver{fs: fs, opts: opts, liveProc: filepath.Clean(fs.Proc) == "/proc"}
	r.cur.ps = ps
	r.cur.pmdShift = uint(bits.TrailingZeros64(ps)) + 9
	r.out.ps = ps
	kp, err := fs.OpenKPages()
	switch {
	case err != nil:
		r.kpErr = err
	case kp.FlagsErr() != nil || kp.CountErr() != nil:
		// Half a view would make runs that mix known and unknown fields.
		r.kpErr = errors.Join(kp.FlagsErr(), kp.CountErr())
		kp.Close()
	default:
		kp.MergeGap = opts.MergeGap
		r.kp = kp
	}
	// A missing node map only costs node numbers (-1).
	r.nodes, _ = fs.LoadNodeMap()
	return r, nil
}

// Close releases the kpageflags and kpagecount handles.
func (r *Resolver) Close() error {
	if r == nil {
		return nil
	}
	err := r.kp.Close()
	r.kp = nil
	return err
}

// KPageStats returns the preads of kpageflags and kpagecount made so far
// and the entries they covered (zero when the files are unreadable).
func (r *Resolver) KPageStats() (preads, entries uint64) {
	if r.kp == nil {
		return 0, 0
	}
	return r.kp.Stats()
}

// Nodes is the PFN to node map in use, nil when sysfs had none.
func (r *Resolver) Nodes() *procmem.NodeMap { return r.nodes }

// Resolve resolves [vaddr, vaddr+length) of pid with no CPU node.
func (r *Resolver) Resolve(pid int, vaddr, length uint64) (Result, error) {
	var req = [1]Request{{VAddr: vaddr, Length: length, CPUNode: -1}}
	var out [1]Result
	if err := r.ResolveBatch(pid, req[:], out[:]); err != nil {
		return Result{}, err
	}
	return out[0], out[0].Err
}

// ResolveBatch resolves every request of one process into out (which must be
// at least as long as reqs), opening the pagemap once. It returns an error
// only when nothing could be resolved (the process is gone, or out is
// short); per-range failures are in out[i].Err.
func (r *Resolver) ResolveBatch(pid int, reqs []Request, out []Result) error {
	if len(out) < len(reqs) {
		return fmt.Errorf("resolve batch: %d results for %d requests", len(out), len(reqs))
	}
	pm, err := r.fs.OpenPagemap(pid)
	if err != nil {
		return fmt.Errorf("resolve pid %d: %w", pid, err)
	}
	defer pm.Close()
	defer func() {
		r.maps.Close()
		r.maps = nil
	}()
	for i := 0; i < len(reqs); {
		j := r.gather(reqs, i)
		if j > i+1 {
			err := r.resolveGathered(pm, pid, reqs[i:j], out[i:j])
			if err == nil {
				i = j
				continue
			}
			if errors.Is(err, ErrProcessGone) {
				return failFrom(pid, reqs, out, i, err)
			}
			// One at a time, so that only the requests at fault fail.
		}
		for ; i < j; i++ {
			q := reqs[i]
			out[i] = Result{}
			if err := r.resolve(pm, pid, q, &out[i]); err != nil {
				if errors.Is(err, ErrProcessGone) {
					return failFrom(pid, reqs, out, i, err)
				}
				out[i] = Result{Err: fmt.Errorf("resolve %#x+%#x: %w", q.VAddr, q.Length, err)}
			}
		}
	}
	return nil
}

// failFrom fails requests i and on: the process exited.
func failFrom(pid int, reqs []Request, out []Result, i int, err error) error {
	out[i] = Result{Err: fmt.Errorf("resolve %#x+%#x: %w", reqs[i].VAddr, reqs[i].Length, err)}
	for j := i + 1; j < len(reqs); j++ {
		out[j] = Result{Err: out[i].Err}
	}
	return fmt.Errorf("resolve pid %d: %w", pid, err)
}
