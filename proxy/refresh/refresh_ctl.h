/* SPDX-License-Identifier: Apache-2.0 */
/* staplectl refresh's channel: on SIGUSR1 the asks in the cache directory are taken, and each result is appended to the asker's file. */
#ifndef PROXY_REFRESH_CTL_H
#define PROXY_REFRESH_CTL_H

/* How often the askers are looked for: one that left has its ask cancelled. */
#define REFRESH_CTL_CHECK_MS	1000

struct event_base;
struct refresh;
struct refresh_ctl;

/*
 * The channel of the cache directory dir (borrowed: it must outlive the
 * channel), for asks to refresh (borrowed likewise). NULL when memory is
 * short.
 */
struct refresh_ctl	*refresh_ctl_new(struct event_base *, struct refresh *,
			    const char *dir);
/*
 * SIGUSR1: take every DIR/stapled.refresh-PID.ask (cache/ask.h), create
 * DIR/stapled.refresh-PID.out for its results and start it
 * (refresh_ask_start). An ask that cannot be read gets its file with one
 * "stopped" line saying why. An asker that is gone (its pid no longer
 * runs, looked at every REFRESH_CTL_CHECK_MS) has its ask cancelled and
 * its file removed. Cannot fail: what goes wrong is logged.
 */
void			 refresh_ctl_take(struct refresh_ctl *);
/* Close every asker's file (their asks end with the refresher). Accepts NULL. */
void			 refresh_ctl_free(struct refresh_ctl *);

#endif
