/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for cache/scan.c and entry/salvage.c: a raw scan of a real, then damaged, LMDB store, and its records admitted again. */
#include "config.h"

#include <sys/stat.h>

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <openssl/pem.h>
#include <openssl/x509.h>

#include "cache/record.h"
#include "entry/kinds.h"
#include "cache/scan.h"
#include "cache/store.h"
#include "entry/kds.h"
#include "entry/pool.h"
#include "entry/rim.h"
#include "entry/salvage.h"
#include "store_fixture.h"
#include "tv.h"

#define N_ENTRIES	400
#define BODY_BYTES	300
#define BIG_BYTES	20000		/* several overflow pages */
#define PSIZE		4096		/* the test machine's page: LMDB's */
#define T0		1700000000
/* 2025-06-01T00:00:00Z: inside the AMD vectors' windows. */
#define T_2025_06_01	1748736000
#define T_2060		2840140800	/* 2060-01-01: past every AMD vector */
#define MILAN_HWID	"d49554ec717f4e5b0fe6b143bcf0405bd7ae304727edf46603f2a7" \
	"6aef6a3abc15d7af38db757039029f0efacfd08e244324884738c72b082e2f87a44d541eb6"
#define MILAN_QUERY	"blSPL=3&teeSPL=0&snpSPL=8&ucodeSPL=115"
#define NOW_2026	((time_t)1782864000)	/* inside the driver RIM chain's window */
#define DAY_S		86400
#define RIM_KEPT_S	(30 * DAY_S)

/* The response of entry i: its number, then a pattern of it. */
static void
body_bytes(uint8_t *buf, size_t len, unsigned i)
{
	size_t	k;

	for (k = 0; k < len; k++)
		buf[k] = (uint8_t)(i * 31 + k * 7);
	memcpy(buf, &i, sizeof(i));
}

/* N_ENTRIES OCSP-kind entries of BODY_BYTES, and entry N_ENTRIES with BIG_BYTES: bytes no rule admits. */
static void
fill(struct cache *c)
{
	struct cache_meta	m;
	struct cache_body	b;
	uint8_t			key[CACHE_KEY_MAX_BYTES], *resp;
	unsigned		i;
	size_t			klen, len;

	assert_non_null(resp = malloc(BIG_BYTES));
	for (i = 0; i <= N_ENTRIES; i++) {
		len = i == N_ENTRIES ? BIG_BYTES : BODY_BYTES;
		klen = store_key(key, i);
		store_meta(&m, CACHE_KIND_OCSP, T0 + i);
		m.next_update = T_2025_06_01 + 365 * 86400;	/* not expired: refused */
		body_bytes(resp, len, i);
		memset(&b, 0, sizeof(b));
		b.response = resp;
		b.response_len = len;
		assert_int_equal(cache_put(c, key, klen, &m, &b), CACHE_PUT_STORED);
	}
	free(resp);
}

static void
data_path(const struct store_fixture *f, char *path, size_t len)
{
	snprintf(path, len, "%s/data.mdb", f->dir);
}

/* Which of the entries the scan found with a meta and a body that decode to what was stored. */
static unsigned
found_whole(const struct cache_scan *s, uint8_t seen[N_ENTRIES + 1])
{
	struct cache_meta	 m;
	struct cache_body	 b;
	uint8_t			*v, want[BIG_BYTES];
	unsigned		 i, n = 0;
	size_t			 k;

	memset(seen, 0, N_ENTRIES + 1);
	for (k = 0; k < s->n; k++) {
		const struct cache_scan_rec	*r = &s->rec[k];

		if (r->kind != CACHE_KIND_OCSP || r->klen != 10 ||
		    sscanf((const char *)r->key + 4, "%6u", &i) != 1 ||
		    i > N_ENTRIES)
			continue;
		assert_int_equal(cache_scan_value(s, r, &v), 0);
		if (r->what == CACHE_SCAN_META) {
			assert_int_equal(record_meta_decode(v, r->len, &m), 0);
			assert_int_equal(m.this_update, T0 + i);
			seen[i] |= 1;
		} else if (r->what == CACHE_SCAN_BODY) {
			/*
			 * Noise inside an overflow value is not the scan's to
			 * see: the body's checksum refuses it.
			 */
			if (record_body_decode(v, r->len, &b) == -1) {
				free(v);
				continue;
			}
			body_bytes(want, b.response_len, i);
			if (b.response_len == (i == N_ENTRIES ? BIG_BYTES :
			    BODY_BYTES) && memcmp(b.response, want,
			    b.response_len) == 0)
				seen[i] |= 2;
		}
		free(v);
	}
	for (i = 0; i <= N_ENTRIES; i++)
		n += seen[i] == 3;
	return n;
}

