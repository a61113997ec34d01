#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Tiers over TLS with a private CA and client certificates (docs/mirror.md): the pair
# examples/regional (a TLS listener with client_ca) and examples/edge (upstream_tls), with
# the test's root, CA, ports and vendor. A miss at the edge is answered through the
# regional tier; an edge without the client certificate is refused and answers tryLater;
# -n, a reload and staplectl fetch check and use the same files.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_tiers_tls
need_ctl
pki_make
farm_start VUP vendor -ndays 1 -rother CHAIN

# ---- the examples' files under a root of the test's, from the test PKI's TLS CA --------
# examples/regional names fullchain.pem, key.pem and sites-ca.pem (its client_ca);
# examples/edge names regional-ca-and-roots.pem (its ca_file), edge.pem, edge-key.pem.
EX=$top_srcdir/examples
R=$T/root
TP=$R/etc/stapled/tls
CA=$T/ca
mkdir -p "$TP" "$CA" "$R/var/lib/stapled"
# The test PKI's TLS CA (mkpki.sh's tls/: a CA, a server certificate for
# 127.0.0.1, a client's, a key of no certificate).
cp "$PKI/tls/ca.pem" "$CA/ca.pem" && cp "$PKI/tls/srv1.pem" "$CA/regional.pem" &&
    cp "$PKI/tls/srv.key" "$TP/key.pem" && cp "$PKI/tls/cli.pem" "$TP/edge.pem" &&
    cp "$PKI/tls/cli.key" "$TP/edge-key.pem" && cp "$PKI/tls/other.key" "$CA/other.key" ||
    die "the test PKI has no tls/"
cat "$CA/regional.pem" "$CA/ca.pem" >"$TP/fullchain.pem"
cp "$CA/ca.pem" "$TP/sites-ca.pem"
cp "$CA/ca.pem" "$TP/regional-ca-and-roots.pem"
echo 0123456789abcdef0123456789abcdef >"$R/etc/stapled/pcs.key"

# example_conf EXAMPLE OUT OLD=NEW...: the example with its /etc and /var under $R, each
# address or URL that starts with an OLD starting with its NEW instead (every one must),
# and the test PKI's OCSP pins.
example_conf() {
	python3 - "$@" "$R" "$ANCHORS" "$INTERMEDIATES" <<'PY' || die "$1: cannot make the test's copy"
import json, sys
src, out = sys.argv[1:3]
pairs = [a.split("=", 1) for a in sys.argv[3:-3]]
root, anchors, inter = sys.argv[-3:]
def sub(v):
    if isinstance(v, dict):
        return {k: sub(x) for k, x in v.items()}
    if isinstance(v, list):
        return [sub(x) for x in v]
    if not isinstance(v, str):
        return v
    if v.startswith(("/etc/", "/var/")):
        return root + v
    for old, new in pairs:
        if v.startswith(old):
            return new + v[len(old):]
    if "://" in v or (v[:1].isdigit() and ":" in v):
        sys.exit("%s: %s: no address of the test's for it" % (src, v))
    return v
c = sub(json.load(open(src)))
c.setdefault("ocsp", {}).update(anchors=[anchors], intermediates=[inter])
json.dump(c, open(out, "w"), indent=1)
PY
}
# edge_edit IN OUT PYTHON: IN with PYTHON run on its upstream_tls object t.
edge_edit() {
	python3 -c 'import json, sys
c = json.load(open(sys.argv[1])); t = c["upstream_tls"]; exec(sys.argv[3])
json.dump(c, open(sys.argv[2], "w"))' "$@" || die "cannot edit $1"
}

# ---- the regional tier: examples/regional, the test's ports and vendor -----------------
DEAD=$(dead_port 1)
VENDORS_DEAD=""
for v in ocsp.ndis.nvidia.com rim.attestation.nvidia.com api.trustedservices.intel.com \
    kdsintf.amd.com; do
	VENDORS_DEAD="$VENDORS_DEAD https://$v=http://127.0.0.1:$DEAD"
done
RP=$(free_port)
RTP=$(free_port)
RAP=$(free_port)
R_ADMIN=http://127.0.0.1:$RAP
example_conf "$EX/regional/stapled.json" "$T/regional.json" \
    "127.0.0.1:8090=127.0.0.1:$RP" "0.0.0.0:8443=127.0.0.1:$RTP" \
    "10.0.0.5:9090=127.0.0.1:$RAP" "https://ocsp.ndis.nvidia.com=http://127.0.0.1:$VUP" \
    $VENDORS_DEAD
bg_start R_PID "$T/regional.log" "$STAPLED" -f "$T/regional.json"
i=0
while ! curl -s -o /dev/null -m 1 "$R_ADMIN/healthz" && [ $i -lt 100 ]; do
	sleep 0.1; i=$((i + 1))
done
grep -q "listening on 127.0.0.1:$RTP (TLS)" "$T/regional.log" || die "the regional tier did not come up"
# rserved: OCSP POSTs the regional tier has answered.
rserved() {
	curl -s -m 5 -o "$T/rm" "$R_ADMIN/metrics"
	metric_sum "$T/rm" '^stapled_requests_total\{route="ocsp_post"'
}
# rrefused: handshakes the regional tier refused for want of a client certificate.
rrefused() {
	curl -s -m 5 -o "$T/rm" "$R_ADMIN/metrics"
	metric_sum "$T/rm" "^stapled_tls_handshake_failures_total\\{listener=\"127.0.0.1:$RTP\",reason=\"no_client_cert\""
}

