/* SPDX-License-Identifier: Apache-2.0 */
/* A manifest from what an operator gives: evidence JSON in its shapes, a PEM, DER or base64 chain, RIM IDs; deduplicated, all or nothing. */
#include "config.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "attest/evidence.h"
#include "attest/evidence_int.h"
#include "attest/b64.h"
#include "attest/der.h"
#include "attest/json_stream.h"
#include "attest/rim.h"

const char *const evidence_chain_type_str[EVIDENCE_CHAIN_TYPE_MAX] = {
	[EVIDENCE_CHAIN_DEVICE] = "device",
	[EVIDENCE_CHAIN_RIM] = "rim",
};

const char *const evidence_kind_str[EVIDENCE_KIND_MAX] = {
	[EVIDENCE_GPU] = "gpu",
	[EVIDENCE_SWITCH] = "nvswitch",
	[EVIDENCE_CHAIN] = "chain",
};

void
seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list	 ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* ---- the manifest ------------------------------------------------------- */

/* One parsed device, not yet in the manifest. */
struct pending {
	struct evidence_device	 dev;
	struct evidence_certid	*ids;
	size_t			 nids;
	STACK_OF(X509)		*chain;
};

static void
pending_free(struct pending *p, size_t n)
{
	size_t	 i;

	if (p == NULL)
		return;
	for (i = 0; i < n; i++) {
		evidence_certids_free(p[i].ids, p[i].nids);
		sk_X509_pop_free(p[i].chain, X509_free);
	}
	free(p);
}

struct evidence_manifest *
evidence_manifest_new(void)
{
	struct evidence_manifest	*m;

	if ((m = calloc(1, sizeof(*m))) != NULL)
		m->hashes = EVIDENCE_HASHES_DEFAULT;
	return m;
}

void
evidence_manifest_free(struct evidence_manifest *m)
{
	size_t	 i;

	if (m == NULL)
		return;
	for (i = 0; i < m->ncertids; i++)
		free(m->certids[i].req);
	for (i = 0; i < m->ncas; i++)
		free(m->ca_der[i]);
	free(m->devices);
	free(m->certids);
	free(m->ca_der);
	free(m->ca_len);
	free(m->rim_ids);
	keyset_free(&m->certid_set);
	keyset_free(&m->ca_set);
	keyset_free(&m->rim_set);
	free(m);
}

static int
grow(void **p, size_t have, size_t more, size_t size)
{
	void	*n;

	if (more == 0)
		return 0;
	if (have + more < have || have + more > SIZE_MAX / size)
		return -1;
	if ((n = realloc(*p, (have + more) * size)) == NULL)
		return -1;
	*p = n;
	return 0;
}

/* SHA-256 of bytes, as the sets of RIM IDs and CAs know them. 0 or -1. */
static int
bytes_md(const void *p, size_t len, uint8_t md[KEYSET_MD_BYTES])
{
	const void	*part[] = { p };

	return keyset_md(md, part, &len, 1);
}

/*
 * A CertID's index in the manifest, or SIZE_MAX. Its key (ocsp_req_key:
 * SHA-256 over the hash OID, issuerNameHash, issuerKeyHash and serial) is
 * what tells two CertIDs apart.
 */
static size_t
find_certid(const struct evidence_manifest *m, const struct evidence_certid *c)
{
	size_t	 i;

	return keyset_get(&m->certid_set, c->key, &i) ? i : SIZE_MAX;
}

/*
 * Move parsed devices into the manifest. Space is reserved first, so
 * once that succeeds nothing can fail and the manifest is never half
 * updated.
 */
