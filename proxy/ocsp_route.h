/* The OCSP routes: POST on /, /ocsp and configured paths; RFC 6960 GET. */
#ifndef PROXY_OCSP_ROUTE_H
#define PROXY_OCSP_ROUTE_H

struct http_req;
struct svc;

/* Whether `path` is one of the POST paths ("/", "/ocsp", configured ones). */
int	ocsp_is_post_path(const struct svc *, const char *path);
/* POST with a DER body. */
void	ocsp_handle_post(struct svc *, struct http_req *);
/* GET; `b64` is the percent-decoded path remainder holding base64 DER. */
void	ocsp_handle_get(struct svc *, struct http_req *, const char *b64);

#endif
