#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The refresh walk keeps up: with many entries due at once (after an outage),
# refreshes run at rate_limit_per_s, not at eight per pass of the walk.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_refresh_rate
need_cmd openssl
so=$(libfaketime_so) || skip "libfaketime not found"
FILL=$top_builddir/tools/bench-fill
[ -x "$FILL" ] || skip "tools/bench-fill not built"

N=600			# signed entries, all due at the test's clock
RATE=100		# rate_limit_per_s
WINDOW_S=4		# the upstream's requests are counted over this
VALIDITY_S=86400
INTERVAL_S=43200	# VALIDITY_S x refresh.fraction (0.5)

# A root, an issuing CA and a delegated responder, as bench-fill -s wants them.
P=$T/pki
mkdir -p "$P"
cat >"$P/ext.cnf" <<'EOF'
[ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
[responder]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = OCSPSigning
EOF
for k in root ica resp; do
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 \
	    -out "$P/$k.key" 2>/dev/null || die "openssl genpkey"
done
openssl req -x509 -new -key "$P/root.key" -subj "/CN=t_refresh_rate root" -days 30 \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" -out "$P/root.pem" 2>/dev/null ||
    die "openssl req (root)"
issue() {	# NAME SUBJECT ISSUER SECTION SERIAL
	openssl req -new -key "$P/$1.key" -subj "$2" -out "$P/$1.csr" 2>/dev/null &&
	openssl x509 -req -in "$P/$1.csr" -CA "$P/$3.pem" -CAkey "$P/$3.key" \
	    -set_serial "$5" -days 30 -extfile "$P/ext.cnf" -extensions "$4" \
	    -out "$P/$1.pem" 2>/dev/null || die "openssl x509 ($1)"
}
issue ica "/CN=t_refresh_rate issuing CA" root ca 1
issue resp "/CN=t_refresh_rate responder" ica responder 2

# N answers signed now, their thisUpdate spread over the last INTERVAL_S, so
# each comes due at its own time within the next INTERVAL_S.
mkdir -p "$T/out/www"
"$FILL" -s "$P" -o "$T/out" -v "$VALIDITY_S" -f 0.5 "$T/cache" "$N" >"$T/fill.out" ||
    die "bench-fill -s failed"
fill_now=$(awk '$1 == "now" { print $2 }' "$T/fill.out")
[ -n "$fill_now" ] || die "bench-fill did not say its clock"
# The outage ends just before the oldest entry would expire: every one is due.
off=$(( fill_now + INTERVAL_S - $(date +%s) - 1 ))
WRAP="env LD_PRELOAD=$so FAKETIME=+$off FAKETIME_DONT_FAKE_MONOTONIC=1"

# The signing upstream at the same clock, behind the counting router.
bg_start RPID "$T/responder.log" $WRAP openssl ocsp -port 0 -index "$T/out/index.txt" \
    -CA "$P/ica.pem" -rsigner "$P/resp.pem" -rkey "$P/resp.key" -rother "$P/ica.pem" \
    -nmin $((VALIDITY_S / 60))
line=$(wait_for_line "$T/responder.log" '^ACCEPT ') || die "openssl ocsp did not start"
RP=$(printf '%s\n' "$line" | sed -E 's/^ACCEPT .*:([0-9]+)( .*)?$/\1/')
upstream_start UP router --mode "route:$(key_hash_hex "$P/ica.pem")=127.0.0.1:$RP" \
    --count-file "$T/router.count"

cat >"$T/conf.json" <<EOF
{"ocsp": {"anchors": ["$P/root.pem"], "intermediates": ["$P/ica.pem"],
  "rate_limit_per_s": $RATE}}
EOF
STAPLED_WRAP=$WRAP stapled_start d -f "$T/conf.json" \
    --ocsp-upstream "http://127.0.0.1:$UP/"
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
