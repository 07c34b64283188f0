package hooksrv

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"time"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
	"golang.org/x/sys/unix"
)

// admitted is a block the session took in: what its later frames are
// checked against and their events carry (the package comment's admission
// state; the Handler's registry, not this, is the agent's record of it).
type admitted struct {
	Block
	vaddr, length uint64
	extents       int // of its current walk, counted against the extent caps
}

// pendingWalk is a walk whose first parts arrived; the parts of one walk
// are consecutive frames, so a session has one at most.
type pendingWalk struct {
	blockID uint64
	next    uint16 // the part expected next
	parts   uint16
	sum     WalkSummary
	extents []Extent
	refused bool // over a cap: its parts are read and dropped
}

// session is the state of one connection; only its own goroutine uses it.
type session struct {
	s       *Server
	conn    *net.UnixConn
	log     *slog.Logger
	info    *Session // nil until HELLO
	pids    *pidPolicy
	blocks  map[uint64]*admitted // by hook block id; see admitted
	extents int                  // the current walks' extents of every block
	pending *pendingWalk         // a walk whose parts are arriving
	dropped uint64               // last DROPPED report
	sent    uint64
	// rejected counts this session's foreign-pid frames; only the first is
	// logged at warn level.
	rejected uint64
}

// peerCred reads SO_PEERCRED of a connection.
func peerCred(conn *net.UnixConn) (*unix.Ucred, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("get peer cred: %w", err)
	}
	var cred *unix.Ucred
	var gerr error
	if err := raw.Control(func(fd uintptr) {
		cred, gerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return nil, fmt.Errorf("get peer cred: %w", err)
	}
	if gerr != nil {
		return nil, fmt.Errorf("get peer cred: %w", gerr)
	}
	return cred, nil
}

func (s *Server) serveConn(conn *net.UnixConn, cred *unix.Ucred) {
	defer s.untrack(conn)
	defer conn.Close()
	accepted := time.Now()
	ss := &session{
		s:      s,
		conn:   conn,
		log:    s.log.With("peer_pid", cred.Pid, "peer_uid", cred.Uid),
		pids:   newPIDPolicy(s.cfg.FS, uint32(cred.Pid)),
		blocks: map[uint64]*admitted{},
	}
	cause := ss.run(cred, accepted)
	s.putBlocks(cred.Uid, len(ss.blocks))
	if ss.extents > 0 {
		_ = s.takeExtents(-ss.extents) // giving back never fails
	}
	if (s.isClosed() && !errors.Is(cause, ErrMalformed)) || errors.Is(cause, errOffReported) {
		cause = nil // ended by Close, not by the peer; or the peer's OFF said all
	}
	switch {
	case errors.Is(cause, ErrHelloTimeout):
		s.refused.helloTimeout.Add(1)
	case errors.Is(cause, ErrIdle):
		s.refused.idle.Add(1)
	}
	if cause == nil {
		ss.log.Debug("session ended", "blocks", len(ss.blocks), "rejected", ss.rejected)
	} else {
		if errors.Is(cause, ErrMalformed) {
			s.c.malformed.Add(1)
		}
		ss.log.Warn("session closed", "reason", cause, "blocks", len(ss.blocks), "rejected", ss.rejected)
	}
	s.mu.Lock()
	s.forgetLocked(conn) // its slot is free before Active says so
	s.mu.Unlock()
	s.c.active.Add(^uint64(0)) // before SessionEnd, so a handler sees consistent Stats
	if ss.info != nil {
		now := time.Now()
		s.handler.HandleEvent(s.ctx, Event{
			Kind: EventSessionEnd, Session: ss.info, Time: now, Received: now,
			Err: cause, PeerDropped: ss.dropped, PeerSent: ss.sent,
		})
	}
}

