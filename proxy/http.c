/* HTTP front: evhttp listeners, routing, /healthz, /readyz and /metrics. */
#include <config.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "attest/ocsp.h"
#include "cache/store.h"
#include "proxy/config.h"
#include "proxy/fetch.h"
#include "proxy/http.h"
#include "proxy/log.h"
#include "proxy/metrics.h"
#include "proxy/ocsp_route.h"
#include "proxy/refresh.h"
#include "proxy/pccs_route.h"
#include "proxy/kds_route.h"
#include "proxy/rim_route.h"
#include "proxy/service.h"

#define HTTP_MAX_HEADERS_BYTES	8192
#define HTTP_IDLE_TIMEOUT_S	60
#define HTTP_MAX_UPSTREAMS	64

struct http {
	struct event_base	*base;
	struct evhttp		*evh;
	struct gen		*gen;
	struct refresh		*refresh;
	struct cache		*cache;
	int			 stopping;
};

static void
reply_text(struct evhttp_request *req, int code, const char *reason,
    const char *text)
{
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
	    "text/plain; charset=utf-8");
	evbuffer_add(evhttp_request_get_output_buffer(req), text, strlen(text));
	evhttp_send_reply(req, code, reason, NULL);
}

static void
render_metrics(struct http *h, struct evbuffer *b)
{
	struct fetch_health	 fh[HTTP_MAX_UPSTREAMS];
	struct refresh_stats	 rs;
	struct fetch_pool	*pool;
	time_t			 now = time(NULL);
	size_t			 n, i, k, id;

	metrics_render_counters(b);
	refresh_stats(h->refresh, &rs);
	evbuffer_add_printf(b,
	    "# HELP stapled_cache_entries Stored entries by kind (last pass over the store).\n"
	    "# TYPE stapled_cache_entries gauge\n");
	for (k = 1; k < CACHE_KIND_MAX; k++)
		evbuffer_add_printf(b, "stapled_cache_entries{kind=\"%s\"} %zu\n",
		    cache_kind_str[k], rs.entries[k]);
	evbuffer_add_printf(b,
	    "# HELP stapled_earliest_next_update_seconds Seconds until the earliest nextUpdate of a valid entry (-1: none).\n"
	    "# TYPE stapled_earliest_next_update_seconds gauge\n"
	    "stapled_earliest_next_update_seconds %lld\n"
	    "# HELP stapled_entries_expiring Valid entries whose nextUpdate is within 6 h.\n"
	    "# TYPE stapled_entries_expiring gauge\n"
	    "stapled_entries_expiring %zu\n"
	    "# HELP stapled_entries_expired Entries past nextUpdate, no longer served.\n"
	    "# TYPE stapled_entries_expired gauge\n"
	    "stapled_entries_expired %zu\n"
	    "# HELP stapled_refresh_backlog Entries due for refresh and not yet started.\n"
	    "# TYPE stapled_refresh_backlog gauge\n"
	    "stapled_refresh_backlog %zu\n"
	    "# HELP stapled_refresh_inflight Refreshes in progress.\n"
	    "# TYPE stapled_refresh_inflight gauge\n"
	    "stapled_refresh_inflight %zu\n",
	    rs.earliest_next_update ? (long long)(rs.earliest_next_update - now) : -1LL,
	    rs.expiring, rs.expired, rs.backlog, rs.inflight);
	if (h->gen == NULL)
		return;
	evbuffer_add_printf(b,
	    "# HELP stapled_upstream_up Whether an upstream is out of cooldown.\n"
	    "# TYPE stapled_upstream_up gauge\n"
	    "# HELP stapled_upstream_requests_total Upstream exchanges started.\n"
	    "# TYPE stapled_upstream_requests_total counter\n"
	    "# HELP stapled_upstream_failures_total Upstream failures by reason.\n"
	    "# TYPE stapled_upstream_failures_total counter\n");
	for (id = 0; id < SVC_MAX; id++) {
		pool = svc_pool(gen_svc(h->gen, id));
		n = fetch_pool_health(pool, fh, HTTP_MAX_UPSTREAMS);
		for (i = 0; i < n; i++) {
			evbuffer_add_printf(b,
			    "stapled_upstream_up{service=\"%s\",upstream=\"%s\"} %d\n"
			    "stapled_upstream_requests_total{service=\"%s\",upstream=\"%s\"} %lu\n",
			    fetch_pool_service(pool), fh[i].name, fh[i].up,
			    fetch_pool_service(pool), fh[i].name, fh[i].requests);
			for (k = 1; k < FETCH_ERR_MAX; k++)
				evbuffer_add_printf(b,
				    "stapled_upstream_failures_total{service=\"%s\",upstream=\"%s\",reason=\"%s\"} %lu\n",
				    fetch_pool_service(pool), fh[i].name,
				    fetch_err_str[k], fh[i].failures[k]);
		}
	}
}

