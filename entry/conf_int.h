/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The configuration's insides, internal to entry/conf*.c: the key table's
 * types, the reader's state, and the helpers the files lend one another.
 * Nothing outside entry/conf*.c includes it.
 */
#ifndef ENTRY_CONF_INT_H
#define ENTRY_CONF_INT_H

#include <stddef.h>

#include <jansson.h>

#include "entry/conf_pos.h"
#include "entry/kinds.h"

#define CONFIG_MAX_DEPTH	8
#define CONFIG_MAX_NAME_BYTES	255
#define MIB			((size_t)1024 * 1024)
#define CONFIG_REASON_BYTES	160	/* why a value is refused */
#define CONFIG_QUOTE_BYTES	128	/* a value quoted in a message */

/* entry/conf.h's, named here by pointer only */
struct config;
struct config_service;
struct config_tls;
struct config_upstream;

/*
 * Every key of the file, once: its JSON type and range, the sections that
 * accept it, where it lands, and its default. A key a section does not
 * accept is an unknown key there. Sections: one service per kind (its
 * byte, entry/kinds.h), the top level (CFG_ROOT), and the objects nested
 * in a service (refresh, an upstream), which accept their keys wherever
 * they appear.
 */
enum cfg_type {
	CFG_T_LONG,		/* long, lmin..lmax */
	CFG_T_MIB,		/* size_t bytes, written in MiB, lmin..lmax */
	CFG_T_DOUBLE,		/* double, dmin..dmax (dmin excluded: CFG_OPEN_MIN) */
	CFG_T_BOOL,		/* int, true or false */
	CFG_T_ENUM,		/* int, the index of one of names[] */
	CFG_T_STR,		/* char *, a non-empty string */
	CFG_T_TEXT,		/* const char *, any string, borrowed from the JSON */
	CFG_T_LIST,		/* char ** and size_t at noff: a string or a list */
	CFG_T_UPSTREAMS,	/* struct config_upstream * and size_t at noff */
	CFG_T_OBJECT,		/* the keys of sub, in a struct at off */
	CFG_T_LISTEN,		/* struct config's listen, nlisten and listen_tls */
};

#define CFG_ROOT	0		/* the top level's section: no kind's */
#define CFG_IN(s)	(1u << (s))
/* Every service's section: one per kind, by its byte. */
#define CFG_SERVICES	((CFG_IN(CACHE_KIND_MAX) - 1) & ~CFG_IN(CFG_ROOT))
#define CFG_OPEN_MIN	0x1	/* DOUBLE: the lower bound is out of range */
#define CFG_LIST_ONLY	0x2	/* LIST: a lone string is refused */
/*
 * LONG, STR, LIST, UPSTREAMS: in a service, the default is the kind's,
 * a long or a string at kdef in its row's struct kind_conf (entry/kind.h);
 * at the top level def_l's or def_s's.
 */
#define CFG_KIND_DEF	0x4

typedef int cfg_check_fn(const char *, char *, size_t);

struct cfg_table;

struct cfg_key {
	const char		*name;
	enum cfg_type		 type;
	unsigned		 in;		/* CFG_IN() of the accepting sections */
	size_t			 off;		/* the value, in the section's struct */
	size_t			 noff;		/* LIST, UPSTREAMS: the count */
	long			 lmin, lmax;
	double			 dmin, dmax;
	int			 flags;
	cfg_check_fn		*check;		/* LIST elements, TEXT */
	const char *const	*names;		/* ENUM */
	size_t			 nnames;
	const char		*choices;	/* ENUM, for messages */
	const struct cfg_table	*sub;		/* OBJECT */
	/* KIND_CONF_*: a service's section accepts the key when its kind takes these; 0 every one */
	unsigned		 kinds;
	size_t			 kdef;		/* CFG_KIND_DEF */
	long			 def_l;		/* LONG MIB BOOL ENUM */
	double			 def_d;		/* DOUBLE */
	const char		*def_s;		/* STR, LIST and UPSTREAMS of one */
};

