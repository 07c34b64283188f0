package tracer

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// mapStore writes the address index into the kernel's cells map and the
// mapping of its runs map.
type mapStore struct {
	m    *ebpf.Map
	runs []strataBlockRange
}

func (s mapStore) put(key strataCellKey, val *strataRangeSet) error {
	if err := s.m.Put(&key, val); err != nil {
		if errors.Is(err, unix.E2BIG) {
			err = fmt.Errorf("%w: %w", ErrIndexFull, err)
		}
		return fmt.Errorf("put range set: %w", err)
	}
	return nil
}

// putRun writes run entries into the runs array through its mapping. No
// lookup reads them before the cell that lists them is written (a syscall,
// which orders the stores before it).
func (s mapStore) putRun(off uint32, entries []strataBlockRange) error {
	if int(off)+len(entries) > len(s.runs) {
		return fmt.Errorf("put run of %d entries at %d: beyond %d", len(entries), off, len(s.runs))
	}
	copy(s.runs[off:], entries)
	return nil
}

func (s mapStore) del(key strataCellKey) error {
	if err := s.m.Delete(&key); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("delete range set: %w", err)
	}
	return nil
}

// delMany deletes in batches of 4096 (one syscall each), falling back to
// single deletes when a batch stops early (a key already gone).
func (s mapStore) delMany(keys []strataCellKey) error {
	for len(keys) > 0 {
		n := min(len(keys), 4096)
		done, err := s.m.BatchDelete(keys[:n], nil)
		if err != nil {
			for _, k := range keys[done:n] {
				if err := s.del(k); err != nil {
					return err
				}
			}
		}
		keys = keys[n:]
	}
	return nil
}

func (t *Tracer) store() rangeStore { return mapStore{t.maps[strataMapCells], t.runsMem} }

func (t *Tracer) pidWord(tgid uint32) *uint64 {
	return (*uint64)(unsafe.Pointer(&t.pidMem[(tgid>>6)*8]))
}

// Track starts counting the faults of thread group tgid. Tracking a tracked
// process again is a no-op.
func (t *Tracer) Track(tgid uint32) error {
	if tgid == 0 || tgid >= pidWords*64 {
		return fmt.Errorf("track %d: %w", tgid, ErrBadPID)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return fmt.Errorf("track %d: %w", tgid, ErrClosed)
	}
	if _, ok := t.procs[tgid]; ok {
		return nil
	}
	// The pidfd turns readable when the process exits: the liveness
	// backstop, immune to PID reuse.
	pidfd, err := unix.PidfdOpen(int(tgid), 0)
	if err != nil {
		return fmt.Errorf("track %d: open pidfd: %w", tgid, err)
	}
	if err := t.maps[strataMapTgids].Put(tgid, strataTgidCounters{}); err != nil {
		unix.Close(pidfd)
		return fmt.Errorf("track %d: put tgid counters: %w", tgid, err)
	}
	t.procs[tgid] = &proc{idx: newProcIndex(tgid, t.runs), pidfd: pidfd}
	atomic.OrUint64(t.pidWord(tgid), 1<<(tgid&63))
	return nil
}

// Untrack stops counting tgid and forgets its blocks.
func (t *Tracer) Untrack(tgid uint32) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return fmt.Errorf("untrack %d: %w", tgid, ErrClosed)
	}
	if _, ok := t.procs[tgid]; !ok {
		return fmt.Errorf("untrack %d: %w", tgid, ErrNotTracked)
	}
	_, err := t.forgetLocked(tgid)
	return err
}

// forgetLocked clears the TGID's bit, index entries and counter slots and
// returns the final counters of its blocks.
func (t *Tracer) forgetLocked(tgid uint32) (ExitReport, error) {
	p := t.procs[tgid]
	atomic.AndUint64(t.pidWord(tgid), ^uint64(1<<(tgid&63)))
	rep := ExitReport{TGID: tgid}
	var errs []error
	var bySlot []Counters
	if len(p.idx.blocks) > 64 {
		var err error
		bySlot, err = t.readAllSlots()
		errs = append(errs, err)
	}
	for _, b := range p.idx.blocks {
		var c Counters
		var err error
		if int(b.slot) < len(bySlot) {
			c = bySlot[b.slot]
		} else {
			c, err = t.readSlot(b.slot)
		}
		errs = append(errs, err)
		rep.Blocks = append(rep.Blocks, BlockSnapshot{TGID: tgid, BlockID: b.id, Start: b.start, End: b.end, Counters: c})
		t.freeSlots = append(t.freeSlots, b.slot)
	}
	errs = append(errs, p.idx.clear(t.store()), t.dropFillsLocked(tgid, time.Time{}))
	if total, matched, err := t.walkSampleCounts(tgid); err == nil {
		rep.WalkSamples, rep.WalkSamplesMatched = total, matched
	}
	if err := t.maps[strataMapTgids].Delete(tgid); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		errs = append(errs, err)
	}
	unix.Close(p.pidfd)
	delete(t.procs, tgid)
	if err := errors.Join(errs...); err != nil {
		return rep, fmt.Errorf("forget %d: %w", tgid, err)
	}
	return rep, nil
}

