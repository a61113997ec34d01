/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for cache/store_damaged.c: records whose bytes fail their check are noted once, taken, dropped; old records are still read. */
#include "config.h"

#include <lmdb.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cache/record.h"
#include "entry/kinds.h"
#include "cache/store.h"
#include "cache/writer.h"

#include "store_fixture.h"

#define RESP_BYTES	3000	/* in LMDB's overflow pages, as OCSP answers with chains are */
#define RESP_AT		1234	/* the byte of the response a test alters */

static void
fill(uint8_t *buf, size_t len, unsigned seed)
{
	size_t	i;

	for (i = 0; i < len; i++)
		buf[i] = (uint8_t)(seed * 31 + i * 7);
}

static int
put_n(struct cache *c, unsigned i, int64_t tu)
{
	struct cache_meta	m;
	struct cache_body	b = { 0 };
	uint8_t			key[CACHE_KEY_MAX_BYTES], req[16], resp[RESP_BYTES];
	size_t			klen = store_key(key, i);

	store_meta(&m, CACHE_KIND_OCSP, tu);
	fill(resp, sizeof(resp), i);
	fill(req, sizeof(req), i + 1);
	b.request = req;
	b.request_len = sizeof(req);
	b.response = resp;
	b.response_len = sizeof(resp);
	return cache_put(c, key, klen, &m, &b);
}

/* cache_get of entry i: 1 with the bytes put_n wrote (fails otherwise), 0 absent. */
static int
get_n(struct cache *c, unsigned i)
{
	struct cache_meta	m;
	struct cache_body	b;
	uint8_t			key[CACHE_KEY_MAX_BYTES], want[RESP_BYTES];
	size_t			klen = store_key(key, i);
	int			rc;

	if ((rc = cache_get(c, CACHE_KIND_OCSP, key, klen, &m, &b)) != 1)
		return rc;
	fill(want, sizeof(want), i);
	assert_int_equal(b.response_len, sizeof(want));
	assert_memory_equal(b.response, want, sizeof(want));
	return 1;
}

/*
 * Apply fn to the value of entry i in database db ("meta" or "body") of
 * the store at dir, through an environment of its own (none other open
 * in this process): the damage a disk or another program does.
 */
typedef void alter_fn(uint8_t *val, size_t *len);

static void
raw_alter(const char *dir, const char *db, unsigned i, alter_fn *fn)
{
	uint8_t		lk[1 + CACHE_KEY_MAX_BYTES], *copy;
	MDB_env		*env;
	MDB_txn		*txn;
	MDB_dbi		 dbi;
	MDB_val		 k, v;
	size_t		 len;

	lk[0] = CACHE_KIND_OCSP;
	k.mv_data = lk;
	k.mv_size = 1 + store_key(lk + 1, i);
	assert_int_equal(mdb_env_create(&env), 0);
	assert_int_equal(mdb_env_set_maxdbs(env, 8), 0);
	assert_int_equal(mdb_env_open(env, dir, 0, 0640), 0);
	assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
	assert_int_equal(mdb_dbi_open(txn, db, 0, &dbi), 0);
	assert_int_equal(mdb_get(txn, dbi, &k, &v), 0);
	len = v.mv_size;
	assert_non_null(copy = malloc(len));
	memcpy(copy, v.mv_data, len);
	fn(copy, &len);
	v.mv_data = copy;
	v.mv_size = len;
	assert_int_equal(mdb_put(txn, dbi, &k, &v, 0), 0);
	assert_int_equal(mdb_txn_commit(txn), 0);
	mdb_env_close(env);
	free(copy);
}

/* One bit of the response: lengths intact, only the checksum can tell. */
static void
flip_response(uint8_t *val, size_t *len)
{
	assert_true(*len > 9 + 16 + RESP_AT);
	val[9 + 16 + RESP_AT] ^= 0x10;
}

/* nextUpdate a year and more later: structure intact. */
static void
flip_next_update(uint8_t *val, size_t *len)
{
	assert_int_equal(*len, RECORD_META_BYTES);
	val[20 + 3] ^= 0x02;
}

/* A body as stapled wrote it before the checksum: version 1, no CRC. */
static void
make_old_body(uint8_t *val, size_t *len)
{
	assert_int_equal(val[0], RECORD_BODY_VERSION);
	val[0] = RECORD_VERSION;
	*len -= 4;
}

