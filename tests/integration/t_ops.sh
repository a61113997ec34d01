#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Operations: /healthz, /readyz, /metrics after traffic; SIGTERM with a miss in flight;
# kill -9 during traffic, then the cache opens and serves.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_ops
pki_make
TRUST="--ocsp-anchor $ANCHORS --ocsp-intermediates $INTERMEDIATES"

farm_start UP good -ndays 1 -rother CHAIN

# ---- 1. health, readiness, metrics ------------------------------------------
STAPLED_CACHE=$T/c1 stapled_start d1 --ocsp-upstream "http://127.0.0.1:$UP/" $TRUST
code=$(curl -s -o "$T/healthz" -w '%{http_code}' "$SURL/healthz")
check_eq "/healthz: 200" 200 "$code"
code=$(curl -s -o "$T/readyz" -D "$T/readyz.hdr" -w '%{http_code}' "$SURL/readyz")
check_eq "/readyz: 200 (cache open and serving)" 200 "$code"
for p in healthz readyz metrics; do
	curl -s -o /dev/null -D "$T/$p.hdr" "$SURL/$p"
	check "/$p: Cache-Control: no-store (never kept by a cache in front)" \
	    grep -qi '^cache-control: no-store' "$T/$p.hdr"
done
code=$(curl -s -o "$T/m0" -D "$T/m0.hdr" -w '%{http_code}' "$SURL/metrics")
check_eq "/metrics: 200" 200 "$code"
assert "/metrics: text/plain exposition format ($(header "$T/m0.hdr" content-type))" \
    'header "$T/m0.hdr" content-type | grep -q "^text/plain"'
for name in stapled_requests_total stapled_upstream_requests_total stapled_upstream_failures_total \
    stapled_verify_failures_total stapled_cache_entries stapled_earliest_next_update_seconds \
    stapled_refresh_backlog; do
	check "/metrics has $name with HELP and TYPE" \
	    eval 'grep -q "^# TYPE $name " "$T/m0" && grep -q "^# HELP $name " "$T/m0"'
done
check "/metrics: every sample line is NAME{labels} VALUE" \
    eval '! grep -v "^#" "$T/m0" | grep -Evq "^[a-z_:][a-z0-9_:]*(\{[^}]*\})? -?[0-9.e+]+$"'
hit0=$(metric_sum "$T/m0" 'stapled_requests_total.*result="hit"')
miss0=$(metric_sum "$T/m0" 'stapled_requests_total.*result="miss"')
mal0=$(metric_sum "$T/m0" 'stapled_requests_total.*result="malformed"')

mkreq "$T/r1.der" "$ICA_CERT" "$LEAF1"
post "$T/r1.der" "$T/a1.der"
post "$T/r1.der" "$T/a1b.der"
check_bytes "miss then hit" "$T/a1.der" "$T/a1b.der"
printf 'garbage' >"$T/garbage"
post "$T/garbage" "$T/mal.der"
metrics_get "$T/m1"
check_eq "metrics: a miss moved the miss counter by 1" $((miss0 + 1)) \
    "$(metric_sum "$T/m1" 'stapled_requests_total.*result="miss"')"
check_eq "metrics: a hit moved the hit counter by 1" $((hit0 + 1)) \
    "$(metric_sum "$T/m1" 'stapled_requests_total.*result="hit"')"
check_eq "metrics: garbage moved the malformed counter by 1" $((mal0 + 1)) \
    "$(metric_sum "$T/m1" 'stapled_requests_total.*result="malformed"')"
check_eq "metrics: the upstream made one exchange" 1 \
    "$(metric_sum "$T/m1" '^stapled_upstream_requests_total')"
metric_wait "$T/m1e" '^stapled_cache_entries.*kind="ocsp"' 1
check_eq "metrics: one OCSP entry stored" 1 "$(metric_sum "$T/m1e" '^stapled_cache_entries.*kind="ocsp"')"
enu=$(metric_sum "$T/m1e" '^stapled_earliest_next_update_seconds')
assert "metrics: earliest nextUpdate is about a day away ($enu s)" \
    '[ "$enu" -gt 80000 ] && [ "$enu" -le 86400 ]'
b64=$(ocsp_b64 "$T/r1.der")
curl -s -o /dev/null "$SURL/ocsp/$b64"
metrics_get "$T/m2"
assert "metrics: a GET hit is counted under the GET route" \
    '[ "$(metric_sum "$T/m2" "stapled_requests_total.*route=\"ocsp_get\".*result=\"hit\"")" -ge 1 ]'
stapled_stop
check_eq "SIGTERM, idle: exit 0" 0 "$BG_RC"

