#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Air gap for Intel and AMD collateral: manifests from a real TDX quote and SNP report,
# export from a warmed daemon, import into one with no upstream (byte-identical
# answers), fetch --manifest (upstreams from flags or a -f config), prefetch --quote and
# --snp-report, and tampered or swapped entries rejected with the cache unchanged.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_airgap_collateral
need_ctl
need_cmd base64 sha256sum sed cmp
need_faketime
IV=$top_srcdir/tests/vectors/intel
AV=$top_srcdir/tests/vectors/amd
need_vectors "$IV" tdx_quote sgx_quote derived/tdx_tcb_info.body.json derived/tdx_qe_identity.body.json \
    derived/pckcrl_platform.der derived/pckcrl_processor.der derived/IntelSGXRootCA.crl.hex
need_vectors "$AV" report_milan.hex attestation.bin vcek_milan.der vcek.testcer cert_chain_milan \
    derived/Milan.crl.der

# Inside the teepot PCS captures' window (2025-05-27 .. 2025-06-26), as t_pccs.sh.
fake_off=$(secs_until 2025-06-01T00:00:00Z)
STAPLED_WRAP=$(faketime_env "$fake_off")

# ---- 1. manifest from a TDX quote: the FMSPC its PCK certificate carries ------------

# The PCK certificate, cut out of the quote's certification data (PEM text).
LC_ALL=C tr -c '\n -~' '\n' <"$IV/tdx_quote" |
    awk '/-----BEGIN CERTIFICATE-----/ { p = 1; sub(/.*-----BEGIN/, "-----BEGIN") }
	p { print } /-----END CERTIFICATE-----/ { exit }' >"$T/pck.pem"
