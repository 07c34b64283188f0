/*
 * blocks.c - the table of live blocks (blocks.h) and the registry calls
 * that change it on JVM threads: reg_add, reg_free, reg_access, reg_vaddr
 * and reg_stats (registry.h).
 *
 * A block's address is read before reg_mu is taken (a JNI call); the entry
 * is inserted and its REGISTER queued under one hold of reg_mu, so frames
 * reach the agent in the order the table changed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "blocks.h"
#include "rescan.h"
#include "sendq.h"
#include "walks.h"

static struct entry **slots; /* open addressing by id, NULL = empty */
static size_t cap, count;
static uint64_t next_id = 1;

static size_t slot_of(uint64_t id, size_t c)
{
	return (size_t)((id * 0x9E3779B97F4A7C15ull) >> 17) & (c - 1);
}

struct entry *table_find(uint64_t id)
{
	if (cap == 0)
		return NULL;
	for (size_t i = slot_of(id, cap);; i = (i + 1) & (cap - 1)) {
		if (slots[i] == NULL)
			return NULL;
		if (slots[i]->id == id)
			return slots[i];
	}
}

static void place(struct entry **tab, size_t c, struct entry *e)
{
	size_t i = slot_of(e->id, c);

	while (tab[i] != NULL)
		i = (i + 1) & (c - 1);
	tab[i] = e;
}

/* Makes room for one more entry; -ENOMEM when it cannot. */
static int reserve(void)
{
	size_t nc;
	struct entry **nt;

	if ((count + 1) * 4 <= cap * 3)
		return 0;
	nc = cap ? cap * 2 : 1024;
	nt = calloc(nc, sizeof(*nt));
	if (nt == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < cap; i++)
		if (slots[i] != NULL)
			place(nt, nc, slots[i]);
	free(slots);
	slots = nt;
	cap = nc;
	return 0;
}

int table_insert(struct entry *e)
{
	if (reserve() != 0)
		return -ENOMEM;
	e->id = next_id++;
	place(slots, cap, e);
	count++;
	return 0;
}

struct entry *table_take(uint64_t id)
{
	size_t i, j;
	struct entry *e;

	if (cap == 0)
		return NULL;
	for (i = slot_of(id, cap); slots[i] != NULL && slots[i]->id != id; i = (i + 1) & (cap - 1))
		;
	e = slots[i];
	if (e == NULL)
		return NULL;
	slots[i] = NULL;
	for (j = (i + 1) & (cap - 1); slots[j] != NULL; j = (j + 1) & (cap - 1)) {
		size_t home = slot_of(slots[j]->id, cap);

		/* move slots[j] into the hole unless its home lies in (i, j] */
		if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
			slots[i] = slots[j];
			slots[j] = NULL;
			i = j;
		}
	}
	count--;
	return e;
}

struct entry *table_next(size_t *i)
{
	while (*i < cap) {
		struct entry *e = slots[(*i)++];

		if (e != NULL)
			return e;
	}
	return NULL;
}

size_t table_count(void)
{
	return count;
}

void entry_free(struct entry *e)
{
	if (e != NULL)
		walk_free(e->walk);
	free(e);
}