// run reads frames until the peer goes away or a frame ends the session. It
// returns nil when the peer closed, else why the session was closed.
func (ss *session) run(cred *unix.Ucred, accepted time.Time) error {
	buf := make([]byte, FrameMax+1)
	if err := ss.conn.SetReadDeadline(accepted.Add(ss.s.cfg.HelloTimeout)); err != nil {
		return fmt.Errorf("set hello deadline: %w", err)
	}
	idle := ss.s.cfg.IdleTimeout
	var armed time.Time // when the idle deadline was last pushed back
	for {
		// Push the idle deadline back at most every idle/8: one timer
		// update per few thousand frames, not one per frame.
		if now := time.Now(); ss.info != nil && idle > 0 && now.Sub(armed) > idle/8 {
			if err := ss.conn.SetReadDeadline(now.Add(idle)); err != nil {
				return fmt.Errorf("set idle deadline: %w", err)
			}
			armed = now
		}
		n, _, flags, _, err := ss.conn.ReadMsgUnix(buf, nil)
		if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
			return nil
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			if ss.info != nil {
				return fmt.Errorf("read frame: %w (%v; hooks send DROPPED every %v)", ErrIdle, idle, KeepaliveInterval)
			}
			return fmt.Errorf("start session: %w after %v", ErrHelloTimeout, ss.s.cfg.HelloTimeout)
		}
		if err != nil {
			return fmt.Errorf("read frame: %w", err)
		}
		if flags&unix.MSG_TRUNC != 0 || n > FrameMax {
			return fmt.Errorf("read frame: %w: %w", ErrMalformed, ErrFrameTooLarge)
		}
		received := time.Now()
		f, err := Decode(buf[:n])
		if err != nil {
			return err
		}
		if ss.info == nil {
			if o, ok := f.Body.(*Off); ok {
				return ss.off(o)
			}
			if err := ss.hello(f, cred, accepted, received); err != nil {
				return err
			}
			if err := ss.conn.SetReadDeadline(time.Time{}); err != nil {
				return fmt.Errorf("clear hello deadline: %w", err)
			}
			continue
		}
		if err := ss.frame(f, received); err != nil {
			return err
		}
	}
}

// hello handles the first frame of a session.
func (ss *session) hello(f Frame, cred *unix.Ucred, accepted, received time.Time) error {
	h, ok := f.Body.(*Hello)
	if !ok {
		return fmt.Errorf("start session: %w: %w: got %v", ErrMalformed, ErrNoHello, f.Type)
	}
	if !ss.pids.owns(h.PID) {
		ss.s.c.rejected.Add(1)
		ss.rejected++
		return fmt.Errorf("start session: %w: HELLO pid %d", ErrForeignPID, h.PID)
	}
	ss.s.c.frames.Add(1)
	ss.info = &Session{
		ID: ss.s.nextID.Add(1), PID: uint32(cred.Pid), UID: cred.Uid, GID: cred.Gid,
		HookPID: h.PID, AppID: h.AppID, ExecutorID: h.ExecutorID, PageSize: h.PageSize,
		ByteArrayBase: h.ByteArrayBase, LongArrayBase: h.LongArrayBase, RefSize: h.RefSize, Walk: h.Walk,
		HelloTime: f.Time(), HelloMonoNs: h.MonotonicNs, Accepted: accepted,
	}
	ss.log = ss.log.With("session", ss.info.ID, "app_id", h.AppID, "executor_id", h.ExecutorID)
	ss.log.Info("session started")
	ss.emit(f, received, Event{Kind: EventSessionStart})
	return nil
}

// errOffReported ends a connection whose OFF was taken: it says nothing more.
var errOffReported = errors.New("hook off, reported")

// off takes a connection's first frame when it is OFF: the JVM's hook is
// off. It is counted by reason and logged once (a hook sends one OFF per
// JVM, on a connection of its own), and the connection ends.
func (ss *session) off(o *Off) error {
	if !ss.pids.owns(o.PID) {
		ss.s.c.rejected.Add(1)
		ss.rejected++
		return fmt.Errorf("start session: %w: OFF pid %d", ErrForeignPID, o.PID)
	}
	ss.s.c.frames.Add(1)
	ss.s.c.off[o.Reason].Add(1)
	ss.log.Warn("JVM hook off", "pid", o.PID, "reason", o.Reason, "java", o.Java, "detail", o.Detail)
	return errOffReported
}

