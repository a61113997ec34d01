/* SPDX-License-Identifier: Apache-2.0 */
/* What the daemon tells of itself: the upstreams line, the health record for staplectl, STATUS= for the service manager. */
#ifndef PROXY_HEALTH_H
#define PROXY_HEALTH_H

#include <stddef.h>

#include <event2/util.h>

struct daemon;
struct gen;

/* "ocsp: primary (URL), mirror (URL); pccs: ..." into buf; returns buf. */
char	*upstreams_line(struct gen *gen, char *buf, size_t len);
/* The health_ev timer (and once at exit): the record in the aux table, STATUS=. */
void	 record_health(evutil_socket_t fd, short what, void *arg);
/* One STATUS= line, with head (e.g. "READY=1\n") in the same datagram. */
void	 send_status(struct daemon *d, const char *head);

#endif
