/* SPDX-License-Identifier: Apache-2.0 */
/* Per-client miss rate limit without I/O: a token bucket per client address in a bounded table, X-Forwarded-For hops and trusted ranges. */
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

struct miss_bucket {
	struct miss_addr	addr;	/* len 0: free */
	double			tokens;
	int64_t			last_ms;
};

struct miss_limit {
	double			rate;	/* tokens per second */
	double			burst;	/* at most this many saved */
	struct miss_bucket	slot[MISS_LIMIT_SLOTS];
};

struct miss_limit *
miss_limit_new(double rate_per_s)
{
	struct miss_limit	*m;

	if (rate_per_s <= 0)
		return NULL;
	if ((m = calloc(1, sizeof(*m))) == NULL)
		return NULL;
	m->rate = rate_per_s;
	m->burst = rate_per_s * CONFIG_MISS_BURST_S;
	if (m->burst < 1)
		m->burst = 1;
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

/* addr's bucket, or a fresh one in place of the probe window's stalest. */
static struct miss_bucket *
bucket_of(struct miss_limit *m, const struct miss_addr *a, int64_t now_ms)
{
	struct miss_bucket	*b, *old = NULL;
	size_t			 i, h = addr_hash(a);

	for (i = 0; i < MISS_LIMIT_PROBE; i++) {
		b = &m->slot[(h + i) % MISS_LIMIT_SLOTS];
		if (b->addr.len == a->len && memcmp(b->addr.b, a->b, a->len) == 0)
			return b;
		if (b->addr.len == 0 || old == NULL ||
		    (old->addr.len != 0 && b->last_ms < old->last_ms))
			old = b;
	}
	old->addr = *a;
	old->tokens = m->burst;
	old->last_ms = now_ms;
	return old;
}

int
miss_limit_take(struct miss_limit *m, const struct miss_addr *a, int64_t now_ms)
{
	struct miss_bucket	*b;

	if (m == NULL)
		return 1;
	b = bucket_of(m, a, now_ms);
	if (now_ms > b->last_ms) {
		b->tokens += m->rate * (double)(now_ms - b->last_ms) / 1000.0;
		if (b->tokens > m->burst)
			b->tokens = m->burst;
		b->last_ms = now_ms;
	}
	if (b->tokens < 1)
		return 0;
	b->tokens -= 1;
	return 1;
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
