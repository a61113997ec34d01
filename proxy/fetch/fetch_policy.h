/* SPDX-License-Identifier: Apache-2.0 */
/* Failover policy without I/O: what an upstream answer means, and how long an upstream rests. */
#ifndef PROXY_FETCH_POLICY_H
#define PROXY_FETCH_POLICY_H

#include <stdint.h>
#include <time.h>

enum fetch_err {
	FETCH_OK = 0,
	FETCH_ERR_CONNECT,	/* refused, unreachable */
	FETCH_ERR_TIMEOUT,	/* connect or total timeout */
	FETCH_ERR_HTTP,		/* 408, 429 or 5xx */
	FETCH_ERR_TOO_BIG,	/* over FETCH_MAX_RESPONSE_BYTES */
	FETCH_ERR_REJECTED,	/* failed verification */
	FETCH_ERR_TRANSPORT,	/* any other transfer error */
	FETCH_ERR_PACED,	/* the same request went there too recently (KDS) */
	FETCH_ERR_DNS,		/* the name did not resolve */
	FETCH_ERR_TLS,		/* handshake or certificate verification */
	FETCH_ERR_MAX
};
extern const char *const fetch_err_str[FETCH_ERR_MAX];

enum fetch_class {
	FETCH_CLASS_ANSWER,	/* 2xx: hand to the check callback */
	FETCH_CLASS_FINAL,	/* other 4xx (404, 410): an answer about the object */
	FETCH_CLASS_FAILOVER,	/* describes the endpoint: try the next */
};

/* Classify an HTTP status (0 = no response). */
enum fetch_class	fetch_classify(int http_status);

#define FETCH_COOLDOWN_BASE_MS	1000
#define FETCH_COOLDOWN_MAX_MS	(5 * 60 * 1000)
#define FETCH_FAILS_BEFORE_COOLDOWN 2

/*
 * Cooldown after `consecutive` failures (exponential, capped, 0 below the
 * threshold); `retry_after_ms` from a 429/503 wins when larger.
 */
int64_t	fetch_cooldown_ms(unsigned consecutive, int64_t retry_after_ms);
/* Divides a cooldown into its largest random extra: 5 is up to 20 %. */
#define FETCH_COOLDOWN_JITTER_DIV	5
/*
 * ms plus a random extra of up to ms / FETCH_COOLDOWN_JITTER_DIV taken from
 * r, then capped at FETCH_COOLDOWN_MAX_MS (so a rest at the ceiling gets
 * no extra); ms <= 0 is returned as is.
 */
int64_t	fetch_cooldown_jitter_ms(int64_t ms, uint64_t r);

/* Retry-After (delta-seconds or HTTP-date) in ms from now; -1 if absent/invalid. */
int64_t	fetch_retry_after_ms(const char *value, time_t now);

#endif
