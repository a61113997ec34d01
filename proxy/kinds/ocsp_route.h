/* SPDX-License-Identifier: Apache-2.0 */
/* The OCSP routes: POST on /, /ocsp and configured paths; RFC 6960 GET. */
#ifndef PROXY_OCSP_ROUTE_H
#define PROXY_OCSP_ROUTE_H

struct http_req;
struct svc;

/* Whether `path` is one of the POST paths ("/", "/ocsp", configured ones). */
int	ocsp_is_post_path(const struct svc *, const char *path);
/* POST with a DER body. */
void	ocsp_handle_post(struct svc *, struct http_req *);
/*
 * GET on `path` (percent-decoded, one leading '/'). Under an OCSP GET
 * prefix ("/ocsp/", or a configured path and '/') the rest must be the
 * base64 of a DER request: malformedRequest when it is not, 400 when it
 * is empty. At the root, "/" and base64 of a DER SEQUENCE is an OCSP
 * request too. Returns 0 when answered, -1 when path is not an OCSP GET
 * at all (the caller answers 404).
 */
int	ocsp_handle_get(struct svc *, struct http_req *, const char *path);

#endif
