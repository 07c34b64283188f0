/*
 * sendq.c - the send queue, the connection to the node agent and the hook
 * thread (sendq.h; the registry's API and rules in registry.h).
 *
 * Threads: "JVM" is any Java thread in a native of org.stratatrace.hook.
 * Native (task threads register, free and access blocks; the walker,
 * strata-walk, sends walks and CHECKED; start, identify and walkMode come
 * once). "hook" is the hook thread, strata-hook, started by reg_start.
 * "GC" is a JVMTI GC callback, inside the pause. "exit" is reg_report's
 * caller (Agent_OnUnload, Native.report). A "producer" is any of JVM, hook
 * or exit queueing a frame, which it does holding reg_mu.
 *
 * Every shared field of the registry, who writes it, who reads it, and how:
 *
 *   field (file)                 written by              read by              how
 *   ---------------------------  ----------------------  -------------------  -------------------------
 *   ring bytes [tail, tail+len)  producers (queue)       hook, exit (drain)   reg_mu; ring_tail
 *                                                                             publishes them
 *   ring_tail                    producers               drain, queued        reg_mu to write; atomic
 *   ring_head                    drain (hook, exit),     producers, queued    drain_mu to write; atomic
 *                                discard_queue (hook)
 *   consumer_asleep              hook                    producers            atomic (seq_cst, see queue)
 *   conn.fd                      hook (try_connect,      producers, report;   reg_mu to write; atomic
 *                                check_peer), drain      drain without lock
 *   conn.seq                     producers, hook (HELLO) producers            reg_mu; atomic
 *   conn.sent                    drain                   hook, exit, JVM      atomic; reset under reg_mu
 *   conn.dropped                 producers, drain,       hook, exit, JVM      atomic; reset under reg_mu
 *                                discard_queue
 *   sent_before, dropped_before  hook (try_connect)      hook, exit, JVM      reg_mu
 *   reported_dropped             hook, exit (report)     hook (tick, connect) reg_mu
 *   connects                     hook                    JVM (stats)          reg_mu
 *   app_id, executor_id,         JVM (reg_identify)      hook (try_connect)   reg_mu
 *   identified
 *   connect_now                  JVM (identify, walk     hook                 atomic
 *                                mode) set, hook clears
 *   walk_mode                    JVM (start, walkMode)   hook                 atomic
 *   gc_reported                  producers (sq_sync_gc)  hook (try_connect)   reg_mu
 *   wake_fd                      reg_start, once         JVM, GC, hook        set before the hook starts
 *   reg_cfg, reg_jvm, reg_pid    reg_start, once         all                  set before the hook starts
 *   table: slots, cap, count,    JVM (reg_add, reg_      JVM, hook            reg_mu
 *   next_id (blocks.c)           free), hook (rescan)
 *   entry args.vaddr/length,     JVM (reg_add, reg_      JVM, hook            reg_mu (other fields are
 *   walk, walk_seq (blocks.h)    walk), hook (rescan)                         set before insertion)
 *   checked_epoch, checked_sent  JVM (reg_checked)       hook (try_connect)   reg_mu
 *   (walks.c)
 *   gc_started, gc_finished      GC                      JVM, hook            atomic
 *   (rescan.c)
 *   moves, collected (rescan.c)  hook (rescan)           JVM (stats)          reg_mu
 *   graveyard, grave_n,          JVM (reg_free), hook    hook                 reg_mu; grave_n also read
 *   grave_cap (rescan.c)         (rescan) add; hook                           atomically without it
 *                                empties
 *   column_scratch (rescan.c)    hook                    hook                 one thread
 *
 * reg_mu makes frames queue in the order the table changed. No thread makes
 * a JNI or JVMTI call, or a system call that can wait, while holding it:
 * addresses are read before taking it, weak references of freed blocks are
 * deleted by the hook thread outside it. drain_mu keeps one consumer at a
 * time: drain only tries it (the hook thread, and reg_report at exit) and
 * takes reg_mu to end a broken connection only after letting it go;
 * discard_queue (the hook thread's reconnect) waits for it inside reg_mu.
 * So the order is always reg_mu, then drain_mu.
 *
 * Sending: a producer never writes the socket. It encodes its frame into a
 * byte ring (RING_BYTES; a full ring drops the frame and counts it) and the
 * hook thread sends what is queued, SEND_BATCH frames per sendmmsg(2). The
 * hook thread sleeps until a producer wakes it through the eventfd (one
 * write(2) per gathering), then lets frames gather for GATHER_MS (or until
 * GATHER_BYTES are queued) and sends them all; producers make no system
 * call while it gathers. A frame waits GATHER_MS at most, and a steady
 * stream costs one wake-up of the hook thread, and of the agent's session,
 * per GATHER_MS or GATHER_BYTES.
 *
 * Frames are at most STRATA_FRAME_MAX (4096) bytes: a WALK part with
 * STRATA_WALK_EXTENTS_MAX extents is the largest. Producers encode on a
 * stack buffer of that size; the ring (4 MiB) holds about a thousand of the
 * largest, so a walk of the agent's default extent cap (65536 extents, 265
 * parts, 1 MiB) fits in it whole; GATHER_BYTES ends a gathering after four
 * of them, and SEND_BATCH of them (256 KiB) may not fit in the socket at
 * once, in which case drain waits for room (the hook thread only).
 *
 * GC epochs: gc_reported is the epoch of the latest GC frame queued.
 * Whoever queues a frame naming a later epoch (the hook thread's rescan,
 * the walker's WALK and CHECKED, a cached column's registration) queues GC
 * of that epoch first (sq_sync_gc), under reg_mu, so the agent always
 * learns of a collection before anything that depends on it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "rescan.h"
#include "sendq.h"
#include "walks.h"

/* How long frames gather after the first one wakes the hook thread, and
 * how many queued bytes end the gathering early (well below what the
 * socket holds with default sysctls, about 280 frames, so that a sustained
 * stream is sent in pieces the socket takes without waiting). */
