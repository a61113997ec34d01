/* SPDX-License-Identifier: Apache-2.0 */
/* Damaged records (store_damaged.h): counted, logged, removed off the hit path. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attest/util.h"
#include "cache/store.h"
#include "cache/writer.h"
#include "proxy/daemon/daemon.h"
#include "proxy/log.h"
#include "proxy/metrics.h"
#include "proxy/daemon/store_damaged.h"

#define STORE_DAMAGED_BATCH	16	/* notes taken at a time */

/* A removal on the writer: what to name if it fails. */
struct store_drop {
	struct daemon	*d;
	uint8_t		 kind;
	char		 hex[2 * CACHE_KEY_MAX_BYTES + 1];
};

static void
store_drop_said(const struct daemon *d, unsigned kind, const char *hex, int rc,
    const char *err)
{
	if (rc == -1)
		log_warn("cache %s: %s entry %s: removing the damaged record "
		    "failed: %s; lookups still take it as absent", d->cache_dir,
		    cache_kind_str[kind], hex, err);
	else if (rc == 0)
		log_debug("cache %s: %s entry %s: sound again (replaced) before "
		    "its removal", d->cache_dir, cache_kind_str[kind], hex);
}

static void
store_drop_landed(const struct cache_writer_res *res, void *arg)
{
	struct store_drop	*sd = arg;

	store_drop_said(sd->d, sd->kind, sd->hex, res->rc, res->err);
	free(sd);
}

/* One damaged record: counted, logged, removed. */
static void
store_damaged_one(struct daemon *d, const struct cache_damaged *dm)
{
	struct store_drop	*sd;
	char			 hex[2 * CACHE_KEY_MAX_BYTES + 1];
	int			 rc;

	metrics.store_damaged[dm->found]++;
	util_hex(dm->key, dm->klen, hex);
	log_err("cache %s: %s entry %s damaged: its %s record fails its "
	    "check (%s), found by a %s; removed, the next fetch or import "
	    "stores it again", d->cache_dir, cache_kind_str[dm->kind], hex,
	    dm->part, dm->why, cache_found_str[dm->found]);
	if (d->writer != NULL && (sd = calloc(1, sizeof(*sd))) != NULL) {
		sd->d = d;
		sd->kind = dm->kind;
		memcpy(sd->hex, hex, sizeof(hex));
		if (cache_writer_drop_damaged(d->writer, dm->kind, dm->key,
		    dm->klen, store_drop_landed, sd) == 0)
			return;
		free(sd);
	}
	rc = cache_drop_damaged(d->cache, dm->kind, dm->key, dm->klen);
	store_drop_said(d, dm->kind, hex, rc, cache_strerror(d->cache));
}

void
store_damaged_take(struct daemon *d)
{
	struct cache_damaged	dm[STORE_DAMAGED_BATCH];
	size_t			n, i;

	while ((n = cache_damaged_take(d->cache, dm, STORE_DAMAGED_BATCH)) > 0)
		for (i = 0; i < n; i++)
			store_damaged_one(d, &dm[i]);
}
