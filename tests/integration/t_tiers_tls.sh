#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Tiers over TLS with a private CA and client certificates (docs/mirror.md): a regional
# stapled whose only listener is TLS with client_ca, an edge that reaches it with
# upstream_tls. A miss at the edge is answered through the regional tier; an edge without
# the client certificate is refused and answers tryLater; -n, a reload and staplectl
# fetch check and use the same files.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_tiers_tls
need_ctl
pki_make
farm_start VUP vendor -ndays 1 -rother CHAIN

# ---- a private CA: the regional tier's server certificate, the edge's client one ----
TP=$T/tls
mkdir -p "$TP"
tls_key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
# tls_cert KEY CN OUT EXT: one certificate signed by the private CA.
tls_cert() {
	openssl req -new -key "$1" -subj "/CN=$2" -out "$3.csr" 2>/dev/null &&
	    openssl x509 -req -in "$3.csr" -CA "$TP/ca.pem" -CAkey "$TP/ca.key" \
	    -CAcreateserial -days 2 -extfile <(printf '%s\n' "$4") -out "$3" 2>/dev/null
}
tls_key "$TP/ca.key" && tls_key "$TP/regional.key" && tls_key "$TP/edge.key" &&
    tls_key "$TP/other.key" || die "cannot make the TLS keys"
openssl req -x509 -new -key "$TP/ca.key" -subj "/CN=Test Tier CA" -days 2 \
    -out "$TP/ca.pem" 2>/dev/null || die "cannot make the private CA"
tls_cert "$TP/regional.key" "regional" "$TP/regional.pem" \
    "subjectAltName=IP:127.0.0.1
extendedKeyUsage=serverAuth" &&
    tls_cert "$TP/edge.key" "edge 1" "$TP/edge.pem" "extendedKeyUsage=clientAuth" ||
    die "cannot issue the TLS certificates"

# ---- the regional tier: TLS with client_ca its only listener, ops on a plain admin one ---
RTP=$(free_port)
RAP=$(free_port)
R_ADMIN=http://127.0.0.1:$RAP
cat >"$T/regional.json" <<EOF
{
  "listen": [ { "addr": "127.0.0.1:$RTP",
                "tls": { "cert": "$TP/regional.pem", "key": "$TP/regional.key",
                         "client_ca": "$TP/ca.pem" } } ],
  "admin_listen": [ "127.0.0.1:$RAP" ],
  "cache_dir": "$T/regional",
  "ocsp": { "upstreams": [ { "url": "http://127.0.0.1:$VUP/", "name": "vendor" } ],
            "anchors": [ "$ANCHORS" ], "intermediates": [ "$INTERMEDIATES" ] }
}
EOF
bg_start R_PID "$T/regional.log" "$STAPLED" -f "$T/regional.json"
i=0
while ! curl -s -o /dev/null -m 1 "$R_ADMIN/healthz" && [ $i -lt 100 ]; do
	sleep 0.1; i=$((i + 1))
done
grep -q "listening on 127.0.0.1:$RTP (TLS)" "$T/regional.log" || die "the regional tier did not come up"
# rserved: OCSP POSTs the regional tier has answered.
rserved() {
	curl -s -m 5 -o "$T/rm" "$R_ADMIN/metrics"
	metric_sum "$T/rm" '^stapled_requests_total\{route="ocsp_post"'
}
# rrefused: handshakes the regional tier refused for want of a client certificate.
rrefused() {
	curl -s -m 5 -o "$T/rm" "$R_ADMIN/metrics"
	metric_sum "$T/rm" "^stapled_tls_handshake_failures_total\\{listener=\"127.0.0.1:$RTP\",reason=\"no_client_cert\""
}

# ---- the edges: the regional tier over https, the private CA, and (or not) the certificate
# edge_conf OUT UPSTREAM_TLS: an edge's configuration with this upstream_tls object.
edge_conf() {
	cat >"$1" <<EOF
{
  "upstream_tls": $2,
  "ocsp": { "upstreams": [ { "url": "https://127.0.0.1:$RTP/", "name": "regional",
                             "verify_nonce": false } ],
            "anchors": [ "$ANCHORS" ], "intermediates": [ "$INTERMEDIATES" ] }
}
EOF
}
WITH_CERT="{ \"ca_file\": \"$TP/ca.pem\", \"cert_file\": \"$TP/edge.pem\", \"key_file\": \"$TP/edge.key\" }"
edge_conf "$T/edge.json" "$WITH_CERT"
edge_conf "$T/edge_nocert.json" "{ \"ca_file\": \"$TP/ca.pem\" }"
edge_conf "$T/edge_nokey.json" "{ \"ca_file\": \"$TP/ca.pem\", \"cert_file\": \"$TP/edge.pem\", \"key_file\": \"$TP/absent.key\" }"
edge_conf "$T/edge_otherkey.json" "{ \"ca_file\": \"$TP/ca.pem\", \"cert_file\": \"$TP/edge.pem\", \"key_file\": \"$TP/other.key\" }"

