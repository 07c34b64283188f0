/*
 * frame.c - encoder and non-blocking sender for the hook wire format
 * (jvmhook/include/strata_hook.h; API in frame.h).
 *
 * Nothing here allocates or blocks after strata_conn_open: frames are built
 * on the caller's stack and sent with MSG_DONTWAIT. Build with
 *   gcc -Wall -Wextra -O2 -fvisibility=hidden -Ijvmhook/include
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "frame.h"

static uint64_t now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Returns the length of s (NULL is ""), or -1 when over STRATA_STR_MAX. */
static int str_len(const char *s)
{
	size_t n;

	if (s == NULL)
		return 0;
	n = strnlen(s, STRATA_STR_MAX + 1);
	return n > STRATA_STR_MAX ? -1 : (int)n;
}

/* Writes the header of a frame of type and total length into buf. */
static void put_hdr(void *buf, uint16_t type, uint32_t length,
		    const struct strata_frame_meta *m)
{
	struct strata_hdr h;

	memset(&h, 0, sizeof(h));
	h.magic = STRATA_MAGIC;
	h.version = STRATA_PROTO_VERSION;
	h.type = type;
	h.length = length;
	h.seq = m->seq;
	h.tid = m->tid;
	h.time_ns = m->time_ns;
	memcpy(buf, &h, sizeof(h));
}

/* Writes a fixed-size frame (header + body) and returns its length. */
static int put_fixed(void *buf, size_t cap, uint16_t type, const struct strata_frame_meta *m,
		     const void *body, size_t body_len)
{
	size_t len = STRATA_HDR_SIZE + body_len;

	if (cap < len)
		return -ENOSPC;
	put_hdr(buf, type, (uint32_t)len, m);
	memcpy((char *)buf + STRATA_HDR_SIZE, body, body_len);
	return (int)len;
}

int strata_encode_hello(void *buf, size_t cap, const struct strata_frame_meta *m,
			const struct strata_hello_args *a)
{
	struct strata_hello b;
	int app = str_len(a->app_id), exec = str_len(a->executor_id);
	size_t len;
	char *p;

	if (app < 0 || exec < 0)
		return -ENAMETOOLONG;
	if (a->walk > STRATA_WALK_MODE_MAX)
		return -EINVAL;
	len = STRATA_HDR_SIZE + STRATA_HELLO_SIZE + (size_t)app + (size_t)exec;
	if (cap < len)
		return -ENOSPC;
	memset(&b, 0, sizeof(b));
	b.pid = a->pid;
	b.page_size = a->page_size;
	b.monotonic_ns = a->monotonic_ns;
	b.byte_array_base = a->byte_array_base;
	b.long_array_base = a->long_array_base;
	b.ref_size = a->ref_size;
	b.walk = a->walk;
	b.app_id_len = (uint16_t)app;
	b.executor_id_len = (uint16_t)exec;
	put_hdr(buf, STRATA_FRAME_HELLO, (uint32_t)len, m);
	p = (char *)buf + STRATA_HDR_SIZE;
	memcpy(p, &b, sizeof(b));
	p += sizeof(b);
	if (app > 0)
		memcpy(p, a->app_id, (size_t)app);
	p += app;
	if (exec > 0)
		memcpy(p, a->executor_id, (size_t)exec);
	return (int)len;
}

