/*
 * registry.c - live blocks, the agent connection and the GC thread (API and
 * rules in registry.h).
 *
 * Locking: one mutex (mu) guards the table, the connection state and the
 * send queue, so frames are queued in the order the table changed. No thread
 * makes a JNI or JVMTI call, or a system call that can wait, while holding
 * mu: addresses are read before taking it, weak references of freed blocks
 * are queued (graveyard) and deleted by the hook thread outside it.
 *
 * Sending: a JVM thread never writes the socket. It encodes its frame into a
 * byte ring (RING_BYTES; a full ring drops the frame and counts it) and the
 * hook thread sends what is queued, SEND_BATCH frames per sendmmsg(2). The
 * hook thread sleeps until a producer wakes it through the eventfd (one
 * write(2) per gathering), then lets frames gather for GATHER_MS (or until
 * GATHER_BYTES are queued) and sends them all; producers make no system
 * call while it gathers. A frame waits GATHER_MS at most, and a steady
 * stream costs one wake-up of the hook thread, and of the agent's session,
 * per GATHER_MS or GATHER_BYTES. Sending each burst as it came (polling
 * every millisecond through a 3 ms linger) cost an 8 s PageRank run about
 * a hundred agent wake-ups a second.
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
 * the walker's WALK and CHECKED) queues GC of that epoch first (sync_gc),
 * under mu, so the agent always learns of a collection before anything
 * that depends on it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "registry.h"

/* How long frames gather after the first one wakes the hook thread, and
 * how many queued bytes end the gathering early (well below what the
 * socket holds with default sysctls, about 280 frames, so that a sustained
 * stream is sent in pieces the socket takes without waiting). */
#define GATHER_MS 20
#define GATHER_BYTES (16u << 10)
/* Frames per sendmmsg(2). */
#define SEND_BATCH 64

struct entry {
	uint64_t id;
	enum reg_source source;
	jweak ref;       /* heap arrays: weak global ref; else NULL */
	uint64_t offset; /* bytes from the array's data start */
	struct strata_block_args args;
	char name[STRATA_STR_MAX + 1];
	char label[STRATA_STR_MAX + 1];
	uint32_t walk_seq;     /* walks and STALE marks sent, the latest's seq */
	struct reg_walk *walk; /* the latest walk, NULL before the first */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct entry **slots; /* open addressing by id, NULL = empty */
static size_t cap, count;
static uint64_t next_id = 1;
static struct strata_conn conn = { .fd = -1 };
/* Frames of closed connections; dropped_before is also the drops some
 * DROPPED frame has told an agent about, see try_connect. */
static uint64_t sent_before, dropped_before, reported_dropped;
static uint64_t connects, moves, collected;
static char app_id[STRATA_STR_MAX + 1], executor_id[STRATA_STR_MAX + 1];
static int identified;
static int connect_now; /* atomic: identify asks for a connect at once */
static jweak *graveyard;
static size_t grave_n, grave_cap;

/* The send queue: records of {u32 length, u32 zero, frame} padded to 8
 * bytes; a length of RING_SKIP means "the rest up to the end is unused".
 * Positions count bytes ever queued: producers (under mu) advance tail, the
 * hook thread (the consumer, under drain_mu) advances head. */
#define RING_BYTES (4u << 20)
#define RING_SKIP 0xFFFFFFFFu
static unsigned char ring[RING_BYTES] __attribute__((aligned(8)));
static uint64_t ring_head, ring_tail; /* atomics */
static int consumer_asleep;           /* atomic: the hook thread waits for a wake-up */
static pthread_mutex_t drain_mu = PTHREAD_MUTEX_INITIALIZER;

static struct reg_config cfg;
static JavaVM *jvm;
static int wake_fd = -1;
static uint64_t gc_started, gc_finished; /* atomics */
static uint32_t pid;
static uint32_t gc_reported;     /* epoch of the latest GC frame queued; mu */
static uint32_t checked_epoch;   /* of the latest CHECKED queued; mu */
static int checked_sent;         /* a CHECKED was ever queued; mu */
static uint8_t walk_mode;        /* HELLO's; 0 until decided; atomic */

static size_t slot_of(uint64_t id, size_t c)
{
	return (size_t)((id * 0x9E3779B97F4A7C15ull) >> 17) & (c - 1);
}

static struct entry *find(uint64_t id)
{
	if (cap == 0)
		return NULL;
	for (size_t i = slot_of(id, cap);; i = (i + 1) & (cap - 1)) {
		if (slots[i] == NULL)
			return NULL;
		if (slots[i]->id == id)
			return slots[i];
	}
}

static void place(struct entry **tab, size_t c, struct entry *e)
{
	size_t i = slot_of(e->id, c);

	while (tab[i] != NULL)
		i = (i + 1) & (c - 1);
	tab[i] = e;
}

/* Makes room for one more entry; -ENOMEM when it cannot. */
static int reserve(void)
{
	size_t nc;
	struct entry **nt;

	if ((count + 1) * 4 <= cap * 3)
		return 0;
	nc = cap ? cap * 2 : 1024;
	nt = calloc(nc, sizeof(*nt));
	if (nt == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < cap; i++)
		if (slots[i] != NULL)
			place(nt, nc, slots[i]);
	free(slots);
	slots = nt;
	cap = nc;
	return 0;
}

/* Removes id's entry (backward-shift deletion) and returns it. */
static struct entry *take(uint64_t id)
{
	size_t i, j;
	struct entry *e;

