package faults

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/stratatrace/strata/agent/annotator"
	"github.com/stratatrace/strata/agent/perfstat"
	"github.com/stratatrace/strata/agent/procmem"
	"github.com/stratatrace/strata/agent/tracer"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// fakeTracer keeps blocks and counters as the kernel would, and lets a
// test fault, exit and sample as it likes.
type fakeTracer struct {
	mu        sync.Mutex
	onExit    func(tracer.ExitReport)
	tracked   map[uint32]bool
	blocks    map[annotator.BlockKey]*tracer.BlockSnapshot
	weak      map[annotator.BlockKey][]tracer.Range
	walk      map[uint32][2]uint64 // total, matched
	events    chan tracer.Event
	sampled   []tracer.SampleEvent
	sampleErr error
	untracked []uint32
	closed    bool
	fills     map[fillAt]tracer.Fill // stored fills, as the kernel keeps them
	attached  []string               // AttachFills' paths, in order
}

// fillAt is where the kernel keeps a stored fill.
type fillAt struct {
	pid uint32
	key uint64
}

func newFakeTracer() *fakeTracer {
	return &fakeTracer{tracked: map[uint32]bool{}, blocks: map[annotator.BlockKey]*tracer.BlockSnapshot{}, weak: map[annotator.BlockKey][]tracer.Range{},
		walk: map[uint32][2]uint64{}, events: make(chan tracer.Event, 4096), fills: map[fillAt]tracer.Fill{}}
}

func (t *fakeTracer) AttachFills(path string) (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if slices.Contains(t.attached, path) {
		return false, nil
	}
	t.attached = append(t.attached, path)
	return true, nil
}

func (t *fakeTracer) TakeFill(pid uint32, key uint64) (tracer.Fill, bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f, ok := t.fills[fillAt{pid, key}]
	delete(t.fills, fillAt{pid, key})
	return f, ok, nil
}

// storeFill is a put of the block named name ending stored, as the fill
// probes leave it.
func (t *fakeTracer) storeFill(pid uint32, name string, c tracer.Counters) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.fills[fillAt{pid, FillKey(name)}] = tracer.Fill{Counters: c, End: time.Now()}
}

func (t *fakeTracer) load(onExit func(tracer.ExitReport)) (Tracer, error) {
	t.onExit = onExit
	return t, nil
}

func (t *fakeTracer) Track(pid uint32) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tracked[pid] = true
	return nil
}

func (t *fakeTracer) Untrack(pid uint32) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.untracked = append(t.untracked, pid)
	if !t.tracked[pid] {
		return fmt.Errorf("untrack %d: %w", pid, tracer.ErrNotTracked)
	}
	t.forgetLocked(pid)
	return nil
}

func (t *fakeTracer) forgetLocked(pid uint32) tracer.ExitReport {
	rep := tracer.ExitReport{TGID: pid, WalkSamples: t.walk[pid][0], WalkSamplesMatched: t.walk[pid][1]}
	for k, b := range t.blocks {
		if k.PID == pid {
			rep.Blocks = append(rep.Blocks, *b)
			delete(t.blocks, k)
			delete(t.weak, k)
		}
	}
	delete(t.tracked, pid)
	delete(t.walk, pid)
	for at := range t.fills {
		if at.pid == pid {
			delete(t.fills, at)
		}
	}
	return rep
}

func (t *fakeTracer) RegisterBlock(pid uint32, id, start, end uint64) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.tracked[pid] {
		return tracer.ErrNotTracked
	}
	if _, ok := t.blocks[annotator.BlockKey{PID: pid, ID: id}]; ok {
		return tracer.ErrBlockExists
	}
	t.blocks[annotator.BlockKey{PID: pid, ID: id}] = &tracer.BlockSnapshot{TGID: pid, BlockID: id, Start: start, End: end}
	return nil
}

func (t *fakeTracer) MoveBlock(pid uint32, id, start, end uint64) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	b, ok := t.blocks[annotator.BlockKey{PID: pid, ID: id}]
	if !ok {
		return tracer.ErrUnknownBlock
	}
	b.Start, b.End = start, end
	return nil
}

func (t *fakeTracer) SetWeakRanges(pid uint32, id uint64, ranges []tracer.Range) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.blocks[annotator.BlockKey{PID: pid, ID: id}]; !ok {
		return tracer.ErrUnknownBlock
	}
	if len(ranges) == 0 {
		delete(t.weak, annotator.BlockKey{PID: pid, ID: id})
	} else {
		t.weak[annotator.BlockKey{PID: pid, ID: id}] = ranges
	}
	return nil
}

