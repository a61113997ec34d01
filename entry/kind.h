/* SPDX-License-Identifier: Apache-2.0 */
/* The kinds of entry, by enum cache_kind (entry/kinds.h): one row each with the rules every caller reads, and the list's names and sections. */
#ifndef ENTRY_KIND_H
#define ENTRY_KIND_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "cache/record.h"
#include "cache/store.h"
#include "entry/judge.h"
#include "entry/kinds.h"

/*
 * The keys a service's section accepts beyond those every section does
 * (entry/conf_keys.c), by what the kind's rules read.
 */
#define KIND_CONF_ANCHORS	0x01	/* "anchors": roots replacing the built-in ones */
#define KIND_CONF_INTERMEDIATES	0x02	/* "intermediates": CAs added to the pool */
#define KIND_CONF_PATHS		0x04	/* "paths": more POST paths */
#define KIND_CONF_RETENTION	0x08	/* "retention_s": how long an entry is kept */
#define KIND_CONF_API_KEY	0x10	/* "api_key_file": the vendor's API key */

/* What the configuration takes from a kind: its section's keys, and the defaults that differ by kind. */
struct kind_conf {
	const char	*upstream;	/* "upstreams" not set: the vendor's endpoint */
	unsigned	 keys;		/* KIND_CONF_* */
	long		 pacing_ms;	/* "pacing_ms" not set */
	long		 retention_s;	/* "retention_s" not set */
};

struct config;
struct config_service;
struct json_t;

/* Why a kind's trust does not load (struct kind's trust_new). */
#define KIND_TRUST_EFAIL	-1	/* out of memory, or the built-in roots */
#define KIND_TRUST_ENOFILE	-2	/* a file named cannot be read */
#define KIND_TRUST_EBAD		-3	/* a file holds what the rule refuses */

/* The room a kind's typed request takes (struct kind's parse and restore): every kind's fits. */
#define KIND_TYPED_BYTES	1280
/* The longest canonical path, with its NUL (a PCCS PCK certificate's). */
#define KIND_CANON_BYTES	1200

/* How a client asked: HEAD is asked as GET. */
enum kind_method {
	KIND_GET = 1,
	KIND_POST,
};

/*
 * A client's request as a kind's parse reads it: plain bytes, no HTTP
 * library's types. Everything is borrowed for the call.
 */
struct kind_ask {
	enum kind_method	 method;
	const char		*path;		/* percent-decoded, doubled leading slashes gone */
	const char		*query;		/* raw; NULL when the URL has none */
	const char		*content_type;	/* the request's header, or NULL */
	/* A POST's body; for OCSP also a GET's request, decoded from its URL. */
	const uint8_t		*body;
	size_t			 body_len;
};

/*
 * What a parsed request asks of an upstream, the key its answer is
 * stored under and what is stored with it to refresh it, all rebuilt
 * from the typed request (never copied from the client unchecked):
 *   key, klen      the cache key
 *   method         "GET" or "POST"
 *   path           appended to the upstream URL ("" for a POST)
 *   content_type   POST: the kind's post_type
 *   accept         the kind's accept
 *   body, body_len POST: the request sent
 *   keep, keep_len the canonical request, stored with the entry
 *   typed          1: the typed request is read again (admit, serving)
 * path and keep point into the canonical path's room or into the ask's
 * body; the call is valid while both are. The fields are a list so that
 * the daemon's call (proxy/service.h's struct svc_call) can hold them
 * under their own names and hand them to parse without a copy.
 */
#define KIND_CALL_FIELDS						\
	uint8_t			 key[CACHE_KEY_MAX_BYTES];		\
	size_t			 klen;					\
	const char		*method;				\
	const char		*path;					\
	const char		*content_type;				\
	const char		*accept;				\
	const uint8_t		*body;					\
	size_t			 body_len;				\
	const uint8_t		*keep;					\
	size_t			 keep_len;				\
	int			 typed;

struct kind_call {
	KIND_CALL_FIELDS
};

/* The most certificates one answer teaches (struct kind's teaches). */
#define KIND_TEACH_MAX		16

/*
 * A kind's operations and facts: one row each, in the kind's own entry
 * file (entry/<kind>.c's kind_<row>), indexed by enum cache_kind in
 * kind_table. Its name is cache_kind_str's (logs, metrics, bundles,
 * --kind), its section kind_section's: the list's (entry/kinds.h).
 */