// reject counts and logs a frame naming a foreign pid; the frame is dropped
// and the session goes on.
func (ss *session) reject(f Frame, pid uint32, blockID uint64) {
	ss.s.c.rejected.Add(1)
	ss.rejected++
	lvl := slog.LevelDebug
	if ss.rejected == 1 {
		lvl = slog.LevelWarn
	}
	ss.log.Log(ss.s.ctx, lvl, "frame rejected", "type", f.Type, "seq", f.Seq,
		"claimed_pid", pid, "block", blockID, "reason", ErrForeignPID)
}

// unknown counts a frame about a block that is not live.
func (ss *session) unknown(f Frame, blockID uint64) {
	ss.s.c.unknown.Add(1)
	ss.log.Debug("frame for unknown block", "type", f.Type, "seq", f.Seq, "block", blockID)
}

// frame handles every frame after HELLO.
func (ss *session) frame(f Frame, received time.Time) error {
	if p := ss.pending; p != nil {
		if w, ok := f.Body.(*WalkPart); !ok || w.BlockID != p.blockID || w.Part != p.next || w.Part == 0 {
			ss.incomplete(f, p)
		}
	}
	switch b := f.Body.(type) {
	case *Hello:
		return fmt.Errorf("handle frame: %w: %w", ErrMalformed, ErrDuplicateHello)
	case *Off:
		return fmt.Errorf("handle frame: %w: %w", ErrMalformed, ErrOffInSession)
	case *Register:
		if !ss.pids.owns(b.PID) {
			ss.reject(f, b.PID, b.BlockID)
			return nil
		}
		if ss.refuseRange(f, b.BlockID, b.Vaddr, b.Length) {
			return nil
		}
		if old, live := ss.blocks[b.BlockID]; live {
			_ = ss.setExtents(old, 0) // a block put again starts without a walk; giving back never fails
		} else {
			if len(ss.blocks) >= ss.s.cfg.MaxBlocks {
				return fmt.Errorf("handle frame: %w: %w: %d", ErrMalformed, ErrTooManyBlocks, ss.s.cfg.MaxBlocks)
			}
			if err := ss.s.takeBlock(ss.info.UID); err != nil {
				ss.refuseFrame(f, nil, b.BlockID, err) // counted by takeBlock
				return nil
			}
		}
		bs := &admitted{Block: b.block(), vaddr: b.Vaddr, length: b.Length}
		ss.blocks[b.BlockID] = bs
		ss.s.c.frames.Add(1)
		ss.emitBlock(f, received, EventRegister, stratav1.AccessKind_ACCESS_KIND_ALLOC, bs, Event{})
	case *Move:
		if !ss.pids.owns(b.PID) {
			ss.reject(f, b.PID, b.BlockID)
			return nil
		}
		bs, ok := ss.blocks[b.BlockID]
		if !ok {
			ss.unknown(f, b.BlockID)
			return nil
		}
		if ss.refuseRange(f, b.BlockID, b.Vaddr, b.Length) {
			return nil // the block keeps its last range, as if the hook had dropped the frame
		}
		bs.vaddr, bs.length = b.Vaddr, b.Length
		ss.s.c.frames.Add(1)
		ss.emitBlock(f, received, EventMove, stratav1.AccessKind_ACCESS_KIND_MOVE, bs, Event{GCEpoch: b.GCEpoch})
	case *Access:
		bs, ok := ss.blocks[b.BlockID]
		if !ok {
			ss.unknown(f, b.BlockID)
			return nil
		}
		if b.Length != 0 && (b.Offset >= bs.length || b.Length > bs.length-b.Offset) {
			ss.refuseFrame(f, &ss.s.refused.accessOutside, b.BlockID,
				fmt.Errorf("%w: offset %d length %d of a %d-byte block", ErrAccessOutside, b.Offset, b.Length, bs.length))
			return nil
		}
		ss.s.c.frames.Add(1)
		ss.emitBlock(f, received, EventAccess, b.Kind, bs, Event{AccessOffset: b.Offset, AccessLength: b.Length})
	case *Free:
		bs, ok := ss.blocks[b.BlockID]
		if !ok {
			ss.unknown(f, b.BlockID)
			return nil
		}
		delete(ss.blocks, b.BlockID)
		ss.s.putBlocks(ss.info.UID, 1)
		ss.setExtents(bs, 0)
		ss.s.c.frames.Add(1)
		ss.emitBlock(f, received, EventFree, stratav1.AccessKind_ACCESS_KIND_FREE, bs, Event{FreeReason: b.Reason})
	case *Dropped:
		if b.Dropped > ss.dropped {
			ss.s.c.droppedByPeer.Add(b.Dropped - ss.dropped)
			ss.dropped = b.Dropped
		}
		ss.sent = b.Sent
		ss.s.c.frames.Add(1)
	case *WalkPart:
		ss.walkPart(f, b, received)
	case *GC:
		ss.s.c.frames.Add(1)
		ss.emit(f, received, Event{Kind: EventGC, GCEpoch: b.GCEpoch})
	case *Checked:
		ss.s.c.frames.Add(1)
		ss.emit(f, received, Event{Kind: EventChecked, GCEpoch: b.GCEpoch})
	}
	return nil
}

