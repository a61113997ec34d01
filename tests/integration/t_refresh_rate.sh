#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The refresh walk keeps up: with many entries due at once (after an outage),
# refreshes run at rate_limit_per_s, not at eight per pass of the walk.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_refresh_rate
need_cmd openssl
need_faketime
need_fill

N=600			# signed entries, all due at the test's clock
RATE=100		# rate_limit_per_s
WINDOW_S=4		# the upstream's requests are counted over this
VALIDITY_S=86400
INTERVAL_S=43200	# VALIDITY_S x refresh.fraction (0.5)

fill_pki "$T/pki" P-256	# refreshes at the rate the test needs
P=$FILL_PKI

# N answers signed now, their thisUpdate spread over the last INTERVAL_S, so
# each comes due at its own time within the next INTERVAL_S.
fill_signed "$T/out" "$T/cache" "$N" "$VALIDITY_S"
fill_now=$FILL_NOW
# The outage ends just before the oldest entry would expire: every one is due.
off=$(( fill_now + INTERVAL_S - $(date +%s) - 1 ))
WRAP=$(faketime_env "+$off")

# The signing upstream at the same clock, behind the counting router.
RESPONDER_WRAP=$WRAP fill_responder RP responder "$T/out/index.txt" \
    -nmin $((VALIDITY_S / 60))
upstream_start UP router --mode "route:$(key_hash_hex "$P/ica.pem")=127.0.0.1:$RP" \
    --count-file "$T/router.count"

STAPLED_WRAP=$WRAP fill_stapled d "$RATE" "$UP"
# The first pass starts after ready; count from a second in.
sleep 1
c0=$(upstream_count router)
sleep "$WINDOW_S"
c1=$(upstream_count router)
n=$((c1 - c0))
note "$n refreshes asked upstream in ${WINDOW_S}s ($((n / WINDOW_S))/s; rate_limit_per_s $RATE)"
# Eight per pass (the slots) with a pass a second is at most about 8/s; the
# bucket allows RATE/s plus one second's burst.
assert "refreshes ran well past eight per pass: $n in ${WINDOW_S}s >= $((WINDOW_S * 25))" \
    '[ "$n" -ge $((WINDOW_S * 25)) ]'
assert "... and within the bucket: $n <= $(( (WINDOW_S + 1) * RATE + RATE ))" \
    '[ "$n" -le $(( (WINDOW_S + 1) * RATE + RATE )) ]'
metrics_get "$T/m"
assert "the refreshed answers verified and were stored (refresh ok counted)" \
    '[ "$(metric_sum "$T/m" "^stapled_refresh_total.*result=\"ok\"")" -ge $((WINDOW_S * 25)) ]'
# A pass holds for at most its budget, so its figures keep coming while the
# backlog lasts (with an unbounded hold the first pass never ended).
check_eq "the passes completed meanwhile: stapled_cache_entries counts all $N" \
    "$N" "$(metric_sum "$T/m" '^stapled_cache_entries\{kind="ocsp"\}')"
stapled_stop
check_eq "SIGTERM: exit 0" 0 "$BG_RC"
it_done
