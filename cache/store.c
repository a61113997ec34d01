/* The LMDB store: metas, bodies and aux records in one durable environment. */
#include "config.h"

#include <sys/mman.h>
#include <sys/stat.h>

#include <errno.h>
#include <limits.h>
#include <lmdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/store.h"

#define CACHE_MAXDBS		8	/* meta, body, aux, and room to grow */
#define CACHE_MAXREADERS	256	/* daemon, staplectl, exporters */
#define CACHE_DIR_MODE		0750
#define CACHE_FILE_MODE		0640
#define CACHE_LKEY_BYTES	(1 + CACHE_KEY_MAX_BYTES)
#define MIB			((size_t)1 << 20)

struct cache {
	MDB_env		*env;
	MDB_dbi		 meta;
	MDB_dbi		 body;
	MDB_dbi		 aux;
	/*
	 * One read transaction, reset between calls and renewed for the
	 * next, so a hit allocates nothing. Live only from a cache_get until
	 * the next call on the handle: that is how long its pointers last.
	 */
	MDB_txn		*rtxn;
	int		 rtxn_live;
	int		 readonly;
	int		 in_walk;	/* inside a cache_walk callback */
	size_t		 walk_skipped;
	char		*dir;
	char		 err[256];
};

static void	cache_seterr(struct cache *, const char *, ...)
		    __attribute__((format(printf, 2, 3)));

static void
cache_seterr(struct cache *c, const char *fmt, ...)
{
	va_list	ap;
	int	n;

	n = snprintf(c->err, sizeof(c->err), "cache: %s: ", c->dir);
	if (n < 0 || (size_t)n >= sizeof(c->err))
		return;
	va_start(ap, fmt);
	vsnprintf(c->err + n, sizeof(c->err) - n, fmt, ap);
	va_end(ap);
}

/* LMDB's error, or for a full map how full and what to change. */
static void
cache_setmdberr(struct cache *c, const char *op, int rc)
{
	MDB_envinfo	info;
	MDB_stat	st;
	size_t		used, map;

	if (rc != MDB_MAP_FULL) {
		cache_seterr(c, "%s: %s", op, mdb_strerror(rc));
		return;
	}
	if (mdb_env_info(c->env, &info) != 0 ||
	    mdb_env_stat(c->env, &st) != 0) {
		snprintf(c->err, sizeof(c->err),
		    "cache: map full: raise map_size_mb");
		return;
	}
	map = info.me_mapsize;
	used = (info.me_last_pgno + 1) * (size_t)st.ms_psize;
	snprintf(c->err, sizeof(c->err),
	    "cache: map full (%zu MiB used of %zu MiB): raise map_size_mb",
	    (used + MIB - 1) / MIB, (map + MIB - 1) / MIB);
}

/* The LMDB key: one kind byte, then the caller's key. */
static int
cache_lkey(struct cache *c, unsigned kind, const uint8_t *key, size_t klen,
    uint8_t buf[CACHE_LKEY_BYTES], MDB_val *k)
{
	if (kind == 0 || kind >= CACHE_KIND_MAX) {
		cache_seterr(c, "kind %u out of range", kind);
		return -1;
	}
	if (klen == 0 || klen > CACHE_KEY_MAX_BYTES || key == NULL) {
		cache_seterr(c, "key length %zu not in 1..%d", klen,
		    CACHE_KEY_MAX_BYTES);
		return -1;
	}
	buf[0] = kind;
	memcpy(buf + 1, key, klen);
	k->mv_data = buf;
	k->mv_size = klen + 1;
	return 0;
}

/* Before anything but a get: end the last get's snapshot. */
static void
cache_read_end(struct cache *c)
{
	if (c->rtxn != NULL && c->rtxn_live) {
		mdb_txn_reset(c->rtxn);
		c->rtxn_live = 0;
	}
}

/*
 * Another process may have grown the map past ours; LMDB then refuses new
 * transactions with MDB_MAP_RESIZED until we adopt the size it recorded.
 */
