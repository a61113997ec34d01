#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The answer must answer the question: a fake PCS that swaps genuine, correctly signed
# Intel answers between routes (the Processor-CA CRL for ca=platform, the TDX evaluation
# numbers for SGX, number 17 for tcbEvaluationDataNumber=19, an SGX TCB info and a TD_QE
# identity on other paths) is refused, the next upstream serves, nothing swapped is
# stored; the same swaps inside a bundle are rejected by staplectl verify and import.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_pccs_swap
need_ctl
need_cmd jq base64 cmp
need_faketime
IV=$top_srcdir/tests/vectors/intel
D=$IV/derived
need_vectors "$IV" derived/sgx_tcb_info_00906ED50000.body.json derived/pckcrl_platform.der \
    derived/pckcrl_processor.der derived/sgx_qe_identity.body.json \
    derived/tdx_qe_identity.body.json sgx_tcb_eval_nums.json tdx_tcb_eval_nums.json \
    sgx_tcb_info_early.json

# Inside the teepot PCS captures' window (2025-05-27 .. 2025-06-26), as t_pccs.sh.
fake_off=$(secs_until 2025-06-01T00:00:00Z)
STAPLED_WRAP=$(faketime_env "$fake_off")

V4=/sgx/certification/v4
TDX4=/tdx/certification/v4

# pct: a PEM chain percent-encoded as PCS sends it in a header.
pct() { awk -v ORS= '{ gsub(/ /, "%20"); gsub(/\+/, "%2B"); gsub(/\//, "%2F"); gsub(/=/, "%3D"); print $0 "%0A" }' "$@"; }

