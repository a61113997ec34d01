/* SPDX-License-Identifier: Apache-2.0 */
/* The monotonic clock, read one way for every room: here because cache/ is the lowest room that may read a clock (attest/ may not) and every other room can include it. */
#ifndef CACHE_CLOCK_H
#define CACHE_CLOCK_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in microseconds; for intervals only, never a date. Cannot fail. */
static inline int64_t
mono_us(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* The same clock in milliseconds. */
static inline int64_t
mono_ms(void)
{
	return mono_us() / 1000;
}

#endif
