/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for cache/store.c against a real LMDB environment in a tmp dir. */
#include "config.h"

#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <lmdb.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "cache/daemon.h"
#include "cache/fault.h"
#include "cache/store.h"
#include "entry/kinds.h"

#include "store_fixture.h"

#define MIB		((size_t)1 << 20)
#define WALK_ENTRIES	1000
#define CRASH_ROUNDS	20
#define CHILD_MAX_S	60	/* a child_put waiting for its parent */

/* A response whose bytes depend on the key and a tag, to catch mix-ups. */
static void
fill(uint8_t *buf, size_t len, unsigned seed)
{
	size_t	i;

	for (i = 0; i < len; i++)
		buf[i] = (uint8_t)(seed * 31 + i * 7 + (i >> 8));
}

static int
check_fill(const uint8_t *buf, size_t len, unsigned seed)
{
	size_t	i;

	for (i = 0; i < len; i++)
		if (buf[i] != (uint8_t)(seed * 31 + i * 7 + (i >> 8)))
			return -1;
	return 0;
}

static int
put_n(struct cache *c, uint8_t kind, unsigned i, int64_t tu, size_t resplen)
{
	struct cache_meta	m;
	struct cache_body	b = { 0 };
	uint8_t			key[CACHE_KEY_MAX_BYTES], req[16], *resp;
	size_t			klen;
	int			rc;

	klen = store_key(key, i);
	store_meta(&m, kind, tu);
	if ((resp = malloc(resplen)) == NULL)
		return -1;
	fill(resp, resplen, i);
	fill(req, sizeof(req), i + 1);
	b.request = req;
	b.request_len = sizeof(req);
	b.response = resp;
	b.response_len = resplen;
	rc = cache_put(c, key, klen, &m, &b);
	free(resp);
	return rc;
}

/* 1 if entry i is there with the bytes put_n wrote, 0 absent, -1 wrong. */
static int
get_n(struct cache *c, uint8_t kind, unsigned i, size_t resplen)
{
	struct cache_meta	m;
	struct cache_body	b = { 0 };
	uint8_t			key[CACHE_KEY_MAX_BYTES];
	size_t			klen;
	int			rc;

	klen = store_key(key, i);
	if ((rc = cache_get(c, kind, key, klen, &m, &b)) != 1)
		return rc;
	if (m.kind != kind || b.response_len != resplen ||
	    check_fill(b.response, resplen, i) == -1 ||
	    b.request_len != 16 || check_fill(b.request, 16, i + 1) == -1)
		return -1;
	return 1;
}

static void
test_put_get(void **state)
{
	struct store_fixture		*f = *state;
	struct cache		*c;
	struct cache_meta	 m, g;
	struct cache_body	 b = { 0 }, gb;
	static const uint8_t	 key[] = { 0x30, 0x00, 0xff, 0x01 };
	static const uint8_t	 resp[] = "vendor-signed bytes";
	const uint8_t		*first;

	c = store_open_ok(f->dir, 0, 0);
	store_meta(&m, CACHE_KIND_OCSP, 1000);
	m.status = 1;
	m.next_refresh_at = 1500;
	b.request = NULL;
	b.request_len = 0;
	b.response = resp;
	b.response_len = sizeof(resp);
	assert_int_equal(cache_put(c, key, sizeof(key), &m, &b),
	    CACHE_PUT_STORED);

	assert_int_equal(cache_get(c, CACHE_KIND_OCSP, key, sizeof(key), &g,
	    &gb), 1);
	assert_memory_equal(&g, &m, sizeof(m));
	assert_int_equal(gb.request_len, 0);
	assert_null(gb.request);
	assert_int_equal(gb.response_len, sizeof(resp));
	assert_memory_equal(gb.response, resp, sizeof(resp));
	first = gb.response;

	/* Hits on an unchanged store land on the same map bytes. */
	assert_int_equal(cache_get(c, CACHE_KIND_OCSP, key, sizeof(key), NULL,
	    &gb), 1);
	assert_ptr_equal(gb.response, first);

	memset(&g, 0, sizeof(g));
	assert_int_equal(cache_get_meta(c, CACHE_KIND_OCSP, key, sizeof(key),
	    &g), 1);
	assert_int_equal(g.next_refresh_at, 1500);

	/* The kind is part of the key. */
	assert_int_equal(cache_get(c, CACHE_KIND_RIM, key, sizeof(key), &g,
	    &gb), 0);
	assert_int_equal(cache_get(c, CACHE_KIND_OCSP, key, 3, &g, &gb), 0);

	/* Keys that cannot be stored are errors, not misses. */
	assert_int_equal(cache_get(c, CACHE_KIND_OCSP, key, 0, &g, NULL), -1);
	assert_int_equal(cache_get(c, 0, key, sizeof(key), &g, NULL), -1);
	assert_int_equal(cache_get(c, CACHE_KIND_SLOTS + 1, key, sizeof(key),
	    &g, NULL), -1);
	{
		uint8_t	big[CACHE_KEY_MAX_BYTES + 1];

		memset(big, 'k', sizeof(big));
		assert_int_equal(cache_put(c, big, CACHE_KEY_MAX_BYTES, &m, &b),
		    CACHE_PUT_STORED);
		assert_int_equal(cache_put(c, big, sizeof(big), &m, &b), -1);
		assert_non_null(strstr(cache_strerror(c), "key length"));
	}
	m.kind = 0;
	assert_int_equal(cache_put(c, key, sizeof(key), &m, &b), -1);
	cache_close(c);
	cache_close(NULL);
}

static void
test_kept_when_older(void **state)
{
	struct store_fixture		*f = *state;
	struct cache		*c;
	struct cache_meta	 m, g;
	struct cache_body	 b = { 0 }, gb;
	static const uint8_t	 key[] = "serial-1";

	c = store_open_ok(f->dir, 0, 0);
	store_meta(&m, CACHE_KIND_OCSP, 2000);
	b.request = NULL;
	b.request_len = 0;
	b.response = (const uint8_t *)"new";
	b.response_len = 3;
	assert_int_equal(cache_put(c, key, sizeof(key), &m, &b),
	    CACHE_PUT_STORED);

	store_meta(&m, CACHE_KIND_OCSP, 1999);
	b.response = (const uint8_t *)"old!";
	b.response_len = 4;
	assert_int_equal(cache_put(c, key, sizeof(key), &m, &b),
	    CACHE_PUT_KEPT);
	assert_int_equal(cache_get(c, CACHE_KIND_OCSP, key, sizeof(key), &g,
	    &gb), 1);
	assert_int_equal(g.this_update, 2000);
	assert_int_equal(gb.response_len, 3);
	assert_memory_equal(gb.response, "new", 3);

	/* Same this_update replaces (a re-fetch with a new producedAt). */
	store_meta(&m, CACHE_KIND_OCSP, 2000);
	m.produced_at = 2500;
	b.response = (const uint8_t *)"same";
	assert_int_equal(cache_put(c, key, sizeof(key), &m, &b),
	    CACHE_PUT_STORED);
	assert_int_equal(cache_get(c, CACHE_KIND_OCSP, key, sizeof(key), &g,
	    &gb), 1);
	assert_int_equal(g.produced_at, 2500);
	assert_memory_equal(gb.response, "same", 4);

	store_meta(&m, CACHE_KIND_OCSP, 3000);
	assert_int_equal(cache_put(c, key, sizeof(key), &m, &b),
	    CACHE_PUT_STORED);
	assert_int_equal(cache_get_meta(c, CACHE_KIND_OCSP, key, sizeof(key),
	    &g), 1);
	assert_int_equal(g.this_update, 3000);
	cache_close(c);
}

static void
test_counters_carried(void **state)
{
	struct store_fixture		*f = *state;
	struct cache		*c;
	struct cache_meta	 m, g;
	struct cache_touch	 t;

	c = store_open_ok(f->dir, 0, 0);
	assert_int_equal(put_n(c, CACHE_KIND_KDS, 1, 100, 50),
	    CACHE_PUT_STORED);
	memset(&t, 0, sizeof(t));
	t.kind = CACHE_KIND_KDS;
	t.klen = store_key(t.key, 1);
	t.served = 5;
	t.last_served_at = 150;
	assert_int_equal(cache_touch(c, &t, 1), 0);

	/* A refresh knows nothing of the counters: they survive it. */
	assert_int_equal(put_n(c, CACHE_KIND_KDS, 1, 200, 60),
	    CACHE_PUT_STORED);
	assert_int_equal(cache_get_meta(c, CACHE_KIND_KDS, t.key, t.klen, &g),
	    1);
	assert_int_equal(g.this_update, 200);
	assert_int_equal(g.served_count, 5);
	assert_int_equal(g.last_served_at, 150);
	assert_int_equal(get_n(c, CACHE_KIND_KDS, 1, 60), 1);

	/* A caller's copy that is ahead keeps its values (max, not sum). */
	store_meta(&m, CACHE_KIND_KDS, 300);
	m.served_count = 7;
	m.last_served_at = 120;
	{
		struct cache_body	b = { NULL, 0, (const uint8_t *)"x",
			    1, NULL, 0 };

		assert_int_equal(cache_put(c, t.key, t.klen, &m, &b),
		    CACHE_PUT_STORED);
	}
	assert_int_equal(cache_get_meta(c, CACHE_KIND_KDS, t.key, t.klen, &g),
	    1);
	assert_int_equal(g.served_count, 7);
	assert_int_equal(g.last_served_at, 150);
	cache_close(c);
}

/* CACHE_F_IMPORTED: set by a put, kept by later puts and put_meta, cleared by a hit. */
static void
test_imported_flag(void **state)
{
	struct store_fixture		*f = *state;
	struct cache		*c;
	struct cache_meta	 m, g;
	struct cache_touch	 t;
	struct cache_body	 b = { NULL, 0, (const uint8_t *)"x", 1, NULL, 0 };

	c = store_open_ok(f->dir, 0, 0);
	memset(&t, 0, sizeof(t));
	t.kind = CACHE_KIND_OCSP;
	t.klen = store_key(t.key, 1);
	store_meta(&m, CACHE_KIND_OCSP, 100);
	m.flags = CACHE_F_IMPORTED;
	assert_int_equal(cache_put(c, t.key, t.klen, &m, &b), CACHE_PUT_STORED);
	/* a refresh's put does not know of it: kept */
	store_meta(&m, CACHE_KIND_OCSP, 200);
	assert_int_equal(cache_put(c, t.key, t.klen, &m, &b), CACHE_PUT_STORED);
	assert_int_equal(cache_get_meta(c, CACHE_KIND_OCSP, t.key, t.klen, &g), 1);
	assert_int_equal(g.flags & CACHE_F_IMPORTED, CACHE_F_IMPORTED);
	/* a schedule written from a copy without it: kept */
	g.flags = 0;
	g.next_refresh_at = 500;
	assert_int_equal(cache_put_meta(c, t.key, t.klen, &g), 0);
	assert_int_equal(cache_get_meta(c, CACHE_KIND_OCSP, t.key, t.klen, &g), 1);
	assert_int_equal(g.flags & CACHE_F_IMPORTED, CACHE_F_IMPORTED);
	assert_int_equal(g.next_refresh_at, 500);
	/* a touch that served nothing leaves it; a hit clears it */
	assert_int_equal(cache_touch(c, &t, 1), 0);
	assert_int_equal(cache_get_meta(c, CACHE_KIND_OCSP, t.key, t.klen, &g), 1);
	assert_int_equal(g.flags & CACHE_F_IMPORTED, CACHE_F_IMPORTED);
	t.served = 1;
	t.last_served_at = 300;
	assert_int_equal(cache_touch(c, &t, 1), 0);
	assert_int_equal(cache_get_meta(c, CACHE_KIND_OCSP, t.key, t.klen, &g), 1);
	assert_int_equal(g.flags & CACHE_F_IMPORTED, 0);
	/* a stale copy that still has it does not bring it back */
	g.flags = CACHE_F_IMPORTED | CACHE_F_NO_REFRESH;
	assert_int_equal(cache_put_meta(c, t.key, t.klen, &g), 0);
	assert_int_equal(cache_get_meta(c, CACHE_KIND_OCSP, t.key, t.klen, &g), 1);
	assert_int_equal(g.flags, CACHE_F_NO_REFRESH);
	cache_close(c);
}

