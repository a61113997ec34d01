/* SPDX-License-Identifier: Apache-2.0 */
/* Salvage (entry/salvage.h): each record a raw scan of a damaged store finds is admitted again by its kind's rules, then stored. */
#include "config.h"

#include <sys/resource.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/scan.h"
#include "entry/entry.h"
#include "entry/kind.h"
#include "entry/pool.h"
#include "entry/salvage.h"

#define SALVAGE_BATCH		256	/* entries per write transaction */
#define SALVAGE_SOURCE		"salvage"	/* an entry whose meta was lost */
#define SALVAGE_EXIT_FAILED	3	/* the child's "could not salvage" */

static int	refuse(char *, size_t, const char *, ...)
		    __attribute__((format(printf, 3, 4)));

/* why gets the reason; returns 0 (refused) for a tail call. */
static int
refuse(char *why, size_t whylen, const char *fmt, ...)
{
	va_list	ap;

	if (why != NULL && whylen > 0) {
		va_start(ap, fmt);
		vsnprintf(why, whylen, fmt, ap);
		va_end(ap);
	}
	return 0;
}

/* What an admitted answer teaches joins the kinds' pools and r->pool, as the daemon learns it. */
static void
salv_learn(const struct entry_rules *r, const struct kind *k,
    const struct entry_judgement *j)
{
	const uint8_t	*der[KIND_TEACH_MAX];
	size_t		 len[KIND_TEACH_MAX], i, n;

	n = k->teaches(j, der, len);
	for (i = 0; i < n; i++) {
		if (kind_pool_add(r->trust, der[i], len[i]) == -1)
			continue;
		if (r->pool != NULL)
			(void)entry_pool_put(r->pool, der[i], len[i]);
	}
}

int
entry_salvage_admit(const struct entry_rules *r, enum cache_kind kind,
    const uint8_t *key, size_t klen, const struct cache_body *body,
    const struct cache_meta *old, time_t now, struct cache_meta *out,
    int *expired, char *why, size_t whylen)
{
	struct entry_record	 x = { key, klen, body->request,
				    body->request_len, body->response,
				    body->response_len, body->headers,
				    body->headers_len, 0 };
	const struct kind	*k = kind_name(kind) != NULL ?
				    kind_table[kind] : NULL;
	struct entry_judgement	 j;
	int			 ok;

	*expired = 0;
	memset(out, 0, sizeof(*out));
	/* Its validity runs from its fetch, which only its meta knew. */
	if (k != NULL && k->dated_by_fetch && old == NULL)
		return refuse(why, whylen, "%s: its fetch time was lost with "
		    "its meta", kind_name(kind));
	if (old != NULL)
		x.fetched_at = old->this_update;
	/* The body's own times decide: the meta found may be an older copy. */
	ok = entry_judge(kind, r, &x, NULL, now, &j);
	/* The rule counts from now: never longer than it was stored for. */
	if (ok && k->dated_by_fetch && old->next_update < j.meta.next_update)
		j.meta.next_update = old->next_update;
	if (ok && k->teaches != NULL)
		salv_learn(r, k, &j);
	*out = j.meta;
	entry_judgement_free(&j);
	if (!ok)
		return refuse(why, whylen, "%s", j.reason);
	if (out->next_update <= now) {
		*expired = 1;
		return refuse(why, whylen, "expired");
	}
	out->next_refresh_at = 0;
	out->refresh_failures = 0;
	out->flags &= ~CACHE_F_PARKED;
	if (old != NULL) {
		out->flags |= old->flags & CACHE_F_IMPORTED;
		out->fetched_at = old->fetched_at;
		out->last_served_at = old->last_served_at;
		out->served_count = old->served_count;
		memcpy(out->source, old->source, sizeof(out->source));
	} else {
		out->fetched_at = now;
		out->last_served_at = now;
		snprintf(out->source, sizeof(out->source), "%s", SALVAGE_SOURCE);
	}
	return 1;
}

/* ---- the pool ------------------------------------------------------------- */

