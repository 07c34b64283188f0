package hooksrv

import "github.com/stratatrace/strata/agent/procmem"

// maxThreadCache bounds the thread ids a session remembers as verified.
const maxThreadCache = 4096

// pidPolicy decides whether a pid named in a frame belongs to the peer.
type pidPolicy struct {
	fs      procmem.FS
	peer    uint32
	nsPID   uint32 // the peer's pid in its own (innermost) namespace, 0 unknown
	threads map[uint32]bool
}

func newPIDPolicy(fs procmem.FS, peer uint32) *pidPolicy {
	p := &pidPolicy{fs: fs, peer: peer, threads: map[uint32]bool{}}
	if st, err := fs.Status(int(peer)); err == nil && len(st.NSpid) > 1 {
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
	st, err := p.fs.Status(int(pid))
	if err != nil || st.Tgid != p.peer {
		return false
	}
	if len(p.threads) < maxThreadCache {
		p.threads[pid] = true
	}
	return true
}
