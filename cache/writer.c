/* SPDX-License-Identifier: Apache-2.0 */
/* The store's writer thread: copied writes handed to a one-thread pool (cache/workers.h), done in order on its twin handle. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/workers.h"
#include "cache/writer.h"

enum wop_type {
	WOP_PUT,
	WOP_PUT_META,
	WOP_TOUCH,
	WOP_AUX,
	WOP_MARK,
	WOP_ROOM,
	WOP_DROP,
};

struct wop {
	struct cache_workers_job job;		/* first: the pool's link */
	enum wop_type		 type;
	uint8_t			 key[CACHE_KEY_MAX_BYTES];
	size_t			 klen;
	struct cache_meta	 meta;
	struct cache_body	 body;		/* into buf */
	uint8_t			*buf;
	struct cache_touch	*touch;
	size_t			 ntouch;
	cache_writer_done	*done;
	void			*arg;
	/* set by the thread */
	int			 rc;
	int			 map_full;
	char			 err[256];
	struct cache_room	 room;
};

struct cache_writer {
	struct cache		*twin;		/* the thread's (its slot) */
	struct cache_workers	*pool;		/* one thread: in order */
};

static void
wop_free(struct wop *o)
{
	if (o == NULL)
		return;
	free(o->buf);
	free(o->touch);
	free(o);
}

/* cache_workers_run: the write, on the thread's twin. */
static void
wop_run(struct cache_workers_job *j, void *slot)
{
	struct wop	*o = (struct wop *)j;
	struct cache	*c = slot;

	/* The original's environment, as it is now (a reset waits for us). */
	cache_twin_follow(c);
	switch (o->type) {
	case WOP_PUT:
		o->rc = cache_put(c, o->key, o->klen, &o->meta, &o->body);
		break;
	case WOP_PUT_META:
		o->rc = cache_put_meta(c, o->key, o->klen, &o->meta);
		break;
	case WOP_TOUCH:
		o->rc = cache_touch(c, o->touch, o->ntouch);
		break;
	case WOP_AUX:
		o->rc = cache_aux_put(c, (const char *)o->key, o->body.response,
		    o->body.response_len);
		break;
	case WOP_MARK:
		o->rc = 0;
		break;
	case WOP_ROOM:
		o->rc = cache_room(c, &o->room);
		break;
	case WOP_DROP:
		o->rc = cache_drop_damaged(c, o->meta.kind, o->key, o->klen);
		break;
	}
	if (o->rc == -1) {
		o->map_full = cache_map_full(c);
		snprintf(o->err, sizeof(o->err), "%s", cache_strerror(c));
	}
}

/* cache_workers_done: the caller's callback, if any, on the caller's thread. */
static void
wop_done(struct cache_workers_job *j, void *arg)
{
	struct wop		*o = (struct wop *)j;
	struct cache_writer_res	 res;

	(void)arg;
	if (o->done != NULL) {
		res.rc = o->rc;
		res.map_full = o->map_full;
		res.err = o->err;
		res.room = o->room;
		o->done(&res, o->arg);
	}
	wop_free(o);
}

static const struct cache_workers_ops writer_ops = {
	.what = "cache writer",
	.run = wop_run,
	.done = wop_done,
};

struct cache_writer *
cache_writer_start(struct cache *c, char *err, size_t errlen)
{
	struct cache_writer	*w;

	if ((w = calloc(1, sizeof(*w))) == NULL) {
		snprintf(err, errlen, "cache writer: %s", strerror(ENOMEM));
		return NULL;
	}
	if ((w->twin = cache_twin(c)) == NULL) {
		snprintf(err, errlen, "cache writer: %s", strerror(ENOMEM));
		free(w);
		return NULL;
	}
	if ((w->pool = cache_workers_start(&writer_ops, w, w->twin, 0, 1, err,
	    errlen)) == NULL) {
		cache_close(w->twin);
		free(w);
		return NULL;
	}
	return w;
}

int
cache_writer_fd(const struct cache_writer *w)
{
	return cache_workers_fd(w->pool);
}

size_t
cache_writer_pending(const struct cache_writer *w)
{
	return cache_workers_pending(w->pool);
}

void
cache_writer_collect(struct cache_writer *w)
{
	cache_workers_collect(w->pool);
}

void
cache_writer_wait(struct cache_writer *w)
{
	if (w == NULL)
		return;
	cache_workers_wait(w->pool);
}

void
cache_writer_stop(struct cache_writer *w)
{
	if (w == NULL)
		return;
	cache_workers_stop(w->pool);
	cache_close(w->twin);
	free(w);
}

static int
submit(struct cache_writer *w, struct wop *o, cache_writer_done *done,
    void *arg)
{
	o->done = done;
	o->arg = arg;
	cache_workers_queue(w->pool, &o->job);
	return 0;
}