static int
cache_adopt_mapsize(struct cache *c, const char *op)
{
	int	rc;

	if ((rc = mdb_env_set_mapsize(c->env, 0)) != 0) {
		cache_setmdberr(c, op, rc);
		return -1;
	}
	return 0;
}

static int
cache_read_begin(struct cache *c)
{
	int	rc, tries;

	cache_read_end(c);
	for (tries = 0; tries < 2; tries++) {
		if (c->rtxn == NULL)
			rc = mdb_txn_begin(c->env, NULL, MDB_RDONLY, &c->rtxn);
		else
			rc = mdb_txn_renew(c->rtxn);
		if (rc == 0) {
			c->rtxn_live = 1;
			return 0;
		}
		if (rc != MDB_MAP_RESIZED)
			break;
		if (cache_adopt_mapsize(c, "read") == -1)
			return -1;
	}
	cache_setmdberr(c, "read", rc);
	return -1;
}

static int
cache_write_begin(struct cache *c, MDB_txn **txn)
{
	int	rc, tries;

	if (c->in_walk) {
		cache_seterr(c, "called from a walk callback");
		return -1;
	}
	cache_read_end(c);
	if (c->readonly) {
		cache_seterr(c, "opened read-only");
		return -1;
	}
	for (tries = 0; tries < 2; tries++) {
		rc = mdb_txn_begin(c->env, NULL, 0, txn);
		if (rc == 0)
			return 0;
		if (rc != MDB_MAP_RESIZED)
			break;
		if (cache_adopt_mapsize(c, "write") == -1)
			return -1;
	}
	cache_setmdberr(c, "write", rc);
	return -1;
}

/* Commit frees the transaction whatever it returns. */
static int
cache_commit(struct cache *c, MDB_txn *txn)
{
	int	rc;

	if ((rc = mdb_txn_commit(txn)) != 0) {
		cache_setmdberr(c, "commit", rc);
		return -1;
	}
	return 0;
}

static int
cache_open_dbis(struct cache *c)
{
	MDB_txn		*txn = NULL;
	unsigned	 flags = c->readonly ? 0 : MDB_CREATE;
	int		 rc, rv = -1;

	rc = mdb_txn_begin(c->env, NULL, c->readonly ? MDB_RDONLY : 0, &txn);
	if (rc != 0) {
		cache_setmdberr(c, "open", rc);
		goto out;
	}
	if ((rc = mdb_dbi_open(txn, "meta", flags, &c->meta)) != 0 ||
	    (rc = mdb_dbi_open(txn, "body", flags, &c->body)) != 0 ||
	    (rc = mdb_dbi_open(txn, "aux", flags, &c->aux)) != 0) {
		if (rc == MDB_NOTFOUND)
			cache_seterr(c, "not a stapled cache (no meta, body "
			    "or aux database)");
		else
			cache_setmdberr(c, "open", rc);
		goto out;
	}
	rc = mdb_txn_commit(txn);
	txn = NULL;
	if (rc != 0) {
		cache_setmdberr(c, "open", rc);
		goto out;
	}
	rv = 0;
 out:
	mdb_txn_abort(txn);
	return rv;
}