struct ld;
/* Checks across the keys of one object once all are read. */
typedef int cfg_after_fn(struct ld *, json_t *obj, void *base);

struct cfg_table {
	const struct cfg_key	*keys;
	size_t			 nkeys;
	cfg_after_fn		*after;
};

/* An upstream object's keys, before upstream_set checks them together. */
struct up_fields {
	const char	*url;
	const char	*name;
	int		 verify_nonce;
};

/* A "listen" object's keys, borrowed from the document until ld_listen copies them. */
struct tls_fields {
	const char	*cert;
	const char	*key;
	const char	*client_ca;
};
struct listen_fields {
	const char		*addr;
	struct tls_fields	 tls;
};

enum where { AT_KEY, AT_VALUE };

struct ld {
	const char		*name;
	const char		*buf;
	size_t			 len;
	char			*err;
	size_t			 errlen;
	struct jpos_step	 path[CONFIG_MAX_DEPTH];
	size_t			 depth;
};

#define ld_error(ld, w, ...)	ld_errorp((ld), (w), (ld)->depth, __VA_ARGS__)

/* conf.c: the model */
struct config_service	*section(struct config *cfg, int svc);
void	strlist_free(char **list, size_t n);
void	listen_tls_free(struct config_tls *t, size_t n);
void	listen_replace(struct config *cfg, char **l, struct config_tls *t,
	    size_t n);
void	upstreams_free(struct config_upstream *u, size_t n);
int	tls_copy(struct config_tls *dst, const struct config_tls *src);

/* conf_check.c: the checks of values; each is a cfg_check_fn but url_check */
const char	*quote(char *buf, size_t len, const char *s);
void	reason(char *r, size_t rlen, const char *msg);
int	listen_check(const char *s, char *r, size_t rlen);
int	url_check(const char *url, char *name, size_t namelen, char *r,
	    size_t rlen);
int	name_check(const char *s, char *r, size_t rlen);
int	cidr_check(const char *s, char *r, size_t rlen);
int	file_check(const char *s, char *r, size_t rlen);
int	path_check(const char *s, char *r, size_t rlen);

/* conf_keys.c: the key table, the defaults, the upstreams */
int	upstream_set(struct config_upstream *u, const char *url,
	    const char *name, int verify_nonce, char *r, size_t rlen);
long	upstream_dup(const struct config_upstream *u, size_t i);
extern const struct cfg_table	upstream_table;
extern const struct cfg_table	listen_table;
extern const struct cfg_table	service_table;
extern const struct cfg_table	root_table;
const struct cfg_key	*key_find(const struct cfg_table *t, int sec,
			    const char *name);
int	svc_find(const char *name);
void	table_defaults(const struct cfg_table *t, void *base, int sec);

/* conf_json.c: the readers of values, and their errors */
void	ld_push(struct ld *ld, const char *key, size_t idx);
void	ld_pop(struct ld *ld);
int	ld_errorp(struct ld *ld, enum where w, size_t shown, const char *fmt,
	    ...) __attribute__((format(printf, 4, 5)));
int	ld_unknown(struct ld *ld, const char *key);
int	ld_long(struct ld *ld, json_t *v, long min, long max, long *out);
int	ld_double(struct ld *ld, json_t *v, double min, int min_open,
	    double max, double *out);
int	ld_enum(struct ld *ld, json_t *v, const struct cfg_key *k, int *out);
int	ld_bool(struct ld *ld, json_t *v, int *out);
int	ld_str(struct ld *ld, json_t *v, char **out);
int	ld_text(struct ld *ld, json_t *v, cfg_check_fn *check,
	    const char **out);
int	ld_strelem(struct ld *ld, json_t *e, cfg_check_fn *check, char **out);
int	ld_strlist(struct ld *ld, json_t *v, int allow_string,
	    cfg_check_fn *check, char ***list, size_t *n);

#endif
