package perfstat

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
	"unsafe"

	"github.com/stratatrace/strata/agent/procmem"
	"golang.org/x/sys/unix"
)

// Counts are perf-stat style counters of one process over [Start, End]. Hardware fields are nil when they were not measured;
// PMUStatus says why. Nothing is ever estimated into them.
type Counts struct {
	PID                  uint32
	Start, End           time.Time
	TaskClockNs          uint64
	ContextSwitches      uint64
	CPUMigrations        uint64
	MinorFaults          uint64
	MajorFaults          uint64
	Cycles, Instructions *uint64
	DTLBMisses           *uint64
	WalkCyclesLoad       *uint64
	WalkCyclesStore      *uint64
	PMUStatus            string // "available" or "unavailable: <reason>"
}

// Workload counts the events of one process: hardware events with perf
// events, one per thread alive at Open, each inherited by the threads it
// creates; software events the same way or from procfs (Options.Software).
type Workload struct {
	pid       uint32
	start     time.Time
	counters  []*counter
	pmuStatus string

	// Software from procfs: the process's counters at Open, and per thread
	// its scheduler counts at Open (or 0 for threads born later) and as
	// last read, so a thread that exits keeps what it was last read at.
	fs      procmem.FS
	procfs  bool
	base    procmem.ProcStat
	threads map[int]*threadSched
	gone    procmem.TaskSched // what exited threads did, as last read
}

type threadSched struct {
	base, last procmem.TaskSched
	seen       bool // listed by the latest Read
}

// Software says where the software counts (task clock, context switches,
// migrations, faults) come from.
type Software int

const (
	// SoftwarePerf counts them with perf events on every thread: exact,
	// but every context switch of the process then switches its perf
	// context too, which cost a thread ping-pong 20 % on this project's
	// 2-vCPU VM (a JVM makes thousands of switches a second).
	SoftwarePerf Software = iota
	// SoftwareProcfs reads them from /proc at each Read, costing the
	// process nothing: task clock and faults from /proc/PID/stat (every
	// thread's, exited ones included; task clock in ticks of 10 ms);
	// context switches and migrations from each thread's
	// /proc/PID/task/TID/sched, as last read, so what a thread did after
	// its last read before it exited is not counted.
	SoftwareProcfs
)

type counter struct {
	name string
	dst  func(*Counts, uint64)
	fds  []int
}

// Options say where the threads are listed and which hardware events to
// add to the software ones.
type Options struct {
	FS   procmem.FS  // lists /proc/PID/task; the zero FS is procmem.Default()
	PMU  PMUInfo     // from DetectPMU; empty: software events only
	Walk *WalkEvents // from SelectWalkEvents; nil skips walk cycles
	// Software picks the source of the software counts (SoftwarePerf by
	// default; SoftwareProcfs falls back to perf on a kernel without
	// per-thread sched files).
	Software Software
}

// Open starts counting pid. Software events are required; hardware events
// are added when opts.PMU has a core PMU, and their failure only sets
// PMUStatus. A pid that FS does not list is an error wrapping
// procmem.ErrProcessGone.
func Open(pid uint32, opts Options) (_ *Workload, err error) {
	fs := opts.FS
	if fs == (procmem.FS{}) {
		fs = procmem.Default()
	}
	tids, err := fs.Tasks(int(pid))
	if err != nil {
		return nil, fmt.Errorf("open workload %d: %w", pid, err)
	}
	w := &Workload{pid: pid, start: time.Now(), pmuStatus: opts.PMU.Status()}
	defer func() {
		if err != nil {
			w.Close()
		}
	}()
	if opts.Software == SoftwareProcfs && hasSched(fs, pid) {
		if err := w.openProcfs(fs, tids); err != nil {
			return nil, fmt.Errorf("open workload %d: %w", pid, err)
		}
		if opts.PMU.Available() {
			w.openHardware(opts, tids)
		}
		return w, nil
	}
	sw := []struct {
		name   string
		config uint64
		dst    func(*Counts, uint64)
	}{
		{"task-clock", unix.PERF_COUNT_SW_TASK_CLOCK, func(c *Counts, v uint64) { c.TaskClockNs = v }},
		{"context-switches", unix.PERF_COUNT_SW_CONTEXT_SWITCHES, func(c *Counts, v uint64) { c.ContextSwitches = v }},
		{"cpu-migrations", unix.PERF_COUNT_SW_CPU_MIGRATIONS, func(c *Counts, v uint64) { c.CPUMigrations = v }},
		{"minor-faults", unix.PERF_COUNT_SW_PAGE_FAULTS_MIN, func(c *Counts, v uint64) { c.MinorFaults = v }},
		{"major-faults", unix.PERF_COUNT_SW_PAGE_FAULTS_MAJ, func(c *Counts, v uint64) { c.MajorFaults = v }},
	}
	for _, e := range sw {
		c, err := openCounter(e.name, unix.PERF_TYPE_SOFTWARE, e.config, tids)
		if err != nil {
			return nil, fmt.Errorf("open workload %d: %w", pid, err)
		}
		c.dst = e.dst
		w.counters = append(w.counters, c)
	}
	if opts.PMU.Available() {
		w.openHardware(opts, tids)
	}
	return w, nil
}

