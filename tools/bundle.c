/* SPDX-License-Identifier: Apache-2.0 */
/* Reading and writing stapled bundles (docs/bundle.md): JSON Lines, read one line at a time and sealed by the trailer. */
#include "config.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include "attest/b64.h"
#include "attest/der.h"
#include "attest/util.h"
#include "cache/record.h"
#include "entry/entry.h"
#include "entry/kinds.h"
#include "entry/kind.h"
#include "tools/bundle.h"

struct bundle_writer {
	FILE		*out;
	EVP_MD_CTX	*md;
	size_t		 entries;
	int		 failed;
};

const char *
bundle_status_name(enum cache_kind kind, int status)
{
	return kind_status_name(kind, status);
}

/* ---- small codecs ---------------------------------------------------- */

long
bundle_unhex(const char *s, uint8_t *out, size_t outlen)
{
	size_t	n = strlen(s);

	if (n == 0 || n % 2 != 0 || n / 2 > outlen ||
	    util_unhex(s, n, out, n / 2) == -1)
		return -1;
	return (long)(n / 2);
}

void
bundle_time_str(char buf[32], int64_t t)
{
	entry_time_str(buf, t);
}

/* Strict RFC 3339 in UTC with a Z, which is all this writer emits. */
int
bundle_time_parse(const char *s, int64_t *t)
{
	struct tm	tm;
	int		y, mo, d, h, mi, sec, n = 0;

	if (strlen(s) != 20 || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2dZ%n", &y, &mo,
	    &d, &h, &mi, &sec, &n) != 6 || n != 20)
		return -1;
	if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 ||
	    sec > 60)
		return -1;
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	*t = (int64_t)timegm(&tm);
	return 0;
}

/*
 * Strict standard base64 with padding (RFC 4648 4), as the writer emits
 * it: no whitespace. "" decodes to nothing: *out is NULL and *outlen 0.
 */
static int
bundle_b64(const char *s, size_t n, uint8_t **out, size_t *outlen)
{
	*out = NULL;
	*outlen = 0;
	if (n == 0)
		return 0;
	if (strcspn(s, " \t\r\n") < n)
		return -1;
	return (*out = b64_decode(s, n, outlen)) == NULL ? -1 : 0;
}

static char *
b64_encode(const uint8_t *buf, size_t len)
{
	char	*s;

	if (len > RECORD_MAX_BLOB_BYTES)
		return NULL;
	if ((s = malloc((len + 2) / 3 * 4 + 1)) == NULL)
		return NULL;
	EVP_EncodeBlock((unsigned char *)s, buf, (int)len);
	return s;
}

/* ---- reading --------------------------------------------------------- */

struct rd {
	size_t	 line;
	char	*err;
	size_t	 errlen;
};

static int	rd_fail(struct rd *, const char *, ...)
		    __attribute__((format(printf, 2, 3)));

static int
rd_fail(struct rd *r, const char *fmt, ...)
{
	va_list	ap;
	int	n = 0;

	if (r->line > 0)
		n = snprintf(r->err, r->errlen, "line %zu: ", r->line);
	if (n < 0 || (size_t)n >= r->errlen)
		return -1;
	va_start(ap, fmt);
	vsnprintf(r->err + n, r->errlen - n, fmt, ap);
	va_end(ap);
	return -1;
}

/* A member that must be a string, or NULL with the error set. */
static const char *
rd_str(struct rd *r, json_t *o, const char *name, int required)
{
	json_t	*v = json_object_get(o, name);

	if (v == NULL) {
		if (required)
			rd_fail(r, "%s: missing", name);
		return NULL;
	}
	if (!json_is_string(v)) {
		rd_fail(r, "%s: must be a string", name);
		return NULL;
	}
	return json_string_value(v);
}

