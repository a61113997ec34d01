/* SPDX-License-Identifier: Apache-2.0 */
/* staplectl refresh's files beside the store: the ask staplectl writes, and the result lines the daemon appends for it to read. */
#ifndef CACHE_ASK_H
#define CACHE_ASK_H

#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>

#include "cache/record.h"
#include "cache/store.h"

/*
 * DIR/stapled.refresh-PID.ask (PID: the asking staplectl's), written to a
 * temporary file and renamed, read and removed by the daemon on SIGUSR1;
 * its answers go to DIR/stapled.refresh-PID.out, a line each, which the
 * daemon creates and staplectl removes once it read the last line.
 */
#define CACHE_ASK_PREFIX	"stapled.refresh-"
#define CACHE_ASK_SUFFIX	".ask"
#define CACHE_ASK_OUT_SUFFIX	".out"
#define CACHE_ASK_MAX_BYTES	(8u << 20)	/* an ask file: about 13,000 keys of the longest */
#define CACHE_ASK_MAX_KEYS	65536
#define CACHE_ASK_LINE_BYTES	2048	/* one result line, newline included */
#define CACHE_ASK_WHY_BYTES	1024	/* a failure's cause, cut short beyond */

/*
 * A kind is written by its name: `name` (cache/record.h), the caller's
 * list, gives it to every function below that writes or reads one (a
 * kind it names NULL is written "-", and read as no kind's name).
 */

/* One key asked for; kind 0: whichever kinds hold it. */
struct cache_ask_key {
	unsigned	 kind;
	uint8_t		 key[CACHE_KEY_MAX_BYTES];
	size_t		 klen;
};

/* What staplectl asks to renew: every entry, a kind's, or the keys listed. */
struct cache_ask {
	int			 all;
	unsigned		 kind;	/* every entry of it; 0: none */
	struct cache_ask_key	*keys;	/* owned */
	size_t			 nkeys;
};

enum cache_ask_result {
	CACHE_ASK_RENEWED,	/* stored with a later thisUpdate */
	CACHE_ASK_UNCHANGED,	/* the upstream's answer was no newer than the stored one */
	CACHE_ASK_FAILED,	/* with why; kind 0: no such entry */
	CACHE_ASK_DONE,		/* the last line: the counts */
	CACHE_ASK_STOPPED,	/* the last line when the daemon stops first, with why */
	CACHE_ASK_RESULT_MAX
};
extern const char *const cache_ask_result_str[CACHE_ASK_RESULT_MAX];

/* One line of DIR/stapled.refresh-PID.out. */
struct cache_ask_line {
	enum cache_ask_result	 what;
	unsigned		 kind;
	uint8_t			 key[CACHE_KEY_MAX_BYTES];
	size_t			 klen;
	int64_t			 was;		/* thisUpdate before (renewed, unchanged) */
	int64_t			 this_update, next_update;	/* after */
	char			 source[RECORD_SOURCE_MAX];	/* who answered */
	char			 why[CACHE_ASK_WHY_BYTES];	/* failed, stopped */
	/* done: renewed, unchanged, failed, and skipped (never refreshed: VCEKs ...) */
	unsigned long		 renewed, unchanged, failed, skipped;
};

/* DIR/stapled.refresh-PID plus suffix into buf. 0, or -1 (ENAMETOOLONG). */
int	cache_ask_path(char *buf, size_t len, const char *dir, pid_t pid,
	    const char *suffix);
/* The PID of a directory entry named stapled.refresh-PID.ask, or 0. */
pid_t	cache_ask_pid(const char *name);
/*
 * Write ask as DIR/stapled.refresh-PID.ask, atomically (a temporary file
 * renamed over it). 0, or -1 (errno; EOVERFLOW: over CACHE_ASK_MAX_KEYS).
 */
int	cache_ask_put(const char *dir, pid_t pid, const struct cache_ask *ask,
	    cache_kind_name_fn *name);
/*
 * Read the ask file at path into ask (free with cache_ask_free) and
 * remove it. 0, or -1 (errno; EINVAL: not in the format put writes,
 * EFBIG: over CACHE_ASK_MAX_BYTES); the file is removed in every case
 * but ENOENT.
 */
int	cache_ask_take(const char *path, struct cache_ask *ask,
	    cache_kind_name_fn *name);
void	cache_ask_free(struct cache_ask *);	/* accepts NULL */

/*
 * One result line, newline included, into buf (CACHE_ASK_LINE_BYTES):
 * "renewed KIND HEXKEY WAS THIS NEXT SOURCE", "unchanged ...", "failed
 * KIND HEXKEY WHY" (KIND "-" when 0), "done R U F S", "stopped WHY";
 * line breaks in WHY and SOURCE become spaces. Returns its length.
 */
size_t	cache_ask_line_fmt(const struct cache_ask_line *, char *buf,
	    cache_kind_name_fn *name);
/* Parse one line (without its newline). 0, or -1 when not in that format. */
int	cache_ask_line_parse(const char *text, struct cache_ask_line *,
	    cache_kind_name_fn *name);

#endif
