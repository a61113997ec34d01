/* SPDX-License-Identifier: Apache-2.0 */
/* staplectl: what its command files share (context, exit codes, trust, the cache's pool). */
#ifndef TOOLS_STAPLECTL_H
#define TOOLS_STAPLECTL_H

#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <openssl/ocsp.h>
#include <openssl/x509.h>

#include "attest/ocsp_verify.h"
#include "cache/store.h"
#include "entry/conf.h"
#include "tools/bundle.h"

#define CTL_MAX_CONFIG_BYTES	(1024 * 1024)
#define CTL_MAX_LIST		64	/* inputs, upstreams */
#define CTL_ENTRIES_FIRST	16	/* ctl_entries_add's first allocation */

/* Exit codes a script can rely on (docs/staplectl.8). */
enum ctl_exit {
	CTL_OK = 0,		/* done; nothing rejected */
	CTL_REJECTED = 1,	/* something was rejected or failed */
	CTL_USAGE = 2,		/* bad command line or configuration */
	CTL_NOFILE = 3,		/* cannot open the cache or a file */
	CTL_LATER = 4,		/* import: the cache cannot take the bundle now */
	CTL_NODAEMON = 5,	/* reload, refresh: no daemon runs, or none answered in time */
};

struct ctl {
	const char	*cache_dir;	/* -C, else conf.cache_dir */
	const char	*config_file;
	int		 json;
	int		 quiet;		/* -q: no progress line (tools/progress.h) */
	struct config	 conf;		/* the defaults, then -f's file, as stapled's */
	struct cache	*cache;
	int		 cache_readonly;
	time_t		 now;
};

/* Every kind's trust store, and the OCSP one's certificates for chain building. */
struct ctl_trust {
	void			*trust[CACHE_KIND_MAX];	/* by kind: kind_trust_new's */
	struct ocsp_trust	*ocsp;		/* trust[]'s OCSP store, borrowed */
	STACK_OF(X509)		*anchors;	/* its anchors and pool, borrowed */
	STACK_OF(X509)		*pool;
	/* The entries checked alongside (a bundle's): KDS cert_chains for VCEKs. */
	const struct bundle_entry *peers;
	size_t			 npeers;
};

typedef int ctl_cmd_fn(struct ctl *, int argc, char **argv);

ctl_cmd_fn	cmd_status, cmd_list, cmd_show, cmd_purge, cmd_check;
ctl_cmd_fn	cmd_export, cmd_verify, cmd_import;
ctl_cmd_fn	cmd_manifest, cmd_fetch, cmd_prefetch, cmd_export_rim_store;
ctl_cmd_fn	cmd_reload, cmd_refresh;

struct cache_reload;
/*
 * The stapled holding ctl's cache directory, once it has finished
 * starting (its start-up verdict is in stapled.reload, so its signal
 * handlers are in place), waiting for that until deadline (mono_ms).
 * CTL_OK with *pid and the verdict in *r; CTL_NODAEMON when none runs, it
 * exits or does not finish starting in time; CTL_NOFILE when the
 * directory or the file cannot be read (said why).
 */
int	ctl_daemon_ready(const struct ctl *, int64_t deadline, pid_t *pid,
	    struct cache_reload *r);

/* Messages to stderr, "staplectl: " first. */
void	ctl_warnx(const char *, ...) __attribute__((format(printf, 1, 2)));

/*
 * The configuration into ctl->conf: the defaults, then the file at path
 * (NULL: none), checked as stapled -n checks it (entry/conf.h). CTL_OK;
 * CTL_USAGE when the file is refused, CTL_NOFILE when it cannot be read,
 * after saying stapled's message ("file:line:column: message").
 */
int	ctl_load_config(struct ctl *, const char *path);
void	ctl_free(struct ctl *);
/* --kind's argument: CTL_OK with *kind, or CTL_USAGE after saying why. */
int	ctl_opt_kind(const char *, enum cache_kind *);
/* The configured skew_s of kind's section (entry_servable's argument); 0 for no kind. */
long	ctl_skew_s(const struct ctl *, enum cache_kind);

/*
 * Open the cache once (read-only or not), after the damage checks: the
 * cheap ones (cache_check_file) for reading, and the walk of every record
 * in a child too (cache_check_forked) for writing. CTL_OK or CTL_NOFILE
 * (said why).
 */
