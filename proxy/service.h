/* SPDX-License-Identifier: Apache-2.0 */
/* One vendor service (OCSP, RIM, PCCS, KDS): cache first, verified fetch with failover, refresh. */
#ifndef PROXY_SERVICE_H
#define PROXY_SERVICE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "cache/store.h"
#include "entry/conf.h"
#include "entry/entry.h"
#include "proxy/fetch/fetch.h"
#include "proxy/metrics.h"

struct http_req;
struct refresh;
struct svc;
struct gen;

/*
 * What a route hands to the service: the cache key and the upstream
 * exchange, both rebuilt from validated, typed fields of the client's
 * request (never copied from it unchecked), and what to keep for refresh.
 */
struct svc_call {
	uint8_t			 key[CACHE_KEY_MAX_BYTES];
	size_t			 klen;
	const char		*method;	/* "GET" or "POST" */
	const char		*path;		/* appended to the upstream URL */
	const char		*content_type;	/* POST */
	const char		*accept;
	const uint8_t		*body;		/* POST body, copied */
	size_t			 body_len;
	const uint8_t		*keep;		/* stored with the entry to refresh it */
	size_t			 keep_len;
	int			 own_nonce;	/* OCSP: stapled chose the nonce */
	enum metrics_route	 route;
	char			 variant[16];	/* how this client wants it ("hex", "der") */
	const char		*extra_header;	/* sent upstream ("Name: value"), or NULL */
};

/* Bytes to store; pointers valid while the fetch result is. */
struct svc_answer {
	struct cache_meta	 meta;
	const uint8_t		*body;		/* default: the upstream body */
	size_t			 body_len;
};

/* The kind-specific half of a service. */
struct svc_ops {
	const char		*name;		/* "ocsp": logs, metrics, config */
	const char		*retry_after_s;	/* for svc_serve_failed_text */
	enum cache_kind		 kind;
	/* Kept headers and upstream base suffixes: kind_table[kind]'s. */
	/* Create and free the kind's trust state from its configuration. */
	void			*(*trust_new)(const struct config *, char *err, size_t errlen);
	void			 (*trust_free)(void *);
	/* Verify a 2xx answer to `call`; on ENTRY_STORE fill a->meta's times and status. */
	enum entry_verdict	 (*verify)(struct svc *, const struct svc_call *call,
				    const struct fetch_res *, time_t now,
				    struct svc_answer *a, char *why, size_t whylen);
	/*
	 * Answer from an entry (stored, or just fetched), or pass on an
	 * answer that is not stored (METRICS_RES_UNVERIFIABLE, METRICS_RES_DEFINITIVE: the
	 * meta is zeroed). Returns `result`, or another result it answered
	 * with instead (METRICS_RES_NOT_MODIFIED).
	 */
	enum metrics_result	 (*serve)(struct svc *, struct http_req *,
				    const struct svc_call *, const struct cache_meta *,
				    const uint8_t *body, size_t body_len,
				    const uint8_t *headers, size_t headers_len,
				    time_t now, enum metrics_result result);
	/* An answer about the object (404, 410) that every mirror would repeat. */
	void			 (*serve_final)(struct svc *, struct http_req *,
				    const struct svc_call *, int http_status,
				    const uint8_t *body, size_t body_len);
	/* Nothing valid to serve; `why` names every endpoint tried, or the budget. */
	void			 (*serve_failed)(struct svc *, struct http_req *,
				    const struct svc_call *, const char *why);
	/*
	 * Rebuild the upstream exchange for a refresh from a stored entry.
	 * Anything allocated goes in *scratch (freed by the caller).
	 */
	int			 (*refresh_call)(struct svc *, const uint8_t *key,
				    size_t klen, const struct cache_body *,
				    struct svc_call *out, void **scratch);
};


/*
 * A generation: one configuration with its trust stores and upstream
 * pools. SIGHUP builds a new one and swaps it in; requests and fetches in
 * flight keep the old one alive through its reference count.
 */
/* Takes ownership of cfg (also on failure). */
struct cache_reader;
struct cache_writer;
/*
 * writer: the store's writer thread, or NULL to store on the loop.
 * reader: threads for the lookups of hits (lookup_threads), or NULL to
 * look up on the loop.
 */
struct gen		*gen_new(struct config *cfg, struct fetch_ctx *,
			    struct cache *, struct cache_writer *,
			    struct cache_reader *, struct refresh *, char *err,
			    size_t errlen);
void			 gen_ref(struct gen *);
void			 gen_unref(struct gen *);	/* accepts NULL */
const struct config	*gen_config(const struct gen *);
struct cache		*gen_cache(const struct gen *);	/* NULL when checking a config */
struct svc		*gen_svc(struct gen *, enum cache_kind);
/*
 * Add the intermediates learned from evidence, RIMs and bundles (aux
 * records "pool/<sha256>", written by staplectl and the RIM route) to the
 * OCSP pool. Done at creation; call again to pick up new ones.
 */
void			 gen_learn_pool(struct gen *);
/* Make this generation's services the refreshers of their kinds. */
void			 gen_install_refresh(struct gen *);

const struct config_service *svc_conf(const struct svc *);
void			*svc_trust(const struct svc *);
struct fetch_pool	*svc_pool(const struct svc *);
struct gen		*svc_gen(const struct svc *);
const struct svc_ops	*svc_ops(const struct svc *);

/*
 * Answer a client: from the cache when valid (cache_first), else through
 * the upstreams with the client's budget, else serve_failed. The call's
 * buffers are copied; `req` is answered exactly once.
 */
void			 svc_handle(struct svc *, struct http_req *,
			    const struct svc_call *);

/* Client requests waiting for an upstream, for a graceful shutdown. */
size_t			 svc_pending(void);

/*
 * Shared answers for kinds whose clients read HTTP status: the upstream's
 * 404/410 passed on as sent, and a 503 naming every endpoint tried (with
 * Retry-After: the kind's retry_after_s).
 */
void			 svc_serve_final_as_sent(struct svc *, struct http_req *,
			    const struct svc_call *, int http_status,
			    const uint8_t *body, size_t len);
void			 svc_serve_failed_text(struct svc *, struct http_req *,
			    const struct svc_call *, const char *why);

/* The OCSP, RIM ... kind tables (proxy/kinds/ocsp_route.c, ...). */
extern const struct svc_ops	ocsp_ops;
extern const struct svc_ops	rim_ops;
extern const struct svc_ops	pccs_ops;
extern const struct svc_ops	kds_ops;

#endif
