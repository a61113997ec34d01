#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Failover: dead, 503, blackholed (hedging) and 429 upstreams; tryLater deadlines;
# single flight; upstream_first mode.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_failover
pki_make

farm_start UP good -ndays 1 -rother CHAIN
GOOD=http://127.0.0.1:$UP/
DEAD=http://127.0.0.1:$(dead_port 1)/
DEAD2=http://127.0.0.1:$(dead_port 2)/
upstream_start U503 s503 --mode status:503 --count-file "$T/s503.count"
upstream_start UHANG hang --mode hang --count-file "$T/hang.count"
upstream_start U429 s429 --mode 429:60 --count-file "$T/s429.count"
TRUST="--ocsp-anchor $ANCHORS --ocsp-intermediates $INTERMEDIATES"

# config FILE key=value...: a config with our trust and the given ocsp keys
# (values are raw JSON).
config() {
	_f=$1; shift
	{
		printf '{\n  "ocsp": {\n'
		printf '    "anchors": ["%s"],\n    "intermediates": ["%s"]' "$ANCHORS" "$INTERMEDIATES"
		for _kv in "$@"; do printf ',\n    "%s": %s' "${_kv%%=*}" "${_kv#*=}"; done
		printf '\n  }\n}\n'
	} >"$_f"
}

# ---- 1. [dead port, 503, good] -> the good one answers ----------------------
STAPLED_CACHE=$T/c1 stapled_start d1 --ocsp-upstream "$DEAD" \
    --ocsp-upstream "http://127.0.0.1:$U503/" --ocsp-upstream "$GOOD" $TRUST
mkreq "$T/r1.der" "$ICA_CERT" "$LEAF1"
post "$T/r1.der" "$T/a1.der"
note "dead, 503, good: HTTP $HTTP_CODE in $HTTP_TIME s"
check_eq "dead, 503, good: successful answer" successful "$(resp_status "$T/a1.der")"
check "dead, 503, good: the answer verifies" \
    ossl_verify "$T/a1.der" "$ICA_CERT" "$LEAF1"
check_eq "dead, 503, good: the 503 upstream was tried once" 1 "$(upstream_count s503)"
check_eq "dead, 503, good: the good upstream answered once" 1 "$(upstream_count good)"
# Connection refused and 503 are immediate failures: no reason to wait for
# the hedge timer (500 ms) before the next upstream.
assert_figure "dead, 503, good: failover is immediate, not paced by hedging ($HTTP_TIME s < 0.4 s)" \
    'lt "$HTTP_TIME" 0.4'
metrics_get "$T/m1"
assert "upstream failures are counted by upstream" \
    '[ "$(metric_sum "$T/m1" "^stapled_upstream_failures_total")" -ge 2 ]'
stapled_stop

# ---- 2. blackholed first, hedge_ms 600 -> answered by the second ------------
config "$T/hedge.json" "upstreams=[\"http://127.0.0.1:$UHANG/\", \"$GOOD\"]" \
    hedge_ms=600 connect_timeout_ms=4000 timeout_ms=10000
STAPLED_CACHE=$T/c2 stapled_start d2 -f "$T/hedge.json"
mkreq "$T/r2.der" "$ICA_CERT" "$LEAF2"
post "$T/r2.der" "$T/a2.der"
note "blackholed first, hedge 600 ms: HTTP $HTTP_CODE in $HTTP_TIME s"
check_eq "hedging: successful answer from the second upstream" successful "$(resp_status "$T/a2.der")"
check_eq "hedging: the blackholed upstream was asked" 1 "$(upstream_count hang)"
assert "hedging: answered well under the connect timeout ($HTTP_TIME s < 2.0 s)" 'lt "$HTTP_TIME" 2.0'
assert "hedging: not before the hedge delay ($HTTP_TIME s >= 0.55 s)" '! lt "$HTTP_TIME" 0.55'
# Hedged over twice, the blackholed upstream cools down: the next miss goes
# straight to the second one instead of paying the hedge delay again.
mkreq "$T/r2b.der" "$ICA_CERT" "$LEAF3"
post "$T/r2b.der" "$T/a2b.der"
mkreq "$T/r2c.der" "$ICA_CERT" "$LEAF4"
post "$T/r2c.der" "$T/a2c.der"
note "after two hedged misses: HTTP $HTTP_CODE in $HTTP_TIME s"
check_eq "hedging: the third miss is answered" successful "$(resp_status "$T/a2c.der")"
check_eq "hedging: a blackholed upstream hedged over twice is left to cool down" 2 \
    "$(upstream_count hang)"
