/* SPDX-License-Identifier: Apache-2.0 */
/* A generation: one configuration with its four services (trust, upstream pools), swapped whole at SIGHUP. */
#ifndef PROXY_GEN_H
#define PROXY_GEN_H

#include <stddef.h>

#include "cache/store.h"
#include "entry/conf.h"

struct cache;
struct cache_reader;
struct cache_writer;
struct config_cidr;
struct fetch_ctx;
struct gen;
struct refresh;
struct svc;
struct svc_ops;

/*
 * A generation holds what one configuration makes: the configuration
 * itself, trusted_proxies parsed, and one service per kind (proxy/service.h:
 * trust stores, upstream pool, negative cache, rate limits). SIGHUP builds
 * a new one and swaps it in (proxy/daemon/reload.c); requests, lookups,
 * fetches and refreshes in flight keep the old one alive through its
 * reference count, and it is freed, services and all, with the last
 * gen_unref. The store, its writer and reader threads and the refresh
 * scheduler are the daemon's: a generation borrows them.
 *
 * Everything runs on the event loop's thread.
 */

/*
 * A generation over cfg, which it takes (also on failure), with a
 * service for each kind made of ops[k] (route_ops: the kinds' wing hands
 * them down; static, never freed). fctx NULL
 * checks a configuration (stapled -n): no pools are made. cache NULL:
 * no store either (config_max_entries then sizes from cfg's map_size).
 * writer: the store's writer thread, or NULL to store on the loop.
 * reader: threads for the lookups of hits (lookup_threads), or NULL to
 * look up on the loop. refresh: the scheduler its services refresh
 * through, once gen_install_refresh made them its refreshers. Learns the
 * pooled intermediates (gen_learn_pool). One reference, the caller's.
 * NULL with err set when a kind's trust does not load ("ocsp: ..."), a
 * trusted_proxies entry does not parse, a pool cannot be made, or memory
 * is short.
 */
struct gen		*gen_new(struct config *cfg,
			    const struct svc_ops *const ops[CACHE_KIND_MAX],
			    struct fetch_ctx *fctx,
			    struct cache *cache, struct cache_writer *writer,
			    struct cache_reader *reader, struct refresh *refresh,
			    char *err, size_t errlen);
void			 gen_ref(struct gen *);
/* Drops a reference; the last frees the services and the configuration. Accepts NULL. */
void			 gen_unref(struct gen *);

/* What the generation was made with; borrowed while a reference is held. */
const struct config	*gen_config(const struct gen *);
struct cache		*gen_cache(const struct gen *);	/* NULL when checking a config */
struct cache_writer	*gen_writer(const struct gen *);	/* NULL: stores on the loop */
struct cache_reader	*gen_reader(const struct gen *);	/* NULL: looks up on the loop */
struct refresh		*gen_refresh(const struct gen *);
/* trusted_proxies parsed, *n of them (0: none, and NULL). */
const struct config_cidr *gen_trusted(const struct gen *, size_t *n);
/* The kind's service; lives as long as the generation. */
struct svc		*gen_svc(struct gen *, enum cache_kind);

/*
 * Add the intermediates learned from evidence, RIMs and bundles (aux
 * records "pool/<sha256>", written by staplectl and by svc_admit) to the
 * pool of each kind that keeps one (struct kind's pool_add). Done at creation;
 * call again to pick up new ones.
 * A store that cannot be read is logged; nothing is returned.
 */
void			 gen_learn_pool(struct gen *);
/*
 * What the kinds' admits judge answers by in this generation: its
 * configuration, each kind's trust store (svc_trust), and its store for
 * another record a rule needs (a VCEK's cert_chain; none when checking
 * a configuration). Borrowed; lives as long as the generation.
 */
struct entry_rules;
const struct entry_rules *gen_rules(const struct gen *);
/*
 * Add one CA certificate (DER) to the pool of each kind that keeps one
 * (struct kind's pool_add), in memory only (entry_pool_put keeps it in the
 * store). 0 when a pool took it or held it already, -1 when none did.
 */
int			 gen_pool_add(struct gen *, const uint8_t *der,
			    size_t len);
/*
 * Make this generation's services the refreshers of their kinds
 * (refresh_set_kind: schedule, idle expiry, rates, half the service's
 * transfers, max_entries) and set the map's resident cap; logs the entry
 * caps in effect. Call once the generation is the daemon's.
 */
void			 gen_install_refresh(struct gen *);

#endif