int strata_encode_register(void *buf, size_t cap, const struct strata_frame_meta *m,
			   const struct strata_block_args *a)
{
	struct strata_register b;
	int name = str_len(a->name), label = str_len(a->label);
	int batch = (a->flags & STRATA_BLOCK_CACHED_BATCH) != 0;
	size_t len;

	if (name < 0 || label < 0)
		return -ENAMETOOLONG;
	if (name == 0 || a->block_id == 0 || a->length == 0 || a->vaddr + a->length < a->vaddr ||
	    a->kind == 0 || a->kind > STRATA_KIND_MAX || (a->flags & ~STRATA_BLOCK_FLAGS_ALL) != 0 ||
	    a->chunks == 0 || a->chunk >= a->chunks || a->column < -1 ||
	    (!batch && (a->column != -1 || label != 0)))
		return -EINVAL;
	len = STRATA_HDR_SIZE + STRATA_REGISTER_SIZE + (size_t)name + (size_t)label;
	if (cap < len)
		return -ENOSPC;
	memset(&b, 0, sizeof(b));
	b.block_id = a->block_id;
	b.vaddr = a->vaddr;
	b.length = a->length;
	b.pid = a->pid;
	b.rdd_id = a->rdd_id;
	b.partition = a->partition;
	b.mode = a->mode;
	b.location = a->location;
	b.name_len = (uint16_t)name;
	b.kind = a->kind;
	b.flags = a->flags;
	b.chunk = a->chunk;
	b.chunks = a->chunks;
	b.stage_id = a->stage_id;
	b.stage_attempt = a->stage_attempt;
	b.task_attempt_id = a->task_attempt_id;
	b.label_len = (uint16_t)label;
	b.column = a->column;
	b.spark_bytes = a->spark_bytes;
	put_hdr(buf, STRATA_FRAME_REGISTER, (uint32_t)len, m);
	memcpy((char *)buf + STRATA_HDR_SIZE, &b, sizeof(b));
	memcpy((char *)buf + STRATA_HDR_SIZE + sizeof(b), a->name, (size_t)name);
	if (label > 0)
		memcpy((char *)buf + STRATA_HDR_SIZE + sizeof(b) + name, a->label, (size_t)label);
	return (int)len;
}

int strata_encode_move(void *buf, size_t cap, const struct strata_frame_meta *m,
		       uint64_t block_id, uint64_t vaddr, uint64_t length, uint32_t pid,
		       uint32_t gc_epoch)
{
	struct strata_move b = {
		.block_id = block_id,
		.vaddr = vaddr,
		.length = length,
		.pid = pid,
		.gc_epoch = gc_epoch,
	};

	if (block_id == 0 || length == 0 || vaddr + length < vaddr)
		return -EINVAL;
	return put_fixed(buf, cap, STRATA_FRAME_MOVE, m, &b, sizeof(b));
}

int strata_encode_access(void *buf, size_t cap, const struct strata_frame_meta *m,
			 uint64_t block_id, uint64_t offset, uint64_t length, uint8_t kind)
{
	struct strata_access b;

	if (block_id == 0 || offset + length < offset ||
	    (kind != STRATA_ACCESS_READ && kind != STRATA_ACCESS_WRITE))
		return -EINVAL;
	memset(&b, 0, sizeof(b));
	b.block_id = block_id;
	b.offset = offset;
	b.length = length;
	b.kind = kind;
	return put_fixed(buf, cap, STRATA_FRAME_ACCESS, m, &b, sizeof(b));
}

int strata_encode_free(void *buf, size_t cap, const struct strata_frame_meta *m,
		       uint64_t block_id, uint8_t reason)
{
	struct strata_free b;

	if (block_id == 0 || reason == 0 || reason > STRATA_FREE_REASON_MAX)
		return -EINVAL;
	memset(&b, 0, sizeof(b));
	b.block_id = block_id;
	b.reason = reason;
	return put_fixed(buf, cap, STRATA_FRAME_FREE, m, &b, sizeof(b));
}

int strata_encode_dropped(void *buf, size_t cap, const struct strata_frame_meta *m,
			  uint64_t dropped, uint64_t sent)
{
	struct strata_dropped b = { .dropped = dropped, .sent = sent };

	return put_fixed(buf, cap, STRATA_FRAME_DROPPED, m, &b, sizeof(b));
}

