/*
 * golden.c - test helper for agent/hooksrv, built by the Go tests with gcc
 * together with jvmhook/native/frame.c.
 *
 *   golden layout        print sizeof/offsetof of every wire struct field and
 *                        every shared constant, one per line:
 *                          size <struct> <bytes>
 *                          field <struct> <field> <offset> <size>
 *                          const <NAME> <value>
 *   golden frames DIR    write the golden frames, one file per frame, made by
 *                        the real encoder from fixed inputs (see golden_test.go)
 *   golden errors        print "<case> <return value>" for encoder calls that
 *                        must fail
 *   golden flood N [DIR] over a SEQPACKET socketpair nobody reads (or, with
 *                        DIR, a connection made by strata_conn_open to a
 *                        listener there), send N ACCESS frames without
 *                        blocking, then drain and check the packets; print
 *                          flood <sent> <dropped> <received> <contiguous 0|1>
 *                          report <hex of the DROPPED frame sent after draining>
 *   golden threads T N   T threads send N ACCESS frames each over one
 *                        connection while a reader drains it; print
 *                          threads <sent> <dropped> <received> <distinct seqs>
 *                                  <max seq + 1> <whole frames>
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "frame.h"

#define SIZE(t) printf("size %s %zu\n", #t, sizeof(struct t))
#define FIELD(t, f)                                                              \
	printf("field %s %s %zu %zu\n", #t, #f, offsetof(struct t, f),            \
	       sizeof(((struct t *)0)->f))
#define CONST(c) printf("const %s %lld\n", #c, (long long)(c))

static void layout(void)
{
	SIZE(strata_hdr);
	FIELD(strata_hdr, magic);
	FIELD(strata_hdr, version);
	FIELD(strata_hdr, type);
	FIELD(strata_hdr, length);
	FIELD(strata_hdr, seq);
	FIELD(strata_hdr, tid);
	FIELD(strata_hdr, reserved);
	FIELD(strata_hdr, time_ns);
	SIZE(strata_hello);
	FIELD(strata_hello, pid);
	FIELD(strata_hello, page_size);
	FIELD(strata_hello, monotonic_ns);
	FIELD(strata_hello, byte_array_base);
	FIELD(strata_hello, long_array_base);
	FIELD(strata_hello, ref_size);
	FIELD(strata_hello, walk);
	FIELD(strata_hello, reserved);
	FIELD(strata_hello, app_id_len);
	FIELD(strata_hello, executor_id_len);
	SIZE(strata_register);
	FIELD(strata_register, block_id);
	FIELD(strata_register, vaddr);
	FIELD(strata_register, length);
	FIELD(strata_register, pid);
	FIELD(strata_register, rdd_id);
	FIELD(strata_register, partition);
	FIELD(strata_register, mode);
	FIELD(strata_register, location);
	FIELD(strata_register, name_len);
	FIELD(strata_register, kind);
	FIELD(strata_register, flags);
	FIELD(strata_register, label_len);
	FIELD(strata_register, chunk);
	FIELD(strata_register, chunks);
	FIELD(strata_register, stage_id);
	FIELD(strata_register, stage_attempt);
	FIELD(strata_register, column);
	FIELD(strata_register, task_attempt_id);
	FIELD(strata_register, spark_bytes);
	SIZE(strata_move);
	FIELD(strata_move, block_id);
	FIELD(strata_move, vaddr);
	FIELD(strata_move, length);
	FIELD(strata_move, pid);
	FIELD(strata_move, gc_epoch);
	SIZE(strata_access);
	FIELD(strata_access, block_id);
	FIELD(strata_access, offset);
	FIELD(strata_access, length);
	FIELD(strata_access, kind);
	FIELD(strata_access, reserved);
	FIELD(strata_access, reserved2);
	SIZE(strata_free);
	FIELD(strata_free, block_id);
	FIELD(strata_free, reason);
	FIELD(strata_free, reserved);
	FIELD(strata_free, reserved2);
	SIZE(strata_dropped);
	FIELD(strata_dropped, dropped);
	FIELD(strata_dropped, sent);
	SIZE(strata_walk);
	FIELD(strata_walk, block_id);
	FIELD(strata_walk, gc_epoch);
	FIELD(strata_walk, walk_seq);
	FIELD(strata_walk, part);
	FIELD(strata_walk, parts);
	FIELD(strata_walk, count);
	FIELD(strata_walk, state);
	FIELD(strata_walk, reserved);
	FIELD(strata_walk, objects);
	FIELD(strata_walk, bytes);
	FIELD(strata_walk, shared_objects);
	FIELD(strata_walk, shared_bytes);
	FIELD(strata_walk, opaque_objects);
	FIELD(strata_walk, extents);
	FIELD(strata_walk, reserved2);
	SIZE(strata_extent);
	FIELD(strata_extent, vaddr);
	FIELD(strata_extent, length);
	SIZE(strata_epoch);
	FIELD(strata_epoch, gc_epoch);
	FIELD(strata_epoch, reserved);
	SIZE(strata_off);
	FIELD(strata_off, pid);
	FIELD(strata_off, reason);
	FIELD(strata_off, reserved);
	FIELD(strata_off, detail_len);
	FIELD(strata_off, java);
	FIELD(strata_off, reserved2);
	CONST(STRATA_MAGIC);
	CONST(STRATA_PROTO_VERSION);
	CONST(STRATA_FRAME_MAX);
	CONST(STRATA_STR_MAX);
	CONST(STRATA_HDR_SIZE);
	CONST(STRATA_FRAME_HELLO);
	CONST(STRATA_FRAME_REGISTER);
	CONST(STRATA_FRAME_MOVE);
	CONST(STRATA_FRAME_ACCESS);
	CONST(STRATA_FRAME_FREE);
	CONST(STRATA_FRAME_DROPPED);
	CONST(STRATA_FRAME_WALK);
	CONST(STRATA_FRAME_GC);
	CONST(STRATA_FRAME_CHECKED);
	CONST(STRATA_FRAME_OFF);
	CONST(STRATA_MODE_UNSPECIFIED);
	CONST(STRATA_MODE_STORAGE);
	CONST(STRATA_MODE_EXECUTION);
	CONST(STRATA_LOCATION_UNSPECIFIED);
	CONST(STRATA_LOCATION_ON_HEAP);
	CONST(STRATA_LOCATION_OFF_HEAP);
	CONST(STRATA_ACCESS_READ);
	CONST(STRATA_ACCESS_WRITE);
	CONST(STRATA_KIND_RDD);
	CONST(STRATA_KIND_BROADCAST);
	CONST(STRATA_KIND_SHUFFLE);
	CONST(STRATA_KIND_TASK_RESULT);
	CONST(STRATA_KIND_STREAM);
	CONST(STRATA_KIND_TUNGSTEN_PAGE);
	CONST(STRATA_KIND_OTHER);
	CONST(STRATA_KIND_MAX);
	CONST(STRATA_BLOCK_OBJECT_GRAPH);
	CONST(STRATA_BLOCK_CACHED_BATCH);
	CONST(STRATA_BLOCK_FLAGS_ALL);
	CONST(STRATA_WALK_ON);
	CONST(STRATA_WALK_OFF);
	CONST(STRATA_WALK_UNSUPPORTED_GC);
	CONST(STRATA_WALK_NO_LAYOUT);
	CONST(STRATA_WALK_MODE_MAX);
	CONST(STRATA_WALK_DONE);
	CONST(STRATA_WALK_CUT);
	CONST(STRATA_WALK_STALE);
	CONST(STRATA_WALK_STATE_MAX);
	CONST(STRATA_WALK_EXTENTS_MAX);
	CONST(STRATA_FREE_REMOVED);
	CONST(STRATA_FREE_EVICTED);
	CONST(STRATA_FREE_PAGE_FREED);
	CONST(STRATA_FREE_TASK_END);
	CONST(STRATA_FREE_CLEARED);
	CONST(STRATA_FREE_COLLECTED);
	CONST(STRATA_FREE_REASON_MAX);
	CONST(STRATA_OFF_JAVA_VERSION);
	CONST(STRATA_OFF_OPTIONS);
	CONST(STRATA_OFF_JAR);
	CONST(STRATA_OFF_JVMTI);
	CONST(STRATA_OFF_JAVA_START);
	CONST(STRATA_OFF_REASON_MAX);
	printf("string STRATA_DEFAULT_SOCKET %s\n", STRATA_DEFAULT_SOCKET);
	printf("string STRATA_SOCKET_ENV %s\n", STRATA_SOCKET_ENV);
}

static const char *outdir;

static void put(const char *name, const unsigned char *buf, int n)
{
	char path[4096];
	FILE *f;

	if (n < 0) {
		fprintf(stderr, "encode %s: %s\n", name, strerror(-n));
		exit(1);
	}
	snprintf(path, sizeof(path), "%s/%s.bin", outdir, name);
	f = fopen(path, "wb");
	if (f == NULL || fwrite(buf, 1, (size_t)n, f) != (size_t)n || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

/* Fixed inputs; golden_test.go holds the same values as expectations. */
#define G_PID 4242u
#define G_TID 4243u
#define G_TIME 1763776800123456789ull