# A wide hedge (600 ms) so that a loaded machine's own delay is not read as one.
assert "hedging: the third miss does not wait for the hedge ($HTTP_TIME s < 0.45 s)" \
    'lt "$HTTP_TIME" 0.45'
stapled_stop

# ---- 3. 429 with Retry-After: the upstream is skipped while it cools down ---
before=$(upstream_count good)
STAPLED_CACHE=$T/c3 stapled_start d3 --ocsp-upstream "http://127.0.0.1:$U429/" \
    --ocsp-upstream "$GOOD" $TRUST
mkreq "$T/r3.der" "$ICA_CERT" "$LEAF3"
post "$T/r3.der" "$T/a3.der"
check_eq "429: the next upstream answers" successful "$(resp_status "$T/a3.der")"
check_eq "429: asked once" 1 "$(upstream_count s429)"
mkreq "$T/r4.der" "$ICA_CERT" "$LEAF4"
post "$T/r4.der" "$T/a4.der"
check_eq "429: another miss is answered" successful "$(resp_status "$T/a4.der")"
check_eq "429 + Retry-After 60: skipped for the next miss (still asked once)" 1 "$(upstream_count s429)"
check_eq "429: the good upstream got both misses" $((before + 2)) "$(upstream_count good)"
stapled_stop

# ---- 3b. 404 is an answer (tryLater for OCSP), reset and garbage are failures ----
upstream_start U404 s404 --mode status:404 --count-file "$T/s404.count"
upstream_start URST rst --mode reset --count-file "$T/rst.count"
upstream_start UGRB grb --mode garbage --count-file "$T/grb.count"
STAPLED_CACHE=$T/c3b stapled_start d3b --ocsp-upstream "http://127.0.0.1:$U404/" \
    --ocsp-upstream "$GOOD" $TRUST
before=$(upstream_count good)
mkreq "$T/r404.der" "$ROOT_CERT" "$IDENT_CERT"
post "$T/r404.der" "$T/a404.der"
check_trylater "404 from the first upstream: an answer, so the client gets tryLater" "$T/a404.der"
check_eq "404: the next upstream is not asked" "$before" "$(upstream_count good)"
stapled_stop
STAPLED_CACHE=$T/c3c stapled_start d3c --ocsp-upstream "http://127.0.0.1:$URST/" \
    --ocsp-upstream "http://127.0.0.1:$UGRB/" --ocsp-upstream "$GOOD" $TRUST
post "$T/r404.der" "$T/arg.der"
note "reset, garbage, good: HTTP $HTTP_CODE in $HTTP_TIME s"
check_eq "reset, garbage, good: the good upstream answers" successful "$(resp_status "$T/arg.der")"
check_eq "reset, garbage, good: the resetting upstream was tried" 1 "$(upstream_count rst)"
check_eq "reset, garbage, good: the garbage upstream was tried" 1 "$(upstream_count grb)"
stapled_stop

# ---- 4. all dead -> tryLater within ~100 ms ----------------------------------
STAPLED_CACHE=$T/c4 stapled_start d4 --ocsp-upstream "$DEAD" --ocsp-upstream "$DEAD2" $TRUST
mkreq "$T/r5.der" "$ICA_CERT" "$LEAF5"
post "$T/r5.der" "$T/a5.der"
note "all upstreams dead: HTTP $HTTP_CODE in $HTTP_TIME s"
check_trylater "all dead: HTTP 200 tryLater" "$T/a5.der"
check_eq "all dead: Content-Type application/ocsp-response" application/ocsp-response \
    "$(header "$T/a5.der.hdr" content-type)"
assert "all dead: tryLater quickly ($HTTP_TIME s < 1 s)" 'lt "$HTTP_TIME" 1'
post "$T/r5.der" "$T/a5b.der"
note "all upstreams dead, again (cooldowns): $HTTP_TIME s"
check_trylater "all dead, second attempt: tryLater" "$T/a5b.der"
assert "all dead, second attempt: quick ($HTTP_TIME s < 1 s)" 'lt "$HTTP_TIME" 1'
if [ -d "$VECTORS/derived/ocsp_requests" ]; then
	for v in "$VECTORS"/derived/ocsp_requests/*_nonce.der; do
		post "$v" "$T/nv.der"
		check_trylater "real NVIDIA request ${v##*/} with dead upstreams: tryLater, not malformed" "$T/nv.der"
	done
