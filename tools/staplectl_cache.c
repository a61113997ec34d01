/* SPDX-License-Identifier: Apache-2.0 */
/* staplectl status, list, purge and check: what the cache holds, how fresh it is, what the daemon last recorded, whether it is damaged. */
#include "config.h"

#include <sys/stat.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "attest/evidence.h"
#include "attest/util.h"
#include "cache/store.h"
#include "entry/kind.h"
#include "entry/pool.h"
#include "entry/salvage.h"
#include "tools/bundle.h"
#include "tools/staplectl.h"

#define STATUS_EXPIRING_S	(6 * 3600)	/* what status counts as expiring */
#define STATUS_DAMAGED_PREFIX	"data.mdb.damaged-"	/* cache_move_aside's names */
#define DAEMON_STALE_S		60		/* it records every few seconds */

struct collect {
	struct ctl_ent	*e;
	size_t		 n, cap;
	int		 oom;
};

static int
collect_cb(enum cache_kind kind, const uint8_t *key, size_t klen,
    const struct cache_meta *m, void *arg)
{
	struct collect	*c = arg;
	struct ctl_ent	*p;

	if (c->n == c->cap) {
		c->cap = c->cap == 0 ? 256 : c->cap * 2;
		if ((p = realloc(c->e, c->cap * sizeof(*p))) == NULL) {
			c->oom = 1;
			return 1;
		}
		c->e = p;
	}
	p = &c->e[c->n++];
	p->kind = kind;
	memcpy(p->key, key, klen);
	p->klen = klen;
	p->meta = *m;
	return 0;
}

int
ctl_collect(struct ctl *ctl, enum cache_kind kind, struct ctl_ent **out,
    size_t *n)
{
	struct collect	c = { NULL, 0, 0, 0 };

	*out = NULL;
	*n = 0;
	if (cache_walk(ctl->cache, kind, NULL, 0, 0, collect_cb, &c) == -1 ||
	    c.oom) {
		ctl_warnx("%s", c.oom ? "out of memory" :
		    cache_strerror(ctl->cache));
		free(c.e);
		return CTL_NOFILE;
	}
	if (cache_walk_skipped(ctl->cache) > 0)
		ctl_warnx("%zu undecodable record(s) skipped",
		    cache_walk_skipped(ctl->cache));
	*out = c.e;
	*n = c.n;
	return CTL_OK;
}

int
ctl_walk_chunks(struct ctl *ctl, enum cache_kind kind, ctl_chunk_fn *fn,
    void *arg)
{
	struct collect	c = { NULL, 0, 0, 0 };
	uint8_t		after[1 + CACHE_KEY_MAX_BYTES];
	size_t		afterlen = 0, skipped = 0;
	long		got;
	int		rv = CTL_OK;

	for (;;) {
		c.n = 0;
		if ((got = cache_walk(ctl->cache, kind, afterlen > 0 ? after :
		    NULL, afterlen, CTL_WALK_CHUNK, collect_cb, &c)) == -1 ||
		    c.oom) {
			ctl_warnx("%s", c.oom ? "out of memory" :
			    cache_strerror(ctl->cache));
			rv = CTL_NOFILE;
			break;
		}
		skipped += cache_walk_skipped(ctl->cache);
		if (c.n == 0 || (rv = fn(ctl, c.e, c.n, arg)) != CTL_OK)
			break;
		/* The next chunk starts after this one's last key. */
		afterlen = 0;
		if (kind == 0)
			after[afterlen++] = (uint8_t)c.e[c.n - 1].kind;
		memcpy(after + afterlen, c.e[c.n - 1].key, c.e[c.n - 1].klen);
		afterlen += c.e[c.n - 1].klen;
		if (got < CTL_WALK_CHUNK)
			break;
	}
	if (skipped > 0)
		ctl_warnx("%zu undecodable record(s) skipped", skipped);
	free(c.e);
	return rv;
}

void
ctl_entry_subject(const struct ctl_ent *e, const struct cache_body *b,
    char *buf, size_t len)
{
	kind_subject(e->kind, e->key, e->klen, b != NULL ? b->request : NULL,
	    b != NULL ? b->request_len : 0, buf, len);
}

