/* SPDX-License-Identifier: Apache-2.0 */
/* Lookups on a few threads: a queue of copied keys, each taken by one thread and its twin handle. */
#include "config.h"

#include <sys/eventfd.h>
#include <sys/resource.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/clock.h"
#include "cache/reader.h"

struct rop {
	struct rop		*next;
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

struct rthread {
	struct cache_reader	*r;
	struct cache		*twin;
	pthread_t		 thread;
	long			 majflt;	/* this thread's, when last read */
};

struct cache_reader {
	pthread_mutex_t	 mu;
	pthread_cond_t	 wake;		/* the threads: work, or stop */
	pthread_cond_t	 idle;		/* cache_reader_wait: a lookup finished */
	struct rop	*todo, **todo_tail;
	struct rop	*finished;	/* newest first */
	size_t		 queued;	/* on todo or running: not yet finished */
	size_t		 pending;	/* submitted, callback not yet run */
	int		 stopping;
	int		 efd;
	unsigned	 nthreads;	/* started */
	long		 caller_majflt;	/* the caller's thread's, when last read */
	/* when a lookup last waited for the disk (mono_us), on any thread */
	_Atomic int64_t	 disk_at;
	struct rthread	 threads[CACHE_READER_MAX_THREADS];
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

static void
rop_run(struct cache *c, struct rop *o)
{
	struct cache_body	b;

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
}

static void *
reader_main(void *arg)
{
	struct rthread		*t = arg;
	struct cache_reader	*r = t->r;
	struct rop		*o;
	uint64_t		 one = 1;
	int64_t			 t0;
	int			 was_empty;

	t->majflt = thread_majflt();
	pthread_mutex_lock(&r->mu);
	for (;;) {
		while (r->todo == NULL && !r->stopping)
			pthread_cond_wait(&r->wake, &r->mu);
		if ((o = r->todo) == NULL)
			break;
		if ((r->todo = o->next) == NULL)
			r->todo_tail = &r->todo;
		pthread_mutex_unlock(&r->mu);

		t0 = mono_us();
		rop_run(t->twin, o);
		note_lookup(r, t0, &t->majflt);

		pthread_mutex_lock(&r->mu);
		was_empty = r->finished == NULL;
		o->next = r->finished;
		r->finished = o;
		r->queued--;
		pthread_cond_broadcast(&r->idle);
		/*
		 * One wake-up for what the loop has not taken yet: the loop
		 * reads the fd before it takes the list, so nothing is missed.
		 */
		if (was_empty)
			(void)!write(r->efd, &one, sizeof(one));
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

/* End the threads started so far and free everything; nothing may be queued. */
static void
reader_free(struct cache_reader *r)
{
	unsigned	i;

	pthread_mutex_lock(&r->mu);
	r->stopping = 1;
	pthread_cond_broadcast(&r->wake);
	pthread_mutex_unlock(&r->mu);
	for (i = 0; i < r->nthreads; i++) {
		pthread_join(r->threads[i].thread, NULL);
		cache_close(r->threads[i].twin);
	}
	pthread_cond_destroy(&r->idle);
	pthread_cond_destroy(&r->wake);
	pthread_mutex_destroy(&r->mu);
	if (r->efd != -1)
		close(r->efd);
	free(r);
}

struct cache_reader *
cache_reader_start(struct cache *c, unsigned nthreads, char *err,
    size_t errlen)
{
	struct cache_reader	*r;
	struct rthread		*t;
	int			 rc;

	if (nthreads < 1 || nthreads > CACHE_READER_MAX_THREADS) {
		snprintf(err, errlen, "cache reader: %u threads, not in 1..%d",
		    nthreads, CACHE_READER_MAX_THREADS);
		return NULL;
	}
	if ((r = calloc(1, sizeof(*r))) == NULL) {
		snprintf(err, errlen, "cache reader: %s", strerror(ENOMEM));
		return NULL;
	}
	r->todo_tail = &r->todo;
	r->caller_majflt = thread_majflt();
	atomic_init(&r->disk_at, INT64_MIN / 2);
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->wake, NULL);
	pthread_cond_init(&r->idle, NULL);
	if ((r->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) == -1) {
		snprintf(err, errlen, "cache reader: eventfd: %s",
		    strerror(errno));
		reader_free(r);
		return NULL;
	}
	while (r->nthreads < nthreads) {
		t = &r->threads[r->nthreads];
		t->r = r;
		if ((t->twin = cache_twin(c)) == NULL) {
			snprintf(err, errlen, "cache reader: %s",
			    strerror(ENOMEM));
			reader_free(r);
			return NULL;
		}
		if ((rc = pthread_create(&t->thread, NULL, reader_main, t)) != 0) {
			snprintf(err, errlen, "cache reader: thread: %s",
			    strerror(rc));
			cache_close(t->twin);
			reader_free(r);
			return NULL;
		}
		/* For top -H and ps -L; a name is no reason to fail. */
		(void)pthread_setname_np(t->thread, CACHE_READER_THREAD_NAME);
		r->nthreads++;
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
	return r->efd;
}

size_t
cache_reader_pending(const struct cache_reader *r)
{
	return r->pending;
}

int
cache_reader_get(struct cache_reader *r, enum cache_kind kind,
    const uint8_t *key, size_t klen, cache_reader_done *done, void *arg)
{
	struct rop	*o;

	if (klen < 1 || klen > CACHE_KEY_MAX_BYTES) {
		errno = EINVAL;
		return -1;
	}
	if (r->pending >= (size_t)r->nthreads * CACHE_READER_PENDING_PER_THREAD) {
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
	pthread_mutex_lock(&r->mu);
	*r->todo_tail = o;
	r->todo_tail = &o->next;
	r->queued++;
	pthread_cond_signal(&r->wake);
	pthread_mutex_unlock(&r->mu);
	r->pending++;
	return 0;
}

/* Run the callbacks of the lookups the threads have finished. */
void
cache_reader_collect(struct cache_reader *r)
{
	struct cache_reader_res	 res;
	struct rop		*o, *next, *prev;
	uint64_t		 n;

	(void)!read(r->efd, &n, sizeof(n));
	pthread_mutex_lock(&r->mu);
	o = r->finished;
	r->finished = NULL;
	pthread_mutex_unlock(&r->mu);
	/* Newest first as pushed: oldest first for the callbacks. */
	for (prev = NULL; o != NULL; o = next) {
		next = o->next;
		o->next = prev;
		prev = o;
	}
	for (o = prev; o != NULL; o = next) {
		next = o->next;
		r->pending--;
		res.rc = o->rc;
		res.err = o->rc == -1 ? o->err : NULL;
		res.meta = o->meta;
		res.body = o->body;
		o->done(&res, o->arg);
		rop_free(o);
	}
}

void
cache_reader_wait(struct cache_reader *r)
{
	if (r == NULL)
		return;
	/* A callback may submit more: wait for those too. */
	while (r->pending > 0) {
		pthread_mutex_lock(&r->mu);
		while (r->queued > 0)
			pthread_cond_wait(&r->idle, &r->mu);
		pthread_mutex_unlock(&r->mu);
		cache_reader_collect(r);
	}
}

void
cache_reader_stop(struct cache_reader *r)
{
	if (r == NULL)
		return;
	cache_reader_wait(r);
	reader_free(r);
}
