/* SPDX-License-Identifier: Apache-2.0 */
/* staplectl's shared plumbing: the configuration (read by entry/conf_load.c), the cache, the trust store and the cache's intermediate pool. */
#include "config.h"

#include <sys/stat.h>
#include <sys/wait.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "attest/der.h"
#include "attest/ocsp_verify.h"
#include "attest/util.h"
#include "cache/store.h"
#include "entry/kind.h"
#include "entry/pool.h"
#include "tools/bundle.h"
#include "tools/progress.h"
#include "tools/staplectl.h"

void
ctl_warnx(const char *fmt, ...)
{
	va_list	ap;

	progress_hide();
	fputs("staplectl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ---- files ------------------------------------------------------------- */

/* What a file that is not a regular one is, for the message that refuses it. */
static const char *
input_type(mode_t m)
{
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISCHR(m) || S_ISBLK(m))
		return "a device";
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISSOCK(m))
		return "a socket";
	return "not a regular file";
}

/* st (of path) is a regular file; else err says what it is instead. 0 or -1. */
static int
input_regular(const char *path, const struct stat *st, char *err,
    size_t errlen)
{
	if (S_ISREG(st->st_mode))
		return 0;
	snprintf(err, errlen, "%s: %s: give a regular file, or - for "
	    "standard input", path, input_type(st->st_mode));
	return -1;
}

FILE *
ctl_open_input(const char *path, char *err, size_t errlen)
{
	struct stat	 st;
	FILE		*f;
	int		 fd, fl;

	if (strcmp(path, "-") == 0)
		return stdin;
	/* Said before anything is opened: a device is not even opened. */
	if (stat(path, &st) == 0 && input_regular(path, &st, err, errlen) == -1)
		return NULL;
	/* Not blocking: a FIFO swapped in meanwhile must not hang the open. */
	if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)) ==
	    -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		close(fd);
		return NULL;
	}
	if (input_regular(path, &st, err, errlen) == -1) {
		close(fd);
		return NULL;
	}
	if ((fl = fcntl(fd, F_GETFL)) == -1 ||
	    fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == -1 ||
	    (f = fdopen(fd, "rb")) == NULL) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		close(fd);
		return NULL;
	}
	return f;
}

int
ctl_read_file(const char *path, size_t max, uint8_t **buf, size_t *len,
    char *err, size_t errlen)
{
	FILE	*f;
	uint8_t	*p = NULL, *np;
	size_t	 cap = 0, n = 0, r;
	int	 rv = -1;

	*buf = NULL;
	*len = 0;
	if ((f = ctl_open_input(path, err, errlen)) == NULL)
		return -1;
	for (;;) {
		if (n == cap) {
			cap = cap == 0 ? 65536 : cap * 2;
			if (cap > max + 1)
				cap = max + 1;
			if (n == cap) {
				snprintf(err, errlen, "%s: larger than %zu bytes",
				    path, max);
				goto out;
			}
			if ((np = realloc(p, cap)) == NULL) {
				snprintf(err, errlen, "%s: out of memory", path);
				goto out;
			}
			p = np;
		}
		r = fread(p + n, 1, cap - n, f);
		n += r;
		if (r == 0)
			break;
	}
	if (ferror(f)) {
		snprintf(err, errlen, "%s: read error", path);
		goto out;
	}
	*buf = p;
	*len = n;
	p = NULL;
	rv = 0;
 out:
	if (f != stdin)
		fclose(f);
	free(p);
	return rv;
}

