/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The store's insides, internal to cache/: struct cache and the helpers
 * that cache/store*.c call in one another. Nothing outside cache/ includes it.
 */
#ifndef CACHE_STORE_INT_H
#define CACHE_STORE_INT_H

#include <sys/types.h>

#include <lmdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "cache/store.h"

#define CACHE_MAXDBS		8	/* meta, body, aux, due, and room to grow */
#define CACHE_MAXREADERS	256	/* daemon, staplectl, exporters */
#define CACHE_LMDB_FREE_DBI	0	/* the free pages, by the transaction that freed them */
#define CACHE_LMDB_MAIN_DBI	1	/* the unnamed database naming the others */
#define CACHE_DIR_MODE		0750
/* Group-writable, less the umask: staplectl run by a member of the daemon's
 * group opens lock.mdb for writing even to read (stapled.service's
 * UMask=0007 keeps these bits; the usual 022 or 027 removes them). */
#define CACHE_FILE_MODE		0660
#define CACHE_LKEY_BYTES	(1 + CACHE_KEY_MAX_BYTES)
#define CACHE_DUE_AT_BYTES	8	/* big-endian next_refresh_at */
#define CACHE_DUE_KEY_BYTES	(1 + CACHE_DUE_AT_BYTES + CACHE_KEY_MAX_BYTES)
#define MIB			((size_t)1 << 20)
/*
 * Below this much free space on the store's file system, writes wait: a
 * commit that grows data.mdb would fail part-way (LMDB reports a short
 * write as EIO) and leave the file grown to fill the disk.
 */
#define CACHE_SPACE_MIN_BYTES	((long long)1 << 20)
#define CACHE_OPEN_TRIES	3	/* lock.mdb replaced while LMDB opened it */
/* LMDB's node and page headers, for estimating what a put needs */
#define CACHE_LMDB_NODE_BYTES	8
#define CACHE_LMDB_PAGEHDR_BYTES 16

struct cache {
	MDB_env		*env;
	MDB_dbi		 meta;
	MDB_dbi		 body;
	MDB_dbi		 aux;
	MDB_dbi		 due;		/* the due index; valid when have_due */
	int		 have_due;
	long		 due_built;	/* keys built at open, or -1 */
	size_t		 due_skipped;
	/*
	 * One read transaction, reset between calls and renewed for the
	 * next, so a hit allocates nothing. Live only from a cache_get until
	 * the next call on the handle: that is how long its pointers last.
	 */
	MDB_txn		*rtxn;
	int		 rtxn_live;
	int		 readonly;
	/*
	 * Asked to write, opened read-only (cache_open_or_read): why
	 * (EROFS, EACCES, EPERM; 0 for any other handle), which file
	 * refused, and whether without lock.mdb (a read-only mount).
	 */
	int		 ro_errno;
	char		 ro_what[16];
	int		 nolock;
	int		 open_rc;	/* mdb_env_open's error at the last open, or 0 */
	int		 in_walk;	/* inside a cache_walk callback */
	size_t		 walk_skipped;
	size_t		 map_bytes;	/* asked at open, for a reset */
	int		 map_full;	/* the last error was MDB_MAP_FULL */
	enum cache_cause cause;		/* of the last error */
	int		 trim_due;	/* a write failed for want of disk */
	size_t		 trimmed;	/* bytes the last trim gave back */
	/* an original's, read by its twins' threads too (atomic) */
	int		 no_space;	/* writes wait for free space */
	/* lock.mdb and data.mdb as this environment opened them */
	dev_t		 lock_dev, data_dev;
	ino_t		 lock_ino, data_ino;
	int		 lazy_meta;	/* MDB_NOMETASYNC: synced at close */
	unsigned long	 env_gen;	/* environments opened: a reset maps anew */
	/* cache_release_pages_step's map, as found at its first step */
	unsigned long	 rel_lo, rel_hi, rel_gen;
	struct cache	*of;		/* a twin: the handle whose environment it shares */
	struct cache	*twins;		/* an original: its twins, through twin_next */
	struct cache	*twin_next;
	char		*dir;
	cache_kind_name_fn *kind_name;	/* an original's: cache_set_kind_name's, or NULL */
	char		 err[256];
	char		 damage[CACHE_DAMAGE_NOTE_BYTES];
	int		 txn_rc;	/* the current transaction's last LMDB error */
	/*
	 * An original's: damage found at run time by any of its handles, on
	 * any thread. 0 sound; 1 being noted; 2 noted, damaged_why written.
	 */
	atomic_int	 damaged;
	char		 damaged_why[CACHE_DAMAGE_NOTE_BYTES];
	int		 damage_efd;	/* cache_damage_fd's, or -1 */
	/*
	 * An original's: damaged records noted by any of its handles
	 * (store_damaged.c), under damaged_mu. notes: CACHE_DAMAGED_MAX, made
	 * at the first note.
	 */
	pthread_mutex_t	 damaged_mu;
	struct cache_damaged_note *notes;
	size_t		 nnotes;
};

