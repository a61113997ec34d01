/* SPDX-License-Identifier: Apache-2.0 */
/* The service manager's notify protocol: datagrams to NOTIFY_SOCKET (path or abstract '@' name) and the watchdog timer. */
#include <config.h>	/* autoconf; "config.h" here would be proxy/config.h */

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/event.h>

#include "proxy/log.h"
#include "proxy/loop.h"
#include "proxy/daemon/notify.h"

/* The whole of this module's state: one manager per process. */
static struct {
	int			 fd;		/* SOCK_DGRAM, or -1: off */
	struct sockaddr_un	 sun;
	socklen_t		 sunlen;
	uint64_t		 watchdog_us;	/* 0: no watchdog */
	struct event		*watchdog_ev;
} nt = { .fd = -1 };

/* NOTIFY_SOCKET into nt.sun: an absolute path, or '@' for an abstract name. 0 or -1. */
static int
notify_addr(const char *path)
{
	size_t	len = strlen(path);

	if ((path[0] != '/' && path[0] != '@') || len < 2 ||
	    len >= sizeof(nt.sun.sun_path))
		return -1;
	memset(&nt.sun, 0, sizeof(nt.sun));
	nt.sun.sun_family = AF_UNIX;
	memcpy(nt.sun.sun_path, path, len);
	if (path[0] == '@')
		nt.sun.sun_path[0] = '\0';	/* abstract: no NUL at the end */
	else
		len++;
	nt.sunlen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
	return 0;
}

/* WATCHDOG_USEC, honoured only when WATCHDOG_PID is unset or ours. */
static uint64_t
watchdog_from_env(void)
{
	const char		*us = getenv("WATCHDOG_USEC");
	const char		*pid = getenv("WATCHDOG_PID");
	char			*end;
	unsigned long long	 v;

	if (us == NULL)
		return 0;
	if (pid != NULL && strtol(pid, &end, 10) != (long)getpid())
		return 0;
	errno = 0;
	v = strtoull(us, &end, 10);
	if (errno != 0 || *end != '\0' || end == us || v == 0) {
		log_warn("notify: WATCHDOG_USEC=\"%s\" is not a number of "
		    "microseconds; no watchdog pings", us);
		return 0;
	}
	return v;
}

int
notify_init(void)
{
	const char	*path = getenv("NOTIFY_SOCKET");
	int		 rv = 0;

	nt.watchdog_us = watchdog_from_env();
	if (path != NULL && notify_addr(path) == -1) {
		log_warn("notify: NOTIFY_SOCKET=\"%s\" is neither an absolute "
		    "path nor an abstract @name; not notifying", path);
		nt.watchdog_us = 0;
	} else if (path != NULL &&
	    (nt.fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1) {
		log_err("notify: socket: %s; not notifying", strerror(errno));
		nt.watchdog_us = 0;
		rv = -1;
	}
	if (path == NULL)
		nt.watchdog_us = 0;	/* nobody to ping */
	unsetenv("NOTIFY_SOCKET");
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
	return rv;
}

int
notify_enabled(void)
{
	return nt.fd != -1;
}

int
notify_send(const char *fmt, ...)
{
	char	msg[NOTIFY_MAX_BYTES];
	va_list	ap;
	int	n;

	if (nt.fd == -1)
		return 0;
	va_start(ap, fmt);
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n < 0)
		return -1;
	if ((size_t)n >= sizeof(msg))
		n = sizeof(msg) - 1;
	/* Never block the loop on a manager that does not read. */
	if (sendto(nt.fd, msg, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL,
	    (struct sockaddr *)&nt.sun, nt.sunlen) == -1) {
		log_debug("notify: sending \"%.20s\": %s", msg, strerror(errno));
		return -1;
	}
	return 0;
}

static void
watchdog_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	notify_send("WATCHDOG=1");
}

int
notify_watchdog_start(struct event_base *base)
{
	uint64_t	half;
	struct timeval	tv;

	if (nt.fd == -1 || nt.watchdog_us == 0)
		return 0;
	half = nt.watchdog_us / 2;
	tv.tv_sec = (time_t)(half / 1000000);
	tv.tv_usec = (suseconds_t)(half % 1000000);
	if ((nt.watchdog_ev = event_new(base, -1, EV_PERSIST, watchdog_cb,
	    NULL)) == NULL || event_add(nt.watchdog_ev, &tv) == -1) {
		log_err("notify: cannot start the watchdog timer");
		return -1;
	}
	notify_send("WATCHDOG=1");
	log_info("notify: watchdog every %llu ms",
	    (unsigned long long)(half / 1000));
	return 0;
}

uint64_t
notify_watchdog_usec(void)
{
	return nt.watchdog_us;
}

void
notify_close(void)
{
	loop_event_free(nt.watchdog_ev);
	nt.watchdog_ev = NULL;
	if (nt.fd != -1)
		close(nt.fd);
	nt.fd = -1;
}