	if (cap == 0)
		return NULL;
	for (i = slot_of(id, cap); slots[i] != NULL && slots[i]->id != id; i = (i + 1) & (cap - 1))
		;
	e = slots[i];
	if (e == NULL)
		return NULL;
	slots[i] = NULL;
	for (j = (i + 1) & (cap - 1); slots[j] != NULL; j = (j + 1) & (cap - 1)) {
		size_t home = slot_of(slots[j]->id, cap);

		/* move slots[j] into the hole unless its home lies in (i, j] */
		if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
			slots[i] = slots[j];
			slots[j] = NULL;
			i = j;
		}
	}
	count--;
	return e;
}

static void bury(jweak ref)
{
	jweak *ng;

	if (ref == NULL)
		return;
	if (grave_n == grave_cap) {
		ng = realloc(graveyard, (grave_cap ? grave_cap * 2 : 64) * sizeof(*ng));
		if (ng == NULL)
			return; /* leaks one weak ref rather than block */
		graveyard = ng;
		grave_cap = grave_cap ? grave_cap * 2 : 64;
	}
	graveyard[grave_n++] = ref;
}

static void wake(void)
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

/* Queues one encoded frame (len < 0: encoding failed) for the hook thread;
 * mu held. Not connected or a full queue: the frame is dropped and counted
 * (its seq is used either way, so the agent sees the gap). */
static void queue(const void *frame, int len)
{
	uint64_t tail = ring_tail, head;
	uint32_t need, off, room;

	if (len < 0 || conn.fd < 0) {
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
		wake();
}

static void queue_register(struct entry *e)
{
	unsigned char buf[STRATA_FRAME_MAX];
	struct strata_frame_meta m;

	strata_conn_meta(&conn, &m);
	queue(buf, strata_encode_register(buf, sizeof(buf), &m, &e->args));
}

static void queue_move(struct entry *e, uint32_t epoch)
{
	unsigned char buf[STRATA_HDR_SIZE + STRATA_MOVE_SIZE];
	struct strata_frame_meta m;

	strata_conn_meta(&conn, &m);
	queue(buf, strata_encode_move(buf, sizeof(buf), &m, e->id, e->args.vaddr, e->args.length, pid,
				      epoch));
}

static void queue_free(uint64_t id, uint8_t reason)
{
	unsigned char buf[STRATA_HDR_SIZE + STRATA_FREE_SIZE];
	struct strata_frame_meta m;

	strata_conn_meta(&conn, &m);
	queue(buf, strata_encode_free(buf, sizeof(buf), &m, id, reason));
}

static void queue_epoch(uint16_t type, uint32_t epoch)
{
	unsigned char buf[STRATA_HDR_SIZE + STRATA_EPOCH_SIZE];
	struct strata_frame_meta m;

	strata_conn_meta(&conn, &m);
	queue(buf, strata_encode_epoch(buf, sizeof(buf), &m, type, epoch));
}

/* Queues GC of epoch unless one of it (or later) is queued already; mu held. */
static void sync_gc(uint32_t epoch)
{
	if (epoch > gc_reported) {
		gc_reported = epoch;
		queue_epoch(STRATA_FRAME_GC, epoch);
	}
}

/* Queues a walk as WALK frames of STRATA_WALK_EXTENTS_MAX extents each; mu
 * held. */
static void queue_walk(uint64_t id, const struct reg_walk *w)
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

static void free_walk(struct reg_walk *w)
{
	if (w != NULL)
		free(w->ext);
	free(w);
}

/* Frees an entry taken out of the table (outside mu). */
static void free_entry(struct entry *e)
{
	if (e != NULL)
		free_walk(e->walk);
	free(e);
}

/* Ends the connection (the hook thread reconnects); mu held. */
static void disconnect(void)
{
	if (conn.fd >= 0) {
		close(conn.fd);
		__atomic_store_n(&conn.fd, -1, __ATOMIC_RELEASE);
	}
}

/* Sends what is queued, up to SEND_BATCH frames in one sendmmsg; returns the frames
 * taken off the queue. Only the hook thread waits (POLLOUT, up to wait_ms)
 * for room in a full socket; what still does not fit is dropped and counted. */
static int drain(int wait_ms)
{
	struct mmsghdr msgs[SEND_BATCH];
	struct iovec iov[SEND_BATCH];
	uint64_t head, tail, next;
	int n = 0, done = 0, fd;

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

			if (poll(&p, 1, wait_ms) > 0 && (p.revents & POLLOUT))
				continue;
		}
		if (k < 0 && errno != EAGAIN) {
			pthread_mutex_lock(&mu);
			if (conn.fd == fd)
				disconnect();
			pthread_mutex_unlock(&mu);
		}
		break;
	}
	if (n > done)
		__atomic_fetch_add(&conn.dropped, (uint64_t)(n - done), __ATOMIC_RELAXED);
	__atomic_store_n(&ring_head, next, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&drain_mu);
	return n;
}

