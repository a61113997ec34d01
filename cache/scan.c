/* SPDX-License-Identifier: Apache-2.0 */
/* The raw scan of a damaged data.mdb (cache/scan.h): leaf pages and their overflow values, read with pread and bounds-checked. */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/lmdb_disk.h"
#include "cache/scan.h"
#include "cache/store.h"
#include "cache/store_int.h"

/*
 * LMDB's on-disk page (mdb.c, MDB_page and MDB_node, in the host's byte
 * order): a 16-byte header, pgno (8), pad (2), flags (2), lower (2),
 * upper (2), where an overflow page has a u32 page count in place of
 * lower and upper. A leaf's node offsets (u16, from the page start) fill
 * the page from the header to `lower`; its nodes lie from `upper` to the
 * end. A node is lo (2), hi (2), flags (2), ksize (2), the key, then the
 * data (lo | hi << 16 bytes), or with F_BIGDATA the pgno (8) of the
 * overflow page whose header is followed by the data.
 */
#define SCAN_NODE_HDR_BYTES	8
#define SCAN_P_KIND_MASK	(LMDB_DISK_P_BRANCH | LMDB_DISK_P_LEAF | \
				 LMDB_DISK_P_OVERFLOW | LMDB_DISK_P_META | \
				 LMDB_DISK_P_LEAF2 | LMDB_DISK_P_SUBP)
#define SCAN_F_BIGDATA		0x01
#define SCAN_F_SUBDATA		0x02
#define SCAN_F_DUPDATA		0x04
#define SCAN_META_PSIZE_OFF	(LMDB_DISK_PAGE_HDR_BYTES + 4 + 4 + 8 + 8)	/* dbs[0].md_pad */
#define SCAN_CHUNK_PAGES	64		/* pages a read */
#define SCAN_POOL_PREFIX	"pool/"
#define SCAN_POOL_NAME_MAX	(sizeof(SCAN_POOL_PREFIX) - 1 + 64)

