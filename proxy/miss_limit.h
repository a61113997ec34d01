/* Per-client miss rate limit: a token bucket per client address in a bounded table, and who the client is behind trusted proxies. */
#ifndef PROXY_MISS_LIMIT_H
#define PROXY_MISS_LIMIT_H

#include <stddef.h>
#include <stdint.h>

#include "entry/conf.h"

#define MISS_LIMIT_SLOTS	4096	/* clients remembered per service */
#define MISS_LIMIT_PROBE	8	/* slots looked at per address */
#define MISS_ADDR_BYTES		17	/* family byte and an IPv6 address */

struct http_req;
struct miss_limit;

/* A client's identity for the limit: family byte, then the address. */
struct miss_addr {
	uint8_t	b[MISS_ADDR_BYTES];
	size_t	len;
};

/*
 * rate_per_s tokens a second, at most rate_per_s * CONFIG_MISS_BURST_S
 * (at least 1) saved up. Returns the table (free with miss_limit_free),
 * or NULL when rate_per_s is 0 (no limit) or out of memory (errno ENOMEM).
 */
struct miss_limit	*miss_limit_new(double rate_per_s);
void			 miss_limit_free(struct miss_limit *);	/* accepts NULL */
/*
 * Take one token for addr at now_ms (monotonic): 1 when the miss may go
 * upstream, 0 when the client is over its rate. A full table gives the
 * slot used longest ago to the new address, which starts with a full
 * bucket. A NULL table allows everything.
 */
int	miss_limit_take(struct miss_limit *, const struct miss_addr *,
	    int64_t now_ms);

/*
 * Who asks: the peer's address, or the last X-Forwarded-For hop when the
 * peer is in trusted (n ranges) and that hop is an address. 0 with *out
 * set; 1 when the peer is exempt (a Unix socket); -1 when the peer's
 * address cannot be read.
 */
int	miss_client(const struct http_req *, const struct config_cidr *trusted,
	    size_t n, struct miss_addr *out);
/* The last hop of an X-Forwarded-For value as an address; 0, or -1. */
int	miss_xff_last(const char *xff, struct miss_addr *out);

#endif