struct kind {
	/*
	 * A client's request into the kind's typed request (typed: room of
	 * KIND_TYPED_BYTES, aligned for any type: entry/pccs.h's struct
	 * pccs_req, struct kds_req, the OCSP kind's struct ocsp_req, which
	 * borrows the ask's body) and the call it makes upstream (out,
	 * every field set; its path and keep may point into canon, room of
	 * KIND_CANON_BYTES). The caller has claimed the path as the kind's.
	 * 0, or -1 with the HTTP status the client is refused with in
	 * *status (400: malformed, 404: nothing the kind serves, 410: gone,
	 * 413: too large, 415: not the kind's media type) and why, for the
	 * client or the log, in why (whylen bytes; "" when the status says
	 * all). Nothing is allocated.
	 */
	int			(*parse)(const struct kind_ask *in, void *typed,
				    char *canon, struct kind_call *out,
				    int *status, char *why, size_t whylen);
	/*
	 * A stored canonical request (len bytes, not NUL-terminated) back
	 * into the typed request and the call that asks it again (a
	 * refresh), as parse made them: typed, canon and out as parse's.
	 * 0, or -1 when it is not a canonical request of the kind. out may
	 * borrow req.
	 */
	int			(*restore)(const uint8_t *req, size_t len,
				    void *typed, char *canon,
				    struct kind_call *out);
	/* Whether an answer may be stored: entry/judge.h's entry_admit_fn. */
	entry_admit_fn		*admit;
	/*
	 * The kind's trust store (struct entry_rules' trust[k], of the
	 * kind's own type) from its section c, into *trust: the built-in
	 * roots unless "anchors" names files, which replace them, and the
	 * files of "intermediates" added to its pool. 0, or a
	 * KIND_TRUST_E* with err set ("ocsp: the built-in anchors do not
	 * load", "rim.anchors: PATH: ...", a file read's message). NULL in
	 * the row: the kind's roots are compiled into attest/ and it keeps
	 * no store. trust_free accepts NULL.
	 */
	int			(*trust_new)(const struct config_service *c,
				    void **trust, char *err, size_t errlen);
	void			 (*trust_free)(void *trust);
	/*
	 * Add a CA certificate learned from evidence, RIMs and bundles (the
	 * store's pool, entry/pool.h) to the trust's pool of intermediates:
	 * 0 (added, or known), or -1 when der is no certificate the pool
	 * takes. NULL: the kind keeps no pool.
	 */
	int			(*pool_add)(void *trust, const uint8_t *der,
				    size_t len);
	/*
	 * The pool's admission rule (with pool_add): of the n DER
	 * certificates, which may join the pool (attest/ocsp_verify.h's
	 * ocsp_trust_chaining_cas for OCSP): ok[i] 1 or 0; how many are 1,
	 * or -1 (out of memory, ok[] all 0). Adds nothing.
	 */
	int			(*pool_admits)(void *trust,
				    const uint8_t *const der[],
				    const size_t len[], size_t n, int ok[]);
	/*
	 * The cache key of a canonical upstream request, as an entry is
	 * stored and refreshed with it (an OCSPRequest, a path; len bytes,
	 * not NUL-terminated), into key and *klen. 0, or -1 when it cannot
	 * be the kind's. Whether the request is well formed beyond that is
	 * admit's to say.
	 */
	int			(*request_key)(const uint8_t *req, size_t len,
				    uint8_t key[CACHE_KEY_MAX_BYTES],
				    size_t *klen);
	/*
	 * The CA certificates an admitted answer teaches the OCSP pool, or
	 * NULL: the RIM kind's chain CAs that the pool's rule admits, which
	 * the RIM route learns. Fills der[i] and len[i] (borrowed from j),
	 * at most KIND_TEACH_MAX; returns how many. A salvage judges the
	 * kinds that teach before the others, whose answers may need what
	 * they taught.
	 */
	size_t			(*teaches)(const struct entry_judgement *j,
				    const uint8_t **der, size_t *len);
	/*
	 * 1 when other entries' admits read this one (through entry_rules'
	 * find: a KDS cert_chain, which a VCEK is checked against), so a
	 * reader of many (staplectl import) takes such entries first; else
	 * 0. NULL: none is.
	 */
	int			(*read_by_others)(const uint8_t *key,
				    size_t klen);
	/*
	 * 1 when admit reads nothing but the answer, the kind's trust and
	 * the stored entry's meta (never another entry, nor the store),
	 * and teaches nothing: workers with a trust each may judge its
	 * entries side by side (staplectl's verify and import, the OCSP
	 * kind). 0: judged one at a time, in order.
	 */
	int			 judged_alone;
	/*
	 * 1: an entry's validity runs from its fetch, which only its stored
	 * meta knows (RIM): a record read back without its meta cannot be
	 * judged, and is never kept longer than it was stored for.
	 */
	int			 dated_by_fetch;
	/*
	 * The least clock skew an entry is served with: the vendor's
	 * verifier admits an object up to this far ahead of now (0: only
	 * the configured skew_s). entry_servable reads it.
	 */
	long			 min_skew_s;
	/*
	 * How an entry is asked of an upstream, by its canonical request:
	 * POSTed to the upstream's URL with Content-Type post_type, or
	 * (post_type NULL) a GET of the URL with the request, a path,
	 * appended. accept is the Accept header sent (NULL: none).
	 */
	const char		*post_type;
	const char		*accept;
	/* Response headers kept with an entry and served again (NULL-terminated, or NULL). */
	const char *const	*keep_headers;
	/* Suffixes an upstream URL may end in that mean its host (entry_base_url). */
	const char *const	*base_suffixes;
	/*
	 * What one entry takes of the map, B-tree pages and the free list's
	 * share included, and the share of the map the kind's entries may
	 * take by default: config_max_entries. The shares of all kinds
	 * make 100.
	 */
	size_t			 entry_bytes;
	unsigned		 map_share_pct;
	struct kind_conf	 conf;		/* its section of the configuration */
	/*
	 * How staplectl names an entry (kind_subject, kind_label) and its
	 * status. subject: from its key and stored request (req NULL or
	 * reqlen 0: none) into buf, NUL-terminated, "-" when it has none;
	 * NULL: the key itself when printable (a RIM ID, a path). label:
	 * a second name from the request, which list prints last and list
	 * --json and show under label_field (OCSP's "certid_hash", the
	 * CertIDs' hash algorithm); NULL: none ("-"). status_names: the
	 * stored status's names by value, NULL-terminated, as lists and
	 * bundles write it; NULL: its number.
	 */
	void			(*subject)(const uint8_t *key, size_t klen,
				    const uint8_t *req, size_t reqlen,
				    char *buf, size_t len);
	const char		*label_field;
	void			(*label)(const uint8_t *req, size_t reqlen,
				    char *buf, size_t len);
	const char *const	*status_names;
	/*
	 * 1 when a key is text that names the entry as it stands (a valid
	 * RIM ID), which staplectl prints as is; else 0, and it prints the
	 * key in hex. NULL: never.
	 */
	int			(*key_is_text)(const uint8_t *key, size_t klen);
	/*
	 * What staplectl show says of an entry admit judged (j; ok: it was
	 * admitted): the facts of its typed request and answer, set into
	 * the JSON object o (PCCS: intel_kind, tee, fmspc ...; KDS:
	 * product, signer, object ...), which show prints under the kind's
	 * name. NULL: show prints no such section.
	 */
	void			(*describe)(const struct entry_judgement *j,
				    int ok, struct json_t *o);
};

