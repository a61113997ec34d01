#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A full map (map_size_mb 1, filled to the last entry that fits) does not
# loop: a refresh that fails, its own new schedule not written either (a
# hung reader pins the map's free pages), backs off on the documented
# schedule, held in memory; the full map is logged once an interval,
# counted, and named in /readyz. Then, with entries not in use in the map,
# the entries in use are renewed all the same: room is made by evicting
# those, and `staplectl status` names the full map.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_map_full
need_ctl
need_fill
pki_make

# Each responder prints every request it answers (-req_text): per key counts.
farm_start FARM farm -ndays 1 -rother CHAIN -req_text
URL=http://127.0.0.1:$FARM/
LEAVES="1 2 3 4 5"
WINDOW_S=18

# conf NAME IDLE_S: the 1 MiB map, refresh backoff 2 s, 4 s, then 4 to 8 s.
conf() {
	cat >"$T/$1.json" <<JSON
{
  "cache_dir": "$T/s",
  "map_size_mb": 1,
  "ocsp": {
    "upstreams": [ { "url": "$URL", "name": "farm" } ],
    "anchors": [ "$ANCHORS" ],
    "intermediates": [ "$INTERMEDIATES" ],
    "client_miss_rate_per_s": 0,
    "hedge_ms": 0,
    "idle_expire_s": $2,
    "refresh": { "min_interval_s": 4, "max_interval_s": 8 }
  }
}
JSON
}

ask() {
	[ -f "$T/q$1.der" ] || mkreq "$T/q$1.der" "$ICA_CERT" "$(eval echo "\$LEAF$1")"
	post "$T/q$1.der" "$T/a$1.der"
	[ "$HTTP_CODE" = 200 ] && [ "$(resp_status "$T/a$1.der")" = successful ]
}

# asked: "SERIAL COUNT" lines, the requests each serial's responder has had.
asked() {
	cat "$T"/farm-*.log | awk '/Serial Number:/ { n[$3]++ }
	    END { for (s in n) print s, n[s] }' | sort
}
serial_of() { openssl x509 -noout -serial -in "$(eval echo "\$LEAF$1")" | cut -d= -f2; }
count_in() { awk -v s="$2" '$1 == s { print $2; f = 1 } END { if (!f) print 0 }' "$1"; }
# this_updates: the stored leaves' serials with their thisUpdate.
this_updates() { "$CTL" -C "$T/s" list 2>/dev/null | grep -v bench-fill | awk '{ print $3, $5 }' | sort; }

# ---- the store: five entries fetched, then the map filled --------------------
conf a 2592000
STAPLED_CACHE=$T/s stapled_start a -f "$T/a.json"
for i in $LEAVES; do check "leaf $i fetched and stored" ask "$i"; done
stapled_stop
this_updates >"$T/tu0"
check_eq "five entries stored" 5 "$(wc -l <"$T/tu0")"
# Entries of another tenant, asked a minute ago and due in three days, one
# put at a time until one no longer fits.
BENCH_FILL_MAP_MB=1 "$FILL" "$T/s" 100000 >/dev/null 2>"$T/fill.err"
check "the map is filled to the last entry that fits" grep -q 'map full' "$T/fill.err"
note "entries in the 1 MiB map: $("$CTL" -C "$T/s" list 2>/dev/null | wc -l)"

# ---- 1. full, and nothing evictable: backoff per key, held in memory -----------
# A reader that never ends (a hung staplectl): no page freed after its
# snapshot is taken again, so not even a refresh's new schedule is stored.
mkfifo "$T/hold.in"
python3 "$top_srcdir/tests/integration/hold_write.py" --read "$T/s" \
    <"$T/hold.in" >"$T/hold.out" 2>&1 &