struct cache *
cache_open(const char *dir, size_t map_bytes, int readonly, char *err,
    size_t errlen)
{
	struct cache	*c = NULL, *rv = NULL;
	MDB_envinfo	 info;
	int		 rc, dead;

	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if (map_bytes == 0)
		map_bytes = CACHE_DEFAULT_MAP_BYTES;
	if ((c = calloc(1, sizeof(*c))) == NULL ||
	    (c->dir = strdup(dir)) == NULL) {
		if (err != NULL)
			snprintf(err, errlen, "cache: %s: %s", dir,
			    strerror(ENOMEM));
		goto out;
	}
	c->readonly = readonly != 0;

	if (!c->readonly && mkdir(dir, CACHE_DIR_MODE) == -1 &&
	    errno != EEXIST) {
		cache_seterr(c, "%s", strerror(errno));
		goto fail;
	}
	if ((rc = mdb_env_create(&c->env)) != 0 ||
	    (rc = mdb_env_set_maxdbs(c->env, CACHE_MAXDBS)) != 0 ||
	    (rc = mdb_env_set_maxreaders(c->env, CACHE_MAXREADERS)) != 0 ||
	    (rc = mdb_env_set_mapsize(c->env, map_bytes)) != 0) {
		cache_seterr(c, "%s", mdb_strerror(rc));
		goto fail;
	}
	/*
	 * Default sync: a commit is on disk when it returns. MDB_NOTLS lets
	 * the reusable read transaction outlive any one thread's use, and
	 * the lock file stays in use so staplectl may open alongside.
	 */
	rc = mdb_env_open(c->env, dir,
	    MDB_NOTLS | MDB_NORDAHEAD | (c->readonly ? MDB_RDONLY : 0),
	    CACHE_FILE_MODE);
	if (rc != 0) {
		cache_seterr(c, "%s", mdb_strerror(rc));
		goto fail;
	}
	/* Reader slots left by processes that died (kill -9, OOM). */
	if ((rc = mdb_reader_check(c->env, &dead)) != 0) {
		cache_seterr(c, "reader check: %s", mdb_strerror(rc));
		goto fail;
	}
	/*
	 * An environment made with a bigger map keeps it: adopt the size
	 * recorded on disk, then grow to what was asked if that is more.
	 */
	if ((rc = mdb_env_set_mapsize(c->env, 0)) != 0 ||
	    (rc = mdb_env_info(c->env, &info)) != 0 ||
	    (info.me_mapsize < map_bytes &&
	    (rc = mdb_env_set_mapsize(c->env, map_bytes)) != 0)) {
		cache_seterr(c, "map size: %s", mdb_strerror(rc));
		goto fail;
	}
	if (cache_open_dbis(c) == -1)
		goto fail;

	rv = c;
	c = NULL;
	goto out;
 fail:
	if (err != NULL)
		snprintf(err, errlen, "%s", c->err);
 out:
	cache_close(c);
	return rv;
}

void
cache_close(struct cache *c)
{
	if (c == NULL)
		return;
	mdb_txn_abort(c->rtxn);
	if (c->env != NULL)
		mdb_env_close(c->env);
	free(c->dir);
	free(c);
}

const char *
cache_strerror(const struct cache *c)
{
	if (c == NULL)
		return "cache: no handle";
	return c->err;
}

/* Under a live read transaction: the decoded meta, and the body if asked. */
static int
cache_lookup(struct cache *c, unsigned kind, const uint8_t *key, size_t klen,
    struct cache_meta *meta, struct cache_body *body)
{
	uint8_t			 lk[CACHE_LKEY_BYTES];
	struct cache_meta	 m;
	MDB_val			 k, v;
	int			 rc;

	if (c->in_walk) {
		cache_seterr(c, "called from a walk callback");
		return -1;
	}
	if (cache_lkey(c, kind, key, klen, lk, &k) == -1)
		return -1;
	if (cache_read_begin(c) == -1)
		return -1;
	if ((rc = mdb_get(c->rtxn, c->meta, &k, &v)) == MDB_NOTFOUND)
		return 0;
	if (rc != 0) {
		cache_setmdberr(c, "get meta", rc);
		return -1;
	}
	if (record_meta_decode(v.mv_data, v.mv_size, &m) == -1 ||
	    m.kind != kind) {
		cache_seterr(c, "%s entry: undecodable meta",
		    cache_kind_str[kind]);
		return -1;
	}
	if (body != NULL) {
		if ((rc = mdb_get(c->rtxn, c->body, &k, &v)) != 0) {
			cache_setmdberr(c, "get body", rc);
			return -1;
		}
		if (record_body_decode(v.mv_data, v.mv_size, body) == -1) {
			cache_seterr(c, "%s entry: undecodable body",
			    cache_kind_str[kind]);
			return -1;
		}
	}
	if (meta != NULL)
		*meta = m;
	return 1;
}