/* Overwrite page p of the file with noise from seed. */
static void
noise_page(const char *path, size_t p, unsigned seed)
{
	uint8_t	buf[PSIZE];
	size_t	k;
	int	fd;

	srand(seed);
	for (k = 0; k < sizeof(buf); k++)
		buf[k] = (uint8_t)rand();
	assert_true((fd = open(path, O_WRONLY)) != -1);
	assert_int_equal(pwrite(fd, buf, sizeof(buf), (off_t)(p * PSIZE)),
	    (ssize_t)sizeof(buf));
	close(fd);
}

/* The pages of the file whose header says branch and carries their own number. */
static size_t
branch_pages(const char *path, size_t *out, size_t max)
{
	struct stat	st;
	uint8_t		hdr[16];
	uint64_t	pgno;
	uint16_t	flags;
	size_t		p, n = 0;
	int		fd;

	assert_true((fd = open(path, O_RDONLY)) != -1);
	assert_int_equal(fstat(fd, &st), 0);
	for (p = 2; p < (size_t)st.st_size / PSIZE && n < max; p++) {
		assert_int_equal(pread(fd, hdr, sizeof(hdr), (off_t)(p * PSIZE)),
		    (ssize_t)sizeof(hdr));
		memcpy(&pgno, hdr, sizeof(pgno));
		memcpy(&flags, hdr + 10, sizeof(flags));
		if (pgno == p && (flags & 0x01) != 0)
			out[n++] = p;
	}
	close(fd);
	return n;
}

/* A sound store: every entry found, meta and body, the big one from its overflow pages. */
static void
test_sound(void **state)
{
	struct store_fixture	*f = *state;
	struct cache_scan	 s;
	uint8_t			 seen[N_ENTRIES + 1];
	char			 path[400], why[256];

	fill(f->c);
	cache_close(f->c);
	f->c = NULL;
	data_path(f, path, sizeof(path));
	assert_int_equal(cache_scan(&s, path, why, sizeof(why)), 0);
	assert_int_equal(s.psize, PSIZE);
	assert_int_equal(found_whole(&s, seen), N_ENTRIES + 1);
	assert_int_equal(seen[N_ENTRIES], 3);	/* the overflow value, whole */
	cache_scan_free(&s);
}

/* Every branch page damaged: the cursor walk fails, the scan still finds every leaf. */
static void
test_branch_damaged(void **state)
{
	struct store_fixture	*f = *state;
	struct cache_scan	 s;
	uint8_t			 seen[N_ENTRIES + 1];
	size_t			 br[64], n, i;
	char			 path[400], why[256];

	fill(f->c);
	cache_close(f->c);
	f->c = NULL;
	data_path(f, path, sizeof(path));
	n = branch_pages(path, br, 64);
	assert_true(n > 0);
	for (i = 0; i < n; i++)
		noise_page(path, br[i], 7 + (unsigned)i);
	assert_int_equal(cache_check_forked(f->dir, why, sizeof(why)), 1);
	assert_int_equal(cache_scan(&s, path, why, sizeof(why)), 0);
	assert_int_equal(found_whole(&s, seen), N_ENTRIES + 1);
	cache_scan_free(&s);
}

