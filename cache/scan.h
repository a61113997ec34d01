/* SPDX-License-Identifier: Apache-2.0 */
/* A raw scan of a damaged data.mdb: the records its leaf and overflow pages still hold, without LMDB's trees. */
#ifndef CACHE_SCAN_H
#define CACHE_SCAN_H

#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>

#include "cache/record.h"

/*
 * cache_scan reads a data.mdb with pread only (no map, no LMDB), page by
 * page: a page whose header carries its own number and says leaf, with
 * node offsets and sizes inside the page, gives its records; anything
 * else (branch pages, free pages, noise) is skipped. A value kept in
 * overflow pages is found through its node, and taken only when the
 * overflow page names itself and the value fits in the file. So a damaged
 * branch page costs nothing, and a damaged leaf costs the records on it.
 *
 * The databases are told apart by their records, not by the tree a page
 * belongs to (that is what a damaged branch loses): a key of kind byte
 * (1..4) and key whose value is RECORD_META_BYTES and decodes as a meta
 * of that kind is a meta; one whose value decodes as a body (or, in
 * overflow pages, starts as one) is a body; a key "pool/..." is a pool record of
 * aux; the rest (the due index's empty values, the free list, the main
 * database's names) is left. Freed pages still hold older copies of
 * records, so one key may be found more than once: the caller judges
 * each copy.
 */

enum cache_scan_what {
	CACHE_SCAN_META,
	CACHE_SCAN_BODY,
	CACHE_SCAN_POOL,	/* aux "pool/<sha256>": the key is the name */
};

/* One record found: its key (owned) and where its value lies in the file. */
struct cache_scan_rec {
	uint8_t		*key;		/* meta, body: the key without the kind byte */
	uint16_t	 klen;
	uint8_t		 kind;		/* 1..CACHE_KIND_SLOTS; 0 for a pool record */
	uint8_t		 what;		/* enum cache_scan_what */
	off_t		 off;		/* the value's first byte */
	uint32_t	 len;
};

struct cache_scan {
	int			 fd;
	off_t			 size;
	size_t			 psize;
	size_t			 pages;		/* in the file */
	size_t			 leaf_pages;	/* read as leaf pages */
	size_t			 skipped_nodes;	/* out of bounds on a leaf page */
	struct cache_scan_rec	*rec;
	size_t			 n, cap;
};

/*
 * Scan the file at path into s: every record found, sorted by kind, key
 * and what (so a meta and its body sit together). The page size is the
 * meta pages' (either may be damaged), else the system's. 0, or -1 with
 * `why` (the file cannot be opened or read, or out of memory); a file
 * that holds nothing readable is 0 with s->n 0. Free with
 * cache_scan_free, which accepts a zeroed struct.
 */
int	cache_scan(struct cache_scan *s, const char *path, char *why,
	    size_t whylen);
void	cache_scan_free(struct cache_scan *s);
/*
 * The value of r into a malloc'd buffer (*buf, r->len bytes). 0, or -1
 * (read error or short file). Bytes read again from the file: a value
 * the scan found may still be anything, and is judged by the caller.
 */
int	cache_scan_value(const struct cache_scan *s,
	    const struct cache_scan_rec *r, uint8_t **buf);

#endif