int	ctl_open_cache(struct ctl *, int readonly);
/*
 * cache_check_forked (cache/store.h) on ctl's cache, with a progress line
 * on a terminal: the bytes of data.mdb the child has read (its resident
 * pages of the map, from /proc) of the file's size. Same returns.
 */
int	ctl_check_walk(struct ctl *, char *why, size_t whylen);
/*
 * How much of the file at path (a real path) the child pid has read, for
 * a progress line over a forked reader: the larger of its resident pages
 * of a mapping of path (/proc/PID/smaps) and the bytes its read calls
 * returned (/proc/PID/io rchar). 0 when neither can be read.
 */
uint64_t ctl_child_read(pid_t pid, const char *path);
/*
 * Run the command `name` in a forked child and return its exit status. A
 * child killed by SIGBUS, SIGSEGV, SIGABRT, SIGILL or SIGFPE (what a
 * damaged map does to LMDB) is reported as a damaged store: CTL_NOFILE.
 * Other signals (SIGPIPE, SIGINT) are raised again in this process. If
 * fork fails, the command runs here, unguarded.
 */
int	ctl_run_guarded(struct ctl *, ctl_cmd_fn *, const char *name, int argc,
	    char **argv);

/*
 * The daemon's trust, every kind's (kind_trust_new): -f anchors or the
 * built-in roots, the built-in pool, -f intermediates, and (with_cache)
 * the pool learned in the cache. CTL_OK; CTL_NOFILE when a file named
 * cannot be read, CTL_USAGE when one holds what the rule refuses,
 * CTL_REJECTED otherwise, each with the reason said.
 */
int	ctl_trust_load(struct ctl *, struct ctl_trust *, int with_cache);
int	ctl_trust_add_pool_der(struct ctl_trust *, const uint8_t *, size_t);
void	ctl_trust_free(struct ctl_trust *);
/* t's trust stores (t may be NULL: none) into rules r, by kind. */
struct entry_rules;
void	ctl_trust_rules(struct entry_rules *r, const struct ctl_trust *t);
/*
 * One kind's trust alone, from its section (struct kind's trust_new;
 * the caller frees it with trust_free). NULL: said why, or the kind
 * keeps none.
 */
void	*ctl_kind_trust(struct ctl *, enum cache_kind);

/* 1 if the DER certificate is a CA (basicConstraints cA), else 0. */
int	ctl_der_is_ca(const uint8_t *der, size_t len);
/* Add a CA certificate to the cache's pool: 1 added, 0 known or not a CA, -1. */
int	ctl_pool_store(struct ctl *, const uint8_t *der, size_t len);
/*
 * Learn intermediates: of these DER certificates, those that attest's
 * rule admits (ocsp_trust_chaining_cas: CAs that chain to an anchor
 * through the pool and each other, in any order) join t's pool and,
 * with `store` and the cache open for writing, the cache's (which the
 * daemon reads). Returns how many were admitted, or -1.
 */
int	ctl_learn_cas(struct ctl *, struct ctl_trust *,
	    const uint8_t *const der[], const size_t len[], size_t n,
	    int store);
/*
 * What an admitted answer of kind teaches (struct kind's teaches: a
 * RIM's chain CAs), judged already, joins t's pool and the cache's.
 */
struct entry_judgement;
void	ctl_learn_taught(struct ctl *, struct ctl_trust *, enum cache_kind,
	    const struct entry_judgement *);
/* The same for certificates already judged: those with ok[i] set join. */
void	ctl_learn_admitted(struct ctl *, struct ctl_trust *,
	    const uint8_t *const der[], const size_t len[], const int ok[],
	    size_t n, int store);

/*
 * An input named on the command line, for reading: "-" is standard input
 * (a pipe or a terminal, as it comes); any other name must be a regular
 * file. A FIFO, a device, a directory or a socket is refused at once,
 * before it is opened or without blocking on it, and err says which
 * ("PATH: a FIFO: give a regular file, or - for standard input"). NULL:
 * err says why.
 */
FILE	*ctl_open_input(const char *path, char *err, size_t errlen);
/* Whole file (or "-": stdin) into malloc'd memory, at most max bytes; opened by ctl_open_input. */
int	ctl_read_file(const char *path, size_t max, uint8_t **buf,
	    size_t *len, char *err, size_t errlen);
/*
 * Open an output: "-" or NULL is stdout; else a temporary file beside
 * path, renamed over it by ctl_output_commit, so a reader never sees half.
 */