static void
test_touch_batch(void **state)
{
	struct store_fixture		*f = *state;
	struct cache		*c;
	struct cache_meta	 g;
	struct cache_touch	 t[5];
	unsigned		 i;

	c = store_open_ok(f->dir, 0, 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(put_n(c, CACHE_KIND_OCSP, i, 100, 10),
		    CACHE_PUT_STORED);
	memset(t, 0, sizeof(t));
	for (i = 0; i < 3; i++) {
		t[i].kind = CACHE_KIND_OCSP;
		t[i].klen = store_key(t[i].key, i);
		t[i].served = i + 1;
		t[i].last_served_at = 1000 + i;
	}
	t[3].kind = CACHE_KIND_OCSP;		/* not stored: skipped */
	t[3].klen = store_key(t[3].key, 99);
	t[3].served = 1;
	t[4].kind = 0;				/* invalid: skipped */
	t[4].klen = store_key(t[4].key, 0);
	t[4].served = 1000;
	assert_int_equal(cache_touch(c, t, 5), 0);
	t[0].last_served_at = 10;	/* older: must not move it back */
	assert_int_equal(cache_touch(c, t, 5), 0);
	assert_int_equal(cache_touch(c, t, 0), 0);

	for (i = 0; i < 3; i++) {
		assert_int_equal(cache_get_meta(c, CACHE_KIND_OCSP, t[i].key,
		    t[i].klen, &g), 1);
		assert_int_equal(g.served_count, 2 * (i + 1));
		assert_int_equal(g.last_served_at, 1000 + i);
	}
	assert_int_equal(cache_get_meta(c, CACHE_KIND_OCSP, t[3].key,
	    t[3].klen, &g), 0);
	cache_close(c);
}

struct walk_state {
	uint8_t		last[1 + CACHE_KEY_MAX_BYTES];
	size_t		lastlen;
	int		seen[WALK_ENTRIES];
	long		calls;
	int		out_of_order;
	int		stop_at;	/* >0: return 1 on this call */
	struct cache	*c;		/* for the re-entry check */
	int		reentry_rc;
};

/* LMDB's default key order: memcmp, then the shorter first. */
static int
keycmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	int	r;

	if ((r = memcmp(a, b, alen < blen ? alen : blen)) != 0)
		return r;
	return alen < blen ? -1 : alen > blen;
}

static int
walk_cb(enum cache_kind kind, const uint8_t *key, size_t klen,
    const struct cache_meta *m, void *arg)
{
	struct walk_state	*w = arg;
	uint8_t			 full[1 + CACHE_KEY_MAX_BYTES + 1];
	unsigned		 i;

	full[0] = kind;
	memcpy(full + 1, key, klen);
	full[klen + 1] = '\0';
	if (w->lastlen != 0 && keycmp(w->last, w->lastlen, full, klen + 1) >= 0)
		w->out_of_order++;
	memcpy(w->last, full, klen + 1);
	w->lastlen = klen + 1;
	if (sscanf((const char *)full + 1, "key-%06u", &i) == 1 &&
	    i < WALK_ENTRIES && m->kind == kind && m->this_update == 100 + i)
		w->seen[i]++;
	w->calls++;
	if (w->c != NULL) {
		struct cache_meta	g;

		w->reentry_rc = cache_get_meta(w->c, kind, key, klen, &g);
	}
	return w->stop_at > 0 && w->calls == w->stop_at;
}

static uint8_t
walk_kind(unsigned i)
{
	return 1 + i % (CACHE_KIND_MAX - 1);
}

static void
test_walk_chunks(void **state)
{
	struct store_fixture		*f = *state;
	struct cache		*c;
	struct walk_state	*w;
	uint8_t			 k;
	long			 n, per[CACHE_KIND_MAX] = { 0 };
	unsigned		 i;

	assert_non_null(w = calloc(1, sizeof(*w)));
	c = store_open_ok(f->dir, 0, 0);
	for (i = 0; i < WALK_ENTRIES; i++) {
		assert_int_equal(put_n(c, walk_kind(i), i, 100 + i, 8),
		    CACHE_PUT_STORED);
		per[walk_kind(i)]++;
	}

	/* One kind at a time, in chunks of 37, resuming after the last key. */
	for (k = 1; k < CACHE_KIND_MAX; k++) {
		long	total = 0;

		w->lastlen = 0;
		do {
			n = cache_walk(c, k, w->lastlen ? w->last + 1 : NULL,
			    w->lastlen ? w->lastlen - 1 : 0, 37, walk_cb, w);
			assert_true(n >= 0);
			assert_true(n <= 37);
			total += n;
		} while (n == 37);
		assert_int_equal(total, per[k]);
	}
	for (i = 0; i < WALK_ENTRIES; i++)
		assert_int_equal(w->seen[i], 1);
	assert_int_equal(w->out_of_order, 0);

	/* All kinds: `after` then carries the kind byte. */
	memset(w, 0, sizeof(*w));
	do {
		n = cache_walk(c, 0, w->lastlen ? w->last : NULL, w->lastlen,
		    100, walk_cb, w);
		assert_true(n >= 0);
	} while (n == 100);
	assert_int_equal(w->calls, WALK_ENTRIES);
	for (i = 0; i < WALK_ENTRIES; i++)
		assert_int_equal(w->seen[i], 1);
	assert_int_equal(w->out_of_order, 0);
	assert_int_equal(cache_walk_skipped(c), 0);

	/* Unlimited, and a callback that stops early. */
	memset(w, 0, sizeof(*w));
	assert_int_equal(cache_walk(c, CACHE_KIND_OCSP, NULL, 0, 0, walk_cb, w),
	    per[CACHE_KIND_OCSP]);
	memset(w, 0, sizeof(*w));
	w->stop_at = 5;
	assert_int_equal(cache_walk(c, 0, NULL, 0, 0, walk_cb, w), 5);

	/* Resuming after a key that is not stored starts at the next one. */
	memset(w, 0, sizeof(*w));
	assert_int_equal(cache_walk(c, walk_kind(0),
	    (const uint8_t *)"key-000000a", 11, 1, walk_cb, w), 1);
	assert_memory_equal(w->last + 1, "key-000004", 10);

	/* The callback may not call into the handle; the walk goes on. */
	memset(w, 0, sizeof(*w));
	w->c = c;
	w->reentry_rc = 0;
	assert_int_equal(cache_walk(c, 0, NULL, 0, 3, walk_cb, w), 3);
	assert_int_equal(w->reentry_rc, -1);
	assert_non_null(strstr(cache_strerror(c), "walk callback"));
	assert_int_equal(get_n(c, walk_kind(0), 0, 8), 1);
	cache_close(c);
	free(w);
}

/* A record written by something else (or a future version) is skipped. */
static void
test_walk_skips_garbage(void **state)
{
	struct store_fixture		*f = *state;
	struct cache		*c;
	struct cache_stat	 st;
	struct cache_meta	 g;
	struct cache_damaged	 dm;
	struct walk_state	*w;
	MDB_env			*env;
	MDB_txn			*txn;
	MDB_dbi			 dbi;
	MDB_val			 k, v;
	uint8_t			 lk[16] = { CACHE_KIND_OCSP, 'b', 'a', 'd' };
	uint8_t			 junk[RECORD_META_BYTES] = {
				    RECORD_VERSION + 1 };

	assert_non_null(w = calloc(1, sizeof(*w)));
	c = store_open_ok(f->dir, 0, 0);
	assert_int_equal(put_n(c, CACHE_KIND_OCSP, 1, 101, 8),
	    CACHE_PUT_STORED);
	assert_int_equal(put_n(c, CACHE_KIND_OCSP, 2, 102, 8),
	    CACHE_PUT_STORED);
	cache_close(c);

	assert_int_equal(mdb_env_create(&env), 0);
	assert_int_equal(mdb_env_set_maxdbs(env, 8), 0);
	assert_int_equal(mdb_env_open(env, f->dir, 0, 0640), 0);
	assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
	assert_int_equal(mdb_dbi_open(txn, "meta", 0, &dbi), 0);
	k.mv_data = lk;
	k.mv_size = 4;
	v.mv_data = junk;
	v.mv_size = sizeof(junk);
	assert_int_equal(mdb_put(txn, dbi, &k, &v, 0), 0);
	assert_int_equal(mdb_txn_commit(txn), 0);
	mdb_env_close(env);

	c = store_open_ok(f->dir, 0, 0);
	assert_int_equal(cache_walk(c, CACHE_KIND_OCSP, NULL, 0, 0, walk_cb, w),
	    2);
	assert_int_equal(cache_walk_skipped(c), 1);
	assert_int_equal(w->seen[1] + w->seen[2], 2);
	assert_int_equal(cache_stat(c, &st), 0);
	assert_int_equal(st.entries[0], 1);
	assert_int_equal(st.entries[CACHE_KIND_OCSP], 2);
	/* Damage of that record alone: absent, noted once (by the walk). */
	assert_int_equal(cache_get_meta(c, CACHE_KIND_OCSP, lk + 1, 3, &g), 0);
	assert_int_equal(cache_damaged_take(c, &dm, 1), 1);
	assert_int_equal(dm.found, CACHE_FOUND_WALK);
	assert_string_equal(dm.why, "unknown version");
	cache_close(c);
	free(w);
}

