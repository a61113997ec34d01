/* SPDX-License-Identifier: Apache-2.0 */
/* Logging to stderr (journald picks it up): levels, and once-only state-change lines. */
#ifndef PROXY_LOG_H
#define PROXY_LOG_H

#include <stddef.h>

enum log_level { LOG_LVL_ERR, LOG_LVL_WARN, LOG_LVL_INFO, LOG_LVL_DEBUG, LOG_LVL_TRACE };

/* Messages above `max` are dropped. Default: LOG_LVL_INFO. */
void	log_set_level(enum log_level max);

void	log_err(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_warn(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_info(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_debug(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_trace(const char *, ...) __attribute__((format(printf, 1, 2)));
/* Log and exit(1): for startup errors only, never for anything a peer sent. */
void	fatal(const char *, ...) __attribute__((format(printf, 1, 2), noreturn));

/* What a line of level l starts with ("<3>stapled: error: "), into buf; returns buf. */
char	*log_head(enum log_level l, char *buf, size_t buflen);

/* Lowercase hex of a byte string into buf (truncated to fit); returns buf. */
char	*log_hex(char *buf, size_t buflen, const void *p, size_t len);

#endif