// incomplete drops a walk whose next part did not follow: the hook
// dropped it, and the block keeps its previous walk.
func (ss *session) incomplete(f Frame, p *pendingWalk) {
	ss.pending = nil
	if p.refused {
		return
	}
	ss.s.c.walksIncomplete.Add(1)
	ss.log.Debug("walk incomplete", "block", p.blockID, "walk", p.sum.Seq, "parts", p.parts, "got", p.next, "next_type", f.Type, "next_seq", f.Seq)
}

// walkPart takes one WALK frame: the first part of a walk starts it, the
// last delivers it whole as EventWalk.
func (ss *session) walkPart(f Frame, w *WalkPart, received time.Time) {
	ss.s.c.frames.Add(1)
	if w.Part > 0 {
		p := ss.pending
		if p == nil {
			// Its first parts were dropped (or refused): nothing to add to.
			return
		}
		if p.refused {
			if w.Part+1 == p.parts {
				ss.pending = nil
			} else {
				p.next++
			}
			return
		}
		if w.Parts != p.parts || w.WalkSummary != p.sum ||
			(len(w.Extents) > 0 && len(p.extents) > 0 && w.Extents[0].Vaddr < p.extents[len(p.extents)-1].End()) ||
			len(p.extents)+len(w.Extents) > int(p.sum.TotalExtents) {
			ss.incomplete(f, p)
			return
		}
		p.extents = append(p.extents, w.Extents...)
		p.next++
		if p.next < p.parts {
			return
		}
		ss.pending = nil
		if len(p.extents) != int(p.sum.TotalExtents) {
			ss.incomplete(f, p)
			return
		}
		ss.deliverWalk(f, received, p.blockID, p.sum, p.extents)
		return
	}
	bs, ok := ss.blocks[w.BlockID]
	if !ok {
		ss.unknown(f, w.BlockID)
		ss.skipWalk(w)
		return
	}
	switch {
	case bs.CachedBatch && w.State != WalkDone:
		ss.refuseFrame(f, &ss.s.refused.walkNotGraphOrBatch, w.BlockID, fmt.Errorf("%w: a cached batch column's walk in state %v", ErrNotGraphOrBatch, w.State))
		ss.skipWalk(w)
		return
	case !bs.ObjectGraph && !bs.CachedBatch:
		ss.refuseFrame(f, &ss.s.refused.walkNotGraphOrBatch, w.BlockID, ErrNotGraphOrBatch)
		ss.skipWalk(w)
		return
	}
	if err := ss.checkExtents(bs, int(w.TotalExtents)); err != nil {
		ss.refuseFrame(f, &ss.s.refused.walkTooLarge, w.BlockID, err)
		ss.skipWalk(w)
		return
	}
	if w.Parts == 1 {
		if len(w.Extents) != int(w.TotalExtents) {
			ss.s.c.walksIncomplete.Add(1)
			return
		}
		ss.deliverWalk(f, received, w.BlockID, w.WalkSummary, w.Extents)
		return
	}
	p := &pendingWalk{blockID: w.BlockID, next: 1, parts: w.Parts, sum: w.WalkSummary,
		extents: make([]Extent, 0, w.TotalExtents)}
	p.extents = append(p.extents, w.Extents...)
	ss.pending = p
}

