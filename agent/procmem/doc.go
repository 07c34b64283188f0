// Package procmem is the agent's one reader of /proc and /sys. It reads the
// kernel's per-page memory files (/proc/PID/pagemap, /proc/kpageflags,
// /proc/kpagecount, /proc/PID/maps and the sysfs memory-block to NUMA node
// links) and the few other files the agent needs: /proc/PID/status and
// /proc/PID/task (hook pid checks, perf counters per thread), the NUMA node
// lists, the online CPU list (polled for CPU hotplug), /proc/meminfo, the
// boot id, /proc/cpuinfo and the perf event sources (PMUs) of
// /sys/bus/event_source. DAMON's admin directory, which is written as well
// as read, belongs to agent/damon.
// It is a set of pure readers rooted at a configurable /proc and /sys (see
// FS; the agent's --proc and --sys): exported methods open the files and
// private parseX([]byte) functions decode them, so that every parser also
// runs against the fixture trees in testdata/ and under the fuzzer. No
// other agent package opens these files itself.
//
// What callers must know:
//
//   - PFNs in pagemap are visible only when the opener of the pagemap file has
//     CAP_SYS_ADMIN in the initial user namespace; otherwise the kernel reports
//     present pages with PFN 0. Entry.PFN returns what the kernel gave; callers
//     treat a present entry with PFN 0 as "hidden", not as page frame 0.
//   - /proc/kpageflags and /proc/kpagecount are root-only (mode 0400).
//   - The binary files are read in bulk with pread at 8 bytes per entry.
//     KPages.ReadSpans reads the spans it is given in PFN order and merges
//     spans that lie close together into one pread, because a syscall here
//     costs more than reading a few extra entries.
//   - Pagemap.HugeRanges uses the PAGEMAP_SCAN ioctl (Linux 6.7+) to find the
//     PMD-mapped parts of a range; on older kernels it returns
//     ErrScanUnsupported and callers read every entry instead.
//   - MapsFile.VMAAt finds the mapping at an address with the PROCMAP_QUERY
//     ioctl (Linux 6.11+), one call per lookup; older kernels fall back to
//     reading the whole of /proc/PID/maps once with procfs (FS.Maps).
//   - MovePagesNodes asks move_pages(2) for the node of virtual addresses; it
//     needs no CAP_SYS_ADMIN, only ptrace-read access to the process.
//   - Nothing in this package logs; errors are returned, wrapped as
//     "verb noun: %w". A process that has exited is reported as ErrProcessGone.
//   - Readers hold scratch buffers and are not safe for concurrent use.
//
// Dependencies: the standard library and golang.org/x/sys, as for every
// reader of kernel files in Strata, plus github.com/prometheus/procfs for
// /proc/PID/maps, because the project prefers procfs wherever it already
// parses a file (FS.Maps, also the fallback of MapsFile; procfs has no reader
// for the binary page files, nor for the PROCMAP_QUERY ioctl).
package procmem
