// Package hooksrv is the node agent's end of the JVM hook: it listens on a
// Unix SOCK_SEQPACKET socket, runs one session per connected JVM, decodes the
// hook's frames (format specified once, in jvmhook/include/strata_hook.h,
// protocol version 3; Decode is pure) and hands typed events to a Handler.
//
//	srv, err := hooksrv.Listen(hooksrv.Config{Path: p}, handler, logger)
//	go srv.Serve(ctx) // returns when ctx is done or Close is called
//	...
//	srv.Close() // stops accepting, ends sessions, waits, removes the socket
//
// # Trust
//
// A session's process is the peer SO_PEERCRED names at accept, never a
// frame's word, and every event's ranges belong to Session.PID. A pid named
// in HELLO, REGISTER or MOVE must be the peer, one of its threads or its pid
// in its own namespace (read under Config.FS, which must be the host's
// procfs): a foreign REGISTER or MOVE is dropped and counted in
// Stats.Rejected, a foreign HELLO closes the session. The socket is mode
// 0666 unless Config.Mode and Config.GID narrow it; the pid binding, not the
// mode, keeps a peer to its own address space.
//
// # Events
//
// Handler.HandleEvent is called synchronously from the session goroutine:
// one session's events in frame order, different sessions concurrently. A
// session yields EventSessionStart, block events (each carrying the block
// as registered and its current range), EventGC, EventChecked, and exactly
// one EventSessionEnd, after which its blocks are dead; a connection with no
// valid HELLO yields none; nor does a JVM whose hook stays off: its
// connection carries one OFF frame instead of HELLO, which the server counts
// by reason (Stats.Off) and logs (pid, reason, detail), and ends. EventWalk
// is a whole walk or a STALE mark, never a partial one. A malformed frame
// ends its session only (Stats.Malformed);
// frames about unknown blocks are skipped (Stats.Unknown). The hook never
// waits on the agent: a slow Handler costs frames (Stats.DroppedByPeer),
// never JVM time.
//
// # Admission state
//
// A session keeps, per live block id, what it checks the block's later
// frames against and what it fills their events with: the block as
// registered, its current range and its current walk's extent count (for
// the caps below). That is the edge's admission state: private to the
// session, dropped with it, read by nobody else. Which blocks are live for
// the agent, with their ranges and walks, is the Handler's to keep (the
// annotator's registry), built from these events.
//
// # Bounds
//
// Every limit that keeps one peer from denying service to the others —
// sessions per pid, uid and node, HelloTimeout and IdleTimeout, range
// length, live blocks per session, uid and node, walk extents per walk,
// session and node — is a Config field (DefaultConfig holds the defaults),
// and each refusal is counted in Refusals. docs/agent.md ("agent/hooksrv")
// says what happens at each.
package hooksrv
