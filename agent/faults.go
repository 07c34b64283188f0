package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/stratatrace/strata/agent/annotator"
	"github.com/stratatrace/strata/agent/procmem"
	"github.com/stratatrace/strata/agent/tracer"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// faults owns the kernel side: the BPF fault tracer and the perf-stat style
// counters of every traced process. When the tracer cannot load (not root,
// no BPF) it says why in status and the agent runs without it.
type faults struct {
	t      *tracer.Tracer // nil when unavailable
	reason string         // why t is nil
	every  time.Duration
	pmu    tracer.PMUInfo
	walk   *tracer.WalkEvents
	log    *slog.Logger
	cpus   []int32 // NUMA node per CPU; nil when sysfs does not say

	mu        sync.Mutex
	ann       *annotator.Annotator
	workloads map[uint32]*workload
	last      map[blockKey]tracer.Counters // last counters sent per block
	exits     []tracer.ExitReport
	// finals holds the last counters of blocks whose process exited before
	// its hook session ended: the tracer has already forgotten them, and the
	// session's end claims them in FreeBlock.
	finals map[blockKey]tracer.Counters
}

type blockKey struct {
	pid uint32
	id  uint64
}

type workload struct {
	w             *tracer.Workload
	app, executor string
}

func startFaults(cfg Config, log *slog.Logger) (*faults, error) {
	f := &faults{every: cfg.CountersInterval, log: log.With("component", "faults"),
		workloads: map[uint32]*workload{}, last: map[blockKey]tracer.Counters{}, finals: map[blockKey]tracer.Counters{}}
	if f.every <= 0 {
		f.every = 2 * time.Second
	}
	mode := strings.ToLower(cfg.Faults)
	if mode == "off" {
		f.reason = "disabled (--faults off)"
		return f, nil
	}
	t, err := tracer.Load(tracer.Config{SampleEvery: cfg.SampleEvery, Logger: log, OnExit: f.onExit})
	if err != nil {
		if mode == "on" {
			return nil, fmt.Errorf("load fault tracer: %w", err)
		}
		f.reason = err.Error()
		f.log.Warn("page-fault attribution unavailable; continuing without it", "err", err)
		return f, nil
	}
	f.t = t
	if f.cpus, err = (procmem.FS{Proc: cfg.ProcRoot, Sys: cfg.SysRoot}).LoadCPUNodes(); err != nil {
		f.log.Warn("CPU to NUMA node map unavailable; faults will not say local or remote", "err", err)
	}
	f.pmu, _ = tracer.DetectPMU(cfg.SysRoot)
	if f.pmu.Available() {
		if m, err := tracer.ReadCPUModel(cfg.ProcRoot); err == nil {
			if we, err := tracer.SelectWalkEvents(m); err == nil {
				f.walk = &we
			}
		}
	}
	return f, nil
}

func (f *faults) status() string {
	if f.t == nil {
		return "unavailable: " + f.reason
	}
	return fmt.Sprintf("on (hook %s, pmu %s)", f.t.Hook(), f.pmu.Status())
}

// kernel is the annotator's view, nil without a tracer.
func (f *faults) kernel() annotator.Kernel {
	if f.t == nil {
		return nil
	}
	return kernelView{f}
}

type kernelView struct{ f *faults }

func (k kernelView) RegisterBlock(pid uint32, id, start, end uint64) error {
	if err := k.f.t.Track(pid); err != nil {
		return err
	}
	k.f.openWorkload(pid)
	return k.f.t.RegisterBlock(pid, id, start, end)
}

func (k kernelView) MoveBlock(pid uint32, id, start, end uint64) error {
	return k.f.t.MoveBlock(pid, id, start, end)
}

func (k kernelView) FreeBlock(pid uint32, id uint64) (*stratav1.FaultCounts, error) {
	c, err := k.f.t.FreeBlock(pid, id)
	key := blockKey{pid, id}
	k.f.mu.Lock()
	delete(k.f.last, key)
	if final, ok := k.f.finals[key]; ok && errors.Is(err, tracer.ErrNotTracked) {
		c, err = final, nil
	}
	delete(k.f.finals, key)
	k.f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return faultCounts(c), nil
}

