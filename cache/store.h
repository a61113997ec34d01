/* SPDX-License-Identifier: Apache-2.0 */
/* The LMDB store: one environment, shared with staplectl and other processes. */
#ifndef CACHE_STORE_H
#define CACHE_STORE_H

#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>

#include "cache/record.h"

#define CACHE_KEY_MAX_BYTES	300	/* LMDB's default limit is 511 */
#define CACHE_DEFAULT_MAP_BYTES	((size_t)1 << 30)
#define CACHE_DAMAGE_NOTE_BYTES	512	/* a damage reason or note, with NUL */

struct cache;

/*
 * Open (creating if needed) the environment in `dir`. `map_bytes` 0 means
 * the default. `readonly` opens for reading only. On failure returns NULL
 * and writes a message naming the directory into err.
 * Writes are durable on commit: after kill -9 the environment holds every
 * entry whose put returned.
 */
struct cache	*cache_open(const char *dir, size_t map_bytes, int readonly,
		    char *err, size_t errlen);
/*
 * cache_open for writing, or, when the store is there but cannot be
 * written, for reading (the daemon's open): the mount is read-only
 * (EROFS), or this process may not write data.mdb or lock.mdb (EACCES,
 * EPERM: their mode, chattr +i). On a read-only mount the handle has no
 * lock file (MDB_NOLOCK; LMDB cannot take its locks there), so no reader
 * slot: a staplectl writing through another path refuses, not finding
 * the daemon among the readers (cache_check_peer). Otherwise it holds a
 * reader slot in lock.mdb for its life, as a writer does. Writes are
 * then refused at once (cache_writes_held, cache_cause: READ_ONLY)
 * until cache_reopen finds the store writable. NULL with err as
 * cache_open's when neither open succeeds.
 */
struct cache	*cache_open_or_read(const char *dir, size_t map_bytes,
		    char *err, size_t errlen);
/*
 * Lend the store the names of the kinds, for its messages ("ocsp entry:
 * not found"); without them a message says "kind 1". Set on the original
 * before its twins are made; `name` stays valid for the handle's life.
 */
void		 cache_set_kind_name(struct cache *, cache_kind_name_fn *name);
/* Whether the handle takes no writes because it was opened for reading. */
int		 cache_read_only(const struct cache *);
void		 cache_close(struct cache *);	/* accepts NULL */
/*
 * One sync a commit instead of two (MDB_NOMETASYNC): the meta page that
 * makes a commit the current one is written with the commit but synced
 * by the next commit (of any process), or at cache_close. The store stays
 * whole; a power loss or kernel crash may undo this handle's last write
 * transaction, and kill -9 loses nothing. For the daemon, whose writes
 * can all be made again (a refresh, a batch of hits); staplectl keeps
 * both syncs. 0, or -1 (a read-only handle, or LMDB refused); a handle
 * cache_open_or_read opened for reading keeps the choice for when it is
 * opened for writing.
 */
int		 cache_set_lazy_meta(struct cache *, int on);
/*
 * A second handle on the same environment, for another thread (LMDB
 * allows one environment per file in a process): its own errors and read
 * transaction, the original's databases. Closing it leaves the
 * environment open; close every twin before the original. Make and
 * close twins on the original's thread. cache_reset of the original
 * ends its twins' read transactions (no call on a twin may be in
 * progress); cache_twin_follow, on the twin's thread before each use,
 * then takes up the new environment, and costs nothing while there is
 * none. cache_set_lazy_meta and cache_reset refuse a twin. NULL on
 * ENOMEM, or when `of` is itself a twin.
 */
struct cache	*cache_twin(struct cache *of);
void		 cache_twin_follow(struct cache *twin);
/* The last error on this handle, e.g. "map full (1024 MiB): raise map_size". */
const char	*cache_strerror(const struct cache *);

