/* SPDX-License-Identifier: Apache-2.0 */
/* Routing: the path and method of a request pick an operations endpoint or a kind, each kind asked in turn through its row of route_table. */
#include <config.h>	/* autoconf; "config.h" here would be proxy/config.h */

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>

#include "entry/kind.h"
#include "proxy/http/http.h"
#include "proxy/metrics.h"
#include "proxy/metrics_page.h"
#include "proxy/refresh/refresh.h"
#include "proxy/kinds/route.h"
#include "proxy/kinds/router.h"
#include "proxy/service.h"
#include "proxy/status.h"

struct router {
	struct gen	*gen;
	struct refresh	*refresh;
	struct cache	*cache;
	int		 stopping;
	int		 admin_only;	/* ops endpoints on admin listeners only */
	/* The kinds in the order they are asked: those marked last after the others. */
	int		 order[CACHE_KIND_MAX];
	size_t		 norder;
};

struct router *
router_new(struct refresh *refresh, struct cache *cache)
{
	struct router	*rt;
	int		 k, last;

	if ((rt = calloc(1, sizeof(*rt))) == NULL)
		return NULL;
	rt->refresh = refresh;
	rt->cache = cache;
	for (last = 0; last <= 1; last++)
		for (k = KIND_FIRST; k < CACHE_KIND_MAX; k++)
			if (route_table[k]->last == last)
				rt->order[rt->norder++] = k;
	return rt;
}

void
router_set_gen(struct router *rt, struct gen *g)
{
	rt->gen = g;
}

void
router_set_admin_only(struct router *rt, int on)
{
	rt->admin_only = on;
}

void
router_stop(struct router *rt)
{
	rt->stopping = 1;
}

void
router_free(struct router *rt)
{
	free(rt);
}

/* ---- operations endpoints ---------------------------------------------------- */

static void
reply_text(struct http_req *req, int code, const char *reason, const char *text)
{
	http_resp_header(req, "Content-Type", "text/plain; charset=utf-8");
	evbuffer_add(http_resp_body(req), text, strlen(text));
	http_reply(req, code, reason);
}

/* GET /metrics: the page metrics_page.c renders, from the store and the pools. */
static void
reply_metrics(struct router *rt, struct http_req *req)
{
	struct fetch_pool	*pools[CACHE_KIND_MAX] = { NULL };
	struct refresh_stats	 rs;
	size_t			 id;

	refresh_stats(rt->refresh, &rs);
	for (id = KIND_FIRST; id < CACHE_KIND_MAX; id++)
		pools[id] = svc_pool(gen_svc(rt->gen, id));
	metrics_render(http_resp_body(req), &rs, pools, CACHE_KIND_MAX, time(NULL));
	http_resp_header(req, "Content-Type",
	    "text/plain; version=0.0.4; charset=utf-8");
	http_reply(req, 200, "OK");
}

/*
 * 200 "ready", then the detail: a line when the store was found damaged,
 * the figures STATUS= gives (entries, earliest expiry, upstreams up).
 */
static void
reply_ready(struct router *rt, struct http_req *req)
{
	const char		*dmg = cache_damage(rt->cache);
	struct fetch_pool	*pools[CACHE_KIND_MAX] = { NULL };
	struct refresh_stats	 rs;
	struct status_summary	 sum;
	size_t			 id;

	refresh_stats(rt->refresh, &rs);
	for (id = KIND_FIRST; id < CACHE_KIND_MAX; id++)
		pools[id] = svc_pool(gen_svc(rt->gen, id));
	status_summarize(&sum, &rs, pools, CACHE_KIND_MAX, time(NULL));
	http_resp_header(req, "Content-Type", "text/plain; charset=utf-8");
	evbuffer_add_printf(http_resp_body(req), "ready\n");
	if (dmg != NULL)
		evbuffer_add_printf(http_resp_body(req), "%s\n", dmg);
	status_detail(&sum, http_resp_body(req));
	http_reply(req, 200, "OK");
}

/* The ops endpoints: live figures, never to be kept by an HTTP cache in front. */
static void
handle_ops(struct router *rt, struct http_req *req, const char *path)
{
	http_resp_header(req, "Cache-Control", "no-store");
	if (strcmp(path, "/healthz") == 0) {
		reply_text(req, 200, "OK", "ok\n");
	} else if (strcmp(path, "/readyz") == 0) {
		if (rt->stopping || rt->gen == NULL || rt->cache == NULL)
			reply_text(req, 503, "Service Unavailable", "not ready\n");
		else
			reply_ready(rt, req);
	} else
		reply_metrics(rt, req);
}

static int
is_ops(const char *path)
{
	return strcmp(path, "/healthz") == 0 || strcmp(path, "/readyz") == 0 ||
	    strcmp(path, "/metrics") == 0;
}

/*
 * Where a request no kind takes is counted: the first metrics route of
 * the kind asked last, whose paths are the catch-all.
 */
static unsigned
unclaimed_route(void)
{
	size_t	k;

	for (k = KIND_FIRST; k < CACHE_KIND_MAX; k++)
		if (route_table[k]->last)
			return METRICS_ROUTE(k, 0);
	return METRICS_ROUTE(KIND_FIRST, 0);
}

/* 405 with Allow: the ops endpoints take GET and HEAD, the other paths POST too. */
static void
method_not_allowed(struct http_req *req, int ops)
{
	metrics.requests[unclaimed_route()][METRICS_RES_HTTP_ERROR]++;
	http_not_allowed(req, ops ? "GET, HEAD" : HTTP_ALLOW);
}

/* ---- the kinds ---------------------------------------------------------------- */

/* Each kind in turn, those asked last after the others; 404 when none takes it. */
static void
dispatch_kinds(struct router *rt, struct http_req *req, const char *p)
{
	const struct route	*r;
	const char		*query = http_req_query(req);
	unsigned		 method = ROUTE_METHOD(http_req_method(req));
	size_t			 i;

	for (i = 0; i < rt->norder; i++) {
		r = route_table[rt->order[i]];
		if ((r->methods & method) != 0 && r->handle(gen_svc(rt->gen,
		    rt->order[i]), req, p, query) == 0)
			return;
	}
	http_error(req, 404, "Not Found");
}

void
router_dispatch(struct http_req *req, void *arg)
{
	struct router	*rt = arg;
	const char	*p = http_req_path(req);

	/* Doubled slashes in front of the route are a known client quirk. */
	for (; p[0] == '/' && p[1] == '/'; p++)
		;
	if (rt->gen == NULL) {
		http_error(req, 503, "Service Unavailable");
		return;
	}
	/* With an admin listener: ops there and nothing else, nowhere else. */
	if (rt->admin_only && is_ops(p) !=
	    ((http_req_listener_flags(req) & HTTP_LISTEN_ADMIN) != 0)) {
		http_error(req, 404, "Not Found");
		return;
	}
	if (is_ops(p)) {
		if (http_req_method(req) == HTTP_GET || http_req_method(req) == HTTP_HEAD)
			handle_ops(rt, req, p);
		else
			method_not_allowed(req, 1);
		return;
	}
	switch (http_req_method(req)) {
	case HTTP_POST:
	case HTTP_GET:
	case HTTP_HEAD:
		dispatch_kinds(rt, req, p);
		break;
	default:
		method_not_allowed(req, 0);
		break;
	}
}