struct ctl_output {
	FILE	*f;
	char	*path;
	char	*tmp;
};
int	ctl_output_open(struct ctl_output *, const char *path);
int	ctl_output_commit(struct ctl_output *);	/* 0 or -1 (said why) */
void	ctl_output_abort(struct ctl_output *);

/* "6h", "30m", "2d", "90s", "45" (seconds). Returns 0 or -1. */
int	ctl_parse_duration(const char *, long *secs);
/* "3h12m", "-5m" (already past), for humans. */
void	ctl_fmt_duration(char *buf, size_t len, long secs);
/* Decode a hex key into kind-agnostic bytes; 0 or -1. */
int	ctl_parse_key(const char *hex, uint8_t *key, size_t *klen);
/*
 * An entry's key as staplectl names it in its messages: a RIM by its ID
 * (NV_GPU_DRIVER_GH100_595.71.05), others in hex, as list shows them.
 */
#define CTL_KEY_NAME_BYTES	(2 * CACHE_KEY_MAX_BYTES + 1)
void	ctl_key_name(enum cache_kind, const uint8_t *key, size_t klen,
	    char buf[CTL_KEY_NAME_BYTES]);
/* Subject (RFC 2253) of a DER certificate or X509, into buf. */
void	ctl_x509_subject(X509 *, char *buf, size_t len);

/* Every entry of a kind (0: all), with its metadata, in key order. */
struct ctl_ent {
	enum cache_kind		 kind;
	uint8_t			 key[CACHE_KEY_MAX_BYTES];
	size_t			 klen;
	struct cache_meta	 meta;
};
int	ctl_collect(struct ctl *, enum cache_kind, struct ctl_ent **out,
	    size_t *n);	/* CTL_OK or CTL_NOFILE; *out is malloc'd */
/*
 * The same a chunk at a time, for a cache of any size: fn gets each
 * chunk of at most CTL_WALK_CHUNK entries (borrowed until it returns)
 * between walks, so it may read the cache. CTL_OK, CTL_NOFILE (said), or
 * the first code other than CTL_OK that fn returned, which stops it.
 */
#define CTL_WALK_CHUNK	1024
typedef int ctl_chunk_fn(struct ctl *, const struct ctl_ent *, size_t n,
    void *arg);
int	ctl_walk_chunks(struct ctl *, enum cache_kind, ctl_chunk_fn *,
	    void *arg);
/* "ocsp" ... as kind, or 0. */
/* The entry's subject for lists: its kind's (kind_subject: OCSP "serial=HEX", else the key as text). */
void	ctl_entry_subject(const struct ctl_ent *, const struct cache_body *,
	    char *buf, size_t len);
/*
 * The entry's label (kind_label, under its kind's label_field: an OCSP
 * entry's CertID hash algorithm, "sha1", "sha256" ...); "-" for kinds
 * without one or an unreadable request.
 */
void	ctl_entry_hash(const struct ctl_ent *, const struct cache_body *,
	    char *buf, size_t len);

/*
 * The responder of a BasicOCSPResponse and the chain the trust store
 * builds for it (as far as it gets), leaf first; owned, NULL if the
 * signer is not found. ctl_ocsp_der_chain does the same from DER.
 */
STACK_OF(X509) *ctl_ocsp_signer_chain(struct ctl_trust *, OCSP_BASICRESP *);
STACK_OF(X509) *ctl_ocsp_der_chain(struct ctl_trust *, const uint8_t *der,
	    size_t len);

/* The verdict of one bundle entry against the daemon's rules. */
struct ctl_check {
	int			 ok;
	char			 reason[320];
	struct cache_meta	 meta;	/* status and times, from the response */
	int			 keep_stored;	/* valid, but the cache's entry is newer */
};

/*
 * Verify one entry by the entry rules the daemon admits answers with
 * (entry_judge: no nonce check, a bundle is cached by nature); an OCSP,
 * RIM or PCCS entry older than the cache's sets c->keep_stored. An
 * admitted RIM's chain CAs join t's pool and the cache's. Fills c->meta's
 * kind, status and times; the caller sets the rest. Returns c->ok.
 */
int	ctl_check_entry(struct ctl *, struct ctl_trust *,
	    const struct bundle_entry *, time_t now, struct ctl_check *c);