func (k kernelView) ForgetProcess(pid uint32) error {
	k.f.mu.Lock()
	for key := range k.f.finals {
		if key.pid == pid {
			delete(k.f.finals, key)
		}
	}
	k.f.mu.Unlock()
	k.f.closeWorkload(pid, true)
	err := k.f.t.Untrack(pid)
	if errors.Is(err, tracer.ErrNotTracked) {
		return nil // the exit hook was first
	}
	return err
}

func faultCounts(c tracer.Counters) *stratav1.FaultCounts {
	return &stratav1.FaultCounts{Read: c.Read, Write: c.Write, Exec: c.Exec, Major: c.Major, Unclassified: c.Unclassified}
}

func faultKind(k tracer.Kind) stratav1.FaultKind {
	switch k {
	case tracer.KindRead:
		return stratav1.FaultKind_FAULT_KIND_READ
	case tracer.KindWrite:
		return stratav1.FaultKind_FAULT_KIND_WRITE
	case tracer.KindExec:
		return stratav1.FaultKind_FAULT_KIND_EXEC
	case tracer.KindMajor:
		return stratav1.FaultKind_FAULT_KIND_MAJOR
	case tracer.KindUnclassified:
		return stratav1.FaultKind_FAULT_KIND_UNCLASSIFIED
	}
	return stratav1.FaultKind_FAULT_KIND_UNSPECIFIED
}

// cpuNode is the NUMA node of cpu, -1 when unknown.
func (f *faults) cpuNode(cpu uint16) int32 {
	if int(cpu) < len(f.cpus) {
		return f.cpus[cpu]
	}
	return -1
}

// openWorkload starts perf-stat counting of pid once.
func (f *faults) openWorkload(pid uint32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.workloads[pid]; ok {
		return
	}
	w, err := tracer.OpenWorkload(pid, tracer.WorkloadOptions{PMU: f.pmu, Walk: f.walk})
	if err != nil {
		f.log.Warn("workload counters unavailable", "pid", pid, "err", err)
		f.workloads[pid] = &workload{} // do not retry per block
		return
	}
	wl := &workload{w: w}
	if f.ann != nil {
		wl.app, wl.executor = f.ann.Process(pid)
	}
	f.workloads[pid] = wl
}

// closeWorkload sends pid's last counters (when asked) and stops counting.
func (f *faults) closeWorkload(pid uint32, send bool) {
	f.mu.Lock()
	wl := f.workloads[pid]
	delete(f.workloads, pid)
	ann := f.ann
	f.mu.Unlock()
	if wl == nil || wl.w == nil {
		return
	}
	if send && ann != nil {
		f.sendWorkload(ann, pid, wl)
	}
	wl.w.Close()
}

func (f *faults) sendWorkload(ann *annotator.Annotator, pid uint32, wl *workload) {
	c, err := wl.w.Read()
	if err != nil {
		return
	}
	if wl.app == "" {
		wl.app, wl.executor = ann.Process(pid)
	}
	ann.AddWorkload(&stratav1.WorkloadCounters{
		AppId: wl.app, ExecutorId: wl.executor, Pid: pid,
		StartUnixNano: c.Start.UnixNano(), EndUnixNano: c.End.UnixNano(),
		TaskClockNs: c.TaskClockNs, ContextSwitches: c.ContextSwitches, CpuMigrations: c.CPUMigrations,
		MinorFaults: c.MinorFaults, MajorFaults: c.MajorFaults,
		Cycles: c.Cycles, Instructions: c.Instructions, DtlbMisses: c.DTLBMisses,
		WalkCyclesLoad: c.WalkCyclesLoad, WalkCyclesStore: c.WalkCyclesStore,
		PmuStatus: c.PMUStatus,
	})
}

// onExit runs on the tracer's reader goroutine when a traced process
// exits. Its blocks' final counters are sent from run while the blocks are
// still registered, and kept for the FREE records of its session's end.
func (f *faults) onExit(rep tracer.ExitReport) {
	f.mu.Lock()
	f.exits = append(f.exits, rep)
	for _, b := range rep.Blocks {
		f.finals[blockKey{b.TGID, b.BlockID}] = b.Counters
	}
	f.mu.Unlock()
}

