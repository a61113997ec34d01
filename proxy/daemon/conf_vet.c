/* SPDX-License-Identifier: Apache-2.0 */
/* The one check a configuration passes before it is used: at start, by stapled -n and on SIGHUP alike, so none accepts what another refuses. */
#include "config.h"

#include <stdlib.h>

#include "entry/conf.h"
#include "proxy/daemon/conf_vet.h"
#include "proxy/daemon/daemon.h"
#include "proxy/daemon/listen.h"
#include "proxy/kinds/route.h"
#include "proxy/service.h"
#include "proxy/http/tls.h"

struct gen *
conf_vet(const struct daemon *d, struct config *cfg, int listen_default,
    struct tls_server **tls, char *err, size_t errlen)
{
	const struct svc_ops	*ops[CACHE_KIND_MAX];
	struct gen		*g;

	if (listen_vet(cfg, listen_default, d->passed, d->npassed, err,
	    errlen) == -1 ||
	    config_upstream_tls_check(cfg, err, errlen) == -1 ||
	    tls_servers_new(tls, cfg, err, errlen) == -1) {
		config_free(cfg);
		free(cfg);
		return NULL;
	}
	/* gen_new owns cfg from here, on failure too. */
	route_ops(ops);
	if ((g = gen_new(cfg, ops, d->fetch, d->cache, d->writer, d->reader,
	    d->refresh, err, errlen)) == NULL)
		tls_servers_free(tls);
	return g;
}
