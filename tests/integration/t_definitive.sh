#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Definitive OCSP answers: an upstream's unauthorized (NVIDIA's real answer for an FMC leaf),
# malformedRequest or sigRequired is relayed and remembered, not failed over; internalError and
# tryLater still are; a stored answer outlives a refresh that gets one; a good answer replaces it.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_definitive
pki_make

# NVIDIA's responder's answer for a per-device FMC leaf: 30 03 0a 01 06.
FMC=$VECTORS/captured/fmc-leaf-unauthorized.resp.der
[ -s "$FMC" ] || die "missing $FMC"
check_eq "the captured answer is NVIDIA's unauthorized" 30030a0106 "$(hex_of "$FMC")"

# front_start VAR NAME RULEFILE: the first upstream. tests/upstream in route
# mode before one `openssl ocsp` per CA; CertIDs issued by the ICA (the
# leaves, as NVIDIA's per-device BROM issues the FMC leaf) get RULEFILE's
# bytes while it exists, and the ICA's responder when it does not. The
# other issuers' CertIDs always reach their responders.
front_start() {
	local _ca _d _h _routes
	_routes=""
	for _ca in $PKI_CAS; do
		responder_start _rp "$2-$_ca" "$(ca_cert "$_ca")" "$(ca_index "$_ca")" \
		    "$(ca_rsigner "$_ca")" "$(ca_rkey "$_ca")" -ndays 1 -rother "$(ca_chain "$_ca")"
		for _d in sha1 sha256 sha384; do
			_h=$(key_hash_hex "$(ca_cert "$_ca")" "$_d")
			[ "$_ca" = ica ] && _routes="$_routes,$_h=file:$3"
			_routes="$_routes,$_h=127.0.0.1:$_rp"
		done
	done
	: >"$T/$2.count"
	upstream_start "$1" "$2" --mode "route:${_routes#,}" --count-file "$T/$2.count"
}

# cfg FILE FIRST_URL SECOND_URL [ocsp members, raw JSON, comma-led]: the
# first upstream is named "primary", the second "mirror".
cfg() {
	cat >"$1" <<EOF
{
  "ocsp": {
    "upstreams": [ { "url": "$2", "name": "primary" }, { "url": "$3", "name": "mirror" } ],
    "anchors": [ "$ANCHORS" ],
    "intermediates": [ "$INTERMEDIATES" ]${4:-}
  }
}
EOF
}

# ossl_ask OUT RESPOUT ISSUER CERT: openssl ocsp as the client.
ossl_ask() {
	openssl ocsp -url "$SURL/ocsp" -CAfile "$ANCHORS" -verify_other "$INTERMEDIATES" \
	    -issuer "$3" -cert "$4" -respout "$2" >"$1" 2>&1
}

# got_bytes "behaviour" EXPECTED FILE: HTTP 200, the same bytes, not to be cached.
got_bytes() {
	local _cc
	_cc=$(header "$3.hdr" cache-control)
	if [ "$HTTP_CODE" = 200 ] && cmp -s "$2" "$3" && [ "$_cc" = no-store ] &&
	    [ "$(header "$3.hdr" content-type)" = application/ocsp-response ]; then
		ok "$1"
	else
		fail "$1 (HTTP $HTTP_CODE, $(hex_of "$3" | cut -c1-40), Cache-Control '$_cc')"
	fi
}

# metric_until FILE ERE MIN: metric_wait for up to 20 s (refreshes take a few).
metric_until() {
	local _i=0
	while [ $_i -lt 4 ]; do
		metric_wait "$@" && return 0
		_i=$((_i + 1))
	done
	return 1
}

# Metric patterns: braces stay out (awk -v would read escapes in them).
RES='^stapled_requests_total.route="ocsp_(post|get)",result='
PRI='upstream="primary"'

farm_start UM mirror -ndays 1 -rother CHAIN
MIRROR=http://127.0.0.1:$UM/

