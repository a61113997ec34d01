/* SPDX-License-Identifier: Apache-2.0 */
/* staplectl: inspect a stapled cache, and carry its vendor-signed entries across an air gap in bundles. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tools/staplectl.h"
#include "tools/staplectl_paths.h"

struct ctl_cmd {
	const char	*name;
	ctl_cmd_fn	*fn;
	const char	*summary;
};

static const struct ctl_cmd	cmds[] = {
	{ "status", cmd_status, "entries by kind, earliest nextUpdate, upstream health" },
	{ "list", cmd_list, "one line per entry" },
	{ "show", cmd_show, "one entry, decoded" },
	{ "export", cmd_export, "write a bundle of the valid entries" },
	{ "verify", cmd_verify, "check a bundle without importing it" },
	{ "import", cmd_import, "verify a bundle's entries and store them" },
	{ "manifest", cmd_manifest, "what hosts need, from evidence or chains" },
	{ "fetch", cmd_fetch, "fetch a manifest's entries into a bundle" },
	{ "prefetch", cmd_prefetch, "fetch what evidence needs into the cache" },
	{ "purge", cmd_purge, "delete expired or named entries" },
	{ "check", cmd_check, "read every record: is the store damaged?" },
	{ "export-rim-store", cmd_export_rim_store, "write {id}.xml for nvattest --rim-store" },
	{ "reload", cmd_reload, "make the running stapled reload; wait for its verdict" },
	{ "refresh", cmd_refresh, "make the running stapled renew entries now; wait for each" },
};

/*
 * The configuration to read: -f's; else $STAPLED_CONFIG when it is set
 * (empty: none, the built-in defaults), as the package's scripts take it;
 * else the one the package installs, when it is there. NULL: none.
 */
static const char *
config_path(const char *flag)
{
	const char	*env;

	if (flag != NULL)
		return flag;
	if ((env = getenv("STAPLED_CONFIG")) != NULL)
		return env[0] != '\0' ? env : NULL;
	/* One that is there but cannot be read is said, as -f's would be. */
	if (access(CTL_DEFAULT_CONFIG, F_OK) == 0 ||
	    (errno != ENOENT && errno != ENOTDIR))
		return CTL_DEFAULT_CONFIG;
	return NULL;
}

static void
usage(FILE *f)
{
	size_t	i;

	fprintf(f, "usage: staplectl [-C cache-dir] [-f config.json] [--json] "
	    "[-q]\n    COMMAND [ARGS]\n\ncommands:\n");
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(f, "  %-17s %s\n", cmds[i].name, cmds[i].summary);
	fprintf(f, "\n'staplectl COMMAND --help' for a command's options; "
	    "staplectl(8) for the exit codes:\n"
	    "0 ok, 1 something rejected or failed, 2 usage, "
	    "3 cannot open the cache or a file, 4 not in this build,\n"
	    "5 no daemon runs (reload, refresh).\n"
	    "Without -f: the file $STAPLED_CONFIG names, else %s when it "
	    "exists.\n"
	    "On a terminal, fetch, prefetch, verify, import and check show progress "
	    "on stderr;\n-q (--quiet) turns it off.\n", CTL_DEFAULT_CONFIG);
}

int
main(int argc, char *argv[])
{
	static const struct option	opts[] = {
		{ "cache-dir", required_argument, NULL, 'C' },
		{ "config", required_argument, NULL, 'f' },
		{ "json", no_argument, NULL, 'j' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	struct ctl	 ctl;
	const char	*cache_dir = NULL;
	size_t		 i;
	int		 ch, rv;

	memset(&ctl, 0, sizeof(ctl));
	ctl.now = time(NULL);
	while ((ch = getopt_long(argc, argv, "+C:f:hqV", opts, NULL)) != -1) {
		switch (ch) {
		case 'C':
			cache_dir = optarg;
			break;
		case 'f':
			ctl.config_file = optarg;
			break;
		case 'j':
			ctl.json = 1;
			break;
		case 'q':
			ctl.quiet = 1;
			break;
		case 'h':
			usage(stdout);
			return CTL_OK;
		case 'V':
			printf("staplectl %s\n", PACKAGE_VERSION);
			return CTL_OK;
		default:
			usage(stderr);
			return CTL_USAGE;
		}
	}
	argc -= optind;
	argv += optind;
	if (argc == 0) {
		usage(stderr);
		return CTL_USAGE;
	}
	/* A file stapled -n refuses stops every command, as it stops stapled. */
	ctl.config_file = config_path(ctl.config_file);
	if ((rv = ctl_load_config(&ctl, ctl.config_file)) != CTL_OK)
		goto out;
	/* -C wins over the config file's cache_dir, as stapled's flags do. */
	ctl.cache_dir = cache_dir != NULL ? cache_dir : ctl.conf.cache_dir;
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (strcmp(argv[0], cmds[i].name) == 0)
			break;
	if (i == sizeof(cmds) / sizeof(cmds[0])) {
		ctl_warnx("%s: unknown command", argv[0]);
		usage(stderr);
		rv = CTL_USAGE;
		goto out;
	}
	optind = 1;	/* each command parses its own options */
	/* Damage can kill a reader of the map: a child takes that risk. */
	rv = ctl_run_guarded(&ctl, cmds[i].fn, cmds[i].name, argc, argv);
 out:
	ctl_free(&ctl);
	return rv;
}
