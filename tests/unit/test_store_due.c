/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the store's due index (cache/store_due.c) against a real LMDB environment. */
#include "config.h"

#include <lmdb.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cache/store.h"
#include "entry/kinds.h"

#include "store_fixture.h"

#define NOW		1000000		/* the tests' clock, seconds */
#define SEEN_MAX	64
#define TEST_MAXDBS	8

/* What a due walk visited, in order. */
struct seen {
	size_t	n;
	int	id[SEEN_MAX];		/* the key's number */
	int64_t	at[SEEN_MAX];
	int	stop_after;		/* 0: never stop */
	char	ids[SEEN_MAX * 8];	/* due_ids: "4 2 1 5" */
};

/* Entry i of kind, due at `at`, with extra flags; the put's result. */
static int
put_at(struct cache *c, uint8_t kind, int i, int64_t tu, int64_t at,
    uint16_t flags)
{
	static const uint8_t	 resp[] = "response";
	struct cache_meta	 m;
	struct cache_body	 b = { 0 };
	uint8_t			 key[CACHE_KEY_MAX_BYTES];

	store_meta(&m, kind, tu);
	m.flags = flags;
	m.next_refresh_at = at;
	b.response = resp;
	b.response_len = sizeof(resp);
	return cache_put(c, key, store_key(key, (unsigned)i), &m, &b);
}

static int
seen_cb(enum cache_kind kind, const uint8_t *key, size_t klen,
    const struct cache_meta *m, void *arg)
{
	struct seen	*s = arg;
	char		 buf[32];

	assert_int_equal(m->kind, kind);
	assert_true(klen < sizeof(buf));
	memcpy(buf, key, klen);
	buf[klen] = '\0';
	if (s->n < SEEN_MAX) {
		s->id[s->n] = atoi(buf + 4);
		s->at[s->n] = m->next_refresh_at;
	}
	s->n++;
	return s->stop_after != 0 && (int)s->n >= s->stop_after;
}

static long
due(struct cache *c, uint8_t kind, int64_t now, struct seen *s)
{
	memset(s, 0, sizeof(*s));
	return cache_due_walk(c, kind, now, 0, seen_cb, s);
}

/*
 * The due walk of kind at now: the numbers of the keys it visits, in
 * order ("4 2 1 5"; "" for none), checked against what it returns.
 */
static const char *
due_ids(struct cache *c, uint8_t kind, int64_t now, struct seen *s)
{
	size_t	i, off = 0;
	long	n = due(c, kind, now, s);

	assert_int_equal(n, (long)s->n);
	assert_true(s->n <= SEEN_MAX);
	for (i = 0; i < s->n; i++)
		off += (size_t)snprintf(s->ids + off, sizeof(s->ids) - off,
		    "%s%d", i ? " " : "", s->id[i]);
	return s->ids;
}

static size_t
due_keys(struct cache *c)
{
	struct cache_stat	st;

	assert_int_equal(cache_stat(c, &st), 0);
	return st.due_keys;
}

/* Raw LMDB on the store, as another (older) writer would be. */
static void
raw_open(const char *dir, MDB_env **env, MDB_txn **txn)
{
	assert_int_equal(mdb_env_create(env), 0);
	assert_int_equal(mdb_env_set_maxdbs(*env, TEST_MAXDBS), 0);
	assert_int_equal(mdb_env_open(*env, dir, 0, 0640), 0);
	assert_int_equal(mdb_txn_begin(*env, NULL, 0, txn), 0);
}

static void
raw_commit(MDB_env *env, MDB_txn *txn)
{
	assert_int_equal(mdb_txn_commit(txn), 0);
	mdb_env_close(env);
}

/* An index key as store.h describes it. */
static MDB_val
due_key(uint8_t *buf, uint8_t kind, int64_t at, int i)
{
	MDB_val	k;
	int	b;

	buf[0] = kind;
	for (b = 0; b < 8; b++)
		buf[1 + b] = (uint8_t)((uint64_t)at >> (56 - 8 * b));
	k.mv_size = 9 + store_key(buf + 9, (unsigned)i);
	k.mv_data = buf;
	return k;
}

