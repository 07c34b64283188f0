// Package hooksrv is the node agent's end of the JVM hook: it listens on a
// Unix SOCK_SEQPACKET socket, runs one session per connected JVM, decodes the
// hook's frames and hands typed events to a Handler (the annotator).
//
// # Wire format
//
// The format is specified once, in the C header
// jvmhook/include/strata_hook.h (protocol version 3): a 32-byte header
// (magic "STRH", version, type, length, seq, tid, time) and one body of type
// HELLO, REGISTER, MOVE, ACCESS, FREE, DROPPED, WALK, GC or CHECKED, one
// frame per packet. REGISTER says what the range holds (Block.Kind,
// ObjectGraph, CachedBatch and its Column, Chunk of Chunks, Spark's size of
// the block, the stage and task that put it); FREE says why it ended
// (Event.FreeReason). WALK frames carry the address ranges of a
// deserialized block's objects, found by the hook's walker
// (docs/objectgraph.md), or of a cached DataFrame column's buffers (one
// per batch; the REGISTER range is the first batch's); GC and CHECKED say
// which object graphs' walks hold after a collection, while a column's
// walk holds until its next.
// The constants and offsets in frame.go are checked against that header by
// layout_test.go, which compiles a C program printing offsetof/sizeof; the
// decoder is tested against golden frames produced by the C encoder
// (jvmhook/native/frame.c). Decode is pure: no I/O, no logging.
//
// # Trust
//
// The peer process is taken from SO_PEERCRED when the connection is
// accepted, never from a frame, and every event's ranges belong to
// Session.PID. HELLO, REGISTER and MOVE also name a pid; it must be the peer,
// a thread of the peer (/proc/<tid>/status Tgid), or the peer's pid inside
// its own pid namespace (last NSpid entry), else the frame is rejected and
// counted in Stats.Rejected. Those files are read through procmem under
// Config.FS (the agent's --proc, which must be the host's procfs with
// hostPID, as SO_PEERCRED gives host pids):
//
//   - a foreign REGISTER or MOVE is logged (the first of a session at warn
//     level, later ones at debug) and dropped; the session goes on, because
//     the rest of what the JVM reports is still its own and still useful.
//     The block of a dropped REGISTER stays unknown, so its later frames
//     count in Stats.Unknown.
//   - a foreign HELLO closes the session: every later frame would be
//     attributed to an identity the peer does not own.
//
// The socket file is mode 0666 by default so executors of any user can
// connect (YARN runs containers as the submitting user); the pid binding
// above, not the file mode, is what keeps a peer to its own address space.
// Config.Mode and Config.GID narrow who may connect at all (0660 and the
// group of the users that run executors, say): the kernel checks them at
// connect(2), before the agent sees the peer; the pid binding holds for
// those who may connect.
//
// # Sessions
//
// The first frame must be HELLO, within Config.HelloTimeout of the accept.
// A malformed frame (bad magic, version,
// length, string, reserved field or value, unknown type, an oversized
// packet, a second HELLO, too many live blocks) closes that session with a
// logged reason and counts in Stats.Malformed; other sessions go on, and
// events already delivered stand. MOVE, ACCESS and FREE of a block id that
// is not live are counted in Stats.Unknown and skipped (the hook may have
// dropped the REGISTER because its socket was full). DROPPED frames add the
// hook's newly dropped frames to Stats.DroppedByPeer.
//
// The hook never waits: frames queue in the socket (about 280 with default
// sysctls, about 10900 when net.core.wmem_max allows the 4 MiB SO_SNDBUF
// the hook asks for) and are dropped by the hook when it is full, so a slow
// Handler costs frames, never JVM time. BenchmarkSessionThroughput measures
// a session (read, decode, checks, handler) at about 1.5x the cost of a bare
// packet read on the 2-vCPU dev VM.
//
// # Bounds
//
// The socket is open to every local user, so no one peer may deny hook
// service to the others. Each bound is a Config field (and a strata-agent
// flag), and each refusal is counted in Refusals:
//
//   - Sessions: at most MaxSessionsPerPID per peer process, MaxSessionsPerUID
//     per peer uid and MaxSessions on the node (defaults 4, 256, 1024),
//     counted from accept. A connection past a cap is closed at once, before
//     any frame, and logged; the peer sees EOF. The caps keep the agent's
//     file descriptors for the spool and the collector: the node's cap must
//     stay well below RLIMIT_NOFILE. Peers that share a uid (YARN without
//     the LinuxContainerExecutor runs every container as one user) share
//     that uid's cap.
//   - Idle sessions: no frame for IdleTimeout after HELLO (default 3 min)
//     closes the session like a peer's exit (its blocks are freed). A hook
//     sends DROPPED at least every KeepaliveInterval (30 s) while it has
//     nothing else to say, so an executor idle between jobs stays connected.
//     Before HELLO the limit is HelloTimeout.
//   - Range length: a REGISTER or MOVE naming more than MaxRangeBytes
//     (default 16 GiB, Spark's largest block) is dropped and the session
//     goes on; a dropped MOVE leaves the block at its last range. An ACCESS
//     outside its block's range is dropped the same way.
//   - Live blocks: a session past MaxBlocks (default 65536) is closed as
//     malformed; past MaxBlocksPerUID (131072) or MaxLiveBlocks on the node
//     (262144) a REGISTER of a new block is dropped, the session goes on,
//     and its later frames about that block count as Unknown. Freed blocks
//     and ended sessions give their slots back.
//   - Walks: a walk of more than MaxWalkExtents extents (65536), or one that
//     would take the extents of a session's current walks past
//     MaxSessionExtents (1<<20) or the node's past MaxLiveExtents (1<<22),
//     is dropped and counted (Refusals.WalkTooLarge); its block keeps its
//     previous walk. A cached batch column's walk has one extent per
//     batch: a session reaches MaxSessionExtents at about a million cached
//     batch buffers (an executor caching 200 partitions of 50 columns in
//     100 batches each). A walk is assembled from its parts, which must be
//     consecutive frames: one walk at a time per session is buffered, at
//     most MaxWalkExtents extents.
//
// Resolution time is bounded elsewhere: resolver.Pool takes turns between
// peers, slice by slice.
//
// # Events
//
// Handler.HandleEvent is called synchronously from the session goroutine:
// events of one session arrive in frame order; different sessions call it
// concurrently. A session yields EventSessionStart, block events
// (EventRegister, EventMove, EventAccess, EventFree, EventWalk) that each
// carry the block as registered and its current range, EventGC and
// EventChecked, and exactly one EventSessionEnd, after which all blocks of
// that session are dead and the consumer should drop them (Stats.Active
// already excludes the session when its SessionEnd is delivered). A
// connection that never sends a valid HELLO yields no events.
//
// EventWalk is a whole walk (every part arrived, in order, with the same
// summary) or a STALE mark. A walk whose parts did not all arrive (the
// hook dropped one, or another frame came between two parts) is lost and
// counted in Stats.WalksIncomplete; its block keeps its previous walk. A
// WALK of a block that is not live counts as Unknown; of a block
// registered neither as an object graph nor as a cached batch column, or
// of a column in a state other than WalkDone, in
// Refusals.WalkNotGraphOrBatch.
//
// # Lifecycle
//
//	srv, err := hooksrv.Listen(hooksrv.Config{Path: p}, handler, logger)
//	go srv.Serve(ctx) // returns when ctx is done or Close is called
//	...
//	srv.Close() // stops accepting, ends sessions, waits, removes the socket
package hooksrv
