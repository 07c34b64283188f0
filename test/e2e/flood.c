//go:build ignore

// The constraint above keeps the go tool from treating this directory as a
// cgo package; gcc builds this file (see flood_bench_test.go).

/*
 * flood.c - the fault-flood workload of BenchmarkFaultFlood. It maps
 * BLOCKS x BLOCK_KIB of anonymous memory in base pages, faults it in, and
 * (unless SOCKET is "-") reports it over the hook socket as BLOCKS blocks
 * of one RDD, retrying a frame the full socket refused. Then, on a line on
 * stdin, THREADS threads each take an equal share of the region and, for
 * SECONDS, drop a slice of SLICE_KIB (MADV_DONTNEED) and write one byte per
 * page of it: one write fault per page, as fast as the machine allows.
 * Each slice is timed; a slow slice is the process stalling.
 *
 * Usage: flood SOCKET APP BLOCKS BLOCK_KIB THREADS SECONDS SLICE_KIB
 * Output: {"ready":true,"pid":P,"frames":F,"retries":R} once reported,
 *         then one line when the flood ends:
 *         {"faults":N,"ns":T,"slices":S,"max_slice_ns":M,"p999_slice_ns":Q,
 *          "over_10ms":A,"over_100ms":B,"over_1s":C}
 * It frees every block and exits when stdin reaches EOF.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "frame.h"

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Slice times in a log2 histogram of nanoseconds. */
#define BUCKETS 48

struct worker {
	pthread_t th;
	unsigned char *base;
	size_t len, slice, page;
	uint64_t deadline;
	uint64_t faults, slices, max_ns;
	uint64_t hist[BUCKETS];
};

static void *flood(void *p)
{
	struct worker *w = p;
	size_t off = 0;

	while (now_ns() < w->deadline) {
		uint64_t t0 = now_ns();
		if (madvise(w->base + off, w->slice, MADV_DONTNEED) != 0) {
			perror("madvise");
			exit(1);
		}
		for (size_t o = 0; o < w->slice; o += w->page)
			w->base[off + o] = 2;
		uint64_t d = now_ns() - t0;
		w->faults += w->slice / w->page;
		w->slices++;
		if (d > w->max_ns)
			w->max_ns = d;
		w->hist[63 - __builtin_clzll(d | 1) < BUCKETS ? 63 - __builtin_clzll(d | 1) : BUCKETS - 1]++;
		off += w->slice;
		if (off + w->slice > w->len)
			off = 0;
	}
	return NULL;
}

static unsigned long retries;

static void send_retry(struct strata_conn *c, const struct strata_block_args *b)
{
	struct timespec pause = {0, 20000};

	while (strata_send_register(c, b) == -EAGAIN) {
		retries++;
		nanosleep(&pause, NULL);
	}
}

