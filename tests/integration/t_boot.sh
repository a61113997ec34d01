#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Boot simulation: the 72 sequential OCSP POSTs of an 8-GPU nvattest run, replayed
# with (a) a warm cache and every upstream blocked, (b) a cold cache and 50 ms of
# upstream latency, (c) a cold cache and dead upstreams. Prints time and outcome.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_boot
need_cmd python3
pki_make

# ---- the RIM side: a second small tree, root -> CA -> L3 signer CA -> signers ----
RIM=$PKI/rim
pki_ca_new "$RIM/root" "/O=Test NVIDIA Corporation/CN=Test NVIDIA CoRIM Root CA" || die "RIM root"
pki_ca_new "$RIM/ca" "/O=Test NVIDIA Corporation/CN=Test GH100 RIM CA" "$RIM/root" || die "RIM CA"
pki_ca_new "$RIM/l3" "/O=Test NVIDIA Corporation/CN=Test GH100 RIM L3 Signer CA" "$RIM/ca" || die "RIM L3"
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-384 -out "$RIM/signer.key" 2>/dev/null
pki_issue "$RIM/l3" "$RIM/signer.key" "/O=Test NVIDIA Corporation/CN=Test HCC Driver RIM Signer" \
    v3_leaf "$RIM/driver.pem" || die "driver RIM signer"
pki_issue "$RIM/l3" "$RIM/signer.key" "/O=Test NVIDIA Corporation/CN=Test VBIOS RIM Signer" \
    v3_leaf "$RIM/vbios.pem" || die "VBIOS RIM signer"
for c in root ca l3; do pki_ca_register "rim_$c" "$RIM/$c"; done
BOOT_CAS="$PKI_CAS rim_root rim_ca rim_l3"
cat "$ANCHORS" "$RIM/root/ca.pem" >"$T/anchors.pem"
cat "$INTERMEDIATES" "$RIM/ca/ca.pem" "$RIM/l3/ca.pem" >"$T/intermediates.pem"
TRUST="--ocsp-anchor $T/anchors.pem --ocsp-intermediates $T/intermediates.pem"

# ---- the request sequence, in nvattest's order ------------------------------------
# Per GPU: its device chain minus the alias leaf and the root (BROM, ICA,
# Identity), then the driver RIM chain and the VBIOS RIM chain minus their
# root. One SHA-1 CertID and a fresh 16-byte nonce per request.
mkdir -p "$T/reqs"
n=0
for g in 1 2 3 4 5 6 7 8; do
	eval "brom=\$LEAF$g"
	for pair in "$ICA_CERT $brom" "$IDENT_CERT $ICA_CERT" "$ROOT_CERT $IDENT_CERT" \
	    "$RIM/l3/ca.pem $RIM/driver.pem" "$RIM/ca/ca.pem $RIM/l3/ca.pem" "$RIM/root/ca.pem $RIM/ca/ca.pem" \
	    "$RIM/l3/ca.pem $RIM/vbios.pem" "$RIM/ca/ca.pem $RIM/l3/ca.pem" "$RIM/root/ca.pem $RIM/ca/ca.pem"; do
		n=$((n + 1))
		set -- $pair
		mkreq "$T/reqs/$(printf '%02d' $n).der" "$1" "$2"
	done
