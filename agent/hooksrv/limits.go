package hooksrv

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Bounds of Config, so that no one peer can deny hook service to the
// others; docs/agent.md ("agent/hooksrv", "Bounds") says what happens at
// each.
const (
	DefaultMaxSessions       = 1024
	DefaultMaxSessionsPerUID = 256
	DefaultMaxSessionsPerPID = 4
	// DefaultMaxRangeBytes is the largest block Spark can make: a long[]
	// of 2^31-1 elements, which is also TaskMemoryManager's largest page.
	DefaultMaxRangeBytes   = 16 << 30
	DefaultMaxBlocksPerUID = 1 << 17
	DefaultMaxLiveBlocks   = 1 << 18
	// A walk's extents: 65536 hold a block whose objects lie in as many
	// separate page runs; a session's and the node's current walks hold 16
	// and 64 MiB of extents at most.
	DefaultMaxWalkExtents    = 1 << 16
	DefaultMaxSessionExtents = 1 << 20
	DefaultMaxLiveExtents    = 1 << 22
)

// UserSpaceEnd bounds every range a hook may name (REGISTER, MOVE, walk
// extents): it must end at or below it. It is the end of x86-64 user space
// with 5-level paging (2^56); every kernel address is above it, with 4 or 5
// levels, so no hook can have the agent resolve or count kernel memory.
const UserSpaceEnd = 1 << 56

// inUserSpace says whether [vaddr, vaddr+length) ends at or below
// UserSpaceEnd.
func inUserSpace(vaddr, length uint64) bool {
	return vaddr <= UserSpaceEnd && length <= UserSpaceEnd-vaddr
}

// Errors that end or refuse a session, or refuse one frame.
var (
	ErrTooManySessions = errors.New("too many hook sessions")
	ErrIdle            = errors.New("no frame within the idle timeout")
	ErrRangeTooLong    = errors.New("range longer than the limit")
	ErrOutsideUser     = errors.New("range outside user space")
	ErrAccessOutside   = errors.New("access outside its block")
	ErrBlockLimit      = errors.New("live block limit reached")
	ErrWalkTooLarge    = errors.New("walk over the extent limit")
	ErrNotGraphOrBatch = errors.New("walk of a block that is not an object graph or cached batch")
)

// Refusals count what the server's bounds turned away since Listen.
type Refusals struct {
	// Connections closed at accept because a session cap was reached:
	// the node's (MaxSessions), the peer uid's or the peer pid's.
	SessionsTotal, SessionsPerUID, SessionsPerPID uint64
	HelloTimeout                                  uint64 // closed before HELLO (HelloTimeout)
	Idle                                          uint64 // closed after IdleTimeout without a frame
	RangeTooLong                                  uint64 // REGISTER or MOVE over MaxRangeBytes, dropped
	// REGISTERs, MOVEs and walks naming an address above UserSpaceEnd
	// (a kernel address), dropped.
	OutsideUserSpace uint64
	AccessOutside    uint64 // ACCESS not inside its block, dropped
	// REGISTERs of a new block dropped at the uid's or the node's cap.
	BlocksPerUID, BlocksPerNode uint64
	// Walks dropped at MaxWalkExtents or the session's or node's extent
	// cap, and walks of a block registered neither as an object graph nor
	// as a cached batch column (or of a column, in a state other than
	// WalkDone).
	WalkTooLarge, WalkNotGraphOrBatch uint64
}

type refusalCounters struct {
	sessionsTotal, sessionsPerUID, sessionsPerPID, helloTimeout, idle,
	rangeTooLong, outsideUser, accessOutside, blocksPerUID, blocksPerNode, walkTooLarge, walkNotGraphOrBatch atomic.Uint64
}

// Refusals returns a snapshot of the refusal counters.
func (s *Server) Refusals() Refusals {
	r := &s.refused
	return Refusals{
		SessionsTotal: r.sessionsTotal.Load(), SessionsPerUID: r.sessionsPerUID.Load(),
		SessionsPerPID: r.sessionsPerPID.Load(), HelloTimeout: r.helloTimeout.Load(), Idle: r.idle.Load(),
		RangeTooLong: r.rangeTooLong.Load(), OutsideUserSpace: r.outsideUser.Load(), AccessOutside: r.accessOutside.Load(),
		BlocksPerUID: r.blocksPerUID.Load(), BlocksPerNode: r.blocksPerNode.Load(),
		WalkTooLarge: r.walkTooLarge.Load(), WalkNotGraphOrBatch: r.walkNotGraphOrBatch.Load(),
	}
}

