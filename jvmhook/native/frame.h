/*
 * frame.h - the hook's frame encoder and non-blocking sender.
 *
 * The wire format is specified in jvmhook/include/strata_hook.h. This file is
 * the small API over it that the JNI/JVMTI library (and the test workload in
 * test/workload) link against:
 *
 *   - strata_encode_*: write one frame into a caller buffer and return its
 *     length, or a negative errno (-ENOSPC buffer too small, -ENAMETOOLONG a
 *     string over STRATA_STR_MAX, -EINVAL a value the receiver would reject).
 *     Pure: no I/O, no allocation, no global state. Header fields (seq, tid,
 *     time) come from the caller, so tests can produce byte-exact frames.
 *   - strata_conn_*: one connection per process. strata_conn_open blocks
 *     (call it once, off the hot path); everything after it never blocks.
 *   - strata_send_*: encode onto a STRATA_FRAME_MAX stack buffer with a fresh
 *     header (next seq, gettid(), CLOCK_REALTIME now) and send with
 *     MSG_DONTWAIT|MSG_NOSIGNAL. A full or closed socket drops the frame and
 *     counts it; the frame's seq is used either way, so the receiver sees a
 *     gap. Returns 0 when sent, else a negative errno (the frame is dropped).
 *     Safe to call from any number of threads at once (counters are atomic,
 *     one send per frame on a SEQPACKET socket is atomic).
 */
#ifndef STRATA_FRAME_H
#define STRATA_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "strata_hook.h"

/*
 * Send buffer the connection asks for. On an AF_UNIX SEQPACKET socket the
 * frames in flight are charged to the sender's SO_SNDBUF at about 768 bytes
 * each (skb overhead, not frame size), so the default 208 KiB
 * (net.core.wmem_default) holds only ~280 frames before sends fail with
 * EAGAIN. strata_conn_open asks for 4 MiB; the kernel caps the request at
 * net.core.wmem_max and then doubles it, so with wmem_max >= 4 MiB about
 * 10900 frames fit (measured by agent/hooksrv's TestCSendDropsWhenFull).
 */
#define STRATA_SNDBUF_WANT (4 << 20)

/* Header fields that vary per frame. */
struct strata_frame_meta {
	uint32_t seq;
	uint32_t tid;
	uint64_t time_ns; /* CLOCK_REALTIME, ns since the epoch */
};

struct strata_hello_args {
	uint32_t pid;
	uint32_t page_size;
	uint64_t monotonic_ns;
	uint16_t byte_array_base;
	uint16_t long_array_base;
	uint16_t ref_size;
	uint8_t walk;            /* enum strata_walk_mode; 0 when not a JVM */
	const char *app_id;      /* NUL-terminated; NULL means "" */
	const char *executor_id; /* NUL-terminated; NULL means "" */
};

struct strata_block_args {
	uint64_t block_id; /* != 0 */
	uint64_t vaddr;
	uint64_t length; /* > 0 */
	uint32_t pid;
	int32_t rdd_id;
	int32_t partition;
	uint8_t mode;     /* enum strata_memory_mode */
	uint8_t location; /* enum strata_memory_location */
	uint8_t kind;     /* enum strata_block_kind, != 0 */
	uint8_t flags;    /* STRATA_BLOCK_* */
	uint32_t chunk;   /* < chunks */
	uint32_t chunks;  /* >= 1 */
	int32_t stage_id; /* -1: no task */
	int32_t stage_attempt;
	int64_t task_attempt_id;
	int32_t column;       /* -1 unless STRATA_BLOCK_CACHED_BATCH */
	uint64_t spark_bytes; /* Spark's size of the whole block; 0 unknown */
	const char *name;     /* NUL-terminated, 1..STRATA_STR_MAX bytes */
	const char *label;    /* NULL or "" unless STRATA_BLOCK_CACHED_BATCH */
};

/* One WALK frame: a part of a walk, or a STALE mark (count 0, parts 1). */
struct strata_walk_args {
	uint64_t block_id; /* != 0 */
	uint32_t gc_epoch;
	uint32_t walk_seq;
	uint16_t part, parts; /* part < parts */
	uint8_t state;        /* enum strata_walk_state */
	uint64_t objects, bytes, shared_objects, shared_bytes, opaque_objects;
	uint32_t extents;                  /* in all parts */
	const struct strata_extent *ext;   /* this part's extents */
	uint16_t count;                    /* <= STRATA_WALK_EXTENTS_MAX */
};