int
ctl_output_open(struct ctl_output *o, const char *path)
{
	char	*dir = NULL, *copy = NULL;
	int	 fd, rv = -1;

	memset(o, 0, sizeof(*o));
	if (path == NULL || strcmp(path, "-") == 0) {
		o->f = stdout;
		return 0;
	}
	if ((o->path = strdup(path)) == NULL || (copy = strdup(path)) == NULL)
		goto out;
	dir = dirname(copy);
	if (asprintf(&o->tmp, "%s/.%s.XXXXXX", dir, basename(o->path)) == -1) {
		o->tmp = NULL;
		goto out;
	}
	/* basename may have modified o->path on some libcs: restore it. */
	free(o->path);
	if ((o->path = strdup(path)) == NULL)
		goto out;
	/* The file is written beside its final name: name that directory. */
	if ((fd = mkstemp(o->tmp)) == -1) {
		ctl_warnx("%s: cannot write in the directory %s: %s", path,
		    dir, strerror(errno));
		goto out;
	}
	fchmod(fd, 0644);
	if ((o->f = fdopen(fd, "wb")) == NULL) {
		close(fd);
		unlink(o->tmp);
		goto out;
	}
	rv = 0;
 out:
	free(copy);
	if (rv == -1) {
		free(o->tmp);
		free(o->path);
		memset(o, 0, sizeof(*o));
	}
	return rv;
}

int
ctl_output_commit(struct ctl_output *o)
{
	int	rv = -1;

	if (o->f == stdout) {
		if (fflush(stdout) == EOF || ferror(stdout))
			ctl_warnx("stdout: write error");
		else
			rv = 0;
		o->f = NULL;
		return rv;
	}
	if (fflush(o->f) == EOF || ferror(o->f) || fsync(fileno(o->f)) == -1)
		ctl_warnx("%s: write error: %s", o->tmp, strerror(errno));
	else if (rename(o->tmp, o->path) == -1)
		ctl_warnx("%s: %s", o->path, strerror(errno));
	else
		rv = 0;
	fclose(o->f);
	if (rv == -1)
		unlink(o->tmp);
	free(o->tmp);
	free(o->path);
	memset(o, 0, sizeof(*o));
	return rv;
}

void
ctl_output_abort(struct ctl_output *o)
{
	if (o->f != NULL && o->f != stdout) {
		fclose(o->f);
		unlink(o->tmp);
	}
	free(o->tmp);
	free(o->path);
	memset(o, 0, sizeof(*o));
}

/* ---- the config file ---------------------------------------------------- */

int
ctl_load_config(struct ctl *ctl, const char *path)
{
	char	err[1024];

	config_free(&ctl->conf);
	config_defaults(&ctl->conf);
	if (path != NULL &&
	    config_load_file(&ctl->conf, path, err, sizeof(err)) == -1) {
		ctl_warnx("%s", err);
		return errno == EINVAL ? CTL_USAGE : CTL_NOFILE;
	}
	if (config_validate(&ctl->conf, err, sizeof(err)) == -1) {
		ctl_warnx("%s", err);
		return CTL_USAGE;
	}
	return CTL_OK;
}

int
ctl_opt_kind(const char *arg, enum cache_kind *kind)
{
	char	names[KIND_NAMES_BYTES];

	if ((*kind = kind_by_name(arg)) == 0) {
		ctl_warnx("--kind %s: not %s", arg,
		    kind_names(names, sizeof(names)));
		return CTL_USAGE;
	}
	return CTL_OK;
}

long
ctl_skew_s(const struct ctl *ctl, enum cache_kind kind)
{
	const struct config_service	*c = config_service(&ctl->conf, kind);

	return c != NULL ? c->skew_s : 0;
}

void
ctl_free(struct ctl *ctl)
{
	cache_close(ctl->cache);
	ctl->cache = NULL;
	config_free(&ctl->conf);
}

/* ---- the cache ------------------------------------------------------------ */

/* The resident bytes of the child's mapping of path (/proc/PID/smaps), or 0. */
static uint64_t
map_resident(pid_t pid, const char *path)
{
	char		 fn[64], line[PATH_MAX + 128];
	const char	*sp;
	FILE		*f;
	uint64_t	 kb, sum = 0;
	int		 in = 0;

	snprintf(fn, sizeof(fn), "/proc/%ld/smaps", (long)pid);
	if ((f = fopen(fn, "r")) == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		/*
		 * proc(5): a mapping's line "start-end perms offset dev inode
		 * path" (lower-case hex first), then "Key: value" lines.
		 */
		if (!isupper((unsigned char)line[0])) {
			sp = strrchr(line, ' ');
			in = sp != NULL && strcmp(sp + 1, path) == 0;
		} else if (in && sscanf(line, "Rss: %" SCNu64 " kB", &kb) == 1)
			sum += kb * 1024;
	}
	fclose(f);
	return sum;
}

