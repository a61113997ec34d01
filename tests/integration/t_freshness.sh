#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Freshness: a refresh before nextUpdate, `-n` configuration checks, SIGHUP with a broken and with a valid config.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_freshness
pki_make

# Responses valid for one minute (the shortest openssl ocsp can sign).
farm_start UP one -nmin 1 -rother CHAIN

# cfg FILE UPSTREAM_URL [extra ocsp members, raw JSON, comma-led]
cfg() {
	cat >"$1" <<EOF
{
  "ocsp": {
    "upstreams": [ "$2" ],
    "anchors": [ "$ANCHORS" ],
    "intermediates": [ "$INTERMEDIATES" ],
    "refresh": { "fraction": 0.2, "min_interval_s": 5 }${3:-}
  }
}
EOF
}

# ---- 1. a refresh before nextUpdate, with no client traffic ------------------
cfg "$T/fresh.json" "http://127.0.0.1:$UP/"
STAPLED_CACHE=$T/c1 stapled_start d1 -f "$T/fresh.json"
mkreq "$T/r1.der" "$ICA_CERT" "$LEAF1"
post "$T/r1.der" "$T/first.der"
check_eq "warm: successful" successful "$(resp_status "$T/first.der")"
tu1=$(this_update "$T/first.der")
nu1=$(date -d "$(next_update "$T/first.der")" +%s)
note "first answer: thisUpdate $tu1, nextUpdate in $((nu1 - $(date +%s))) s"
# fraction 0.2 of 60 s = 12 s (+-10 %), clamped to >= 5 s: wait up to 45 s.
i=0
while [ "$(upstream_count one)" -lt 2 ] && [ $i -lt 450 ]; do sleep 0.1; i=$((i + 1)); done
refreshed_at=$(date +%s)
check "refresh: the upstream was asked again with no client traffic (after $((i / 10)) s)" \
    [ "$(upstream_count one)" -ge 2 ]
assert "refresh: it happened before nextUpdate ($((nu1 - refreshed_at)) s to spare)" \
    '[ "$refreshed_at" -lt "$nu1" ]'
sleep 0.5
post "$T/r1.der" "$T/second.der"
tu2=$(this_update "$T/second.der")
note "served after the refresh: thisUpdate $tu2"
check_eq "after the refresh: successful" successful "$(resp_status "$T/second.der")"
assert "after the refresh: the served response is the new one (thisUpdate changed)" \
    '[ -n "$tu2" ] && [ "$tu1" != "$tu2" ]'
check "after the refresh: the new response verifies" \
    ossl_verify "$T/second.der" "$ICA_CERT" "$LEAF1"
metrics_get "$T/m1"
assert "refresh: stapled_refresh_total{result=\"ok\"} moved" \
    '[ "$(metric_sum "$T/m1" "^stapled_refresh_total.*result=\"ok\"")" -ge 1 ]'
stapled_stop
check_eq "SIGTERM: exit 0" 0 "$BG_RC"

# ---- 2. -n: configuration check ----------------------------------------------
cfg "$T/valid.json" "http://127.0.0.1:$UP/"
"$STAPLED" -n -f "$T/valid.json" >"$T/n_valid.out" 2>&1
check_eq "-n with a valid config: exit 0" 0 "$?"
cat >"$T/unknown.json" <<EOF
{
  "ocsp": {
    "upstreams": [ "http://127.0.0.1:$UP/" ],
    "no_such_key": 1
  }
}
EOF
"$STAPLED" -n -f "$T/unknown.json" >"$T/n_unknown.out" 2>"$T/n_unknown.err"
rc=$?
note "-n unknown key: exit $rc: $(head -n1 "$T/n_unknown.err")"
check "-n with an unknown key: non-zero exit" [ $rc -ne 0 ]
check "-n with an unknown key: file:line:column: message on stderr" \
    grep -Eq "unknown\.json:4:[0-9]+: .*no_such_key" "$T/n_unknown.err"
