#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Intel collateral through stapled on real PCS answers (run at a time inside their
# window): a TDX verifier's requests warmed, then served byte for byte with every
# upstream dead; forgeries refused; failover, 404, 503 and request canonicalisation.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_pccs
need_faketime
IV=$top_srcdir/tests/vectors/intel/derived
need_vectors "$IV" tdx_tcb_info.body.json tdx_tcb_info.TCB-Info-Issuer-Chain.txt \
    tdx_qe_identity.body.json tdx_qe_identity.SGX-Enclave-Identity-Issuer-Chain.txt \
    sgx_tcb_info_00906ED50000.body.json sgx_tcb_info_00906ED50000.TCB-Info-Issuer-Chain.txt \
    pckcrl_platform.der pckcrl_platform.SGX-PCK-CRL-Issuer-Chain.txt \
    pckcrl_processor.der pckcrl_processor.SGX-PCK-CRL-Issuer-Chain.txt \
    IntelSGXRootCA.crl.der IntelSGXRootCA.crl.hex

# The teepot PCS captures (TCB info, identities, PCK CRLs) are valid from
# 2025-05-27 to 2025-06-26, the root CA CRL from 2025-03-20 to 2026-04-03.
# The daemon runs at 2025-06-01 00:00 UTC (an offset, so its clock moves on).
fake_off=$(secs_until 2025-06-01T00:00:00Z)
STAPLED_WRAP=$(faketime_env "$fake_off")

V4=/sgx/certification/v4
TDX4=/tdx/certification/v4
FMSPC_TDX=00806F050000
FMSPC_SGX=00906ED50000
# What stapled asks the upstream for: the canonical forms.
U_TDX_TCB="$TDX4/tcb?fmspc=$FMSPC_TDX&update=standard"
U_TDX_QE="$TDX4/qe/identity?update=standard"
U_SGX_TCB="$V4/tcb?fmspc=$FMSPC_SGX&update=standard"
U_CRL_PLAT="$V4/pckcrl?ca=platform&encoding=der"
U_CRL_PROC="$V4/pckcrl?ca=processor&encoding=der"
U_ROOT_CRL="$V4/rootcacrl"

# ---- the fake upstream's answers (tests/upstream --mode dir:DIR) ----------------

H=$T/hdrs
mkdir -p "$H"
HDRS_REQUEST_ID=t-pccs
hdrs "$H/tdx_tcb" application/json TCB-Info-Issuer-Chain "$IV/tdx_tcb_info.TCB-Info-Issuer-Chain.txt"
hdrs "$H/sgx_tcb" application/json TCB-Info-Issuer-Chain "$IV/sgx_tcb_info_00906ED50000.TCB-Info-Issuer-Chain.txt"
hdrs "$H/tdx_qe" application/json SGX-Enclave-Identity-Issuer-Chain \
    "$IV/tdx_qe_identity.SGX-Enclave-Identity-Issuer-Chain.txt"
hdrs "$H/crl_plat" application/pkix-crl SGX-PCK-CRL-Issuer-Chain "$IV/pckcrl_platform.SGX-PCK-CRL-Issuer-Chain.txt"
hdrs "$H/crl_proc" application/pkix-crl SGX-PCK-CRL-Issuer-Chain "$IV/pckcrl_processor.SGX-PCK-CRL-Issuer-Chain.txt"
hdrs "$H/root_crl" application/pkix-crl

# good_upstream DIR: every answer of the TDX verifier's sequence, as PCS/PCCS serve it
# (the root CA CRL as a PCCS does: hex text of the DER).
good_upstream() {
	dir_put "$1" "$U_TDX_TCB" 200 "$IV/tdx_tcb_info.body.json" "$H/tdx_tcb"
	dir_put "$1" "$U_TDX_QE" 200 "$IV/tdx_qe_identity.body.json" "$H/tdx_qe"
	dir_put "$1" "$U_SGX_TCB" 200 "$IV/sgx_tcb_info_00906ED50000.body.json" "$H/sgx_tcb"
	dir_put "$1" "$U_CRL_PLAT" 200 "$IV/pckcrl_platform.der" "$H/crl_plat"
	dir_put "$1" "$U_CRL_PROC" 200 "$IV/pckcrl_processor.der" "$H/crl_proc"
	dir_put "$1" "$U_ROOT_CRL" 200 "$IV/IntelSGXRootCA.crl.hex" "$H/root_crl"
}

