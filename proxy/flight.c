/* SPDX-License-Identifier: Apache-2.0 */
/* Single flight: one upstream fetch per key, its waiters, the hold while its answer is stored, and its outcome. */
#include "config.h"

#include <sys/queue.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/fetch/fetch.h"
#include "proxy/flight.h"

struct flight_waiter {
	struct flight		*f;
	flight_done_cb		*done;
	void			*arg;
	int			 joined;	/* found the key in flight */
	TAILQ_ENTRY(flight_waiter) entry;
};

struct flight {
	struct flight_set	*set;
	struct fetch_job	*job;		/* NULL once the fetch ended */
	uint8_t			*key;		/* NULL: never joined */
	size_t			 klen;
	flight_check_cb		*check;
	void			*job_arg;
	flight_free_cb		*free_cb;
	const struct flight_outcome *outcome;	/* flight_set_outcome; NULL: none */
	int			 checking;	/* inside the owner's check */
	int			 held;		/* flight_hold, until flight_release */
	struct flight_res	 kept;		/* the held answer, pointing at the copies below */
	uint8_t			*kept_body;
	char			*kept_upstream, *kept_summary;
	TAILQ_HEAD(, flight_waiter) waiters;
	TAILQ_ENTRY(flight)	 entry;
};

void
flight_set_init(struct flight_set *set)
{
	TAILQ_INIT(&set->flights);
}

/*
 * The flight ends: out of its set first (a waiter's done may start the
 * next flight for the key), then every waiter is told res, or dropped
 * silently when res is NULL, and the owner's job_arg is freed.
 */
static void
flight_end(struct flight *f, const struct flight_res *res)
{
	struct flight_waiter	*w;

	TAILQ_REMOVE(&f->set->flights, f, entry);
	while ((w = TAILQ_FIRST(&f->waiters)) != NULL) {
		TAILQ_REMOVE(&f->waiters, w, entry);
		if (res != NULL)
			w->done(res, w->arg);
		free(w);
	}
	if (f->free_cb != NULL)
		f->free_cb(f->job_arg);
	free(f->kept_body);
	free(f->kept_upstream);
	free(f->kept_summary);
	free(f->key);
	free(f);
}

/* fetch_check_cb: the owner's check, which may set the outcome or hold the flight. */
static enum fetch_verdict
flight_check(const struct fetch_res *res, void *arg, char *why, size_t whylen)
{
	struct flight		*f = arg;
	enum fetch_verdict	 v;

	f->checking = 1;
	v = f->check(f, res, f->job_arg, why, whylen);
	f->checking = 0;
	if (v == FETCH_REJECT) {
		f->outcome = NULL;	/* set for accepted answers only */
		f->held = 0;
	}
	return v;
}

/* fetch_done_cb: the fetch ended; a held flight waits for flight_release. */
static void
flight_fetched(const struct fetch_res *res, void *arg)
{
	struct flight		*f = arg;
	struct flight_res	 fr;

	f->job = NULL;
	if (res == NULL) {
		/* fetch_ctx_free: the waiters' owners are being torn down too. */
		flight_end(f, NULL);
		return;
	}
	if (f->held)
		return;
	memset(&fr, 0, sizeof(fr));
	fr.err = res->err;
	fr.http_status = res->http_status;
	fr.body = res->body;
	fr.body_len = res->body_len;
	fr.upstream = res->upstream;
	fr.summary = res->summary;
	fr.outcome = res->err == FETCH_OK ? f->outcome : NULL;
	flight_end(f, &fr);
}

static struct flight *
flight_find(struct flight_set *set, const uint8_t *key, size_t klen)
{
	struct flight	*f;

	TAILQ_FOREACH(f, &set->flights, entry)
		if (f->key != NULL && f->klen == klen &&
		    memcmp(f->key, key, klen) == 0)
			return f;
	return NULL;
}