void
ctl_entry_hash(const struct ctl_ent *e, const struct cache_body *b, char *buf,
    size_t len)
{
	kind_label(e->kind, b != NULL ? b->request : NULL,
	    b != NULL ? b->request_len : 0, buf, len);
}

/* ---- status ------------------------------------------------------------- */

struct kind_stat {
	size_t	valid, expired, expiring, failing;
	int64_t	earliest;	/* earliest nextUpdate of valid entries, 0: none */
};

/* The stores stapled found damaged and moved aside, one line each. */
static void
status_damaged(const struct ctl *ctl, json_t *list)
{
	DIR		*d;
	struct dirent	*de;

	if ((d = opendir(ctl->cache_dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, STATUS_DAMAGED_PREFIX,
		    strlen(STATUS_DAMAGED_PREFIX)) != 0)
			continue;
		if (list != NULL)
			json_array_append_new(list, json_string(de->d_name));
		else
			printf("damaged    %s/%s: a damaged store stapled moved "
			    "aside\n", ctl->cache_dir, de->d_name);
	}
	closedir(d);
}

/* The daemon's spell of full map, as it last recorded it (null: none). */
static void
status_map_full(struct ctl *ctl, json_t *full)
{
	char	t[32], d[32];

	if (!json_is_object(full))
		return;
	bundle_time_str(t, json_integer_value(json_object_get(full, "since")));
	ctl_fmt_duration(d, sizeof(d), (long)(ctl->now -
	    json_integer_value(json_object_get(full, "last_refused"))));
	printf("store      MAP FULL since %s (last write refused %s ago): %lld "
	    "write(s) refused, %lld entr%s not in use evicted; raise "
	    "map_size_mb\n", t, d,
	    (long long)json_integer_value(json_object_get(full, "refused")),
	    (long long)json_integer_value(json_object_get(full, "evicted")),
	    json_integer_value(json_object_get(full, "evicted")) == 1 ? "y" :
	    "ies");
}

/*
 * "up", "DOWN", or "not asked yet" when no exchange with it has ended (a
 * record of a daemon that does not say "asked": none requested).
 */
static const char *
upstream_state(json_t *u)
{
	json_t	*asked = json_object_get(u, "asked");

	if (json_is_true(json_object_get(u, "up")))
		return "up";
	if (asked != NULL ? json_is_false(asked) :
	    json_integer_value(json_object_get(u, "requests")) == 0)
		return "not asked yet";
	return "DOWN";
}

