/* SPDX-License-Identifier: Apache-2.0 */
/* verify's and import's entries of the kinds judged alone (OCSP) checked on worker threads, each with a trust of its own, their verdicts handed back in the order the entries came. */
#ifndef TOOLS_VERIFIERS_H
#define TOOLS_VERIFIERS_H

#include <stddef.h>

#include "cache/store.h"
#include "tools/bundle.h"
#include "tools/staplectl.h"

/*
 * An answer's signature check is nearly all of what verifying a bundle
 * costs (a responder's chain is judged once and remembered by its
 * trust, attest/ocsp_verify.h), and answers do not depend on each
 * other: workers check them side by side while the caller reads the
 * next lines. Entries go in a ring of `depth` slots, in the bundle's
 * order, and come out in the same order whatever order the workers
 * finish in, so what is reported and stored is what one thread would
 * have made of them. Entries of other kinds, and any the caller judged
 * itself, ride the same ring as verdicts already made. A worker's trust
 * is loaded as the caller's and given the caller's pool; a pool that
 * grows (a RIM's chain learned) is given again with verifiers_sync.
 *
 * With no threads (one CPU, or taskset to one) the caller checks each
 * entry as it is put, through the same calls.
 */
#define VERIFIERS_MAX_THREADS	8
#define VERIFIERS_DEPTH		64	/* entries in flight: their bytes */

/* The tag of a verdict ctl_check_alone made; the caller's own are above it. */
#define VERIFIERS_CHECKED	0

struct verifiers;

/* How many workers this process should run: the CPUs it may use, 0 for one, at most VERIFIERS_MAX_THREADS. */
int	verifiers_threads(void);
/*
 * nthreads workers, each with a trust loaded as ctl_trust_load loads
 * one (the cache's pool included) plus t's pool; t stays the caller's.
 * NULL when out of memory or a trust does not load (said).
 */
struct verifiers *verifiers_new(struct ctl *, struct ctl_trust *t,
	    int nthreads);
/* Give each worker's trust the certificates t's pool gained since; nothing may be in flight. 0 or -1. */
int	verifiers_sync(struct verifiers *);
/* 1 when no slot is free: take one first. */
int	verifiers_full(const struct verifiers *);
/*
 * An entry judged alone (ctl_check_alone) to check, with the metadata of the stored entry under
 * its key (NULL: none). Its bytes move into the ring (*e is zeroed).
 * Call only when not full. 0.
 */
int	verifiers_put(struct verifiers *, struct bundle_entry *e,
	    const struct cache_meta *stored);
/*
 * A verdict made by the caller, with its tag (above VERIFIERS_CHECKED),
 * to come back in order; e's bytes move as above. 0.
 */
int	verifiers_put_given(struct verifiers *, struct bundle_entry *e,
	    const struct ctl_check *c, int tag);
/*
 * The oldest entry in flight, waited for: 1 with *e (its bytes now the
 * caller's), *c and *tag (VERIFIERS_CHECKED, or the one it was given
 * with); 0 when none is in flight.
 */
int	verifiers_take(struct verifiers *, struct bundle_entry *e,
	    struct ctl_check *c, int *tag);
/* Stop the workers, drop what is in flight. NULL ok. */
void	verifiers_free(struct verifiers *);

#endif
