// Package resolver turns a virtual address range of a process into the
// physical pages behind it: for each base page its presence, PFN, kpageflags,
// kpagecount and NUMA node, compressed into stratav1.PageRun values (see the
// PageRun comment in proto/strata/v1/record.proto for the run rule).
//
// The annotator calls it for every block a Spark executor reports, so a
// Resolver keeps its file handles (/proc/kpageflags, /proc/kpagecount) and
// scratch buffers between calls, and ResolveBatch resolves many ranges of one
// process with one open pagemap and one open maps file. A Resolver
// is not safe for concurrent use; give each goroutine its own.
//
// How a range is read, per chunk of up to Options.ChunkPages pages:
//
//  1. one pread of /proc/PID/pagemap for the chunk;
//  2. present pages are grouped, in virtual order, into spans of consecutive
//     PFNs; the spans are sorted by PFN and read from kpageflags with one
//     pread per group of spans that lie close together (DefaultMergeGap);
//  3. spans long enough to hold a PMD-mapped THP are checked with one
//     PAGEMAP_SCAN ioctl (Linux 6.7+, feature-gated): a 2 MiB block the
//     kernel maps with one PMD is one 512-page folio, whose kpageflags are the
//     folio's, so only its head is read (the head must read COMPOUND_HEAD and
//     THP or HUGE, else the block is read page by page);
//  4. kpagecount is read only for pages whose pagemap entry lacks bit 56
//     (exclusively mapped), because the kernel sets that bit exactly when the
//     page's mapcount, the number kpagecount reports, is 1 (see
//     Options.ReadAllCounts for the caveat on other kernels);
//  5. unless Options.NoRecheck, pagemap is read again: a page whose PFN
//     changed, or whose kpageflags say NOPAGE or BUDDY, was freed or reused
//     while we looked and is marked PAGE_STATE_RACED;
//  6. the pages are folded into runs; a compound folio's size comes from its
//     head and tail bits, and runs never cross a folio boundary, so a PMD THP
//     is one run of 512 pages.
//
// Error classification (check with errors.Is):
//
//   - ErrProcessGone: the process exited; nothing was resolved. Never a panic.
//   - ErrBadRange, ErrOutOfRange: the request itself is wrong.
//   - Result.Warning carries what made the answer less complete without
//     making it wrong: ErrPFNHidden (the reader lacks CAP_SYS_ADMIN, pages are
//     PAGE_STATE_PFN_HIDDEN and FLAGS_UNKNOWN instead of silent zeros; their
//     NUMA node still comes from move_pages(2), which needs no privilege) and
//     ErrFlagsUnavailable (kpageflags/kpagecount unreadable, present pages are
//     PAGE_STATE_FLAGS_UNKNOWN).
//
// Cost: for 4 KiB pages the floor is the kernel's work per /proc/kpageflags
// entry (perf: half of it in snapshot_page, which copies the page and its
// folio), 130-200 ns of CPU per PFN on the development VM, plus two pagemap
// reads; BenchmarkResolve measured 1.5-2 M pages per CPU-second there, 4-6
// times a pread-per-page baseline. PMD-mapped THPs skip it and cost little
// more than their pagemap reads: 30-45 M pages per CPU-second, 90-115 times
// the baseline.
//
// Addresses with no VMA are PAGE_STATE_UNMAPPED runs. Only when a chunk has a
// page that is neither present nor swapped is /proc/PID/maps consulted: one
// PROCMAP_QUERY ioctl per mapping boundary crossed (Linux 6.11+), else one
// read of the whole file per batch with procfs. Pages in a VMA that were
// never touched are runs with no PRESENT bit; swapped pages are SWAPPED runs
// with consecutive swap offsets. Swap cannot be exercised on the
// development VM (no swap device), so that path is covered by the entry
// decoding tests in procmem and the fake /proc trees of this package's tests.
package resolver