/* A new flight for req in set, its fetch started; NULL when nothing started. */
static struct flight *
flight_new(struct flight_set *set, struct fetch_pool *pool,
    const struct fetch_req *req, flight_check_cb *check)
{
	struct flight	*f;

	if ((f = calloc(1, sizeof(*f))) == NULL)
		return NULL;
	if (req->key != NULL) {
		if ((f->key = malloc(req->klen ? req->klen : 1)) == NULL) {
			free(f);
			return NULL;
		}
		memcpy(f->key, req->key, req->klen);
		f->klen = req->klen;
	}
	f->set = set;
	f->check = check;
	TAILQ_INIT(&f->waiters);
	/* fetch_start calls neither callback before it returns. */
	if ((f->job = fetch_start(pool, req, flight_check, flight_fetched,
	    f)) == NULL) {
		free(f->key);
		free(f);
		return NULL;
	}
	TAILQ_INSERT_TAIL(&set->flights, f, entry);
	return f;
}

struct flight_waiter *
flight_join(struct flight_set *set, struct fetch_pool *pool,
    const struct fetch_req *req, flight_check_cb *check, void *job_arg,
    flight_free_cb *free_cb, flight_done_cb *done, void *waiter_arg)
{
	struct flight		*f = NULL;
	struct flight_waiter	*w;

	if (set == NULL || req == NULL || done == NULL)
		return NULL;
	if ((w = calloc(1, sizeof(*w))) == NULL)
		return NULL;
	w->done = done;
	w->arg = waiter_arg;
	if (req->key != NULL &&
	    (f = flight_find(set, req->key, req->klen)) != NULL) {
		/* Joined: the flight's own job_arg stands. */
		w->joined = 1;
		if (free_cb != NULL)
			free_cb(job_arg);
	} else if ((f = flight_new(set, pool, req, check)) == NULL) {
		free(w);
		return NULL;
	} else {
		f->job_arg = job_arg;
		f->free_cb = free_cb;
	}
	w->f = f;
	TAILQ_INSERT_TAIL(&f->waiters, w, entry);
	return w;
}

int
flight_waiter_joined(const struct flight_waiter *w)
{
	return w->joined;
}

void
flight_leave(struct flight_waiter *w)
{
	struct flight	*f;

	if (w == NULL)
		return;
	f = w->f;
	TAILQ_REMOVE(&f->waiters, w, entry);
	free(w);
	/* Queued and wanted by no one: never asked, so nothing is lost. */
	if (TAILQ_EMPTY(&f->waiters) && f->job != NULL &&
	    fetch_job_queued(f->job)) {
		fetch_cancel(f->job);
		f->job = NULL;
		flight_end(f, NULL);
	}
}

void
flight_set_outcome(struct flight *f, const struct flight_outcome *o)
{
	f->outcome = o;
}

/* A copy of s, or NULL for NULL; *fail set when memory is short. */
static char *
flight_strdup(const char *s, int *fail)
{
	char	*d;

	if (s == NULL)
		return NULL;
	if ((d = strdup(s)) == NULL)
		*fail = 1;
	return d;
}

const uint8_t *
flight_hold(struct flight *f, const struct fetch_res *res)
{
	int	fail = 0;

	if (f->held)
		return f->kept_body;
	free(f->kept_body);
	free(f->kept_upstream);
	free(f->kept_summary);
	f->kept_upstream = flight_strdup(res->upstream, &fail);
	f->kept_summary = flight_strdup(res->summary, &fail);
	if ((f->kept_body = malloc(res->body_len ? res->body_len : 1)) == NULL)
		fail = 1;
	else if (res->body_len > 0)
		memcpy(f->kept_body, res->body, res->body_len);
	if (fail)
		return NULL;	/* the copies go with the flight */
	memset(&f->kept, 0, sizeof(f->kept));
	f->kept.err = res->err;
	f->kept.http_status = res->http_status;
	f->kept.body = f->kept_body;
	f->kept.body_len = res->body_len;
	f->kept.upstream = f->kept_upstream;
	f->kept.summary = f->kept_summary;
	f->held = 1;
	return f->kept_body;
}

void
flight_release(struct flight *f)
{
	if (f == NULL || !f->held)
		return;
	f->held = 0;
	if (f->checking || f->job != NULL)
		return;		/* ends with the fetch, as if never held */
	f->kept.outcome = f->outcome;
	flight_end(f, &f->kept);
}
