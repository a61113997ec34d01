/* SPDX-License-Identifier: Apache-2.0 */
/* The service: the path every vendor object takes: cache first, single-flight fetch, verify, store, serve, refresh. */
#include "config.h"

#include <sys/socket.h>

#include <netinet/in.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "cache/clock.h"
#include "cache/reader.h"
#include "cache/store.h"
#include "cache/writer.h"
#include "entry/conf.h"
#include "entry/judge.h"
#include "entry/kind.h"
#include "entry/pool.h"
#include "proxy/http/cache_status.h"
#include "proxy/fetch/fetch.h"
#include "proxy/flight.h"
#include "proxy/gen.h"
#include "proxy/http/http.h"
#include "proxy/http/httpcache.h"
#include "proxy/log.h"
#include "proxy/loop.h"
#include "proxy/metrics.h"
#include "proxy/metrics_page.h"
#include "proxy/miss_limit.h"
#include "proxy/negcache.h"
#include "proxy/refresh/refresh.h"
#include "proxy/refresh/usage.h"
#include "proxy/service.h"

#define SVC_HEADERS_MAX_BYTES	ENTRY_KEPT_HEADERS_MAX_BYTES
#define SVC_STATE_LOG_S		10	/* a repeated state line at most this often */
/*
 * A put the full map refused is made again after each round of room
 * (usage_map_full: a few entries not in use evicted), this many times.
 */
#define SVC_FULL_TRIES		8

struct svc {
	struct gen			*gen;
	const struct svc_ops		*ops;
	const struct config_service	*conf;
	void				*trust;	/* kind_table[kind]'s trust_new */
	void				*key;	/* ops->key_new's */
	struct fetch_pool		*pool;
	struct flight_set		 flights;	/* its fetches, one per key */
	char				**urls;	/* upstream bases, suffixes removed */
	struct negcache			*neg;	/* negative_ttl_s 0: NULL */
	struct miss_limit		*misses;	/* client_miss_rate_per_s; NULL: none */
	struct miss_rate		 new_entries;	/* new_entry_rate_per_s */
	/* When each rate-limited state line was last logged (SVC_STATE_LOG_S apart). */
	time_t				 last_fail_log;
	time_t				 last_definitive_log;	/* negative_ttl_s 0 */
	time_t				 last_limited_log;
	time_t				 last_capped_log;	/* max_entries */
	time_t				 last_new_log;	/* new_entry_rate_per_s */
	long				 max_entries;	/* config_max_entries: 0 none */
};

/*
 * A call with its buffers owned: a flight's job_arg (what its check
 * verifies and stores), and each waiting client's copy of its own call.
 * A client that starts a flight shares its copy with it (refs).
 */
struct svc_job {
	int		 refs;
	struct svc	*svc;
	struct svc_call	 call;
	uint8_t		*body;
	uint8_t		*keep;
	char		*path;
	char		*extra_header;
	enum entry_verdict verdict;	/* of the accepted answer (ENTRY_REFUSE: none) */
	char		 note[64];	/* ENTRY_DEFINITIVE: what the answer said */
	/* ENTRY_STORE on the writer: the flight, held until the put lands */
	struct flight	*flight;
	int		 storing;
	struct cache_meta stored;	/* what was put; KEPT: the newer entry's, as written */
	uint8_t		*headers;	/* the kept headers of that entry, or NULL */
	size_t		 headers_len;
	struct schedule_conf sched;
	time_t		 stored_at;
	const uint8_t	*answer;	/* what was put: the held flight's copy of the body */
	size_t		 answer_len;
	int		 full_tries;	/* puts made again for a full map */
	struct flight_outcome out;	/* what every waiter is told (flight_set_outcome) */
};

/* How an answer that went upstream came to be, for its Cache-Status. */
struct svc_fwd {
	int		 collapsed;	/* joined a fetch already in flight */
	int		 http_status;	/* the upstream's; 0: none answered */
	const char	*upstream;	/* the one that answered, or NULL */
};

/* A client waiting for a fetch. */
struct pending {
	struct svc		*svc;
	struct http_req	*req;	/* NULL once the client has gone */
	struct flight_waiter	*w;
	struct event		*budget;
	struct svc_job		*call;	/* a copy of the call, for the answer */
	struct svc_fwd		 fwd;	/* borrows the fetch result's upstream */
};

/* A client waiting for a lookup on the reader's threads (lookup_threads). */
struct lookup {
	struct http_req	*req;	/* NULL once the client has gone */
	struct svc_job	*call;	/* a copy of the call, holding the generation */
};

/* A refresh waiting for a fetch. */
struct refresh_wait {
	struct svc	*svc;
	refresh_done_fn	*done;
	void		*done_arg;
};

static size_t	npending;

size_t
svc_pending(void)
{
	return npending;
}

/* ---- the service's parts ---------------------------------------------- */

void
svc_free(struct svc *s)
{
	size_t	i;

	if (s == NULL)
		return;
	fetch_pool_free(s->pool);
	if (s->trust != NULL && kind_table[s->ops->kind]->trust_free != NULL)
		kind_table[s->ops->kind]->trust_free(s->trust);
	if (s->key != NULL && s->ops->key_free != NULL)
		s->ops->key_free(s->key);
	for (i = 0; s->urls != NULL && i < s->conf->nupstreams; i++)
		free(s->urls[i]);
	free(s->urls);
	negcache_free(s->neg);
	miss_limit_free(s->misses);
	free(s);
}