uint64_t
ctl_child_read(pid_t pid, const char *path)
{
	char		 fn[64], line[128];
	FILE		*f;
	uint64_t	 v, rchar = 0, res = map_resident(pid, path);

	/* proc(5) /proc/PID/io: rchar, the bytes read(2) and pread(2) gave it. */
	snprintf(fn, sizeof(fn), "/proc/%ld/io", (long)pid);
	if ((f = fopen(fn, "r")) != NULL) {
		while (fgets(line, sizeof(line), f) != NULL)
			if (sscanf(line, "rchar: %" SCNu64, &v) == 1)
				rchar = v;
		fclose(f);
	}
	return rchar > res ? rchar : res;
}

int
ctl_check_walk(struct ctl *ctl, char *why, size_t whylen)
{
	struct progress	 p;
	struct stat	 st;
	char		 path[PATH_MAX], real[PATH_MAX];
	pid_t		 pid, w;
	int		 fd, status;

	if (snprintf(path, sizeof(path), "%s/data.mdb", ctl->cache_dir) >=
	    (int)sizeof(path) || realpath(path, real) == NULL ||
	    stat(real, &st) == -1)
		return cache_check_forked(ctl->cache_dir, why, whylen);
	progress_start(&p, "check", NULL, PROGRESS_BYTES, (uint64_t)st.st_size,
	    ctl->quiet);
	if (!p.on)
		return cache_check_forked(ctl->cache_dir, why, whylen);
	if ((pid = cache_check_spawn(ctl->cache_dir, &fd)) == -1) {
		progress_end(&p);
		snprintf(why, whylen, "fork: %s", strerror(errno));
		return -1;
	}
	/* A meter only: the verdict is the child's, as cache_check_forked's. */
	while ((w = waitpid(pid, &status, WNOHANG)) == 0) {
		progress_set(&p, ctl_child_read(pid, real));
		usleep(PROGRESS_INTERVAL_MS * 1000);
	}
	progress_end(&p);
	if (w == -1) {
		snprintf(why, whylen, "waitpid: %s", strerror(errno));
		close(fd);
		return -1;
	}
	return cache_check_result(status, fd, why, whylen);
}

/*
 * LMDB trusts its file: damage can kill the process that reads it. A
 * reader gets only the cheap checks (meta pages, file size, the root
 * page), which take the same time for ten entries or a million: the
 * command runs in a child (ctl_run_guarded), whose death by a signal
 * means damaged. A writer (import, prefetch, purge) also walks every
 * record in a child first, since writing into a damaged tree spreads the
 * damage; `staplectl check` does that walk alone.
 */
static int
ctl_check_cache(struct ctl *ctl, int readonly)
{
	char	why[CACHE_DAMAGE_NOTE_BYTES];
	int	r;

	if ((r = cache_check_file(ctl->cache_dir, why, sizeof(why))) == 0 &&
	    !readonly)
		r = ctl_check_walk(ctl, why, sizeof(why));
	if (r == 0)
		return CTL_OK;
	if (r == 1)
		ctl_warnx("cache %s is damaged: %s (stapled moves a damaged "
		    "store aside and starts empty)", ctl->cache_dir, why);
	else
		ctl_warnx("cache %s: %s", ctl->cache_dir, why);
	return CTL_NOFILE;
}

/* Deaths that mean the map held what LMDB did not expect (or a bug). */
static int
ctl_damage_signal(int sig)
{
	return sig == SIGBUS || sig == SIGSEGV || sig == SIGABRT ||
	    sig == SIGILL || sig == SIGFPE;
}

/*
 * A command that met damage LMDB reports (cache_damage_found) exits as one
 * the damage killed: 3, saying so. Otherwise its own status, rv.
 */
