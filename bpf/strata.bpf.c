//go:build ignore
/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * strata.bpf.c attributes page faults and sampled data addresses of traced
 * processes to registered RDD blocks.
 *
 * Hot path of a page fault, in order of cost:
 *   1. pid_bits: one bit per TGID in an array map (an inlined load). Every
 *      process on the node pays this and nothing more when it is untraced.
 *   1b. the thread's fill stack (task storage of the current task): a fault
 *      taken while the thread fills a block counts for that fill, whatever
 *      its address (fill_begin, fill_end below).
 *   2. cells: one hash lookup of {tgid, 0, addr >> 21}; a split bucket
 *      redirects to a second lookup of {tgid, 1, addr >> 16}.
 *   3. a fully unrolled scan of at most STRATA_SLOTS ranges, or in a
 *      granule of more blocks a binary search of its run between the
 *      fences of the page (a few entries of one or two cache lines).
 *   4. an atomic add to the block's counters, then 1 in sample_every faults
 *      goes to the ring, submitted without wakeup (user space drains on a
 *      deadline).
 *
 * Exactly one fault program is loaded, chosen by the loader: tp_btf, then
 * raw_tp, then the software page-fault perf event (which cannot see the
 * error code, so its faults are "unclassified").
 */
#include "vmlinux.h"

#if defined(__TARGET_ARCH_arm64)
/* Both objects compile against one vmlinux.h, made from an x86 kernel's
 * BTF, which lacks arm64's user_pt_regs: bpf_tracing.h reads registers
 * through it on arm64 (a uprobe's arguments, the pc of a fault or of a
 * perf event). Its layout is arm64's UAPI (asm/ptrace.h), the start of the
 * kernel's pt_regs and the whole of a perf event's bpf_user_pt_regs_t. */
struct user_pt_regs {
	__u64 regs[31];
	__u64 sp;
	__u64 pc;
	__u64 pstate;
};
#endif

#include "bpf/bpf_helpers.h"
#include "bpf/bpf_tracing.h"
#include "bpf/bpf_core_read.h"
#include "strata.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Emit one ring record per sample_every matched faults; 0 disables. */
volatile const __u32 sample_every = 64;

/* Records are submitted without waking the reader, which drains on a
 * deadline that grows while the ring stays empty; once this many bytes wait
 * in the ring, a submit wakes it (the loader sets a quarter of the ring). */
volatile const __u64 wake_bytes = 2 << 20;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, STRATA_PID_WORDS);
	__type(key, __u32);
	__type(value, __u64);
} pid_bits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1 << 20); /* resized by the loader */
	__type(key, struct cell_key);
	__type(value, struct range_set);
} cells SEC(".maps");

/* The runs of dense granules; the loader sizes it (Config.MaxRunEntries),
 * allocates segments of it to granules and writes them through a mapping
 * of it. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1 << 18);
	__type(key, __u32);
	__type(value, struct block_range);
} runs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 65536); /* resized by the loader: Config.MaxBlocks */
	__type(key, __u32);
	__type(value, struct block_counters);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct tgid_counters);
} tgids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fault_stats);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20); /* resized by the loader */
} events SEC(".maps");

/* The puts each thread is in (struct fill_stack): task storage, so that a
 * fault finds its thread's entry without a hash lookup and a thread's entry
 * goes with the thread. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct fill_stack);
} fills SEC(".maps");

/* Puts that stored their block, by {tgid, key}, until user space claims
 * them (the block's REGISTER) or drops them (the process ended). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 16384); /* resized by the loader: Config.MaxFills */
	__type(key, struct fill_key);
	__type(value, struct fill_done);
} fills_done SEC(".maps");

/* Force BTF for the types user space decodes (bpf2go -type). */
const struct event *unused_event __attribute__((unused));
const struct cell_key *unused_cell_key __attribute__((unused));
const struct run_ref *unused_run_ref __attribute__((unused));
const struct fill_stack *unused_fill_stack __attribute__((unused));

static __always_inline bool traced(__u32 tgid)
{
	__u32 word = tgid >> 6;
	__u64 *bits = bpf_map_lookup_elem(&pid_bits, &word);

	return bits && ((*bits >> (tgid & 63)) & 1);
}

static __always_inline struct fault_stats *cpu_stats(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&stats, &zero);
}

/* The entry of a granule's run holding addr: the first entry ending above
 * addr among those the page's fences allow, if it starts at or below addr. */
