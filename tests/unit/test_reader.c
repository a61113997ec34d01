/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for cache/reader.c: lookups on threads, copied out, their results back on the caller's thread. */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cache/reader.h"
#include "cache/store.h"
#include "cache/writer.h"
#include "entry/kinds.h"

#include "store_fixture.h"

#define NKEYS		200
#define BODY_BYTES	3000

/* What each lookup's callback saw, by key number. */
struct got {
	int		 calls;
	int		 rc;
	int64_t		 this_update;
	size_t		 len;
	int		 byte;		/* every response byte, or -2 when they differ */
	size_t		 hlen;
	char		 err[256];
};

static struct got	got[NKEYS];
static unsigned		tags[NKEYS];

static void
put_key(struct cache *c, unsigned i, int64_t tu, int fillc)
{
	struct cache_meta	 m;
	struct cache_body	 b = { 0 };
	uint8_t			 key[CACHE_KEY_MAX_BYTES], resp[BODY_BYTES];
	const char		*hdr = "Content-Type: application/ocsp-response\r\n";

	store_meta(&m, CACHE_KIND_OCSP, tu);
	memset(resp, fillc, sizeof(resp));
	b.response = resp;
	b.response_len = sizeof(resp);
	b.headers = (const uint8_t *)hdr;
	b.headers_len = strlen(hdr);
	assert_int_equal(cache_put(c, key, store_key(key, i), &m, &b),
	    CACHE_PUT_STORED);
}

static void
seen(const struct cache_reader_res *res, void *arg)
{
	struct got	*g = &got[*(unsigned *)arg];
	size_t		 i;

	g->calls++;
	g->rc = res->rc;
	if (res->rc == -1)
		snprintf(g->err, sizeof(g->err), "%s", res->err);
	if (res->rc != 1)
		return;
	g->this_update = res->meta.this_update;
	g->len = res->body.response_len;
	g->hlen = res->body.headers_len;
	g->byte = res->body.response[0];
	for (i = 1; i < res->body.response_len; i++)
		if (res->body.response[i] != res->body.response[0])
			g->byte = -2;
}

static void
submit(struct cache_reader *r, unsigned i)
{
	uint8_t	key[CACHE_KEY_MAX_BYTES];

	tags[i] = i;
	assert_int_equal(cache_reader_get(r, CACHE_KIND_OCSP, key,
	    store_key(key, i), seen, &tags[i]), 0);
}

static int
setup(void **state)
{
	memset(got, 0, sizeof(got));
	return store_setup_open(state);
}

/* Found and absent keys, each answered once with a copy of what is stored. */
static void
test_found_and_absent(void **state)
{
	struct store_fixture	*f = *state;
	struct cache_reader	*r;
	char			 err[256];
	unsigned		 i;

	for (i = 0; i < NKEYS / 2; i++)
		put_key(f->c, i, 1000 + i, 'a' + i % 20);
	/* Threads enough to have every lookup in hand at once. */
	assert_non_null(r = cache_reader_start(f->c, 8, err, sizeof(err)));
	for (i = 0; i < NKEYS; i++)
		submit(r, i);
	assert_int_equal(cache_reader_pending(r), NKEYS);
	cache_reader_wait(r);
	assert_int_equal(cache_reader_pending(r), 0);
	for (i = 0; i < NKEYS; i++) {
		assert_int_equal(got[i].calls, 1);
		if (i >= NKEYS / 2) {
			assert_int_equal(got[i].rc, 0);
			continue;
		}
		assert_int_equal(got[i].rc, 1);
		assert_int_equal(got[i].this_update, 1000 + i);
		assert_int_equal(got[i].len, BODY_BYTES);
		assert_int_equal(got[i].byte, 'a' + i % 20);
		assert_int_equal(got[i].hlen,
		    strlen("Content-Type: application/ocsp-response\r\n"));
	}
	/* A key LMDB could not hold is refused at once. */
	errno = 0;
	assert_int_equal(cache_reader_get(r, CACHE_KIND_OCSP,
	    (const uint8_t *)"", 0, seen, &tags[0]), -1);
	assert_int_equal(errno, EINVAL);
	cache_reader_stop(r);
	assert_null(cache_reader_start(f->c, 0, err, sizeof(err)));
	assert_non_null(strstr(err, "not in 1.."));
}

