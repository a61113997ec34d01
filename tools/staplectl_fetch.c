/* staplectl manifest, fetch, prefetch and export-rim-store: not in this build yet. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "tools/staplectl.h"

static int
unavailable(int argc, char **argv)
{
	if (argc > 1 && (strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "-h") == 0)) {
		printf("staplectl %s: not available in this build\n", argv[0]);
		return CTL_OK;
	}
	ctl_warnx("%s: not available in this build", argv[0]);
	return CTL_UNAVAILABLE;
}

int
cmd_manifest(struct ctl *ctl, int argc, char **argv)
{
	(void)ctl;
	return unavailable(argc, argv);
}

int
cmd_fetch(struct ctl *ctl, int argc, char **argv)
{
	(void)ctl;
	return unavailable(argc, argv);
}

int
cmd_prefetch(struct ctl *ctl, int argc, char **argv)
{
	(void)ctl;
	return unavailable(argc, argv);
}

int
cmd_export_rim_store(struct ctl *ctl, int argc, char **argv)
{
	(void)ctl;
	return unavailable(argc, argv);
}