static __always_inline struct block_range *search_run(struct range_set *b, __u64 addr)
{
	__u32 n = b->n;
	__u32 off = b->run.off;
	__u32 p = (addr >> STRATA_PAGE_SHIFT) & (STRATA_FENCES - 2);
	__u32 lo = b->run.fence[p];
	__u32 hi = b->run.fence[p + 1] + 1;
	__u32 k;
	struct block_range *r;

	if (hi > n)
		hi = n;
	for (int i = 0; i < STRATA_RUN_STEPS; i++) {
		if (lo >= hi)
			break;
		__u32 mid = (lo + hi) / 2;
		k = off + mid;
		r = bpf_map_lookup_elem(&runs, &k);
		if (!r)
			return NULL;
		if (r->end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo >= n)
		return NULL;
	k = off + lo;
	r = bpf_map_lookup_elem(&runs, &k);
	if (!r || addr < r->start || addr >= r->end)
		return NULL;
	return r;
}

static __always_inline struct block_range *match(__u32 tgid, __u64 addr)
{
	struct cell_key key = {
		.tgid = tgid,
		.level = STRATA_LEVEL_BUCKET,
		.index = addr >> STRATA_BUCKET_SHIFT,
	};
	struct range_set *b = bpf_map_lookup_elem(&cells, &key);

	if (!b)
		return NULL;
	if (b->flags & STRATA_CELL_SPLIT) {
		key.level = STRATA_LEVEL_GRANULE;
		key.index = addr >> STRATA_GRANULE_SHIFT;
		b = bpf_map_lookup_elem(&cells, &key);
		if (!b)
			return NULL;
	}
	if (b->flags & STRATA_CELL_RUN)
		return search_run(b, addr);
	__u32 n = b->n;
	/* Written out because clang 14 will not unroll a loop that returns
	 * early, and this verifier rejects the bounded loop it emits instead. */
#define STRATA_TRY(i)                                                   \
	if (n > (i) && addr >= b->ranges[i].start && addr < b->ranges[i].end) \
		return &b->ranges[i];
	STRATA_TRY(0)
	STRATA_TRY(1)
	STRATA_TRY(2)
	STRATA_TRY(3)
	STRATA_TRY(4)
	STRATA_TRY(5)
	STRATA_TRY(6)
	STRATA_TRY(7)
#undef STRATA_TRY
	_Static_assert(STRATA_SLOTS == 8, "STRATA_TRY list must match STRATA_SLOTS");
	return NULL;
}

/* The counters of the block of tgid holding addr; *rp gets its range. */
static __always_inline struct block_counters *block_of(__u32 tgid, __u64 addr,
						       struct block_range **rp)
{
	struct block_range *r = match(tgid, addr);

	if (!r)
		return NULL;
	*rp = r;
	__u32 slot = r->slot;
	return bpf_map_lookup_elem(&counters, &slot);
}

static __always_inline void submit(struct event *e)
{
	__u64 flags = BPF_RB_NO_WAKEUP;

	if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wake_bytes)
		flags = BPF_RB_FORCE_WAKEUP;
	bpf_ringbuf_submit(e, flags);
}

static __always_inline void emit(struct fault_stats *st, __u64 pid_tgid, __u64 addr,
				 __u64 ip, struct block_range *r, __u8 kind)
{
	struct event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e) {
		st->ring_full++;
		return;
	}
	e->ts_ns = bpf_ktime_get_ns();
	e->addr = addr;
	e->ip = ip;
	e->block_id = r ? r->block_id : 0;
	e->slot = r ? r->slot : 0;
	e->tgid = pid_tgid >> 32;
	e->tid = (__u32)pid_tgid;
	e->kind = kind;
	e->_pad = 0;
	e->cpu = (__u16)bpf_get_smp_processor_id();
	submit(e);
	st->events++;
}

static __always_inline __u8 classify(__u64 error_code)
{
	if (error_code & STRATA_PF_INSTR)
		return STRATA_KIND_EXEC;
	if (error_code & STRATA_PF_WRITE)
		return STRATA_KIND_WRITE;
	return STRATA_KIND_READ;
}

/* Counts a fault of kind into the innermost put the current thread is
 * filling, if any. Only the thread itself writes its fill_stack (its faults
 * and its probes run on it), so plain adds are exact. */
static __always_inline void count_fill(__u8 kind)
{
	struct fill_stack *s = bpf_task_storage_get(&fills, bpf_get_current_task_btf(), NULL, 0);

	if (!s || s->depth == 0 || s->depth > STRATA_FILL_DEPTH)
		return;
	struct fill_counts *c = &s->slot[(s->depth - 1) & (STRATA_FILL_DEPTH - 1)].c;
	switch (kind) {
	case STRATA_KIND_READ:
		c->read++;
		break;
	case STRATA_KIND_WRITE:
		c->write++;
		break;
	case STRATA_KIND_EXEC:
		c->exec++;
		break;
	case STRATA_KIND_MAJOR:
		c->major++;
		break;
	default:
		c->unclassified++;
		break;
	}
}
_Static_assert((STRATA_FILL_DEPTH & (STRATA_FILL_DEPTH - 1)) == 0, "STRATA_FILL_DEPTH must be a power of two");

