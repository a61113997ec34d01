#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Tiers (docs/mirror.md): three edge stapleds whose upstream is one regional stapled whose
# upstream is the vendor (OCSP, KDS; PCCS at the Intel capture's date). Three edges asking
# for one cold object make one vendor request;
# with the regional tier and the vendor dead the edges serve what they hold; an edge
# verifies again against its own pins and never stores what they refuse.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_tiers
need_faketime
AV=$top_srcdir/tests/vectors/amd
IV=$top_srcdir/tests/vectors/intel/derived
for f in "$AV/vcek_milan.der" "$AV/cert_chain_milan" "$IV/tdx_tcb_info.body.json" \
    "$IV/tdx_tcb_info.TCB-Info-Issuer-Chain.txt"; do
	[ -s "$f" ] || die "vector $f missing"
done
pki_make
NEDGE=3

# ---- the vendors: an OCSP farm (slow, so the three asks overlap) and a KDS ---------

FARM_UPSTREAM_OPTS="--delay-ms 400" farm_start VUP vendor -ndays 1 -rother CHAIN
VCEK=$(vcek_url "$AV/vcek_milan.der" Milan)
mkdir -p "$T/K"
printf 'Content-Type: application/pkix-cert\n' >"$T/h_der"
printf '%s\t200\t%s\t%s\n' "$VCEK" "$AV/vcek_milan.der" "$T/h_der" >"$T/K/index"
upstream_start KUP kds --mode "dir:$T/K" --delay-ms 400
kds_vendor() { if [ -f "$T/K/requests" ]; then wc -l <"$T/K/requests" | tr -d ' '; else echo 0; fi; }

# ---- the regional tier: the vendors' upstream, verified against the vendors' roots ---

cat >"$T/regional.json" <<EOF
{
  "ocsp": { "upstreams": [ { "url": "http://127.0.0.1:$VUP/", "name": "vendor" } ],
            "anchors": [ "$ANCHORS" ], "intermediates": [ "$INTERMEDIATES" ] },
  "amd_kds": { "upstreams": [ { "url": "http://127.0.0.1:$KUP", "name": "amd" } ] }
}
EOF
STAPLED_CACHE=$T/regional stapled_start regional -f "$T/regional.json"
R_URL=$SURL; R_PID=$SPID

# ---- the edges: the regional tier is their upstream, without nonce checks ------------

# edge_conf OUT ANCHORS: an edge's configuration; its own pins, the regional upstream.
edge_conf() {
	cat >"$1" <<EOF
{
  "ocsp": { "upstreams": [ { "url": "$R_URL/", "name": "regional", "verify_nonce": false } ],
            "anchors": [ "$2" ], "intermediates": [ "$INTERMEDIATES" ] },
  "amd_kds": { "upstreams": [ { "url": "$R_URL", "name": "regional" } ], "pacing_ms": 0 }
}
EOF
}
edge_conf "$T/edge.json" "$ANCHORS"
for i in $(seq $NEDGE); do
	STAPLED_CACHE=$T/edge$i stapled_start "edge$i" -f "$T/edge.json"
	eval "E${i}_URL=\$SURL E${i}_PID=\$SPID"
done

# rserved ROUTE: client requests the regional tier has answered on ROUTE.
rserved() {
	curl -s -m 5 -o "$T/rm" "$R_URL/metrics"
	metric_sum "$T/rm" "^stapled_requests_total\\{route=\"$1\""
}
# epost URL REQ OUT: POST an OCSP request; HTTP code printed.
epost() {
	curl -s -m 30 -o "$3" -w '%{http_code}' -H "$CT_REQ" --data-binary @"$2" "$1/ocsp"
}

# ---- N edges, one cold object, one vendor request -------------------------------------

mkreq "$T/req.der" "$ICA_CERT" "$LEAF1"
clients=""
for i in $(seq $NEDGE); do
	eval "u=\$E${i}_URL"
	epost "$u" "$T/req.der" "$T/cold$i.der" >"$T/cold$i.code" &
	clients="$clients $!"
	curl -s -m 30 -o "$T/vcek$i.der" -w '%{http_code}' "$u$VCEK" >"$T/vcek$i.code" &
	clients="$clients $!"
