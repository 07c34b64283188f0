/*
 * strata_hook.h - the wire format between the Strata JVM hook and the node
 * agent (agent/hooksrv). This header is the one specification of the format;
 * the Go decoder's constants are checked against it by a layout test
 * (agent/hooksrv/layout_test.go), never copied by hand.
 *
 * PROTOCOL VERSION 3
 *
 * Version 3 adds the objects of deserialized blocks: WALK frames carry the
 * address ranges of the objects reachable from a block's array, GC and
 * CHECKED frames say which walks still hold after a collection, HELLO says
 * whether the hook walks, and REGISTER carries Spark's size of the block and
 * the column of a cached DataFrame block, whose buffers WALK frames carry
 * too (one hook block per column). A receiver accepts
 * exactly its own version; there is no negotiation (the hook and the agent
 * ship together). OFF, a hook saying why it stays off in its JVM, was added
 * to version 3 without changing any other frame: a receiver that predates it
 * closes the connection on it as an unknown type, which costs the hook nothing.
 *
 * Transport
 * ---------
 * An AF_UNIX SOCK_SEQPACKET socket (default path /run/strata/hook.sock). One
 * connection per JVM process; its first frame is HELLO. Every packet carries
 * exactly one frame. A hook that stays off in its JVM opens instead a
 * connection whose first and only frame is OFF.
 *
 * Why SEQPACKET and not STREAM: the hook must never block a JVM thread, so it
 * sends with MSG_DONTWAIT and drops the frame when the socket is full. On a
 * SEQPACKET socket a send either queues the whole packet or fails with EAGAIN:
 * a frame is dropped atomically and the receiver never sees half of one. On a
 * STREAM socket a non-blocking send may write part of a frame, and the hook
 * would then have to buffer and finish it later (allocation, a flusher thread,
 * or a corrupted stream). SEQPACKET also lets the receiver check the length
 * field against the packet size, so a framing error is caught at once.
 *
 * Byte order and layout
 * ---------------------
 * All integers are little-endian. The structs below are packed (no padding)
 * and their sizes and field offsets are fixed by _Static_assert. The encoder
 * fills them on little-endian hosts only (x86-64, aarch64), which is checked
 * at compile time. Reserved fields must be zero in version 2; the receiver
 * rejects a frame with a non-zero reserved field, so a later version can give
 * them a meaning. Strings are length-prefixed (the length sits in the fixed
 * body), not NUL-terminated, at most STRATA_STR_MAX bytes, and meant to be
 * UTF-8; the receiver replaces invalid sequences (JNI's modified UTF-8) with
 * U+FFFD rather than rejecting the frame.
 *
 * A frame is:   strata_hdr | fixed body of its type | variable tail (strings)
 *
 *   strata_hdr (32 bytes)
 *   off size field     meaning
 *     0    4 magic     STRATA_MAGIC, the bytes "STRH"
 *     4    2 version   STRATA_PROTO_VERSION (2); every frame of a session
 *                      carries the version its HELLO carried
 *     6    2 type      enum strata_frame_type
 *     8    4 length    bytes in the whole frame, header included; equals the
 *                      packet size; STRATA_HDR_SIZE <= length <= STRATA_FRAME_MAX
 *    12    4 seq       per-connection sequence number, +1 for every frame the
 *                      hook tried to send (sent or dropped), HELLO is 0; a
 *                      missing seq is a frame the hook dropped (threads that
 *                      send at once may deliver neighbouring seqs out of order)
 *    16    4 tid       kernel thread id (gettid) of the thread the frame is
 *                      about; for ACCESS the thread that read or wrote
 *    20    4 reserved  zero
 *    24    8 time_ns   when the event happened, CLOCK_REALTIME nanoseconds
 *                      since the Unix epoch (HELLO also carries the
 *                      CLOCK_MONOTONIC reading taken at the same instant)
 *
 *   HELLO (type 1), fixed body 28 bytes, then app_id then executor_id bytes
 *   off size field              meaning
 *     0    4 pid                getpid() of the JVM as it sees itself; must
 *                               be the connecting process (see "Pids")
 *     4    4 page_size          sysconf(_SC_PAGESIZE) in the JVM
 *     8    8 monotonic_ns       CLOCK_MONOTONIC at the instant of hdr.time_ns,
 *                               so the agent can map kernel (BPF) timestamps
 *                               to the hook's wall clock
 *    16    2 byte_array_base    Unsafe.arrayBaseOffset(byte[].class): the
 *                               byte[] header size, asked of the running JVM
 *                               (12, 16, 20 or 24 depending on JDK and
 *                               flags); 0 when unknown or not a JVM
 *    18    2 long_array_base    Unsafe.arrayBaseOffset(long[].class); 0 unknown
 *    20    2 ref_size           bytes per object reference (4 with
 *                               compressed oops, else 8); 0 when unknown
 *    22    1 walk               enum strata_walk_mode: whether this hook walks
 *                               the object graphs of deserialized blocks
 *                               (WALK frames follow their REGISTER), and if
 *                               not, why; 0 when not a JVM
 *    23    1 reserved           zero
 *    24    2 app_id_len         bytes of app_id, <= STRATA_STR_MAX
 *    26    2 executor_id_len    bytes of executor_id, <= STRATA_STR_MAX
 *    28    - app_id             spark.app.id, UTF-8, not NUL-terminated
 *     -    - executor_id        spark.executor.id ("1", "driver"), UTF-8
 *
 *   REGISTER (type 2), fixed body 80 bytes, then name bytes, then label bytes
 *   A block's data now occupies [vaddr, vaddr+length) in the JVM's address
 *   space (MemoryStore put, TaskMemoryManager allocatePage). One REGISTER
 *   describes one contiguous range: a Spark block held in several buffers
 *   (a ChunkedByteBuffer's chunks) is several hook blocks, one per chunk,
 *   sharing name, kind and rdd/partition and told apart by chunk.
 *   off size field       meaning
 *     0    8 block_id    the hook's id for the block, unique per process and
 *                        never reused while the process lives; 0 is invalid
 *     8    8 vaddr       first byte of the data (not page aligned in general)
 *    16    8 length      bytes; > 0
 *    24    4 pid         whose address space holds the range (see "Pids")
 *    28    4 rdd_id      signed; -1 when the block is not an RDD block
 *    32    4 partition   signed; -1 when not applicable
 *    36    1 mode        enum strata_memory_mode (= proto strata.v1.MemoryMode)
 *    37    1 location    enum strata_memory_location (= strata.v1.MemoryLocation)
 *    38    2 name_len    bytes of name, 1..STRATA_STR_MAX
 *    40    1 kind        enum strata_block_kind: what Spark keeps here
 *    41    1 flags       STRATA_BLOCK_* bits; other bits must be zero
 *    42    2 label_len   bytes of label, 0..STRATA_STR_MAX; non-zero only with
 *                        STRATA_BLOCK_CACHED_BATCH
 *    44    4 chunk       index of this range within its Spark block, < chunks
 *    48    4 chunks      ranges the Spark block has in all; >= 1
 *    52    4 stage_id    signed; the stage of the task that put or allocated
 *                        the block, -1 when no task was running (a broadcast
 *                        the driver put, a block fetched from a peer)
 *    56    4 stage_attempt  signed; that stage's attempt number, -1 as above
 *    60    4 column      signed; with STRATA_BLOCK_CACHED_BATCH the index of
 *                        the column whose buffers the hook block stands
 *                        for, -1 for the buffers of every column (Arrow
 *                        batches); else -1
 *    64    8 task_attempt_id  signed; Spark's task attempt id (unique per
 *                        application), -1 as above
 *    72    8 spark_bytes the whole Spark block's size as Spark accounts it
 *                        (MemoryEntry.size: the bytes of a serialized entry,
 *                        SizeEstimator's estimate of a deserialized one; a
 *                        Tungsten page's size), the same on every chunk;
 *                        0 when unknown
 *    80    - name        Spark's BlockId name, e.g. rdd_7_3, broadcast_0_piece0,
 *                        or page_<task attempt>_<page number> for a Tungsten page
 *     -    - label       with STRATA_BLOCK_CACHED_BATCH: the column's name in
 *                        the cached plan's output, empty when the hook could
 *                        not find the plan
 *   For a Tungsten page (kind STRATA_KIND_TUNGSTEN_PAGE) rdd_id and partition
 *   are the running task's: the RDD the task computes (its stage's final RDD)
 *   and the partition it computes.
 *   With STRATA_BLOCK_OBJECT_GRAPH the range is the backing reference array of
 *   a deserialized block (Object[]: ref_size bytes per element); the objects
 *   those references point to are elsewhere in the heap. When the hook walks
 *   (HELLO walk STRATA_WALK_ON), WALK frames for the block follow with the
 *   ranges of those objects; until the first arrives, and whenever the last
 *   is STALE, only the reference array is known.
 *   With STRATA_BLOCK_CACHED_BATCH the hook block is one column of a Spark
 *   SQL cached DataFrame block (df.cache(), Dataset.persist(): a
 *   deserialized entry of CachedBatch objects, each holding one buffer per
 *   column, or one buffer of every column): chunk is the column's index
 *   among the block's columns and chunks their number (an Arrow block: one
 *   chunk, column -1). A REGISTER names one range, so the range is the
 *   column's buffer in the block's first batch (its first batch with a
 *   buffer of the column); a WALK frame of state STRATA_WALK_DONE follows it
 *   at once, with nothing between, carrying the buffers of the column in
 *   every batch, and another after every collection that moved one of them
 *   (see WALK). A batch whose buffer count differs from the first batch's,
 *   or a null or empty buffer, is left out of its column (the hook counts
 *   it and says so on stderr).
 *   Without either flag the range holds the block's data itself (serialized
 *   bytes, a primitive array, a Tungsten page).
 *   A second REGISTER of a live block_id replaces the first (a block that was
 *   re-put under the same id).
 *
 *   MOVE (type 3), fixed body 32 bytes
 *   A registered block's data now lives at a new range (after a GC moved it).
 *     0    8 block_id
 *     8    8 vaddr       new first byte
 *    16    8 length      new length in bytes; > 0
 *    24    4 pid         as in REGISTER
 *    28    4 gc_epoch    count of GCs the hook has seen finish; lets the
 *                        receiver order re-reports of the same block
 *
 *   ACCESS (type 4), fixed body 32 bytes
 *   A thread (hdr.tid, at hdr.time_ns) read or wrote a registered block.
 *     0    8 block_id
 *     8    8 offset      first byte accessed, relative to the block's vaddr
 *    16    8 length      bytes accessed; 0 means the whole block (offset 0)
 *    24    1 kind        STRATA_ACCESS_READ or STRATA_ACCESS_WRITE
 *                        (= proto strata.v1.AccessKind READ / WRITE)
 *    25    3 reserved    zero
 *    28    4 reserved2   zero
 *
 *   FREE (type 5), fixed body 16 bytes
 *   The block is gone (MemoryStore remove/evict, freePage); its id is dead.
 *     0    8 block_id
 *     8    1 reason      enum strata_free_reason, never 0
 *     9    3 reserved    zero
 *    12    4 reserved2   zero
 *
 *   DROPPED (type 6), fixed body 16 bytes
 *   The hook's own counters since HELLO, cumulative (the receiver takes the
 *   difference to the previous report). Sent when the hook chooses, e.g.
 *   after a GC or before exit.
 *     0    8 dropped     frames whose information is lost: any frame the
 *                        hook's queue or a full socket refused, and every
 *                        ACCESS no connection delivered (the other frames a
 *                        lost connection drops are sent again on connect)
 *     8    8 sent        frames sent, this one not included
 *
 *   WALK (type 7), fixed body 72 bytes, then count extents of 16 bytes
 *   The address ranges of a block's data beyond its REGISTER range, as one
 *   walk found them at gc_epoch. There are two kinds of walks:
 *   - of a STRATA_BLOCK_OBJECT_GRAPH block: the objects reachable from the
 *     block's array (the array included). The walker stops at objects of
 *     the JVM's and Spark's own (classes, class loaders, threads, Spark's
 *     contexts) and at objects another live block's walk holds (counted as
 *     shared, not as the block's). Its extents are page aligned (below). A
 *     collection may move the objects: the walk holds at gc_epoch, and at
 *     later epochs only once a CHECKED says so; a STALE mark says it no
 *     longer holds (see GC and CHECKED).
 *   - of a STRATA_BLOCK_CACHED_BATCH block: the buffers of its column, one
 *     heap byte[] per batch, state STRATA_WALK_DONE only. Its extents are
 *     the byte ranges of the buffers' data, exactly (not page aligned),
 *     ascending by address; objects is the number of buffers, bytes their
 *     lengths summed (= the extents' lengths summed), no shared or opaque
 *     objects. Such a walk holds until the block's next walk: the hook
 *     re-reads every buffer after each collection, before anything else,
 *     and sends a new walk (walk_seq + 1) when one moved, right after a
 *     MOVE of the REGISTER range when the first batch's buffer moved; no
 *     STALE or CHECKED is ever needed for it, as none is for a MOVE of a
 *     heap array.
 *   A walk no collection overlapped is the only kind ever sent. A walk with
 *   more extents than one frame holds is sent as parts 0..parts-1 that
 *   share block_id, walk_seq and the summary fields; the receiver applies a
 *   walk once it has every part, and keeps the block's previous walk when a
 *   part is missing (dropped).
 *   off size field
 *     0    8 block_id
 *     8    4 gc_epoch      the hook's count of finished GCs while the walk
 *                          ran (none started or finished during it)
 *    12    4 walk_seq      per block, +1 per walk or STALE, from 1
 *    16    2 part          < parts
 *    18    2 parts         >= 1; 1 for STALE
 *    20    2 count         extents in this frame, <= STRATA_WALK_EXTENTS_MAX;
 *                          0 for STALE
 *    22    1 state         enum strata_walk_state
 *    23    1 reserved      zero
 *    24    8 objects       objects the walk counted as the block's (a
 *                          column's walk: its buffers)
 *    32    8 bytes         their sizes as the JVM lays them out, summed (a
 *                          column's walk: the buffers' lengths, summed)
 *    40    8 shared_objects  objects reached that another block's walk holds
 *    48    8 shared_bytes    their sizes, summed
 *    56    8 opaque_objects  objects counted whose references the hook cannot
 *                          read (hidden classes, records): not followed
 *    64    4 extents       extents in all parts
 *    68    4 reserved2     zero
 *    72    - extents       count x { u64 vaddr, u64 length }, ascending
 *                          and disjoint across all parts, length > 0. An
 *                          object graph's: the runs of consecutive pages
 *                          that hold a byte of one of the walk's objects
 *                          (page aligned); an extent may also hold other
 *                          objects (garbage between records, another
 *                          block's objects at its edges). A column's: each
 *                          buffer's data, [first byte, last byte + 1)
 *   The parts of one walk are consecutive frames of the connection: a frame
 *   of any other kind, or of another walk, between two parts leaves the
 *   walk incomplete.
 *
 *   GC (type 8), fixed body 8 bytes
 *   Collections ended: every object graph's walk of an earlier epoch may be
 *   stale until a CHECKED of this epoch (or a new walk) says otherwise (a
 *   cached batch column's walk holds until replaced). The hook thread
 *   sends one GC frame per rescan after collections, before their MOVEs.
 *     0    4 gc_epoch      the hook's count of finished GCs now
 *     4    4 reserved      zero
 *
 *   CHECKED (type 9), fixed body 8 bytes
 *   The walker has checked every object graph's walk it sent against the
 *   collections up to gc_epoch: each walk it did not mark STALE (or
 *   replace) since holds at gc_epoch. Sent after the STALE frames of those
 *   collections.
 *     0    4 gc_epoch
 *     4    4 reserved      zero
 *
 *   OFF (type 10), fixed body 16 bytes, then detail bytes
 *   The hook stays off in this JVM, and says why: the connection's first and
 *   only frame, in place of HELLO; the hook closes the connection after it.
 *   A hook sends it once, as it decides it is off (at JVM start), when the
 *   agent's socket takes a connection at once (it never waits: no agent,
 *   no report); its stderr says the same ("strata-hook: off: DETAIL").
 *   off size field
 *     0    4 pid           getpid() of the JVM, checked as HELLO's (see "Pids")
 *     4    1 reason        enum strata_off_reason, never 0
 *     5    1 reserved      zero
 *     6    2 detail_len    bytes of detail, <= STRATA_STR_MAX
 *     8    4 java          the JVM's Java feature version (8, 11, 17, 21,
 *                          from java.vm.specification.version); 0 unknown
 *    12    4 reserved2     zero
 *    16    - detail        what the hook printed after "strata-hook: off: ",
 *                          UTF-8, cut to STRATA_STR_MAX bytes
 *
 * Pids
 * ----
 * The receiver takes the connecting process from SO_PEERCRED, never from the
 * frame. HELLO, REGISTER, MOVE and OFF also name a pid, and the receiver rejects
 * the frame unless that pid is the peer itself, one of its threads, or the
 * peer's pid as seen inside its own pid namespace (a JVM in a container sees
 * a different getpid() than the host agent does). A peer can therefore only
 * ever describe its own address space.
 *
 * Receiver behaviour
 * ------------------
 * The agent closes the connection on a frame it cannot decode, on a frame
 * before HELLO (but OFF), on a second HELLO, on OFF after HELLO, on a HELLO
 * or OFF naming a foreign pid and when no HELLO arrives within its timeout
 * (10 s by default); later sends then fail with EPIPE and count as
 * dropped. It closes the connection after OFF, having counted the JVM as
 * off by reason and logged its pid, reason and detail. A REGISTER or MOVE naming a foreign
 * pid is dropped and the connection stays. MOVE, ACCESS and FREE of a block
 * id that is not live are ignored (its REGISTER may have been dropped).
 * When the connection ends, every block it registered is dead.
 *
 * Keepalive: the agent closes a session that sends no frame for its idle
 * timeout (3 min by default, --hook-idle-timeout), as if the JVM had exited,
 * so a connection cannot be held forever by a process that says nothing. A
 * hook therefore sends a frame at least every STRATA_KEEPALIVE_SEC seconds
 * while connected; with nothing else to say it sends DROPPED (its counters,
 * unchanged or not), e.g. from the thread that already reports them. An
 * executor idle for hours between jobs stays connected this way.
 *
 * Bounds: so that one local user cannot deny service to the others, the
 * agent also closes a connection at once, before any frame, past its session
 * caps (4 per process, 256 per uid, 1024 per node by default); drops a
 * REGISTER or MOVE longer than 16 GiB and an ACCESS outside its block; drops
 * a REGISTER of a new block past the live-block caps (131072 per uid, 262144
 * per node) and closes a connection past 65536 live blocks of its own. A
 * dropped REGISTER leaves its block unknown, exactly as if the hook had
 * dropped the frame. A hook that reconnects after its connection was closed
 * must send HELLO and REGISTER its live blocks again.
 *
 * Walk bounds: the agent drops a WALK of a block that is not live, of a
 * block that is neither STRATA_BLOCK_OBJECT_GRAPH nor
 * STRATA_BLOCK_CACHED_BATCH, of a STRATA_BLOCK_CACHED_BATCH block in a state
 * other than STRATA_WALK_DONE, and a walk past its extent caps (by default
 * 65536 extents a walk, 1<<20 for a connection's current walks together):
 * the block then keeps its previous walk. A cached batch column's walk has
 * one extent per batch, so a connection reaches its cap at about a million
 * cached batch buffers.
 *
 * Sizes
 * -----
 * STRATA_FRAME_MAX bounds every frame; the largest is a WALK part with
 * STRATA_WALK_EXTENTS_MAX extents: 32 + 72 + 248*16 = 4072 bytes. A
 * sender's stack buffer of STRATA_FRAME_MAX bytes always suffices.
 */
