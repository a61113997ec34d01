/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for proxy/flight.c over a fake fetch: joining by key, leaving, the queued drop, the hold and the outcome. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/fetch/fetch.h"
#include "proxy/flight.h"

/* ---- the fake fetch: jobs recorded, ended when the test says ------------- */

#define JOBS_MAX	8

struct fetch_job {
	char		 path[64];
	fetch_check_cb	*check;
	fetch_done_cb	*done;
	void		*arg;
	int		 queued;
	int		 cancelled;
	int		 ended;
};

static struct fetch_job	jobs[JOBS_MAX];
static size_t		njobs;
static int		start_fails;	/* fetch_start returns NULL */
static int		fake_pool;

struct fetch_job *
fetch_start(struct fetch_pool *pool, const struct fetch_req *req,
    fetch_check_cb *check, fetch_done_cb *done, void *arg)
{
	struct fetch_job	*job;

	assert_ptr_equal(pool, &fake_pool);
	if (start_fails)
		return NULL;
	assert_true(njobs < JOBS_MAX);
	job = &jobs[njobs++];
	memset(job, 0, sizeof(*job));
	snprintf(job->path, sizeof(job->path), "%s", req->path);
	job->check = check;
	job->done = done;
	job->arg = arg;
	return job;
}

int
fetch_job_queued(const struct fetch_job *job)
{
	return job->queued;
}

void
fetch_cancel(struct fetch_job *job)
{
	assert_false(job->ended);
	job->cancelled = 1;
	job->ended = 1;
}

/*
 * The upstream answers 200 with body, from a buffer of the fake's that is
 * overwritten once the fetch is done with it. The check's verdict.
 */
static enum fetch_verdict
job_answer(struct fetch_job *job, const char *body)
{
	struct fetch_res	 res;
	enum fetch_verdict	 v;
	char			 why[64] = "", buf[64];

	assert_false(job->ended);
	snprintf(buf, sizeof(buf), "%s", body);
	memset(&res, 0, sizeof(res));
	res.err = FETCH_OK;
	res.http_status = 200;
	res.body = (const uint8_t *)buf;
	res.body_len = strlen(buf);
	res.upstream = "up-a";
	v = job->check(&res, job->arg, why, sizeof(why));
	if (v == FETCH_ACCEPT) {
		job->ended = 1;
		job->done(&res, job->arg);
	}
	memset(buf, 'x', sizeof(buf) - 1);
	return v;
}

/* Every upstream failed. */
static void
job_fail(struct fetch_job *job)
{
	struct fetch_res	res;

	assert_false(job->ended);
	memset(&res, 0, sizeof(res));
	res.err = FETCH_ERR_CONNECT;
	res.summary = "up-a: connect: refused";
	job->ended = 1;
	job->done(&res, job->arg);
}

/* ---- the owner: its check and waiters ---------------------------------- */

/* A flight's job_arg: what its check does, and what it saw. */
struct job_rec {
	int			 checks, freed;
	int			 reject;	/* FETCH_REJECT every answer */
	int			 hold;		/* flight_hold the accepted answer */
	int			 release_in_check;	/* and flight_release at once */
	struct flight		*flight;
	const uint8_t		*copy;		/* flight_hold's */
	struct flight_outcome	 out;
};

struct done_rec {
	int			 calls;
	enum fetch_err		 err;
	char			 body[64];
	char			 upstream[16];
	int			 has_outcome;
	int			 stored;
};

static enum fetch_verdict
check_cb(struct flight *f, const struct fetch_res *res, void *arg, char *why,
    size_t whylen)
{
	struct job_rec	*jr = arg;

	jr->checks++;
	jr->flight = f;
	jr->out.stored = 1;
	flight_set_outcome(f, &jr->out);
	if (jr->reject) {
		snprintf(why, whylen, "bad signature");
		return FETCH_REJECT;
	}
	if (jr->hold) {
		assert_non_null(jr->copy = flight_hold(f, res));
		if (jr->release_in_check)
			flight_release(f);
	}
	return FETCH_ACCEPT;
}

static void
free_cb(void *arg)
{
	((struct job_rec *)arg)->freed++;
}

