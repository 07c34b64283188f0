package store

import (
	"fmt"
	"math"
	"unicode/utf8"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// Bounds of what an agent on any Linux machine can report. ValidateBatch
// refuses a batch outside them, so that every run it accepts expands
// (PageRun.Page) into pages whose addresses, PFNs and swap offsets do not
// wrap, and every query can do its arithmetic in 64 bits.
const (
	// maxNUMANodes: CONFIG_NODES_SHIFT is at most 10.
	maxNUMANodes = 1 << 10
	// minPageSize, maxPageSize: Linux's base pages run from 4 KiB to
	// 256 KiB (hexagon, powerpc 44x).
	minPageSize = 4 << 10
	maxPageSize = 256 << 10
	// maxUserAddr is the top of the largest user address space (x86-64
	// with 5-level paging); block ranges and faults lie below it.
	maxUserAddr = uint64(1) << 56
	// maxPhysAddr: no architecture addresses more than 52 bits of physical
	// memory (x86-64 and arm64 MAXPHYADDR), so a PFN times the page size
	// stays below it.
	maxPhysAddr = uint64(1) << 52
	// maxSwapType and maxSwapOffset are the widths of a pagemap swap
	// entry: type in bits 0-4, offset in bits 5-54.
	maxSwapType   = 1 << 5
	maxSwapOffset = uint64(1) << 50
	// maxFolioPages is the largest compound folio, a 1 GiB PUD page of
	// 4 KiB pages; folio sizes are powers of two.
	maxFolioPages = 1 << 18
)

// Page-state bits ValidateBatch checks against each other.
const (
	statePresent  = uint32(stratav1.PageState_PAGE_STATE_PRESENT)
	stateSwapped  = uint32(stratav1.PageState_PAGE_STATE_SWAPPED)
	stateUnmapped = uint32(stratav1.PageState_PAGE_STATE_UNMAPPED)
	stateHidden   = uint32(stratav1.PageState_PAGE_STATE_PFN_HIDDEN)
)

// ValidateBatch reports why b cannot be stored, wrapped in ErrInvalidBatch,
// or nil. It checks everything the store and its queries rely on, so that
// one bad record is refused at the door instead of failing every later
// query of its application: the batch key; valid UTF-8 in every string; a
// sane NodeInfo; on every record a block with an app id, known enum
// values (the coverage's resolution too), a column index of -1 (every
// column: stored as none) or more, a page size Linux has (the machine's, when NodeInfo gives it), a
// range in user space, NUMA node ids Linux can number; and on every run a
// count of 1..stratav1.MaxRunPages pages, a page-aligned range in user
// space, states that agree with each other and with the PFN and swap
// fields, exactly count-1 PFN deltas (or none), every page's PFN within
// physical memory, a power-of-two folio size, and swap entries pagemap can
// hold. Workloads need an app id, and end no earlier than they start;
// process memory samples need an app id and a pid.
func ValidateBatch(b *stratav1.Batch) error {
	if b == nil {
		return fmt.Errorf("%w: nil batch", ErrInvalidBatch)
	}
	if b.GetNodeName() == "" {
		return fmt.Errorf("%w: missing node_name (seq %d)", ErrInvalidBatch, b.GetSeq())
	}
	if b.GetBootId() == "" {
		return fmt.Errorf("%w: missing boot_id (node %q seq %d)", ErrInvalidBatch, b.GetNodeName(), b.GetSeq())
	}
	if !utf8.ValidString(b.GetNodeName()) || !utf8.ValidString(b.GetBootId()) {
		return fmt.Errorf("%w: node_name or boot_id is not UTF-8 (seq %d)", ErrInvalidBatch, b.GetSeq())
	}
	n := b.GetNode()
	if err := validateNode(n); err != nil {
		return fmt.Errorf("%w: node info: %w", ErrInvalidBatch, err)
	}
	for i, r := range b.GetRecords() {
		if err := validateRecord(r, n.GetPageSize()); err != nil {
			return fmt.Errorf("%w: record %d: %w", ErrInvalidBatch, i, err)
		}
	}
	for i, w := range b.GetWorkloads() {
		if err := validateWorkload(w); err != nil {
			return fmt.Errorf("%w: workload %d: %w", ErrInvalidBatch, i, err)
		}
	}
	for i, m := range b.GetProcesses() {
		if err := validateProcessMemory(m); err != nil {
			return fmt.Errorf("%w: process memory %d: %w", ErrInvalidBatch, i, err)
		}
	}
	for i, h := range b.GetHeat() {
		if err := validateHeat(h); err != nil {
			return fmt.Errorf("%w: heat sample %d: %w", ErrInvalidBatch, i, err)
		}
	}
	return nil
}

func validateNode(n *stratav1.NodeInfo) error {
	if ps := n.GetPageSize(); ps != 0 && !validPageSize(ps) {
		return fmt.Errorf("page_size %d is not a Linux page size (a power of two, %d..%d)", ps, minPageSize, maxPageSize)
	}
	if n.GetNumaNodes() > maxNUMANodes {
		return fmt.Errorf("%d NUMA nodes, more than Linux supports (%d)", n.GetNumaNodes(), maxNUMANodes)
	}
	return nil
}

func validPageSize(ps uint32) bool {
	return ps&(ps-1) == 0 && ps >= minPageSize && ps <= maxPageSize
}

// validNode reports whether id is a NUMA node id Linux can have, or -1
// (unknown).
func validNode(id int32) bool { return id >= -1 && id < maxNUMANodes }

func validateRecord(r *stratav1.Record, nodePageSize uint32) error {
	blk := r.GetBlock()
	if blk.GetAppId() == "" {
		return fmt.Errorf("missing block app_id")
	}
	for _, s := range []string{blk.GetAppId(), blk.GetExecutorId(), blk.GetBlockId(), r.GetResolveError(), blk.GetColumnName(),
		r.GetCoverage().GetDetail()} {
		if !utf8.ValidString(s) {
			return fmt.Errorf("string %q is not UTF-8", s)
		}
	}
	if _, ok := stratav1.AccessKind_name[int32(r.GetAccess())]; !ok || r.GetAccess() == stratav1.AccessKind_ACCESS_KIND_UNSPECIFIED {
		return fmt.Errorf("access kind %d unknown", r.GetAccess())
	}
	if _, ok := stratav1.FaultKind_name[int32(r.GetFaultKind())]; !ok {
		return fmt.Errorf("fault kind %d unknown", r.GetFaultKind())
	}
	if r.GetFaultKind() != stratav1.FaultKind_FAULT_KIND_UNSPECIFIED && r.GetAccess() != stratav1.AccessKind_ACCESS_KIND_FAULT {
		return fmt.Errorf("fault kind %v on a record of access %v", r.GetFaultKind(), r.GetAccess())
	}
	if _, ok := stratav1.MemoryMode_name[int32(blk.GetMode())]; !ok {
		return fmt.Errorf("memory mode %d unknown", blk.GetMode())
	}
	if _, ok := stratav1.MemoryLocation_name[int32(blk.GetLocation())]; !ok {
		return fmt.Errorf("memory location %d unknown", blk.GetLocation())
	}
	if _, ok := stratav1.BlockKind_name[int32(blk.GetKind())]; !ok {
		return fmt.Errorf("block kind %d unknown", blk.GetKind())
	}
	if blk.GetChunks() > 0 && blk.GetChunk() >= blk.GetChunks() || blk.GetChunks() == 0 && blk.GetChunk() > 0 {
		return fmt.Errorf("chunk %d of %d", blk.GetChunk(), blk.GetChunks())
	}
	if blk.Column != nil && blk.GetColumn() < -1 {
		return fmt.Errorf("column %d", blk.GetColumn())
	}
	if _, ok := stratav1.Resolution_name[int32(r.GetCoverage().GetResolution())]; !ok {
		return fmt.Errorf("resolution %d unknown", r.GetCoverage().GetResolution())
	}
	if _, ok := stratav1.FreeReason_name[int32(r.GetFreeReason())]; !ok {
		return fmt.Errorf("free reason %d unknown", r.GetFreeReason())
	}
	if r.GetFreeReason() != stratav1.FreeReason_FREE_REASON_UNSPECIFIED && r.GetAccess() != stratav1.AccessKind_ACCESS_KIND_FREE {
		return fmt.Errorf("free reason %v on a record of access %v", r.GetFreeReason(), r.GetAccess())
	}
	if !validNode(r.GetCpuNumaNode()) {
		return fmt.Errorf("cpu_numa_node %d is not a NUMA node id", r.GetCpuNumaNode())
	}
	if r.GetVaddr() >= maxUserAddr || r.GetLength() > maxUserAddr-r.GetVaddr() {
		return fmt.Errorf("range %#x+%d leaves user space", r.GetVaddr(), r.GetLength())
	}
	ps := r.GetPageSize()
	if ps == 0 {
		if len(r.GetRuns()) > 0 {
			return fmt.Errorf("runs without page_size")
		}
		return nil
	}
	if !validPageSize(ps) {
		return fmt.Errorf("page_size %d is not a Linux page size (a power of two, %d..%d)", ps, minPageSize, maxPageSize)
	}
	if nodePageSize != 0 && ps != nodePageSize {
		return fmt.Errorf("page_size %d, but the node's is %d", ps, nodePageSize)
	}
	for j, run := range r.GetRuns() {
		if err := validateRun(run, uint64(ps)); err != nil {
			return fmt.Errorf("run %d: %w", j, err)
		}
	}
	return nil
}

func validateRun(run *stratav1.PageRun, ps uint64) error {
	n := run.GetCount()
	if n == 0 || n > stratav1.MaxRunPages {
		return fmt.Errorf("count %d outside 1..%d", n, stratav1.MaxRunPages)
	}
	va := run.GetVaddr()
	if va%ps != 0 {
		return fmt.Errorf("vaddr %#x not aligned to the %d-byte page", va, ps)
	}
	if va >= maxUserAddr || uint64(n)*ps > maxUserAddr-va {
		return fmt.Errorf("range %#x+%d pages leaves user space", va, n)
	}
	if !validNode(run.GetNumaNode()) {
		return fmt.Errorf("numa_node %d is not a NUMA node id", run.GetNumaNode())
	}
	if fp := run.GetFolioPages(); fp&(fp-1) != 0 || fp > maxFolioPages {
		return fmt.Errorf("folio_pages %d is not a folio size (a power of two up to %d)", fp, maxFolioPages)
	}
	st := run.GetState()
	switch {
	case st&statePresent != 0 && st&stateSwapped != 0:
		return fmt.Errorf("state %#x: both present and swapped", st)
	case st&stateUnmapped != 0 && st&(statePresent|stateSwapped) != 0:
		return fmt.Errorf("state %#x: unmapped, yet present or swapped", st)
	case st&stateHidden != 0 && st&statePresent == 0:
		return fmt.Errorf("state %#x: PFN hidden on a page not present", st)
	case run.GetPfn() != 0 && (st&statePresent == 0 || st&stateHidden != 0):
		return fmt.Errorf("pfn %#x on a page whose state %#x has no visible PFN", run.GetPfn(), st)
	case st&stateSwapped == 0 && (run.GetSwapType() != 0 || run.GetSwapOffset() != 0):
		return fmt.Errorf("swap entry on a page not swapped (state %#x)", st)
	case st&stateSwapped != 0 && (run.GetSwapType() >= maxSwapType || run.GetSwapOffset() >= maxSwapOffset ||
		uint64(n) > maxSwapOffset-run.GetSwapOffset()):
		return fmt.Errorf("swap entry %d:%#x+%d does not fit pagemap", run.GetSwapType(), run.GetSwapOffset(), n)
	}
	return run.ValidatePFNs(maxPhysAddr / ps)
}

func validateWorkload(w *stratav1.WorkloadCounters) error {
	if w.GetAppId() == "" {
		return fmt.Errorf("missing app_id")
	}
	for _, s := range []string{w.GetAppId(), w.GetExecutorId(), w.GetPmuStatus()} {
		if !utf8.ValidString(s) {
			return fmt.Errorf("string %q is not UTF-8", s)
		}
	}
	if w.GetEndUnixNano() < w.GetStartUnixNano() {
		return fmt.Errorf("ends (%d) before it starts (%d)", w.GetEndUnixNano(), w.GetStartUnixNano())
	}
	return nil
}

func validateProcessMemory(m *stratav1.ProcessMemory) error {
	if m.GetAppId() == "" {
		return fmt.Errorf("missing app_id")
	}
	if m.GetPid() == 0 {
		return fmt.Errorf("missing pid")
	}
	for _, s := range []string{m.GetAppId(), m.GetExecutorId()} {
		if !utf8.ValidString(s) {
			return fmt.Errorf("string %q is not UTF-8", s)
		}
	}
	return nil
}

// validateHeat refuses a heat sample the questions could not use: no
// application, strings that are not UTF-8, an unknown source kind, byte
// counts beyond the block's resolved bytes or cold bytes beyond the
// covered ones, a rate or an age that is negative or not a finite
// number, a negative interval. Covered bytes beyond the monitored ones
// are taken as they come: the agent measures the two against different
// lists (the regions read, the target's ranges), which a kdamond may
// change between them. A rate above 1 is DAMON's (nr_accesses over
// its nominal maximum) and is kept.
func validateHeat(h *stratav1.HeatSample) error {
	if h.GetAppId() == "" {
		return fmt.Errorf("missing app_id")
	}
	for _, s := range []string{h.GetAppId(), h.GetExecutorId(), h.GetBlockId(), h.GetSource()} {
		if !utf8.ValidString(s) {
			return fmt.Errorf("string %q is not UTF-8", s)
		}
	}
	if _, ok := stratav1.HeatSourceKind_name[int32(h.GetSourceKind())]; !ok {
		return fmt.Errorf("heat source kind %d unknown", h.GetSourceKind())
	}
	if h.GetMonitoredBytes() > h.GetResolvedBytes() || h.GetCoveredBytes() > h.GetResolvedBytes() ||
		h.GetColdBytes() > h.GetCoveredBytes() {
		return fmt.Errorf("byte counts beyond their whole: resolved %d, monitored %d, covered %d, cold %d",
			h.GetResolvedBytes(), h.GetMonitoredBytes(), h.GetCoveredBytes(), h.GetColdBytes())
	}
	for _, v := range []*float64{h.AccessRate, h.ColdAgeSeconds, h.ColdMinAgeSeconds} {
		if v != nil && !(*v >= 0 && !math.IsInf(*v, 1)) {
			return fmt.Errorf("rate or age %v is not a finite non-negative number", *v)
		}
	}
	if h.GetIntervalNs() < 0 || h.GetSampleIntervalNs() < 0 {
		return fmt.Errorf("negative DAMON interval (aggregation %d ns, sampling %d ns)", h.GetIntervalNs(), h.GetSampleIntervalNs())
	}
	return nil
}