/* store.c */
/* Bytes of a kind's label: "kind 4294967295" and its NUL. */
#define CACHE_KIND_LABEL_BYTES	16
const char	*cache_kind_label(struct cache *c, unsigned kind,
		    char buf[CACHE_KIND_LABEL_BYTES]);
void	cache_seterr(struct cache *c, const char *fmt, ...)
		    __attribute__((format(printf, 2, 3)));
int	env_bytes(MDB_env *env, size_t *map, size_t *used);
struct cache *	cache_origin(struct cache *c);
void	cache_setmdberr(struct cache *c, const char *op, int rc);
int	cache_lkey(struct cache *c, unsigned kind, const uint8_t *key, size_t klen,
	    uint8_t buf[CACHE_LKEY_BYTES], MDB_val *k);
void	cache_read_end(struct cache *c);
int	cache_read_begin(struct cache *c, const char *op);
/*
 * A write transaction: cache_write_begin, then cache_write_commit (or
 * cache_write_end) when it is done, and cache_write_abort at the cleanup
 * label whatever happened (it does nothing once a commit took the
 * transaction). Each is 0, or -1 with c->err set.
 *
 * cache_write_begin: *txn is NULL on failure. Refused in a walk callback,
 * on a handle opened for reading, on a damaged store, when data.mdb or
 * lock.mdb was replaced since the open or the daemon holding the store
 * uses another lock file (cache_check_peer), and while the disk is full;
 * a map another process grew is adopted first.
 */
int	cache_write_begin(struct cache *c, MDB_txn **txn);
/* Commit *txn, which is NULL after it whatever the outcome. */
int	cache_write_commit(struct cache *c, MDB_txn **txn);
/*
 * The end of a write that changed `changed` records: committed when any
 * did, else aborted (no commit, no sync). *txn is NULL after it.
 */
int	cache_write_end(struct cache *c, MDB_txn **txn, size_t changed);
/* End a write transaction that failed; NULL (a commit took it) does nothing. */
void	cache_write_abort(struct cache *c, MDB_txn *txn);
int	cache_env_open(struct cache *c);
int	cache_txn_meta(struct cache *c, MDB_txn *txn, MDB_val *k,
	    struct cache_meta *m);
int	cache_txn_put_meta(struct cache *c, MDB_txn *txn, MDB_val *k,
	    const struct cache_meta *old, const struct cache_meta *m);
/*
 * Delete the entry at k (kind and key) in txn: its meta and body, and its
 * due key when `old`, its meta as stored, is not NULL. An absent record
 * is no error. 0, or -1 with c->err naming `op` ("del meta", ...).
 */
int	cache_txn_del(struct cache *c, MDB_txn *txn, const MDB_val *k,
	    const struct cache_meta *old, const char *op);
/*
 * The end of a walk over a cursor of the read transaction (cache_walk,
 * cache_aux_walk, cache_due_walk): leaves the walk, closes cur (NULL when
 * it never opened) and ends the read. visited, or -1 when rc is an LMDB
 * error other than MDB_NOTFOUND (set as op's error).
 */
long	cache_walk_end(struct cache *c, MDB_cursor *cur, int rc, long visited,
	    const char *op);

/* store_lock.c */
int	cache_file_id(const char *dir, const char *name, dev_t *dev, ino_t *ino);
int	cache_check_data_id(struct cache *c);
int	cache_check_ids(struct cache *c);
int	cache_check_peer(struct cache *c);

/* store_space.c */
long long	cache_free_bytes(const struct cache *c);
void	cache_set_write_err(struct cache *c, const char *op, int rc);
int	cache_space_wait(struct cache *c);
void	cache_trim(struct cache *c);

/* store_ro.c */
int	cache_env_open_or_read(struct cache *c);
void	cache_set_read_only(struct cache *c);
int	cache_reopen_writable(struct cache *c);

/* store_due.c */
int	cache_txn_due_move(struct cache *c, MDB_txn *txn, const MDB_val *lk,
	    const struct cache_meta *old, const struct cache_meta *m);
int	cache_open_due(struct cache *c, MDB_txn *txn);

/* store_room.c */
int	free_record_count(const MDB_val *v, size_t *count);

/* store_damaged.c */
void	cache_damaged_init(struct cache *c);
void	cache_damaged_fini(struct cache *c);
void	cache_damaged_forget_all(struct cache *c);
/*
 * The meta value v stored under the LMDB key lk (kind || key), decoded:
 * 0 and *m, or -1 when it fails its check or names another kind, then
 * noted as damage found by `found`. The same for a body.
 */
int	cache_meta_read(struct cache *c, enum cache_found found,
	    const MDB_val *lk, const MDB_val *v, struct cache_meta *m);
int	cache_body_read(struct cache *c, enum cache_found found,
	    const MDB_val *lk, const MDB_val *v, struct cache_body *b);

/* store_check.c */
void	cache_env_drop(struct cache *c);
/* fmt into why[0..whylen), cut short; nothing when why is NULL or whylen 0 (store_check.c, scan.c). */
void	cache_why(char *why, size_t whylen, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));

#endif
