/* SPDX-License-Identifier: Apache-2.0 */
/* AMD KDS routes: /vcek/v1/... and /vlek/v1/..., as kdsintf.amd.com serves them. */
#ifndef PROXY_KDS_ROUTE_H
#define PROXY_KDS_ROUTE_H

struct http_req;
struct svc;

int	kds_is_path(const char *path);
/* `path` percent-decoded, `query` raw (may be NULL). */
void	kds_handle(struct svc *, struct http_req *, const char *path,
	    const char *query);

#endif
