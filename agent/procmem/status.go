package procmem

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
)

// ErrBadStatus marks a /proc/PID/status file without a usable Tgid line.
var ErrBadStatus = errors.New("malformed process status")

// Status holds the lines of /proc/PID/status that pid checks and memory
// sampling need. The memory fields are bytes (the file says kB); a kernel
// thread has none of those lines and reads 0.
type Status struct {
	Tgid  uint32   // the thread group (process) the task belongs to
	NSpid []uint32 // the task's pid in each nested pid namespace, outermost first; nil before Linux 4.1

	VmRSS    uint64 // resident set now
	VmHWM    uint64 // peak resident set ("high water mark")
	RssAnon  uint64 // resident anonymous memory (Linux 4.5+)
	RssFile  uint64 // resident file mappings
	RssShmem uint64 // resident shared memory
}

// Status reads /proc/PID/status. pid may name any task (thread) the kernel
// shows there, not only a thread group leader. A task that does not exist
// is ErrProcessGone.
func (f FS) Status(pid int) (Status, error) {
	b, err := os.ReadFile(f.pidPath(pid, "status"))
	if err != nil {
		return Status{}, fmt.Errorf("read status: %w", gone(err))
	}
	return parseStatus(b)
}

// parseStatus reads the "Tgid:\tN", "NSpid:\tN\tM..." and resident
// memory lines ("VmRSS:\t  1234 kB") of a /proc/PID/status file and
// ignores the rest.
func parseStatus(b []byte) (Status, error) {
	var st Status
	seenTgid := false
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		key, val, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		switch string(key) {
		case "Tgid":
			n, err := strconv.ParseUint(string(bytes.TrimSpace(val)), 10, 32)
			if err != nil {
				return Status{}, fmt.Errorf("parse status: Tgid: %w: %w", ErrBadStatus, err)
			}
			st.Tgid, seenTgid = uint32(n), true
		case "NSpid":
			st.NSpid = st.NSpid[:0]
			for f := range bytes.FieldsSeq(val) {
				n, err := strconv.ParseUint(string(f), 10, 32)
				if err != nil {
					return Status{}, fmt.Errorf("parse status: NSpid: %w: %w", ErrBadStatus, err)
				}
				st.NSpid = append(st.NSpid, uint32(n))
			}
		case "VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem":
			n, err := parseKB(val)
			if err != nil {
				return Status{}, fmt.Errorf("parse status: %s: %w: %w", key, ErrBadStatus, err)
			}
			switch string(key) {
			case "VmRSS":
				st.VmRSS = n
			case "VmHWM":
				st.VmHWM = n
			case "RssAnon":
				st.RssAnon = n
			case "RssFile":
				st.RssFile = n
			default:
				st.RssShmem = n
			}
		}
	}
	if !seenTgid {
		return Status{}, fmt.Errorf("parse status: no Tgid line: %w", ErrBadStatus)
	}
	return st, nil
}

// parseKB reads "   1234 kB" as bytes.
func parseKB(val []byte) (uint64, error) {
	num, unit, _ := bytes.Cut(bytes.TrimSpace(val), []byte(" "))
	if string(bytes.TrimSpace(unit)) != "kB" {
		return 0, fmt.Errorf("unit %q, want kB", unit)
	}
	n, err := strconv.ParseUint(string(num), 10, 64)
	if err != nil {
		return 0, err
	}
	if n > math.MaxUint64>>10 {
		return 0, fmt.Errorf("%d kB overflows", n)
	}
	return n << 10, nil
}

// Tasks lists the thread ids of process pid: the numeric entries of
// /proc/PID/task, sorted by name. Threads come and go
// while it reads; a process that does not exist is ErrProcessGone.
func (f FS) Tasks(pid int) ([]int, error) {
	ents, err := os.ReadDir(f.pidPath(pid, "task"))
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", gone(err))
	}
	tids := make([]int, 0, len(ents))
	for _, e := range ents {
		if tid, ok := parseIndexedName(e.Name(), ""); ok {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}
