/* SPDX-License-Identifier: Apache-2.0 */
/* Upstream fetch: each upstream's health, cooldown and counters, kept across the pools that name it. */
#include "config.h"

#include <sys/queue.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proxy/fetch/fetch.h"
#include "proxy/fetch/fetch_int.h"
#include "proxy/log.h"

/* xorshift64*: jitter only, nothing secret. */
static uint64_t
ctx_random(struct fetch_ctx *ctx)
{
	ctx->rng ^= ctx->rng >> 12;
	ctx->rng ^= ctx->rng << 25;
	ctx->rng ^= ctx->rng >> 27;
	return ctx->rng * 2685821657736338717ULL;
}

/* ---- health ------------------------------------------------------------- */

void
fetch_up_success(struct fetch_pool *pool, struct fetch_upstream *up)
{
	up->consecutive = 0;
	up->cooldown_until_ms = 0;
	up->st->last_ok = 1;
	up->st->last_success_unix = time(NULL);
	if (up->down) {
		up->down = 0;
		log_info("fetch: %s: %s: up again", pool->service, up->name);
	}
}

void
fetch_up_failure(struct fetch_pool *pool, struct fetch_upstream *up,
    enum fetch_err err, const char *reason, int64_t retry_after_ms)
{
	struct fetch_ctx	*ctx = pool->ctx;
	int64_t			 ms, now = now_ms();

	up->st->failures[err]++;
	up->st->last_ok = 0;
	up->consecutive++;
	up->last_failure_ms = now;
	up->last_failure_unix = time(NULL);
	if ((ms = fetch_cooldown_ms(up->consecutive, retry_after_ms)) <= 0)
		return;
	/* up to 20 % more, so that mirrors that failed together drift apart */
	ms = fetch_cooldown_jitter_ms(ms, ctx_random(ctx));
	up->cooldown_until_ms = now + ms;
	if (!up->down) {
		up->down = 1;
		log_info("fetch: %s: %s: down (%s), cooling down %lld ms",
		    pool->service, up->name, reason, (long long)ms);
	} else
		log_debug("fetch: %s: %s: still down (%s), cooling down %lld ms",
		    pool->service, up->name, reason, (long long)ms);
}

/* The ctx's stats of (service, name), shared or new; NULL out of memory. */
struct fetch_stats *
fetch_stats_get(struct fetch_ctx *ctx, const char *service, const char *name)
{
	struct fetch_stats	*st;

	LIST_FOREACH(st, &ctx->stats, entry)
		if (strcmp(st->service, service) == 0 &&
		    strcmp(st->name, name) == 0) {
			st->refs++;
			return st;
		}
	if ((st = calloc(1, sizeof(*st))) == NULL)
		return NULL;
	if ((st->service = strdup(service)) == NULL ||
	    (st->name = strdup(name)) == NULL) {
		free(st->service);
		free(st);
		return NULL;
	}
	st->refs = 1;
	st->listed = 1;
	LIST_INSERT_HEAD(&ctx->stats, st, entry);
	return st;
}

void
fetch_stats_unref(struct fetch_stats *st)
{
	if (st == NULL || --st->refs > 0)
		return;
	if (st->listed)
		LIST_REMOVE(st, entry);
	free(st->service);
	free(st->name);
	free(st);
}

size_t
fetch_pool_health(const struct fetch_pool *pool, struct fetch_health *h,
    size_t max)
{
	const struct fetch_upstream	*up;
	int64_t				 now = now_ms();
	size_t				 i, k;

	if (pool == NULL || h == NULL)
		return 0;
	for (i = 0; i < pool->nups && i < max; i++) {
		up = &pool->ups[i];
		memset(&h[i], 0, sizeof(h[i]));
		h[i].name = up->name;
		h[i].url = up->url;
		h[i].up = up->st->last_ok && up->cooldown_until_ms <= now;
		/* Answered once, or failed once (counted by reason): asked. */
		h[i].asked = up->st->last_success_unix != 0;
		for (k = 0; k < FETCH_ERR_MAX && !h[i].asked; k++)
			h[i].asked = up->st->failures[k] > 0;
		h[i].consecutive_failures = up->consecutive;
		h[i].cooldown_until_ms = up->cooldown_until_ms;
		h[i].last_failure_unix = up->last_failure_unix;
		h[i].last_success_unix = up->st->last_success_unix;
		h[i].requests = up->st->requests;
		memcpy(h[i].failures, up->st->failures, sizeof(h[i].failures));
		h[i].latency = &up->st->latency;
	}
	return i;
}

char *
fetch_pool_describe(const struct fetch_pool *pool, char *buf, size_t len)
{
	size_t	i, off = 0;
	int	n;

	if (len == 0)
		return buf;
	buf[0] = '\0';
	for (i = 0; pool != NULL && i < pool->nups && off < len; i++) {
		n = snprintf(buf + off, len - off, "%s%s (%s)", i ? ", " : "",
		    pool->ups[i].name, pool->ups[i].url);
		if (n < 0)
			break;
		off += (size_t)n;
	}
	return buf;
}