static int
ctl_damage_status(struct ctl *ctl, int rv)
{
	char	why[CACHE_DAMAGE_NOTE_BYTES];

	if (ctl->cache == NULL || !cache_damage_found(ctl->cache, why,
	    sizeof(why)))
		return rv;
	ctl_warnx("cache %s is damaged: %s (stapled moves a damaged store "
	    "aside and starts empty; 'staplectl check' walks every record)",
	    ctl->cache_dir, why);
	return CTL_NOFILE;
}

int
ctl_run_guarded(struct ctl *ctl, ctl_cmd_fn *fn, const char *name, int argc,
    char **argv)
{
	pid_t	pid;
	int	st, rv;

	fflush(stdout);
	fflush(stderr);
	if ((pid = fork()) == -1) {
		ctl_warnx("fork: %s: running %s unguarded", strerror(errno),
		    name);
		return ctl_damage_status(ctl, fn(ctl, argc, argv));
	}
	if (pid == 0) {
		rv = ctl_damage_status(ctl, fn(ctl, argc, argv));
		ctl_free(ctl);
		exit(rv);	/* flushes stdout */
	}
	while (waitpid(pid, &st, 0) == -1)
		if (errno != EINTR) {
			ctl_warnx("waitpid: %s", strerror(errno));
			return CTL_REJECTED;
		}
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (!WIFSIGNALED(st))
		return CTL_REJECTED;
	if (!ctl_damage_signal(WTERMSIG(st))) {
		/* SIGPIPE (| head), SIGINT: die the same way, quietly. */
		signal(WTERMSIG(st), SIG_DFL);
		raise(WTERMSIG(st));
		return CTL_REJECTED;
	}
	ctl_warnx("%s was killed by signal %d (%s) reading cache %s: the store "
	    "is damaged (stapled moves a damaged store aside and starts "
	    "empty; 'staplectl check' walks every record)", name, WTERMSIG(st),
	    strsignal(WTERMSIG(st)), ctl->cache_dir);
	return CTL_NOFILE;
}

int
ctl_open_cache(struct ctl *ctl, int readonly)
{
	struct stat	st;
	char		err[512];

	if (ctl->cache != NULL && (readonly || !ctl->cache_readonly))
		return CTL_OK;
	cache_close(ctl->cache);
	ctl->cache = NULL;
	/* Reading a cache that is not there is an error, not a new cache. */
	if (readonly && stat(ctl->cache_dir, &st) == -1) {
		ctl_warnx("cache %s: %s", ctl->cache_dir, strerror(errno));
		return CTL_NOFILE;
	}
	if (ctl_check_cache(ctl, readonly) != CTL_OK)
		return CTL_NOFILE;
	ctl->cache = cache_open(ctl->cache_dir, ctl->conf.map_size, readonly, err,
	    sizeof(err));
	if (ctl->cache == NULL) {
		ctl_warnx("%s", err);
		return CTL_NOFILE;
	}
	cache_set_kind_name(ctl->cache, kind_name);
	ctl->cache_readonly = readonly;
	return CTL_OK;
}

/* ---- trust ------------------------------------------------------------------ */

/* Why a kind's trust does not load (KIND_TRUST_E*), as an exit code. */
static int
trust_rc(int why)
{
	switch (why) {
	case KIND_TRUST_ENOFILE:
		return CTL_NOFILE;
	case KIND_TRUST_EBAD:
		return CTL_USAGE;
	default:
		return CTL_REJECTED;
	}
}

int
ctl_trust_add_pool_der(struct ctl_trust *t, const uint8_t *der, size_t len)
{
	return kind_pool_add(t->trust, der, len);
}

static int
pool_cb(const char *name, const uint8_t *val, size_t len, void *arg)
{
	(void)name;
	/* A pool record that does not parse is skipped, never trusted. */
	ctl_trust_add_pool_der(arg, val, len);
	return 0;
}

