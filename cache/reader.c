/* SPDX-License-Identifier: Apache-2.0 */
/* Lookups on a few threads: copied keys handed to a pool (cache/workers.h), each lookup on its thread's twin handle. */
#include "config.h"

#include <sys/resource.h>

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "cache/clock.h"
#include "cache/reader.h"
#include "cache/workers.h"

/* One lookup: the key in, a copy of the entry out. */
struct rop {
	struct cache_workers_job job;		/* first: the pool's link */
	uint8_t			 kind;
	uint8_t			 key[CACHE_KEY_MAX_BYTES];
	size_t			 klen;
	cache_reader_done	*done;
	void			*arg;
	/* set by the thread */
	int			 rc;
	struct cache_meta	 meta;
	struct cache_body	 body;		/* into buf */
	uint8_t			*buf;
	char			 err[256];
};

/* A lookup thread's own: the pool's slot. */
struct rthread {
	struct cache_reader	*r;
	struct cache		*twin;
	long			 majflt;	/* this thread's, when last read */
};

struct cache_reader {
	struct cache_workers	*pool;
	unsigned		 nthreads;
	long			 caller_majflt;	/* the caller's thread's */
	/* when a lookup last waited for the disk (mono_us), on any thread */
	_Atomic int64_t		 disk_at;
	struct rthread		 threads[CACHE_READER_MAX_THREADS];
};

/* This thread's page faults that read from the disk so far; -1 when unknown. */
static long
thread_majflt(void)
{
	struct rusage	ru;

	return getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_majflt : -1;
}

/*
 * A lookup on this thread started at t0 and just ended: when it was slow
 * and the thread has read pages from the disk since *seen was taken, the
 * lookups are waiting for the disk. The clock alone would take preemption
 * for the disk; the fault count alone would cost a system call a lookup.
 */
static void
note_lookup(struct cache_reader *r, int64_t t0, long *seen)
{
	int64_t	now = mono_us();
	long	n, was;

	if (now - t0 < CACHE_READER_SLOW_US || (n = thread_majflt()) == -1)
		return;
	was = *seen;
	*seen = n;
	if (n > was)
		atomic_store_explicit(&r->disk_at, now, memory_order_relaxed);
}

static void
rop_free(struct rop *o)
{
	if (o == NULL)
		return;
	free(o->buf);
	free(o);
}

/* Copy what the get borrowed from the map: it is gone with the transaction. */
static int
rop_copy(struct rop *o, const struct cache_body *b)
{
	size_t	n = b->request_len + b->response_len + b->headers_len;
	uint8_t	*p;

	if ((o->buf = malloc(n ? n : 1)) == NULL)
		return -1;
	p = o->buf;
	o->body.request = p;
	o->body.request_len = b->request_len;
	if (b->request_len)
		memcpy(p, b->request, b->request_len);
	p += b->request_len;
	o->body.response = p;
	o->body.response_len = b->response_len;
	if (b->response_len)
		memcpy(p, b->response, b->response_len);
	p += b->response_len;
	o->body.headers = b->headers_len ? p : NULL;
	o->body.headers_len = b->headers_len;
	if (b->headers_len)
		memcpy(p, b->headers, b->headers_len);
	return 0;
}

/* cache_workers_init: the thread's fault count, from which note_lookup counts. */
static void
rthread_init(void *slot)
{
	struct rthread	*t = slot;

	t->majflt = thread_majflt();
}

/* cache_workers_run: the lookup, on the thread's twin. */
static void
rop_run(struct cache_workers_job *j, void *slot)
{
	struct rop		*o = (struct rop *)j;
	struct rthread		*t = slot;
	struct cache		*c = t->twin;
	struct cache_body	 b;
	int64_t			 t0 = mono_us();

	/* The original's environment, as it is now (a reset waits for us). */
	cache_twin_follow(c);
	o->rc = cache_get(c, o->kind, o->key, o->klen, &o->meta, &b);
	if (o->rc == 1 && rop_copy(o, &b) == -1) {
		o->rc = -1;
		snprintf(o->err, sizeof(o->err), "cache: lookup: %s",
		    strerror(ENOMEM));
	} else if (o->rc == -1)
		snprintf(o->err, sizeof(o->err), "%s", cache_strerror(c));
	cache_get_done(c);
	note_lookup(t->r, t0, &t->majflt);
}