/* Noise pages are skipped; the rest is found; a file of noise only gives nothing. */
static void
test_noise(void **state)
{
	struct store_fixture	*f = *state;
	struct cache_scan	 s;
	struct stat		 st;
	uint8_t			 seen[N_ENTRIES + 1];
	size_t			 pages, p;
	char			 path[400], why[256];
	unsigned		 got;

	fill(f->c);
	cache_close(f->c);
	f->c = NULL;
	data_path(f, path, sizeof(path));
	assert_int_equal(stat(path, &st), 0);
	pages = (size_t)st.st_size / PSIZE;
	/* Both metas and every tenth page. */
	for (p = 0; p < pages; p += p < 2 ? 1 : 10)
		noise_page(path, p, 100 + (unsigned)p);
	assert_int_equal(cache_scan(&s, path, why, sizeof(why)), 0);
	assert_int_equal(s.psize, PSIZE);	/* the system's, with both metas gone */
	got = found_whole(&s, seen);
	assert_true(got > N_ENTRIES / 2 && got < N_ENTRIES + 1);
	cache_scan_free(&s);
	/* Noise in every page, and a file shorter than a page. */
	for (p = 0; p < pages; p++)
		noise_page(path, p, 1000 + (unsigned)p);
	assert_int_equal(cache_scan(&s, path, why, sizeof(why)), 0);
	assert_int_equal(found_whole(&s, seen), 0);
	cache_scan_free(&s);
	assert_int_equal(truncate(path, 100), 0);
	assert_int_equal(cache_scan(&s, path, why, sizeof(why)), 0);
	assert_int_equal(s.n, 0);
	cache_scan_free(&s);
	assert_int_equal(cache_scan(&s, "/nonexistent/data.mdb", why,
	    sizeof(why)), -1);
	assert_non_null(strstr(why, "nonexistent"));
	cache_scan_free(&s);
}

/* A KDS entry (request, key) for the canonical form of path?query. */
struct kds_ent {
	char		path[KDS_PATH_MAX];
	uint8_t		key[CACHE_KEY_MAX_BYTES];
	size_t		klen;
	uint8_t		*resp;
	size_t		resp_len;
};

static void
kds_ent(struct kds_ent *e, const char *path, const char *query,
    const char *vector)
{
	struct kds_req	 r;
	const char	*why;
	char		 rel[TV_REL_BYTES];
	int		 status;

	assert_int_equal(kds_parse_request(path, query, &r, &why, &status), 0);
	assert_int_equal(kds_canon(&r, e->path, sizeof(e->path)), 0);
	assert_int_equal(kds_key(&r, e->key, &e->klen), 0);
	snprintf(rel, sizeof(rel), "/tests/vectors/amd/%s", vector);
	e->resp = tv_src(rel, &e->resp_len);
}

static void
kds_put(struct cache *c, const struct kds_ent *e, uint16_t flags,
    const char *source)
{
	struct cache_meta	m;
	struct cache_body	b;

	store_meta(&m, CACHE_KIND_KDS, T_2025_06_01 - 86400);
	m.next_update = T_2025_06_01 + 86400;
	m.flags = flags;
	snprintf(m.source, sizeof(m.source), "%s", source);
	m.served_count = 5;
	memset(&b, 0, sizeof(b));
	b.request = (const uint8_t *)e->path;
	b.request_len = strlen(e->path);
	b.response = e->resp;
	b.response_len = e->resp_len;
	assert_int_equal(cache_put(c, e->key, e->klen, &m, &b), CACHE_PUT_STORED);
}

/*
 * Flip one byte of every copy of `needle` in the file: a page copied on
 * write leaves the old copy in a free page, which the scan finds too.
 */
static void
alter_in_file(const char *path, const uint8_t *needle, size_t len)
{
	uint8_t	*buf, *hit, *at;
	size_t	 n;

	buf = tv_file(path, &n);
	assert_non_null(memmem(buf, n, needle, len));
	for (at = buf; (hit = memmem(at, n - (size_t)(at - buf), needle, len)) !=
	    NULL; at = hit + len)
		hit[len / 2] ^= 0x01;
	assert_int_equal(truncate(path, 0), 0);
	{
		FILE	*fp = fopen(path, "r+b");

		assert_non_null(fp);
		assert_int_equal(fwrite(buf, 1, n, fp), n);
		fclose(fp);
	}
	free(buf);
}

/*
 * Re-admission: the Milan cert_chain (in overflow pages) and a VCEK
 * checked against it are carried with their flags and source; the chain
 * filed under another key, the same VCEK with a byte altered, and
 * everything at a time past its window are refused.
 */
