#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# RFC 9211 Cache-Status on every answer: a miss that went upstream and was
# stored, a hit, a miss collapsed into another client's fetch, OCSP POST
# and GET, a RIM GET, a failure; the access log says the same, with the
# upstream that answered a miss.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_cache_status
pki_make
need_ctl

TD=$VECTORS/attestation-sdk/testdata
RIM_ID=NV_GPU_DRIVER_GH100_550.144.03
[ -f "$TD/$RIM_ID.xml" ] || die "RIM vector missing under $TD"
printf '{"id":"%s","rim":"%s","sha256":"%s","rim_format":"CORE_SWID","request_id":"t"}' \
    "$RIM_ID" "$(base64 -w0 "$TD/$RIM_ID.xml")" \
    "$(sha256sum "$TD/$RIM_ID.xml" | cut -d' ' -f1)" >"$T/rim.json"

# Each OCSP answer a little late, so that a second client finds the fetch in flight.
FARM_UPSTREAM_OPTS="--delay-ms 400" farm_start UP good -ndays 1 -rother CHAIN
upstream_start URIM rimup --mode "file:$T/rim.json" --count-file "$T/rim.count"
cat >"$T/conf.json" <<JSON
{
  "access_log_sample": 1,
  "ocsp": { "anchors": ["$ANCHORS"], "intermediates": ["$INTERMEDIATES"],
            "upstreams": [{"url": "http://127.0.0.1:$UP", "name": "good"}] },
  "rim": { "upstreams": [{"url": "http://127.0.0.1:$URIM", "name": "rimup"}] },
  "pccs": { "upstreams": [{"url": "http://127.0.0.1:$(dead_port 1)", "name": "gone"}] }
}
JSON
stapled_start d1 -f "$T/conf.json"

# ---- before any exchange: upstreams not asked yet, not down -----------------------
curl -s -m 5 -o "$T/ready0" "$SURL/readyz"
check "/readyz at start: OCSP's upstream is not asked yet" \
    grep -qx 'service ocsp: 0/1 upstreams up (1 not asked yet)' "$T/ready0"
check "/readyz at start: nothing is said to be in cooldown" \
    bash -c "! grep -q cooldown '$T/ready0'"

# status FILE.hdr: the Cache-Status value.
status() { header "$1" Cache-Status; }
# ttl_of VALUE: its ttl parameter.
ttl_of() { printf '%s\n' "$1" | sed -n 's/.*; ttl=\([0-9-]*\).*/\1/p'; }

# ---- OCSP POST: a miss, then a hit -----------------------------------------------
mkreq "$T/r1.der" "$ICA_CERT" "$LEAF1"
post "$T/r1.der" "$T/a1.der"
check_eq "the miss is answered" successful "$(resp_status "$T/a1.der")"
v=$(status "$T/a1.der.hdr")
check "a miss: went upstream and was stored ($v)" \
    grep -Eq '^stapled; fwd=miss; stored; ttl=[0-9]+$' <<<"$v"
# -ndays 1: nextUpdate a day after thisUpdate, which is about now.
assert "a miss: ttl ($(ttl_of "$v")) is the validity left, about a day" \
    'between "$(ttl_of "$v")" 86000 86400'
mkreq "$T/r1b.der" "$ICA_CERT" "$LEAF1"
post "$T/r1b.der" "$T/a1b.der"
v=$(status "$T/a1b.der.hdr")
check "a hit: from the store ($v)" grep -Eq '^stapled; hit; ttl=[0-9]+$' <<<"$v"
assert "a hit: ttl ($(ttl_of "$v")) is the validity left" \
    'between "$(ttl_of "$v")" 86000 86400'
check_eq "one upstream request for the miss and the hit" 1 "$(upstream_count good)"

# ---- two clients at once: the second joins the first's fetch ----------------------
mkreq "$T/r2a.der" "$ICA_CERT" "$LEAF2"
mkreq "$T/r2b.der" "$ICA_CERT" "$LEAF2"
post "$T/r2a.der" "$T/a2a.der" & pa=$!
sleep 0.1
post "$T/r2b.der" "$T/a2b.der"
wait "$pa"
va=$(status "$T/a2a.der.hdr"); vb=$(status "$T/a2b.der.hdr")
check_eq "two concurrent asks: one upstream request" 2 "$(upstream_count good)"
check "the first: fwd=miss, stored ($va)" \
    grep -Eq '^stapled; fwd=miss; stored; ttl=[0-9]+$' <<<"$va"
check "the second: collapsed into it ($vb)" \
    grep -Eq '^stapled; fwd=miss; stored; collapsed; ttl=[0-9]+$' <<<"$vb"
check_eq "both answered" "successful successful" \
    "$(resp_status "$T/a2a.der") $(resp_status "$T/a2b.der")"