#ifndef STRATA_HOOK_H
#define STRATA_HOOK_H

#include <stddef.h>
#include <stdint.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "strata_hook.h: the frame structs are little-endian; this host is not"
#endif

#define STRATA_MAGIC 0x48525453u /* "STRH" read as a little-endian u32 */
#define STRATA_PROTO_VERSION 3
#define STRATA_FRAME_MAX 4096 /* bytes, header included */
#define STRATA_STR_MAX 255    /* bytes in any one string */
#define STRATA_DEFAULT_SOCKET "/run/strata/hook.sock"
#define STRATA_SOCKET_ENV "STRATA_HOOK_SOCKET" /* overrides the default */
#define STRATA_KEEPALIVE_SEC 30 /* send a frame (DROPPED) at least this often */

/* What a registered range holds (REGISTER kind). */
enum strata_block_kind {
	STRATA_KIND_RDD = 1,           /* RDDBlockId: rdd_<rdd>_<partition> */
	STRATA_KIND_BROADCAST = 2,     /* BroadcastBlockId: broadcast_<id>[_piece<n>] */
	STRATA_KIND_SHUFFLE = 3,       /* shuffle_*: shuffle data, index, merged blocks */
	STRATA_KIND_TASK_RESULT = 4,   /* TaskResultBlockId: taskresult_<task> */
	STRATA_KIND_STREAM = 5,        /* StreamBlockId: input-<stream>-<id> */
	STRATA_KIND_TUNGSTEN_PAGE = 6, /* TaskMemoryManager page (execution memory) */
	STRATA_KIND_OTHER = 7,         /* any other BlockId (temp, test, python, ...) */
};
#define STRATA_KIND_MAX STRATA_KIND_OTHER