// refuseRange drops (and counts) a REGISTER's or MOVE's range that is
// longer than MaxRangeBytes or not in user space; true when it did.
func (ss *session) refuseRange(f Frame, blockID, vaddr, length uint64) bool {
	switch {
	case length > ss.s.cfg.MaxRangeBytes:
		ss.refuseFrame(f, &ss.s.refused.rangeTooLong, blockID, fmt.Errorf("%w: %d bytes (max %d)", ErrRangeTooLong, length, ss.s.cfg.MaxRangeBytes))
	case !inUserSpace(vaddr, length):
		ss.refuseFrame(f, &ss.s.refused.outsideUser, blockID, fmt.Errorf("%w: %#x, %d bytes", ErrOutsideUser, vaddr, length))
	default:
		return false
	}
	return true
}

// skipWalk makes the later parts of a walk whose first part was not taken
// pass without counting them as incomplete.
func (ss *session) skipWalk(w *WalkPart) {
	if w.Parts > 1 {
		ss.pending = &pendingWalk{blockID: w.BlockID, next: 1, parts: w.Parts, refused: true}
	}
}

// checkExtents says whether bs may hold a walk of n extents under the
// walk's, the session's and the node's caps (the node's is only looked at
// here; setExtents takes it).
func (ss *session) checkExtents(bs *admitted, n int) error {
	cfg := &ss.s.cfg
	switch {
	case n > cfg.MaxWalkExtents:
		return fmt.Errorf("%w: %d extents (max %d)", ErrWalkTooLarge, n, cfg.MaxWalkExtents)
	case ss.extents-bs.extents+n > cfg.MaxSessionExtents:
		return fmt.Errorf("%w: the session would hold %d extents (max %d)", ErrWalkTooLarge, ss.extents-bs.extents+n, cfg.MaxSessionExtents)
	}
	return nil
}

// setExtents makes n the extents bs's current walk holds, against the
// node's cap.
func (ss *session) setExtents(bs *admitted, n int) error {
	if err := ss.s.takeExtents(n - bs.extents); err != nil {
		return err
	}
	ss.extents += n - bs.extents
	bs.extents = n
	return nil
}

func (ss *session) deliverWalk(f Frame, received time.Time, blockID uint64, sum WalkSummary, extents []Extent) {
	bs := ss.blocks[blockID] // live: a FREE between two parts would have ended the walk
	for _, x := range extents {
		if !inUserSpace(x.Vaddr, x.Length) {
			ss.refuseFrame(f, &ss.s.refused.outsideUser, blockID, fmt.Errorf("%w: walk extent %#x, %d bytes", ErrOutsideUser, x.Vaddr, x.Length))
			return
		}
	}
	err := ss.checkExtents(bs, len(extents))
	if err == nil {
		err = ss.setExtents(bs, len(extents))
	}
	if err != nil {
		ss.refuseFrame(f, &ss.s.refused.walkTooLarge, blockID, err)
		return
	}
	ss.s.c.walks.Add(1)
	ss.emitBlock(f, received, EventWalk, stratav1.AccessKind_ACCESS_KIND_MOVE, bs, Event{GCEpoch: sum.GCEpoch, Walk: &Walk{
		Seq: sum.Seq, GCEpoch: sum.GCEpoch, State: sum.State, Objects: sum.Objects, Bytes: sum.Bytes,
		SharedObjects: sum.SharedObjects, SharedBytes: sum.SharedBytes, OpaqueObjects: sum.OpaqueObjects,
		Extents: extents,
	}})
}

func (ss *session) emitBlock(f Frame, received time.Time, kind EventKind, access stratav1.AccessKind, bs *admitted, ev Event) {
	ev.Kind, ev.Access, ev.Block, ev.Vaddr, ev.Length = kind, access, bs.Block, bs.vaddr, bs.length
	ss.emit(f, received, ev)
}

// emit fills the fields every frame event shares and hands ev to the handler.
func (ss *session) emit(f Frame, received time.Time, ev Event) {
	ev.Session, ev.Seq, ev.TID, ev.Time, ev.Received = ss.info, f.Seq, f.TID, f.Time(), received
	ss.s.handler.HandleEvent(ss.s.ctx, ev)
}
