/*
 * walks.c - the walks the registry keeps and re-sends (walks.h), and the
 * walker's calls: reg_walk and reg_checked (registry.h).
 *
 * Every frame that names a GC epoch (WALK, CHECKED) is queued after a GC
 * frame of that epoch (sq_sync_gc), under the same hold of reg_mu, so the
 * agent always hears of a collection before anything that depends on it.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "sendq.h"
#include "walks.h"

static uint32_t checked_epoch; /* of the latest CHECKED queued; reg_mu */
static int checked_sent;       /* a CHECKED was ever queued; reg_mu */

void walk_free(struct reg_walk *w)
{
	if (w != NULL)
		free(w->ext);
	free(w);
}

struct reg_walk *walk_keep(struct entry *e, struct reg_walk *w)
{
	struct reg_walk *old = e->walk;

	w->seq = ++e->walk_seq;
	e->walk = w;
	sq_walk(e->id, w);
	return old;
}

int column_apply(struct entry *e, struct reg_walk **w, struct strata_extent first)
{
	struct reg_walk *nw = *w, *old = e->walk;
	int moved = 0;

	if (old != NULL && old->n == nw->n && memcmp(old->ext, nw->ext, nw->n * sizeof(*nw->ext)) == 0 &&
	    e->args.vaddr == first.vaddr && e->args.length == first.length)
		return 0;
	sq_sync_gc(nw->gc_epoch);
	if (e->args.vaddr != first.vaddr || e->args.length != first.length) {
		e->args.vaddr = first.vaddr;
		e->args.length = first.length;
		sq_move(e, nw->gc_epoch);
		moved = 1;
	}
	*w = walk_keep(e, nw);
	return moved;
}

void walks_resend(void)
{
	struct entry *e;
	size_t i = 0;

	while ((e = table_next(&i)) != NULL)
		if (e->walk != NULL)
			sq_walk(e->id, e->walk);
	if (checked_sent)
		sq_epoch(STRATA_FRAME_CHECKED, checked_epoch);
}

uint32_t reg_walk(uint64_t id, struct reg_walk *w)
{
	struct entry *e;
	struct reg_walk *old = w;
	uint32_t seq = 0;

	pthread_mutex_lock(&reg_mu);
	e = table_find(id);
	if (e != NULL && (e->args.flags & STRATA_BLOCK_OBJECT_GRAPH) != 0) {
		sq_sync_gc(w->gc_epoch);
		old = walk_keep(e, w);
		seq = w->seq;
	}
	pthread_mutex_unlock(&reg_mu);
	walk_free(old);
	return seq;
}

void reg_checked(uint32_t epoch)
{
	pthread_mutex_lock(&reg_mu);
	sq_sync_gc(epoch);
	sq_epoch(STRATA_FRAME_CHECKED, epoch);
	checked_epoch = epoch;
	checked_sent = 1;
	pthread_mutex_unlock(&reg_mu);
}