/* REGISTER flags. */
#define STRATA_BLOCK_OBJECT_GRAPH 0x01 /* range = reference array; WALK frames give the objects */
#define STRATA_BLOCK_CACHED_BATCH 0x02 /* one column of a cached DataFrame block;
					* range = its first batch's buffer,
					* WALK frames give every buffer */
#define STRATA_BLOCK_FLAGS_ALL (STRATA_BLOCK_OBJECT_GRAPH | STRATA_BLOCK_CACHED_BATCH)

/* HELLO walk: whether the hook walks object graphs, and if not why. */
enum strata_walk_mode {
	STRATA_WALK_ON = 1,           /* WALK frames follow OBJECT_GRAPH blocks */
	STRATA_WALK_OFF = 2,          /* turned off by the hook's walk=off option */
	STRATA_WALK_UNSUPPORTED_GC = 3, /* a collector that moves objects while Java
					 * threads run (ZGC, Shenandoah) */
	STRATA_WALK_NO_LAYOUT = 4,    /* object addresses or field offsets could not
				       * be had (reference encoding unknown) */
};
#define STRATA_WALK_MODE_MAX STRATA_WALK_NO_LAYOUT

/* WALK state. */
enum strata_walk_state {
	STRATA_WALK_DONE = 1,  /* every reachable object up to the stops; every
				* buffer of a cached batch column */
	STRATA_WALK_CUT = 2,   /* the walk's object budget ended it: part of them */
	STRATA_WALK_STALE = 3, /* no extents: a GC moved the block's objects since
				* its last walk; a new walk follows */
};
#define STRATA_WALK_STATE_MAX STRATA_WALK_STALE
#define STRATA_WALK_EXTENTS_MAX 248 /* extents in one WALK frame */

