/* SPDX-License-Identifier: Apache-2.0 */
/* Generations: a configuration with its services, counted, learned intermediates, and the refreshers installed. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/store.h"
#include "entry/conf.h"
#include "entry/judge.h"
#include "entry/kind.h"
#include "entry/pool.h"
#include "proxy/gen.h"
#include "proxy/log.h"
#include "proxy/refresh/refresh.h"
#include "proxy/service.h"

struct gen {
	int		 refs;
	struct config	*cfg;
	struct cache	*cache;
	struct cache_writer *writer;	/* NULL: stores on the loop */
	struct cache_reader *reader;	/* lookup_threads; NULL: looks up on the loop */
	struct refresh	*refresh;
	struct config_cidr *trusted;	/* trusted_proxies, parsed */
	size_t		 ntrusted;
	struct svc	*svcs[CACHE_KIND_MAX];
	struct entry_rules rules;	/* the kinds' admits read these (gen_rules) */
};

void
gen_ref(struct gen *g)
{
	g->refs++;
}

void
gen_unref(struct gen *g)
{
	size_t	i;

	if (g == NULL || --g->refs > 0)
		return;
	for (i = KIND_FIRST; i < CACHE_KIND_MAX; i++)
		svc_free(g->svcs[i]);
	free(g->trusted);
	config_free(g->cfg);
	free(g->cfg);
	free(g);
}

const struct config *
gen_config(const struct gen *g)
{
	return g->cfg;
}

struct cache *
gen_cache(const struct gen *g)
{
	return g->cache;
}

struct cache_writer *
gen_writer(const struct gen *g)
{
	return g->writer;
}

struct cache_reader *
gen_reader(const struct gen *g)
{
	return g->reader;
}

struct refresh *
gen_refresh(const struct gen *g)
{
	return g->refresh;
}

const struct config_cidr *
gen_trusted(const struct gen *g, size_t *n)
{
	*n = g->ntrusted;
	return g->trusted;
}

struct svc *
gen_svc(struct gen *g, enum cache_kind id)
{
	return g->svcs[id];
}

static int
gen_pool_one(const char *name, const uint8_t *der, size_t len, void *arg)
{
	struct svc	*s = arg;

	(void)name;
	/* Duplicates are skipped; a record that does not parse is ignored. */
	(void)kind_table[svc_ops(s)->kind]->pool_add(svc_trust(s), der, len);
	return 0;
}

void
gen_learn_pool(struct gen *g)
{
	struct svc	*s;
	size_t		 i;

	for (i = KIND_FIRST; g->cache != NULL && i < CACHE_KIND_MAX; i++) {
		s = g->svcs[i];
		if (kind_table[i]->pool_add != NULL && svc_trust(s) != NULL &&
		    entry_pool_walk(g->cache, gen_pool_one, s) == -1)
			log_warn("%s: reading the learned intermediates: %s",
			    svc_ops(s)->name, cache_strerror(g->cache));
	}
}

int
gen_pool_add(struct gen *g, const uint8_t *der, size_t len)
{
	struct svc	*s;
	size_t		 i;
	int		 rv = -1;

	for (i = KIND_FIRST; i < CACHE_KIND_MAX; i++) {
		s = g->svcs[i];
		if (kind_table[i]->pool_add != NULL && svc_trust(s) != NULL &&
		    kind_table[i]->pool_add(svc_trust(s), der, len) == 0)
			rv = 0;
	}
	return rv;
}

/* entry_find_fn over the generation's store: another record's response, copied. */
static uint8_t *
gen_find(void *arg, enum cache_kind kind, const uint8_t *key, size_t klen,
    size_t *len, const char **from)
{
	struct gen		*g = arg;
	struct cache_body	 b;
	uint8_t			*copy;

	if (cache_get(g->cache, kind, key, klen, NULL, &b) != 1 ||
	    b.response_len == 0 || (copy = malloc(b.response_len)) == NULL)
		return NULL;
	memcpy(copy, b.response, b.response_len);
	*len = b.response_len;
	*from = "the store's";
	return copy;
}

const struct entry_rules *
gen_rules(const struct gen *g)
{
	return &g->rules;
}