# ---- 1. unauthorized from the first upstream: relayed, remembered, healthy ----
cp "$FMC" "$T/fmc1.der"
front_start UA primary "$T/fmc1.der"
cfg "$T/d1.json" "http://127.0.0.1:$UA/" "$MIRROR" ', "negative_ttl_s": 60'
STAPLED_CACHE=$T/c1 stapled_start d1 -f "$T/d1.json"
metrics_get "$T/m1a"

mkreq "$T/r1.der" "$ICA_CERT" "$LEAF1"
post "$T/r1.der" "$T/a1.der"
got_bytes "unauthorized: curl gets NVIDIA's bytes unchanged, HTTP 200, no-store" "$FMC" "$T/a1.der"
ossl_ask "$T/o2.out" "$T/o2.der" "$ICA_CERT" "$LEAF2"
check "unauthorized: openssl ocsp reports the responder's answer" \
    grep -q 'Responder Error: unauthorized (6)' "$T/o2.out"
check "unauthorized: openssl ocsp got the same bytes" cmp -s "$FMC" "$T/o2.der"
check_eq "unauthorized: the first upstream was asked once per certificate" 2 "$(upstream_count primary)"
check_eq "unauthorized: the second upstream was never asked" 0 "$(upstream_count mirror)"

# Within negative_ttl_s: the same answer, POST and GET, without asking anyone.
post "$T/r1.der" "$T/a1b.der"
got_bytes "remembered: a repeated POST gets the same bytes" "$FMC" "$T/a1b.der"
mkreq "$T/r1g.der" "$ICA_CERT" "$LEAF1" -no_nonce
b64=$(ocsp_b64 "$T/r1g.der")
HTTP_CODE=$(curl -s -m 10 -o "$T/a1g.der" -D "$T/a1g.der.hdr" -w '%{http_code}' "$SURL/ocsp/$b64")
got_bytes "remembered: GET for the same certificate gets the same bytes" "$FMC" "$T/a1g.der"
ossl_ask "$T/o2b.out" "$T/o2b.der" "$ICA_CERT" "$LEAF2"
check "remembered: openssl ocsp again gets the same bytes" cmp -s "$FMC" "$T/o2b.der"
check_eq "remembered: no repeat reached the first upstream" 2 "$(upstream_count primary)"
check_eq "remembered: nor the second" 0 "$(upstream_count mirror)"

# Still first and healthy: the next certificate is answered by it, good.
check_successful "next certificate: successful" "$T/r3.der" "$T/a3.der" \
    "$IDENT_CERT" "$ICA_CERT"
check "next certificate: the answer verifies" ossl_verify "$T/a3.der" "$IDENT_CERT" "$ICA_CERT"
check_eq "next certificate: answered by the first upstream" 3 "$(upstream_count primary)"
check_eq "next certificate: no failover to the second" 0 "$(upstream_count mirror)"

metrics_get "$T/m1"
check_eq "metrics: 5 requests counted as result=\"definitive\"" 5 \
    "$(metric_sum "$T/m1" "${RES}\"definitive\"")"
check_eq "metrics: 1 of them by GET" 1 \
    "$(metric_sum "$T/m1" '^stapled_requests_total.route="ocsp_get",result="definitive"')"
check_eq "metrics: none counted as trylater" 0 "$(metric_sum "$T/m1" "${RES}\"trylater\"")"
check_eq "metrics: the first upstream is up" 1 \
    "$(metric_sum "$T/m1" "^stapled_upstream_up.service=\"ocsp\",$PRI")"
check_eq "metrics: its failures unchanged (0)" \
    "$(metric_sum "$T/m1a" "^stapled_upstream_failures_total.service=\"ocsp\",$PRI")" \
    "$(metric_sum "$T/m1" "^stapled_upstream_failures_total.service=\"ocsp\",$PRI")"