static struct strata_frame_meta meta(uint32_t seq)
{
	struct strata_frame_meta m = { .seq = seq, .tid = G_TID, .time_ns = G_TIME + seq };

	return m;
}

static void frames(void)
{
	unsigned char buf[STRATA_FRAME_MAX];
	char a[STRATA_STR_MAX + 1], b[STRATA_STR_MAX + 1];
	struct strata_frame_meta m;
	struct strata_hello_args h = {
		.pid = G_PID,
		.page_size = 4096,
		.monotonic_ns = 987654321012ull,
		.byte_array_base = 16,
		.long_array_base = 16,
		.ref_size = 4,
		.walk = STRATA_WALK_ON,
		.app_id = "application_1526555215992_0001",
		.executor_id = "7",
	};
	struct strata_block_args r1 = {
		.block_id = 1,
		.vaddr = 0x7f1234560010ull,
		.length = 1048576,
		.pid = G_PID,
		.rdd_id = 7,
		.partition = 3,
		.mode = STRATA_MODE_STORAGE,
		.location = STRATA_LOCATION_ON_HEAP,
		.kind = STRATA_KIND_RDD,
		.flags = 0,
		.chunk = 1,
		.chunks = 2,
		.stage_id = 4,
		.stage_attempt = 1,
		.task_attempt_id = 31,
		.column = -1,
		.spark_bytes = 2097152,
		.name = "rdd_7_3",
	};
	struct strata_block_args r2 = {
		.block_id = 2,
		.vaddr = 0x7f0000200000ull,
		.length = 64ull << 20,
		.pid = G_PID,
		.rdd_id = -1,
		.partition = -1,
		.mode = STRATA_MODE_EXECUTION,
		.location = STRATA_LOCATION_OFF_HEAP,
		.kind = STRATA_KIND_TUNGSTEN_PAGE,
		.chunks = 1,
		.stage_id = 5,
		.stage_attempt = 0,
		.task_attempt_id = 12,
		.column = -1,
		.spark_bytes = 64ull << 20,
		.name = "page_12_0",
	};
	struct strata_block_args r3 = {
		.block_id = 3,
		.vaddr = 0x7f1234800010ull,
		.length = 4000,
		.pid = G_PID,
		.rdd_id = 8,
		.partition = 0,
		.mode = STRATA_MODE_STORAGE,
		.location = STRATA_LOCATION_ON_HEAP,
		.kind = STRATA_KIND_RDD,
		.flags = STRATA_BLOCK_OBJECT_GRAPH,
		.chunks = 1,
		.stage_id = -1,
		.stage_attempt = -1,
		.task_attempt_id = -1,
		.column = -1,
		.spark_bytes = 5242880,
		.name = "rdd_8_0",
	};
	struct strata_block_args r4 = {
		.block_id = 4,
		.vaddr = 0x7f1234900010ull,
		.length = 40964,
		.pid = G_PID,
		.rdd_id = 9,
		.partition = 1,
		.mode = STRATA_MODE_STORAGE,
		.location = STRATA_LOCATION_ON_HEAP,
		.kind = STRATA_KIND_RDD,
		.flags = STRATA_BLOCK_CACHED_BATCH,
		.chunk = 2,
		.chunks = 6,
		.stage_id = 2,
		.stage_attempt = 0,
		.task_attempt_id = 17,
		.column = 2,
		.spark_bytes = 245000,
		.name = "rdd_9_1",
		.label = "name",
	};
	/* Three extents, the last part of a walk of 251 (part 1 of 2). */
	struct strata_extent ext[3] = {
		{ 0x7f1235000000ull, 8192 }, { 0x7f1235004000ull, 4096 }, { 0x7f1236000000ull, 1ull << 20 },
	};
	struct strata_walk_args w1 = {
		.block_id = 3, .gc_epoch = 12, .walk_seq = 2, .part = 1, .parts = 2,
		.state = STRATA_WALK_DONE, .objects = 30000, .bytes = 1234560, .shared_objects = 40,
		.shared_bytes = 960, .opaque_objects = 1, .extents = 251, .ext = ext, .count = 3,
	};
	struct strata_walk_args w2 = {
		.block_id = 3, .gc_epoch = 13, .walk_seq = 3, .part = 0, .parts = 1,
		.state = STRATA_WALK_STALE,
	};
	/* Column 2 of block 4 (r4): its three batches' buffers, byte exact. */
	struct strata_extent bufs[3] = {
		{ 0x7f1234900010ull, 40964 }, { 0x7f1234a00010ull, 40964 }, { 0x7f1234b00018ull, 10240 },
	};
	struct strata_walk_args w3 = {
		.block_id = 4, .gc_epoch = 12, .walk_seq = 1, .part = 0, .parts = 1,
		.state = STRATA_WALK_DONE, .objects = 3, .bytes = 2 * 40964 + 10240, .extents = 3,
		.ext = bufs, .count = 3,
	};

	m = meta(0);
	put("hello", buf, strata_encode_hello(buf, sizeof(buf), &m, &h));
	m = meta(1);
	put("register_heap", buf, strata_encode_register(buf, sizeof(buf), &m, &r1));
	m = meta(2);
	put("register_offheap", buf, strata_encode_register(buf, sizeof(buf), &m, &r2));
	m = meta(3);
	put("move", buf, strata_encode_move(buf, sizeof(buf), &m, 1, 0x7f1234a00010ull, 1048576,
					    G_PID, 3));
	m = meta(4);
	put("access_read", buf, strata_encode_access(buf, sizeof(buf), &m, 1, 0, 0,
						     STRATA_ACCESS_READ));
	m = meta(5);
	put("access_write", buf, strata_encode_access(buf, sizeof(buf), &m, 2, 4096, 8192,
						      STRATA_ACCESS_WRITE));
	m = meta(6);
	put("free", buf, strata_encode_free(buf, sizeof(buf), &m, 1, STRATA_FREE_EVICTED));
	m = meta(7);
	put("dropped", buf, strata_encode_dropped(buf, sizeof(buf), &m, 5, 42));
	memset(a, 'a', STRATA_STR_MAX);
	a[STRATA_STR_MAX] = '\0';
	memset(b, 'b', STRATA_STR_MAX);
	b[STRATA_STR_MAX] = '\0';
	h.app_id = a;
	h.executor_id = b;
	m = meta(8);
	put("hello_max", buf, strata_encode_hello(buf, sizeof(buf), &m, &h));
	h.app_id = NULL;
	h.executor_id = NULL;
	m = meta(9);
	put("hello_empty", buf, strata_encode_hello(buf, sizeof(buf), &m, &h));
	m = meta(10);
	put("register_graph", buf, strata_encode_register(buf, sizeof(buf), &m, &r3));
	m = meta(11);
	put("register_batch", buf, strata_encode_register(buf, sizeof(buf), &m, &r4));
	m = meta(12);
	put("walk", buf, strata_encode_walk(buf, sizeof(buf), &m, &w1));
	m = meta(13);
	put("walk_stale", buf, strata_encode_walk(buf, sizeof(buf), &m, &w2));
	m = meta(14);
	put("gc", buf, strata_encode_epoch(buf, sizeof(buf), &m, STRATA_FRAME_GC, 13));
	m = meta(15);
	put("checked", buf, strata_encode_epoch(buf, sizeof(buf), &m, STRATA_FRAME_CHECKED, 13));
	m = meta(16);
	put("walk_batch", buf, strata_encode_walk(buf, sizeof(buf), &m, &w3));
	m = meta(17);
	put("off", buf, strata_encode_off(buf, sizeof(buf), &m, &(struct strata_off_args){
		.pid = G_PID, .reason = STRATA_OFF_JAVA_VERSION, .java = 8,
		.detail = "Java 8 is not supported (needs 11 or later)" }));
	m = meta(18);
	put("off_empty", buf, strata_encode_off(buf, sizeof(buf), &m, &(struct strata_off_args){
		.pid = G_PID, .reason = STRATA_OFF_JAVA_START }));
}