static int
commit(struct evidence_manifest *m, struct pending *p, size_t np, char *err,
    size_t errlen)
{
	uint8_t		**ders = NULL, *d, (*camd)[KEYSET_MD_BYTES] = NULL;
	uint8_t		(*rimmd)[KEYSET_MD_BYTES] = NULL;
	size_t		*dlens = NULL, i, j, k, nc = 0, nca = 0, idx;
	int		 l, dl, rv = -1;

	for (i = 0; i < np; i++) {
		nc += p[i].nids;
		nca += (size_t)sk_X509_num(p[i].chain);
	}
	if ((nca > 0 && ((ders = calloc(nca, sizeof(*ders))) == NULL ||
	    (dlens = calloc(nca, sizeof(*dlens))) == NULL ||
	    (camd = calloc(nca, sizeof(*camd))) == NULL)) ||
	    (rimmd = calloc(2 * np, sizeof(*rimmd))) == NULL)
		goto nomem;
	/* DER of the CA certificates: not leaves, not self-signed roots. */
	for (i = 0, k = 0; i < np; i++) {
		for (l = 1; l < sk_X509_num(p[i].chain); l++) {
			X509	*x = sk_X509_value(p[i].chain, l);

			if (X509_check_ca(x) <= 0 || is_self_signed(x))
				continue;
			d = NULL;
			if ((dl = i2d_X509(x, &d)) <= 0)
				goto nomem;
			ders[k] = d;
			dlens[k] = (size_t)dl;
			if (bytes_md(d, dlens[k], camd[k]) == -1)
				goto nomem;
			k++;
		}
		if (bytes_md(p[i].dev.driver_rim_id,
		    strlen(p[i].dev.driver_rim_id), rimmd[2 * i]) == -1 ||
		    bytes_md(p[i].dev.vbios_rim_id,
		    strlen(p[i].dev.vbios_rim_id), rimmd[2 * i + 1]) == -1)
			goto nomem;
	}
	nca = k;
	if (grow((void **)&m->devices, m->ndevices, np,
	    sizeof(*m->devices)) == -1 ||
	    grow((void **)&m->certids, m->ncertids, nc,
	    sizeof(*m->certids)) == -1 ||
	    grow((void **)&m->ca_der, m->ncas, nca, sizeof(*m->ca_der)) == -1 ||
	    grow((void **)&m->ca_len, m->ncas, nca, sizeof(*m->ca_len)) == -1 ||
	    grow((void **)&m->rim_ids, m->nrim_ids, 2 * np,
	    sizeof(*m->rim_ids)) == -1 ||
	    keyset_reserve(&m->certid_set, nc) == -1 ||
	    keyset_reserve(&m->ca_set, nca) == -1 ||
	    keyset_reserve(&m->rim_set, 2 * np) == -1)
		goto nomem;
	m->caprim = m->nrim_ids + 2 * np;

	/* From here on nothing fails. */
	for (i = 0; i < np; i++) {
		struct evidence_device	*dev = &p[i].dev;

		dev->ncertids = 0;
		for (j = 0; j < p[i].nids; j++) {
			if ((idx = find_certid(m, &p[i].ids[j])) == SIZE_MAX) {
				idx = m->ncertids++;
				m->certids[idx] = p[i].ids[j];
				p[i].ids[j].req = NULL;	/* moved */
				(void)keyset_put(&m->certid_set,
				    m->certids[idx].key, idx, NULL);
			}
			dev->certid[dev->ncertids++] = idx;
		}
		if (dev->driver_rim_id[0] != '\0' &&
		    keyset_put(&m->rim_set, rimmd[2 * i], m->nrim_ids, NULL) == 1)
			memcpy(m->rim_ids[m->nrim_ids++], dev->driver_rim_id,
			    EVIDENCE_ID_BYTES);
		if (dev->vbios_rim_id[0] != '\0' && keyset_put(&m->rim_set,
		    rimmd[2 * i + 1], m->nrim_ids, NULL) == 1)
			memcpy(m->rim_ids[m->nrim_ids++], dev->vbios_rim_id,
			    EVIDENCE_ID_BYTES);
		m->devices[m->ndevices++] = *dev;
	}
	for (k = 0; k < nca; k++) {
		if (keyset_put(&m->ca_set, camd[k], m->ncas, NULL) != 1) {
			free(ders[k]);
			ders[k] = NULL;
			continue;
		}
		m->ca_der[m->ncas] = ders[k];
		m->ca_len[m->ncas] = dlens[k];
		m->ncas++;
		ders[k] = NULL;
	}
	rv = 0;
	goto out;
 nomem:
	seterr(err, errlen, "out of memory");
 out:
	if (ders != NULL)
		for (k = 0; k < nca; k++)
			free(ders[k]);
	free(ders);
	free(dlens);
	free(camd);
	free(rimmd);
	ERR_clear_error();
	return rv;
}