/* Soonest first, only what is due, kinds apart, never-refreshed not indexed. */
static void
test_due_order(void **state)
{
	struct store_fixture	*f = *state;
	struct cache		*c = f->c;
	struct seen		 s;

	assert_int_equal(put_at(c, CACHE_KIND_OCSP, 1, 100, NOW - 10, 0), 0);
	assert_int_equal(put_at(c, CACHE_KIND_OCSP, 2, 100, NOW - 500, 0), 0);
	assert_int_equal(put_at(c, CACHE_KIND_OCSP, 3, 100, NOW + 60, 0), 0);
	assert_int_equal(put_at(c, CACHE_KIND_OCSP, 4, 100, 0, 0), 0);
	assert_int_equal(put_at(c, CACHE_KIND_OCSP, 5, 100, NOW, 0), 0);
	assert_int_equal(put_at(c, CACHE_KIND_OCSP, 6, 100, NOW - 700,
	    CACHE_F_NO_REFRESH), 0);
	assert_int_equal(put_at(c, CACHE_KIND_PCCS, 7, 100, NOW - 900, 0), 0);
	assert_int_equal(due_keys(c), 6);

	/* unscheduled first, then by time; 3 not yet due; 6 not indexed */
	assert_string_equal(due_ids(c, CACHE_KIND_OCSP, NOW, &s), "4 2 1 5");
	assert_int_equal(cache_due_skipped(c), 0);
	assert_string_equal(due_ids(c, CACHE_KIND_PCCS, NOW, &s), "7");
	assert_string_equal(due_ids(c, CACHE_KIND_RIM, NOW, &s), "");
	/* max, and the callback's stop */
	memset(&s, 0, sizeof(s));
	assert_int_equal(cache_due_walk(c, CACHE_KIND_OCSP, NOW, 2, seen_cb,
	    &s), 2);
	memset(&s, 0, sizeof(s));
	s.stop_after = 1;
	assert_int_equal(cache_due_walk(c, CACHE_KIND_OCSP, NOW, 0, seen_cb,
	    &s), 1);
	assert_int_equal(cache_due_walk(c, 0, NOW, 0, seen_cb, &s), -1);
}