hexfile() { od -An -v -tx1 "$1" | tr -d ' \n'; }

# ---- the TDX verifier's sequence, warmed through stapled -------------------------

# Request path | expected body | issuer-chain header | its value
SEQ="tdx_tcb|$TDX4/tcb?fmspc=$FMSPC_TDX|$IV/tdx_tcb_info.body.json|TCB-Info-Issuer-Chain|$IV/tdx_tcb_info.TCB-Info-Issuer-Chain.txt
tdx_qe|$TDX4/qe/identity|$IV/tdx_qe_identity.body.json|SGX-Enclave-Identity-Issuer-Chain|$IV/tdx_qe_identity.SGX-Enclave-Identity-Issuer-Chain.txt
crl_plat_hex|$V4/pckcrl?ca=platform|$T/pckcrl_platform.hex|SGX-PCK-CRL-Issuer-Chain|$IV/pckcrl_platform.SGX-PCK-CRL-Issuer-Chain.txt
crl_plat_der|$V4/pckcrl?ca=platform&encoding=der|$IV/pckcrl_platform.der|SGX-PCK-CRL-Issuer-Chain|$IV/pckcrl_platform.SGX-PCK-CRL-Issuer-Chain.txt
crl_proc_hex|$V4/pckcrl?ca=processor|$T/pckcrl_processor.hex|SGX-PCK-CRL-Issuer-Chain|$IV/pckcrl_processor.SGX-PCK-CRL-Issuer-Chain.txt
crl_proc_der|$V4/pckcrl?ca=processor&encoding=der|$IV/pckcrl_processor.der|SGX-PCK-CRL-Issuer-Chain|$IV/pckcrl_processor.SGX-PCK-CRL-Issuer-Chain.txt
root_crl|$V4/rootcacrl|$IV/IntelSGXRootCA.crl.hex||"
# PCCS's dialect: hex text of the DER, no newline.
hexfile "$IV/pckcrl_platform.der" >"$T/pckcrl_platform.hex"
hexfile "$IV/pckcrl_processor.der" >"$T/pckcrl_processor.hex"

# run_seq TAG: every request of SEQ; each answer must be the vendor's bytes and chain.
run_seq() {
	local _tag=$1 _name _path _body _hn _hv
	while IFS='|' read -r _name _path _body _hn _hv; do
		get "$_path" "$T/$_tag.$_name"
		if [ "$HTTP_CODE" = 200 ] && cmp -s "$_body" "$T/$_tag.$_name"; then
			ok "$_tag: $_path: HTTP 200, the vendor's bytes"
		else
			fail "$_tag: $_path: HTTP $HTTP_CODE, bytes $(cmp -s "$_body" "$T/$_tag.$_name" && echo same || echo differ)"
		fi
		[ -n "$_hn" ] || continue
		check_eq "$_tag: $_path: $_hn exactly as the vendor sent it" \
		    "$(cat "$_hv")" "$(header "$T/$_tag.$_name.hdr" "$_hn")"
	done <<EOF
$SEQ
EOF
}

good_upstream "$T/A"
upstream_start UA a --mode "dir:$T/A"
STAPLED_CACHE=$T/c1 stapled_start d1 --pccs-upstream "http://127.0.0.1:$UA"
fake_date=$(curl -s -D - -o /dev/null "$SURL/healthz" | tr -d '\r' | sed -n 's/^[Dd]ate: //p')
note "the daemon's clock: ${fake_date:-no Date header}"
run_seq warm
check_eq "warm: the upstream was asked for the TDX TCB info once, in canonical form" 1 \
    "$(dir_hits "$T/A" "$U_TDX_TCB")"
