#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A GPU family stapled has never seen (root pinned by anchors -> CA1 -> CA2 -> devices), whose
# answers carry only the delegated responder's certificate: one staplectl manifest, prefetch or
# fetch learns its whole hierarchy in one pass; a RIM's CAs join the pool before its chain's
# answers are asked; NVIDIA's 2026 driver RIM passes through the daemon byte for byte, and
# its CA is compiled in, generated from the repository's vectors.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_newfamily
need_ctl
need_cmd base64 sha256sum cmp jq
pki_make	# the openssl ca configuration; the family itself is below

# ---- the new family -------------------------------------------------------------
# Devices: an FMC-like leaf under a per-device BROM-like CA, as NVIDIA's.
# RIMs: an L4 signer under L3 under a reference-value CA under a root of
# their own. Every CA has a delegated responder (pki_ca_new), and the
# responders run without -rother: an answer carries its signer only.
NF=$T/nf
pki_ca_new "$NF/root" "/O=Test NF Corporation/CN=Test NF Device Identity CA" &&
pki_ca_new "$NF/ca1" "/O=Test NF Corporation/CN=Test NF Identity" "$NF/root" &&
pki_ca_new "$NF/ca2" "/O=Test NF Corporation/CN=Test NF Provisioner ICA 1" "$NF/ca1" &&
pki_ca_new "$NF/dev1" "/O=Test NF Corporation/CN=Test NF GSP BROM 1" "$NF/ca2" &&
pki_ca_new "$NF/dev2" "/O=Test NF Corporation/CN=Test NF GSP BROM 2" "$NF/ca2" &&
pki_ca_new "$NF/rimroot" "/O=Test NF Corporation/CN=Test NF CoRIM signing Root CA" &&
pki_ca_new "$NF/rimca" "/O=Test NF Corporation/CN=Test NF Reference Value CA" "$NF/rimroot" &&
pki_ca_new "$NF/l3" "/O=Test NF Corporation/CN=Test NF Reference Value L3 001" "$NF/rimca" ||
    die "cannot make the new family's CAs"
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-384 -out "$NF/leaf.key" 2>/dev/null
for i in 1 2; do
	pki_issue "$NF/dev$i" "$NF/leaf.key" "/O=Test NF Corporation/CN=Test NF GSP FMC LF $i" \
	    v3_leaf "$NF/fmc$i.pem" || die "cannot issue FMC leaf $i"
	cat "$NF/fmc$i.pem" "$NF/dev$i/ca.pem" "$NF/ca2/ca.pem" "$NF/ca1/ca.pem" \
	    "$NF/root/ca.pem" >"$T/chain$i.pem"
done
pki_issue "$NF/l3" "$NF/leaf.key" "/O=Test NF Corporation/CN=Test NF RIM L4 Signer" \
    v3_leaf "$NF/l4.pem" || die "cannot issue the L4 signer"
for ca in root ca1 ca2 rimroot rimca l3; do pki_ca_register "nf_$ca" "$NF/$ca"; done
cat "$NF/root/ca.pem" "$NF/rimroot/ca.pem" >"$T/anchors.pem"
cp "$NF/rimroot/ca.pem" "$T/rim-anchors.pem"

# What a client asks about: "issuer subject" pairs, the device chains'
# (root down, as nvattest) and the RIM chain's.
DEV_PAIRS="root/ca.pem:ca1/ca.pem ca1/ca.pem:ca2/ca.pem ca2/ca.pem:dev1/ca.pem ca2/ca.pem:dev2/ca.pem"
RIM_PAIRS="rimroot/ca.pem:rimca/ca.pem rimca/ca.pem:l3/ca.pem l3/ca.pem:l4.pem"

# The RIM: a SWID document whose KeyInfo holds the L4 chain, in the RIM
# service's envelope (the XML signature is nvattest's to check, not ours).
RIM_ID=NV_GPU_CC_DRIVER_NF100_1.0.0
{
	printf '<?xml version="1.0" encoding="UTF-8"?>\n'
	printf '<SoftwareIdentity xmlns="http://standards.iso.org/iso/19770/-2/2015/schema.xsd" name="%s" version="1.0.0">' "$RIM_ID"
	printf '<ds:Signature xmlns:ds="http://www.w3.org/2000/09/xmldsig#"><ds:KeyInfo><ds:X509Data>'
	for c in l4.pem l3/ca.pem rimca/ca.pem rimroot/ca.pem; do
		printf '<ds:X509Certificate>%s</ds:X509Certificate>' \
		    "$(openssl x509 -in "$NF/$c" -outform DER | base64 -w0)"
	done
	printf '</ds:X509Data></ds:KeyInfo></ds:Signature></SoftwareIdentity>\n'
} >"$T/rim.xml"
printf '{"id":"%s","rim":"%s","sha256":"%s","rim_format":"CORE_SWID","request_id":"t_newfamily"}' \
    "$RIM_ID" "$(base64 -w0 "$T/rim.xml")" "$(sha256sum "$T/rim.xml" | cut -d' ' -f1)" \
    >"$T/rim.json"