# ---- the edges: examples/edge, the regional tier's TLS port, the vendors dead -----------
example_conf "$EX/edge/stapled.json" "$T/edge.json" \
    "https://regional.example:8443=https://127.0.0.1:$RTP" $VENDORS_DEAD
edge_edit "$T/edge.json" "$T/edge_nocert.json" 'del t["cert_file"], t["key_file"]'
edge_edit "$T/edge.json" "$T/edge_nokey.json" "t['key_file'] = '$TP/absent-key.pem'"
edge_edit "$T/edge.json" "$T/edge_otherkey.json" "t['key_file'] = '$CA/other.key'"

# ---- 1. stapled -n reads the upstream TLS files ------------------------------------
check "-n: the edge's upstream_tls loads" "$STAPLED" -n -f "$T/edge.json"
"$STAPLED" -n -f "$T/edge_nokey.json" >"$T/n_nokey.out" 2>&1
rc=$?
assert "-n: a key_file that is not there is refused, named" \
    '[ $rc -ne 0 ] && grep -q "upstream_tls.key_file $TP/absent-key.pem: No such file" "$T/n_nokey.out"'
"$STAPLED" -n -f "$T/edge_otherkey.json" >"$T/n_other.out" 2>&1
rc=$?
assert "-n: a key that is not the client certificate's is refused" \
    '[ $rc -ne 0 ] && grep -q "does not match the certificate" "$T/n_other.out"'

# ---- 2. a miss at the edge is answered through the regional tier ---------------------
STAPLED_CACHE=$T/edge stapled_start edge -f "$T/edge.json"
mkreq "$T/req1.der" "$ICA_CERT" "$LEAF1"
post "$T/req1.der" "$T/miss.der"
check_eq "edge miss over TLS with a client certificate: HTTP 200" 200 "$HTTP_CODE"
check_eq "... successful" successful "$(resp_status "$T/miss.der")"
check "... the vendor's answer, verified by the client" ossl_verify "$T/miss.der" "$ICA_CERT" "$LEAF1"
check_eq "... through the regional tier (one OCSP POST there)" 1 "$(rserved)"
check_eq "... which asked the vendor once" 1 "$(upstream_count vendor)"
stapled_stop

# ---- 3. an edge without the client certificate: refused, tryLater --------------------
b=$(rrefused)
cp "$T/edge_nocert.json" "$T/edge_run.json"
STAPLED_CACHE=$T/edge_nocert stapled_start edge_nocert -f "$T/edge_run.json"
NC_PID=$SPID
mkreq "$T/req2.der" "$ICA_CERT" "$LEAF2"
post "$T/req2.der" "$T/nocert.der"
check_trylater "an edge without the client certificate: its client gets tryLater" "$T/nocert.der"
check "... the regional tier refused the handshake (no_client_cert)" [ "$(rrefused)" -gt "${b:-0}" ]
check_eq "... and answered nothing to it" 1 "$(rserved)"

# A reload that names a key file that is not there is refused whole.
cp "$T/edge_nokey.json" "$T/edge_run.json"
kill -HUP "$NC_PID"
wait_for_line "$T/edge_nocert.log" 'SIGHUP: configuration not reloaded' >/dev/null
check "a reload with a missing upstream_tls key_file is refused, naming it" \
    grep -q "SIGHUP: configuration not reloaded.*upstream_tls.key_file $TP/absent-key.pem" \
    "$T/edge_nocert.log"
# The certificate and its key, by a reload: the next miss goes through.
cp "$T/edge.json" "$T/edge_run.json"
kill -HUP "$NC_PID"
wait_for_line "$T/edge_nocert.log" 'SIGHUP: configuration reloaded' >/dev/null ||
    fail "no reload line after the second SIGHUP"
post "$T/req2.der" "$T/reloaded.der"
check_eq "after a reload that gives the client certificate: the miss is answered" \
    successful "$(resp_status "$T/reloaded.der")"
check_eq "... through the regional tier" 2 "$(rserved)"
stapled_stop

# ---- 4. staplectl fetch uses the configuration's upstream_tls --------------------------
cat "$LEAF4" "$ICA_CERT" "$IDENT_CERT" "$ROOT_CERT" >"$T/chain4.pem"
ctl -C "$T/none" manifest --chain "$T/chain4.pem" --out "$T/m.json"
[ "$CTL_RC" = 0 ] || die "staplectl manifest: $(cat "$T/ctl.out")"
b=$(rserved)
ctl -f "$T/edge.json" -C "$T/none" fetch --manifest "$T/m.json" --hash sha256 --out "$T/f.jsonl"
check_eq "staplectl fetch -f edge.json through the regional tier: exit 0" 0 "$CTL_RC"
check_eq "... both CertIDs fetched" 2 "$(grep -c '"type":"entry"' "$T/f.jsonl")"
check_eq "... asked of the regional tier" $((b + 2)) "$(rserved)"
ctl -f "$T/edge_nokey.json" -C "$T/none" fetch --manifest "$T/m.json" --out "$T/f3.jsonl"
check_eq "staplectl fetch with a missing upstream_tls key_file: usage, exit 2" 2 "$CTL_RC"
check "... naming it" grep -q "upstream_tls.key_file $TP/absent-key.pem" "$T/ctl.out"

it_done