static int
rd_blob(struct rd *r, json_t *o, const char *name, int required,
    uint8_t **out, size_t *outlen)
{
	json_t	*v = json_object_get(o, name);

	*out = NULL;
	*outlen = 0;
	if (v == NULL)
		return required ? rd_fail(r, "%s: missing", name) : 0;
	if (!json_is_string(v))
		return rd_fail(r, "%s: must be a base64 string", name);
	if (bundle_b64(json_string_value(v), json_string_length(v), out,
	    outlen) == -1)
		return rd_fail(r, "%s: not base64", name);
	if (*outlen > RECORD_MAX_BLOB_BYTES) {
		free(*out);
		*out = NULL;
		return rd_fail(r, "%s: %zu bytes, over the %u-byte limit", name,
		    *outlen, RECORD_MAX_BLOB_BYTES);
	}
	if (required && *outlen == 0)
		return rd_fail(r, "%s: empty", name);
	return 0;
}

static int
rd_time(struct rd *r, json_t *o, const char *name, int64_t *t)
{
	json_t	*v = json_object_get(o, name);

	*t = 0;
	if (v == NULL)
		return 0;
	if (json_is_integer(v)) {
		*t = json_integer_value(v);
		return 0;
	}
	if (!json_is_string(v) || bundle_time_parse(json_string_value(v), t) == -1)
		return rd_fail(r, "%s: not an RFC 3339 UTC time", name);
	return 0;
}

static int
rd_header(struct rd *r, json_t *o, struct bundle *b)
{
	const char	*s;
	json_t		*v;

	if ((s = rd_str(r, o, "format", 0)) == NULL ||
	    strcmp(s, BUNDLE_FORMAT) != 0)
		return rd_fail(r, "not a stapled bundle (no \"format\": \"%s\" "
		    "header)", BUNDLE_FORMAT);
	v = json_object_get(o, "version");
	if (!json_is_integer(v))
		return rd_fail(r, "version: missing or not an integer");
	if (json_integer_value(v) != BUNDLE_VERSION)
		return rd_fail(r, "unsupported bundle version %lld (this reader "
		    "knows version %d)", (long long)json_integer_value(v),
		    BUNDLE_VERSION);
	b->version = BUNDLE_VERSION;
	if (rd_time(r, o, "created", &b->created) == -1)
		return -1;
	if ((s = rd_str(r, o, "generator", 0)) != NULL)
		snprintf(b->generator, sizeof(b->generator), "%s", s);
	return 0;
}

static int
rd_entry(struct rd *r, json_t *o, struct bundle_entry *e)
{
	const char	*s;
	json_t		*v;
	long		 n;

	memset(e, 0, sizeof(*e));
	e->line = r->line;
	e->status = -1;
	if ((s = rd_str(r, o, "kind", 1)) == NULL)
		return -1;
	if (strlen(s) == 0 || strlen(s) >= sizeof(e->kind_name))
		return rd_fail(r, "kind: not a kind name");
	snprintf(e->kind_name, sizeof(e->kind_name), "%s", s);
	e->kind = kind_by_name(s);
	if ((s = rd_str(r, o, "key", 1)) == NULL)
		return -1;
	if ((n = bundle_unhex(s, e->key, sizeof(e->key))) <= 0)
		return rd_fail(r, "key: not 1..%d bytes of hex",
		    CACHE_KEY_MAX_BYTES);
	e->klen = (size_t)n;
	if (rd_blob(r, o, "request", 0, &e->request, &e->request_len) == -1 ||
	    rd_blob(r, o, "response", 1, &e->response, &e->response_len) == -1 ||
	    rd_blob(r, o, "headers", 0, &e->headers, &e->headers_len) == -1)
		return -1;
	if (rd_time(r, o, "this_update", &e->this_update) == -1 ||
	    rd_time(r, o, "next_update", &e->next_update) == -1 ||
	    rd_time(r, o, "produced_at", &e->produced_at) == -1)
		return -1;
	v = json_object_get(o, "status");
	if (json_is_integer(v))
		e->status = (int)json_integer_value(v);
	else if (json_is_string(v)) {
		e->status = kind_status_by_name(e->kind,
		    json_string_value(v));
		if (e->status == -1)
			return rd_fail(r, "status: \"%s\" is not a status of "
			    "kind %s", json_string_value(v), e->kind_name);
	} else if (v != NULL)
		return rd_fail(r, "status: must be a string or an integer");
	if ((s = rd_str(r, o, "source", 0)) != NULL)
		snprintf(e->source, sizeof(e->source), "%s", s);
	return 0;
}