static void
handle_ops(struct http *h, struct evhttp_request *req, const char *path)
{
	struct evbuffer	*b;

	if (strcmp(path, "/healthz") == 0) {
		reply_text(req, 200, "OK", "ok\n");
	} else if (strcmp(path, "/readyz") == 0) {
		if (h->stopping || h->gen == NULL || h->cache == NULL)
			reply_text(req, 503, "Service Unavailable", "not ready\n");
		else
			reply_text(req, 200, "OK", "ready\n");
	} else {
		b = evhttp_request_get_output_buffer(req);
		render_metrics(h, b);
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
		evhttp_send_reply(req, 200, "OK", NULL);
	}
}

static int
is_ops(const char *path)
{
	return strcmp(path, "/healthz") == 0 || strcmp(path, "/readyz") == 0 ||
	    strcmp(path, "/metrics") == 0;
}

static void
method_not_allowed(struct evhttp_request *req)
{
	evhttp_add_header(evhttp_request_get_output_headers(req), "Allow",
	    "GET, HEAD, POST");
	metrics.requests[ROUTE_OCSP_POST][RES_HTTP_ERROR]++;
	evhttp_send_error(req, 405, "Method Not Allowed");
}

static void
dispatch(struct evhttp_request *req, void *arg)
{
	struct http		*h = arg;
	const struct evhttp_uri	*uri = evhttp_request_get_evhttp_uri(req);
	enum evhttp_cmd_type	 cmd = evhttp_request_get_command(req);
	const char		*raw = uri ? evhttp_uri_get_path(uri) : NULL;
	char			*path = NULL, *p;
	struct svc		*ocsp;

	if (raw == NULL || *raw == '\0')
		raw = "/";
	/* '+' stays '+': GET clients that do not encode it send base64 as is. */
	if ((path = evhttp_uridecode(raw, 0, NULL)) == NULL) {
		evhttp_send_error(req, 400, "Bad Request");
		return;
	}
	/* Doubled slashes in front of the route are a known client quirk. */
	for (p = path; p[0] == '/' && p[1] == '/'; p++)
		;
	if (h->gen == NULL) {
		evhttp_send_error(req, 503, "Service Unavailable");
		goto out;
	}
	ocsp = gen_svc(h->gen, SVC_OCSP);
	if (is_ops(p)) {
		if (cmd == EVHTTP_REQ_GET || cmd == EVHTTP_REQ_HEAD)
			handle_ops(h, req, p);
		else
			method_not_allowed(req);
		goto out;
	}
	switch (cmd) {
	case EVHTTP_REQ_POST:
		if (ocsp_is_post_path(ocsp, p))
			ocsp_handle_post(ocsp, req);
		else
			evhttp_send_error(req, 404, "Not Found");
		break;
	case EVHTTP_REQ_GET:
	case EVHTTP_REQ_HEAD:
		if (pccs_is_path(p)) {
			pccs_handle(gen_svc(h->gen, SVC_PCCS), req, p,
			    evhttp_uri_get_query(uri));
			break;
		}
		if (kds_is_path(p)) {
			kds_handle(gen_svc(h->gen, SVC_KDS), req, p,
			    evhttp_uri_get_query(uri));
			break;
		}
		if (strncmp(p, RIM_ROUTE_PREFIX, strlen(RIM_ROUTE_PREFIX)) == 0) {
			rim_handle_get(gen_svc(h->gen, SVC_RIM), req,
			    p + strlen(RIM_ROUTE_PREFIX));
			break;
		}
		/* RFC 6960 A.1: GET {url}/{url-encoding of base64(DER)}. */
		while (*p == '/')
			p++;
		if (strncmp(p, "ocsp/", 5) == 0)
			for (p += 5; *p == '/'; p++)
				;
		if (*p == '\0' || strcmp(p, "ocsp") == 0)
			evhttp_send_error(req, 400, "Bad Request");
		else
			ocsp_handle_get(ocsp, req, p);
		break;
	default:
		method_not_allowed(req);
		break;
	}
out:
	free(path);
}

