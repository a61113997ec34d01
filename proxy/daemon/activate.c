/* SPDX-License-Identifier: Apache-2.0 */
/* Socket activation: read LISTEN_FDS/LISTEN_PID/LISTEN_FDNAMES directly (no libsystemd), check each socket, name it for the logs. */
#include <config.h>	/* autoconf; "config.h" here would be proxy/config.h */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include "proxy/daemon/activate.h"

/* A decimal count or pid from the environment; -1 when absent or not a number. */
static long
env_long(const char *name)
{
	const char	*s = getenv(name);
	char		*end;
	long		 v;

	if (s == NULL || *s == '\0')
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < 0)
		return -1;
	return v;
}

/* The address of a listening socket as the logs show it. */
static void
sock_name(int fd, char *buf, size_t len)
{
	struct sockaddr_storage	 ss;
	struct sockaddr_un	*sun = (struct sockaddr_un *)&ss;
	socklen_t		 sl = sizeof(ss);
	char			 a[INET6_ADDRSTRLEN];

	memset(&ss, 0, sizeof(ss));
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == -1)
		snprintf(buf, len, "fd %d", fd);
	else if (ss.ss_family == AF_INET)
		snprintf(buf, len, "%s:%u", inet_ntop(AF_INET,
		    &((struct sockaddr_in *)&ss)->sin_addr, a, sizeof(a)),
		    ntohs(((struct sockaddr_in *)&ss)->sin_port));
	else if (ss.ss_family == AF_INET6)
		snprintf(buf, len, "[%s]:%u", inet_ntop(AF_INET6,
		    &((struct sockaddr_in6 *)&ss)->sin6_addr, a, sizeof(a)),
		    ntohs(((struct sockaddr_in6 *)&ss)->sin6_port));
	else if (ss.ss_family == AF_UNIX && sl > sizeof(sa_family_t) &&
	    sun->sun_path[0] == '\0')
		snprintf(buf, len, "unix:@%.*s", (int)(sl - sizeof(sa_family_t) - 1),
		    sun->sun_path + 1);
	else if (ss.ss_family == AF_UNIX)
		snprintf(buf, len, "unix:%.*s", (int)sizeof(sun->sun_path),
		    sun->sun_path);
	else
		snprintf(buf, len, "fd %d (family %d)", fd, ss.ss_family);
}

/* A listening stream socket, or -1 with err saying what fd is instead. */
static int
check_listening(int fd, char *err, size_t errlen)
{
	struct stat	st;
	int		type = 0, acc = 0;
	socklen_t	sl = sizeof(type), al = sizeof(acc);

	if (fstat(fd, &st) == -1) {
		snprintf(err, errlen, "passed fd %d: %s", fd, strerror(errno));
		return -1;
	}
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(err, errlen, "passed fd %d is not a socket; only "
		    "listening stream sockets (ListenStream=) can be served", fd);
		return -1;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &sl) == -1 ||
	    getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &al) == -1) {
		snprintf(err, errlen, "passed fd %d: %s", fd, strerror(errno));
		return -1;
	}
	if (type != SOCK_STREAM || !acc) {
		snprintf(err, errlen, "passed fd %d is %s; only listening stream "
		    "sockets (ListenStream=, not Accept=yes) can be served", fd,
		    type != SOCK_STREAM ? "not a stream socket" :
		    "a stream socket that is not listening");
		return -1;
	}
	return 0;
}

/* The i-th ':'-separated name of LISTEN_FDNAMES into buf ("" when absent). */
static void
fd_name(const char *names, size_t i, char *buf, size_t len)
{
	const char	*p = names, *e;

	buf[0] = '\0';
	for (; p != NULL && i > 0; i--)
		p = (p = strchr(p, ':')) != NULL ? p + 1 : NULL;
	if (p == NULL)
		return;
	e = p + strcspn(p, ":");
	snprintf(buf, len, "%.*s", (int)(e - p), p);
}

static void
unset_all(void)
{
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
}

int
activate_collect(struct activate_sock *out, size_t max, size_t *n,
    char *err, size_t errlen)
{
	long		 pid = env_long("LISTEN_PID"), nfds = env_long("LISTEN_FDS");
	const char	*names = getenv("LISTEN_FDNAMES");
	char		 nm[64];
	int		 rv = -1;
	long		 i;

	*n = 0;
	if (pid != (long)getpid() || nfds <= 0) {
		rv = 0;
		goto out;
	}
	if ((size_t)nfds > max) {
		snprintf(err, errlen, "%ld sockets passed (LISTEN_FDS), at most "
		    "%zu", nfds, max);
		goto out;
	}
	for (i = 0; i < nfds; i++) {
		out[i].fd = ACTIVATE_FD_START + (int)i;
		if (check_listening(out[i].fd, err, errlen) == -1)
			goto out;
		(void)fcntl(out[i].fd, F_SETFD, FD_CLOEXEC);
		sock_name(out[i].fd, out[i].name, sizeof(out[i].name));
		listen_addr_of_fd(out[i].fd, &out[i].addr);
		fd_name(names, (size_t)i, nm, sizeof(nm));
		out[i].flags = strcmp(nm, ACTIVATE_ADMIN_NAME) == 0 ?
		    HTTP_LISTEN_ADMIN : 0;
	}
	*n = (size_t)nfds;
	rv = 0;
out:
	unset_all();
	return rv;
}
