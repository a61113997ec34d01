/* SPDX-License-Identifier: Apache-2.0 */
/* bench-fill: write N OCSP entries into a cache, synthetic (tools/bench) or signed under a test CA (tools/bench-scale). */
#include <config.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cache/store.h"
#include "entry/kinds.h"
#include "tools/bench-fill.h"

#define FILL_RESPONSE_BYTES	1536	/* about one NVIDIA OCSP response */
#define FILL_REQUEST_BYTES	120	/* one SHA-1 CertID and a 16-byte nonce */
#define FILL_KEY_BYTES		32	/* as attest/ocsp_req.h: SHA-256 of the CertID list */
#define FILL_FILE_MAX_BYTES	(64u * 1024)
#define FILL_VALIDITY_S		86400	/* NVIDIA's OCSP window */
#define FILL_FRACTION		0.5	/* stapled's default refresh.fraction */
#define FILL_TOUCH_CHUNK	4096	/* entries per transaction of -t */

static void
usage(void)
{
	fprintf(stderr, "usage: bench-fill DIR COUNT [RESPONSE.der [REQUEST.der]]\n"
	    "       bench-fill -s PKIDIR [-o OUTDIR] [-v VALIDITY_S] [-f FRACTION] "
	    "DIR COUNT\n"
	    "       bench-fill -t WHEN DIR\n");
	exit(2);
}

/* splitmix64: reproducible keys that spread over the B-tree like hashes do. */
static uint64_t
next_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void
fill_rand(uint64_t *s, uint8_t *buf, size_t len)
{
	uint64_t	r = 0;
	size_t		i;

	for (i = 0; i < len; i++) {
		if (i % 8 == 0)
			r = next_rand(s);
		buf[i] = (uint8_t)(r >> (8 * (i % 8)));
	}
}

/* Read a small file into a malloc'd buffer; NULL on error (message printed). */
static uint8_t *
read_file(const char *path, size_t *len)
{
	FILE	*f;
	uint8_t	*buf = NULL;
	size_t	 n;

	if ((f = fopen(path, "rb")) == NULL) {
		fprintf(stderr, "bench-fill: %s: %s\n", path, strerror(errno));
		return NULL;
	}
	if ((buf = malloc(FILL_FILE_MAX_BYTES)) == NULL)
		goto out;
	n = fread(buf, 1, FILL_FILE_MAX_BYTES, f);
	if (n == 0 || n == FILL_FILE_MAX_BYTES) {
		fprintf(stderr, "bench-fill: %s: empty or larger than %u bytes\n",
		    path, FILL_FILE_MAX_BYTES);
		free(buf);
		buf = NULL;
		goto out;
	}
	*len = n;
out:
	fclose(f);
	return buf;
}

/* BENCH_FILL_MAP_MB: the map size (0 or unset: the default). */
static struct cache *
fill_open(const char *dir)
{
	struct cache	*c;
	const char	*env;
	size_t		 map_bytes = 0;
	char		 err[512];

	if ((env = getenv("BENCH_FILL_MAP_MB")) != NULL)
		map_bytes = (size_t)strtoul(env, NULL, 10) << 20;
	if ((c = cache_open(dir, map_bytes, 0, err, sizeof(err))) == NULL)
		fprintf(stderr, "bench-fill: %s\n", err);
	return c;
}

/* The same answer under N random keys: tools/bench's start-to-ready store. */
static int
fill_synthetic(struct cache *c, unsigned long count, const char *resp_path,
    const char *req_path)
{
	struct cache_meta	 m;
	struct cache_body	 b = { 0 };
	uint8_t			 key[FILL_KEY_BYTES];
	uint8_t			*resp = NULL, *req = NULL;
	size_t			 resp_len = FILL_RESPONSE_BYTES;
	size_t			 req_len = FILL_REQUEST_BYTES;
	uint64_t		 seed = 0x5eed;
	time_t			 now = time(NULL);
	unsigned long		 i;
	int			 rv = -1;

	if (resp_path != NULL)
		resp = read_file(resp_path, &resp_len);
	else if ((resp = malloc(resp_len)) != NULL)
		fill_rand(&seed, resp, resp_len);
	if (req_path != NULL)
		req = read_file(req_path, &req_len);
	else if ((req = malloc(req_len)) != NULL)
		fill_rand(&seed, req, req_len);
	if (resp == NULL || req == NULL)
		goto out;

	/*
	 * Valid for a week, refresh planned in three days: the daemon finds
	 * nothing due at start, as after a restart of a healthy cache.
	 */
	memset(&m, 0, sizeof(m));
	m.kind = CACHE_KIND_OCSP;
	m.status = 0;			/* good */
	m.this_update = now - 60;
	m.next_update = now + 7 * 86400;
	m.produced_at = now - 60;
	m.fetched_at = now - 60;
	snprintf(m.source, sizeof(m.source), "bench-fill");
	b.request = req;
	b.request_len = req_len;
	b.response = resp;
	b.response_len = resp_len;

	for (i = 0; i < count; i++) {
		fill_rand(&seed, key, sizeof(key));
		/* Spread the planned refreshes as a real schedule would. */
		m.next_refresh_at = now + 3 * 86400 + (time_t)(i % 3600);
		if (cache_put(c, key, sizeof(key), &m, &b) == -1) {
			fprintf(stderr, "bench-fill: entry %lu: %s\n", i,
			    cache_strerror(c));
			goto out;
		}
	}
	rv = 0;
out:
	free(req);
	free(resp);
	return rv;
}