static void errors(void)
{
	unsigned char buf[STRATA_FRAME_MAX];
	char big[STRATA_STR_MAX + 2];
	struct strata_frame_meta m = meta(0);
	struct strata_hello_args h = { .pid = G_PID, .app_id = "a", .executor_id = "1" };
	struct strata_block_args r = { .block_id = 1, .vaddr = 4096, .length = 1, .name = "x",
				       .kind = STRATA_KIND_RDD, .chunks = 1, .column = -1 };
	struct strata_extent ext[2] = { { 8192, 4096 }, { 4096, 4096 } };
	struct strata_walk_args w = { .block_id = 1, .parts = 1, .state = STRATA_WALK_DONE,
				      .extents = 1, .ext = ext, .count = 1 };

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	printf("hello_small_buffer %d\n", strata_encode_hello(buf, STRATA_HDR_SIZE, &m, &h));
	h.app_id = big;
	printf("hello_long_string %d\n", strata_encode_hello(buf, sizeof(buf), &m, &h));
	r.block_id = 0;
	printf("register_block_zero %d\n", strata_encode_register(buf, sizeof(buf), &m, &r));
	r.block_id = 1;
	r.length = 0;
	printf("register_length_zero %d\n", strata_encode_register(buf, sizeof(buf), &m, &r));
	r.length = 1;
	r.name = "";
	printf("register_empty_name %d\n", strata_encode_register(buf, sizeof(buf), &m, &r));
	r.name = big;
	printf("register_long_name %d\n", strata_encode_register(buf, sizeof(buf), &m, &r));
	r.name = "x";
	r.vaddr = ~0ull;
	printf("register_wraps %d\n", strata_encode_register(buf, sizeof(buf), &m, &r));
	r.vaddr = 4096;
	r.kind = 0;
	printf("register_kind_zero %d\n", strata_encode_register(buf, sizeof(buf), &m, &r));
	r.kind = STRATA_KIND_MAX + 1;
	printf("register_kind_over %d\n", strata_encode_register(buf, sizeof(buf), &m, &r));
	r.kind = STRATA_KIND_RDD;
	r.flags = 0x80;
	printf("register_bad_flags %d\n", strata_encode_register(buf, sizeof(buf), &m, &r));
	r.flags = 0;
	r.chunk = 1;
	printf("register_chunk_out %d\n", strata_encode_register(buf, sizeof(buf), &m, &r));
	r.chunk = 0;
	r.chunks = 0;
	printf("register_no_chunks %d\n", strata_encode_register(buf, sizeof(buf), &m, &r));
	r.chunks = 1;
	r.column = 0;
	printf("register_column_not_batch %d\n", strata_encode_register(buf, sizeof(buf), &m, &r));
	r.column = -1;
	r.label = "c";
	printf("register_label_not_batch %d\n", strata_encode_register(buf, sizeof(buf), &m, &r));
	r.flags = STRATA_BLOCK_CACHED_BATCH;
	r.column = -2;
	printf("register_column_negative %d\n", strata_encode_register(buf, sizeof(buf), &m, &r));
	printf("walk_ok %d\n", strata_encode_walk(buf, sizeof(buf), &m, &w) > 0);
	w.state = 0;
	printf("walk_no_state %d\n", strata_encode_walk(buf, sizeof(buf), &m, &w));
	w.state = STRATA_WALK_STATE_MAX + 1;
	printf("walk_bad_state %d\n", strata_encode_walk(buf, sizeof(buf), &m, &w));
	w.state = STRATA_WALK_STALE;
	printf("walk_stale_extents %d\n", strata_encode_walk(buf, sizeof(buf), &m, &w));
	w.state = STRATA_WALK_DONE;
	w.part = 1;
	printf("walk_part_out %d\n", strata_encode_walk(buf, sizeof(buf), &m, &w));
	w.part = 0;
	w.count = 2;
	w.extents = 2;
	printf("walk_not_ascending %d\n", strata_encode_walk(buf, sizeof(buf), &m, &w));
	ext[1].vaddr = 16384;
	ext[1].length = 0;
	printf("walk_empty_extent %d\n", strata_encode_walk(buf, sizeof(buf), &m, &w));
	ext[1].length = 4096;
	w.count = STRATA_WALK_EXTENTS_MAX + 1;
	w.extents = STRATA_WALK_EXTENTS_MAX + 1;
	printf("walk_too_many %d\n", strata_encode_walk(buf, sizeof(buf), &m, &w));
	w.count = 2;
	printf("walk_small_buffer %d\n", strata_encode_walk(buf, 64, &m, &w));
	printf("epoch_bad_type %d\n", strata_encode_epoch(buf, sizeof(buf), &m, STRATA_FRAME_MOVE, 1));
	printf("free_no_reason %d\n", strata_encode_free(buf, sizeof(buf), &m, 1, 0));
	printf("free_bad_reason %d\n", strata_encode_free(buf, sizeof(buf), &m, 1, STRATA_FREE_REASON_MAX + 1));
	printf("access_bad_kind %d\n", strata_encode_access(buf, sizeof(buf), &m, 1, 0, 0, 1));
	printf("move_small_buffer %d\n", strata_encode_move(buf, 40, &m, 1, 4096, 1, G_PID, 0));
	printf("free_block_zero %d\n", strata_encode_free(buf, sizeof(buf), &m, 0, STRATA_FREE_REMOVED));
	printf("off_no_reason %d\n", strata_encode_off(buf, sizeof(buf), &m, &(struct strata_off_args){ .pid = G_PID }));
	printf("off_bad_reason %d\n", strata_encode_off(buf, sizeof(buf), &m, &(struct strata_off_args){
		.pid = G_PID, .reason = STRATA_OFF_REASON_MAX + 1 }));
	printf("off_long_detail %d\n", strata_encode_off(buf, sizeof(buf), &m, &(struct strata_off_args){
		.pid = G_PID, .reason = STRATA_OFF_JAR, .detail = big }));
	printf("off_small_buffer %d\n", strata_encode_off(buf, STRATA_HDR_SIZE + STRATA_OFF_SIZE, &m,
		&(struct strata_off_args){ .pid = G_PID, .reason = STRATA_OFF_JAR, .detail = "x" }));
	printf("ENOSPC %d\nENAMETOOLONG %d\nEINVAL %d\n", -ENOSPC, -ENAMETOOLONG, -EINVAL);
}