static int
rd_cert(struct rd *r, json_t *o, struct bundle_cert *c)
{
	X509		*x;
	const char	*why;

	c->line = r->line;
	if (rd_blob(r, o, "der", 1, &c->der, &c->len) == -1)
		return -1;
	if (c->len > BUNDLE_MAX_CERT_BYTES)
		return rd_fail(r, "der: %zu bytes, over %d", c->len,
		    BUNDLE_MAX_CERT_BYTES);
	/* attest's rule: exactly one certificate, its unsigned bytes intact. */
	if ((x = der_x509(c->der, c->len, &why)) == NULL)
		return rd_fail(r, "der: not one DER certificate: %s", why);
	X509_free(x);
	return 0;
}

/* ---- the line reader ---------------------------------------------------- */

#define RD_CHUNK_BYTES	65536

struct bundle_reader {
	FILE		*in;
	FILE		*copy;		/* every byte read, when set */
	EVP_MD_CTX	*md;		/* over every line before the trailer */
	struct rd	 r;
	char		 chunk[RD_CHUNK_BYTES];
	size_t		 cpos, clen;
	char		*line;		/* the current line, NUL-terminated */
	size_t		 len, cap;
	int		 crlf;		/* some line ended in "\r\n" */
	int		 ended;		/* the trailer was read */
	struct bundle	 info;		/* header, counts and digest; no lines */
};

/* Room for n bytes in br->line, doubling up to the line limit. */
static int
rd_grow_line(struct bundle_reader *br, size_t n)
{
	size_t	 nc = br->cap == 0 ? 4096 : br->cap;
	char	*p;

	while (nc < n)
		nc *= 2;
	if (nc > BUNDLE_MAX_LINE_BYTES + 1)
		nc = BUNDLE_MAX_LINE_BYTES + 1;
	if ((p = realloc(br->line, nc)) == NULL)
		return -1;
	br->line = p;
	br->cap = nc;
	return 0;
}

/* The current line and its '\n' into the seal's digest. */
static int
rd_digest(struct bundle_reader *br)
{
	if (EVP_DigestUpdate(br->md, br->line, br->len) != 1 ||
	    EVP_DigestUpdate(br->md, "\n", 1) != 1)
		return rd_fail(&br->r, "out of memory");
	return 0;
}

static int
rd_fill(struct bundle_reader *br)
{
	br->cpos = 0;
	br->clen = fread(br->chunk, 1, sizeof(br->chunk), br->in);
	if (br->clen == 0)
		return ferror(br->in) ? rd_fail(&br->r, "read error") : 0;
	if (br->copy != NULL &&
	    fwrite(br->chunk, 1, br->clen, br->copy) != br->clen)
		return rd_fail(&br->r, "cannot keep a copy of the input");
	return 1;
}

/*
 * The next line into br->line (without its '\n'): 1, 0 at the end of the
 * input, -1 (said). A NUL byte, a line over BUNDLE_MAX_LINE_BYTES or a
 * last line without its '\n' fails as soon as it is seen.
 */