func (t *Tracer) procLocked(op string, tgid uint32) (*proc, error) {
	if t.closed {
		return nil, fmt.Errorf("%s: %w", op, ErrClosed)
	}
	p, ok := t.procs[tgid]
	if !ok {
		return nil, fmt.Errorf("%s: pid %d: %w", op, tgid, ErrNotTracked)
	}
	return p, nil
}

// RegisterBlock starts counting faults in [start, end) of tgid as block id.
func (t *Tracer) RegisterBlock(tgid uint32, id, start, end uint64) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, err := t.procLocked("register block", tgid)
	if err != nil {
		return err
	}
	if _, ok := p.idx.blocks[id]; ok {
		return fmt.Errorf("register block %d: %w", id, ErrBlockExists)
	}
	var slot uint32
	switch {
	case len(t.freeSlots) > 0:
		// A reused slot still holds its last block's counts.
		slot = t.freeSlots[len(t.freeSlots)-1]
		if err := t.maps[strataMapCounters].Put(slot, strataBlockCounters{}); err != nil {
			return fmt.Errorf("register block %d: reset counters: %w", id, err)
		}
		t.freeSlots = t.freeSlots[:len(t.freeSlots)-1]
	case t.nextSlot < t.cfg.MaxBlocks:
		slot = t.nextSlot // never used: array maps start zeroed
		t.nextSlot++
	default:
		return fmt.Errorf("register block %d: %w", id, ErrFull)
	}
	if err := p.idx.add(t.store(), &block{id: id, start: start, end: end, slot: slot}); err != nil {
		t.freeSlots = append(t.freeSlots, slot)
		return fmt.Errorf("register block: %w", err)
	}
	return nil
}

// MoveBlock changes the range of a registered block (a GC moved it); its
// counters carry on.
func (t *Tracer) MoveBlock(tgid uint32, id, start, end uint64) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, err := t.procLocked("move block", tgid)
	if err != nil {
		return err
	}
	old, ok := p.idx.blocks[id]
	if !ok {
		return fmt.Errorf("move block %d: %w", id, ErrUnknownBlock)
	}
	// A block that left the index gives up its slot.
	gone, err := p.idx.move(t.store(), old, start, end)
	if gone {
		t.freeSlots = append(t.freeSlots, old.slot)
	}
	if err != nil {
		return fmt.Errorf("move block: %w", err)
	}
	return nil
}

// SetWeakRanges replaces the weak ranges of a registered block: more
// ranges whose faults count into the block's counters, as its own range's
// do, but which give way to every other range. The parts of ranges
// (ascending, disjoint, at most 256 GiB in all) that another range of the
// process holds already are left out; a block's range registered or moved
// later over a weak range takes its pages. nil drops them all. MoveBlock
// keeps them, FreeBlock and the process's end drop them. On error the
// block is left without weak ranges.
func (t *Tracer) SetWeakRanges(tgid uint32, id uint64, ranges []Range) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, err := t.procLocked("set weak ranges", tgid)
	if err != nil {
		return err
	}
	b, ok := p.idx.blocks[id]
	if !ok {
		return fmt.Errorf("set weak ranges of block %d: %w", id, ErrUnknownBlock)
	}
	return p.idx.setWeak(t.store(), id, b.slot, ranges)
}

// FreeBlock stops counting a block and returns its final counters.
func (t *Tracer) FreeBlock(tgid uint32, id uint64) (Counters, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, err := t.procLocked("free block", tgid)
	if err != nil {
		return Counters{}, err
	}
	b, ok := p.idx.blocks[id]
	if !ok {
		return Counters{}, fmt.Errorf("free block %d: %w", id, ErrUnknownBlock)
	}
	// The block leaves the index even when a write fails (see remove).
	errRemove := p.idx.free(t.store(), b)
	c, err := t.readSlot(b.slot)
	t.freeSlots = append(t.freeSlots, b.slot)
	if err := errors.Join(errRemove, err); err != nil {
		return c, fmt.Errorf("free block %d: %w", id, err)
	}
	return c, nil
}

