//go:build ignore

// The constraint above keeps the go tool from treating this directory as a
// cgo package; gcc builds this file (see workload.go).

/*
 * regions.c - the end-to-end workload: a process that owns three anonymous
 * regions with known contents and reports them over the hook socket exactly
 * as the JVM hook reports Spark blocks (same header, same encoder).
 *
 * Regions (blocks of one RDD, storage memory, off-heap; hook ids 1, 2, 3):
 *   partition 0  8 MiB, every page touched                  "touch":"all"
 *   partition 1  8 MiB, even-numbered pages touched only    "touch":"even"
 *                (pages 0, 2, 4, ...; odd pages are never faulted in)
 *   partition 2  4 MiB, 2 MiB aligned, MADV_HUGEPAGE, every page touched
 *                                                           "thp":true
 * Partitions 0 and 1 are MADV_NOHUGEPAGE so they stay base pages even when
 * THP is "always". Every touched base page holds its own virtual address in
 * its first 8 bytes (little-endian), so a test can check through
 * /proc/PID/mem that the reported range is really these pages.
 *
 * Usage:
 *   regions --app ID --executor ID [--socket PATH] [--rdd N]
 *           [--foreign-pid N] [--duration SECONDS] [--keepalive-ms MS]
 * The socket defaults to $STRATA_HOOK_SOCKET, then /run/strata/hook.sock.
 *
 * Sequence: map and touch; connect; HELLO; REGISTER x3; ACCESS write and
 * read per block; with --foreign-pid N also a REGISTER (hook id 100, range
 * of partition 0) and a MOVE of block 1, both claiming pid N - the agent must
 * reject both. Then stdout gets one JSON line per region, plus one for the
 * foreign claim, then {"ready":true,...}. Then it waits:
 *   default            until stdin reaches EOF or SIGINT/SIGTERM arrives,
 *                      sending DROPPED every --keepalive-ms (default
 *                      STRATA_KEEPALIVE_SEC seconds) as a hook keeps its
 *                      idle session alive;
 *   --duration S       for S seconds (or until SIGINT/SIGTERM), reading and
 *                      rewriting the touched pages and sending ACCESS frames
 *                      every 100 ms; stdin is not watched.
 * Then FREE x3, a DROPPED report, {"done":true,...} and exit 0. A page whose
 * pattern is wrong when read back exits 3; a failed connect exits 1; a usage
 * error exits 2.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "frame.h"

#define MiB (1ul << 20)
#define HUGE_SZ (2 * MiB)

struct region {
	uint64_t hook_id;
	int32_t partition;
	unsigned char *base;
	size_t length;
	int stride; /* touch every stride-th page */
	int thp;
	const char *touch;
	char name[64];
};

static volatile sig_atomic_t stop;
static size_t page;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void die(const char *what)
{
	fprintf(stderr, "regions: %s: %s\n", what, strerror(errno));
	exit(1);
}

static unsigned char *map_region(size_t length, int huge)
{
	size_t span = huge ? length + HUGE_SZ : length;
	unsigned char *p = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				-1, 0);
	uintptr_t start, end;

	if (p == MAP_FAILED)
		die("mmap");
	if (!huge) {
		if (madvise(p, length, MADV_NOHUGEPAGE) != 0)
			die("madvise(MADV_NOHUGEPAGE)");
		return p;
	}
	/* Trim the over-allocation so the region starts on a 2 MiB boundary. */
	start = ((uintptr_t)p + HUGE_SZ - 1) & ~(uintptr_t)(HUGE_SZ - 1);
	end = start + length;
	if (start > (uintptr_t)p && munmap(p, start - (uintptr_t)p) != 0)
		die("munmap head");
	if ((uintptr_t)p + span > end && munmap((void *)end, (uintptr_t)p + span - end) != 0)
		die("munmap tail");
	if (madvise((void *)start, length, MADV_HUGEPAGE) != 0)
		die("madvise(MADV_HUGEPAGE)");
	return (unsigned char *)start;
}

static size_t touched_pages(const struct region *r)
{
	size_t pages = r->length / page;

	return (pages + (size_t)r->stride - 1) / (size_t)r->stride;
}

/* Writes each touched page's own address into its first 8 bytes. */
static void write_pattern(const struct region *r)
{
	for (size_t off = 0; off < r->length; off += page * (size_t)r->stride) {
		uint64_t addr = (uint64_t)(uintptr_t)(r->base + off);

		memcpy(r->base + off, &addr, sizeof(addr));
	}
}

