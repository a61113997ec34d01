#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Serving: miss then hit, POST paths, CertID hash algorithms, GET with caching headers,
# HTTP errors, hits after the upstream dies, restarts, unverifiable and forged upstreams.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_serve
pki_make

# ---- a genuine upstream: one openssl ocsp per issuing CA, routed by issuer ----
farm_start UP good -ndays 1 -rother CHAIN

cat >"$T/stapled.json" <<EOF
{
  "cache_dir": "$T/cache",
  $(ocsp_section "$UP" '"paths": [ "/nv/ocsp" ]')
}
EOF
stapled_start d1 -f "$T/stapled.json"
note "stapled on $SURL, upstream router on $UP"

# ---- 1. miss then hit with openssl ocsp as the client (nvattest's calls) ----
ossl_client() {
	_out=$1; shift
	openssl ocsp -url "$SURL/ocsp" -CAfile "$ANCHORS" -verify_other "$INTERMEDIATES" \
	    -validity_period 5 "$@" >"$_out" 2>&1
}
ossl_client "$T/c1.out" -issuer "$ICA_CERT" -cert "$LEAF1" -respout "$T/miss.der"
rc=$?
check "miss: openssl ocsp accepts the forwarded answer (exit 0)" [ $rc -eq 0 ]
check "miss: certificate reported good" grep -q ": good" "$T/c1.out"
assert "miss: the client's nonce is echoed (no nonce warning or error)" \
    '! grep -qi nonce "$T/c1.out"'

ossl_client "$T/c2.out" -issuer "$ICA_CERT" -cert "$LEAF1" -respout "$T/hit.der"
check "hit: openssl ocsp sees the old nonce (Nonce Verify error)" \
    grep -qi "nonce verify error" "$T/c2.out"
check "hit: response bytes identical to the miss's" cmp -s "$T/miss.der" "$T/hit.der"
check "hit: the response itself verifies (-respin, -no_nonce)" \
    ossl_verify "$T/hit.der" "$ICA_CERT" "$LEAF1"
check_eq "miss+hit made exactly one upstream request" 1 "$(upstream_count good)"

# ---- 2. POST paths: /, /ocsp and a configured one --------------------------
mkreq "$T/r2.der" "$ICA_CERT" "$LEAF2"
for p in / /ocsp /nv/ocsp; do
	tag=$(printf '%s' "$p" | tr '/' '_')
	post "$T/r2.der" "$T/p$tag.der" "$p"
	check_eq "POST $p: HTTP 200" 200 "$HTTP_CODE"
	check_eq "POST $p: Content-Type application/ocsp-response" application/ocsp-response \
	    "$(header "$T/p$tag.der.hdr" content-type)"
	check_eq "POST $p: responseStatus successful" successful "$(resp_status "$T/p$tag.der")"
done
check "POST / and /ocsp return the same stored bytes" cmp -s "$T/p_.der" "$T/p_ocsp.der"
check "POST / and /nv/ocsp (configured path) return the same bytes" cmp -s "$T/p_.der" "$T/p_nv_ocsp.der"
post "$T/r2.der" "$T/p_unknown.der" /not/configured
assert "POST to an unconfigured path is not an OCSP answer (HTTP $HTTP_CODE)" \
    '[ "$HTTP_CODE" = 404 ] || [ "$HTTP_CODE" = 405 ]'

# ---- 3. SHA-1 and SHA-384 CertIDs are different entries -----------------------
before=$(upstream_count good)
mkreq "$T/r2_384.der" "$ICA_CERT" "$LEAF2" -sha384
post "$T/r2_384.der" "$T/p384.der" /
check_eq "SHA-384 CertID: HTTP 200" 200 "$HTTP_CODE"
check_eq "SHA-384 CertID: successful" successful "$(resp_status "$T/p384.der")"
check_eq "SHA-384 CertID is a miss (one more upstream request)" $((before + 1)) "$(upstream_count good)"
assert "SHA-384 answer differs from the SHA-1 one" '! cmp -s "$T/p384.der" "$T/p_.der"'
assert "SHA-384 answer names a sha384 CertID" \
    'openssl ocsp -respin "$T/p384.der" -resp_text -noverify 2>/dev/null | grep -qi "Hash Algorithm: sha384"'
post "$T/r2_384.der" "$T/p384b.der" /
check "SHA-384 CertID then hits its own entry" cmp -s "$T/p384.der" "$T/p384b.der"
check_eq "the SHA-384 hit made no upstream request" $((before + 1)) "$(upstream_count good)"

# ---- 4. GET with caching headers and 304 ------------------------------------------
# Find a request whose base64 has a '+' and '=' padding, so the quirks are real.
b64=""
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
	for alg in sha1 sha384; do
		mkreq "$T/rg.der" "$ICA_CERT" "$LEAF3" -"$alg"
		b64=$(base64 -w0 <"$T/rg.der")
		case $b64 in *+*=) break 2 ;; esac
	done
