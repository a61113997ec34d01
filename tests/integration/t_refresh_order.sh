#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A refresh storm taken soonest first: with every entry due at once and a
# rate limit that suffices for a round in time, refreshes start in order of
# nextUpdate (the due index, docs/decisions/0006-due-index.md) and no entry
# expires first. Idle entries due are set aside, and a hit brings one back.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_refresh_order
need_cmd openssl stdbuf jq
CTL=$top_builddir/staplectl
need_faketime
need_fill

N=60			# signed entries
RATE=3			# rate_limit_per_s: a round takes N / RATE = 20 s
VALIDITY_S=60
INTERVAL_S=30		# VALIDITY_S x refresh.fraction (0.5)
MARGIN_S=6		# validity the soonest entry has left when the storm starts
SERIAL_BASE=268435456	# bench-fill's first serial, 0x10000000
# Entry i's remaining validity at the storm's start is spread evenly over
# MARGIN_S .. MARGIN_S + INTERVAL_S. Taken soonest first at RATE, the entry
# with r seconds left starts after about (r - MARGIN_S) x N / RATE /
# INTERVAL_S = 2/3 (r - MARGIN_S) s: always in time. In any order unrelated
# to nextUpdate (key order), about a sixth of them expire first.

fill_pki "$T/pki" P-256	# refreshes at the rate the test needs
P=$FILL_PKI

# N answers signed now, thisUpdate spread over the last INTERVAL_S.
fill_signed "$T/out" "$T/cache" "$N" "$VALIDITY_S"
fill_now=$FILL_NOW
# The outage ends when the soonest entry has MARGIN_S left: nearly all are due.
off=$(( fill_now + INTERVAL_S - MARGIN_S - $(date +%s) ))
WRAP=$(faketime_env "+$off")

# The signing upstream prints each request (its serial) in the order asked.
RESPONDER_WRAP="$WRAP stdbuf -oL" fill_responder RP responder "$T/out/index.txt" \
    -nmin 60 -req_text

STAPLED_WRAP=$WRAP fill_stapled d "$RATE" "$RP"

# Wait for the round (20 s at RATE) with room: every entry refreshed once.
i=0
while [ $i -lt 60 ]; do
	metrics_get "$T/m"
	[ "$(metric_sum "$T/m" '^stapled_refresh_total.*result="ok"')" -ge "$N" ] && break
	sleep 1; i=$((i + 1))
done
metrics_get "$T/m"
ok_n=$(metric_sum "$T/m" '^stapled_refresh_total.*result="ok"')
assert "every entry was refreshed in the round: $ok_n >= $N" '[ "$ok_n" -ge "$N" ]'
# Expired entries are not refreshed (a client miss refetches them).
sleep 2
metrics_get "$T/m"
check_eq "no entry expired before its turn (stapled_entries_expired)" 0 \
    "$(metric_sum "$T/m" '^stapled_entries_expired')"

# The order: each serial's planned refresh (bench-fill: thisUpdate + the
# interval, thisUpdate = now - share(i) x interval), in the order asked.
grep -o 'Serial Number: [0-9A-Fa-f]*' "$T/responder.log" | awk '{ print $3 }' |
    head -n "$N" >"$T/asked"
check_eq "the upstream was asked for $N serials" "$N" "$(wc -l <"$T/asked")"
awk -v base="$SERIAL_BASE" -v iv="$INTERVAL_S" -v now="$fill_now" '
function hex(s,   i, v) { v = 0; s = toupper(s)
	for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789ABCDEF", substr(s, i, 1)) - 1
	return v }
{ i = hex($1) - base; g = (i * 2654435769) % 4294967296
  at = now - int(g / 4294967296 * iv) + iv; if (at <= now) at = now + 1; print at }' \
    "$T/asked" >"$T/planned"
# Pairs taken in planned order (ties count as in order), of all pairs.
inorder=$(awk '{ a[NR] = $1 } END { n = 0; t = 0
	for (i = 1; i <= NR; i++) for (j = i + 1; j <= NR; j++) { t++; if (a[i] <= a[j]) n++ }
	printf "%d\n", t ? n * 100 / t : 0 }' "$T/planned")
note "$inorder% of the pairs of refreshes were started in nextUpdate order"
# Soonest first: nearly every pair (eight run at once and may answer out of
# order); any order unrelated to nextUpdate gives about half.
assert "refreshes started soonest first: $inorder% of pairs in order >= 90%" \
    '[ "$inorder" -ge 90 ]'
stapled_stop
check_eq "SIGTERM: exit 0" 0 "$BG_RC"
bg_kill "$RP_PID" TERM

# ---- idle entries are set aside, and a hit takes one back --------------------
# Every entry due but none asked for within idle_expire_s: none is refreshed
# (the due turn parks them). A hit on one makes it due again: the next full
# walk after the hit is written takes it back and it alone is refreshed.
N2=8
V2=7200			# interval 3600 s: all last used long before the clock
fill_signed "$T/out2" "$T/cache2" "$N2" "$V2"
fill_now=$FILL_NOW
off=$(( fill_now + V2 / 2 - 1 - $(date +%s) ))
WRAP=$(faketime_env "+$off")
RESPONDER_WRAP="$WRAP stdbuf -oL" fill_responder RP responder2 "$T/out2/index.txt" \
    -nmin 60 -req_text
printf '{"ocsp": {"anchors": ["%s"], "intermediates": ["%s"], "idle_expire_s": 60}}\n' \
    "$P/root.pem" "$P/ica.pem" >"$T/conf2.json"
# served: the uses recorded in the store, over every entry.
served() { "$CTL" -C "$T/cache2" --json list 2>/dev/null | jq '[.[].served] | add'; }
served0=$(served)
STAPLED_CACHE=$T/cache2 STAPLED_WRAP=$WRAP stapled_start d2 -f "$T/conf2.json" \
    --ocsp-upstream "http://127.0.0.1:$RP/"
sleep 3
check_eq "idle entries due at once: none refreshed" 0 \
    "$(grep -c 'Serial Number' "$T/responder2.log")"
path=$(head -n 1 "$T/out2/paths")
code=$(curl -s -o "$T/hit.der" -w '%{http_code}' "$SURL$path")
check_eq "a GET of one idle entry is served" 200 "$code"
# Its last use is old: the hit waits for the next pass (a second apart),
# which writes it and takes the entry back.
i=0
while [ $i -lt 150 ] && ! grep -q 'Serial Number' "$T/responder2.log"; do
	sleep 0.1; i=$((i + 1))
done
sleep 1
check_eq "the entry asked for was refreshed, and it alone" 1 \
    "$(grep -c 'Serial Number' "$T/responder2.log")"
# A hit just before SIGTERM, which no pass has reached: written as it stops.
path=$(sed -n 2p "$T/out2/paths")
code=$(curl -s -o /dev/null -w '%{http_code}' "$SURL$path")
check_eq "a GET of another idle entry is served" 200 "$code"
stapled_stop
check_eq "SIGTERM: exit 0" 0 "$BG_RC"
check_eq "both hits' uses are in the store" $((served0 + 2)) "$(served)"
it_done
