/* SPDX-License-Identifier: Apache-2.0 */
/* The sampled access log: one line per sampled answer (peer, method, path, status, bytes, result, latency, Cache-Status and upstream). */
#ifndef PROXY_ACCESS_LOG_H
#define PROXY_ACCESS_LOG_H

#include <stddef.h>
#include <stdint.h>

struct http_req;

/* Path bytes printed; longer paths end in "...". */
#define ACCESS_LOG_PATH_MAX_BYTES	128

/* The state of one daemon's access log; zeroed is off. Process-wide, in main's daemon. */
struct access_log {
	double		sample;		/* access_log_sample: 0 off, 1 every answer */
	uint64_t	rng;
};

/* Set the share of answers logged (clamped to 0..1); seeds the sampler once. */
void	access_log_set_sample(struct access_log *, double sample);
/*
 * For http_reply's callback: log req's answer at info level when sampled.
 * req and its strings are borrowed for the call. Cannot fail.
 */
void	access_log_reply(struct access_log *, const struct http_req *req,
	    int status, size_t bytes);

#endif
