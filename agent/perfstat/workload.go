package perfstat

import (
	"encoding/binary"
	"errors"
	"fmt"
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

// Workload counts the events of one process with perf events, one per
// thread alive at Open, each inherited by the threads it creates.
type Workload struct {
	pid       uint32
	start     time.Time
	counters  []*counter
	pmuStatus string
}

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