check_eq "metrics: no answer counted as refused" 0 "$(metric_sum "$T/m1" '^stapled_rejected_total')"
check_eq "log: one line per certificate names the upstream and the status" 2 \
    "$(grep -Ec 'ocsp: primary: answered unauthorized for [0-9a-f]{16}: relayed to the client, remembered 60 s' "$T/d1.log")"
check "log: no cooldown" eval '! grep -q "down (" "$T/d1.log"'
stapled_stop

# ---- 2. the other statuses: malformedRequest and sigRequired relayed; -----------
# internalError and tryLater fail over, and twice put the upstream into cooldown.
upstream_start UF canned --mode "file:$T/canned.der" --count-file "$T/canned.count"
cfg "$T/d2.json" "http://127.0.0.1:$UF/" "$MIRROR"
STAPLED_CACHE=$T/c2 stapled_start d2 -f "$T/d2.json"
mirror0=$(upstream_count mirror)
n=0
for st in 01:malformedRequest:LEAF3 05:sigRequired:LEAF4; do
	printf "\\x30\\x03\\x0a\\x01\\x${st%%:*}" >"$T/canned.der"
	name=${st#*:}; name=${name%%:*}; eval "leaf=\$${st##*:}"
	mkreq "$T/r$name.der" "$ICA_CERT" "$leaf"
	post "$T/r$name.der" "$T/a$name.der"
	n=$((n + 1))
	got_bytes "$name from the first upstream: relayed unchanged" "$T/canned.der" "$T/a$name.der"
	check_eq "$name: the first upstream was asked" $n "$(upstream_count canned)"
	check_eq "$name: no failover" "$mirror0" "$(upstream_count mirror)"
done
for st in 02:internalError:LEAF5 03:tryLater:LEAF6; do
	printf "\\x30\\x03\\x0a\\x01\\x${st%%:*}" >"$T/canned.der"
	name=${st#*:}; name=${name%%:*}; eval "leaf=\$${st##*:}"
	mkreq "$T/r$name.der" "$ICA_CERT" "$leaf"
	before=$(upstream_count mirror)
	post "$T/r$name.der" "$T/a$name.der"
	n=$((n + 1))
	check_eq "$name from the first upstream: the client gets the second's answer" \
	    successful "$(resp_status "$T/a$name.der")"
	check "$name: that answer verifies" ossl_verify "$T/a$name.der" "$ICA_CERT" "$leaf"
	check_eq "$name: the first upstream was asked" $n "$(upstream_count canned)"
	check_eq "$name: failed over to the second" $((before + 1)) "$(upstream_count mirror)"
done
metrics_get "$T/m2"
check "internalError then tryLater: the first upstream went into cooldown" \
    grep -q 'fetch: ocsp: primary: down (rejected: status: responseStatus trylater)' "$T/d2.log"
check_eq "metrics: internalError and tryLater count as refused answers of the first upstream" 2 \
    "$(metric_sum "$T/m2" '^stapled_upstream_failures_total.service="ocsp",upstream="primary",reason="rejected"')"
check_eq "metrics: the first upstream is down" 0 \
    "$(metric_sum "$T/m2" "^stapled_upstream_up.service=\"ocsp\",$PRI")"
check_eq "metrics: 2 definitive answers" 2 "$(metric_sum "$T/m2" "${RES}\"definitive\"")"
stapled_stop

# ---- 3. a stored answer outlives a refresh that gets unauthorized ---------------
# The first refresh 3 to 4 s after a store: late enough for the test to
# change the upstream's answer first, even on a loaded machine.
FAST=', "refresh": { "fraction": 0.05, "min_interval_s": 3, "max_interval_s": 4 }'
front_start UA3 primary3 "$T/fmc3.der"
rm -f "$T/fmc3.der"
cfg "$T/d3.json" "http://127.0.0.1:$UA3/" "$MIRROR" "$FAST"
STAPLED_CACHE=$T/c3 stapled_start d3 -f "$T/d3.json"
mkreq "$T/r8.der" "$ICA_CERT" "$LEAF8"
post "$T/r8.der" "$T/a8.der"
check_eq "stored: a good answer while the first upstream still answers for the leaf" \
    successful "$(resp_status "$T/a8.der")"