// LiveBlocks returns the blocks registered and not freed, over all
// sessions: what MaxLiveBlocks bounds.
func (s *Server) LiveBlocks() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.liveBlocks
}

// peerID is what the server counts a connection under.
type peerID struct {
	uid uint32
	pid int32
}

// admitLocked decides whether a new connection from cred may open a
// session, and counts it when it may. The caller holds mu.
func (s *Server) admitLocked(conn *net.UnixConn, p peerID) error {
	switch {
	case len(s.sessions) >= s.cfg.MaxSessions:
		s.refused.sessionsTotal.Add(1)
		return fmt.Errorf("%w: %d open on the node (max %d)", ErrTooManySessions, len(s.sessions), s.cfg.MaxSessions)
	case s.uidSessions[p.uid] >= s.cfg.MaxSessionsPerUID:
		s.refused.sessionsPerUID.Add(1)
		return fmt.Errorf("%w: %d open for uid %d (max %d)", ErrTooManySessions, s.uidSessions[p.uid], p.uid, s.cfg.MaxSessionsPerUID)
	case s.pidSessions[p.pid] >= s.cfg.MaxSessionsPerPID:
		s.refused.sessionsPerPID.Add(1)
		return fmt.Errorf("%w: %d open for pid %d (max %d)", ErrTooManySessions, s.pidSessions[p.pid], p.pid, s.cfg.MaxSessionsPerPID)
	}
	s.sessions[conn] = p
	s.uidSessions[p.uid]++
	s.pidSessions[p.pid]++
	return nil
}

// forgetLocked undoes admitLocked; the caller holds mu.
func (s *Server) forgetLocked(conn *net.UnixConn) {
	p, ok := s.sessions[conn]
	if !ok {
		return
	}
	delete(s.sessions, conn)
	decr(s.uidSessions, p.uid, 1)
	decr(s.pidSessions, p.pid, 1)
}

func decr[K comparable](m map[K]int, k K, n int) {
	if m[k] -= n; m[k] <= 0 {
		delete(m, k)
	}
}

// refuse closes a connection a cap turned away, before any session exists.
func (s *Server) refuse(conn *net.UnixConn, cred *unix.Ucred, err error) {
	conn.Close()
	args := []any{"reason", err}
	if cred != nil {
		args = append(args, "peer_pid", cred.Pid, "peer_uid", cred.Uid)
	}
	s.log.Warn("hook connection refused", args...)
}

// takeBlock reserves one live block for uid against the uid's and the
// node's caps, counting a refusal when either is reached.
func (s *Server) takeBlock(uid uint32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.liveBlocks >= s.cfg.MaxLiveBlocks {
		s.refused.blocksPerNode.Add(1)
		return fmt.Errorf("%w: %d on the node (max %d)", ErrBlockLimit, s.liveBlocks, s.cfg.MaxLiveBlocks)
	}
	if n := s.uidBlocks[uid]; n >= s.cfg.MaxBlocksPerUID {
		s.refused.blocksPerUID.Add(1)
		return fmt.Errorf("%w: %d for uid %d (max %d)", ErrBlockLimit, n, uid, s.cfg.MaxBlocksPerUID)
	}
	s.liveBlocks++
	s.uidBlocks[uid]++
	return nil
}

// takeExtents changes the node's count of current walk extents by delta,
// refusing a growth past MaxLiveExtents.
func (s *Server) takeExtents(delta int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if delta > 0 && s.liveExtents+delta > s.cfg.MaxLiveExtents {
		return fmt.Errorf("%w: %d extents on the node, %d more (max %d)", ErrWalkTooLarge, s.liveExtents, delta, s.cfg.MaxLiveExtents)
	}
	s.liveExtents += delta
	return nil
}

// putBlocks releases n live blocks of uid.
func (s *Server) putBlocks(uid uint32, n int) {
	if n == 0 {
		return
	}
	s.mu.Lock()
	s.liveBlocks -= n
	decr(s.uidBlocks, uid, n)
	s.mu.Unlock()
}

// refuseFrame counts (in c, unless nil) and logs a frame a bound dropped;
// the session goes on.
func (ss *session) refuseFrame(f Frame, c *atomic.Uint64, blockID uint64, err error) {
	if c != nil {
		c.Add(1)
	}
	ss.log.Log(ss.s.ctx, slog.LevelWarn, "frame refused", "type", f.Type, "seq", f.Seq, "block", blockID, "reason", err)
}