/* A meta as written before the check: bytes 3, 6 and 7 zero. */
static void
make_old_meta(uint8_t *val, size_t *len)
{
	assert_int_equal(*len, RECORD_META_BYTES);
	assert_int_equal(val[3], RECORD_META_CHECK_CRC16);
	val[3] = val[6] = val[7] = 0;
}

/* The notes taken now: how many, the first into *d. */
static size_t
take(struct cache *c, struct cache_damaged *d)
{
	struct cache_damaged	all[CACHE_DAMAGED_MAX];
	size_t			n = cache_damaged_take(c, all, CACHE_DAMAGED_MAX);

	if (n > 0 && d != NULL)
		*d = all[0];
	return n;
}

static void
assert_note(const struct cache_damaged *d, unsigned i, enum cache_found found,
    const char *part, const char *why)
{
	uint8_t	key[CACHE_KEY_MAX_BYTES];
	size_t	klen = store_key(key, i);

	assert_int_equal(d->kind, CACHE_KIND_OCSP);
	assert_int_equal(d->klen, klen);
	assert_memory_equal(d->key, key, klen);
	assert_int_equal(d->found, found);
	assert_string_equal(d->part, part);
	assert_string_equal(d->why, why);
}

/* A body altered under the store: absent to lookups, noted once, dropped, stored again. */
static void
test_body_noted_once(void **state)
{
	struct store_fixture	*f = *state;
	struct cache_damaged	 d;
	struct cache_meta	 m;
	struct cache		*c;
	uint8_t			 key[CACHE_KEY_MAX_BYTES];
	size_t			 klen = store_key(key, 1);
	uint64_t		 n;
	int			 fd;

	c = store_open_ok(f->dir, 0, 0);
	assert_int_equal(put_n(c, 1, 100), CACHE_PUT_STORED);
	assert_int_equal(put_n(c, 2, 100), CACHE_PUT_STORED);
	cache_close(c);
	raw_alter(f->dir, "body", 1, flip_response);

	c = store_open_ok(f->dir, 0, 0);
	cache_set_kind_name(c, store_kind_name);
	assert_true((fd = cache_damage_fd(c)) >= 0);
	assert_int_equal(get_n(c, 1), 0);
	assert_non_null(strstr(cache_strerror(c), "ocsp entry: its body record "
	    "fails its check (checksum mismatch): damaged"));
	assert_int_equal(take(c, &d), 1);
	assert_note(&d, 1, CACHE_FOUND_LOOKUP, "body", "checksum mismatch");
	/* The owner was woken; the store as a whole is not damaged. */
	assert_int_equal(read(fd, &n, sizeof(n)), (ssize_t)sizeof(n));
	assert_int_equal(cache_damage_found(c, (char[8]){ 0 }, 8), 0);
	/* Asked again before its removal: not noted again. */
	assert_int_equal(get_n(c, 1), 0);
	assert_int_equal(get_n(c, 1), 0);
	assert_int_equal(take(c, NULL), 0);
	/* Its neighbour is untouched; its meta alone still reads. */
	assert_int_equal(get_n(c, 2), 1);
	assert_int_equal(cache_get_meta(c, CACHE_KIND_OCSP, key, klen, &m), 1);

	assert_int_equal(cache_drop_damaged(c, CACHE_KIND_OCSP, key, klen), 1);
	assert_int_equal(cache_get_meta(c, CACHE_KIND_OCSP, key, klen, &m), 0);
	assert_int_equal(get_n(c, 1), 0);
	assert_int_equal(take(c, NULL), 0);
	assert_int_equal(get_n(c, 2), 1);
	/* The next fetch or import stores it again. */
	assert_int_equal(put_n(c, 1, 100), CACHE_PUT_STORED);
	assert_int_equal(get_n(c, 1), 1);
	cache_close(c);

	/* Damaged again after its removal: a new record, noted again. */
	raw_alter(f->dir, "body", 1, flip_response);
	c = store_open_ok(f->dir, 0, 0);
	assert_int_equal(get_n(c, 1), 0);
	assert_int_equal(take(c, &d), 1);
	cache_close(c);
}

static int
count_cb(enum cache_kind kind, const uint8_t *key, size_t klen,
    const struct cache_meta *m, void *arg)
{
	(void)kind;
	(void)key;
	(void)klen;
	(void)m;
	++*(int *)arg;
	return 0;
}

