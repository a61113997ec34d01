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

int
miss_xff_last(const char *xff, struct miss_addr *out)
{
	const char	*p, *e;
	char		 hop[MISS_XFF_MAX_BYTES];
	uint8_t		 a[16];

	if (xff == NULL)
		return -1;
	p = strrchr(xff, ',');
	p = p != NULL ? p + 1 : xff;
	while (*p == ' ' || *p == '\t')
		p++;
	e = p + strlen(p);
	while (e > p && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	if (e == p || (size_t)(e - p) >= sizeof(hop))
		return -1;
	memcpy(hop, p, (size_t)(e - p));
	hop[e - p] = '\0';
	if (inet_pton(AF_INET, hop, a) == 1)
		miss_addr_set(out, AF_INET, a, 4);
	else if (inet_pton(AF_INET6, hop, a) == 1)
		miss_addr_set(out, AF_INET6, a, 16);
	else
		return -1;
	return 0;
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