/* Every write of a meta moves its index key, and only its own. */
static void
test_due_follows_writes(void **state)
{
	struct store_fixture	*f = *state;
	struct cache		*c = f->c;
	struct cache_meta	 m;
	struct cache_touch	 t;
	struct cache_sched	 sc;
	struct seen		 s;
	uint8_t			 key[CACHE_KEY_MAX_BYTES];
	size_t			 klen = store_key(key, 1);

	assert_int_equal(put_at(c, CACHE_KIND_OCSP, 1, 100, NOW - 10, 0), 0);
	assert_int_equal(put_at(c, CACHE_KIND_OCSP, 2, 100, NOW - 20, 0), 0);
	/* put_meta: moved into the future */
	assert_int_equal(cache_get_meta(c, CACHE_KIND_OCSP, key, klen, &m), 1);
	m.next_refresh_at = NOW + 100;
	assert_int_equal(cache_put_meta(c, key, klen, &m), 0);
	assert_int_equal(due_keys(c), 2);
	assert_string_equal(due_ids(c, CACHE_KIND_OCSP, NOW, &s), "2");
	assert_string_equal(due_ids(c, CACHE_KIND_OCSP, NOW + 100, &s), "2 1");
	/* an older put is kept out; a newer one moves the key */
	assert_int_equal(put_at(c, CACHE_KIND_OCSP, 1, 50, NOW - 30, 0),
	    CACHE_PUT_KEPT);
	assert_string_equal(due_ids(c, CACHE_KIND_OCSP, NOW, &s), "2");
	assert_int_equal(put_at(c, CACHE_KIND_OCSP, 1, 200, NOW - 30, 0), 0);
	assert_string_equal(due_ids(c, CACHE_KIND_OCSP, NOW, &s), "1 2");
	assert_int_equal(due_keys(c), 2);
	/* a put that makes it never-refreshed takes it out */
	assert_int_equal(put_at(c, CACHE_KIND_OCSP, 1, 300, NOW - 30,
	    CACHE_F_NO_REFRESH), 0);
	assert_int_equal(due_keys(c), 1);
	assert_int_equal(put_at(c, CACHE_KIND_OCSP, 1, 400, NOW - 30, 0), 0);
	/* a touch leaves the schedule alone */
	memset(&t, 0, sizeof(t));
	t.kind = CACHE_KIND_OCSP;
	t.klen = klen;
	memcpy(t.key, key, klen);
	t.served = 3;
	t.last_served_at = NOW;
	assert_int_equal(cache_touch(c, &t, 1), 0);
	assert_int_equal(due_keys(c), 2);
	assert_string_equal(due_ids(c, CACHE_KIND_OCSP, NOW, &s), "1 2");
	/* reschedule: only over the schedule the caller saw */
	memset(&sc, 0, sizeof(sc));
	sc.kind = CACHE_KIND_OCSP;
	sc.klen = klen;
	memcpy(sc.key, key, klen);
	sc.expect_at = NOW - 31;
	sc.next_refresh_at = NOW + 500;
	sc.set_flags = CACHE_F_PARKED;
	assert_int_equal(cache_reschedule(c, &sc, 1), 0);
	assert_string_equal(due_ids(c, CACHE_KIND_OCSP, NOW, &s), "1 2");
	sc.expect_at = NOW - 30;
	assert_int_equal(cache_reschedule(c, &sc, 1), 1);
	assert_string_equal(due_ids(c, CACHE_KIND_OCSP, NOW, &s), "2");
	assert_int_equal(cache_get_meta(c, CACHE_KIND_OCSP, key, klen, &m), 1);
	assert_int_equal(m.next_refresh_at, NOW + 500);
	assert_true(m.flags & CACHE_F_PARKED);
	assert_int_equal(m.served_count, 3);
	assert_int_equal(due_keys(c), 2);
	/* del takes its key away */
	assert_int_equal(cache_del(c, CACHE_KIND_OCSP, key, klen), 0);
	assert_int_equal(due_keys(c), 1);
	assert_string_equal(due_ids(c, CACHE_KIND_OCSP, NOW + 1000, &s), "2");
	assert_int_equal(cache_due_skipped(c), 0);
}

/* A reset store starts with an empty index and keeps it. */
static void
test_due_reset(void **state)
{
	struct store_fixture	*f = *state;
	struct seen		 s;
	char			 aside[400];

	assert_int_equal(put_at(f->c, CACHE_KIND_OCSP, 1, 100, NOW - 10, 0), 0);
	assert_int_equal(cache_reset(f->c, "test", aside, sizeof(aside)), 0);
	assert_int_equal(due_keys(f->c), 0);
	assert_string_equal(due_ids(f->c, CACHE_KIND_OCSP, NOW, &s), "");
	assert_int_equal(put_at(f->c, CACHE_KIND_OCSP, 2, 100, NOW - 10, 0), 0);
	assert_string_equal(due_ids(f->c, CACHE_KIND_OCSP, NOW, &s), "2");
}