/* Why a block ended (FREE reason). */
enum strata_free_reason {
	STRATA_FREE_REMOVED = 1,   /* MemoryStore.remove: unpersist, broadcast or
				    * task-result cleanup, a replaced block */
	STRATA_FREE_EVICTED = 2,   /* MemoryStore.evictBlocksToFreeSpace: storage
				    * memory needed for another block */
	STRATA_FREE_PAGE_FREED = 3, /* TaskMemoryManager.freePage by its consumer */
	STRATA_FREE_TASK_END = 4,  /* TaskMemoryManager.cleanUpAllAllocatedMemory:
				    * the page outlived its consumer, freed when
				    * the task ended */
	STRATA_FREE_CLEARED = 5,   /* MemoryStore.clear: the block manager stopped */
	STRATA_FREE_COLLECTED = 6, /* the hook found the heap array garbage
				    * collected while still registered */
};
#define STRATA_FREE_REASON_MAX STRATA_FREE_COLLECTED

enum strata_frame_type {
	STRATA_FRAME_HELLO = 1,
	STRATA_FRAME_REGISTER = 2,
	STRATA_FRAME_MOVE = 3,
	STRATA_FRAME_ACCESS = 4,
	STRATA_FRAME_FREE = 5,
	STRATA_FRAME_DROPPED = 6,
	STRATA_FRAME_WALK = 7,
	STRATA_FRAME_GC = 8,
	STRATA_FRAME_CHECKED = 9,
	STRATA_FRAME_OFF = 10,
};

