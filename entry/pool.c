/* SPDX-License-Identifier: Apache-2.0 */
/* The cache's pool of learned intermediates: one name for each record, "pool/<sha256 hex of the DER>". */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "attest/util.h"
#include "entry/pool.h"

#define POOL_DIGEST_BYTES	32	/* SHA-256 */

int
entry_pool_name(const uint8_t *der, size_t len, char name[ENTRY_POOL_NAME_BYTES])
{
	uint8_t	md[POOL_DIGEST_BYTES];

	if (der == NULL || EVP_Digest(der, len, md, NULL, EVP_sha256(),
	    NULL) != 1)
		return -1;
	memcpy(name, ENTRY_POOL_PREFIX, sizeof(ENTRY_POOL_PREFIX) - 1);
	util_hex(md, sizeof(md), name + sizeof(ENTRY_POOL_PREFIX) - 1);
	return 0;
}

int
entry_pool_put(struct cache *cache, const uint8_t *der, size_t len)
{
	char	 name[ENTRY_POOL_NAME_BYTES];
	uint8_t	*old = NULL;
	size_t	 oldlen;
	int	 rc;

	if (entry_pool_name(der, len, name) == -1)
		return -1;
	if ((rc = cache_aux_get(cache, name, &old, &oldlen)) == -1)
		return -1;
	free(old);
	if (rc == 1)
		return 0;	/* named by its digest: the same certificate */
	return cache_aux_put(cache, name, der, len) == -1 ? -1 : 1;
}

long
entry_pool_walk(struct cache *cache, cache_aux_cb *fn, void *arg)
{
	return cache_aux_walk(cache, ENTRY_POOL_PREFIX, fn, arg);
}

static int
count_one(const char *name, const uint8_t *val, size_t len, void *arg)
{
	(void)name;
	(void)val;
	(void)len;
	(*(size_t *)arg)++;
	return 0;
}

size_t
entry_pool_count(struct cache *cache)
{
	size_t	n = 0;

	(void)entry_pool_walk(cache, count_one, &n);
	return n;
}
