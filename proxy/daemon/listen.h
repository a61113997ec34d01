/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon's listeners (listen_adopt, listen_bind) and the check that a configuration's can all listen (listen_vet). */
#ifndef PROXY_LISTEN_H
#define PROXY_LISTEN_H

#include <stddef.h>

struct activate_sock;
struct config;
struct daemon;

/*
 * Whether every listener of cfg can listen, as listen_bind would serve
 * them beside the npassed sockets passed (socket activation): an address
 * equal to a passed socket's is served by it, unless listen and
 * admin_listen both name it; otherwise no two listeners may overlap
 * (listen_addr_overlap: the same address, a wildcard beside an address of
 * its port, a dual-stack [::] beside IPv4). listen is left out when
 * listen_default and sockets were passed, and so is a listen entry that
 * overlaps a public passed socket without being its address (listen_bind
 * warns and serves the passed socket). Host names are resolved. 0, or -1
 * with err naming both listeners and why.
 */
int	listen_vet(const struct config *cfg, int listen_default,
	    const struct activate_sock *passed, size_t npassed, char *err,
	    size_t errlen);
/*
 * Serve on the sockets a service manager passed (kept in d->passed for
 * listen_vet), before the configured addresses, so that a configured
 * address equal to a passed one is served by it (http_add_listener)
 * instead of failing with EADDRINUSE. 0, or -1 with err; the sockets not
 * yet taken are closed then.
 */
int	listen_adopt(struct daemon *d, char *err, size_t errlen);
/*
 * Then listen (unless it is the default and sockets were passed: the
 * socket unit chose the addresses), with d->tls, less the entries that
 * listen_vet leaves out beside a passed socket (each warned about), and
 * admin_listen. With an admin listener, the ops endpoints are served there
 * only. 0, or -1 with err.
 */
int	listen_bind(struct daemon *d, const struct config *cfg, char *err,
	    size_t errlen);

#endif
