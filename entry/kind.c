/* SPDX-License-Identifier: Apache-2.0 */
/* The kind table: each kind's rules, by enum cache_kind. */

#include "attest/amd.h"
#include "attest/intel.h"
#include "entry/conf.h"
#include "entry/kds.h"
#include "entry/kind.h"
#include "entry/pccs.h"

/* RIMs are served with the vendors' skew, as Intel's and AMD's objects are. */
#define RIM_MIN_SKEW_S	300

/* PCS answers carry the issuer chains their verifiers read. */
const char *const pccs_keep_headers[] = {
	"Content-Type",
	"TCB-Info-Issuer-Chain",
	"SGX-TCB-Info-Issuer-Chain",
	"SGX-Enclave-Identity-Issuer-Chain",
	"TCB-Evaluation-Data-Numbers-Issuer-Chain",
	"SGX-PCK-CRL-Issuer-Chain",
	"SGX-PCK-Certificate-Issuer-Chain",
	"SGX-PCK-Certificate-CA-Type",
	"SGX-TCBm",
	"SGX-FMSPC",
	NULL
};

const char *const pccs_base_suffixes[] = {
	"/sgx/certification/v4", "/tdx/certification/v4", NULL
};

/* KDS sends Content-Type only; verifiers need nothing else from it. */
const char *const kds_keep_headers[] = { "Content-Type", NULL };
/* dstack and others configure "https://kdsintf.amd.com/vcek/v1": its host is meant. */
const char *const kds_base_suffixes[] = { "/vcek/v1", "/vlek/v1", NULL };

/*
 * What an entry takes of the map. OCSP is measured: a 1 GiB map holds
 * about 350,000 NVIDIA answers (a million take some 3 GiB). The others
 * are estimated from their bodies, each taking whole 4 KiB overflow
 * pages past 2 KiB: a RIM document of 28 KB, a PCK certificate with its
 * issuer chain (the most numerous PCCS entry; TCB info is 14 KB), a VCEK
 * of 1.4 KB (the chain, 4.6 KB, is one per product).
 */
#define OCSP_ENTRY_BYTES	3072
#define RIM_ENTRY_BYTES		(32 * 1024)
#define PCCS_ENTRY_BYTES	(8 * 1024)
#define KDS_ENTRY_BYTES		(6 * 1024)
/*
 * Each kind's share of the map by default, in percent: OCSP answers are
 * the many (one per GPU and NVSwitch certificate chain element), RIMs a
 * few per driver and VBIOS, PCK certificates and VCEKs one per host or
 * chip. Together 100.
 */
#define OCSP_MAP_SHARE_PCT	70
#define RIM_MAP_SHARE_PCT	5
#define PCCS_MAP_SHARE_PCT	15
#define KDS_MAP_SHARE_PCT	10

/* The vendors' endpoints, asked when a section names no upstreams. */
#define OCSP_UPSTREAM		"https://ocsp.ndis.nvidia.com"
#define RIM_UPSTREAM		"https://rim.attestation.nvidia.com"
#define PCCS_UPSTREAM		"https://api.trustedservices.intel.com"
#define KDS_UPSTREAM		"https://kdsintf.amd.com"
/* AMD KDS throttles identical requests to about one per 10 s. */
#define KDS_PACING_MS		10000

const struct kind_row kind_table[CACHE_KIND_MAX] = {
	[CACHE_KIND_OCSP] = { .min_skew_s = 0,
	    .judge = entry_judge_ocsp, .entry_bytes = OCSP_ENTRY_BYTES,
	    .map_share_pct = OCSP_MAP_SHARE_PCT,
	    .conf = { .upstream = OCSP_UPSTREAM, .keys = KIND_CONF_ANCHORS |
	    KIND_CONF_INTERMEDIATES | KIND_CONF_PATHS } },
	[CACHE_KIND_RIM] = { .min_skew_s = RIM_MIN_SKEW_S,
	    .judge = entry_judge_rim, .entry_bytes = RIM_ENTRY_BYTES,
	    .map_share_pct = RIM_MAP_SHARE_PCT,
	    .conf = { .upstream = RIM_UPSTREAM, .keys = KIND_CONF_ANCHORS |
	    KIND_CONF_RETENTION, .retention_s = CONFIG_DEFAULT_RIM_RETENTION_S } },
	[CACHE_KIND_PCCS] = { .min_skew_s = INTEL_SKEW_S,
	    .keep_headers = pccs_keep_headers,
	    .base_suffixes = pccs_base_suffixes,
	    .judge = entry_judge_pccs, .entry_bytes = PCCS_ENTRY_BYTES,
	    .map_share_pct = PCCS_MAP_SHARE_PCT,
	    .conf = { .upstream = PCCS_UPSTREAM, .keys = KIND_CONF_API_KEY } },
	[CACHE_KIND_KDS] = { .min_skew_s = AMD_SKEW_S,
	    .keep_headers = kds_keep_headers,
	    .base_suffixes = kds_base_suffixes,
	    .judge = entry_judge_kds, .entry_bytes = KDS_ENTRY_BYTES,
	    .map_share_pct = KDS_MAP_SHARE_PCT,
	    .conf = { .upstream = KDS_UPSTREAM, .pacing_ms = KDS_PACING_MS } },
};

int
entry_servable(const struct cache_meta *m, enum cache_kind kind, long skew_s,
    time_t now)
{
	if ((int)kind >= KIND_FIRST && kind < CACHE_KIND_MAX &&
	    skew_s < kind_table[kind].min_skew_s)
		skew_s = kind_table[kind].min_skew_s;
	return m->next_update > now && m->this_update <= now + skew_s;
}
