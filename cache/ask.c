/* SPDX-License-Identifier: Apache-2.0 */
/* staplectl refresh's files beside the store: the ask (all, a kind, or keys) and the daemon's result lines, written and parsed here only. */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/ask.h"

/*
 * The daemon reads it: staplectl runs as root, the daemon as its own user
 * (the keys are no secret). Set whatever the umask.
 */
#define ASK_FILE_MODE	0644

const char *const cache_ask_result_str[CACHE_ASK_RESULT_MAX] = {
	[CACHE_ASK_RENEWED] = "renewed",
	[CACHE_ASK_UNCHANGED] = "unchanged",
	[CACHE_ASK_FAILED] = "failed",
	[CACHE_ASK_DONE] = "done",
	[CACHE_ASK_STOPPED] = "stopped",
};

static const char	hexd[] = "0123456789abcdef";

/* len bytes as lower-case hex at out (2 * len + 1 bytes). */
static void
hex_put(char *out, const uint8_t *p, size_t len)
{
	size_t	i;

	for (i = 0; i < len; i++) {
		out[2 * i] = hexd[p[i] >> 4];
		out[2 * i + 1] = hexd[p[i] & 0xf];
	}
	out[2 * len] = '\0';
}

static int
hex_val(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The n hex digits at s into key (at most CACHE_KEY_MAX_BYTES). 0, or -1. */
static int
hex_get(const char *s, size_t n, uint8_t *key, size_t *klen)
{
	size_t	i;
	int	hi, lo;

	if (n == 0 || n % 2 != 0 || n / 2 > CACHE_KEY_MAX_BYTES)
		return -1;
	for (i = 0; i < n / 2; i++) {
		if ((hi = hex_val(s[2 * i])) < 0 || (lo = hex_val(s[2 * i + 1])) < 0)
			return -1;
		key[i] = (uint8_t)(hi << 4 | lo);
	}
	*klen = n / 2;
	return 0;
}

/* A kind's name (name(kind), "ocsp" ...) into *kind; "-" is 0. 0, or -1. */
static int
kind_get(cache_kind_name_fn *name, const char *s, size_t n, unsigned *kind)
{
	const char	*ks;
	int		 k;

	if (n == 1 && *s == '-') {
		*kind = 0;
		return 0;
	}
	for (k = 1; k <= CACHE_KIND_SLOTS; k++)
		if ((ks = name(k)) != NULL && strlen(ks) == n &&
		    strncmp(ks, s, n) == 0) {
			*kind = (unsigned)k;
			return 0;
		}
	return -1;
}

/* kind's name, or "-" for 0 or a number that names none. */
static const char *
kind_put(cache_kind_name_fn *name, unsigned kind)
{
	const char	*s;

	return kind > 0 && kind <= CACHE_KIND_SLOTS &&
	    (s = name((int)kind)) != NULL ? s : "-";
}

int
cache_ask_path(char *buf, size_t len, const char *dir, pid_t pid,
    const char *suffix)
{
	if (snprintf(buf, len, "%s/%s%ld%s", dir, CACHE_ASK_PREFIX, (long)pid,
	    suffix) >= (int)len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

pid_t
cache_ask_pid(const char *name)
{
	const char	*p;
	char		*end;
	long		 pid;

	if (strncmp(name, CACHE_ASK_PREFIX, strlen(CACHE_ASK_PREFIX)) != 0)
		return 0;
	p = name + strlen(CACHE_ASK_PREFIX);
	if (*p < '1' || *p > '9')
		return 0;
	pid = strtol(p, &end, 10);
	if (pid <= 0 || pid > INT_MAX || strcmp(end, CACHE_ASK_SUFFIX) != 0)
		return 0;
	return (pid_t)pid;
}

/* The ask's text: "all", "kind NAME", "key KIND HEX" lines. */
static int
ask_write(FILE *f, const struct cache_ask *ask, cache_kind_name_fn *name)
{
	char	hex[2 * CACHE_KEY_MAX_BYTES + 1];
	size_t	i;

	if (ask->all)
		fprintf(f, "all\n");
	if (ask->kind > 0 && strcmp(kind_put(name, ask->kind), "-") != 0)
		fprintf(f, "kind %s\n", kind_put(name, ask->kind));
	for (i = 0; i < ask->nkeys; i++) {
		if (ask->keys[i].klen == 0 ||
		    ask->keys[i].klen > CACHE_KEY_MAX_BYTES) {
			errno = EINVAL;
			return -1;
		}
		hex_put(hex, ask->keys[i].key, ask->keys[i].klen);
		fprintf(f, "key %s %s\n", kind_put(name, ask->keys[i].kind), hex);
	}
	return ferror(f) ? -1 : 0;
}

int
cache_ask_put(const char *dir, pid_t pid, const struct cache_ask *ask,
    cache_kind_name_fn *name)
{
	char	path[PATH_MAX], tmp[PATH_MAX];
	FILE	*f = NULL;
	int	fd, rv = -1;

	if (ask->nkeys > CACHE_ASK_MAX_KEYS) {
		errno = EOVERFLOW;
		return -1;
	}
	if (cache_ask_path(path, sizeof(path), dir, pid, CACHE_ASK_SUFFIX) == -1 ||
	    cache_ask_path(tmp, sizeof(tmp), dir, pid, ".tmp") == -1)
		return -1;
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    ASK_FILE_MODE)) == -1)
		return -1;
	if (fchmod(fd, ASK_FILE_MODE) == -1 || (f = fdopen(fd, "w")) == NULL) {
		close(fd);
		goto out;
	}
	if (ask_write(f, ask, name) == -1)
		goto out;
	if (fclose(f) == EOF) {
		f = NULL;
		goto out;
	}
	f = NULL;
	if (rename(tmp, path) == -1)
		goto out;
	rv = 0;
out:
	if (f != NULL)
		fclose(f);
	if (rv == -1)
		(void)unlink(tmp);
	return rv;
}