/* An altered meta (a later nextUpdate) is never believed: the walk skips and notes it. */
static void
test_meta_noted_by_walk(void **state)
{
	struct store_fixture	*f = *state;
	struct cache_damaged	 d;
	struct cache_meta	 m;
	struct cache		*c;
	uint8_t			 key[CACHE_KEY_MAX_BYTES];
	size_t			 klen = store_key(key, 1);
	int			 n = 0;

	c = store_open_ok(f->dir, 0, 0);
	assert_int_equal(put_n(c, 1, 100), CACHE_PUT_STORED);
	assert_int_equal(put_n(c, 2, 100), CACHE_PUT_STORED);
	cache_close(c);
	raw_alter(f->dir, "meta", 1, flip_next_update);

	c = store_open_ok(f->dir, 0, 0);
	assert_int_equal(cache_walk(c, CACHE_KIND_OCSP, NULL, 0, 0, count_cb,
	    &n), 1);
	assert_int_equal(n, 1);
	assert_int_equal(cache_walk_skipped(c), 1);
	assert_int_equal(take(c, &d), 1);
	assert_note(&d, 1, CACHE_FOUND_WALK, "meta", "checksum mismatch");
	assert_int_equal(cache_get_meta(c, CACHE_KIND_OCSP, key, klen, &m), 0);
	assert_int_equal(take(c, NULL), 0);
	assert_int_equal(cache_drop_damaged(c, CACHE_KIND_OCSP, key, klen), 1);
	assert_int_equal(get_n(c, 2), 1);
	cache_close(c);
}

/* A put since the damage was noted made the entry sound: the removal leaves it. */
static void
test_drop_keeps_replaced(void **state)
{
	struct store_fixture	*f = *state;
	struct cache		*c;
	uint8_t			 key[CACHE_KEY_MAX_BYTES];
	size_t			 klen = store_key(key, 1);
	int			 n = 0;

	c = store_open_ok(f->dir, 0, 0);
	assert_int_equal(put_n(c, 1, 100), CACHE_PUT_STORED);
	cache_close(c);
	raw_alter(f->dir, "body", 1, flip_response);
	c = store_open_ok(f->dir, 0, 0);
	assert_int_equal(get_n(c, 1), 0);
	assert_int_equal(take(c, NULL), 1);
	assert_int_equal(put_n(c, 1, 100), CACHE_PUT_STORED);
	assert_int_equal(cache_drop_damaged(c, CACHE_KIND_OCSP, key, klen), 0);
	assert_int_equal(get_n(c, 1), 1);
	assert_int_equal(cache_walk(c, CACHE_KIND_OCSP, NULL, 0, 0, count_cb,
	    &n), 1);
	assert_int_equal(n, 1);
	/* Absent: nothing to do. */
	klen = store_key(key, 9);
	assert_int_equal(cache_drop_damaged(c, CACHE_KIND_OCSP, key, klen), 0);
	cache_close(c);
}

/* A newer entry is kept against an older answer, unless its body is damaged. */
static void
test_put_replaces_damaged_newer(void **state)
{
	struct store_fixture	*f = *state;
	struct cache_damaged	 d;
	struct cache		*c;

	c = store_open_ok(f->dir, 0, 0);
	assert_int_equal(put_n(c, 1, 200), CACHE_PUT_STORED);
	assert_int_equal(put_n(c, 1, 100), CACHE_PUT_KEPT);
	cache_close(c);
	raw_alter(f->dir, "body", 1, flip_response);
	c = store_open_ok(f->dir, 0, 0);
	assert_int_equal(put_n(c, 1, 100), CACHE_PUT_STORED);
	assert_int_equal(get_n(c, 1), 1);
	assert_int_equal(take(c, &d), 1);
	assert_note(&d, 1, CACHE_FOUND_WRITE, "body", "checksum mismatch");
	cache_close(c);
}

