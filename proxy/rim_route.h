/* The NVIDIA RIM route: GET /v1/rim/{id} in the RIM service's own format, for nvattest --rim-url. */
#ifndef PROXY_RIM_ROUTE_H
#define PROXY_RIM_ROUTE_H

struct http_req;
struct svc;

#define RIM_ROUTE_PREFIX	"/v1/rim/"

/* `id` is the percent-decoded path remainder after RIM_ROUTE_PREFIX. */
void	rim_handle_get(struct svc *, struct http_req *, const char *id);

#endif
