/*
 * registry.h - the hook's table of live blocks, its connection to the node
 * agent and its GC thread. Internal to libstratahook.so (hidden visibility);
 * hook.c is the only caller and holds every JNI/JVMTI entry point. Behind
 * it: blocks.c (the table of live blocks), sendq.c (the send queue, the
 * connection and the hook thread; the table of which thread writes each
 * shared field under which lock), rescan.c (the rescan after each GC) and
 * walks.c (the walks kept and re-sent).
 *
 * What callers must know:
 *   - reg_* functions called on a JVM thread make no I/O: they queue the
 *     frame in memory for the hook thread, which sends it; no connection or
 *     a full queue drops the frame and counts it. They take one short mutex
 *     that no thread holds across a JNI or JVMTI call or a waiting system
 *     call, so a thread inside a GC pause can never be waited on.
 *   - Heap arrays are tracked through weak global references. After every
 *     GC (JVMTI GarbageCollectionFinish) the hook thread re-reads each
 *     tracked array's data address and sends MOVE for those that moved;
 *     an array found collected while still registered is freed with reason
 *     STRATA_FREE_COLLECTED.
 *   - A column of a cached DataFrame block (REG_CACHED_COLUMN) is tracked
 *     through one weak global reference to the block's array of batches
 *     and the column's index; Java reads the addresses of the column's
 *     buffers (reg_config.column_buffers: one call per column, no JNI call
 *     per buffer). Its REGISTER names the first batch's buffer and a WALK
 *     (DONE, every buffer's bytes) follows it at once; after every GC the
 *     hook thread reads the buffers again and, when one moved, sends a MOVE
 *     of that range if the first buffer moved and a new WALK (seq + 1).
 *     The array collected: FREE, reason STRATA_FREE_COLLECTED.
 *   - After every GC the hook thread also sends one GC frame (the count of
 *     finished GCs) before that rescan's MOVEs, and wakes the walker
 *     (reg_config.walk_wake). Every frame that names a GC epoch (WALK,
 *     CHECKED) is preceded by a GC frame of that epoch on the connection,
 *     and a CHECKED of an epoch by every frame of that epoch's rescan
 *     (the walker checks only epochs rescanned: reg_rescanned_epoch).
 *   - The registry keeps each object-graph block's and each cached batch
 *     column's latest walk (reg_walk), numbers the walks of a block from 1
 *     (walk_seq), and remembers the latest CHECKED epoch.
 *   - The hook thread reconnects every reconnect_ms while disconnected and,
 *     after each connect, sends HELLO and re-registers every live block,
 *     then sends one GC frame (the latest epoch it sent), each block's
 *     latest walk (or STALE mark) and one CHECKED frame (the walker's
 *     latest), so a restarted agent learns the whole registry again. It
 *     connects only once it has the ids (reg_identify) and the walk mode
 *     (reg_set_walk_mode).
 */
#ifndef STRATA_REGISTRY_H
#define STRATA_REGISTRY_H

#include <jni.h>
#include <stdint.h>

#include "frame.h"

/* Where a block's bytes are, and so how the hook finds its address. */
enum reg_source {
	REG_HEAP_ARRAY = 1,   /* a primitive array: GetPrimitiveArrayCritical */
	REG_OBJECT_ARRAY = 2, /* an Object[]: asked of Java (see reg_config) */
	REG_DIRECT = 3,       /* a direct ByteBuffer: GetDirectBufferAddress */
	REG_ADDRESS = 4,      /* a raw native address (Tungsten off-heap page) */
	REG_CACHED_COLUMN = 5, /* a column of a cached DataFrame block: ref is its
				* Object[] of batches, args.column the column;
				* the buffers are asked of Java (see reg_config) */
};

