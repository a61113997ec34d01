/* SPDX-License-Identifier: Apache-2.0 */
/* The negative cache: a fixed table of remembered answers, one slot per key hash. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "attest/util.h"
#include "proxy/negcache.h"

struct negcache {
	struct negcache_entry	slots[NEGCACHE_SLOTS];
};

struct negcache *
negcache_new(void)
{
	return calloc(1, sizeof(struct negcache));
}

void
negcache_free(struct negcache *nc)
{
	size_t	i;

	if (nc == NULL)
		return;
	for (i = 0; i < NEGCACHE_SLOTS; i++)
		free(nc->slots[i].body);
	free(nc);
}

static struct negcache_entry *
negcache_slot(const struct negcache *nc, const uint8_t *key, size_t klen)
{
	return (struct negcache_entry *)&nc->slots[util_fnv1a32(key, klen) %
	    NEGCACHE_SLOTS];
}

static int
negcache_is(const struct negcache_entry *n, const uint8_t *key, size_t klen)
{
	return n->klen == klen && memcmp(n->key, key, klen) == 0;
}

int
negcache_put(struct negcache *nc, const uint8_t *key, size_t klen, int status,
    int definitive, const uint8_t *body, size_t len, time_t until)
{
	struct negcache_entry	*n;
	int			 same;

	if (nc == NULL || klen > sizeof(n->key))
		return -1;
	if (definitive && (len == 0 || len > NEGCACHE_MAX_BODY_BYTES))
		return -1;
	n = negcache_slot(nc, key, klen);
	same = negcache_is(n, key, klen) && n->status == status &&
	    n->definitive == definitive && n->body_len == len &&
	    (len == 0 || memcmp(n->body, body, len) == 0);
	free(n->body);
	memset(n, 0, sizeof(*n));
	if (len > NEGCACHE_MAX_BODY_BYTES)
		len = 0;
	if (len > 0) {
		if ((n->body = malloc(len)) == NULL) {
			if (definitive)
				return -1;	/* an empty slot: nothing remembered */
			len = 0;
		} else
			memcpy(n->body, body, len);
	}
	memcpy(n->key, key, klen);
	n->klen = klen;
	n->status = status;
	n->definitive = definitive;
	n->body_len = len;
	n->until = until;
	return same;
}

const struct negcache_entry *
negcache_live(const struct negcache *nc, const uint8_t *key, size_t klen,
    time_t now)
{
	const struct negcache_entry	*n;

	if (nc == NULL || klen > sizeof(n->key))
		return NULL;
	n = negcache_slot(nc, key, klen);
	if (!negcache_is(n, key, klen) || n->until <= now)
		return NULL;
	return n;
}

void
negcache_forget(struct negcache *nc, const uint8_t *key, size_t klen)
{
	struct negcache_entry	*n;

	if (nc == NULL || klen > sizeof(n->key))
		return;
	n = negcache_slot(nc, key, klen);
	if (!negcache_is(n, key, klen))
		return;
	free(n->body);
	memset(n, 0, sizeof(*n));
}