/* Records written before the checks are read as they were, and a write checks them. */
static void
test_old_records_read(void **state)
{
	struct store_fixture	*f = *state;
	struct cache_touch	 t;
	struct cache_meta	 m;
	struct cache		*c;
	uint8_t			 key[CACHE_KEY_MAX_BYTES];
	size_t			 klen = store_key(key, 1);

	c = store_open_ok(f->dir, 0, 0);
	assert_int_equal(put_n(c, 1, 100), CACHE_PUT_STORED);
	cache_close(c);
	raw_alter(f->dir, "body", 1, make_old_body);
	raw_alter(f->dir, "meta", 1, make_old_meta);

	c = store_open_ok(f->dir, 0, 0);
	assert_int_equal(get_n(c, 1), 1);
	assert_int_equal(cache_get_meta(c, CACHE_KIND_OCSP, key, klen, &m), 1);
	assert_int_equal(m.this_update, 100);
	memset(&t, 0, sizeof(t));
	t.kind = CACHE_KIND_OCSP;
	memcpy(t.key, key, klen);
	t.klen = klen;
	t.served = 1;
	assert_int_equal(cache_touch(c, &t, 1), 0);
	assert_int_equal(take(c, NULL), 0);
	cache_close(c);
	/* The touch wrote the meta checked: altered now, it is refused. */
	raw_alter(f->dir, "meta", 1, flip_next_update);
	c = store_open_ok(f->dir, 0, 0);
	assert_int_equal(cache_get_meta(c, CACHE_KIND_OCSP, key, klen, &m), 0);
	assert_int_equal(take(c, NULL), 1);
	cache_close(c);
}

/* A twin (a lookup thread's handle) notes on its original; only the original takes. */
static void
test_twin_notes_on_original(void **state)
{
	struct store_fixture	*f = *state;
	struct cache_damaged	 d;
	struct cache		*c, *t;
	struct pollfd		 pfd;

	c = store_open_ok(f->dir, 0, 0);
	assert_int_equal(put_n(c, 1, 100), CACHE_PUT_STORED);
	cache_close(c);
	raw_alter(f->dir, "body", 1, flip_response);
	c = store_open_ok(f->dir, 0, 0);
	pfd.fd = cache_damage_fd(c);
	pfd.events = POLLIN;
	assert_non_null(t = cache_twin(c));
	assert_int_equal(get_n(t, 1), 0);
	assert_int_equal(poll(&pfd, 1, 0), 1);
	assert_int_equal(take(t, NULL), 0);
	assert_int_equal(get_n(c, 1), 0);
	assert_int_equal(take(c, &d), 1);
	assert_note(&d, 1, CACHE_FOUND_LOOKUP, "body", "checksum mismatch");
	cache_close(t);
	cache_close(c);
}

static void
drop_done(const struct cache_writer_res *res, void *arg)
{
	*(int *)arg = res->rc;
}

/* The daemon's removal, off the loop: on the writer thread. */
static void
test_writer_drops(void **state)
{
	struct store_fixture	*f = *state;
	struct cache_writer	*w;
	struct cache		*c;
	uint8_t			 key[CACHE_KEY_MAX_BYTES];
	size_t			 klen = store_key(key, 1);
	char			 err[256];
	int			 rc = -2;

	c = store_open_ok(f->dir, 0, 0);
	assert_int_equal(put_n(c, 1, 100), CACHE_PUT_STORED);
	cache_close(c);
	raw_alter(f->dir, "body", 1, flip_response);
	c = store_open_ok(f->dir, 0, 0);
	assert_int_equal(get_n(c, 1), 0);
	assert_int_equal(take(c, NULL), 1);
	assert_non_null(w = cache_writer_start(c, err, sizeof(err)));
	assert_int_equal(cache_writer_drop_damaged(w, CACHE_KIND_OCSP, key,
	    klen, drop_done, &rc), 0);
	cache_writer_wait(w);
	assert_int_equal(rc, 1);
	cache_writer_stop(w);
	/* Forgotten once dropped: a new damage of the key is noted again. */
	assert_int_equal(put_n(c, 1, 100), CACHE_PUT_STORED);
	cache_close(c);
	raw_alter(f->dir, "body", 1, flip_response);
	c = store_open_ok(f->dir, 0, 0);
	assert_int_equal(get_n(c, 1), 0);
	assert_int_equal(take(c, NULL), 1);
	cache_close(c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_body_noted_once,
		    store_setup, store_teardown),
		cmocka_unit_test_setup_teardown(test_meta_noted_by_walk,
		    store_setup, store_teardown),
		cmocka_unit_test_setup_teardown(test_drop_keeps_replaced,
		    store_setup, store_teardown),
		cmocka_unit_test_setup_teardown(test_put_replaces_damaged_newer,
		    store_setup, store_teardown),
		cmocka_unit_test_setup_teardown(test_old_records_read,
		    store_setup, store_teardown),
		cmocka_unit_test_setup_teardown(test_twin_notes_on_original,
		    store_setup, store_teardown),
		cmocka_unit_test_setup_teardown(test_writer_drops,
		    store_setup, store_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