/* The fd wakes the caller; collect runs the callbacks and drains it. */
static void
test_fd(void **state)
{
	struct store_fixture	*f = *state;
	struct cache_reader	*r;
	struct pollfd		 pfd;
	char			 err[256];
	int			 n = 0;

	put_key(f->c, 7, 1000, 'x');
	assert_non_null(r = cache_reader_start(f->c, 2, err, sizeof(err)));
	pfd.fd = cache_reader_fd(r);
	pfd.events = POLLIN;
	assert_int_equal(poll(&pfd, 1, 0), 0);
	submit(r, 7);
	/* The callback runs only from collect, on this thread. */
	while (got[7].calls == 0 && n++ < 100) {
		assert_int_equal(poll(&pfd, 1, 5000), 1);
		cache_reader_collect(r);
	}
	assert_int_equal(got[7].calls, 1);
	assert_int_equal(got[7].byte, 'x');
	assert_int_equal(poll(&pfd, 1, 0), 0);
	cache_reader_stop(r);
}

/*
 * An idle thread holds no snapshot: rewrites after the lookups reuse the
 * pages they free, as with no reader at all.
 */
static void
test_no_snapshot_kept(void **state)
{
	struct store_fixture	*f = *state;
	struct cache_reader	*r;
	struct cache_room	 a, b;
	char			 err[256];
	unsigned		 i;

	put_key(f->c, 3, 1000, 'p');
	assert_non_null(r = cache_reader_start(f->c, 3, err, sizeof(err)));
	for (i = 0; i < 3; i++)
		submit(r, 3);
	cache_reader_wait(r);
	assert_int_equal(got[3].calls, 3);
	put_key(f->c, 3, 1001, 'q');
	assert_int_equal(cache_room(f->c, &a), 0);
	for (i = 0; i < 100; i++)
		put_key(f->c, 3, 1002 + i, 'q');
	assert_int_equal(cache_room(f->c, &b), 0);
	assert_true(b.used_bytes - a.used_bytes < 32 * 4096);
	cache_reader_stop(r);
}

/* After the original is reset, lookups read the new store, not the old one. */
static void
test_after_reset(void **state)
{
	struct store_fixture	*f = *state;
	struct cache_reader	*r;
	char			 err[256], aside[512];
	unsigned		 i;

	for (i = 0; i < 10; i++)
		put_key(f->c, i, 1000, 'o');
	assert_non_null(r = cache_reader_start(f->c, 3, err, sizeof(err)));
	for (i = 0; i < 10; i++)
		submit(r, i);
	cache_reader_wait(r);
	assert_int_equal(cache_reset(f->c, "test", aside, sizeof(aside)), 0);
	put_key(f->c, 5, 2000, 'n');
	memset(got, 0, sizeof(got));
	for (i = 0; i < 10; i++)
		submit(r, i);
	cache_reader_wait(r);
	for (i = 0; i < 10; i++)
		assert_int_equal(got[i].rc, i == 5 ? 1 : 0);
	assert_int_equal(got[5].byte, 'n');
	assert_int_equal(got[5].this_update, 2000);
	cache_reader_stop(r);
	assert_int_equal(unlink(aside), 0);
}

/*
 * Damage a lookup thread finds marks the original for the caller (its
 * fd wakes), and every lookup after it fails without reading the map;
 * after the caller's reset the threads read the new store.
 */
