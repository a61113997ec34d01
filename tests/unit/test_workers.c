/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for cache/workers.c: jobs on threads, finished jobs back on the owner's thread through the fd. */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cache/workers.h"

#define NJOBS		200
#define NTHREADS	4

struct slot {
	pthread_t	 self;		/* set by init, on the thread */
	int		 inits;
	int		 runs;
};

struct job {
	struct cache_workers_job job;
	unsigned		 n;
	struct slot		*ran_on;
	int			 requeue;	/* done queues it once more */
};

/* What the test's owner thread sees. */
static struct {
	pthread_t		 owner;
	struct cache_workers	*w;
	unsigned		 order[2 * NJOBS];
	size_t			 ndone;
	int			 off_owner;	/* a done on another thread */
	int			 run_on_owner;	/* a run on the owner's thread */
} seen;

/* Held shut, run waits: the jobs stay in the pool. */
static struct {
	pthread_mutex_t	mu;
	pthread_cond_t	open_cv;
	int		open;
} gate = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 1 };

static struct job	jobs[NJOBS];
static struct slot	slots[NTHREADS];

static void
gate_set(int open)
{
	pthread_mutex_lock(&gate.mu);
	gate.open = open;
	pthread_cond_broadcast(&gate.open_cv);
	pthread_mutex_unlock(&gate.mu);
}

static void
t_init(void *slot)
{
	struct slot	*s = slot;

	s->self = pthread_self();
	s->inits++;
}

static void
t_run(struct cache_workers_job *j, void *slot)
{
	struct job	*o = (struct job *)j;
	struct slot	*s = slot;

	pthread_mutex_lock(&gate.mu);
	while (!gate.open)
		pthread_cond_wait(&gate.open_cv, &gate.mu);
	pthread_mutex_unlock(&gate.mu);
	if (pthread_equal(pthread_self(), s->self) == 0)
		o->ran_on = NULL;
	else
		o->ran_on = s;
	s->runs++;
}

static void
t_done(struct cache_workers_job *j, void *arg)
{
	struct job	*o = (struct job *)j;

	assert_ptr_equal(arg, &seen);
	if (!pthread_equal(pthread_self(), seen.owner))
		seen.off_owner++;
	if (o->ran_on == NULL || pthread_equal(o->ran_on->self, seen.owner))
		seen.run_on_owner++;
	seen.order[seen.ndone++] = o->n;
	if (o->requeue) {
		o->requeue = 0;
		cache_workers_queue(seen.w, &o->job);
	}
}

static const struct cache_workers_ops ops = {
	.what = "test pool",
	.thread_name = "test-worker",
	.init = t_init,
	.run = t_run,
	.done = t_done,
};

static int
setup(void **state)
{
	unsigned	i;

	(void)state;
	memset(&seen, 0, sizeof(seen));
	memset(slots, 0, sizeof(slots));
	memset(jobs, 0, sizeof(jobs));
	for (i = 0; i < NJOBS; i++)
		jobs[i].n = i;
	seen.owner = pthread_self();
	gate_set(1);
	return 0;
}

static struct cache_workers *
start(unsigned nthreads, size_t slot_bytes)
{
	char	err[256];

	seen.w = cache_workers_start(&ops, &seen, slots, slot_bytes, nthreads,
	    err, sizeof(err));
	if (seen.w == NULL)
		fail_msg("%s", err);
	return seen.w;
}

static int
readable(int fd)
{
	struct pollfd	pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, 0);
}

/* One thread: jobs finish and are reported in the order queued, on the owner's thread. */
static void
test_one_thread_in_order(void **state)
{
	struct cache_workers	*w;
	unsigned		 i;

	(void)state;
	w = start(1, 0);
	for (i = 0; i < NJOBS; i++)
		cache_workers_queue(w, &jobs[i].job);
	assert_int_equal(cache_workers_pending(w), NJOBS);
	cache_workers_wait(w);
	assert_int_equal(cache_workers_pending(w), 0);
	assert_int_equal(seen.ndone, NJOBS);
	for (i = 0; i < NJOBS; i++)
		assert_int_equal(seen.order[i], i);
	assert_int_equal(seen.off_owner, 0);
	assert_int_equal(seen.run_on_owner, 0);
	assert_int_equal(slots[0].inits, 1);
	assert_int_equal(slots[0].runs, NJOBS);
	cache_workers_stop(w);
}