FARM_CAS="nf_root nf_ca1 nf_ca2 nf_rimroot nf_rimca nf_l3" farm_start UP nf -ndays 1
upstream_start URIM rim --mode "file:$T/rim.json" --count-file "$T/rim.count"
DEAD=$(dead_port 1)

# ---- helpers ------------------------------------------------------------------

# conf FILE CACHE OCSP_URL RIM_URL: the family's anchors, no intermediates.
conf() {
	cat >"$1" <<EOF
{
  "cache_dir": "$2",
  "ocsp": { "upstreams": [ { "url": "$3", "name": "nf" } ], "anchors": [ "$T/anchors.pem" ] },
  "rim": { "upstreams": [ "$4" ], "anchors": [ "$T/rim-anchors.pem" ] }
}
EOF
}

# pool_of CACHE: how many intermediates the cache has learned.
pool_of() { "$CTL" -C "$1" status 2>/dev/null | awk '$1 == "pool" { print $2 }'; }
# ocsp_of CACHE: how many OCSP answers it holds.
ocsp_of() { "$CTL" -C "$1" list --kind ocsp 2>/dev/null | wc -l | tr -d ' '; }

# ask PREFIX PAIRS...: one request per pair to $SURL, answers in
# $T/PREFIX.N.der; each must be a successful "good".
ask() {
	local _i _p _pre
	_pre=$1; shift
	_i=0
	for _p in "$@"; do
		_i=$((_i + 1))
		mkreq "$T/$_pre.$_i.req" "$NF/${_p%%:*}" "$NF/${_p#*:}"
		post "$T/$_pre.$_i.req" "$T/$_pre.$_i.der"
		if [ "$HTTP_CODE" != 200 ] || [ "$(resp_status "$T/$_pre.$_i.der")" != successful ] ||
		    [ "$(cert_status "$T/$_pre.$_i.der")" != good ]; then
			fail "$_pre: ${_p#*:}: HTTP $HTTP_CODE, $(resp_status "$T/$_pre.$_i.der")"
			return 1
		fi
	done
	return 0
}

# answers_carry_one_cert FILE: the answer embeds its signer and nothing else.
answers_carry_one_cert() {
	[ "$(openssl ocsp -respin "$1" -resp_text -noverify 2>/dev/null |
	    grep -c 'BEGIN CERTIFICATE')" = 1 ]
}

# ---- 0. the family's answers do not verify without its CAs --------------------------
mkdir -p "$T/z"
conf "$T/z.json" "$T/z" "http://127.0.0.1:$UP/" "http://127.0.0.1:$URIM"
STAPLED_CACHE=$T/z stapled_start z -f "$T/z.json"
check_successful "control: the device answer reaches the client" "$T/z.req" "$T/z.der" \
    "$NF/ca2/ca.pem" "$NF/dev1/ca.pem"
check "control: it embeds only the delegated responder's certificate" answers_carry_one_cert "$T/z.der"
check_eq "control: with nothing learned it is not stored (chain unknown)" 0 "$(ocsp_of "$T/z")"
stapled_stop

# ---- a. one staplectl manifest run; then the daemon stores every answer at once -----
mkdir -p "$T/a"
conf "$T/a.json" "$T/a" "http://127.0.0.1:$UP/" "http://127.0.0.1:$URIM"
ctl -f "$T/a.json" manifest --chain "$T/chain1.pem" --chain "$T/chain2.pem" --out "$T/ma.json"
check_eq "manifest: exit 0" 0 "$CTL_RC"
check_eq "manifest: the chains' four CAs in its certs" 4 "$(jq '.certs | length' "$T/ma.json")"
check_eq "manifest: all four joined the cache's pool in this one run" 4 "$(pool_of "$T/a")"