static void
test_put_meta(void **state)
{
	struct store_fixture		*f = *state;
	struct cache		*c;
	struct cache_meta	 m, g, stale;
	struct cache_touch	 t;
	uint8_t			 key[CACHE_KEY_MAX_BYTES];
	size_t			 klen;

	c = store_open_ok(f->dir, 0, 0);
	klen = store_key(key, 7);
	store_meta(&m, CACHE_KIND_RIM, 100);
	assert_int_equal(cache_put_meta(c, key, klen, &m), -1);
	assert_non_null(strstr(cache_strerror(c), "not found"));

	assert_int_equal(put_n(c, CACHE_KIND_RIM, 7, 100, 20),
	    CACHE_PUT_STORED);
	assert_int_equal(cache_get_meta(c, CACHE_KIND_RIM, key, klen, &m), 1);
	stale = m;
	m.refresh_failures = 3;
	m.next_refresh_at = 4242;
	assert_int_equal(cache_put_meta(c, key, klen, &m), 0);
	assert_int_equal(cache_get_meta(c, CACHE_KIND_RIM, key, klen, &g), 1);
	assert_memory_equal(&g, &m, sizeof(m));
	assert_int_equal(get_n(c, CACHE_KIND_RIM, 7, 20), 1);

	/* Served while the caller held its copy: counters are not lost. */
	memset(&t, 0, sizeof(t));
	t.kind = CACHE_KIND_RIM;
	memcpy(t.key, key, klen);
	t.klen = klen;
	t.served = 9;
	t.last_served_at = 500;
	assert_int_equal(cache_touch(c, &t, 1), 0);
	m.next_refresh_at = 5000;
	assert_int_equal(cache_put_meta(c, key, klen, &m), 0);
	assert_int_equal(cache_get_meta(c, CACHE_KIND_RIM, key, klen, &g), 1);
	assert_int_equal(g.served_count, 9);
	assert_int_equal(g.last_served_at, 500);
	assert_int_equal(g.next_refresh_at, 5000);

	/* Refreshed meanwhile: the stale copy sets the schedule only. */
	assert_int_equal(put_n(c, CACHE_KIND_RIM, 7, 900, 20),
	    CACHE_PUT_STORED);
	stale.refresh_failures = 1;
	stale.next_refresh_at = 6000;
	assert_int_equal(cache_put_meta(c, key, klen, &stale), 0);
	assert_int_equal(cache_get_meta(c, CACHE_KIND_RIM, key, klen, &g), 1);
	assert_int_equal(g.this_update, 900);
	assert_int_equal(g.next_update, 900 + 3600);
	assert_int_equal(g.refresh_failures, 1);
	assert_int_equal(g.next_refresh_at, 6000);
	assert_int_equal(g.served_count, 9);
	cache_close(c);
}

static void
test_del(void **state)
{
	struct store_fixture		*f = *state;
	struct cache		*c;
	struct cache_stat	 st;
	uint8_t			 key[CACHE_KEY_MAX_BYTES];
	size_t			 klen;

	c = store_open_ok(f->dir, 0, 0);
	assert_int_equal(put_n(c, CACHE_KIND_PCCS, 1, 100, 10),
	    CACHE_PUT_STORED);
	assert_int_equal(put_n(c, CACHE_KIND_PCCS, 2, 100, 10),
	    CACHE_PUT_STORED);
	klen = store_key(key, 1);
	assert_int_equal(cache_del(c, CACHE_KIND_PCCS, key, klen), 0);
	assert_int_equal(get_n(c, CACHE_KIND_PCCS, 1, 10), 0);
	assert_int_equal(get_n(c, CACHE_KIND_PCCS, 2, 10), 1);
	assert_int_equal(cache_del(c, CACHE_KIND_PCCS, key, klen), 0);
	assert_int_equal(cache_del(c, CACHE_KIND_OCSP, key, klen), 0);
	assert_int_equal(cache_del(c, 0, key, klen), -1);
	assert_int_equal(cache_stat(c, &st), 0);
	assert_int_equal(st.entries[CACHE_KIND_PCCS], 1);
	/* A deleted entry may come back, even with an older this_update. */
	assert_int_equal(put_n(c, CACHE_KIND_PCCS, 1, 50, 10),
	    CACHE_PUT_STORED);
	cache_close(c);
}

/* The room report: the map, the high-water mark, the free list's pages. */
static void
test_room(void **state)
{
	struct store_fixture	*f = *state;
	struct cache		*c;
	struct cache_room	 r0, r1, r2;
	struct cache_stat	 st;
	uint8_t			 key[CACHE_KEY_MAX_BYTES];
	unsigned		 i;

	c = store_open_ok(f->dir, 8 * MIB, 0);
	assert_int_equal(cache_room(c, &r0), 0);
	assert_int_equal(r0.map_bytes, 8 * MIB);
	assert_true(r0.used_bytes > 0 && r0.used_bytes < MIB);
	/* 40 bodies of 16 KiB: five overflow pages each, at least. */
	for (i = 0; i < 40; i++)
		assert_int_equal(put_n(c, CACHE_KIND_OCSP, i, 100, 16384),
		    CACHE_PUT_STORED);
	assert_int_equal(cache_room(c, &r1), 0);
	assert_true(r1.used_bytes >= r0.used_bytes + 40 * 4 * 4096);
	for (i = 0; i < 40; i++)
		assert_int_equal(cache_del(c, CACHE_KIND_OCSP, key,
		    store_key(key, i)), 0);
	assert_int_equal(cache_room(c, &r2), 0);
	/* Deleting frees those pages; the file keeps its high-water mark. */
	assert_true(r2.used_bytes >= r1.used_bytes);
	assert_true(r2.free_bytes >= 40 * 4 * 4096);
	assert_true(r2.free_bytes <= r2.used_bytes);
	/* staplectl status reads the same figures through cache_stat. */
	assert_int_equal(cache_stat(c, &st), 0);
	assert_int_equal(st.map_bytes, r2.map_bytes);
	assert_int_equal(st.used_bytes, r2.used_bytes);
	assert_int_equal(st.free_bytes, r2.free_bytes);
	cache_close(c);
}

static void
test_aux(void **state)
{
	struct store_fixture	*f = *state;
	struct cache	*c;
	uint8_t		*v;
	size_t		 len;

	c = store_open_ok(f->dir, 0, 0);
	assert_int_equal(cache_aux_get(c, "upstream:nvidia", &v, &len), 0);
	assert_null(v);
	assert_int_equal(cache_aux_put(c, "upstream:nvidia",
	    (const uint8_t *)"healthy", 7), 0);
	assert_int_equal(cache_aux_put(c, "empty", NULL, 0), 0);
	assert_int_equal(cache_aux_get(c, "upstream:nvidia", &v, &len), 1);
	assert_int_equal(len, 7);
	assert_memory_equal(v, "healthy", 7);
	free(v);
	assert_int_equal(cache_aux_put(c, "upstream:nvidia",
	    (const uint8_t *)"down", 4), 0);
	assert_int_equal(cache_aux_get(c, "upstream:nvidia", &v, &len), 1);
	assert_int_equal(len, 4);
	assert_memory_equal(v, "down", 4);
	free(v);
	assert_int_equal(cache_aux_get(c, "empty", &v, &len), 1);
	assert_int_equal(len, 0);
	free(v);
	assert_int_equal(cache_aux_put(c, "", (const uint8_t *)"x", 1), -1);
	/* Aux records are not entries. */
	{
		struct cache_stat	st;
		size_t			k, n = 0;

		assert_int_equal(cache_stat(c, &st), 0);
		for (k = 0; k < CACHE_KIND_MAX; k++)
			n += st.entries[k];
		assert_int_equal(n, 0);
	}
	cache_close(c);
}

static void
test_reopen_persists(void **state)
{
	struct store_fixture		*f = *state;
	struct cache		*c;
	struct cache_stat	 st;
	uint8_t			*v;
	size_t			 len;
	unsigned		 i;

	c = store_open_ok(f->dir, 0, 0);
	for (i = 0; i < 50; i++)
		assert_int_equal(put_n(c, CACHE_KIND_OCSP, i, 100, 300),
		    CACHE_PUT_STORED);
	assert_int_equal(cache_aux_put(c, "pool", (const uint8_t *)"p", 1), 0);
	cache_close(c);

	c = store_open_ok(f->dir, 0, 0);
	for (i = 0; i < 50; i++)
		assert_int_equal(get_n(c, CACHE_KIND_OCSP, i, 300), 1);
	assert_int_equal(cache_aux_get(c, "pool", &v, &len), 1);
	free(v);
	assert_int_equal(cache_stat(c, &st), 0);
	assert_int_equal(st.entries[CACHE_KIND_OCSP], 50);
	assert_int_equal(st.map_bytes, CACHE_DEFAULT_MAP_BYTES);
	assert_true(st.used_bytes > 50 * 300);
	assert_true(st.used_bytes < st.map_bytes);
	cache_close(c);
}

/* The meta page left to the next sync: nothing lost across close and reopen. */
static void
test_lazy_meta(void **state)
{
	struct store_fixture	*f = *state;
	struct cache		*c;
	unsigned		 i;

	c = store_open_ok(f->dir, 0, 0);
	assert_int_equal(cache_set_lazy_meta(c, 1), 0);
	for (i = 0; i < 50; i++)
		assert_int_equal(put_n(c, CACHE_KIND_OCSP, i, 100, 300),
		    CACHE_PUT_STORED);
	cache_close(c);
	c = store_open_ok(f->dir, 0, 1);
	for (i = 0; i < 50; i++)
		assert_int_equal(get_n(c, CACHE_KIND_OCSP, i, 300), 1);
	/* a read-only handle writes nothing: there is nothing to sync */
	assert_int_equal(cache_set_lazy_meta(c, 1), -1);
	cache_close(c);
	assert_int_equal(cache_set_lazy_meta(NULL, 1), -1);
}