#define GATHER_MS 20
#define GATHER_BYTES (16u << 10)
/* Frames per sendmmsg(2). */
#define SEND_BATCH 64

pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
struct reg_config reg_cfg;
JavaVM *reg_jvm;
uint32_t reg_pid;

/* The send queue: records of {u32 length, u32 zero, frame} padded to 8
 * bytes; a length of RING_SKIP means "the rest up to the end is unused".
 * Positions count bytes ever queued: producers (under reg_mu) advance
 * tail, the consumer (under drain_mu) advances head. */
#define RING_BYTES (4u << 20)
#define RING_SKIP 0xFFFFFFFFu
static unsigned char ring[RING_BYTES] __attribute__((aligned(8)));
static uint64_t ring_head, ring_tail; /* atomics */
static int consumer_asleep;           /* atomic: the hook thread waits for a wake-up */
static pthread_mutex_t drain_mu = PTHREAD_MUTEX_INITIALIZER;
static int wake_fd = -1;

static struct strata_conn conn = { .fd = -1 };
/* Frames of closed connections; dropped_before is also the drops some
 * DROPPED frame has told an agent about, see try_connect. */
static uint64_t sent_before, dropped_before, reported_dropped;
static uint64_t connects;
static char app_id[STRATA_STR_MAX + 1], executor_id[STRATA_STR_MAX + 1];
static int identified;
static int connect_now;      /* atomic: identify asks for a connect at once */
static uint8_t walk_mode;    /* HELLO's; 0 until decided; atomic */
static uint32_t gc_reported; /* epoch of the latest GC frame queued */

void sq_wake(void)
{
	uint64_t one = 1;
	ssize_t n;

	if (wake_fd >= 0)
		n = write(wake_fd, &one, sizeof(one)); /* eventfd: never blocks */
	(void)n;
}

static uint32_t padded(uint32_t len)
{
	return 8 + ((len + 7) & ~7u);
}

/* Whether the encoded frame only says what the registry holds (REGISTER,
 * MOVE, FREE, WALK, GC, CHECKED, DROPPED): the next connect sends all of it
 * again (every live block at its address, the latest walks, the GC epoch
 * and what the walker checked, the drops no agent has heard of), so a
 * frame of these that a lost connection never delivers loses nothing. An
 * ACCESS is an event: once undelivered, it is lost. */
static int superseded(const unsigned char *frame)
{
	uint16_t type;

	memcpy(&type, frame + offsetof(struct strata_hdr, type), sizeof(type));
	return type != STRATA_FRAME_ACCESS;
}

/* Counts the frames in [h, end) of the ring that are lost with the
 * connection: every one when the connection stays (the socket was full),
 * else those superseded() does not cover. */
