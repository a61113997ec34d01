/* SPDX-License-Identifier: Apache-2.0 */
/* Per-client miss rate limit without I/O: a token bucket per client (an address prefix) in a bounded table, X-Forwarded-For hops and trusted ranges. */
#ifndef PROXY_MISS_LIMIT_H
#define PROXY_MISS_LIMIT_H

#include <stddef.h>
#include <stdint.h>

#include "entry/conf.h"

#define MISS_LIMIT_SLOTS	4096	/* clients remembered per service */
#define MISS_LIMIT_PROBE	8	/* slots looked at per address */
#define MISS_ADDR_BYTES		17	/* family byte and an IPv6 address */

struct miss_limit;

/* A client's identity for the limit: family byte, then the address. */
struct miss_addr {
	uint8_t	b[MISS_ADDR_BYTES];
	size_t	len;
};

/*
 * One token bucket: rate tokens a second, at most burst saved up; a new
 * one (all zero) starts full. The per-client table is made of them, and
 * so is the cap on a service's new entries (new_entry_rate_per_s).
 */
struct miss_rate {
	double	tokens;
	int64_t	last_ms;
	int	primed;		/* 0: not used yet, full */
};
/* Take one token at now_ms (monotonic): 1 taken, 0 none left. */
int	miss_rate_take(struct miss_rate *, double rate, double burst,
	    int64_t now_ms);
/* The burst that goes with a rate: CONFIG_MISS_BURST_S seconds' worth, at least 1. */
double	miss_rate_burst(double rate);

/*
 * rate_per_s tokens a second, at most miss_rate_burst(rate_per_s) saved
 * up, per client: the first v4_prefix bits of an IPv4 address (at most
 * 32), the first v6_prefix bits of an IPv6 one (at most 128); an
 * IPv4-mapped IPv6 address (::ffff:a.b.c.d, a dual-stack listener's IPv4
 * peer) is its IPv4 address. Returns the table (free with
 * miss_limit_free), or NULL when rate_per_s is 0 (no limit) or out of
 * memory (errno ENOMEM).
 */
struct miss_limit	*miss_limit_new(double rate_per_s, unsigned v4_prefix,
			    unsigned v6_prefix);
void			 miss_limit_free(struct miss_limit *);	/* accepts NULL */
/*
 * Take one token for addr's client at now_ms (monotonic): 1 when the miss
 * may go upstream, 0 when the client is over its rate. When the client's
 * MISS_LIMIT_PROBE slots are taken, the one used longest ago goes to it,
 * with a full bucket. A NULL table allows everything.
 */
int	miss_limit_take(struct miss_limit *, const struct miss_addr *,
	    int64_t now_ms);
/*
 * The client addr counts as: IPv4-mapped IPv6 as IPv4, then the address
 * past the family's prefix zeroed.
 */
void	miss_addr_client(struct miss_addr *out, const struct miss_addr *addr,
	    unsigned v4_prefix, unsigned v6_prefix);

/* addr's identity: family byte (AF_INET, AF_INET6), then n address bytes. */
void	miss_addr_set(struct miss_addr *out, int family, const void *addr,
	    size_t n);
/* 1 when the range holds addr (same family, the first prefix bits), else 0. */
int	miss_cidr_has(const struct config_cidr *, const struct miss_addr *);
/*
 * The client behind trusted proxies, from an X-Forwarded-For value (its
 * lines joined, http_parse.h): the hops are walked from the right, each
 * the address the proxy before it saw, past every hop in
 * trusted[0..ntrusted); the first hop that is not trusted is the client,
 * the leftmost when all are. *out holds the peer (a trusted proxy) on
 * entry and the client on return. Empty elements are skipped; a hop that
 * is not an address (a port, brackets, "unknown") ends the walk, the last
 * address passed being the client. Returns 0 when *out was set from a
 * hop, -1 when xff is NULL or its last hop is no address (*out unchanged).
 */
int	miss_xff_client(const char *xff, const struct config_cidr *trusted,
	    size_t ntrusted, struct miss_addr *out);

#endif