/* Drops everything queued (frames for a connection that is gone); mu held,
 * so no producer runs. */
static void discard_queue(void)
{
	pthread_mutex_lock(&drain_mu);
	for (uint64_t h = ring_head; h != ring_tail;) {
		uint32_t off = (uint32_t)(h % RING_BYTES), len;

		memcpy(&len, ring + off, sizeof(len));
		if (len == RING_SKIP) {
			h += RING_BYTES - off;
			continue;
		}
		h += padded(len);
		__atomic_fetch_add(&conn.dropped, 1, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&ring_head, ring_tail, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&drain_mu);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Reads the data address of a heap array through the JVM (never from an
 * object layout): the critical section is released at once, with JNI_ABORT
 * so nothing is copied back. Returns 0 on failure. */
static uint64_t array_address(JNIEnv *env, jobject arr)
{
	void *p = (*env)->GetPrimitiveArrayCritical(env, arr, NULL);

	if (p == NULL)
		return 0;
	(*env)->ReleasePrimitiveArrayCritical(env, arr, p, JNI_ABORT);
	return (uint64_t)(uintptr_t)p;
}

static uint64_t object_array_address(JNIEnv *env, jobject arr)
{
	jlong a = (*env)->CallStaticLongMethod(env, cfg.object_class, cfg.object_address, arr);

	if ((*env)->ExceptionCheck(env)) {
		(*env)->ExceptionClear(env);
		return 0;
	}
	return (uint64_t)a;
}

/* Current address of a tracked array's data start; 0 when unreadable. */
static uint64_t heap_address(JNIEnv *env, enum reg_source src, jobject obj)
{
	return src == REG_HEAP_ARRAY ? array_address(env, obj) : object_array_address(env, obj);
}

/* The hook thread's array for column_read's answers: a global reference,
 * replaced by a longer one when a column needs it. */
static jlongArray column_scratch;

static int by_extent(const void *a, const void *b)
{
	uint64_t x = ((const struct strata_extent *)a)->vaddr, y = ((const struct strata_extent *)b)->vaddr;

	return (x > y) - (x < y);
}

/*
 * Reads the buffers of one column of a cached DataFrame block (batches, its
 * Object[] of batches) through Java, which decodes their references: one
 * call, no JNI call per buffer. Returns them as a walk (DONE, the buffers'
 * data ascending, objects = buffers, bytes = their lengths, gc_epoch the
 * collections finished when Java answered) and the first batch's buffer in
 * *first; NULL when the column has no buffer, Java failed or memory ran
 * out. scratch is the caller's reusable array (NULL: none); a longer one
 * Java had to make replaces it. The caller compares gc_started around the
 * call: a collection that started meanwhile may have moved some buffers.
 */
static struct reg_walk *column_read(JNIEnv *env, jobject batches, int32_t column, jlongArray *scratch,
				    struct strata_extent *first)
{
	jlongArray a;
	jlong n = 0;
	jsize len;
	struct reg_walk *w;
	uint32_t k = 0;

	a = (jlongArray)(*env)->CallStaticObjectMethod(env, cfg.object_class, cfg.column_buffers, batches,
						       (jint)column, scratch != NULL ? *scratch : NULL);
	if ((*env)->ExceptionCheck(env)) {
		(*env)->ExceptionClear(env);
		return NULL;
	}
	if (a == NULL)
		return NULL;
	len = (*env)->GetArrayLength(env, a);
	if (len > 0)
		(*env)->GetLongArrayRegion(env, a, 0, 1, &n);
	/* At most 65535 WALK parts. */
	if (n <= 0 || n > (len - 1) / 2 || n > 65535 * STRATA_WALK_EXTENTS_MAX || (w = calloc(1, sizeof(*w))) == NULL) {
		(*env)->DeleteLocalRef(env, a);
		return NULL;
	}
	if ((w->ext = malloc((size_t)n * sizeof(*w->ext))) == NULL) {
		free(w);
		(*env)->DeleteLocalRef(env, a);
		return NULL;
	}
	(*env)->GetLongArrayRegion(env, a, 1, (jsize)(2 * n), (jlong *)w->ext);
	w->gc_epoch = (uint32_t)__atomic_load_n(&gc_finished, __ATOMIC_ACQUIRE);
	if (scratch != NULL && !(*env)->IsSameObject(env, a, *scratch)) {
		jlongArray g = (jlongArray)(*env)->NewGlobalRef(env, a);

		if (g != NULL) {
			if (*scratch != NULL)
				(*env)->DeleteGlobalRef(env, *scratch);
			*scratch = g;
		}
	}
	(*env)->DeleteLocalRef(env, a);
	*first = w->ext[0];
	qsort(w->ext, (size_t)n, sizeof(*w->ext), by_extent);
	for (jlong i = 0; i < n; i++) {
		struct strata_extent x = w->ext[i];

		if (x.length == 0 || x.vaddr + x.length < x.vaddr ||
		    (k > 0 && x.vaddr < w->ext[k - 1].vaddr + w->ext[k - 1].length)) {
			if (k > 0 && x.vaddr == w->ext[k - 1].vaddr && x.length == w->ext[k - 1].length)
				continue; /* one buffer in two batches: its bytes once */
			free_walk(w);
			return NULL;
		}
		w->ext[k++] = x;
		w->bytes += x.length;
	}
	w->n = k;
	w->objects = k;
	w->state = STRATA_WALK_DONE;
	return w;
}

/*
 * Makes *w (first: the first batch's buffer) the buffers of e, a cached
 * batch column, unless they are where e's latest walk says; mu held. When
 * they moved it queues a MOVE of the REGISTER range if the first buffer
 * moved, then the new walk (walk_seq + 1), both after a GC frame of the
 * walk's epoch. *w becomes the walk to free (the old one, or the new one
 * when nothing moved). Returns whether it queued a MOVE.
 */
static int column_apply(struct entry *e, struct reg_walk **w, struct strata_extent first)
{
	struct reg_walk *nw = *w, *old = e->walk;
	int moved = 0;

	if (old != NULL && old->n == nw->n && memcmp(old->ext, nw->ext, nw->n * sizeof(*nw->ext)) == 0 &&
	    e->args.vaddr == first.vaddr && e->args.length == first.length)
		return 0;
	sync_gc(nw->gc_epoch);
	if (e->args.vaddr != first.vaddr || e->args.length != first.length) {
		e->args.vaddr = first.vaddr;
		e->args.length = first.length;
		queue_move(e, nw->gc_epoch);
		moved = 1;
	}
	nw->seq = ++e->walk_seq;
	e->walk = nw;
	queue_walk(e->id, nw);
	*w = old;
	return moved;
}

uint64_t reg_add(JNIEnv *env, struct reg_block *b)
{
	struct entry *e;
	struct reg_walk *cw = NULL;
	struct strata_extent first = { 0, 0 };
	uint64_t base = 0, started, id;
	jweak ref = NULL;
	int tries = 0;

	e = calloc(1, sizeof(*e));
	if (e == NULL)
		return 0;
	e->source = b->source;
	e->offset = b->offset;
	e->args = b->args;
	if (b->args.name != NULL)
		snprintf(e->name, sizeof(e->name), "%s", b->args.name);
	e->args.name = e->name;
	if (b->args.label != NULL)
		snprintf(e->label, sizeof(e->label), "%s", b->args.label);
	e->args.label = e->label;
	e->args.pid = pid;
	switch (b->source) {
	case REG_DIRECT: {
		void *p = b->ref ? (*env)->GetDirectBufferAddress(env, b->ref) : NULL;

		base = (uint64_t)(uintptr_t)p;
		break;
	}
	case REG_ADDRESS:
		base = b->address;
		break;
	case REG_HEAP_ARRAY:
	case REG_OBJECT_ARRAY:
		ref = (*env)->NewWeakGlobalRef(env, b->ref);
		if (ref == NULL)
			break;
		started = __atomic_load_n(&gc_started, __ATOMIC_ACQUIRE);
		base = heap_address(env, b->source, b->ref);
		break;
	case REG_CACHED_COLUMN:
		e->offset = 0;
		ref = (*env)->NewWeakGlobalRef(env, b->ref);
		if (ref == NULL)
			break;
		started = __atomic_load_n(&gc_started, __ATOMIC_ACQUIRE);
		cw = column_read(env, b->ref, b->args.column, NULL, &first);
		if (cw != NULL) {
			base = first.vaddr;
			e->args.length = first.length;
		}
		break;
	}
	if (base == 0) {
		if (ref != NULL)
			(*env)->DeleteWeakGlobalRef(env, ref);
		free(e);
		return 0;
	}
	e->ref = ref;
	e->args.vaddr = base + e->offset;
	pthread_mutex_lock(&mu);
	if (reserve() != 0) {
		pthread_mutex_unlock(&mu);
		if (ref != NULL)
			(*env)->DeleteWeakGlobalRef(env, ref);
		free_walk(cw);
		free(e);
		return 0;
	}
	id = e->id = next_id++;
	e->args.block_id = e->id;
	place(slots, cap, e);
	count++;
	if (cw != NULL)
		sync_gc(cw->gc_epoch); /* before the REGISTER: nothing comes between it and its walk */
	queue_register(e);
	if (cw != NULL) {
		cw->seq = ++e->walk_seq;
		e->walk = cw;
		queue_walk(id, cw);
	}
	pthread_mutex_unlock(&mu);
	/* A GC that ran between reading the address and inserting the entry may
	 * have been rescanned before the entry existed: read it again. e is
	 * looked at only under mu, once find says it is still live. */
	while (ref != NULL && __atomic_load_n(&gc_started, __ATOMIC_ACQUIRE) != started && tries++ < 4) {
		uint64_t a = 0;

		started = __atomic_load_n(&gc_started, __ATOMIC_ACQUIRE);
		if (b->source == REG_CACHED_COLUMN) {
			cw = column_read(env, b->ref, b->args.column, NULL, &first);
			if (cw == NULL)
				break;
		} else if ((a = heap_address(env, b->source, b->ref)) == 0) {
			break;
		}
		pthread_mutex_lock(&mu);
		if (find(id) == e) {
			if (cw != NULL)
				column_apply(e, &cw, first);
			else if (e->args.vaddr != a + b->offset) {
				e->args.vaddr = a + b->offset;
				queue_move(e, (uint32_t)__atomic_load_n(&gc_finished, __ATOMIC_RELAXED));
			}
		}
		pthread_mutex_unlock(&mu);
		free_walk(cw);
		cw = NULL;
	}
	return id;
}

void reg_free(uint64_t id, uint8_t reason)
{
	struct entry *e;

	pthread_mutex_lock(&mu);
	e = take(id);
	if (e != NULL) {
		queue_free(id, reason);
		bury(e->ref);
	}
	pthread_mutex_unlock(&mu);
	free_entry(e);
}

void reg_access(uint64_t id, uint64_t offset, uint64_t length, uint8_t kind)
{
	pthread_mutex_lock(&mu);
	if (find(id) != NULL) {
		unsigned char buf[STRATA_HDR_SIZE + STRATA_ACCESS_SIZE];
		struct strata_frame_meta m;

		strata_conn_meta(&conn, &m);
		queue(buf, strata_encode_access(buf, sizeof(buf), &m, id, offset, length, kind));
	}
	pthread_mutex_unlock(&mu);
}

uint64_t reg_vaddr(uint64_t id)
{
	struct entry *e;
	uint64_t v = 0;

	pthread_mutex_lock(&mu);
	e = find(id);
	if (e != NULL)
		v = e->args.vaddr;
	pthread_mutex_unlock(&mu);
	return v;
}

uint32_t reg_walk(uint64_t id, struct reg_walk *w)
{
	struct entry *e;
	struct reg_walk *old = w;
	uint32_t seq = 0;

	pthread_mutex_lock(&mu);
	e = find(id);
	if (e != NULL && (e->args.flags & STRATA_BLOCK_OBJECT_GRAPH) != 0) {
		sync_gc(w->gc_epoch);
		seq = w->seq = ++e->walk_seq;
		old = e->walk;
		e->walk = w;
		queue_walk(id, w);
	}
	pthread_mutex_unlock(&mu);
	free_walk(old);
	return seq;
}

void reg_checked(uint32_t epoch)
{
	pthread_mutex_lock(&mu);
	sync_gc(epoch);
	queue_epoch(STRATA_FRAME_CHECKED, epoch);
	checked_epoch = epoch;
	checked_sent = 1;
	pthread_mutex_unlock(&mu);
}

void reg_set_walk_mode(uint8_t mode)
{
	__atomic_store_n(&walk_mode, mode, __ATOMIC_RELEASE);
	__atomic_store_n(&connect_now, 1, __ATOMIC_RELEASE);
	wake();
}

uint32_t reg_gc_epoch(void)
{
	return (uint32_t)__atomic_load_n(&gc_finished, __ATOMIC_ACQUIRE);
}

void reg_stats(struct reg_stats *s)
{
	pthread_mutex_lock(&mu);
	s->sent = sent_before + __atomic_load_n(&conn.sent, __ATOMIC_RELAXED);
	s->dropped = dropped_before + __atomic_load_n(&conn.dropped, __ATOMIC_RELAXED);
	s->live = count;
	s->connects = connects;
	s->moves = moves;
	s->collected = collected;
	pthread_mutex_unlock(&mu);
	s->gc_epoch = __atomic_load_n(&gc_finished, __ATOMIC_RELAXED);
}

/* Queues DROPPED; mu held. */
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
	pthread_mutex_lock(&mu);
	report();
	pthread_mutex_unlock(&mu);
	while (drain(0) > 0)
		;
}

void reg_identify(const char *app, const char *exec)
{
	pthread_mutex_lock(&mu);
	snprintf(app_id, sizeof(app_id), "%s", app ? app : "");
	snprintf(executor_id, sizeof(executor_id), "%s", exec ? exec : "");
	identified = 1;
	pthread_mutex_unlock(&mu);
	__atomic_store_n(&connect_now, 1, __ATOMIC_RELEASE);
	wake();
}


void reg_gc_start(void)
{
	__atomic_fetch_add(&gc_started, 1, __ATOMIC_RELEASE);
}

void reg_gc_finish(void)
{
	__atomic_fetch_add(&gc_finished, 1, __ATOMIC_RELEASE);
	wake();
}

/* Connects, sends HELLO and re-registers every live block (mu held while
 * the new connection is filled, so no other frame gets in between). */
static void try_connect(void)
{
	struct strata_conn nc;
	int rc;

	pthread_mutex_lock(&mu);
	if (!identified || conn.fd >= 0 || __atomic_load_n(&walk_mode, __ATOMIC_ACQUIRE) == 0) {
		pthread_mutex_unlock(&mu);
		return;
	}
	pthread_mutex_unlock(&mu);
	/* connect(2) on a Unix socket is quick but may wait on a full backlog:
	 * done outside mu, on this thread only. */
	rc = strata_conn_open(&nc, cfg.socket_path[0] ? cfg.socket_path : NULL);
	if (rc != 0)
		return;
	pthread_mutex_lock(&mu);
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
					      .pid = pid,
					      .page_size = (uint32_t)sysconf(_SC_PAGESIZE),
					      .byte_array_base = cfg.byte_array_base,
					      .long_array_base = cfg.long_array_base,
					      .ref_size = cfg.ref_size,
					      .walk = __atomic_load_n(&walk_mode, __ATOMIC_ACQUIRE),
					      .app_id = app_id,
					      .executor_id = executor_id,
				      });
	if (rc == 0) {
		connects++;
		for (size_t i = 0; i < cap; i++)
			if (slots[i] != NULL)
				queue_register(slots[i]);
		/* Then their walks: the GC epoch they were told against (first,
		 * so that no frame names an epoch the agent has not heard of),
		 * each object graph's latest walk or STALE mark and each cached
		 * batch column's latest walk, and what the walker checked. */
		queue_epoch(STRATA_FRAME_GC, gc_reported);
		for (size_t i = 0; i < cap; i++)
			if (slots[i] != NULL && slots[i]->walk != NULL)
				queue_walk(slots[i]->id, slots[i]->walk);
		if (checked_sent)
			queue_epoch(STRATA_FRAME_CHECKED, checked_epoch);
		if (conn.dropped > 0)
			report();
	} else {
		disconnect();
	}
	pthread_mutex_unlock(&mu);
}

