#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# AMD KDS through stapled on real VCEKs and chains: ten cold verifications of one
# chip make one upstream request; forgeries refused; 404 and 429 across endpoints;
# identical requests paced to one per 10 s per endpoint; dstack's /vcek/v1 bases.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_kds
AV=$top_srcdir/tests/vectors/amd
need_vectors "$AV" vcek_milan.der cert_chain_milan vcek_turin.der cert_chain_turin derived/Milan.crl.der

# ---- the fake upstream's answers (tests/upstream --mode dir:DIR) ----------------


# flip_last IN OUT: the last byte (in a certificate: its signature) XOR 1.
flip_last() {
	local _n _b
	_n=$(wc -c <"$1")
	_b=$(tail -c 1 "$1" | od -An -tu1 | tr -d ' ')
	{ head -c $((_n - 1)) "$1"; printf "\\$(printf %03o $((_b ^ 1)))"; } >"$2"
}
# chain_ok CA UNTRUSTED CERT: openssl verify says the chain holds.
chain_ok() {
	openssl verify -CAfile "$1" ${2:+-untrusted "$2"} "$3" >/dev/null 2>&1
}
# pem_part FILE N: the Nth PEM certificate of FILE.
pem_part() {
	awk -v n="$2" '/-----BEGIN/ { i++ } i == n { print } /-----END/ && i == n { exit }' "$1"
}

VCEK=$AV/vcek_milan.der
HWID=$(vcek_hwid "$VCEK")
BL=$(vcek_spl "$VCEK" 1); TEE=$(vcek_spl "$VCEK" 2); SNP=$(vcek_spl "$VCEK" 3); UC=$(vcek_spl "$VCEK" 8)
check_eq "precondition: the Milan VCEK's HWID is 64 bytes" 128 "${#HWID}"
note "Milan VCEK: blSPL=$BL teeSPL=$TEE snpSPL=$SNP ucodeSPL=$UC hwid=${HWID:0:16}..."
TVCEK=$AV/vcek_turin.der
THWID=$(vcek_hwid "$TVCEK")
TFMC=$(vcek_spl "$TVCEK" 9); TBL=$(vcek_spl "$TVCEK" 1); TTEE=$(vcek_spl "$TVCEK" 2)
TSNP=$(vcek_spl "$TVCEK" 3); TUC=$(vcek_spl "$TVCEK" 8)
check_eq "precondition: the Turin VCEK's HWID is 8 bytes" 16 "${#THWID}"

# What stapled asks the upstream for: lower-case hex, decimal SPLs, KDS's order.
U_VCEK="/vcek/v1/Milan/$HWID?blSPL=$BL&teeSPL=$TEE&snpSPL=$SNP&ucodeSPL=$UC"
U_CHAIN=/vcek/v1/Milan/cert_chain
U_TVCEK="/vcek/v1/Turin/$THWID?fmcSPL=$TFMC&blSPL=$TBL&teeSPL=$TTEE&snpSPL=$TSNP&ucodeSPL=$TUC"
U_TCHAIN=/vcek/v1/Turin/cert_chain
U_CRL=/vcek/v1/Milan/crl

H=$T/hdrs
mkdir -p "$H"
printf 'Content-Type: application/pkix-cert\n' >"$H/der"
printf 'Content-Type: application/x-pem-file\n' >"$H/pem"
printf 'Content-Type: application/pkix-crl\n' >"$H/crl"
printf 'Content-Type: text/plain\n' >"$H/text"

good_upstream() {
	dir_put "$1" "$U_VCEK" 200 "$VCEK" "$H/der"
	dir_put "$1" "$U_CHAIN" 200 "$AV/cert_chain_milan" "$H/pem"
	dir_put "$1" "$U_TVCEK" 200 "$TVCEK" "$H/der"
	dir_put "$1" "$U_TCHAIN" 200 "$AV/cert_chain_turin" "$H/pem"
	dir_put "$1" "$U_CRL" 200 "$AV/derived/Milan.crl.der" "$H/crl"
}
good_upstream "$T/G"
upstream_start UG g --mode "dir:$T/G"
DEAD=$(dead_port 1)

