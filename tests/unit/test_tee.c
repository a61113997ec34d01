/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for tools/tee.c: the collateral paths of quotes and SNP reports on real vectors (the kinds' own paths: test_entry_pccs.c, test_entry_kds.c). */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tools/tee.h"
#include "tv.h"

static uint8_t *
slurp(const char *rel, size_t *len)
{
	char	path[TV_REL_BYTES];

	snprintf(path, sizeof(path), "/%s", rel);
	return tv_src_try(path, len);
}

static void
quote_tdx(void **state)
{
	struct tee_quote	 q;
	char			 err[256], paths[8][TEE_PATH_MAX];
	uint8_t			*buf;
	size_t			 len, n;

	(void)state;
	if ((buf = slurp("tests/vectors/intel/tdx_quote", &len)) == NULL)
		skip();
	assert_int_equal(tee_quote_parse(buf, len, &q, err, sizeof(err)), 0);
	assert_int_equal(q.version, 4);
	assert_true(q.tdx);
	/* dcap-qvl's tdx_quote_collateral.json is for FMSPC B0C06F000000, Platform CA. */
	assert_string_equal(q.fmspc, "B0C06F000000");
	assert_string_equal(q.ca, "platform");
	n = tee_quote_paths(&q, paths, 8);
	assert_int_equal(n, 5);
	assert_string_equal(paths[0],
	    "/tdx/certification/v4/tcb?fmspc=B0C06F000000&update=standard");
	/* Every path is one the daemon stores. */
	while (n-- > 0) {
		struct pccs_req	 r;
		const char	*why;

		assert_int_equal(pccs_parse_stored(paths[n], &r, &why), 0);
	}
	/*
	 * Cut anywhere inside the signature data (it ends at byte 4936; the
	 * sample carries 70 more bytes after it): refused, never read past.
	 */
	for (n = 0; n < 4936; n += 97)
		assert_int_equal(tee_quote_parse(buf, n, &q, err, sizeof(err)), -1);
	free(buf);
}

static void
quote_sgx(void **state)
{
	struct tee_quote	 q;
	char			 err[256];
	uint8_t			*buf;
	size_t			 len;

	(void)state;
	if ((buf = slurp("tests/vectors/intel/sgx_quote", &len)) == NULL)
		skip();
	assert_int_equal(tee_quote_parse(buf, len, &q, err, sizeof(err)), 0);
	assert_int_equal(q.version, 3);
	assert_false(q.tdx);
	assert_string_equal(q.fmspc, "00A067110000");
	assert_string_equal(q.ca, "processor");
	free(buf);
}

static void
snp_reports(void **state)
{
	struct tee_snp	 s;
	char		 err[256], paths[4][TEE_PATH_MAX];
	uint8_t		*buf;
	size_t		 len;

	(void)state;
	if ((buf = slurp("tests/vectors/amd/report_milan.hex", &len)) == NULL)
		skip();
	/* v2: no CPUID, the product must be given. */
	assert_int_equal(tee_snp_parse(buf, len, -1, &s, err, sizeof(err)), -1);
	assert_int_equal(tee_snp_parse(buf, len, AMD_MILAN, &s, err,
	    sizeof(err)), 0);
	assert_int_equal(s.version, 2);
	/* vcek_milan.der, which signs this report: bl=3 tee=0 snp=8 ucode=115. */
	assert_int_equal(s.tcb.bl, 3);
	assert_int_equal(s.tcb.tee, 0);
	assert_int_equal(s.tcb.snp, 8);
	assert_int_equal(s.tcb.ucode, 115);
	assert_int_equal(s.tcb.fmc, -1);
	assert_int_equal(s.chip_id[0], 0xd4);
	assert_int_equal(tee_snp_paths(&s, paths, 4), 3);
	assert_non_null(strstr(paths[0], "/vcek/v1/Milan/d49554ec"));
	assert_non_null(strstr(paths[0], "?blSPL=3&teeSPL=0&snpSPL=8&ucodeSPL=115"));
	assert_string_equal(paths[1], "/vcek/v1/Milan/cert_chain");
	assert_string_equal(paths[2], "/vcek/v1/Milan/crl");
	assert_int_equal(tee_snp_parse(buf, len - 2, AMD_MILAN, &s, err,
	    sizeof(err)), -1);
	free(buf);
	if ((buf = slurp("tests/vectors/amd/attestation.bin", &len)) == NULL)
		skip();
	assert_int_equal(tee_snp_parse(buf, len, AMD_MILAN, &s, err,
	    sizeof(err)), 0);
	/* vcek.testcer: bl=2 tee=0 snp=5 ucode=68. */
	assert_int_equal(s.tcb.bl, 2);
	assert_int_equal(s.tcb.snp, 5);
	assert_int_equal(s.tcb.ucode, 68);
	/* A v3 report's CPUID decides; a --product that disagrees is refused. */
	buf[0] = 3;
	buf[0x188] = 0x19;
	buf[0x189] = 0x11;
	assert_int_equal(tee_snp_parse(buf, len, -1, &s, err, sizeof(err)), 0);
	assert_int_equal(s.product, AMD_GENOA);
	assert_int_equal(tee_snp_parse(buf, len, AMD_MILAN, &s, err,
	    sizeof(err)), -1);
	free(buf);
}

int
main(void)
{
	const struct CMUnitTest	tests[] = {
		cmocka_unit_test(quote_tdx),
		cmocka_unit_test(quote_sgx),
		cmocka_unit_test(snp_reports),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