check_eq "warm: both PCK CRL dialects come from one DER entry per CA (one request each)" \
    "1 1" "$(dir_hits "$T/A" "$U_CRL_PLAT") $(dir_hits "$T/A" "$U_CRL_PROC")"
check_eq "warm: seven answers, five upstream requests" 5 "$(dir_total "$T/A")"

# The same requests again, the upstream gone: the cache alone answers.
bg_kill "$UA_PID"
run_seq dead
stapled_stop

# A restart on the same cache, every upstream dead (two refused ports).
DEAD1=$(dead_port 1); DEAD2=$(dead_port 2)
STAPLED_CACHE=$T/c1 stapled_start d1b --pccs-upstream "http://127.0.0.1:$DEAD1" \
    --pccs-upstream "http://127.0.0.1:$DEAD2"
run_seq restart
for n in tdx_tcb crl_plat_hex root_crl; do
	check "restart: $n is byte-identical to what was served warm" \
	    cmp -s "$T/warm.$n" "$T/restart.$n"
done
stapled_stop

# ---- forgeries: refused, not served, not stored --------------------------------------

# One flipped byte in the signed tcbInfo value (a second of its issueDate).
sed 's/"issueDate":"2025-05-27T19:31:43Z"/"issueDate":"2025-05-27T19:31:42Z"/' \
    "$IV/tdx_tcb_info.body.json" >"$T/tamper_body.json"
check_eq "precondition: the tampered body differs in exactly one byte" 1 \
    "$(cmp -l "$IV/tdx_tcb_info.body.json" "$T/tamper_body.json" | wc -l)"
# One flipped hex digit of the signature (its last one): the body ends <hex>"}.
blen=$(wc -c <"$IV/tdx_tcb_info.body.json")
last=$(tail -c 3 "$IV/tdx_tcb_info.body.json" | head -c 1)
flip=$([ "$last" = 0 ] && echo 1 || echo 0)
{ head -c $((blen - 3)) "$IV/tdx_tcb_info.body.json"; printf '%s"}' "$flip"; } >"$T/tamper_sig.json"
check_eq "precondition: the tampered signature differs in exactly one byte" 1 \
    "$(cmp -l "$IV/tdx_tcb_info.body.json" "$T/tamper_sig.json" | wc -l)"

# The same tcbInfo re-signed by a look-alike "Intel SGX TCB Signing" key under a
# look-alike "Intel SGX Root CA": a consistent answer whose chain is not Intel's.
E=$T/evil
mkdir -p "$E"
openssl ecparam -name prime256v1 -genkey -noout -out "$E/root.key" 2>/dev/null
openssl ecparam -name prime256v1 -genkey -noout -out "$E/tcb.key" 2>/dev/null
openssl req -new -x509 -key "$E/root.key" -sha256 -days 36500 -out "$E/root.pem" \
    -subj "/CN=Intel SGX Root CA/O=Intel Corporation/L=Santa Clara/ST=CA/C=US" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
    2>/dev/null || die "cannot make the look-alike root"
openssl req -new -key "$E/tcb.key" -out "$E/tcb.csr" \
    -subj "/CN=Intel SGX TCB Signing/O=Intel Corporation/L=Santa Clara/ST=CA/C=US" 2>/dev/null
printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,nonRepudiation\n' >"$E/ext"
openssl x509 -req -in "$E/tcb.csr" -CA "$E/root.pem" -CAkey "$E/root.key" -CAcreateserial \
    -days 3650 -sha256 -extfile "$E/ext" -out "$E/tcb.pem" 2>/dev/null ||
    die "cannot make the look-alike TCB signing certificate"
# {"tcbInfo": is 11 bytes; ,"signature":"<128 hex>"} is 144.
tail -c +12 "$IV/tdx_tcb_info.body.json" | head -c $((blen - 11 - 144)) >"$E/msg"
openssl dgst -sha256 -sign "$E/tcb.key" -out "$E/sig.der" "$E/msg" || die "cannot sign"
rs=$(openssl asn1parse -inform DER -in "$E/sig.der" | awk -F: '/INTEGER/ {
	v = $NF; sub(/^0+/, "", v); while (length(v) < 64) v = "0" v; printf "%s", tolower(v) }')