printf '{\n  "listen": "127.0.0.1:1",\n  "ocsp": { "mode": "sideways" }\n}\n' >"$T/badval.json"
"$STAPLED" -n -f "$T/badval.json" >/dev/null 2>"$T/n_badval.err"
rc=$?
check "-n with a bad value: non-zero and file:line:column ($(head -n1 "$T/n_badval.err"))" \
    eval '[ $rc -ne 0 ] && grep -Eq "badval\.json:3:[0-9]+: " "$T/n_badval.err"'
printf '{\n  "cache_dir": "x",\n}\n' >"$T/syntax.json"
"$STAPLED" -n -f "$T/syntax.json" >/dev/null 2>"$T/n_syntax.err"
rc=$?
check "-n with a JSON syntax error: non-zero and file:line:column ($(head -n1 "$T/n_syntax.err"))" \
    eval '[ $rc -ne 0 ] && grep -Eq "syntax\.json:[0-9]+:[0-9]+: " "$T/n_syntax.err"'

# ---- 3. SIGHUP: a broken config keeps the old one; a valid one takes effect ----
# Day-long answers here: no refresh may add upstream requests or change the
# served bytes while the checks run, however slow the machine.
farm_start UP3 three -ndays 1 -rother CHAIN
cfg "$T/live.json" "http://127.0.0.1:$UP3/"
STAPLED_CACHE=$T/c3 stapled_start d3 -f "$T/live.json"
pid3=$SPID
mkreq "$T/h1.der" "$ICA_CERT" "$LEAF2"
post "$T/h1.der" "$T/h1.out"
check_eq "before SIGHUP: successful" successful "$(resp_status "$T/h1.out")"
n_three=$(upstream_count three)

printf '{\n  "ocsp": { "upstreams": [ "http://127.0.0.1:1/" ], \n' >"$T/live.json"	# truncated JSON
kill -HUP "$pid3"
wait_for_line "$T/d3.log" 'SIGHUP' >/dev/null
sleep 0.3
check "broken config on SIGHUP: the daemon keeps running" kill -0 "$pid3"
check "broken config on SIGHUP: the error is logged with file:line:column" \
    grep -Eq "SIGHUP.*live\.json:[0-9]+:[0-9]+" "$T/d3.log"
post "$T/h1.der" "$T/h1b.out"
check_bytes "broken config on SIGHUP: cached entries still served" "$T/h1.out" "$T/h1b.out"
mkreq "$T/h2.der" "$ICA_CERT" "$LEAF3"
post "$T/h2.der" "$T/h2.out"
check_eq "broken config on SIGHUP: a miss still uses the old upstream" successful "$(resp_status "$T/h2.out")"
check_eq "broken config on SIGHUP: the old upstream got that miss" $((n_three + 1)) "$(upstream_count three)"

# A valid change: a new upstream, the old one gone.
farm_start UP2 two -ndays 1 -rother CHAIN
farm_stop three
cfg "$T/live.json" "http://127.0.0.1:$UP2/"
lines=$(grep -c 'SIGHUP' "$T/d3.log")
kill -HUP "$pid3"
i=0
while [ "$(grep -c 'SIGHUP' "$T/d3.log")" -le "$lines" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
check "valid config on SIGHUP: reload logged" grep -q 'SIGHUP: configuration reloaded' "$T/d3.log"
mkreq "$T/h3.der" "$ICA_CERT" "$LEAF4"
post "$T/h3.der" "$T/h3.out"
check_eq "valid config on SIGHUP: a miss is answered by the new upstream" successful "$(resp_status "$T/h3.out")"
check_eq "valid config on SIGHUP: the new upstream was asked" 1 "$(upstream_count two)"
post "$T/h1.der" "$T/h1c.out"
check_bytes "valid config on SIGHUP: the cache is kept" "$T/h1.out" "$T/h1c.out"
stapled_stop
check_eq "after two SIGHUPs, SIGTERM still exits 0" 0 "$BG_RC"

it_done