/*
 * Look up kind+key. Returns 1 found, 0 not found (or its records fail
 * their check: noted as damaged, below), -1 error.
 * The body pointers borrow LMDB's map and stay valid until the next call
 * on this handle (the read transaction is reused, not kept open).
 */
int	cache_get(struct cache *, unsigned kind, const uint8_t *key, size_t klen,
	    struct cache_meta *meta, struct cache_body *body);
/*
 * End the read transaction the last cache_get left live (its pointers go
 * with it). A live one keeps its snapshot's pages from reuse by writers:
 * a handle that may sit idle after a get calls this when it is done.
 */
void	cache_get_done(struct cache *);
/* Metadata only; body may be NULL in cache_get too. */
int	cache_get_meta(struct cache *, unsigned kind, const uint8_t *key,
	    size_t klen, struct cache_meta *meta);

enum cache_put_result {
	CACHE_PUT_STORED = 0,
	CACHE_PUT_KEPT = 1,	/* stored entry has a newer this_update: unchanged */
};
/*
 * Store an entry, never replacing one with a newer this_update. Counters
 * (served_count, last_served_at) of an existing entry are carried over,
 * and so is its CACHE_F_IMPORTED.
 * Returns enum cache_put_result, or -1 (see cache_strerror; nothing changed).
 */
int	cache_put(struct cache *, const uint8_t *key, size_t klen,
	    const struct cache_meta *meta, const struct cache_body *body);
/*
 * Several puts in one write transaction (one sync), for imports. Each item
 * is judged exactly as cache_put would judge it, in order, so a later item
 * for the same key sees the earlier one. results[i] gets that item's enum
 * cache_put_result. Returns 0, or -1 and nothing stored (cache_strerror).
 */
struct cache_put_item {
	const uint8_t		*key;
	size_t			 klen;
	const struct cache_meta	*meta;
	const struct cache_body	*body;
};
int	cache_put_many(struct cache *, const struct cache_put_item *, size_t n,
	    int *results);
/* Replace only the metadata of an existing entry (schedule, failures). 0, or -1 (also when absent). */
int	cache_put_meta(struct cache *, const uint8_t *key, size_t klen,
	    const struct cache_meta *meta);

/*
 * Served counters, batched: one write transaction for n entries. A touch
 * with served > 0 clears CACHE_F_IMPORTED. Absent entries are skipped.
 * 0, or -1 (cache_strerror; nothing changed).
 */
struct cache_touch {
	uint8_t		kind;
	uint8_t		key[CACHE_KEY_MAX_BYTES];
	size_t		klen;
	uint64_t	served;		/* to add */
	int64_t		last_served_at;
};
int	cache_touch(struct cache *, const struct cache_touch *, size_t n);

/*
 * Delete kind+key; an absent entry is not an error. A delete the full map
 * refuses is tried once more after a commit of the aux record
 * CACHE_AUX_TURN, which makes the pages the last commit freed usable
 * (LMDB lends a transaction only what was freed two commits before).
 * 0, or -1 (cache_strerror, cache_map_full).
 */
#define CACHE_AUX_TURN	"map-turn"
int	cache_del(struct cache *, unsigned kind, const uint8_t *key, size_t klen);

/*
 * Walk entries of one kind (0: all) in key order, starting after `after`
 * (NULL: from the start), at most `max` entries (0: no limit). The callback
 * gets borrowed key and meta; returning non-zero stops the walk.
 * Returns the number visited, or -1. `after`/`afterlen` may name the last
 * key of the previous chunk, for chunked scans on an event loop.
 */
typedef int cache_walk_cb(unsigned kind, const uint8_t *key, size_t klen,
    const struct cache_meta *, void *arg);
long	cache_walk(struct cache *, unsigned kind, const uint8_t *after,
	    size_t afterlen, size_t max, cache_walk_cb *, void *arg);
/*
 * With kind 0, `after` is the kind byte followed by the key (keys of two
 * kinds may be equal). The callback must not call into the same handle:
 * such calls fail. Records that do not decode are skipped, not visited,
 * and noted as damaged (below); cache_walk_skipped() says how many the
 * last walk skipped.
 */
