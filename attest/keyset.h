/* SPDX-License-Identifier: Apache-2.0 */
/* A set of SHA-256 digests, each with a number: what a run has seen (entries, lines, certificates), found in constant time however long the input. */
#ifndef ATTEST_KEYSET_H
#define ATTEST_KEYSET_H

#include <stddef.h>
#include <stdint.h>

/*
 * Things are told apart by the SHA-256 of what makes them one (a kind
 * and a key; a line's bytes; a hash algorithm and a serial): a digest
 * stands for its bytes, so a set of any size holds 40 bytes a member.
 * Open addressing with linear probes, grown to twice its size at three
 * quarters full. A zeroed struct keyset is an empty set.
 */
#define KEYSET_MD_BYTES		32
#define KEYSET_FIRST_SLOTS	1024	/* a power of two */

struct keyset_slot {
	uint8_t	md[KEYSET_MD_BYTES];
	size_t	val1;		/* the member's number + 1; 0: a free slot */
};

struct keyset {
	struct keyset_slot	*slot;
	size_t			 nslots, n;
};

/*
 * SHA-256 over n pieces, each length-prefixed (so ("ab","c") and
 * ("a","bc") differ), into md. 0, or -1 when OpenSSL fails.
 */
int	keyset_md(uint8_t md[KEYSET_MD_BYTES], const void *const part[],
	    const size_t len[], size_t n);
/*
 * Add md with number val (below SIZE_MAX): 1 when it was new, 0 when it
 * was there (*had, when not NULL, gets the number it came with; the set
 * is unchanged), -1 when out of memory (unchanged).
 */
int	keyset_put(struct keyset *, const uint8_t md[KEYSET_MD_BYTES],
	    size_t val, size_t *had);
/*
 * Room for n more members without growing: after it, that many
 * keyset_put calls cannot fail (for an all-or-nothing update). 0, or -1
 * when out of memory (the set unchanged).
 */
int	keyset_reserve(struct keyset *, size_t n);
/* 1 with *val (when not NULL) if md is a member, else 0. */
int	keyset_get(const struct keyset *, const uint8_t md[KEYSET_MD_BYTES],
	    size_t *val);
size_t	keyset_count(const struct keyset *);
/* Free the slots; the set is empty again. NULL ok. */
void	keyset_free(struct keyset *);

#endif
