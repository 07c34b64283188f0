/*
 * rescan.c - the registry's GC side (rescan.h): the JVMTI GC callbacks'
 * counters, tracked arrays' addresses read through the JVM, and the rescan
 * the hook thread runs after every GC.
 *
 * The GC callbacks run inside the pause, where no JNI call is allowed: they
 * bump gc_started or gc_finished and wake the hook thread. The hook thread
 * then attaches to the JVM, re-reads every tracked array (and every cached
 * batch column's buffers) outside reg_mu, and queues what moved under it.
 * A reference it reads stays valid while it reads: reg_free and the rescan
 * itself bury a freed block's weak reference in the graveyard, which only
 * the hook thread empties, between rescans.
 */
#define _GNU_SOURCE
#include <stdlib.h>

#include "rescan.h"
#include "sendq.h"
#include "walks.h"

static uint64_t gc_started, gc_finished; /* atomics: bumped by the GC callbacks */
static uint64_t moves, collected;        /* reg_mu */
static jweak *graveyard;                 /* reg_mu; grave_n also read atomically */
static size_t grave_n, grave_cap;
/* The hook thread's array for column_read's answers: a global reference,
 * replaced by a longer one when a column needs it. */
static jlongArray column_scratch;

void reg_gc_start(void)
{
	__atomic_fetch_add(&gc_started, 1, __ATOMIC_RELEASE);
}

void reg_gc_finish(void)
{
	__atomic_fetch_add(&gc_finished, 1, __ATOMIC_RELEASE);
	sq_wake();
}

uint64_t gc_started_count(void)
{
	return __atomic_load_n(&gc_started, __ATOMIC_ACQUIRE);
}

uint64_t gc_finished_count(void)
{
	return __atomic_load_n(&gc_finished, __ATOMIC_ACQUIRE);
}

uint32_t reg_gc_epoch(void)
{
	return (uint32_t)gc_finished_count();
}

/* The GC epoch the hook thread's latest rescan ran for. */
static uint64_t rescanned_epoch;

uint32_t reg_rescanned_epoch(void)
{
	return (uint32_t)__atomic_load_n(&rescanned_epoch, __ATOMIC_ACQUIRE);
}

void rescan_counts(uint64_t *m, uint64_t *c)
{
	*m = moves;
	*c = collected;
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
	jlong a = (*env)->CallStaticLongMethod(env, reg_cfg.object_class, reg_cfg.object_address, arr);

	if ((*env)->ExceptionCheck(env)) {
		(*env)->ExceptionClear(env);
		return 0;
	}
	return (uint64_t)a;
}

uint64_t heap_address(JNIEnv *env, enum reg_source src, jobject obj)
{
	return src == REG_HEAP_ARRAY ? array_address(env, obj) : object_array_address(env, obj);
}

static int by_extent(const void *a, const void *b)
{
	uint64_t x = ((const struct strata_extent *)a)->vaddr, y = ((const struct strata_extent *)b)->vaddr;

	return (x > y) - (x < y);
}

struct reg_walk *column_read(JNIEnv *env, jobject batches, int32_t column, jlongArray *scratch,
			     struct strata_extent *first)
{
	jlongArray a;
	jlong n = 0;
	jsize len;
	struct reg_walk *w;
	uint32_t k = 0;