int
cache_get(struct cache *c, enum cache_kind kind, const uint8_t *key,
    size_t klen, struct cache_meta *meta, struct cache_body *body)
{
	return cache_lookup(c, kind, key, klen, meta, body);
}

int
cache_get_meta(struct cache *c, enum cache_kind kind, const uint8_t *key,
    size_t klen, struct cache_meta *meta)
{
	return cache_lookup(c, kind, key, klen, meta, NULL);
}

/* Inside a write transaction: 1 and the stored meta, 0 absent, -1 error. */
static int
cache_txn_meta(struct cache *c, MDB_txn *txn, MDB_val *k,
    struct cache_meta *m)
{
	MDB_val	v;
	int	rc;

	if ((rc = mdb_get(txn, c->meta, k, &v)) == MDB_NOTFOUND)
		return 0;
	if (rc != 0) {
		cache_setmdberr(c, "get meta", rc);
		return -1;
	}
	/* A record we cannot read is treated as absent and replaced. */
	if (record_meta_decode(v.mv_data, v.mv_size, m) == -1 ||
	    m->kind != ((const uint8_t *)k->mv_data)[0])
		return 0;
	return 1;
}

static void
cache_carry_counters(struct cache_meta *m, const struct cache_meta *old)
{
	if (old->served_count > m->served_count)
		m->served_count = old->served_count;
	if (old->last_served_at > m->last_served_at)
		m->last_served_at = old->last_served_at;
}

static int
cache_txn_put_meta(struct cache *c, MDB_txn *txn, MDB_val *k,
    const struct cache_meta *m)
{
	uint8_t	enc[RECORD_META_BYTES];
	MDB_val	v;
	int	rc;

	record_meta_encode(m, enc);
	v.mv_data = enc;
	v.mv_size = sizeof(enc);
	if ((rc = mdb_put(txn, c->meta, k, &v, 0)) != 0) {
		cache_setmdberr(c, "put meta", rc);
		return -1;
	}
	return 0;
}

/*
 * One put inside the caller's write transaction: CACHE_PUT_STORED or
 * CACHE_PUT_KEPT, or -1 (the caller aborts).
 */
static int
cache_txn_put(struct cache *c, MDB_txn *txn, const uint8_t *key, size_t klen,
    const struct cache_meta *meta, const struct cache_body *body)
{
	uint8_t			 lk[CACHE_LKEY_BYTES];
	struct cache_meta	 m, old;
	MDB_val			 k, v;
	uint8_t			*enc = NULL;
	size_t			 enclen;
	int			 rc, have, rv = -1;

	if (cache_lkey(c, meta->kind, key, klen, lk, &k) == -1)
		goto out;
	if (record_body_encode(body, &enc, &enclen) == -1) {
		cache_seterr(c, "%s entry: body too large (request %zu, "
		    "response %zu bytes, limit %u)", cache_kind_str[meta->kind],
		    body->request_len, body->response_len,
		    RECORD_MAX_BLOB_BYTES);
		goto out;
	}
	if ((have = cache_txn_meta(c, txn, &k, &old)) == -1)
		goto out;
	if (have && old.this_update > meta->this_update) {
		rv = CACHE_PUT_KEPT;
		goto out;
	}
	m = *meta;
	if (have)
		cache_carry_counters(&m, &old);
	if (cache_txn_put_meta(c, txn, &k, &m) == -1)
		goto out;
	v.mv_data = enc;
	v.mv_size = enclen;
	if ((rc = mdb_put(txn, c->body, &k, &v, 0)) != 0) {
		cache_setmdberr(c, "put body", rc);
		goto out;
	}
	rv = CACHE_PUT_STORED;
 out:
	free(enc);
	return rv;
}