# ---- ten cold verifications of one chip --------------------------------------------

UPPER=$(printf '%s' "$HWID" | tr 'a-f' 'A-F')
MIXED=${UPPER:0:64}${HWID:64}
STAPLED_CACHE=$T/c1 stapled_start d1 --kds-upstream "http://127.0.0.1:$UG"
i=0
for q in "$HWID?blSPL=$BL&teeSPL=$TEE&snpSPL=$SNP&ucodeSPL=$UC" \
    "$HWID?blSPL=0$BL&teeSPL=0$TEE&snpSPL=0$SNP&ucodeSPL=$UC" \
    "$UPPER?blSPL=$BL&teeSPL=$TEE&snpSPL=$SNP&ucodeSPL=$UC" \
    "$HWID?ucodeSPL=$UC&snpSPL=$SNP&teeSPL=$TEE&blSPL=$BL" \
    "$MIXED?blSPL=$BL&teeSPL=$TEE&snpSPL=$SNP&ucodeSPL=$UC" \
    "$HWID?blSPL=00$BL&teeSPL=$TEE&snpSPL=$SNP&ucodeSPL=0$UC" \
    "$UPPER?snpSPL=0$SNP&blSPL=0$BL&ucodeSPL=$UC&teeSPL=00" \
    "$HWID?teeSPL=$TEE&blSPL=$BL&ucodeSPL=$UC&snpSPL=$SNP" \
    "$MIXED?ucodeSPL=00$UC&teeSPL=$TEE&snpSPL=$SNP&blSPL=$BL" \
    "$HWID?blSPL=$BL&teeSPL=$TEE&snpSPL=$SNP&ucodeSPL=$UC"; do
	i=$((i + 1))
	get "/vcek/v1/Milan/$q" "$T/v$i.der"
	if [ "$HTTP_CODE" = 200 ] && cmp -s "$VCEK" "$T/v$i.der"; then
		ok "cold verification $i (${q#*\?}): the VCEK, byte for byte"
	else
		fail "cold verification $i (${q#*\?}): HTTP $HTTP_CODE"
	fi
done
check_eq "ten cold verifications of one chip: one upstream VCEK request" 1 "$(dir_hits "$T/G" "$U_VCEK")"
check_eq "ten cold verifications: nothing else asked of the upstream" 1 "$(dir_total "$T/G")"

# cert_chain: served, and it verifies the served VCEK the way a verifier checks it.
get "$U_CHAIN" "$T/chain.pem"
check_bytes "Milan cert_chain: the vendor's bytes" "$AV/cert_chain_milan" "$T/chain.pem"
pem_part "$T/chain.pem" 1 >"$T/ask.pem"
pem_part "$T/chain.pem" 2 >"$T/ark.pem"
openssl x509 -inform DER -in "$T/v1.der" -out "$T/vcek.pem" 2>/dev/null
check "Milan cert_chain: ASK then ARK, and they verify the served VCEK (openssl verify)" \
    chain_ok "$T/ark.pem" "$T/ask.pem" "$T/vcek.pem"
check_eq "Milan cert_chain: Content-Type as KDS sent it" application/x-pem-file \
    "$(header "$T/chain.pem.hdr" Content-Type)"

# Requests that are not KDS requests never reach it.
g0=$(dir_total "$T/G")
for q in "/vcek/v1/Milan/${HWID:1}?blSPL=$BL&teeSPL=$TEE&snpSPL=$SNP&ucodeSPL=$UC:400" \
    "/vcek/v1/Milan/${HWID:2}zz?blSPL=$BL&teeSPL=$TEE&snpSPL=$SNP&ucodeSPL=$UC:400" \
    "/vcek/v1/Milan/$HWID?blSPL=256&teeSPL=$TEE&snpSPL=$SNP&ucodeSPL=$UC:400" \
    "/vcek/v1/Milan/$HWID?blSPL=-1&teeSPL=$TEE&snpSPL=$SNP&ucodeSPL=$UC:400" \
    "/vcek/v1/Milan/$HWID?blSPL=$BL&teeSPL=$TEE&snpSPL=$SNP:400" \
    "/vcek/v1/Milan/$HWID?blSPL=$BL&teeSPL=$TEE&snpSPL=$SNP&ucodeSPL=$UC&foo=1:400" \
    "/vcek/v1/Milan/$HWID?fmcSPL=0&blSPL=$BL&teeSPL=$TEE&snpSPL=$SNP&ucodeSPL=$UC:400" \
    "/vcek/v1/Turin/$THWID?blSPL=$TBL&teeSPL=$TTEE&snpSPL=$TSNP&ucodeSPL=$TUC:400" \
    "/vcek/v1/Milan/cert_chain?x=1:400" \
    "/vcek/v1/milan/cert_chain:404" "/vcek/v1/Rome/cert_chain:404"; do
	get "${q%:*}" "$T/bad.out"
	check_eq "${q%:*}: ${q##*:}" "${q##*:}" "$HTTP_CODE"
