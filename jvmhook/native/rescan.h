/*
 * rescan.h - the registry's GC side (rescan.c): the collection counters the
 * JVMTI callbacks bump, reading a tracked array's address through the JVM,
 * the rescan of every tracked array after a GC on the hook thread, and the
 * weak references of freed blocks waiting to be deleted.
 */
#ifndef STRATA_RESCAN_H
#define STRATA_RESCAN_H

#include <stdint.h>

#include <jni.h>

#include "registry.h"

/* Collections started and finished so far (atomics, any thread). */
uint64_t gc_started_count(void);
uint64_t gc_finished_count(void);

/* Current address of a tracked array's data start (REG_HEAP_ARRAY or
 * REG_OBJECT_ARRAY); 0 when unreadable. A JNI call: never under reg_mu. */
uint64_t heap_address(JNIEnv *env, enum reg_source src, jobject obj);

/*
 * Reads the buffers of one column of a cached DataFrame block (batches, its
 * Object[] of batches) through Java, which decodes their references: one
 * call, no JNI call per buffer. Returns them as a walk (DONE, the buffers'
 * data ascending, objects = buffers, bytes = their lengths, gc_epoch the
 * collections finished when Java answered) and the first batch's buffer in
 * *first; NULL when the column has no buffer, Java failed or memory ran
 * out. scratch is the caller's reusable array (NULL: none); a longer one
 * Java had to make replaces it. The caller compares gc_started_count()
 * around the call: a collection that started meanwhile may have moved some
 * buffers. A JNI call: never under reg_mu.
 */
struct reg_walk *column_read(JNIEnv *env, jobject batches, int32_t column, jlongArray *scratch,
			     struct strata_extent *first);

/* Keeps a freed block's weak reference (NULL: none) for the hook thread to
 * delete; reg_mu held. Until then a rescan may still read through it. */
void bury(jweak ref);

/* The hook thread: when a GC finished since *rescanned, attaches to the
 * JVM, rescans (MOVE and FREE frames), wakes the walker and detaches. */
void rescan_after_gc(uint64_t *rescanned);
/* The hook thread: deletes the buried weak references, if any. */
void rescan_empty_graveyard(void);

/* MOVE frames queued by rescans and blocks freed because their array was
 * collected; reg_mu held. */
void rescan_counts(uint64_t *moves, uint64_t *collected);

#endif /* STRATA_RESCAN_H */
