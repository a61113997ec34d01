/* SPDX-License-Identifier: Apache-2.0 */
/* Per-client miss rate limit without I/O: a token bucket per client (an address prefix) in a bounded table, X-Forwarded-For hops and trusted ranges. */
#include "config.h"

#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "attest/util.h"
#include "proxy/miss_limit.h"

#define MISS_XFF_MAX_BYTES	64	/* one hop, as text */

#define MISS_V4_BITS		32
#define MISS_V6_BITS		128

struct miss_bucket {
	struct miss_addr	addr;	/* the client (miss_addr_client); len 0: free */
	struct miss_rate	rate;
	int64_t			used_ms;	/* last asked for */
};

struct miss_limit {
	double			rate;	/* tokens per second */
	double			burst;	/* at most this many saved */
	unsigned		v4_prefix, v6_prefix;
	struct miss_bucket	slot[MISS_LIMIT_SLOTS];
};

double
miss_rate_burst(double rate)
{
	return rate * CONFIG_MISS_BURST_S < 1 ? 1 : rate * CONFIG_MISS_BURST_S;
}

int
miss_rate_take(struct miss_rate *b, double rate, double burst, int64_t now_ms)
{
	if (!b->primed) {
		b->primed = 1;
		b->tokens = burst;
		b->last_ms = now_ms;
	} else if (now_ms > b->last_ms) {
		b->tokens += rate * (double)(now_ms - b->last_ms) / 1000.0;
		if (b->tokens > burst)
			b->tokens = burst;
		b->last_ms = now_ms;
	}
	if (b->tokens < 1)
		return 0;
	b->tokens -= 1;
	return 1;
}

struct miss_limit *
miss_limit_new(double rate_per_s, unsigned v4_prefix, unsigned v6_prefix)
{
	struct miss_limit	*m;

	if (rate_per_s <= 0)
		return NULL;
	if ((m = calloc(1, sizeof(*m))) == NULL)
		return NULL;
	m->rate = rate_per_s;
	m->burst = miss_rate_burst(rate_per_s);
	m->v4_prefix = v4_prefix < MISS_V4_BITS ? v4_prefix : MISS_V4_BITS;
	m->v6_prefix = v6_prefix < MISS_V6_BITS ? v6_prefix : MISS_V6_BITS;
	return m;
}

void
miss_limit_free(struct miss_limit *m)
{
	free(m);
}

static size_t
addr_hash(const struct miss_addr *a)
{
	return (size_t)(util_fnv1a64(UTIL_FNV64_BASIS, a->b, a->len) %
	    MISS_LIMIT_SLOTS);
}

/* The client's bucket, or a fresh one in place of the probe window's stalest. */
static struct miss_bucket *
bucket_of(struct miss_limit *m, const struct miss_addr *a)
{
	struct miss_bucket	*b, *old = NULL;
	size_t			 i, h = addr_hash(a);

	for (i = 0; i < MISS_LIMIT_PROBE; i++) {
		b = &m->slot[(h + i) % MISS_LIMIT_SLOTS];
		if (b->addr.len == a->len && memcmp(b->addr.b, a->b, a->len) == 0)
			return b;
		if (b->addr.len == 0 || old == NULL ||
		    (old->addr.len != 0 && b->used_ms < old->used_ms))
			old = b;
	}
	memset(old, 0, sizeof(*old));
	old->addr = *a;
	return old;
}

int
miss_limit_take(struct miss_limit *m, const struct miss_addr *a, int64_t now_ms)
{
	struct miss_bucket	*b;
	struct miss_addr	 client;

	if (m == NULL)
		return 1;
	miss_addr_client(&client, a, m->v4_prefix, m->v6_prefix);
	b = bucket_of(m, &client);
	b->used_ms = now_ms;
	return miss_rate_take(&b->rate, m->rate, m->burst, now_ms);
}

/* Zero the bits of b[0..n) past the first `bits`. */
static void
mask_bits(uint8_t *b, size_t n, unsigned bits)
{
	size_t	i = bits / 8;

	if (i >= n)
		return;
	if (bits % 8 != 0)
		b[i++] &= (uint8_t)(0xff << (8 - bits % 8));
	memset(b + i, 0, n - i);
}

void
miss_addr_client(struct miss_addr *out, const struct miss_addr *a,
    unsigned v4_prefix, unsigned v6_prefix)
{
	static const uint8_t	mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
				    0xff, 0xff };

	*out = *a;
	if (a->b[0] == AF_INET6 && a->len == 17 &&
	    memcmp(a->b + 1, mapped, sizeof(mapped)) == 0)
		miss_addr_set(out, AF_INET, a->b + 13, 4);
	if (out->b[0] == AF_INET && out->len == 5)
		mask_bits(out->b + 1, 4, v4_prefix);
	else if (out->b[0] == AF_INET6 && out->len == 17)
		mask_bits(out->b + 1, 16, v6_prefix);
}

void
miss_addr_set(struct miss_addr *out, int family, const void *p, size_t n)
{
	memset(out, 0, sizeof(*out));
	out->b[0] = (uint8_t)family;
	memcpy(out->b + 1, p, n);
	out->len = 1 + n;
}

/* The hop text p[0..n) (OWS around it) as an address: 0, or -1 when it is none. */
static int
xff_hop(const char *p, size_t n, struct miss_addr *out)
{
	char	 hop[MISS_XFF_MAX_BYTES];
	uint8_t	 a[16];

	while (n > 0 && (*p == ' ' || *p == '\t')) {
		p++;
		n--;
	}
	while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
		n--;
	if (n == 0 || n >= sizeof(hop))
		return -1;
	memcpy(hop, p, n);
	hop[n] = '\0';
	if (inet_pton(AF_INET, hop, a) == 1)
		miss_addr_set(out, AF_INET, a, 4);
	else if (inet_pton(AF_INET6, hop, a) == 1)
		miss_addr_set(out, AF_INET6, a, 16);
	else
		return -1;
	return 0;
}

/* Whether n is all OWS (an empty list element). */
static int
xff_empty(const char *p, size_t n)
{
	while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
		n--;
	return n == 0;
}

static int
trusted_has(const struct config_cidr *trusted, size_t ntrusted,
    const struct miss_addr *a)
{
	size_t	i;

	for (i = 0; i < ntrusted; i++)
		if (miss_cidr_has(&trusted[i], a))
			return 1;
	return 0;
}

int
miss_xff_client(const char *xff, const struct config_cidr *trusted,
    size_t ntrusted, struct miss_addr *out)
{
	const char		*e, *p;
	struct miss_addr	 a;
	int			 rv = -1;

	if (xff == NULL)
		return -1;
	for (e = xff + strlen(xff); e > xff; e = p - 1) {
		for (p = e; p > xff && p[-1] != ','; p--)
			;
		if (xff_empty(p, (size_t)(e - p))) {
			if (p == xff)
				break;
			continue;
		}
		if (xff_hop(p, (size_t)(e - p), &a) == -1)
			break;
		*out = a;
		rv = 0;
		if (p == xff || !trusted_has(trusted, ntrusted, &a))
			break;
	}
	return rv;
}

int
miss_cidr_has(const struct config_cidr *c, const struct miss_addr *a)
{
	unsigned	full = c->prefix / 8, rest = c->prefix % 8;
	uint8_t		mask;

	if (a->b[0] != (uint8_t)c->family)
		return 0;
	if (memcmp(c->addr, a->b + 1, full) != 0)
		return 0;
	if (rest == 0)
		return 1;
	mask = (uint8_t)(0xff << (8 - rest));
	return (c->addr[full] & mask) == (a->b[1 + full] & mask);
}