/* KiB of this process's resident pages of DIR/data.mdb (smaps), or -1. */
static long
map_rss_kib(const char *dir)
{
	char	 path[PATH_MAX], line[PATH_MAX + 128], *p;
	long	 kib = -1, v;
	int	 in = 0;
	FILE	*fp;

	if (realpath(dir, path) == NULL ||
	    strlen(path) + sizeof("/data.mdb") > sizeof(path))
		return -1;
	strcat(path, "/data.mdb");
	if ((fp = fopen("/proc/self/smaps", "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), fp) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		if (strchr(line, '-') == line + strspn(line, "0123456789abcdef"))
			in = (p = strchr(line, '/')) != NULL &&
			    strcmp(p, path) == 0;	/* a mapping's first line */
		else if (in && sscanf(line, "Rss: %ld kB", &v) == 1)
			kib = (kib < 0 ? 0 : kib) + v;
	}
	fclose(fp);
	return kib;
}

/*
 * The release in steps: each step covers `max` bytes from where the last
 * ended, the last returns 0, and what the reads mapped is gone after.
 */
static void
test_release_steps(void **state)
{
	struct store_fixture	*f = *state;
	struct cache		*c;
	struct cache_stat	 st;
	size_t			 at, steps = 0, step = 64 * 1024;
	unsigned		 i;

	c = store_open_ok(f->dir, 0, 0);
	for (i = 0; i < 200; i++)
		assert_int_equal(put_n(c, CACHE_KIND_OCSP, i, 100, 6000),
		    CACHE_PUT_STORED);
	for (i = 0; i < 200; i++)
		assert_int_equal(get_n(c, CACHE_KIND_OCSP, i, 6000), 1);
	assert_true(map_rss_kib(f->dir) > 1000);
	assert_int_equal(cache_stat(c, &st), 0);

	at = 0;
	do {
		size_t next = cache_release_pages_step(c, at, step);

		assert_true(next == 0 || next == at + step);
		at = next;
		steps++;
	} while (at != 0 && steps < 100000);
	/* the pages the store has used, in `step`s: not the whole map */
	assert_int_equal(steps, (st.used_bytes + step - 1) / step);
	assert_int_equal(map_rss_kib(f->dir), 0);

	/* past the end: nothing to do; reads map again, one call lets go */
	assert_int_equal(cache_release_pages_step(c, st.used_bytes * 2,
	    step), 0);
	for (i = 0; i < 200; i++)
		assert_int_equal(get_n(c, CACHE_KIND_OCSP, i, 6000), 1);
	assert_true(map_rss_kib(f->dir) > 1000);
	cache_release_pages(c);
	assert_int_equal(map_rss_kib(f->dir), 0);
	cache_close(c);
}

/* Another process writes; a read-only handle opened before sees it all. */
static void
test_readonly_cross_process(void **state)
{
	struct store_fixture		*f = *state;
	struct cache		*c, *ro;
	struct cache_stat	 st;
	char			 err[256];
	pid_t			 pid;
	int			 status;
	unsigned		 i;

	/* Read-only open creates nothing. */
	assert_null(cache_open(f->dir, 0, 1, err, sizeof(err)));
	assert_non_null(strstr(err, f->dir));

	c = store_open_ok(f->dir, 1 * MIB, 0);
	assert_int_equal(put_n(c, CACHE_KIND_OCSP, 0, 100, 100),
	    CACHE_PUT_STORED);
	cache_close(c);

	ro = store_open_ok(f->dir, 1 * MIB, 1);
	assert_int_equal(get_n(ro, CACHE_KIND_OCSP, 0, 100), 1);
	assert_int_equal(put_n(ro, CACHE_KIND_OCSP, 1, 100, 100), -1);
	assert_non_null(strstr(cache_strerror(ro), "read-only"));
	assert_int_equal(cache_aux_put(ro, "x", (const uint8_t *)"x", 1), -1);

	/*
	 * The child must not touch the parent's environment (LMDB forbids
	 * it); it opens its own with a 16 MiB map and writes 8 MiB, so the
	 * read-only handle must also adopt the grown map.
	 */
	if ((pid = fork()) == 0) {
		struct cache	*w;

		w = cache_open(f->dir, 16 * MIB, 0, err, sizeof(err));
		if (w == NULL)
			_exit(2);
		for (i = 1; i <= 40; i++)
			if (put_n(w, CACHE_KIND_OCSP, i, 100, 200 * 1024) !=
			    CACHE_PUT_STORED)
				_exit(3);
		cache_close(w);
		_exit(0);
	}
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);

	for (i = 1; i <= 40; i++)
		assert_int_equal(get_n(ro, CACHE_KIND_OCSP, i, 200 * 1024), 1);
	assert_int_equal(get_n(ro, CACHE_KIND_OCSP, 0, 100), 1);
	assert_int_equal(cache_stat(ro, &st), 0);
	assert_int_equal(st.entries[CACHE_KIND_OCSP], 41);
	assert_int_equal(st.map_bytes, 16 * MIB);
	cache_close(ro);
}

/*
 * A write handle whose map another process grew adopts the new size at
 * its next write (LMDB refuses the begin with MDB_MAP_RESIZED until it
 * does), and the write goes through.
 */
static void
test_write_adopts_grown_map(void **state)
{
	struct store_fixture	*f = *state;
	struct cache		*c;
	struct cache_stat	 st;
	char			 err[256];
	pid_t			 pid;
	int			 status;
	unsigned		 i;

	c = store_open_ok(f->dir, 1 * MIB, 0);
	assert_int_equal(put_n(c, CACHE_KIND_OCSP, 0, 100, 100),
	    CACHE_PUT_STORED);
	/* The child opens an environment of its own, as in the test above. */
	if ((pid = fork()) == 0) {
		struct cache	*w;

		w = cache_open(f->dir, 16 * MIB, 0, err, sizeof(err));
		if (w == NULL)
			_exit(2);
		for (i = 1; i <= 40; i++)
			if (put_n(w, CACHE_KIND_OCSP, i, 100, 200 * 1024) !=
			    CACHE_PUT_STORED)
				_exit(3);
		cache_close(w);
		_exit(0);
	}
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);

	assert_int_equal(put_n(c, CACHE_KIND_OCSP, 41, 100, 100),
	    CACHE_PUT_STORED);
	assert_int_equal(cache_stat(c, &st), 0);
	assert_int_equal(st.map_bytes, 16 * MIB);
	assert_int_equal(st.entries[CACHE_KIND_OCSP], 42);
	cache_close(c);
}

static void
test_open_errors(void **state)
{
	struct store_fixture	*f = *state;
	char		 dir[400], err[512];
	int		 fd;

	snprintf(dir, sizeof(dir), "%s/missing/db", f->tmp);
	assert_null(cache_open(dir, 0, 0, err, sizeof(err)));
	assert_non_null(strstr(err, "cache: "));
	assert_non_null(strstr(err, dir));
	assert_non_null(strstr(err, strerror(ENOENT)));

	/* A file where the directory should be. */
	snprintf(dir, sizeof(dir), "%s/file", f->tmp);
	assert_true((fd = open(dir, O_CREAT | O_WRONLY, 0600)) >= 0);
	close(fd);
	assert_null(cache_open(dir, 0, 0, err, sizeof(err)));
	assert_non_null(strstr(err, dir));

	/* A directory with no environment, read-only. */
	snprintf(dir, sizeof(dir), "%s/emptydir", f->tmp);
	assert_int_equal(mkdir(dir, 0700), 0);
	assert_null(cache_open(dir, 0, 1, err, sizeof(err)));
	assert_non_null(strstr(err, dir));

	/* A NULL or short err buffer is fine. */
	assert_null(cache_open(dir, 0, 1, NULL, 0));
	assert_null(cache_open(dir, 0, 1, err, 4));
	assert_int_equal(strlen(err), 3);
}

/* Directory made with mode 0750, whatever umask allows of it. */
static void
test_open_creates_dir(void **state)
{
	struct store_fixture	*f = *state;
	struct cache	*c;
	struct stat	 sb;
	mode_t		 old;

	old = umask(0);
	c = store_open_ok(f->dir, 0, 0);
	umask(old);
	assert_int_equal(stat(f->dir, &sb), 0);
	assert_true(S_ISDIR(sb.st_mode));
	assert_int_equal(sb.st_mode & 07777, 0750);
	cache_close(c);
}

static void
test_map_full(void **state)
{
	struct store_fixture		*f = *state;
	struct cache		*c;
	unsigned		 i, n;
	int			 rc = 0;

	c = store_open_ok(f->dir, 1 * MIB, 0);
	for (n = 0; n < 1000; n++)
		if ((rc = put_n(c, CACHE_KIND_OCSP, n, 100, 16 * 1024)) != 0)
			break;
	assert_int_equal(rc, -1);
	assert_true(n > 10);
	assert_true(cache_map_full(c));
	assert_non_null(strstr(cache_strerror(c), "map full"));
	assert_non_null(strstr(cache_strerror(c), "needs about 2 MiB, "
	    "map_size_mb is 1"));
	assert_non_null(strstr(cache_strerror(c), "raise map_size_mb"));
	assert_int_equal(cache_cause(c), CACHE_CAUSE_MAP_FULL);
	assert_true(cache_cause_later(cache_cause(c)));
	/* Nothing of the failed put, everything before it. */
	assert_int_equal(get_n(c, CACHE_KIND_OCSP, n, 16 * 1024), 0);
	for (i = 0; i < n; i++)
		assert_int_equal(get_n(c, CACHE_KIND_OCSP, i, 16 * 1024), 1);
	/*
	 * Still full, still no crash; deleting makes room again (LMDB reuses
	 * a freed page only once a later transaction has committed, hence
	 * several deletes).
	 */
	assert_int_equal(put_n(c, CACHE_KIND_OCSP, n, 100, 16 * 1024), -1);
	for (i = 0; i < 4; i++) {
		uint8_t	key[CACHE_KEY_MAX_BYTES];

		assert_int_equal(cache_del(c, CACHE_KIND_OCSP, key,
		    store_key(key, i)), 0);
	}
	assert_int_equal(put_n(c, CACHE_KIND_OCSP, n, 100, 16 * 1024), 0);
	assert_false(cache_map_full(c));
	cache_close(c);

	c = store_open_ok(f->dir, 1 * MIB, 0);
	for (i = 4; i <= n; i++)
		assert_int_equal(get_n(c, CACHE_KIND_OCSP, i, 16 * 1024), 1);
	cache_close(c);
}

/* An environment made with a bigger map keeps it when opened with less. */
static void
test_map_honoured(void **state)
{
	struct store_fixture		*f = *state;
	struct cache		*c;
	struct cache_stat	 st;
	unsigned		 i;

	c = store_open_ok(f->dir, 8 * MIB, 0);
	for (i = 0; i < 20; i++)
		assert_int_equal(put_n(c, CACHE_KIND_OCSP, i, 100, 100 * 1024),
		    CACHE_PUT_STORED);
	cache_close(c);

	c = store_open_ok(f->dir, 1 * MIB, 0);
	assert_int_equal(cache_stat(c, &st), 0);
	assert_int_equal(st.map_bytes, 8 * MIB);
	assert_true(st.used_bytes > 2 * MIB);
	assert_int_equal(put_n(c, CACHE_KIND_OCSP, 20, 100, 100 * 1024),
	    CACHE_PUT_STORED);
	cache_close(c);

	/* Asking for more than is on disk grows it. */
	c = store_open_ok(f->dir, 32 * MIB, 0);
	assert_int_equal(cache_stat(c, &st), 0);
	assert_int_equal(st.map_bytes, 32 * MIB);
	cache_close(c);
}

/* The child: put until killed, reporting each key after its put returned. */
static void
crash_child(const char *dir, unsigned round, int fd)
{
	struct cache	*c;
	char		 err[256];
	unsigned	 i, id;

	if ((c = cache_open(dir, 64 * MIB, 0, err, sizeof(err))) == NULL)
		_exit(2);
	/* Every other round as the daemon writes: the meta page synced later. */
	if (cache_set_lazy_meta(c, round % 2) != 0)
		_exit(5);
	for (i = 0; i < 100000; i++) {
		id = round * 100000 + i;
		if (put_n(c, walk_kind(id), id, 100, 64 + id % 3000) !=
		    CACHE_PUT_STORED)
			_exit(3);
		if (write(fd, &id, sizeof(id)) != sizeof(id))
			_exit(4);
	}
	_exit(0);
}

static void
test_crash_safety(void **state)
{
	struct store_fixture	*f = *state;
	struct cache	*c;
	unsigned	 round, id, last, seed, total = 0;
	ssize_t		 r;
	pid_t		 pid;
	int		 p[2], status, found;

	seed = (unsigned)time(NULL) ^ (unsigned)getpid();
	srandom(seed);
	print_message("crash safety: seed %u\n", seed);

	for (round = 0; round < CRASH_ROUNDS; round++) {
		assert_int_equal(pipe(p), 0);
		if ((pid = fork()) == 0) {
			close(p[0]);
			crash_child(f->dir, round, p[1]);
		}
		assert_true(pid > 0);
		close(p[1]);
		/* Kill it as it writes: after the first put, at random. */
		r = read(p[0], &id, sizeof(id));
		assert_int_equal(r, sizeof(id));
		usleep(random() % 30000);
		assert_int_equal(kill(pid, SIGKILL), 0);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFSIGNALED(status));

		c = store_open_ok(f->dir, 64 * MIB, 0);
		last = id;
		do {
			if (get_n(c, walk_kind(id), id, 64 + id % 3000) != 1)
				fail_msg("seed %u round %u: key %u reported "
				    "but not stored", seed, round, id);
			last = id;
			total++;
		} while ((r = read(p[0], &id, sizeof(id))) == sizeof(id));
		assert_int_equal(r, 0);
		close(p[0]);
		/* The put in flight is either all there or not at all. */
		id = last + 1;
		found = get_n(c, walk_kind(id), id, 64 + id % 3000);
		assert_true(found == 0 || found == 1);
		/* The killed writer's lock and reader slot are recovered. */
		assert_int_equal(put_n(c, CACHE_KIND_OCSP, 9999999, 100, 10),
		    CACHE_PUT_STORED);
		cache_close(c);
	}
	print_message("crash safety: %u committed puts checked over %d kills\n",
	    total, CRASH_ROUNDS);
}

