//go:build ignore

// The constraint above keeps the go tool from treating this directory as a
// cgo package; gcc builds this file (see bench_test.go).

/*
 * blocks.c - the throughput workload of the end-to-end benchmark. It maps
 * one region, faults every page in, then waits for a line on stdin and
 * reports the region as blocks: a REGISTER per block, then ROUNDS rounds of
 * an ACCESS read per block. Unlike a JVM hook it retries a frame the full
 * socket refused (after a short sleep), because the benchmark needs every
 * frame to arrive; the retries are counted.
 *
 * With FAULT_ROUNDS > 0 it then waits for another line on stdin, drops the
 * region's pages (MADV_DONTNEED) and writes one byte per page, FAULT_ROUNDS
 * times: exactly FAULT_ROUNDS x pages write faults inside the registered
 * blocks, then prints {"faulted":true}. With $BLOCKS_HOLD_MS set, it then
 * forks a child that keeps the inherited hook socket open for that many
 * milliseconds: the hook session outlives this process.
 *
 * Usage: blocks SOCKET APP MIB BLOCK_MIB THP(0|1) ROUNDS [FAULT_ROUNDS]
 * Output: {"touched":true,"pid":P,"pages":N,"base":ADDR} after faulting in,
 *         {"sent":true,"frames":F,"retries":R} after the last frame.
 * It frees every block and exits when stdin reaches EOF. While it waits for
 * stdin with a session open it sends DROPPED every STRATA_KEEPALIVE_SEC
 * seconds, as a hook keeps an idle session alive.
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

static unsigned long retries;

/* next_line waits for a line on stdin (read(2), no stdio buffering) and
 * returns 1, or 0 at EOF. With c set it keeps that session alive while
 * it waits. */
static int next_line(struct strata_conn *c)
{
	static int pending; /* lines read but not yet returned */
	char buf[256];

	while (pending == 0) {
		struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
		int rc = poll(&p, 1, c != NULL ? STRATA_KEEPALIVE_SEC * 1000 : -1);
		ssize_t n;

		if (rc < 0 && errno == EINTR)
			continue;
		if (rc < 0)
			return 0;
		if (rc == 0) {
			strata_send_dropped(c);
			continue;
		}
		n = read(STDIN_FILENO, buf, sizeof(buf));
		if (n <= 0)
			return 0;
		for (ssize_t i = 0; i < n; i++)
			pending += buf[i] == '\n';
	}
	pending--;
	return 1;
}

static void send_retry(int (*send)(void *), void *arg)
{
	struct timespec pause = {0, 50000};

	while (send(arg) == -EAGAIN) {
		retries++;
		nanosleep(&pause, NULL);
	}
}

struct reg_arg {
	struct strata_conn *c;
	struct strata_block_args b;
};
static int do_register(void *p)
{
	struct reg_arg *a = p;
	return strata_send_register(a->c, &a->b);
}

struct acc_arg {
	struct strata_conn *c;
	uint64_t id;
	int free;
};
static int do_access(void *p)
{
	struct acc_arg *a = p;
	if (a->free)
		return strata_send_free(a->c, a->id, STRATA_FREE_REMOVED);
	return strata_send_access(a->c, a->id, 0, 0, STRATA_ACCESS_READ);
}

int main(int argc, char **argv)
{
	if (argc != 7 && argc != 8) {
		fprintf(stderr, "usage: blocks SOCKET APP MIB BLOCK_MIB THP ROUNDS [FAULT_ROUNDS]\n");
		return 2;
	}
	const char *sock = argv[1], *app = argv[2];
	size_t mib = strtoul(argv[3], NULL, 10), block_mib = strtoul(argv[4], NULL, 10);
	int thp = atoi(argv[5]), rounds = atoi(argv[6]), fault_rounds = argc == 8 ? atoi(argv[7]) : 0;
	size_t len = mib * MiB, blen = block_mib * MiB, page = (size_t)sysconf(_SC_PAGESIZE);
	size_t nblocks = len / blen;
	unsigned char *raw, *base;
	struct strata_conn c;

	if (nblocks == 0 || len % blen != 0) {
		fprintf(stderr, "blocks: MIB must be a multiple of BLOCK_MIB\n");
		return 2;
	}
	raw = mmap(NULL, len + 2 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	base = (unsigned char *)(((uintptr_t)raw + 2 * MiB - 1) & ~(uintptr_t)(2 * MiB - 1));
	if (madvise(base, len, thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) != 0) {
		perror("madvise");
		return 1;
	}
	for (size_t off = 0; off < len; off += page)
		base[off] = 1;
	printf("{\"touched\":true,\"pid\":%d,\"pages\":%zu,\"base\":%lu}\n", (int)getpid(),
	       len / page, (unsigned long)(uintptr_t)base);
	fflush(stdout);
	if (!next_line(NULL))
		return 0;

	if (strata_conn_open(&c, sock) != 0) {
		perror("connect");
		return 1;
	}
	struct strata_hello_args h = {.pid = (uint32_t)getpid(), .page_size = (uint32_t)page,
				      .app_id = app, .executor_id = "1"};
	if (strata_send_hello(&c, &h) != 0) {
		fprintf(stderr, "blocks: HELLO not sent\n");
		return 1;
	}
	for (size_t i = 0; i < nblocks; i++) {
		struct reg_arg a = {.c = &c};
		char name[64];

		snprintf(name, sizeof(name), "rdd_3_%zu", i);
		a.b = (struct strata_block_args){.block_id = i + 1, .vaddr = (uintptr_t)(base + i * blen),
						 .length = blen, .pid = (uint32_t)getpid(), .rdd_id = 3,
						 .partition = (int32_t)i, .mode = STRATA_MODE_STORAGE,
						 .location = STRATA_LOCATION_OFF_HEAP, .kind = STRATA_KIND_RDD,
						 .chunks = 1, .stage_id = -1, .stage_attempt = -1,
						 .task_attempt_id = -1, .column = -1, .name = name};
		send_retry(do_register, &a);
	}
	for (int r = 0; r < rounds; r++)
		for (size_t i = 0; i < nblocks; i++) {
			struct acc_arg a = {.c = &c, .id = i + 1};
			send_retry(do_access, &a);
		}
	printf("{\"sent\":true,\"frames\":%zu,\"retries\":%lu}\n", nblocks * (1 + (size_t)rounds),
	       retries);
	fflush(stdout);
	if (fault_rounds > 0) {
		/* The agent registers blocks in the kernel asynchronously: wait
		 * for the go-ahead of whoever watches it. */
		if (!next_line(&c))
			return 0;
		for (int r = 0; r < fault_rounds; r++) {
			if (madvise(base, len, MADV_DONTNEED) != 0) {
				perror("madvise(MADV_DONTNEED)");
				return 1;
			}
			for (size_t off = 0; off < len; off += page)
				base[off] = 2;
		}
		/* Fork before saying so, so the child exists when the caller acts. */
		const char *hold = getenv("BLOCKS_HOLD_MS");
		if (hold != NULL && fork() == 0) {
			usleep((useconds_t)strtoul(hold, NULL, 10) * 1000);
			_exit(0);
		}
		printf("{\"faulted\":true}\n");
		fflush(stdout);
	}
	while (next_line(&c))
		;
	for (size_t i = 0; i < nblocks; i++) {
		struct acc_arg a = {.c = &c, .id = i + 1, .free = 1};
		send_retry(do_access, &a);
	}
	strata_conn_close(&c);
	return 0;
}
