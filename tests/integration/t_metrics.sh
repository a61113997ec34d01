#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# /metrics across a reload: counters keep counting, removed upstreams vanish;
# upstream_up, build and process metrics, histograms, results by their real
# names; the warning and the start-up line; the sampled access log.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_metrics
pki_make

farm_start UP good -ndays 1 -rother CHAIN
GOOD=http://127.0.0.1:$UP
DEAD=http://127.0.0.1:$(dead_port 1)
# A name that cannot resolve (RFC 6761 reserves .invalid; a resolver that
# does not answer at all would turn this into a timeout).
NXHOST=http://stapled-test.invalid:1
# TLS to a plain HTTP port: the handshake fails.
PLAIN=https://127.0.0.1:$UP

# config FILE OCSP_UPSTREAMS_JSON: named OCSP upstreams, a PCCS one that
# does not resolve, a KDS one that speaks no TLS, every answer in the
# access log.
config() {
	cat >"$1" <<JSON
{
  "access_log_sample": 1,
  "ocsp": {
    "anchors": ["$ANCHORS"], "intermediates": ["$INTERMEDIATES"],
    "upstreams": $2
  },
  "pccs": { "upstreams": [{"url": "$NXHOST", "name": "nowhere"}] },
  "amd_kds": { "upstreams": [{"url": "$PLAIN", "name": "plain"}] }
}
JSON
}
config "$T/two.json" "[{\"url\": \"$GOOD\", \"name\": \"primary\"}, {\"url\": \"$DEAD\", \"name\": \"spare\"}]"
config "$T/one.json" "[{\"url\": \"$GOOD\", \"name\": \"primary\"}]"
cp "$T/two.json" "$T/conf.json"

PRI='service="ocsp",upstream="primary"'
SPARE='service="ocsp",upstream="spare"'
started=$(date +%s.%N)
STAPLED_CACHE=$T/c1 stapled_start d1 -f "$T/conf.json"

# ---- before any exchange -------------------------------------------------------
check "start-up line names every service's upstreams" \
    grep -Eq "ready: .*upstreams: ocsp: primary \($GOOD\), spare \($DEAD\); rim: .*; pccs: nowhere \($NXHOST\); kds: " "$T/d1.log"
metrics_get "$T/m0"
check_eq "up is 0 for an upstream never asked" 0 "$(metric_sum "$T/m0" "^stapled_upstream_up.$PRI")"
check_eq "never a success: last_success is 0" 0 \
    "$(metric_sum "$T/m0" "^stapled_upstream_last_success_timestamp_seconds.$PRI")"
check "stapled_build_info names stapled, OpenSSL, libcurl and LMDB" \
    grep -Eq '^stapled_build_info\{version="[^"]+",openssl="[0-9][^"]*",libcurl="[0-9][^"]*",lmdb="[0-9.]+"\} 1$' "$T/m0"
for m in process_cpu_seconds_total process_resident_memory_bytes process_open_fds \
    process_max_fds process_start_time_seconds; do
	check "$m is exported" grep -Eq "^$m [0-9.e+]+$" "$T/m0"
done
assert "process_resident_memory_bytes is above 1 MiB" \
    '[ "$(metric_sum "$T/m0" "^process_resident_memory_bytes")" -gt 1048576 ]'
# The clock main read at start, not /proc/stat (hidden by the unit's ProcSubset=pid).
st=$(sed -n 's/^process_start_time_seconds //p' "$T/m0")
lo=$(awk -v s="$started" 'BEGIN { printf "%.2f", s - 1 }')
hi=$(awk -v s="$started" 'BEGIN { printf "%.2f", s + 5 }')
assert "process_start_time_seconds (${st:-none}) is within 5 s after the test started stapled ($started)" \
    '[ -n "$st" ] && between "$st" "$lo" "$hi"'

# ---- one miss and two hits -----------------------------------------------------
mkreq "$T/r1.der" "$ICA_CERT" "$LEAF1"
for i in 1 2 3; do post "$T/r1.der" "$T/a1.der"; done
check_eq "the third answer is good" successful "$(resp_status "$T/a1.der")"
metrics_get "$T/m1"
check_eq "after a success, primary is up" 1 "$(metric_sum "$T/m1" "^stapled_upstream_up.$PRI")"
assert "last_success is now" \
    '[ $(( $(date +%s) - $(metric_sum "$T/m1" "^stapled_upstream_last_success_timestamp_seconds.$PRI") )) -lt 60 ]'