static void
test_readmit(void **state)
{
	struct store_fixture		*f = *state;
	struct entry_rules	 rules;
	struct entry_salvage_count	 cnt;
	struct kds_ent			 chain, vcek, swapped;
	struct cache_meta		 m;
	struct cache_body		 b;
	struct cache			*to;
	char				 path[400], dir2[400], why[256];

	memset(&rules, 0, sizeof(rules));
	assert_non_null(rules.trust[CACHE_KIND_OCSP] = ocsp_trust_new());
	kds_ent(&chain, "/vcek/v1/Milan/cert_chain", NULL, "cert_chain_milan");
	kds_ent(&vcek, "/vcek/v1/Milan/" MILAN_HWID, MILAN_QUERY,
	    "vcek_milan.der");
	kds_put(f->c, &chain, CACHE_F_IMPORTED, "import:site.jsonl");
	kds_put(f->c, &vcek, 0, "amd-kds");
	/* The chain's genuine entry filed under the CRL's key: refused. */
	kds_ent(&swapped, "/vcek/v1/Milan/crl", NULL, "cert_chain_milan");
	memcpy(swapped.path, chain.path, sizeof(chain.path));
	kds_put(f->c, &swapped, 0, "amd-kds");
	fill(f->c);	/* and entries that verify as nothing */
	cache_close(f->c);
	f->c = NULL;
	data_path(f, path, sizeof(path));
	snprintf(dir2, sizeof(dir2), "%s/new", f->tmp);

	to = store_open_ok(dir2, 0, 0);
	assert_int_equal(entry_salvage(path, to, &rules, T_2025_06_01, &cnt,
	    why, sizeof(why)), 0);
	assert_int_equal(cnt.found, N_ENTRIES + 1 + 3);
	assert_int_equal(cnt.carried, 2);
	assert_int_equal(cnt.refused, N_ENTRIES + 1 + 1);
	assert_non_null(strstr(cnt.refusal, ": "));	/* "KIND: reason" */
	assert_int_equal(cache_get(to, CACHE_KIND_KDS, swapped.key,
	    swapped.klen, &m, &b), 0);
	assert_int_equal(cache_get(to, CACHE_KIND_KDS, chain.key, chain.klen, &m,
	    &b), 1);
	assert_int_equal(b.response_len, chain.resp_len);
	assert_memory_equal(b.response, chain.resp, chain.resp_len);
	assert_true((m.flags & CACHE_F_IMPORTED) != 0);
	assert_string_equal(m.source, "import:site.jsonl");
	assert_int_equal(m.served_count, 5);
	assert_int_equal(m.next_refresh_at, 0);
	assert_int_equal(cache_get(to, CACHE_KIND_KDS, vcek.key, vcek.klen, &m,
	    &b), 1);
	assert_memory_equal(b.response, vcek.resp, vcek.resp_len);
	assert_true((m.flags & CACHE_F_IMPORTED) == 0);
	assert_string_equal(m.source, "amd-kds");
	cache_close(to);

	/* Out of every vector's window (the metas' times do not count): nothing is carried. */
	snprintf(dir2, sizeof(dir2), "%s/late", f->tmp);
	to = store_open_ok(dir2, 0, 0);
	assert_int_equal(entry_salvage(path, to, &rules, T_2060, &cnt, why,
	    sizeof(why)), 0);
	assert_int_equal(cnt.carried, 0);
	assert_int_equal(cnt.expired + cnt.refused, N_ENTRIES + 1 + 3);
	cache_close(to);

	/* One byte of the VCEK's DER altered in the file: refused, the chain still carried. */
	alter_in_file(path, vcek.resp + 200, 32);
	snprintf(dir2, sizeof(dir2), "%s/altered", f->tmp);
	to = store_open_ok(dir2, 0, 0);
	assert_int_equal(entry_salvage(path, to, &rules, T_2025_06_01, &cnt,
	    why, sizeof(why)), 0);
	assert_int_equal(cnt.carried, 1);
	assert_int_equal(cache_get(to, CACHE_KIND_KDS, vcek.key, vcek.klen, &m,
	    &b), 0);
	assert_int_equal(cache_get(to, CACHE_KIND_KDS, chain.key, chain.klen, &m,
	    &b), 1);
	cache_close(to);

	/* The same through a forked child writing into its own environment. */
	snprintf(dir2, sizeof(dir2), "%s/forked", f->tmp);
	cache_close(store_open_ok(dir2, 0, 0));
	assert_int_equal(entry_salvage_forked(path, dir2, 0, &rules,
	    T_2025_06_01, &cnt, why, sizeof(why)), 0);
	assert_int_equal(cnt.carried, 1);
	to = store_open_ok(dir2, 0, 1);
	assert_int_equal(cache_get(to, CACHE_KIND_KDS, chain.key, chain.klen, &m,
	    &b), 1);
	cache_close(to);

	free(chain.resp);
	free(vcek.resp);
	free(swapped.resp);
	ocsp_trust_free(rules.trust[CACHE_KIND_OCSP]);
}