/*
 * The pool records: those the pool's rule admits (a CA certificate that
 * parses and chains to an anchor: kind_pool_admits) join the kinds'
 * pools and the new store, under the name of their DER (entry_pool_put). 0, or -1 (out of memory,
 * or the store refused a write: why).
 */
static int
salv_pool(const struct cache_scan *s, struct cache *to,
    const struct entry_rules *r, struct entry_salvage_count *cnt,
    char *why, size_t whylen)
{
	const uint8_t	**der = NULL;
	uint8_t		 *v;
	size_t		 *len = NULL, n = 0, i;
	int		 *ok = NULL, rv = -1, rc;

	if ((der = calloc(s->n + 1, sizeof(*der))) == NULL ||
	    (len = calloc(s->n + 1, sizeof(*len))) == NULL ||
	    (ok = calloc(s->n + 1, sizeof(*ok))) == NULL)
		goto nomem;
	for (i = 0; i < s->n; i++) {
		const struct cache_scan_rec	*p = &s->rec[i];

		if (p->what != CACHE_SCAN_POOL || cache_scan_value(s, p, &v) == -1)
			continue;
		der[n] = v;
		len[n++] = p->len;
	}
	if (n > 0 && kind_pool_admits(r->trust, der, len, n, ok) == -1)
		goto nomem;
	for (i = 0; i < n; i++) {
		if (!ok[i])
			continue;
		/* A freed page may hold a second copy: counted once. */
		if ((rc = entry_pool_put(to, der[i], len[i])) == -1) {
			refuse(why, whylen, "pool: %s", cache_strerror(to));
			goto out;
		}
		if (rc == 1) {
			(void)kind_pool_add(r->trust, der[i], len[i]);
			cnt->pool++;
		}
	}
	rv = 0;
	goto out;
 nomem:
	refuse(why, whylen, "pool: out of memory");
 out:
	for (i = 0; i < n; i++)
		free((void *)der[i]);
	free(der);
	free(len);
	free(ok);
	return rv;
}

/* ---- the entries ------------------------------------------------------------ */

/* Entries judged and waiting for their write transaction; each owns its value. */
struct salv_batch {
	struct cache_put_item	 item[SALVAGE_BATCH];
	struct cache_meta	 meta[SALVAGE_BATCH];
	struct cache_body	 body[SALVAGE_BATCH];
	uint8_t			*buf[SALVAGE_BATCH];
	int			 res[SALVAGE_BATCH];
	size_t			 n;
};

static void
batch_clear(struct salv_batch *b)
{
	size_t	i;

	for (i = 0; i < b->n; i++)
		free(b->buf[i]);
	b->n = 0;
}

/* Store the batch in one write transaction. 0, or -1 (why). */
static int
batch_flush(struct salv_batch *b, struct cache *to,
    struct entry_salvage_count *cnt, char *why, size_t whylen)
{
	size_t	i;
	int	rv = 0;

	if (b->n == 0)
		return 0;
	if (cache_put_many(to, b->item, b->n, b->res) == -1) {
		refuse(why, whylen, "%s", cache_strerror(to));
		rv = -1;
	} else
		for (i = 0; i < b->n; i++) {
			if (b->res[i] == CACHE_PUT_KEPT)
				cnt->kept++;
			else
				cnt->carried++;
		}
	batch_clear(b);
	return rv;
}

/* The group of records s->rec[i..*end) sharing kind and key. */
static size_t
group_end(const struct cache_scan *s, size_t i)
{
	const struct cache_scan_rec	*a = &s->rec[i];
	size_t				 j;

	for (j = i + 1; j < s->n; j++) {
		const struct cache_scan_rec	*b = &s->rec[j];

		if (b->what == CACHE_SCAN_POOL || b->kind != a->kind ||
		    b->klen != a->klen || memcmp(b->key, a->key, a->klen) != 0)
			break;
	}
	return j;
}

