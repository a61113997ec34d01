/* SPDX-License-Identifier: Apache-2.0 */
/* Where a key or value of an already-parsed JSON text starts (line, column), for configuration messages. */
#ifndef ENTRY_CONF_POS_H
#define ENTRY_CONF_POS_H

#include <stddef.h>

/* One step of a path: a member by key, or (key NULL) an array element. */
struct jpos_step {
	const char	*key;
	size_t		 idx;
};

/* 1-based; columns count UTF-8 characters, not bytes. */
struct jpos {
	int	line;
	int	col;
};

/*
 * jansson reports positions for syntax errors only. To point at a key or
 * value after parsing, walk the raw text (buf, len: what jansson accepted)
 * along `path` (n steps; keys compared after decoding JSON escapes). Sets
 * *key where the last step's key (or, for an array element, the element)
 * starts and *val where its value starts; with n == 0 both are the start
 * of the top-level value. Returns 0, or -1 when a step is not found or
 * the text ends early: *key and *val then hold the deepest position
 * reached. Every step checks the end of the buffer; nothing is allocated.
 */
int	jpos_find(const char *buf, size_t len, const struct jpos_step *path,
	    size_t n, struct jpos *key, struct jpos *val);

#endif