int
cache_put(struct cache *c, const uint8_t *key, size_t klen,
    const struct cache_meta *meta, const struct cache_body *body)
{
	struct cache_put_item	it = { key, klen, meta, body };
	int			res;

	if (cache_put_many(c, &it, 1, &res) == -1)
		return -1;
	return res;
}

int
cache_put_many(struct cache *c, const struct cache_put_item *it, size_t n,
    int *results)
{
	MDB_txn	*txn = NULL;
	size_t	 i, stored = 0;
	int	 rc, rv = -1;

	if (n == 0)
		return 0;
	if (cache_write_begin(c, &txn) == -1)
		goto out;
	for (i = 0; i < n; i++) {
		if ((rc = cache_txn_put(c, txn, it[i].key, it[i].klen,
		    it[i].meta, it[i].body)) == -1)
			goto out;
		results[i] = rc;
		if (rc == CACHE_PUT_STORED)
			stored++;
	}
	/* Nothing changed: no commit, no sync. */
	if (stored == 0) {
		rv = 0;
		goto out;
	}
	rc = cache_commit(c, txn);
	txn = NULL;
	if (rc == -1)
		goto out;
	rv = 0;
 out:
	mdb_txn_abort(txn);
	return rv;
}

/*
 * The schedule fields (flags, failures, next refresh) come from `meta`.
 * If a newer body was stored since the caller read its copy, the facts
 * about the body stay as stored, so a stale meta never describes it.
 */
int
cache_put_meta(struct cache *c, const uint8_t *key, size_t klen,
    const struct cache_meta *meta)
{
	uint8_t			 lk[CACHE_LKEY_BYTES];
	struct cache_meta	 m, old;
	MDB_txn			*txn = NULL;
	MDB_val			 k;
	int			 rc, have, rv = -1;

	if (cache_lkey(c, meta->kind, key, klen, lk, &k) == -1)
		goto out;
	if (cache_write_begin(c, &txn) == -1)
		goto out;
	if ((have = cache_txn_meta(c, txn, &k, &old)) == -1)
		goto out;
	if (!have) {
		cache_seterr(c, "%s entry: not found",
		    cache_kind_str[meta->kind]);
		goto out;
	}
	m = *meta;
	if (old.this_update > m.this_update) {
		m = old;
		m.flags = meta->flags;
		m.refresh_failures = meta->refresh_failures;
		m.next_refresh_at = meta->next_refresh_at;
	}
	cache_carry_counters(&m, &old);
	if (cache_txn_put_meta(c, txn, &k, &m) == -1)
		goto out;
	rc = cache_commit(c, txn);
	txn = NULL;
	if (rc == -1)
		goto out;
	rv = 0;
 out:
	mdb_txn_abort(txn);
	return rv;
}

int
cache_touch(struct cache *c, const struct cache_touch *t, size_t n)
{
	uint8_t			 lk[CACHE_LKEY_BYTES];
	struct cache_meta	 m;
	MDB_txn			*txn = NULL;
	MDB_val			 k;
	size_t			 i;
	int			 rc, have, rv = -1;

	if (n == 0)
		return 0;
	if (cache_write_begin(c, &txn) == -1)
		goto out;
	for (i = 0; i < n; i++) {
		/* A bad or missing key skips that entry, not the batch. */
		if (t[i].kind == 0 || t[i].kind >= CACHE_KIND_MAX ||
		    t[i].klen == 0 || t[i].klen > CACHE_KEY_MAX_BYTES)
			continue;
		lk[0] = t[i].kind;
		memcpy(lk + 1, t[i].key, t[i].klen);
		k.mv_data = lk;
		k.mv_size = t[i].klen + 1;
		if ((have = cache_txn_meta(c, txn, &k, &m)) == -1)
			goto out;
		if (!have)
			continue;
		m.served_count += t[i].served;
		if (t[i].last_served_at > m.last_served_at)
			m.last_served_at = t[i].last_served_at;
		if (cache_txn_put_meta(c, txn, &k, &m) == -1)
			goto out;
	}
	rc = cache_commit(c, txn);
	txn = NULL;
	if (rc == -1)
		goto out;
	rv = 0;
 out:
	mdb_txn_abort(txn);
	return rv;
}