done
check_eq "malformed KDS requests never reach the upstream" "$g0" "$(dir_total "$T/G")"
stapled_stop

# Turin (8-byte HWID, fmcSPL): ten verifications at once, one upstream request.
mkdir -p "$T/S"
cp "$T/G/index" "$T/S/index"
upstream_start US slow --mode "dir:$T/S" --delay-ms 500
STAPLED_CACHE=$T/c2 stapled_start d2 --kds-upstream "http://127.0.0.1:$US"
TUP=$(printf '%s' "$THWID" | tr 'a-f' 'A-F')
pids=""
for i in 1 2 3 4 5 6 7 8 9 10; do
	case $((i % 3)) in
	0) q="$THWID?fmcSPL=$TFMC&blSPL=$TBL&teeSPL=$TTEE&snpSPL=$TSNP&ucodeSPL=$TUC" ;;
	1) q="$TUP?ucodeSPL=0$TUC&snpSPL=$TSNP&teeSPL=$TTEE&blSPL=$TBL&fmcSPL=$TFMC" ;;
	2) q="$THWID?blSPL=0$TBL&fmcSPL=00$TFMC&teeSPL=$TTEE&snpSPL=$TSNP&ucodeSPL=$TUC" ;;
	esac
	curl -s -m 20 -o "$T/t$i.der" -w '%{http_code}\n' "$SURL/vcek/v1/Turin/$q" >"$T/t$i.code" &
	pids="$pids $!"
done
for p in $pids; do wait "$p"; done
n=0
for i in 1 2 3 4 5 6 7 8 9 10; do
	[ "$(cat "$T/t$i.code")" = 200 ] && cmp -s "$TVCEK" "$T/t$i.der" && n=$((n + 1))
done
check_eq "Turin: ten concurrent verifications all get the VCEK" 10 "$n"
check_eq "Turin: ten concurrent verifications, one upstream request" 1 "$(dir_hits "$T/S" "$U_TVCEK")"
get "$U_TCHAIN" "$T/tchain.pem"
check_bytes "Turin cert_chain: the vendor's bytes" "$AV/cert_chain_turin" "$T/tchain.pem"
stapled_stop

# ---- forgeries: refused, not served, not stored ----------------------------------------

flip_last "$VCEK" "$T/vcek_badsig.der"
pem_part "$AV/cert_chain_milan" 1 | openssl x509 -outform DER -out "$T/ask.der"
flip_last "$T/ask.der" "$T/ask_badsig.der"
{ openssl x509 -inform DER -in "$T/ask_badsig.der"; pem_part "$AV/cert_chain_milan" 2; } >"$T/chain_badsig.pem"
# A look-alike ARK-Milan and SEV-Milan, RSASSA-PSS SHA-384 as AMD signs: a consistent
# chain whose ARK is not the pinned one.
E=$T/evil
mkdir -p "$E"
AMD_DN="/OU=Engineering/C=US/L=Santa Clara/ST=CA/O=Advanced Micro Devices"
PSS="-sigopt rsa_padding_mode:pss -sigopt rsa_pss_saltlen:48 -sigopt rsa_mgf1_md:sha384"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$E/ark.key" -sha384 $PSS -days 9000 \
    -subj "$AMD_DN/CN=ARK-Milan" -addext basicConstraints=critical,CA:TRUE \
    -addext keyUsage=critical,keyCertSign,cRLSign -out "$E/ark.pem" 2>/dev/null ||
    die "cannot make the look-alike ARK"