struct reg_config {
	char socket_path[108]; /* empty: $STRATA_HOOK_SOCKET, then the default */
	int reconnect_ms;      /* how often to retry a lost connection */
	uint16_t byte_array_base, long_array_base, ref_size;
	/* Java's answer for an Object[]'s first element address:
	 * static long <object_address>(Object) on object_class. */
	jclass object_class; /* global ref */
	jmethodID object_address;
	/* Java's answer for a cached DataFrame column's buffers: static long[]
	 * <column_buffers>(Object[] batches, int column, long[] reuse) on
	 * object_class returns {n, vaddr_0, length_0, ...}: the data of the
	 * column's buffer in each batch that has one, in batch order, in
	 * reuse when it is long enough, else in a new array. */
	jmethodID column_buffers;
	/* static void <walk_wake>() on object_class: called by the hook thread
	 * after each rescan when the walk mode is STRATA_WALK_ON. */
	jmethodID walk_wake;
	/* enum strata_walk_mode for HELLO; 0: not decided yet (the hook waits
	 * for reg_set_walk_mode before it connects). */
	uint8_t walk_mode;
};

/* A block to register; ref/offset/address as enum reg_source says (for
 * REG_CACHED_COLUMN the registry finds the range: offset and args.length
 * are ignored). */
struct reg_block {
	enum reg_source source;
	jobject ref;      /* the array, buffer or batches; NULL for REG_ADDRESS */
	uint64_t offset;  /* bytes from the data start (arrays, buffers) */
	uint64_t address; /* REG_ADDRESS only */
	struct strata_block_args args; /* block_id, vaddr, pid are filled in */
};

/* One walk of an object-graph block or a cached batch column: what a WALK
 * frame (all its parts) says. ext is malloc'd; the registry owns it once
 * reg_walk accepted it. */
struct reg_walk {
	uint32_t gc_epoch;
	uint32_t seq; /* set by reg_walk */
	uint8_t state; /* enum strata_walk_state */
	uint64_t objects, bytes, shared_objects, shared_bytes, opaque_objects;
	uint32_t n; /* extents */
	struct strata_extent *ext;
};

struct reg_stats {
	uint64_t sent, dropped; /* frames, all connections together */
	uint64_t live;          /* registered blocks now */
	uint64_t gc_epoch;      /* GCs the hook has seen finish */
	uint64_t connects;      /* successful connects (HELLO sent) */
	uint64_t moves;         /* MOVE frames made after GCs */
	uint64_t collected;     /* blocks freed because their array was collected */
};

/* Sets up the table and starts the hook thread. Returns 0 or -errno. */
int reg_start(JNIEnv *env, JavaVM *vm, const struct reg_config *cfg);
/* Sets HELLO's application and executor ids and lets the hook connect. */
void reg_identify(const char *app_id, const char *executor_id);
/* Registers a block; returns its hook id, or 0 when its address could not be
 * read (a NULL or non-direct buffer, a column without a buffer) or memory
 * ran out. */
uint64_t reg_add(JNIEnv *env, struct reg_block *b);
/* Frees a block (FREE with reason); unknown ids are ignored. */
void reg_free(uint64_t id, uint8_t reason);
/* Sends ACCESS for a live block. */
void reg_access(uint64_t id, uint64_t offset, uint64_t length, uint8_t kind);
/* Current address of a live block's first byte, 0 when not live. */
uint64_t reg_vaddr(uint64_t id);
/* Sends a walk of a live object-graph block (WALK frames, STRATA_WALK_
 * EXTENTS_MAX extents each) and keeps it as the block's latest. Takes w
 * (malloc'd, with its extents) in every case. Returns the walk's walk_seq,
 * 0 when the block is not live or not an object graph (w is freed). */
uint32_t reg_walk(uint64_t id, struct reg_walk *w);
/* Sends CHECKED: every walk not marked STALE since holds at gc_epoch. */
void reg_checked(uint32_t gc_epoch);
/* HELLO's walk mode, decided by the Java side; lets the hook connect. */
void reg_set_walk_mode(uint8_t mode);
/* GCs the hook has seen finish (the epoch of MOVE, WALK, GC, CHECKED). */
uint32_t reg_gc_epoch(void);
/* The GC epoch the hook thread's latest rescan ran for: every frame of
 * that rescan is queued. */
uint32_t reg_rescanned_epoch(void);
void reg_stats(struct reg_stats *s);
/* Sends a DROPPED report now (before exit). */
void reg_report(void);

/* JVMTI GC callbacks: only atomics and a write(2) to an eventfd. */
void reg_gc_start(void);
void reg_gc_finish(void);

#endif /* STRATA_REGISTRY_H */
