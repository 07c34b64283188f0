// Package resolver turns a virtual address range of a process into the
// physical pages behind it: for each base page its presence, PFN, kpageflags,
// kpagecount and NUMA node, compressed into stratav1.PageRun values (see the
// PageRun comment in proto/strata/v1/record.proto for the run rule).
//
// The annotator calls it for every block a Spark executor reports, so a
// Resolver keeps its file handles (/proc/kpageflags, /proc/kpagecount) and
// scratch buffers between calls, and ResolveBatch resolves many ranges of one
// process with one open pagemap and, when needed, one open maps file. A
// Resolver is not safe for concurrent use; give each goroutine its own.
//
// How a range is read: in chunks of up to Options.ChunkPages pages that end
// on PMD boundaries; the cursor over one chunk (type chunk) holds what the
// steps read about its pages, each step a function of its own:
//
//  1. readPagemap: one pread of /proc/PID/pagemap for the chunk;
//  2. buildSpans: present pages are grouped, in virtual order, into spans of
//     consecutive PFNs; readKPages reads them from kpageflags sorted by PFN,
//     one pread per group of spans that lie close together (MergeGap);
//  3. findPMDs, checkHeads: a 2 MiB group whose first and last PFNs fit a
//     PMD-aligned head is asked about with the PAGEMAP_SCAN ioctl (Linux
//     6.7+, feature-gated); a group the kernel maps with one PMD, and whose
//     PFNs are consecutive, is one 512-page folio whose kpageflags are the
//     folio's, so only its head is read (it must read COMPOUND_HEAD and THP
//     or HUGE, else the group is read page by page);
//  4. readKPages: kpagecount is read only for pages whose pagemap entry lacks
//     bit 56 (exclusively mapped), because the kernel sets that bit exactly
//     when the page's mapcount, the number kpagecount reports, is 1 (see
//     Options.ReadAllCounts for the caveat on other kernels);
//  5. recheck: unless Options.NoRecheck, pagemap is read again: a page whose
//     PFN changed, or whose kpageflags say NOPAGE or BUDDY, was freed or
//     reused while we looked and is marked PAGE_STATE_RACED;
//  6. fold: the pages are folded into runs; a compound folio's size comes
//     from its head and tail bits, and runs never cross a folio boundary, so
//     a PMD THP is one run of 512 pages. Pages that differ only in PFN
//     extend the run in bulk (extendRun, extendPMD).
//
// Steps 5 and 6 go one piece of 8192 pages at a time, so the recheck's
// entries are still in the cache when they are compared. A pagemap entry is
// read one way only: procmem.Entry's methods, and entryState for the state
// bits it decides.
//
// ResolveBatch reads requests that follow one another closely (ascending,
// no page shared, at most 256 pages apart, within ChunkPages pages in all:
// a walked block's extents) as one chunk: one pagemap read and one recheck
// per piece for all of them, their pages' kpageflags read together (the
// pages between them are read from pagemap only), and each request folded
// into its own result, the same runs as it would get alone.
// BenchmarkResolveWalk compares a walk's extents with the same pages as
// one range.
//
// Without flags (Options.NoFlags, or Request.Flags = FlagsSkip) only steps
// 1, 3 (the scan) and 6 run: pages get presence, swap entry, PFN and node,
// and PMD-mapped folios their folio size and THP, or HUGETLB when their
// mapping's page size says hugetlbfs (PROCMAP_QUERY; unknown on kernels
// without it). This answers "where does this block live" for the cost of the
// pagemap read. Present pages are FLAGS_UNKNOWN with FLAGS_NOT_READ beside
// it (so stored records say why), and the result warns ErrFlagsNotRead, so
// they are told apart from pages whose flags could not be read
// (ErrFlagsUnavailable); a THP mapped with PTEs (mTHP, or a split
// PMD) is not seen as one without kpageflags. AddFlags reads the flags later
// for the runs a caller samples or shows.
//
// Error classification (check with errors.Is):
//
//   - ErrProcessGone: the process exited; nothing was resolved. Never a panic.
//   - ErrBadRange, ErrOutOfRange: the request itself is wrong.
//   - Result.Warning carries what made the answer less complete without
//     making it wrong: ErrPFNHidden (the reader lacks CAP_SYS_ADMIN, pages are
//     PAGE_STATE_PFN_HIDDEN and FLAGS_UNKNOWN instead of silent zeros; their
//     NUMA node still comes from move_pages(2), which needs no privilege),
//     ErrFlagsUnavailable (kpageflags/kpagecount unreadable, present pages
//     are PAGE_STATE_FLAGS_UNKNOWN) and ErrFlagsNotRead (the caller asked
//     for no flags).
//
// Cost: for 4 KiB pages the floor is the kernel's work per /proc/kpageflags
// entry, which copies the page and its folio, plus the pagemap read (two
// with the recheck); PMD-mapped THPs skip the kpageflags entries and cost
// little more than their pagemap read, and so does every page without
// flags. BenchmarkResolve measures pages per CPU-second for each case on
// the machine it runs on, beside a page-at-a-time baseline and that floor
// (both measured in the same run), and BenchmarkResolveBatch the
// annotator's shape; run them rather than trusting figures written down.
// Memory: scratch for the largest chunk read, see Options.ChunkPages.
//
// Addresses with no VMA are PAGE_STATE_UNMAPPED runs. Only for pages that
// are neither present nor swapped, and for PMD maps resolved without flags,
// is /proc/PID/maps consulted: one PROCMAP_QUERY ioctl per mapping boundary
// crossed (Linux 6.11+), else one read of the whole file per batch with
// procfs. Pages in a VMA that were
// never touched are runs with no PRESENT bit; swapped pages are SWAPPED runs
// with consecutive swap offsets. Swap cannot be exercised on the
// development VM (no swap device), so that path is covered by the entry
// decoding tests in procmem and the fake /proc trees of this package's tests.
package resolver
