/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for cache/writer.c: writes on the thread, in order, their results back on the caller's thread. */
#include "config.h"

#include <sys/stat.h>
#include <sys/wait.h>

#include <fcntl.h>
#include <lmdb.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cache/store.h"
#include "cache/writer.h"
#include "entry/kinds.h"

#include "store_fixture.h"

#define MIB		((size_t)1 << 20)
#define SEEN_MAX	64

/* What the callbacks saw, in the order they ran. */
struct seen {
	int		 n;
	int		 tag[SEEN_MAX];
	int		 rc[SEEN_MAX];
	int		 map_full[SEEN_MAX];
	char		 err[256];
	struct cache	*c;		/* read from in the callback */
	int		 visible[SEEN_MAX];	/* key-<tag> was readable there */
	struct cache_writer *w;		/* submit another from the callback */
};

struct done_arg {
	struct seen	*s;
	int		 tag;
};

static struct done_arg	args[SEEN_MAX];

static void
note(const struct cache_writer_res *res, void *arg)
{
	struct done_arg		*a = arg;
	struct seen		*s = a->s;
	struct cache_meta	 m;
	uint8_t			 key[CACHE_KEY_MAX_BYTES];
	size_t			 klen;

	assert_true(s->n < SEEN_MAX);
	s->tag[s->n] = a->tag;
	s->rc[s->n] = res->rc;
	s->map_full[s->n] = res->map_full;
	if (res->rc == -1)
		snprintf(s->err, sizeof(s->err), "%s", res->err);
	if (s->c != NULL) {
		klen = store_key(key, (unsigned)a->tag);
		s->visible[s->n] = cache_get_meta(s->c, CACHE_KIND_OCSP, key,
		    klen, &m);
	}
	s->n++;
}

static struct done_arg *
arg_of(struct seen *s, int tag)
{
	args[tag].s = s;
	args[tag].tag = tag;
	return &args[tag];
}

/* Submit a put of key-<tag> with a body of len bytes of `fillc`. */
static void
submit_put(struct cache_writer *w, struct seen *s, int tag, int64_t tu,
    size_t len, int fillc)
{
	struct cache_meta	 m;
	struct cache_body	 b = { 0 };
	uint8_t			 key[CACHE_KEY_MAX_BYTES], req[8];
	uint8_t			*resp;
	size_t			 klen;

	klen = store_key(key, (unsigned)tag);
	store_meta(&m, CACHE_KIND_OCSP, tu);
	resp = malloc(len);
	assert_non_null(resp);
	memset(resp, fillc, len);
	memset(req, 'r', sizeof(req));
	b.request = req;
	b.request_len = sizeof(req);
	b.response = resp;
	b.response_len = len;
	assert_int_equal(cache_writer_put(w, key, klen, &m, &b, note,
	    arg_of(s, tag)), 0);
	/* The writer copied it: what the caller does with its buffers now is its own affair. */
	memset(resp, 0xee, len);
	free(resp);
}

static int
response_byte(struct cache *c, int tag, size_t *len)
{
	struct cache_meta	 m;
	struct cache_body	 b;
	uint8_t			 key[CACHE_KEY_MAX_BYTES];
	size_t			 klen, i;

	klen = store_key(key, (unsigned)tag);
	if (cache_get(c, CACHE_KIND_OCSP, key, klen, &m, &b) != 1)
		return -1;
	*len = b.response_len;
	for (i = 1; i < b.response_len; i++)
		if (b.response[i] != b.response[0])
			return -2;
	return b.response[0];
}