done
case $b64 in
*+*=) note "GET request ($alg): $b64" ;;
*) note "no request with both '+' and padding found; quirk checks are weaker"; ;;
esac
urlenc() { printf '%s' "$1" | sed -e 's/%/%25/g' -e 's/+/%2B/g' -e 's#/#%2F#g' -e 's/=/%3D/g'; }
get() { # OUT PATH [curl options]
	_o=$1; _p=$2; shift 2
	curl -s -m 30 -o "$_o" -D "$_o.hdr" -w '%{http_code}' --path-as-is "$@" "$SURL$_p"
}
code=$(get "$T/g0.der" "/ocsp/$(urlenc "$b64")")
check_eq "GET /ocsp/{urlencoded}, a miss: HTTP 200" 200 "$code"
check_eq "GET miss: successful" successful "$(resp_status "$T/g0.der")"
code=$(get "$T/g1.der" "/ocsp/$(urlenc "$b64")")
check_eq "GET /ocsp/{urlencoded}, a hit: HTTP 200" 200 "$code"
check "GET hit: the stored bytes (same as the miss's)" cmp -s "$T/g0.der" "$T/g1.der"
check_eq "GET: successful" successful "$(resp_status "$T/g1.der")"
check_eq "GET: Content-Type" application/ocsp-response "$(header "$T/g1.der.hdr" content-type)"
cc=$(header "$T/g1.der.hdr" cache-control)
etag=$(header "$T/g1.der.hdr" etag)
maxage=$(printf '%s' "$cc" | sed -n 's/.*max-age=\([0-9]*\).*/\1/p')
nu=$(date -d "$(next_update "$T/g1.der")" +%s 2>/dev/null)
# The answer's own Date, not the clock after it: a loaded machine takes seconds between.
now=$(date -d "$(header "$T/g1.der.hdr" date)" +%s 2>/dev/null || date +%s)
check "GET: Cache-Control has max-age ($cc)" [ -n "$maxage" ]
assert "GET: max-age > 0 and <= nextUpdate - Date (max-age ${maxage:-?}, left $((nu - now)) s)" \
    '[ "${maxage:-0}" -gt 0 ] && [ "${maxage:-0}" -le $((nu - now + 1)) ]'
check "GET: Expires header" [ -n "$(header "$T/g1.der.hdr" expires)" ]
check "GET: Last-Modified header" [ -n "$(header "$T/g1.der.hdr" last-modified)" ]
check "GET: ETag header" [ -n "$etag" ]
exp=$(date -d "$(header "$T/g1.der.hdr" expires)" +%s 2>/dev/null || echo 0)
check "GET: Expires not after nextUpdate" [ "$exp" -le "$nu" ]

code=$(get "$T/g304" "/ocsp/$(urlenc "$b64")" -H "If-None-Match: $etag")
check_eq "GET with If-None-Match: 304" 304 "$code"
assert "304 has no body" '! [ -s "$T/g304" ]'

code=$(get "$T/g2.der" "/$(urlenc "$b64")")
check_eq "GET /{urlencoded} at the root: 200" 200 "$code"
check "GET /{...} serves the same bytes" cmp -s "$T/g1.der" "$T/g2.der"
raw=$(printf '%s' "$b64" | sed -e 's#/#%2F#g')
spaced=$(printf '%s' "$raw" | sed 's/+/%20/g')
code=$(get "$T/g3.der" "/ocsp/$spaced")
check_eq "GET with '+' turned to space: 200" 200 "$code"
check "GET with '+' turned to space: same bytes" cmp -s "$T/g1.der" "$T/g3.der"
nopad=$(printf '%s' "$raw" | sed 's/=*$//')
code=$(get "$T/g4.der" "/ocsp/$nopad")
check_eq "GET without base64 padding: 200" 200 "$code"
check "GET without padding: same bytes" cmp -s "$T/g1.der" "$T/g4.der"
code=$(get "$T/g5.der" "//ocsp/$(urlenc "$b64")")
check_eq "GET with a doubled leading slash: 200" 200 "$code"
check "GET //ocsp/...: same bytes" cmp -s "$T/g1.der" "$T/g5.der"
code=$(get "$T/g6.der" "/ocsp/$(printf '%s' "$raw" | sed 's/%2F/\//g')")
assert "GET with unencoded '/' in the base64 (raw path): 200 and same bytes" \
    '[ "$code" = 200 ] && cmp -s "$T/g1.der" "$T/g6.der"'