static void
done_cb(const struct flight_res *res, void *arg)
{
	struct done_rec	*d = arg;

	d->calls++;
	d->err = res->err;
	assert_true(res->body_len < sizeof(d->body));
	memcpy(d->body, res->body, res->body_len);
	d->body[res->body_len] = '\0';
	snprintf(d->upstream, sizeof(d->upstream), "%s",
	    res->upstream != NULL ? res->upstream : "");
	d->has_outcome = res->outcome != NULL;
	d->stored = res->outcome != NULL && res->outcome->stored;
}

static struct flight_set	set;

static struct flight_waiter *
join(const char *key, struct job_rec *jr, struct done_rec *dr)
{
	struct fetch_req	req = { .method = "GET", .path = key };

	if (key != NULL) {
		req.key = (const uint8_t *)key;
		req.klen = strlen(key);
	} else
		req.path = "/none";
	return flight_join(&set, (struct fetch_pool *)&fake_pool, &req,
	    check_cb, jr, free_cb, done_cb, dr);
}

static int
setup(void **state)
{
	(void)state;
	memset(jobs, 0, sizeof(jobs));
	njobs = 0;
	start_fails = 0;
	flight_set_init(&set);
	return 0;
}

/* ---- cases --------------------------------------------------------------- */

/*
 * Asks for one key share one fetch (the joiner is told it joined, its
 * job_arg freed at once) and every waiter is told; an ended flight is
 * not joined, and a request without a key never is.
 */
static void
test_join(void **state)
{
	struct job_rec		 jr[5] = { { 0 } };
	struct done_rec		 dr[5] = { { 0 } };
	struct flight_waiter	*w0, *w1;

	(void)state;
	assert_non_null(w0 = join("k1", &jr[0], &dr[0]));
	assert_non_null(w1 = join("k1", &jr[1], &dr[1]));
	assert_false(flight_waiter_joined(w0));
	assert_true(flight_waiter_joined(w1));
	assert_int_equal(njobs, 1);
	assert_int_equal(jr[1].freed, 1);
	assert_int_equal(jr[0].freed, 0);
	assert_non_null(join("k2", &jr[2], &dr[2]));
	assert_int_equal(njobs, 2);
	assert_int_equal(job_answer(&jobs[0], "shared"), FETCH_ACCEPT);
	assert_int_equal(dr[0].calls, 1);
	assert_int_equal(dr[1].calls, 1);
	assert_string_equal(dr[1].body, "shared");
	assert_true(dr[1].stored);
	assert_int_equal(jr[0].checks, 1);
	assert_int_equal(jr[0].freed, 1);
	assert_int_equal(dr[2].calls, 0);
	assert_non_null(join("k1", &jr[3], &dr[3]));
	assert_int_equal(njobs, 3);
	assert_non_null(join(NULL, &jr[4], &dr[4]));
	assert_non_null(join(NULL, &jr[4], &dr[4]));
	assert_int_equal(njobs, 5);
	job_fail(&jobs[1]);
	job_fail(&jobs[2]);
	job_fail(&jobs[3]);
	job_fail(&jobs[4]);
	assert_int_equal(dr[2].err, FETCH_ERR_CONNECT);
	assert_false(dr[2].has_outcome);
	assert_int_equal(jr[4].freed, 2);
	assert_true(TAILQ_EMPTY(&set.flights));
}

/*
 * A queued fetch whose waiters all left is cancelled unsent; one already
 * asking goes on, its answer checked (and stored) with no one told.
 */
static void
test_leave(void **state)
{
	struct job_rec		 jr[3] = { { 0 } };
	struct done_rec		 dr[3] = { { 0 } };
	struct flight_waiter	*w0, *w1, *w2;

	(void)state;
	assert_non_null(w0 = join("run", &jr[0], &dr[0]));
	assert_non_null(w1 = join("queued", &jr[1], &dr[1]));
	assert_non_null(w2 = join("queued", &jr[2], &dr[2]));
	jobs[1].queued = 1;
	flight_leave(w1);
	assert_false(jobs[1].cancelled);	/* w2 still waits */
	flight_leave(w2);
	assert_true(jobs[1].cancelled);
	assert_int_equal(jr[1].freed, 1);
	assert_int_equal(jr[2].freed, 1);	/* the joiner's, at join */
	flight_leave(w0);
	assert_false(jobs[0].cancelled);
	assert_int_equal(jr[0].freed, 0);
	assert_int_equal(job_answer(&jobs[0], "late"), FETCH_ACCEPT);
	assert_int_equal(jr[0].checks, 1);
	assert_int_equal(jr[0].freed, 1);
	assert_int_equal(dr[0].calls + dr[1].calls + dr[2].calls, 0);
	assert_true(TAILQ_EMPTY(&set.flights));
}

