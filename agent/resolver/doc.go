// Package resolver turns a virtual address range of a process into the
// physical pages behind it: for each base page its presence, PFN, kpageflags,
// kpagecount and NUMA node, compressed into stratav1.PageRun values (the run
// rule is the PageRun comment in proto/strata/v1/record.proto). Pages that
// are in no VMA are UNMAPPED runs, never touched ones runs without PRESENT,
// swapped ones SWAPPED runs; a page freed or reused while it was read is
// PAGE_STATE_RACED unless Options.NoRecheck.
//
// A Resolver keeps its file handles and scratch between calls (memory: see
// Options.ChunkPages) and is not safe for concurrent use; give each
// goroutine its own, or use a Pool, which holds one per worker and takes
// turns between processes slice by slice. ResolveBatch resolves many ranges
// of one process with one open pagemap, and gives each request the same runs
// it would get alone. Without flags (Options.NoFlags or Request.Flags =
// FlagsSkip) only pagemap is read: pages get presence, swap entry, PFN,
// node and, for PMD-mapped folios, size and THP or HUGETLB; present pages
// are FLAGS_UNKNOWN with FLAGS_NOT_READ, and AddFlags reads the flags later
// for the runs a caller samples or shows.
//
// Errors (check with errors.Is): ErrProcessGone (the process exited; nothing
// resolved; never a panic); ErrBadRange and ErrOutOfRange (the request is
// wrong). Result.Warning says the runs are complete but less detailed:
// ErrPFNHidden (no CAP_SYS_ADMIN: pages are PAGE_STATE_PFN_HIDDEN and
// FLAGS_UNKNOWN, never silent zeros, their node still known),
// ErrFlagsUnavailable (kpageflags or kpagecount unreadable: present pages
// are PAGE_STATE_FLAGS_UNKNOWN) and ErrFlagsNotRead (no flags were asked
// for). Example resolves pages of the running process.
//
// docs/agent.md ("agent/resolver") describes the steps of a read and what
// each costs; BenchmarkResolve and BenchmarkResolveBatch measure them on the
// machine they run on.
package resolver
