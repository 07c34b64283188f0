// Package resolver turns a virtual address range of a process into the
// physical pages behind it: for each base page its presence, PFN, kpageflags,
// kpagecount and NUMA node, compressed into stratav1.PageRun values (see the
// PageRun comment in proto/strata/v1/record.proto for the run rule).
//
// The annotator calls it for every block a Spark executor reports, so a
// Resolver keeps its file handles (/proc/kpageflags, /proc/kpagecount) and
// scratch buffers between calls, and ResolveBatch resolves many ranges of one
// process with one open pagemap and at most one read of its maps. A Resolver
// is not safe for concurrent use; give each goroutine its own.
//
// How a range is read, per chunk of up to Options.ChunkPages pages:
//
//  1. one pread of /proc/PID/pagemap for the chunk;
//  2. present pages are grouped, in virtual order, into spans of consecutive
//     PFNs; the spans are sorted by PFN and read from kpageflags and
//     kpagecount with one pread per group of spans that lie close together;
//  3. unless Options.NoRecheck, pagemap is read again: a page whose PFN
//     changed, or whose kpageflags say NOPAGE or BUDDY, was freed or reused
//     while we looked and is marked PAGE_STATE_RACED;
//  4. the pages are folded into runs; a compound folio's size comes from its
//     head and tail bits, and runs never cross a folio boundary, so a PMD THP
//     is one run of 512 pages.
//
// Error classification (check with errors.Is):
//
//   - ErrProcessGone: the process exited; nothing was resolved. Never a panic.
//   - ErrBadRange / procmem.ErrOutOfRange: the request itself is wrong.
//   - Result.Warning carries what made the answer less complete without
//     making it wrong: ErrPFNHidden (the reader lacks CAP_SYS_ADMIN, pages are
//     PAGE_STATE_PFN_HIDDEN and FLAGS_UNKNOWN instead of silent zeros) and
//     ErrFlagsUnavailable (kpageflags/kpagecount unreadable, present pages are
//     PAGE_STATE_FLAGS_UNKNOWN).
//
// Addresses with no VMA are PAGE_STATE_UNMAPPED runs (found with one read of
// /proc/PID/maps per batch, only when a non-present page is seen); pages in a
// VMA that were never touched are runs with no PRESENT bit; swapped pages are
// SWAPPED runs with consecutive swap offsets. Swap cannot be exercised on the
// development VM (no swap device), so that path is covered by unit tests of
// the decoding only.
package resolver