# ---- 2. SIGTERM during an in-flight slow miss --------------------------------
FARM_UPSTREAM_OPTS="--delay-ms 1500" farm_start USLOW slow -ndays 1 -rother CHAIN
STAPLED_CACHE=$T/c2 stapled_start d2 --ocsp-upstream "http://127.0.0.1:$USLOW/" $TRUST
mkreq "$T/r2.der" "$ICA_CERT" "$LEAF2"
curl -s -m 20 -o "$T/inflight.der" -w '%{http_code}' -H "$CT_REQ" \
    --data-binary @"$T/r2.der" "$SURL/ocsp" >"$T/inflight.code" 2>/dev/null &
cpid=$!
# Wait until the request has reached the upstream, then stop the daemon.
i=0
while [ "$(upstream_count slow)" -lt 1 ] && [ $i -lt 50 ]; do sleep 0.05; i=$((i + 1)); done
sleep 0.2
t0=$(now_ms)
kill -TERM "$SPID"
wait "$cpid"
bg_wait "$SPID"
t1=$(now_ms)
check_eq "SIGTERM with a miss in flight: the client still gets HTTP 200" 200 "$(cat "$T/inflight.code")"
check_eq "SIGTERM with a miss in flight: ... and the genuine answer" successful "$(resp_status "$T/inflight.der")"
check_eq "SIGTERM with a miss in flight: the daemon exits 0" 0 "$BG_RC"
note "SIGTERM to exit with a miss in flight: $((t1 - t0)) ms"
code=$(curl -s -o /dev/null -m 2 -w '%{http_code}' "$SURL/healthz")
check_eq "after SIGTERM: the listener is gone" 000 "$code"
# The answer finished before exit was stored.
STAPLED_CACHE=$T/c2 stapled_start d2b --ocsp-upstream "http://127.0.0.1:$(dead_port 1)/" $TRUST
post "$T/r2.der" "$T/inflight2.der"
check_bytes "the in-flight answer was stored before exit" "$T/inflight.der" "$T/inflight2.der"
stapled_stop
farm_stop slow

# ---- 3. kill -9 during traffic, then restart -----------------------------------
STAPLED_CACHE=$T/c3 stapled_start d3 --ocsp-upstream "http://127.0.0.1:$UP/" $TRUST
for i in 1 2 3 4 5 6 7 8; do
	eval "leaf=\$LEAF$i"
	mkreq "$T/k$i.der" "$ICA_CERT" "$leaf"
	post "$T/k$i.der" "$T/k$i.resp"
	[ "$(resp_status "$T/k$i.resp")" = successful ] || fail "warm-up: LEAF$i not answered"
done
# Traffic that writes (SHA-384 misses) and reads (hits) while the daemon dies.
(
	n=0
	while [ $n -lt 200 ]; do
		for i in 1 2 3 4 5 6 7 8; do
			eval "leaf=\$LEAF$i"
			openssl ocsp -sha384 -issuer "$ICA_CERT" -cert "$leaf" -reqout "$T/w.der" >/dev/null 2>&1
			curl -s -m 5 -o /dev/null -H "$CT_REQ" --data-binary @"$T/w.der" "$SURL/ocsp"
			curl -s -m 5 -o /dev/null -H "$CT_REQ" --data-binary @"$T/k$i.der" "$SURL/ocsp"
		done
		n=$((n + 1))
	done
) >/dev/null 2>&1 &
traffic=$!
IT_PIDS="$IT_PIDS $traffic"
sleep 1
bg_kill "$SPID" KILL
note "kill -9 during traffic: wait status $BG_RC"
kill "$traffic" 2>/dev/null; wait "$traffic" 2>/dev/null; bg_forget "$traffic"
farm_stop good
STAPLED_CACHE=$T/c3 stapled_start d3b --ocsp-upstream "http://127.0.0.1:$(dead_port 1)/" $TRUST
code=$(curl -s -o /dev/null -w '%{http_code}' "$SURL/readyz")
check_eq "after kill -9: the cache opens (/readyz 200)" 200 "$code"
served=0
for i in 1 2 3 4 5 6 7 8; do
	post "$T/k$i.der" "$T/k$i.after"
	cmp -s "$T/k$i.resp" "$T/k$i.after" && served=$((served + 1))
done
check_eq "after kill -9: every entry written before the crash is served byte for byte" 8 "$served"
metric_wait "$T/m3" '^stapled_cache_entries.*kind="ocsp"' 8
assert "after kill -9: at least the 8 entries are in the store ($(metric_sum "$T/m3" '^stapled_cache_entries.*kind="ocsp"'))" \
    '[ "$(metric_sum "$T/m3" "^stapled_cache_entries.*kind=\"ocsp\"")" -ge 8 ]'
stapled_stop
check_eq "after kill -9 and restart: SIGTERM exits 0" 0 "$BG_RC"

it_done