check_eq "two hits in the hit histogram" 2 \
    "$(metric_sum "$T/m1" '^stapled_hit_latency_seconds_count.service="ocsp"')"
check_eq "the hit histogram is cumulative: +Inf holds both" 2 \
    "$(metric_sum "$T/m1" '^stapled_hit_latency_seconds_bucket.service="ocsp",le="\+Inf"')"
check_eq "one upstream exchange in primary's latency histogram" 1 \
    "$(metric_sum "$T/m1" "^stapled_upstream_latency_seconds_count.$PRI")"
check_eq "one verification timed" 1 "$(metric_sum "$T/m1" '^stapled_verify_seconds_count.service="ocsp"')"
check "the oldest OCSP entry's remaining validity shows up (refresh walk)" \
    metric_wait "$T/m1w" '^stapled_oldest_entry_remaining_seconds.service="ocsp"' 3600
assert "... and is at most a day" \
    '[ "$(metric_sum "$T/m1w" "^stapled_oldest_entry_remaining_seconds.service=\"ocsp\"")" -le 86400 ]'

# ---- PCCS, nothing resolvable: a 503 counted as such, a warning naming DNS --------
curl -s -m 20 -o "$T/p1" -w '%{http_code}\n' "$SURL/sgx/certification/v4/rootcacrl" >"$T/p1.code"
check_eq "PCCS with no upstream reachable: 503" 503 "$(cat "$T/p1.code")"
metrics_get "$T/m2"
check_eq "counted as result=\"unavailable\"" 1 \
    "$(metric_sum "$T/m2" '^stapled_requests_total.route="pccs",result="unavailable"')"
check "no PCCS result is named trylater" \
    bash -c "! grep -q 'route=\"pccs\",result=\"trylater\"' '$T/m2'"
check_eq "the failure's reason is dns" 1 \
    "$(metric_sum "$T/m2" '^stapled_upstream_failures_total.service="pccs",upstream="nowhere",reason="dns"')"
check "a client left without an upstream answer is a warning naming DNS" \
    grep -Eq '^stapled: (<4>)?warning: pccs: every upstream failed, answering without them: nowhere: dns: ' "$T/d1.log"
curl -s -m 20 -o "$T/k1" -w '%{http_code}\n' "$SURL/vcek/v1/Milan/cert_chain" >"$T/k1.code"
check_eq "KDS over TLS to a plain port: 503" 503 "$(cat "$T/k1.code")"
metrics_get "$T/m2k"
check_eq "the failure's reason is tls" 1 \
    "$(metric_sum "$T/m2k" '^stapled_upstream_failures_total.service="kds",upstream="plain",reason="tls"')"
check "the warning names TLS" \
    grep -Eq '^stapled: (<4>)?warning: kds: every upstream failed, answering without them: plain: tls: ' "$T/d1.log"

# ---- SIGHUP, the spare removed: counters carry on -------------------------------
req0=$(metric_sum "$T/m2" "^stapled_upstream_requests_total.$PRI")
hit0=$(metric_sum "$T/m2" '^stapled_requests_total.route="ocsp_post",result="hit"')
check_eq "before the reload: primary asked once" 1 "$req0"
cp "$T/one.json" "$T/conf.json"
kill -HUP "$SPID"
wait_for_line "$T/d1.log" 'SIGHUP: configuration reloaded' >/dev/null ||
    fail "the reload was not logged"
check "the reload line names the upstreams" \
    grep -Eq "SIGHUP: configuration reloaded; upstreams: ocsp: primary \($GOOD\); rim: .*; pccs: nowhere" "$T/d1.log"
metrics_get "$T/m3"
check_eq "after SIGHUP: primary's requests are not reset" "$req0" \
    "$(metric_sum "$T/m3" "^stapled_upstream_requests_total.$PRI")"
check_eq "after SIGHUP: primary is still up (its last exchange succeeded)" 1 \
    "$(metric_sum "$T/m3" "^stapled_upstream_up.$PRI")"