openssl req -new -newkey rsa:2048 -nodes -keyout "$E/ask.key" -subj "$AMD_DN/CN=SEV-Milan" \
    -out "$E/ask.csr" 2>/dev/null
printf 'basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n' >"$E/ext"
openssl x509 -req -in "$E/ask.csr" -CA "$E/ark.pem" -CAkey "$E/ark.key" -CAcreateserial \
    -sha384 $PSS -days 9000 -extfile "$E/ext" -out "$E/ask.pem" 2>/dev/null ||
    die "cannot make the look-alike ASK"
cat "$E/ask.pem" "$E/ark.pem" >"$T/chain_foreign.pem"
check "precondition: the look-alike chain verifies by itself" \
    chain_ok "$E/ark.pem" "" "$E/ask.pem"
# The genuine ASK beside another product's ARK.
{ pem_part "$AV/cert_chain_milan" 1; pem_part "$AV/cert_chain_turin" 2; } >"$T/chain_otherark.pem"

upstream_start UB b --mode "dir:$T/B"
for bad in "vcek_badsig:$U_VCEK:$T/vcek_badsig.der" "chain_badsig:$U_CHAIN:$T/chain_badsig.pem" \
    "chain_foreign_ark:$U_CHAIN:$T/chain_foreign.pem" "chain_turin_ark:$U_CHAIN:$T/chain_otherark.pem"; do
	name=${bad%%:*}; rest=${bad#*:}; path=${rest%%:*}; body=${rest#*:}
	check_forged_refused "$name" --kds-upstream "$path" "$body" "$H/der" "$path"
	note "$name: $(grep -m1 -o 'refused an answer from .*' "$T/d_$name.log")"
	stapled_stop
	STAPLED_CACHE=$T/c_$name stapled_start "d_${name}_b" --kds-upstream "http://127.0.0.1:$DEAD"
	get "$path" "$T/$name.out2"
	assert "$name: not stored (a restart with the upstream dead does not serve it)" \
	    '! cmp -s "$T/$name.out2" "$body"'
	[ "$name" = vcek_badsig ] &&
	    check_eq "$name: not stored (a restart with the upstream dead: 503)" 503 "$HTTP_CODE"
	stapled_stop
done

# ---- failover between endpoints --------------------------------------------------------

# A 404 is an answer about the chip: passed on; the second endpoint is never asked;
# remembered for negative_ttl_s (60 s by default).
mkdir -p "$T/N"
: >"$T/N/index"
upstream_start UN n --mode "dir:$T/N"
g0=$(dir_total "$T/G")
# No hedging here: on a loaded machine a slow 404 must not look like a second request.
printf '{"amd_kds": {"hedge_ms": 10000}}\n' >"$T/nohedge.json"
STAPLED_CACHE=$T/c_f1 stapled_start d_f1 -f "$T/nohedge.json" --kds-upstream "http://127.0.0.1:$UN" \
    --kds-upstream "http://127.0.0.1:$UG"
get "$U_VCEK" "$T/f1.out"
check_eq "404 from the first endpoint: passed on as 404" 404 "$HTTP_CODE"
check_eq "404: the second endpoint is never asked" "$g0" "$(dir_total "$T/G")"
get "$U_VCEK" "$T/f1b.out"
check_eq "404 again within 60 s: 404" 404 "$HTTP_CODE"
check_eq "404 again within 60 s: no upstream request" "1 $g0" "$(dir_hits "$T/N" "$U_VCEK") $(dir_total "$T/G")"
stapled_stop

# 429 with Retry-After: the next endpoint serves, and the first rests as told.
check_429_handoff --kds-upstream "$U_VCEK" "$U_CHAIN" "$U_VCEK" "$VCEK" "$U_CHAIN" \
    "$AV/cert_chain_milan"

# ---- pacing: one identical request per endpoint per 10 s ------------------------------

# The only upstream answers a VCEK for another TCB (blSPL 3 where 4 is asked).
mkdir -p "$T/W"
U_WRONG="/vcek/v1/Milan/$HWID?blSPL=$((BL + 1))&teeSPL=$TEE&snpSPL=$SNP&ucodeSPL=$UC"
U_WRONG2="/vcek/v1/Milan/$HWID?blSPL=$((BL + 2))&teeSPL=$TEE&snpSPL=$SNP&ucodeSPL=$UC"
dir_put "$T/W" "$U_WRONG" 200 "$VCEK" "$H/der"
dir_put "$T/W" "$U_WRONG2" 200 "$VCEK" "$H/der"
upstream_start UW w --mode "dir:$T/W"
STAPLED_CACHE=$T/c_p stapled_start d_p --kds-upstream "http://127.0.0.1:$UW"
t_first=$(now_ms)
get "$U_WRONG" "$T/p1.out"
check_eq "a VCEK for another TCB: refused, 503" 503 "$HTTP_CODE"
assert "a VCEK for another TCB: the refusal says why" 'grep -q "refused an answer" "$T/d_p.log"'
get "$U_WRONG" "$T/p2.out"
t_second=$(now_ms)
check_eq "repeat within 10 s: 503" 503 "$HTTP_CODE"
assert "repeat within 10 s: the 503 carries Retry-After" '[ -n "$(header "$T/p2.out.hdr" Retry-After)" ]'
check_eq "repeat within 10 s: the upstream is not asked again" 1 "$(dir_hits "$T/W" "$U_WRONG")"
note "repeat $(( t_second - t_first )) ms after the first; 503 body: $(head -c 200 "$T/p2.out")"
get "$U_WRONG2" "$T/p3.out"
check_eq "another TCB within the 10 s: that request does reach the upstream" 1 "$(dir_hits "$T/W" "$U_WRONG2")"
# After the 10 s, the same request may go out again.
sleep "$(awk -v ms=$(( 10500 - ($(now_ms) - t_first) )) 'BEGIN { print (ms > 0 ? ms / 1000 : 0) }')"
get "$U_WRONG" "$T/p4.out"
check_eq "the same request after 10 s: the upstream is asked again" 2 "$(dir_hits "$T/W" "$U_WRONG")"
stapled_stop

# ---- dstack's form: a base ending in /vcek/v1 means its host ---------------------------

g0=$(dir_hits "$T/G" "$U_VCEK")
STAPLED_CACHE=$T/c_d stapled_start d_d --kds-upstream "http://127.0.0.1:$UG/vcek/v1"
get "$U_VCEK" "$T/d.out"
check_bytes "base http://HOST/vcek/v1: the VCEK is served" "$VCEK" "$T/d.out"
check_eq "base http://HOST/vcek/v1: the upstream got /vcek/v1/Milan/..., once" 1 \
    "$(( $(dir_hits "$T/G" "$U_VCEK") - g0 ))"
stapled_stop

# ---- CRLs: served inside their window, never past nextUpdate -----------------------------

if so=$(libfaketime_so); then
	# Milan's CRL: thisUpdate 2025-05-06, nextUpdate 2026-05-12.
	fake_off=$(secs_until 2025-06-01T00:00:00Z)
	STAPLED_WRAP=$(faketime_env "$fake_off") \
	    STAPLED_CACHE=$T/c_crl stapled_start d_crl --kds-upstream "http://127.0.0.1:$UG"
	get "$U_CRL" "$T/crl.der"
	check_bytes "Milan CRL at 2025-06-01: the vendor's bytes" "$AV/derived/Milan.crl.der" "$T/crl.der"
	stapled_stop
	if [ "$(date -u +%s)" -gt "$(date -u -d 2026-05-12T00:00:00Z +%s)" ]; then
		STAPLED_CACHE=$T/c_crl stapled_start d_crl2 --kds-upstream "http://127.0.0.1:$DEAD"
		get "$U_CRL" "$T/crl2.der"
		check_eq "Milan CRL past its nextUpdate, upstream dead: not served (503)" 503 "$HTTP_CODE"
		stapled_stop
	fi
else
	note "libfaketime not installed: the CRL window checks are left out"
fi

it_done