static int read_line(void)
{
	char ch;
	ssize_t n;

	while ((n = read(STDIN_FILENO, &ch, 1)) == 1)
		if (ch == '\n')
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 8) {
		fprintf(stderr, "usage: flood SOCKET APP BLOCKS BLOCK_KIB THREADS SECONDS SLICE_KIB\n");
		return 2;
	}
	const char *sock = argv[1], *app = argv[2];
	size_t nblocks = strtoul(argv[3], NULL, 10), bkib = strtoul(argv[4], NULL, 10);
	int threads = atoi(argv[5]), seconds = atoi(argv[6]);
	size_t slice = strtoul(argv[7], NULL, 10) * 1024, page = (size_t)sysconf(_SC_PAGESIZE);
	size_t blen = bkib * 1024, len = nblocks * blen;
	struct strata_conn c;
	int hooked = strcmp(sock, "-") != 0;

	if (nblocks == 0 || blen % page != 0 || threads < 1 || slice == 0 || slice % page != 0 ||
	    len / (size_t)threads < slice) {
		fprintf(stderr, "flood: bad sizes\n");
		return 2;
	}
	unsigned char *base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED || madvise(base, len, MADV_NOHUGEPAGE) != 0) {
		perror("mmap");
		return 1;
	}
	for (size_t off = 0; off < len; off += page)
		base[off] = 1;
	if (hooked) {
		if (strata_conn_open(&c, sock) != 0) {
			perror("connect");
			return 1;
		}
		struct strata_hello_args h = {.pid = (uint32_t)getpid(), .page_size = (uint32_t)page,
					      .app_id = app, .executor_id = "1"};
		if (strata_send_hello(&c, &h) != 0) {
			fprintf(stderr, "flood: HELLO not sent\n");
			return 1;
		}
		for (size_t i = 0; i < nblocks; i++) {
			char name[64];
			snprintf(name, sizeof(name), "rdd_9_%zu", i);
			struct strata_block_args b = {.block_id = i + 1, .vaddr = (uintptr_t)(base + i * blen),
						      .length = blen, .pid = (uint32_t)getpid(), .rdd_id = 9,
						      .partition = (int32_t)i, .mode = STRATA_MODE_STORAGE,
						      .location = STRATA_LOCATION_OFF_HEAP, .kind = STRATA_KIND_RDD,
						      .chunks = 1, .stage_id = -1, .stage_attempt = -1,
						      .task_attempt_id = -1, .column = -1, .name = name};
			send_retry(&c, &b);
		}
	}
	printf("{\"ready\":true,\"pid\":%d,\"frames\":%zu,\"retries\":%lu}\n", (int)getpid(),
	       hooked ? nblocks + 1 : 0, retries);
	fflush(stdout);
	if (!read_line())
		return 0;

	struct worker *w = calloc((size_t)threads, sizeof(*w));
	size_t share = len / (size_t)threads / page * page;
	uint64_t start = now_ns(), deadline = start + (uint64_t)seconds * 1000000000ull;
	for (int i = 0; i < threads; i++) {
		w[i] = (struct worker){.base = base + (size_t)i * share, .len = share, .slice = slice,
				       .page = page, .deadline = deadline};
		if (pthread_create(&w[i].th, NULL, flood, &w[i]) != 0) {
			fprintf(stderr, "flood: pthread_create failed\n");
			return 1;
		}
	}
	uint64_t faults = 0, slices = 0, max_ns = 0, hist[BUCKETS] = {0};
	for (int i = 0; i < threads; i++) {
		pthread_join(w[i].th, NULL);
		faults += w[i].faults;
		slices += w[i].slices;
		if (w[i].max_ns > max_ns)
			max_ns = w[i].max_ns;
		for (int b = 0; b < BUCKETS; b++)
			hist[b] += w[i].hist[b];
	}
	uint64_t took = now_ns() - start, seen = 0, p999 = 0, over10 = 0, over100 = 0, over1s = 0;
	for (int b = 0; b < BUCKETS; b++) {
		uint64_t upper = 2ull << b; /* slices in bucket b took less than 2^(b+1) ns */
		seen += hist[b];
		if (p999 == 0 && seen * 1000 >= slices * 999)
			p999 = upper;
		if ((1ull << b) >= 10000000ull)
			over10 += hist[b];
		if ((1ull << b) >= 100000000ull)
			over100 += hist[b];
		if ((1ull << b) >= 1000000000ull)
			over1s += hist[b];
	}
	printf("{\"faults\":%lu,\"ns\":%lu,\"slices\":%lu,\"max_slice_ns\":%lu,\"p999_slice_ns\":%lu,"
	       "\"over_10ms\":%lu,\"over_100ms\":%lu,\"over_1s\":%lu}\n",
	       (unsigned long)faults, (unsigned long)took, (unsigned long)slices, (unsigned long)max_ns,
	       (unsigned long)p999, (unsigned long)over10, (unsigned long)over100, (unsigned long)over1s);
	fflush(stdout);
	while (read_line())
		;
	if (hooked) {
		for (size_t i = 0; i < nblocks; i++) {
			struct timespec pause = {0, 20000};
			while (strata_send_free(&c, i + 1, STRATA_FREE_REMOVED) == -EAGAIN)
				nanosleep(&pause, NULL);
		}
		strata_conn_close(&c);
	}
	return 0;
}