size_t	cache_walk_skipped(const struct cache *);

/*
 * The due index: a database "due" whose keys are kind (1 byte) ||
 * next_refresh_at (8 bytes, big-endian; a negative time as 0) || key, with
 * empty values, one per entry without CACHE_F_NO_REFRESH. Every write of
 * an entry's meta (put, put_many, put_meta, touch, reschedule, del) moves
 * its index key in the same write transaction, so the index is as durable
 * and as consistent as the metas, whichever process writes. Within a kind
 * the keys sort by when the entry is due; unscheduled entries (imports,
 * next_refresh_at 0) first. A store without the database (written by an
 * older stapled) gets it built by the first read-write cache_open, in
 * that open's write transaction.
 *
 * cache_due_walk visits the entries of `kind` whose next_refresh_at is
 * at most `now`, soonest first, at most `max` (0: no limit), with the
 * meta read from the meta database (borrowed for the callback). The
 * callback must not call into the same handle; returning non-zero stops
 * the walk. An index key whose entry is gone, does not decode (noted as
 * damaged, below) or has another schedule is skipped, and up to CACHE_DUE_REPAIR_MAX of them are
 * repaired after the walk (in a write transaction of their own, unless
 * the handle is read-only). Returns the number visited, or -1
 * (cache_strerror; also when a read-only handle's store has no index).
 */
#define CACHE_DUE_REPAIR_MAX	64	/* stale index keys mended per walk */
long	cache_due_walk(struct cache *, unsigned kind, int64_t now,
	    size_t max, cache_walk_cb *, void *arg);
/* Stale index keys the last cache_due_walk skipped. */
size_t	cache_due_skipped(const struct cache *);
/*
 * How many index keys this handle's open built for a store that had no
 * index, or -1 when the store had one (or the handle is read-only).
 */
long	cache_due_built(const struct cache *);

/*
 * Schedule changes, batched in one write transaction: for each item whose
 * entry exists and still has next_refresh_at == expect_at (so a write by
 * another process since the caller read it wins), set next_refresh_at and
 * the flags (flags | set_flags) & ~clear_flags, and move its index key.
 * Returns the number changed, or -1 (cache_strerror; nothing changed).
 */
struct cache_sched {
	uint8_t		kind;
	uint8_t		key[CACHE_KEY_MAX_BYTES];
	size_t		klen;
	int64_t		expect_at;
	int64_t		next_refresh_at;
	uint16_t	set_flags;
	uint16_t	clear_flags;
};
long	cache_reschedule(struct cache *, const struct cache_sched *, size_t n);

/*
 * Let go of the map pages this process has touched (MADV_DONTNEED on
 * LMDB's read-only map): they stay in the page cache, but no longer count
 * as this process's resident memory. For after a walk over every entry.
 */
void	cache_release_pages(struct cache *);
/*
 * The same in steps: the part of the map from offset `from` to from + max.
 * Returns where the next step starts, or 0 when this one reached the
 * map's end. Unmapping a map a hit load filled takes a while (a quarter
 * of a second for 3 GB); steps let a loop answer in between.
 */
size_t	cache_release_pages_step(struct cache *, size_t from, size_t max);

/* Small named records that are not vendor objects: upstream health, pools. */
int	cache_aux_put(struct cache *, const char *name, const uint8_t *val, size_t len);
/* Returns 1 and a malloc'd copy in *val, 0 absent, -1 error. */
int	cache_aux_get(struct cache *, const char *name, uint8_t **val, size_t *len);
/*
 * Visit the aux records whose name starts with `prefix` ("pool/" for the
 * intermediate pool: "pool/<sha256 hex of the DER>" holds the DER), in
 * name order. name (NUL-terminated) and val borrow the walk's read
 * transaction and are valid during the callback only; the callback must
 * not call into the same handle. Returning non-zero stops the walk.
 * Returns the number visited, or -1.
 */
