/* SPDX-License-Identifier: Apache-2.0 */
/* One vendor service (OCSP, RIM, PCCS, KDS): cache first, verified fetch with failover, refresh. */
#ifndef PROXY_SERVICE_H
#define PROXY_SERVICE_H

/*
 * A service is one kind's half of a generation (proxy/gen.h): the kind's
 * table of operations (struct svc_ops, proxy/kinds/), its configuration,
 * trust state, upstream pool, flights (proxy/flight.h: one fetch per key),
 * negative cache (proxy/negcache.h) and client rate limits. svc_handle
 * answers a client: from the store when a valid entry is there, else from
 * a remembered answer, else through a flight, whose check verifies the
 * answer (ops->verify), stores it (on the writer thread when there is one,
 * holding the flight until the put lands) and whose waiters are served
 * with what was stored. svc_refresh_start renews a stored entry the same
 * way for the refresh scheduler.
 *
 * Everything runs on the event loop's thread.
 */

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "cache/store.h"
#include "entry/conf.h"
#include "entry/entry.h"
#include "entry/kind.h"
#include "proxy/fetch/fetch.h"
#include "proxy/gen.h"
#include "proxy/metrics.h"
#include "proxy/refresh/refresh.h"

struct http_req;
struct refresh;
struct svc;
struct gen;

/* Room for any kind's typed request in a call (struct svc_call's query). */
#define SVC_QUERY_BYTES		1280

/*
 * What a route hands to the service: the cache key and the upstream
 * exchange, both rebuilt from validated, typed fields of the client's
 * request by the kind's parse (never copied from it unchecked), and what
 * to keep for refresh; then what only the wire adds.
 */
struct svc_call {
	union {		/* first: svc_call_parse clears what follows it */
		/* What the kind's parse and restore fill (svc_call_parse). */
		struct kind_call	 kind;
		/*
		 * The same fields by their own names (entry/kind.h's
		 * KIND_CALL_FIELDS): key, klen, method, path, content_type,
		 * accept, body (a POST's, copied), body_len, keep, keep_len,
		 * typed (1: query holds the typed request).
		 */
		struct {
			KIND_CALL_FIELDS
		};
	};
	int			 own_nonce;	/* OCSP: stapled chose the nonce */
	unsigned		 route;		/* METRICS_ROUTE(kind, i) */
	char			 variant[16];	/* how this client wants it ("hex", "der") */
	const char		*extra_header;	/* sent upstream ("Name: value"), or NULL */
	/*
	 * The kind's typed request (entry/'s struct pccs_req, struct
	 * kds_req ...) as its parse made it, or its restore remade it from
	 * the stored request; read only when typed is set. Copied with the
	 * call, so verify and serve read it rather than parsing the path
	 * again (a route copies it out with memcpy, checking at compile
	 * time that its struct fits).
	 */
	union {
		max_align_t	 align;
		unsigned char	 bytes[SVC_QUERY_BYTES];
	}			 query;	/* last: svc_call_init leaves it */
};
_Static_assert(offsetof(struct svc_call, own_nonce) == sizeof(struct kind_call),
    "the wire's fields follow the kind's");
_Static_assert(KIND_TYPED_BYTES <= SVC_QUERY_BYTES,
    "a kind's typed request travels in struct svc_call");

/*
 * A call with every field zero but the typed request's room, which only
 * a call with typed set reads: a hit does not clear its 1,280 bytes.
 */
static inline void
svc_call_init(struct svc_call *c)
{
	memset(c, 0, offsetof(struct svc_call, query));
}

/*
 * A client's request `in` into the call c for kind k by the kind's parse
 * (kind_table[k]->parse), in place: c is made afresh (as svc_call_init,
 * but the key past klen is left as it was), the typed request parsed
 * into c->query and the exchange, key and keep into c->kind. canon is the room (KIND_CANON_BYTES) c->path and c->keep may
 * point into, and c->body may point into in's body: the caller keeps both
 * while c is used, and adds what only the wire knows (route, variant,
 * extra_header). 0, or -1 with *status and why as the parse sets them,
 * for the route to answer in its own words.
 */
static inline int
svc_call_parse(struct svc_call *c, enum cache_kind k,
    const struct kind_ask *in, char *canon, int *status, char *why,
    size_t whylen)
{
	/* The parse sets every field of c->kind: only the wire's are cleared. */
	memset((char *)c + sizeof(c->kind), 0, offsetof(struct svc_call, query) -
	    sizeof(c->kind));
	return kind_table[k]->parse(in, c->query.bytes, canon, &c->kind,
	    status, why, whylen);
}

/*
 * A refresh's call for kind k from the stored entry b by the kind's
 * restore (kind_table[k]->restore), as svc_call_parse: into c, which the
 * caller zeroed but for the key, with canon kept while c is used (c->body
 * and c->keep may point into b). The key stays the caller's, the stored
 * entry's: a refresh renews the entry it was asked for, whatever its
 * request keys to. 0, or -1 when b holds no canonical request of the
 * kind.
 */
