/*
 * sendq.h - the registry's send queue, its connection to the node agent
 * and the hook thread that sends (sendq.c, whose opening comment has the
 * table of every shared field: who writes it, who reads it, under which
 * lock). Also the state every registry file shares: reg_mu and what
 * reg_start was given.
 */
#ifndef STRATA_SENDQ_H
#define STRATA_SENDQ_H

#include <pthread.h>
#include <stdint.h>

#include <jni.h>

#include "blocks.h"

/* The registry's one lock: the table, the connection and the queue's
 * producers. Never held across a JNI or JVMTI call or a system call that
 * can wait. */
extern pthread_mutex_t reg_mu;
/* Set by reg_start before the hook thread starts; read-only after. */
extern struct reg_config reg_cfg;
extern JavaVM *reg_jvm;
extern uint32_t reg_pid;

/*
 * Frames for the hook thread to send, one each; reg_mu held. A full queue
 * drops the frame and counts it; without a connection the frame is dropped
 * and only an ACCESS is counted, since the next connect sends again what
 * the others said (sendq.c, superseded). Its seq is used either way, so the
 * agent sees the gap.
 */
void sq_register(const struct entry *e);
void sq_move(const struct entry *e, uint32_t gc_epoch);
void sq_free(uint64_t id, uint8_t reason);
void sq_access(uint64_t id, uint64_t offset, uint64_t length, uint8_t kind);
/* A GC or CHECKED frame. */
void sq_epoch(uint16_t type, uint32_t gc_epoch);
/* A GC frame of gc_epoch unless one of it (or later) is queued already. */
void sq_sync_gc(uint32_t gc_epoch);
/* A walk as WALK frames of STRATA_WALK_EXTENTS_MAX extents each. */
void sq_walk(uint64_t id, const struct reg_walk *w);

/* Wakes the hook thread: one write(2) to an eventfd, which never blocks;
 * safe inside a GC pause. */
void sq_wake(void);
/* HELLO's walk mode; 0 until decided (atomic). */
uint8_t sq_walk_mode(void);
/* Frames sent and dropped over every connection, and connects; reg_mu
 * held. */
void sq_counts(uint64_t *sent, uint64_t *dropped, uint64_t *connects);

#endif /* STRATA_SENDQ_H */