/* Puts land in order, each as cache_put would judge it, seen once its callback runs. */
static void
test_order_and_results(void **state)
{
	struct store_fixture	*f = *state;
	struct cache_writer	*w;
	struct seen		 s = { 0 };
	char			 err[256];
	size_t			 len;

	assert_non_null(w = cache_writer_start(f->c, err, sizeof(err)));
	s.c = f->c;
	submit_put(w, &s, 1, 1000, 300, 'a');
	submit_put(w, &s, 2, 1000, 5000, 'b');
	submit_put(w, &s, 1, 500, 300, 'c');	/* older: kept */
	submit_put(w, &s, 1, 2000, 700, 'd');	/* newer: stored */
	assert_int_equal(cache_writer_mark(w, note, arg_of(&s, 9)), 0);
	assert_int_equal(cache_writer_pending(w), 5);
	cache_writer_wait(w);
	assert_int_equal(cache_writer_pending(w), 0);

	assert_int_equal(s.n, 5);
	assert_int_equal(s.tag[0], 1);
	assert_int_equal(s.rc[0], CACHE_PUT_STORED);
	assert_int_equal(s.tag[1], 2);
	assert_int_equal(s.rc[1], CACHE_PUT_STORED);
	assert_int_equal(s.rc[2], CACHE_PUT_KEPT);
	assert_int_equal(s.rc[3], CACHE_PUT_STORED);
	assert_int_equal(s.tag[4], 9);
	assert_int_equal(s.rc[4], 0);
	/* the caller's own handle reads each write in its callback */
	assert_int_equal(s.visible[0], 1);
	assert_int_equal(s.visible[1], 1);

	assert_int_equal(response_byte(f->c, 1, &len), 'd');
	assert_int_equal(len, 700);
	assert_int_equal(response_byte(f->c, 2, &len), 'b');
	assert_int_equal(len, 5000);
	cache_writer_stop(w);
}

/* put_meta, touch and aux: the store's own rules, the errors as the store words them. */
static void
test_meta_and_touch(void **state)
{
	struct store_fixture	*f = *state;
	struct cache_writer	*w;
	struct seen		 s = { 0 };
	struct cache_meta	 m;
	struct cache_touch	 t[4];
	uint8_t			 key[CACHE_KEY_MAX_BYTES], *aux;
	size_t			 klen, auxlen;
	char			 err[256];

	assert_non_null(w = cache_writer_start(f->c, err, sizeof(err)));
	submit_put(w, &s, 3, 1000, 100, 'x');
	klen = store_key(key, 3);
	store_meta(&m, CACHE_KIND_OCSP, 1000);
	m.next_refresh_at = 4242;
	m.refresh_failures = 2;
	assert_int_equal(cache_writer_put_meta(w, key, klen, &m, note,
	    arg_of(&s, 3)), 0);
	/* absent: the store's error, through the callback */
	klen = store_key(key, 4);
	assert_int_equal(cache_writer_put_meta(w, key, klen, &m, note,
	    arg_of(&s, 4)), 0);
	/* two used slots among empty ones; the empty ones are not written */
	memset(t, 0, sizeof(t));
	t[1].kind = CACHE_KIND_OCSP;
	t[1].klen = store_key(t[1].key, 3);
	t[1].served = 5;
	t[1].last_served_at = 1234;
	t[3].kind = CACHE_KIND_OCSP;
	t[3].klen = store_key(t[3].key, 77);	/* absent: skipped */
	t[3].served = 1;
	assert_int_equal(cache_writer_touch(w, t, 4, note, arg_of(&s, 5)), 0);
	memset(t, 0, sizeof(t));	/* copied at submit */
	assert_int_equal(cache_writer_aux_put(w, "daemon",
	    (const uint8_t *)"{\"up\":1}", 8, note, arg_of(&s, 6)), 0);
	cache_writer_wait(w);

	assert_int_equal(s.n, 5);
	assert_int_equal(s.rc[4], 0);
	assert_int_equal(cache_aux_get(f->c, "daemon", &aux, &auxlen), 1);
	assert_int_equal(auxlen, 8);
	assert_memory_equal(aux, "{\"up\":1}", 8);
	free(aux);
	assert_int_equal(s.rc[1], 0);
	assert_int_equal(s.tag[2], 4);
	assert_int_equal(s.rc[2], -1);
	assert_non_null(strstr(s.err, "not found"));
	assert_int_equal(s.rc[3], 0);

	klen = store_key(key, 3);
	assert_int_equal(cache_get_meta(f->c, CACHE_KIND_OCSP, key, klen, &m), 1);
	assert_int_equal(m.next_refresh_at, 4242);
	assert_int_equal(m.refresh_failures, 2);
	assert_int_equal(m.served_count, 5);
	assert_int_equal(m.last_served_at, 1234);
	cache_writer_stop(w);
}

