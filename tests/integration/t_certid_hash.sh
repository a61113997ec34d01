#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# CertID hashes: one certificate asked in SHA-1, SHA-256 and SHA-384 is three entries, each served,
# refreshed in its own hash, and named by staplectl list and show; prefetch --hash.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_certid_hash
need_ctl
pki_make

HASHES="sha1 sha256 sha384"

# answers RESP HASH: the response verifies and has a status for LEAF1's CertID
# in HASH (openssl ocsp fails with "No Status found" otherwise).
answers() {
	openssl ocsp -respin "$1" -CAfile "$ANCHORS" -verify_other "$INTERMEDIATES" \
	    -issuer "$ICA_CERT" -"$2" -cert "$LEAF1" -no_nonce >/dev/null 2>&1
}

# cfg FILE CACHE UPSTREAM_URL: short answers, refreshed at a fifth of their life.
cfg() {
	cat >"$1" <<EOF
{
  "cache_dir": "$2",
  "ocsp": {
    "upstreams": [ "$3" ],
    "anchors": [ "$ANCHORS" ],
    "intermediates": [ "$INTERMEDIATES" ],
    "refresh": { "fraction": 0.2, "min_interval_s": 5 }
  }
}
EOF
}

# Responses valid for one minute (the shortest openssl ocsp can sign).
farm_start UP one -nmin 1 -rother CHAIN
cfg "$T/d.json" "$T/c" "http://127.0.0.1:$UP/"
STAPLED_CACHE=$T/c stapled_start d -f "$T/d.json"

# ---- 1. one certificate, three hashes: three entries, each answering its own ----
for h in $HASHES; do
	mkreq "$T/$h.req" "$ICA_CERT" "$LEAF1" -"$h"
	post "$T/$h.req" "$T/$h.1.der"
	check_eq "$h CertID: successful" successful "$(resp_status "$T/$h.1.der")"
	check "$h CertID: the answer verifies for the $h CertID" answers "$T/$h.1.der" "$h"
done
check_eq "three upstream requests, one per hash" 3 "$(upstream_count one)"
assert "a SHA-256 answer does not answer the SHA-1 CertID" '! answers "$T/sha256.1.der" sha1'
for h in $HASHES; do
	post "$T/$h.req" "$T/$h.again.der"
	check_bytes "$h CertID again: from the cache, the same answer" "$T/$h.1.der" "$T/$h.again.der"
done
check_eq "asked again: still three upstream requests" 3 "$(upstream_count one)"

# ---- 2. staplectl list and show name each entry's hash ---------------------------
"$CTL" -C "$T/c" list >"$T/list.out" 2>&1
check_eq "list: three entries" 3 "$(wc -l <"$T/list.out")"
for h in $HASHES; do
	check_eq "list: one entry ends with $h" 1 "$(awk -v h="$h" '$NF == h' "$T/list.out" | wc -l)"
done
check "list: the same certificate each time" \
    sh -c "[ \"\$(awk '{ print \$3 }' '$T/list.out' | sort -u)\" = serial=3001 ]"
if command -v jq >/dev/null 2>&1; then
	"$CTL" -C "$T/c" --json list >"$T/list.json"
	check_eq "list --json: certid_hash of each entry" "sha1 sha256 sha384" \
	    "$(jq -r '.[].certid_hash' "$T/list.json" | sort | tr '\n' ' ' | sed 's/ $//')"
fi
key=$(awk '$NF == "sha256" { print $1 }' "$T/list.out")
"$CTL" -C "$T/c" -f "$T/d.json" show "$key" >"$T/show.out" 2>&1
check "show: certid_hash sha256" grep -q '^certid_hash  *sha256$' "$T/show.out"
check "show: the response's CertID is a SHA256 one" grep -q 'hash_algorithm  *SHA256' "$T/show.out"
if command -v jq >/dev/null 2>&1; then
	"$CTL" -C "$T/c" -f "$T/d.json" --json show "$key" >"$T/show.json"
	check_eq "show --json: certid_hash" sha256 "$(jq -r .certid_hash "$T/show.json")"
fi

# ---- 3. each entry is refreshed in its own hash ------------------------------------
# fraction 0.2 of 60 s = 12 s (+-10 %), clamped to >= 5 s: wait up to 45 s.
i=0
while [ "$(upstream_count one)" -lt 6 ] && [ $i -lt 450 ]; do sleep 0.1; i=$((i + 1)); done
check "refresh: the upstream was asked three more times, no client traffic (after $((i / 10)) s)" \
    [ "$(upstream_count one)" -ge 6 ]
sleep 0.5
for h in $HASHES; do
	post "$T/$h.req" "$T/$h.2.der"
	check "$h after the refresh: a new answer (thisUpdate $(this_update "$T/$h.1.der") -> $(this_update "$T/$h.2.der"))" \
	    [ "$(this_update "$T/$h.1.der")" != "$(this_update "$T/$h.2.der")" ]
	check "$h after the refresh: it still answers the $h CertID" answers "$T/$h.2.der" "$h"
done
metrics_get "$T/m"
assert "refresh: stapled_refresh_total{result=\"ok\"} counts all three" \
    '[ "$(metric_sum "$T/m" "^stapled_refresh_total.*result=\"ok\"")" -ge 3 ]'
stapled_stop
check_eq "SIGTERM: exit 0" 0 "$BG_RC"

# ---- 4. prefetch --hash: only the hashes asked for --------------------------------
cat "$LEAF4" "$ICA_CERT" "$IDENT_CERT" "$ROOT_CERT" >"$T/chain4.pem"
"$CTL" -C "$T/p" -f "$T/d.json" prefetch --chain "$T/chain4.pem" --hash sha384 >"$T/pf.out" 2>&1
check_eq "prefetch --hash sha384: exit 0" 0 "$?"
"$CTL" -C "$T/p" list >"$T/plist.out" 2>&1
check_eq "prefetch --hash sha384: the ICA and the identity CA, SHA-384 only" "2 2" \
    "$(wc -l <"$T/plist.out") $(awk '$NF == "sha384"' "$T/plist.out" | wc -l)"
"$CTL" -C "$T/p" -f "$T/d.json" prefetch --chain "$T/chain4.pem" >"$T/pf.out" 2>&1
check_eq "prefetch (default hashes): exit 0" 0 "$?"
check_eq "prefetch (default hashes): the other two hashes join" 6 \
    "$("$CTL" -C "$T/p" list | wc -l)"

it_done