/* Deleting an absent entry is not an error. */
int
cache_del(struct cache *c, enum cache_kind kind, const uint8_t *key,
    size_t klen)
{
	uint8_t	 lk[CACHE_LKEY_BYTES];
	MDB_txn	*txn = NULL;
	MDB_val	 k;
	int	 rc, rv = -1;

	if (cache_lkey(c, kind, key, klen, lk, &k) == -1)
		goto out;
	if (cache_write_begin(c, &txn) == -1)
		goto out;
	if ((rc = mdb_del(txn, c->meta, &k, NULL)) != 0 && rc != MDB_NOTFOUND) {
		cache_setmdberr(c, "del meta", rc);
		goto out;
	}
	if ((rc = mdb_del(txn, c->body, &k, NULL)) != 0 && rc != MDB_NOTFOUND) {
		cache_setmdberr(c, "del body", rc);
		goto out;
	}
	rc = cache_commit(c, txn);
	txn = NULL;
	if (rc == -1)
		goto out;
	rv = 0;
 out:
	mdb_txn_abort(txn);
	return rv;
}

/*
 * The callback runs inside the walk's read transaction and must not call
 * into the same handle; such calls fail. With kind 0, `after` is the kind
 * byte followed by the key, since keys of different kinds may be equal.
 */
/*
 * LMDB reports its map address only for MDB_FIXEDMAP, so find the mapping
 * of data.mdb in /proc/self/maps (Linux). Elsewhere this does nothing.
 */
void
cache_release_pages(struct cache *c)
{
	char		 path[PATH_MAX], line[PATH_MAX + 128], *p;
	unsigned long	 lo, hi;
	size_t		 n;
	FILE		*f;

	if (c == NULL || realpath(c->dir, path) == NULL)
		return;
	n = strlen(path);
	if (n + sizeof("/data.mdb") > sizeof(path))
		return;
	memcpy(path + n, "/data.mdb", sizeof("/data.mdb"));
	if ((f = fopen("/proc/self/maps", "r")) == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		if ((p = strchr(line, '/')) == NULL || strcmp(p, path) != 0 ||
		    sscanf(line, "%lx-%lx", &lo, &hi) != 2 || hi <= lo)
			continue;
		/* A shared file mapping: the data stays in the page cache. */
		(void)madvise((void *)lo, hi - lo, MADV_DONTNEED);
	}
	fclose(f);
}