/*
 * A held flight outlives its fetch, joinable, and tells every waiter with
 * its own copy of the answer once released.
 */
static void
test_hold_release(void **state)
{
	struct job_rec	jr[3] = { { .hold = 1 }, { 0 }, { 0 } };
	struct done_rec	dr[3] = { { 0 } };

	(void)state;
	assert_non_null(join("k1", &jr[0], &dr[0]));
	assert_int_equal(job_answer(&jobs[0], "held"), FETCH_ACCEPT);
	assert_true(jobs[0].ended);
	assert_memory_equal(jr[0].copy, "held", 4);
	assert_int_equal(dr[0].calls, 0);
	assert_non_null(join("k1", &jr[1], &dr[1]));
	assert_int_equal(njobs, 1);
	assert_int_equal(jr[1].freed, 1);
	flight_release(jr[0].flight);
	assert_int_equal(dr[0].calls, 1);
	assert_int_equal(dr[1].calls, 1);
	assert_int_equal(dr[0].err, FETCH_OK);
	assert_string_equal(dr[0].body, "held");
	assert_string_equal(dr[1].body, "held");
	assert_string_equal(dr[1].upstream, "up-a");
	assert_true(dr[1].stored);
	assert_int_equal(jr[0].freed, 1);
	assert_non_null(join("k1", &jr[2], &dr[2]));
	assert_int_equal(njobs, 2);
	job_fail(&jobs[1]);
}

/* Released from the check itself, the flight ends with its fetch as if never held. */
static void
test_release_in_check(void **state)
{
	struct job_rec	jr = { .hold = 1, .release_in_check = 1 };
	struct done_rec	dr = { 0 };

	(void)state;
	assert_non_null(join("k1", &jr, &dr));
	assert_int_equal(job_answer(&jobs[0], "now"), FETCH_ACCEPT);
	assert_int_equal(dr.calls, 1);
	assert_string_equal(dr.body, "now");
	assert_int_equal(jr.freed, 1);
	assert_true(TAILQ_EMPTY(&set.flights));
}

/* A rejected answer clears the outcome: the failure that follows has none. */
static void
test_reject_clears_outcome(void **state)
{
	struct job_rec	jr = { .reject = 1 };
	struct done_rec	dr = { 0 };

	(void)state;
	assert_non_null(join("k1", &jr, &dr));
	assert_int_equal(job_answer(&jobs[0], "bad"), FETCH_REJECT);
	job_fail(&jobs[0]);
	assert_int_equal(dr.calls, 1);
	assert_false(dr.has_outcome);
	assert_int_equal(jr.freed, 1);
}

/*
 * Nothing started: NULL, job_arg still the caller's. A fetch ended by
 * fetch_ctx_free (done with NULL) tells no waiter and frees job_arg.
 */
static void
test_not_started_and_ctx_free(void **state)
{
	struct job_rec	jr[2] = { { 0 } };
	struct done_rec	dr[2] = { { 0 } };

	(void)state;
	start_fails = 1;
	assert_null(join("k1", &jr[0], &dr[0]));
	assert_int_equal(jr[0].freed, 0);
	assert_true(TAILQ_EMPTY(&set.flights));
	start_fails = 0;
	assert_non_null(join("k1", &jr[1], &dr[1]));
	jobs[0].ended = 1;
	jobs[0].done(NULL, jobs[0].arg);
	assert_int_equal(dr[1].calls, 0);
	assert_int_equal(jr[1].freed, 1);
	assert_true(TAILQ_EMPTY(&set.flights));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_join, setup),
		cmocka_unit_test_setup(test_leave, setup),
		cmocka_unit_test_setup(test_hold_release, setup),
		cmocka_unit_test_setup(test_release_in_check, setup),
		cmocka_unit_test_setup(test_reject_clears_outcome, setup),
		cmocka_unit_test_setup(test_not_started_and_ctx_free, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
