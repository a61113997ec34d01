/* SPDX-License-Identifier: Apache-2.0 */
/* verify --manifest: which of a manifest's entries a bundle holds. */
#ifndef TOOLS_STAPLECTL_COVER_H
#define TOOLS_STAPLECTL_COVER_H

#include <stddef.h>

#include <jansson.h>

#include "attest/keyset.h"
#include "tools/staplectl.h"

/*
 * The entries a manifest names, as fetch asks them: each RIM ID, each
 * OCSP record as it is listed (not the other hashes fetch restates it
 * in, nor the CertIDs of a RIM's chain), each pccs and kds path. Each
 * is found by the digest of its kind and key; a zeroed struct is empty.
 */
struct cover_want {
	char	*name;		/* the RIM ID, "serial=HEX", the path */
	int	 kind;		/* enum cache_kind */
	int	 found;
};
struct cover {
	const char		*path;
	struct cover_want	*want;
	size_t			 n, cap, nfound;
	struct keyset		 index;		/* (kind, key) to its want */
};

/*
 * The manifest at path into c. CTL_OK, or read_manifest's code (said);
 * a record that does not parse is said and is not wanted.
 */
int	cover_load(struct cover *, const char *path);
/* A bundle entry that verified: the manifest's entry it is, found. */
void	cover_mark(struct cover *, enum cache_kind, const uint8_t *key,
	    size_t klen);
/*
 * What the bundle lacks: a summary on stderr and, with verbose COVER_NAME,
 * one line a missing entry on stdout ("lacking rim NV_..."; COVER_COUNT:
 * the summary says -v would; COVER_JSON: named in cover_json's array).
 * Returns how many.
 */
enum { COVER_COUNT, COVER_NAME, COVER_JSON };
size_t	cover_report(const struct cover *, const char *bundle, int verbose);
/* --json: what the bundle lacks, [{"kind": ..., "name": ...}]; NULL when out of memory. */
json_t	*cover_json(const struct cover *);
void	cover_free(struct cover *);

#endif