# ---- 5. malformed and HTTP-level errors -------------------------------------------
printf 'this is not an OCSP request' >"$T/garbage"
post "$T/garbage" "$T/mal.der" /ocsp
check_eq "OCSP garbage: HTTP 200" 200 "$HTTP_CODE"
check "OCSP garbage: malformedRequest (30 03 0a 01 01)" is_malformed "$T/mal.der"
code=$(get "$T/malg.der" "/ocsp/$(printf 'not ocsp at all' | base64 -w0 | sed 's/=/%3D/g')")
assert "GET of base64 garbage: 200 malformedRequest (or 400), got $code" \
    '[ "$code" = 400 ] || { [ "$code" = 200 ] && is_malformed "$T/malg.der"; }'
head -c 16385 /dev/zero >"$T/big"
post "$T/big" "$T/big.out" /ocsp
check_eq "16 KiB + 1 body: 413" 413 "$HTTP_CODE"
head -c 16384 /dev/zero >"$T/max"
post "$T/max" "$T/max.out" /ocsp
check_malformed "16 KiB body exactly is read (200 malformedRequest)" "$T/max.out"
code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' -H 'Content-Type: text/plain' \
    --data-binary @"$T/r2.der" "$SURL/ocsp")
check_eq "wrong Content-Type: 415" 415 "$code"
code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' -X PUT -H "$CT_REQ" \
    --data-binary @"$T/r2.der" "$SURL/ocsp")
check_eq "PUT: 405" 405 "$code"
code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' -X DELETE "$SURL/ocsp")
check_eq "DELETE: 405" 405 "$code"

# ---- 6. a real NVAT-shaped request (a real NVIDIA CertID) with nothing upstream ----
if [ -d "$VECTORS/derived/ocsp_requests" ]; then
	for v in "$VECTORS"/derived/ocsp_requests/*.der; do
		n=${v##*/}
		post "$v" "$T/nv_$n" /ocsp
		# Our upstream has no responder for NVIDIA's issuers: at best it
		# answers with something unverifiable; never malformedRequest.
		assert "real NVIDIA request $n: HTTP 200, not malformedRequest ($(resp_status "$T/nv_$n"))" \
		    '[ "$HTTP_CODE" = 200 ] && ! is_malformed "$T/nv_$n"'
	done
else
	note "tests/vectors/nvidia/derived/ocsp_requests not present; real-vector checks skipped"
fi

# ---- 6b. a revoked certificate: stored and served as signed ------------------
mkreq "$T/rrev.der" "$ICA_CERT" "$LEAF3"
post "$T/rrev.der" "$T/rev.der" /ocsp
check_eq "revoked leaf: successful response" successful "$(resp_status "$T/rev.der")"
check_eq "revoked leaf: the status is revoked, as signed" revoked "$(cert_status "$T/rev.der")"

# ---- 7. hit after the upstream dies; the cache survives a restart -------------------
farm_stop good
post "$T/r2.der" "$T/dead1.der" /ocsp
post "$T/rrev.der" "$T/rev2.der" /ocsp
check_bytes "upstream dead: the revoked answer is served from the cache too" "$T/rev.der" "$T/rev2.der"
check_bytes "upstream dead: a cached entry is still served (HTTP 200, same bytes)" "$T/p_.der" "$T/dead1.der"
ossl_client "$T/c3.out" -issuer "$ICA_CERT" -cert "$LEAF1" -respout "$T/dead2.der"
check "upstream dead: openssl client gets the cached response" cmp -s "$T/miss.der" "$T/dead2.der"

stapled_stop
check_eq "SIGTERM: stapled exits 0" 0 "$BG_RC"
stapled_start d2 -f "$T/stapled.json"
post "$T/r2.der" "$T/restart.der" /ocsp
check_bytes "after a restart (upstream still dead): the entry is served from disk" "$T/p_.der" "$T/restart.der"
mkreq "$T/r_uncached.der" "$IDENT_CERT" "$ICA_CERT"
post "$T/r_uncached.der" "$T/uncached.der" /ocsp
check_trylater "after a restart: an uncached CertID with a dead upstream gets tryLater" "$T/uncached.der"
stapled_stop

# ---- 8. unverifiable: genuine, but the pool lacks the intermediates -----------------
# Responses carry only the responder certificate (no -rother), and the daemon
# knows the root only.
farm_start UPN norother -ndays 1
STAPLED_CACHE=$T/cache-unverif stapled_start d3 --ocsp-upstream "http://127.0.0.1:$UPN/" \
    --ocsp-anchor "$ANCHORS"
ossl_client "$T/u1.out" -issuer "$ICA_CERT" -cert "$LEAF1" -respout "$T/u1.der"
assert "unverifiable: the client still gets the genuine answer and it verifies with its own chain" \
    '[ "$(resp_status "$T/u1.der")" = successful ] && grep -q ": good" "$T/u1.out"'