struct touch_walk {
	struct cache_touch	*t;
	size_t			 n;
	int64_t			 when;
	unsigned long		 seen;
};

static int
touch_one(enum cache_kind kind, const uint8_t *key, size_t klen,
    const struct cache_meta *m, void *arg)
{
	struct touch_walk	*tw = arg;
	struct cache_touch	*t = &tw->t[tw->n];

	(void)m;
	if (klen > sizeof(t->key))
		return 0;
	tw->n++;
	t->kind = (uint8_t)kind;
	memcpy(t->key, key, klen);
	t->klen = klen;
	t->served = 0;
	t->last_served_at = tw->when -
	    (int64_t)(tw->seen++ % FILL_SERVED_SPREAD_S);
	return 0;
}

/*
 * -t WHEN: every OCSP entry last asked within the ten minutes before WHEN,
 * as under clients that kept asking through an upstream outage that ends
 * at WHEN (tools/bench-scale's storm; a hit then finds its use recorded).
 */
static int
fill_touch(struct cache *c, int64_t when)
{
	struct touch_walk	 tw = { NULL, 0, when, 0 };
	uint8_t			 after[CACHE_KEY_MAX_BYTES];
	size_t			 afterlen = 0;
	long			 n;
	int			 rv = -1;

	if ((tw.t = calloc(FILL_TOUCH_CHUNK, sizeof(*tw.t))) == NULL) {
		fprintf(stderr, "bench-fill: %s\n", strerror(ENOMEM));
		return -1;
	}
	do {
		tw.n = 0;
		n = cache_walk(c, CACHE_KIND_OCSP, afterlen ? after : NULL,
		    afterlen, FILL_TOUCH_CHUNK, touch_one, &tw);
		if (n == -1 || cache_touch(c, tw.t, tw.n) == -1) {
			fprintf(stderr, "bench-fill: -t: %s\n", cache_strerror(c));
			goto out;
		}
		if (tw.n > 0) {
			afterlen = tw.t[tw.n - 1].klen;
			memcpy(after, tw.t[tw.n - 1].key, afterlen);
		}
	} while (n == FILL_TOUCH_CHUNK);
	printf("touched %lu\n", tw.seen);
	rv = 0;
out:
	free(tw.t);
	return rv;
}

static unsigned long
parse_count(const char *s)
{
	unsigned long	 n;
	char		*end;

	errno = 0;
	n = strtoul(s, &end, 10);
	if (errno != 0 || *end != '\0' || n == 0)
		usage();
	return n;
}

int
main(int argc, char **argv)
{
	struct cache		*c = NULL;
	struct fill_plan	 p = { 0 };
	char			*end;
	long long		 when = 0;
	int			 ch, rv = 1;

	p.validity_s = FILL_VALIDITY_S;
	p.fraction = FILL_FRACTION;
	while ((ch = getopt(argc, argv, "f:o:s:t:v:")) != -1) {
		switch (ch) {
		case 't':
			when = strtoll(optarg, &end, 10);
			if (*end != '\0' || when <= 0)
				usage();
			break;
		case 'f':
			p.fraction = strtod(optarg, &end);
			if (*end != '\0' || p.fraction <= 0 || p.fraction >= 1)
				usage();
			break;
		case 'o':
			p.outdir = optarg;
			break;
		case 's':
			p.pkidir = optarg;
			break;
		case 'v':
			p.validity_s = strtol(optarg, &end, 10);
			if (*end != '\0' || p.validity_s < 60)
				usage();
			break;
		default:
			usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (when != 0) {
		if (argc != 1 || p.pkidir != NULL)
			usage();
		if ((c = fill_open(argv[0])) == NULL)
			return 1;
		rv = fill_touch(c, when) == 0 ? 0 : 1;
		cache_close(c);
		return rv;
	}
	if (argc < 2 || argc > (p.pkidir != NULL ? 2 : 4))
		usage();
	p.count = parse_count(argv[1]);
	p.now = time(NULL);
	if ((c = fill_open(argv[0])) == NULL)
		return 1;
	if (p.pkidir != NULL)
		rv = fill_signed(c, &p) == 0 ? 0 : 1;
	else
		rv = fill_synthetic(c, p.count, argc > 2 ? argv[2] : NULL,
		    argc > 3 ? argv[3] : NULL) == 0 ? 0 : 1;
	cache_close(c);
	return rv;
}