typedef int cache_aux_cb(const char *name, const uint8_t *val, size_t len,
    void *arg);
long	cache_aux_walk(struct cache *, const char *prefix, cache_aux_cb *,
	    void *arg);

/*
 * Entry counts and map usage; entries[0] counts records that do not
 * decode; due_keys the due index's keys (0 when the store has none).
 */
struct cache_stat {
	size_t	entries[CACHE_KIND_SLOTS + 1];
	size_t	due_keys;
	size_t	map_bytes;
	size_t	used_bytes;
	size_t	free_bytes;	/* of used_bytes, on the free list (cache_room) */
};
int	cache_stat(struct cache *, struct cache_stat *);

/*
 * Room for writes: the map's size, the pages the file holds up to its
 * high-water mark, and how many of those are on LMDB's free list (pages
 * freed by earlier writes, taken again once no reader's snapshot needs
 * them). Writes have map - used + free; a reader that never ends keeps
 * what was freed after its snapshot off that list's reusable part, and the
 * high-water mark then climbs. 0, or -1 (cache_strerror).
 */
struct cache_room {
	size_t	map_bytes;
	size_t	used_bytes;
	size_t	free_bytes;
};
int	cache_room(struct cache *, struct cache_room *);

/*
 * Damage. LMDB has no page checksums: these checks find structural damage
 * (pages that are not what the tree says, a file shorter than its pages);
 * altered bytes inside a record are its own check's to find (record.h,
 * and "Damaged records" below).
 *
 * cache_check_file: the cheap checks on DIR/data.mdb, without opening the
 * environment: both meta pages, the page size, the last page against the
 * file size, the main tree's root page; a zero-length file is damaged.
 * Returns 0 sound (or absent), 1 damaged, -1 could not read; `why` gets
 * the reason for 1 and -1.
 *
 * cache_check_walk: open DIR read-only in this process and read every
 * record of every database. 0, or -1 with `why`. Damage may instead kill
 * the process (SIGBUS, SIGSEGV, LMDB's assert): call it in a child only.
 *
 * cache_check_spawn: fork a child that runs cache_check_walk and exits.
 * Returns its pid and in *fd the read end of a pipe carrying its reason
 * (the caller passes fd to cache_check_result, which closes it), or -1.
 * cache_check_result: judge the child's wait status: 0 sound, 1 damaged
 * (`why`: killed by a signal, or the walk's error).
 * cache_check_forked: both, waiting for the child (blocks; for staplectl).
 * 0 sound, 1 damaged, -1 could not fork or wait (`why`).
 */
int	cache_check_file(const char *dir, char *why, size_t whylen);
int	cache_check_walk(const char *dir, char *why, size_t whylen);
pid_t	cache_check_spawn(const char *dir, int *fd);
int	cache_check_result(int wstatus, int fd, char *why, size_t whylen);
int	cache_check_forked(const char *dir, char *why, size_t whylen);
/*
 * Rename DIR/data.mdb to DIR/data.mdb.damaged-<UTC time> (its path into
 * `aside`) and remove DIR/lock.mdb, or, while another process has the
 * environment open (LMDB's read lock on the lock file's first byte), rename
 * it to `aside` followed by ".lock": a lock file in use is never removed.
 * No environment on DIR may be open in this process. 0, or -1 with errno.
 */
int	cache_move_aside(const char *dir, char *aside, size_t asidelen);
/*
 * Close the handle's environment, move data.mdb aside as above and open a
 * fresh, empty one in its place: the handle stays the same pointer. `note`
 * is kept for cache_damage; the mark of damage found at run time is
 * cleared. 0, or -1 (cache_strerror; the handle is then unusable but for
 * cache_close).
 */
int	cache_reset(struct cache *, const char *note, char *aside,
	    size_t asidelen);
