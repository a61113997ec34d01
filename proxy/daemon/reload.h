/* SPDX-License-Identifier: Apache-2.0 */
/* SIGHUP's reload of the configuration, and the verdict staplectl reload reads. */
#ifndef PROXY_RELOAD_H
#define PROXY_RELOAD_H

#include <stddef.h>

#include <event2/util.h>

struct daemon;

/* The verdict on a reload (or on start-up, generation 0), for staplectl reload. */
void	reload_record(struct daemon *d, int ok, const char *msg);
/* The SIGHUP event: reload, telling the service manager and staplectl. */
void	on_hup(evutil_socket_t sig, short what, void *arg);

#endif
