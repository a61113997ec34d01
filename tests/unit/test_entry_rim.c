/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for entry/rim.c: a RIM answer admitted for the id asked, the upstream path, its retention, the chain CAs the OCSP pool learns, on the daemon's and the bundle's path. */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "attest/ocsp_verify.h"
#include "attest/rim.h"
#include "entry/conf.h"
#include "entry/entry.h"
#include "entry/rim.h"
#include "tv.h"


/* 2026-07-01T00:00:00Z: the 550.144.03 signer is valid until 2026-12-30. */
#define NOW_2026	((time_t)1782864000)
#define DAY_S		86400

static struct rim_trust		*rtrust;
static struct ocsp_trust	*otrust;	/* NVIDIA's pinned OCSP anchors */
static char			*driver_json;	/* the RIM service's answer for TV_RIM_DRIVER_ID */
static char			*switch_json;

static int
setup(void **state)
{
	(void)state;
	if ((rtrust = rim_trust_new()) == NULL ||
	    rim_trust_add_builtin(rtrust) == -1 ||
	    (otrust = ocsp_trust_new()) == NULL ||
	    ocsp_trust_add_builtin_anchors(otrust) <= 0)
		return -1;
	driver_json = tv_rim_envelope(TV_RIM_DRIVER_ID, TV_RIM_DRIVER_XML);
	switch_json = tv_rim_envelope(TV_RIM_SWITCH_ID, TV_RIM_SWITCH_XML);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	rim_trust_free(rtrust);
	ocsp_trust_free(otrust);
	free(driver_json);
	free(switch_json);
	return 0;
}

static struct entry_answer
answer_of(const char *json)
{
	struct entry_answer	a = { (const uint8_t *)json, strlen(json), NULL,
				    NULL, NULL, 0 };

	return a;
}

/* The daemon's path: fetched now, the configured (or default) retention, the chain's CAs learned. */
static void
test_client_store(void **state)
{
	struct entry_rim_question	 q = { (const uint8_t *)TV_RIM_DRIVER_ID,
					    strlen(TV_RIM_DRIVER_ID), 0, 0 };
	struct entry_answer		 a = answer_of(driver_json);
	struct entry_rim_admission	 ad;
	size_t				 i, n = 0;

	(void)state;
	assert_int_equal(entry_rim_admit(rtrust, otrust, &q, &a, NULL,
	    NOW_2026, &ad), ENTRY_STORE);
	assert_string_equal(ad.reason, "");
	assert_string_equal(ad.id, TV_RIM_DRIVER_ID);
	assert_int_equal(ad.meta.kind, CACHE_KIND_RIM);
	assert_int_equal(ad.meta.this_update, NOW_2026);
	assert_int_equal(ad.meta.produced_at, NOW_2026);
	assert_int_equal(ad.meta.next_update, NOW_2026 + RIM_RETENTION_S);
	assert_int_equal(RIM_RETENTION_S, 30 * DAY_S);
	assert_int_equal(ad.keep_stored, 0);
	/* Leaf, two CAs, the CoRIM root: the CAs under the root join the pool. */
	assert_int_equal(ad.result.chain.n, 4);
	assert_int_equal(ad.learn[0], 0);	/* the signer is no CA */
	assert_int_equal(ad.learn[1], 1);
	assert_int_equal(ad.learn[2], 1);
	assert_int_equal(ad.learn[3], 0);	/* the anchor itself */
	for (i = 0; i < RIM_MAX_CERTS; i++)
		n += ad.learn[i] != 0;
	assert_int_equal(ad.nlearn, n);
	entry_rim_admission_free(&ad);

	/* A configured retention; no OCSP trust: nothing to learn. */
	q.retention_s = 7 * DAY_S;
	assert_int_equal(entry_rim_admit(rtrust, NULL, &q, &a, NULL, NOW_2026,
	    &ad), ENTRY_STORE);
	assert_int_equal(ad.meta.next_update, NOW_2026 + 7 * DAY_S);
	assert_int_equal(ad.nlearn, 0);
	assert_int_equal(ad.learn[1], 0);
	entry_rim_admission_free(&ad);
	entry_rim_admission_free(NULL);
}

/* The bundle's path: the fetch time is kept (never one in the future), retention counts from now. */
static void
test_bundle_store(void **state)
{
	struct entry_rim_question	 q = { (const uint8_t *)TV_RIM_SWITCH_ID,
					    strlen(TV_RIM_SWITCH_ID), 0,
					    NOW_2026 - 3 * DAY_S };
	struct entry_answer		 a = answer_of(switch_json);
	struct entry_rim_admission	 ad;

	(void)state;
	assert_int_equal(entry_rim_admit(rtrust, otrust, &q, &a, NULL,
	    NOW_2026, &ad), ENTRY_STORE);
	assert_int_equal(ad.meta.this_update, NOW_2026 - 3 * DAY_S);
	assert_int_equal(ad.meta.produced_at, NOW_2026 - 3 * DAY_S);
	assert_int_equal(ad.meta.next_update, NOW_2026 + RIM_RETENTION_S);
	entry_rim_admission_free(&ad);

	q.fetched_at = NOW_2026 + 60;	/* a clock ahead: now instead */
	assert_int_equal(entry_rim_admit(rtrust, otrust, &q, &a, NULL,
	    NOW_2026, &ad), ENTRY_STORE);
	assert_int_equal(ad.meta.this_update, NOW_2026);
	entry_rim_admission_free(&ad);
}

