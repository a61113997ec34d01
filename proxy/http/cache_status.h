/* SPDX-License-Identifier: Apache-2.0 */
/* RFC 9211 Cache-Status: how an answer was served (from the store, or upstream and stored), on the answer and in the access log. */
#ifndef PROXY_CACHE_STATUS_H
#define PROXY_CACHE_STATUS_H

#include <stddef.h>
#include <stdint.h>

struct http_req;

/* The list member's name: this cache (RFC 9211 2: a token). */
#define CACHE_STATUS_NAME	"stapled"
/* The longest value cache_status_value writes, NUL included. */
#define CACHE_STATUS_VALUE_BYTES	128

#define CACHE_STATUS_HIT	0x01	/* hit: answered without asking upstream */
#define CACHE_STATUS_FWD	0x02	/* fwd=miss: asked upstream, nothing valid stored */
#define CACHE_STATUS_BYPASS	0x04	/* with FWD, fwd=bypass: asked first (upstream_first) */
#define CACHE_STATUS_STORED	0x08	/* stored: the answer is the stored entry's */
#define CACHE_STATUS_COLLAPSED	0x10	/* collapsed: joined a fetch already in flight */
#define CACHE_STATUS_TTL	0x20	/* ttl_s holds the seconds of validity left */

struct cache_status {
	unsigned	 flags;		/* CACHE_STATUS_* */
	int64_t		 ttl_s;
	int		 fwd_status;	/* fwd-status: the upstream's HTTP status; 0: not said */
	const char	*detail;	/* detail: a token, or NULL */
	const char	*upstream;	/* the upstream that answered (access log only), or NULL */
};

/*
 * The header's value into buf (at least CACHE_STATUS_VALUE_BYTES):
 * "stapled; hit; ttl=3500", "stapled; fwd=miss; stored; collapsed;
 * ttl=86000", parameters in that order (hit or fwd, fwd-status, stored,
 * collapsed, ttl, detail). Returns its length. Assembled by hand, not
 * with snprintf: it is on every hit. Pure.
 */
size_t	cache_status_value(const struct cache_status *, char *buf);
/*
 * Add the Cache-Status header to req's answer, and note it for the
 * access log with the upstream: cache-status="VALUE" upstream=NAME
 * (http_req_set_log_note). Before the answer is given. Cannot fail.
 */
void	cache_status_set(struct http_req *, const struct cache_status *);

#endif
