//go:build ignore

// The constraint above keeps the go tool from treating this directory as a
// cgo package; gcc builds this file (see hostile_test.go).

/*
 * peer.c - hook peers that do what no well-behaved JVM hook does, for the
 * hardening tests and benchmark (hostile_test.go): the reproductions of the
 * issue's denial-of-service and oversize-batch defects, against the real
 * agent binary. It speaks the hook's wire format with the hook's own
 * encoder (jvmhook/native/frame.c).
 *
 * Usage: peer SOCKET MODE ARGS...
 *   sessions N           open N connections, each with a HELLO, and hold them
 *                        without another frame (no keepalive). Prints
 *                        {"ready":true,"opened":O} (O: connects that
 *                        succeeded), then {"closed":C} whenever the number of
 *                        connections the agent closed changes.
 *   range BYTES MAPPED   one session: REGISTER block 1 of BYTES, then MOVE it
 *                        over the same range again and again (every MOVE is
 *                        resolved anew) until stdin reaches EOF. MAPPED=1 maps
 *                        the range (never touched, MAP_NORESERVE); MAPPED=0
 *                        claims it from 64 KiB up, mapped or not (BYTES =
 *                        0x7fffffff0000 is the whole user address space).
 *                        Prints {"ready":true} after the REGISTER,
 *                        {"moves":M} at the end.
 *   blocks N STRIDE_KIB SESSIONS
 *                        REGISTER N one-page blocks, STRIDE_KIB apart in an
 *                        untouched mapping, round-robin over SESSIONS
 *                        connections. Prints {"ready":true,"sent":N}.
 *   bigblock APP         an untouched 2 GiB block (RDD 1) between two 4 MiB
 *                        blocks whose every page is touched (RDD 2, partitions
 *                        0 and 1), REGISTERed in that order. Prints
 *                        {"ready":true,"touched_pages":P}.
 *   scatter APP MIB ACCESSES
 *                        one block of MIB MiB whose pages are faulted in a
 *                        random order (so their PFNs scatter and its runs
 *                        carry a PFN step per page), REGISTERed, then read
 *                        whole ACCESSES times. Prints {"ready":true,"pages":P}.
 * Frames the full socket refuses are retried after a short sleep (unlike a
 * hook), so every frame arrives. Except in "sessions", every session sends
 * DROPPED every STRATA_KEEPALIVE_SEC seconds (PEER_KEEPALIVE_MS overrides)
 * while it waits for stdin to reach EOF; then "bigblock" and "scatter" FREE
 * their blocks, and the peer exits 0. A failed connect or map exits 1, a
 * usage error 2.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "frame.h"

#define MiB (1ul << 20)

static size_t page;

static void die(const char *what)
{
	fprintf(stderr, "peer: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void usage(void)
{
	fprintf(stderr, "usage: peer SOCKET sessions N | range BYTES MAPPED | "
			"blocks N STRIDE_KIB SESSIONS | bigblock APP | scatter APP MIB ACCESSES\n");
	exit(2);
}

/* Any send failure but a full socket (retried by SEND) is fatal. */
static void must(int rc, const char *what)
{
	if (rc == 0)
		return;
	errno = -rc;
	die(what);
}

#define SEND(call, what)                                                                 \
	do {                                                                             \
		int rc_;                                                                 \
		struct timespec p_ = {0, 50000};                                         \
		while ((rc_ = (call)) == -EAGAIN)                                        \
			nanosleep(&p_, NULL);                                            \
		must(rc_, what);                                                         \
	} while (0)

static void open_session(struct strata_conn *c, const char *sock, const char *app)
{
	int rc = strata_conn_open(c, sock);

	if (rc < 0) {
		errno = -rc;
		die("connect");
	}
	SEND(strata_send_hello(c, &(struct strata_hello_args){.pid = (uint32_t)getpid(),
							       .page_size = (uint32_t)page,
							       .app_id = app,
							       .executor_id = "1"}),
	     "HELLO");
}

