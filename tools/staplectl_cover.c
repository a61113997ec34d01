/* SPDX-License-Identifier: Apache-2.0 */
/* verify --manifest: which of a manifest's entries a bundle holds, and which it lacks. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "attest/evidence.h"
#include "attest/keyset.h"
#include "attest/ocsp_req.h"
#include "attest/util.h"
#include "cache/store.h"
#include "tools/staplectl.h"
#include "tools/staplectl_cover.h"
#include "tools/staplectl_manifest.h"

/* The digest an entry is found by: its kind and key, as the bundle's entry has them. */
static int
cover_md(enum cache_kind kind, const uint8_t *key, size_t klen,
    uint8_t md[KEYSET_MD_BYTES])
{
	const void	*part[] = { cache_kind_str[kind], key };
	size_t		 len[] = { strlen(cache_kind_str[kind]), klen };

	return keyset_md(md, part, len, 2);
}

/* One wanted entry; a second one of the same kind and key is the first. 0, or -1 (out of memory). */
static int
cover_add(struct cover *c, enum cache_kind kind, const uint8_t *key,
    size_t klen, const char *name)
{
	struct cover_want	*w;
	uint8_t			 md[KEYSET_MD_BYTES];
	size_t			 nc;
	int			 r;

	if (c->n == c->cap) {
		nc = c->cap == 0 ? CTL_ENTRIES_FIRST : c->cap * 2;
		if ((w = reallocarray(c->want, nc, sizeof(*w))) == NULL)
			return -1;
		c->want = w;
		c->cap = nc;
	}
	if (cover_md(kind, key, klen, md) == -1 ||
	    (r = keyset_put(&c->index, md, c->n, NULL)) == -1)
		return -1;
	if (r == 0)
		return 0;
	w = &c->want[c->n];
	w->kind = kind;
	w->found = 0;
	if ((w->name = strdup(name)) == NULL)
		return -1;	/* the set's member points past n: never found */
	c->n++;
	return 0;
}

/* The manifest's OCSP records as listed, named by their first serial. 0, or -1. */
static int
cover_ocsp(struct cover *c, const struct manifest_in *in)
{
	struct ocsp_req	 req;
	const char	*why;
	uint8_t		 key[OCSP_KEY_BYTES];
	char		 name[8 + 2 * EVIDENCE_MAX_SERIAL_BYTES + 32], *p;
	size_t		 i;

	for (i = 0; i < in->nocsp; i++) {
		if (in->ocsp[i].raw == NULL || ocsp_req_parse(in->ocsp[i].raw,
		    in->ocsp[i].rawlen, &req, &why) == -1)
			continue;	/* said as it was read */
		ocsp_req_key(&req, key);
		/* As list names it: "serial=1002 sha256". */
		memcpy(name, "serial=", 7);
		if (req.certids[0].serial_len > EVIDENCE_MAX_SERIAL_BYTES)
			name[7] = '\0';
		else
			util_hex(req.certids[0].serial,
			    req.certids[0].serial_len, name + 7);
		p = name + strlen(name);
		*p++ = ' ';
		evidence_req_hash_name(&req, p, sizeof(name) - (p - name));
		if (cover_add(c, CACHE_KIND_OCSP, key, sizeof(key), name) == -1)
			return -1;
	}
	return 0;
}

/* The pccs or kds paths of the manifest (kind says which). 0, or -1. */
static int
cover_paths(struct cover *c, json_t *coll, enum cache_kind kind)
{
	uint8_t		 key[CACHE_KEY_MAX_BYTES];
	size_t		 i, klen;
	json_t		*v;
	const char	*s;

	json_array_foreach(json_object_get(coll, cache_kind_str[kind]), i, v) {
		if ((s = json_string_value(v)) == NULL ||
		    kind_table[kind]->request_key((const uint8_t *)s, strlen(s),
		    key, &klen) == -1)
			continue;	/* fetch says why */
		if (cover_add(c, kind, key, klen, s) == -1)
			return -1;
	}
	return 0;
}

int
cover_load(struct cover *c, const char *path)
{
	struct evidence_manifest *m;
	struct manifest_in	 in;
	size_t			 i;
	int			 rv;

	c->path = path;
	if ((m = evidence_manifest_new()) == NULL) {
		ctl_warnx("%s: out of memory", path);
		return CTL_REJECTED;
	}
	if ((rv = read_manifest(path, m, &in)) != CTL_OK)
		goto out;
	rv = CTL_REJECTED;
	for (i = 0; i < m->nrim_ids; i++)
		if (cover_add(c, CACHE_KIND_RIM, (const uint8_t *)m->rim_ids[i],
		    strlen(m->rim_ids[i]), m->rim_ids[i]) == -1)
			goto oom;
	if (cover_ocsp(c, &in) == -1 ||
	    cover_paths(c, in.coll, CACHE_KIND_PCCS) == -1 ||
	    cover_paths(c, in.coll, CACHE_KIND_KDS) == -1)
		goto oom;
	rv = CTL_OK;
	goto out;
 oom:
	ctl_warnx("%s: out of memory", path);
 out:
	manifest_in_free(&in);
	evidence_manifest_free(m);
	return rv;
}

void
cover_mark(struct cover *c, enum cache_kind kind, const uint8_t *key,
    size_t klen)
{
	uint8_t	md[KEYSET_MD_BYTES];
	size_t	i;

	if (c->path == NULL || cover_md(kind, key, klen, md) == -1 ||
	    keyset_get(&c->index, md, &i) != 1 || i >= c->n ||
	    c->want[i].found)
		return;
	c->want[i].found = 1;
	c->nfound++;
}

size_t
cover_report(const struct cover *c, const char *bundle, int verbose)
{
	size_t	i;

	if (verbose == COVER_NAME)
		for (i = 0; i < c->n; i++)
			if (!c->want[i].found)
				printf("lacking %s %s\n",
				    cache_kind_str[c->want[i].kind],
				    c->want[i].name);
	fprintf(stderr, "staplectl: %s: lacks %zu of the %zu entries %s "
	    "names%s\n", bundle, c->n - c->nfound, c->n, c->path,
	    c->n > c->nfound && verbose == COVER_COUNT ? " (-v names them)" :
	    "");
	return c->n - c->nfound;
}

json_t *
cover_json(const struct cover *c)
{
	json_t	*a;
	size_t	 i;

	if ((a = json_array()) == NULL)
		return NULL;
	for (i = 0; i < c->n; i++)
		if (!c->want[i].found)
			json_array_append_new(a, json_pack("{s:s, s:s}", "kind",
			    cache_kind_str[c->want[i].kind], "name",
			    c->want[i].name));
	return a;
}

void
cover_free(struct cover *c)
{
	size_t	i;

	for (i = 0; i < c->n; i++)
		free(c->want[i].name);
	free(c->want);
	keyset_free(&c->index);
	memset(c, 0, sizeof(*c));
}