static void count_lost(uint64_t h, uint64_t end, int conn_gone)
{
	while (h != end) {
		uint32_t off = (uint32_t)(h % RING_BYTES), len;

		memcpy(&len, ring + off, sizeof(len));
		if (len == RING_SKIP) {
			h += RING_BYTES - off;
			continue;
		}
		if (!conn_gone || !superseded(ring + off + 8))
			__atomic_fetch_add(&conn.dropped, 1, __ATOMIC_RELAXED);
		h += padded(len);
	}
}

/* Queues one encoded frame (len < 0: encoding failed) for the hook thread;
 * reg_mu held. A frame that fails to encode or finds the queue full is
 * dropped and counted; without a connection it is dropped, and counted
 * unless superseded. */
static void queue(const void *frame, int len)
{
	uint64_t tail = ring_tail, head;
	uint32_t need, off, room;

	if (len < 0) {
		__atomic_fetch_add(&conn.dropped, 1, __ATOMIC_RELAXED);
		return;
	}
	if (conn.fd < 0) {
		if (!superseded(frame))
			__atomic_fetch_add(&conn.dropped, 1, __ATOMIC_RELAXED);
		return;
	}
	need = padded((uint32_t)len);
	off = (uint32_t)(tail % RING_BYTES);
	room = RING_BYTES - off;
	head = __atomic_load_n(&ring_head, __ATOMIC_ACQUIRE);
	if (tail + need + (room < need ? room : 0) - head > RING_BYTES) {
		__atomic_fetch_add(&conn.dropped, 1, __ATOMIC_RELAXED);
		return;
	}
	if (room < need) { /* records never wrap: skip to the start */
		uint32_t skip = RING_SKIP;

		memcpy(ring + off, &skip, sizeof(skip));
		tail += room;
		off = 0;
	}
	memcpy(ring + off, &(uint32_t[2]){ (uint32_t)len, 0 }, 8);
	memcpy(ring + off + 8, frame, (size_t)len);
	__atomic_store_n(&ring_tail, tail + need, __ATOMIC_SEQ_CST);
	/* Paired with the consumer's store of consumer_asleep and its re-read
	 * of ring_tail: at least one of the two sees the other. The frame that
	 * takes the queue past GATHER_BYTES also wakes it (it may be gathering). */
	if (__atomic_load_n(&consumer_asleep, __ATOMIC_SEQ_CST) ||
	    (tail - head < GATHER_BYTES && tail + need - head >= GATHER_BYTES))
		sq_wake();
}

void sq_register(const struct entry *e)
{
	unsigned char buf[STRATA_FRAME_MAX];
	struct strata_frame_meta m;

	strata_conn_meta(&conn, &m);
	queue(buf, strata_encode_register(buf, sizeof(buf), &m, &e->args));
}

void sq_move(const struct entry *e, uint32_t epoch)
{
	unsigned char buf[STRATA_HDR_SIZE + STRATA_MOVE_SIZE];
	struct strata_frame_meta m;

	strata_conn_meta(&conn, &m);
	queue(buf, strata_encode_move(buf, sizeof(buf), &m, e->id, e->args.vaddr, e->args.length, reg_pid,
				      epoch));
}

void sq_free(uint64_t id, uint8_t reason)
{
	unsigned char buf[STRATA_HDR_SIZE + STRATA_FREE_SIZE];
	struct strata_frame_meta m;

	strata_conn_meta(&conn, &m);
	queue(buf, strata_encode_free(buf, sizeof(buf), &m, id, reason));
}

void sq_access(uint64_t id, uint64_t offset, uint64_t length, uint8_t kind)
{
	unsigned char buf[STRATA_HDR_SIZE + STRATA_ACCESS_SIZE];
	struct strata_frame_meta m;

	strata_conn_meta(&conn, &m);
	queue(buf, strata_encode_access(buf, sizeof(buf), &m, id, offset, length, kind));
}

void sq_epoch(uint16_t type, uint32_t epoch)
{
	unsigned char buf[STRATA_HDR_SIZE + STRATA_EPOCH_SIZE];
	struct strata_frame_meta m;

	strata_conn_meta(&conn, &m);
	queue(buf, strata_encode_epoch(buf, sizeof(buf), &m, type, epoch));
}

void sq_sync_gc(uint32_t epoch)
{
	if (epoch > gc_reported) {
		gc_reported = epoch;
		sq_epoch(STRATA_FRAME_GC, epoch);
	}
}