static struct wop *
wop_new(enum wop_type type, const uint8_t *key, size_t klen)
{
	struct wop	*o;

	if (klen > CACHE_KEY_MAX_BYTES) {
		errno = EINVAL;
		return NULL;
	}
	if ((o = calloc(1, sizeof(*o))) == NULL)
		return NULL;
	o->type = type;
	if (klen > 0)
		memcpy(o->key, key, klen);
	o->klen = klen;
	return o;
}

/* Copy n bytes to *dst from p, moving p on; NULL stays NULL. */
static const uint8_t *
copy_part(uint8_t **p, const uint8_t *src, size_t n)
{
	uint8_t	*at = *p;

	if (src == NULL)
		return NULL;
	if (n > 0)
		memcpy(at, src, n);
	*p += n;
	return at;
}

int
cache_writer_put(struct cache_writer *w, const uint8_t *key, size_t klen,
    const struct cache_meta *meta, const struct cache_body *body,
    cache_writer_done *done, void *arg)
{
	struct wop	*o;
	uint8_t		*p;
	size_t		 n;

	if ((o = wop_new(WOP_PUT, key, klen)) == NULL)
		return -1;
	o->meta = *meta;
	n = body->request_len + body->response_len + body->headers_len;
	if ((o->buf = malloc(n > 0 ? n : 1)) == NULL) {
		wop_free(o);
		return -1;
	}
	p = o->buf;
	o->body.request = copy_part(&p, body->request, body->request_len);
	o->body.request_len = body->request_len;
	o->body.response = copy_part(&p, body->response, body->response_len);
	o->body.response_len = body->response_len;
	o->body.headers = copy_part(&p, body->headers, body->headers_len);
	o->body.headers_len = body->headers_len;
	return submit(w, o, done, arg);
}

int
cache_writer_put_meta(struct cache_writer *w, const uint8_t *key, size_t klen,
    const struct cache_meta *meta, cache_writer_done *done, void *arg)
{
	struct wop	*o;

	if ((o = wop_new(WOP_PUT_META, key, klen)) == NULL)
		return -1;
	o->meta = *meta;
	return submit(w, o, done, arg);
}

int
cache_writer_touch(struct cache_writer *w, const struct cache_touch *t,
    size_t n, cache_writer_done *done, void *arg)
{
	struct wop	*o;
	size_t		 i, used = 0;

	for (i = 0; i < n; i++)
		if (t[i].klen > 0)
			used++;
	if ((o = wop_new(WOP_TOUCH, NULL, 0)) == NULL)
		return -1;
	if (used > 0 && (o->touch = calloc(used, sizeof(*o->touch))) == NULL) {
		wop_free(o);
		return -1;
	}
	for (i = 0; i < n; i++)
		if (t[i].klen > 0)
			o->touch[o->ntouch++] = t[i];
	return submit(w, o, done, arg);
}

int
cache_writer_aux_put(struct cache_writer *w, const char *name,
    const uint8_t *val, size_t len, cache_writer_done *done, void *arg)
{
	struct wop	*o;
	size_t		 nlen = strlen(name);

	/* the name, NUL-terminated, in the key */
	if (nlen >= CACHE_KEY_MAX_BYTES) {
		errno = EINVAL;
		return -1;
	}
	if ((o = wop_new(WOP_AUX, (const uint8_t *)name, nlen + 1)) == NULL)
		return -1;
	if ((o->buf = malloc(len > 0 ? len : 1)) == NULL) {
		wop_free(o);
		return -1;
	}
	if (len > 0)
		memcpy(o->buf, val, len);
	o->body.response = o->buf;
	o->body.response_len = len;
	return submit(w, o, done, arg);
}

/* An operation that carries nothing but its type (a mark, a room check). */
static int
submit_bare(struct cache_writer *w, enum wop_type type, cache_writer_done *done,
    void *arg)
{
	struct wop	*o;

	if ((o = wop_new(type, NULL, 0)) == NULL)
		return -1;
	return submit(w, o, done, arg);
}

int
cache_writer_mark(struct cache_writer *w, cache_writer_done *done, void *arg)
{
	return submit_bare(w, WOP_MARK, done, arg);
}

int
cache_writer_room(struct cache_writer *w, cache_writer_done *done, void *arg)
{
	return submit_bare(w, WOP_ROOM, done, arg);
}

int
cache_writer_drop_damaged(struct cache_writer *w, unsigned kind,
    const uint8_t *key, size_t klen, cache_writer_done *done, void *arg)
{
	struct wop	*o;

	if ((o = wop_new(WOP_DROP, key, klen)) == NULL)
		return -1;
	o->meta.kind = kind;
	return submit(w, o, done, arg);
}