/* Fill p from its chain: CertIDs of the chain type, in the manifest's hashes. */
static int
pending_certids(const struct evidence_manifest *m, struct pending *p,
    enum evidence_chain_type type, char *err, size_t errlen)
{
	return sk_certids(type, m->hashes, p->chain, &p->ids, &p->nids, err,
	    errlen);
}

static int
json_str(json_t *o, const char *key, size_t i, const char **out, char *err,
    size_t errlen)
{
	json_t	*v = json_object_get(o, key);

	if (v == NULL) {
		seterr(err, errlen, "evidence[%zu]: no \"%s\"", i, key);
		return -1;
	}
	if (!json_is_string(v)) {
		seterr(err, errlen, "evidence[%zu].%s: not a string", i, key);
		return -1;
	}
	*out = json_string_value(v);
	return 0;
}

/* One evidence object of a JSON array into p. */
static int
parse_object(const struct evidence_manifest *m, json_t *o, size_t i,
    struct pending *p, char *err, size_t errlen)
{
	const char	*arch, *cert, *ev;
	uint8_t		*pem = NULL, *rep = NULL;
	size_t		 pemlen, replen;
	char		 why[200];
	int		 rv = -1;

	if (!json_is_object(o)) {
		seterr(err, errlen, "evidence[%zu]: not an object", i);
		return -1;
	}
	if (json_str(o, "arch", i, &arch, err, errlen) == -1 ||
	    json_str(o, "certificate", i, &cert, err, errlen) == -1 ||
	    json_str(o, "evidence", i, &ev, err, errlen) == -1)
		return -1;
	if (is_gpu_arch(arch))
		p->dev.kind = EVIDENCE_GPU;
	else if (is_switch_arch(arch))
		p->dev.kind = EVIDENCE_SWITCH;
	else {
		seterr(err, errlen, "evidence[%zu].arch: unsupported "
		    "architecture \"%.20s\" (HOPPER, BLACKWELL or LS10)", i,
		    arch);
		return -1;
	}
	snprintf(p->dev.arch, sizeof(p->dev.arch), "%s", arch);
	snprintf(p->dev.source, sizeof(p->dev.source), "evidence[%zu]", i);
	if ((pem = b64_decode(cert, strlen(cert), &pemlen)) == NULL) {
		seterr(err, errlen, "evidence[%zu].certificate: not base64", i);
		goto out;
	}
	if (pem_only((const char *)pem, pemlen, why, sizeof(why)) == -1 ||
	    (p->chain = pem_stack((const char *)pem, pemlen, why,
	    sizeof(why))) == NULL) {
		seterr(err, errlen, "evidence[%zu].certificate: %s", i, why);
		goto out;
	}
	if (pending_certids(m, p, EVIDENCE_CHAIN_DEVICE, why,
	    sizeof(why)) == -1) {
		seterr(err, errlen, "evidence[%zu].certificate: %s", i, why);
		goto out;
	}
	if ((rep = b64_decode(ev, strlen(ev), &replen)) == NULL) {
		seterr(err, errlen, "evidence[%zu].evidence: not base64", i);
		goto out;
	}
	if (evidence_report_ids(arch, rep, replen, &p->dev, why,
	    sizeof(why)) == -1) {
		seterr(err, errlen, "evidence[%zu].evidence: %s", i, why);
		goto out;
	}
	rv = 0;
 out:
	free(pem);
	free(rep);
	return rv;
}