fi
metrics_get "$T/m4"
assert "tryLater answers are counted" \
    '[ "$(metric_sum "$T/m4" "stapled_requests_total.*result=\"trylater\"")" -ge 2 ]'
stapled_stop

# All 503: also tryLater, never a 5xx passed through.
STAPLED_CACHE=$T/c4b stapled_start d4b --ocsp-upstream "http://127.0.0.1:$U503/" $TRUST
post "$T/r5.der" "$T/a5c.der"
check_trylater "only upstream answers 503: client gets 200 tryLater, not 503" "$T/a5c.der"
stapled_stop

# ---- 5. the only upstream hangs, client_budget_ms 1000 -> tryLater at ~1 s ---
config "$T/budget.json" "upstreams=\"http://127.0.0.1:$UHANG/\"" client_budget_ms=1000 \
    connect_timeout_ms=2000 timeout_ms=10000
STAPLED_CACHE=$T/c5 stapled_start d5 -f "$T/budget.json"
mkreq "$T/r6.der" "$ICA_CERT" "$LEAF6"
post "$T/r6.der" "$T/a6.der"
note "only upstream blackholed, client_budget_ms 1000: HTTP $HTTP_CODE in $HTTP_TIME s"
check_trylater "blackholed: tryLater when the budget runs out" "$T/a6.der"
assert "blackholed: answered between 0.9 and 2.5 s ($HTTP_TIME s)" 'between "$HTTP_TIME" 0.9 2.5'
# Gone, so that the fetch it holds fails now: SIGTERM lets a fetch in flight
# run to its timeout (10 s here) before the daemon exits.
bg_kill "$UHANG_PID"
stapled_stop

# ---- 6. single flight: 50 concurrent misses, one upstream request -----------
FARM_UPSTREAM_OPTS="--delay-ms 1500" farm_start USLOW slow -ndays 1 -rother CHAIN
STAPLED_CACHE=$T/c6 stapled_start d6 --ocsp-upstream "http://127.0.0.1:$USLOW/" $TRUST
mkreq "$T/r7.der" "$ICA_CERT" "$LEAF7"
pids=""
for i in $(seq 1 50); do
	curl -s -m 20 -o "$T/sf.$i" -w '%{http_code}\n' -H "$CT_REQ" \
	    --data-binary @"$T/r7.der" "$SURL/ocsp" >"$T/sf.$i.code" 2>/dev/null &
	pids="$pids $!"
done
for p in $pids; do wait "$p"; done
n200=$(cat "$T"/sf.*.code | grep -c '^200$')
same=0
for i in $(seq 1 50); do cmp -s "$T/sf.1" "$T/sf.$i" && same=$((same + 1)); done
note "single flight: $n200/50 HTTP 200, $same/50 identical, $(upstream_count slow) upstream request(s)"
check_eq "single flight: 50 concurrent misses made exactly 1 upstream request" 1 "$(upstream_count slow)"
check_eq "single flight: all 50 clients got HTTP 200" 50 "$n200"
check_eq "single flight: all 50 got the same bytes" 50 "$same"
check_eq "single flight: and those bytes are a successful answer" successful "$(resp_status "$T/sf.1")"
stapled_stop
farm_stop slow

# ---- 7. upstream_first: fresh when the upstream lives, cache when it is dead --
farm_start UP2 good2 -ndays 1 -rother CHAIN
config "$T/uf.json" "upstreams=\"http://127.0.0.1:$UP2/\"" 'mode="upstream_first"'
STAPLED_CACHE=$T/c7 stapled_start d7 -f "$T/uf.json"
client() {
	openssl ocsp -url "$SURL/ocsp" -CAfile "$ANCHORS" -verify_other "$INTERMEDIATES" \
	    -issuer "$ICA_CERT" -cert "$LEAF8" -respout "$2" >"$1" 2>&1
}
client "$T/uf1.out" "$T/uf1.der"
check "upstream_first: first answer carries the client's nonce" eval '! grep -qi nonce "$T/uf1.out"'
client "$T/uf2.out" "$T/uf2.der"
check "upstream_first: second answer is fresh (its nonce matches, no cache hit)" \
    eval '! grep -qi nonce "$T/uf2.out" && grep -q ": good" "$T/uf2.out"'
