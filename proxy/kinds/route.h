/* SPDX-License-Identifier: Apache-2.0 */
/* One kind on the wire: the row its route file (proxy/kinds/<kind>_route.c) exports, and the table of rows by kind from which the router and the daemon take their per-kind lists. */
#ifndef PROXY_ROUTE_H
#define PROXY_ROUTE_H

#include "entry/kinds.h"
#include "proxy/http/http.h"

/*
 * A kind on the wire is one file, proxy/kinds/<row>_route.c, that
 * defines two things:
 *   - its struct svc_ops (proxy/service.h): its trust store, its verify
 *     (the kind's admit through svc_admit, plus what only the wire adds),
 *     how it serves an entry and a failure, how a refresh rebuilds its
 *     call, and its metrics labels;
 *   - its struct route below, <row>_route: the ops, the handler that
 *     claims its paths, has the kind's parse (struct kind, entry/kind.h)
 *     turn the request into a struct svc_call (svc_call_parse: key,
 *     upstream exchange, typed request), answers its refusals in the
 *     wire's words and adds what only the wire knows (its metrics
 *     route, a variant, an extra header), and its command-line help.
 * The router, the generation's services, the metrics, stapled's flags
 * and the daemon's per-kind loops all read route_table, which the list
 * of kinds (entry/kinds.h) makes: nothing else in proxy/ names a kind.
 * Makefile.am lists the file in libkinds.a and in test_service.
 */

struct http_req;

/* A method's bit in struct route's methods. */
#define ROUTE_METHOD(m)	(1u << (m))
#define ROUTE_GET_HEAD	(ROUTE_METHOD(HTTP_GET) | ROUTE_METHOD(HTTP_HEAD))
struct svc;
struct svc_ops;

/*
 * Answer req when its method and path are the kind's. path is
 * percent-decoded, with doubled leading slashes gone; query is raw, NULL
 * when the URL has none. Returns 0 when req was answered (exactly once),
 * -1 when the request is not the kind's (req untouched: the router asks
 * the next kind, or answers 404).
 */
typedef int route_handle_fn(struct svc *, struct http_req *,
    const char *path, const char *query);

/*
 * A kind's row, exported by its route file as <row>_route (the ROW of
 * the list of kinds, entry/kinds.h) and listed in route_table. Everything in it is static and read-only.
 */
struct route {
	const struct svc_ops	*ops;		/* its half of the service */
	route_handle_fn		*handle;
	/*
	 * The methods it serves, ROUTE_METHOD(HTTP_GET) | ...: a request in
	 * another is never handed to it, so an OCSP POST (the most of the
	 * traffic) asks no other kind.
	 */
	unsigned		 methods;
	/*
	 * 1: asked after every other kind, as its paths are whatever no
	 * other kind claims (an OCSP GET at the root). Requests no kind
	 * takes in a method none serves count on its first metrics route.
	 */
	int			 last;
	/* stapled's --<name>-upstream flag: what the upstream is ("AMD KDS or a mirror"). */
	const char		*upstream_help;
	/*
	 * Non-NULL: stapled takes --<name>-anchor and --<name>-intermediates
	 * (the section's anchors and intermediates), helped with these.
	 */
	const char		*anchor_help;
	const char		*intermediates_help;
};

/*
 * The rows by enum cache_kind, each kind in turn from KIND_FIRST; row 0
 * (no kind) is NULL. Made from the list of kinds (entry/kinds.h) in
 * proxy/kinds/route_table.c.
 */
extern const struct route *const route_table[CACHE_KIND_MAX];

/*
 * Each row's ops into ops[k] (ops[0] NULL): what gen_new makes the
 * generation's services with. The services live below the kinds' wing,
 * so they are handed the kinds rather than reaching up for the table.
 */
void	route_ops(const struct svc_ops *ops[CACHE_KIND_MAX]);

#endif
