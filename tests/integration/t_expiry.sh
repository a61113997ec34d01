#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Nothing expired is served: a warm cache of one-minute responses, the upstream gone,
# and the daemon restarted two minutes in the future under libfaketime.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_expiry
need_faketime
pki_make

farm_start UP one -nmin 1 -rother CHAIN
STAPLED_CACHE=$T/cache stapled_start d1 --ocsp-upstream "http://127.0.0.1:$UP/" \
    --ocsp-anchor "$ANCHORS" --ocsp-intermediates "$INTERMEDIATES"
mkreq "$T/r1.der" "$ICA_CERT" "$LEAF1"
mkreq "$T/r2.der" "$ROOT_CERT" "$IDENT_CERT"
post "$T/r1.der" "$T/warm1.der"
check_eq "warm: leaf answer successful" successful "$(resp_status "$T/warm1.der")"
post "$T/r2.der" "$T/warm2.der"
check_eq "warm: Identity CA answer successful" successful "$(resp_status "$T/warm2.der")"
note "nextUpdate of the cached answer: $(next_update "$T/warm1.der")"
stapled_stop
farm_stop one

# Control: still within validity, the restarted daemon serves them, so the
# tryLater below is about time and nothing else.
STAPLED_CACHE=$T/cache stapled_start d2 --ocsp-upstream "http://127.0.0.1:$UP/" \
    --ocsp-anchor "$ANCHORS" --ocsp-intermediates "$INTERMEDIATES"
post "$T/r1.der" "$T/now1.der"
check_bytes "control, same clock, upstream dead: the entry is served" "$T/warm1.der" "$T/now1.der"
stapled_stop

# Two minutes on (monotonic clock left alone, so timers behave).
STAPLED_WRAP=$(faketime_env "+2m") \
    STAPLED_CACHE=$T/cache stapled_start d3 --ocsp-upstream "http://127.0.0.1:$UP/" \
    --ocsp-anchor "$ANCHORS" --ocsp-intermediates "$INTERMEDIATES"
fake_date=$(curl -s -D - -o /dev/null "$SURL/healthz" | tr -d '\r' | sed -n 's/^[Dd]ate: //p')
note "the daemon's clock: ${fake_date:-no Date header}; ours: $(date -u '+%a, %d %b %Y %T GMT')"
post "$T/r1.der" "$T/late1.der"
check_trylater "two minutes later, upstream dead: the expired leaf answer is not served (tryLater)" "$T/late1.der"
post "$T/r2.der" "$T/late2.der"
check_trylater "two minutes later: the expired Identity CA answer is not served either" "$T/late2.der"
b64=$(ocsp_b64 "$T/r1.der")
code=$(curl -s -o "$T/late_get.der" -w '%{http_code}' "$SURL/ocsp/$b64")
assert "two minutes later, over GET: not served (HTTP $code, $(resp_status "$T/late_get.der"))" \
    '! cmp -s "$T/late_get.der" "$T/warm1.der"'
metrics_get "$T/m"
assert "two minutes later: the expired entries show up as such in /metrics" \
    '[ "$(metric_sum "$T/m" "^stapled_entries_expired")" -ge 1 ] || [ "$(metric_sum "$T/m" "^stapled_cache_entries")" -eq 0 ]'
# The worst state, as the shipped alert StapledNothingServable reads it:
# both wanted OCSP entries expired, none valid, and no oldest valid entry.
metric_wait "$T/m" '^stapled_service_entries\{service="ocsp",state="expired"\}' 2 ||
    note "the walk's figures did not reach 2 expired OCSP entries in 5 s"
check_eq "two minutes later: stapled_service_entries counts both OCSP entries expired (wanted)" 2 \
    "$(metric_sum "$T/m" '^stapled_service_entries\{service="ocsp",state="expired"\}')"
check "... and a sample of 0 valid ones" \
    grep -qx 'stapled_service_entries{service="ocsp",state="valid"} 0' "$T/m"
check "... while stapled_oldest_entry_remaining_seconds has no OCSP sample" \
    sh -c "! grep -q '^stapled_oldest_entry_remaining_seconds{service=\"ocsp\"}' '$T/m'"
stapled_stop
check_eq "under faketime: SIGTERM exits 0" 0 "$BG_RC"

it_done
