#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Stores and bundles written by a released stapled keep working: the current
# daemon serves a release's store byte for byte with every upstream dead, and the
# current staplectl verifies, imports and re-exports a release's bundle unchanged.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_compat
need_ctl
need_cmd base64 sha256sum cmp
need_faketime
case "$(uname -m)" in
x86_64) ;;
*) skip "the release store fixture is an amd64 LMDB file" ;;
esac
REL=$top_srcdir/tests/vectors/compat/release-0.1.0
IV=$top_srcdir/tests/vectors/intel/derived
AV=$top_srcdir/tests/vectors/amd
RIM_ID=NV_GPU_DRIVER_GH100_550.144.03
RIM_XML=$VECTORS/attestation-sdk/testdata/$RIM_ID.xml
[ -s "$REL/data.mdb" ] && [ -s "$REL/bundle.jsonl" ] || die "release fixtures missing under $REL"
[ -s "$RIM_XML" ] || die "RIM vector missing: $RIM_XML"

# Ten minutes after the release wrote them (the fixtures' clock).
fake_off=$(secs_until 2025-06-01T00:10:00Z)
STAPLED_WRAP=$(faketime_env "$fake_off")

# The RIM service envelope the release stored, rebuilt from the vector.
printf '{"id":"%s","rim":"%s","sha256":"%s","rim_format":"CORE_SWID","request_id":"compat"}' \
    "$RIM_ID" "$(base64 -w0 "$RIM_XML")" "$(sha256sum "$RIM_XML" | cut -d' ' -f1)" >"$T/rim.json"
VCEK_HW=d49554ec717f4e5b0fe6b143bcf0405bd7ae304727edf46603f2a76aef6a3abc15d7af38db757039029f0efacfd08e244324884738c72b082e2f87a44d541eb6
# path (as a client asks) | the vendor's bytes | a header a verifier reads
WANT="/tdx/certification/v4/tcb?fmspc=00806F050000|$IV/tdx_tcb_info.body.json|TCB-Info-Issuer-Chain
/tdx/certification/v4/qe/identity|$IV/tdx_qe_identity.body.json|SGX-Enclave-Identity-Issuer-Chain
/sgx/certification/v4/pckcrl?ca=platform&encoding=der|$IV/pckcrl_platform.der|SGX-PCK-CRL-Issuer-Chain
/sgx/certification/v4/pckcrl?ca=processor&encoding=der|$IV/pckcrl_processor.der|SGX-PCK-CRL-Issuer-Chain
/vcek/v1/Milan/cert_chain|$AV/cert_chain_milan|Content-Type
/vcek/v1/Milan/crl|$AV/derived/Milan.crl.der|Content-Type
/vcek/v1/Milan/$VCEK_HW?blSPL=3&teeSPL=0&snpSPL=8&ucodeSPL=115|$AV/vcek_milan.der|Content-Type
/v1/rim/$RIM_ID|$T/rim.json|Content-Type"

# serve_all TAG: every object from the running daemon, compared with the vendor's bytes.
serve_all() {
	local _p _f _h _n=0
	while IFS='|' read -r _p _f _h; do
		_n=$((_n + 1))
		HTTP_CODE=$(curl -s -m 10 -o "$T/$1.$_n" -D "$T/$1.$_n.hdr" -w '%{http_code}' "$SURL$_p")
		check_eq "$1: ${_p%%\?*}: HTTP 200" 200 "$HTTP_CODE"
		check_bytes "$1: ${_p%%\?*}: the vendor's bytes" "$_f" "$T/$1.$_n"
		check "$1: ${_p%%\?*}: $_h served" grep -qi "^$_h: ." "$T/$1.$_n.hdr"
	done <<END
$WANT
END
}

DEAD="http://127.0.0.1:$(dead_port 1)"
UP=(--pccs-upstream "$DEAD" --kds-upstream "$DEAD" --rim-upstream "$DEAD")

# ---- 1. the release's store, opened by this daemon, every upstream dead ----------
mkdir -p "$T/c1"
cp "$REL/data.mdb" "$T/c1/data.mdb"
STAPLED_CACHE=$T/c1 stapled_start d1 "${UP[@]}"
serve_all store
metrics_get "$T/m1"
hits=0
for r in pccs kds rim; do
	hits=$((hits + $(metric_sum "$T/m1" "stapled_requests_total{route=\"$r\",result=\"hit\"}")))
done
check_eq "the release's store: every answer a hit" 8 "$hits"
check "the release's store got a refresh due index at start (logged with its count)" \
    grep -q 'built the refresh due index: [1-9][0-9]* entries' "$T/d1.log"
stapled_stop
ctl -C "$T/c1" list
check_eq "staplectl list of the release's store: 9 entries" 9 "$(grep -c . "$T/ctl.out")"

# ---- 2. the release's bundle: verify, import, serve, export ----------------------
ctl verify "$REL/bundle.jsonl"
check_eq "staplectl verify of the release's bundle: exit 0" 0 "$CTL_RC"
ctl -C "$T/c2" import "$REL/bundle.jsonl"
check_eq "staplectl import of the release's bundle: exit 0" 0 "$CTL_RC"
STAPLED_CACHE=$T/c2 stapled_start d2 "${UP[@]}"
serve_all import
stapled_stop
ctl -C "$T/c2" export --out "$T/again.jsonl"
check_eq "staplectl export of the imported store: exit 0" 0 "$CTL_RC"
# Line for line but the provenance, which import sets to the bundle's name, and a
# RIM's end of retention, which runs from when this store got it.
entries() {
	grep -v '"type":"\(header\|end\)"' "$1" | sed 's/"source":"[^"]*"//;
	    /"kind":"rim"/s/"next_update":"[^"]*"//' | sort | sha256sum
}
check_eq "re-exported entries and certificates are the release's, line for line" \
    "$(entries "$REL/bundle.jsonl")" "$(entries "$T/again.jsonl")"
it_done
