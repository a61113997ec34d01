/* SPDX-License-Identifier: Apache-2.0 */
/* The refresh schedule's private state, shared by proxy/refresh/sched*.c: struct sched and the calls between its files. */
#ifndef PROXY_SCHED_INT_H
#define PROXY_SCHED_INT_H

#include <sys/queue.h>

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <event2/event.h>

#include "cache/writer.h"
#include "proxy/refresh/backoff.h"
#include "proxy/refresh/refresh.h"
#include "proxy/refresh/sched.h"

/*
 * Failing entries whose backoff is held in memory too (proxy/refresh/backoff.h):
 * 32 bytes a slot, 2 MiB at most, touched only as entries fail.
 */
#define BACKOFF_SLOTS		((size_t)1 << 16)
#define SCHED_CHANGES_MAX	256	/* schedule changes written per turn */

/* A refresh in flight, from its claim until its writes have landed. */
struct sched_slot {
	int		used;
	int		started;
	unsigned	failures;	/* before this refresh */
	uint8_t		kind;
	uint8_t		key[CACHE_KEY_MAX_BYTES];
	size_t		klen;
	struct sched	*s;
	struct refresh_ask *ask;	/* an operator asked for it (sched_ask.c), or NULL */
	int64_t		was;		/* its thisUpdate before */
};

/* An entry long expired, deleted after the chunk that found it. */
struct purge_key {
	uint8_t		kind;
	uint8_t		key[CACHE_KEY_MAX_BYTES];
	size_t		klen;
};

struct bucket {
	double		tokens;
	struct timespec	last;
};

struct sched {
	struct event_base	*base;
	struct cache		*cache;
	struct cache_writer	*writer;	/* NULL: the loop writes */
	struct usage		*usage;
	struct release		*release;
	struct refresh_kind_conf kinds[CACHE_KIND_MAX];
	int			 have[CACHE_KIND_MAX];
	struct bucket		 buckets[CACHE_KIND_MAX];
	struct event		*due_ev;
	int			 stopped;
	int			 started;	/* sched_start ran, sched_stop not since */
	int			 slot_wait;	/* the due turn waits for a free slot */
	uint32_t		 deferred[CACHE_KIND_MAX];	/* hash of the entry last rate-limited */
	struct sched_slot	 slots[REFRESH_MAX_INFLIGHT];
	struct cache_sched	*changes;	/* SCHED_CHANGES_MAX changes to write */
	size_t			 nchanges;
	struct purge_key	*purge;		/* REFRESH_WALK_CHUNK of them */
	size_t			 npurge;
	TAILQ_HEAD(, refresh_ask) asks;	/* staplectl refresh's, in order */
	struct backoff		*backoff;	/* failing entries' backoff, in memory too */
};

/* sched.c: the slots, the token bucket, the queues, the backoff held in memory. */
int	sched_bucket_take(struct sched *s, int kind);
struct sched_slot *sched_slot_find(struct sched *s, int kind,
	    const uint8_t *key, size_t klen);
struct sched_slot *sched_slot_get(struct sched *s, int kind);
void	sched_slot_claim(struct sched *s, struct sched_slot *f, int kind,
	    const uint8_t *key, size_t klen, unsigned failures, int64_t was);
void	sched_start_claimed(struct sched *s);
int	sched_change_add(struct sched *s, int kind, const uint8_t *key,
	    size_t klen, const struct cache_meta *m, int64_t at, uint16_t set,
	    uint16_t clear);
int	sched_backoff_holds(struct sched *s, int kind, const uint8_t *key,
	    size_t klen, const struct cache_meta *m, time_t now,
	    unsigned *failures, int64_t *retry_at);

/* sched_end.c: a refresh's end, its backoff, its slot freed. */
refresh_done_fn	sched_refresh_done;

/* sched_due.c: the due turn (due_ev). */
void	sched_due_cb(evutil_socket_t fd, short what, void *arg);
long	sched_bucket_wait_ms(const struct sched *s, int kind);

/* sched_ask.c: operators' asks, in the due turn after the schedule's. */
long	sched_ask_turn(struct sched *s);
void	sched_ask_done(struct sched *s, struct sched_slot *f, int ok,
	    const char *why);
void	sched_asks_stop(struct sched *s, const char *why);
void	sched_asks_free(struct sched *s);

#endif