/* ---- damage ------------------------------------------------------------ */

#define DAMAGE_ENTRIES	2000
#define LMDB_PSIZE	4096	/* the page size of LMDB on these systems */

/* A closed store of DAMAGE_ENTRIES entries; its data.mdb path into path. */
static void
damage_fill(struct store_fixture *f, char *path, size_t len)
{
	struct cache	*c = store_open_ok(f->dir, 0, 0);
	unsigned	 i;

	for (i = 0; i < DAMAGE_ENTRIES; i++)
		assert_int_equal(put_n(c, CACHE_KIND_OCSP, i, 100, 700), 0);
	cache_close(c);
	snprintf(path, len, "%s/data.mdb", f->dir);
}

/* Overwrite `len` bytes at `off` of path with `byte`. */
static void
scribble(const char *path, off_t off, size_t len, int byte)
{
	uint8_t	buf[LMDB_PSIZE];
	int	fd;

	assert_true(len <= sizeof(buf));
	memset(buf, byte, len);
	assert_true((fd = open(path, O_WRONLY)) != -1);
	assert_int_equal(pwrite(fd, buf, len, off), (ssize_t)len);
	close(fd);
}

static void
test_check_sound(void **state)
{
	struct store_fixture	*f = *state;
	char		 path[400], why[CACHE_DAMAGE_NOTE_BYTES];

	/* No store yet: nothing to judge. */
	assert_int_equal(cache_check_file(f->tmp, why, sizeof(why)), 0);
	damage_fill(f, path, sizeof(path));
	assert_int_equal(cache_check_file(f->dir, why, sizeof(why)), 0);
	assert_int_equal(cache_check_forked(f->dir, why, sizeof(why)), 0);
	assert_int_equal(cache_check_walk(f->dir, why, sizeof(why)), 0);
}

static void
test_check_truncated(void **state)
{
	struct store_fixture	*f = *state;
	char		 path[400], why[CACHE_DAMAGE_NOTE_BYTES];
	struct stat	 st;

	damage_fill(f, path, sizeof(path));
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(truncate(path, st.st_size / 2), 0);
	assert_int_equal(cache_check_file(f->dir, why, sizeof(why)), 1);
	/* The pages past the end are in use, or the tree's root is one of them. */
	assert_true(strstr(why, "as the last, but the file holds") != NULL ||
	    strstr(why, "root page") != NULL);
	/* Too short for even the meta pages. */
	assert_int_equal(truncate(path, 100), 0);
	assert_int_equal(cache_check_file(f->dir, why, sizeof(why)), 1);
	assert_non_null(strstr(why, "meta page 0"));
	assert_int_equal(truncate(path, 0), 0);
	assert_int_equal(cache_check_file(f->dir, why, sizeof(why)), 1);
	assert_non_null(strstr(why, "zero length"));
}

/* The highest page number up to last that the free list does not hold. */
static size_t
highest_used_page(MDB_env *env, size_t last)
{
	MDB_txn		*txn;
	MDB_cursor	*cur;
	MDB_val		 k, v;
	uint8_t		*freed = calloc(last + 1, 1);
	size_t		 n, pg, j;

	assert_non_null(freed);
	assert_int_equal(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), 0);
	assert_int_equal(mdb_cursor_open(txn, 0, &cur), 0);
	while (mdb_cursor_get(cur, &k, &v, MDB_NEXT) == 0) {
		memcpy(&n, v.mv_data, sizeof(n));
		for (j = 1; j <= n; j++) {
			memcpy(&pg, (uint8_t *)v.mv_data + j * sizeof(pg), sizeof(pg));
			if (pg <= last)
				freed[pg] = 1;
		}
	}
	mdb_cursor_close(cur);
	mdb_txn_abort(txn);
	while (last > 0 && freed[last])
		last--;
	free(freed);
	return last;
}

/*
 * Pages a transaction took from the file's end and freed before its
 * commit are never written: the file stops short of the last page the
 * meta names, and the store is sound. Such a store is not damage.
 */
static void
test_check_tail_free(void **state)
{
	struct store_fixture	*f = *state;
	char		 path[400], why[CACHE_DAMAGE_NOTE_BYTES];
	static uint8_t	 val[800 * 1024];
	struct stat	 st;
	MDB_env		*env;
	MDB_txn		*txn;
	MDB_dbi		 dbi;
	MDB_envinfo	 ei;
	MDB_stat	 ms;
	MDB_val		 key = { 9, (void *)"tail-test" }, v = { sizeof(val), val };
	size_t		 used;

	damage_fill(f, path, sizeof(path));
	memset(val, 'x', sizeof(val));
	assert_int_equal(mdb_env_create(&env), 0);
	assert_int_equal(mdb_env_set_maxdbs(env, 8), 0);
	assert_int_equal(mdb_env_set_mapsize(env, (size_t)256 << 20), 0);
	assert_int_equal(mdb_env_open(env, f->dir, 0, 0600), 0);
	/* A value of 200 pages taken from the end, and freed again. */
	assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
	assert_int_equal(mdb_dbi_open(txn, "aux", 0, &dbi), 0);
	assert_int_equal(mdb_put(txn, dbi, &key, &v, 0), 0);
	assert_int_equal(mdb_del(txn, dbi, &key, NULL), 0);
	assert_int_equal(mdb_txn_commit(txn), 0);
	assert_int_equal(mdb_env_info(env, &ei), 0);
	assert_int_equal(mdb_env_stat(env, &ms), 0);
	used = highest_used_page(env, ei.me_last_pgno);
	mdb_env_close(env);
	/* What this test is about: the file ends before the last page. */
	assert_int_equal(stat(path, &st), 0);
	assert_true((size_t)st.st_size / ms.ms_psize <= ei.me_last_pgno);
	assert_true(used < (size_t)st.st_size / ms.ms_psize);
	assert_int_equal(cache_check_file(f->dir, why, sizeof(why)), 0);
	assert_int_equal(cache_check_forked(f->dir, why, sizeof(why)), 0);
	/* Cut the highest page in use: that is damage. */
	assert_int_equal(truncate(path, (off_t)(used * ms.ms_psize)), 0);
	assert_int_equal(cache_check_file(f->dir, why, sizeof(why)), 1);
	assert_true(strstr(why, "not every page past its end is free") != NULL ||
	    strstr(why, "root page") != NULL);
}

/*
 * A reader that died inside its read transaction: its slot would keep
 * every page freed since from reuse, so rewriting one entry would take
 * new pages each time. The writes clear the slot and reuse the pages.
 */
static void
test_dead_reader(void **state)
{
	struct store_fixture	*f = *state;
	struct cache		*c, *r;
	struct cache_stat	 st0, st1;
	pid_t			 pid;
	unsigned		 i;
	int			 ws;

	c = store_open_ok(f->dir, 0, 0);
	assert_int_equal(put_n(c, CACHE_KIND_OCSP, 1, 1000, 16384),
	    CACHE_PUT_STORED);
	if ((pid = fork()) == 0) {
		/* The get leaves its read transaction live; _exit keeps it. */
		r = cache_open(f->dir, 0, 1, NULL, 0);
		_exit(r != NULL && get_n(r, CACHE_KIND_OCSP, 1, 16384) == 1 ?
		    0 : 1);
	}
	assert_int_equal(waitpid(pid, &ws, 0), pid);
	assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
	assert_int_equal(put_n(c, CACHE_KIND_OCSP, 1, 1001, 16384),
	    CACHE_PUT_STORED);
	assert_int_equal(cache_stat(c, &st0), 0);
	/* Each rewrite frees about ten pages (five of them the body's). */
	for (i = 0; i < 100; i++)
		assert_int_equal(put_n(c, CACHE_KIND_OCSP, 1, 1002 + i, 16384),
		    CACHE_PUT_STORED);
	assert_int_equal(cache_stat(c, &st1), 0);
	assert_true(st1.used_bytes - st0.used_bytes < 64 * 4096);
	assert_int_equal(get_n(c, CACHE_KIND_OCSP, 1, 16384), 1);
	cache_close(c);
}

static void
test_check_meta(void **state)
{
	struct store_fixture	*f = *state;
	char		 path[400], why[CACHE_DAMAGE_NOTE_BYTES];

	damage_fill(f, path, sizeof(path));
	/* The second meta page's magic. */
	scribble(path, LMDB_PSIZE + 16, 4, 0x5a);
	assert_int_equal(cache_check_file(f->dir, why, sizeof(why)), 1);
	assert_non_null(strstr(why, "meta page 1 is not"));
}

/* Every page but the metas zeroed: the root is no tree page any more. */
static void
test_check_root(void **state)
{
	struct store_fixture	*f = *state;
	char		 path[400], why[CACHE_DAMAGE_NOTE_BYTES];
	struct stat	 st;
	off_t		 off;

	damage_fill(f, path, sizeof(path));
	assert_int_equal(stat(path, &st), 0);
	for (off = 2 * LMDB_PSIZE; off < st.st_size; off += LMDB_PSIZE)
		scribble(path, off, 16, 0);
	assert_int_equal(cache_check_file(f->dir, why, sizeof(why)), 1);
	assert_non_null(strstr(why, "root page"));
}

/* Pages the cheap checks do not read: the forked walk finds them. */
static void
test_check_forked_pages(void **state)
{
	struct store_fixture	*f = *state;
	char		 path[400], why[CACHE_DAMAGE_NOTE_BYTES];
	struct stat	 st;
	off_t		 pages, p;

	damage_fill(f, path, sizeof(path));
	assert_int_equal(stat(path, &st), 0);
	pages = st.st_size / LMDB_PSIZE;
	for (p = 3; p < pages - 1; p += 3)
		scribble(path, p * LMDB_PSIZE, LMDB_PSIZE, 0xa5);
	assert_int_equal(cache_check_forked(f->dir, why, sizeof(why)), 1);
	assert_true(strstr(why, "killed by signal") != NULL ||
	    strstr(why, "the check walk failed") != NULL);
}

/* Which LMDB results mean a damaged file. */
static void
test_damage_rc(void **state)
{
	(void)state;
	assert_true(cache_damage_rc(MDB_CORRUPTED, 0));
	assert_true(cache_damage_rc(MDB_PAGE_NOTFOUND, 0));
	assert_true(cache_damage_rc(MDB_INVALID, 0));
	/* the first error of its transaction: a page search's, dropped */
	assert_true(cache_damage_rc(MDB_BAD_TXN, 0));
	assert_true(cache_damage_rc(MDB_BAD_TXN, MDB_CORRUPTED));
	assert_true(cache_damage_rc(MDB_BAD_TXN, MDB_PAGE_NOTFOUND));
	/* after a full map the transaction is spent, the file sound */
	assert_false(cache_damage_rc(MDB_BAD_TXN, MDB_MAP_FULL));
	assert_false(cache_damage_rc(MDB_BAD_TXN, MDB_TXN_FULL));
	assert_false(cache_damage_rc(MDB_BAD_TXN, ENOMEM));
	assert_false(cache_damage_rc(MDB_NOTFOUND, 0));
	assert_false(cache_damage_rc(MDB_MAP_FULL, 0));
	assert_false(cache_damage_rc(MDB_MAP_RESIZED, 0));
	assert_false(cache_damage_rc(MDB_READERS_FULL, 0));
	assert_false(cache_damage_rc(EIO, 0));
	assert_false(cache_damage_rc(ENOSPC, 0));
	assert_false(cache_damage_rc(0, 0));
}