struct http *
http_new(struct event_base *base, char *const *listen, size_t n,
    struct refresh *refresh, struct cache *cache, char *err, size_t errlen)
{
	struct http	*h;
	char		 host[256];
	int		 port;
	size_t		 i;

	if ((h = calloc(1, sizeof(*h))) == NULL)
		return NULL;
	h->base = base;
	h->refresh = refresh;
	h->cache = cache;
	if ((h->evh = evhttp_new(base)) == NULL) {
		snprintf(err, errlen, "http: cannot create the server");
		goto fail;
	}
	/* Bodies past the cap are refused by libevent with 413 before we see them. */
	evhttp_set_max_body_size(h->evh, OCSP_MAX_REQUEST_BYTES);
	evhttp_set_max_headers_size(h->evh, HTTP_MAX_HEADERS_BYTES);
	evhttp_set_timeout(h->evh, HTTP_IDLE_TIMEOUT_S);
	evhttp_set_allowed_methods(h->evh, EVHTTP_REQ_GET | EVHTTP_REQ_POST |
	    EVHTTP_REQ_HEAD | EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
	    EVHTTP_REQ_OPTIONS | EVHTTP_REQ_TRACE | EVHTTP_REQ_CONNECT |
	    EVHTTP_REQ_PATCH);
	evhttp_set_default_content_type(h->evh, "text/plain; charset=utf-8");
	evhttp_set_gencb(h->evh, dispatch, h);
	for (i = 0; i < n; i++) {
		if (config_split_listen(listen[i], host, sizeof(host), &port) == -1) {
			snprintf(err, errlen, "listen: \"%s\": expected HOST:PORT",
			    listen[i]);
			goto fail;
		}
		if (evhttp_bind_socket_with_handle(h->evh, host, (uint16_t)port) == NULL) {
			snprintf(err, errlen, "listen: cannot bind %s (address in use, "
			    "or not an address of this host)", listen[i]);
			goto fail;
		}
		log_info("listening on %s", listen[i]);
	}
	return h;
fail:
	http_free(h);
	return NULL;
}

void
http_set_gen(struct http *h, struct gen *g)
{
	h->gen = g;
}

struct bound_list {
	struct evhttp_bound_socket	*s[64];
	size_t				 n;
};

static void
collect_bound(struct evhttp_bound_socket *bs, void *arg)
{
	struct bound_list	*l = arg;

	if (l->n < 64)
		l->s[l->n++] = bs;
}

void
http_stop_accepting(struct http *h)
{
	struct bound_list	l = { .n = 0 };
	size_t			i;

	h->stopping = 1;
	evhttp_foreach_bound_socket(h->evh, collect_bound, &l);
	for (i = 0; i < l.n; i++)
		evhttp_del_accept_socket(h->evh, l.s[i]);
}

void
http_free(struct http *h)
{
	if (h == NULL)
		return;
	if (h->evh != NULL)
		evhttp_free(h->evh);
	free(h);
}