/* The answer must be for the id asked: a genuine RIM for another id is refused with the reason. */
static void
test_other_id(void **state)
{
	struct entry_rim_question	 q = { (const uint8_t *)TV_RIM_SWITCH_ID,
					    strlen(TV_RIM_SWITCH_ID), 0, 0 };
	struct entry_answer		 a = answer_of(driver_json);
	struct entry_rim_admission	 ad;

	(void)state;
	assert_int_equal(entry_rim_admit(rtrust, otrust, &q, &a, NULL,
	    NOW_2026, &ad), ENTRY_REFUSE);
	assert_int_equal(ad.verdict, ENTRY_REFUSE);
	assert_non_null(strstr(ad.reason, "id_mismatch"));
	assert_non_null(strstr(ad.reason, TV_RIM_DRIVER_ID));
	assert_int_equal(ad.nlearn, 0);
	entry_rim_admission_free(&ad);
}

/* Keys that are no RIM id, and answers that do not verify. */
static void
test_refused(void **state)
{
	struct entry_rim_question	 q = { (const uint8_t *)"../x", 4, 0, 0 };
	struct entry_answer		 a = answer_of(driver_json);
	struct entry_rim_admission	 ad;
	char				 id[RIM_ID_MAX_CHARS + 2];
	char				*bad;

	(void)state;
	assert_int_equal(entry_rim_admit(rtrust, otrust, &q, &a, NULL,
	    NOW_2026, &ad), ENTRY_REFUSE);
	assert_string_equal(ad.reason, "key: not a valid RIM ID");
	entry_rim_admission_free(&ad);

	memset(id, 'A', sizeof(id));
	q.key = (const uint8_t *)id;
	q.klen = RIM_ID_MAX_CHARS + 1;
	assert_int_equal(entry_rim_admit(rtrust, otrust, &q, &a, NULL,
	    NOW_2026, &ad), ENTRY_REFUSE);
	assert_string_equal(ad.reason, "key: longer than a RIM ID");
	entry_rim_admission_free(&ad);

	/* KeyInfo that does not reach the CoRIM root */
	bad = tv_rim_envelope(TV_RIM_DRIVER_ID, TV_RIM_BADCHAIN_XML);
	q.key = (const uint8_t *)TV_RIM_DRIVER_ID;
	q.klen = strlen(TV_RIM_DRIVER_ID);
	a = answer_of(bad);
	assert_int_equal(entry_rim_admit(rtrust, otrust, &q, &a, NULL,
	    NOW_2026, &ad), ENTRY_REFUSE);
	assert_true(strncmp(ad.reason, "chain: ", 7) == 0 ||
	    strncmp(ad.reason, "cert: ", 6) == 0);
	entry_rim_admission_free(&ad);
	free(bad);

	a = answer_of("{\"id\": \"" TV_RIM_DRIVER_ID "\"}");
	assert_int_equal(entry_rim_admit(rtrust, otrust, &q, &a, NULL,
	    NOW_2026, &ad), ENTRY_REFUSE);
	assert_true(strncmp(ad.reason, "json: ", 6) == 0);
	entry_rim_admission_free(&ad);
}

/* An entry stored with a newer fetch time stays: admitted, but kept. */
static void
test_stored_newer(void **state)
{
	struct entry_rim_question	 q = { (const uint8_t *)TV_RIM_DRIVER_ID,
					    strlen(TV_RIM_DRIVER_ID), 0,
					    NOW_2026 - DAY_S };
	struct entry_answer		 a = answer_of(driver_json);
	struct entry_stored		 st;
	struct entry_rim_admission	 ad;

	(void)state;
	memset(&st, 0, sizeof(st));
	st.meta.kind = CACHE_KIND_RIM;
	st.meta.this_update = NOW_2026 - 3600;
	assert_int_equal(entry_rim_admit(rtrust, otrust, &q, &a, &st,
	    NOW_2026, &ad), ENTRY_STORE);
	assert_int_equal(ad.keep_stored, 1);
	entry_rim_admission_free(&ad);

	st.meta.this_update = NOW_2026 - 2 * DAY_S;	/* older: replaced */
	assert_int_equal(entry_rim_admit(rtrust, otrust, &q, &a, &st,
	    NOW_2026, &ad), ENTRY_STORE);
	assert_int_equal(ad.keep_stored, 0);
	entry_rim_admission_free(&ad);
}

/* The canonical upstream request of an id, refused for anything that is not one. */
static void
test_path(void **state)
{
	char	path[ENTRY_RIM_PATH_BYTES], id[RIM_ID_MAX_CHARS + 1];

	(void)state;
	assert_int_equal(entry_rim_path(TV_RIM_DRIVER_ID, strlen(TV_RIM_DRIVER_ID), path), 0);
	assert_string_equal(path, "/v1/rim/" TV_RIM_DRIVER_ID);
	/* the id need not be NUL-terminated: len bytes of it */
	assert_int_equal(entry_rim_path(TV_RIM_SWITCH_ID "junk", strlen(TV_RIM_SWITCH_ID),
	    path), 0);
	assert_string_equal(path, "/v1/rim/" TV_RIM_SWITCH_ID);
	memset(id, 'A', sizeof(id));
	assert_int_equal(entry_rim_path(id, RIM_ID_MAX_CHARS, path), 0);
	assert_int_equal(strlen(path), ENTRY_RIM_PATH_BYTES - 1);
	assert_int_equal(entry_rim_path(id, RIM_ID_MAX_CHARS + 1, path), -1);
	assert_int_equal(entry_rim_path("..", 2, path), -1);
	assert_int_equal(entry_rim_path("a/b", 3, path), -1);
	assert_int_equal(entry_rim_path("abc\0/../x", 9, path), -1);
	assert_int_equal(entry_rim_path("", 0, path), -1);
	assert_int_equal(entry_rim_path(NULL, 0, path), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_client_store),
		cmocka_unit_test(test_bundle_store),
		cmocka_unit_test(test_other_id),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_stored_newer),
		cmocka_unit_test(test_path),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