/* Every page after the metas zeroed under an open handle. */
static void
zero_tree(const char *path)
{
	struct stat	st;
	off_t		off;

	assert_int_equal(stat(path, &st), 0);
	for (off = 2 * LMDB_PSIZE; off < st.st_size; off += LMDB_PSIZE)
		scribble(path, off, LMDB_PSIZE, 0);
}

/* The eventfd's count: 0 when nothing is waiting. */
static uint64_t
damage_count(int efd)
{
	uint64_t	n;

	return read(efd, &n, sizeof(n)) == (ssize_t)sizeof(n) ? n : 0;
}

/*
 * Damage found at run time: noted once, on the original for any handle,
 * signalled on the fd; every later call refuses the store without reading
 * it; a reset clears it.
 */
static void
test_damage_runtime(void **state)
{
	struct store_fixture	*f = *state;
	struct cache	*c, *t;
	char		 path[400], why[CACHE_DAMAGE_NOTE_BYTES], aside[400];
	int		 efd;

	damage_fill(f, path, sizeof(path));
	c = store_open_ok(f->dir, 0, 0);
	assert_true((efd = cache_damage_fd(c)) >= 0);
	assert_int_equal(cache_damage_fd(c), efd);
	assert_non_null(t = cache_twin(c));
	assert_int_equal(cache_damage_fd(t), -1);
	assert_int_equal(get_n(c, CACHE_KIND_OCSP, 1, 700), 1);
	assert_int_equal(cache_damage_found(c, why, sizeof(why)), 0);
	assert_int_equal(damage_count(efd), 0);

	zero_tree(path);
	assert_int_equal(get_n(c, CACHE_KIND_OCSP, 2, 700), -1);
	assert_non_null(strstr(cache_strerror(c), "the store is damaged"));
	assert_int_equal(cache_damage_found(c, why, sizeof(why)), 1);
	assert_non_null(strstr(why, "get meta: MDB_"));
	assert_int_equal(damage_count(efd), 1);
	/* The twin, another thread's handle, refuses it too, reading nothing. */
	cache_twin_follow(t);
	assert_int_equal(get_n(t, CACHE_KIND_OCSP, 3, 700), -1);
	assert_non_null(strstr(cache_strerror(t), "not read until it is moved aside"));
	assert_int_equal(cache_damage_found(t, why, sizeof(why)), 1);
	assert_int_equal(put_n(c, CACHE_KIND_OCSP, 4, 100, 700), -1);
	assert_non_null(strstr(cache_strerror(c), "the store is damaged ("));
	assert_int_equal(cache_walk(c, 0, NULL, 0, 0, NULL, NULL), -1);
	assert_int_equal(damage_count(efd), 0);

	assert_int_equal(cache_reset(c, "", aside, sizeof(aside)), 0);
	assert_int_equal(cache_damage_found(c, why, sizeof(why)), 0);
	assert_int_equal(put_n(c, CACHE_KIND_OCSP, 5, 100, 700), 0);
	assert_int_equal(get_n(c, CACHE_KIND_OCSP, 5, 700), 1);

	/* Found first by the twin: noted on the original, fd and all. */
	cache_twin_follow(t);
	assert_int_equal(get_n(t, CACHE_KIND_OCSP, 5, 700), 1);
	zero_tree(path);
	cache_twin_follow(t);
	assert_int_equal(get_n(t, CACHE_KIND_OCSP, 5, 700), -1);
	assert_int_equal(cache_damage_found(c, why, sizeof(why)), 1);
	assert_int_equal(damage_count(efd), 1);
	cache_close(t);
	cache_close(c);
}

/* A meta without its body, as a misleading branch page shows it: damage. */
static void
test_damage_no_body(void **state)
{
	struct store_fixture	*f = *state;
	struct cache	*c;
	MDB_env		*env;
	MDB_txn		*txn;
	MDB_dbi		 dbi;
	MDB_val		 k;
	uint8_t		 lk[1 + CACHE_KEY_MAX_BYTES];
	char		 why[CACHE_DAMAGE_NOTE_BYTES];

	c = store_open_ok(f->dir, 0, 0);
	assert_int_equal(put_n(c, CACHE_KIND_OCSP, 1, 100, 700), 0);
	assert_int_equal(put_n(c, CACHE_KIND_OCSP, 2, 100, 700), 0);
	cache_close(c);
	lk[0] = CACHE_KIND_OCSP;
	k.mv_data = lk;
	k.mv_size = 1 + store_key(lk + 1, 1);
	assert_int_equal(mdb_env_create(&env), 0);
	assert_int_equal(mdb_env_set_maxdbs(env, 8), 0);
	assert_int_equal(mdb_env_open(env, f->dir, 0, 0600), 0);
	assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
	assert_int_equal(mdb_dbi_open(txn, "body", 0, &dbi), 0);
	assert_int_equal(mdb_del(txn, dbi, &k, NULL), 0);
	assert_int_equal(mdb_txn_commit(txn), 0);
	mdb_env_close(env);

	c = store_open_ok(f->dir, 0, 0);
	assert_int_equal(get_n(c, CACHE_KIND_OCSP, 1, 700), -1);
	assert_int_equal(cache_damage_found(c, why, sizeof(why)), 1);
	assert_string_equal(why, "get body: a stored entry has no body");
	assert_int_equal(get_n(c, CACHE_KIND_OCSP, 2, 700), -1);
	cache_close(c);
}

enum fault_how {
	FAULT_TRUNCATED,	/* a lookup past the end of a shortened file */
	FAULT_ASSERT,		/* LMDB's assertion callback */
	FAULT_WILD,		/* a wild pointer outside the map: a bug */
	FAULT_NODE,		/* leaf nodes flagged as sub-databases: LMDB's NULL */
	FAULT_CALL,		/* LMDB's memcpy from a wild address */
	FAULT_WILD_CALL,	/* the program's own memcpy from one: a bug */
	FAULT_SENT,		/* SIGBUS sent by kill, not raised by an access */
};

/*
 * Flag each node but the first of every leaf page of path with F_DUPDATA:
 * a cursor that steps onto one opens a sub-database cursor that a plain
 * database does not have, and writes through NULL (liblmdb 0.9.24's
 * mdb_cursor_next; mdb_get and a cursor's first step refuse them).
 */
static void
flag_leaf_nodes(const char *path)
{
	uint8_t		pg[LMDB_PSIZE];
	uint16_t	flags, lower, off, nflags;
	off_t		p;
	unsigned	i;
	int		fd;

	assert_true((fd = open(path, O_RDWR)) != -1);
	for (p = 2; pread(fd, pg, sizeof(pg), p * LMDB_PSIZE) ==
	    (ssize_t)sizeof(pg); p++) {
		/* MDB_page: pgno (8), pad (2), flags (2), lower (2), upper (2) */
		memcpy(&flags, pg + 10, 2);
		memcpy(&lower, pg + 12, 2);
		if (flags != 0x02 || lower < 16 || lower > sizeof(pg))
			continue;	/* not a plain leaf (P_LEAF alone) */
		/* Not the first: a cursor's first step refuses them. */
		for (i = 18; i + 2 <= lower; i += 2) {
			memcpy(&off, pg + i, 2);
			if (off + 8u > sizeof(pg))
				continue;
			/* MDB_node: lo (2), hi (2), flags (2), ksize (2) */
			memcpy(&nflags, pg + off + 4, 2);
			if (nflags & 0x02)
				continue;	/* F_SUBDATA: a database's name */
			nflags |= 0x04;		/* F_DUPDATA */
			memcpy(pg + off + 4, &nflags, 2);
		}
		assert_int_equal(pwrite(fd, pg, sizeof(pg), p * LMDB_PSIZE),
		    (ssize_t)sizeof(pg));
	}
	close(fd);
}

static int
walk_none(enum cache_kind kind, const uint8_t *key, size_t klen,
    const struct cache_meta *m, void *arg)
{
	(void)kind, (void)key, (void)klen, (void)m, (void)arg;
	return 0;
}

/* An address no map holds, read at run time so no compiler sees through it. */
static volatile uintptr_t	fault_wild = 16;
static volatile size_t		fault_len = 64;

/*
 * A put whose value's bytes are at a wild address, into an environment of
 * its own beside the store: LMDB copies them with the C library's memcpy,
 * which faults outside any map, as when a damaged node's size sends a copy
 * past the map's end.
 */
static void
fault_lmdb_call(const char *dir)
{
	char	 raw[400];
	MDB_env	*env;
	MDB_txn	*txn;
	MDB_dbi	 dbi;
	MDB_val	 k = { 4, "wild" }, v = { fault_len, (void *)fault_wild };

	snprintf(raw, sizeof(raw), "%s/raw", dir);
	if (mkdir(raw, 0700) == -1 || mdb_env_create(&env) != 0 ||
	    mdb_env_open(env, raw, 0, 0600) != 0 ||
	    mdb_txn_begin(env, NULL, 0, &txn) != 0 ||
	    mdb_dbi_open(txn, NULL, 0, &dbi) != 0)
		_exit(93);
	(void)mdb_put(txn, dbi, &k, &v, 0);
}

/* A child arms, opens the store and meets `how`; its wait status. */
static int
fault_child(struct store_fixture *f, const char *path, enum fault_how how)
{
	struct rlimit	 nocore = { 0, 0 };
	struct cache	*c;
	unsigned	 i;
	pid_t		 pid;
	int		 st;

	assert_true((pid = fork()) != -1);
	if (pid == 0) {
		setrlimit(RLIMIT_CORE, &nocore);
		if (cache_fault_arm(f->dir, "test: ") == -1 ||
		    (c = store_open_ok(f->dir, 0, 0)) == NULL)
			_exit(90);
		switch (how) {
		case FAULT_TRUNCATED:
			if (truncate(path, 3 * LMDB_PSIZE) == -1)
				_exit(91);
			for (i = 0; i < DAMAGE_ENTRIES; i++)
				(void)get_n(c, CACHE_KIND_OCSP, i, 700);
			break;
		case FAULT_ASSERT:
			cache_fault_assert("mdb.c:1: Assertion 'x' failed in f()");
			break;
		case FAULT_WILD:
			*(volatile int *)fault_wild = 1;
			break;
		case FAULT_NODE:
			flag_leaf_nodes(path);
			(void)cache_walk(c, 0, NULL, 0, 0, walk_none, NULL);
			break;
		case FAULT_CALL:
			fault_lmdb_call(f->dir);
			break;
		case FAULT_WILD_CALL: {
			char	buf[128];

			memcpy(buf, (const void *)fault_wild, fault_len);
			_exit(buf[0] == 1 ? 94 : 95);
		}
		case FAULT_SENT:
			kill(getpid(), SIGBUS);
			break;
		}
		_exit(92);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return st;
}

/*
 * A child meets `how` and exits 3, leaving the marker; the marker says
 * `cause` and `what` (what was read); once cleared, it is gone.
 */
static void
fault_marked(struct store_fixture *f, const char *path, enum fault_how how,
    const char *cause, const char *what)
{
	char		 why[CACHE_DAMAGE_NOTE_BYTES], marker[400];
	struct stat	 st;
	int		 ws;

	snprintf(marker, sizeof(marker), "%s/%s", f->dir, CACHE_FAULT_MARKER);
	ws = fault_child(f, path, how);
	assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == CACHE_FAULT_EXIT);
	assert_int_equal(cache_fault_marker(f->dir, why, sizeof(why)), 1);
	assert_non_null(strstr(why, cause));
	assert_non_null(strstr(why, what));
	assert_int_equal(stat(marker, &st), 0);
	assert_int_equal(cache_fault_marker_clear(f->dir), 0);
	assert_int_equal(stat(marker, &st), -1);
	assert_int_equal(cache_fault_marker(f->dir, why, sizeof(why)), 0);
}