// openHardware adds what the PMU can count; a failure is reported in
// PMUStatus, never papered over.
func (w *Workload) openHardware(opts Options, tids []int) {
	type hw struct {
		name   string
		typ    uint32
		config uint64
		dst    func(*Counts, uint64)
	}
	ptr := func(f func(*Counts) **uint64) func(*Counts, uint64) {
		return func(c *Counts, v uint64) { *f(c) = &v }
	}
	core, _ := opts.PMU.BigCore()
	events := []hw{
		{"cycles", unix.PERF_TYPE_HARDWARE, unix.PERF_COUNT_HW_CPU_CYCLES, ptr(func(c *Counts) **uint64 { return &c.Cycles })},
		{"instructions", unix.PERF_TYPE_HARDWARE, unix.PERF_COUNT_HW_INSTRUCTIONS, ptr(func(c *Counts) **uint64 { return &c.Instructions })},
		{"dTLB-load-misses", unix.PERF_TYPE_HW_CACHE,
			unix.PERF_COUNT_HW_CACHE_DTLB | unix.PERF_COUNT_HW_CACHE_OP_READ<<8 | unix.PERF_COUNT_HW_CACHE_RESULT_MISS<<16,
			ptr(func(c *Counts) **uint64 { return &c.DTLBMisses })},
	}
	if wk := opts.Walk; wk != nil && wk.LoadWalk != nil && wk.StoreWalk != nil {
		events = append(events,
			hw{wk.LoadWalk.Name, core.Type, wk.LoadWalk.Config, ptr(func(c *Counts) **uint64 { return &c.WalkCyclesLoad })},
			hw{wk.StoreWalk.Name, core.Type, wk.StoreWalk.Config, ptr(func(c *Counts) **uint64 { return &c.WalkCyclesStore })})
	}
	var errs []error
	for _, e := range events {
		c, err := openCounter(e.name, e.typ, e.config, tids)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c.dst = e.dst
		w.counters = append(w.counters, c)
	}
	switch len(errs) {
	case 0:
	case 1:
		w.pmuStatus = "unavailable: " + errs[0].Error()
	default:
		w.pmuStatus = fmt.Sprintf("unavailable: %v (and %d more)", errs[0], len(errs)-1)
	}
}

