/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon's store: open, judge, recover, held writes, the forked check walk. */
#ifndef PROXY_STORE_OPS_H
#define PROXY_STORE_OPS_H

#include <stddef.h>

struct config;
struct daemon;

/* Whether the store takes writes: said when that changes; a lock file's hold retried. */
void	store_held(struct daemon *d);
/* SIGHUP: a store opened read-only opened for writing, once it can be written. */
void	store_write_again(struct daemon *d);
/* Claim cfg->cache_dir, judge the store, recover or open it, watch for damage. 0, or -1 with err. */
int	store_open(struct daemon *d, const struct config *cfg, char *err,
	    size_t errlen);
/* After ready: the check walk in a child; the refresh walk waits for its verdict. */
void	store_check_start(struct daemon *d);
/* End the check walk and free its events and the damage watch. */
void	store_check_stop(struct daemon *d);

#endif
