/* SPDX-License-Identifier: Apache-2.0 */
/* The one check a configuration passes before it is used: at start, by stapled -n and on SIGHUP alike. */
#ifndef PROXY_CONF_VET_H
#define PROXY_CONF_VET_H

#include <stddef.h>

struct config;
struct daemon;
struct gen;
struct tls_server;

/*
 * Everything a configuration must pass before it is used, so that a
 * reload and stapled -n accept exactly what a start does. load_config
 * checked the values; here: every listener can listen beside the others
 * and the sockets passed to d (listen_vet), the upstream TLS files load
 * and each client key matches its certificate (config_upstream_tls_check),
 * every TLS listener's files load (into tls[CONFIG_MAX_LISTEN], which must be all NULL, by index in
 * cfg->listen), and the generation is made: the trust anchors and
 * intermediates, the keys, trusted_proxies (gen_new, with d's fetch
 * context, store, threads and refresher, all NULL for stapled -n).
 * listen_default as load_config set it. Takes cfg (the generation owns
 * it, and it is freed on failure). Returns the generation, or NULL with
 * err; tls[] is then all NULL.
 */
struct gen	*conf_vet(const struct daemon *d, struct config *cfg,
		    int listen_default, struct tls_server **tls, char *err,
		    size_t errlen);

#endif