STAPLED_CACHE=$T/a stapled_start a -f "$T/a.json"
before=$(upstream_count nf)
# shellcheck disable=SC2086
check "daemon after manifest: every device-chain answer is good" ask a $DEV_PAIRS
check_eq "daemon after manifest: every answer stored at its first ask" 4 "$(ocsp_of "$T/a")"
# shellcheck disable=SC2086
ask a2 $DEV_PAIRS
check_eq "daemon after manifest: asked again, the upstream is not (hits)" 4 \
    "$(( $(upstream_count nf) - before ))"
stapled_stop
conf "$T/a-dead.json" "$T/a" "http://127.0.0.1:$DEAD/" "http://127.0.0.1:$DEAD"
STAPLED_CACHE=$T/a stapled_start a-dead -f "$T/a-dead.json"
# shellcheck disable=SC2086
ask ad $DEV_PAIRS
for i in 1 2 3 4; do
	check "upstream dead: answer $i served, byte-identical" cmp -s "$T/a.$i.der" "$T/ad.$i.der"
done
stapled_stop

# ---- b. one staplectl prefetch run stores every answer ------------------------------
mkdir -p "$T/b"
conf "$T/b.json" "$T/b" "http://127.0.0.1:$UP/" "http://127.0.0.1:$URIM"
ctl -f "$T/b.json" prefetch --chain "$T/chain1.pem" --chain "$T/chain2.pem"
check_eq "prefetch: exit 0" 0 "$CTL_RC"
check "prefetch: nothing failed" grep -q ' 0 failed' "$T/ctl.out"
check_eq "prefetch: the four CAs joined the pool" 4 "$(pool_of "$T/b")"
assert "prefetch: every device-chain answer stored" '[ "$(ocsp_of "$T/b")" -ge 4 ]'
conf "$T/b-dead.json" "$T/b" "http://127.0.0.1:$DEAD/" "http://127.0.0.1:$DEAD"
STAPLED_CACHE=$T/b stapled_start b-dead -f "$T/b-dead.json"
# shellcheck disable=SC2086
check "after prefetch, upstream dead: every device-chain answer served" ask bd $DEV_PAIRS
stapled_stop

# ---- c. staplectl fetch from a manifest, import into an empty cache ----------------
ctl -C "$T/none" manifest --chain "$T/chain1.pem" --chain "$T/chain2.pem" --out "$T/mc0.json"
check_eq "manifest without a cache: exit 0" 0 "$CTL_RC"
[ ! -e "$T/none" ] || fail "manifest without a cache: none is created"
jq --arg id "$RIM_ID" '.rim += [$id]' "$T/mc0.json" >"$T/mc.json" || die "jq failed"
ctl -f "$T/a.json" -C "$T/none" fetch --manifest "$T/mc.json" --out "$T/f.jsonl" \
    --ocsp-upstream "http://127.0.0.1:$UP/" --rim-upstream "http://127.0.0.1:$URIM"
check_eq "fetch: exit 0 (every answer verified with the manifest's certs)" 0 "$CTL_RC"
check "fetch: nothing failed" grep -q ', 0 failed' "$T/ctl.out"
check_eq "fetch: the RIM is in the bundle" 1 \
    "$(jq -c 'select(.type == "entry" and .kind == "rim")' "$T/f.jsonl" | wc -l)"
jq -r 'select(.type == "cert") | .subject' "$T/f.jsonl" | sort >"$T/f.subjects"
printf '%s\n' "CN=Test NF Identity,O=Test NF Corporation" \
    "CN=Test NF Provisioner ICA 1,O=Test NF Corporation" \
    "CN=Test NF Reference Value CA,O=Test NF Corporation" \
    "CN=Test NF Reference Value L3 001,O=Test NF Corporation" | sort >"$T/f.want"
check "fetch: the cert lines are the CAs the answers need (CA1, CA2, the RIM's CA and L3)" \
    cmp -s "$T/f.want" "$T/f.subjects"
nent=$(grep -c '"type":"entry"' "$T/f.jsonl")

conf "$T/c.json" "$T/c" "http://127.0.0.1:$DEAD/" "http://127.0.0.1:$DEAD"
ctl -f "$T/c.json" import "$T/f.jsonl"
check_eq "import into an empty cache: exit 0" 0 "$CTL_RC"
check_eq "import: every entry imported" "$nent" "$(grep -c '^imported ' "$T/ctl.out")"
check_eq "import: the bundle's four CAs joined the pool" 4 "$(pool_of "$T/c")"
STAPLED_CACHE=$T/c stapled_start c -f "$T/c.json"
jq -r 'select(.type == "entry" and .kind == "ocsp") | .response' "$T/f.jsonl" |
    awk -v d="$T/fr" '{ print > (d "." NR ".b64") }'
