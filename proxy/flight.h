/* SPDX-License-Identifier: Apache-2.0 */
/* Single flight: one upstream fetch per key, with every client and refresh that waits for it. */
#ifndef PROXY_FLIGHT_H
#define PROXY_FLIGHT_H

#include <sys/queue.h>

#include <stddef.h>
#include <stdint.h>

#include "entry/entry.h"
#include "proxy/fetch/fetch.h"

struct cache_meta;
struct flight;
struct flight_waiter;

/*
 * A flight is one fetch (proxy/fetch/fetch.h) for one key, and the waiters that
 * asked for that key while it runs: clients and refreshes alike. Whoever
 * asks for a key already in flight joins it (RFC 9211's collapsed) instead
 * of asking the upstreams again. The flight's owner (the service) judges
 * each answer in its check and says what it made of the accepted one (an
 * outcome); while it stores that answer on another thread it holds the
 * flight, so that no waiter, nor anyone joining meanwhile, looks for the
 * answer in the store before it is there.
 *
 * Everything runs on the event loop's thread.
 */

/* The flights of one service (one fetch pool): a key is in flight once per set. */
struct flight_set {
	TAILQ_HEAD(, flight)	 flights;
};

/*
 * What the owner made of the answer a flight ends with: its check's
 * verdict and what the store did with it. The check sets it for an answer
 * it accepts (flight_set_outcome) and may change it until the flight
 * ends; every waiter then finds it in flight_res.outcome.
 */
struct flight_outcome {
	enum entry_verdict	 verdict;
	int			 stored;	/* the store holds an entry from this answer */
	int			 map_full;	/* its put failed for want of map */
	const struct cache_meta	*meta;		/* stored: the entry's meta */
	const uint8_t		*headers;	/* stored: its kept headers, or NULL */
	size_t			 headers_len;
	const char		*note;		/* ENTRY_DEFINITIVE: what the answer said */
};

/* What each waiter is told; every pointer is borrowed for the callback. */
struct flight_res {
	enum fetch_err		 err;		/* FETCH_OK: an answer (any status) */
	int			 http_status;	/* 0 without one */
	const uint8_t		*body;
	size_t			 body_len;
	const char		*upstream;	/* the one that answered, or NULL */
	const char		*summary;	/* failures: every endpoint tried and why */
	const struct flight_outcome *outcome;	/* the accepted answer's, or NULL */
};

/*
 * The owner's judgement of a 2xx answer (fetch_check_cb's, with the flight
 * for flight_set_outcome and flight_hold). job_arg is the owner's.
 */
typedef enum fetch_verdict flight_check_cb(struct flight *,
    const struct fetch_res *, void *job_arg, char *why, size_t whylen);
/* Called once per waiter with the flight's result. */
typedef void flight_done_cb(const struct flight_res *, void *waiter_arg);
typedef void flight_free_cb(void *job_arg);

void	flight_set_init(struct flight_set *);

/*
 * Join the flight for req->key in set, or start one through pool (the
 * fetch's arguments are req's; a req without a key is never joined).
 * job_arg belongs to the flight: freed with free_cb when it ends, or at
 * once when an existing flight is joined. Returns a waiter handle, gone
 * once done returns; NULL when nothing could be started (done is then
 * never called, and job_arg stays the caller's). A flight ended by
 * fetch_ctx_free tells no waiter: their owners are being torn down too.
 */
struct flight_waiter *flight_join(struct flight_set *, struct fetch_pool *pool,
	    const struct fetch_req *req, flight_check_cb *check, void *job_arg,
	    flight_free_cb *free_cb, flight_done_cb *done, void *waiter_arg);
/* 1 when flight_join found the key in flight (RFC 9211's collapsed), 0 when it started it. */
int	flight_waiter_joined(const struct flight_waiter *);
/*
 * Stop waiting. The fetch goes on and may still fill the cache, unless it
 * is queued behind max_inflight and no one waits any more: then nothing
 * was asked, and it is dropped.
 */
void	flight_leave(struct flight_waiter *);

/*
 * From the check, for the answer it accepts: the outcome every waiter
 * sees in res->outcome. Borrowed: it must live until the flight's free_cb
 * (job_arg is the place for it). A rejected answer clears it.
 */
void	flight_set_outcome(struct flight *, const struct flight_outcome *);
/*
 * From the check, for an answer it accepts and stores on another thread:
 * the flight keeps a copy of res (body, status, upstream, summary) and
 * stays joinable after the fetch ends, until flight_release. Returns the
 * copy of the body, which lives until the flight's free_cb; NULL when
 * memory is short (nothing is held).
 */
const uint8_t *flight_hold(struct flight *, const struct fetch_res *res);
/*
 * End the hold: every waiter is told, with the copy, and the flight ends
 * (free_cb). Called from the check itself (the store could not go to the
 * other thread after all), it only ends the hold, and the flight ends
 * with the fetch as if never held.
 */
void	flight_release(struct flight *);

#endif
