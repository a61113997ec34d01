/* SPDX-License-Identifier: Apache-2.0 */
/* Routing: which kind answers a request's path and method, and the operations endpoints (/healthz, /readyz, /metrics). */
#ifndef PROXY_ROUTER_H
#define PROXY_ROUTER_H

struct cache;
struct gen;
struct http_req;
struct refresh;
struct router;

/*
 * A router reading the store's figures from refresh and answering /readyz
 * by cache (both borrowed, outliving it). Until router_set_gen every
 * request but none is answered 503. Returns NULL when out of memory; free
 * with router_free.
 */
struct router	*router_new(struct refresh *, struct cache *);
/* The current generation (borrowed; the caller keeps its reference). */
void		 router_set_gen(struct router *, struct gen *);
/*
 * on: an admin listener exists, so /metrics, /healthz and /readyz are
 * answered on HTTP_LISTEN_ADMIN listeners only, which answer nothing
 * else (404 both ways). off (the default): every listener serves all.
 */
void		 router_set_admin_only(struct router *, int on);
/* Shutting down: /readyz answers 503 from here on. */
void		 router_stop(struct router *);
void		 router_free(struct router *);	/* accepts NULL */

/* http_handler_cb (http_new's handler, arg the router): answer one request. */
void		 router_dispatch(struct http_req *, void *router);

#endif
