/* SPDX-License-Identifier: Apache-2.0 */
/* The service manager's notify protocol (sd_notify's datagrams) without libsystemd: readiness, status, watchdog. */
#ifndef PROXY_NOTIFY_H
#define PROXY_NOTIFY_H

#include <stdint.h>

struct event_base;

/* How long start-up or a reload may take from the moment it says so. */
#define NOTIFY_EXTEND_TIMEOUT_US	(90LL * 1000 * 1000)
/* A STATUS= line longer than this is cut short. */
#define NOTIFY_MAX_BYTES		512

/*
 * Read NOTIFY_SOCKET, WATCHDOG_USEC and WATCHDOG_PID, then unset them so
 * no child inherits them. Without NOTIFY_SOCKET every later call does
 * nothing. A socket path that cannot be used is logged once and ignored.
 * Returns 0, or -1 when out of descriptors (logged; notifying is then off).
 */
int	notify_init(void);
/* Whether a service manager listens (NOTIFY_SOCKET was set and usable). */
int	notify_enabled(void);
/*
 * Send one datagram ("READY=1", "STATUS=...", several lines joined by
 * '\n'); at most NOTIFY_MAX_BYTES. Failures are logged at debug level
 * only: the daemon serves the same without a manager. Returns 0 or -1.
 */
int	notify_send(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * The watchdog: when WATCHDOG_USEC was set (and WATCHDOG_PID, if set, is
 * ours), send WATCHDOG=1 every half of it from a timer on base, so a loop
 * that stops turning stops the pings. Returns 0 (also when no watchdog
 * was asked for), or -1 when the timer cannot be made.
 */
int	notify_watchdog_start(struct event_base *base);
/* The interval asked for in microseconds (0: none). */
uint64_t notify_watchdog_usec(void);
/* Stop the timer and close the socket. */
void	notify_close(void);

#endif