/* Connects c to a fresh listener in dir through strata_conn_open (so with
 * its SO_SNDBUF request) and returns the accepted end. */
static int conn_pair(struct strata_conn *c, const char *dir)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int ln, fd;

	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/flood.sock", dir);
	ln = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	if (ln < 0 || bind(ln, (struct sockaddr *)&addr, sizeof(addr)) != 0 || listen(ln, 1) != 0 ||
	    strata_conn_open(c, addr.sun_path) != 0 || (fd = accept(ln, NULL, NULL)) < 0) {
		perror("conn_pair");
		exit(1);
	}
	close(ln);
	return fd;
}

static void flood(long n, const char *dir)
{
	unsigned char buf[STRATA_FRAME_MAX];
	struct strata_conn c;
	int sv[2], contiguous = 1;
	long received = 0;
	ssize_t len;

	memset(&c, 0, sizeof(c));
	if (dir != NULL) {
		sv[1] = conn_pair(&c, dir);
	} else {
		if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) != 0) {
			perror("socketpair");
			exit(1);
		}
		c.fd = sv[0];
	}
	for (long i = 0; i < n; i++)
		strata_send_access(&c, 1, 0, 0, STRATA_ACCESS_READ);
	while ((len = recv(sv[1], buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
		struct strata_hdr h;

		memcpy(&h, buf, sizeof(h));
		if (h.seq != (uint32_t)received)
			contiguous = 0;
		received++;
	}
	printf("flood %llu %llu %ld %d\n", (unsigned long long)c.sent,
	       (unsigned long long)c.dropped, received, contiguous);
	if (strata_send_dropped(&c) != 0) {
		fprintf(stderr, "send DROPPED after draining failed\n");
		exit(1);
	}
	len = recv(sv[1], buf, sizeof(buf), MSG_DONTWAIT);
	printf("report ");
	for (ssize_t i = 0; i < len; i++)
		printf("%02x", buf[i]);
	printf("\n");
}

struct sender {
	struct strata_conn *c;
	long n;
};

static void *send_loop(void *arg)
{
	struct sender *s = arg;

	for (long i = 0; i < s->n; i++)
		strata_send_access(s->c, 1 + (uint64_t)i, 0, 0, STRATA_ACCESS_WRITE);
	return NULL;
}

struct tally {
	unsigned char *seen; /* by seq */
	uint32_t limit;      /* seqs below this are tracked */
	long received, distinct, whole;
	uint32_t max;        /* highest seq + 1 */
};

/* Reads one packet without blocking and counts it; returns 0 when none. */
static int drain_one(int fd, struct tally *y)
{
	unsigned char buf[STRATA_FRAME_MAX];
	struct strata_hdr h;
	ssize_t len = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

	if (len <= 0)
		return 0;
	memcpy(&h, buf, sizeof(h));
	y->received++;
	if (len == STRATA_HDR_SIZE + STRATA_ACCESS_SIZE && h.length == (uint32_t)len &&
	    h.magic == STRATA_MAGIC)
		y->whole++;
	if (h.seq < y->limit && !y->seen[h.seq]) {
		y->seen[h.seq] = 1;
		y->distinct++;
	}
	if (h.seq + 1 > y->max)
		y->max = h.seq + 1;
	return 1;
}

static void threads(int t, long n)
{
	struct strata_conn c;
	struct sender s;
	struct tally y;
	pthread_t th[64];
	uint64_t total = (uint64_t)t * (uint64_t)n;
	int sv[2];

	if (t < 1 || t > 64 || socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) != 0) {
		fprintf(stderr, "threads: bad arguments or socketpair failed\n");
		exit(1);
	}
	memset(&y, 0, sizeof(y));
	y.limit = (uint32_t)total;
	y.seen = calloc(total, 1);
	memset(&c, 0, sizeof(c));
	c.fd = sv[0];
	s = (struct sender){ .c = &c, .n = n };
	for (int i = 0; i < t; i++)
		pthread_create(&th[i], NULL, send_loop, &s);
	while (__atomic_load_n(&c.sent, __ATOMIC_RELAXED) +
		       __atomic_load_n(&c.dropped, __ATOMIC_RELAXED) < total)
		drain_one(sv[1], &y);
	for (int i = 0; i < t; i++)
		pthread_join(th[i], NULL);
	while (drain_one(sv[1], &y))
		;
	printf("threads %llu %llu %ld %ld %u %ld\n", (unsigned long long)c.sent,
	       (unsigned long long)c.dropped, y.received, y.distinct, y.max, y.whole);
	free(y.seen);
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "layout") == 0) {
		layout();
	} else if (argc == 3 && strcmp(argv[1], "frames") == 0) {
		outdir = argv[2];
		frames();
	} else if (argc == 2 && strcmp(argv[1], "errors") == 0) {
		errors();
	} else if (argc == 4 && strcmp(argv[1], "threads") == 0) {
		threads(atoi(argv[2]), atol(argv[3]));
	} else if ((argc == 3 || argc == 4) && strcmp(argv[1], "flood") == 0) {
		flood(atol(argv[2]), argc == 4 ? argv[3] : NULL);
	} else {
		fprintf(stderr, "usage: %s layout | frames DIR | errors | flood N [DIR] | threads T N\n", argv[0]);
		return 2;
	}
	return 0;
}
