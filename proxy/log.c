/* SPDX-License-Identifier: Apache-2.0 */
/* Logging to stderr with a level prefix that journald and humans both read. */
#include <config.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "attest/util.h"
#include "proxy/log.h"

static enum log_level	log_max = LOG_LVL_INFO;
static int		log_journal = -1;	/* stderr goes to journald */

/* sd-daemon(3) priority prefixes, which journald turns into priorities. */
static const char *const log_priority[] = {
	[LOG_LVL_ERR] = "<3>",
	[LOG_LVL_WARN] = "<4>",
	[LOG_LVL_INFO] = "<6>",
	[LOG_LVL_DEBUG] = "<7>",
	[LOG_LVL_TRACE] = "<7>",
};

static const char *const log_word[] = {
	[LOG_LVL_ERR] = "error: ",
	[LOG_LVL_WARN] = "warning: ",
	[LOG_LVL_INFO] = "",
	[LOG_LVL_DEBUG] = "debug: ",
	[LOG_LVL_TRACE] = "trace: ",
};

void
log_set_level(enum log_level max)
{
	log_max = max;
}

char *
log_head(enum log_level l, char *buf, size_t buflen)
{
	/* systemd sets JOURNAL_STREAM when stderr is connected to the journal. */
	if (log_journal == -1)
		log_journal = getenv("JOURNAL_STREAM") != NULL;
	snprintf(buf, buflen, "%sstapled: %s", log_journal ? log_priority[l] : "",
	    log_word[l]);
	return buf;
}

static void
log_v(enum log_level l, const char *fmt, va_list ap)
{
	char	line[2048], head[32];

	if (l > log_max)
		return;
	vsnprintf(line, sizeof(line), fmt, ap);
	fprintf(stderr, "%s%s\n", log_head(l, head, sizeof(head)), line);
}

#define LOG_FN(fn, lvl)				\
void						\
fn(const char *fmt, ...)			\
{						\
	va_list	ap;				\
	va_start(ap, fmt);			\
	log_v(lvl, fmt, ap);			\
	va_end(ap);				\
}

LOG_FN(log_err, LOG_LVL_ERR)
LOG_FN(log_warn, LOG_LVL_WARN)
LOG_FN(log_info, LOG_LVL_INFO)
LOG_FN(log_debug, LOG_LVL_DEBUG)
LOG_FN(log_trace, LOG_LVL_TRACE)

void
fatal(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_v(LOG_LVL_ERR, fmt, ap);
	va_end(ap);
	exit(1);
}

char *
log_hex(char *buf, size_t buflen, const void *p, size_t len)
{
	if (buflen == 0)
		return buf;
	if (len > (buflen - 1) / 2)
		len = (buflen - 1) / 2;
	util_hex(p, len, buf);
	return buf;
}