long
cache_walk(struct cache *c, enum cache_kind kind, const uint8_t *after,
    size_t afterlen, size_t max, cache_walk_cb *cb, void *arg)
{
	uint8_t			 lk[CACHE_LKEY_BYTES];
	struct cache_meta	 m;
	MDB_cursor		*cur = NULL;
	MDB_val			 k, v;
	const uint8_t		*kp;
	size_t			 startlen;
	long			 visited = 0, rv = -1;
	int			 rc, op, resume;

	if (c->in_walk) {
		cache_seterr(c, "called from a walk callback");
		return -1;
	}
	if ((unsigned)kind >= CACHE_KIND_MAX) {
		cache_seterr(c, "kind %u out of range", (unsigned)kind);
		return -1;
	}
	c->walk_skipped = 0;
	k.mv_data = lk;
	k.mv_size = 0;
	if (kind != 0) {
		lk[k.mv_size++] = kind;
		if (after != NULL && afterlen > CACHE_KEY_MAX_BYTES) {
			cache_seterr(c, "walk: key length %zu over %d",
			    afterlen, CACHE_KEY_MAX_BYTES);
			return -1;
		}
	} else if (after != NULL && afterlen > CACHE_LKEY_BYTES) {
		cache_seterr(c, "walk: key length %zu over %d", afterlen,
		    CACHE_LKEY_BYTES);
		return -1;
	}
	if (after != NULL && afterlen > 0) {
		memcpy(lk + k.mv_size, after, afterlen);
		k.mv_size += afterlen;
	}

	if (cache_read_begin(c) == -1)
		return -1;
	if ((rc = mdb_cursor_open(c->rtxn, c->meta, &cur)) != 0) {
		cache_setmdberr(c, "walk", rc);
		goto out;
	}
	resume = after != NULL && afterlen > 0;
	startlen = k.mv_size;
	op = startlen == 0 ? MDB_FIRST : MDB_SET_RANGE;
	rc = mdb_cursor_get(cur, &k, &v, op);
	/* Resuming: the named key itself was the previous chunk's last. */
	if (rc == 0 && resume && k.mv_size == startlen &&
	    memcmp(k.mv_data, lk, startlen) == 0)
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);

	c->in_walk = 1;
	for (; rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		kp = k.mv_data;
		if (kind != 0 && kp[0] != kind)
			break;		/* past the last key of this kind */
		if (k.mv_size < 2 ||
		    record_meta_decode(v.mv_data, v.mv_size, &m) == -1 ||
		    m.kind != kp[0]) {
			c->walk_skipped++;
			continue;
		}
		visited++;
		if (cb(m.kind, kp + 1, k.mv_size - 1, &m, arg) != 0)
			break;
		if (max != 0 && (size_t)visited >= max)
			break;
	}
	c->in_walk = 0;
	if (rc != 0 && rc != MDB_NOTFOUND) {
		cache_setmdberr(c, "walk", rc);
		goto out;
	}
	rv = visited;
 out:
	mdb_cursor_close(cur);
	cache_read_end(c);
	return rv;
}

size_t
cache_walk_skipped(const struct cache *c)
{
	return c->walk_skipped;
}

static int
cache_aux_key(struct cache *c, const char *name, MDB_val *k)
{
	size_t	n;

	if (name == NULL || (n = strlen(name)) == 0 ||
	    n > CACHE_KEY_MAX_BYTES) {
		cache_seterr(c, "aux name length not in 1..%d",
		    CACHE_KEY_MAX_BYTES);
		return -1;
	}
	k->mv_data = (void *)name;
	k->mv_size = n;
	return 0;
}

int
cache_aux_put(struct cache *c, const char *name, const uint8_t *val,
    size_t len)
{
	MDB_txn	*txn = NULL;
	MDB_val	 k, v;
	int	 rc, rv = -1;

	if (cache_aux_key(c, name, &k) == -1)
		goto out;
	if (len > RECORD_MAX_BLOB_BYTES || (val == NULL && len != 0)) {
		cache_seterr(c, "aux %s: %zu bytes, limit %u", name, len,
		    RECORD_MAX_BLOB_BYTES);
		goto out;
	}
	if (cache_write_begin(c, &txn) == -1)
		goto out;
	v.mv_data = (void *)val;
	v.mv_size = len;
	if ((rc = mdb_put(txn, c->aux, &k, &v, 0)) != 0) {
		cache_setmdberr(c, "put aux", rc);
		goto out;
	}
	rc = cache_commit(c, txn);
	txn = NULL;
	if (rc == -1)
		goto out;
	rv = 0;
 out:
	mdb_txn_abort(txn);
	return rv;
}

int
cache_aux_get(struct cache *c, const char *name, uint8_t **val, size_t *len)
{
	MDB_val	 k, v;
	uint8_t	*p;
	int	 rc, rv = -1;

	*val = NULL;
	*len = 0;
	if (c->in_walk) {
		cache_seterr(c, "called from a walk callback");
		return -1;
	}
	if (cache_aux_key(c, name, &k) == -1)
		return -1;
	if (cache_read_begin(c) == -1)
		return -1;
	if ((rc = mdb_get(c->rtxn, c->aux, &k, &v)) == MDB_NOTFOUND) {
		rv = 0;
		goto out;
	}
	if (rc != 0) {
		cache_setmdberr(c, "get aux", rc);
		goto out;
	}
	if ((p = malloc(v.mv_size != 0 ? v.mv_size : 1)) == NULL) {
		cache_seterr(c, "aux %s: %s", name, strerror(errno));
		goto out;
	}
	if (v.mv_size != 0)
		memcpy(p, v.mv_data, v.mv_size);
	*val = p;
	*len = v.mv_size;
	rv = 1;
 out:
	cache_read_end(c);
	return rv;
}

