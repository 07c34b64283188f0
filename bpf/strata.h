/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * strata.h is the C side of the ABI between bpf/strata.bpf.c and the Go
 * loader in agent/tracer. Every struct here is emitted into Go by
 * `bpf2go -type`, and agent/tracer's layout test checks the constants that
 * the Go side repeats, so the two halves cannot drift apart silently.
 */
#ifndef STRATA_H
#define STRATA_H

/*
 * Address matching is two hash levels and a sorted array:
 *   - a 2 MiB bucket {tgid, 0, addr >> STRATA_BUCKET_SHIFT} lists up to
 *     STRATA_SLOTS block ranges overlapping it (a range_set), or is marked
 *     STRATA_CELL_SPLIT when more blocks overlap it;
 *   - the 64 KiB granules {tgid, 1, addr >> STRATA_GRANULE_SHIFT} of a
 *     split bucket list their blocks the same way, or are marked
 *     STRATA_CELL_RUN when more blocks overlap them: their blocks are then
 *     a run, sorted by address, in the runs array, and STRATA_FENCES page
 *     fences say which entries can hold an address of each 4 KiB page, so
 *     that a binary search covers only those.
 * Any number of blocks per granule is matched (a granule holds at most
 * 65,536 ranges of a byte). Blocks of a MiB or more cost one hash lookup.
 * 64 KiB granules rather than 4 KiB pages keep a dense bucket to 32
 * entries, which stay in cache (per-page entries cost ~+400 ns per fault).
 */
#define STRATA_BUCKET_SHIFT 21
#define STRATA_GRANULE_SHIFT 16
#define STRATA_PAGE_SHIFT 12
#define STRATA_SLOTS 8
#define STRATA_FENCES 17 /* 16 pages of a granule, and the end */
#define STRATA_RUN_STEPS 17 /* binary search steps: log2(65,536 + 1) */

#define STRATA_LEVEL_BUCKET 0
#define STRATA_LEVEL_GRANULE 1

#define STRATA_CELL_SPLIT 1
#define STRATA_CELL_RUN 2

/* pid_bits covers every possible PID: PID_MAX_LIMIT (4 Mi) bits on 64-bit. */
#define STRATA_PID_WORDS (4194304 / 64)

/* Event kinds; a fault kind doubles as the counter it bumps. */
enum strata_kind {
	STRATA_KIND_READ = 0,
	STRATA_KIND_WRITE = 1,
	STRATA_KIND_EXEC = 2,
	STRATA_KIND_UNCLASSIFIED = 3, /* perf fallback: no error code */
	STRATA_KIND_MAJOR = 4,
	STRATA_KIND_WALK_SAMPLE = 5,
	STRATA_KIND_EXIT = 15, /* a traced thread group exited */
};

/* x86 page-fault error code bits (arch/x86/include/asm/trap_pf.h). */
#define STRATA_PF_WRITE (1 << 1)
#define STRATA_PF_INSTR (1 << 4)

struct cell_key {
	__u32 tgid;
	__u32 level; /* STRATA_LEVEL_* */
	__u64 index; /* addr >> 21 for a bucket, >> 16 for a granule */
};

struct block_range {
	__u64 start; /* inclusive */
	__u64 end;   /* exclusive */
	__u64 block_id;
	__u32 slot; /* index into the counters map */
	__u32 _pad;
};

/* Where a granule's run is: its entries are runs[off, off + n). fence[p]
 * is the first entry whose range ends above page p of the granule;
 * fence[16] = n. An address in page p can only be in entries
 * fence[p] .. fence[p+1]. */
struct run_ref {
	__u32 off;
	__u32 fence[STRATA_FENCES];
};

struct range_set {
	__u32 n;     /* entries of ranges (or of the run); 0 when split */
	__u32 flags; /* STRATA_CELL_* */
	union {
		struct block_range ranges[STRATA_SLOTS];
		struct run_ref run; /* STRATA_CELL_RUN */
	};
};

/*
 * Per block, shared by all CPUs and bumped with atomic adds, so that its
 * memory does not grow with the CPU count (per-CPU copies cost 192 MiB for
 * 64 k blocks on 64 CPUs). One cache line each: two blocks faulted on two
 * CPUs at once do not share a line.
 */
struct block_counters {
	__u64 read;
	__u64 write;
	__u64 exec;
	__u64 unclassified;
	__u64 major;
	__u64 walk_samples;
	__u64 _pad[2];
};

/* Per traced TGID, shared, atomic: the denominators for "RDD vs the rest". */
struct tgid_counters {
	__u64 walk_samples;
	__u64 walk_samples_matched;
};

/*
 * Fills: the faults a thread takes while Spark fills a block. The JVM hook
 * calls two JNI natives around each MemoryStore put (jvmhook/native/hook.c);
 * a uprobe on each marks the thread. Puts nest (computing a cached RDD's
 * partition can cache its parent's): a thread keeps a stack of
 * STRATA_FILL_DEPTH puts, and a fault counts for the innermost only.
 * Deeper puts are counted in fault_stats.fills_too_deep and left out.
 */
#define STRATA_FILL_DEPTH 4

struct fill_counts {
	__u64 read;
	__u64 write;
	__u64 exec;
	__u64 unclassified;
	__u64 major;
};

struct fill_slot {
	__u64 key; /* the hook's key of the block: FNV-1a of its name (agent/faults) */
	struct fill_counts c;
};

/* Per thread (task storage). depth counts the puts begun and not ended,
 * those beyond STRATA_FILL_DEPTH too, so that every end finds its begin. */
struct fill_stack {
	__u32 depth;
	__u32 _pad;
	struct fill_slot slot[STRATA_FILL_DEPTH];
};

/* A put that stored its block, until the agent claims it at the block's
 * REGISTER or drops it. */
struct fill_key {
	__u32 tgid;
	__u32 _pad;
	__u64 key;
};

struct fill_done {
	struct fill_counts c;
	__u64 end_ns; /* bpf_ktime_get_ns at the put's end */
};

/* Per CPU, one entry. */
struct fault_stats {
	__u64 traced_faults;  /* faults of traced TGIDs */
	__u64 matched_faults; /* ... that hit a registered block */
	__u64 events;         /* records submitted to the ring */
	__u64 ring_full;      /* bpf_ringbuf_reserve failures */
	__u64 major_faults;   /* matched major faults */
	__u64 walk_samples;   /* matched walk samples */
	__u64 exits;          /* traced thread groups that exited */
	__u64 sample_tick;    /* 1-in-N sampler state, not a statistic */
	__u64 fills_begun;    /* puts marked begun */
	__u64 fills_stored;   /* ... that stored their block, kept in fills_done */
	__u64 fills_failed;   /* ... that did not store it (the put failed) */
	__u64 fills_too_deep; /* puts nested beyond STRATA_FILL_DEPTH */
	__u64 fills_replaced; /* stored fills overwritten unclaimed by a later put of the block */
	__u64 fills_lost;     /* fills_done full, or no task storage */
	__u64 fills_unmatched; /* ends without a begin (the probes attached mid-put) */
};

/* One ring record, 48 bytes. */
struct event {
	__u64 ts_ns; /* bpf_ktime_get_ns (CLOCK_MONOTONIC) */
	__u64 addr;
	__u64 ip;
	__u64 block_id;
	__u32 tgid;
	__u32 tid;
	__u8 kind; /* enum strata_kind */
	__u8 _pad;
	__u16 cpu; /* the CPU the fault ran on: user space maps it to a NUMA node */
	__u32 slot;
};

#endif /* STRATA_H */