/* Of the group's metas, the one written last (the latest fetch, then the latest hit). 1 found, 0 none. */
static int
group_meta(const struct cache_scan *s, size_t i, size_t end,
    struct cache_meta *best)
{
	struct cache_meta	m;
	uint8_t			*v;
	int			 found = 0;

	for (; i < end; i++) {
		if (s->rec[i].what != CACHE_SCAN_META ||
		    cache_scan_value(s, &s->rec[i], &v) == -1)
			continue;
		if (record_meta_decode(v, s->rec[i].len, &m) == 0 &&
		    (!found || m.fetched_at > best->fetched_at ||
		    (m.fetched_at == best->fetched_at &&
		    m.last_served_at > best->last_served_at))) {
			*best = m;
			found = 1;
		}
		free(v);
	}
	return found;
}

static int
rec_key_cmp(const void *k, const void *e)
{
	const struct cache_scan_rec	*a = k, *b = e;
	size_t				 n = a->klen < b->klen ? a->klen : b->klen;
	int				 c;

	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	if ((c = memcmp(a->key, b->key, n)) != 0)
		return c;
	return a->klen < b->klen ? -1 : a->klen > b->klen;
}

/*
 * The response of the first record of (kind, key) among those found
 * whose body decodes, as a copy (entry_find_fn over the scan: a VCEK's
 * cert_chain). NULL when none.
 */
static uint8_t *
scan_find(void *arg, enum cache_kind kind, const uint8_t *key, size_t klen,
    size_t *len, const char **from)
{
	const struct cache_scan	*s = arg;
	struct cache_scan_rec	 k;
	struct cache_body	 cb;
	uint8_t			 kbuf[CACHE_KEY_MAX_BYTES];
	uint8_t			*blob = NULL, *copy = NULL;
	size_t			 lo = 0, hi = s->n, mid;

	if (klen > sizeof(kbuf))
		return NULL;
	memcpy(kbuf, key, klen);
	memset(&k, 0, sizeof(k));
	k.kind = kind;
	k.key = kbuf;
	k.klen = (uint16_t)klen;
	/* The first record of that key: the array is sorted by kind and key. */
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (s->rec[mid].what == CACHE_SCAN_POOL ||
		    rec_key_cmp(&k, &s->rec[mid]) > 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; copy == NULL && lo < s->n && rec_key_cmp(&k, &s->rec[lo]) == 0;
	    lo++) {
		if (s->rec[lo].what != CACHE_SCAN_BODY ||
		    cache_scan_value(s, &s->rec[lo], &blob) == -1)
			continue;
		if (record_body_decode(blob, s->rec[lo].len, &cb) == 0 &&
		    cb.response_len > 0 &&
		    (copy = malloc(cb.response_len)) != NULL) {
			memcpy(copy, cb.response, cb.response_len);
			*len = cb.response_len;
			*from = "the damaged store's";
		}
		free(blob);
		blob = NULL;
	}
	return copy;
}

/*
 * One body copy of the group judged: 1 admitted (*buf owns the value,
 * *body and *m filled), 0 refused (*expired set when that was why).
 */
static int
judge_body(const struct cache_scan *s, const struct cache_scan_rec *p,
    const struct entry_rules *r, const struct cache_meta *old,
    time_t now, uint8_t **buf, struct cache_body *body, struct cache_meta *m,
    int *expired, struct entry_salvage_count *cnt)
{
	char	why[320];
	int	ok;

	*expired = 0;
	if (cache_scan_value(s, p, buf) == -1)
		return 0;
	if (record_body_decode(*buf, p->len, body) == -1) {
		free(*buf);
		*buf = NULL;
		return 0;
	}
	ok = entry_salvage_admit(r, p->kind, p->key, p->klen, body, old, now,
	    m, expired, why, sizeof(why));
	if (!ok) {
		if (cnt->refusal[0] == '\0' && !*expired)
			snprintf(cnt->refusal, sizeof(cnt->refusal), "%s: %.140s",
			    cache_kind_str[p->kind], why);
		free(*buf);
		*buf = NULL;
	}
	return ok;
}