/* trusted_proxies, parsed once per generation. */
static int
gen_parse_trusted(struct gen *g, char *err, size_t errlen)
{
	size_t	i, n = g->cfg->ntrusted_proxies;

	if (n == 0)
		return 0;
	if ((g->trusted = calloc(n, sizeof(*g->trusted))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (i = 0; i < n; i++)
		if (config_parse_cidr(g->cfg->trusted_proxies[i],
		    &g->trusted[i]) == -1) {
			snprintf(err, errlen, "trusted_proxies[%zu]: not an "
			    "address or range", i);
			return -1;
		}
	g->ntrusted = n;
	return 0;
}

struct gen *
gen_new(struct config *cfg, const struct svc_ops *const ops[CACHE_KIND_MAX],
    struct fetch_ctx *fctx, struct cache *cache, struct cache_writer *writer, struct cache_reader *reader,
    struct refresh *refresh, char *err, size_t errlen)
{
	struct gen	*g;
	size_t		 i;

	if ((g = calloc(1, sizeof(*g))) == NULL) {
		snprintf(err, errlen, "out of memory");
		config_free(cfg);
		free(cfg);
		return NULL;
	}
	g->refs = 1;
	g->cfg = cfg;
	g->cache = cache;
	g->writer = writer;
	g->reader = reader;
	g->refresh = refresh;
	if (gen_parse_trusted(g, err, errlen) == -1) {
		gen_unref(g);
		return NULL;
	}
	for (i = KIND_FIRST; i < CACHE_KIND_MAX; i++)
		if ((g->svcs[i] = svc_new(g, ops[i],
		    config_service(cfg, i), fctx, err, errlen)) == NULL) {
			gen_unref(g);
			return NULL;
		}
	entry_rules_init(&g->rules, g->cfg);
	for (i = KIND_FIRST; i < CACHE_KIND_MAX; i++)
		g->rules.trust[i] = svc_trust(g->svcs[i]);
	if (g->cache != NULL) {
		g->rules.find = gen_find;
		g->rules.find_arg = g;
	}
	gen_learn_pool(g);
	return g;
}

/*
 * The entry caps in effect, logged at start and at each reload: the ones
 * not set are derived from the map's size (config_max_entries).
 */
static void
gen_log_caps(struct gen *g)
{
	char	line[256];
	size_t	i, off = 0;
	int	n;

	line[0] = '\0';
	for (i = KIND_FIRST; i < CACHE_KIND_MAX; i++) {
		n = snprintf(line + off, sizeof(line) - off, "%s%s %ld%s",
		    off > 0 ? ", " : "", svc_ops(g->svcs[i])->name,
		    svc_max_entries(g->svcs[i]), svc_conf(g->svcs[i])->max_entries ==
		    CONFIG_MAX_ENTRIES_AUTO ? "" : " (set)");
		if (n < 0 || (size_t)n >= sizeof(line) - off)
			break;
		off += (size_t)n;
	}
	log_info("store: max_entries %s; those not set are what the map of "
	    "%zu MiB holds (stapled.conf(5))", line, (g->cache != NULL ?
	    cache_map_bytes(g->cache) : g->cfg->map_size) >> 20);
}

void
gen_install_refresh(struct gen *g)
{
	struct refresh_kind_conf	 kc;
	const struct config_service	*c;
	size_t				 i;

	for (i = KIND_FIRST; i < CACHE_KIND_MAX; i++) {
		c = svc_conf(g->svcs[i]);
		memset(&kc, 0, sizeof(kc));
		kc.sched.fraction = c->refresh.fraction;
		kc.sched.jitter = c->refresh.jitter;
		kc.sched.min_interval_s = c->refresh.min_interval_s;
		kc.sched.max_interval_s = c->refresh.max_interval_s;
		kc.idle_expire_s = c->idle_expire_s;
		kc.rate_limit_per_s = c->rate_limit_per_s;
		/* half the service's transfers at most: clients keep the rest */
		kc.max_inflight = (size_t)(c->max_upstream_inflight + 1) / 2;
		kc.max_entries = (size_t)svc_max_entries(g->svcs[i]);
		kc.start = svc_refresh_start;
		kc.arg = g->svcs[i];
		refresh_set_kind(g->refresh, svc_ops(g->svcs[i])->kind, &kc);
	}
	refresh_set_map_cap(g->refresh, gen_config(g)->map_resident_max);
	gen_log_caps(g);
}
