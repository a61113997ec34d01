/* SPDX-License-Identifier: Apache-2.0 */
/* The store's writer thread: write transactions and their syncs off the caller's thread. */
#ifndef CACHE_WRITER_H
#define CACHE_WRITER_H

#include <stddef.h>

#include "cache/store.h"

/*
 * A commit waits for its sync (fdatasync, a few milliseconds, far more
 * behind a busy disk). A daemon that writes on its event loop holds every
 * connection for it; the writer does the writes on a thread of its own,
 * through a twin of the caller's handle (cache_twin), one write
 * transaction per submitted write, in the order submitted.
 *
 * Each submit copies what it is given and returns at once: 0, or -1 when
 * memory is short (nothing queued; the caller may write itself). `done`
 * (may be NULL) is called on the caller's thread, from
 * cache_writer_collect or cache_writer_wait, in the order the writes were
 * submitted, with the write's result: what the same cache_* call would
 * have returned, and its cache_strerror and cache_map_full. Reads on the
 * caller's handle see a write once its `done` is due, not before.
 *
 * All calls but the thread's own work are for one thread, the one that
 * started it.
 */
struct cache_writer;

struct cache_writer_res {
	int		 rc;
	int		 map_full;
	const char	*err;		/* valid during the callback */
	struct cache_room room;		/* cache_writer_room's */
};
typedef void cache_writer_done(const struct cache_writer_res *, void *arg);

/* NULL with `err` set when the thread could not start. */
struct cache_writer	*cache_writer_start(struct cache *, char *err,
			    size_t errlen);
/*
 * Finish every submitted write (their callbacks run), then end the
 * thread. Before cache_close of the handle. Accepts NULL.
 */
void	cache_writer_stop(struct cache_writer *);
/*
 * Readable while finished writes wait for cache_writer_collect, which
 * runs their callbacks (and drains the fd). Never blocks.
 */
int	cache_writer_fd(const struct cache_writer *);
void	cache_writer_collect(struct cache_writer *);
/*
 * Block until every write submitted so far has finished, and run their
 * callbacks: before a cache_reset of the handle, or to read one's result
 * at once.
 */
void	cache_writer_wait(struct cache_writer *);
/* Writes submitted whose callbacks have not run yet. */
size_t	cache_writer_pending(const struct cache_writer *);

/* cache_put, cache_put_meta and cache_touch, on the thread. */
int	cache_writer_put(struct cache_writer *, const uint8_t *key, size_t klen,
	    const struct cache_meta *, const struct cache_body *,
	    cache_writer_done *, void *arg);
int	cache_writer_put_meta(struct cache_writer *, const uint8_t *key,
	    size_t klen, const struct cache_meta *, cache_writer_done *,
	    void *arg);
/* Only the slots in use (klen > 0) of `t` are copied. */
int	cache_writer_touch(struct cache_writer *, const struct cache_touch *t,
	    size_t n, cache_writer_done *, void *arg);
/* cache_aux_put, on the thread (name shorter than CACHE_KEY_MAX_BYTES). */
int	cache_writer_aux_put(struct cache_writer *, const char *name,
	    const uint8_t *val, size_t len, cache_writer_done *, void *arg);
/* cache_drop_damaged, on the thread: rc 1 dropped, 0 sound or absent, -1. */
int	cache_writer_drop_damaged(struct cache_writer *, unsigned kind,
	    const uint8_t *key, size_t klen, cache_writer_done *, void *arg);
/*
 * Writes nothing: `done` is called (rc 0) once every write submitted
 * before it has finished.
 */
int	cache_writer_mark(struct cache_writer *, cache_writer_done *, void *arg);
/*
 * cache_room, on the thread, after the writes submitted before it: the
 * free list it reads may be thousands of records (28,112 on a
 * million-entry store after a burst of refreshes, 11 to 108 ms to read),
 * too long for the caller's event loop. The figures are in res->room.
 */
int	cache_writer_room(struct cache_writer *, cache_writer_done *, void *arg);

#endif