/*
 * Damage found at run time. An LMDB result that means a damaged file
 * (cache_damage_rc), or a lookup that finds an entry's meta and not its
 * body (every write puts both in one transaction), got by any handle of
 * an environment (the original or a twin, on any thread), marks the
 * environment damaged: from then on
 * every call on its handles that would read or write it fails at once
 * ("the store is damaged (CAUSE): not read until it is moved aside"),
 * reading nothing of the map, until cache_reset of the original.
 *
 * cache_damage_rc: whether LMDB's return code rc means a damaged file:
 * MDB_CORRUPTED, MDB_PAGE_NOTFOUND, MDB_INVALID; MDB_BAD_TXN when `prior`,
 * the transaction's earlier error, is one of those or 0 (LMDB's cursor
 * set-up drops its page search's error and keeps only the flag). 1 or 0.
 * cache_damage_found: 1 and the first finder's cause in `why` once the
 * environment is marked, else 0.
 * cache_damage_fd: an eventfd, readable once the environment is marked
 * or a damaged record noted (one count each; read it to rearm), for the
 * original's owner to start the recovery, or take the notes, on its own
 * thread. Made at the first call, closed by
 * cache_close; call it before the twins' threads start. -1 (errno; EINVAL
 * for a twin).
 */
int	cache_damage_rc(int rc, int prior);
int	cache_damage_found(struct cache *, char *why, size_t whylen);
int	cache_damage_fd(struct cache *);

/*
 * Damaged records. A record whose bytes fail its own check (record.h:
 * length, structure, or its checksum) is damage of that entry only, not
 * of the store. Whichever call reads it, on any handle and thread, takes
 * the entry as absent (a lookup returns 0, a walk skips it, a write
 * replaces it) and notes its kind and key on the original handle, with
 * where it was found and why; the original's cache_damage_fd is then
 * readable. A record is noted once: a later read of it notes nothing
 * until cache_drop_damaged has dealt with it (or cache_reset). At most
 * CACHE_DAMAGED_MAX notes are held; past them, a record is noted when it
 * is read again after room was made.
 *
 * cache_damaged_take: copy up to max notes not yet taken into out (the
 * original handle's owner, on its thread). Returns how many.
 * cache_drop_damaged: in a write transaction, delete the entry's meta,
 * body and due key if its records still fail their check (a write since
 * may have replaced them; a sound entry is left), and forget its note.
 * 1 deleted, 0 sound or absent, -1 (cache_strerror; the note stays, so
 * the record is not noted again). Where it was found: enum cache_found
 * (record.h).
 */
#define CACHE_DAMAGED_MAX	256	/* records noted and not yet dropped */

struct cache_damaged {
	uint8_t		 kind;
	uint8_t		 key[CACHE_KEY_MAX_BYTES];
	size_t		 klen;
	enum cache_found found;
	const char	*part;		/* "meta" or "body"; static */
	const char	*why;		/* record_*_fault's phrase; static */
};
size_t	cache_damaged_take(struct cache *, struct cache_damaged *out,
	    size_t max);
int	cache_drop_damaged(struct cache *, unsigned kind, const uint8_t *key,
	    size_t klen);

/*
 * Close the handle's environment and open it again on the same data.mdb,
 * taking up the lock.mdb now at its path (cache_writes_held said LOCK
 * because it was removed or replaced). Refused while any other process
 * has the old lock file open (its reader slots, LMDB's record locks on it
 * in /proc/locks): it would share neither file after the reopen. Refused
 * too when data.mdb is not the file opened. Same rules as cache_reset
 * for twins. 0 reopened; 1 refused, the handle as it was; -1 the open
 * failed, the handle unusable but for cache_close (cache_strerror).
 * A handle cache_open_or_read opened for reading (READ_ONLY) is opened
 * for writing instead, once faccessat says this process may write
 * lock.mdb and data.mdb: 0 writing now, 1 still read-only (why in
 * cache_strerror), -1 as above. A process that opened the store while
 * its mount was read-only reads without a reader slot, unseen: the
 * caller makes sure none still reads (the daemon's check walk).
 */