int strata_encode_walk(void *buf, size_t cap, const struct strata_frame_meta *m,
		       const struct strata_walk_args *a)
{
	struct strata_walk b;
	size_t len = STRATA_HDR_SIZE + STRATA_WALK_SIZE + (size_t)a->count * STRATA_EXTENT_SIZE;
	uint64_t end = 0;

	if (a->block_id == 0 || a->state == 0 || a->state > STRATA_WALK_STATE_MAX ||
	    a->parts == 0 || a->part >= a->parts || a->count > STRATA_WALK_EXTENTS_MAX ||
	    a->count > a->extents || (a->count > 0 && a->ext == NULL) ||
	    (a->state == STRATA_WALK_STALE && (a->count != 0 || a->parts != 1 || a->extents != 0)))
		return -EINVAL;
	for (uint16_t i = 0; i < a->count; i++) {
		const struct strata_extent *e = &a->ext[i];

		if (e->length == 0 || e->vaddr + e->length < e->vaddr || (i > 0 && e->vaddr < end))
			return -EINVAL;
		end = e->vaddr + e->length;
	}
	if (cap < len)
		return -ENOSPC;
	memset(&b, 0, sizeof(b));
	b.block_id = a->block_id;
	b.gc_epoch = a->gc_epoch;
	b.walk_seq = a->walk_seq;
	b.part = a->part;
	b.parts = a->parts;
	b.count = a->count;
	b.state = a->state;
	b.objects = a->objects;
	b.bytes = a->bytes;
	b.shared_objects = a->shared_objects;
	b.shared_bytes = a->shared_bytes;
	b.opaque_objects = a->opaque_objects;
	b.extents = a->extents;
	put_hdr(buf, STRATA_FRAME_WALK, (uint32_t)len, m);
	memcpy((char *)buf + STRATA_HDR_SIZE, &b, sizeof(b));
	if (a->count > 0)
		memcpy((char *)buf + STRATA_HDR_SIZE + sizeof(b), a->ext,
		       (size_t)a->count * STRATA_EXTENT_SIZE);
	return (int)len;
}

int strata_encode_epoch(void *buf, size_t cap, const struct strata_frame_meta *m,
			uint16_t type, uint32_t gc_epoch)
{
	struct strata_epoch b = { .gc_epoch = gc_epoch };

	if (type != STRATA_FRAME_GC && type != STRATA_FRAME_CHECKED)
		return -EINVAL;
	return put_fixed(buf, cap, type, m, &b, sizeof(b));
}

int strata_encode_off(void *buf, size_t cap, const struct strata_frame_meta *m,
		      const struct strata_off_args *a)
{
	struct strata_off b;
	int detail = str_len(a->detail);
	size_t len;

	if (detail < 0)
		return -ENAMETOOLONG;
	if (a->reason == 0 || a->reason > STRATA_OFF_REASON_MAX)
		return -EINVAL;
	len = STRATA_HDR_SIZE + STRATA_OFF_SIZE + (size_t)detail;
	if (cap < len)
		return -ENOSPC;
	memset(&b, 0, sizeof(b));
	b.pid = a->pid;
	b.reason = a->reason;
	b.detail_len = (uint16_t)detail;
	b.java = a->java;
	put_hdr(buf, STRATA_FRAME_OFF, (uint32_t)len, m);
	memcpy((char *)buf + STRATA_HDR_SIZE, &b, sizeof(b));
	if (detail > 0)
		memcpy((char *)buf + STRATA_HDR_SIZE + sizeof(b), a->detail, (size_t)detail);
	return (int)len;
}

/* Connects a SEQPACKET socket of the given extra type flags to path. */
static int conn_open(struct strata_conn *c, const char *path, int flags)
{
	struct sockaddr_un addr;
	int fd;

	memset(c, 0, sizeof(*c));
	c->fd = -1;
	if (path == NULL)
		path = getenv(STRATA_SOCKET_ENV);
	if (path == NULL || path[0] == '\0')
		path = STRATA_DEFAULT_SOCKET;
	memset(&addr, 0, sizeof(addr));
	addr.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(addr.sun_path))
		return -ENAMETOOLONG;
	strcpy(addr.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | flags, 0);
	if (fd < 0)
		return -errno;
	/* Best effort: the kernel caps the request at net.core.wmem_max. */
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &(int){ STRATA_SNDBUF_WANT }, sizeof(int));
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		int err = errno;

		close(fd);
		return -err;
	}
	c->fd = fd;
	return 0;
}

int strata_conn_open(struct strata_conn *c, const char *path)
{
	return conn_open(c, path, 0);
}

int strata_conn_try(struct strata_conn *c, const char *path)
{
	return conn_open(c, path, SOCK_NONBLOCK);
}

