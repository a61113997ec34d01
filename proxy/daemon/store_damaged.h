/* SPDX-License-Identifier: Apache-2.0 */
/* Damaged records the store noted: counted once, logged with their key, removed by the writer so that the next ask or bundle replaces them. */
#ifndef PROXY_STORE_DAMAGED_H
#define PROXY_STORE_DAMAGED_H

struct daemon;

/*
 * Take the damaged records the store noted since the last call (any
 * handle, any thread: cache_damaged_take) and, for each, add one to
 * stapled_store_damaged_total{where=...}, log it at error with its
 * kind, key (hex, as staplectl list shows it), the part and why, and
 * remove it: on the writer thread (cache_writer_drop_damaged) or, without
 * one, on the loop. The store notes a record once until it is removed, so
 * each is counted once, however often it is asked meanwhile. On the
 * loop, when cache_damage_fd is readable.
 */
void	store_damaged_take(struct daemon *);

#endif
