/* SPDX-License-Identifier: Apache-2.0 */
/* The cache's pool of learned intermediates: aux records "pool/<sha256 of the DER>", for stapled and staplectl alike. */
#ifndef ENTRY_POOL_H
#define ENTRY_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "cache/store.h"

/*
 * CA certificates learned from evidence, RIM KeyInfo chains and bundles
 * (admitted by ocsp_trust_chaining_cas) are kept in the cache as aux
 * records named ENTRY_POOL_PREFIX + lower-case hex SHA-256 of the DER, the
 * DER as value. staplectl writes them, the RIM kind writes them, stapled
 * reads them into its OCSP pool. The naming is on disk: never change it.
 */
#define ENTRY_POOL_PREFIX	"pool/"
#define ENTRY_POOL_NAME_BYTES	(sizeof(ENTRY_POOL_PREFIX) + 64)	/* with the NUL */

/* The record name of a DER certificate into name. 0, or -1 (digest failure). */
int	entry_pool_name(const uint8_t *der, size_t len,
	    char name[ENTRY_POOL_NAME_BYTES]);

/*
 * Keep a DER certificate in the cache's pool (the caller has admitted it).
 * Returns 1 when written, 0 when the record was there already, -1 on a
 * cache error (cache_strerror says which).
 */
int	entry_pool_put(struct cache *, const uint8_t *der, size_t len);

/* Visit every pool record (cache_aux_walk): the number visited, or -1 (cache_strerror). */
long	entry_pool_walk(struct cache *, cache_aux_cb *fn, void *arg);
/* The pool records; those before the error when a cache error ends the walk. */
size_t	entry_pool_count(struct cache *);

#endif