static int	add_b64_chain(struct evidence_manifest *, const char *, size_t,
		    char *, size_t);

/* The devices of one JSON input, parsed an evidence object at a time, committed together. */
struct ev_json {
	struct jstream	*js;
	struct pending	 p[EVIDENCE_MAX_DEVICES];
	size_t		 n;
	json_t		*single;	/* an object's arch, certificate, evidence */
	json_t		*rc;		/* its result_code */
	int		 claims;	/* it has "claims" */
	int		 evidences;	/* its "evidences": 0 absent, '[', 'n' null, '?' other */
};

/* The stream's error as this input's: a value over its cap, or text that is not JSON. */
static int
ev_json_error(struct ev_json *j, const char *what, char *err, size_t errlen)
{
	if (jstream_oversize(j->js))
		seterr(err, errlen, "%s: larger than %d bytes", what,
		    EVIDENCE_MAX_OBJECT_BYTES);
	else
		seterr(err, errlen, "not valid JSON, truncated or corrupt: %s",
		    jstream_error(j->js));
	return -1;
}

/* One evidence object of the array, the next device. 0, or -1 with err set. */
static int
ev_json_object(const struct evidence_manifest *m, struct ev_json *j,
    char *err, size_t errlen)
{
	json_t	*o;
	char	 what[32];
	int	 rv;

	snprintf(what, sizeof(what), "evidence[%zu]", j->n);
	if (j->n == EVIDENCE_MAX_DEVICES) {
		seterr(err, errlen, "more than %d evidence objects",
		    EVIDENCE_MAX_DEVICES);
		return -1;
	}
	if ((o = jstream_value(j->js, EVIDENCE_MAX_OBJECT_BYTES, 0)) == NULL)
		return ev_json_error(j, what, err, errlen);
	rv = parse_object(m, o, j->n, &j->p[j->n], err, errlen);
	j->n++;		/* freed with the rest, whatever came of it */
	json_decref(o);
	return rv;
}

/* An array of evidence objects, read an object at a time. 0, or -1 with err set. */
static int
ev_json_array(const struct evidence_manifest *m, struct ev_json *j,
    char *err, size_t errlen)
{
	int	first = 1, r;

	if (jstream_expect(j->js, '[') == -1)
		return ev_json_error(j, "evidence", err, errlen);
	while ((r = jstream_element(j->js, &first)) == 1)
		if (ev_json_object(m, j, err, errlen) == -1)
			return -1;
	return r == 0 ? 0 : ev_json_error(j, "evidence", err, errlen);
}

/*
 * One member of a top-level object: "evidences" read an object at a
 * time; what the one-object and collect-evidence shapes are told by
 * kept; anything else passed over. 0, or -1 with err set.
 */
static int
ev_json_member(const struct evidence_manifest *m, struct ev_json *j,
    const char *name, char *err, size_t errlen)
{
	json_t	*v;
	int	 c;

	if (strcmp(name, "evidences") == 0) {
		if (j->evidences != 0) {
			seterr(err, errlen, "\"evidences\" given twice");
			return -1;
		}
		if ((c = jstream_peek(j->js)) == '[') {
			j->evidences = '[';
			return ev_json_array(m, j, err, errlen);
		}
		j->evidences = c == 'n' ? 'n' : '?';
	} else if (strcmp(name, "result_code") == 0 ||
	    strcmp(name, "arch") == 0 || strcmp(name, "certificate") == 0 ||
	    strcmp(name, "evidence") == 0) {
		if ((v = jstream_value(j->js, EVIDENCE_MAX_OBJECT_BYTES, 0)) ==
		    NULL)
			return ev_json_error(j, name, err, errlen);
		if (name[0] == 'r') {
			json_decref(j->rc);
			j->rc = v;
		} else if (json_object_set_new(j->single, name, v) == -1) {
			seterr(err, errlen, "out of memory");
			return -1;
		}
		return 0;
	} else if (strcmp(name, "claims") == 0)
		j->claims = 1;
	if (jstream_skip(j->js) == -1)
		return ev_json_error(j, name, err, errlen);
	return 0;
}