check_eq "after SIGHUP: its latency histogram is kept" 1 \
    "$(metric_sum "$T/m3" "^stapled_upstream_latency_seconds_count.$PRI")"
check_eq "after SIGHUP: PCCS's dns failure is still counted" 1 \
    "$(metric_sum "$T/m3" '^stapled_upstream_failures_total.service="pccs",upstream="nowhere",reason="dns"')"
check_eq "after SIGHUP: the upstream that failed is not up again" 0 \
    "$(metric_sum "$T/m3" '^stapled_upstream_up.service="pccs",upstream="nowhere"')"
check "after SIGHUP: the removed upstream is gone from /metrics" \
    bash -c "! grep -q '$SPARE' '$T/m3'"
# A new object: primary is asked again, and the count goes on from 1.
mkreq "$T/r2.der" "$ICA_CERT" "$LEAF2"
post "$T/r2.der" "$T/a2.der"
post "$T/r1.der" "$T/a1b.der"
metrics_get "$T/m4"
check_eq "after SIGHUP: primary's requests count on (2)" 2 \
    "$(metric_sum "$T/m4" "^stapled_upstream_requests_total.$PRI")"
check_eq "after SIGHUP: hits count on" $((hit0 + 1)) \
    "$(metric_sum "$T/m4" '^stapled_requests_total.route="ocsp_post",result="hit"')"

# ---- the access log ---------------------------------------------------------------
check "access log: the hit, with peer, method, path, status, bytes, result, latency" \
    grep -Eq '^stapled: access: 127\.0\.0\.1:[0-9]+ POST /ocsp 200 [0-9]+ ocsp_post/hit [0-9]+\.[0-9]{3} ms cache-status="stapled; hit; ttl=[0-9]+"$' "$T/d1.log"
check "access log: the miss, with its upstream" grep -Eq '^stapled: access: .* POST /ocsp 200 [0-9]+ ocsp_post/miss .* upstream=primary$' "$T/d1.log"
check "access log: the PCCS 503" \
    grep -Eq '^stapled: access: .* GET /sgx/certification/v4/rootcacrl 503 [0-9]+ pccs/unavailable ' "$T/d1.log"
check "access log: /metrics, no result noted" grep -Eq '^stapled: access: .* GET /metrics 200 [0-9]+ - ' "$T/d1.log"
stapled_stop

# ---- off by default ---------------------------------------------------------------
STAPLED_CACHE=$T/c1 stapled_start d2 --ocsp-upstream "$GOOD" \
    --ocsp-anchor "$ANCHORS" --ocsp-intermediates "$INTERMEDIATES"
post "$T/r1.der" "$T/a3.der"
check_eq "a restart: served from the store" successful "$(resp_status "$T/a3.der")"
check "no access log unless access_log_sample is set" bash -c "! grep -q 'access:' '$T/d2.log'"
stapled_stop

# ---- with /proc/stat hidden, as the shipped unit's ProcSubset=pid hides it ----
cat >"$T/noprocstat.sh" <<'SH'
#!/bin/sh
mount --bind /dev/null /proc/stat || exit 97
exec "$@"
SH
chmod +x "$T/noprocstat.sh"
if unshare -m --propagation private "$T/noprocstat.sh" true 2>/dev/null; then
	started=$(date +%s.%N)
	STAPLED_WRAP="unshare -m --propagation private $T/noprocstat.sh" \
	    STAPLED_CACHE=$T/c3 stapled_start d3 --ocsp-upstream "$GOOD" \
	    --ocsp-anchor "$ANCHORS" --ocsp-intermediates "$INTERMEDIATES"
	metrics_get "$T/m3"
	st=$(sed -n 's/^process_start_time_seconds //p' "$T/m3")
	lo=$(awk -v s="$started" 'BEGIN { printf "%.2f", s - 1 }')
	hi=$(awk -v s="$started" 'BEGIN { printf "%.2f", s + 5 }')
	assert "without /proc/stat, process_start_time_seconds (${st:-none}) is still there, within 5 s of the start" \
	    '[ -n "$st" ] && between "$st" "$lo" "$hi"'
	stapled_stop
else
	note "cannot hide /proc/stat here (no mount namespace): that check is skipped"
fi

it_done