static int
rd_line(struct bundle_reader *br)
{
	const char	*nl, *p;
	size_t		 n, take;
	int		 rc;

	br->len = 0;
	br->r.line++;
	for (;;) {
		if (br->cpos == br->clen) {
			if ((rc = rd_fill(br)) == -1)
				return -1;
			if (rc == 0) {
				if (br->len == 0)
					return 0;
				return rd_fail(&br->r, "truncated: the file does "
				    "not end with a newline");
			}
		}
		p = br->chunk + br->cpos;
		n = br->clen - br->cpos;
		nl = memchr(p, '\n', n);
		take = nl != NULL ? (size_t)(nl - p) : n;
		if (memchr(p, '\0', take) != NULL)
			return rd_fail(&br->r, "not a text file (NUL byte)");
		if (br->len + take > BUNDLE_MAX_LINE_BYTES)
			return rd_fail(&br->r, "over the %zu-byte line limit",
			    BUNDLE_MAX_LINE_BYTES);
		if (br->len + take + 1 > br->cap && rd_grow_line(br,
		    br->len + take + 1) == -1)
			return rd_fail(&br->r, "out of memory");
		memcpy(br->line + br->len, p, take);
		br->len += take;
		br->line[br->len] = '\0';
		br->cpos += take + (nl != NULL);
		if (nl != NULL)
			break;
	}
	if (br->len > 0 && br->line[br->len - 1] == '\r')
		br->crlf = 1;
	return 1;
}

/* ---- a line's JSON ----------------------------------------------------- */

#define RD_FAST_KEY_BYTES	64	/* longer member names: jansson's */
#define RD_FAST_DIGITS		18	/* longer integers: jansson's (int64) */

static size_t
rd_ws(const char *s, size_t len, size_t i)
{
	while (i < len && s[i] == ' ')
		i++;
	return i;
}

/* A string's end (its closing '"'), for text with no escapes; len when none. */
static size_t
rd_str_end(const char *s, size_t len, size_t i)
{
	const char	*q = memchr(s + i, '"', len - i);

	return q != NULL ? (size_t)(q - s) : len;
}

/* An integer at s[i] as JSON writes one, into *v; the index after it, or 0. */
static size_t
rd_fast_int(const char *s, size_t len, size_t i, json_t **v)
{
	char	 buf[RD_FAST_DIGITS + 2];
	size_t	 k = i;

	if (k < len && s[k] == '-')
		k++;
	if (k >= len || s[k] < '0' || s[k] > '9' ||
	    (s[k] == '0' && k + 1 < len && s[k + 1] >= '0' && s[k + 1] <= '9'))
		return 0;
	while (k < len && s[k] >= '0' && s[k] <= '9')
		k++;
	/* a fraction or an exponent is a real: jansson's to parse */
	if (k - i > RD_FAST_DIGITS || (k < len && s[k] != ' ' && s[k] != ',' &&
	    s[k] != '}'))
		return 0;
	memcpy(buf, s + i, k - i);
	buf[k - i] = '\0';
	*v = json_integer((json_int_t)strtoll(buf, NULL, 10));
	return *v != NULL ? k : 0;
}

/* One member at s[i] into o; the index after it, or 0. */
static size_t
rd_fast_member(const char *s, size_t len, size_t i, json_t *o)
{
	char	 key[RD_FAST_KEY_BYTES];
	json_t	*v = NULL;
	size_t	 k;

	if (i >= len || s[i] != '"')
		return 0;
	k = rd_str_end(s, len, ++i);
	if (k >= len || k - i >= sizeof(key))
		return 0;
	memcpy(key, s + i, k - i);
	key[k - i] = '\0';
	i = rd_ws(s, len, k + 1);
	if (i >= len || s[i] != ':')
		return 0;
	i = rd_ws(s, len, i + 1);
	if (i < len && s[i] == '"') {
		if ((k = rd_str_end(s, len, ++i)) >= len ||
		    (v = json_stringn_nocheck(s + i, k - i)) == NULL)
			return 0;
		i = k + 1;
	} else if ((i = rd_fast_int(s, len, i, &v)) == 0)
		return 0;
	/* a name given twice: jansson's to refuse */
	if (json_object_get(o, key) != NULL) {
		json_decref(v);
		return 0;
	}
	return json_object_set_new(o, key, v) == 0 ? i : 0;
}

/*
 * The line as bundle_writer writes it, parsed here: one flat object of
 * string and integer members, printable ASCII with no escapes. NULL for
 * any other line, which json_loadb parses (or refuses) instead. jansson's
 * lexer takes some 140 instructions a byte, and a line is mostly base64
 * read twice by verify and import: a fifth of what they do beside the
 * signatures.
 */