/* An OFF frame: why the hook stays off in its JVM. */
struct strata_off_args {
	uint32_t pid;
	uint8_t reason;     /* enum strata_off_reason, != 0 */
	uint32_t java;      /* the JVM's Java feature version; 0 unknown */
	const char *detail; /* NUL-terminated, <= STRATA_STR_MAX bytes; NULL means "" */
};

struct strata_conn {
	int fd; /* -1 when not connected */
	uint32_t seq;     /* next seq; atomic */
	uint64_t sent;    /* atomic */
	uint64_t dropped; /* atomic */
};

int strata_encode_hello(void *buf, size_t cap, const struct strata_frame_meta *m,
			const struct strata_hello_args *a);
int strata_encode_register(void *buf, size_t cap, const struct strata_frame_meta *m,
			   const struct strata_block_args *a);
int strata_encode_move(void *buf, size_t cap, const struct strata_frame_meta *m,
		       uint64_t block_id, uint64_t vaddr, uint64_t length, uint32_t pid,
		       uint32_t gc_epoch);
int strata_encode_access(void *buf, size_t cap, const struct strata_frame_meta *m,
			 uint64_t block_id, uint64_t offset, uint64_t length, uint8_t kind);
int strata_encode_free(void *buf, size_t cap, const struct strata_frame_meta *m,
		       uint64_t block_id, uint8_t reason);
int strata_encode_dropped(void *buf, size_t cap, const struct strata_frame_meta *m,
			  uint64_t dropped, uint64_t sent);
/* A WALK frame: -EINVAL for a state out of range, a STALE with extents,
 * part >= parts, an empty or wrapping extent, extents not ascending and
 * disjoint, or count over STRATA_WALK_EXTENTS_MAX. */
int strata_encode_walk(void *buf, size_t cap, const struct strata_frame_meta *m,
		       const struct strata_walk_args *a);
/* GC and CHECKED frames (type STRATA_FRAME_GC or STRATA_FRAME_CHECKED). */
int strata_encode_epoch(void *buf, size_t cap, const struct strata_frame_meta *m,
			uint16_t type, uint32_t gc_epoch);

/* An OFF frame: -EINVAL for a reason out of range. */
int strata_encode_off(void *buf, size_t cap, const struct strata_frame_meta *m,
		      const struct strata_off_args *a);

/* Connects to path (NULL: $STRATA_HOOK_SOCKET, else STRATA_DEFAULT_SOCKET).
 * Returns 0 or a negative errno; on failure c->fd is -1 and every send
 * counts a drop. */
int strata_conn_open(struct strata_conn *c, const char *path);
/* strata_conn_open that never waits: a listener whose backlog is full
 * fails it with -EAGAIN (for a JVM thread that connects once). */
int strata_conn_try(struct strata_conn *c, const char *path);
void strata_conn_close(struct strata_conn *c);
/* Fills m with the next seq, the calling thread's tid and the time now. */
void strata_conn_meta(struct strata_conn *c, struct strata_frame_meta *m);
/* Sends one encoded frame without blocking; counts it sent or dropped. */
int strata_conn_send(struct strata_conn *c, const void *frame, size_t len);

int strata_send_hello(struct strata_conn *c, const struct strata_hello_args *a);
int strata_send_register(struct strata_conn *c, const struct strata_block_args *a);
int strata_send_move(struct strata_conn *c, uint64_t block_id, uint64_t vaddr,
		     uint64_t length, uint32_t pid, uint32_t gc_epoch);
int strata_send_access(struct strata_conn *c, uint64_t block_id, uint64_t offset,
		       uint64_t length, uint8_t kind);
int strata_send_free(struct strata_conn *c, uint64_t block_id, uint8_t reason);
/* Reports the connection's cumulative dropped and sent counters. */
int strata_send_dropped(struct strata_conn *c);
int strata_send_off(struct strata_conn *c, const struct strata_off_args *a);

#endif /* STRATA_FRAME_H */