void
cache_ask_free(struct cache_ask *ask)
{
	if (ask == NULL)
		return;
	free(ask->keys);
	memset(ask, 0, sizeof(*ask));
}

/* One line of an ask into ask. 0, or -1. */
static int
ask_line(const char *line, struct cache_ask *ask, cache_kind_name_fn *name)
{
	struct cache_ask_key	*k;
	const char		*sp;

	if (strcmp(line, "all") == 0) {
		ask->all = 1;
		return 0;
	}
	if (strncmp(line, "kind ", 5) == 0)
		return kind_get(name, line + 5, strlen(line + 5), &ask->kind) == -1 ||
		    ask->kind == 0 ? -1 : 0;
	if (strncmp(line, "key ", 4) != 0 || (sp = strchr(line + 4, ' ')) == NULL ||
	    ask->nkeys >= CACHE_ASK_MAX_KEYS)
		return -1;
	k = &ask->keys[ask->nkeys];
	if (kind_get(name, line + 4, (size_t)(sp - line - 4), &k->kind) == -1 ||
	    hex_get(sp + 1, strlen(sp + 1), k->key, &k->klen) == -1)
		return -1;
	ask->nkeys++;
	return 0;
}

/* text (NUL-terminated, edited in place) into ask. 0, or -1 (EINVAL, ENOMEM). */
static int
ask_parse(char *text, size_t len, struct cache_ask *ask,
    cache_kind_name_fn *name)
{
	char	*line, *save = NULL;
	size_t	 lines = 1, i;

	for (i = 0; i < len; i++)
		lines += text[i] == '\n';
	if (lines > CACHE_ASK_MAX_KEYS + 2)
		lines = CACHE_ASK_MAX_KEYS + 2;
	if ((ask->keys = calloc(lines, sizeof(*ask->keys))) == NULL)
		return -1;
	for (line = strtok_r(text, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save))
		if (ask_line(line, ask, name) == -1) {
			errno = EINVAL;
			return -1;
		}
	if (!ask->all && ask->kind == 0 && ask->nkeys == 0) {
		errno = EINVAL;		/* asks for nothing */
		return -1;
	}
	return 0;
}

int
cache_ask_take(const char *path, struct cache_ask *ask,
    cache_kind_name_fn *name)
{
	struct stat	 st;
	char		*text = NULL;
	ssize_t		 n;
	int		 fd, rv = -1;

	memset(ask, 0, sizeof(*ask));
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW)) == -1)
		return -1;
	(void)unlink(path);
	if (fstat(fd, &st) == -1)
		goto out;
	if (!S_ISREG(st.st_mode) || st.st_size > (off_t)CACHE_ASK_MAX_BYTES) {
		errno = S_ISREG(st.st_mode) ? EFBIG : EINVAL;
		goto out;
	}
	if ((text = malloc((size_t)st.st_size + 1)) == NULL)
		goto out;
	if ((n = read(fd, text, (size_t)st.st_size)) != st.st_size) {
		if (n >= 0)
			errno = EINVAL;
		goto out;
	}
	text[n] = '\0';
	if (memchr(text, '\0', (size_t)n) != NULL) {
		errno = EINVAL;
		goto out;
	}
	rv = ask_parse(text, (size_t)n, ask, name);
out:
	if (rv == -1)
		cache_ask_free(ask);
	free(text);
	close(fd);
	return rv;
}