/* Which input a top-level object is, by its members: one evidence object, collect-evidence output, or neither. 0, or -1 with err set. */
static int
ev_json_shape(const struct evidence_manifest *m, struct ev_json *j,
    char *err, size_t errlen)
{
	json_t	*rc = j->rc;

	if (j->evidences == 0 && j->claims) {
		seterr(err, errlen, "nvattest attest output: it holds claims "
		    "(what nvattest concluded) and no certificates; give the "
		    "output of `nvattest collect-evidence --format json`, or "
		    "the device's certificate chain (PEM, DER, or the "
		    "evidence's base64 \"certificate\")");
		return -1;
	}
	if (j->evidences == 0 && rc == NULL &&
	    json_object_get(j->single, "certificate") != NULL) {
		/* one evidence object, as one element of the array */
		j->n = 1;
		return parse_object(m, j->single, 0, &j->p[0], err, errlen);
	}
	if (j->evidences == 0 && rc == NULL) {
		seterr(err, errlen, "a JSON object that is neither an evidence "
		    "object (no \"certificate\") nor nvattest collect-evidence "
		    "output (no \"evidences\")");
		return -1;
	}
	/* nvattest collect-evidence --format json */
	if ((rc != NULL && (!json_is_integer(rc) ||
	    json_integer_value(rc) != 0)) || j->evidences == 'n' ||
	    j->evidences == 0) {
		seterr(err, errlen, "nvattest collect-evidence output without "
		    "evidence (result_code %lld)", rc != NULL &&
		    json_is_integer(rc) ? (long long)json_integer_value(rc) :
		    -1LL);
		return -1;
	}
	if (j->evidences != '[') {
		seterr(err, errlen, "not evidence JSON (an array of evidence "
		    "objects, one evidence object, or collect-evidence output)");
		return -1;
	}
	return 0;
}

/* A top-level object, member by member. 0, or -1 with err set. */
static int
ev_json_top_object(const struct evidence_manifest *m, struct ev_json *j,
    char *err, size_t errlen)
{
	char	name[JSTREAM_NAME_BYTES];
	int	first = 1, r;

	if ((j->single = json_object()) == NULL) {
		seterr(err, errlen, "out of memory");
		return -1;
	}
	if (jstream_expect(j->js, '{') == -1)
		return ev_json_error(j, "evidence", err, errlen);
	while ((r = jstream_member(j->js, &first, name)) == 1)
		if (ev_json_member(m, j, name, err, errlen) == -1)
			return -1;
	if (r == -1)
		return ev_json_error(j, "evidence", err, errlen);
	return ev_json_shape(m, j, err, errlen);
}

/*
 * Evidence JSON, read a value at a time (attest/json_stream.h), so that
 * a file at EVIDENCE_MAX_FILE_BYTES costs its bytes and one evidence
 * object's tree, not a tree of the whole: an array of evidence objects,
 * one evidence object, collect-evidence output, or a JSON string (a
 * chain's base64). All or nothing, as every input.
 */
