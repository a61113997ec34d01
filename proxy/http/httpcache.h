/* SPDX-License-Identifier: Apache-2.0 */
/* HTTP caching headers for every GET answer, from the entry's own validity (RFC 9111, RFC 5019). */
#ifndef PROXY_HTTPCACHE_H
#define PROXY_HTTPCACHE_H

#include <time.h>

#include "cache/record.h"
#include "entry/kinds.h"

struct http_req;

/* Entries never refreshed (VCEKs, cert_chains): an HTTP cache keeps them at most this long. */
#define HTTPCACHE_NO_REFRESH_MAX_AGE_S	(24 * 3600)
/* A refreshed entry whose refresh is due or overdue: HTTP caches ask again this soon. */
#define HTTPCACHE_OVERDUE_MAX_AGE_S	60
/*
 * Taken off every max-age: `now` is whole seconds, and a cache counts in
 * whole seconds from its own receipt (nginx serves through the second its
 * copy expires in), so without it a copy could outlive nextUpdate by up
 * to a second.
 */
#define HTTPCACHE_CLOCK_MARGIN_S	1

/* How far an HTTP cache may keep a kind's answers (the kind's serve says). */
enum httpcache_horizon {
	/*
	 * To the next planned refresh (next_refresh_at), so a new object
	 * reaches clients behind a cache as soon as stapled has it, and at
	 * most HTTPCACHE_NO_REFRESH_MAX_AGE_S for entries never refreshed
	 * (CACHE_F_NO_REFRESH), HTTPCACHE_OVERDUE_MAX_AGE_S when overdue.
	 */
	HTTPCACHE_TO_REFRESH,
	/* To next_update itself (RFC 5019 6.2: a signed OCSP answer is good to its nextUpdate). */
	HTTPCACHE_TO_NEXT_UPDATE,
};

/*
 * Seconds an HTTP cache may keep the answer from this entry at `now`,
 * less HTTPCACHE_CLOCK_MARGIN_S: never past next_update, and within the
 * kind's horizon. 0 when the entry has expired. Pure.
 */
long	httpcache_max_age(const struct cache_meta *, enum httpcache_horizon,
	    time_t now);


/*
 * Answer `req` with 200 (or 304), the served representation already in
 * http_resp_body(req) and its Content-Type set. An answer not from a
 * valid stored entry (m->next_update <= now: passed on unverified, or
 * unsigned and definitive; the meta is zeroed) gets Cache-Control:
 * no-store. An entry's answer gets
 * Cache-Control (public, max-age=httpcache_max_age within the horizon, no-transform,
 * must-revalidate, stale-while-revalidate=0, stale-if-error=0: no cache
 * serves it stale, RFC 5861), ETag (the quoted hex SHA-256 of the served body,
 * strong), Last-Modified (the entry's this_update, never after now) and
 * Expires (now + max-age), then replies 200, or 304 with no body when
 * the request's If-None-Match lists that ETag or is "*" (RFC 9110
 * 13.1.2). Returns 200 or 304: the status sent. Never fails (no-store
 * when the body cannot be hashed). For GET and HEAD only: a POST answer
 * is never cacheable (RFC 9111 does not key caches on request bodies).
 */
int	httpcache_answer(struct http_req *, const struct cache_meta *,
	    enum httpcache_horizon, time_t now);

/* For answers no HTTP cache may keep (tryLater, 404, 503, unstored ones): Cache-Control: no-store. */
void	httpcache_no_store(struct http_req *);

#endif