check_eq "precondition: the look-alike signature is 64 bytes of r||s" 128 "${#rs}"
{ printf '{"tcbInfo":'; cat "$E/msg"; printf ',"signature":"%s"}' "$rs"; } >"$T/evil.json"
pct() { awk -v ORS= '{ gsub(/ /, "%20"); gsub(/\+/, "%2B"); gsub(/\//, "%2F"); gsub(/=/, "%3D"); print $0 "%0A" }' "$@"; }
cat "$E/tcb.pem" "$E/root.pem" | pct >"$E/chain.txt"
hdrs "$H/evil" application/json TCB-Info-Issuer-Chain "$E/chain.txt"
# Control: the look-alike body and chain are self-consistent; only the root is wrong.
openssl dgst -sha256 -verify <(openssl x509 -in "$E/tcb.pem" -pubkey -noout) \
    -signature "$E/sig.der" "$E/msg" >/dev/null 2>&1 ||
    fail "precondition: the look-alike signature verifies with the look-alike key"

upstream_start UB b --mode "dir:$T/B"
for bad in "tamper_body:$T/tamper_body.json:$H/tdx_tcb" \
    "tamper_sig:$T/tamper_sig.json:$H/tdx_tcb" "foreign_chain:$T/evil.json:$H/evil"; do
	name=${bad%%:*}; rest=${bad#*:}; body=${rest%%:*}; hfile=${rest#*:}
	check_forged_refused "$name" --pccs-upstream "$U_TDX_TCB" "$body" "$hfile" \
	    "$TDX4/tcb?fmspc=$FMSPC_TDX"
	stapled_stop
	# Not stored: the same cache with a dead upstream has nothing to serve.
	STAPLED_CACHE=$T/c_$name stapled_start "d_${name}_b" --pccs-upstream "http://127.0.0.1:$DEAD1"
	get "$TDX4/tcb?fmspc=$FMSPC_TDX" "$T/$name.out2"
	check_eq "$name: not stored (a restart with the upstream dead has nothing: 503)" 503 "$HTTP_CODE"
	stapled_stop
done

# Signed, but an answer to another question: another FMSPC's TCB info, and the SGX
# TCB info on the TDX path. Stored under this key, it would be served for 30 days.
rm -f "$T/B/index" "$T/B/requests"
dir_put "$T/B" "$TDX4/tcb?fmspc=00806F050001&update=standard" 200 "$IV/tdx_tcb_info.body.json" "$H/tdx_tcb"
dir_put "$T/B" "$TDX4/tcb?fmspc=$FMSPC_SGX&update=standard" 200 \
    "$IV/sgx_tcb_info_00906ED50000.body.json" "$H/sgx_tcb"
STAPLED_CACHE=$T/c_other stapled_start d_other --pccs-upstream "http://127.0.0.1:$UB"
get "$TDX4/tcb?fmspc=00806F050001" "$T/other_fmspc.out"
check_eq "TCB info for FMSPC $FMSPC_TDX answering FMSPC 00806F050001: refused (503)" 503 "$HTTP_CODE"
get "$TDX4/tcb?fmspc=$FMSPC_SGX" "$T/other_tee.out"
check_eq "an SGX TCB info answering the TDX path: refused (503)" 503 "$HTTP_CODE"
stapled_stop

# ---- failover between endpoints ----------------------------------------------------------

good_upstream "$T/G"
upstream_start UG g --mode "dir:$T/G"

# A tampered answer from the first endpoint, a good one from the second.
rm -f "$T/B/index" "$T/B/requests"
dir_put "$T/B" "$U_TDX_TCB" 200 "$T/tamper_sig.json" "$H/tdx_tcb"
STAPLED_CACHE=$T/c_f1 stapled_start d_f1 --pccs-upstream "http://127.0.0.1:$UB" \
    --pccs-upstream "http://127.0.0.1:$UG"
get "$TDX4/tcb?fmspc=$FMSPC_TDX" "$T/f1.out"
check_bytes "tampered first, good second: the second's answer is served" \
    "$IV/tdx_tcb_info.body.json" "$T/f1.out"
check_eq "tampered first, good second: each endpoint asked once" "1 1" \
    "$(dir_hits "$T/B" "$U_TDX_TCB") $(dir_hits "$T/G" "$U_TDX_TCB")"
stapled_stop

# 429 with Retry-After: the next endpoint serves, and the first rests as told.
check_429_handoff --pccs-upstream "$U_TDX_TCB" "$U_TDX_QE" \
    "$TDX4/tcb?fmspc=$FMSPC_TDX" "$IV/tdx_tcb_info.body.json" \
    "$TDX4/qe/identity" "$IV/tdx_qe_identity.body.json"

# A refused connection hands off.
g0=$(dir_total "$T/G")
STAPLED_CACHE=$T/c_f3 stapled_start d_f3 --pccs-upstream "http://127.0.0.1:$DEAD1" \
    --pccs-upstream "http://127.0.0.1:$UG"
get "$TDX4/tcb?fmspc=$FMSPC_TDX" "$T/f3.out"
check_bytes "refused connection first: the second endpoint's answer is served" \
    "$IV/tdx_tcb_info.body.json" "$T/f3.out"
check_eq "refused connection first: the second endpoint asked once" 1 "$(( $(dir_total "$T/G") - g0 ))"
stapled_stop

# A 404 (unknown FMSPC) is an answer about the platform: passed on, not retried
# elsewhere, remembered for negative_ttl_s (60 s by default).
mkdir -p "$T/N"
printf 'No cache data for this platform.\n' >"$T/N/404.txt"
printf 'Content-Type: text/plain\n' >"$H/404"
U_UNKNOWN="$TDX4/tcb?fmspc=00A0000000FF&update=standard"
dir_put "$T/N" "$U_UNKNOWN" 404 "$T/N/404.txt" "$H/404"
dir_put "$T/G" "$U_UNKNOWN" 200 "$IV/tdx_tcb_info.body.json" "$H/tdx_tcb"
upstream_start UN n --mode "dir:$T/N"
# No hedging here: on a loaded machine a slow 404 must not look like a second request.
printf '{"pccs": {"hedge_ms": 10000}}\n' >"$T/nohedge.json"
STAPLED_CACHE=$T/c_f4 stapled_start d_f4 -f "$T/nohedge.json" --pccs-upstream "http://127.0.0.1:$UN" \
    --pccs-upstream "http://127.0.0.1:$UG"
get "$TDX4/tcb?fmspc=00a0000000ff" "$T/f4.out"
check_eq "404 from the first endpoint: passed on as 404" 404 "$HTTP_CODE"
check "404: the upstream's body, as sent" cmp -s "$T/N/404.txt" "$T/f4.out"
check_eq "404: the second endpoint is never contacted" 0 "$(dir_hits "$T/G" "$U_UNKNOWN")"
get "$TDX4/tcb?fmspc=00A0000000FF" "$T/f4b.out"
check_eq "404 again within 60 s: 404" 404 "$HTTP_CODE"
check_eq "404 again within 60 s: answered from memory, no upstream request" "1 0" \
    "$(dir_hits "$T/N" "$U_UNKNOWN") $(dir_hits "$T/G" "$U_UNKNOWN")"
stapled_stop

# Every endpoint failing: 503, and the answer names each one.
upstream_start U5 five --mode status:500
upstream_start U3 three --mode status:503
STAPLED_CACHE=$T/c_f5 stapled_start d_f5 --pccs-upstream "http://127.0.0.1:$U5" \
    --pccs-upstream "http://127.0.0.1:$U3" --pccs-upstream "http://127.0.0.1:$DEAD2"
get "$TDX4/tcb?fmspc=$FMSPC_TDX" "$T/f5.out"
check_eq "all endpoints fail: 503" 503 "$HTTP_CODE"
note "503 body: $(head -c 400 "$T/f5.out")"
for ep in "$U5" "$U3" "$DEAD2"; do
	assert "all endpoints fail: the answer names 127.0.0.1:$ep" \
	    'grep -qF "127.0.0.1:$ep" "$T/f5.out"'
done
assert "all endpoints fail: the answer says why (HTTP 500, HTTP 503)" \
    'grep -q "500" "$T/f5.out" && grep -q "503" "$T/f5.out"'
stapled_stop

# ---- requests are typed and canonical ------------------------------------------------

g0=$(dir_total "$T/G")
t0=$(dir_hits "$T/G" "$U_TDX_TCB")
STAPLED_CACHE=$T/c_n stapled_start d_n --pccs-upstream "http://127.0.0.1:$UG"
i=0
for q in "fmspc=00806f050000" "fmspc=00806F050000" "update=standard&fmspc=00806F050000" \
    "fmspc=00806f050000&update=STANDARD"; do
	i=$((i + 1))
	get "$TDX4/tcb?$q" "$T/n$i.out"
	check_bytes "tcb?$q: the TCB info" "$IV/tdx_tcb_info.body.json" "$T/n$i.out"
done
check_eq "fmspc case and parameter order: one entry, one upstream request" 1 \
    "$(( $(dir_hits "$T/G" "$U_TDX_TCB") - t0 ))"

g1=$(dir_total "$T/G")
for q in "$TDX4/tcb?fmspc=$FMSPC_TDX&foo=1" "$TDX4/tcb?fmspc=$FMSPC_TDX&fmspc=$FMSPC_TDX" \
    "$TDX4/tcb?fmspc=00806F05000" "$TDX4/tcb?fmspc=00806F05000G" "$TDX4/qe/identity?x=1" \
    "$V4/pckcrl?ca=platform&encoding=der&debug=1" "$V4/pckcrl?ca=other" \
    "$V4/rootcacrl?ca=platform" "$TDX4/tcb?fmspc=$FMSPC_TDX&update=late"; do
	get "$q" "$T/bad.out"
	check_eq "$q: 400" 400 "$HTTP_CODE"
done
check_eq "bad requests never reach the upstream" "$g1" "$(dir_total "$T/G")"

for q in "/sgx/certification/v3/tcb?fmspc=$FMSPC_SGX" "/sgx/certification/v3/pckcrl?ca=processor" \
    "/sgx/certification/v3/qe/identity"; do
	get "$q" "$T/v3.out"
	check_eq "$q: 410 (PCS v3 reached its end of life)" 410 "$HTTP_CODE"
done
check_eq "v3 requests never reach the upstream" "$g1" "$(dir_total "$T/G")"

# SGX and TDX TCB infos are distinct entries, even for one FMSPC.
get "$V4/tcb?fmspc=$FMSPC_SGX" "$T/sgx.out"
check_bytes "SGX TCB info: served" "$IV/sgx_tcb_info_00906ED50000.body.json" "$T/sgx.out"
check_eq "SGX TCB info: TCB-Info-Issuer-Chain as sent" \
    "$(cat "$IV/sgx_tcb_info_00906ED50000.TCB-Info-Issuer-Chain.txt")" \
    "$(header "$T/sgx.out.hdr" TCB-Info-Issuer-Chain)"
get "$V4/tcb?fmspc=$FMSPC_TDX" "$T/sgx_tdxfmspc.out"
check_eq "SGX path, FMSPC only cached for TDX: the upstream's 404, not the TDX entry" 404 "$HTTP_CODE"
check_eq "SGX path, FMSPC only cached for TDX: the upstream was asked (its own entry)" 1 \
    "$(dir_hits "$T/G" "$V4/tcb?fmspc=$FMSPC_TDX&update=standard")"
get "$TDX4/tcb?fmspc=$FMSPC_TDX" "$T/tdx_again.out"
check_bytes "TDX TCB info still served from its entry" "$IV/tdx_tcb_info.body.json" "$T/tdx_again.out"
stapled_stop

it_done
