/* SPDX-License-Identifier: Apache-2.0 */
/* bench-fill: the plan of a signed fill, shared by its two files. */
#ifndef TOOLS_BENCH_FILL_H
#define TOOLS_BENCH_FILL_H

#include <time.h>

#include "cache/store.h"

/*
 * Each entry's last use lies within this before the fill's clock (or -t's
 * WHEN), as under the uniform hits tools/bench-scale measures: stapled then
 * records a hit's use at most hourly (usage_hit), and the hits find the
 * steady state.
 */
#define FILL_SERVED_SPREAD_S	600

/* What fill_signed makes; strings borrowed. */
struct fill_plan {
	const char	*pkidir;	/* root.pem, ica.pem, resp.pem, resp.key */
	const char	*outdir;	/* paths, index.txt, www/; NULL: none */
	unsigned long	 count;
	long		 validity_s;	/* nextUpdate - thisUpdate of each answer */
	double		 fraction;	/* refresh.fraction: the share of validity between refreshes */
	time_t		 now;
};

/*
 * Store p->count answers to distinct SHA-1 CertIDs (serials 0x10000000 +
 * i under DIR/ica.pem), each signed "good" by DIR/resp.pem, in c, with the
 * metadata stapled would store for them: thisUpdate spread over the last
 * refresh interval (validity_s * fraction), the next refresh planned at
 * its end. Every 997th entry is judged by entry_ocsp_admit against
 * root.pem. Prints "now SECONDS" (the clock the times start from).
 * With an outdir, also writes the GET paths, openssl ocsp's index and
 * nginx's files. Returns 0, or -1 (a message printed; entries
 * of earlier batches stay stored).
 */
int	fill_signed(struct cache *c, const struct fill_plan *p);

#endif
