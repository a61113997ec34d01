/* The OCSP endpoint: cache first, verified upstream fetch on a miss, tryLater when nothing is valid. */
#ifndef PROXY_OCSP_ROUTE_H
#define PROXY_OCSP_ROUTE_H

#include <stddef.h>

struct cache;
struct config;
struct evhttp_request;
struct fetch_ctx;
struct refresh;

/*
 * One generation of the OCSP service: its configuration, trust store and
 * upstream pool. SIGHUP builds a new one and swaps it in; requests and
 * fetches in flight keep the old one alive through its reference count.
 */
struct ocsp_svc;

/* Takes ownership of cfg (also on failure). err gets what is wrong. */
struct ocsp_svc	*ocsp_svc_new(struct config *cfg, struct fetch_ctx *,
		    struct cache *, struct refresh *, char *err, size_t errlen);
void		 ocsp_svc_unref(struct ocsp_svc *);	/* accepts NULL */
const struct config *ocsp_svc_config(const struct ocsp_svc *);
struct fetch_pool *ocsp_svc_pool(const struct ocsp_svc *);
/* Install this generation as the refresher of OCSP entries. */
void		 ocsp_svc_install_refresh(struct ocsp_svc *);

/* Whether `path` is one of the POST paths ("/", "/ocsp", configured ones). */
int		 ocsp_is_post_path(const struct ocsp_svc *, const char *path);

/* POST with a DER body. */
void		 ocsp_handle_post(struct ocsp_svc *, struct evhttp_request *);
/* GET; `b64` is the percent-decoded path remainder holding base64 DER. */
void		 ocsp_handle_get(struct ocsp_svc *, struct evhttp_request *,
		    const char *b64);

/* Client requests waiting for an upstream, for a graceful shutdown. */
size_t		 ocsp_pending(void);

#endif
