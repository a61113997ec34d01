#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# AMD KDS answers swapped between questions by an upstream: genuine, correctly signed
# bytes for another product or another chip (Genoa's cert_chain and CRL for Milan's,
# another chip's VCEK) are refused, counted and logged, the next upstream's genuine
# answer is served and stored, the swapped bytes never are; the same swaps inside a
# bundle are rejected by staplectl import and verify with the reason, the store unchanged.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_kds_swap
need_ctl
need_cmd base64 sha256sum sed cmp
# The CRLs are real and dated: Milan's 2025-05-06 .. 2026-05-12, Genoa's 2024-10-23 .. 2025-11-03.
need_faketime
AV=$top_srcdir/tests/vectors/amd
need_vectors "$AV" vcek_milan.der vcek.testcer cert_chain_milan ask_ark_genoa.pem derived/Milan.crl.der \
    derived/Genoa.crl.der
fake_off=$(secs_until 2025-06-01T00:00:00Z)
STAPLED_WRAP=$(faketime_env "$fake_off")

H=$T/hdrs; mkdir -p "$H"
printf 'Content-Type: application/x-pem-file\n' >"$H/pem"
printf 'Content-Type: application/pkix-crl\n' >"$H/crl"
printf 'Content-Type: application/pkix-cert\n' >"$H/cert"
hw=$(vcek_ext "$AV/vcek_milan.der" 1.3.6.1.4.1.3704.1.4 | tr 'A-F' 'a-f')
other=$(vcek_ext "$AV/vcek.testcer" 1.3.6.1.4.1.3704.1.4 | tr 'A-F' 'a-f')
check "precondition: vcek.testcer is another chip's VCEK" [ -n "$other" -a "$other" != "$hw" ]
U_VCEK="/vcek/v1/Milan/$hw?blSPL=3&teeSPL=0&snpSPL=8&ucodeSPL=115"
U_CHAIN=/vcek/v1/Milan/cert_chain
U_CRL=/vcek/v1/Milan/crl

# S swaps: Genoa's genuine cert_chain and CRL for Milan's, another chip's VCEK for this one.
dir_put "$T/S" "$U_CHAIN" 200 "$AV/ask_ark_genoa.pem" "$H/pem"
dir_put "$T/S" "$U_CRL" 200 "$AV/derived/Genoa.crl.der" "$H/crl"
dir_put "$T/S" "$U_VCEK" 200 "$AV/vcek.testcer" "$H/cert"
# G is genuine.
dir_put "$T/G" "$U_CHAIN" 200 "$AV/cert_chain_milan" "$H/pem"
dir_put "$T/G" "$U_CRL" 200 "$AV/derived/Milan.crl.der" "$H/crl"
dir_put "$T/G" "$U_VCEK" 200 "$AV/vcek_milan.der" "$H/cert"
upstream_start US s --mode "dir:$T/S"
upstream_start UG g --mode "dir:$T/G"
# No hedging: every swapped answer is judged before the second upstream is asked.
printf '{"amd_kds": {"hedge_ms": 10000}}\n' >"$T/nohedge.json"

# ---- 1. the daemon: swapped answers refused, the genuine ones served and stored -----------