func openCounter(name string, typ uint32, config uint64, tids []int) (*counter, error) {
	attr := unix.PerfEventAttr{
		Type:        typ,
		Config:      config,
		Size:        uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Read_format: unix.PERF_FORMAT_TOTAL_TIME_ENABLED | unix.PERF_FORMAT_TOTAL_TIME_RUNNING,
		Bits:        unix.PerfBitInherit,
	}
	c := &counter{name: name}
	for _, tid := range tids {
		fd, err := unix.PerfEventOpen(&attr, tid, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if errors.Is(err, unix.ESRCH) {
			continue // the thread exited meanwhile
		}
		if err != nil {
			c.close()
			return nil, fmt.Errorf("open %s counter for thread %d: %w", name, tid, err)
		}
		c.fds = append(c.fds, fd)
	}
	if len(c.fds) == 0 {
		return nil, fmt.Errorf("open %s counter: %w", name, unix.ESRCH)
	}
	return c, nil
}

// read sums the threads' counts, scaled by enabled/running time when the
// kernel multiplexed a hardware counter.
func (c *counter) read() (uint64, error) {
	var total uint64
	buf := make([]byte, 24)
	for _, fd := range c.fds {
		if _, err := unix.Read(fd, buf); err != nil {
			return 0, fmt.Errorf("read %s counter: %w", c.name, err)
		}
		total += scaleCount(buf)
	}
	return total, nil
}

// scaleCount decodes {value, time_enabled, time_running} (read_format
// TOTAL_TIME_ENABLED|TOTAL_TIME_RUNNING) and scales value up when the
// counter ran for only part of the time it was enabled.
func scaleCount(b []byte) uint64 {
	le := binary.LittleEndian
	v, enabled, running := le.Uint64(b), le.Uint64(b[8:]), le.Uint64(b[16:])
	if running == 0 || running >= enabled {
		return v
	}
	return uint64(float64(v) * float64(enabled) / float64(running))
}

func (c *counter) close() {
	for _, fd := range c.fds {
		unix.Close(fd)
	}
	c.fds = nil
}

// Read returns the counts since Open.
func (w *Workload) Read() (Counts, error) {
	wc := Counts{PID: w.pid, Start: w.start, End: time.Now(), PMUStatus: w.pmuStatus}
	if w.procfs {
		if err := w.readProcfs(&wc); err != nil {
			return Counts{}, fmt.Errorf("read workload %d: %w", w.pid, err)
		}
	}
	for _, c := range w.counters {
		v, err := c.read()
		if err != nil {
			return Counts{}, fmt.Errorf("read workload %d: %w", w.pid, err)
		}
		c.dst(&wc, v)
	}
	return wc, nil
}

// Close releases every perf event; safe on nil and twice.
func (w *Workload) Close() error {
	if w == nil {
		return nil
	}
	for i := len(w.counters) - 1; i >= 0; i-- {
		w.counters[i].close()
	}
	w.counters = nil
	return nil
}

// hasSched says whether the kernel has per-thread sched files (built with
// CONFIG_SCHED_DEBUG); without them the software counts come from perf.
func hasSched(fs procmem.FS, pid uint32) bool {
	_, err := os.Stat(filepath.Join(fs.Proc, strconv.Itoa(int(pid)), "sched"))
	return err == nil
}

// openProcfs takes the process's and its threads' counts at Open as the
// zero of what Read reports.
func (w *Workload) openProcfs(fs procmem.FS, tids []int) error {
	w.fs, w.procfs, w.threads = fs, true, make(map[int]*threadSched, len(tids))
	var err error
	if w.base, err = fs.ProcStat(int(w.pid)); err != nil {
		return err
	}
	for _, tid := range tids {
		ts, err := fs.TaskSched(int(w.pid), tid)
		if errors.Is(err, procmem.ErrProcessGone) {
			continue // the thread exited meanwhile
		}
		if err != nil {
			return err
		}
		w.threads[tid] = &threadSched{base: ts, last: ts}
	}
	return nil
}

// readProcfs fills the software counts since Open from /proc.
func (w *Workload) readProcfs(c *Counts) error {
	st, err := w.fs.ProcStat(int(w.pid))
	if err != nil {
		return err
	}
	c.MinorFaults = st.MinorFaults - min(st.MinorFaults, w.base.MinorFaults)
	c.MajorFaults = st.MajorFaults - min(st.MajorFaults, w.base.MajorFaults)
	ticks := st.UTime + st.STime
	c.TaskClockNs = (ticks - min(ticks, w.base.UTime+w.base.STime)) * (1e9 / procmem.UserHZ)
	tids, err := w.fs.Tasks(int(w.pid))
	if err != nil {
		return err
	}
	for _, t := range w.threads {
		t.seen = false
	}
	for _, tid := range tids {
		ts, err := w.fs.TaskSched(int(w.pid), tid)
		if errors.Is(err, procmem.ErrProcessGone) {
			continue
		}
		if err != nil {
			return err
		}
		t := w.threads[tid]
		if t == nil {
			t = &threadSched{} // born after Open: all of its counts are the workload's
			w.threads[tid] = t
		}
		t.last, t.seen = ts, true
	}
	sum := w.gone
	for tid, t := range w.threads {
		d := procmem.TaskSched{Switches: t.last.Switches - min(t.last.Switches, t.base.Switches),
			Migrations: t.last.Migrations - min(t.last.Migrations, t.base.Migrations)}
		sum.Switches += d.Switches
		sum.Migrations += d.Migrations
		if !t.seen { // exited: keep its counts, not its entry
			w.gone.Switches += d.Switches
			w.gone.Migrations += d.Migrations
			delete(w.threads, tid)
		}
	}
	c.ContextSwitches, c.CPUMigrations = sum.Switches, sum.Migrations
	return nil
}

// Software says where w's software counts come from.
func (w *Workload) Software() Software {
	if w.procfs {
		return SoftwareProcfs
	}
	return SoftwarePerf
}