/*
 * The group s->rec[i..end): its newest meta, and of its bodies the one
 * admitted with the latest thisUpdate, into the batch. 1 added, 0 not.
 */
static int
salv_group(const struct cache_scan *s, size_t i, size_t end,
    const struct entry_rules *r, time_t now, struct salv_batch *b,
    struct entry_salvage_count *cnt)
{
	struct cache_meta	 old, m;
	struct cache_body	 body;
	uint8_t			*buf;
	size_t			 k = b->n;
	int			 have_old, expired, any_expired = 0, got = 0;
	int			 bodies = 0;

	have_old = group_meta(s, i, end, &old);
	for (; i < end; i++) {
		if (s->rec[i].what != CACHE_SCAN_BODY)
			continue;
		bodies++;
		if (!judge_body(s, &s->rec[i], r, have_old ? &old : NULL, now,
		    &buf, &body, &m, &expired, cnt)) {
			any_expired |= expired;
			continue;
		}
		if (got && m.this_update <= b->meta[k].this_update) {
			free(buf);
			continue;
		}
		if (got)
			free(b->buf[k]);
		b->buf[k] = buf;
		b->body[k] = body;
		b->meta[k] = m;
		got = 1;
	}
	if (!got) {
		if (bodies == 0)
			cnt->lost++;
		else if (any_expired)
			cnt->expired++;
		else
			cnt->refused++;
		return 0;
	}
	b->item[k].key = s->rec[end - 1].key;
	b->item[k].klen = s->rec[end - 1].klen;
	b->item[k].meta = &b->meta[k];
	b->item[k].body = &b->body[k];
	b->n++;
	return 1;
}

/*
 * 1 when entries of kind teach the OCSP pool (struct kind's teaches): RIMs,
 * whose chains' CAs the OCSP answers about them need. A kind the list
 * does not name teaches nothing.
 */
static int
kind_teaches(unsigned kind)
{
	return kind_name((int)kind) != NULL && kind_table[kind]->teaches != NULL;
}

/*
 * Every group in two passes: the kinds that teach (teach 1), then the
 * other kinds (teach 0).
 */
static int
salv_pass(const struct cache_scan *s, struct cache *to,
    const struct entry_rules *r, time_t now, struct salv_batch *b,
    int teach, struct entry_salvage_count *cnt, char *why, size_t whylen)
{
	size_t	i, end;
	int	rv = 0;

	for (i = 0; i < s->n && rv == 0; i = end) {
		if (s->rec[i].what == CACHE_SCAN_POOL) {
			end = i + 1;
			continue;
		}
		end = group_end(s, i);
		if (kind_teaches(s->rec[i].kind) != teach)
			continue;
		cnt->found++;
		(void)salv_group(s, i, end, r, now, b, cnt);
		if (b->n == SALVAGE_BATCH)
			rv = batch_flush(b, to, cnt, why, whylen);
	}
	if (rv == 0)
		rv = batch_flush(b, to, cnt, why, whylen);
	return rv;
}

static int
salv_entries(const struct cache_scan *s, struct cache *to,
    const struct entry_rules *r, time_t now,
    struct entry_salvage_count *cnt, char *why, size_t whylen)
{
	struct salv_batch		*b;
	struct entry_rules	 rr = *r;
	int				 rv;

	if ((b = calloc(1, sizeof(*b))) == NULL)
		return refuse(why, whylen, "out of memory") - 1;
	rr.pool = to;
	rr.find = scan_find;
	rr.find_arg = (void *)s;
	if ((rv = salv_pass(s, to, &rr, now, b, 1, cnt, why, whylen)) == 0)
		rv = salv_pass(s, to, &rr, now, b, 0, cnt, why, whylen);
	batch_clear(b);
	free(b);
	return rv;
}

int
entry_salvage(const char *path, struct cache *to,
    const struct entry_rules *r, time_t now,
    struct entry_salvage_count *cnt, char *why, size_t whylen)
{
	struct cache_scan	s;
	int			rv = -1;

