/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon's listeners: the sockets a service manager passed, then listen and admin_listen. */
#include "config.h"

#include <unistd.h>

#include "entry/conf.h"
#include "proxy/activate.h"
#include "proxy/daemon.h"
#include "proxy/http.h"
#include "proxy/listen.h"
#include "proxy/log.h"
#include "proxy/router.h"
#include "proxy/tls.h"

/*
 * One listener: the address addr to bind (fd -1), or the passed socket fd
 * named name; tls (borrowed, may be NULL) as struct http_listen says. 0,
 * or -1 with err (http_add_listener's).
 */
static int
listen_one(struct http *h, const char *addr, int fd, const char *name,
    unsigned flags, struct tls_server *tls, char *err, size_t errlen)
{
	const struct http_listen	spec = { .addr = addr, .fd = fd,
	    .name = name, .flags = flags, .tls = tls };

	return http_add_listener(h, &spec, err, errlen);
}

/*
 * Bind the n addresses addrs with flags; tls NULL, or one per address
 * (NULL: plain). listen and admin_listen alike. 0, or -1 with err.
 */
static int
listen_addrs(struct http *h, char *const *addrs, size_t n, unsigned flags,
    struct tls_server *const *tls, char *err, size_t errlen)
{
	size_t	i;

	for (i = 0; i < n; i++)
		if (listen_one(h, addrs[i], -1, NULL, flags,
		    tls != NULL ? tls[i] : NULL, err, errlen) == -1)
			return -1;
	return 0;
}

/*
 * Serve on the sockets a service manager passed, before the configured
 * addresses, so a configured address equal to a passed one is served by
 * it (http_add_listener) instead of failing with EADDRINUSE. 0, or -1
 * with err; the sockets not yet taken are closed then.
 */
static int
listen_passed(struct http *h, struct activate_sock *socks, size_t n,
    char *err, size_t errlen)
{
	size_t	i;

	for (i = 0; i < n; i++)
		if (listen_one(h, NULL, socks[i].fd, socks[i].name,
		    socks[i].flags, NULL, err, errlen) == -1) {
			for (; i < n; i++)
				close(socks[i].fd);
			return -1;
		}
	return 0;
}

/*
 * Every listener: the passed sockets, then listen (unless it is the
 * default and sockets were passed: the socket unit chose the addresses),
 * then admin_listen. With an admin listener, the ops endpoints are served
 * there only. 0, or -1 with err.
 */
int
listen_every(struct daemon *d, const struct config *cfg, char *err,
    size_t errlen)
{
	struct activate_sock	socks[ACTIVATE_MAX_FDS];
	size_t			n, i;
	int			admin = cfg->nadmin_listen > 0;

	if (activate_collect(socks, ACTIVATE_MAX_FDS, &n, err, errlen) == -1 ||
	    listen_passed(d->http, socks, n, err, errlen) == -1)
		return -1;
	if (n > 0 && d->listen_default)
		log_info("listen: not set; serving on the %zu passed socket(s) "
		    "only", n);
	else if (listen_addrs(d->http, cfg->listen, cfg->nlisten, 0, d->tls,
	    err, errlen) == -1)
		return -1;
	if (listen_addrs(d->http, cfg->admin_listen, cfg->nadmin_listen,
	    HTTP_LISTEN_ADMIN, NULL, err, errlen) == -1)
		return -1;
	for (i = 0; i < n; i++)
		admin |= (socks[i].flags & HTTP_LISTEN_ADMIN) != 0;
	router_set_admin_only(d->router, admin);
	return 0;
}