static json_t *
rd_fast(const char *s, size_t len)
{
	json_t	*o;
	size_t	 i;
	int	 first = 1;

	for (i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e ||
		    s[i] == '\\')
			return NULL;
	i = rd_ws(s, len, 0);
	if (i >= len || s[i] != '{' || (o = json_object()) == NULL)
		return NULL;
	for (i = rd_ws(s, len, i + 1);; i = rd_ws(s, len, i)) {
		if (i < len && s[i] == '}') {
			i++;
			break;
		}
		if (!first && (i >= len || s[i++] != ','))
			goto no;
		first = 0;
		if ((i = rd_fast_member(s, len, rd_ws(s, len, i), o)) == 0)
			goto no;
	}
	if (rd_ws(s, len, i) == len)
		return o;
 no:
	json_decref(o);
	return NULL;
}

json_t *
bundle_line_json(const char *line, size_t len, json_error_t *je)
{
	json_t	*o;

	if ((o = rd_fast(line, len)) != NULL)
		return o;
	return json_loadb(line, len, JSON_REJECT_DUPLICATES, je);
}

/* The trailer, whose digest is of every line before it, then nothing after. */
static int
rd_end(struct bundle_reader *br, json_t *o)
{
	struct rd	*r = &br->r;
	const char	*s;
	json_t		*v;
	uint8_t		 md[32], want[32];
	unsigned	 mdlen;

	if ((s = rd_str(r, o, "sha256", 1)) == NULL)
		return -1;
	if (strlen(s) != 64 || strspn(s, "0123456789abcdef") != 64 ||
	    bundle_unhex(s, want, sizeof(want)) != 32)
		return rd_fail(r, "sha256: not 64 lower-case hex digits");
	if (EVP_DigestFinal_ex(br->md, md, &mdlen) != 1 ||
	    memcmp(md, want, sizeof(md)) != 0)
		return rd_fail(r, "corrupt: the SHA-256 of the preceding bytes "
		    "does not match the trailer's%s", br->crlf ? " (its lines "
		    "end in CRLF: was it converted in transit?)" : "");
	memcpy(br->info.sha256, md, sizeof(md));
	v = json_object_get(o, "entries");
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return rd_fail(r, "entries: missing or not a count");
	if ((size_t)json_integer_value(v) != br->info.nentries)
		return rd_fail(r, "the trailer counts %lld entries, the file "
		    "holds %zu", (long long)json_integer_value(v),
		    br->info.nentries);
	switch (rd_line(br)) {
	case -1:
		return -1;
	case 1:
		return rd_fail(r, "a line after the \"end\" trailer");
	}
	br->ended = 1;
	return 0;
}

