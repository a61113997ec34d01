/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon's listeners (listen_every). */
#ifndef PROXY_LISTEN_H
#define PROXY_LISTEN_H

#include <stddef.h>

struct config;
struct daemon;

/* Every listener: passed sockets, listen, admin_listen. 0, or -1 with err. */
int	listen_every(struct daemon *d, const struct config *cfg, char *err,
	    size_t errlen);

#endif
