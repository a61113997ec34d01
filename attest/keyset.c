/* SPDX-License-Identifier: Apache-2.0 */
/* A set of SHA-256 digests with a number each (attest/keyset.h). */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "attest/util.h"
#include "attest/keyset.h"

int
keyset_md(uint8_t md[KEYSET_MD_BYTES], const void *const part[],
    const size_t len[], size_t n)
{
	EVP_MD_CTX	*c;
	uint8_t		 pfx[8];
	size_t		 i, k;
	int		 ok;

	if ((c = EVP_MD_CTX_new()) == NULL)
		return -1;
	ok = EVP_DigestInit_ex(c, util_sha256(), NULL) == 1;
	for (i = 0; ok && i < n; i++) {
		for (k = 0; k < sizeof(pfx); k++)
			pfx[k] = (uint8_t)((uint64_t)len[i] >> (56 - 8 * k));
		ok = EVP_DigestUpdate(c, pfx, sizeof(pfx)) == 1 &&
		    (len[i] == 0 || EVP_DigestUpdate(c, part[i], len[i]) == 1);
	}
	ok = ok && EVP_DigestFinal_ex(c, md, NULL) == 1;
	EVP_MD_CTX_free(c);
	return ok ? 0 : -1;
}

/* The slot of md, or the free slot where it would go. */
static struct keyset_slot *
find(const struct keyset *s, const uint8_t *md)
{
	uint64_t	h;
	size_t		i;

	memcpy(&h, md, sizeof(h));	/* a digest: already spread */
	for (i = (size_t)h & (s->nslots - 1);; i = (i + 1) & (s->nslots - 1))
		if (s->slot[i].val1 == 0 ||
		    memcmp(s->slot[i].md, md, KEYSET_MD_BYTES) == 0)
			return &s->slot[i];
}

/* Slots enough for `members` at three quarters full (at least twice the present ones), every member moved over. 0, or -1. */
static int
grow(struct keyset *s, size_t members)
{
	struct keyset	 n = { NULL, 0, s->n };
	size_t		 i;

	n.nslots = s->nslots == 0 ? KEYSET_FIRST_SLOTS : s->nslots * 2;
	while (n.nslots != 0 && members > n.nslots / 4 * 3)
		n.nslots *= 2;
	if (n.nslots < s->nslots ||
	    (n.slot = calloc(n.nslots, sizeof(*n.slot))) == NULL)
		return -1;
	for (i = 0; i < s->nslots; i++)
		if (s->slot[i].val1 != 0)
			*find(&n, s->slot[i].md) = s->slot[i];
	free(s->slot);
	*s = n;
	return 0;
}

int
keyset_put(struct keyset *s, const uint8_t md[KEYSET_MD_BYTES], size_t val,
    size_t *had)
{
	struct keyset_slot	*p;

	if (val == SIZE_MAX)
		return -1;
	if (s->nslots > 0 && (p = find(s, md))->val1 != 0) {
		if (had != NULL)
			*had = p->val1 - 1;
		return 0;
	}
	if ((s->n + 1) * 4 > s->nslots * 3 && grow(s, s->n + 1) == -1)
		return -1;
	p = find(s, md);
	memcpy(p->md, md, KEYSET_MD_BYTES);
	p->val1 = val + 1;
	s->n++;
	return 1;
}

int
keyset_reserve(struct keyset *s, size_t n)
{
	if (s->n + n < s->n)
		return -1;
	if ((s->n + n) * 4 <= s->nslots * 3)
		return 0;
	return grow(s, s->n + n);
}

int
keyset_get(const struct keyset *s, const uint8_t md[KEYSET_MD_BYTES],
    size_t *val)
{
	const struct keyset_slot	*p;

	if (s->nslots == 0 || (p = find(s, md))->val1 == 0)
		return 0;
	if (val != NULL)
		*val = p->val1 - 1;
	return 1;
}

size_t
keyset_count(const struct keyset *s)
{
	return s->n;
}

void
keyset_free(struct keyset *s)
{
	if (s == NULL)
		return;
	free(s->slot);
	memset(s, 0, sizeof(*s));
}