static void
test_damage_on_thread(void **state)
{
	struct store_fixture	*f = *state;
	struct cache_reader	*r;
	char			 err[256], why[CACHE_DAMAGE_NOTE_BYTES], aside[512];
	struct pollfd		 pfd;
	uint64_t		 n;
	unsigned		 i, refused = 0;

	for (i = 0; i < NKEYS; i++)
		put_key(f->c, i, 1000, 'o');
	assert_true((pfd.fd = cache_damage_fd(f->c)) >= 0);
	pfd.events = POLLIN;
	/* Threads enough to have every lookup in hand at once. */
	assert_non_null(r = cache_reader_start(f->c, 8, err, sizeof(err)));
	store_zero_tree(f->dir);
	for (i = 0; i < NKEYS; i++)
		submit(r, i);
	cache_reader_wait(r);
	for (i = 0; i < NKEYS; i++) {
		assert_int_equal(got[i].calls, 1);
		assert_int_equal(got[i].rc, -1);
		assert_non_null(strstr(got[i].err, "the store is damaged"));
		refused += strstr(got[i].err, "not read until") != NULL;
	}
	/* Each thread meets it once at most; the rest are refused unread. */
	assert_true(refused >= NKEYS - 8);
	assert_int_equal(poll(&pfd, 1, 0), 1);
	assert_int_equal(read(pfd.fd, &n, sizeof(n)), (ssize_t)sizeof(n));
	assert_int_equal(n, 1);
	assert_int_equal(cache_damage_found(f->c, why, sizeof(why)), 1);
	assert_non_null(strstr(why, "MDB_"));

	assert_int_equal(cache_reset(f->c, "", aside, sizeof(aside)), 0);
	put_key(f->c, 7, 2000, 'n');
	memset(got, 0, sizeof(got));
	submit(r, 7);
	cache_reader_wait(r);
	assert_int_equal(got[7].rc, 1);
	assert_int_equal(got[7].byte, 'n');
	assert_int_equal(cache_damage_found(f->c, why, sizeof(why)), 0);
	cache_reader_stop(r);
	assert_int_equal(unlink(aside), 0);
}

/*
 * At most CACHE_READER_PENDING_PER_THREAD lookups a thread in hand until
 * their callbacks run: the next is refused, nothing queued.
 */
static void
test_bounded(void **state)
{
	struct store_fixture	*f = *state;
	struct cache_reader	*r;
	uint8_t			 key[CACHE_KEY_MAX_BYTES];
	char			 err[256];
	unsigned		 i, max = 2 * CACHE_READER_PENDING_PER_THREAD;

	put_key(f->c, 0, 1000, 'b');
	assert_non_null(r = cache_reader_start(f->c, 2, err, sizeof(err)));
	for (i = 0; i < max; i++)
		submit(r, i % 4);
	errno = 0;
	assert_int_equal(cache_reader_get(r, CACHE_KIND_OCSP, key,
	    store_key(key, 0), seen, &tags[0]), -1);
	assert_int_equal(errno, EAGAIN);
	assert_int_equal(cache_reader_pending(r), max);
	cache_reader_wait(r);
	assert_int_equal(got[0].calls + got[1].calls + got[2].calls +
	    got[3].calls, max);
	/* Collected: room again. */
	submit(r, 0);
	cache_reader_wait(r);
	assert_int_equal(got[0].calls, max / 4 + 1);
	assert_int_equal(got[0].byte, 'b');
	cache_reader_stop(r);
}

/* Stopping finishes what was queued: every callback runs once. */
static void
test_stop_finishes(void **state)
{
	struct store_fixture	*f = *state;
	struct cache_reader	*r;
	char			 err[256];
	unsigned		 i;

	for (i = 0; i < 50; i++)
		put_key(f->c, i, 1000, 's');
	assert_non_null(r = cache_reader_start(f->c, 2, err, sizeof(err)));
	for (i = 0; i < 2 * CACHE_READER_PENDING_PER_THREAD; i++)
		submit(r, i);
	cache_reader_stop(r);
	for (i = 0; i < 2 * CACHE_READER_PENDING_PER_THREAD; i++) {
		assert_int_equal(got[i].calls, 1);
		assert_int_equal(got[i].rc, i < 50 ? 1 : 0);
	}
	cache_reader_stop(NULL);
	cache_reader_wait(NULL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_found_and_absent, setup,
		    store_teardown),
		cmocka_unit_test_setup_teardown(test_fd, setup, store_teardown),
		cmocka_unit_test_setup_teardown(test_no_snapshot_kept, setup,
		    store_teardown),
		cmocka_unit_test_setup_teardown(test_after_reset, setup,
		    store_teardown),
		cmocka_unit_test_setup_teardown(test_damage_on_thread, setup,
		    store_teardown),
		cmocka_unit_test_setup_teardown(test_bounded, setup,
		    store_teardown),
		cmocka_unit_test_setup_teardown(test_stop_finishes, setup,
		    store_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