openssl x509 -in "$T/pck.pem" -noout 2>/dev/null || die "no PCK certificate in the TDX quote"
# FMSPC: inside the SGX extension 1.2.840.113741.1.13.1, OID ...13.1.4, OCTET STRING.
off=$(openssl asn1parse -in "$T/pck.pem" | awk '/:1.2.840.113741.1.13.1$/ { want = 1; next }
	want && /OCTET STRING/ { split($1, a, ":"); print a[1]; exit }')
[ -n "$off" ] || die "the PCK certificate has no SGX extension"
want_fmspc=$(openssl asn1parse -in "$T/pck.pem" -strparse "$off" |
    awk '/:1.2.840.113741.1.13.1.4$/ { want = 1; next }
	want && /OCTET STRING/ { sub(/.*\[HEX DUMP\]:/, ""); print toupper($0); exit }')
[ ${#want_fmspc} = 12 ] || die "no FMSPC in the PCK certificate (got '$want_fmspc')"
want_ca=$(openssl x509 -in "$T/pck.pem" -noout -issuer | sed -n 's/.*CN *= *Intel SGX PCK \([A-Za-z]*\) CA.*/\1/p' |
    tr 'A-Z' 'a-z')
note "TDX quote's PCK certificate: FMSPC $want_fmspc, $want_ca CA"

ctl -C "$T/none" manifest --quote "$IV/tdx_quote" --out "$T/m_tdx.json"
check_eq "manifest --quote (TDX): exit 0" 0 "$CTL_RC"
check "manifest --quote (TDX): TDX TCB info for the PCK certificate's FMSPC" \
    grep -qF "\"/tdx/certification/v4/tcb?fmspc=$want_fmspc&update=standard\"" "$T/m_tdx.json"
check "manifest --quote (TDX): the TD QE identity" \
    grep -qF '"/tdx/certification/v4/qe/identity?update=standard"' "$T/m_tdx.json"
check "manifest --quote (TDX): the PCK CRL of the certificate's issuer ($want_ca)" \
    grep -qF "\"/sgx/certification/v4/pckcrl?ca=$want_ca&encoding=der\"" "$T/m_tdx.json"
check "manifest --quote (TDX): the root CA CRL" \
    grep -qF '"/sgx/certification/v4/rootcacrl"' "$T/m_tdx.json"
check "manifest --quote (TDX): the TCB evaluation data numbers" \
    grep -qF '"/tdx/certification/v4/tcbevaluationdatanumbers"' "$T/m_tdx.json"
# The same as hex text.
od -An -v -tx1 "$IV/tdx_quote" | tr -d ' ' >"$T/tdx_quote.hex"
ctl -C "$T/none" manifest --quote "$T/tdx_quote.hex" --out "$T/m_tdx_hex.json"
check_eq "manifest --quote (hex text): the same paths" \
    "$(grep certification "$T/m_tdx.json")" "$(grep certification "$T/m_tdx_hex.json")"
ctl -C "$T/none" manifest --quote "$IV/sgx_quote" --out "$T/m_sgx.json"
check "manifest --quote (SGX v3): SGX TCB info and QE identity" \
    sh -c "grep -q '\"/sgx/certification/v4/tcb?fmspc=[0-9A-F]\{12\}&update=standard\"' '$T/m_sgx.json' &&
	grep -qF '\"/sgx/certification/v4/qe/identity?update=standard\"' '$T/m_sgx.json'"
head -c 1000 "$IV/tdx_quote" >"$T/short_quote"
ctl -C "$T/none" manifest --quote "$T/short_quote"
check_eq "manifest --quote on a truncated quote: exit 1" 1 "$CTL_RC"

# ---- 2. manifest from an SNP report: the chip and TCB it carries ----------------------

for pair in "report_milan.hex:vcek_milan.der" "attestation.bin:vcek.testcer"; do
	rep=${pair%%:*}; vek=${pair#*:}
	url=$(vcek_url "$AV/$vek" Milan)
	ctl -C "$T/none" manifest --snp-report "$AV/$rep" --product Milan --out "$T/m_$rep.json"
	check_eq "manifest --snp-report $rep: exit 0" 0 "$CTL_RC"
	check "manifest --snp-report $rep: the VCEK of its chip ID and reported TCB (as $vek names them)" \
	    grep -qF "\"$url\"" "$T/m_$rep.json"
	check "manifest --snp-report $rep: Milan cert_chain and crl" \
	    sh -c "grep -qF '\"/vcek/v1/Milan/cert_chain\"' '$T/m_$rep.json' &&
		grep -qF '\"/vcek/v1/Milan/crl\"' '$T/m_$rep.json'"
done
ctl -C "$T/none" manifest --snp-report "$AV/report_milan.hex"
check_eq "manifest --snp-report of a v2 report without --product: usage (exit 2)" 2 "$CTL_RC"
check "manifest --snp-report without --product: says to give it" grep -q -- "--product" "$T/ctl.out"

# ---- 3. a daemon warmed with collateral --------------------------------------------------

D=$IV/derived
V4=/sgx/certification/v4
TDX4=/tdx/certification/v4
H=$T/hdrs; mkdir -p "$H"
hdrs "$H/tdx_tcb" application/json TCB-Info-Issuer-Chain "$D/tdx_tcb_info.TCB-Info-Issuer-Chain.txt"
hdrs "$H/tdx_qe" application/json SGX-Enclave-Identity-Issuer-Chain "$D/tdx_qe_identity.SGX-Enclave-Identity-Issuer-Chain.txt"
hdrs "$H/crl_plat" application/pkix-crl SGX-PCK-CRL-Issuer-Chain "$D/pckcrl_platform.SGX-PCK-CRL-Issuer-Chain.txt"
hdrs "$H/crl_proc" application/pkix-crl SGX-PCK-CRL-Issuer-Chain "$D/pckcrl_processor.SGX-PCK-CRL-Issuer-Chain.txt"
hdrs "$H/root_crl" application/pkix-crl
hdrs "$H/pem" application/x-pem-file
hdrs "$H/crl" application/pkix-crl
hdrs "$H/cert" application/pkix-cert
U_TDX_TCB="$TDX4/tcb?fmspc=00806F050000&update=standard"
U_TDX_QE="$TDX4/qe/identity?update=standard"
hw=$(vcek_ext "$AV/vcek_milan.der" 1.3.6.1.4.1.3704.1.4 | tr 'A-F' 'a-f')
U_VCEK="/vcek/v1/Milan/$hw?blSPL=3&teeSPL=0&snpSPL=8&ucodeSPL=115"
dir_put "$T/A" "$U_TDX_TCB" 200 "$D/tdx_tcb_info.body.json" "$H/tdx_tcb"
dir_put "$T/A" "$U_TDX_QE" 200 "$D/tdx_qe_identity.body.json" "$H/tdx_qe"
dir_put "$T/A" "$V4/pckcrl?ca=platform&encoding=der" 200 "$D/pckcrl_platform.der" "$H/crl_plat"
dir_put "$T/A" "$V4/pckcrl?ca=processor&encoding=der" 200 "$D/pckcrl_processor.der" "$H/crl_proc"
dir_put "$T/A" "$V4/rootcacrl" 200 "$D/IntelSGXRootCA.crl.hex" "$H/root_crl"
dir_put "$T/A" /vcek/v1/Milan/cert_chain 200 "$AV/cert_chain_milan" "$H/pem"
dir_put "$T/A" /vcek/v1/Milan/crl 200 "$AV/derived/Milan.crl.der" "$H/crl"
dir_put "$T/A" "$U_VCEK" 200 "$AV/vcek_milan.der" "$H/cert"

# The TDX verifier's sequence and the SNP verifier's, as clients send them.
SEQ="tdx_tcb $TDX4/tcb?fmspc=00806F050000
tdx_qe $TDX4/qe/identity
crl_plat $V4/pckcrl?ca=platform
crl_plat_der $V4/pckcrl?ca=platform&encoding=der
crl_proc $V4/pckcrl?ca=processor&encoding=der
root_crl $V4/rootcacrl
kds_chain /vcek/v1/Milan/cert_chain
kds_crl /vcek/v1/Milan/crl
kds_vcek $U_VCEK"
run_seq() {
	local _tag=$1 _n _p
	while read -r _n _p; do
		get "$_p" "$T/$_tag.$_n"
		[ "$HTTP_CODE" = 200 ] || fail "$_tag: $_p: HTTP $HTTP_CODE"
		# The headers a verifier reads, without the ones that change per answer
		# (max-age and Expires count down to the entry's next refresh; Cache-Status
		# says how each was served).
		grep -iv '^\(date\|content-length\|connection\|x-\|age\|server\|cache-control\|cache-status\|expires\):' "$T/$_tag.$_n.hdr" |
		    tr -d '\r' | sort >"$T/$_tag.$_n.h"
	done <<EOF
$SEQ
EOF
}

upstream_start UA a --mode "dir:$T/A"
STAPLED_CACHE=$T/c1 stapled_start d1 --pccs-upstream "http://127.0.0.1:$UA" \
    --kds-upstream "http://127.0.0.1:$UA"
run_seq warm
check_bytes "warm: TDX TCB info is the vendor's bytes" "$D/tdx_tcb_info.body.json" "$T/warm.tdx_tcb"
check_bytes "warm: the VCEK is KDS's bytes" "$AV/vcek_milan.der" "$T/warm.kds_vcek"
stapled_stop
bg_kill "$UA_PID"

ctl -C "$T/c1" list
check_eq "the warmed cache: 5 PCCS and 3 KDS entries" "5 3" \
    "$(grep -c ' pccs ' "$T/ctl.out") $(grep -c ' kds ' "$T/ctl.out")"
ctl -C "$T/c1" --json show "$(hexstr "$U_TDX_TCB")"
check "show: the TDX TCB info decoded (FMSPC, evaluation number) and verifying now" \
    sh -c "grep -q '\"fmspc\": \"00806F050000\"' '$T/ctl.out' &&
	grep -q '\"tcb_evaluation_data_number\": 17' '$T/ctl.out' &&
	grep -q '\"verifies_now\": \"ok\"' '$T/ctl.out'"
ctl -C "$T/c1" --json show "$(hexstr "$U_VCEK")"
check "show: the VCEK's hwid and TCB, verifying now" \
    sh -c "grep -q '\"hwid\": \"$hw\"' '$T/ctl.out' && grep -q '\"verifies_now\": \"ok\"' '$T/ctl.out'"

# ---- 4. export, import into a daemon with no upstream ----------------------------------

ctl -C "$T/c1" export --out "$T/b.jsonl"
check_eq "export: exit 0" 0 "$CTL_RC"
check_eq "export: 8 entries (pccs 5, kds 3)" "5 3" \
    "$(grep -c '"kind":"pccs"' "$T/b.jsonl") $(grep -c '"kind":"kds"' "$T/b.jsonl")"
ctl -C "$T/none" verify "$T/b.jsonl"
check_eq "verify: exit 0" 0 "$CTL_RC"
check_eq "verify: every entry ok" 8 "$(grep -c '^ok \(pccs\|kds\) ' "$T/ctl.out")"
ctl -C "$T/c2" import "$T/b.jsonl"
check_eq "import into an empty cache: exit 0" 0 "$CTL_RC"
check_eq "import: 8 imported" 8 "$(grep -c '^imported ' "$T/ctl.out")"
ctl -C "$T/c2" import "$T/b.jsonl"
check_eq "import again: every entry kept" 8 "$(grep -c '^kept ' "$T/ctl.out")"

DEAD1=$(dead_port 1); DEAD2=$(dead_port 2)
STAPLED_CACHE=$T/c2 stapled_start d2 --pccs-upstream "http://127.0.0.1:$DEAD1" \
    --kds-upstream "http://127.0.0.1:$DEAD2"
run_seq air
stapled_stop
while read -r n p; do
	check "no upstream, imported cache: $p byte-identical to the warm daemon's answer" \
	    cmp -s "$T/warm.$n" "$T/air.$n"
	check "no upstream, imported cache: $p headers as the warm daemon's" \
	    cmp -s "$T/warm.$n.h" "$T/air.$n.h"
done <<EOF
$SEQ
EOF
check "the imported TCB info answer carries TCB-Info-Issuer-Chain" \
    grep -qi '^TCB-Info-Issuer-Chain: ' "$T/air.tdx_tcb.h"

# ---- 5. tampered and swapped entries: rejected, the cache unchanged -------------------------

L_TCB=$(grep '"kind":"pccs"' "$T/b.jsonl" | grep "\"key\":\"$(hexstr "$U_TDX_TCB")\"")
[ -n "$L_TCB" ] || die "no TDX TCB info entry in the bundle"
printf '%s' "$(field "$L_TCB" response)" | base64 -d >"$T/tcb.body"
cmp -s "$T/tcb.body" "$D/tdx_tcb_info.body.json" || fail "the exported body is the vendor's bytes"
sed 's/"issueDate":"2025-05-27T19:31:43Z"/"issueDate":"2025-05-27T19:31:42Z"/' "$T/tcb.body" >"$T/tcb.tampered"
check_eq "precondition: the tampered body differs in one byte" 1 "$(cmp -l "$T/tcb.body" "$T/tcb.tampered" | wc -l)"
entry_with "$L_TCB" response "$(base64 -w0 "$T/tcb.tampered")" | seal "$T/r_tamper.jsonl"
entry_with "$L_TCB" key "$(hexstr "$U_TDX_QE")" | seal "$T/r_swap.jsonl"
# Key and request both moved to another FMSPC: signed, but not an answer to that question.
OTHER="$TDX4/tcb?fmspc=00806F050001&update=standard"
entry_with "$(entry_with "$L_TCB" key "$(hexstr "$OTHER")")" request "$(printf %s "$OTHER" | base64 -w0)" |
    seal "$T/r_other.jsonl"
L_VCEK=$(grep "\"key\":\"$(hexstr "$U_VCEK")\"" "$T/b.jsonl")
printf '%s' "$(field "$L_VCEK" response)" | base64 -d >"$T/vcek.der"
n=$(wc -c <"$T/vcek.der"); b=$(tail -c 1 "$T/vcek.der" | od -An -tu1 | tr -d ' ')
{ head -c $((n - 1)) "$T/vcek.der"; printf "\\$(printf %03o $((b ^ 1)))"; } >"$T/vcek.flip"
entry_with "$L_VCEK" response "$(base64 -w0 "$T/vcek.flip")" | seal "$T/r_vcek.jsonl"

before=$(list_of "$T/c2")
for r in tamper swap other vcek; do
	ctl -C "$T/c2" import "$T/r_$r.jsonl"
	check_eq "$r: import exits 1" 1 "$CTL_RC"
	check "$r: the entry is reported rejected" grep -q '^rejected ' "$T/ctl.out"
	note "$r: $(grep '^rejected' "$T/ctl.out" | head -1 | cut -c1-200)"
	check_eq "$r: the cache is unchanged" "$before" "$(list_of "$T/c2")"
done
ctl -C "$T/c2" import "$T/r_tamper.jsonl"
check "tamper: the reason is the signature" grep -q 'signature' "$T/ctl.out"
ctl -C "$T/c2" import "$T/r_swap.jsonl"
check "swap: the reason names the swapped key" grep -q 'swapped' "$T/ctl.out"
ctl -C "$T/c2" import "$T/r_other.jsonl"
check "another FMSPC's key and request: refused as an answer to another request" \
    grep -q 'answers another request' "$T/ctl.out"
ctl -C "$T/c3" import "$T/r_tamper.jsonl"
check_eq "tamper into an empty cache: nothing stored" 0 "$(list_of "$T/c3" | grep -c pccs)"

# ---- 6. fetch --manifest from the upstreams, into a bundle ----------------------------------

upstream_start UF f --mode "dir:$T/A"
cat >"$T/m_fetch.json" <<EOF
{"format":"stapled-manifest","version":1,"ocsp":[],"rim":[],
 "pccs":["$U_TDX_TCB","$U_TDX_QE","$V4/pckcrl?ca=platform&encoding=der","$V4/rootcacrl"],
 "kds":["$U_VCEK","/vcek/v1/Milan/cert_chain","/vcek/v1/Milan/crl"]}
EOF
ctl -C "$T/none" fetch --manifest "$T/m_fetch.json" --out "$T/f.jsonl" \
    --pccs-upstream "http://127.0.0.1:$DEAD1" --pccs-upstream "http://127.0.0.1:$UF" \
    --kds-upstream "http://127.0.0.1:$UF/vcek/v1"
check_eq "fetch --manifest (first PCCS upstream dead): exit 0" 0 "$CTL_RC"
check_eq "fetch: 4 PCCS and 3 KDS entries" "4 3" \
    "$(grep -c '"kind":"pccs"' "$T/f.jsonl") $(grep -c '"kind":"kds"' "$T/f.jsonl")"
ctl -C "$T/c4" import "$T/f.jsonl"
check_eq "import of the fetched bundle: 7 imported" 7 "$(grep -c '^imported ' "$T/ctl.out")"
STAPLED_CACHE=$T/c4 stapled_start d4 --pccs-upstream "http://127.0.0.1:$DEAD1" \
    --kds-upstream "http://127.0.0.1:$DEAD2"
get "$TDX4/tcb?fmspc=00806F050000" "$T/f.tdx_tcb"
check "fetched, imported, served with the upstream dead: TDX TCB info byte-identical" \
    cmp -s "$T/warm.tdx_tcb" "$T/f.tdx_tcb"
check_eq "fetched: TCB-Info-Issuer-Chain kept" "$(cat "$D/tdx_tcb_info.TCB-Info-Issuer-Chain.txt")" \
    "$(header "$T/f.tdx_tcb.hdr" TCB-Info-Issuer-Chain)"
get "$U_VCEK" "$T/f.vcek"
check_bytes "fetched, imported: the VCEK served" "$AV/vcek_milan.der" "$T/f.vcek"
stapled_stop
# A tampered answer upstream: refused by fetch, left out, exit 1.
dir_put "$T/A" "$U_TDX_TCB" 200 "$T/tcb.tampered" "$H/tdx_tcb"
ctl -C "$T/none" fetch --manifest "$T/m_fetch.json" --out "$T/f2.jsonl" \
    --pccs-upstream "http://127.0.0.1:$UF" --kds-upstream "http://127.0.0.1:$UF"
check_eq "fetch with a tampered TCB info upstream: exit 1" 1 "$CTL_RC"
check_eq "fetch: the tampered answer is left out" 3 "$(grep -c '"kind":"pccs"' "$T/f2.jsonl")"

# ---- 7. fetch with the upstreams of a -f config; flags win over it ---------------------------

dir_put "$T/A" "$U_TDX_TCB" 200 "$D/tdx_tcb_info.body.json" "$H/tdx_tcb"
# entries_of BUNDLE: its entries without where they came from (the URLs differ by design).
entries_of() { grep '"type":"entry"' "$1" | sed 's/"source":"[^"]*",\{0,1\}//'; }
# The shapes stapled takes: a list of a URL and an object, and a lone URL; API suffixes as bases.
cat >"$T/conf_up.json" <<EOF
{"pccs":{"upstreams":["http://127.0.0.1:$DEAD1",
    {"url":"http://127.0.0.1:$UF/sgx/certification/v4","name":"pccs-f","verify_nonce":false}]},
 "amd_kds":{"upstreams":"http://127.0.0.1:$UF/vcek/v1"}}
EOF
ctl -C "$T/none" -f "$T/conf_up.json" fetch --manifest "$T/m_fetch.json" --out "$T/fc.jsonl"
check_eq "fetch with pccs.upstreams and amd_kds.upstreams from -f (no flags): exit 0" 0 "$CTL_RC"
[ "$CTL_RC" = 0 ] || note "$(grep -v '127.0.0.1:'"$DEAD1" "$T/ctl.out")"
entries_of "$T/f.jsonl" >"$T/f.entries"
entries_of "$T/fc.jsonl" >"$T/fc.entries"
check "fetch from the config's upstreams: the same entries as with the flags" \
    cmp -s "$T/f.entries" "$T/fc.entries"
check "fetch from the config's upstreams: the KDS entries came from amd_kds.upstreams" \
    grep -qF "\"source\":\"http://127.0.0.1:$UF/vcek/v1\"" "$T/fc.jsonl"
cat >"$T/conf_dead.json" <<EOF
{"pccs":{"upstreams":"http://127.0.0.1:$DEAD1"},"amd_kds":{"upstreams":["http://127.0.0.1:$DEAD2"]}}
EOF
ctl -C "$T/none" -f "$T/conf_dead.json" fetch --manifest "$T/m_fetch.json" --out "$T/fo.jsonl" \
    --pccs-upstream "http://127.0.0.1:$UF" --kds-upstream "http://127.0.0.1:$UF"
check_eq "fetch: --pccs-upstream and --kds-upstream win over a config of dead upstreams: exit 0" 0 "$CTL_RC"
entries_of "$T/fo.jsonl" >"$T/fo.entries"
check "fetch with the flags over the config: the same entries" \
    cmp -s "$T/f.entries" "$T/fo.entries"
ctl -C "$T/none" -f "$T/conf_up.json" fetch --manifest "$T/m_fetch.json" --out "$T/fd.jsonl" \
    --pccs-upstream "http://127.0.0.1:$DEAD1"
check_eq "fetch: a dead --pccs-upstream replaces the config's (not added to it): exit 1" 1 "$CTL_RC"
check_eq "fetch: no PCCS entry from the dead flag, the KDS ones from the config" "0 3" \
    "$(grep -c '"kind":"pccs"' "$T/fd.jsonl") $(grep -c '"kind":"kds"' "$T/fd.jsonl")"
printf '{"amd_kds":{"upstreams":[]}}\n' >"$T/conf_bad.json"
ctl -C "$T/none" -f "$T/conf_bad.json" fetch --manifest "$T/m_fetch.json" --out "$T/fb.jsonl"
check_eq "an empty amd_kds.upstreams: a configuration error (exit 2), as stapled says" 2 "$CTL_RC"
printf '{"pccs":{"upstreams":[{"name":"x"}]}}\n' >"$T/conf_bad.json"
ctl -C "$T/none" -f "$T/conf_bad.json" fetch --manifest "$T/m_fetch.json" --out "$T/fb.jsonl"
check_eq "a pccs upstream object without \"url\": exit 2" 2 "$CTL_RC"

# ---- 8. prefetch --snp-report: the VCEK, chain and CRL straight into the cache ------------

cat >"$T/conf_pre.json" <<EOF
{"pccs":{"upstreams":"http://127.0.0.1:$UF"},"amd_kds":{"upstreams":[{"url":"http://127.0.0.1:$UF"}]}}
EOF
ctl -C "$T/c5" -f "$T/conf_pre.json" prefetch --snp-report "$AV/report_milan.hex" --product Milan
check_eq "prefetch --snp-report into an empty cache: exit 0" 0 "$CTL_RC"
check_eq "prefetch --snp-report: the VCEK, cert_chain and crl stored" 3 "$(list_of "$T/c5" | grep -c ' kds ')"
ctl -C "$T/c5" -f "$T/conf_pre.json" prefetch --snp-report "$AV/report_milan.hex" --product Milan
check "prefetch again: the cache's entries are kept, as import keeps them" \
    grep -q 'prefetch: 0 entries stored, 3 kept, 0 failed' "$T/ctl.out"
ctl -C "$T/c5" -f "$T/conf_pre.json" prefetch --snp-report "$AV/report_milan.hex"
check_eq "prefetch --snp-report of a v2 report without --product: exit 2" 2 "$CTL_RC"
STAPLED_CACHE=$T/c5 stapled_start d5 --pccs-upstream "http://127.0.0.1:$DEAD1" \
    --kds-upstream "http://127.0.0.1:$DEAD2"
for n in kds_chain kds_crl kds_vcek; do
	p=$(printf '%s\n' "$SEQ" | awk -v n="$n" '$1 == n { print $2 }')
	get "$p" "$T/p.$n"
	check_eq "prefetched, upstream dead: $p: HTTP 200" 200 "$HTTP_CODE"
	check "prefetched, upstream dead: $p byte-identical to the warm daemon's answer" \
	    cmp -s "$T/warm.$n" "$T/p.$n"
done
stapled_stop

# ---- 9. prefetch --quote: the Intel collateral of a TDX quote ----------------------------

# dcap-qvl's collateral for this quote (FMSPC B0C06F000000, Platform CA) rebuilt as PCS
# serves it, and teepot's TDX evaluation numbers: all valid on 2025-06-20.
if command -v jq >/dev/null 2>&1; then
	Q=$IV/tdx_quote_collateral.json
	B=$T/B; mkdir -p "$B"
	jq -j '"{\"tcbInfo\":" + .tcb_info + ",\"signature\":\"" + .tcb_info_signature + "\"}"' "$Q" >"$B/tcb"
	jq -j '"{\"enclaveIdentity\":" + .qe_identity + ",\"signature\":\"" + .qe_identity_signature + "\"}"' \
	    "$Q" >"$B/qe"
	printf "$(jq -j .pck_crl "$Q" | sed 's/../\\x&/g')" >"$B/crl"
	jq -j .root_ca_crl "$Q" >"$B/root"
	jq -j .tcb_evaluation_data_numbers_json "$IV/tdx_tcb_eval_nums.json" >"$B/eval"
	jq -j '.tcb_info_issuer_chain | @uri' "$Q" >"$B/tcb.chain"
	jq -j '.qe_identity_issuer_chain | @uri' "$Q" >"$B/qe.chain"
	jq -j '.pck_crl_issuer_chain | @uri' "$Q" >"$B/crl.chain"
	jq -j '.issuer_chain | @uri' "$IV/tdx_tcb_eval_nums.json" >"$B/eval.chain"
	hdrs "$H/q_tcb" application/json TCB-Info-Issuer-Chain "$B/tcb.chain"
	hdrs "$H/q_qe" application/json SGX-Enclave-Identity-Issuer-Chain "$B/qe.chain"
	hdrs "$H/q_crl" application/pkix-crl SGX-PCK-CRL-Issuer-Chain "$B/crl.chain"
	hdrs "$H/q_eval" application/json TCB-Evaluation-Data-Numbers-Issuer-Chain "$B/eval.chain"
	# The TDX verifier's requests for this quote, as it sends them.
	QSEQ="tcb $TDX4/tcb?fmspc=B0C06F000000
qe $TDX4/qe/identity
crl $V4/pckcrl?ca=platform&encoding=der
root $V4/rootcacrl
eval $TDX4/tcbevaluationdatanumbers"
	dir_put "$T/A" "$TDX4/tcb?fmspc=B0C06F000000&update=standard" 200 "$B/tcb" "$H/q_tcb"
	dir_put "$T/A" "$U_TDX_QE" 200 "$B/qe" "$H/q_qe"
	dir_put "$T/A" "$V4/pckcrl?ca=platform&encoding=der" 200 "$B/crl" "$H/q_crl"
	dir_put "$T/A" "$V4/rootcacrl" 200 "$B/root" "$H/root_crl"
	dir_put "$T/A" "$TDX4/tcbevaluationdatanumbers" 200 "$B/eval" "$H/q_eval"
	fake_off=$(secs_until 2025-06-20T00:00:00Z)
	STAPLED_WRAP=$(faketime_env "$fake_off")
	ctl -C "$T/c6" -f "$T/conf_pre.json" prefetch --quote "$IV/tdx_quote"
	check_eq "prefetch --quote (TDX) into an empty cache: exit 0" 0 "$CTL_RC"
	[ "$CTL_RC" = 0 ] || note "$(cat "$T/ctl.out")"
	check_eq "prefetch --quote: the quote's 5 PCCS entries stored" 5 "$(list_of "$T/c6" | grep -c ' pccs ')"
	STAPLED_CACHE=$T/c6 stapled_start d6 --pccs-upstream "http://127.0.0.1:$DEAD1" \
	    --kds-upstream "http://127.0.0.1:$DEAD2"
	while read -r n p; do
		get "$p" "$T/q.$n"
		check_eq "prefetched, upstream dead: $p: HTTP 200" 200 "$HTTP_CODE"
		check "prefetched, upstream dead: $p is the vendor's bytes" cmp -s "$B/$n" "$T/q.$n"
	done <<EOF
$QSEQ
EOF
	check_eq "prefetched: TCB-Info-Issuer-Chain served with the TCB info" "$(cat "$B/tcb.chain")" \
	    "$(header "$T/q.tcb.hdr" TCB-Info-Issuer-Chain)"
	stapled_stop
	# The upstream now answers with a tampered TCB info: refused, nothing stored for it.
	sed 's/"issueDate":"2025-06-19T10:16:03Z"/"issueDate":"2025-06-19T10:16:02Z"/' "$B/tcb" >"$B/tcb.bad"
	cmp -s "$B/tcb" "$B/tcb.bad" && die "the tampered TCB info is the same as the original"
	dir_put "$T/A" "$TDX4/tcb?fmspc=B0C06F000000&update=standard" 200 "$B/tcb.bad" "$H/q_tcb"
	ctl -C "$T/c7" -f "$T/conf_pre.json" prefetch --quote "$IV/tdx_quote"
	check_eq "prefetch --quote with a tampered TCB info upstream: exit 1" 1 "$CTL_RC"
	check "prefetch: the tampered answer is rejected for its signature" grep -q 'rejected: .*signature' "$T/ctl.out"
	check_eq "prefetch: the other 4 stored, not the tampered one" 4 "$(list_of "$T/c7" | grep -c ' pccs ')"
else
	note "jq not installed: prefetch --quote not tested"
fi

it_done