done
for p in $clients; do wait "$p"; done
for i in $(seq $NEDGE); do
	check_eq "edge $i, cold OCSP: HTTP 200" 200 "$(cat "$T/cold$i.code")"
	check_eq "edge $i, cold OCSP: successful" successful "$(resp_status "$T/cold$i.der")"
	check "edge $i, cold OCSP: the vendor's answer verifies (our pins)" \
	    ossl_verify "$T/cold$i.der" "$ICA_CERT" "$LEAF1"
	check_eq "edge $i, cold VCEK: HTTP 200" 200 "$(cat "$T/vcek$i.code")"
	check "edge $i, cold VCEK: AMD's bytes" cmp -s "$AV/vcek_milan.der" "$T/vcek$i.der"
done
check_eq "$NEDGE edges, one cold OCSP object: one vendor request" 1 "$(upstream_count vendor)"
check_eq "$NEDGE edges, one cold VCEK: one vendor request" 1 "$(kds_vendor)"
check_eq "the regional tier was asked once per edge (OCSP)" $NEDGE "$(rserved ocsp_post)"

# Each edge stored it: asked again, none reaches the regional tier.
b=$(rserved ocsp_post)
for i in $(seq $NEDGE); do
	eval "u=\$E${i}_URL"
	epost "$u" "$T/req.der" "$T/warm$i.der" >/dev/null
done
check_eq "warm edges: the regional tier is not asked" "$b" "$(rserved ocsp_post)"

# ---- an edge verifies again: another root's pins refuse the regional tier's answer ------

edge_conf "$T/edge_other.json" "$(ca_cert evil_root)"
STAPLED_CACHE=$T/edge_other stapled_start edge_other -f "$T/edge_other.json"
X_URL=$SURL
b=$(rserved ocsp_post)
epost "$X_URL" "$T/req.der" "$T/x1.der" >/dev/null
HTTP_CODE=$(epost "$X_URL" "$T/req.der" "$T/x2.der")
check_trylater "an edge with other pins: its client gets tryLater, not the refused answer" "$T/x2.der"
check_eq "an edge with other pins: each ask reaches the regional tier (nothing stored)" \
    $((b + 2)) "$(rserved ocsp_post)"
check "an edge with other pins: its log says why it did not store it" \
    grep -Eq 'ocsp: refused an answer from regional: chain' "$T/edge_other.log"
stapled_stop

# A regional tier gone wrong (here: tests/upstream in its place, a VCEK with a flipped
# signature byte): the edge checks AMD's signature itself, refuses and stores nothing.
n=$(wc -c <"$AV/vcek_milan.der")
b=$(tail -c 1 "$AV/vcek_milan.der" | od -An -tu1 | tr -d ' ')
{ head -c $((n - 1)) "$AV/vcek_milan.der"; printf "\\$(printf %03o $((b ^ 1)))"; } >"$T/bad_vcek.der"
mkdir -p "$T/B"
printf '%s\t200\t%s\t%s\n' "$VCEK" "$T/bad_vcek.der" "$T/h_der" >"$T/B/index"
upstream_start BUP bad --mode "dir:$T/B"
printf '{ "amd_kds": { "upstreams": [ { "url": "http://127.0.0.1:%s", "name": "bad" } ], "pacing_ms": 0 } }\n' \
    "$BUP" >"$T/edge_bad.json"
STAPLED_CACHE=$T/edge_bad stapled_start edge_bad -f "$T/edge_bad.json"
for i in 1 2; do
	code=$(curl -s -m 30 -o "$T/bad$i.out" -w '%{http_code}' "$SURL$VCEK")
	assert "a forged VCEK from the tier above, ask $i: not served (HTTP $code)" \
	    '[ "$code" != 200 ] && ! cmp -s "$T/bad$i.out" "$T/bad_vcek.der"'