static uint16_t
rd16(const uint8_t *p)
{
	uint16_t	v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint32_t
rd32(const uint8_t *p)
{
	uint32_t	v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t
rd64(const uint8_t *p)
{
	uint64_t	v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* The page size a meta page at off names, or 0 when it is not one. */
static size_t
scan_meta_psize(int fd, off_t off)
{
	uint8_t		hdr[SCAN_META_PSIZE_OFF + 4];
	uint32_t	ps;

	if (pread(fd, hdr, sizeof(hdr), off) != (ssize_t)sizeof(hdr) ||
	    (rd16(hdr + 10) & LMDB_DISK_P_META) == 0 ||
	    rd32(hdr + LMDB_DISK_PAGE_HDR_BYTES) != LMDB_DISK_MAGIC)
		return 0;
	ps = rd32(hdr + SCAN_META_PSIZE_OFF);
	if (ps < LMDB_DISK_MIN_PSIZE || ps > LMDB_DISK_MAX_PSIZE || (ps & (ps - 1)) != 0)
		return 0;
	return ps;
}

/* The first meta page's size, else the second's (tried at each size), else the system's. */
static size_t
scan_psize(int fd)
{
	size_t	ps;
	long	sys;

	if ((ps = scan_meta_psize(fd, 0)) != 0)
		return ps;
	for (ps = LMDB_DISK_MIN_PSIZE; ps <= LMDB_DISK_MAX_PSIZE; ps *= 2)
		if (scan_meta_psize(fd, (off_t)ps) == ps)
			return ps;
	sys = sysconf(_SC_PAGESIZE);
	return sys >= LMDB_DISK_MIN_PSIZE && sys <= LMDB_DISK_MAX_PSIZE ? (size_t)sys :
	    4096;
}

static int
scan_add(struct cache_scan *s, uint8_t kind, uint8_t what, const uint8_t *key,
    size_t klen, off_t off, uint32_t len)
{
	struct cache_scan_rec	*r;
	void			*p;

	if (s->n == s->cap) {
		s->cap = s->cap == 0 ? 256 : s->cap * 2;
		if ((p = realloc(s->rec, s->cap * sizeof(*s->rec))) == NULL)
			return -1;
		s->rec = p;
	}
	r = &s->rec[s->n];
	if ((r->key = malloc(klen)) == NULL)
		return -1;
	memcpy(r->key, key, klen);
	r->klen = (uint16_t)klen;
	r->kind = kind;
	r->what = what;
	r->off = off;
	r->len = len;
	s->n++;
	return 0;
}

/*
 * Where an F_BIGDATA value of len bytes lies: the overflow page pgno must
 * name itself, say overflow, span the value and end inside the file.
 * Its offset, or -1.
 */
static off_t
scan_overflow(const struct cache_scan *s, uint64_t pgno, uint32_t len)
{
	uint8_t		hdr[LMDB_DISK_PAGE_HDR_BYTES];
	uint64_t	need = ((uint64_t)len + LMDB_DISK_PAGE_HDR_BYTES + s->psize - 1) /
			    s->psize;
	off_t		off;

	if (pgno < 2 || pgno >= s->pages || need > s->pages - pgno)
		return -1;
	off = (off_t)(pgno * s->psize);
	if (pread(s->fd, hdr, sizeof(hdr), off) != (ssize_t)sizeof(hdr) ||
	    rd64(hdr) != pgno ||
	    (rd16(hdr + 10) & SCAN_P_KIND_MASK) != LMDB_DISK_P_OVERFLOW ||
	    rd32(hdr + 12) < need)
		return -1;
	return off + LMDB_DISK_PAGE_HDR_BYTES;
}

/*
 * Whether a value in overflow pages at off starts as a body record does
 * (cache/record.h: version, u32 request and response lengths, little
 * endian) with lengths that fit len: the free list's page lists, also
 * kept in overflow pages, do not. A checked body (RECORD_BODY_VERSION)
 * ends in 4 bytes of checksum; its checksum is judged when it is read.
 */
static int
scan_big_is_body(const struct cache_scan *s, off_t off, uint32_t len)
{
	uint8_t		h[9];
	uint64_t	base;

	if (len <= RECORD_META_BYTES ||
	    pread(s->fd, h, sizeof(h), off) != (ssize_t)sizeof(h) ||
	    (h[0] != RECORD_VERSION && h[0] != RECORD_BODY_VERSION))
		return 0;
	base = sizeof(h) + ((uint64_t)h[1] | (uint64_t)h[2] << 8 |
	    (uint64_t)h[3] << 16 | (uint64_t)h[4] << 24) +
	    ((uint64_t)h[5] | (uint64_t)h[6] << 8 | (uint64_t)h[7] << 16 |
	    (uint64_t)h[8] << 24);
	if (h[0] == RECORD_BODY_VERSION)
		base += 4;
	return base == len || base + 4 < len;
}

/* What a record of the meta or body database is, from its value; -1: neither. */
static int
scan_kind_what(const struct cache_scan *s, uint8_t kind, const uint8_t *val,
    uint32_t len, off_t off, int big)
{
	struct cache_meta	m;
	struct cache_body	b;

	if (big)
		return scan_big_is_body(s, off, len) ? CACHE_SCAN_BODY : -1;
	if (len == RECORD_META_BYTES && record_meta_decode(val, len, &m) == 0 &&
	    m.kind == kind)
		return CACHE_SCAN_META;
	if (len > 0 && record_body_decode(val, len, &b) == 0)
		return CACHE_SCAN_BODY;
	return -1;
}

/* One node of the leaf page pg (page number pgno) at offset at. 0, or -1 out of memory. */
static int
scan_node(struct cache_scan *s, const uint8_t *pg, size_t pgno, size_t at)
{
	const uint8_t	*nd = pg + at, *key, *val;
	uint32_t	 dlen;
	uint16_t	 fl, ks;
	off_t		 off;
	int		 what;

	if (at < LMDB_DISK_PAGE_HDR_BYTES || at + SCAN_NODE_HDR_BYTES > s->psize)
		goto skip;
	dlen = (uint32_t)rd16(nd) | (uint32_t)rd16(nd + 2) << 16;
	fl = rd16(nd + 4);
	ks = rd16(nd + 6);
	key = nd + SCAN_NODE_HDR_BYTES;
	val = key + ks;
	if ((fl & (SCAN_F_SUBDATA | SCAN_F_DUPDATA)) != 0 || ks == 0 ||
	    at + SCAN_NODE_HDR_BYTES + ks + ((fl & SCAN_F_BIGDATA) ? 8 : dlen) >
	    s->psize)
		goto skip;
	if ((fl & SCAN_F_BIGDATA) != 0) {
		if ((off = scan_overflow(s, rd64(val), dlen)) == -1)
			goto skip;
	} else
		off = (off_t)(pgno * s->psize + (size_t)(val - pg));
	if (ks > sizeof(SCAN_POOL_PREFIX) - 1 && ks <= SCAN_POOL_NAME_MAX &&
	    memcmp(key, SCAN_POOL_PREFIX, sizeof(SCAN_POOL_PREFIX) - 1) == 0)
		return scan_add(s, 0, CACHE_SCAN_POOL, key, ks, off, dlen);
	if (key[0] == 0 || key[0] > CACHE_KIND_SLOTS || ks < 2 ||
	    ks > 1 + CACHE_KEY_MAX_BYTES)
		return 0;	/* the due index, the free list, the names */
	if ((what = scan_kind_what(s, key[0], val, dlen, off,
	    (fl & SCAN_F_BIGDATA) != 0)) == -1)
		return 0;
	return scan_add(s, key[0], (uint8_t)what, key + 1, ks - 1u, off, dlen);
 skip:
	s->skipped_nodes++;
	return 0;
}

/* The records of page pgno, if it reads as a leaf page. 0, or -1 out of memory. */
static int
scan_page(struct cache_scan *s, const uint8_t *pg, size_t pgno)
{
	uint16_t	lower = rd16(pg + 12), upper = rd16(pg + 14);
	size_t		i, n;

	if (rd64(pg) != pgno ||
	    (rd16(pg + 10) & SCAN_P_KIND_MASK) != LMDB_DISK_P_LEAF ||
	    lower < LMDB_DISK_PAGE_HDR_BYTES || lower > upper || upper > s->psize ||
	    (lower - LMDB_DISK_PAGE_HDR_BYTES) % 2 != 0)
		return 0;
	s->leaf_pages++;
	n = (size_t)(lower - LMDB_DISK_PAGE_HDR_BYTES) / 2;
	for (i = 0; i < n; i++) {
		size_t	at = rd16(pg + LMDB_DISK_PAGE_HDR_BYTES + 2 * i);

		if (at < upper) {
			s->skipped_nodes++;
			continue;
		}
		if (scan_node(s, pg, pgno, at) == -1)
			return -1;
	}
	return 0;
}

static int
scan_rec_cmp(const void *a, const void *b)
{
	const struct cache_scan_rec	*x = a, *y = b;
	size_t				 n = x->klen < y->klen ? x->klen : y->klen;
	int				 c;

	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if ((c = memcmp(x->key, y->key, n)) != 0)
		return c;
	if (x->klen != y->klen)
		return x->klen < y->klen ? -1 : 1;
	if (x->what != y->what)
		return x->what < y->what ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

int
cache_scan(struct cache_scan *s, const char *path, char *why, size_t whylen)
{
	struct stat	 st;
	uint8_t		*buf = NULL;
	size_t		 p, k, got;
	ssize_t		 r;

	memset(s, 0, sizeof(*s));
	if ((s->fd = open(path, O_RDONLY | O_CLOEXEC)) == -1 ||
	    fstat(s->fd, &st) == -1) {
		cache_why(why, whylen, "%s: %s", path, strerror(errno));
		return -1;
	}
	s->size = st.st_size;
	s->psize = scan_psize(s->fd);
	s->pages = (size_t)st.st_size / s->psize;
	if ((buf = malloc(SCAN_CHUNK_PAGES * s->psize)) == NULL)
		goto nomem;
	/* Pages 0 and 1 are the metas. */
	for (p = 2; p < s->pages; p += SCAN_CHUNK_PAGES) {
		if ((r = pread(s->fd, buf, SCAN_CHUNK_PAGES * s->psize,
		    (off_t)(p * s->psize))) == -1) {
			cache_why(why, whylen, "%s: page %zu: %s", path, p,
			    strerror(errno));
			free(buf);
			return -1;
		}
		got = (size_t)r / s->psize;
		for (k = 0; k < got; k++)
			if (scan_page(s, buf + k * s->psize, p + k) == -1)
				goto nomem;
	}
	free(buf);
	if (s->n > 0)
		qsort(s->rec, s->n, sizeof(*s->rec), scan_rec_cmp);
	return 0;
 nomem:
	free(buf);
	cache_why(why, whylen, "%s: out of memory", path);
	return -1;
}

void
cache_scan_free(struct cache_scan *s)
{
	size_t	i;

	for (i = 0; i < s->n; i++)
		free(s->rec[i].key);
	free(s->rec);
	if (s->fd > 0)
		close(s->fd);
	memset(s, 0, sizeof(*s));
}

int
cache_scan_value(const struct cache_scan *s, const struct cache_scan_rec *r,
    uint8_t **buf)
{
	uint8_t	*b;

	*buf = NULL;
	if (r->len > RECORD_MAX_BLOB_BYTES + 64 ||
	    r->off + (off_t)r->len > s->size ||
	    (b = malloc(r->len > 0 ? r->len : 1)) == NULL)
		return -1;
	if (pread(s->fd, b, r->len, r->off) != (ssize_t)r->len) {
		free(b);
		return -1;
	}
	*buf = b;
	return 0;
}
