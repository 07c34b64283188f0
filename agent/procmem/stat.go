package procmem

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
)

// ErrBadStat marks a /proc/PID/stat or /proc/PID/task/TID/sched file this
// package cannot read.
var ErrBadStat = errors.New("malformed process stat")

// UserHZ is the unit of the times in /proc/PID/stat (clock ticks of
// USER_HZ, which Linux fixes at 100 for every architecture it exports to
// user space).
const UserHZ = 100

// ProcStat holds the counters of /proc/PID/stat that workload counting
// needs. For a process (thread group leader) they cover every thread,
// those that exited included.
type ProcStat struct {
	MinorFaults, MajorFaults uint64 // minflt, majflt
	UTime, STime             uint64 // clock ticks (UserHZ) in user and kernel mode
	Nice                     int    // nice value, -20 to 19
}

// ProcStat reads /proc/PID/stat. A process that does not exist is
// ErrProcessGone.
func (f FS) ProcStat(pid int) (ProcStat, error) {
	b, err := os.ReadFile(f.pidPath(pid, "stat"))
	if err != nil {
		return ProcStat{}, fmt.Errorf("read stat: %w", gone(err))
	}
	return parseProcStat(b)
}

// TaskStat reads /proc/PID/task/TID/stat: one thread's counts and nice
// value. A thread that does not exist is ErrProcessGone.
func (f FS) TaskStat(pid, tid int) (ProcStat, error) {
	b, err := os.ReadFile(f.pidPath(pid, "task/"+strconv.Itoa(tid)+"/stat"))
	if err != nil {
		return ProcStat{}, fmt.Errorf("read task stat: %w", gone(err))
	}
	return parseProcStat(b)
}

// parseProcStat reads "pid (comm) state ppid ..." (proc(5)): the command
// may hold spaces and parentheses, so fields are counted after its last
// ')'. minflt, majflt, utime and stime are fields 10, 12, 14 and 15, nice
// field 19.
func parseProcStat(b []byte) (ProcStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return ProcStat{}, fmt.Errorf("parse stat: no command: %w", ErrBadStat)
	}
	f := bytes.Fields(b[i+1:]) // f[0] is field 3, state
	if len(f) < 17 {
		return ProcStat{}, fmt.Errorf("parse stat: %d fields: %w", len(f)+2, ErrBadStat)
	}
	var v [4]uint64
	for k, field := range []int{10, 12, 14, 15} {
		n, err := strconv.ParseUint(string(f[field-3]), 10, 64)
		if err != nil {
			return ProcStat{}, fmt.Errorf("parse stat: field %d: %w: %w", field, ErrBadStat, err)
		}
		v[k] = n
	}
	nice, err := strconv.Atoi(string(f[19-3]))
	if err != nil {
		return ProcStat{}, fmt.Errorf("parse stat: field 19: %w: %w", ErrBadStat, err)
	}
	return ProcStat{MinorFaults: v[0], MajorFaults: v[1], UTime: v[2], STime: v[3], Nice: nice}, nil
}

// TaskSched holds the scheduler counts of one thread.
type TaskSched struct {
	Switches   uint64 // context switches, voluntary and not
	Migrations uint64 // moves to another CPU
}

// TaskSched reads /proc/PID/task/TID/sched (kernels built with
// CONFIG_SCHED_DEBUG, the distributions' default). A thread that does not
// exist is ErrProcessGone.
func (f FS) TaskSched(pid, tid int) (TaskSched, error) {
	b, err := os.ReadFile(f.pidPath(pid, "task/"+strconv.Itoa(tid)+"/sched"))
	if err != nil {
		return TaskSched{}, fmt.Errorf("read sched: %w", gone(err))
	}
	return parseTaskSched(b)
}

// parseTaskSched reads the "nr_switches : N" and "se.nr_migrations : N"
// lines of a sched file and ignores the rest.
func parseTaskSched(b []byte) (TaskSched, error) {
	var s TaskSched
	seen := 0
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		key, val, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		var dst *uint64
		switch string(bytes.TrimSpace(key)) {
		case "nr_switches":
			dst = &s.Switches
		case "se.nr_migrations":
			dst = &s.Migrations
		default:
			continue
		}
		n, err := strconv.ParseUint(string(bytes.TrimSpace(val)), 10, 64)
		if err != nil {
			return TaskSched{}, fmt.Errorf("parse sched: %s: %w: %w", bytes.TrimSpace(key), ErrBadStat, err)
		}
		*dst = n
		seen++
	}
	if seen != 2 {
		return TaskSched{}, fmt.Errorf("parse sched: no nr_switches or se.nr_migrations line: %w", ErrBadStat)
	}
	return s, nil
}