static void reg(struct strata_conn *c, uint64_t id, void *p, size_t len, int32_t rdd,
		int32_t part)
{
	char name[64];

	snprintf(name, sizeof(name), "rdd_%d_%d", rdd, part);
	SEND(strata_send_register(c, &(struct strata_block_args){
					     .block_id = id,
					     .vaddr = (uintptr_t)p,
					     .length = len,
					     .pid = (uint32_t)getpid(),
					     .rdd_id = rdd,
					     .partition = part,
					     .mode = STRATA_MODE_STORAGE,
					     .location = STRATA_LOCATION_OFF_HEAP,
					     .kind = STRATA_KIND_RDD,
					     .chunks = 1,
					     .stage_id = -1,
					     .stage_attempt = -1,
					     .task_attempt_id = -1, .column = -1,
					     .name = name,
				     }),
	     "REGISTER");
}

static void *map(size_t len, int flags)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);

	if (p == MAP_FAILED)
		die("mmap");
	return p;
}

static int keepalive_ms(void)
{
	const char *v = getenv("PEER_KEEPALIVE_MS");

	return v != NULL ? atoi(v) : STRATA_KEEPALIVE_SEC * 1000;
}

/* Waits for stdin to reach EOF, keeping the n sessions alive. */
static void hold(struct strata_conn *cs, int n)
{
	char buf[256];

	for (;;) {
		struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
		int rc = poll(&p, 1, keepalive_ms());

		if (rc < 0 && errno != EINTR)
			die("poll stdin");
		if (rc == 0) {
			for (int i = 0; i < n; i++)
				strata_send_dropped(&cs[i]);
			continue;
		}
		if (rc > 0 && read(STDIN_FILENO, buf, sizeof(buf)) <= 0)
			return;
	}
}

static int stdin_open(void)
{
	struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
	char buf[256];

	if (poll(&p, 1, 0) <= 0)
		return 1;
	return read(STDIN_FILENO, buf, sizeof(buf)) > 0;
}

static int sessions(const char *sock, int n)
{
	struct strata_conn *cs = calloc((size_t)n, sizeof(*cs));
	struct pollfd *ps = calloc((size_t)n + 1, sizeof(*ps));
	int opened = 0, closed = -1;

	if (cs == NULL || ps == NULL)
		die("calloc");
	for (int i = 0; i < n; i++) {
		if (strata_conn_open(&cs[i], sock) < 0)
			continue; /* refused at connect: the backlog is full */
		strata_send_hello(&cs[i], &(struct strata_hello_args){.pid = (uint32_t)getpid(),
									 .page_size = (uint32_t)page,
									 .app_id = "hostile-sessions",
									 .executor_id = "1"});
		ps[opened].fd = cs[i].fd;
		ps[opened].events = POLLIN;
		opened++;
	}
	printf("{\"ready\":true,\"opened\":%d}\n", opened);
	fflush(stdout);
	ps[opened].fd = STDIN_FILENO;
	ps[opened].events = POLLIN;
	for (;;) {
		int now = 0;

		if (poll(ps, (nfds_t)opened + 1, 200) < 0 && errno != EINTR)
			die("poll");
		for (int i = 0; i < opened; i++)
			if (ps[i].fd < 0 || (ps[i].revents & (POLLIN | POLLHUP | POLLERR))) {
				if (ps[i].fd >= 0)
					close(ps[i].fd);
				ps[i].fd = -1; /* poll ignores it from now on */
				now++;
			}
		if (now != closed) {
			closed = now;
			printf("{\"closed\":%d}\n", closed);
			fflush(stdout);
		}
		if (ps[opened].revents & (POLLIN | POLLHUP)) {
			char buf[256];

			if (read(STDIN_FILENO, buf, sizeof(buf)) <= 0)
				return 0;
		}
	}
}

static int range(const char *sock, unsigned long long bytes, int mapped)
{
	struct strata_conn c;
	void *p = (void *)(uintptr_t)(64 << 10);
	unsigned long moves = 0;

	if (mapped)
		p = map(bytes, MAP_NORESERVE);
	open_session(&c, sock, "hostile-range");
	reg(&c, 1, p, bytes, 1, 0);
	printf("{\"ready\":true}\n");
	fflush(stdout);
	while (stdin_open()) {
		struct timespec pause = {0, 1000000};

		/* At most one MOVE per ms: enough to keep the agent's
		 * resolvers busy, without flooding the socket. */
		if (strata_send_move(&c, 1, (uintptr_t)p, bytes, (uint32_t)getpid(),
				     (uint32_t)moves + 1) == 0)
			moves++;
		nanosleep(&pause, NULL);
	}
	printf("{\"moves\":%lu}\n", moves);
	return 0;
}