# ---- 1. stapled -n reads the upstream TLS files ------------------------------------
check "-n: the edge's upstream_tls loads" "$STAPLED" -n -f "$T/edge.json"
"$STAPLED" -n -f "$T/edge_nokey.json" >"$T/n_nokey.out" 2>&1
rc=$?
assert "-n: a key_file that is not there is refused, named" \
    '[ $rc -ne 0 ] && grep -q "upstream_tls.key_file $TP/absent.key: No such file" "$T/n_nokey.out"'
"$STAPLED" -n -f "$T/edge_otherkey.json" >"$T/n_other.out" 2>&1
rc=$?
assert "-n: a key that is not the client certificate's is refused" \
    '[ $rc -ne 0 ] && grep -q "does not match the certificate" "$T/n_other.out"'

# ---- 2. a miss at the edge is answered through the regional tier ---------------------
STAPLED_CACHE=$T/edge stapled_start edge -f "$T/edge.json"
mkreq "$T/req1.der" "$ICA_CERT" "$LEAF1"
post "$T/req1.der" "$T/miss.der"
check_eq "edge miss over TLS with a client certificate: HTTP 200" 200 "$HTTP_CODE"
check_eq "... successful" successful "$(resp_status "$T/miss.der")"
check "... the vendor's answer, verified by the client" ossl_verify "$T/miss.der" "$ICA_CERT" "$LEAF1"
check_eq "... through the regional tier (one OCSP POST there)" 1 "$(rserved)"
check_eq "... which asked the vendor once" 1 "$(upstream_count vendor)"
stapled_stop

# ---- 3. an edge without the client certificate: refused, tryLater --------------------
b=$(rrefused)
cp "$T/edge_nocert.json" "$T/edge_run.json"
STAPLED_CACHE=$T/edge_nocert stapled_start edge_nocert -f "$T/edge_run.json"
NC_PID=$SPID
mkreq "$T/req2.der" "$ICA_CERT" "$LEAF2"
post "$T/req2.der" "$T/nocert.der"
check_trylater "an edge without the client certificate: its client gets tryLater" "$T/nocert.der"
check "... the regional tier refused the handshake (no_client_cert)" [ "$(rrefused)" -gt "${b:-0}" ]
check_eq "... and answered nothing to it" 1 "$(rserved)"

# A reload that names a key file that is not there is refused whole.
cp "$T/edge_nokey.json" "$T/edge_run.json"
kill -HUP "$NC_PID"
wait_for_line "$T/edge_nocert.log" 'SIGHUP: configuration not reloaded' >/dev/null
check "a reload with a missing upstream_tls key_file is refused, naming it" \
    grep -q "SIGHUP: configuration not reloaded.*upstream_tls.key_file $TP/absent.key" \
    "$T/edge_nocert.log"
# The certificate and its key, by a reload: the next miss goes through.
cp "$T/edge.json" "$T/edge_run.json"
kill -HUP "$NC_PID"
wait_for_line "$T/edge_nocert.log" 'SIGHUP: configuration reloaded' >/dev/null ||
    fail "no reload line after the second SIGHUP"
post "$T/req2.der" "$T/reloaded.der"
check_eq "after a reload that gives the client certificate: the miss is answered" \
    successful "$(resp_status "$T/reloaded.der")"
check_eq "... through the regional tier" 2 "$(rserved)"
stapled_stop

# ---- 4. staplectl fetch uses the configuration's upstream_tls --------------------------
cat "$LEAF4" "$ICA_CERT" "$IDENT_CERT" "$ROOT_CERT" >"$T/chain4.pem"
ctl -C "$T/none" manifest --chain "$T/chain4.pem" --out "$T/m.json"
[ "$CTL_RC" = 0 ] || die "staplectl manifest: $(cat "$T/ctl.out")"
b=$(rserved)
ctl -f "$T/edge.json" -C "$T/none" fetch --manifest "$T/m.json" --hash sha256 --out "$T/f.jsonl"
check_eq "staplectl fetch -f edge.json through the regional tier: exit 0" 0 "$CTL_RC"
check_eq "... both CertIDs fetched" 2 "$(grep -c '"type":"entry"' "$T/f.jsonl")"
check_eq "... asked of the regional tier" $((b + 2)) "$(rserved)"
ctl -f "$T/edge_nokey.json" -C "$T/none" fetch --manifest "$T/m.json" --out "$T/f3.jsonl"
check_eq "staplectl fetch with a missing upstream_tls key_file: usage, exit 2" 2 "$CTL_RC"
check "... naming it" grep -q "upstream_tls.key_file $TP/absent.key" "$T/ctl.out"

it_done
