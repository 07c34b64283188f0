/*
 * blocks.h - the registry's table of live blocks (blocks.c). Internal to
 * libstratahook.so; hook.c sees registry.h only.
 *
 * The table maps a hook id to its entry: open addressing with linear
 * probing, at most three quarters full, backward-shift deletion. Every
 * table_* function expects reg_mu held and makes no system call and no JNI
 * call. An entry's fields change only under reg_mu too, except those set
 * before table_insert publishes it. Which thread holds reg_mu for what is
 * in the table at the top of sendq.c.
 */
#ifndef STRATA_BLOCKS_H
#define STRATA_BLOCKS_H

#include <stddef.h>
#include <stdint.h>

#include <jni.h>

#include "registry.h"

struct entry {
	uint64_t id;
	enum reg_source source;
	jweak ref;       /* heap arrays and cached columns: weak global ref; else NULL */
	uint64_t offset; /* bytes from the array's data start */
	struct strata_block_args args;
	char name[STRATA_STR_MAX + 1];
	char label[STRATA_STR_MAX + 1];
	uint32_t walk_seq;     /* walks and STALE marks sent, the latest's seq */
	struct reg_walk *walk; /* the latest walk, NULL before the first */
};

/* The entry of id, NULL when id is not live. */
struct entry *table_find(uint64_t id);
/* Gives e the next hook id and inserts it; -ENOMEM when the table cannot
 * grow (then e is not inserted and no id is used). */
int table_insert(struct entry *e);
/* Removes id's entry and returns it (NULL when not live); the caller frees
 * it with entry_free. */
struct entry *table_take(uint64_t id);
/* The first entry at slot *i or after, *i moved past it; NULL at the end.
 * Start with *i = 0: every entry comes once, in slot order. */
struct entry *table_next(size_t *i);
/* Live entries. */
size_t table_count(void);

/* Frees an entry taken out of the table, and its latest walk. */
void entry_free(struct entry *e);

#endif /* STRATA_BLOCKS_H */
