/* SPDX-License-Identifier: Apache-2.0 */
/* The NVIDIA RIM route: GET /v1/rim/{id} in the RIM service's own format, for nvattest --rim-url. */
#ifndef PROXY_RIM_ROUTE_H
#define PROXY_RIM_ROUTE_H

#include "entry/rim.h"

struct http_req;
struct svc;

/* Clients ask stapled on the RIM service's own path (entry/rim.h). */
#define RIM_ROUTE_PREFIX	ENTRY_RIM_PATH_PREFIX

/* `id` is the percent-decoded path remainder after RIM_ROUTE_PREFIX. */
void	rim_handle_get(struct svc *, struct http_req *, const char *id);

#endif