/* Why a hook stays off in its JVM (OFF reason). */
enum strata_off_reason {
	STRATA_OFF_JAVA_VERSION = 1, /* a Java the hook does not run on (older than 11) */
	STRATA_OFF_OPTIONS = 2,      /* the hook's options are wrong (no jar=, an unknown
				      * option, a bad value) */
	STRATA_OFF_JAR = 3,          /* strata-hook.jar or its classes could not be loaded */
	STRATA_OFF_JVMTI = 4,        /* JVMTI, or an event or capability the hook needs,
				      * is unavailable */
	STRATA_OFF_JAVA_START = 5,   /* the Java side failed to start (its exception in
				      * detail) */
};
#define STRATA_OFF_REASON_MAX STRATA_OFF_JAVA_START

/* Values equal proto strata.v1.MemoryMode (checked by the layout test). */
enum strata_memory_mode {
	STRATA_MODE_UNSPECIFIED = 0,
	STRATA_MODE_STORAGE = 1,   /* MemoryStore blocks */
	STRATA_MODE_EXECUTION = 2, /* Tungsten pages */
};

/* Values equal proto strata.v1.MemoryLocation (checked by the layout test). */
enum strata_memory_location {
	STRATA_LOCATION_UNSPECIFIED = 0,
	STRATA_LOCATION_ON_HEAP = 1,
	STRATA_LOCATION_OFF_HEAP = 2,
};

