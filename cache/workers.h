/* SPDX-License-Identifier: Apache-2.0 */
/* A pool of threads that run jobs off the owner's thread and hand them back through a wake-up fd. */
#ifndef CACHE_WORKERS_H
#define CACHE_WORKERS_H

#include <stddef.h>

/*
 * The shape shared by the store's lookup threads (cache/reader.c) and its
 * writer thread (cache/writer.c).
 *
 * Threads. One thread, the owner, starts the pool and makes every call
 * below; 1..CACHE_WORKERS_MAX_THREADS worker threads take the queued
 * jobs, oldest first, one job at a time each, and run them. A finished
 * job goes back to the owner: the pool's fd turns readable, and
 * cache_workers_collect (or cache_workers_wait) calls `done` for it on
 * the owner's thread. No callback of the pool runs on the owner's thread
 * but `done`, and `done` runs nowhere else.
 *
 * Order. Jobs start in the order queued; `done` runs in the order they
 * finished. With one thread that is the order queued, which is how the
 * writer commits and reports its writes in the order submitted.
 *
 * Jobs. A job is the caller's own structure with a struct
 * cache_workers_job inside it (first, so that a cast finds the outer one
 * again). The caller allocates it, fills in what `run` reads, and queues
 * it; from cache_workers_queue until its `done` is called the pool and
 * the worker running it own it, and the owner must not touch it. In
 * `done` it is the caller's again (to free, or to queue once more).
 *
 * Wake-ups. The fd is an eventfd, non-blocking and close-on-exec, owned
 * by the pool (do not close or read it). A finished job writes it only
 * when no other finished job was waiting, so a burst costs the owner one
 * wake-up; cache_workers_collect reads it before taking the finished
 * jobs, so a job finished after that take writes it again and none is
 * left behind. The price is a wake-up with nothing to collect when a job
 * finished between that read and that take (a collect then finds none
 * and drains it). A read or write interrupted by a signal (EINTR) is
 * tried again; EAGAIN is no error: on a read, nothing was written; on a
 * write, the counter is near 2^64 unread, so the fd is readable already.
 *
 * Cost. A job takes the lock at each step (queue, take, finish, collect),
 * wakes a sleeping thread, and for the first job of a burst costs the
 * eventfd's write and read; a job that takes less than that is faster
 * done on the owner's thread. The reader decides by timing its lookups
 * (cache_reader_wanted).
 */
struct cache_workers;

struct cache_workers_job {
	struct cache_workers_job	*next;	/* the pool's while queued */
};

/*
 * On each worker thread, once, before its first job (for what can only be
 * read on that thread, such as its own resource usage). `slot` is the
 * thread's, as cache_workers_start gives it.
 */
typedef void cache_workers_init(void *slot);
/*
 * On a worker thread, with no lock of the pool held: do the job, and
 * leave its result in it. May block (a page read from the disk, a sync).
 * Must not call the pool.
 */
typedef void cache_workers_run(struct cache_workers_job *, void *slot);
/*
 * On the owner's thread, from cache_workers_collect or cache_workers_wait:
 * the job is finished and the caller's again. May queue more jobs; must
 * not stop the pool.
 */
typedef void cache_workers_done(struct cache_workers_job *, void *arg);

struct cache_workers_ops {
	const char		*what;		/* for errors: "cache reader" */
	const char		*thread_name;	/* at most 15 bytes, or NULL */
	cache_workers_init	*init;		/* or NULL */
	cache_workers_run	*run;
	cache_workers_done	*done;
};

#define CACHE_WORKERS_MAX_THREADS	64

/*
 * Start `nthreads` worker threads. `ops` is borrowed until
 * cache_workers_stop returns (a static table). `arg` is passed to every
 * `done`. Thread i's slot is `slots` + i * `slot_bytes` (an array of
 * per-thread state, such as a handle of its own); with `slot_bytes` 0
 * every thread gets `slots` itself. The slots are borrowed until
 * cache_workers_stop returns, and each is touched only by its thread
 * until then. A thread name that cannot be set is no failure.
 *
 * Returns the pool, or NULL with `err` set (prefixed with ops->what) and
 * no thread left running: nthreads not in 1..CACHE_WORKERS_MAX_THREADS,
 * no memory, no eventfd, or a thread that could not start.
 */
struct cache_workers	*cache_workers_start(const struct cache_workers_ops *,
			    void *arg, void *slots, size_t slot_bytes,
			    unsigned nthreads, char *err, size_t errlen);
/*
 * Finish every job queued (their `done` runs, and any job they queue
 * finishes too), then end and join the threads, close the fd and free
 * the pool. The slots are then the caller's again. Accepts NULL.
 */
void	cache_workers_stop(struct cache_workers *);
/* Queue a job for the threads. Cannot fail: the job carries its own link. */
void	cache_workers_queue(struct cache_workers *, struct cache_workers_job *);
/* Readable while finished jobs wait for cache_workers_collect; until the stop. */
int	cache_workers_fd(const struct cache_workers *);
/*
 * Read the fd and call `done` for each job finished so far, in the order
 * they finished. Never blocks (the lock aside).
 */
void	cache_workers_collect(struct cache_workers *);
/*
 * Block until every job queued so far, and every job their `done` queues,
 * has finished, and call their `done`. Accepts NULL.
 */
void	cache_workers_wait(struct cache_workers *);
/* Jobs queued whose `done` has not run yet. */
size_t	cache_workers_pending(const struct cache_workers *);

#endif