/* A callback that submits again: wait and stop wait for that write too. */
static void
chain(const struct cache_writer_res *res, void *arg)
{
	struct done_arg	*a = arg;

	struct cache_meta	 m;
	struct cache_body	 b = { 0 };
	uint8_t			 key[CACHE_KEY_MAX_BYTES], resp[1];
	size_t			 klen;

	note(res, arg);
	if (a->tag >= 12)
		return;
	klen = store_key(key, (unsigned)a->tag + 1);
	store_meta(&m, CACHE_KIND_OCSP, 1000);
	resp[0] = (uint8_t)('a' + a->tag + 1);
	b.response = resp;
	b.response_len = 1;
	assert_int_equal(cache_writer_put(a->s->w, key, klen, &m, &b, chain,
	    arg_of(a->s, a->tag + 1)), 0);
}

static void
test_callback_submits(void **state)
{
	struct store_fixture	*f = *state;
	struct cache_writer	*w;
	struct seen		 s = { 0 };
	struct cache_meta	 m;
	struct cache_body	 b = { 0 };
	uint8_t			 key[CACHE_KEY_MAX_BYTES], resp[1] = { 'z' };
	size_t			 klen, len;
	char			 err[256];

	assert_non_null(w = cache_writer_start(f->c, err, sizeof(err)));
	s.w = w;
	klen = store_key(key, 10);
	store_meta(&m, CACHE_KIND_OCSP, 1000);
	b.response = resp;
	b.response_len = 1;
	assert_int_equal(cache_writer_put(w, key, klen, &m, &b, chain,
	    arg_of(&s, 10)), 0);
	cache_writer_stop(w);	/* 10, then 11 and 12 from the callbacks */
	assert_int_equal(s.n, 3);
	assert_int_equal(s.tag[2], 12);
	assert_int_equal(response_byte(f->c, 12, &len), 'a' + 12);
}

/*
 * The point of the thread: while a commit cannot proceed (another process
 * holds the store's write lock), a submit returns at once and the
 * caller's thread goes on; the write lands when the lock is let go.
 */
static void
test_caller_not_held(void **state)
{
	struct store_fixture	*f = *state;
	struct cache_writer	*w;
	struct seen		 s = { 0 };
	struct pollfd		 pfd;
	char			 err[256], c;
	int			 go[2], held[2], status;
	size_t			 len;
	pid_t			 pid;

	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(held), 0);
	if ((pid = fork()) == 0) {
		MDB_env	*env;
		MDB_txn	*txn;

		if (mdb_env_create(&env) != 0 ||
		    mdb_env_set_maxdbs(env, 8) != 0 ||
		    mdb_env_open(env, f->dir, MDB_NOTLS, 0660) != 0 ||
		    mdb_txn_begin(env, NULL, 0, &txn) != 0)
			_exit(2);
		(void)!write(held[1], "h", 1);
		(void)!read(go[0], &c, 1);
		mdb_txn_abort(txn);
		mdb_env_close(env);
		_exit(0);
	}
	assert_true(pid > 0);
	assert_int_equal(read(held[0], &c, 1), 1);

	assert_non_null(w = cache_writer_start(f->c, err, sizeof(err)));
	submit_put(w, &s, 20, 1000, 100, 'q');
	/* 300 ms in which the write cannot finish: nothing to collect */
	pfd.fd = cache_writer_fd(w);
	pfd.events = POLLIN;
	assert_int_equal(poll(&pfd, 1, 300), 0);
	cache_writer_collect(w);
	assert_int_equal(s.n, 0);
	assert_int_equal(cache_writer_pending(w), 1);

	assert_int_equal(write(go[1], "g", 1), 1);
	assert_int_equal(poll(&pfd, 1, 10000), 1);
	cache_writer_collect(w);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.rc[0], CACHE_PUT_STORED);
	assert_int_equal(response_byte(f->c, 20, &len), 'q');
	cache_writer_stop(w);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* A full map: the callback gets the store's error and its map_full. */