# The teepot wrappers' bodies and chains, as PCS serves them (made at test time).
A=$T/answers; H=$T/hdrs
mkdir -p "$A" "$H"
for w in sgx_tcb_eval_nums:tcb_evaluation_data_numbers_json tdx_tcb_eval_nums:tcb_evaluation_data_numbers_json \
    sgx_tcb_info_early:tcb_info_json; do
	n=${w%%:*}; k=${w#*:}
	jq -j ".$k" "$IV/$n.json" >"$A/$n.body"
	jq -j .issuer_chain "$IV/$n.json" | pct >"$A/$n.chain"
done
hdrs "$H/sgx_nums" application/json TCB-Evaluation-Data-Numbers-Issuer-Chain "$A/sgx_tcb_eval_nums.chain"
hdrs "$H/tdx_nums" application/json TCB-Evaluation-Data-Numbers-Issuer-Chain "$A/tdx_tcb_eval_nums.chain"
hdrs "$H/tcb19" application/json TCB-Info-Issuer-Chain "$A/sgx_tcb_info_early.chain"
hdrs "$H/tcb17" application/json TCB-Info-Issuer-Chain "$D/sgx_tcb_info_00906ED50000.TCB-Info-Issuer-Chain.txt"
hdrs "$H/crl_plat" application/pkix-crl SGX-PCK-CRL-Issuer-Chain "$D/pckcrl_platform.SGX-PCK-CRL-Issuer-Chain.txt"
hdrs "$H/crl_proc" application/pkix-crl SGX-PCK-CRL-Issuer-Chain "$D/pckcrl_processor.SGX-PCK-CRL-Issuer-Chain.txt"
hdrs "$H/sgx_qe" application/json SGX-Enclave-Identity-Issuer-Chain "$D/sgx_qe_identity.SGX-Enclave-Identity-Issuer-Chain.txt"
hdrs "$H/tdx_qe" application/json SGX-Enclave-Identity-Issuer-Chain "$D/tdx_qe_identity.SGX-Enclave-Identity-Issuer-Chain.txt"
printf 'Content-Type: text/plain\n' >"$H/404"
printf 'No cache data for this platform.\n' >"$A/404.txt"

# name | client request | canonical upstream path | swapped body, headers | genuine body, headers | the reason
CASES="crl|$V4/pckcrl?ca=platform&encoding=der|$V4/pckcrl?ca=platform&encoding=der|$D/pckcrl_processor.der|$H/crl_proc|$D/pckcrl_platform.der|$H/crl_plat|a processor CA CRL filed under platform
nums|$V4/tcbevaluationdatanumbers|$V4/tcbevaluationdatanumbers|$A/tdx_tcb_eval_nums.body|$H/tdx_nums|$A/sgx_tcb_eval_nums.body|$H/sgx_nums|id TDX filed under a path for SGX
eval19|$V4/tcb?fmspc=00906ed50000&tcbEvaluationDataNumber=19|$V4/tcb?fmspc=00906ED50000&tcbEvaluationDataNumber=19|$D/sgx_tcb_info_00906ED50000.body.json|$H/tcb17|$A/sgx_tcb_info_early.body|$H/tcb19|tcbEvaluationDataNumber 17 filed under 19
qe|$V4/qe/identity|$V4/qe/identity?update=standard|$D/tdx_qe_identity.body.json|$H/tdx_qe|$D/sgx_qe_identity.body.json|$H/sgx_qe|id TD_QE filed under a path for QE
tee|$TDX4/tcb?fmspc=00906ED50000|$TDX4/tcb?fmspc=00906ED50000&update=standard|$D/sgx_tcb_info_00906ED50000.body.json|$H/tcb17|$A/404.txt|$H/404|id SGX filed under a path for TDX"
NCASES=$(printf '%s\n' "$CASES" | wc -l)

while IFS='|' read -r name req up sb sh gb gh why; do
	dir_put "$T/S" "$up" 200 "$sb" "$sh"
	if [ "$name" = tee ]; then
		# No TDX TCB info exists for an SGX FMSPC: PCS answers 404.
		dir_put "$T/G" "$up" 404 "$gb" "$gh"
	else
		dir_put "$T/G" "$up" 200 "$gb" "$gh"
	fi
done <<EOF
$CASES
EOF
# Preconditions: the swapped answers are genuine (t_pccs.sh and test_intel verify the same bytes).
check "precondition: the swapped CRL differs from the genuine one" \
    sh -c "! cmp -s '$D/pckcrl_processor.der' '$D/pckcrl_platform.der'"

upstream_start US s --mode "dir:$T/S"
upstream_start UG g --mode "dir:$T/G"
DEAD=$(dead_port 1)

# ---- the swapping upstream alone: every answer refused, nothing stored --------------------

STAPLED_CACHE=$T/c_s stapled_start d_s --pccs-upstream "http://127.0.0.1:$US"
while IFS='|' read -r name req up sb sh gb gh why; do
	get "$req" "$T/s.$name"
	check_eq "$name: the swapped answer from the only upstream: refused (503)" 503 "$HTTP_CODE"
	assert "$name: the swapped bytes are not served" '! cmp -s "$T/s.$name" "$sb"'
	assert "$name: the refusal is logged with its reason" \
	    'grep -qF "refused an answer from 127.0.0.1:$US: answers another request: $why" "$T/d_s.log"'
done <<EOF
$CASES
EOF
metrics_get "$T/m_s"
check_eq "every refusal counted (stapled_rejected_total{kind=\"pccs\"})" "$NCASES" \
    "$(metric_sum "$T/m_s" '^stapled_rejected_total[{]kind="pccs"[}]')"
stapled_stop
STAPLED_CACHE=$T/c_s stapled_start d_s2 --pccs-upstream "http://127.0.0.1:$DEAD"
while IFS='|' read -r name req up sb sh gb gh why; do
	get "$req" "$T/s2.$name"
	check_eq "$name: not stored (the same cache, the upstream dead: 503)" 503 "$HTTP_CODE"
done <<EOF
$CASES
EOF
stapled_stop
ctl -C "$T/c_s" list
check_eq "the swapping upstream's cache holds no PCCS entry" 0 "$(grep -c ' pccs ' "$T/ctl.out")"

# ---- swapping first, genuine second: the genuine answer is served and stored -------------

# One daemon per case, on one cache: a refused endpoint rests, and each case
# must show the swapping endpoint asked first.
rm -f "$T/S/requests" "$T/G/requests"
while IFS='|' read -r name req up sb sh gb gh why; do
	STAPLED_CACHE=$T/c_b stapled_start "d_b_$name" --pccs-upstream "http://127.0.0.1:$US" \
	    --pccs-upstream "http://127.0.0.1:$UG"
	get "$req" "$T/b.$name"
	if [ "$name" = tee ]; then
		check_eq "$name: refused first, the second upstream's 404 passed on" 404 "$HTTP_CODE"
	else
		check_eq "$name: refused first, the second upstream's answer: 200" 200 "$HTTP_CODE"
		if [ "$name" = crl ]; then
			# Served in the dialect asked for (encoding=der): the DER itself.
			check_bytes "$name: the genuine Platform-CA CRL is served" "$gb" "$T/b.$name"
		else
			check_bytes "$name: the genuine answer is served" "$gb" "$T/b.$name"
		fi
	fi
	check_eq "$name: each upstream asked once, the canonical $up" "1 1" \
	    "$(dir_hits "$T/S" "$up") $(dir_hits "$T/G" "$up")"
	assert "$name: the refusal of the first is logged with its reason" \
	    'grep -qF "refused an answer from 127.0.0.1:$US: answers another request: $why" "$T/d_b_$name.log"'
	stapled_stop
done <<EOF
$CASES
EOF
# Entries the bundle swaps below draw on: the processor CRL, the TDX list, number 17.
dir_put "$T/G" "$V4/pckcrl?ca=processor&encoding=der" 200 "$D/pckcrl_processor.der" "$H/crl_proc"
dir_put "$T/G" "$TDX4/tcbevaluationdatanumbers" 200 "$A/tdx_tcb_eval_nums.body" "$H/tdx_nums"
dir_put "$T/G" "$V4/tcb?fmspc=00906ED50000&update=standard" 200 \
    "$D/sgx_tcb_info_00906ED50000.body.json" "$H/tcb17"
STAPLED_CACHE=$T/c_b stapled_start d_b_extra --pccs-upstream "http://127.0.0.1:$UG"
for p in "$V4/pckcrl?ca=processor&encoding=der" "$TDX4/tcbevaluationdatanumbers" \
    "$V4/tcb?fmspc=00906ED50000"; do
	get "$p" "$T/extra.out"
	check_eq "$p: 200 from the genuine upstream" 200 "$HTTP_CODE"
done
stapled_stop
bg_kill "$US_PID"
bg_kill "$UG_PID"

# Both upstreams gone: what was stored is the genuine answer, never the swapped one.
STAPLED_CACHE=$T/c_b stapled_start d_b2 --pccs-upstream "http://127.0.0.1:$DEAD"
while IFS='|' read -r name req up sb sh gb gh why; do
	get "$req" "$T/b2.$name"
	if [ "$name" = tee ]; then
		check_eq "$name: nothing stored for the TDX path (upstreams dead: 503)" 503 "$HTTP_CODE"
		continue
	fi
	check_bytes "$name: served from the cache, the genuine bytes" "$gb" "$T/b2.$name"
	assert "$name: never the swapped bytes" '! cmp -s "$T/b2.$name" "$sb"'
done <<EOF
$CASES
EOF
stapled_stop

# ---- the same swaps inside a bundle: verify and import reject them with the reason --------

ctl -C "$T/c_b" export --out "$T/b.jsonl"
check_eq "export: exit 0" 0 "$CTL_RC"
check_eq "export: 7 PCCS entries" 7 "$(grep -c '"kind":"pccs"' "$T/b.jsonl")"
ctl -C "$T/none" verify "$T/b.jsonl"
check_eq "verify of the genuine bundle: exit 0" 0 "$CTL_RC"

line_of() { grep "\"key\":\"$(hexstr "$1")\"" "$T/b.jsonl"; }
fld() { printf '%s\n' "$1" | jq -r ".$2"; }
# swap_into OUT KEY-PATH FROM-PATH: KEY-PATH's entry carrying FROM-PATH's response and headers.
swap_into() {
	local _to _from
	_to=$(line_of "$2"); _from=$(line_of "$3")
	[ -n "$_to" ] && [ -n "$_from" ] || die "no entry for $2 or $3 in the bundle"
	printf '%s\n' "$_to" | jq -c --arg r "$(fld "$_from" response)" \
	    --arg h "$(fld "$_from" headers)" '.response = $r | .headers = $h' | seal "$1"
}
swap_into "$T/x_crl.jsonl" "$V4/pckcrl?ca=platform&encoding=der" "$V4/pckcrl?ca=processor&encoding=der"
swap_into "$T/x_nums.jsonl" "$V4/tcbevaluationdatanumbers" "$TDX4/tcbevaluationdatanumbers"
swap_into "$T/x_eval19.jsonl" "$V4/tcb?fmspc=00906ED50000&tcbEvaluationDataNumber=19" \
    "$V4/tcb?fmspc=00906ED50000&update=standard"
# The SGX TCB info under the TDX path's key and request.
TEE_PATH="$TDX4/tcb?fmspc=00906ED50000&update=standard"
line_of "$V4/tcb?fmspc=00906ED50000&update=standard" | jq -c --arg k "$(hexstr "$TEE_PATH")" \
    --arg q "$(printf %s "$TEE_PATH" | base64 -w0)" '.key = $k | .request = $q' | seal "$T/x_tee.jsonl"
WHY_crl="a processor CA CRL filed under platform"
WHY_nums="id TDX filed under a path for SGX"
WHY_eval19="tcbEvaluationDataNumber 17 filed under 19"
WHY_tee="id SGX filed under a path for TDX"

# A cache holding the genuine entries, and an empty one.
ctl -C "$T/c_i" import "$T/b.jsonl"
check_eq "import of the genuine bundle: exit 0" 0 "$CTL_RC"
before=$(list_of "$T/c_i")
for x in crl nums eval19 tee; do
	eval "why=\$WHY_$x"
	ctl -C "$T/none" verify "$T/x_$x.jsonl"
	check_eq "bundle $x: verify exits 1" 1 "$CTL_RC"
	check "bundle $x: verify names the reason ($why)" grep -qF "answers another request: $why" "$T/ctl.out"
	ctl -C "$T/c_i" import "$T/x_$x.jsonl"
	check_eq "bundle $x: import exits 1" 1 "$CTL_RC"
	check "bundle $x: import rejects the entry with the reason" \
	    sh -c "grep '^rejected ' '$T/ctl.out' | grep -qF 'answers another request: $why'"
	check_eq "bundle $x: the cache is unchanged" "$before" "$(list_of "$T/c_i")"
	ctl -C "$T/c_e" import "$T/x_$x.jsonl"
	check_eq "bundle $x: import into an empty cache stores nothing" 0 \
	    "$(list_of "$T/c_e" | grep -c pccs)"
done

it_done
