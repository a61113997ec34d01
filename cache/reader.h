/* SPDX-License-Identifier: Apache-2.0 */
/* Lookups on a few threads of their own, so a store page read from disk holds no event loop. */
#ifndef CACHE_READER_H
#define CACHE_READER_H

#include <stddef.h>
#include <stdint.h>

#include "cache/store.h"

/*
 * A lookup reads the store through its map. When the page it needs is not
 * in memory (a store larger than the page cache keeps, or pages the
 * kernel took back), the thread that reads waits for the disk: on an
 * event loop, every connection waits with it. The reader does each lookup
 * on one of `nthreads` threads, each with a twin of the caller's handle
 * (cache_twin), one lookup at a time per thread, so one that waits holds
 * no other. The entry is copied out and the read transaction ended, so an
 * idle thread pins no snapshot.
 *
 * cache_reader_get copies the key and returns at once: 0, or -1 with
 * nothing queued (below; the caller may look up itself). `done`
 * (not NULL) is called on the caller's thread, from cache_reader_collect or
 * cache_reader_wait, in the order lookups finish, not the order
 * submitted. A lookup sees every write whose cache_writer `done` ran
 * before it was submitted.
 *
 * All calls are for one thread, the one that started it.
 */
struct cache_reader;

struct cache_reader_res {
	int			 rc;	/* cache_get's: 1 found, 0 absent, -1 error */
	const char		*err;	/* rc -1: cache_strerror's */
	struct cache_meta	 meta;	/* rc 1 */
	struct cache_body	 body;	/* rc 1: a copy, valid during the callback */
};
typedef void cache_reader_done(const struct cache_reader_res *, void *arg);

#define CACHE_READER_MAX_THREADS	64
#define CACHE_READER_THREAD_NAME	"stapled-lookup"	/* at most 15 bytes */

/* 1..CACHE_READER_MAX_THREADS threads; NULL with `err` set when they could not start. */
struct cache_reader	*cache_reader_start(struct cache *, unsigned nthreads,
			    char *err, size_t errlen);
/* Finish every submitted lookup (their callbacks run), then end the threads. Accepts NULL. */
void	cache_reader_stop(struct cache_reader *);
/*
 * Readable while finished lookups wait for cache_reader_collect, which
 * runs their callbacks (and drains the fd). Never blocks.
 */
int	cache_reader_fd(const struct cache_reader *);
void	cache_reader_collect(struct cache_reader *);
/*
 * Block until every lookup submitted so far has finished, and run their
 * callbacks: before a cache_reset of the handle. Accepts NULL.
 */
void	cache_reader_wait(struct cache_reader *);
/* Lookups submitted whose callbacks have not run yet. */
size_t	cache_reader_pending(const struct cache_reader *);

/*
 * Handing a lookup to a thread and its answer back costs more than a
 * lookup whose pages are in memory (on two cores, a third of the hit
 * rate). So the threads are for when lookups wait for the disk: a lookup
 * that took CACHE_READER_SLOW_US or more, on a thread that has read pages
 * from the disk since it last looked (getrusage's major faults), marks
 * the store as read from disk, and cache_reader_wanted says so for
 * CACHE_READER_HOLD_US after the last such lookup. The caller times the
 * lookups it makes itself: t0 = cache_reader_clock() before,
 * cache_reader_note(r, t0) after, on its own thread.
 */
#define CACHE_READER_SLOW_US	50
#define CACHE_READER_HOLD_US	(2 * 1000000)
int64_t	cache_reader_clock(void);	/* monotonic, in microseconds */
void	cache_reader_note(struct cache_reader *, int64_t started);
int	cache_reader_wanted(struct cache_reader *);

/*
 * Lookups in hand (submitted, callback not yet run) at most this many a
 * thread: past it, cache_reader_get refuses (EAGAIN) and the caller looks
 * up itself. A daemon's client waiting for a lookup holds its
 * connection's buffers; ten thousand of them would hold 400 MiB.
 */
#define CACHE_READER_PENDING_PER_THREAD	32

/*
 * cache_get on a thread. 0, or -1: klen not 1..CACHE_KEY_MAX_BYTES
 * (EINVAL), as many lookups in hand as the threads take (EAGAIN), or no
 * memory (ENOMEM).
 */
int	cache_reader_get(struct cache_reader *, unsigned kind,
	    const uint8_t *key, size_t klen, cache_reader_done *, void *arg);

#endif
