/* SPDX-License-Identifier: Apache-2.0 */
/* What tools/staplectl_manifest.c shares with fetch and prefetch: the inputs read from the command line, and a manifest read back. */
#ifndef TOOLS_STAPLECTL_MANIFEST_H
#define TOOLS_STAPLECTL_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "attest/keyset.h"
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
/* One OCSP record of a manifest, as fetch asks it. */
struct listed {
	uint8_t		*raw;		/* its request, DER (owned); NULL: refused */
	size_t		 rawlen;
	int		 hash;		/* of all its CertIDs (enum evidence_hash), or -1 */
	int		 single;	/* one CertID: restated in the other hashes */
};

/*
 * A manifest read back for fetch, a value at a time (attest/json_stream.h):
 * memory grows with its records (their requests, about 150 bytes each),
 * never with the text's tree. Members other than these are passed over.
 */
#define MANIFEST_MAX_ELEMENT_BYTES	65536	/* one record, RIM ID, cert or path */
struct manifest_in {
	struct listed	*ocsp;		/* "ocsp", in order (refused ones too) */
	size_t		 nocsp, capocsp;
	struct keyset	 serials;	/* (hash, first serial) of each record */
	uint8_t		**cert;		/* "certs", decoded */
	size_t		*certlen;
	size_t		 ncerts, capcerts;
	json_t		*coll;		/* {"pccs": [...], "kds": [...]} */
};

/*
 * The manifest at path ("-": standard input) into m (its RIM IDs) and in
 * (zeroed first; manifest_in_free it in both cases). A record that does
 * not parse is said and kept as refused. A CTL_* code, said why: the
 * file cannot be opened (CTL_NOFILE), or is not a version-1 manifest or
 * not JSON ("PATH: line 7: ...", CTL_REJECTED).
 */
int	read_manifest(const char *path, struct evidence_manifest *m,
	    struct manifest_in *in);
void	manifest_in_free(struct manifest_in *);
/* Does the manifest hold a record whose first CertID has this serial, in hash hh? 1 or 0. */
int	manifest_listed_as(const struct manifest_in *, const uint8_t *serial,
	    size_t serial_len, unsigned hh);
/* The manifest's "certs" into t's pool, those that chain; others said. */
void	manifest_cas(struct ctl *ctl, struct ctl_trust *t,
	    const struct manifest_in *in, const char *path);

#endif