/*
 * ctl_check_entry for an entry of a kind judged alone (struct kind's
 * judged_alone: OCSP), with the metadata of the entry the cache holds
 * under its key given (NULL: none) instead of looked up: its rule reads
 * nothing else of the stored entry. It touches neither the cache nor
 * anything but t, so threads can call it at once, each with a trust of
 * its own (tools/verifiers.h). Returns c->ok.
 */
int	ctl_check_alone(struct ctl *, struct ctl_trust *,
	    const struct bundle_entry *, time_t now,
	    const struct cache_meta *stored, struct ctl_check *c);
/*
 * One bundle entry (or a stored entry read into one) judged by its kind's
 * rule (entry_judge): against t's trust stores and peers (a VCEK's
 * cert_chain: the bundle's, else the cache's; t NULL: the cache's only)
 * and, with with_stored, the cache's entry under its key. Returns j->ok; call
 * entry_judgement_free(j) in both cases.
 */
struct entry_judgement;
int	ctl_judge(struct ctl *, struct ctl_trust *,
	    const struct bundle_entry *, time_t now, int with_stored,
	    struct entry_judgement *j);
struct json_t;

/* staplectl_util.c: mark c refused with the reason fmt says; returns 0 (c->ok) for a tail call. */
int	ctl_reject(struct ctl_check *c, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));
/* staplectl_util.c: t as an RFC 3339 string member of o; nothing when t is 0. */
void	ctl_put_time(struct json_t *o, const char *name, int64_t t);
/*
 * manifest and prefetch: "pccs", "kds" (canonical paths) and "tee" (what
 * each quote or SNP report said) into root, plus (with_cache) the cache's
 * own collateral. product: --product or NULL. A CTL_* code, said why.
 */
int	ctl_manifest_collateral(struct ctl *, struct json_t *root,
	    char **quotes, size_t nq, char **reports, size_t nr,
	    const char *product, int with_cache);
/*
 * staplectl's one HTTP client: no redirects, http and https only, body
 * and headers capped, connect 5 s, total 30 s. `post` NULL means GET;
 * a POST is an OCSP request. tls: the service's upstream TLS files
 * (config_upstream_tls), as stapled's fetches use them. On a 200
 * returns 0 with the body and the raw
 * header lines of the answer in r (free with ctl_http_free), else -1,
 * err says why and r holds only r->transient.
 */
struct ctl_http {
	uint8_t	*body;
	size_t	 len;
	char	*hdr;		/* "Name: value\r\n" lines of the last response */
	size_t	 hlen;
	int	 over;
	/*
	 * After a failure: 1 when asking again later may succeed (no
	 * connection, a timeout, a reset, HTTP 5xx, 408 or 429), 0 when the
	 * answer is definitive (another HTTP status, an answer too large).
	 */
	int	 transient;
};
int	ctl_http_do(const char *url, const struct config_upstream_tls *tls,
	    const uint8_t *post, size_t postlen, const char *accept,
	    struct ctl_http *r, char *err, size_t errlen);
void	ctl_http_free(struct ctl_http *);

/*
 * Entries gathered with their checks, chk[i] of e[i], for fetch's haul and
 * the collateral: a new zeroed entry and check at e[*n], the arrays grown
 * as needed (*cap); NULL when out of memory. ctl_entries_free frees the n
 * entries' bodies and both arrays.
 */
struct bundle_entry *ctl_entries_add(struct bundle_entry **e,
	    struct ctl_check **chk, size_t *n, size_t *cap);
void	ctl_entries_free(struct bundle_entry *e, struct ctl_check *chk,
	    size_t n);

/*
 * The upstreams fetch and prefetch ask, per kind, in order: its
 * --NAME-upstream flags, else its section's upstreams. The URLs are
 * borrowed (the command line's, the configuration's).
 */
struct ctl_ups {
	char	*url[CACHE_KIND_MAX][CTL_MAX_LIST];
	size_t	 n[CACHE_KIND_MAX];
};

/*
 * fetch and prefetch: the pccs and kds paths of a manifest (root; mname
 * names it in messages), each of the kind's upstreams in ups in order
 * until one verifies.
 */
struct ctl_fetched {
	struct bundle_entry	*e;	/* owned bodies */
	struct ctl_check	*chk;
	size_t			 n, cap, failed;
};
int	ctl_fetch_collateral(struct ctl *, struct ctl_trust *,
	    struct json_t *manifest, const char *mname,
	    const struct ctl_ups *ups, struct ctl_fetched *);
void	ctl_fetched_free(struct ctl_fetched *);

#endif