done
check_eq "a forged VCEK: not stored (each ask reaches the tier above)" 2 \
    "$(wc -l <"$T/B/requests" | tr -d ' ')"
check "a forged VCEK: the edge's log says why" grep -Eq 'kds: refused an answer from bad: signature' "$T/edge_bad.log"
stapled_stop

# ---- the regional tier and the vendors dead: edges serve what they hold ---------------

farm_stop vendor
bg_kill "$KUP_PID" TERM
bg_kill "$R_PID" TERM
for i in $(seq $NEDGE); do
	eval "u=\$E${i}_URL"
	code=$(epost "$u" "$T/req.der" "$T/dead$i.der")
	check_eq "edge $i, tiers above dead: OCSP HTTP 200" 200 "$code"
	check "edge $i, tiers above dead: the stored answer" cmp -s "$T/cold$i.der" "$T/dead$i.der"
	code=$(curl -s -m 30 -o "$T/dvcek$i.der" -w '%{http_code}' "$u$VCEK")
	check_eq "edge $i, tiers above dead: VCEK HTTP 200" 200 "$code"
	check "edge $i, tiers above dead: AMD's bytes" cmp -s "$AV/vcek_milan.der" "$T/dvcek$i.der"
done


# ---- PCCS through the tiers, at 2025-06-01 (inside the Intel capture's window) --------

TCB="/tdx/certification/v4/tcb?fmspc=00806F050000"
mkdir -p "$T/P"
{ printf 'Content-Type: application/json\n'
  printf 'TCB-Info-Issuer-Chain: %s\n' "$(cat "$IV/tdx_tcb_info.TCB-Info-Issuer-Chain.txt")"
} >"$T/h_tcb"
printf '%s\t200\t%s\t%s\n' "$TCB&update=standard" "$IV/tdx_tcb_info.body.json" "$T/h_tcb" >"$T/P/index"
upstream_start IUP intel --mode "dir:$T/P" --delay-ms 400
fake_off=$(secs_until 2025-06-01T00:00:00Z)
export STAPLED_WRAP=$(faketime_env "$fake_off")
STAPLED_CACHE=$T/iregional stapled_start iregional --pccs-upstream "http://127.0.0.1:$IUP"
IR_URL=$SURL; IR_PID=$SPID
for i in $(seq $NEDGE); do
	STAPLED_CACHE=$T/iedge$i stapled_start "iedge$i" --pccs-upstream "$IR_URL"
	eval "I${i}_URL=\$SURL"
done
clients=""
for i in $(seq $NEDGE); do
	eval "u=\$I${i}_URL"
	curl -s -m 30 -o "$T/tcb$i.json" -w '%{http_code}' "$u$TCB" >"$T/tcb$i.code" &
	clients="$clients $!"
done
for p in $clients; do wait "$p"; done
for i in $(seq $NEDGE); do
	check_eq "edge $i, cold TDX TCB info: HTTP 200" 200 "$(cat "$T/tcb$i.code")"
	check "edge $i, cold TDX TCB info: Intel's bytes" cmp -s "$IV/tdx_tcb_info.body.json" "$T/tcb$i.json"
done
check_eq "$NEDGE edges, one cold TCB info: one vendor request" 1 "$(wc -l <"$T/P/requests" | tr -d ' ')"
bg_kill "$IUP_PID" TERM
bg_kill "$IR_PID" TERM
for i in $(seq $NEDGE); do
	eval "u=\$I${i}_URL"
	code=$(curl -s -m 30 -D "$T/dtcb$i.hdr" -o "$T/dtcb$i.json" -w '%{http_code}' "$u$TCB")
	check_eq "edge $i, tiers above dead: TCB info HTTP 200" 200 "$code"
	check "edge $i, tiers above dead: Intel's bytes" cmp -s "$IV/tdx_tcb_info.body.json" "$T/dtcb$i.json"
	check "edge $i, tiers above dead: with its TCB-Info-Issuer-Chain" \
	    [ -n "$(header "$T/dtcb$i.hdr" tcb-info-issuer-chain)" ]
done

it_done
