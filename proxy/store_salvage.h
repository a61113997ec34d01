/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon's salvage of a store moved aside: entry/salvage.c in a forked child, watched from the event loop. */
#ifndef PROXY_STORE_SALVAGE_H
#define PROXY_STORE_SALVAGE_H

struct event_base;
struct gen;
struct store_salvage;

#define STORE_SALVAGE_POLL_MS	100	/* the child's end, polled from the loop */

struct store_salvage	*store_salvage_new(struct event_base *);
/*
 * Salvage the damaged file `aside` (a data.mdb moved aside) into the
 * store gen's cache is now open on: a child admits its records again by
 * gen's rules (its trust, ocsp.skew_s, rim's retention) and writes them
 * into its own environment on the directory, beside the daemon's, so
 * the loop only polls. When it ends, the counts are logged ("salvaged N
 * of M entries from PATH"), added to stapled_store_salvaged_total and
 * the damage note, and the pool it carried joins gen's OCSP pool. One
 * salvage at a time: a second call while one runs waits for it and then
 * starts. 0, or -1 (fork failed: logged; the store stays as it is).
 */
int	store_salvage_start(struct store_salvage *, struct gen *,
	    const char *aside);
/* Whether a salvage is running or waiting. */
int	store_salvage_busy(const struct store_salvage *);
/* Kill a running child and wait for it; accepts NULL. */
void	store_salvage_free(struct store_salvage *);

#endif