uint64_t reg_add(JNIEnv *env, struct reg_block *b)
{
	struct entry *e;
	struct reg_walk *cw = NULL;
	struct strata_extent first = { 0, 0 };
	uint64_t base = 0, started = 0, id;
	jweak ref = NULL;
	int tries = 0;

	e = calloc(1, sizeof(*e));
	if (e == NULL)
		return 0;
	e->source = b->source;
	e->offset = b->offset;
	e->args = b->args;
	if (b->args.name != NULL)
		snprintf(e->name, sizeof(e->name), "%s", b->args.name);
	e->args.name = e->name;
	if (b->args.label != NULL)
		snprintf(e->label, sizeof(e->label), "%s", b->args.label);
	e->args.label = e->label;
	e->args.pid = reg_pid;
	switch (b->source) {
	case REG_DIRECT: {
		void *p = b->ref ? (*env)->GetDirectBufferAddress(env, b->ref) : NULL;

		base = (uint64_t)(uintptr_t)p;
		break;
	}
	case REG_ADDRESS:
		base = b->address;
		break;
	case REG_HEAP_ARRAY:
	case REG_OBJECT_ARRAY:
		ref = (*env)->NewWeakGlobalRef(env, b->ref);
		if (ref == NULL)
			break;
		started = gc_started_count();
		base = heap_address(env, b->source, b->ref);
		break;
	case REG_CACHED_COLUMN:
		e->offset = 0;
		ref = (*env)->NewWeakGlobalRef(env, b->ref);
		if (ref == NULL)
			break;
		started = gc_started_count();
		cw = column_read(env, b->ref, b->args.column, NULL, &first);
		if (cw != NULL) {
			base = first.vaddr;
			e->args.length = first.length;
		}
		break;
	}
	if (base == 0) {
		if (ref != NULL)
			(*env)->DeleteWeakGlobalRef(env, ref);
		free(e);
		return 0;
	}
	e->ref = ref;
	e->args.vaddr = base + e->offset;
	pthread_mutex_lock(&reg_mu);
	if (table_insert(e) != 0) {
		pthread_mutex_unlock(&reg_mu);
		if (ref != NULL)
			(*env)->DeleteWeakGlobalRef(env, ref);
		walk_free(cw);
		free(e);
		return 0;
	}
	id = e->id;
	e->args.block_id = id;
	if (cw != NULL)
		sq_sync_gc(cw->gc_epoch); /* before the REGISTER: nothing comes between it and its walk */
	sq_register(e);
	if (cw != NULL)
		walk_keep(e, cw);
	pthread_mutex_unlock(&reg_mu);
	/* A GC that ran between reading the address and inserting the entry may
	 * have been rescanned before the entry existed: read it again. e is
	 * looked at only under reg_mu, once table_find says it is still live. */
	while (ref != NULL && gc_started_count() != started && tries++ < 4) {
		uint64_t a = 0;

		started = gc_started_count();
		if (b->source == REG_CACHED_COLUMN) {
			cw = column_read(env, b->ref, b->args.column, NULL, &first);
			if (cw == NULL)
				break;
		} else if ((a = heap_address(env, b->source, b->ref)) == 0) {
			break;
		}
		pthread_mutex_lock(&reg_mu);
		if (table_find(id) == e) {
			if (cw != NULL)
				column_apply(e, &cw, first);
			else if (e->args.vaddr != a + b->offset) {
				e->args.vaddr = a + b->offset;
				sq_move(e, reg_gc_epoch());
			}
		}
		pthread_mutex_unlock(&reg_mu);
		walk_free(cw);
		cw = NULL;
	}
	return id;
}

void reg_free(uint64_t id, uint8_t reason)
{
	struct entry *e;

	pthread_mutex_lock(&reg_mu);
	e = table_take(id);
	if (e != NULL) {
		sq_free(id, reason);
		bury(e->ref);
	}
	pthread_mutex_unlock(&reg_mu);
	entry_free(e);
}

void reg_access(uint64_t id, uint64_t offset, uint64_t length, uint8_t kind)
{
	pthread_mutex_lock(&reg_mu);
	if (table_find(id) != NULL)
		sq_access(id, offset, length, kind);
	pthread_mutex_unlock(&reg_mu);
}

uint64_t reg_vaddr(uint64_t id)
{
	struct entry *e;
	uint64_t v = 0;

	pthread_mutex_lock(&reg_mu);
	e = table_find(id);
	if (e != NULL)
		v = e->args.vaddr;
	pthread_mutex_unlock(&reg_mu);
	return v;
}

void reg_stats(struct reg_stats *s)
{
	pthread_mutex_lock(&reg_mu);
	sq_counts(&s->sent, &s->dropped, &s->connects);
	s->live = count;
	rescan_counts(&s->moves, &s->collected);
	pthread_mutex_unlock(&reg_mu);
	s->gc_epoch = gc_finished_count();
}
