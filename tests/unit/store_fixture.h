/* SPDX-License-Identifier: Apache-2.0 */
/* A fresh LMDB store for the cache/ unit tests: a temporary directory per test, the store opened in it, entries made to a pattern. */
#ifndef TESTS_UNIT_STORE_FIXTURE_H
#define TESTS_UNIT_STORE_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "cache/store.h"
#include "entry/kinds.h"

struct store_fixture {
	char		 tmp[256];	/* mkdtemp's, removed at teardown */
	char		 dir[300];	/* tmp/db, made by cache_open */
	struct cache	*c;		/* store_setup_open's, or NULL */
};

/*
 * cmocka setup: a struct store_fixture in *state, its directory under
 * $TMPDIR (or /tmp), no store yet. -1 when it cannot be made.
 */
int	store_setup(void **state);
/* The same, and the store opened read-write at the default map size in f->c. */
int	store_setup_open(void **state);
/* cmocka teardown: closes f->c unless NULL, removes the directory. */
int	store_teardown(void **state);

/* cache_open(dir, map, ro), or the test fails naming cache_open's error. */
struct cache	*store_open_ok(const char *dir, size_t map, int ro);
/* Key number i ("key-000042") into key (CACHE_KEY_MAX_BYTES); its length. */
size_t	store_key(uint8_t *key, unsigned i);
/*
 * A meta of kind with thisUpdate this_update: produced then, nextUpdate an
 * hour later, fetched a second after, source "test-upstream", the rest 0.
 */
void	store_meta(struct cache_meta *, uint8_t kind, int64_t this_update);
/*
 * The kinds' names as a caller lends them to the store and the ask file
 * (entry/kinds.c's, which the store's tests do not link): a
 * cache_kind_name_fn.
 */
const char	*store_kind_name(int kind);
/* Every page of DIR/data.mdb after LMDB's two metas zeroed, under the open store. */
void	store_zero_tree(const char *dir);

#endif
