/* SPDX-License-Identifier: Apache-2.0 */
/* What tools/staplectl_manifest.c shares with fetch and prefetch: the inputs read from the command line, and a manifest read back. */
#ifndef TOOLS_STAPLECTL_MANIFEST_H
#define TOOLS_STAPLECTL_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "tools/staplectl.h"

struct evidence_manifest;

/*
 * manifest's TDX/SGX quotes and SEV-SNP reports (tools/staplectl_collateral.c),
 * and the RIM IDs named with --rim-id.
 */
struct tee_inputs {
	char		*quotes[CTL_MAX_LIST];
	size_t		 nquotes;
	char		*reports[CTL_MAX_LIST];
	size_t		 nreports;
	const char	*product;
	char		*rim_ids[CTL_MAX_LIST];
	size_t		 nrim_ids;
};

/* A base64 JSON string into malloc'd bytes in *out; 0 or -1. */
int	b64_get(json_t *v, uint8_t **out, size_t *outlen);
/* Every --evidence/--chain file into m: a CTL_* code, said why. */
int	load_inputs(struct evidence_manifest *m, char **files, size_t n);
/* Each --rim-id of tee into m: CTL_OK or CTL_USAGE (said why). */
int	add_rim_ids(struct evidence_manifest *m, const struct tee_inputs *tee);
/* --hash LIST into *hashes: CTL_OK or CTL_USAGE (said why). */
int	hash_opt(const char *arg, unsigned *hashes);
/*
 * manifest's and prefetch's command line (outpath NULL: no --out). 0 to
 * go on, -1 after --help, else the exit code (usage said).
 */
int	input_opts(int argc, char **argv, const char *usage, char **files,
	    size_t *nfiles, const char **outpath, struct tee_inputs *tee,
	    unsigned *hashes);
/* The evidence's CAs into the cache's pool, when the cache is there. */
void	learn_cas(struct ctl *ctl, const struct evidence_manifest *m);
/*
 * The manifest at path into m (its RIM IDs) and *ocsp (its "ocsp"
 * records), the whole of it in *rootp (both owned). A CTL_* code, said why.
 */
int	read_manifest(const char *path, struct evidence_manifest *m,
	    json_t **ocsp, json_t **rootp);
/* The manifest's "certs" into t's pool, those that chain; others said. */
void	manifest_cas(struct ctl *ctl, struct ctl_trust *t, json_t *root,
	    const char *path);

#endif