/* Ends the connection when the agent closed its end. */
static void check_peer(void)
{
	struct pollfd p = { .events = POLLIN };

	pthread_mutex_lock(&mu);
	p.fd = conn.fd;
	if (p.fd >= 0 && poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR | POLLIN)))
		disconnect(); /* the agent never writes: any event means it is gone */
	pthread_mutex_unlock(&mu);
}

struct snap {
	uint64_t id;
	enum reg_source source;
	jweak ref;
	uint64_t offset;
	uint64_t vaddr; /* where the range was before this GC */
	int32_t column; /* REG_CACHED_COLUMN's */
};

static int by_vaddr(const void *a, const void *b)
{
	uint64_t x = ((const struct snap *)a)->vaddr, y = ((const struct snap *)b)->vaddr;

	return (x > y) - (x < y);
}

/*
 * After a GC: re-read every tracked array, and every cached batch column's
 * buffers, and report the moved ones, in the order of their old addresses
 * (a column: of its first buffer; its new walk follows its MOVE). A compacting collector slides objects
 * towards lower addresses, so a block's new range may cover the old range
 * of the block after it; reported lowest first, every MOVE names a range
 * that no block still registered at its old place overlaps (the agent's
 * kernel index refuses overlapping ranges). Copying collectors move objects
 * into regions that were empty, where no old range lies.
 */