void sq_walk(uint64_t id, const struct reg_walk *w)
{
	unsigned char buf[STRATA_FRAME_MAX];
	struct strata_frame_meta m;
	uint32_t parts = w->n == 0 ? 1 : (w->n + STRATA_WALK_EXTENTS_MAX - 1) / STRATA_WALK_EXTENTS_MAX;

	for (uint32_t p = 0; p < parts; p++) {
		uint32_t first = p * STRATA_WALK_EXTENTS_MAX;
		uint32_t k = w->n - first < STRATA_WALK_EXTENTS_MAX ? w->n - first : STRATA_WALK_EXTENTS_MAX;

		strata_conn_meta(&conn, &m);
		queue(buf, strata_encode_walk(buf, sizeof(buf), &m, &(struct strata_walk_args){
			.block_id = id,
			.gc_epoch = w->gc_epoch,
			.walk_seq = w->seq,
			.part = (uint16_t)p,
			.parts = (uint16_t)parts,
			.state = w->state,
			.objects = w->objects,
			.bytes = w->bytes,
			.shared_objects = w->shared_objects,
			.shared_bytes = w->shared_bytes,
			.opaque_objects = w->opaque_objects,
			.extents = w->n,
			.ext = w->n ? w->ext + first : NULL,
			.count = (uint16_t)k,
		}));
	}
}

/* Ends the connection (the hook thread reconnects); reg_mu held. */
static void disconnect(void)
{
	if (conn.fd >= 0) {
		close(conn.fd);
		__atomic_store_n(&conn.fd, -1, __ATOMIC_RELEASE);
	}
}

/* Sends what is queued, up to SEND_BATCH frames in one sendmmsg; returns
 * the frames taken off the queue. Only the hook thread waits (POLLOUT, up
 * to wait_ms) for room in a full socket; what still does not fit is dropped
 * and counted. Frames a broken or closed connection did not take are
 * dropped and counted as count_lost says. */
static int drain(int wait_ms)
{
	struct mmsghdr msgs[SEND_BATCH];
	struct iovec iov[SEND_BATCH];
	uint64_t head, tail, next, at[SEND_BATCH];
	int n = 0, done = 0, fd, broken = 0;

	if (pthread_mutex_trylock(&drain_mu) != 0)
		return 0;
	head = __atomic_load_n(&ring_head, __ATOMIC_ACQUIRE);
	tail = __atomic_load_n(&ring_tail, __ATOMIC_ACQUIRE);
	for (next = head; next != tail && n < SEND_BATCH;) {
		uint32_t off = (uint32_t)(next % RING_BYTES), len;

		memcpy(&len, ring + off, sizeof(len));
		if (len == RING_SKIP) {
			next += RING_BYTES - off;
			continue;
		}
		at[n] = next;
		iov[n] = (struct iovec){ .iov_base = ring + off + 8, .iov_len = len };
		memset(&msgs[n], 0, sizeof(msgs[n]));
		msgs[n].msg_hdr.msg_iov = &iov[n];
		msgs[n].msg_hdr.msg_iovlen = 1;
		next += padded(len);
		n++;
	}
	fd = __atomic_load_n(&conn.fd, __ATOMIC_ACQUIRE);
	while (done < n && fd >= 0) {
		int k = sendmmsg(fd, msgs + done, (unsigned)(n - done), MSG_DONTWAIT | MSG_NOSIGNAL);

		if (k > 0) {
			done += k;
			__atomic_fetch_add(&conn.sent, (uint64_t)k, __ATOMIC_RELAXED);
			continue;
		}
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && errno == EAGAIN && wait_ms > 0) {
			struct pollfd p = { .fd = fd, .events = POLLOUT };

			if (poll(&p, 1, wait_ms) > 0) {
				if (p.revents & POLLOUT)
					continue;
				broken = (p.revents & (POLLHUP | POLLERR)) != 0;
			}
		}
		if (k < 0 && errno != EAGAIN)
			broken = 1;
		break;
	}
	if (n > done)
		count_lost(at[done], next, broken || fd < 0);
	__atomic_store_n(&ring_head, next, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&drain_mu);
	/* reg_mu only after drain_mu is let go: discard_queue takes them in the
	 * other order. */
	if (broken) {
		pthread_mutex_lock(&reg_mu);
		if (conn.fd == fd)
			disconnect();
		pthread_mutex_unlock(&reg_mu);
	}
	return n;
}

/* Drops everything queued (frames for a connection that is gone); reg_mu
 * held, so no producer runs. */
