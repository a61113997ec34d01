/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon's salvage of a store moved aside: entry/salvage.c in a forked child, watched from the event loop. */
#ifndef PROXY_STORE_SALVAGE_H
#define PROXY_STORE_SALVAGE_H

struct event_base;
struct gen;
struct store_salvage;

#define STORE_SALVAGE_POLL_MS	100	/* the child's end, polled from the loop */

/*
 * `genp` points at the daemon's current generation (a reload replaces
 * it): each salvage takes its rules and its store from *genp as it is
 * then, and the pool it carried is learned by *genp as it is at its end.
 */
struct store_salvage	*store_salvage_new(struct event_base *,
			    struct gen *const *genp);
/*
 * Salvage the damaged file `aside` (a data.mdb moved aside) into the
 * store the generation's cache is now open on: a child admits its
 * records again by the generation's rules (its trust, ocsp.skew_s, rim's
 * retention) and writes them into its own environment on the directory,
 * beside the daemon's, so the loop only polls. When it ends, the counts
 * are logged ("salvaged N of M entries from PATH"), added to
 * stapled_store_salvaged_total and the damage note, and the pool it
 * carried joins the OCSP pool. Call it wherever a damaged store is moved
 * aside. One salvage at a time: a call while one runs is started after
 * it. 0, or -1 (fork failed: logged; the store stays as it is).
 */
int	store_salvage_start(struct store_salvage *, const char *aside);
/* Kill a running child and wait for it; accepts NULL. */
void	store_salvage_free(struct store_salvage *);

#endif