cp "$FMC" "$T/fmc3.der"
mirror0=$(upstream_count mirror)
metric_until "$T/m3" '^stapled_refresh_total.result="failed"' 1
check "refresh that gets unauthorized: counted as failed" \
    [ "$(metric_sum "$T/m3" '^stapled_refresh_total.result="failed"')" -ge 1 ]
check "refresh: logged as failing, naming the upstream and the status" \
    grep -Eq 'refresh: ocsp [0-9a-f]+: failing \(primary answered unauthorized' "$T/d3.log"
post "$T/r8.der" "$T/a8b.der"
check_bytes "after that refresh: the stored answer is still served, byte-identical" \
    "$T/a8.der" "$T/a8b.der"
check_eq "after that refresh: no failover to the second upstream" "$mirror0" "$(upstream_count mirror)"
metrics_get "$T/m3b"
check_eq "after that refresh: served as a hit" 1 "$(metric_sum "$T/m3b" "${RES}\"hit\"")"
check_eq "after that refresh: no refresh counted as ok" 0 \
    "$(metric_sum "$T/m3b" '^stapled_refresh_total.result="ok"')"
check_eq "after that refresh: the first upstream is up" 1 \
    "$(metric_sum "$T/m3b" "^stapled_upstream_up.service=\"ocsp\",upstream=\"primary\"")"
stapled_stop

# ---- 4. upstream_first with a stored answer: the stored one is served ----------
SLOW=', "refresh": { "min_interval_s": 600, "max_interval_s": 3600 }'
rm -f "$T/fmc3.der"
cfg "$T/d4a.json" "http://127.0.0.1:$UA3/" "$MIRROR" "$SLOW"
STAPLED_CACHE=$T/c4 stapled_start d4a -f "$T/d4a.json"
check_successful "upstream_first: the leaf stored first" "$T/r10.der" "$T/a10.der" \
    "$ICA_CERT" "$LEAF5"
stapled_stop
cp "$FMC" "$T/fmc3.der"
cfg "$T/d4.json" "http://127.0.0.1:$UA3/" "$MIRROR" "$SLOW, \"mode\": \"upstream_first\""
STAPLED_CACHE=$T/c4 stapled_start d4 -f "$T/d4.json"
asked=$(upstream_count primary3)
mirror0=$(upstream_count mirror)
post "$T/r10.der" "$T/a10b.der"
check_bytes "upstream_first, unauthorized: the stored answer is served" "$T/a10.der" "$T/a10b.der"
check_eq "upstream_first: the first upstream was asked" $((asked + 1)) "$(upstream_count primary3)"
post "$T/r10.der" "$T/a10c.der"
check_bytes "upstream_first, remembered: the stored answer again" "$T/a10.der" "$T/a10c.der"
check_eq "upstream_first, remembered: no upstream asked again" $((asked + 1)) \
    "$(upstream_count primary3)"
check_eq "upstream_first: no failover" "$mirror0" "$(upstream_count mirror)"
metrics_get "$T/m4"
check_eq "upstream_first: both counted as fallback" 2 "$(metric_sum "$T/m4" "${RES}\"fallback\"")"
check_eq "upstream_first: none as definitive" 0 "$(metric_sum "$T/m4" "${RES}\"definitive\"")"
check "upstream_first: logged as keeping the stored answer" \
    grep -Eq 'ocsp: primary: answered unauthorized for [0-9a-f]{16}: the stored answer is served until its nextUpdate' "$T/d4.log"
stapled_stop