	a = (jlongArray)(*env)->CallStaticObjectMethod(env, reg_cfg.object_class, reg_cfg.column_buffers, batches,
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
	w->gc_epoch = (uint32_t)gc_finished_count();
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
			walk_free(w);
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

void bury(jweak ref)
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

/* The hook thread is a Java thread only while it makes JNI calls (after a
 * GC, and to free weak references): a thread attached to the JVM and
 * blocked in poll() would hold every exit of the JVM for 300 ms, the time
 * HotSpot waits for threads in native code to come back before it exits. */
static JNIEnv *attach(void)
{
	JNIEnv *env;
	JavaVMAttachArgs aa = { .version = JNI_VERSION_1_8, .name = "strata-hook", .group = NULL };

	if ((*reg_jvm)->AttachCurrentThreadAsDaemon(reg_jvm, (void **)&env, &aa) != JNI_OK)
		return NULL;
	return env;
}

static void detach(void)
{
	(*reg_jvm)->DetachCurrentThread(reg_jvm);
}

void rescan_empty_graveyard(void)
{
	JNIEnv *env;
	jweak *g;
	size_t n;

	if (__atomic_load_n(&grave_n, __ATOMIC_RELAXED) == 0 || (env = attach()) == NULL)
		return;
	pthread_mutex_lock(&reg_mu);
	g = graveyard;
	n = grave_n;
	graveyard = NULL;
	grave_n = grave_cap = 0;
	pthread_mutex_unlock(&reg_mu);
	for (size_t i = 0; i < n; i++)
		(*env)->DeleteWeakGlobalRef(env, g[i]);
	free(g);
	detach();
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
 * (a column: of its first buffer; its new walk follows its MOVE). A
 * compacting collector slides objects towards lower addresses, so a block's
 * new range may cover the old range of the block after it; reported lowest
 * first, every MOVE names a range that no block still registered at its old
 * place overlaps (the agent's kernel index refuses overlapping ranges).
 * Copying collectors move objects into regions that were empty, where no
 * old range lies.
 */
static void rescan(JNIEnv *env)
{
	struct snap *s;
	struct entry *e;
	size_t n = 0, slot = 0;
	uint32_t epoch = (uint32_t)gc_finished_count();

	pthread_mutex_lock(&reg_mu);
	sq_sync_gc(epoch);
	s = malloc((table_count() ? table_count() : 1) * sizeof(*s));
	while (s != NULL && (e = table_next(&slot)) != NULL)
		if (e->ref != NULL)
			s[n++] = (struct snap){ e->id, e->source, e->ref, e->offset, e->args.vaddr, e->args.column };
	pthread_mutex_unlock(&reg_mu);
	if (s == NULL)
		return;
	qsort(s, n, sizeof(*s), by_vaddr);
	/* Refs in s stay valid: freed entries' refs wait in the graveyard,
	 * which only this thread empties, after this loop. */
	for (size_t i = 0; i < n; i++) {
		jobject obj = (*env)->NewLocalRef(env, s[i].ref);
		struct reg_walk *cw = NULL;
		struct strata_extent first = { 0, 0 };
		uint64_t a = 0;

		if (obj != NULL && s[i].source == REG_CACHED_COLUMN) {
			uint64_t started = gc_started_count();

			cw = column_read(env, obj, s[i].column, &column_scratch, &first);
			(*env)->DeleteLocalRef(env, obj);
			/* A collection that started meanwhile may have moved some of
			 * the buffers read: the rescan after it reads them again. */
			if (cw == NULL || gc_started_count() != started) {
				walk_free(cw);
				continue;
			}
		} else if (obj != NULL) {
			a = heap_address(env, s[i].source, obj);
			(*env)->DeleteLocalRef(env, obj);
			if (a == 0)
				continue;
		}
		pthread_mutex_lock(&reg_mu);
		e = table_find(s[i].id);
		if (e != NULL && e->ref == s[i].ref) {
			if (obj == NULL) {
				e = table_take(s[i].id);
				sq_free(e->id, STRATA_FREE_COLLECTED);
				bury(e->ref);
				collected++;
				entry_free(e);
			} else if (cw != NULL) {
				moves += (uint64_t)column_apply(e, &cw, first);
			} else if (e->args.vaddr != a + s[i].offset) {
				e->args.vaddr = a + s[i].offset;
				moves++;
				sq_move(e, epoch);
			}
		}
		pthread_mutex_unlock(&reg_mu);
		walk_free(cw);
	}
	free(s);
}

void rescan_after_gc(uint64_t *rescanned)
{
	uint64_t gcs = gc_finished_count();
	JNIEnv *env;

	if (gcs != *rescanned && (env = attach()) != NULL) {
		*rescanned = gcs;
		rescan(env);
		/* The GC frame, the MOVEs and the columns' walks are queued: the
		 * walker may check its walks now, and its CHECKED follows them. */
		__atomic_store_n(&rescanned_epoch, gcs, __ATOMIC_RELEASE);
		if (sq_walk_mode() == STRATA_WALK_ON && reg_cfg.walk_wake != NULL) {
			(*env)->CallStaticVoidMethod(env, reg_cfg.object_class, reg_cfg.walk_wake);
			if ((*env)->ExceptionCheck(env))
				(*env)->ExceptionClear(env);
		}
		detach();
	}
}