/*
 * A fault inside the map, one of LMDB's code or of a C library function
 * LMDB called anywhere, and an assertion leave the marker and exit 3; the
 * marker says what was read; a fault of the program's own code outside
 * the map (its own memcpy too), or a signal sent, is left to the default
 * action, with no marker.
 */
static void
test_fault_marker(void **state)
{
	struct store_fixture	*f = *state;
	char		 path[400], why[CACHE_DAMAGE_NOTE_BYTES], marker[400];
	struct stat	 st;
	int		 ws;

	damage_fill(f, path, sizeof(path));
	snprintf(marker, sizeof(marker), "%s/%s", f->dir, CACHE_FAULT_MARKER);
	assert_int_equal(cache_fault_marker(f->dir, why, sizeof(why)), 0);

	ws = fault_child(f, path, FAULT_WILD);
	assert_true(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGSEGV);
	ws = fault_child(f, path, FAULT_WILD_CALL);
	assert_true(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGSEGV);
	ws = fault_child(f, path, FAULT_SENT);
	assert_true(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGBUS);
	assert_int_equal(stat(marker, &st), -1);

	fault_marked(f, path, FAULT_ASSERT, "an LMDB assertion",
	    "Assertion 'x' failed");
	fault_marked(f, path, FAULT_TRUNCATED, "SIGBUS reading page ",
	    "during lookup");
	/* LMDB itself led astray by a damaged page: outside the map, still damage. */
	assert_int_equal(unlink(path), 0);
	damage_fill(f, path, sizeof(path));
	fault_marked(f, path, FAULT_NODE, "SIGSEGV inside LMDB at address 0x",
	    "during walk");
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
	/* Under a sanitizer, LMDB's memcpy is the sanitizer's, not libc's. */
	fault_marked(f, path, FAULT_CALL,
	    "SIGSEGV in a C library call of LMDB's at address 0x10,",
	    "outside the map");
#endif
}

/* A marker names its file: a store put back since is not judged by it. */
static void
test_fault_marker_file(void **state)
{
	struct store_fixture	*f = *state;
	char		 path[400], why[CACHE_DAMAGE_NOTE_BYTES], marker[400];
	char		 moved[420];
	struct stat	 st;
	int		 ws, fd;

	damage_fill(f, path, sizeof(path));
	snprintf(marker, sizeof(marker), "%s/%s", f->dir, CACHE_FAULT_MARKER);
	ws = fault_child(f, path, FAULT_ASSERT);
	assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == CACHE_FAULT_EXIT);
	/* Another data.mdb in its place: the marker is stale, removed. */
	snprintf(moved, sizeof(moved), "%s.old", path);
	assert_int_equal(rename(path, moved), 0);
	assert_true((fd = open(path, O_WRONLY | O_CREAT, 0600)) != -1);
	close(fd);
	assert_int_equal(cache_fault_marker(f->dir, why, sizeof(why)), 0);
	assert_int_equal(stat(marker, &st), -1);
	/* No data.mdb at all: nothing to move aside. */
	assert_true((fd = open(marker, O_WRONLY | O_CREAT, 0600)) != -1);
	close(fd);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(cache_fault_marker(f->dir, why, sizeof(why)), 0);
	assert_int_equal(stat(marker, &st), -1);
	/* A marker cut short still means damage. */
	assert_int_equal(rename(moved, path), 0);
	assert_true((fd = open(marker, O_WRONLY | O_CREAT, 0600)) != -1);
	assert_int_equal(write(fd, "data.mdb ino", 12), 12);
	close(fd);
	assert_int_equal(cache_fault_marker(f->dir, why, sizeof(why)), 1);
	assert_non_null(strstr(why, "does not say more"));
}

/* The handle survives a reset: same pointer, empty, writable, noted. */
static void
test_reset(void **state)
{
	struct store_fixture	*f = *state;
	struct cache	*c;
	char		 aside[400];
	struct stat	 st;

	c = store_open_ok(f->dir, 0, 0);
	assert_int_equal(put_n(c, CACHE_KIND_OCSP, 1, 100, 700), 0);
	assert_null(cache_damage(c));
	assert_int_equal(cache_reset(c, "found damaged", aside, sizeof(aside)),
	    0);
	assert_non_null(strstr(aside, "/data.mdb.damaged-"));
	assert_int_equal(stat(aside, &st), 0);
	assert_string_equal(cache_damage(c), "found damaged");
	assert_int_equal(get_n(c, CACHE_KIND_OCSP, 1, 700), 0);
	assert_int_equal(put_n(c, CACHE_KIND_OCSP, 2, 100, 700), 0);
	assert_int_equal(get_n(c, CACHE_KIND_OCSP, 2, 700), 1);
	cache_close(c);
}