/* Reads every touched page back; exits 3 on a wrong pattern. */
static void check_pattern(const struct region *r)
{
	for (size_t off = 0; off < r->length; off += page * (size_t)r->stride) {
		uint64_t got;

		memcpy(&got, r->base + off, sizeof(got));
		if (got != (uint64_t)(uintptr_t)(r->base + off)) {
			fprintf(stderr, "regions: %s page at %p holds %#" PRIx64 "\n", r->name,
				(void *)(r->base + off), got);
			exit(3);
		}
	}
}

static void print_region(const struct region *r, int32_t rdd, pid_t pid)
{
	printf("{\"block\":\"%s\",\"hook_block_id\":%" PRIu64 ",\"rdd\":%d,\"partition\":%d,"
	       "\"pid\":%d,\"vaddr\":%" PRIu64 ",\"length\":%zu,\"page_size\":%zu,"
	       "\"pages\":%zu,\"touched_pages\":%zu,\"touch\":\"%s\",\"thp\":%s}\n",
	       r->name, r->hook_id, rdd, r->partition, (int)pid, (uint64_t)(uintptr_t)r->base,
	       r->length, page, r->length / page, touched_pages(r), r->touch,
	       r->thp ? "true" : "false");
}

static void send_or_warn(int rc, const char *what)
{
	if (rc < 0)
		fprintf(stderr, "regions: send %s: %s (dropped)\n", what, strerror(-rc));
}

static void access_all(struct strata_conn *c, struct region *rs, int n)
{
	for (int i = 0; i < n; i++) {
		write_pattern(&rs[i]);
		send_or_warn(strata_send_access(c, rs[i].hook_id, 0, 0, STRATA_ACCESS_WRITE),
			     "ACCESS write");
		check_pattern(&rs[i]);
		send_or_warn(strata_send_access(c, rs[i].hook_id, 0, 0, STRATA_ACCESS_READ),
			     "ACCESS read");
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: regions --app ID --executor ID [--socket PATH] [--rdd N] "
			"[--foreign-pid N] [--duration SECONDS] [--keepalive-ms MS]\n");
	exit(2);
}

static long num_arg(const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0' || end == s)
		usage();
	return v;
}