	memset(cnt, 0, sizeof(*cnt));
	if (cache_scan(&s, path, why, whylen) == -1)
		goto out;
	cnt->leaf_pages = s.leaf_pages;
	/* The pool first: OCSP answers whose chain runs through it then verify. */
	if (salv_pool(&s, to, r, cnt, why, whylen) == -1 ||
	    salv_entries(&s, to, r, now, cnt, why, whylen) == -1)
		goto out;
	rv = 0;
 out:
	cache_scan_free(&s);
	return rv;
}

/* ---- in a child --------------------------------------------------------------- */

/* What the child sends back: its verdict, counts and reason. */
struct salv_msg {
	int				rv;
	struct entry_salvage_count	cnt;
	char				why[CACHE_DAMAGE_NOTE_BYTES];
};

static void
salv_child(int wfd, const char *path, const char *dir, size_t map_bytes,
    const struct entry_rules *r, time_t now)
{
	struct rlimit	 nocore = { 0, 0 };
	struct salv_msg	 msg;
	struct cache	*c;

	setrlimit(RLIMIT_CORE, &nocore);
#ifdef __linux__
	/* A parent that dies (a restart) takes the child with it. */
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	memset(&msg, 0, sizeof(msg));
	msg.rv = -1;
	if ((c = cache_open(dir, map_bytes, 0, msg.why, sizeof(msg.why))) != NULL) {
		cache_set_kind_name(c, kind_name);
		msg.rv = entry_salvage(path, c, r, now, &msg.cnt, msg.why,
		    sizeof(msg.why));
	}
	cache_close(c);
	if (write(wfd, &msg, sizeof(msg)) != (ssize_t)sizeof(msg))
		_exit(SALVAGE_EXIT_FAILED);
	_exit(msg.rv == 0 ? 0 : SALVAGE_EXIT_FAILED);
}

pid_t
entry_salvage_spawn(const char *path, const char *dir, size_t map_bytes,
    const struct entry_rules *r, time_t now, int *fd)
{
	int	p[2];
	pid_t	pid;

	if (pipe2(p, O_CLOEXEC) == -1)
		return -1;
	if ((pid = fork()) == -1) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		close(p[0]);
		salv_child(p[1], path, dir, map_bytes, r, now);
	}
	close(p[1]);
	*fd = p[0];
	return pid;
}

int
entry_salvage_result(int wstatus, int fd, struct entry_salvage_count *cnt,
    char *why, size_t whylen)
{
	struct salv_msg	msg;
	ssize_t		n;

	memset(cnt, 0, sizeof(*cnt));
	while ((n = read(fd, &msg, sizeof(msg))) == -1 && errno == EINTR)
		;
	close(fd);
	if (WIFSIGNALED(wstatus))
		return refuse(why, whylen, "the salvage was killed by signal "
		    "%d (%s)", WTERMSIG(wstatus), strsignal(WTERMSIG(wstatus))) - 1;
	if (n != (ssize_t)sizeof(msg))
		return refuse(why, whylen, "the salvage ended without a "
		    "verdict") - 1;
	msg.why[sizeof(msg.why) - 1] = '\0';
	*cnt = msg.cnt;
	if (msg.rv != 0)
		return refuse(why, whylen, "%s", msg.why) - 1;
	return 0;
}

int
entry_salvage_forked(const char *path, const char *dir, size_t map_bytes,
    const struct entry_rules *r, time_t now,
    struct entry_salvage_count *cnt, char *why, size_t whylen)
{
	int	fd, status;
	pid_t	pid;

	if ((pid = entry_salvage_spawn(path, dir, map_bytes, r, now, &fd)) == -1)
		return refuse(why, whylen, "fork: %s", strerror(errno)) - 1;
	while (waitpid(pid, &status, 0) == -1)
		if (errno != EINTR) {
			close(fd);
			return refuse(why, whylen, "waitpid: %s",
			    strerror(errno)) - 1;
		}
	return entry_salvage_result(status, fd, cnt, why, whylen);
}