hold_pid=$!
exec 7>"$T/hold.in"
for _i in $(seq 100); do grep -q held "$T/hold.out" 2>/dev/null && break; sleep 0.1; done
check "a reader holds a snapshot of the store" grep -q held "$T/hold.out"
asked >"$T/asked0"
STAPLED_CACHE=$T/s stapled_start b -f "$T/a.json" 7>&-
sleep "$WINDOW_S"
asked >"$T/asked1"
curl -s -m 5 "$SURL/readyz" >"$T/ready_b"
metrics_get "$T/m_b"
stapled_stop
exec 7>&-
wait "$hold_pid" 2>/dev/null
# Backoff of 4 s then 8 s, drawn from [d/2, d) and due on whole seconds:
# tries at least 1 s, 3 s, then 3 s apart; the loop asked each key about
# four times a second.
for i in $LEAVES; do
	s=$(serial_of "$i")
	n=$(( $(count_in "$T/asked1" "$s") - $(count_in "$T/asked0" "$s") ))
	assert "full map, leaf $i: asked $n times in $WINDOW_S s, retried on the backoff's schedule (2 to 8)" \
	    '[ "$n" -ge 2 ] && [ "$n" -le 8 ]'
done
check_eq "full map: said once in the log for the interval" 1 \
    "$(grep -c 'map full' "$T/b.log")"
check "full map: the line says entries not in use are evicted to make room" \
    grep -q 'not stored: .*map full.*entries not in use' "$T/b.log"
check "full map: no refresh failure is logged per key" \
    eval '! grep -q "refresh: ocsp .*: failing" "$T/b.log"'
check "full map: /readyz names it" grep -q '^store: map full for' "$T/ready_b"
check_eq "full map: stapled_store_map_full is 1" 1 \
    "$(metric_sum "$T/m_b" '^stapled_store_map_full$')"
check "full map: the refused answers are counted" \
    lt 0 "$(metric_sum "$T/m_b" '^stapled_store_map_full_total$')"
check "full map: so are the refused schedules" \
    lt "$(metric_sum "$T/m_b" '^stapled_store_map_full_total$')" \
    "$(metric_sum "$T/m_b" '^stapled_store_map_full_writes_total$')"
check_eq "full map: nothing in use was evicted" 0 \
    "$(metric_sum "$T/m_b" '^stapled_store_full_evictions_total')"
# Still stored, none older. The held snapshot keeps every page freed after
# it, but the map may still hold a few freed before it: a refresh that fits
# in them is stored (CI saw one of the five renewed this way).
this_updates >"$T/tu1"
check_eq "full map: the five entries are still stored" \
    "$(cut -d' ' -f1 "$T/tu0")" "$(cut -d' ' -f1 "$T/tu1")"
check_eq "full map: none of them older than before" "" \
    "$(join "$T/tu0" "$T/tu1" | awk '$3 < $2')"

# ---- 2. full, and the other tenant's entries no longer in use ------------------
# idle_expire_s 60: the filled entries (asked a minute before the fill) are
# not in use; the five are (asked within it).
conf c 60
STAPLED_CACHE=$T/s stapled_start c -f "$T/c.json"
renewed=
for _i in $(seq 200); do
	this_updates >"$T/tu1"
	if [ "$(wc -l <"$T/tu1")" = 5 ] &&
	    [ -z "$(comm -12 "$T/tu0" "$T/tu1")" ]; then
		renewed=1
		break
	fi
	sleep 0.1
done
check "entries in use are renewed in the full map" test -n "$renewed"
metrics_get "$T/m_c"
check "room was made by evicting entries not in use" \
    lt 0 "$(metric_sum "$T/m_c" 'stapled_store_full_evictions_total\{service="ocsp"\}')"
check "the renewals are counted as refreshes" \
    lt 4 "$(metric_sum "$T/m_c" 'stapled_refresh_total\{result="ok"\}')"
status=
for _i in $(seq 150); do
	if "$CTL" -C "$T/s" status >"$T/status" 2>&1 &&
	    grep -q '^store *MAP FULL since' "$T/status"; then
		status=1
		break
	fi
	sleep 0.1
done
check "staplectl status names the full map" test -n "$status"
stapled_stop
check_eq "stapled exited 0" 0 "$BG_RC"

it_done