// run turns sampled faults into records as they come and sends changed
// block counters and workload counters every interval.
func (f *faults) run(ctx context.Context, ann *annotator.Annotator, log *slog.Logger) {
	if f.t == nil {
		<-ctx.Done()
		return
	}
	f.mu.Lock()
	f.ann = ann
	f.mu.Unlock()
	tick := time.NewTicker(f.every)
	defer tick.Stop()
	var batch []annotator.Fault
	for {
		select {
		case <-ctx.Done():
			f.flush(ann)
			return
		case ev := <-f.t.Events():
			// Take what else is waiting too, so the pages are resolved
			// per process, not per sample.
			batch = f.appendFault(batch[:0], ev)
		drain:
			for len(batch) < maxFaultBatch {
				select {
				case ev := <-f.t.Events():
					batch = f.appendFault(batch, ev)
				default:
					break drain
				}
			}
			ann.AddFaults(batch)
		case <-tick.C:
			f.flush(ann)
		}
	}
}

// maxFaultBatch bounds the sampled faults resolved together.
const maxFaultBatch = 1024

// appendFault adds a sampled fault event to batch; exit notices and walk
// samples are not faults.
func (f *faults) appendFault(batch []annotator.Fault, ev tracer.Event) []annotator.Fault {
	if ev.Kind == tracer.KindExit || ev.Kind == tracer.KindWalkSample {
		return batch
	}
	return append(batch, annotator.Fault{PID: ev.TGID, TID: ev.TID, BlockID: ev.BlockID, Addr: ev.Addr, Time: ev.Time,
		Kind: faultKind(ev.Kind), CPUNode: f.cpuNode(ev.CPU)})
}

// flush sends every block's counters that changed since the last flush,
// the final counters of exited processes, and the workload counters.
func (f *faults) flush(ann *annotator.Annotator) {
	now := time.Now()
	snap, err := f.t.Snapshot()
	if err != nil {
		f.log.Warn("read block counters", "err", err)
	}
	f.mu.Lock()
	exits := f.exits
	f.exits = nil
	f.mu.Unlock()
	for _, rep := range exits {
		snap = append(snap, rep.Blocks...)
	}
	changed := snap[:0]
	f.mu.Lock()
	for _, b := range snap {
		k := blockKey{b.TGID, b.BlockID}
		if prev, seen := f.last[k]; !seen || prev != b.Counters {
			f.last[k] = b.Counters
			changed = append(changed, b)
		}
	}
	for _, rep := range exits {
		for _, b := range rep.Blocks {
			delete(f.last, blockKey{b.TGID, b.BlockID})
		}
	}
	f.mu.Unlock()
	for _, b := range changed {
		ann.AddCounters(b.TGID, b.BlockID, faultCounts(b.Counters), now)
	}
	for _, rep := range exits {
		f.closeWorkload(rep.TGID, true)
	}
	f.mu.Lock()
	pids := make(map[uint32]*workload, len(f.workloads))
	for pid, wl := range f.workloads {
		pids[pid] = wl
	}
	f.mu.Unlock()
	for pid, wl := range pids {
		if wl.w != nil {
			f.sendWorkload(ann, pid, wl)
		}
	}
}

func (f *faults) writeMetrics(p func(name, help string, v any)) {
	if f.t == nil {
		p("strata_faults_available", "1 when page-fault attribution is loaded.", 0)
		return
	}
	p("strata_faults_available", "1 when page-fault attribution is loaded.", 1)
	st, err := f.t.Stats()
	if err != nil {
		return
	}
	p("strata_faults_traced_total", "Page faults of traced processes.", st.TracedFaults)
	p("strata_faults_matched_total", "Faults inside a registered block.", st.MatchedFaults)
	p("strata_faults_events_total", "Sampled fault events submitted by the kernel.", st.KernelEvents)
	p("strata_faults_kernel_drops_total", "Fault events lost to a full ring buffer.", st.KernelDrops)
	p("strata_faults_user_drops_total", "Fault events dropped because the agent fell behind.", st.UserDrops)
	p("strata_faults_blocks", "Blocks registered in the kernel.", st.Blocks)
}

func (f *faults) Close() error {
	f.mu.Lock()
	for pid, wl := range f.workloads {
		if wl.w != nil {
			wl.w.Close()
		}
		delete(f.workloads, pid)
	}
	f.mu.Unlock()
	if f.t == nil {
		return nil
	}
	return f.t.Close()
}
