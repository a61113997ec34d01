/* SPDX-License-Identifier: Apache-2.0 */
/* A JSON text read one value at a time, so that an input far larger than any of its elements is never held as one tree. */
#ifndef ATTEST_JSON_STREAM_H
#define ATTEST_JSON_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/*
 * jansson builds the whole tree of a document at about twenty times the
 * size of its text; a manifest or an evidence file is an object or an
 * array of many small values. A stream walks the outer structure itself
 * (objects' member names, arrays' commas) and hands each inner value to
 * json_loadb as one piece of text, whose end it finds by counting
 * brackets outside strings. Memory: the largest value asked for as a tree
 * (at most its `max`) and a read buffer; a value passed over with
 * jstream_skip is never held. Every value handed to json_loadb is checked
 * by it in full; the walk between values accepts exactly what JSON does
 * (whitespace, one ',' between elements, one ':' after a name).
 *
 * Errors name the line ("line 7: ..."); the first one stops the stream:
 * every later call fails with it.
 */
#define JSTREAM_CHUNK_BYTES	65536	/* one read */
#define JSTREAM_NAME_BYTES	256	/* a member name, its NUL included */

/* Read up to len bytes into buf: how many, 0 at the end (or an error, which the reader remembers). */
typedef size_t jstream_read_fn(void *arg, uint8_t *buf, size_t len);

struct jstream;

/* A stream over bytes in memory (borrowed until freed), or over a reader. NULL: out of memory. */
struct jstream	*jstream_mem(const uint8_t *buf, size_t len);
struct jstream	*jstream_reader(jstream_read_fn *, void *arg);
void		 jstream_free(struct jstream *);	/* NULL ok */

/* The next character that is not whitespace, left unread; -1 at the end of the input or after an error. */
int	jstream_peek(struct jstream *);
/* Consume the next significant character, which must be c. 0, or -1 (said in jstream_error). */
int	jstream_expect(struct jstream *, int c);
/*
 * Arrays and objects, a piece at a time. After jstream_expect(s, '[')
 * (or '{'), with *first set to 1 by the caller: 1 when an element (a
 * member) follows, 0 once the closing bracket was read, -1 on an error.
 * jstream_member reads the member's name into name (at most
 * JSTREAM_NAME_BYTES - 1 bytes; a longer one is an error) and its ':';
 * the caller then reads or skips its value.
 */
int	jstream_element(struct jstream *, int *first);
int	jstream_member(struct jstream *, int *first, char name[JSTREAM_NAME_BYTES]);
/*
 * The next value as a tree (owned), its text at most max bytes, parsed
 * by json_loadb with `flags` (JSON_DECODE_ANY is added). NULL on an
 * error: a value larger than max, text that is not JSON, the end of the
 * input.
 */
json_t	*jstream_value(struct jstream *, size_t max, size_t flags);
/* Pass over the next value; its bytes are read and let go. 0, or -1. */
int	jstream_skip(struct jstream *);
/* After the last value: nothing but whitespace up to the end. 0, or -1. */
int	jstream_end(struct jstream *);
/* The first error ("line 7: ..."), or "" when none. */
const char *jstream_error(const struct jstream *);
/* 1 when that error is a value larger than its max (the text may be JSON), else 0. */
int	jstream_oversize(const struct jstream *);
/* 1-based line of the next character to read. */
size_t	jstream_line(const struct jstream *);

#endif