/* Removing stapled.lock lifts nothing: the directory itself is locked. */
static void
test_lock_dir_unlinked(void **state)
{
	struct store_fixture	*f = *state;
	char			 err[512], path[PATH_MAX], want[64];
	int			 a;

	assert_true((a = cache_lock_dir(f->tmp, err, sizeof(err))) != -1);
	assert_string_equal(err, "");
	snprintf(path, sizeof(path), "%s/stapled.lock", f->tmp);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(cache_lock_dir(f->tmp, err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "(pid %ld)", (long)getpid());
	assert_non_null(strstr(err, "in use by another stapled"));
	assert_non_null(strstr(err, want));
	assert_int_equal(cache_lock_holder(f->tmp), getpid());
	close(a);
	assert_int_equal(cache_lock_holder(f->tmp), 0);
}

/* Content errors are not the store's state: no cause, not for later. */
static void
test_cause_content(void **state)
{
	struct store_fixture	*f = *state;
	struct cache		*c;
	struct cache_meta	 m;
	struct cache_body	 b = { 0 };
	uint8_t			 key[CACHE_KEY_MAX_BYTES + 1] = { 1 };
	int			 i;

	for (i = 0; i < CACHE_CAUSE_MAX; i++)
		assert_non_null(cache_cause_str[i]);
	assert_false(cache_cause_later(CACHE_CAUSE_NONE));
	assert_true(cache_cause_later(CACHE_CAUSE_NO_SPACE));
	assert_true(cache_cause_later(CACHE_CAUSE_IO));
	assert_true(cache_cause_later(CACHE_CAUSE_LOCK));
	c = store_open_ok(f->dir, 0, 0);
	store_meta(&m, CACHE_KIND_OCSP, 100);
	assert_int_equal(cache_put(c, key, sizeof(key), &m, &b), -1);
	assert_int_equal(cache_cause(c), CACHE_CAUSE_NONE);
	assert_int_equal(cache_writes_held(c), CACHE_CAUSE_NONE);
	cache_close(c);
}

/*
 * data.mdb made unwritable: by its mode, or for root (whom no mode stops)
 * by the immutable attribute. 0, or -1 when neither can be had here.
 */
static int
data_unwritable(const char *dir, int on)
{
	char	path[PATH_MAX];
	int	fd, flags, rv = -1;

	snprintf(path, sizeof(path), "%s/data.mdb", dir);
	if (geteuid() != 0)
		return chmod(path, on ? 0440 : 0660);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	if (ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0) {
		flags = on ? flags | FS_IMMUTABLE_FL : flags & ~FS_IMMUTABLE_FL;
		rv = ioctl(fd, FS_IOC_SETFLAGS, &flags);
	}
	close(fd);
	return rv;
}

/*
 * A store whose data.mdb cannot be written is opened for reading, with
 * lock.mdb: served, every write refused as READ_ONLY (twins too), until
 * cache_reopen finds it writable.
 */
static void
test_open_or_read(void **state)
{
	struct store_fixture	*f = *state;
	struct cache		*c, *twin;
	char			 err[256];

	c = store_open_ok(f->dir, 0, 0);
	assert_int_equal(put_n(c, CACHE_KIND_OCSP, 1, 100, 64), CACHE_PUT_STORED);
	cache_close(c);
	if (data_unwritable(f->dir, 1) == -1)
		skip();
	c = cache_open_or_read(f->dir, 0, err, sizeof(err));
	if (c == NULL)
		(void)data_unwritable(f->dir, 0);
	assert_non_null(c);
	assert_true(cache_read_only(c));
	assert_int_equal(cache_writes_held(c), CACHE_CAUSE_READ_ONLY);
	assert_non_null(strstr(cache_strerror(c), "data.mdb cannot be written"));
	assert_int_equal(get_n(c, CACHE_KIND_OCSP, 1, 64), 1);
	assert_int_equal(put_n(c, CACHE_KIND_OCSP, 2, 100, 64), -1);
	assert_int_equal(cache_cause(c), CACHE_CAUSE_READ_ONLY);
	assert_true(cache_cause_later(CACHE_CAUSE_READ_ONLY));
	/* Kept for the writable environment. */
	assert_int_equal(cache_set_lazy_meta(c, 1), 0);
	assert_non_null(twin = cache_twin(c));
	assert_int_equal(put_n(twin, CACHE_KIND_OCSP, 2, 100, 64), -1);
	assert_int_equal(cache_cause(twin), CACHE_CAUSE_READ_ONLY);
	/* Still unwritable: the handle stays as it was. */
	assert_int_equal(cache_reopen(c), 1);
	assert_true(cache_read_only(c));
	assert_int_equal(get_n(c, CACHE_KIND_OCSP, 1, 64), 1);
	assert_int_equal(data_unwritable(f->dir, 0), 0);
	assert_int_equal(cache_reopen(c), 0);
	assert_false(cache_read_only(c));
	assert_int_equal(cache_writes_held(c), CACHE_CAUSE_NONE);
	cache_twin_follow(twin);
	assert_int_equal(put_n(twin, CACHE_KIND_OCSP, 2, 100, 64),
	    CACHE_PUT_STORED);
	assert_int_equal(get_n(c, CACHE_KIND_OCSP, 2, 64), 1);
	cache_close(twin);
	cache_close(c);
	/* Writable from the start: a writer's handle. */
	assert_non_null(c = cache_open_or_read(f->dir, 0, err, sizeof(err)));
	assert_false(cache_read_only(c));
	assert_int_equal(put_n(c, CACHE_KIND_OCSP, 3, 100, 64), CACHE_PUT_STORED);
	cache_close(c);
}

/* lock.mdb removed or replaced under an open handle: its writes are refused. */
static void
test_lock_mdb_replaced(void **state)
{
	struct store_fixture	*f = *state;
	struct cache		*c;
	char			 lock[PATH_MAX], moved[PATH_MAX];

	c = store_open_ok(f->dir, 0, 0);
	assert_int_equal(put_n(c, CACHE_KIND_OCSP, 1, 100, 64), CACHE_PUT_STORED);
	snprintf(lock, sizeof(lock), "%s/lock.mdb", f->dir);
	snprintf(moved, sizeof(moved), "%s/lock.mdb.old", f->dir);
	assert_int_equal(rename(lock, moved), 0);
	assert_int_equal(put_n(c, CACHE_KIND_OCSP, 2, 100, 64), -1);
	assert_int_equal(cache_cause(c), CACHE_CAUSE_LOCK);
	assert_non_null(strstr(cache_strerror(c), "lock.mdb was removed or "
	    "replaced"));
	assert_int_equal(cache_writes_held(c), CACHE_CAUSE_LOCK);
	/* The same file back at its path: writes again. */
	assert_int_equal(link(moved, lock), 0);
	assert_int_equal(put_n(c, CACHE_KIND_OCSP, 2, 100, 64), CACHE_PUT_STORED);
	/* Another file at the path is no better than none. */
	assert_int_equal(unlink(lock), 0);
	assert_int_equal(close(open(lock, O_CREAT | O_RDWR, 0600)), 0);
	assert_int_equal(put_n(c, CACHE_KIND_OCSP, 3, 100, 64), -1);
	assert_int_equal(cache_cause(c), CACHE_CAUSE_LOCK);
	cache_close(c);
	assert_int_equal(unlink(moved), 0);
	c = store_open_ok(f->dir, 0, 0);
	assert_int_equal(get_n(c, CACHE_KIND_OCSP, 1, 64), 1);
	assert_int_equal(get_n(c, CACHE_KIND_OCSP, 2, 64), 1);
	assert_int_equal(get_n(c, CACHE_KIND_OCSP, 3, 64), 0);
	cache_close(c);
}

/*
 * In a child: open the store, put entry `i`, and exit 0 stored, 2 refused
 * for a lock file not shared, 1 otherwise. `hold` (not -1): first wait
 * until a byte can be read from it.
 */
static pid_t
child_put(const char *dir, unsigned i, int ready, int hold)
{
	struct cache	*c;
	char		 err[512], b;
	pid_t		 pid;

	if ((pid = fork()) != 0)
		return pid;
	/* A parent whose assertion failed never writes to `hold`. */
	alarm(CHILD_MAX_S);
	if ((c = cache_open(dir, 0, 0, err, sizeof(err))) == NULL)
		_exit(1);
	if (ready != -1 && write(ready, "r", 1) != 1)
		_exit(1);
	if (hold != -1 && read(hold, &b, 1) != 1)
		_exit(1);
	if (put_n(c, CACHE_KIND_OCSP, i, 100, 64) == CACHE_PUT_STORED)
		_exit(0);
	_exit(cache_cause(c) == CACHE_CAUSE_LOCK &&
	    strstr(cache_strerror(c), "does not share") != NULL ? 2 :
	    cache_cause(c) == CACHE_CAUSE_LOCK ? 3 : 1);
}

static int
child_wait(pid_t pid)
{
	int	st;

	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

/*
 * The daemon's lock.mdb removed under it: a process opening the store
 * now gets another lock file, and finds the daemon holding the directory
 * is not among its readers; its write is refused.
 */
static void
test_lock_peer(void **state)
{
	struct store_fixture	*f = *state;
	struct cache		*c;
	char			 err[512], lock[PATH_MAX];
	int			 a;

	c = store_open_ok(f->dir, 0, 0);
	assert_true((a = cache_lock_dir(f->dir, err, sizeof(err))) != -1);
	assert_int_equal(child_wait(child_put(f->dir, 1, -1, -1)), 0);
	snprintf(lock, sizeof(lock), "%s/lock.mdb", f->dir);
	assert_int_equal(unlink(lock), 0);
	assert_int_equal(child_wait(child_put(f->dir, 2, -1, -1)), 2);
	close(a);
	cache_close(c);
	c = store_open_ok(f->dir, 0, 0);
	assert_int_equal(get_n(c, CACHE_KIND_OCSP, 1, 64), 1);
	assert_int_equal(get_n(c, CACHE_KIND_OCSP, 2, 64), 0);
	cache_close(c);
}

/*
 * Moving a store aside beside a process that has it open: its lock file
 * is renamed with the data file, not removed, and that process's next
 * write is refused (it would land in the moved file).
 */
static void
test_move_aside_held(void **state)
{
	struct store_fixture	*f = *state;
	struct cache		*c;
	struct stat		 st, ast;
	char			 aside[PATH_MAX], alock[PATH_MAX + 8];
	char			 lock[PATH_MAX], b;
	int			 ready[2], hold[2];
	pid_t			 pid;

	c = store_open_ok(f->dir, 0, 0);
	assert_int_equal(put_n(c, CACHE_KIND_OCSP, 1, 100, 64), CACHE_PUT_STORED);
	cache_close(c);
	snprintf(lock, sizeof(lock), "%s/lock.mdb", f->dir);
	assert_int_equal(stat(lock, &st), 0);
	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(hold), 0);
	pid = child_put(f->dir, 2, ready[1], hold[0]);
	assert_int_equal(read(ready[0], &b, 1), 1);
	assert_int_equal(cache_move_aside(f->dir, aside, sizeof(aside)), 0);
	snprintf(alock, sizeof(alock), "%s.lock", aside);
	assert_int_equal(stat(lock, &ast), -1);
	assert_int_equal(stat(alock, &ast), 0);
	assert_true(ast.st_ino == st.st_ino);
	c = store_open_ok(f->dir, 0, 0);	/* the new store, a new lock */
	assert_int_equal(write(hold[1], "g", 1), 1);
	assert_int_equal(child_wait(pid), 3);
	assert_int_equal(get_n(c, CACHE_KIND_OCSP, 2, 64), 0);
	cache_close(c);
	/* With nobody holding it, the lock file is removed. */
	assert_int_equal(unlink(alock), 0);
	assert_int_equal(cache_move_aside(f->dir, aside, sizeof(aside)), 0);
	assert_int_equal(stat(lock, &ast), -1);
	assert_int_equal(stat(alock, &ast), -1);
	close(ready[0]);
	close(ready[1]);
	close(hold[0]);
	close(hold[1]);
}

/*
 * lock.mdb removed under the daemon's handle: reopening waits while
 * another process holds the old lock file, then takes up the new one.
 */
static void
test_reopen(void **state)
{
	struct store_fixture	*f = *state;
	struct cache		*c;
	char			 lock[PATH_MAX], b;
	int			 ready[2], hold[2];
	pid_t			 pid;

	c = store_open_ok(f->dir, 0, 0);
	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(hold), 0);
	pid = child_put(f->dir, 1, ready[1], hold[0]);
	assert_int_equal(read(ready[0], &b, 1), 1);
	snprintf(lock, sizeof(lock), "%s/lock.mdb", f->dir);
	assert_int_equal(unlink(lock), 0);
	assert_int_equal(cache_writes_held(c), CACHE_CAUSE_LOCK);
	assert_int_equal(cache_reopen(c), 1);	/* the child holds the old one */
	assert_non_null(strstr(cache_strerror(c), "still has the old one open"));
	assert_int_equal(write(hold[1], "g", 1), 1);
	assert_int_equal(child_wait(pid), 3);
	assert_int_equal(cache_reopen(c), 0);
	assert_int_equal(cache_writes_held(c), CACHE_CAUSE_NONE);
	assert_int_equal(put_n(c, CACHE_KIND_OCSP, 2, 100, 64), CACHE_PUT_STORED);
	assert_int_equal(child_wait(child_put(f->dir, 3, -1, -1)), 0);
	assert_int_equal(get_n(c, CACHE_KIND_OCSP, 3, 64), 1);
	cache_close(c);
	close(ready[0]);
	close(ready[1]);
	close(hold[0]);
	close(hold[1]);
}

/* One holder of the directory lock at a time, even in one process. */
static void
test_lock_dir(void **state)
{
	struct store_fixture	*f = *state;
	char		 err[512];
	int		 a, b;

	assert_true((a = cache_lock_dir(f->tmp, err, sizeof(err))) != -1);
	assert_int_equal(cache_lock_dir(f->tmp, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "in use by another stapled"));
	close(a);
	assert_true((b = cache_lock_dir(f->tmp, err, sizeof(err))) != -1);
	close(b);
}

/* The lock's holder is seen without taking the lock from it. */
static void
test_lock_holder(void **state)
{
	struct store_fixture	*f = *state;
	char		 err[512];
	int		 a;

	assert_int_equal(cache_lock_holder(f->tmp), 0);	/* no lock file */
	assert_true((a = cache_lock_dir(f->tmp, err, sizeof(err))) != -1);
	assert_int_equal(cache_lock_holder(f->tmp), getpid());
	/* The probe left the lock where it was. */
	assert_int_equal(cache_lock_dir(f->tmp, err, sizeof(err)), -1);
	close(a);
	assert_int_equal(cache_lock_holder(f->tmp), 0);	/* a stale pid inside */
}

/* A reload verdict reads back as written; the message stays one line. */
static void
test_reload_record(void **state)
{
	struct store_fixture		*f = *state;
	struct cache_reload	 w, r;
	char			 path[512];
	FILE			*fp;

	assert_int_equal(cache_reload_get(f->tmp, &r), 0);	/* none yet */
	memset(&w, 0, sizeof(w));
	w.pid = 1234;
	w.generation = 7;
	w.ok = 0;
	w.at = 1700000000;
	snprintf(w.message, sizeof(w.message), "bad anchors:\nno certificates");
	assert_int_equal(cache_reload_put(f->tmp, &w), 0);
	assert_int_equal(cache_reload_get(f->tmp, &r), 1);
	assert_int_equal(r.pid, 1234);
	assert_int_equal(r.generation, 7);
	assert_int_equal(r.ok, 0);
	assert_int_equal(r.at, 1700000000);
	assert_string_equal(r.message, "bad anchors: no certificates");
	w.ok = 1;
	w.generation = 8;
	assert_int_equal(cache_reload_put(f->tmp, &w), 0);
	assert_int_equal(cache_reload_get(f->tmp, &r), 1);
	assert_int_equal(r.ok, 1);
	assert_int_equal(r.generation, 8);
	/* Anything else is refused, not half read. */
	snprintf(path, sizeof(path), "%s/%s", f->tmp, CACHE_RELOAD_FILE);
	assert_non_null(fp = fopen(path, "w"));
	fputs("pid 1\ngeneration 2\nresult maybe\nat 3\n", fp);
	fclose(fp);
	assert_int_equal(cache_reload_get(f->tmp, &r), -1);
	assert_int_equal(errno, EINVAL);
}

#define T(f)	cmocka_unit_test_setup_teardown(f, store_setup, store_teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_put_get),
		T(test_kept_when_older),
		T(test_counters_carried),
		T(test_imported_flag),
		T(test_touch_batch),
		T(test_walk_chunks),
		T(test_walk_skips_garbage),
		T(test_put_meta),
		T(test_del),
		T(test_room),
		T(test_aux),
		T(test_reopen_persists),
		T(test_lazy_meta),
		T(test_release_steps),
		T(test_readonly_cross_process),
		T(test_write_adopts_grown_map),
		T(test_open_errors),
		T(test_open_creates_dir),
		T(test_map_full),
		T(test_map_honoured),
		T(test_crash_safety),
		T(test_check_sound),
		T(test_check_truncated),
		T(test_check_tail_free),
		T(test_dead_reader),
		T(test_check_meta),
		T(test_check_root),
		T(test_check_forked_pages),
		T(test_damage_rc),
		T(test_damage_runtime),
		T(test_damage_no_body),
		T(test_fault_marker),
		T(test_fault_marker_file),
		T(test_reset),
		T(test_lock_dir),
		T(test_lock_holder),
		T(test_lock_dir_unlinked),
		T(test_lock_mdb_replaced),
		T(test_lock_peer),
		T(test_move_aside_held),
		T(test_reopen),
		T(test_cause_content),
		T(test_open_or_read),
		T(test_reload_record),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
