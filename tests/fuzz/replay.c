/* SPDX-License-Identifier: Apache-2.0 */
/* A fuzz target's driver without libFuzzer: each seed file, then mutations of it, from a fixed seed. */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REPLAY_MAX_INPUT_BYTES	(1024 * 1024)	/* seeds past this are refused */
#define REPLAY_MUTATIONS	200		/* per seed, unless -m says */
#define REPLAY_MAX_FLIPS	8		/* bytes changed in one mutation */

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t	rng = 0x9e3779b97f4a7c15ull;	/* fixed: a run is repeatable */
static unsigned long	nruns;

static uint64_t
rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* One mutation of seed into buf: a few bytes changed, then maybe cut short. */
static size_t
mutate(const uint8_t *seed, size_t n, uint8_t *buf)
{
	size_t	flips, i, at;

	memcpy(buf, seed, n);
	if (n == 0)
		return 0;
	flips = 1 + rnd() % REPLAY_MAX_FLIPS;
	for (i = 0; i < flips; i++) {
		at = rnd() % n;
		switch (rnd() % 4) {
		case 0:
			buf[at] ^= (uint8_t)(1u << (rnd() % 8));
			break;
		case 1:
			buf[at] = (uint8_t)rnd();
			break;
		case 2:
			buf[at] = (rnd() & 1) ? 0xff : 0x00;
			break;
		default:
			buf[at] = (uint8_t)(buf[at] + 1);
			break;
		}
	}
	if (rnd() % 8 == 0)
		return rnd() % n;
	return n;
}

static int
run_file(const char *path, unsigned mutations)
{
	static uint8_t	seed[REPLAY_MAX_INPUT_BYTES], buf[REPLAY_MAX_INPUT_BYTES];
	FILE		*f;
	size_t		 n;
	unsigned	 i;

	if ((f = fopen(path, "rb")) == NULL) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	n = fread(seed, 1, sizeof(seed), f);
	if (!feof(f)) {
		fprintf(stderr, "replay: %s: larger than %d bytes\n", path,
		    REPLAY_MAX_INPUT_BYTES);
		fclose(f);
		return -1;
	}
	fclose(f);
	/* A copy of exactly n bytes, so a read past the input is caught. */
	for (i = 0; i <= mutations; i++) {
		size_t	 len = i == 0 ? n : mutate(seed, n, buf);
		uint8_t	*p = malloc(len ? len : 1);

		if (p == NULL)
			return -1;
		memcpy(p, i == 0 ? seed : buf, len);
		(void)LLVMFuzzerTestOneInput(p, len);
		free(p);
		nruns++;
	}
	return 0;
}

static int
run_path(const char *path, unsigned mutations)
{
	struct stat	 st;
	struct dirent	**names;
	char		 sub[4096];
	int		 n, i, rv = 0;

	if (stat(path, &st) == -1) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode))
		return S_ISREG(st.st_mode) ? run_file(path, mutations) : 0;
	if ((n = scandir(path, &names, NULL, alphasort)) == -1) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (names[i]->d_name[0] != '.') {
			snprintf(sub, sizeof(sub), "%s/%s", path, names[i]->d_name);
			if (run_path(sub, mutations) == -1)
				rv = -1;
		}
		free(names[i]);
	}
	free(names);
	return rv;
}

int
main(int argc, char **argv)
{
	unsigned	mutations = REPLAY_MUTATIONS;
	int		c, i, rv = 0;

	while ((c = getopt(argc, argv, "m:")) != -1) {
		if (c != 'm') {
			fprintf(stderr, "usage: %s [-m mutations] file|dir...\n",
			    argv[0]);
			return 2;
		}
		mutations = (unsigned)strtoul(optarg, NULL, 10);
	}
	if (optind == argc) {
		fprintf(stderr, "usage: %s [-m mutations] file|dir...\n", argv[0]);
		return 2;
	}
	for (i = optind; i < argc; i++)
		if (run_path(argv[i], mutations) == -1)
			rv = 1;
	printf("%s: %lu inputs\n", argv[0], nruns);
	return rv;
}
