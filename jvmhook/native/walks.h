/*
 * walks.h - the walks the registry keeps (walks.c): each object-graph
 * block's and each cached batch column's latest walk, hung on its entry,
 * numbered from 1 per block (walk_seq), and the walker's latest CHECKED
 * epoch; a new connection is told all of them again (walks_resend).
 * Everything here expects reg_mu held, except walk_free.
 */
#ifndef STRATA_WALKS_H
#define STRATA_WALKS_H

#include "blocks.h"

/* Frees a walk and its extents; NULL is ignored. */
void walk_free(struct reg_walk *w);

/* Makes w e's latest walk with the next walk_seq and queues its WALK
 * frames; returns the walk it replaces (NULL for the first), which the
 * caller frees. The caller has queued the GC frame of w's epoch. */
struct reg_walk *walk_keep(struct entry *e, struct reg_walk *w);

/*
 * Makes *w (first: the first batch's buffer) the buffers of e, a cached
 * batch column, unless they are where e's latest walk says. When they
 * moved it queues a MOVE of the REGISTER range if the first buffer moved,
 * then the new walk (walk_seq + 1), both after a GC frame of the walk's
 * epoch. *w becomes the walk to free (the old one, or the new one when
 * nothing moved). Returns whether it queued a MOVE.
 */
int column_apply(struct entry *e, struct reg_walk **w, struct strata_extent first);

/* After a connect, behind every REGISTER and the GC frame: queues each
 * entry's latest walk (or STALE mark) and the latest CHECKED. */
void walks_resend(void);

#endif /* STRATA_WALKS_H */
