package tracer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// CPUSource lists the CPUs online now. procmem.FS is one: OnlineCPUs reads
// /sys/devices/system/cpu/online.
type CPUSource interface {
	OnlineCPUs() ([]int, error)
}

// cpuEvents is one perf event opened on every online CPU for all processes,
// each running prog on overflow (the perf fault hook, major faults, walk
// samples). checkCPUs keeps it on every online CPU as CPUs come and go.
type cpuEvents struct {
	what string // for errors and logs
	prog *ebpf.Program
	attr unix.PerfEventAttr
	on   map[int]*cpuEvent
}

// cpuEvent is the event of one CPU.
type cpuEvent struct {
	fd      int
	link    link.Link // nil when attached with the ioctl (older kernels)
	enabled uint64    // its enabled time at the last check, ns
}

func (e *cpuEvent) close() error {
	var err error
	if e.link != nil {
		err = e.link.Close()
	}
	return errors.Join(err, unix.Close(e.fd))
}

// errOffline is perf_event_open's answer for a CPU that is not online.
var errOffline = errors.New("cpu offline")

// openOn opens the event on cpu and attaches the program: a BPF perf link,
// or the ioctl on older kernels.
func (ce *cpuEvents) openOn(cpu int) error {
	fd, err := unix.PerfEventOpen(&ce.attr, -1, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if errors.Is(err, unix.ENODEV) {
		return errOffline
	}
	if err != nil {
		return fmt.Errorf("open %s on cpu %d: %w", ce.what, cpu, err)
	}
	e := &cpuEvent{fd: fd}
	e.link, err = link.AttachRawLink(link.RawLinkOptions{Target: fd, Program: ce.prog, Attach: ebpf.AttachPerfEvent})
	if err != nil {
		e.link = nil
		if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_BPF, ce.prog.FD()); err != nil {
			unix.Close(fd)
			return fmt.Errorf("attach bpf to %s on cpu %d: %w", ce.what, cpu, err)
		}
	}
	if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
		e.close()
		return fmt.Errorf("enable %s on cpu %d: %w", ce.what, cpu, err)
	}
	ce.on[cpu] = e
	return nil
}

// Close closes the event on every CPU.
func (ce *cpuEvents) Close() error {
	var errs []error
	for cpu, e := range ce.on {
		errs = append(errs, e.close())
		delete(ce.on, cpu)
	}
	return errors.Join(errs...)
}

// enabledTime reads how long the event has been enabled (read_format
// PERF_FORMAT_TOTAL_TIME_ENABLED: the count, then that time).
func (e *cpuEvent) enabledTime() (uint64, error) {
	var b [16]byte
	n, err := unix.Read(e.fd, b[:])
	if err != nil {
		return 0, err
	}
	if n != len(b) {
		return 0, fmt.Errorf("read perf event: %d bytes", n)
	}
	return binary.NativeEndian.Uint64(b[8:]), nil
}

// onlineCPUs is the CPU list from Config.CPUs, or every possible CPU (the
// offline ones are skipped when opening) when it cannot be read.
func (t *Tracer) onlineCPUs() []int {
	cpus, err := t.cfg.CPUs.OnlineCPUs()
	if err == nil {
		return slices.DeleteFunc(cpus, func(c int) bool { return c >= t.ncpu })
	}
	if !t.cpuListFailed {
		t.cpuListFailed = true
		t.log.Warn("online CPU list unavailable; opening perf events on every possible CPU, no hotplug", "error", err)
	}
	all := make([]int, t.ncpu)
	for i := range all {
		all[i] = i
	}
	return all
}

// attachPerCPU opens attr on every online CPU for all processes and runs
// prog on each overflow; checkCPUs follows CPU hotplug afterwards. The
// events report their enabled time, which stops when a CPU going offline
// takes them off it.
func (t *Tracer) attachPerCPU(prog *ebpf.Program, attr *unix.PerfEventAttr, what string) error {
	ce := &cpuEvents{what: what, prog: prog, attr: *attr, on: map[int]*cpuEvent{}}
	ce.attr.Read_format = unix.PERF_FORMAT_TOTAL_TIME_ENABLED
	t.closers = append(t.closers, ce)
	for _, cpu := range t.onlineCPUs() {
		if err := ce.openOn(cpu); err != nil && !errors.Is(err, errOffline) {
			return err
		}
	}
	if len(ce.on) == 0 {
		return fmt.Errorf("open %s: no online cpu: %w", what, ErrUnsupported)
	}
	t.cpuEvents = append(t.cpuEvents, ce)
	return nil
}

// checkCPUs keeps every per-CPU event on exactly the online CPUs: it opens
// the events of CPUs that came online, closes those of CPUs gone offline,
// and reopens an event whose enabled time stopped (its CPU went offline
// and came back between two checks, which takes the event off the CPU for
// good). The reader calls it every LivenessInterval.
func (t *Tracer) checkCPUs() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed || len(t.cpuEvents) == 0 {
		return
	}
	online := t.onlineCPUs()
	for _, ce := range t.cpuEvents {
		var opened, closed, reopened []int
		for cpu, e := range ce.on {
			if slices.Contains(online, cpu) {
				en, err := e.enabledTime()
				if err == nil && en != e.enabled {
					e.enabled = en
					continue
				}
				reopened = append(reopened, cpu)
			} else {
				closed = append(closed, cpu)
			}
			if err := e.close(); err != nil {
				t.log.Warn("close perf event", "event", ce.what, "cpu", cpu, "error", err)
			}
			delete(ce.on, cpu)
		}
		for _, cpu := range online {
			if ce.on[cpu] != nil {
				continue
			}
			err := ce.openOn(cpu)
			switch {
			case err == nil && !slices.Contains(reopened, cpu):
				opened = append(opened, cpu)
			case errors.Is(err, errOffline):
			case err != nil:
				t.log.Warn("open perf event on a CPU that came online", "event", ce.what, "cpu", cpu, "error", err)
			}
		}
		if len(opened)+len(closed)+len(reopened) > 0 {
			t.log.Info("CPU hotplug: perf events follow", "event", ce.what,
				"opened", opened, "closed", closed, "reopened", reopened, "cpus", len(ce.on))
		}
	}
}

// perfEvents is the number of per-CPU perf events open now.
func (t *Tracer) perfEvents() int {
	n := 0
	for _, ce := range t.cpuEvents {
		n += len(ce.on)
	}
	return n
}