/* s into dst (at most dlen - 1 bytes), line breaks as spaces. */
static void
one_line(char *dst, size_t dlen, const char *s)
{
	size_t	i;

	for (i = 0; s[i] != '\0' && i + 1 < dlen; i++)
		dst[i] = s[i] == '\n' || s[i] == '\r' ? ' ' : s[i];
	dst[i] = '\0';
}

size_t
cache_ask_line_fmt(const struct cache_ask_line *l, char *buf,
    cache_kind_name_fn *name)
{
	char	hex[2 * CACHE_KEY_MAX_BYTES + 1], text[CACHE_ASK_WHY_BYTES];
	int	n;

	hex_put(hex, l->key, l->klen < CACHE_KEY_MAX_BYTES ? l->klen :
	    CACHE_KEY_MAX_BYTES);
	switch (l->what) {
	case CACHE_ASK_RENEWED:
	case CACHE_ASK_UNCHANGED:
		one_line(text, sizeof(text), l->source);
		n = snprintf(buf, CACHE_ASK_LINE_BYTES, "%s %s %s %" PRId64 " %"
		    PRId64 " %" PRId64 " %s\n", cache_ask_result_str[l->what],
		    kind_put(name, l->kind), hex, l->was, l->this_update,
		    l->next_update, text);
		break;
	case CACHE_ASK_FAILED:
		one_line(text, sizeof(text), l->why);
		n = snprintf(buf, CACHE_ASK_LINE_BYTES, "failed %s %s %s\n",
		    kind_put(name, l->kind), hex, text);
		break;
	case CACHE_ASK_DONE:
		n = snprintf(buf, CACHE_ASK_LINE_BYTES, "done %lu %lu %lu %lu\n",
		    l->renewed, l->unchanged, l->failed, l->skipped);
		break;
	default:
		one_line(text, sizeof(text), l->why);
		n = snprintf(buf, CACHE_ASK_LINE_BYTES, "stopped %s\n", text);
		break;
	}
	if (n < 0)
		n = 0;
	if ((size_t)n >= CACHE_ASK_LINE_BYTES) {	/* cut: still one line */
		n = CACHE_ASK_LINE_BYTES - 1;
		buf[n - 1] = '\n';
	}
	return (size_t)n;
}

/* "KIND HEX REST": kind, key, and REST's start. 0, or -1. */
static int
line_entry(const char *s, struct cache_ask_line *l, const char **rest,
    cache_kind_name_fn *name)
{
	const char	*sp1, *sp2;

	if ((sp1 = strchr(s, ' ')) == NULL ||
	    kind_get(name, s, (size_t)(sp1 - s), &l->kind) == -1)
		return -1;
	if ((sp2 = strchr(sp1 + 1, ' ')) == NULL)
		sp2 = sp1 + 1 + strlen(sp1 + 1);
	if (hex_get(sp1 + 1, (size_t)(sp2 - sp1 - 1), l->key, &l->klen) == -1)
		return -1;
	*rest = *sp2 == ' ' ? sp2 + 1 : sp2;
	return 0;
}

int
cache_ask_line_parse(const char *text, struct cache_ask_line *l,
    cache_kind_name_fn *name)
{
	const char	*rest;
	int		 off = 0, w;

	memset(l, 0, sizeof(*l));
	for (w = 0; w < CACHE_ASK_RESULT_MAX; w++)
		if (strncmp(text, cache_ask_result_str[w],
		    strlen(cache_ask_result_str[w])) == 0 &&
		    text[strlen(cache_ask_result_str[w])] == ' ')
			break;
	if (w == CACHE_ASK_RESULT_MAX)
		return -1;
	l->what = (enum cache_ask_result)w;
	text += strlen(cache_ask_result_str[w]) + 1;
	switch (l->what) {
	case CACHE_ASK_RENEWED:
	case CACHE_ASK_UNCHANGED:
		if (line_entry(text, l, &rest, name) == -1 || sscanf(rest, "%" SCNd64
		    " %" SCNd64 " %" SCNd64 " %n", &l->was, &l->this_update,
		    &l->next_update, &off) != 3 || off == 0)
			return -1;
		snprintf(l->source, sizeof(l->source), "%s", rest + off);
		return 0;
	case CACHE_ASK_FAILED:
		if (line_entry(text, l, &rest, name) == -1)
			return -1;
		snprintf(l->why, sizeof(l->why), "%s", rest);
		return 0;
	case CACHE_ASK_DONE:
		return sscanf(text, "%lu %lu %lu %lu", &l->renewed, &l->unchanged,
		    &l->failed, &l->skipped) == 4 ? 0 : -1;
	default:
		snprintf(l->why, sizeof(l->why), "%s", text);
		return 0;
	}
}