long
cache_aux_walk(struct cache *c, const char *prefix, cache_aux_cb *cb,
    void *arg)
{
	char		 name[CACHE_KEY_MAX_BYTES + 1];
	MDB_cursor	*cur = NULL;
	MDB_val		 k, v;
	size_t		 plen = prefix != NULL ? strlen(prefix) : 0;
	long		 visited = 0, rv = -1;
	int		 rc;

	if (c->in_walk) {
		cache_seterr(c, "called from a walk callback");
		return -1;
	}
	if (plen > CACHE_KEY_MAX_BYTES) {
		cache_seterr(c, "aux walk: prefix longer than %d",
		    CACHE_KEY_MAX_BYTES);
		return -1;
	}
	if (cache_read_begin(c) == -1)
		return -1;
	if ((rc = mdb_cursor_open(c->rtxn, c->aux, &cur)) != 0) {
		cache_setmdberr(c, "aux walk", rc);
		goto out;
	}
	k.mv_data = (void *)prefix;
	k.mv_size = plen;
	rc = mdb_cursor_get(cur, &k, &v, plen == 0 ? MDB_FIRST : MDB_SET_RANGE);
	c->in_walk = 1;
	for (; rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		if (k.mv_size < plen || memcmp(k.mv_data, prefix, plen) != 0)
			break;		/* past the names with this prefix */
		if (k.mv_size > CACHE_KEY_MAX_BYTES)
			continue;
		memcpy(name, k.mv_data, k.mv_size);
		name[k.mv_size] = '\0';
		visited++;
		if (cb(name, v.mv_data, v.mv_size, arg) != 0)
			break;
	}
	c->in_walk = 0;
	if (rc != 0 && rc != MDB_NOTFOUND) {
		cache_setmdberr(c, "aux walk", rc);
		goto out;
	}
	rv = visited;
 out:
	mdb_cursor_close(cur);
	cache_read_end(c);
	return rv;
}

/* entries[0] counts meta records that do not decode. */
int
cache_stat(struct cache *c, struct cache_stat *st)
{
	struct cache_meta	 m;
	MDB_envinfo		 info;
	MDB_stat		 ms;
	MDB_cursor		*cur = NULL;
	MDB_val			 k, v;
	const uint8_t		*kp;
	int			 rc, rv = -1;

	memset(st, 0, sizeof(*st));
	if (c->in_walk) {
		cache_seterr(c, "called from a walk callback");
		return -1;
	}
	if (cache_read_begin(c) == -1)
		return -1;
	if ((rc = mdb_cursor_open(c->rtxn, c->meta, &cur)) != 0) {
		cache_setmdberr(c, "stat", rc);
		goto out;
	}
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
	    rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		kp = k.mv_data;
		if (k.mv_size < 2 ||
		    record_meta_decode(v.mv_data, v.mv_size, &m) == -1 ||
		    m.kind != kp[0])
			st->entries[0]++;
		else
			st->entries[m.kind]++;
	}
	if (rc != MDB_NOTFOUND) {
		cache_setmdberr(c, "stat", rc);
		goto out;
	}
	if ((rc = mdb_env_info(c->env, &info)) != 0 ||
	    (rc = mdb_env_stat(c->env, &ms)) != 0) {
		cache_setmdberr(c, "stat", rc);
		goto out;
	}
	st->map_bytes = info.me_mapsize;
	st->used_bytes = (info.me_last_pgno + 1) * (size_t)ms.ms_psize;
	rv = 0;
 out:
	mdb_cursor_close(cur);
	cache_read_end(c);
	return rv;
}