/*
 * regs (the faulting user context) is read only when an event is emitted:
 * its instruction pointer, through PT_REGS_IP_CORE (a CO-RE probe read of
 * x86's ip or arm64's pc). error_code is classified only once the fault is
 * known to be a traced one, and is negative when the hook cannot see it
 * (perf fallback).
 */
static __always_inline void on_fault(__u64 addr, struct pt_regs *regs, __u64 ip, __s64 error_code)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;

	if (!traced(tgid))
		return;
	struct fault_stats *st = cpu_stats();
	if (!st)
		return;
	st->traced_faults++;
	__u8 kind = error_code < 0 ? STRATA_KIND_UNCLASSIFIED : classify(error_code);
	count_fill(kind);
	struct block_range *r;
	struct block_counters *c = block_of(tgid, addr, &r);
	if (!c)
		return;
	st->matched_faults++;
	/* Shared by every CPU: atomic adds keep the counts exact. */
	switch (kind) {
	case STRATA_KIND_READ:
		__sync_fetch_and_add(&c->read, 1);
		break;
	case STRATA_KIND_WRITE:
		__sync_fetch_and_add(&c->write, 1);
		break;
	case STRATA_KIND_EXEC:
		__sync_fetch_and_add(&c->exec, 1);
		break;
	default:
		__sync_fetch_and_add(&c->unclassified, 1);
		break;
	}
	if (sample_every == 0)
		return;
	if (++st->sample_tick < sample_every)
		return;
	st->sample_tick = 0;
	if (regs)
		ip = PT_REGS_IP_CORE(regs);
	emit(st, pid_tgid, addr, ip, r, kind);
}

/*
 * The user instruction pointer of a perf event: its context starts with the
 * target's bpf_user_pt_regs_t (x86: pt_regs, ip; arm64: user_pt_regs, pc),
 * which PT_REGS_IP reads for the __TARGET_ARCH the object is built for. A
 * plain context load: the verifier rewrites it to the sample's registers.
 */
static __always_inline __u64 perf_ip(struct bpf_perf_event_data *ctx)
{
	return PT_REGS_IP((struct pt_regs *)ctx);
}

SEC("tp_btf/page_fault_user")
int BPF_PROG(fault_btf, unsigned long address, struct pt_regs *regs, unsigned long error_code)
{
	on_fault(address, regs, 0, error_code);
	return 0;
}

SEC("raw_tp/page_fault_user")
int fault_raw(struct bpf_raw_tracepoint_args *ctx)
{
	on_fault(ctx->args[0], (struct pt_regs *)ctx->args[1], 0, ctx->args[2]);
	return 0;
}

/* Attached to PERF_COUNT_SW_PAGE_FAULTS, sample_period 1, one event per CPU. */
SEC("perf_event")
int fault_perf(struct bpf_perf_event_data *ctx)
{
	on_fault(ctx->addr, NULL, perf_ip(ctx), -1);
	return 0;
}

/*
 * Attached to PERF_COUNT_SW_PAGE_FAULTS_MAJ, sample_period 1, one event per
 * CPU. Major faults are rare, so each matched one is emitted when events are
 * enabled at all.
 */
SEC("perf_event")
int major_fault(struct bpf_perf_event_data *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	__u64 addr = ctx->addr;

	if (!traced(tgid))
		return 0;
	count_fill(STRATA_KIND_MAJOR);
	struct block_range *r;
	struct block_counters *c = block_of(tgid, addr, &r);
	struct fault_stats *st = cpu_stats();
	if (!c || !st)
		return 0;
	__sync_fetch_and_add(&c->major, 1);
	st->major_faults++;
	if (sample_every)
		emit(st, pid_tgid, addr, perf_ip(ctx), r, STRATA_KIND_MAJOR);
	return 0;
}

/*
 * Attached to sampling events that carry a data address (PEBS
 * MEM_INST_RETIRED.STLB_MISS_*, AMD IBS op, or a software event standing in
 * for them): counts samples per traced TGID and per block. Returning 0 skips
 * the perf ring; the counts are all we want.
 */
SEC("perf_event")
int walk_sample(struct bpf_perf_event_data *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;

	if (!traced(tgid))
		return 0;
	struct tgid_counters *t = bpf_map_lookup_elem(&tgids, &tgid);
	if (t)
		__sync_fetch_and_add(&t->walk_samples, 1);
	struct block_range *r;
	struct block_counters *c = block_of(tgid, ctx->addr, &r);
	struct fault_stats *st = cpu_stats();
	if (!c || !st)
		return 0;
	__sync_fetch_and_add(&c->walk_samples, 1);
	st->walk_samples++;
	if (t)
		__sync_fetch_and_add(&t->walk_samples_matched, 1);
	return 0;
}