static void rescan(JNIEnv *env)
{
	struct snap *s;
	size_t n = 0;
	uint32_t epoch = (uint32_t)__atomic_load_n(&gc_finished, __ATOMIC_ACQUIRE);

	pthread_mutex_lock(&mu);
	sync_gc(epoch);
	s = malloc((count ? count : 1) * sizeof(*s));
	for (size_t i = 0; s != NULL && i < cap; i++) {
		struct entry *e = slots[i];

		if (e != NULL && e->ref != NULL)
			s[n++] = (struct snap){ e->id, e->source, e->ref, e->offset, e->args.vaddr, e->args.column };
	}
	pthread_mutex_unlock(&mu);
	if (s == NULL)
		return;
	qsort(s, n, sizeof(*s), by_vaddr);
	/* Refs in s stay valid: freed entries' refs wait in the graveyard,
	 * which only this thread empties, after this loop. */
	for (size_t i = 0; i < n; i++) {
		jobject obj = (*env)->NewLocalRef(env, s[i].ref);
		struct reg_walk *cw = NULL;
		struct strata_extent first;
		uint64_t a = 0;
		struct entry *e;

		if (obj != NULL && s[i].source == REG_CACHED_COLUMN) {
			uint64_t started = __atomic_load_n(&gc_started, __ATOMIC_ACQUIRE);

			cw = column_read(env, obj, s[i].column, &column_scratch, &first);
			(*env)->DeleteLocalRef(env, obj);
			/* A collection that started meanwhile may have moved some of
			 * the buffers read: the rescan after it reads them again. */
			if (cw == NULL || __atomic_load_n(&gc_started, __ATOMIC_ACQUIRE) != started) {
				free_walk(cw);
				continue;
			}
		} else if (obj != NULL) {
			a = heap_address(env, s[i].source, obj);
			(*env)->DeleteLocalRef(env, obj);
			if (a == 0)
				continue;
		}
		pthread_mutex_lock(&mu);
		e = find(s[i].id);
		if (e != NULL && e->ref == s[i].ref) {
			if (obj == NULL) {
				e = take(s[i].id);
				queue_free(e->id, STRATA_FREE_COLLECTED);
				bury(e->ref);
				collected++;
				free_entry(e);
			} else if (cw != NULL) {
				moves += (uint64_t)column_apply(e, &cw, first);
			} else if (e->args.vaddr != a + s[i].offset) {
				e->args.vaddr = a + s[i].offset;
				moves++;
				queue_move(e, epoch);
			}
		}
		pthread_mutex_unlock(&mu);
		free_walk(cw);
	}
	free(s);
}

