#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# max_entries: past the cap a new entry evicts the least
# recently asked one; an entry imported and not asked since is never
# evicted; with nothing evictable the answer is passed on, not stored,
# counted and logged; hits keep working throughout.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_entry_cap
need_ctl
pki_make

# conf FILE CACHE URL CAP: the test anchors, one upstream, max_entries CAP.
conf() {
	cat >"$1" <<JSON
{
  "cache_dir": "$2",
  "ocsp": {
    "upstreams": [ { "url": "$3", "name": "farm" } ],
    "anchors": [ "$ANCHORS" ],
    "intermediates": [ "$INTERMEDIATES" ],
    "client_miss_rate_per_s": 0,
    "hedge_ms": 0,
    "max_entries": $4
  }
}
JSON
}

# ask N: POST leaf N's request (made once), body in $T/aN.der.
ask() {
	[ -f "$T/q$1.der" ] || mkreq "$T/q$1.der" "$ICA_CERT" "$(eval echo "\$LEAF$1")"
	post "$T/q$1.der" "$T/a$1.der"
	[ "$HTTP_CODE" = 200 ] && [ "$(resp_status "$T/a$1.der")" = successful ]
}

# ups: requests the upstream has had (its counter settles first).
ups() { sleep 0.3; upstream_count farm; }

# listed CACHE: entries in the store.
listed() { "$CTL" -C "$1" list 2>/dev/null | wc -l; }
serials() { "$CTL" -C "$1" list 2>/dev/null | awk '{ print $3 }' | sort | tr '\n' ' ' | sed 's/ $//'; }
imported() { "$CTL" -C "$1" list 2>/dev/null | grep -c 'import:'; }

# pass_after: wait for a walk pass that saw every hit (touches are written
# every 5 s, a pass runs every second).
pass_after() { sleep 6.5; }
# ocsp_evictions: the OCSP evictions the daemon's /metrics counts now.
ocsp_evictions() {
	metrics_get "$T/m"
	metric_sum "$T/m" 'stapled_evictions_total\{service="ocsp"\}'
}

# start_imported NAME CAP: a fresh store $T/NAME holding the bundle's one
# import, and daemon NAME on it with max_entries CAP, once its first pass
# has counted the import.
start_imported() {
	rm -rf "$T/$1"
	"$CTL" -C "$T/$1" -f "$T/w.json" import "$T/b.jsonl" >"$T/ctl.out" 2>&1 ||
	    die "import failed: $(cat "$T/ctl.out")"
	conf "$T/$1.json" "$T/$1" "$URL" "$2"
	STAPLED_CACHE=$T/$1 stapled_start "$1" -f "$T/$1.json"
	metric_wait "$T/m" 'stapled_cache_entries\{kind="ocsp"\}' 1 ||
	    fail "the first pass did not count the imported entry"
}

farm_start FARM farm -ndays 1 -rother CHAIN
URL=http://127.0.0.1:$FARM/

# ---- a bundle of one entry (leaf 8), made by a warm daemon ---------------
conf "$T/w.json" "$T/w" "$URL" 0
STAPLED_CACHE=$T/w stapled_start w -f "$T/w.json"
check "warm daemon: leaf 8 answered" ask 8
stapled_stop
"$CTL" -C "$T/w" -f "$T/w.json" export --out "$T/b.jsonl" >"$T/ctl.out" 2>&1 ||
    die "export failed: $(cat "$T/ctl.out")"

# ---- cap 3: one import, then misses ----------------------------------------
start_imported c 3

check "miss leaf 1" ask 1
sleep 1.1
check "miss leaf 2" ask 2
sleep 1.1
u0=$(ups)
check "hit leaf 1 (asked after leaf 2 now)" ask 1
check_eq "the hit did not reach the upstream" "$u0" "$(ups)"
pass_after
check_eq "three entries: the import and two misses" 3 "$(listed "$T/c")"

check "miss leaf 3 past the cap" ask 3
check_eq "still three entries" 3 "$(listed "$T/c")"
check_eq "the import, never asked, stayed" 1 "$(imported "$T/c")"
check_eq "one eviction counted for ocsp" 1 "$(ocsp_evictions)"
u0=$(ups)
check "leaf 1 (asked most recently) is still a hit" ask 1
check "leaf 3 (just stored) is a hit" ask 3
check_eq "neither reached the upstream" "$u0" "$(ups)"
check_eq "leaf 2 (asked least recently) was the one evicted" \
    "serial=3001 serial=3003 serial=3008" "$(serials "$T/c")"
stapled_stop

# ---- cap 1, the only entry imported and unasked: nothing evictable ----------
start_imported d 1
for i in 4 5 6; do
	check "miss leaf $i with nothing evictable: still answered" ask $i
	check "... byte for byte what the upstream signed" \
	    ossl_verify "$T/a$i.der" "$ICA_CERT" "$(eval echo "\$LEAF$i")"
done
check_eq "nothing stored: the import alone" 1 "$(listed "$T/d")"
check_eq "the import stayed" 1 "$(imported "$T/d")"
metrics_get "$T/m"
check_eq "three answers counted as not stored" 3 \
    "$(metric_sum "$T/m" 'stapled_store_capped_total\{service="ocsp"\}')"
check_eq "... and as unverifiable passes" 3 \
    "$(metric_sum "$T/m" 'stapled_requests_total\{route="ocsp_post",result="unverifiable"\}')"
check_eq "no eviction" 0 "$(metric_sum "$T/m" 'stapled_evictions_total')"
check_eq "logged once (rate-limited)" 1 "$(grep -c 'not stored: max_entries (1)' "$T/d.log")"

# Once asked, the imported entry is like any other.
u0=$(ups)
check "the imported entry is a hit" ask 8
check_eq "... not fetched" "$u0" "$(ups)"
pass_after
check "miss leaf 7 now evicts the imported entry, asked once" ask 7
check_eq "one entry: leaf 7" 0 "$(imported "$T/d")"
check_eq "... and one entry in all" 1 "$(listed "$T/d")"
check_eq "one eviction counted" 1 "$(ocsp_evictions)"
stapled_stop
check_eq "stapled exited 0" 0 "$BG_RC"

it_done
