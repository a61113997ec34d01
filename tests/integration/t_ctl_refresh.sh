#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# staplectl refresh: the running daemon renews entries now. --all renews
# each (a later thisUpdate, served at once from the store); a key with its
# upstream dead fails with the cause and a non-zero exit; an unknown key
# fails; no daemon is exit 5; nothing on the public listener reaches it;
# a staplectl that leaves has its ask cancelled.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_ctl_refresh
pki_make
need_ctl
need_cmd pgrep

farm_start UP good -ndays 1 -rother CHAIN
upstream_start UHANG hang --mode hang
# conf FILE OCSP_URL: the daemon's configuration; a short timeout for the hung upstream.
conf() {
	cat >"$1" <<JSON
{ "access_log_sample": 1,
  "ocsp": { "anchors": ["$ANCHORS"], "intermediates": ["$INTERMEDIATES"],
            "timeout_ms": 3000,
            "upstreams": [{"url": "$2", "name": "good"}] } }
JSON
}
conf "$T/conf.json" "http://127.0.0.1:$UP"
cp "$T/conf.json" "$T/good.json"

# ---- no daemon: exit 5 ------------------------------------------------------------
mkdir -p "$T/cache"
ctl -C "$T/cache" refresh --all
check_eq "no daemon on the directory: exit 5" 5 "$CTL_RC"

# this_update_s FILE: an answer's thisUpdate, in Unix seconds.
this_update_s() { date -u -d "$(this_update "$1")" +%s; }

# ---- the daemon as its own user, staplectl as root (the package's way) --------------
NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"
if $NOBODY test -r "$ANCHORS" && $NOBODY test -r "$T/conf.json"; then
	mkdir -p "$T/c0" && chown 65534:65534 "$T/c0"
	STAPLED_WRAP=$NOBODY STAPLED_CACHE=$T/c0 stapled_start d0 -f "$T/conf.json"
	mkreq "$T/r0.der" "$ICA_CERT" "$LEAF3"
	post "$T/r0.der" "$T/a0.der"
	tu0=$(this_update_s "$T/a0.der")
	while [ "$(date +%s)" -le "$tu0" ]; do sleep 0.1; done
	ctl -C "$T/c0" refresh --kind ocsp
	check_eq "daemon as another user: refresh exit 0" 0 "$CTL_RC"
	check "daemon as another user: renewed" grep -q '^renewed  *ocsp ' "$T/ctl.out"
	stapled_stop
else
	note "user 65534 cannot read $T: the daemon runs as root only"
fi

stapled_start d1 -f "$T/conf.json"
c0=$(upstream_count good)
i=0
for pair in "$ICA_CERT $LEAF1" "$ICA_CERT $LEAF2" "$IDENT_CERT $ICA_CERT"; do
	i=$((i + 1))
	set -- $pair
	mkreq "$T/r$i.der" "$1" "$2"
	post "$T/r$i.der" "$T/a$i.der"
	check_eq "entry $i stored from the upstream" successful "$(resp_status "$T/a$i.der")"
	tu_before[$i]=$(this_update_s "$T/a$i.der")
done
check_eq "three upstream requests" $((c0 + 3)) "$(upstream_count good)"
# thisUpdate has whole seconds: let the clock pass the fetches' second.
while [ "$(date +%s)" -le "${tu_before[3]}" ]; do sleep 0.1; done

# ---- --all: each entry renewed, served at once ----------------------------------------
t0=$(now_ms)
ctl -C "$T/cache" refresh --all
note "refresh --all: $(( $(now_ms) - t0 )) ms"
check_eq "refresh --all: exit 0 (every entry renewed)" 0 "$CTL_RC"
check_eq "refresh --all: a renewed line per entry" 3 "$(grep -c '^renewed  *ocsp ' "$T/ctl.out")"
check "refresh --all: the summary counts them" \
    grep -q '^refresh: 3 entries: 3 renewed, 0 unchanged, 0 failed' "$T/ctl.out"
check "refresh --all: each line names the upstream" \
    bash -c "[ \$(grep -c ', from good\$' '$T/ctl.out') = 3 ]"
check_eq "three more upstream requests" $((c0 + 6)) "$(upstream_count good)"
for i in 1 2 3; do
	post "$T/r$i.der" "$T/b$i.der"
	tu=$(this_update_s "$T/b$i.der")
	assert "entry $i: served at once with a later thisUpdate ($tu > ${tu_before[$i]})" \
	    '[ "$tu" -gt "${tu_before[$i]}" ]'
	check_eq "entry $i: a hit" "stapled; hit" "$(header "$T/b$i.der.hdr" Cache-Status | cut -d';' -f1-2)"
