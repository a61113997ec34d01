/* SPDX-License-Identifier: Apache-2.0 */
/* The store's room and stat, and the map's resident pages given back. */
#include "config.h"

#include <sys/mman.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/store.h"
#include "cache/store_int.h"

/*
 * LMDB reports its map address only for MDB_FIXEDMAP, so find the mapping
 * of data.mdb in /proc/self/maps (Linux): [*lo, *hi) when it is one line,
 * as LMDB maps the file once. Should it show as more lines, they are
 * released whole here and 0 is returned, as when none is found
 * (elsewhere than Linux).
 */
static int
map_span(const struct cache *c, unsigned long *lo, unsigned long *hi)
{
	char		 path[PATH_MAX], line[PATH_MAX + 128], *p;
	unsigned long	 a, b;
	size_t		 n, nlines = 0;
	FILE		*f;

	if (realpath(c->dir, path) == NULL)
		return 0;
	n = strlen(path);
	if (n + sizeof("/data.mdb") > sizeof(path))
		return 0;
	memcpy(path + n, "/data.mdb", sizeof("/data.mdb"));
	if ((f = fopen("/proc/self/maps", "r")) == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		if ((p = strchr(line, '/')) == NULL || strcmp(p, path) != 0 ||
		    sscanf(line, "%lx-%lx", &a, &b) != 2 || b <= a)
			continue;
		if (nlines++ == 0) {
			*lo = a;
			*hi = b;
		} else	/* not one mapping: all of it now */
			(void)madvise((void *)a, b - a, MADV_DONTNEED);
	}
	fclose(f);
	if (nlines > 1)
		(void)madvise((void *)*lo, *hi - *lo, MADV_DONTNEED);
	return nlines == 1;
}

/*
 * The mapping is found at a release's first step, and again when the
 * environment was opened anew since (cache_reset maps the file elsewhere).
 * Steps cover the pages the store has used, as they were at the first.
 */
size_t
cache_release_pages_step(struct cache *c, size_t from, size_t max)
{
	unsigned long	 lo, hi, gen;
	size_t		 len, map, used;

	if (c == NULL)
		return 0;
	gen = c->of != NULL ? c->of->env_gen : c->env_gen;
	if (from == 0 || c->rel_gen != gen || c->rel_hi == 0) {
		c->rel_hi = 0;
		if (!map_span(c, &lo, &hi))
			return 0;
		/* Nothing is mapped past the pages the store has used. */
		if (env_bytes(c->env, &map, &used) == 0 && used < hi - lo)
			hi = lo + used;
		c->rel_lo = lo;
		c->rel_hi = hi;
		c->rel_gen = gen;
		from = 0;
	}
	if (from >= c->rel_hi - c->rel_lo)
		return 0;
	len = c->rel_hi - c->rel_lo - from;
	if (len > max)
		len = max;
	/* A shared file mapping: the data stays in the page cache. */
	(void)madvise((void *)(c->rel_lo + from), len, MADV_DONTNEED);
	from += len;
	return from < c->rel_hi - c->rel_lo ? from : 0;
}

void
cache_release_pages(struct cache *c)
{
	(void)cache_release_pages_step(c, 0, SIZE_MAX);
}

/* entries[0] counts meta records that do not decode. */
int
cache_stat(struct cache *c, struct cache_stat *st)
{
	struct cache_room	 room;
	struct cache_meta	 m;
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
	if (cache_read_begin(c, "stat") == -1)
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
	if (c->have_due && (rc = mdb_stat(c->rtxn, c->due, &ms)) == 0)
		st->due_keys = ms.ms_entries;
	mdb_cursor_close(cur);
	cur = NULL;
	if (cache_room(c, &room) == -1)
		goto out;
	st->map_bytes = room.map_bytes;
	st->used_bytes = room.used_bytes;
	st->free_bytes = room.free_bytes;
	rv = 0;
 out:
	mdb_cursor_close(cur);
	cache_read_end(c);
	return rv;
}

/*
 * A free-list record: keyed by the transaction that freed the pages, a
 * count and then that many page numbers. 0 and the count, or -1.
 */
int
free_record_count(const MDB_val *v, size_t *count)
{
	if (v->mv_size < sizeof(*count))
		return -1;
	memcpy(count, v->mv_data, sizeof(*count));
	return *count > v->mv_size / sizeof(*count) - 1 ? -1 : 0;
}

int
cache_room(struct cache *c, struct cache_room *room)
{
	MDB_cursor	*cur = NULL;
	MDB_stat	 st;
	MDB_val		 k, v;
	size_t		 count, pages = 0;
	int		 rc, rv = -1;

	memset(room, 0, sizeof(*room));
	if (c->in_walk) {
		cache_seterr(c, "called from a walk callback");
		return -1;
	}
	if (cache_read_begin(c, "room") == -1)
		return -1;
	if ((rc = env_bytes(c->env, &room->map_bytes, &room->used_bytes)) != 0 ||
	    (rc = mdb_env_stat(c->env, &st)) != 0 ||
	    (rc = mdb_cursor_open(c->rtxn, CACHE_LMDB_FREE_DBI, &cur)) != 0) {
		cache_setmdberr(c, "room", rc);
		goto out;
	}
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
	    rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		if (free_record_count(&v, &count) == -1) {
			cache_seterr(c, "room: a free-list record does not parse");
			goto out;
		}
		pages += count;
	}
	if (rc != MDB_NOTFOUND) {
		cache_setmdberr(c, "room", rc);
		goto out;
	}
	room->free_bytes = pages * st.ms_psize;
	rv = 0;
 out:
	mdb_cursor_close(cur);
	cache_read_end(c);
	return rv;
}