static void
status_text(struct ctl *ctl, const struct cache_stat *st,
    const struct kind_stat *ks, size_t pool, json_t *daemon)
{
	const struct kind_stat	*all = &ks[0];
	json_t			*v, *svc, *u;
	const char		*name;
	char			 t[32], d[32], lf[64];
	size_t			 i;
	int			 k;

	printf("config     %s\n", ctl->config_file != NULL ?
	    ctl->config_file : "none: the built-in defaults (-f FILE reads one)");
	printf("cache      %s (%zu MiB used of %zu MiB, %zu MiB of it free "
	    "for reuse)\n", ctl->cache_dir,
	    (st->used_bytes + (1 << 20) - 1) >> 20, st->map_bytes >> 20,
	    st->free_bytes >> 20);
	for (k = 1; k < CACHE_KIND_MAX; k++) {
		if (st->entries[k] == 0)
			continue;
		printf("entries    %-4s %zu: %zu valid, %zu expired, %zu "
		    "expiring within 6h, %zu failing refresh\n",
		    cache_kind_str[k], st->entries[k], ks[k].valid,
		    ks[k].expired, ks[k].expiring, ks[k].failing);
	}
	if (st->entries[0] > 0)
		printf("entries    %zu undecodable\n", st->entries[0]);
	if (all->earliest != 0) {
		bundle_time_str(t, all->earliest);
		ctl_fmt_duration(d, sizeof(d), (long)(all->earliest - ctl->now));
		printf("earliest   nextUpdate %s (in %s)\n", t, d);
	} else
		printf("earliest   nextUpdate none (no valid entry)\n");
	printf("expiring   %zu within 6h\n", all->expiring);
	printf("pool       %zu intermediate(s) learned\n", pool);
	status_damaged(ctl, NULL);
	if (daemon == NULL) {
		printf("daemon     no record (stapled has not run on this "
		    "cache)\n");
		return;
	}
	bundle_time_str(t, json_integer_value(json_object_get(daemon,
	    "recorded")));
	ctl_fmt_duration(d, sizeof(d), (long)(ctl->now -
	    json_integer_value(json_object_get(daemon, "recorded"))));
	printf("daemon     pid %lld, recorded %s (%s ago)%s, refresh backlog "
	    "%lld\n", (long long)json_integer_value(json_object_get(daemon,
	    "pid")), t, d, ctl->now - json_integer_value(json_object_get(daemon,
	    "recorded")) > DAEMON_STALE_S ? " STALE: is stapled running?" : "",
	    (long long)json_integer_value(json_object_get(daemon,
	    "refresh_backlog")));
	status_map_full(ctl, json_object_get(daemon, "map_full"));
	json_object_foreach(json_object_get(daemon, "upstreams"), name, svc) {
		json_array_foreach(svc, i, u) {
			v = json_object_get(u, "last_failure");
			lf[0] = '\0';
			if (json_integer_value(v) > 0) {
				ctl_fmt_duration(d, sizeof(d), (long)(ctl->now -
				    json_integer_value(v)));
				snprintf(lf, sizeof(lf), ", last failure %s ago",
				    d);
			}
			printf("upstream   %s %s %s %s, %lld consecutive "
			    "failure(s), %lld request(s), %lld failure(s)%s\n",
			    name, json_string_value(json_object_get(u, "name")),
			    json_string_value(json_object_get(u, "url")),
			    upstream_state(u),
			    (long long)json_integer_value(json_object_get(u,
			    "consecutive_failures")),
			    (long long)json_integer_value(json_object_get(u,
			    "requests")),
			    (long long)json_integer_value(json_object_get(u,
			    "failures")), lf);
		}
	}
}

static json_t *
kind_json(const struct kind_stat *k, size_t total)
{
	char	t[32];
	json_t	*o;

	o = json_pack("{s:I, s:I, s:I, s:I, s:I}", "entries", (json_int_t)total,
	    "valid", (json_int_t)k->valid, "expired", (json_int_t)k->expired,
	    "expiring_6h", (json_int_t)k->expiring, "failing",
	    (json_int_t)k->failing);
	if (o != NULL && k->earliest != 0) {
		bundle_time_str(t, k->earliest);
		json_object_set_new(o, "earliest_next_update", json_string(t));
		json_object_set_new(o, "earliest_next_update_unix",
		    json_integer(k->earliest));
	}
	return o;
}

static void
status_json(struct ctl *ctl, const struct cache_stat *st,
    const struct kind_stat *ks, size_t pool, json_t *daemon)
{
	json_t	*root, *kinds, *all, *dmg;
	size_t	 total = 0;
	int	 k;

	kinds = json_object();
	for (k = 1; k < CACHE_KIND_MAX; k++) {
		total += st->entries[k];
		json_object_set_new(kinds, cache_kind_str[k],
		    kind_json(&ks[k], st->entries[k]));
	}
	root = json_pack("{s:s, s:I, s:I, s:I, s:I, s:o, s:I}", "cache_dir",
	    ctl->cache_dir, "map_bytes", (json_int_t)st->map_bytes,
	    "used_bytes", (json_int_t)st->used_bytes, "free_bytes",
	    (json_int_t)st->free_bytes, "undecodable",
	    (json_int_t)st->entries[0], "kinds", kinds, "pool",
	    (json_int_t)pool);
	if (root == NULL)
		return;
	if ((all = kind_json(&ks[0], total)) != NULL) {
		json_object_update(root, all);
		json_decref(all);
	}
	if ((dmg = json_array()) != NULL) {
		status_damaged(ctl, dmg);
		json_object_set_new(root, "damaged_moved_aside", dmg);
	}
	json_object_set_new(root, "config", ctl->config_file != NULL ?
	    json_string(ctl->config_file) : json_null());
	json_object_set(root, "daemon", daemon != NULL ? daemon : json_null());
	json_dumpf(root, stdout, JSON_INDENT(2));
	putchar('\n');
	json_decref(root);
}