int	cache_reopen(struct cache *);
/* Keep a note about damage found (copied), and read it back (NULL: none). */
void		 cache_note_damage(struct cache *, const char *note);
const char	*cache_damage(const struct cache *);
/* Whether the last failed call on the handle failed because the map is full. */
int	cache_map_full(const struct cache *);
/*
 * The map's size in effect, in bytes: map_bytes of cache_open, or the
 * larger size the file was made with or another process grew it to.
 * 0 when LMDB cannot say.
 */
size_t	cache_map_bytes(struct cache *);

/*
 * Why the last failed call on the handle failed, when it is the store's
 * state rather than what was given: the write may succeed later. NONE
 * for any other failure (a bad key, a body too large, damage).
 *   MAP_FULL  the map is full ("map full: needs about N MiB, map_size_mb
 *             is M" for puts)
 *   NO_SPACE  the file system is full: ENOSPC, EDQUOT, or EIO with less
 *             than 1 MiB free (LMDB reports a short write as EIO); later
 *             writes of the handle wait, refused at once, until statvfs
 *             finds 1 MiB free again. An open finding less starts so.
 *   IO        another I/O error writing
 *   LOCK      lock.mdb or data.mdb at its path is not the file this
 *             environment opened (removed, replaced, moved aside), or the
 *             daemon holding DIR is not among the readers of this lock
 *             file (it opened another): a write would not be seen by the
 *             other's locks, and is refused before it begins. Only a new
 *             open (cache_reopen, a restart) mends it. Also the lock file
 *             busy: MDB_READERS_FULL, EBUSY, EAGAIN.
 *   READ_ONLY cache_open_or_read opened the store for reading: its file
 *             system is read-only, or data.mdb or lock.mdb cannot be
 *             written by this process. Only cache_reopen mends it.
 * A write that fails for NO_SPACE or IO gives back, before it returns,
 * the pages it added to data.mdb past the newest commit's last page (the
 * file is cut under the writer lock; no snapshot refers to them).
 */
enum cache_cause {
	CACHE_CAUSE_NONE = 0,
	CACHE_CAUSE_MAP_FULL,
	CACHE_CAUSE_NO_SPACE,
	CACHE_CAUSE_IO,
	CACHE_CAUSE_LOCK,
	CACHE_CAUSE_READ_ONLY,
	CACHE_CAUSE_MAX
};
extern const char *const cache_cause_str[CACHE_CAUSE_MAX];
enum cache_cause	cache_cause(const struct cache *);
/* 1 for the causes above but NONE: the store cannot take the write now. */
int			cache_cause_later(enum cache_cause);
/*
 * Whether writes are held now, and why: NO_SPACE (the disk was full at
 * the last write or at open, and still is), LOCK, READ_ONLY, or NONE
 * (also for a handle opened read-only by choice). A stat of
 * lock.mdb and data.mdb, and a statvfs while the disk is full; the
 * handle's error is set as a refused write would set it. For the
 * original's thread.
 */
enum cache_cause	cache_writes_held(struct cache *);

/*
 * The daemon's claim on DIR: an exclusive flock on the directory itself,
 * which no removed file can lift, and the pid written in DIR/stapled.lock
 * (cache_lock_holder). Returns the fd to keep open for the daemon's life,
 * with err empty or a warning (the pid file could not be written, as on a
 * full disk: the lock holds all the same), or -1 with a message in err
 * (another daemon holds it: its pid). LMDB's own lock.mdb is untouched,
 * so staplectl opens the store beside the daemon.
 */
int	cache_lock_dir(const char *dir, char *err, size_t errlen);

/* The LMDB library's version ("0.9.24"), static; for stapled_build_info. */
const char	*cache_lib_version(void);

#endif
