/* SPDX-License-Identifier: Apache-2.0 */
/* Intel PCS v4 / PCCS routes under /sgx/certification/ and /tdx/certification/. */
#ifndef PROXY_PCCS_ROUTE_H
#define PROXY_PCCS_ROUTE_H

struct http_req;
struct svc;

/* Whether the path belongs to this route (any version: v3 gets 410). */
int	pccs_is_path(const char *path);
/* `path` percent-decoded, `query` raw (may be NULL). */
void	pccs_handle(struct svc *, struct http_req *, const char *path,
	    const char *query);

#endif