int
ctl_trust_load(struct ctl *ctl, struct ctl_trust *t, int with_cache)
{
	char	err[512];
	int	rc;

	memset(t, 0, sizeof(*t));
	/* As stapled: each kind's own (entry/kind.h), from its section. */
	if ((rc = kind_trust_new(&ctl->conf, t->trust, err,
	    sizeof(err))) != 0) {
		ctl_warnx("%s", err);
		return trust_rc(rc);
	}
	/* The OCSP chain tools read its store's certificates themselves. */
	t->ocsp = t->trust[CACHE_KIND_OCSP];
	if ((t->anchors = ocsp_trust_anchors(t->ocsp)) == NULL ||
	    (t->pool = ocsp_trust_pool(t->ocsp)) == NULL) {
		ctl_warnx("out of memory");
		return CTL_REJECTED;
	}
	if (with_cache && ctl->cache != NULL &&
	    entry_pool_walk(ctl->cache, pool_cb, t) == -1) {
		ctl_warnx("%s", cache_strerror(ctl->cache));
		return CTL_NOFILE;
	}
	return CTL_OK;
}

void *
ctl_kind_trust(struct ctl *ctl, enum cache_kind k)
{
	void	*trust = NULL;
	char	 err[512];

	if (kind_table[k]->trust_new == NULL)
		return NULL;
	if (kind_table[k]->trust_new(&ctl->conf.svc[k], &trust, err,
	    sizeof(err)) != 0) {
		ctl_warnx("%s", err);
		return NULL;
	}
	return trust;
}

void
ctl_trust_rules(struct entry_rules *r, const struct ctl_trust *t)
{
	int	k;

	for (k = KIND_FIRST; k < CACHE_KIND_MAX; k++)
		r->trust[k] = t != NULL ? t->trust[k] : NULL;
}

void
ctl_trust_free(struct ctl_trust *t)
{
	if (t == NULL)
		return;
	kind_trust_free(t->trust);
	memset(t, 0, sizeof(*t));
}

int
ctl_der_is_ca(const uint8_t *der, size_t len)
{
	X509		*x;
	const char	*why;
	int		 ca;

	if ((x = der_x509(der, len, &why)) == NULL)
		return 0;
	ca = X509_check_ca(x) > 0;
	X509_free(x);
	return ca;
}

int
ctl_pool_store(struct ctl *ctl, const uint8_t *der, size_t len)
{
	if (!ctl_der_is_ca(der, len))
		return 0;
	return entry_pool_put(ctl->cache, der, len);
}

void
ctl_learn_admitted(struct ctl *ctl, struct ctl_trust *t,
    const uint8_t *const der[], const size_t len[], const int ok[], size_t n,
    int store)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		if (!ok[i] || ctl_trust_add_pool_der(t, der[i], len[i]) == -1)
			continue;
		if (store && ctl->cache != NULL && !ctl->cache_readonly &&
		    ctl_pool_store(ctl, der[i], len[i]) == -1)
			ctl_warnx("pool: %s", cache_strerror(ctl->cache));
	}
}

void
ctl_learn_taught(struct ctl *ctl, struct ctl_trust *t, enum cache_kind kind,
    const struct entry_judgement *j)
{
	const uint8_t	*der[KIND_TEACH_MAX];
	size_t		 len[KIND_TEACH_MAX], n, i;
	int		 ok[KIND_TEACH_MAX];

	if ((int)kind < KIND_FIRST || kind >= CACHE_KIND_MAX ||
	    kind_table[kind]->teaches == NULL)
		return;
	n = kind_table[kind]->teaches(j, der, len);
	for (i = 0; i < n; i++)
		ok[i] = 1;
	ctl_learn_admitted(ctl, t, der, len, ok, n, 1);
}

int
ctl_learn_cas(struct ctl *ctl, struct ctl_trust *t, const uint8_t *const der[],
    const size_t len[], size_t n, int store)
{
	int	*ok;
	int	 rv;

	if (n == 0)
		return 0;
	if ((ok = calloc(n, sizeof(*ok))) == NULL)
		return -1;
	if ((rv = kind_pool_admits(t->trust, der, len, n, ok)) > 0)
		ctl_learn_admitted(ctl, t, der, len, ok, n, store);
	free(ok);
	return rv;
}

/* ---- little parsers --------------------------------------------------------- */