check_eq "upstream_first: both went upstream" 2 "$(upstream_count good2)"
farm_stop good2
client "$T/uf3.out" "$T/uf3.der"
check "upstream_first, upstream dead: falls back to the cached answer" \
    eval 'cmp -s "$T/uf3.der" "$T/uf2.der" || cmp -s "$T/uf3.der" "$T/uf1.der"'
check "upstream_first fallback: the client sees the old nonce" grep -qi "nonce verify error" "$T/uf3.out"
stapled_stop

# ---- 8. the store's write lock held elsewhere (a long import): hits go on ----
# The daemon's commits run on its writer thread: while another process holds
# the write lock, hits and /metrics are answered; a miss is answered once its
# answer is stored, and a second client asking for it meanwhile joins that
# job instead of fetching again.
STAPLED_CACHE=$T/c8 stapled_start d8 --ocsp-upstream "$GOOD" $TRUST
mkreq "$T/r8a.der" "$ICA_CERT" "$LEAF1"
mkreq "$T/r8b.der" "$ICA_CERT" "$LEAF2"
post "$T/r8a.der" "$T/a8a.der"
check_eq "lock held elsewhere: the first answer is stored" successful "$(resp_status "$T/a8a.der")"
before=$(upstream_count good)
mkfifo "$T/hold.in"
python3 "$top_srcdir/tests/integration/hold_write.py" "$T/c8" <"$T/hold.in" >"$T/hold.out" 2>&1 &
hold_pid=$!
# fd 7 is the helper's stdin: closing it lets the lock go (no child may inherit it).
exec 7>"$T/hold.in"
for _i in $(seq 100); do grep -q held "$T/hold.out" 2>/dev/null && break; sleep 0.1; done
check "lock held elsewhere: the helper holds the store's write lock" grep -q held "$T/hold.out"
curl -s -m 20 -o "$T/m8.1" -w '%{http_code}\n' -H "$CT_REQ" --data-binary @"$T/r8b.der" \
    "$SURL/ocsp" >"$T/m8.1.code" 2>/dev/null 7>&- &
miss1=$!
sleep 0.5
curl -s -m 20 -o "$T/m8.2" -w '%{http_code}\n' -H "$CT_REQ" --data-binary @"$T/r8b.der" \
    "$SURL/ocsp" >"$T/m8.2.code" 2>/dev/null 7>&- &
miss2=$!
sleep 0.3
post "$T/r8a.der" "$T/h8.der"
note "lock held elsewhere: a hit answered HTTP $HTTP_CODE in $HTTP_TIME s"
check_eq "lock held elsewhere: a hit is answered" 200 "$HTTP_CODE"
assert "lock held elsewhere: the hit does not wait for the lock ($HTTP_TIME s < 0.5 s)" \
    'lt "$HTTP_TIME" 0.5'
metrics_get "$T/m8"
check "lock held elsewhere: /metrics is served" grep -q '^stapled_cache_entries' "$T/m8"
check "lock held elsewhere: the misses wait for their answer to be stored" \
    eval '[ ! -s "$T/m8.1.code" ] && [ ! -s "$T/m8.2.code" ]'
exec 7>&-
wait "$hold_pid"
wait "$miss1" "$miss2"
check_eq "lock let go: the first miss is answered" 200 "$(cat "$T/m8.1.code")"
check_eq "lock let go: the second miss is answered" 200 "$(cat "$T/m8.2.code")"
check_eq "lock let go: the answer is the upstream's" successful "$(resp_status "$T/m8.1")"
check "lock let go: both clients got the same bytes" cmp -s "$T/m8.1" "$T/m8.2"
check_eq "lock let go: one upstream request for both misses" 1 \
    "$(( $(upstream_count good) - before ))"
post "$T/r8b.der" "$T/h8b.der"
check "lock let go: the stored answer is served as a hit" cmp -s "$T/h8b.der" "$T/m8.1"
stapled_stop

it_done