static void discard_queue(void)
{
	pthread_mutex_lock(&drain_mu);
	count_lost(ring_head, ring_tail, 1);
	__atomic_store_n(&ring_head, ring_tail, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&drain_mu);
}

/* Bytes queued and not yet taken by drain. */
static uint64_t queued(void)
{
	return __atomic_load_n(&ring_tail, __ATOMIC_SEQ_CST) - __atomic_load_n(&ring_head, __ATOMIC_SEQ_CST);
}

/* Queues DROPPED; reg_mu held. */
static void report(void)
{
	unsigned char buf[STRATA_HDR_SIZE + STRATA_DROPPED_SIZE];
	struct strata_frame_meta m;
	uint64_t d;

	if (conn.fd < 0)
		return;
	strata_conn_meta(&conn, &m);
	d = __atomic_load_n(&conn.dropped, __ATOMIC_RELAXED);
	queue(buf, strata_encode_dropped(buf, sizeof(buf), &m, d,
					 __atomic_load_n(&conn.sent, __ATOMIC_RELAXED)));
	reported_dropped = dropped_before + d;
}

/* At exit: queues DROPPED and sends what is queued, without waiting. */
void reg_report(void)
{
	pthread_mutex_lock(&reg_mu);
	report();
	pthread_mutex_unlock(&reg_mu);
	while (drain(0) > 0)
		;
}

void sq_counts(uint64_t *sent, uint64_t *dropped, uint64_t *n)
{
	*sent = sent_before + __atomic_load_n(&conn.sent, __ATOMIC_RELAXED);
	*dropped = dropped_before + __atomic_load_n(&conn.dropped, __ATOMIC_RELAXED);
	*n = connects;
}

void reg_identify(const char *app, const char *exec)
{
	pthread_mutex_lock(&reg_mu);
	snprintf(app_id, sizeof(app_id), "%s", app ? app : "");
	snprintf(executor_id, sizeof(executor_id), "%s", exec ? exec : "");
	identified = 1;
	pthread_mutex_unlock(&reg_mu);
	__atomic_store_n(&connect_now, 1, __ATOMIC_RELEASE);
	sq_wake();
}

void reg_set_walk_mode(uint8_t mode)
{
	__atomic_store_n(&walk_mode, mode, __ATOMIC_RELEASE);
	__atomic_store_n(&connect_now, 1, __ATOMIC_RELEASE);
	sq_wake();
}

uint8_t sq_walk_mode(void)
{
	return __atomic_load_n(&walk_mode, __ATOMIC_ACQUIRE);
}

/* Connects, sends HELLO and re-registers every live block (reg_mu held
 * while the new connection is filled, so no other frame gets in between). */
static void try_connect(void)
{
	struct strata_conn nc;
	struct entry *e;
	size_t slot = 0;
	int rc;

	pthread_mutex_lock(&reg_mu);
	if (!identified || conn.fd >= 0 || sq_walk_mode() == 0) {
		pthread_mutex_unlock(&reg_mu);
		return;
	}
	pthread_mutex_unlock(&reg_mu);
	/* connect(2) on a Unix socket is quick but may wait on a full backlog:
	 * done outside reg_mu, on this thread only. */
	rc = strata_conn_open(&nc, reg_cfg.socket_path[0] ? reg_cfg.socket_path : NULL);
	if (rc != 0)
		return;
	pthread_mutex_lock(&reg_mu);
	discard_queue(); /* frames of the old connection never reach the new one */
	/* A session's DROPPED counts from its HELLO, so the new session starts
	 * with the drops no agent has heard of yet (those made while no agent
	 * listened): every drop is reported once. */
	{
		uint64_t total = dropped_before + __atomic_load_n(&conn.dropped, __ATOMIC_RELAXED);

		sent_before += __atomic_load_n(&conn.sent, __ATOMIC_RELAXED);
		nc.dropped = total - reported_dropped;
		dropped_before = reported_dropped;
	}
	conn = nc;
	/* HELLO goes out at once (the queue is empty); every live block is
	 * queued behind it before any producer can queue anything else. */
	rc = strata_send_hello(&conn, &(struct strata_hello_args){
					      .pid = reg_pid,
					      .page_size = (uint32_t)sysconf(_SC_PAGESIZE),
					      .byte_array_base = reg_cfg.byte_array_base,
					      .long_array_base = reg_cfg.long_array_base,
					      .ref_size = reg_cfg.ref_size,
					      .walk = sq_walk_mode(),
					      .app_id = app_id,
					      .executor_id = executor_id,
				      });
	if (rc == 0) {
		connects++;
		while ((e = table_next(&slot)) != NULL)
			sq_register(e);
		/* Then their walks: the GC epoch they were told against (first,
		 * so that no frame names an epoch the agent has not heard of),
		 * each object graph's latest walk or STALE mark and each cached
		 * batch column's latest walk, and what the walker checked. */
		sq_epoch(STRATA_FRAME_GC, gc_reported);
		walks_resend();
		if (conn.dropped > 0)
			report();
	} else {
		disconnect();
	}
	pthread_mutex_unlock(&reg_mu);
}