func (t *Tracer) readSlot(slot uint32) (Counters, error) {
	var v strataBlockCounters
	if err := t.maps[strataMapCounters].Lookup(slot, &v); err != nil {
		return Counters{}, fmt.Errorf("read counters slot %d: %w", slot, err)
	}
	return countersOf(&v), nil
}

func countersOf(v *strataBlockCounters) Counters {
	return Counters{v.Read, v.Write, v.Exec, v.Unclassified, v.Major, v.WalkSamples}
}

// Snapshot returns every registered block with its counters, reading the
// counters map in batches.
func (t *Tracer) Snapshot() ([]BlockSnapshot, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, fmt.Errorf("snapshot: %w", ErrClosed)
	}
	bySlot, err := t.readAllSlots()
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	var out []BlockSnapshot
	for tgid, p := range t.procs {
		for _, b := range p.idx.blocks {
			out = append(out, BlockSnapshot{TGID: tgid, BlockID: b.id, Start: b.start, End: b.end, Counters: bySlot[b.slot]})
		}
	}
	return out, nil
}

// readAllSlots reads the counters of every slot handed out so far, in
// batches of 4096 (one syscall each).
func (t *Tracer) readAllSlots() ([]Counters, error) {
	bySlot := make([]Counters, t.nextSlot)
	const chunk = 4096
	keys := make([]uint32, chunk)
	vals := make([]strataBlockCounters, chunk)
	var cursor ebpf.MapBatchCursor
	for read := uint32(0); read < t.nextSlot; {
		n, err := t.maps[strataMapCounters].BatchLookup(&cursor, keys, vals, nil)
		for i := 0; i < n; i++ {
			if k := keys[i]; k < t.nextSlot {
				bySlot[k] = countersOf(&vals[i])
			}
		}
		read += uint32(n)
		if errors.Is(err, ebpf.ErrKeyNotExist) || n == 0 {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read counters: %w", err)
		}
	}
	return bySlot, nil
}

// WalkSampleCounts returns, for tgid, the SampleWalks samples taken and
// how many of them hit a registered block.
func (t *Tracer) WalkSampleCounts(tgid uint32) (total, matched uint64, err error) {
	return t.walkSampleCounts(tgid)
}

func (t *Tracer) walkSampleCounts(tgid uint32) (total, matched uint64, err error) {
	var v strataTgidCounters
	if err := t.maps[strataMapTgids].Lookup(tgid, &v); err != nil {
		return 0, 0, fmt.Errorf("read tgid counters %d: %w", tgid, err)
	}
	return v.WalkSamples, v.WalkSamplesMatched, nil
}

// Stats sums the kernel's per-CPU statistics and adds the reader's.
func (t *Tracer) Stats() (Stats, error) {
	var per []strataFaultStats
	if err := t.maps[strataMapStats].Lookup(uint32(0), &per); err != nil {
		return Stats{}, fmt.Errorf("read stats: %w", err)
	}
	s := Stats{Hook: t.hook, Delivered: t.delivered.Load(), UserDrops: t.userDrops.Load(), BadRecords: t.badRecords.Load()}
	for _, v := range per {
		s.TracedFaults += v.TracedFaults
		s.MatchedFaults += v.MatchedFaults
		s.MajorFaults += v.MajorFaults
		s.WalkSamples += v.WalkSamples
		s.Exits += v.Exits
		s.KernelEvents += v.Events
		s.KernelDrops += v.RingFull
		s.FillsBegun += v.FillsBegun
		s.FillsStored += v.FillsStored
		s.FillsFailed += v.FillsFailed
		s.FillsTooDeep += v.FillsTooDeep
		s.FillsReplaced += v.FillsReplaced
		s.FillsLost += v.FillsLost
		s.FillsUnmatched += v.FillsUnmatched
	}
	t.mu.Lock()
	for _, p := range t.procs {
		s.Blocks += len(p.idx.blocks)
		s.WeakRanges += p.idx.weakN
		s.RangeSets += p.idx.cells
	}
	s.RunEntries = t.runs.used
	s.PerfEvents = t.perfEvents()
	s.FillsClaimed, s.FillsUnclaimed, s.FillFiles = t.fillsClaimed, t.fillsUnclaimed, len(t.fillFiles)
	t.mu.Unlock()
	return s, nil
}