static void
test_map_full(void **state)
{
	struct store_fixture	*f = *state;
	struct cache_writer	*w;
	struct cache		*c;
	struct seen		 s = { 0 };
	char			 err[256];
	int			 i;

	c = store_open_ok(f->dir, 1 * MIB, 0);
	assert_non_null(w = cache_writer_start(c, err, sizeof(err)));
	for (i = 30; i < 34; i++)
		submit_put(w, &s, i, 1000, 400 * 1024, 'm');
	cache_writer_wait(w);
	assert_int_equal(s.n, 4);
	assert_int_equal(s.rc[0], CACHE_PUT_STORED);
	assert_int_equal(s.rc[3], -1);
	assert_int_equal(s.map_full[3], 1);
	assert_non_null(strstr(s.err, "map full"));
	cache_writer_stop(w);
	cache_close(c);
}

static void
room_note(const struct cache_writer_res *res, void *arg)
{
	struct cache_room	*room = arg;

	assert_int_equal(res->rc, 0);
	*room = res->room;
}

/* The room, measured on the thread after the writes before it: as cache_room says. */
static void
test_room(void **state)
{
	struct store_fixture	*f = *state;
	struct cache_writer	*w;
	struct cache_room	 before, after, direct;
	struct seen		 s = { 0 };
	char			 err[256];
	int			 i;

	assert_non_null(w = cache_writer_start(f->c, err, sizeof(err)));
	assert_int_equal(cache_writer_room(w, room_note, &before), 0);
	for (i = 0; i < 20; i++)
		submit_put(w, &s, i, 1000, 16384, 'r');
	assert_int_equal(cache_writer_room(w, room_note, &after), 0);
	cache_writer_wait(w);
	assert_int_equal(s.n, 20);
	assert_true(before.map_bytes > 0);
	assert_true(after.used_bytes >= before.used_bytes + 20 * 4 * 4096);
	assert_int_equal(cache_room(f->c, &direct), 0);
	assert_int_equal(direct.map_bytes, after.map_bytes);
	assert_int_equal(direct.used_bytes, after.used_bytes);
	assert_int_equal(direct.free_bytes, after.free_bytes);
	cache_writer_stop(w);
}

/* After the original is reset (a damaged store moved aside), writes go to the new one. */
static void
test_after_reset(void **state)
{
	struct store_fixture	*f = *state;
	struct cache_writer	*w;
	struct seen		 s = { 0 };
	char			 err[256], aside[512];
	size_t			 len;

	assert_non_null(w = cache_writer_start(f->c, err, sizeof(err)));
	submit_put(w, &s, 40, 1000, 100, 'o');
	/* The room is read in a read transaction of the twin's, which the reset must end. */
	assert_int_equal(cache_writer_room(w, NULL, NULL), 0);
	cache_writer_wait(w);
	assert_int_equal(cache_reset(f->c, "test", aside, sizeof(aside)), 0);
	assert_int_equal(response_byte(f->c, 40, &len), -1);
	submit_put(w, &s, 41, 1000, 100, 'n');
	cache_writer_wait(w);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.rc[1], CACHE_PUT_STORED);
	assert_int_equal(response_byte(f->c, 41, &len), 'n');
	cache_writer_stop(w);
	assert_int_equal(unlink(aside), 0);
}

/*
 * Damage the writer thread finds, in a put or in the room measurement,
 * marks the original for the caller: the writes after it are refused
 * without touching the file.
 */