int
ctl_parse_duration(const char *s, long *secs)
{
	char	*end;
	long	 v, mul = 1;

	errno = 0;
	v = strtol(s, &end, 10);
	if (end == s || errno != 0 || v < 0)
		return -1;
	if (*end != '\0') {
		switch (*end) {
		case 's':
			mul = 1;
			break;
		case 'm':
			mul = 60;
			break;
		case 'h':
			mul = 3600;
			break;
		case 'd':
			mul = 86400;
			break;
		default:
			return -1;
		}
		if (end[1] != '\0')
			return -1;
	}
	if (v > LONG_MAX / mul)
		return -1;
	*secs = v * mul;
	return 0;
}

void
ctl_fmt_duration(char *buf, size_t len, long secs)
{
	const char	*sign = secs < 0 ? "-" : "";
	long		 a = secs < 0 ? -secs : secs;

	if (a >= 86400)
		snprintf(buf, len, "%s%ldd%ldh", sign, a / 86400,
		    a % 86400 / 3600);
	else if (a >= 3600)
		snprintf(buf, len, "%s%ldh%ldm", sign, a / 3600, a % 3600 / 60);
	else if (a >= 60)
		snprintf(buf, len, "%s%ldm%lds", sign, a / 60, a % 60);
	else
		snprintf(buf, len, "%s%lds", sign, a);
}

int
ctl_parse_key(const char *hex, uint8_t *key, size_t *klen)
{
	long	n;

	if ((n = bundle_unhex(hex, key, CACHE_KEY_MAX_BYTES)) <= 0)
		return -1;
	*klen = (size_t)n;
	return 0;
}

void
ctl_key_name(enum cache_kind kind, const uint8_t *key, size_t klen,
    char buf[CTL_KEY_NAME_BYTES])
{
	/* A key that is text as it stands (a RIM ID) is shown so, else as bytes. */
	if (kind_name(kind) != NULL && kind_table[kind]->key_is_text != NULL &&
	    kind_table[kind]->key_is_text(key, klen)) {
		snprintf(buf, CTL_KEY_NAME_BYTES, "%.*s", (int)klen,
		    (const char *)key);
		return;
	}
	util_hex(key, klen > CACHE_KEY_MAX_BYTES ? CACHE_KEY_MAX_BYTES : klen,
	    buf);
}

void
ctl_x509_subject(X509 *x, char *buf, size_t len)
{
	BIO	*bio;
	int	 n;

	buf[0] = '\0';
	if ((bio = BIO_new(BIO_s_mem())) == NULL)
		return;
	if (X509_NAME_print_ex(bio, X509_get_subject_name(x), 0,
	    XN_FLAG_RFC2253) >= 0 && (n = BIO_read(bio, buf, (int)len - 1)) > 0)
		buf[n] = '\0';
	BIO_free(bio);
}

/* ---- small helpers the commands share ----------------------------------- */

int
ctl_reject(struct ctl_check *c, const char *fmt, ...)
{
	va_list	ap;

	c->ok = 0;
	va_start(ap, fmt);
	vsnprintf(c->reason, sizeof(c->reason), fmt, ap);
	va_end(ap);
	return 0;
}

void
ctl_put_time(json_t *o, const char *name, int64_t t)
{
	char	buf[32];

	if (t == 0)
		return;
	bundle_time_str(buf, t);
	json_object_set_new(o, name, json_string(buf));
}

struct bundle_entry *
ctl_entries_add(struct bundle_entry **e, struct ctl_check **chk, size_t *n,
    size_t *cap)
{
	void	*p;

	if (*n == *cap) {
		*cap = *cap == 0 ? CTL_ENTRIES_FIRST : *cap * 2;
		if ((p = realloc(*e, *cap * sizeof(**e))) == NULL)
			return NULL;
		*e = p;
		if ((p = realloc(*chk, *cap * sizeof(**chk))) == NULL)
			return NULL;
		*chk = p;
	}
	memset(&(*e)[*n], 0, sizeof((*e)[*n]));
	memset(&(*chk)[*n], 0, sizeof((*chk)[*n]));
	return &(*e)[(*n)++];
}

void
ctl_entries_free(struct bundle_entry *e, struct ctl_check *chk, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++)
		bundle_entry_clear(&e[i]);
	free(e);
	free(chk);
}
