/* SPDX-License-Identifier: Apache-2.0 */
/* A pool of threads: a queue of jobs under one lock, and finished jobs back to the owner through an eventfd. */
#include "config.h"

#include <sys/eventfd.h>

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/workers.h"

/* Oldest first: a job is pushed at the tail and taken at the head. */
struct jobq {
	struct cache_workers_job	*head;
	struct cache_workers_job	**tail;
};

struct worker {
	struct cache_workers	*w;
	void			*slot;
	pthread_t		 thread;
};

struct cache_workers {
	const struct cache_workers_ops	*ops;
	void			*arg;
	pthread_mutex_t		 mu;
	pthread_cond_t		 wake;		/* threads: a job, or stop */
	pthread_cond_t		 idle;		/* the owner's wait: none busy */
	struct jobq		 todo;
	struct jobq		 finished;
	size_t			 busy;		/* queued or running */
	int			 stopping;
	int			 efd;
	size_t			 pending;	/* owner's: `done` not run */
	unsigned		 nthreads;	/* started */
	struct worker		*threads;
};

static void
jobq_init(struct jobq *q)
{
	q->head = NULL;
	q->tail = &q->head;
}

static void
jobq_push(struct jobq *q, struct cache_workers_job *j)
{
	j->next = NULL;
	*q->tail = j;
	q->tail = &j->next;
}

/* The oldest job, or NULL. */
static struct cache_workers_job *
jobq_take(struct jobq *q)
{
	struct cache_workers_job	*j = q->head;

	if (j != NULL && (q->head = j->next) == NULL)
		q->tail = &q->head;
	return j;
}

/* Every job, oldest first, linked by next. */
static struct cache_workers_job *
jobq_take_all(struct jobq *q)
{
	struct cache_workers_job	*j = q->head;

	jobq_init(q);
	return j;
}

/* One wake-up for the owner; see workers.h on EINTR and EAGAIN. */
static void
wake_owner(struct cache_workers *w)
{
	uint64_t	one = 1;

	while (write(w->efd, &one, sizeof(one)) == -1 && errno == EINTR)
		continue;
}

static void *
worker_main(void *arg)
{
	struct worker			*t = arg;
	struct cache_workers		*w = t->w;
	struct cache_workers_job	*j;
	int				 was_empty;

	if (w->ops->init != NULL)
		w->ops->init(t->slot);
	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (w->todo.head == NULL && !w->stopping)
			pthread_cond_wait(&w->wake, &w->mu);
		/* Stopping ends a thread only once nothing is queued. */
		if ((j = jobq_take(&w->todo)) == NULL)
			break;
		pthread_mutex_unlock(&w->mu);

		w->ops->run(j, t->slot);

		pthread_mutex_lock(&w->mu);
		was_empty = w->finished.head == NULL;
		jobq_push(&w->finished, j);
		if (--w->busy == 0)
			pthread_cond_broadcast(&w->idle);
		/*
		 * The owner reads the fd before it takes the list: a write
		 * for the first job waiting covers the rest.
		 */
		if (was_empty)
			wake_owner(w);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* End and join the threads started so far, and free the rest; nothing may be queued. */
static void
workers_free(struct cache_workers *w)
{
	unsigned	i;

	pthread_mutex_lock(&w->mu);
	w->stopping = 1;
	pthread_cond_broadcast(&w->wake);
	pthread_mutex_unlock(&w->mu);
	for (i = 0; i < w->nthreads; i++)
		pthread_join(w->threads[i].thread, NULL);
	pthread_cond_destroy(&w->idle);
	pthread_cond_destroy(&w->wake);
	pthread_mutex_destroy(&w->mu);
	if (w->efd != -1)
		close(w->efd);
	free(w->threads);
	free(w);
}

/* Start the threads one by one; -1 with err set, those started still running. */
static int
workers_spawn(struct cache_workers *w, void *slots, size_t slot_bytes,
    unsigned nthreads, char *err, size_t errlen)
{
	struct worker	*t;
	int		 rc;

	while (w->nthreads < nthreads) {
		t = &w->threads[w->nthreads];
		t->w = w;
		t->slot = (char *)slots + (size_t)w->nthreads * slot_bytes;
		rc = pthread_create(&t->thread, NULL, worker_main, t);
		if (rc != 0) {
			snprintf(err, errlen, "%s: thread: %s", w->ops->what,
			    strerror(rc));
			return -1;
		}
		/* For top -H and ps -L; a name is no reason to fail. */
		if (w->ops->thread_name != NULL)
			(void)pthread_setname_np(t->thread,
			    w->ops->thread_name);
		w->nthreads++;
	}
	return 0;
}

struct cache_workers *
cache_workers_start(const struct cache_workers_ops *ops, void *arg,
    void *slots, size_t slot_bytes, unsigned nthreads, char *err,
    size_t errlen)
{
	struct cache_workers	*w;

	if (nthreads < 1 || nthreads > CACHE_WORKERS_MAX_THREADS) {
		snprintf(err, errlen, "%s: %u threads, not in 1..%d",
		    ops->what, nthreads, CACHE_WORKERS_MAX_THREADS);
		return NULL;
	}
	if ((w = calloc(1, sizeof(*w))) == NULL) {
		snprintf(err, errlen, "%s: %s", ops->what, strerror(ENOMEM));
		return NULL;
	}
	w->ops = ops;
	w->arg = arg;
	jobq_init(&w->todo);
	jobq_init(&w->finished);
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->wake, NULL);
	pthread_cond_init(&w->idle, NULL);
	if ((w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) == -1) {
		snprintf(err, errlen, "%s: eventfd: %s", ops->what,
		    strerror(errno));
		goto fail;
	}
	if ((w->threads = calloc(nthreads, sizeof(*w->threads))) == NULL) {
		snprintf(err, errlen, "%s: %s", ops->what, strerror(ENOMEM));
		goto fail;
	}
	if (workers_spawn(w, slots, slot_bytes, nthreads, err, errlen) == -1)
		goto fail;
	return w;
 fail:
	workers_free(w);
	return NULL;
}

int
cache_workers_fd(const struct cache_workers *w)
{
	return w->efd;
}

size_t
cache_workers_pending(const struct cache_workers *w)
{
	return w->pending;
}

void
cache_workers_queue(struct cache_workers *w, struct cache_workers_job *j)
{
	pthread_mutex_lock(&w->mu);
	jobq_push(&w->todo, j);
	w->busy++;
	pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->mu);
	w->pending++;
}

void
cache_workers_collect(struct cache_workers *w)
{
	struct cache_workers_job	*j, *next;
	uint64_t			 n;

	/* Before the take: a job finished after it writes the fd again. */
	while (read(w->efd, &n, sizeof(n)) == -1 && errno == EINTR)
		continue;
	pthread_mutex_lock(&w->mu);
	j = jobq_take_all(&w->finished);
	pthread_mutex_unlock(&w->mu);
	for (; j != NULL; j = next) {
		next = j->next;
		w->pending--;
		w->ops->done(j, w->arg);
	}
}

void
cache_workers_wait(struct cache_workers *w)
{
	if (w == NULL)
		return;
	/* A `done` may queue more: wait for those too. */
	while (w->pending > 0) {
		pthread_mutex_lock(&w->mu);
		while (w->busy > 0)
			pthread_cond_wait(&w->idle, &w->mu);
		pthread_mutex_unlock(&w->mu);
		cache_workers_collect(w);
	}
}

void
cache_workers_stop(struct cache_workers *w)
{
	if (w == NULL)
		return;
	cache_workers_wait(w);
	workers_free(w);
}