static int
add_json(struct evidence_manifest *m, const uint8_t *buf, size_t len,
    char *err, size_t errlen)
{
	struct ev_json	*j;
	json_t		*str;
	size_t		 i;
	int		 c, rv = -1;

	if ((j = calloc(1, sizeof(*j))) == NULL ||
	    (j->js = jstream_mem(buf, len)) == NULL) {
		free(j);
		seterr(err, errlen, "out of memory");
		return -1;
	}
	if ((c = jstream_peek(j->js)) == '"') {
		/* an evidence's "certificate" on its own, as jq prints it */
		if ((str = jstream_value(j->js, len, 0)) == NULL ||
		    jstream_end(j->js) == -1) {
			json_decref(str);
			ev_json_error(j, "evidence", err, errlen);
			goto out;
		}
		rv = add_b64_chain(m, json_string_value(str),
		    json_string_length(str), err, errlen);
		json_decref(str);
		goto out;
	}
	if ((c == '[' ? ev_json_array(m, j, err, errlen) :
	    ev_json_top_object(m, j, err, errlen)) == -1)
		goto out;
	if (jstream_end(j->js) == -1) {
		ev_json_error(j, "evidence", err, errlen);
		goto out;
	}
	if (j->n == 0) {
		seterr(err, errlen, "an empty array: no evidence");
		goto out;
	}
	if (commit(m, j->p, j->n, err, errlen) == -1)
		goto out;
	rv = (int)j->n;
 out:
	for (i = 0; i < j->n; i++) {
		evidence_certids_free(j->p[i].ids, j->p[i].nids);
		sk_X509_pop_free(j->p[i].chain, X509_free);
	}
	json_decref(j->single);
	json_decref(j->rc);
	jstream_free(j->js);
	free(j);
	return rv;
}

enum chain_form { FORM_PEM, FORM_DER };

/* A bare chain (PEM or concatenated DER) as one device of kind "chain". */
static int
add_chain(struct evidence_manifest *m, enum chain_form form, const char *what,
    const uint8_t *buf, size_t len, char *err, size_t errlen)
{
	struct pending	*p;
	char		 why[200];
	int		 rv = -1;

	if ((p = calloc(1, sizeof(*p))) == NULL) {
		seterr(err, errlen, "out of memory");
		return -1;
	}
	p->dev.kind = EVIDENCE_CHAIN;
	snprintf(p->dev.source, sizeof(p->dev.source), "chain");
	if ((p->chain = form == FORM_PEM ? pem_stack((const char *)buf, len,
	    why, sizeof(why)) : der_chain_stack(buf, len, why, sizeof(why))) ==
	    NULL) {
		seterr(err, errlen, "%s: %s", what, why);
		goto out;
	}
	if (pending_certids(m, p, classify(p->chain), why,
	    sizeof(why)) == -1) {
		seterr(err, errlen, "%s: %s", what, why);
		goto out;
	}
	if (commit(m, p, 1, err, errlen) == -1)
		goto out;
	rv = 1;
 out:
	pending_free(p, 1);
	return rv;
}

static const char	 pem_begin[] = "-----BEGIN CERTIFICATE-----";
static const char	 not_input[] = "neither evidence JSON (an array of "
			    "evidence objects, one evidence object, or nvattest "
			    "collect-evidence output) nor a certificate chain (PEM, "
			    "DER, or base64 of either)";

/* Is this text base64 and whitespace only (what a "certificate" field holds)? */
static int
is_b64_text(const uint8_t *buf, size_t len)
{
	size_t	i, n = 0;

	for (i = 0; i < len; i++) {
		if (isspace(buf[i]))
			continue;
		if (!isalnum(buf[i]) && buf[i] != '+' && buf[i] != '/' &&
		    buf[i] != '=')
			return 0;
		n++;
	}
	return n > 0;
}

/*
 * The base64 of a chain: of its PEM (an evidence's "certificate" field
 * on its own) or of its DER certificates.
 */
static int
add_b64_chain(struct evidence_manifest *m, const char *s, size_t len,
    char *err, size_t errlen)
{
	uint8_t	*raw;
	size_t	 rawlen;
	int	 rv;

	if ((raw = b64_decode(s, len, &rawlen)) == NULL || rawlen == 0) {
		free(raw);
		seterr(err, errlen, "%s", not_input);
		return -1;
	}
	if (memmem(raw, rawlen, pem_begin, sizeof(pem_begin) - 1) != NULL)
		rv = add_chain(m, FORM_PEM, "base64 PEM chain", raw, rawlen, err,
		    errlen);
	else if (raw[0] == DER_SEQUENCE)
		rv = add_chain(m, FORM_DER, "base64 DER chain", raw, rawlen, err,
		    errlen);
	else {
		seterr(err, errlen, "base64 chain: decodes to neither PEM nor "
		    "DER certificates");
		rv = -1;
	}
	free(raw);
	return rv;
}

