/* SPDX-License-Identifier: Apache-2.0 */
/* Socket activation: the listening sockets a service manager passed (LISTEN_FDS, LISTEN_PID, LISTEN_FDNAMES), checked and named. */
#ifndef PROXY_ACTIVATE_H
#define PROXY_ACTIVATE_H

#include <stddef.h>

#include "proxy/http/http.h"
#include "proxy/http/listen_addr.h"

#define ACTIVATE_FD_START	3	/* the first passed descriptor (SD_LISTEN_FDS_START) */
#define ACTIVATE_MAX_FDS	16	/* more passed sockets are refused */
/* A socket unit's FileDescriptorName= that makes a passed socket an admin listener. */
#define ACTIVATE_ADMIN_NAME	"admin"

struct activate_sock {
	int		fd;
	unsigned	flags;		/* HTTP_LISTEN_ADMIN when named "admin" */
	char		name[HTTP_LISTEN_NAME_BYTES];	/* "127.0.0.1:8090", "unix:/run/x" */
	struct listen_addr addr;	/* a Unix socket's: AF_UNSPEC */
};

/*
 * Collect the sockets passed to this process: LISTEN_FDS descriptors from
 * ACTIVATE_FD_START, when LISTEN_PID is ours. The variables are unset in
 * every case, so children never see them. Each descriptor must be a
 * listening stream socket (TCP or Unix); it is made close-on-exec. On
 * return *n sockets are in out (the caller owns their fds; http_add_listener
 * takes them). Returns 0 (also with none passed), or -1 with err naming the
 * descriptor that is not a listening stream socket, or too many passed.
 */
int	activate_collect(struct activate_sock *out, size_t max, size_t *n,
	    char *err, size_t errlen);

#endif