done
check_eq "the boot sequence has 72 requests" 72 "$n"
distinct=$(for f in "$T"/reqs/*.der; do
	openssl ocsp -reqin "$f" -req_text 2>/dev/null | grep -E 'Issuer Key Hash|Serial Number' | tr -d ' \n'; echo
done | sort -u | wc -l)
note "distinct CertIDs in the sequence: $distinct"
check_eq "the boot sequence has 14 distinct CertIDs" 14 "$distinct"

# replay LABEL: the 72 POSTs, one after another, like nvattest. Sets GOOD,
# TRYLATER, OTHER, TOTAL_S, SLOWEST_S. Gives up after REPLAY_DEADLINE_S.
# Only a bound on the test's time: per-request waits are checked by SLOWEST_S,
# and 72 curl start-ups alone took over 30 s on a loaded two-core machine.
REPLAY_DEADLINE_S=120
replay() {
	local label=$1 f t0 t1 code tt i=0 done_n=0
	mkdir -p "$T/$label"
	t0=$(now_ms)
	for f in "$T"/reqs/*.der; do
		i=$((i + 1))
		curl -s -m 10 -o "$T/$label/$i.der" -w '%{http_code} %{time_total}\n' \
		    -H "$CT_REQ" --data-binary @"$f" "$SURL/ocsp" >>"$T/$label/codes"
		done_n=$i
		[ $(( $(now_ms) - t0 )) -lt $((REPLAY_DEADLINE_S * 1000)) ] || break
	done
	t1=$(now_ms)
	TOTAL_S=$(awk -v ms=$((t1 - t0)) 'BEGIN { printf "%.3f", ms / 1000 }')
	SLOWEST_S=$(awk '{ if ($2 > m) m = $2 } END { printf "%.3f", m }' "$T/$label/codes")
	# One pass over the answers (a process or three per answer was most
	# of this test's CPU): tryLater is its 5 bytes, good a successful
	# OCSPResponse (responseStatus 0) with responseBytes.
	read -r GOOD TRYLATER OTHER < <(python3 - "$T/$label" <<-'EOF'
	import sys
	d = sys.argv[1]
	n = {"good": 0, "trylater": 0, "other": 0}
	for i, line in enumerate(open(d + "/codes"), 1):
	    b = open("%s/%d.der" % (d, i), "rb").read() if line.split()[0] == "200" else b""
	    hl = 2 + (b[1] & 0x7f if len(b) > 1 and b[1] & 0x80 else 0)
	    if b == bytes.fromhex("30030a0103"):
	        n["trylater"] += 1
	    elif len(b) > hl + 3 and b[0] == 0x30 and b[hl:hl + 3] == b"\x0a\x01\x00":
	        n["good"] += 1
	    else:
	        n["other"] += 1
	print(n["good"], n["trylater"], n["other"])
	EOF
	)
	OTHER=$((OTHER + 72 - done_n))
	note "boot $label: $GOOD good answers, $TRYLATER tryLater, $OTHER other/not sent; total $TOTAL_S s, slowest request $SLOWEST_S s"
	printf '%s good=%s trylater=%s other=%s total_s=%s slowest_s=%s\n' \
	    "$label" "$GOOD" "$TRYLATER" "$OTHER" "$TOTAL_S" "$SLOWEST_S" >>"$T/figures"
}

# ---- (b) cold cache, 50 ms added upstream latency -----------------------------
FARM_CAS=$BOOT_CAS FARM_UPSTREAM_OPTS="--delay-ms 50" farm_start UP slow50 -ndays 1
STAPLED_CACHE=$T/cache-b stapled_start db --ocsp-upstream "http://127.0.0.1:$UP/" $TRUST
replay b-cold-50ms
check_eq "(b) cold cache, 50 ms upstream: all 72 answered good" 72 "$GOOD"
check_eq "(b) cold cache: one upstream request per distinct CertID" "$distinct" "$(upstream_count slow50)"
ok_v=0
for i in 1 4 7; do	# a BROM, a driver RIM signer and a VBIOS RIM signer
	set -- "$ICA_CERT $LEAF1" "" "" "$RIM/l3/ca.pem $RIM/driver.pem" "" "" "$RIM/l3/ca.pem $RIM/vbios.pem"
	eval "pair=\${$i}"
	set -- $pair
	openssl ocsp -respin "$T/b-cold-50ms/$i.der" -CAfile "$T/anchors.pem" \
	    -verify_other "$T/intermediates.pem" -issuer "$1" -cert "$2" -no_nonce \
	    -validity_period 5 >/dev/null 2>&1 && ok_v=$((ok_v + 1))
done
check_eq "(b) answers verify with the client's own chain (BROM, driver and VBIOS RIM signers)" 3 "$ok_v"
stapled_stop
farm_stop slow50

# ---- (a) warm cache (from b), every upstream blocked ----------------------------
upstream_start UH blackhole --mode hang --count-file "$T/blackhole.count"
STAPLED_CACHE=$T/cache-b stapled_start da --ocsp-upstream "http://127.0.0.1:$UH/" \
    --ocsp-upstream "http://127.0.0.1:$(dead_port 1)/" $TRUST
replay a-warm-blocked
check_eq "(a) warm cache, upstreams blocked: all 72 answered good" 72 "$GOOD"
check_eq "(a) warm cache: no upstream was asked" 0 "$(upstream_count blackhole)"
# Not a timing target (the total is mostly curl's start-up on a shared
# machine): no request may have waited on the blackholed upstream, which
# would cost the 5 s client budget.
assert "(a) warm cache: no request waited for an upstream (slowest $SLOWEST_S s < 2.5 s)" 'lt "$SLOWEST_S" 2.5'
same=0
for i in $(seq 1 72); do cmp -s "$T/a-warm-blocked/$i.der" "$T/b-cold-50ms/$i.der" && same=$((same + 1)); done
check_eq "(a) warm cache: the same stored bytes as the cold run handed out" 72 "$same"
stapled_stop

# ---- (c) cold cache, dead upstreams ---------------------------------------------
STAPLED_CACHE=$T/cache-c stapled_start dc --ocsp-upstream "http://127.0.0.1:$(dead_port 1)/" \
    --ocsp-upstream "http://127.0.0.1:$(dead_port 2)/" $TRUST
replay c-cold-dead
check_eq "(c) cold cache, dead upstreams: all 72 get tryLater" 72 "$TRYLATER"
assert "(c) cold cache, dead upstreams: tryLater without waiting out the budget (slowest $SLOWEST_S s < 2.5 s)" 'lt "$SLOWEST_S" 2.5'
stapled_stop

# The same with a single dead upstream (no failover between dead ones).
STAPLED_CACHE=$T/cache-c1 stapled_start dc1 --ocsp-upstream "http://127.0.0.1:$(dead_port 1)/" $TRUST
replay c1-cold-one-dead
check_eq "(c') cold cache, the only upstream dead: all 72 get tryLater" 72 "$TRYLATER"
assert "(c') cold cache, the only upstream dead: tryLater without waiting out the budget (slowest $SLOWEST_S s < 2.5 s)" 'lt "$SLOWEST_S" 2.5'
stapled_stop

note "boot simulation figures:"
sed 's/^/#   /' "$T/figures"
it_done