/* A store an older stapled wrote (no "due") gets it on a read-write open. */
static void
test_due_built_on_open(void **state)
{
	struct store_fixture	*f = *state;
	struct cache		*c;
	struct seen		 s;
	MDB_env			*env;
	MDB_txn			*txn;
	MDB_dbi			 dbi;
	char			 why[256];
	int			 i;

	assert_int_equal(cache_due_built(f->c), 0);	/* a new store */
	for (i = 1; i <= 20; i++)
		assert_int_equal(put_at(f->c, CACHE_KIND_OCSP, i, 100,
		    NOW - i * 10, i == 20 ? CACHE_F_NO_REFRESH : 0), 0);
	cache_close(f->c);
	f->c = NULL;
	raw_open(f->dir, &env, &txn);
	assert_int_equal(mdb_dbi_open(txn, "due", 0, &dbi), 0);
	assert_int_equal(mdb_drop(txn, dbi, 1), 0);
	raw_commit(env, txn);

	assert_int_equal(cache_check_walk(f->dir, why, sizeof(why)), 0);
	c = store_open_ok(f->dir, 0, 1);
	assert_int_equal(cache_due_built(c), -1);
	assert_int_equal(due(c, CACHE_KIND_OCSP, NOW, &s), -1);
	assert_non_null(strstr(cache_strerror(c), "no due index"));
	cache_close(c);

	c = store_open_ok(f->dir, 0, 0);
	assert_int_equal(cache_due_built(c), 19);
	assert_int_equal(due_keys(c), 19);
	assert_string_equal(due_ids(c, CACHE_KIND_OCSP, NOW, &s),
	    "19 18 17 16 15 14 13 12 11 10 9 8 7 6 5 4 3 2 1");
	cache_close(c);
	c = store_open_ok(f->dir, 0, 0);
	assert_int_equal(cache_due_built(c), -1);	/* built once */
	cache_close(c);
	assert_int_equal(cache_check_walk(f->dir, why, sizeof(why)), 0);
}

/* Stale index keys (entry gone, schedule moved) are skipped, then mended. */
static void
test_due_stale(void **state)
{
	struct store_fixture	*f = *state;
	struct seen		 s;
	MDB_env			*env;
	MDB_txn			*txn;
	MDB_dbi			 dbi;
	MDB_val			 k, v = { 0, NULL };
	uint8_t			 buf[9 + CACHE_KEY_MAX_BYTES];

	assert_int_equal(put_at(f->c, CACHE_KIND_OCSP, 1, 100, NOW - 10, 0), 0);
	assert_int_equal(put_at(f->c, CACHE_KIND_OCSP, 2, 100, NOW - 20, 0), 0);
	cache_close(f->c);
	f->c = NULL;
	/* As an older writer would leave it: entry 9 gone, entry 1 moved. */
	raw_open(f->dir, &env, &txn);
	assert_int_equal(mdb_dbi_open(txn, "due", 0, &dbi), 0);
	k = due_key(buf, CACHE_KIND_OCSP, NOW - 50, 9);
	assert_int_equal(mdb_put(txn, dbi, &k, &v, 0), 0);
	k = due_key(buf, CACHE_KIND_OCSP, NOW - 40, 1);
	assert_int_equal(mdb_put(txn, dbi, &k, &v, 0), 0);
	k = due_key(buf, CACHE_KIND_OCSP, NOW - 10, 1);
	assert_int_equal(mdb_del(txn, dbi, &k, NULL), 0);
	raw_commit(env, txn);

	f->c = store_open_ok(f->dir, 0, 0);
	assert_int_equal(due_keys(f->c), 3);
	assert_string_equal(due_ids(f->c, CACHE_KIND_OCSP, NOW, &s), "2");
	assert_int_equal(cache_due_skipped(f->c), 2);
	/* mended: the stale keys gone, entry 1 back at its own time */
	assert_int_equal(due_keys(f->c), 2);
	assert_string_equal(due_ids(f->c, CACHE_KIND_OCSP, NOW, &s), "2 1");
	assert_int_equal(s.at[1], NOW - 10);
	assert_int_equal(cache_due_skipped(f->c), 0);
}

#define T(f)	cmocka_unit_test_setup_teardown(f, store_setup_open, \
		    store_teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_due_order),
		T(test_due_follows_writes),
		T(test_due_reset),
		T(test_due_built_on_open),
		T(test_due_stale),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
