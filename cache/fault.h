/* SPDX-License-Identifier: Apache-2.0 */
/* Damage that cannot be returned from (a fault inside the store's map, an LMDB assertion): a marker for the next start, and an exit. */
#ifndef CACHE_FAULT_H
#define CACHE_FAULT_H

#include <stddef.h>

/*
 * LMDB reads its file through a map and trusts it: a page past the end of
 * a shortened file faults with SIGBUS, a wild offset in a damaged page
 * with SIGSEGV, and a page that is not what its tree says may fail one of
 * LMDB's assertions (abort). None of these returns to the caller. Once
 * armed, the process (not its children) answers each by writing
 * DIR/CACHE_FAULT_MARKER, saying what was being read, and leaving with
 * _exit(CACHE_FAULT_EXIT); the next start finds the marker and moves the
 * store aside before it reads anything of it (cache_fault_marker).
 *
 * A fault counts as the map's when the kernel raised it (not kill) at an
 * address inside the map of the store's environment as it is now, or at
 * any address from an instruction of LMDB's shared library, or of a C
 * library function LMDB called (its return address, at the top of the
 * stack, is LMDB's): LMDB follows only what the map and its own
 * structures hold, a damaged node's flags can send it through a NULL
 * sub-database cursor, and a damaged size its memcpy past the map's
 * end. Any other SIGBUS or SIGSEGV is a bug: the default action runs,
 * with its core file, as if nothing were armed. (With LMDB linked into the program, its code is
 * not told from stapled's, and only the map's addresses count.)
 */
#define CACHE_FAULT_EXIT	3	/* the exit status after a fault in the map */
#define CACHE_FAULT_MARKER	"stapled.fault"
#define CACHE_FAULT_CAUSE_BYTES	400	/* a cause in the marker, with NUL */

/*
 * Arm for the store in `dir`: install the SIGBUS and SIGSEGV handlers, and
 * let LMDB's assertions (cache_open sets the callback) write the marker.
 * `head` (copied, may be NULL) starts the line written to stderr, as the
 * process's log lines start ("stapled: error: "). 0, or -1 (errno:
 * ENAMETOOLONG, or sigaction's).
 */
int	cache_fault_arm(const char *dir, const char *head);
/*
 * Damage found outside a signal that cannot be survived in place (an
 * assertion, a recovery that failed): write the marker with `cause` and
 * _exit(CACHE_FAULT_EXIT). Returns only when not armed in this process.
 */
void	cache_fault_exit(const char *cause);
/* cache_fault_exit for LMDB's assertion callback: the message and what this thread was reading. */
void	cache_fault_assert(const char *msg);
/*
 * At start: 1 when DIR holds a marker naming the data.mdb now there (the
 * cause, what the last run was reading, into `why`); 0 when there is no
 * marker, or it names another file (a store put back since; the marker
 * is then removed); -1 when it cannot be read (`why`).
 */
int	cache_fault_marker(const char *dir, char *why, size_t whylen);
/* Remove DIR's marker, once its store is moved aside. 0 (also when absent), or -1 (errno). */
int	cache_fault_marker_clear(const char *dir);

/*
 * For cache/store.c. cache_fault_map: the map of the store's environment,
 * its page size and data.mdb's inode, each time it is mapped anew; NULL
 * when it is unmapped (the inode stays, for cache_fault_exit).
 * cache_fault_doing: what this thread reads now, a static string
 * ("lookup", "walk", ...), for the marker.
 */
void	cache_fault_map(const void *addr, size_t len, size_t psize,
	    unsigned long long ino);
void	cache_fault_doing(const char *op);

#endif