/* Values equal proto strata.v1.AccessKind READ and WRITE (layout test). */
enum strata_access_kind {
	STRATA_ACCESS_READ = 2,
	STRATA_ACCESS_WRITE = 3,
};

struct strata_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t type;
	uint32_t length;
	uint32_t seq;
	uint32_t tid;
	uint32_t reserved;
	uint64_t time_ns;
} __attribute__((packed));

struct strata_hello {
	uint32_t pid;
	uint32_t page_size;
	uint64_t monotonic_ns;
	uint16_t byte_array_base;
	uint16_t long_array_base;
	uint16_t ref_size;
	uint8_t walk;
	uint8_t reserved;
	uint16_t app_id_len;
	uint16_t executor_id_len;
	/* followed by app_id, then executor_id */
} __attribute__((packed));

struct strata_register {
	uint64_t block_id;
	uint64_t vaddr;
	uint64_t length;
	uint32_t pid;
	int32_t rdd_id;
	int32_t partition;
	uint8_t mode;
	uint8_t location;
	uint16_t name_len;
	uint8_t kind;
	uint8_t flags;
	uint16_t label_len;
	uint32_t chunk;
	uint32_t chunks;
	int32_t stage_id;
	int32_t stage_attempt;
	int32_t column;
	int64_t task_attempt_id;
	uint64_t spark_bytes;
	/* followed by name, then label */
} __attribute__((packed));

struct strata_move {
	uint64_t block_id;
	uint64_t vaddr;
	uint64_t length;
	uint32_t pid;
	uint32_t gc_epoch;
} __attribute__((packed));

struct strata_access {
	uint64_t block_id;
	uint64_t offset;
	uint64_t length;
	uint8_t kind;
	uint8_t reserved[3];
	uint32_t reserved2;
} __attribute__((packed));

struct strata_free {
	uint64_t block_id;
	uint8_t reason;
	uint8_t reserved[3];
	uint32_t reserved2;
} __attribute__((packed));

struct strata_dropped {
	uint64_t dropped;
	uint64_t sent;
} __attribute__((packed));

struct strata_walk {
	uint64_t block_id;
	uint32_t gc_epoch;
	uint32_t walk_seq;
	uint16_t part;
	uint16_t parts;
	uint16_t count;
	uint8_t state;
	uint8_t reserved;
	uint64_t objects;
	uint64_t bytes;
	uint64_t shared_objects;
	uint64_t shared_bytes;
	uint64_t opaque_objects;
	uint32_t extents;
	uint32_t reserved2;
	/* followed by count struct strata_extent */
} __attribute__((packed));

struct strata_extent {
	uint64_t vaddr;
	uint64_t length;
} __attribute__((packed));