/* cache_workers_done: the caller's callback, on the caller's thread. */
static void
rop_done(struct cache_workers_job *j, void *arg)
{
	struct rop		*o = (struct rop *)j;
	struct cache_reader_res	 res;

	(void)arg;
	res.rc = o->rc;
	res.err = o->rc == -1 ? o->err : NULL;
	res.meta = o->meta;
	res.body = o->body;
	o->done(&res, o->arg);
	rop_free(o);
}

static const struct cache_workers_ops reader_ops = {
	.what = "cache reader",
	.thread_name = CACHE_READER_THREAD_NAME,
	.init = rthread_init,
	.run = rop_run,
	.done = rop_done,
};

/* Close the twins made so far and free r; no thread may be running. */
static void
reader_free(struct cache_reader *r)
{
	unsigned	i;

	for (i = 0; i < r->nthreads; i++)
		cache_close(r->threads[i].twin);
	free(r);
}

struct cache_reader *
cache_reader_start(struct cache *c, unsigned nthreads, char *err,
    size_t errlen)
{
	struct cache_reader	*r;
	struct rthread		*t;

	if (nthreads < 1 || nthreads > CACHE_READER_MAX_THREADS) {
		snprintf(err, errlen, "cache reader: %u threads, not in 1..%d",
		    nthreads, CACHE_READER_MAX_THREADS);
		return NULL;
	}
	if ((r = calloc(1, sizeof(*r))) == NULL) {
		snprintf(err, errlen, "cache reader: %s", strerror(ENOMEM));
		return NULL;
	}
	r->caller_majflt = thread_majflt();
	atomic_init(&r->disk_at, INT64_MIN / 2);
	for (; r->nthreads < nthreads; r->nthreads++) {
		t = &r->threads[r->nthreads];
		t->r = r;
		if ((t->twin = cache_twin(c)) == NULL) {
			snprintf(err, errlen, "cache reader: %s",
			    strerror(ENOMEM));
			reader_free(r);
			return NULL;
		}
	}
	if ((r->pool = cache_workers_start(&reader_ops, r, r->threads,
	    sizeof(r->threads[0]), nthreads, err, errlen)) == NULL) {
		reader_free(r);
		return NULL;
	}
	return r;
}

int64_t
cache_reader_clock(void)
{
	return mono_us();
}

void
cache_reader_note(struct cache_reader *r, int64_t started)
{
	note_lookup(r, started, &r->caller_majflt);
}

int
cache_reader_wanted(struct cache_reader *r)
{
	return mono_us() - atomic_load_explicit(&r->disk_at,
	    memory_order_relaxed) < CACHE_READER_HOLD_US;
}

int
cache_reader_fd(const struct cache_reader *r)
{
	return cache_workers_fd(r->pool);
}

size_t
cache_reader_pending(const struct cache_reader *r)
{
	return cache_workers_pending(r->pool);
}

int
cache_reader_get(struct cache_reader *r, unsigned kind,
    const uint8_t *key, size_t klen, cache_reader_done *done, void *arg)
{
	struct rop	*o;

	if (klen < 1 || klen > CACHE_KEY_MAX_BYTES) {
		errno = EINVAL;
		return -1;
	}
	if (cache_workers_pending(r->pool) >=
	    (size_t)r->nthreads * CACHE_READER_PENDING_PER_THREAD) {
		errno = EAGAIN;
		return -1;
	}
	if ((o = calloc(1, sizeof(*o))) == NULL)
		return -1;
	o->kind = kind;
	memcpy(o->key, key, klen);
	o->klen = klen;
	o->done = done;
	o->arg = arg;
	cache_workers_queue(r->pool, &o->job);
	return 0;
}

void
cache_reader_collect(struct cache_reader *r)
{
	cache_workers_collect(r->pool);
}

void
cache_reader_wait(struct cache_reader *r)
{
	if (r == NULL)
		return;
	cache_workers_wait(r->pool);
}

void
cache_reader_stop(struct cache_reader *r)
{
	if (r == NULL)
		return;
	cache_workers_stop(r->pool);
	reader_free(r);
}
