/* SPDX-License-Identifier: Apache-2.0 */
/* Salvage: the records of a damaged store, read by cache/scan.c, admitted again by each kind's rules into a fresh store. */
#ifndef ENTRY_SALVAGE_H
#define ENTRY_SALVAGE_H

#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "attest/ocsp_verify.h"
#include "attest/rim.h"
#include "cache/store.h"
#include "entry/judge.h"

/* What came of a salvage. */
struct entry_salvage_count {
	size_t	found;		/* distinct entries (kind and key) found */
	size_t	carried;	/* ... verified again and stored */
	size_t	kept;		/* ... verified, but the new store held a newer one */
	size_t	refused;	/* ... whose bodies failed verification */
	size_t	lost;		/* ... whose body was not found (a damaged page) */
	size_t	expired;	/* ... past nextUpdate at `now` */
	size_t	pool;		/* pool certificates carried */
	size_t	leaf_pages;	/* pages read as leaf pages */
	char	refusal[160];	/* the first refusal's reason, for the log ("": none) */
};

/*
 * Judge one stored record again by its kind's rule (entry_judge, no
 * stored entry): kind and key, its body (request, response, kept
 * headers) and its meta (NULL when the meta was lost). On success *out
 * is the meta to store: kind, status and times from the body (for a
 * kind dated by its fetch, a RIM, the fetch time and, at most, the
 * nextUpdate from `old`: one without its meta is refused),
 * CACHE_F_IMPORTED, the source, the served counters and fetched_at from
 * `old` (source "salvage" without one), no schedule (the refresh walk
 * takes it up). What an admitted answer teaches (struct kind's learn: a
 * RIM's chain CAs) joins r's OCSP trust and r->pool. A VCEK is checked
 * against the cert_chain r->find finds. Returns 1 admitted, or 0
 * refused (why says why; past nextUpdate sets *expired).
 */
int	entry_salvage_admit(const struct entry_rules *,
	    enum cache_kind kind, const uint8_t *key, size_t klen,
	    const struct cache_body *body, const struct cache_meta *old,
	    time_t now, struct cache_meta *out, int *expired, char *why,
	    size_t whylen);

/*
 * Salvage the damaged file at `path` into the store `to` (open for
 * writing): its pool certificates that parse and chain as the pool's
 * rule says (ocsp_trust_chaining_cas; they join the rules' OCSP trust
 * too, and are stored under their DER's name), then every entry
 * entry_salvage_admit admits, the kinds that teach first (the CAs of the
 * RIMs' chains, learned, let the OCSP answers about them verify), in
 * write transactions of a few hundred. Nothing is read through LMDB: a
 * damaged file cannot crash this. 0 with *cnt, or -1 with why (the file
 * cannot be read, or the store refused a write).
 */
int	entry_salvage(const char *path, struct cache *to,
	    const struct entry_rules *, time_t now,
	    struct entry_salvage_count *cnt, char *why, size_t whylen);

/*
 * The same in a forked child, which opens its own environment on `dir`
 * (map_bytes as cache_open) and writes into it beside the parent's;
 * the child's counts come back through a pipe. entry_salvage_spawn
 * returns the child's pid and the pipe's read end in *fd (-1 when fork
 * or pipe fails); entry_salvage_result, given the child's wait status,
 * reads and closes fd: 0 with *cnt, or -1 with why. entry_salvage_forked
 * does both and waits (blocks; for staplectl). The child shares the
 * parent's memory as it was at the fork: rules stay valid in it.
 */
pid_t	entry_salvage_spawn(const char *path, const char *dir,
	    size_t map_bytes, const struct entry_rules *, time_t now,
	    int *fd);
int	entry_salvage_result(int wstatus, int fd,
	    struct entry_salvage_count *cnt, char *why, size_t whylen);
int	entry_salvage_forked(const char *path, const char *dir,
	    size_t map_bytes, const struct entry_rules *, time_t now,
	    struct entry_salvage_count *cnt, char *why, size_t whylen);

#endif