struct bundle_reader *
bundle_reader_new(FILE *in, FILE *copy, char *err, size_t errlen)
{
	struct bundle_reader	*br;
	json_error_t		 je;
	json_t			*o = NULL;
	int			 rc;

	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if ((br = calloc(1, sizeof(*br))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	br->in = in;
	br->copy = copy;
	br->r.err = err;
	br->r.errlen = errlen;
	if ((br->md = EVP_MD_CTX_new()) == NULL ||
	    EVP_DigestInit_ex(br->md, EVP_sha256(), NULL) != 1) {
		rd_fail(&br->r, "out of memory");
		goto fail;
	}
	/* The header first, so an unknown version is named as such. */
	if ((rc = rd_line(br)) != 1) {
		if (rc == 0) {
			br->r.line = 0;
			rd_fail(&br->r, "empty file");
		}
		goto fail;
	}
	o = bundle_line_json(br->line, br->len, &je);
	if (o == NULL || !json_is_object(o)) {
		rd_fail(&br->r, "not a stapled bundle (the first line is not a "
		    "JSON object)");
		goto fail;
	}
	if (rd_header(&br->r, o, &br->info) == -1 || rd_digest(br) == -1)
		goto fail;
	json_decref(o);
	return br;
 fail:
	json_decref(o);
	bundle_reader_free(br);
	return NULL;
}

int
bundle_reader_next(struct bundle_reader *br, struct bundle_entry *e,
    struct bundle_cert *c, char *err, size_t errlen)
{
	struct rd	*r = &br->r;
	json_error_t	 je;
	json_t		*o = NULL;
	const char	*type;
	int		 rc, rv = -1;

	r->err = err;
	r->errlen = errlen;
	if (err != NULL && errlen > 0)
		err[0] = '\0';
	memset(e, 0, sizeof(*e));
	memset(c, 0, sizeof(*c));
	if (br->ended)
		return BUNDLE_END;
	for (;;) {
		if ((rc = rd_line(br)) == -1)
			goto out;
		if (rc == 0) {
			r->line--;
			rd_fail(r, "truncated: the last line is not the \"end\" "
			    "trailer");
			goto out;
		}
		o = bundle_line_json(br->line, br->len, &je);
		if (o == NULL || !json_is_object(o)) {
			rd_fail(r, "not a JSON object (%s)", o == NULL ?
			    je.text : "another JSON value");
			goto out;
		}
		if ((type = rd_str(r, o, "type", 1)) == NULL)
			goto out;
		if (strcmp(type, "end") == 0) {
			if (rd_end(br, o) == -1)
				goto out;
			rv = BUNDLE_END;
			goto out;
		}
		if (rd_digest(br) == -1)
			goto out;
		if (strcmp(type, "entry") == 0) {
			if (rd_entry(r, o, e) == -1)
				goto out;
			br->info.nentries++;
			rv = BUNDLE_ENTRY;
			goto out;
		}
		if (strcmp(type, "cert") == 0) {
			if (rd_cert(r, o, c) == -1)
				goto out;
			br->info.ncerts++;
			rv = BUNDLE_CERT;
			goto out;
		}
		if (strcmp(type, "header") == 0) {
			rd_fail(r, "a second \"header\" line");
			goto out;
		}
		br->info.nunknown++;	/* a later writer's: ignored */
		json_decref(o);
		o = NULL;
	}
 out:
	json_decref(o);
	if (rv == -1) {
		bundle_entry_clear(e);
		bundle_cert_clear(c);
	}
	return rv;
}

const struct bundle *
bundle_reader_info(const struct bundle_reader *br)
{
	return &br->info;
}

void
bundle_reader_free(struct bundle_reader *br)
{
	if (br == NULL)
		return;
	EVP_MD_CTX_free(br->md);
	free(br->line);
	free(br);
}

void
bundle_entry_clear(struct bundle_entry *e)
{
	if (e == NULL)
		return;
	free(e->request);
	free(e->response);
	free(e->headers);
	e->request = e->response = e->headers = NULL;
	e->request_len = e->response_len = e->headers_len = 0;
}

void
bundle_entry_set_meta(struct bundle_entry *e, const struct cache_meta *m,
    const char *source)
{
	snprintf(e->source, sizeof(e->source), "%s", source);
	e->this_update = m->this_update;
	e->next_update = m->next_update;
	e->produced_at = m->produced_at;
	e->status = m->status;
}

void
bundle_cert_clear(struct bundle_cert *c)
{
	if (c == NULL)
		return;
	free(c->der);
	c->der = NULL;
	c->len = 0;
}

/* ---- a whole bundle in memory -------------------------------------------- */

static int
grow(void **arr, size_t *cap, size_t n, size_t size)
{
	void	*p;
	size_t	 nc;

	if (n < *cap)
		return 0;
	nc = *cap == 0 ? 64 : *cap * 2;
	if ((p = realloc(*arr, nc * size)) == NULL)
		return -1;
	*arr = p;
	*cap = nc;
	return 0;
}

int
bundle_parse(const uint8_t *buf, size_t len, struct bundle *b, char *err,
    size_t errlen)
{
	struct bundle_reader	*br = NULL;
	struct bundle_entry	 e;
	struct bundle_cert	 c;
	FILE			*f = NULL;
	size_t			 ecap = 0, ccap = 0;
	int			 rc, rv = -1;

	memset(b, 0, sizeof(*b));
	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if (len == 0) {
		snprintf(err, errlen, "empty file");
		return -1;
	}
	if ((f = fmemopen((void *)(uintptr_t)buf, len, "r")) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if ((br = bundle_reader_new(f, NULL, err, errlen)) == NULL)
		goto out;
	while ((rc = bundle_reader_next(br, &e, &c, err, errlen)) != BUNDLE_END) {
		if (rc == -1)
			goto out;
		if (rc == BUNDLE_ENTRY && grow((void **)&b->entries, &ecap,
		    b->nentries, sizeof(*b->entries)) == 0)
			b->entries[b->nentries++] = e;
		else if (rc == BUNDLE_CERT && grow((void **)&b->certs, &ccap,
		    b->ncerts, sizeof(*b->certs)) == 0)
			b->certs[b->ncerts++] = c;
		else {
			bundle_entry_clear(&e);
			bundle_cert_clear(&c);
			snprintf(err, errlen, "out of memory");
			goto out;
		}
	}
	b->version = br->info.version;
	b->created = br->info.created;
	memcpy(b->generator, br->info.generator, sizeof(b->generator));
	b->nunknown = br->info.nunknown;
	memcpy(b->sha256, br->info.sha256, sizeof(b->sha256));
	rv = 0;
 out:
	bundle_reader_free(br);
	fclose(f);
	if (rv == -1)
		bundle_free(b);
	return rv;
}

void
bundle_free(struct bundle *b)
{
	size_t	i;

	if (b == NULL)
		return;
	for (i = 0; i < b->nentries; i++) {
		free(b->entries[i].request);
		free(b->entries[i].response);
		free(b->entries[i].headers);
	}
	for (i = 0; i < b->ncerts; i++)
		free(b->certs[i].der);
	free(b->entries);
	free(b->certs);
	memset(b, 0, sizeof(*b));
}

/* ---- writing ----------------------------------------------------------- */

/* One object, compact, members in insertion order, then '\n'; o is consumed. */
static int
wr_line(struct bundle_writer *w, json_t *o)
{
	char	*s = NULL;
	size_t	 n;
	int	 rv = -1;

	if (w->failed || o == NULL)
		goto out;
	if ((s = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII)) == NULL)
		goto out;
	n = strlen(s);
	if (fwrite(s, 1, n, w->out) != n || fputc('\n', w->out) == EOF)
		goto out;
	if (EVP_DigestUpdate(w->md, s, n) != 1 ||
	    EVP_DigestUpdate(w->md, "\n", 1) != 1)
		goto out;
	rv = 0;
 out:
	if (rv == -1)
		w->failed = 1;
	free(s);
	json_decref(o);
	return rv;
}

static int
set_blob(json_t *o, const char *name, const uint8_t *buf, size_t len)
{
	char	*s;
	int	 rv;

	if ((s = b64_encode(buf != NULL ? buf : (const uint8_t *)"", len)) == NULL)
		return -1;
	rv = json_object_set_new(o, name, json_string(s));
	free(s);
	return rv;
}

static int
set_time(json_t *o, const char *name, int64_t t)
{
	char	buf[32];

	bundle_time_str(buf, t);
	return json_object_set_new(o, name, json_string(buf));
}

struct bundle_writer *
bundle_writer_new(FILE *out, time_t created, const char *generator)
{
	struct bundle_writer	*w;
	json_t			*o;

	if ((w = calloc(1, sizeof(*w))) == NULL)
		return NULL;
	w->out = out;
	if ((w->md = EVP_MD_CTX_new()) == NULL ||
	    EVP_DigestInit_ex(w->md, EVP_sha256(), NULL) != 1)
		goto fail;
	o = json_object();
	if (o == NULL ||
	    json_object_set_new(o, "type", json_string("header")) == -1 ||
	    json_object_set_new(o, "format", json_string(BUNDLE_FORMAT)) == -1 ||
	    json_object_set_new(o, "version", json_integer(BUNDLE_VERSION)) == -1 ||
	    set_time(o, "created", created) == -1 ||
	    json_object_set_new(o, "generator", json_string(generator)) == -1) {
		json_decref(o);
		goto fail;
	}
	if (wr_line(w, o) == -1)
		goto fail;
	return w;
 fail:
	bundle_writer_free(w);
	return NULL;
}

int
bundle_write_entry(struct bundle_writer *w, const struct bundle_entry *e)
{
	char		 key[2 * CACHE_KEY_MAX_BYTES + 1];
	const char	*kind, *st;
	json_t		*o;

	if (e->kind <= 0 || e->kind >= CACHE_KIND_MAX || e->klen == 0 ||
	    e->klen > CACHE_KEY_MAX_BYTES || e->response_len == 0)
		return -1;
	kind = cache_kind_str[e->kind];
	util_hex(e->key, e->klen, key);
	o = json_object();
	if (o == NULL ||
	    json_object_set_new(o, "type", json_string("entry")) == -1 ||
	    json_object_set_new(o, "kind", json_string(kind)) == -1 ||
	    json_object_set_new(o, "key", json_string(key)) == -1 ||
	    set_blob(o, "request", e->request, e->request_len) == -1 ||
	    set_blob(o, "response", e->response, e->response_len) == -1 ||
	    (e->headers_len > 0 &&
	    set_blob(o, "headers", e->headers, e->headers_len) == -1) ||
	    set_time(o, "this_update", e->this_update) == -1 ||
	    set_time(o, "next_update", e->next_update) == -1 ||
	    (e->produced_at != 0 &&
	    set_time(o, "produced_at", e->produced_at) == -1))
		goto fail;
	if (e->status >= 0) {
		st = bundle_status_name(e->kind, e->status);
		if (json_object_set_new(o, "status", st != NULL ?
		    json_string(st) : json_integer(e->status)) == -1)
			goto fail;
	}
	if (e->source[0] != '\0' &&
	    json_object_set_new(o, "source", json_string(e->source)) == -1)
		goto fail;
	if (wr_line(w, o) == -1)
		return -1;
	w->entries++;
	return 0;
 fail:
	json_decref(o);
	w->failed = 1;
	return -1;
}

int
bundle_write_cert(struct bundle_writer *w, const uint8_t *der, size_t len,
    const char *subject)
{
	json_t	*o;

	if (len == 0 || len > BUNDLE_MAX_CERT_BYTES)
		return -1;
	o = json_object();
	if (o == NULL ||
	    json_object_set_new(o, "type", json_string("cert")) == -1 ||
	    set_blob(o, "der", der, len) == -1 ||
	    (subject != NULL &&
	    json_object_set_new(o, "subject", json_string(subject)) == -1)) {
		json_decref(o);
		w->failed = 1;
		return -1;
	}
	return wr_line(w, o);
}

int
bundle_writer_end(struct bundle_writer *w)
{
	uint8_t		md[32];
	char		hex[65], line[160];
	unsigned	mdlen;
	int		n;

	if (w->failed || EVP_DigestFinal_ex(w->md, md, &mdlen) != 1)
		return -1;
	util_hex(md, sizeof(md), hex);
	/* Written by hand: it is not part of what it seals. */
	n = snprintf(line, sizeof(line),
	    "{\"type\":\"end\",\"entries\":%zu,\"sha256\":\"%s\"}\n",
	    w->entries, hex);
	if (n < 0 || (size_t)n >= sizeof(line) ||
	    fwrite(line, 1, (size_t)n, w->out) != (size_t)n ||
	    fflush(w->out) == EOF || ferror(w->out)) {
		w->failed = 1;
		return -1;
	}
	return 0;
}

size_t
bundle_writer_entries(const struct bundle_writer *w)
{
	return w->entries;
}

void
bundle_writer_free(struct bundle_writer *w)
{
	if (w == NULL)
		return;
	EVP_MD_CTX_free(w->md);
	free(w);
}