int main(int argc, char **argv)
{
	const char *socket_path = NULL, *app = NULL, *executor = NULL;
	long rdd = 7, foreign = 0, duration = 0, keepalive = STRATA_KEEPALIVE_SEC * 1000;
	struct region rs[3];
	struct strata_conn conn;
	struct sigaction sa;
	pid_t pid = getpid();
	int rc;

	for (int i = 1; i < argc; i++) {
		if (i + 1 >= argc)
			usage();
		if (strcmp(argv[i], "--socket") == 0)
			socket_path = argv[++i];
		else if (strcmp(argv[i], "--app") == 0)
			app = argv[++i];
		else if (strcmp(argv[i], "--executor") == 0)
			executor = argv[++i];
		else if (strcmp(argv[i], "--rdd") == 0)
			rdd = num_arg(argv[++i]);
		else if (strcmp(argv[i], "--foreign-pid") == 0)
			foreign = num_arg(argv[++i]);
		else if (strcmp(argv[i], "--duration") == 0)
			duration = num_arg(argv[++i]);
		else if (strcmp(argv[i], "--keepalive-ms") == 0)
			keepalive = num_arg(argv[++i]);
		else
			usage();
	}
	if (app == NULL || executor == NULL || rdd < 0 || rdd > INT32_MAX || foreign < 0 ||
	    duration < 0 || keepalive <= 0 || keepalive > INT32_MAX)
		usage();

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal; /* no SA_RESTART: poll and nanosleep return EINTR */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	page = (size_t)sysconf(_SC_PAGESIZE);
	rs[0] = (struct region){ .hook_id = 1, .partition = 0, .length = 8 * MiB, .stride = 1,
				 .touch = "all" };
	rs[1] = (struct region){ .hook_id = 2, .partition = 1, .length = 8 * MiB, .stride = 2,
				 .touch = "even" };
	rs[2] = (struct region){ .hook_id = 3, .partition = 2, .length = 4 * MiB, .stride = 1,
				 .thp = 1, .touch = "all" };
	for (int i = 0; i < 3; i++) {
		rs[i].base = map_region(rs[i].length, rs[i].thp);
		snprintf(rs[i].name, sizeof(rs[i].name), "rdd_%ld_%d", rdd, rs[i].partition);
		write_pattern(&rs[i]);
	}

	rc = strata_conn_open(&conn, socket_path);
	if (rc < 0) {
		errno = -rc;
		die("connect hook socket");
	}
	send_or_warn(strata_send_hello(&conn, &(struct strata_hello_args){
						      .pid = (uint32_t)pid,
						      .page_size = (uint32_t)page,
						      .app_id = app,
						      .executor_id = executor,
					      }),
		     "HELLO");
	for (int i = 0; i < 3; i++)
		send_or_warn(strata_send_register(&conn, &(struct strata_block_args){
								 .block_id = rs[i].hook_id,
								 .vaddr = (uintptr_t)rs[i].base,
								 .length = rs[i].length,
								 .pid = (uint32_t)pid,
								 .rdd_id = (int32_t)rdd,
								 .partition = rs[i].partition,
								 .mode = STRATA_MODE_STORAGE,
								 .location = STRATA_LOCATION_OFF_HEAP,
								 .kind = STRATA_KIND_RDD,
								 .chunks = 1,
								 .stage_id = -1,
								 .stage_attempt = -1,
								 .task_attempt_id = -1,
								 .column = -1,
								 .spark_bytes = rs[i].length,
								 .name = rs[i].name,
							 }),
			     "REGISTER");
	access_all(&conn, rs, 3);
	if (foreign > 0) {
		char name[64];

		snprintf(name, sizeof(name), "rdd_%ld_99", rdd);
		send_or_warn(strata_send_register(&conn, &(struct strata_block_args){
								 .block_id = 100,
								 .vaddr = (uintptr_t)rs[0].base,
								 .length = rs[0].length,
								 .pid = (uint32_t)foreign,
								 .rdd_id = (int32_t)rdd,
								 .partition = 99,
								 .mode = STRATA_MODE_STORAGE,
								 .location = STRATA_LOCATION_OFF_HEAP,
								 .kind = STRATA_KIND_RDD,
								 .chunks = 1,
								 .stage_id = -1,
								 .stage_attempt = -1,
								 .task_attempt_id = -1,
								 .column = -1,
								 .name = name,
							 }),
			     "foreign REGISTER");
		send_or_warn(strata_send_move(&conn, rs[0].hook_id, (uintptr_t)rs[0].base,
					      rs[0].length, (uint32_t)foreign, 1),
			     "foreign MOVE");
	}
	for (int i = 0; i < 3; i++)
		print_region(&rs[i], (int32_t)rdd, pid);
	if (foreign > 0)
		printf("{\"foreign\":true,\"claimed_pid\":%ld,\"hook_block_id\":100,"
		       "\"moved_hook_block_id\":1}\n",
		       foreign);
	printf("{\"ready\":true,\"pid\":%d}\n", (int)pid);
	fflush(stdout);

	if (duration > 0) {
		struct timespec end, now, tick = { .tv_sec = 0, .tv_nsec = 100 * 1000 * 1000 };

		clock_gettime(CLOCK_MONOTONIC, &end);
		end.tv_sec += duration;
		while (!stop) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			if (now.tv_sec > end.tv_sec ||
			    (now.tv_sec == end.tv_sec && now.tv_nsec >= end.tv_nsec))
				break;
			access_all(&conn, rs, 3);
			nanosleep(&tick, NULL);
		}
	} else {
		char buf[256];

		while (!stop) {
			struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
			ssize_t n;
			int rc = poll(&p, 1, (int)keepalive);

			if (rc < 0) {
				if (errno == EINTR)
					continue;
				die("poll stdin");
			}
			if (rc == 0) {
				send_or_warn(strata_send_dropped(&conn), "DROPPED keepalive");
				continue;
			}
			n = read(STDIN_FILENO, buf, sizeof(buf));
			if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
				break;
		}
	}

	for (int i = 0; i < 3; i++)
		send_or_warn(strata_send_free(&conn, rs[i].hook_id, STRATA_FREE_REMOVED), "FREE");
	send_or_warn(strata_send_dropped(&conn), "DROPPED");
	printf("{\"done\":true,\"sent\":%" PRIu64 ",\"dropped\":%" PRIu64 "}\n",
	       __atomic_load_n(&conn.sent, __ATOMIC_RELAXED),
	       __atomic_load_n(&conn.dropped, __ATOMIC_RELAXED));
	fflush(stdout);
	strata_conn_close(&conn);
	return 0;
}