static void
test_damage_on_thread(void **state)
{
	struct store_fixture	*f = *state;
	struct cache_writer	*w;
	struct seen		 s = { 0 };
	char			 err[256], why[CACHE_DAMAGE_NOTE_BYTES], aside[512];
	struct pollfd		 pfd;
	uint64_t		 n;
	int			 i;

	assert_true((pfd.fd = cache_damage_fd(f->c)) >= 0);
	pfd.events = POLLIN;
	assert_non_null(w = cache_writer_start(f->c, err, sizeof(err)));
	for (i = 0; i < 40; i++)
		submit_put(w, &s, i, 1000, 1000, 'o');
	cache_writer_wait(w);
	store_zero_tree(f->dir);
	s.n = 0;
	submit_put(w, &s, 3, 2000, 1000, 'n');
	submit_put(w, &s, 50, 2000, 1000, 'n');
	cache_writer_wait(w);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.rc[0], -1);
	assert_int_equal(s.rc[1], -1);
	assert_non_null(strstr(s.err, "not read until it is moved aside"));
	assert_int_equal(poll(&pfd, 1, 0), 1);
	assert_int_equal(read(pfd.fd, &n, sizeof(n)), (ssize_t)sizeof(n));
	assert_int_equal(cache_damage_found(f->c, why, sizeof(why)), 1);
	assert_non_null(strstr(why, "MDB_"));
	assert_int_equal(cache_reset(f->c, "", aside, sizeof(aside)), 0);

	/* The room measurement meets it as well. */
	for (i = 0; i < 40; i++)
		submit_put(w, &s, i, 1000, 1000, 'o');
	cache_writer_wait(w);
	store_zero_tree(f->dir);
	s.n = 0;
	assert_int_equal(cache_writer_room(w, note, arg_of(&s, 60)), 0);
	cache_writer_wait(w);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.rc[0], -1);
	assert_int_equal(cache_damage_found(f->c, why, sizeof(why)), 1);
	assert_non_null(strstr(why, "room: "));
	cache_writer_stop(w);
	assert_int_equal(unlink(aside), 0);
}

/* Stopping finishes what was queued: a reopened store has every write. */
static void
test_stop_finishes(void **state)
{
	struct store_fixture	*f = *state;
	struct cache_writer	*w;
	struct seen		 s = { 0 };
	char			 err[256];
	size_t			 len;
	int			 i;

	assert_non_null(w = cache_writer_start(f->c, err, sizeof(err)));
	for (i = 50; i < 60; i++)
		submit_put(w, &s, i, 1000, 2000, 'A' + i - 50);
	cache_writer_stop(w);
	assert_int_equal(s.n, 10);
	cache_close(f->c);
	f->c = store_open_ok(f->dir, 0, 1);
	for (i = 50; i < 60; i++)
		assert_int_equal(response_byte(f->c, i, &len), 'A' + i - 50);
	/* A twin refuses what only the original may do. */
	{
		struct cache	*t = cache_twin(f->c);

		assert_non_null(t);
		assert_null(cache_twin(t));
		assert_int_equal(cache_set_lazy_meta(t, 1), -1);
		cache_close(t);
	}
	assert_int_equal(response_byte(f->c, 50, &len), 'A');
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_damage_on_thread,
		    store_setup_open, store_teardown),
		cmocka_unit_test_setup_teardown(test_order_and_results,
		    store_setup_open, store_teardown),
		cmocka_unit_test_setup_teardown(test_room,
		    store_setup_open, store_teardown),
		cmocka_unit_test_setup_teardown(test_meta_and_touch,
		    store_setup_open, store_teardown),
		cmocka_unit_test_setup_teardown(test_callback_submits,
		    store_setup_open, store_teardown),
		cmocka_unit_test_setup_teardown(test_caller_not_held,
		    store_setup_open, store_teardown),
		cmocka_unit_test_setup_teardown(test_map_full,
		    store_setup, store_teardown),
		cmocka_unit_test_setup_teardown(test_after_reset,
		    store_setup_open, store_teardown),
		cmocka_unit_test_setup_teardown(test_stop_finishes,
		    store_setup_open, store_teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