/* The service's parts from its configuration; 0, or -1 with err set (s is then svc_free's). */
static int
svc_init(struct gen *g, struct svc *s, const struct svc_ops *ops,
    const struct config_service *c, struct fetch_ctx *fctx, char *err,
    size_t errlen)
{
	const struct config_upstream_tls *tls;
	struct fetch_upstream_conf	*ups;
	struct fetch_pool_conf		 pc;
	size_t				 i;

	s->gen = g;
	s->ops = ops;
	s->conf = c;
	metrics_describe(ops->kind, &ops->metrics);
	flight_set_init(&s->flights);
	s->max_entries = config_max_entries(c, ops->kind, gen_cache(g) != NULL ?
	    cache_map_bytes(gen_cache(g)) : gen_config(g)->map_size);
	if (kind_table[ops->kind]->trust_new != NULL &&
	    kind_table[ops->kind]->trust_new(c, &s->trust, err, errlen) != 0)
		return -1;
	if (ops->key_new != NULL &&
	    (s->key = ops->key_new(gen_config(g), err, errlen)) == NULL)
		return -1;
	if (fctx == NULL)
		return 0;	/* checking a configuration: no pool */
	if ((ups = calloc(c->nupstreams, sizeof(*ups))) == NULL ||
	    (s->urls = calloc(c->nupstreams, sizeof(*s->urls))) == NULL ||
	    (c->negative_ttl_s > 0 && (s->neg = negcache_new()) == NULL)) {
		free(ups);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (i = 0; i < c->nupstreams; i++) {
		if ((s->urls[i] = entry_base_url(c->upstreams[i].url,
		    kind_table[ops->kind]->base_suffixes)) == NULL) {
			free(ups);
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		ups[i].name = c->upstreams[i].name;
		ups[i].url = s->urls[i];
		ups[i].verify_nonce = c->upstreams[i].verify_nonce;
	}
	memset(&pc, 0, sizeof(pc));
	pc.hedge_ms = (int)c->hedge_ms;
	pc.connect_timeout_ms = (int)c->connect_timeout_ms;
	pc.timeout_ms = (int)c->timeout_ms;
	pc.shuffle = c->shuffle;
	pc.pacing_ms = (int)c->pacing_ms;
	pc.max_inflight = (size_t)c->max_upstream_inflight;
	pc.max_response_bytes = ops->max_response_bytes;
	tls = config_upstream_tls(gen_config(g), ops->kind);
	pc.ca_file = tls->ca_file;
	pc.cert_file = tls->cert_file;
	pc.key_file = tls->key_file;
	s->pool = fetch_pool_new(fctx, ops->name, ups, c->nupstreams, &pc);
	free(ups);
	if (s->pool == NULL) {
		snprintf(err, errlen, "%s: cannot create the upstream pool", ops->name);
		return -1;
	}
	if (c->client_miss_rate_per_s > 0 &&
	    (s->misses = miss_limit_new(c->client_miss_rate_per_s,
	    (unsigned)c->client_ipv4_prefix,
	    (unsigned)c->client_ipv6_prefix)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

struct svc *
svc_new(struct gen *g, const struct svc_ops *ops,
    const struct config_service *c, struct fetch_ctx *fctx, char *err,
    size_t errlen)
{
	struct svc	*s;

	if ((s = calloc(1, sizeof(*s))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (svc_init(g, s, ops, c, fctx, err, errlen) == -1) {
		svc_free(s);
		return NULL;
	}
	return s;
}

const struct config_service *
svc_conf(const struct svc *s)
{
	return s->conf;
}

void *
svc_trust(const struct svc *s)
{
	return s->trust;
}

void *
svc_key(const struct svc *s)
{
	return s->key;
}

struct fetch_pool *
svc_pool(const struct svc *s)
{
	return s->pool;
}

struct gen *
svc_gen(const struct svc *s)
{
	return s->gen;
}

const struct svc_ops *
svc_ops(const struct svc *s)
{
	return s->ops;
}

long
svc_max_entries(const struct svc *s)
{
	return s->max_entries;
}

/* ---- jobs: what a fetch verifies and stores -------------------------------- */

static void
svc_job_free(void *arg)
{
	struct svc_job	*j = arg;

	if (j == NULL || --j->refs > 0)
		return;
	gen_unref(j->svc->gen);
	free(j->body);
	free(j->keep);
	free(j->path);
	free(j->extra_header);
	free(j->headers);
	free(j);
}

static uint8_t *
dup_bytes(const uint8_t *p, size_t n)
{
	uint8_t	*q;

	if ((q = malloc(n ? n : 1)) != NULL && n)
		memcpy(q, p, n);
	return q;
}

static struct svc_job *
svc_job_new(struct svc *s, const struct svc_call *c)
{
	struct svc_job	*j;

	if ((j = calloc(1, sizeof(*j))) == NULL)
		return NULL;
	j->refs = 1;
	j->svc = s;
	gen_ref(s->gen);
	j->call = *c;
	j->verdict = ENTRY_REFUSE;
	if ((j->body = dup_bytes(c->body, c->body_len)) == NULL ||
	    (j->keep = dup_bytes(c->keep, c->keep_len)) == NULL ||
	    (j->path = strdup(c->path ? c->path : "")) == NULL ||
	    (c->extra_header != NULL &&
	    (j->extra_header = strdup(c->extra_header)) == NULL)) {
		svc_job_free(j);
		return NULL;
	}
	j->call.extra_header = j->extra_header;
	j->call.body = j->body;
	j->call.keep = j->keep;
	j->call.path = j->path;
	return j;
}

/* ---- the negative cache (proxy/negcache.h) --------------------------------- */

/* Remember an answer about c's key for negative_ttl_s; negcache_put's result. */
static int
neg_put(struct svc *s, const struct svc_call *c, int status, int definitive,
    const uint8_t *body, size_t len, time_t now)
{
	return negcache_put(s->neg, c->key, c->klen, status, definitive, body,
	    len, now + s->conf->negative_ttl_s);
}

static const struct negcache_entry *
neg_live(struct svc *s, const struct svc_call *c)
{
	return negcache_live(s->neg, c->key, c->klen, time(NULL));
}

/*
 * new_entry_rate_per_s (docs/refresh.md, "Bounded upstream work"): NEW
 * entries are stored at most so fast, all clients together, so that a flood
 * of distinct misses churns the store's probation no faster. 1 store it, 0
 * pass the answer on unstored.
 */
static int
new_entry_admit(struct svc *s, const struct svc_call *c, const char *hex,
    time_t now)
{
	struct cache_meta	old;
	double			rate = s->conf->new_entry_rate_per_s;

	if (rate <= 0 || cache_get_meta(gen_cache(s->gen), s->ops->kind, c->key,
	    c->klen, &old) != 0)
		return 1;	/* no cap, a replacement, or the put will say */
	if (miss_rate_take(&s->new_entries, rate, miss_rate_burst(rate),
	    mono_ms()))
		return 1;
	metrics.store_limited[s->ops->kind]++;
	if (now - s->last_new_log >= SVC_STATE_LOG_S) {
		s->last_new_log = now;
		log_warn("%s: %s: not stored: over new_entry_rate_per_s (%g/s); "
		    "the answer is passed on", s->ops->name, hex, rate);
	}
	return 0;
}

/*
 * max_entries (docs/refresh.md, "Bounded upstream work"): a NEW entry needs
 * room, made by evicting the least valuable. 1 store it, 0 pass the answer
 * on unstored.
 */
static int
store_room(struct svc *s, const struct svc_call *c, const char *hex,
    time_t now)
{
	struct cache_meta	old;

	if (s->max_entries == 0 || cache_get_meta(gen_cache(s->gen),
	    s->ops->kind, c->key, c->klen, &old) != 0)
		return 1;	/* no cap, a replacement, or the put will say */
	if (usage_make_room(refresh_usage(gen_refresh(s->gen)), s->ops->kind) == 0)
		return 1;
	metrics.store_capped[s->ops->kind]++;
	if (now - s->last_capped_log >= SVC_STATE_LOG_S) {
		s->last_capped_log = now;
		log_warn("%s: %s: not stored: max_entries (%ld) reached and no "
		    "entry may be evicted now (imported and not yet asked, "
		    "asked since the last walk, or protected: asked again and "
		    "within their share); the answer is passed on",
		    s->ops->name, hex, s->max_entries);
	}
	return 0;
}

static cache_writer_done	kept_landed;

/*
 * The newer entry a put kept (CACHE_PUT_KEPT): its meta into *m and its
 * kept headers into the job, which serves the answer with them. 0, or -1
 * when it is gone or cannot be read.
 */
static int
kept_entry(struct svc_job *j, struct cache_meta *m)
{
	struct cache	*cache = gen_cache(j->svc->gen);
	struct cache_body b;
	uint8_t		*h = NULL;

	if (cache_get(cache, j->svc->ops->kind, j->call.key, j->call.klen, m,
	    &b) != 1)
		return -1;
	if (b.headers_len > 0 && (h = dup_bytes(b.headers, b.headers_len)) == NULL)
		return -1;
	free(j->headers);
	j->headers = h;
	j->headers_len = h != NULL ? b.headers_len : 0;
	j->out.headers = j->headers;
	j->out.headers_len = j->headers_len;
	return 0;
}

static int	store_landed(struct svc_job *, int, const char *, int);
static cache_writer_done	put_landed;

/*
 * The put found the map full: usage_map_full makes room (entries not
 * in use evicted) and the put is made again, SVC_FULL_TRIES times at
 * most. -1 when it is not (nothing could be evicted, or the tries are
 * spent), else store_landed's result for the put made again.
 */
static int
store_again(struct svc_job *j, const char *hex, const char *err)
{
	struct svc		*s = j->svc;
	struct cache		*cache = gen_cache(s->gen);
	struct cache_body	 b = { 0 };
	int			 put;

	if (usage_map_full(refresh_usage(gen_refresh(s->gen)), s->ops->kind,
	    time(NULL), "%s: %s: not stored: %s", s->ops->name, hex, err) == 0 ||
	    ++j->full_tries > SVC_FULL_TRIES)
		return -1;
	b.request = j->call.keep;
	b.request_len = j->call.keep_len;
	b.response = j->answer;
	b.response_len = j->answer_len;
	b.headers = j->headers;
	b.headers_len = j->headers_len;
	if (j->storing)
		return cache_writer_put(gen_writer(s->gen), j->call.key,
		    j->call.klen, &j->stored, &b, put_landed, j) == 0 ? 1 : -1;
	put = cache_put(cache, j->call.key, j->call.klen, &j->stored, &b);
	return store_landed(j, put, cache_strerror(cache),
	    cache_map_full(cache));
}

/*
 * The put's result (on the loop, when it landed). 1 when a schedule
 * write for the newer stored entry, or the put made again once the full
 * map had room, went to the writer (its callback ends the flight), else 0.
 */
static int
store_landed(struct svc_job *j, int put, const char *err, int map_full)
{
	struct svc		*s = j->svc;
	struct cache		*cache = gen_cache(s->gen);
	struct cache_meta	 old;
	char			 hex[17];
	time_t			 now = j->stored_at;
	int			 rv;

	log_hex(hex, sizeof(hex), j->call.key, j->call.klen < 8 ? j->call.klen : 8);
	if (put == -1) {
		/* Logged by usage_map_full, once a spell. */
		if (map_full && (rv = store_again(j, hex, err)) != -1)
			return rv;
		metrics.store_errors++;
		j->out.map_full = map_full;
		if (map_full)
			metrics.store_map_full++;
		else
			log_err("%s: %s: not stored: %s", s->ops->name, hex, err);
		return 0;
	}
	negcache_forget(s->neg, j->call.key, j->call.klen);
	if (put != CACHE_PUT_KEPT) {
		log_debug("%s: %s: stored from %s (valid for %llds)",
		    s->ops->name, hex, j->stored.source,
		    (long long)(j->stored.next_update - now));
		j->out.stored = 1;
		return 0;
	}
	/* The stored entry is newer: keep it, but plan its next refresh. */
	log_debug("%s: %s: kept the newer stored entry", s->ops->name, hex);
	if (kept_entry(j, &old) == -1)
		return 0;
	if (!(old.flags & CACHE_F_NO_REFRESH))
		old.next_refresh_at = schedule_refresh_at(&j->sched,
		    old.this_update, old.next_update, now, refresh_rand());
	old.refresh_failures = 0;
	old.fetched_at = now;
	j->stored = old;
	if (j->storing && cache_writer_put_meta(gen_writer(s->gen), j->call.key,
	    j->call.klen, &old, kept_landed, j) == 0)
		return 1;
	if (cache_put_meta(cache, j->call.key, j->call.klen, &old) == -1)
		log_err("%s: %s: %s", s->ops->name, hex, cache_strerror(cache));
	else
		j->out.stored = 1;
	return 0;
}

/* The writer's callbacks: the flight's waiters are answered once its writes landed. */
static void
kept_landed(const struct cache_writer_res *res, void *arg)
{
	struct svc_job	*j = arg;
	char		 hex[17];

	if (res->rc == -1) {
		log_hex(hex, sizeof(hex), j->call.key,
		    j->call.klen < 8 ? j->call.klen : 8);
		log_err("%s: %s: %s", j->svc->ops->name, hex, res->err);
	} else
		j->out.stored = 1;
	flight_release(j->flight);	/* frees j */
}

/* The put, made on the writer (store, store_again). */
static void
put_landed(const struct cache_writer_res *res, void *arg)
{
	struct svc_job	*j = arg;

	if (store_landed(j, res->rc, res->err, res->map_full) == 0)
		flight_release(j->flight);	/* frees j */
}

/*
 * A verified answer goes to the store: on the writer thread when there
 * is one (j->storing; the flight is held until it lands, with its own
 * copy of the answer), else here.
 */
static void
store(struct svc_job *j, struct flight *f, const struct fetch_res *res,
    struct svc_answer *a, const char *headers, size_t headers_len, time_t now)
{
	struct svc			*s = j->svc;
	struct cache			*cache = gen_cache(s->gen);
	const struct config_refresh	*rc = &s->conf->refresh;
	struct schedule_conf		 sc = { rc->fraction, rc->jitter,
					    rc->min_interval_s, rc->max_interval_s };
	struct cache_body		 b = { 0 };
	char				 hex[17];
	int				 put;

	a->meta.kind = s->ops->kind;
	a->meta.fetched_at = now;
	a->meta.refresh_failures = 0;
	if (!(a->meta.flags & CACHE_F_NO_REFRESH))
		a->meta.next_refresh_at = schedule_refresh_at(&sc,
		    a->meta.this_update, a->meta.next_update, now, refresh_rand());
	snprintf(a->meta.source, sizeof(a->meta.source), "%s", res->upstream);
	b.request = j->call.keep;
	b.request_len = j->call.keep_len;
	b.response = a->body;
	b.response_len = a->body_len;
	b.headers = (const uint8_t *)headers;
	b.headers_len = headers_len;
	log_hex(hex, sizeof(hex), j->call.key, j->call.klen < 8 ? j->call.klen : 8);
	/* Opened read-only: passed on, no write tried (said once, store_held). */
	if (cache_read_only(cache)) {
		metrics.store_errors++;
		j->verdict = ENTRY_PASS;
		log_debug("%s: %s: not stored: the store is read-only",
		    s->ops->name, hex);
		return;
	}
	if (!new_entry_admit(s, &j->call, hex, now) ||
	    !store_room(s, &j->call, hex, now)) {
		j->verdict = ENTRY_PASS;
		return;
	}
	/* The waiters are served with what is stored: the job keeps a copy. */
	if (headers_len > 0 &&
	    (j->headers = dup_bytes((const uint8_t *)headers, headers_len)) == NULL) {
		j->verdict = ENTRY_PASS;
		log_err("%s: %s: not stored: out of memory", s->ops->name, hex);
		return;
	}
	j->headers_len = headers_len;
	j->out.meta = &j->stored;
	j->out.headers = j->headers;
	j->out.headers_len = j->headers_len;
	j->stored = a->meta;
	j->sched = sc;
	j->stored_at = now;
	j->answer = a->body;
	j->answer_len = a->body_len;
	if (gen_writer(s->gen) != NULL &&
	    (b.response = flight_hold(f, res)) != NULL) {
		j->answer = b.response;
		j->flight = f;
		if (cache_writer_put(gen_writer(s->gen), j->call.key, j->call.klen,
		    &a->meta, &b, put_landed, j) == 0) {
			j->storing = 1;
			return;
		}
		/* Stored here instead: the flight ends with the fetch. */
		flight_release(f);
		j->flight = NULL;
		j->answer = b.response = a->body;
	}
	b.response = a->body;
	put = cache_put(cache, j->call.key, j->call.klen, &a->meta, &b);
	(void)store_landed(j, put, cache_strerror(cache),
	    cache_map_full(cache));
}

/*
 * An unsigned answer about the request (ENTRY_DEFINITIVE): remembered, so
 * repeated asks do not reach the upstream, and logged once per key and
 * answer: a first upstream that says so to everything shows here.
 */
static void
svc_job_definitive(struct svc_job *j, const struct fetch_res *res, const char *why,
    time_t now)
{
	struct svc		*s = j->svc;
	const struct svc_call	*c = &j->call;
	struct cache_meta	 m;
	char			 hex[17], kept[64];
	int			 rep, stored;

	snprintf(j->note, sizeof(j->note), "%s", why);
	rep = neg_put(s, c, res->http_status, 1, res->body, res->body_len, now);
	stored = cache_get_meta(gen_cache(s->gen), s->ops->kind, c->key, c->klen,
	    &m) == 1 && m.next_update > now;
	log_hex(hex, sizeof(hex), c->key, c->klen < 8 ? c->klen : 8);
	if (rep == -1)
		snprintf(kept, sizeof(kept), "not remembered");
	else
		snprintf(kept, sizeof(kept), "remembered %ld s",
		    s->conf->negative_ttl_s);
	if (rep == 1 || (rep == -1 &&
	    now - s->last_definitive_log < SVC_STATE_LOG_S)) {
		log_debug("%s: %s: answered %s for %s again", s->ops->name,
		    res->upstream, why, hex);
		return;
	}
	if (rep == -1)
		s->last_definitive_log = now;
	log_warn("%s: %s: answered %s for %s: %s, %s", s->ops->name,
	    res->upstream, why, hex, stored ? "the stored answer is served "
	    "until its nextUpdate" : "relayed to the client", kept);
}

/* flight_check_cb: verify, then store or remember; the flight's outcome says what came of it. */
static enum fetch_verdict
svc_job_check(struct flight *f, const struct fetch_res *res, void *arg,
    char *why, size_t whylen)
{
	struct svc_job		*j = arg;
	struct svc		*s = j->svc;
	struct svc_answer	 a;
	struct entry_answer	 ans;
	char			 headers[SVC_HEADERS_MAX_BYTES];
	int			 hlen;
	time_t			 now = time(NULL);
	enum entry_verdict	 v;
	int64_t			 t0;

	memset(&a, 0, sizeof(a));
	a.body = res->body;
	a.body_len = res->body_len;
	t0 = metrics_now_us();
	v = s->ops->verify(s, &j->call, res, now, &a, why, whylen);
	metrics_hist_observe(&metrics.verify_time[s->ops->kind], METRICS_HIST_VERIFY,
	    (double)(metrics_now_us() - t0) / 1e6);
	if (v == ENTRY_REFUSE) {
		metrics.rejected[s->ops->kind]++;
		log_info("%s: refused an answer from %s: %s", s->ops->name,
		    res->upstream, why);
		return FETCH_REJECT;
	}
	j->verdict = v;
	if (v == ENTRY_STORE) {
		fetch_res_answer(res, &ans);
		hlen = entry_keep_headers(kind_table[s->ops->kind]->keep_headers,
		    &ans, headers, sizeof(headers));
		if (hlen >= 0)
			store(j, f, res, &a, headers, (size_t)hlen, now);
		else {
			/* Not stored without what its verifiers read: relayed only. */
			j->verdict = ENTRY_PASS;
			log_warn("%s: %s: kept headers over %d bytes: not stored",
			    s->ops->name, res->upstream, SVC_HEADERS_MAX_BYTES);
		}
	} else if (v == ENTRY_DEFINITIVE)
		svc_job_definitive(j, res, why, now);
	j->out.verdict = j->verdict;
	j->out.note = j->note;
	flight_set_outcome(f, &j->out);
	/*
	 * Accepted, definitive answers too: the upstream answered, it did not
	 * fail. Held while storing (j->storing): asked again before the put
	 * lands, the key joins this flight.
	 */
	return FETCH_ACCEPT;
}

/* The verdict on the answer a flight ended with (ENTRY_REFUSE when it failed). */
static enum entry_verdict
svc_job_verdict(const struct flight_res *res)
{
	if (res->outcome == NULL || res->err != FETCH_OK ||
	    res->http_status / 100 != 2)
		return ENTRY_REFUSE;
	return res->outcome->verdict;
}

static const struct fetch_req *
fetch_req_of(struct fetch_req *fr, const struct svc_call *c)
{
	memset(fr, 0, sizeof(*fr));
	fr->method = c->method;
	fr->path = c->path;
	fr->content_type = c->content_type;
	fr->accept = c->accept;
	fr->body = c->body;
	fr->body_len = c->body_len;
	fr->key = c->key;
	fr->klen = c->klen;
	fr->extra_header = c->extra_header;
	return fr;
}

/* ---- answering clients ------------------------------------------------- */

/*
 * The answer's Cache-Status (RFC 9211): hit when no upstream was asked
 * (fwd NULL: the store, or a remembered answer), else fwd=miss, or
 * fwd=bypass under upstream_first, which asks first by configuration;
 * stored for a miss served from what it stored; ttl while m (a stored
 * entry's meta) is valid.
 */
static void
svc_status(const struct svc *s, struct http_req *req,
    const struct cache_meta *m, time_t now, enum metrics_result result,
    const struct svc_fwd *fwd)
{
	struct cache_status	cs = { 0, 0, 0, NULL, NULL };

	if (fwd != NULL) {
		cs.flags = CACHE_STATUS_FWD;
		if (s->conf->mode == CONFIG_MODE_UPSTREAM_FIRST)
			cs.flags |= CACHE_STATUS_BYPASS;
		if (fwd->collapsed)
			cs.flags |= CACHE_STATUS_COLLAPSED;
		if (fwd->http_status != 200)
			cs.fwd_status = fwd->http_status;
		cs.upstream = fwd->upstream;
	} else if (result != METRICS_RES_LIMITED)
		cs.flags = CACHE_STATUS_HIT;
	if (result == METRICS_RES_MISS)
		cs.flags |= CACHE_STATUS_STORED;
	if (m != NULL && m->next_update > (int64_t)now) {
		cs.flags |= CACHE_STATUS_TTL;
		cs.ttl_s = m->next_update - (int64_t)now;
	}
	if (result == METRICS_RES_FALLBACK)
		cs.detail = "fallback";	/* the stored answer, in place of the upstream's */
	else if (result == METRICS_RES_UNVERIFIABLE)
		cs.detail = "unverified";	/* passed on, not stored */
	else if (result == METRICS_RES_LIMITED)
		cs.detail = "limited";	/* over client_miss_rate_per_s: not asked */
	cache_status_set(req, &cs);
}

/*
 * Each answer's bookkeeping, in one place: its Cache-Status and the access
 * log's note before the answer is written, and the counter of the result
 * served (the kind's serve may answer a hit with a 304,
 * METRICS_RES_NOT_MODIFIED). fwd: NULL when no upstream was asked.
 */
static void
svc_serve(struct svc *s, struct http_req *req, const struct svc_call *c,
    const struct cache_meta *m, const uint8_t *body, size_t len,
    const uint8_t *headers, size_t headers_len, time_t now,
    enum metrics_result result, const struct svc_fwd *fwd)
{
	metrics_note(req, c->route, result);
	svc_status(s, req, m, now, result, fwd);
	result = s->ops->serve(s, req, c, m, body, len, headers, headers_len,
	    now, result);
	metrics.requests[c->route][result]++;
}

/* The same for an answer that is not an entry's: final, limited, failed. */
static void
svc_count(const struct svc *s, struct http_req *req, unsigned route,
    enum metrics_result result, const struct svc_fwd *fwd)
{
	metrics_note(req, route, result);
	svc_status(s, req, NULL, 0, result, fwd);
	metrics.requests[route][result]++;
}

/* Serve a stored entry if it is valid now; 1 when answered, 0 when it is not. */
static int
serve_found(struct svc *s, struct http_req *req, const struct svc_call *c,
    const struct cache_meta *m, const struct cache_body *b,
    enum metrics_result result, const struct svc_fwd *fwd)
{
	time_t	now = time(NULL);

	/* Never serve what has expired, or what is not valid yet. */
	if (!entry_servable(m, s->ops->kind, s->conf->skew_s, now))
		return 0;
	svc_serve(s, req, c, m, b->response, b->response_len, b->headers,
	    b->headers_len, now, result, fwd);
	usage_hit(refresh_usage(gen_refresh(s->gen)), s->ops->kind, c->key, c->klen,
	    m, now);
	return 1;
}

/*
 * cache_get on the loop. With lookup threads it is timed, so that one
 * that waited for the disk sends the next lookups to them (reader.h).
 */
static int
get_here(struct svc *s, const struct svc_call *c, struct cache_meta *m,
    struct cache_body *b)
{
	struct cache		*cache = gen_cache(s->gen);
	struct cache_reader	*r = gen_reader(s->gen);
	int64_t			 t0 = r != NULL ? cache_reader_clock() : 0;
	int			 rc;

	rc = cache_get(cache, s->ops->kind, c->key, c->klen, m, b);
	if (r != NULL)
		cache_reader_note(r, t0);
	if (rc == -1)
		log_err("%s: cache: %s", s->ops->name, cache_strerror(cache));
	return rc;
}

/*
 * Serve a valid stored entry; 1 when answered, 0 when nothing valid is
 * stored. fwd: what was asked upstream before (svc_serve's).
 */
static int
serve_cached(struct svc *s, struct http_req *req, const struct svc_call *c,
    enum metrics_result result, const struct svc_fwd *fwd)
{
	struct cache_meta	m;
	struct cache_body	b;

	return get_here(s, c, &m, &b) == 1 &&
	    serve_found(s, req, c, &m, &b, result, fwd);
}

/* An answer about the request, as the upstream sent it: nothing to advertise. */
static void
serve_definitive(struct svc *s, struct http_req *req, const struct svc_call *c,
    const uint8_t *body, size_t len, const struct svc_fwd *fwd)
{
	struct cache_meta	m;

	memset(&m, 0, sizeof(m));
	m.kind = s->ops->kind;
	svc_serve(s, req, c, &m, body, len, NULL, 0, time(NULL),
	    METRICS_RES_DEFINITIVE, fwd);
}

/* A remembered answer: given again without asking any upstream. */
static int
neg_serve(struct svc *s, struct http_req *req, const struct svc_call *c)
{
	const struct negcache_entry	*n;

	if ((n = neg_live(s, c)) == NULL)
		return 0;
	if (n->definitive) {
		serve_definitive(s, req, c, n->body, n->body_len, NULL);
		return 1;
	}
	svc_count(s, req, c->route, METRICS_RES_FINAL, NULL);
	s->ops->serve_final(s, req, c, n->status, n->body, n->body_len);
	return 1;
}

static void
pending_free(struct pending *p)
{
	if (p == NULL)
		return;
	/*
	 * Every path answers the client (which clears its gone callback and
	 * may free the connection) or learns it left, before this: p->req is
	 * not touched here.
	 */
	loop_event_free(p->budget);
	svc_job_free(p->call);
	npending--;
	free(p);
}

/* Nothing from upstream: upstream_first may still have a stored answer. */
static void
pending_fail(struct pending *p, const char *why)
{
	struct svc		*s = p->svc;
	unsigned		 route;

	if (p->req == NULL)
		return;
	if (s->conf->mode == CONFIG_MODE_UPSTREAM_FIRST &&
	    serve_cached(s, p->req, &p->call->call, METRICS_RES_FALLBACK,
	    &p->fwd))
		return;
	route = p->call->call.route;
	svc_count(s, p->req, route, metrics_failed_result(route), &p->fwd);
	s->ops->serve_failed(s, p->req, &p->call->call, why);
}

static void
pending_done(const struct flight_res *res, void *arg)
{
	struct pending		*p = arg;
	struct svc		*s = p->svc;
	const struct svc_call	*c = &p->call->call;
	const struct flight_outcome *o = res->outcome;
	struct cache_meta	 m;
	time_t			 now = time(NULL);
	char			 why[128];

	p->w = NULL;
	if (res->err == FETCH_OK) {	/* an upstream answered: which, and how */
		p->fwd.http_status = res->http_status;
		p->fwd.upstream = res->upstream;
	}
	if (res->err == FETCH_OK && (res->http_status == 404 || res->http_status == 410))
		(void)neg_put(s, c, res->http_status, 0, res->body, res->body_len,
		    now);
	if (p->req == NULL)
		goto out;
	if (svc_job_verdict(res) == ENTRY_DEFINITIVE) {
		/* About the request, unsigned: a valid stored answer still wins. */
		if (!serve_cached(s, p->req, c, METRICS_RES_FALLBACK, &p->fwd))
			serve_definitive(s, p->req, c, res->body, res->body_len,
			    &p->fwd);
	} else if (res->err == FETCH_OK && res->http_status / 100 == 2) {
		/*
		 * Verified and stored, or passed on: the upstream's bytes,
		 * unmodified. The metadata and kept headers are the stored
		 * entry's, as the flight's outcome says.
		 */
		if (o != NULL && o->stored) {
			svc_serve(s, p->req, c, o->meta, res->body, res->body_len,
			    o->headers, o->headers_len, now, METRICS_RES_MISS,
			    &p->fwd);
			/* A miss is a use too: it starts the idle clock. */
			usage_touch(refresh_usage(gen_refresh(s->gen)), s->ops->kind,
			    c->key, c->klen, now);
		} else {
			memset(&m, 0, sizeof(m));
			svc_serve(s, p->req, c, &m, res->body, res->body_len,
			    NULL, 0, now, METRICS_RES_UNVERIFIABLE, &p->fwd);
		}
	} else if (res->err == FETCH_OK) {
		log_info("%s: %s answered HTTP %d", s->ops->name,
		    res->upstream ? res->upstream : "upstream", res->http_status);
		if (s->conf->mode == CONFIG_MODE_UPSTREAM_FIRST &&
		    serve_cached(s, p->req, c, METRICS_RES_FALLBACK, &p->fwd))
			goto out;
		svc_count(s, p->req, c->route, METRICS_RES_FINAL, &p->fwd);
		s->ops->serve_final(s, p->req, c, res->http_status, res->body,
		    res->body_len);
	} else {
		/* A line per state, not per client: at most one every 10 s. */
		if (now - s->last_fail_log >= SVC_STATE_LOG_S) {
			s->last_fail_log = now;
			log_warn("%s: every upstream failed, answering without them: %s",
			    s->ops->name, res->summary ? res->summary :
			    fetch_err_str[res->err]);
		} else
			log_debug("%s: every upstream failed: %s", s->ops->name,
			    res->summary ? res->summary : fetch_err_str[res->err]);
		snprintf(why, sizeof(why), "%s", fetch_err_str[res->err]);
		pending_fail(p, res->summary ? res->summary : why);
	}
out:
	pending_free(p);
}

static void
pending_budget(evutil_socket_t fd, short what, void *arg)
{
	struct pending	*p = arg;
	char		 why[128];

	(void)fd;
	(void)what;
	/* The fetch goes on in the background and may fill the cache. */
	if (p->w != NULL)
		flight_leave(p->w);
	p->w = NULL;
	if (p->req != NULL) {
		time_t	now = time(NULL);

		snprintf(why, sizeof(why), "no upstream answer within %ld ms",
		    p->svc->conf->client_budget_ms);
		/* Like the all-failed line: a state, not one line per client. */
		if (now - p->svc->last_fail_log >= SVC_STATE_LOG_S) {
			p->svc->last_fail_log = now;
			log_warn("%s: %s: answering clients without it, the fetch "
			    "goes on", p->svc->ops->name, why);
		}
		pending_fail(p, why);
	}
	pending_free(p);
}

static void
pending_gone(struct http_req *req, void *arg)
{
	struct pending	*p = arg;

	(void)req;
	p->req = NULL;
	if (p->w != NULL)
		flight_leave(p->w);
	p->w = NULL;
	pending_free(p);
}

/*
 * A client waits for the flight of its key, joined or started, within
 * its budget. Its own copy of the call (for its answer) is the flight's
 * job_arg too when it starts one.
 */
static void
svc_fetch_for_client(struct svc *s, struct http_req *req,
    const struct svc_call *c)
{
	struct pending	*p;
	struct fetch_req fr;
	struct timeval	 tv;

	if ((p = calloc(1, sizeof(*p))) == NULL) {
		s->ops->serve_failed(s, req, c, "out of memory");
		return;
	}
	npending++;
	p->svc = s;
	p->req = req;
	p->budget = evtimer_new(http_req_base(req), pending_budget, p);
	if (p->budget == NULL || (p->call = svc_job_new(s, c)) == NULL) {
		s->ops->serve_failed(s, req, c, "out of memory");
		p->req = NULL;
		pending_free(p);
		return;
	}
	http_req_on_gone(req, pending_gone, p);
	tv.tv_sec = s->conf->client_budget_ms / 1000;
	tv.tv_usec = (s->conf->client_budget_ms % 1000) * 1000;
	evtimer_add(p->budget, &tv);
	p->call->refs++;	/* the flight's, if it starts one */
	p->w = flight_join(&s->flights, s->pool, fetch_req_of(&fr,
	    &p->call->call), svc_job_check, p->call, svc_job_free,
	    pending_done, p);
	if (p->w != NULL)
		p->fwd.collapsed = flight_waiter_joined(p->w);
	else {
		/* Nothing started: done will never come, and the ref is still ours. */
		svc_job_free(p->call);
		pending_fail(p, "no upstream could be asked");
		pending_free(p);
	}
}

/*
 * Who asks: the peer's address, or when the peer is in trusted_proxies
 * the X-Forwarded-For hop left of every trusted one (miss_xff_client).
 * 0 with *out set; 1 when the peer is exempt (a Unix socket) or cannot
 * be told.
 */
static int
svc_client(const struct svc *s, const struct http_req *req,
    struct miss_addr *out)
{
	struct sockaddr_storage	 ss;
	const struct sockaddr_in *s4 = (const struct sockaddr_in *)&ss;
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&ss;
	const struct config_cidr *trusted;
	size_t			 i, ntrusted;

	if (http_req_peer(req, &ss) == -1)
		return 1;
	if (ss.ss_family == AF_INET)
		miss_addr_set(out, AF_INET, &s4->sin_addr, 4);
	else if (ss.ss_family == AF_INET6)
		miss_addr_set(out, AF_INET6, &s6->sin6_addr, 16);
	else
		return 1;	/* a Unix socket: the host's own clients */
	trusted = gen_trusted(s->gen, &ntrusted);
	for (i = 0; i < ntrusted; i++)
		if (miss_cidr_has(&trusted[i], out)) {
			/* no usable hop: the proxy itself is the client */
			(void)miss_xff_client(http_req_header(req,
			    "X-Forwarded-For"), trusted, ntrusted, out);
			break;
		}
	return 0;
}

/*
 * client_miss_rate_per_s: a miss from a client over its rate gets the
 * kind's failure answer, counted as result "limited"; 1 when answered.
 */
static int
miss_over_rate(struct svc *s, struct http_req *req, const struct svc_call *c)
{
	struct miss_addr	a;
	time_t			now;

	if (s->misses == NULL ||
	    svc_client(s, req, &a) != 0 ||
	    miss_limit_take(s->misses, &a, mono_ms()))
		return 0;
	now = time(NULL);
	if (now - s->last_limited_log >= SVC_STATE_LOG_S) {
		s->last_limited_log = now;
		log_info("%s: a client is over client_miss_rate_per_s (%g/s): "
		    "answering its misses without asking upstream",
		    s->ops->name, s->conf->client_miss_rate_per_s);
	}
	/* upstream_first: what is stored stands in, as when upstreams fail */
	if (s->conf->mode == CONFIG_MODE_UPSTREAM_FIRST &&
	    serve_cached(s, req, c, METRICS_RES_FALLBACK, NULL))
		return 1;
	svc_count(s, req, c->route, METRICS_RES_LIMITED, NULL);
	s->ops->serve_failed(s, req, c, "over client_miss_rate_per_s");
	return 1;
}

/* Nothing valid stored, or upstream_first: what stands in for it, or a fetch. */
static void
not_stored(struct svc *s, struct http_req *req, const struct svc_call *c)
{
	/*
	 * A remembered 404/410 or definitive answer stands for the upstreams'
	 * answer; upstream_first still serves a valid stored one first.
	 */
	if (neg_live(s, c)) {
		if (s->conf->mode == CONFIG_MODE_UPSTREAM_FIRST &&
		    serve_cached(s, req, c, METRICS_RES_FALLBACK, NULL))
			return;
		neg_serve(s, req, c);
		return;
	}
	if (miss_over_rate(s, req, c))
		return;
	svc_fetch_for_client(s, req, c);
}

static void
lookup_gone(struct http_req *req, void *arg)
{
	struct lookup	*l = arg;

	(void)req;
	l->req = NULL;
}

/* The lookup thread's answer, on the loop. */
static void
lookup_done(const struct cache_reader_res *res, void *arg)
{
	struct lookup		*l = arg;
	struct svc		*s = l->call->svc;
	const struct svc_call	*c = &l->call->call;

	if (l->req == NULL)
		goto out;
	http_req_on_gone(l->req, NULL, NULL);
	if (res->rc == -1)
		log_err("%s: %s", s->ops->name, res->err);
	if (res->rc == 1 &&
	    serve_found(s, l->req, c, &res->meta, &res->body, METRICS_RES_HIT,
	    NULL))
		goto out;
	not_stored(s, l->req, c);
out:
	svc_job_free(l->call);
	free(l);
}

/*
 * What an admitted answer teaches (struct kind's teaches: a RIM's chain
 * CAs) joins every kind's pool and the store's before the answer is
 * served: so the OCSP answers for a RIM's signing chain, which a client
 * asks next, verify.
 */
static void
svc_learn(struct svc *s, const struct entry_judgement *j)
{
	const struct kind	*k = kind_table[s->ops->kind];
	struct cache		*cache = gen_cache(s->gen);
	const uint8_t		*der[KIND_TEACH_MAX];
	size_t			 len[KIND_TEACH_MAX], i, n;

	n = k->teaches != NULL ? k->teaches(j, der, len) : 0;
	for (i = 0; i < n; i++) {
		if (gen_pool_add(s->gen, der[i], len[i]) == -1)
			continue;
		if (cache != NULL && !cache_read_only(cache) &&
		    entry_pool_put(cache, der[i], len[i]) == -1)
			log_warn("%s: keeping a chain certificate: %s",
			    s->ops->name, cache_strerror(cache));
	}
}

enum entry_verdict
svc_admit(struct svc *s, const struct svc_call *c, const struct fetch_res *res,
    const struct entry_stored *stored, time_t now, struct entry_judgement *out)
{
	struct entry_query	q;
	struct entry_answer	a;

	memset(&q, 0, sizeof(q));
	q.key = c->key;
	q.klen = c->klen;
	/* What was asked upstream: the POST body, else the canonical path kept. */
	q.request = c->body_len > 0 ? c->body : c->keep;
	q.request_len = c->body_len > 0 ? c->body_len : c->keep_len;
	q.typed = c->typed ? c->query.bytes : NULL;
	q.check_nonce = c->own_nonce && res->verify_nonce;
	fetch_res_answer(res, &a);
	/* The daemon reads no part of out a refused parse leaves. */
	memset(out, 0, sizeof(*out));
	if (kind_table[s->ops->kind]->admit(gen_rules(s->gen), &q, &a,
	    stored, now, out) == ENTRY_STORE)
		svc_learn(s, out);
	return out->verdict;
}

/*
 * lookup_threads: the lookup goes to a thread, so a store page read from
 * disk holds only this client. 0 when it went, -1 when the caller must
 * look up itself (the threads have as many in hand as they take, or
 * memory is short).
 */
static int
lookup_start(struct svc *s, struct http_req *req, const struct svc_call *c)
{
	struct lookup	*l;

	if ((l = calloc(1, sizeof(*l))) == NULL)
		return -1;
	l->req = req;
	if ((l->call = svc_job_new(s, c)) == NULL ||
	    cache_reader_get(gen_reader(s->gen), s->ops->kind, c->key, c->klen,
	    lookup_done, l) == -1) {
		svc_job_free(l->call);
		free(l);
		return -1;
	}
	http_req_on_gone(req, lookup_gone, l);
	return 0;
}

void
svc_handle(struct svc *s, struct http_req *req, const struct svc_call *c)
{
	struct cache_reader	*r = gen_reader(s->gen);

	if (s->conf->mode == CONFIG_MODE_CACHE_FIRST) {
		/* Threads only while lookups wait for the disk (reader.h). */
		if (r != NULL && (gen_config(s->gen)->lookup_offload ==
		    CONFIG_OFFLOAD_ALWAYS || cache_reader_wanted(r)) &&
		    lookup_start(s, req, c) == 0) {
			metrics.lookups_thread++;
			return;
		}
		if (r != NULL)
			metrics.lookups_loop++;
		if (serve_cached(s, req, c, METRICS_RES_HIT, NULL))
			return;
	}
	not_stored(s, req, c);
}

/* ---- shared answers ----------------------------------------------------- */

void
svc_serve_final_as_sent(struct svc *s, struct http_req *req,
    const struct svc_call *c, int http_status, const uint8_t *body, size_t len)
{
	(void)s;
	(void)c;
	/* Remembered for negative_ttl_s here; an HTTP cache must ask again. */
	httpcache_no_store(req);
	evbuffer_add(http_resp_body(req), body, len);
	http_reply(req, http_status, http_reason(http_status));
}

/* Not PCCS's opaque 404: a 503 that says what was tried and why it failed. */
void
svc_serve_failed_text(struct svc *s, struct http_req *req,
    const struct svc_call *c, const char *why)
{
	(void)c;
	http_resp_header(req, "Content-Type", "text/plain; charset=utf-8");
	httpcache_no_store(req);
	if (s->ops->retry_after_s != NULL)
		http_resp_header(req, "Retry-After", s->ops->retry_after_s);
	evbuffer_add_printf(http_resp_body(req), "%s: not cached and no upstream "
	    "answered: %s\n", s->ops->name, why ? why : "unknown");
	http_reply(req, 503, "Service Unavailable");
}

/* ---- background refresh ------------------------------------------------- */

static void
refresh_fetched(const struct flight_res *res, void *arg)
{
	struct refresh_wait	*rw = arg;
	struct svc		*s = rw->svc;
	const struct flight_outcome *o = res->outcome;
	char			 why[128];
	const char		*w = NULL;
	int			 ok, full = 0;

	/*
	 * Success means an entry was stored (by this job or the one it
	 * joined); an unverifiable answer reaches clients but is no refresh.
	 */
	ok = res->err == FETCH_OK && res->http_status / 100 == 2 &&
	    o != NULL && o->stored;
	if (!ok) {
		if (res->err != FETCH_OK)
			w = res->summary ? res->summary : fetch_err_str[res->err];
		else if (res->http_status / 100 != 2) {
			snprintf(why, sizeof(why), "HTTP %d from %s",
			    res->http_status, res->upstream ? res->upstream : "?");
			w = why;
		} else if (svc_job_verdict(res) == ENTRY_DEFINITIVE) {
			/* Not stored, nothing replaced: the stored answer stays. */
			snprintf(why, sizeof(why), "%s answered %s, unsigned: the "
			    "stored answer stays", res->upstream ? res->upstream :
			    "?", o->note);
			w = why;
		} else if (cache_map_full(gen_cache(s->gen)) ||
		    (o != NULL && o->map_full)) {
			w = "verified but not stored: map full (see above)";
			full = 1;
		} else
			w = "the answer could not be verified (see above)";
	}
	rw->done(gen_refresh(s->gen), ok ? REFRESH_OK : full ? REFRESH_MAP_FULL :
	    REFRESH_FAILED, w, rw->done_arg);
	gen_unref(s->gen);
	free(rw);
}

int
svc_refresh_start(void *arg, enum cache_kind kind, const uint8_t *key,
    size_t klen, refresh_done_fn *done, void *done_arg)
{
	struct svc		*s = arg;
	struct cache_meta	 m;
	struct cache_body	 b;
	struct svc_call		 c;
	struct refresh_wait	*rw;
	struct svc_job		*j;
	struct fetch_req	 fr;
	void			*scratch = NULL;
	char			 canon[KIND_CANON_BYTES];

	if (kind != s->ops->kind || klen > CACHE_KEY_MAX_BYTES ||
	    cache_get(gen_cache(s->gen), kind, key, klen, &m, &b) != 1)
		return -1;
	memset(&c, 0, sizeof(c));
	memcpy(c.key, key, klen);
	c.klen = klen;
	if (svc_call_restore(&c, kind, &b, canon) == -1)
		return -1;
	c.route = METRICS_ROUTE(kind, 0);
	if (s->ops->refresh_call != NULL &&
	    s->ops->refresh_call(s, &b, &c, &scratch) == -1) {
		free(scratch);
		return -1;
	}
	j = svc_job_new(s, &c);
	free(scratch);
	if (j == NULL)
		return -1;
	if ((rw = calloc(1, sizeof(*rw))) == NULL) {
		svc_job_free(j);
		return -1;
	}
	rw->svc = s;
	gen_ref(s->gen);
	rw->done = done;
	rw->done_arg = done_arg;
	if (flight_join(&s->flights, s->pool, fetch_req_of(&fr, &j->call),
	    svc_job_check, j, svc_job_free, refresh_fetched, rw) == NULL) {
		svc_job_free(j);
		gen_unref(s->gen);
		free(rw);
		return -1;
	}
	return 0;
}
