#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# No tenant can flush the cache (docs/refresh.md, "Bounded upstream work"):
# 18 entries that a real client asks every few seconds, then thousands of
# distinct entries minted from 50 client addresses (127.0.0.2 to 127.0.0.51,
# each under its own client_miss_rate_per_s: 4 a second each, 200 in all)
# into a store with room for 200; the flood's entries, each asked once,
# evict one another, never a real one, also while the real client pauses for
# the flood's last 400; then the upstream dies, and all 18 are still served.
# Before it, new_entry_rate_per_s: new entries past it are served, not
# stored.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_flood
need_py
need_ctl
export PYTHONPATH=$top_srcdir/tests/integration	# http1.py, flood.py

REAL=18
EVERY_S=3	# each real entry is asked this often, twice before the flood
FLOOD=2000
TAIL=400	# the flood's last, once the real clients have paused
CAP=200
REAL_FIRST=70000001	# hex serials: the real clients' 18
FLOOD_FIRST=40000001	# and the flood's

# A P-256 PKI shaped like NVIDIA's (fill_pki), its responder answering
# good for every serial its index lists, as NVIDIA's does for any serial
# under a valid device issuer.
fill_pki "$T/pki" P-256
"$PY" - "$T/index.txt" "$REAL_FIRST" "$REAL" "$FLOOD_FIRST" "$FLOOD" <<'EOF'
import sys
idx, rf, rn, ff, fn = sys.argv[1], int(sys.argv[2], 16), int(sys.argv[3]), \
    int(sys.argv[4], 16), int(sys.argv[5])
with open(idx, "w") as f:
    for s in list(range(rf, rf + rn)) + list(range(ff, ff + fn)):
        f.write("V\t20491231235959Z\t\t%X\tunknown\t/CN=minted %X\n" % (s, s))
EOF
fill_responder UP up "$T/index.txt" -ndays 1
openssl ocsp -issuer "$FILL_PKI/ica.pem" -serial "0x$REAL_FIRST" -no_nonce \
    -reqout "$T/template.der" >/dev/null 2>&1 || die "openssl ocsp -reqout failed"

# conf FILE MEMBERS: the responder as the only upstream, and MEMBERS.
conf() {
	cat >"$1" <<JSON
{"ocsp": {"upstreams": [ { "url": "http://127.0.0.1:$UP/", "name": "up" } ],
  "anchors": ["$FILL_PKI/root.pem"], "intermediates": ["$FILL_PKI/ica.pem"],
  "hedge_ms": 0, $2}}
JSON
}

# ---- new_entry_rate_per_s: new entries past it are passed on unstored ----
conf "$T/rate.json" '"new_entry_rate_per_s": 5'
STAPLED_CACHE=$T/rate stapled_start rate -f "$T/rate.json"
t0=$(now_ms)
"$PY" "$top_srcdir/tests/integration/flood.py" ask "$SPORT" "$T/template.der" \
    --real $(for i in $(seq 1 40); do printf '%X ' $((0x$FLOOD_FIRST + FLOOD - i)); done) \
    >"$T/rate.out" 2>&1 || die "flood.py ask failed: $(cat "$T/rate.out")"
secs=$(( ($(now_ms) - t0 + 999) / 1000 ))
check_eq "40 new entries at once: every one answered" "served 40 of 40" "$(cat "$T/rate.out")"
metrics_get "$T/m"
lim=$(metric_sum "$T/m" 'stapled_store_limited_total\{service="ocsp"\}')
stored=$("$CTL" -C "$T/rate" list 2>/dev/null | wc -l)
note "stored $stored, limited $lim in ${secs} s"
check "... at most the burst of 10 and 5 a second stored" \
    test "$stored" -le $((10 + 5 * secs))
check_eq "... the others counted in stapled_store_limited_total" $((40 - stored)) "$lim"
check "... and logged" grep -q "not stored: over new_entry_rate_per_s (5/s)" "$T/rate.log"
stapled_stop

# ---- the flood, the eviction order alone (no new_entry_rate_per_s) -------
conf "$T/conf.json" '"max_entries": '$CAP', "new_entry_rate_per_s": 0'
stapled_start s -f "$T/conf.json"

real=$(for i in $(seq 0 $((REAL - 1))); do printf '%X ' $((0x$REAL_FIRST + i)); done)
# shellcheck disable=SC2086
"$PY" "$top_srcdir/tests/integration/flood.py" run "$SPORT" "$T/template.der" \
    --real $real --every "$EVERY_S" --warm 1 \
    --flood "$FLOOD_FIRST" --count "$FLOOD" --tail "$TAIL" \
    --addrs 50 --rate 4 >"$T/flood.out" 2>&1 ||
    die "flood.py failed: $(cat "$T/flood.out")"
note "$(tr '\n' ';' <"$T/flood.out")"
read -r _ sent _ _ _ _ answered _ <<<"$(grep '^flood ' "$T/flood.out")"
read -r _ _ asked _ servedr _ _ again <<<"$(grep '^real ' "$T/flood.out" | tr -d ,)"
check_eq "the flood sent every request" "$FLOOD" "$sent"
check "... and most were answered with a signed answer" lt $((FLOOD / 2)) "$answered"
check_eq "the real clients were served every time" "$asked" "$servedr"
# A hit is the stored answer; an evicted entry comes back signed anew.
check_eq "... always from the store: no real entry was evicted" 0 "$again"

metrics_get "$T/m"
ev=$(metric_sum "$T/m" 'stapled_evictions_total\{service="ocsp"\}')
note "evictions $ev, store limited $(metric_sum "$T/m" 'stapled_store_limited_total'), capped $(metric_sum "$T/m" 'stapled_store_capped_total')"
check "the flood churned the store (evictions > $((CAP * 2)))" lt $((CAP * 2)) "$ev"
# The count between two walk passes is an estimate (docs/refresh.md,
# "Bounded upstream work").
check "the store holds about $CAP entries at most" \
    test "$("$CTL" -C "$T/cache" list 2>/dev/null | wc -l)" -le $((CAP + CAP / 20))

# The upstream dies: every real entry is served from the store.
bg_kill "$UP_PID" TERM
# shellcheck disable=SC2086
"$PY" "$top_srcdir/tests/integration/flood.py" ask "$SPORT" "$T/template.der" \
    --real $real >"$T/ask.out" 2>&1 || die "flood.py ask failed: $(cat "$T/ask.out")"
check_eq "upstream dead: all $REAL real entries still served" \
    "served $REAL of $REAL" "$(cat "$T/ask.out")"

stapled_stop
check_eq "stapled exited 0" 0 "$BG_RC"
it_done