static void empty_graveyard(JNIEnv *env)
{
	jweak *g;
	size_t n;

	pthread_mutex_lock(&mu);
	g = graveyard;
	n = grave_n;
	graveyard = NULL;
	grave_n = grave_cap = 0;
	pthread_mutex_unlock(&mu);
	for (size_t i = 0; i < n; i++)
		(*env)->DeleteWeakGlobalRef(env, g[i]);
	free(g);
}

/* The hook thread is a Java thread only while it makes JNI calls (after a
 * GC, and to free weak references): a thread attached to the JVM and
 * blocked in poll() would hold every exit of the JVM for 300 ms, the time
 * HotSpot waits for threads in native code to come back before it exits. */
static JNIEnv *attach(void)
{
	JNIEnv *env;
	JavaVMAttachArgs aa = { .version = JNI_VERSION_1_8, .name = "strata-hook", .group = NULL };

	if ((*jvm)->AttachCurrentThreadAsDaemon(jvm, (void **)&env, &aa) != JNI_OK)
		return NULL;
	return env;
}

static void detach(void)
{
	(*jvm)->DetachCurrentThread(jvm);
}

/* Bytes queued and not yet taken by drain. */
static uint64_t queued(void)
{
	return __atomic_load_n(&ring_tail, __ATOMIC_SEQ_CST) - __atomic_load_n(&ring_head, __ATOMIC_SEQ_CST);
}