/* Each kind's row, by its byte (kind_table[0] is NULL): made from the list. */
extern const struct kind *const kind_table[CACHE_KIND_MAX];

#define KIND_ROW_DECL_(id, byte, name, section, row)	\
	extern const struct kind kind_##row;
KIND_LIST(KIND_ROW_DECL_)
#undef KIND_ROW_DECL_

/*
 * The pools of every kind that keeps one (struct kind's pool_add,
 * pool_admits), by trust[k]. kind_pool_add: der joins each; 0 when one
 * took it or held it, -1 when none did. kind_pool_admits: ok[i] 1 when
 * some kind's rule admits der[i], else 0; how many are 1, or -1 (out of
 * memory).
 */
int		 kind_pool_add(void *const trust[CACHE_KIND_MAX],
		    const uint8_t *der, size_t len);
int		 kind_pool_admits(void *const trust[CACHE_KIND_MAX],
		    const uint8_t *const der[], const size_t len[], size_t n,
		    int ok[]);

/*
 * An entry's subject and label (struct kind's subject, label) into buf
 * of len bytes (at least 2): "-" when it has none, or kind names no
 * kind.
 */
void		 kind_subject(enum cache_kind kind, const uint8_t *key,
		    size_t klen, const uint8_t *req, size_t reqlen, char *buf,
		    size_t len);
void		 kind_label(enum cache_kind kind, const uint8_t *req,
		    size_t reqlen, char *buf, size_t len);
/*
 * The name of a stored status of kind (struct kind's status_names), or
 * NULL when it has none; and the status a name is, or -1.
 */
const char	*kind_status_name(enum cache_kind kind, int status);
int		 kind_status_by_name(enum cache_kind kind, const char *name);

/*
 * Every kind's trust (struct kind's trust_new) from cfg's sections into
 * trust[k] (NULL for a kind that keeps none): 0, or trust_new's
 * KIND_TRUST_E* with err set and every trust freed when one does not
 * load. kind_trust_free frees them
 * and sets each to NULL.
 */
int		 kind_trust_new(const struct config *cfg,
		    void *trust[CACHE_KIND_MAX], char *err, size_t errlen);
void		 kind_trust_free(void *trust[CACHE_KIND_MAX]);

/*
 * Whether a stored entry of `kind` may be served at now, with the
 * configured skew (skew_s, raised to the kind's min_skew_s): 1 when
 * next_update > now and this_update <= now + skew, else 0 (expired, or
 * not valid yet). The rule the daemon serves by and staplectl reports.
 */
int		 entry_servable(const struct cache_meta *, enum cache_kind kind,
		    long skew_s, time_t now);

#endif