/* GC and CHECKED share one body. */
struct strata_epoch {
	uint32_t gc_epoch;
	uint32_t reserved;
} __attribute__((packed));

struct strata_off {
	uint32_t pid;
	uint8_t reason;
	uint8_t reserved;
	uint16_t detail_len;
	uint32_t java;
	uint32_t reserved2;
	/* followed by detail */
} __attribute__((packed));

#define STRATA_HDR_SIZE 32
#define STRATA_HELLO_SIZE 28
#define STRATA_REGISTER_SIZE 80
#define STRATA_MOVE_SIZE 32
#define STRATA_ACCESS_SIZE 32
#define STRATA_FREE_SIZE 16
#define STRATA_DROPPED_SIZE 16
#define STRATA_WALK_SIZE 72
#define STRATA_EXTENT_SIZE 16
#define STRATA_EPOCH_SIZE 8
#define STRATA_OFF_SIZE 16

#define STRATA_ASSERT_FIELD(type, field, off, size)                             \
	_Static_assert(offsetof(struct type, field) == (off),                   \
		       #type "." #field " offset");                             \
	_Static_assert(sizeof(((struct type *)0)->field) == (size),             \
		       #type "." #field " size")

_Static_assert(sizeof(struct strata_hdr) == STRATA_HDR_SIZE, "strata_hdr size");
STRATA_ASSERT_FIELD(strata_hdr, magic, 0, 4);
STRATA_ASSERT_FIELD(strata_hdr, version, 4, 2);
STRATA_ASSERT_FIELD(strata_hdr, type, 6, 2);
STRATA_ASSERT_FIELD(strata_hdr, length, 8, 4);
STRATA_ASSERT_FIELD(strata_hdr, seq, 12, 4);
STRATA_ASSERT_FIELD(strata_hdr, tid, 16, 4);
STRATA_ASSERT_FIELD(strata_hdr, reserved, 20, 4);
STRATA_ASSERT_FIELD(strata_hdr, time_ns, 24, 8);

_Static_assert(sizeof(struct strata_hello) == STRATA_HELLO_SIZE, "strata_hello size");
STRATA_ASSERT_FIELD(strata_hello, pid, 0, 4);
STRATA_ASSERT_FIELD(strata_hello, page_size, 4, 4);
STRATA_ASSERT_FIELD(strata_hello, monotonic_ns, 8, 8);
STRATA_ASSERT_FIELD(strata_hello, byte_array_base, 16, 2);
STRATA_ASSERT_FIELD(strata_hello, long_array_base, 18, 2);
STRATA_ASSERT_FIELD(strata_hello, ref_size, 20, 2);
STRATA_ASSERT_FIELD(strata_hello, walk, 22, 1);
STRATA_ASSERT_FIELD(strata_hello, reserved, 23, 1);
STRATA_ASSERT_FIELD(strata_hello, app_id_len, 24, 2);
STRATA_ASSERT_FIELD(strata_hello, executor_id_len, 26, 2);

_Static_assert(sizeof(struct strata_register) == STRATA_REGISTER_SIZE, "strata_register size");
STRATA_ASSERT_FIELD(strata_register, block_id, 0, 8);
STRATA_ASSERT_FIELD(strata_register, vaddr, 8, 8);
STRATA_ASSERT_FIELD(strata_register, length, 16, 8);
STRATA_ASSERT_FIELD(strata_register, pid, 24, 4);
STRATA_ASSERT_FIELD(strata_register, rdd_id, 28, 4);
STRATA_ASSERT_FIELD(strata_register, partition, 32, 4);
STRATA_ASSERT_FIELD(strata_register, mode, 36, 1);
STRATA_ASSERT_FIELD(strata_register, location, 37, 1);
STRATA_ASSERT_FIELD(strata_register, name_len, 38, 2);
STRATA_ASSERT_FIELD(strata_register, kind, 40, 1);
STRATA_ASSERT_FIELD(strata_register, flags, 41, 1);
STRATA_ASSERT_FIELD(strata_register, label_len, 42, 2);
STRATA_ASSERT_FIELD(strata_register, chunk, 44, 4);
STRATA_ASSERT_FIELD(strata_register, chunks, 48, 4);
STRATA_ASSERT_FIELD(strata_register, stage_id, 52, 4);
STRATA_ASSERT_FIELD(strata_register, stage_attempt, 56, 4);
STRATA_ASSERT_FIELD(strata_register, column, 60, 4);
STRATA_ASSERT_FIELD(strata_register, task_attempt_id, 64, 8);
STRATA_ASSERT_FIELD(strata_register, spark_bytes, 72, 8);

_Static_assert(sizeof(struct strata_move) == STRATA_MOVE_SIZE, "strata_move size");
STRATA_ASSERT_FIELD(strata_move, block_id, 0, 8);
STRATA_ASSERT_FIELD(strata_move, vaddr, 8, 8);
STRATA_ASSERT_FIELD(strata_move, length, 16, 8);
STRATA_ASSERT_FIELD(strata_move, pid, 24, 4);
STRATA_ASSERT_FIELD(strata_move, gc_epoch, 28, 4);

_Static_assert(sizeof(struct strata_access) == STRATA_ACCESS_SIZE, "strata_access size");
STRATA_ASSERT_FIELD(strata_access, block_id, 0, 8);
STRATA_ASSERT_FIELD(strata_access, offset, 8, 8);
STRATA_ASSERT_FIELD(strata_access, length, 16, 8);
STRATA_ASSERT_FIELD(strata_access, kind, 24, 1);
STRATA_ASSERT_FIELD(strata_access, reserved, 25, 3);
STRATA_ASSERT_FIELD(strata_access, reserved2, 28, 4);

_Static_assert(sizeof(struct strata_free) == STRATA_FREE_SIZE, "strata_free size");
STRATA_ASSERT_FIELD(strata_free, block_id, 0, 8);
STRATA_ASSERT_FIELD(strata_free, reason, 8, 1);
STRATA_ASSERT_FIELD(strata_free, reserved, 9, 3);
STRATA_ASSERT_FIELD(strata_free, reserved2, 12, 4);

_Static_assert(sizeof(struct strata_dropped) == STRATA_DROPPED_SIZE, "strata_dropped size");
STRATA_ASSERT_FIELD(strata_dropped, dropped, 0, 8);
STRATA_ASSERT_FIELD(strata_dropped, sent, 8, 8);

_Static_assert(sizeof(struct strata_walk) == STRATA_WALK_SIZE, "strata_walk size");
STRATA_ASSERT_FIELD(strata_walk, block_id, 0, 8);
STRATA_ASSERT_FIELD(strata_walk, gc_epoch, 8, 4);
STRATA_ASSERT_FIELD(strata_walk, walk_seq, 12, 4);
STRATA_ASSERT_FIELD(strata_walk, part, 16, 2);
STRATA_ASSERT_FIELD(strata_walk, parts, 18, 2);
STRATA_ASSERT_FIELD(strata_walk, count, 20, 2);
STRATA_ASSERT_FIELD(strata_walk, state, 22, 1);
STRATA_ASSERT_FIELD(strata_walk, reserved, 23, 1);
STRATA_ASSERT_FIELD(strata_walk, objects, 24, 8);
STRATA_ASSERT_FIELD(strata_walk, bytes, 32, 8);
STRATA_ASSERT_FIELD(strata_walk, shared_objects, 40, 8);
STRATA_ASSERT_FIELD(strata_walk, shared_bytes, 48, 8);
STRATA_ASSERT_FIELD(strata_walk, opaque_objects, 56, 8);
STRATA_ASSERT_FIELD(strata_walk, extents, 64, 4);
STRATA_ASSERT_FIELD(strata_walk, reserved2, 68, 4);

_Static_assert(sizeof(struct strata_extent) == STRATA_EXTENT_SIZE, "strata_extent size");
STRATA_ASSERT_FIELD(strata_extent, vaddr, 0, 8);
STRATA_ASSERT_FIELD(strata_extent, length, 8, 8);

_Static_assert(sizeof(struct strata_epoch) == STRATA_EPOCH_SIZE, "strata_epoch size");
STRATA_ASSERT_FIELD(strata_epoch, gc_epoch, 0, 4);
STRATA_ASSERT_FIELD(strata_epoch, reserved, 4, 4);

_Static_assert(sizeof(struct strata_off) == STRATA_OFF_SIZE, "strata_off size");
STRATA_ASSERT_FIELD(strata_off, pid, 0, 4);
STRATA_ASSERT_FIELD(strata_off, reason, 4, 1);
STRATA_ASSERT_FIELD(strata_off, reserved, 5, 1);
STRATA_ASSERT_FIELD(strata_off, detail_len, 6, 2);
STRATA_ASSERT_FIELD(strata_off, java, 8, 4);
STRATA_ASSERT_FIELD(strata_off, reserved2, 12, 4);

_Static_assert(STRATA_HDR_SIZE + STRATA_HELLO_SIZE + 2 * STRATA_STR_MAX <= STRATA_FRAME_MAX,
	       "the largest HELLO fits in STRATA_FRAME_MAX");
_Static_assert(STRATA_HDR_SIZE + STRATA_REGISTER_SIZE + 2 * STRATA_STR_MAX <= STRATA_FRAME_MAX,
	       "the largest REGISTER fits in STRATA_FRAME_MAX");
_Static_assert(STRATA_HDR_SIZE + STRATA_WALK_SIZE + STRATA_WALK_EXTENTS_MAX * STRATA_EXTENT_SIZE <=
		       STRATA_FRAME_MAX,
	       "the largest WALK fits in STRATA_FRAME_MAX");

#endif /* STRATA_HOOK_H */