done
check_eq "the hits asked no upstream" $((c0 + 6)) "$(upstream_count good)"
check "the daemon logged the ask and its counts" \
    grep -Eq 'refresh: staplectl \(pid [0-9]+\) asked: 3 renewed, 0 unchanged, 0 failed' "$T/d1.log"
check "staplectl removed its files" \
    bash -c "! ls '$T/cache' | grep -q '^stapled.refresh-'"

# ---- --json: a line per entry and the counts ----------------------------------------------
while [ "$(date +%s)" -le "$(this_update_s "$T/b1.der")" ]; do sleep 0.1; done
key1=$("$CTL" -C "$T/cache" list --kind ocsp | awk 'NR == 1 { print $1 }')
ctl -C "$T/cache" --json refresh --kind ocsp "$key1"
check_eq "refresh --kind ocsp KEY --json: exit 0" 0 "$CTL_RC"
check "--json: the result as an object" \
    grep -q "^{\"result\":\"renewed\",\"kind\":\"ocsp\",\"key\":\"$key1\"" "$T/ctl.out"
check "--json: the last object counts" grep -q '^{"result":"done","renewed":1,' "$T/ctl.out"

# ---- an unknown key fails; the public listener has no way in -------------------------------
ctl -C "$T/cache" refresh 00112233445566778899
check_eq "an unknown key: exit 1" 1 "$CTL_RC"
check "an unknown key: failed, no such entry" \
    grep -q '^failed  *- *00112233445566778899 no such entry' "$T/ctl.out"
before=$(upstream_count good)
code=$(curl -s -o /dev/null -w '%{http_code}' -m 5 "$SURL/refresh")
check_eq "GET /refresh on the public listener: 404" 404 "$code"
code=$(curl -s -o /dev/null -w '%{http_code}' -m 5 --data-binary 'all' "$SURL/refresh?all")
check_eq "POST /refresh on the public listener: 404" 404 "$code"
check_eq "... and asks no upstream" "$before" "$(upstream_count good)"

# ---- the upstream dead: a key fails with the cause, exit 1 ------------------------------
farm_stop good
ctl -C "$T/cache" refresh "$key1"
check_eq "upstream dead: exit 1" 1 "$CTL_RC"
check "upstream dead: failed, with the cause" \
    grep -Eq "^failed  *ocsp $key1 .*good.*(connect|refused)" "$T/ctl.out"
check "upstream dead: the summary says so" \
    grep -q '^refresh: 1 entry: 0 renewed, 0 unchanged, 1 failed' "$T/ctl.out"
post "$T/r1.der" "$T/c1.der"
check_eq "the stored answer is still served" successful "$(resp_status "$T/c1.der")"

# ---- a staplectl that leaves: its ask is cancelled -------------------------------------
conf "$T/conf.json" "http://127.0.0.1:$UHANG"
ctl -C "$T/cache" reload
check_eq "reload to the hung upstream" 0 "$CTL_RC"
"$CTL" -C "$T/cache" refresh "$key1" >"$T/left.out" 2>&1 &
cpid=$!
# staplectl runs each command in a child (a damaged map kills that one): the asker.
for _ in $(seq 50); do
	apid=$(pgrep -P "$cpid" | head -n1)
	[ -n "$apid" ] && break
	sleep 0.1
done
wait_for_line "$T/d1.log" "staplectl \\(pid ${apid:-none}\\) asks to renew" >/dev/null ||
    fail "the daemon took the ask"
kill -TERM "$apid"
wait "$cpid"
rc=$?
check_eq "interrupted: staplectl exits 1" 1 "$rc"
check "interrupted: the daemon cancels the ask" eval \
    'wait_for_line "$T/d1.log" "staplectl \\(pid $apid\\) left: its ask is cancelled" >/dev/null'
check "interrupted: no file of it is left" \
    bash -c "! ls '$T/cache' | grep -q '^stapled.refresh-$apid'"
# The hung upstream first: else the stop waits for the fetch it holds.
bg_kill "$UHANG_PID" TERM
stapled_stop
check_eq "stapled stops cleanly" 0 "$BG_RC"

it_done