int
cmd_status(struct ctl *ctl, int argc, char **argv)
{
	struct cache_stat	 st;
	struct kind_stat	 ks[CACHE_KIND_MAX];
	struct ctl_ent		*e = NULL;
	json_t			*daemon = NULL;
	json_error_t		 je;
	uint8_t			*rec = NULL;
	size_t			 n, i, reclen, pool;
	int			 rv, idx, k;

	if (argc > 1) {
		printf("usage: staplectl [-C dir] [--json] status\n"
		    "entries by kind, the earliest nextUpdate, entries expiring "
		    "within 6 h,\nthe refresh backlog and per-upstream health "
		    "as stapled last recorded them.\n");
		return strcmp(argv[1], "--help") == 0 ||
		    strcmp(argv[1], "-h") == 0 ? CTL_OK : CTL_USAGE;
	}
	if ((rv = ctl_open_cache(ctl, 1)) != CTL_OK)
		return rv;
	if (cache_stat(ctl->cache, &st) == -1) {
		ctl_warnx("%s", cache_strerror(ctl->cache));
		return CTL_NOFILE;
	}
	if ((rv = ctl_collect(ctl, 0, &e, &n)) != CTL_OK)
		return rv;
	memset(ks, 0, sizeof(ks));
	for (i = 0; i < n; i++) {
		const struct cache_meta	*m = &e[i].meta;

		for (idx = 0; idx < 2; idx++) {
			k = idx == 0 ? 0 : e[i].kind;
			if (m->next_update <= ctl->now) {
				ks[k].expired++;
				continue;
			}
			ks[k].valid++;
			if (m->next_update - ctl->now <= STATUS_EXPIRING_S)
				ks[k].expiring++;
			if (m->refresh_failures > 0)
				ks[k].failing++;
			if (ks[k].earliest == 0 || m->next_update < ks[k].earliest)
				ks[k].earliest = m->next_update;
		}
	}
	free(e);
	pool = entry_pool_count(ctl->cache);
	if (cache_aux_get(ctl->cache, "daemon", &rec, &reclen) == 1)
		daemon = json_loadb((const char *)rec, reclen, 0, &je);
	free(rec);
	if (ctl->json)
		status_json(ctl, &st, ks, pool, daemon);
	else
		status_text(ctl, &st, ks, pool, daemon);
	json_decref(daemon);
	return CTL_OK;
}

/* ---- list ------------------------------------------------------------------ */

static void
list_usage(FILE *f)
{
	fprintf(f, "usage: staplectl [-C dir] [--json] list [--kind "
	    "ocsp|rim|pccs|kds] [--expiring-within DURATION]\n"
	    "    [--header]\n"
	    "one line per entry: key, kind, subject, status, thisUpdate, "
	    "nextUpdate, time left, source,\nCertID hash algorithm (OCSP; "
	    "- for other kinds); a header line first on a terminal\nor with "
	    "--header.\nDURATION: 90s, 30m, 6h, 2d. "
	    "--expiring-within lists valid entries whose nextUpdate\nfalls "
	    "within DURATION from now.\n");
}