/* Each thread has its slot, initialised once on that thread; every job runs once. */
static void
test_slots(void **state)
{
	struct cache_workers	*w;
	unsigned		 i, runs = 0;

	(void)state;
	w = start(NTHREADS, sizeof(slots[0]));
	for (i = 0; i < NJOBS; i++)
		cache_workers_queue(w, &jobs[i].job);
	cache_workers_wait(w);
	cache_workers_stop(w);
	assert_int_equal(seen.ndone, NJOBS);
	assert_int_equal(seen.off_owner, 0);
	assert_int_equal(seen.run_on_owner, 0);
	for (i = 0; i < NTHREADS; i++) {
		assert_int_equal(slots[i].inits, 1);
		runs += (unsigned)slots[i].runs;
	}
	assert_int_equal(runs, NJOBS);
	for (i = 0; i < NJOBS; i++)
		assert_non_null(jobs[i].ran_on);
}

/*
 * The fd is readable only while finished jobs wait, and drained once
 * every one is collected; collect reports none before one finishes.
 */
static void
test_fd(void **state)
{
	struct cache_workers	*w;
	struct pollfd		 pfd;
	unsigned		 i;
	int			 fd, tries = 0;

	(void)state;
	w = start(2, sizeof(slots[0]));
	pfd.fd = fd = cache_workers_fd(w);
	pfd.events = POLLIN;
	assert_int_equal(readable(fd), 0);
	gate_set(0);
	for (i = 0; i < 10; i++)
		cache_workers_queue(w, &jobs[i].job);
	usleep(20000);
	assert_int_equal(readable(fd), 0);
	cache_workers_collect(w);
	assert_int_equal(seen.ndone, 0);
	gate_set(1);
	while (seen.ndone < 10 && tries++ < 100) {
		assert_int_equal(poll(&pfd, 1, 5000), 1);
		cache_workers_collect(w);
	}
	assert_int_equal(seen.ndone, 10);
	/*
	 * All collected, none running: a collect leaves the fd drained (one
	 * more, for a wake-up raced with the last take).
	 */
	cache_workers_collect(w);
	assert_int_equal(seen.ndone, 10);
	assert_int_equal(readable(fd), 0);
	assert_int_equal(cache_workers_pending(w), 0);
	cache_workers_stop(w);
}

/* A done that queues a job: wait and stop wait for that one too. */
static void
test_done_queues(void **state)
{
	struct cache_workers	*w;
	unsigned		 i;

	(void)state;
	w = start(2, sizeof(slots[0]));
	for (i = 0; i < 20; i++) {
		jobs[i].requeue = 1;
		cache_workers_queue(w, &jobs[i].job);
	}
	cache_workers_wait(w);
	assert_int_equal(seen.ndone, 40);
	assert_int_equal(cache_workers_pending(w), 0);
	jobs[0].requeue = 1;
	cache_workers_queue(w, &jobs[0].job);
	cache_workers_stop(w);
	assert_int_equal(seen.ndone, 42);
}

/* Stopping finishes what was queued: every done runs once, on this thread. */
static void
test_stop_finishes(void **state)
{
	struct cache_workers	*w;
	unsigned		 i;

	(void)state;
	w = start(3, sizeof(slots[0]));
	gate_set(0);
	for (i = 0; i < NJOBS; i++)
		cache_workers_queue(w, &jobs[i].job);
	gate_set(1);
	cache_workers_stop(w);
	assert_int_equal(seen.ndone, NJOBS);
	assert_int_equal(seen.off_owner, 0);
	cache_workers_stop(NULL);
	cache_workers_wait(NULL);
}

/* A thread count out of range starts nothing and says so. */
static void
test_start_refused(void **state)
{
	char	err[256];

	(void)state;
	assert_null(cache_workers_start(&ops, &seen, slots, 0, 0, err,
	    sizeof(err)));
	assert_string_equal(err, "test pool: 0 threads, not in 1..64");
	assert_null(cache_workers_start(&ops, &seen, slots, 0,
	    CACHE_WORKERS_MAX_THREADS + 1, err, sizeof(err)));
	assert_non_null(strstr(err, "not in 1.."));
	assert_int_equal(slots[0].inits, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_one_thread_in_order, setup),
		cmocka_unit_test_setup(test_slots, setup),
		cmocka_unit_test_setup(test_fd, setup),
		cmocka_unit_test_setup(test_done_queues, setup),
		cmocka_unit_test_setup(test_stop_finishes, setup),
		cmocka_unit_test_setup(test_start_refused, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