static int blocks(const char *sock, unsigned long n, unsigned long stride_kib, int nsess)
{
	struct strata_conn *cs = calloc((size_t)nsess, sizeof(*cs));
	size_t stride = stride_kib << 10;
	unsigned char *base;

	if (cs == NULL || stride < page || nsess < 1)
		usage();
	base = map(n * stride, MAP_NORESERVE);
	for (int i = 0; i < nsess; i++)
		open_session(&cs[i], sock, "hostile-blocks");
	for (unsigned long i = 0; i < n; i++)
		reg(&cs[i % (unsigned long)nsess], i + 1, base + i * stride, page, 9, (int32_t)i);
	printf("{\"ready\":true,\"sent\":%lu}\n", n);
	fflush(stdout);
	hold(cs, nsess);
	return 0;
}

static int bigblock(const char *sock, const char *app)
{
	struct strata_conn c;
	size_t big = 2048 * MiB, small = 4 * MiB;
	unsigned char *a = map(small, 0), *b = map(big, MAP_NORESERVE), *d = map(small, 0);

	if (madvise(a, small, MADV_NOHUGEPAGE) != 0 || madvise(d, small, MADV_NOHUGEPAGE) != 0)
		die("madvise");
	for (size_t off = 0; off < small; off += page)
		a[off] = d[off] = 1;
	open_session(&c, sock, app);
	reg(&c, 1, a, small, 2, 0);
	reg(&c, 2, b, big, 1, 0);
	reg(&c, 3, d, small, 2, 1);
	printf("{\"ready\":true,\"touched_pages\":%zu,\"big_pages\":%zu}\n", 2 * small / page,
	       big / page);
	fflush(stdout);
	hold(&c, 1);
	for (uint64_t id = 1; id <= 3; id++)
		SEND(strata_send_free(&c, id, STRATA_FREE_REMOVED), "FREE");
	return 0;
}

static int scatter(const char *sock, const char *app, size_t mib, int accesses)
{
	struct strata_conn c;
	size_t len = mib * MiB, n = len / page;
	unsigned char *p = map(len, 0);
	size_t *order = malloc(n * sizeof(*order));

	if (order == NULL)
		die("malloc");
	if (madvise(p, len, MADV_NOHUGEPAGE) != 0)
		die("madvise");
	for (size_t i = 0; i < n; i++)
		order[i] = i;
	srand(42);
	for (size_t i = n - 1; i > 0; i--) {
		size_t j = (size_t)rand() % (i + 1), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	for (size_t i = 0; i < n; i++)
		p[order[i] * page] = 1;
	open_session(&c, sock, app);
	reg(&c, 1, p, len, 4, 0);
	for (int i = 0; i < accesses; i++)
		SEND(strata_send_access(&c, 1, 0, 0, STRATA_ACCESS_READ), "ACCESS");
	printf("{\"ready\":true,\"pages\":%zu}\n", n);
	fflush(stdout);
	hold(&c, 1);
	SEND(strata_send_free(&c, 1, STRATA_FREE_REMOVED), "FREE");
	return 0;
}

int main(int argc, char **argv)
{
	page = (size_t)sysconf(_SC_PAGESIZE);
	if (argc < 3)
		usage();
	const char *sock = argv[1], *mode = argv[2];

	if (strcmp(mode, "sessions") == 0 && argc == 4)
		return sessions(sock, atoi(argv[3]));
	if (strcmp(mode, "range") == 0 && argc == 5)
		return range(sock, strtoull(argv[3], NULL, 0), atoi(argv[4]));
	if (strcmp(mode, "blocks") == 0 && argc == 6)
		return blocks(sock, strtoul(argv[3], NULL, 10), strtoul(argv[4], NULL, 10),
			      atoi(argv[5]));
	if (strcmp(mode, "bigblock") == 0 && argc == 4)
		return bigblock(sock, argv[3]);
	if (strcmp(mode, "scatter") == 0 && argc == 6)
		return scatter(sock, argv[3], strtoul(argv[4], NULL, 10), atoi(argv[5]));
	usage();
}