for f in "$T"/fr.*.b64; do base64 -d "$f" >"${f%.b64}.der"; done
# shellcheck disable=SC2086
check "imported, no upstream: every device and RIM-chain answer served" \
    ask c $DEV_PAIRS $RIM_PAIRS
n=0
for i in 1 2 3 4 5 6 7; do
	for f in "$T"/fr.*.der; do
		if cmp -s "$T/c.$i.der" "$f"; then n=$((n + 1)); break; fi
	done
done
check_eq "imported, no upstream: each answer is the bundle's, byte for byte" 7 "$n"
HTTP_CODE=$(curl -s -m 10 -o "$T/c.rim" -w '%{http_code}' "$SURL/v1/rim/$RIM_ID")
check_eq "imported, no upstream: the RIM is served" 200 "$HTTP_CODE"
check "imported, no upstream: the RIM is the envelope, byte for byte" cmp -s "$T/rim.json" "$T/c.rim"
stapled_stop

# ---- d. a RIM through the daemon: its CAs join the pool before its answers are asked -
mkdir -p "$T/d"
conf "$T/d.json" "$T/d" "http://127.0.0.1:$UP/" "http://127.0.0.1:$URIM"
STAPLED_CACHE=$T/d stapled_start d -f "$T/d.json"
check_successful "before the RIM: the L4 signer's answer passes" "$T/d0.req" "$T/d0.der" \
    "$NF/l3/ca.pem" "$NF/l4.pem"
check_eq "before the RIM: but is not stored (its CAs are unknown)" 0 "$(ocsp_of "$T/d")"
HTTP_CODE=$(curl -s -m 10 -o "$T/d.rim" -w '%{http_code}' "$SURL/v1/rim/$RIM_ID")
check_eq "RIM through the daemon: HTTP 200" 200 "$HTTP_CODE"
check "RIM through the daemon: byte-identical" cmp -s "$T/rim.json" "$T/d.rim"
check_eq "RIM through the daemon: its CA and L3 joined the cache's pool" 2 "$(pool_of "$T/d")"
before=$(upstream_count nf)
# shellcheck disable=SC2086
check "after the RIM: every RIM-chain answer is good" ask d $RIM_PAIRS
check_eq "after the RIM: each stored at its first ask" 3 "$(ocsp_of "$T/d")"
# shellcheck disable=SC2086
ask d2 $RIM_PAIRS
check_eq "after the RIM: asked again, the upstream is not" 3 "$(( $(upstream_count nf) - before ))"
stapled_stop

# ---- e. NVIDIA's 2026 driver RIM (under Reference Value L3 GH100 003) ----------------
NVRIM_ID=NV_GPU_DRIVER_GH100_595.71.05
NVRIM=$VECTORS/captured/rim-$NVRIM_ID.json
[ -f "$NVRIM" ] || die "$NVRIM missing"
upstream_start UNV nvrim --mode "file:$NVRIM"
STAPLED_CACHE=$T/e stapled_start e --rim-upstream "http://127.0.0.1:$UNV"
check_eq "NVIDIA's RIM: nothing learned yet" 0 "$(pool_of "$T/e")"
HTTP_CODE=$(curl -s -m 10 -o "$T/e.rim" -w '%{http_code}' "$SURL/v1/rim/$NVRIM_ID")
check_eq "NVIDIA's 595.71.05 RIM through the daemon: HTTP 200" 200 "$HTTP_CODE"
check "NVIDIA's 595.71.05 RIM: served byte-identically" cmp -s "$NVRIM" "$T/e.rim"
check_eq "NVIDIA's 595.71.05 RIM: L3 GH100 003 and the GH100 CA joined the pool" 2 \
    "$(pool_of "$T/e")"
stapled_stop

# ---- f. the compiled-in certificates are what the repository's vectors generate ----
if bash "$top_srcdir/tools/gen-nvidia-certs.sh" "$VECTORS" >"$T/nvidia_certs.c" 2>"$T/gen.log"; then
	check "attest/nvidia_certs.c is tools/gen-nvidia-certs.sh's output for tests/vectors/nvidia" \
	    cmp -s "$top_srcdir/attest/nvidia_certs.c" "$T/nvidia_certs.c"
	check "it compiles in NVIDIA Reference Value L3 GH100 003" \
	    grep -q '"CN=NVIDIA Reference Value L3 GH100 003,' "$T/nvidia_certs.c"
else
	fail "tools/gen-nvidia-certs.sh tests/vectors/nvidia failed: $(tail -n 1 "$T/gen.log")"
fi

it_done