assert "unverifiable: the client's nonce was echoed (the upstream bytes are passed on)" \
    '! grep -qi nonce "$T/u1.out"'
# Control: the Identity CA's certificate is answered by the root's responder,
# whose chain the daemon can complete with the anchors alone: stored.
mkreq "$T/u_ident.der" "$ROOT_CERT" "$IDENT_CERT"
post "$T/u_ident.der" "$T/u2.der" /ocsp
check_eq "verifiable with anchors only (root-issued): successful" successful "$(resp_status "$T/u2.der")"
metrics_get "$T/m_unverif"
check "unverifiable: counted in metrics (result=\"unverifiable\")" \
    [ "$(metric_sum "$T/m_unverif" 'stapled_requests_total.*result="unverifiable"')" -ge 1 ]
assert "unverifiable: counted as a verification failure (reason=\"unverifiable\")" \
    '[ "$(metric_sum "$T/m_unverif" "stapled_verify_failures_total.*reason=\"unverifiable\"")" -ge 1 ]'
check "unverifiable: logged, naming the missing issuer's key hash" \
    grep -qi "$(key_hash_hex "$ICA_CERT").*not stored" "$T/d3.log"
farm_stop norother
mkreq "$T/u1b.der" "$ICA_CERT" "$LEAF1"
post "$T/u1b.der" "$T/u3.der" /ocsp
check_trylater "unverifiable answer was not stored: upstream dead now gives tryLater" "$T/u3.der"
post "$T/u_ident.der" "$T/u4.der" /ocsp
check_bytes "the verifiable control entry was stored and is served with the upstream dead" "$T/u2.der" "$T/u4.der"
stapled_stop

# ---- 9. forged upstreams: never cached, never passed on ---------------------------
# forged_refused NAME PORT COUNTER WHAT: a daemon on cache-forged whose only
# upstream (at PORT, its requests counted as COUNTER) is forged: f1 gets
# tryLater, and that upstream was really asked.
forged_refused() {
	STAPLED_CACHE=$T/cache-forged stapled_start "$1" --ocsp-upstream "http://127.0.0.1:$2/" \
	    --ocsp-anchor "$ANCHORS" --ocsp-intermediates "$INTERMEDIATES"
	post "$T/f1.der" "$T/$1.out" /ocsp
	check_trylater "$4: client gets tryLater" "$T/$1.out"
	check "$4: really asked" [ "$(upstream_count "$3")" -ge 1 ]
	stapled_stop
}
# (a) genuine responder keys, bad signature.
farm_start UPB badsig -ndays 1 -rother CHAIN -badsig
STAPLED_CACHE=$T/cache-forged stapled_start d4 --ocsp-upstream "http://127.0.0.1:$UPB/" \
    --ocsp-anchor "$ANCHORS" --ocsp-intermediates "$INTERMEDIATES"
mkreq "$T/f1.der" "$ICA_CERT" "$LEAF1"
post "$T/f1.der" "$T/f1.out" /ocsp
check_trylater "bad signature upstream: client gets tryLater, not the forged bytes" "$T/f1.out"
post "$T/f1.der" "$T/f1b.out" /ocsp
check_trylater "bad signature upstream: still tryLater the second time (nothing cached)" "$T/f1b.out"
metrics_get "$T/m_forged"
check "bad signature: stapled_verify_failures_total moved" \
    [ "$(metric_sum "$T/m_forged" '^stapled_verify_failures_total')" -ge 1 ]
stapled_stop
farm_stop badsig

# (b) the look-alike PKI: same names, other keys, answering for our CertIDs.
lookalike_start UPL lookalike -ndays 1 -rother "$EVIL_CHAIN"
forged_refused d5 "$UPL" lookalike "look-alike responder"
# (c) a responder certificate issued by the Identity CA signing for the
# ICA's leaves: not authorised for them.
responder_start RR rogue "$ICA_CERT" "$(ca_index ica)" "$PKI/rogue/responder.pem" \
    "$PKI/rogue/responder.key" -ndays 1 -rother "$INTERMEDIATES"
upstream_start UPR rogue-router --mode "route:$(key_hash_hex "$ICA_CERT")=127.0.0.1:$RR" \
    --count-file "$T/rogue-router.count"
forged_refused d5b "$UPR" rogue-router "responder not authorised for the issuer"
bg_kill "$UPR_PID"; bg_kill "$RR_PID"

# Nothing of the forged answers was stored in that cache.
STAPLED_CACHE=$T/cache-forged stapled_start d6 --ocsp-upstream "http://127.0.0.1:$(dead_port 1)/" \
    --ocsp-anchor "$ANCHORS"
post "$T/f1.der" "$T/f3.out" /ocsp
check_trylater "after forged upstreams, the cache holds nothing for the CertID (tryLater)" "$T/f3.out"
stapled_stop

it_done