/*
 * Pool certificates: an NVIDIA device chain's CAs (which chain to the
 * pinned root) are carried, each once and under its DER's name (a copy
 * filed under another name too); its leaf (no CA) and bytes that are no
 * certificate are not.
 */
static void
test_pool(void **state)
{
	struct store_fixture		*f = *state;
	struct entry_rules	 rules;
	struct entry_salvage_count	 cnt;
	struct cache			*to;
	const uint8_t			*der[8];
	uint8_t				*pem, *d[8], junk[200];
	char				 path[400], dir2[400], why[256];
	char				 name[ENTRY_POOL_NAME_BYTES];
	size_t				 len[8], n = 0, i, pemlen;
	int				 ok[8], admitted = 0;
	BIO				*bio;
	X509				*x;

	pem = tv_src("/tests/vectors/nvidia/captured/h100-a-device-chain.pem",
	    &pemlen);
	assert_non_null(bio = BIO_new_mem_buf(pem, (int)pemlen));
	while (n < 8 && (x = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL) {
		int	l = i2d_X509(x, NULL);
		uint8_t	*p;

		assert_true(l > 0);
		assert_non_null(p = d[n] = malloc((size_t)l));
		assert_int_equal(i2d_X509(x, &p), l);
		der[n] = d[n];
		len[n++] = (size_t)l;
		X509_free(x);
	}
	BIO_free(bio);
	free(pem);
	assert_true(n >= 3);
	for (i = 0; i < n; i++)
		assert_int_equal(entry_pool_put(f->c, der[i], len[i]), 1);
	/* A CA's DER under the leaf's name; junk under a name of its own digest. */
	assert_int_equal(entry_pool_name(der[0], len[0], name), 0);
	name[sizeof(name) - 2] = name[sizeof(name) - 2] == '0' ? '1' : '0';
	assert_int_equal(cache_aux_put(f->c, name, der[n - 1], len[n - 1]), 0);
	memset(junk, 0x5a, sizeof(junk));
	assert_int_equal(entry_pool_put(f->c, junk, sizeof(junk)), 1);
	cache_close(f->c);
	f->c = NULL;

	/* What the pool's rule admits of the chain, asked directly. */
	memset(&rules, 0, sizeof(rules));
	assert_non_null(rules.trust[CACHE_KIND_OCSP] = ocsp_trust_new());
	assert_true(ocsp_trust_add_builtin_anchors(rules.trust[CACHE_KIND_OCSP]) > 0);
	assert_true(ocsp_trust_chaining_cas(rules.trust[CACHE_KIND_OCSP], der, len, n, ok) >= 0);
	for (i = 0; i < n; i++)
		admitted += ok[i];
	assert_true(admitted >= 1 && (size_t)admitted < n);
	ocsp_trust_free(rules.trust[CACHE_KIND_OCSP]);

	assert_non_null(rules.trust[CACHE_KIND_OCSP] = ocsp_trust_new());
	assert_true(ocsp_trust_add_builtin_anchors(rules.trust[CACHE_KIND_OCSP]) > 0);
	data_path(f, path, sizeof(path));
	snprintf(dir2, sizeof(dir2), "%s/new", f->tmp);
	to = store_open_ok(dir2, 0, 0);
	assert_int_equal(entry_salvage(path, to, &rules, time(NULL), &cnt, why,
	    sizeof(why)), 0);
	assert_int_equal(cnt.pool, (size_t)admitted);
	assert_int_equal(entry_pool_count(to), (size_t)admitted);
	for (i = 0; i < n; i++) {
		uint8_t	*v;
		size_t	 vl;

		assert_int_equal(entry_pool_name(der[i], len[i], name), 0);
		assert_int_equal(cache_aux_get(to, name, &v, &vl), ok[i]);
		if (ok[i]) {
			assert_memory_equal(v, der[i], len[i]);
			free(v);
		}
	}
	cache_close(to);
	ocsp_trust_free(rules.trust[CACHE_KIND_OCSP]);
	for (i = 0; i < n; i++)
		free(d[i]);
}

/*
 * A RIM: carried valid for the retention from its fetch (the meta's, not
 * the salvage's time), its KeyInfo CAs learned into the new store's pool;
 * past the retention from that fetch it is dropped as expired.
 */
static void
test_rim(void **state)
{
	struct store_fixture		*f = *state;
	struct entry_rules	 rules;
	struct entry_salvage_count	 cnt;
	struct cache_meta		 m;
	struct cache_body		 b;
	struct cache			*to;
	char				 path[400], dir2[400], why[256];
	char				 req[ENTRY_RIM_PATH_BYTES], *json;
	const time_t			 fetched = NOW_2026 - 10 * DAY_S;

	json = tv_rim_envelope(TV_RIM_DRIVER_ID, TV_RIM_DRIVER_XML);
	assert_int_equal(entry_rim_path(TV_RIM_DRIVER_ID, strlen(TV_RIM_DRIVER_ID), req), 0);
	store_meta(&m, CACHE_KIND_RIM, fetched);
	m.next_update = fetched + RIM_KEPT_S;
	memset(&b, 0, sizeof(b));
	b.request = (const uint8_t *)req;
	b.request_len = strlen(req);
	b.response = (const uint8_t *)json;
	b.response_len = strlen(json);
	assert_int_equal(cache_put(f->c, (const uint8_t *)TV_RIM_DRIVER_ID,
	    strlen(TV_RIM_DRIVER_ID), &m, &b), CACHE_PUT_STORED);
	cache_close(f->c);
	f->c = NULL;
	data_path(f, path, sizeof(path));

	memset(&rules, 0, sizeof(rules));
	assert_non_null(rules.trust[CACHE_KIND_OCSP] = ocsp_trust_new());
	assert_true(ocsp_trust_add_builtin_anchors(rules.trust[CACHE_KIND_OCSP]) > 0);
	assert_non_null(rules.trust[CACHE_KIND_RIM] = rim_trust_new());
	assert_int_equal(rim_trust_add_builtin(rules.trust[CACHE_KIND_RIM]), 0);
		snprintf(dir2, sizeof(dir2), "%s/new", f->tmp);
	to = store_open_ok(dir2, 0, 0);
	assert_int_equal(entry_salvage(path, to, &rules, NOW_2026, &cnt, why,
	    sizeof(why)), 0);
	assert_int_equal(cnt.carried, 1);
	assert_int_equal(cache_get(to, CACHE_KIND_RIM, (const uint8_t *)TV_RIM_DRIVER_ID,
	    strlen(TV_RIM_DRIVER_ID), &m, &b), 1);
	assert_int_equal(m.this_update, fetched);
	assert_int_equal(m.next_update, fetched + RIM_KEPT_S);
	assert_int_equal(b.response_len, strlen(json));
	assert_memory_equal(b.response, json, b.response_len);
	/* The chain's two CAs under the CoRIM root, as the RIM route learns them. */
	assert_int_equal(entry_pool_count(to), 2);
	cache_close(to);

	snprintf(dir2, sizeof(dir2), "%s/late", f->tmp);
	to = store_open_ok(dir2, 0, 0);
	assert_int_equal(entry_salvage(path, to, &rules,
	    fetched + RIM_KEPT_S + 1, &cnt, why, sizeof(why)), 0);
	assert_int_equal(cnt.carried, 0);
	assert_int_equal(cnt.expired, 1);
	cache_close(to);
	rim_trust_free(rules.trust[CACHE_KIND_RIM]);
	ocsp_trust_free(rules.trust[CACHE_KIND_OCSP]);
	free(json);
}

int
main(void)
{
	const struct CMUnitTest	tests[] = {
		cmocka_unit_test_setup_teardown(test_sound, store_setup_open,
		    store_teardown),
		cmocka_unit_test_setup_teardown(test_branch_damaged,
		    store_setup_open, store_teardown),
		cmocka_unit_test_setup_teardown(test_noise, store_setup_open,
		    store_teardown),
		cmocka_unit_test_setup_teardown(test_readmit, store_setup_open,
		    store_teardown),
		cmocka_unit_test_setup_teardown(test_pool, store_setup_open,
		    store_teardown),
		cmocka_unit_test_setup_teardown(test_rim, store_setup_open,
		    store_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