func (t *fakeTracer) FreeBlock(pid uint32, id uint64) (tracer.Counters, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.tracked[pid] {
		return tracer.Counters{}, fmt.Errorf("free block: %w", tracer.ErrNotTracked)
	}
	b, ok := t.blocks[annotator.BlockKey{PID: pid, ID: id}]
	if !ok {
		return tracer.Counters{}, tracer.ErrUnknownBlock
	}
	delete(t.blocks, annotator.BlockKey{PID: pid, ID: id})
	delete(t.weak, annotator.BlockKey{PID: pid, ID: id})
	return b.Counters, nil
}

func (t *fakeTracer) Snapshot() ([]tracer.BlockSnapshot, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []tracer.BlockSnapshot
	for _, b := range t.blocks {
		out = append(out, *b)
	}
	return out, nil
}

func (t *fakeTracer) Events() <-chan tracer.Event { return t.events }

func (t *fakeTracer) SampleWalks(ev tracer.SampleEvent) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sampleErr != nil {
		return t.sampleErr
	}
	t.sampled = append(t.sampled, ev)
	return nil
}

func (t *fakeTracer) WalkSampleCounts(pid uint32) (uint64, uint64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.tracked[pid] {
		return 0, 0, tracer.ErrNotTracked
	}
	return t.walk[pid][0], t.walk[pid][1], nil
}

func (t *fakeTracer) Stats() (tracer.Stats, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	weak := 0
	for _, rs := range t.weak {
		weak += len(rs)
	}
	return tracer.Stats{Hook: tracer.HookBTF, Blocks: len(t.blocks), WeakRanges: weak, TracedFaults: 7}, nil
}

func (t *fakeTracer) Hook() tracer.Hook { return tracer.HookBTF }

func (t *fakeTracer) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	return nil
}

// fault adds faults to a block's counters, as the kernel would.
func (t *fakeTracer) fault(pid uint32, id uint64, c tracer.Counters) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.blocks[annotator.BlockKey{PID: pid, ID: id}]
	b.Read += c.Read
	b.Write += c.Write
	b.Major += c.Major
}

// exit is the process exiting: the tracer forgets it and reports, from its
// reader goroutine in real life.
func (t *fakeTracer) exit(pid uint32) {
	t.mu.Lock()
	rep := t.forgetLocked(pid)
	t.mu.Unlock()
	t.onExit(rep)
}

// fakeWorkloads opens workloads whose counts a test sets.
type fakeWorkloads struct {
	mu     sync.Mutex
	opened map[uint32]int
	open   map[uint32]*fakeWorkload
	fail   map[uint32]bool
}

type fakeWorkload struct {
	mu     sync.Mutex
	counts perfstat.Counts
	closed bool
}

func newFakeWorkloads() *fakeWorkloads {
	return &fakeWorkloads{opened: map[uint32]int{}, open: map[uint32]*fakeWorkload{}, fail: map[uint32]bool{}}
}

func (w *fakeWorkloads) openWorkload(pid uint32) (Workload, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.opened[pid]++
	if w.fail[pid] {
		return nil, errors.New("perf_event_open: permission denied")
	}
	fw := &fakeWorkload{counts: perfstat.Counts{PID: pid, Start: time.Unix(100, 0), PMUStatus: "unavailable: no hardware PMU"}}
	w.open[pid] = fw
	return fw, nil
}

func (w *fakeWorkloads) get(pid uint32) *fakeWorkload {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.open[pid]
}

func (w *fakeWorkload) set(f func(*perfstat.Counts)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f(&w.counts)
}

func (w *fakeWorkload) Read() (perfstat.Counts, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return perfstat.Counts{}, errors.New("read closed workload")
	}
	c := w.counts
	c.End = c.Start.Add(time.Second)
	return c, nil
}

func (w *fakeWorkload) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	return nil
}

func (w *fakeWorkload) isClosed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.closed
}

// sink records what Faults sends, as the annotator would receive it.
type sink struct {
	mu        sync.Mutex
	faults    [][]annotator.Fault
	counters  []counterRec
	workloads []*stratav1.WorkloadCounters
}

type counterRec struct {
	pid uint32
	id  uint64
	fc  *stratav1.FaultCounts
}

func (s *sink) AddFaults(fs []annotator.Fault) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, append([]annotator.Fault(nil), fs...))
	return len(fs)
}

func (s *sink) AddCounters(pid uint32, id uint64, fc *stratav1.FaultCounts, _ time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counters = append(s.counters, counterRec{pid, id, fc})
	return true
}

func (s *sink) AddWorkload(w *stratav1.WorkloadCounters) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.workloads = append(s.workloads, w)
}

// take returns and clears what was sent so far.
func (s *sink) take() ([]counterRec, []*stratav1.WorkloadCounters) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, w := s.counters, s.workloads
	s.counters, s.workloads = nil, nil
	return c, w
}

func cpuModel(vendor string, family, model int) procmem.CPUModel {
	return procmem.CPUModel{Vendor: vendor, Family: family, Model: model}
}
