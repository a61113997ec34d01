/* SPDX-License-Identifier: Apache-2.0 */
/* The kinds the daemon serves: each route file's row, by enum cache_kind, made from the list of kinds. */
#include <config.h>

#include "entry/kinds.h"
#include "proxy/kinds/route.h"

#define ROUTE_DECL_(id, byte, name, section, row)	\
	extern const struct route row##_route;
KIND_LIST(ROUTE_DECL_)
#undef ROUTE_DECL_

const struct route *const route_table[CACHE_KIND_MAX] = {
#define ROUTE_ROW_(id, byte, name, section, row)	\
	[CACHE_KIND_##id] = &row##_route,
	KIND_LIST(ROUTE_ROW_)
#undef ROUTE_ROW_
};

void
route_ops(const struct svc_ops *ops[CACHE_KIND_MAX])
{
	int	k;

	ops[0] = NULL;
	for (k = KIND_FIRST; k < CACHE_KIND_MAX; k++)
		ops[k] = route_table[k]->ops;
}