/*
 * The fill marks: uprobes on the hook's JNI natives
 *   Native.fillBegin(long key)   Java_org_stratatrace_hook_Native_fillBegin
 *   Native.fillEnd(int stored)   Java_org_stratatrace_hook_Native_fillEnd
 * whose third argument (after JNIEnv* and jclass) is the key or the
 * outcome. A process that begins a fill is traced from then on (its pid
 * bit set here), so that the faults of its first puts count before the
 * agent has its hook session; the exit hook clears the bit as for any
 * traced process, and user space drops what it left.
 */
SEC("uprobe")
int fill_begin(struct pt_regs *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct fault_stats *st = cpu_stats();

	if (!st)
		return 0;
	struct fill_stack *s = bpf_task_storage_get(&fills, bpf_get_current_task_btf(), NULL,
						    BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!s) {
		st->fills_lost++;
		return 0;
	}
	__u32 word = tgid >> 6;
	__u64 *bits = bpf_map_lookup_elem(&pid_bits, &word);
	__u64 bit = 1ULL << (tgid & 63);
	if (bits && !(*bits & bit))
		__sync_fetch_and_or(bits, bit);
	__u32 d = s->depth;
	s->depth = d + 1;
	if (d >= STRATA_FILL_DEPTH) {
		st->fills_too_deep++;
		return 0;
	}
	struct fill_slot *f = &s->slot[d & (STRATA_FILL_DEPTH - 1)];
	__builtin_memset(f, 0, sizeof(*f));
	f->key = PT_REGS_PARM3(ctx);
	st->fills_begun++;
	return 0;
}

SEC("uprobe")
int fill_end(struct pt_regs *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	int stored = (int)PT_REGS_PARM3(ctx);
	struct fault_stats *st = cpu_stats();

	if (!st)
		return 0;
	struct fill_stack *s = bpf_task_storage_get(&fills, bpf_get_current_task_btf(), NULL, 0);
	if (!s || s->depth == 0) {
		st->fills_unmatched++;
		return 0;
	}
	__u32 d = --s->depth;
	if (d >= STRATA_FILL_DEPTH)
		return 0; /* counted in fills_too_deep at its begin */
	struct fill_slot *f = &s->slot[d & (STRATA_FILL_DEPTH - 1)];
	if (!stored) {
		st->fills_failed++;
		return 0;
	}
	struct fill_key k = { .tgid = tgid, ._pad = 0, .key = f->key };
	struct fill_done v = { .c = f->c, .end_ns = bpf_ktime_get_ns() };
	long err = bpf_map_update_elem(&fills_done, &k, &v, BPF_NOEXIST);
	if (err == -17 /* EEXIST */) {
		st->fills_replaced++;
		err = bpf_map_update_elem(&fills_done, &k, &v, BPF_EXIST);
	}
	if (err) {
		st->fills_lost++;
		return 0;
	}
	st->fills_stored++;
	return 0;
}

static __always_inline void on_group_exit(__u32 tgid)
{
	__u32 word = tgid >> 6;
	__u64 *bits = bpf_map_lookup_elem(&pid_bits, &word);

	if (!bits || !((*bits >> (tgid & 63)) & 1))
		return;
	/* Kernel-side cleanup: stop counting at once; user space frees the
	 * buckets and counter slots when it reads the exit record. */
	__sync_fetch_and_and(bits, ~(1ULL << (tgid & 63)));
	struct fault_stats *st = cpu_stats();
	if (!st)
		return;
	st->exits++;
	struct event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		st->ring_full++;
		return;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->ts_ns = bpf_ktime_get_ns();
	e->tgid = tgid;
	e->tid = (__u32)bpf_get_current_pid_tgid();
	e->kind = STRATA_KIND_EXIT;
	submit(e);
	st->events++;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(exit_btf, struct task_struct *p, bool group_dead)
{
	if (group_dead)
		on_group_exit(p->tgid);
	return 0;
}

/* Older kernels lack group_dead: the leader's exit stands in for it, and the
 * loader's liveness poll catches leaders that exit before their threads. */
SEC("raw_tp/sched_process_exit")
int exit_raw(struct bpf_raw_tracepoint_args *ctx)
{
	struct task_struct *p = (struct task_struct *)ctx->args[0];
	__u32 pid = BPF_CORE_READ(p, pid);
	__u32 tgid = BPF_CORE_READ(p, tgid);

	if (pid == tgid)
		on_group_exit(tgid);
	return 0;
}