void strata_conn_close(struct strata_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

/* The calling thread's kernel tid, asked once per thread (a syscall costs
 * more than the rest of a frame's header); a forked child asks again. */
static __thread uint32_t cached_tid;

static void forget_tid(void)
{
	cached_tid = 0;
}

__attribute__((constructor)) static void frame_init(void)
{
	pthread_atfork(NULL, NULL, forget_tid);
}

static uint32_t thread_id(void)
{
	if (cached_tid == 0)
		cached_tid = (uint32_t)syscall(SYS_gettid);
	return cached_tid;
}

void strata_conn_meta(struct strata_conn *c, struct strata_frame_meta *m)
{
	m->seq = __atomic_fetch_add(&c->seq, 1, __ATOMIC_RELAXED);
	m->tid = thread_id();
	m->time_ns = now_ns(CLOCK_REALTIME);
}

static int count_drop(struct strata_conn *c, int err)
{
	__atomic_fetch_add(&c->dropped, 1, __ATOMIC_RELAXED);
	return err;
}

int strata_conn_send(struct strata_conn *c, const void *frame, size_t len)
{
	ssize_t n;

	if (c->fd < 0)
		return count_drop(c, -ENOTCONN);
	do {
		n = send(c->fd, frame, len, MSG_DONTWAIT | MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return count_drop(c, -errno);
	__atomic_fetch_add(&c->sent, 1, __ATOMIC_RELAXED);
	return 0;
}

/* Sends an encoded frame, or counts the drop when encoding failed. */
static int send_encoded(struct strata_conn *c, const void *buf, int len)
{
	if (len < 0)
		return count_drop(c, len);
	return strata_conn_send(c, buf, (size_t)len);
}

int strata_send_hello(struct strata_conn *c, const struct strata_hello_args *a)
{
	unsigned char buf[STRATA_FRAME_MAX];
	struct strata_frame_meta m;
	struct strata_hello_args with_clock = *a;

	strata_conn_meta(c, &m);
	with_clock.monotonic_ns = now_ns(CLOCK_MONOTONIC);
	return send_encoded(c, buf, strata_encode_hello(buf, sizeof(buf), &m, &with_clock));
}

int strata_send_register(struct strata_conn *c, const struct strata_block_args *a)
{
	unsigned char buf[STRATA_FRAME_MAX];
	struct strata_frame_meta m;

	strata_conn_meta(c, &m);
	return send_encoded(c, buf, strata_encode_register(buf, sizeof(buf), &m, a));
}

int strata_send_move(struct strata_conn *c, uint64_t block_id, uint64_t vaddr,
		     uint64_t length, uint32_t pid, uint32_t gc_epoch)
{
	unsigned char buf[STRATA_HDR_SIZE + STRATA_MOVE_SIZE];
	struct strata_frame_meta m;

	strata_conn_meta(c, &m);
	return send_encoded(c, buf, strata_encode_move(buf, sizeof(buf), &m, block_id, vaddr,
						       length, pid, gc_epoch));
}

int strata_send_access(struct strata_conn *c, uint64_t block_id, uint64_t offset,
		       uint64_t length, uint8_t kind)
{
	unsigned char buf[STRATA_HDR_SIZE + STRATA_ACCESS_SIZE];
	struct strata_frame_meta m;

	strata_conn_meta(c, &m);
	return send_encoded(c, buf, strata_encode_access(buf, sizeof(buf), &m, block_id, offset,
							 length, kind));
}

int strata_send_free(struct strata_conn *c, uint64_t block_id, uint8_t reason)
{
	unsigned char buf[STRATA_HDR_SIZE + STRATA_FREE_SIZE];
	struct strata_frame_meta m;

	strata_conn_meta(c, &m);
	return send_encoded(c, buf, strata_encode_free(buf, sizeof(buf), &m, block_id, reason));
}

int strata_send_dropped(struct strata_conn *c)
{
	unsigned char buf[STRATA_HDR_SIZE + STRATA_DROPPED_SIZE];
	struct strata_frame_meta m;

	strata_conn_meta(c, &m);
	return send_encoded(c, buf, strata_encode_dropped(buf, sizeof(buf), &m,
			    __atomic_load_n(&c->dropped, __ATOMIC_RELAXED),
			    __atomic_load_n(&c->sent, __ATOMIC_RELAXED)));
}

int strata_send_off(struct strata_conn *c, const struct strata_off_args *a)
{
	unsigned char buf[STRATA_HDR_SIZE + STRATA_OFF_SIZE + STRATA_STR_MAX];
	struct strata_frame_meta m;

	strata_conn_meta(c, &m);
	return send_encoded(c, buf, strata_encode_off(buf, sizeof(buf), &m, a));
}