# ---- 5. after negative_ttl_s a good answer is stored and replaces the entry -----
cp "$FMC" "$T/fmc3.der"
cfg "$T/d5.json" "http://127.0.0.1:$UA3/" "$MIRROR" ', "negative_ttl_s": 3'
STAPLED_CACHE=$T/c5 stapled_start d5 -f "$T/d5.json"
asked=$(upstream_count primary3)
mkreq "$T/r11.der" "$ICA_CERT" "$LEAF6"
post "$T/r11.der" "$T/a11.der"
t0=$(date +%s)
got_bytes "ttl: unauthorized relayed" "$FMC" "$T/a11.der"
rm -f "$T/fmc3.der"	# the first upstream would answer good now
post "$T/r11.der" "$T/a11b.der"
got_bytes "ttl: within negative_ttl_s the remembered answer, though the upstream changed" \
    "$FMC" "$T/a11b.der"
check_eq "ttl: within negative_ttl_s the upstream is not asked" $((asked + 1)) \
    "$(upstream_count primary3)"
while [ $(($(date +%s) - t0)) -le 4 ]; do sleep 0.2; done
post "$T/r11.der" "$T/a11c.der"
check_eq "ttl: after negative_ttl_s the good answer" successful "$(resp_status "$T/a11c.der")"
check "ttl: it verifies" ossl_verify "$T/a11c.der" "$ICA_CERT" "$LEAF6"
post "$T/r11.der" "$T/a11d.der"
check_bytes "ttl: and it was stored (served again, same bytes)" "$T/a11c.der" "$T/a11d.der"
check_eq "ttl: the upstream asked once more" $((asked + 2)) "$(upstream_count primary3)"
metrics_get "$T/m5"
check_eq "ttl: one miss and one hit" "1 1" \
    "$(metric_sum "$T/m5" "${RES}\"miss\"") $(metric_sum "$T/m5" "${RES}\"hit\"")"
stapled_stop

# A good answer stored while the negative entry is live replaces it: in
# upstream_first a remembered answer would keep clients on the stored one.
rm -f "$T/fmc3.der"
cfg "$T/d6.json" "http://127.0.0.1:$UA3/" "$MIRROR" \
    "$FAST, \"negative_ttl_s\": 600, \"mode\": \"upstream_first\""
STAPLED_CACHE=$T/c6 stapled_start d6 -f "$T/d6.json"
mkreq "$T/r12.der" "$ICA_CERT" "$LEAF7"
post "$T/r12.der" "$T/a12.der"
cp "$FMC" "$T/fmc3.der"
check_eq "replace: a good answer stored first" successful "$(resp_status "$T/a12.der")"
post "$T/r12.der" "$T/a12b.der"
check_bytes "replace: then unauthorized, and the stored answer served" "$T/a12.der" "$T/a12b.der"
metrics_get "$T/m6a"
check_eq "replace: as a fallback" "1 1" \
    "$(metric_sum "$T/m6a" "${RES}\"miss\"") $(metric_sum "$T/m6a" "${RES}\"fallback\"")"
rm -f "$T/fmc3.der"	# the next refresh gets a good answer
ok0=$(metric_sum "$T/m6a" '^stapled_refresh_total.result="ok"')
metric_until "$T/m6b" '^stapled_refresh_total.result="ok"' $((ok0 + 1))
check "replace: a refresh stored a good answer" \
    [ "$(metric_sum "$T/m6b" '^stapled_refresh_total.result="ok"')" -gt "$ok0" ]
post "$T/r12.der" "$T/a12c.der"
check_eq "replace: the next request is answered" successful "$(resp_status "$T/a12c.der")"
metrics_get "$T/m6c"
check_eq "replace: it went upstream (a miss), the negative entry is gone" "2 1" \
    "$(metric_sum "$T/m6c" "${RES}\"miss\"") $(metric_sum "$T/m6c" "${RES}\"fallback\"")"
stapled_stop

it_done