int
evidence_manifest_add(struct evidence_manifest *m, const uint8_t *buf,
    size_t len, char *err, size_t errlen)
{
	size_t			 i = 0;

	if (m == NULL || buf == NULL || len == 0) {
		seterr(err, errlen, "empty input");
		return -1;
	}
	if (len > EVIDENCE_MAX_FILE_BYTES) {
		seterr(err, errlen, "%zu bytes is more than %d", len,
		    EVIDENCE_MAX_FILE_BYTES);
		return -1;
	}
	/* A DER certificate starts with SEQUENCE and a long-form length. */
	if (len >= 2 && buf[0] == DER_SEQUENCE && (buf[1] & 0x80) != 0)
		return add_chain(m, FORM_DER, "DER chain", buf, len, err,
		    errlen);
	if (len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0)	/* UTF-8 BOM */
		i = 3;
	while (i < len && isspace(buf[i]))
		i++;
	if (i < len && (buf[i] == '[' || buf[i] == '{' || buf[i] == '"'))
		return add_json(m, buf + i, len - i, err, errlen);
	if (memmem(buf, len, pem_begin, sizeof(pem_begin) - 1) != NULL)
		return add_chain(m, FORM_PEM, "PEM chain", buf, len, err,
		    errlen);
	if (is_b64_text(buf + i, len - i))
		return add_b64_chain(m, (const char *)buf + i, len - i, err,
		    errlen);
	seterr(err, errlen, "%s", not_input);
	return -1;
}

int
evidence_manifest_add_chain(struct evidence_manifest *m,
    enum evidence_chain_type type, const uint8_t *const der[],
    const size_t len[], size_t n, char *err, size_t errlen)
{
	struct pending	*p;
	int		 rv = -1;

	if (m == NULL || n > EVIDENCE_MAX_CHAIN_CERTS) {
		seterr(err, errlen, "a chain of %zu certificates (at most %d)",
		    n, EVIDENCE_MAX_CHAIN_CERTS);
		return -1;
	}
	if ((p = calloc(1, sizeof(*p))) == NULL) {
		seterr(err, errlen, "out of memory");
		return -1;
	}
	p->dev.kind = EVIDENCE_CHAIN;
	snprintf(p->dev.source, sizeof(p->dev.source), "%s chain",
	    (unsigned)type < EVIDENCE_CHAIN_TYPE_MAX ?
	    evidence_chain_type_str[type] : "?");
	if ((p->chain = der_stack(der, len, n, err, errlen)) == NULL ||
	    pending_certids(m, p, type, err, errlen) == -1 ||
	    commit(m, p, 1, err, errlen) == -1)
		goto out;
	rv = 0;
 out:
	pending_free(p, 1);
	return rv;
}

int
evidence_manifest_add_rim_id(struct evidence_manifest *m, const char *id)
{
	uint8_t	md[KEYSET_MD_BYTES];
	size_t	more;

	if (m == NULL || !rim_id_valid(id) ||
	    bytes_md(id, strlen(id), md) == -1)
		return -1;
	if (keyset_get(&m->rim_set, md, NULL))
		return 0;
	/* Room grows by half again: a manifest may list many. */
	more = m->nrim_ids < m->caprim ? 0 : m->nrim_ids / 2 + 16;
	if (grow((void **)&m->rim_ids, m->nrim_ids, more,
	    sizeof(*m->rim_ids)) == -1 || keyset_reserve(&m->rim_set, 1) == -1)
		return -1;
	m->caprim += more;
	(void)keyset_put(&m->rim_set, md, m->nrim_ids, NULL);
	memset(m->rim_ids[m->nrim_ids], 0, EVIDENCE_ID_BYTES);
	memcpy(m->rim_ids[m->nrim_ids], id, strlen(id));
	m->nrim_ids++;
	return 0;
}
