package hooksrv

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// procStatus holds the lines of /proc/<pid>/status that pid checks need.
type procStatus struct {
	Tgid  uint32
	NSpid []uint32 // the pid in each nested pid namespace, outermost first
}

// parseStatus reads the Tgid and NSpid lines of a /proc/<pid>/status file.
func parseStatus(b []byte) (procStatus, error) {
	var st procStatus
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
				return st, fmt.Errorf("parse Tgid: %w", err)
			}
			st.Tgid, seenTgid = uint32(n), true
		case "NSpid":
			for f := range bytes.FieldsSeq(val) {
				n, err := strconv.ParseUint(string(f), 10, 32)
				if err != nil {
					return st, fmt.Errorf("parse NSpid: %w", err)
				}
				st.NSpid = append(st.NSpid, uint32(n))
			}
		}
	}
	if !seenTgid {
		return st, fmt.Errorf("parse status: no Tgid line")
	}
	return st, nil
}

func readStatus(procRoot string, pid uint32) (procStatus, error) {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.FormatUint(uint64(pid), 10), "status"))
	if err != nil {
		return procStatus{}, fmt.Errorf("read status: %w", err)
	}
	return parseStatus(b)
}

// maxThreadCache bounds the thread ids a session remembers as verified.
const maxThreadCache = 4096

// pidPolicy decides whether a pid named in a frame belongs to the peer.
type pidPolicy struct {
	procRoot string
	peer     uint32
	nsPID    uint32 // the peer's pid in its own (innermost) namespace, 0 unknown
	threads  map[uint32]bool
}

func newPIDPolicy(procRoot string, peer uint32) *pidPolicy {
	p := &pidPolicy{procRoot: procRoot, peer: peer, threads: map[uint32]bool{}}
	if st, err := readStatus(procRoot, peer); err == nil && len(st.NSpid) > 1 {
		p.nsPID = st.NSpid[len(st.NSpid)-1]
	}
	return p
}

// owns reports whether pid is the peer, the peer as it sees itself inside a
// pid namespace, or a thread of the peer (/proc/<pid>/status Tgid).
func (p *pidPolicy) owns(pid uint32) bool {
	if pid == 0 {
		return false
	}
	if pid == p.peer || (p.nsPID != 0 && pid == p.nsPID) || p.threads[pid] {
		return true
	}
	st, err := readStatus(p.procRoot, pid)
	if err != nil || st.Tgid != p.peer {
		return false
	}
	if len(p.threads) < maxThreadCache {
		p.threads[pid] = true
	}
	return true
}