/* Ends the connection when the agent closed its end. */
static void check_peer(void)
{
	struct pollfd p = { .events = POLLIN };

	pthread_mutex_lock(&reg_mu);
	p.fd = conn.fd;
	if (p.fd >= 0 && poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR | POLLIN)))
		disconnect(); /* the agent never writes: any event means it is gone */
	pthread_mutex_unlock(&reg_mu);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Waits up to timeout_ms for the eventfd and clears it; 1 when woken. */
static int wait_wake(int timeout_ms)
{
	struct pollfd p = { .fd = wake_fd, .events = POLLIN };
	uint64_t v;

	if (poll(&p, 1, timeout_ms) <= 0)
		return 0;
	while (read(wake_fd, &v, sizeof(v)) == sizeof(v))
		;
	return 1;
}

/* Lets frames gather for GATHER_MS, or until GATHER_BYTES are queued. A GC
 * that ends meanwhile wakes the thread too (producers do not while it is
 * awake, but for the frame that crosses GATHER_BYTES): its blocks are
 * rescanned at once, so that no block registered after the GC, at an
 * address a moved block left, is queued long before that block's MOVE. */
static void gather(uint64_t *rescanned)
{
	uint64_t end = now_ms() + GATHER_MS, now;

	while ((now = now_ms()) < end && queued() < GATHER_BYTES)
		if (wait_wake((int)(end - now)))
			rescan_after_gc(rescanned);
}

static void *hook_thread(void *arg)
{
	uint64_t last_tick = 0, rescanned = 0;

	(void)arg;
	pthread_setname_np(pthread_self(), "strata-hook");
	for (;;) {
		uint64_t now;

		/* Asleep until a producer, a GC or the tick: say so, then look at
		 * the queue once more (see queue). */
		__atomic_store_n(&consumer_asleep, 1, __ATOMIC_SEQ_CST);
		wait_wake(queued() ? 0 : reg_cfg.reconnect_ms);
		__atomic_store_n(&consumer_asleep, 0, __ATOMIC_SEQ_CST);
		/* Addresses first: a MOVE queued now goes out with this gathering. */
		rescan_after_gc(&rescanned);
		if (queued()) {
			gather(&rescanned);
			while (drain(20) == SEND_BATCH)
				;
		}
		now = now_ms();
		if (!__atomic_exchange_n(&connect_now, 0, __ATOMIC_ACQ_REL) &&
		    now - last_tick < (uint64_t)reg_cfg.reconnect_ms)
			continue;
		/* Once per reconnect_ms, or at once when the ids became known. */
		last_tick = now;
		rescan_empty_graveyard();
		check_peer();
		try_connect();
		/* Let the agent know about drops while they happen. */
		pthread_mutex_lock(&reg_mu);
		if (dropped_before + __atomic_load_n(&conn.dropped, __ATOMIC_RELAXED) != reported_dropped)
			report();
		pthread_mutex_unlock(&reg_mu);
	}
	return NULL;
}

int reg_start(JNIEnv *env, JavaVM *vm, const struct reg_config *c)
{
	pthread_t th;
	pthread_attr_t at;
	int rc;

	(void)env;
	if (wake_fd >= 0)
		return -EALREADY;
	reg_cfg = *c;
	walk_mode = c->walk_mode;
	if (reg_cfg.reconnect_ms <= 0)
		reg_cfg.reconnect_ms = 1000;
	reg_jvm = vm;
	reg_pid = (uint32_t)getpid();
	wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (wake_fd < 0)
		return -errno;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&th, &at, hook_thread, NULL);
	pthread_attr_destroy(&at);
	if (rc != 0) {
		close(wake_fd);
		wake_fd = -1;
		return -rc;
	}
	return 0;
}