/* list's command line: *kind (0: all), *within (-1: any), *header (--header). -1 to go on, else the exit code. */
static int
list_opts(int argc, char **argv, enum cache_kind *kind, long *within,
    int *header)
{
	static const struct option	opts[] = {
		{ "kind", required_argument, NULL, 'k' },
		{ "header", no_argument, NULL, 'H' },
		{ "expiring-within", required_argument, NULL, 'e' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int	ch;

	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (ch) {
		case 'k':
			if (ctl_opt_kind(optarg, kind) != CTL_OK)
				return CTL_USAGE;
			break;
		case 'H':
			*header = 1;
			break;
		case 'e':
			if (ctl_parse_duration(optarg, within) == -1) {
				ctl_warnx("--expiring-within %s: not a duration "
				    "(90s, 30m, 6h, 2d)", optarg);
				return CTL_USAGE;
			}
			break;
		case 'h':
			list_usage(stdout);
			return CTL_OK;
		default:
			list_usage(stderr);
			return CTL_USAGE;
		}
	}
	if (optind != argc) {
		list_usage(stderr);
		return CTL_USAGE;
	}
	return -1;
}

/* One entry: a JSON object into arr with --json, else one line on stdout. */
static void
list_entry(struct ctl *ctl, const struct ctl_ent *e, json_t *arr)
{
	const struct cache_meta	*m = &e->meta;
	struct cache_body	 b;
	const char		*st;
	char			 key[2 * CACHE_KEY_MAX_BYTES + 1], subj[160];
	char			 tu[32], nu[32], left[32], stbuf[16], hash[32];
	json_t			*o;

	if (cache_get(ctl->cache, e->kind, e->key, e->klen, NULL, &b) != 1)
		memset(&b, 0, sizeof(b));
	util_hex(e->key, e->klen, key);
	ctl_entry_subject(e, &b, subj, sizeof(subj));
	ctl_entry_hash(e, &b, hash, sizeof(hash));
	bundle_time_str(tu, m->this_update);
	bundle_time_str(nu, m->next_update);
	if ((st = bundle_status_name(e->kind, m->status)) == NULL) {
		snprintf(stbuf, sizeof(stbuf), "%u", m->status);
		st = stbuf;
	}
	if (arr != NULL) {
		o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:b, "
		    "s:s, s:I}", "key", key, "kind", cache_kind_str[e->kind],
		    "subject", subj, "status", st, "this_update", tu,
		    "next_update", nu, "seconds_left",
		    (json_int_t)(m->next_update - ctl->now), "valid",
		    entry_servable(m, e->kind, ctl_skew_s(ctl, e->kind), ctl->now),
		    "source", m->source, "served",
		    (json_int_t)m->served_count);
		if (kind_table[e->kind]->label_field != NULL)
			json_object_set_new(o, kind_table[e->kind]->label_field,
			    json_string(hash));
		json_array_append_new(arr, o);
		return;
	}
	if (m->next_update > ctl->now)
		ctl_fmt_duration(left, sizeof(left),
		    (long)(m->next_update - ctl->now));
	else
		snprintf(left, sizeof(left), "expired");
	printf("%s %-4s %s %s %s %s %s %s %s\n", key, cache_kind_str[e->kind],
	    subj, st, tu, nu, left, m->source[0] != '\0' ? m->source : "-",
	    hash);
}