static inline int
svc_call_restore(struct svc_call *c, enum cache_kind k,
    const struct cache_body *b, char *canon)
{
	uint8_t	key[CACHE_KEY_MAX_BYTES];
	size_t	klen = c->klen;

	if (b->request == NULL || klen > sizeof(key))
		return -1;
	memcpy(key, c->key, klen);
	if (kind_table[k]->restore(b->request, b->request_len, c->query.bytes,
	    canon, &c->kind) == -1)
		return -1;
	memcpy(c->key, key, klen);
	c->klen = klen;
	return 0;
}

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
	struct metrics_kind	 metrics;	/* its labels, described at svc_init */
	/* Kept headers and upstream base suffixes: kind_table[kind]'s. */
	/*
	 * Create and free what the route sends upstream from its section
	 * beyond the kind's trust (kind_table[kind]'s trust_new, svc_trust):
	 * the PCCS API key's header. NULL: none. key_new: NULL with err set
	 * when it does not load.
	 */
	void			*(*key_new)(const struct config *, char *err, size_t errlen);
	void			 (*key_free)(void *);
	/* The longest upstream body taken; 0: the fetch's default (1 MiB). */
	size_t			 max_response_bytes;
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
	 * What only the wire adds to a refresh's call, which the service
	 * rebuilt from the stored entry b by the kind's restore
	 * (svc_call_restore) and counts on the kind's first metrics route:
	 * a new nonce, an API key, another route. Anything allocated goes in
	 * *scratch (freed by the caller once the call is copied). 0, or -1
	 * to refresh nothing. NULL: restore's call as it is.
	 */
	int			 (*refresh_call)(struct svc *,
				    const struct cache_body *b,
				    struct svc_call *c, void **scratch);
};


/*
 * The kind's service in generation g (gen_new calls it): its trust from
 * the configuration (kind_table[ops->kind]'s trust_new, and ops->key_new), and unless fctx is NULL (checking a
 * configuration) its upstream pool, negative cache and rate limits. NULL
 * with err set ("ocsp: ...", "out of memory") when any fails. Borrows g,
 * ops and c for its life.
 */
struct svc		*svc_new(struct gen *g, const struct svc_ops *ops,
			    const struct config_service *c, struct fetch_ctx *fctx,
			    char *err, size_t errlen);
/* With its generation's last reference. Accepts NULL. */
void			 svc_free(struct svc *);

const struct config_service *svc_conf(const struct svc *);
/* The kind's trust (struct kind's trust_new), or NULL. */
void			*svc_trust(const struct svc *);
/* The route's key_new state, or NULL. */
void			*svc_key(const struct svc *);
struct fetch_pool	*svc_pool(const struct svc *);
struct gen		*svc_gen(const struct svc *);
const struct svc_ops	*svc_ops(const struct svc *);
/* The kind's max_entries in effect (config_max_entries): 0, none. */
long			 svc_max_entries(const struct svc *);

/*
 * Answer a client: from the cache when valid (cache_first), else through
 * the upstreams with the client's budget, else serve_failed. The call's
 * buffers are copied; `req` is answered exactly once.
 */
void			 svc_handle(struct svc *, struct http_req *,
			    const struct svc_call *);

/*
 * refresh_start_fn for the service (arg): renew the stored entry at key
 * through a flight, joining a client's fetch of it if one runs. 0 when
 * it started (done comes later, REFRESH_OK once an entry is stored), -1
 * when the entry is gone or its exchange cannot be rebuilt or started.
 */
int			 svc_refresh_start(void *arg, enum cache_kind kind,
			    const uint8_t *key, size_t klen, refresh_done_fn *done,
			    void *done_arg);

/*
 * The kind's admit (kind_table[kind]->admit), once, for an upstream's 2xx
 * answer `res` to call c: the question is the call's key, what was asked
 * (its POST body, else the canonical request it keeps), its typed
 * request when it carries one, and the nonce check when stapled chose
 * the nonce and the upstream echoes nonces; the rules are the
 * generation's (gen_rules). stored: the entry the answer would replace,
 * for kinds whose rule reads it, else NULL. out is zeroed first. On
 * ENTRY_STORE, what the answer teaches (struct kind's teaches) joins
 * every kind's pool (gen_pool_add) and the store's (entry_pool_put).
 * Returns out->verdict; call entry_judgement_free(out) in every case.
 * For a route's verify, which adds what only the wire does (metrics,
 * logs).
 */
struct entry_judgement;
enum entry_verdict	 svc_admit(struct svc *, const struct svc_call *c,
			    const struct fetch_res *res,
			    const struct entry_stored *stored, time_t now,
			    struct entry_judgement *out);

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

#endif