# ---- OCSP GET: a hit -----------------------------------------------------------------
curl -s -m 10 -o "$T/g1.der" -D "$T/g1.hdr" "$SURL/ocsp/$(ocsp_b64 "$T/r1.der")"
v=$(status "$T/g1.hdr")
check "OCSP GET: a hit ($v)" grep -Eq '^stapled; hit; ttl=[0-9]+$' <<<"$v"

# ---- RIM GET: a miss, then a hit --------------------------------------------------
curl -s -m 10 -o "$T/rim1" -D "$T/rim1.hdr" "$SURL/v1/rim/$RIM_ID"
v=$(status "$T/rim1.hdr")
check "RIM GET: a miss, stored ($v)" grep -Eq '^stapled; fwd=miss; stored; ttl=[0-9]+$' <<<"$v"
curl -s -m 10 -o "$T/rim2" -D "$T/rim2.hdr" "$SURL/v1/rim/$RIM_ID"
v=$(status "$T/rim2.hdr")
check "RIM GET: a hit ($v)" grep -Eq '^stapled; hit; ttl=[0-9]+$' <<<"$v"
check "RIM GET: the hit's bytes are the upstream's" cmp -s "$T/rim2" "$T/rim.json"
check_eq "RIM: one upstream request" 1 "$(count_of "$T/rim.count")"

# ---- nothing to serve: the failure went upstream too -----------------------------
curl -s -m 10 -o /dev/null -D "$T/p1.hdr" "$SURL/sgx/certification/v4/rootcacrl"
v=$(status "$T/p1.hdr")
check_eq "PCCS, upstream dead: fwd=miss, nothing stored" "stapled; fwd=miss" "$v"

# ---- after the exchanges: up, in cooldown, still not asked -------------------------
curl -s -m 5 -o "$T/ready1" "$SURL/readyz"
check "/readyz after a miss: OCSP's upstream is up" \
    grep -qx 'service ocsp: 1/1 upstreams up' "$T/ready1"
check "/readyz after a failure: PCCS's upstream is down, in cooldown" \
    grep -qx 'service pccs: 0/1 upstreams up (all in cooldown: only cached entries are served)' "$T/ready1"
check "/readyz: KDS's upstream, never asked, is still not asked yet" \
    grep -qx 'service kds: 0/1 upstreams up (1 not asked yet)' "$T/ready1"

# ---- the access log ----------------------------------------------------------------
check "access log: the miss, with the upstream that answered" \
    grep -Eq '^stapled: access: .* POST /ocsp 200 [0-9]+ ocsp_post/miss [0-9.]+ ms cache-status="stapled; fwd=miss; stored; ttl=[0-9]+" upstream=good$' "$T/d1.log"
check "access log: the collapsed miss" \
    grep -Eq '^stapled: access: .* ocsp_post/miss [0-9.]+ ms cache-status="stapled; fwd=miss; stored; collapsed; ttl=[0-9]+" upstream=good$' "$T/d1.log"
check "access log: the hit, no upstream" \
    grep -Eq '^stapled: access: .* POST /ocsp 200 [0-9]+ ocsp_post/hit [0-9.]+ ms cache-status="stapled; hit; ttl=[0-9]+"$' "$T/d1.log"
check "access log: the RIM miss names its upstream" \
    grep -Eq "^stapled: access: .* GET /v1/rim/$RIM_ID 200 [0-9]+ rim/miss .* upstream=rimup\$" "$T/d1.log"
check "access log: the failure names no upstream (none answered)" \
    grep -Eq '^stapled: access: .* GET /sgx/certification/v4/rootcacrl 503 [0-9]+ pccs/unavailable [0-9.]+ ms cache-status="stapled; fwd=miss"$' "$T/d1.log"
check "access log: the ops endpoints carry none" \
    bash -c "! grep -E 'GET /(metrics|healthz|readyz) .*cache-status' '$T/d1.log'"
stapled_stop

# The record it wrote at the stop, as staplectl status shows it.
ctl -C "$T/cache" status
cp "$T/ctl.out" "$T/status.out"
check "staplectl status: the upstream that answered is up" \
    grep -Eq '^upstream +ocsp good http://[^ ]+ up,' "$T/status.out"
check "staplectl status: the one that failed is DOWN" \
    grep -Eq '^upstream +pccs gone http://[^ ]+ DOWN,' "$T/status.out"
check "staplectl status: one never asked is not asked yet" \
    grep -Eq '^upstream +kds [^ ]+ [^ ]+ not asked yet,' "$T/status.out"
check "staplectl status: nothing never asked is DOWN" \
    bash -c "! grep -Eq '^upstream +(kds|rim) .* DOWN' '$T/status.out'"

it_done