int
cmd_list(struct ctl *ctl, int argc, char **argv)
{
	struct ctl_ent		*e = NULL;
	enum cache_kind		 kind = 0;
	json_t			*arr = NULL;
	const struct cache_meta	*m;
	long			 within = -1;
	size_t			 n, i;
	int			 rv, header = 0;

	if ((rv = list_opts(argc, argv, &kind, &within, &header)) != -1)
		return rv;
	if ((rv = ctl_open_cache(ctl, 1)) != CTL_OK)
		return rv;
	if ((rv = ctl_collect(ctl, kind, &e, &n)) != CTL_OK)
		return rv;
	if (ctl->json)
		arr = json_array();
	/* For a reader; a script reads lines without it, as before. */
	else if (header || isatty(STDOUT_FILENO))
		printf("KEY KIND SUBJECT STATUS THISUPDATE NEXTUPDATE LEFT "
		    "SOURCE HASH\n");
	for (i = 0; i < n; i++) {
		m = &e[i].meta;
		if (within >= 0 && (m->next_update <= ctl->now ||
		    m->next_update - ctl->now > within))
			continue;
		list_entry(ctl, &e[i], arr);
	}
	if (arr != NULL) {
		json_dumpf(arr, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(arr);
	}
	free(e);
	return CTL_OK;
}

/* ---- purge ---------------------------------------------------------------- */

static void
purge_usage(FILE *f)
{
	fprintf(f, "usage: staplectl [-C dir] purge --expired | KEY...\n"
	    "--expired deletes every entry past its nextUpdate (never served "
	    "again anyway);\nKEY deletes that entry, of whatever kind (keys as "
	    "'list' prints them).\n");
}

int
cmd_purge(struct ctl *ctl, int argc, char **argv)
{
	static const struct option	opts[] = {
		{ "expired", no_argument, NULL, 'x' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct ctl_ent	*e = NULL;
	struct cache_meta m;
	uint8_t		 key[CACHE_KEY_MAX_BYTES];
	size_t		 klen, n, i, deleted = 0;
	int		 ch, rv, expired = 0, k, found, failed = 0;

	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (ch) {
		case 'x':
			expired = 1;
			break;
		case 'h':
			purge_usage(stdout);
			return CTL_OK;
		default:
			purge_usage(stderr);
			return CTL_USAGE;
		}
	}
	if (expired == (optind < argc)) {
		purge_usage(stderr);
		return CTL_USAGE;
	}
	for (i = optind; i < (size_t)argc; i++)
		if (ctl_parse_key(argv[i], key, &klen) == -1) {
			ctl_warnx("%s: not a hex key", argv[i]);
			return CTL_USAGE;
		}
	if ((rv = ctl_open_cache(ctl, 0)) != CTL_OK)
		return rv;
	if (expired) {
		if ((rv = ctl_collect(ctl, 0, &e, &n)) != CTL_OK)
			return rv;
		for (i = 0; i < n; i++) {
			if (e[i].meta.next_update > ctl->now)
				continue;
			if (cache_del(ctl->cache, e[i].kind, e[i].key,
			    e[i].klen) == -1) {
				ctl_warnx("%s", cache_strerror(ctl->cache));
				failed = 1;
				continue;
			}
			deleted++;
		}
		free(e);
	}
	for (i = optind; !expired && i < (size_t)argc; i++) {
		ctl_parse_key(argv[i], key, &klen);
		for (found = 0, k = 1; k < CACHE_KIND_MAX; k++) {
			if (cache_get_meta(ctl->cache, k, key, klen, &m) != 1)
				continue;
			found = 1;
			if (cache_del(ctl->cache, k, key, klen) == -1) {
				ctl_warnx("%s", cache_strerror(ctl->cache));
				failed = 1;
			} else
				deleted++;
		}
		if (!found) {
			ctl_warnx("%s: no such entry", argv[i]);
			failed = 1;
		}
	}
	printf("purged %zu entr%s\n", deleted, deleted == 1 ? "y" : "ies");
	return failed ? CTL_REJECTED : CTL_OK;
}

/*
 * check --salvage on a damaged store: with the daemon's claim on the
 * directory (none may run), move data.mdb aside and carry into a fresh
 * store what entry/salvage.c admits again. CTL_OK, or CTL_NOFILE (said).
 */
static int
check_salvage(struct ctl *ctl, const char *damage)
{
	struct entry_rules		 rules;
	struct entry_salvage_count	 cnt;
	struct ctl_trust		 t;
	struct cache			*fresh = NULL;
	char				 aside[PATH_MAX], why[CACHE_DAMAGE_NOTE_BYTES];
	int				 lock, rv = CTL_NOFILE;

	memset(&rules, 0, sizeof(rules));
	if ((lock = cache_lock_dir(ctl->cache_dir, why, sizeof(why))) == -1) {
		ctl_warnx("%s; stapled salvages a store it finds damaged "
		    "itself", why);
		return CTL_NOFILE;
	}
	if (ctl_trust_load(ctl, &t, 0) != CTL_OK)
		goto out;
	entry_rules_init(&rules, &ctl->conf);
	ctl_trust_rules(&rules, &t);
	if (cache_move_aside(ctl->cache_dir, aside, sizeof(aside)) == -1) {
		ctl_warnx("cache %s is damaged (%s), and moving it aside "
		    "failed: %s", ctl->cache_dir, damage, strerror(errno));
		goto out;
	}
	printf("cache %s: damaged (%s): moved aside to %s\n", ctl->cache_dir,
	    damage, aside);
	/*
	 * The claim's holder has the new store open, as a daemon has: the
	 * child writing into it then shares the holder's lock file
	 * (cache_check_peer), which writes are refused without.
	 */
	if ((fresh = cache_open(ctl->cache_dir, ctl->conf.map_size, 0, why,
	    sizeof(why))) == NULL) {
		ctl_warnx("cache %s: the new store: %s", ctl->cache_dir, why);
		goto out;
	}
	if (entry_salvage_forked(aside, ctl->cache_dir, ctl->conf.map_size,
	    &rules, ctl->now, &cnt, why, sizeof(why)) == -1) {
		ctl_warnx("cache %s: salvage of %s failed: %s (%zu entries "
		    "carried before)", ctl->cache_dir, aside, why, cnt.carried);
		goto out;
	}
	printf("cache %s: salvaged %zu of %zu entries from %s (%zu refused, "
	    "%zu without a body, %zu expired, %zu pool certificates)\n",
	    ctl->cache_dir, cnt.carried + cnt.kept, cnt.found, aside,
	    cnt.refused, cnt.lost, cnt.expired, cnt.pool);
	if (cnt.refusal[0] != '\0')
		printf("cache %s: the first refused: %s\n", ctl->cache_dir,
		    cnt.refusal);
	rv = CTL_OK;
 out:
	cache_close(fresh);
	ctl_trust_free(&t);
	close(lock);
	return rv;
}

static void
check_usage(FILE *f)
{
	fprintf(f, "usage: staplectl [-C dir] [--json] check [--salvage]\n"
	    "reads every record of every database of the cache in a child "
	    "process;\nexit 0 sound, 3 damaged (or unreadable). Only "
	    "structural damage is found.\nWith --salvage (stapled stopped), "
	    "a damaged store is moved aside and what\nof it verifies again "
	    "is carried into a fresh store: exit 0 once done.\n");
}

/* check: the cheap checks, then every record of every database read in a child. */
int
cmd_check(struct ctl *ctl, int argc, char **argv)
{
	struct stat	sb;
	char		why[CACHE_DAMAGE_NOTE_BYTES];
	int		r, salvage = 0;

	if (argc == 2 && strcmp(argv[1], "--salvage") == 0)
		salvage = 1;
	else if (argc > 1) {
		check_usage(stdout);
		return strcmp(argv[1], "--help") == 0 ||
		    strcmp(argv[1], "-h") == 0 ? CTL_OK : CTL_USAGE;
	}
	if (stat(ctl->cache_dir, &sb) == -1) {
		ctl_warnx("cache %s: %s", ctl->cache_dir, strerror(errno));
		return CTL_NOFILE;
	}
	why[0] = '\0';
	if ((r = cache_check_file(ctl->cache_dir, why, sizeof(why))) == 0)
		r = ctl_check_walk(ctl, why, sizeof(why));
	if (r == 1 && salvage)
		return check_salvage(ctl, why);
	if (ctl->json) {
		json_t	*o = json_pack("{s:s, s:s, s:s}", "cache", ctl->cache_dir,
		    "verdict", r == 0 ? "sound" : r == 1 ? "damaged" : "unreadable",
		    "why", why);

		if (o != NULL) {
			json_dumpf(o, stdout, JSON_INDENT(2));
			putchar('\n');
			json_decref(o);
		}
	} else if (r == 0)
		printf("cache %s: sound (every record read)\n", ctl->cache_dir);
	if (r == 1)
		ctl_warnx("cache %s is damaged: %s (stapled moves a damaged "
		    "store aside and salvages it; so does check --salvage)",
		    ctl->cache_dir, why);
	else if (r == -1)
		ctl_warnx("cache %s: %s", ctl->cache_dir, why);
	return r == 0 ? CTL_OK : CTL_NOFILE;
}