static void rescan_after_gc(uint64_t *rescanned)
{
	uint64_t gcs = __atomic_load_n(&gc_finished, __ATOMIC_ACQUIRE);
	JNIEnv *env;

	if (gcs != *rescanned && (env = attach()) != NULL) {
		*rescanned = gcs;
		rescan(env);
		/* The GC frame is queued: the walker may check its walks now. */
		if (__atomic_load_n(&walk_mode, __ATOMIC_ACQUIRE) == STRATA_WALK_ON && cfg.walk_wake != NULL) {
			(*env)->CallStaticVoidMethod(env, cfg.object_class, cfg.walk_wake);
			if ((*env)->ExceptionCheck(env))
				(*env)->ExceptionClear(env);
		}
		detach();
	}
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
	JNIEnv *env;
	uint64_t last_tick = 0, rescanned = 0;

	(void)arg;
	pthread_setname_np(pthread_self(), "strata-hook");
	for (;;) {
		uint64_t now;

		/* Asleep until a producer, a GC or the tick: say so, then look at
		 * the queue once more (see queue). */
		__atomic_store_n(&consumer_asleep, 1, __ATOMIC_SEQ_CST);
		wait_wake(queued() ? 0 : cfg.reconnect_ms);
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
		    now - last_tick < (uint64_t)cfg.reconnect_ms)
			continue;
		/* Once per reconnect_ms, or at once when the ids became known. */
		last_tick = now;
		if (__atomic_load_n(&grave_n, __ATOMIC_RELAXED) > 0 && (env = attach()) != NULL) {
			empty_graveyard(env);
			detach();
		}
		check_peer();
		try_connect();
		/* Let the agent know about drops while they happen. */
		pthread_mutex_lock(&mu);
		if (dropped_before + __atomic_load_n(&conn.dropped, __ATOMIC_RELAXED) != reported_dropped)
			report();
		pthread_mutex_unlock(&mu);
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
	cfg = *c;
	walk_mode = c->walk_mode;
	if (cfg.reconnect_ms <= 0)
		cfg.reconnect_ms = 1000;
	jvm = vm;
	pid = (uint32_t)getpid();
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