# One daemon per swap (same store): two refusals in a row rest an upstream for a while.
for t in "chain:$U_CHAIN:cert_chain_milan:cert_chain carries ARK-Genoa, not ARK-Milan" \
    "crl:$U_CRL:derived/Milan.crl.der:CRL issued by ARK-Genoa, not ARK-Milan" \
    "vcek:$U_VCEK:vcek_milan.der:mismatch: HWID is not the one asked for"; do
	n=${t%%:*}; rest=${t#*:}; p=${rest%%:*}; rest=${rest#*:}; good=${rest%%:*}; why=${rest#*:}
	STAPLED_CACHE=$T/c1 stapled_start "d1_$n" -f "$T/nohedge.json" \
	    --kds-upstream "http://127.0.0.1:$US" --kds-upstream "http://127.0.0.1:$UG"
	metrics_get "$T/m0_$n"
	get "$p" "$T/d1.$n"
	check_eq "$n: served (the second upstream's answer)" 200 "$HTTP_CODE"
	check_bytes "$n: the genuine Milan bytes, not the swapped ones" "$AV/$good" "$T/d1.$n"
	check_eq "$n: the swapping upstream was asked once, then the genuine one once" "1 1" \
	    "$(dir_hits "$T/S" "$p") $(dir_hits "$T/G" "$p")"
	check "$n: the refusal is logged with the upstream and the reason: $why" \
	    sh -c "grep -F 'kds: refused an answer from 127.0.0.1:$US: ' '$T/d1_$n.log' |
		grep -qF '$why'"
	metrics_get "$T/m1_$n"
	check_eq "$n: the refusal counted in stapled_rejected_total{kind=\"kds\"}" 1 \
	    "$(( $(metric_sum "$T/m1_$n" '^stapled_rejected_total\{kind="kds"\}') - \
	    $(metric_sum "$T/m0_$n" '^stapled_rejected_total\{kind="kds"\}') ))"
	stapled_stop
done

# What was stored is the genuine answer: with both upstreams dead, the cache serves it.
DEAD=$(dead_port 1)
STAPLED_CACHE=$T/c1 stapled_start d1b --kds-upstream "http://127.0.0.1:$DEAD"
get "$U_CHAIN" "$T/d1b.chain"
check_bytes "stored: Milan's cert_chain, not Genoa's" "$AV/cert_chain_milan" "$T/d1b.chain"
get "$U_CRL" "$T/d1b.crl"
check_bytes "stored: Milan's CRL, not Genoa's" "$AV/derived/Milan.crl.der" "$T/d1b.crl"
get "$U_VCEK" "$T/d1b.vcek"
check_bytes "stored: this chip's VCEK, not the other chip's" "$AV/vcek_milan.der" "$T/d1b.vcek"
stapled_stop

# The swapping upstream alone: 503, nothing stored.
STAPLED_CACHE=$T/c_s stapled_start ds --kds-upstream "http://127.0.0.1:$US"
get "$U_CHAIN" "$T/ds.chain"
check_eq "only the swapping upstream: Genoa's chain for Milan's is 503" 503 "$HTTP_CODE"
assert "only the swapping upstream: Genoa's chain is not served" '! cmp -s "$T/ds.chain" "$AV/ask_ark_genoa.pem"'
stapled_stop
check_eq "only the swapping upstream: the store holds no KDS entry" 0 \
    "$(list_of "$T/c_s" | grep -c ' kds ' || true)"

# ---- 2. the same swaps inside a bundle: staplectl import and verify reject them -------------

ctl -C "$T/c1" export --out "$T/b.jsonl"
check_eq "export of the genuine entries: exit 0" 0 "$CTL_RC"
ctl -C "$T/c2" import "$T/b.jsonl"
check_eq "the genuine bundle imports" 0 "$CTL_RC"
L_CHAIN=$(grep "\"key\":\"$(hexstr "$U_CHAIN")\"" "$T/b.jsonl")
L_CRL=$(grep "\"key\":\"$(hexstr "$U_CRL")\"" "$T/b.jsonl")
L_VCEK=$(grep "\"key\":\"$(hexstr "$U_VCEK")\"" "$T/b.jsonl")
[ -n "$L_CHAIN" ] && [ -n "$L_CRL" ] && [ -n "$L_VCEK" ] || die "the bundle lacks a KDS entry"
entry_with "$L_CHAIN" response "$(base64 -w0 "$AV/ask_ark_genoa.pem")" | seal "$T/r_chain.jsonl"
entry_with "$L_CRL" response "$(base64 -w0 "$AV/derived/Genoa.crl.der")" | seal "$T/r_crl.jsonl"
entry_with "$L_VCEK" response "$(base64 -w0 "$AV/vcek.testcer")" | seal "$T/r_vcek.jsonl"

before=$(list_of "$T/c2")
for t in "chain:cert_chain carries ARK-Genoa, not ARK-Milan" \
    "crl:CRL issued by ARK-Genoa, not ARK-Milan" "vcek:mismatch: HWID is not the one asked for"; do
	n=${t%%:*}; why=${t#*:}
	ctl -C "$T/c2" import "$T/r_$n.jsonl"
	check_eq "bundle with the $n swapped: import exits 1" 1 "$CTL_RC"
	check "bundle with the $n swapped: import says rejected, $why" \
	    grep -qF "$why" "$T/ctl.out"
	note "$n: $(grep '^rejected' "$T/ctl.out" | head -1 | cut -c1-60)...$(grep -o ': [a-z]*: .*' "$T/ctl.out" | head -1)"
	check_eq "bundle with the $n swapped: the store is unchanged" "$before" "$(list_of "$T/c2")"
	ctl -C "$T/none" verify "$T/r_$n.jsonl"
	check_eq "bundle with the $n swapped: verify exits 1" 1 "$CTL_RC"
	check "bundle with the $n swapped: verify says rejected, $why" \
	    sh -c "grep '^rejected kds ' '$T/ctl.out' | grep -qF '$why'"
done
ctl -C "$T/c3" import "$T/r_chain.jsonl"
check_eq "Genoa's chain for Milan's into an empty store: nothing stored" 0 \
    "$(list_of "$T/c3" | grep -c ' kds ' || true)"

bg_kill "$US_PID"
bg_kill "$UG_PID"
it_done
