#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# manifest takes evidence as operators have it (one object, base64 chain, DER, CRLF PEM, --rim-id; claims refused);
# fetch asks each CertID once (refusing, 404 and 5xx upstreams; retries and summary); progress on a terminal only.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_manifest_fetch
need_ctl
need_cmd jq base64 sed script
pki_make

EV=$VECTORS/attestation-sdk/serialized_test_evidence/hopper_evidence.json
CLAIMS=$VECTORS/dstack/gpu_attestation_h100.json
NOCACHE=$T/no-cache	# manifest and fetch run without a cache here

# keys MANIFEST: its OCSP records' keys, in order, one line.
keys() { jq -r '[.ocsp[].key] | join(" ")' "$1"; }
rims() { jq -r '.rim | join(" ")' "$1"; }

# ---- 1. the shapes evidence comes in, all from hopper_evidence.json ---------------
ctl -C "$NOCACHE" manifest --evidence "$EV" --out "$T/m-array.json"
check_eq "manifest of the evidence array: exit 0" 0 "$CTL_RC"
check_eq "... 9 CertIDs (3 certificates, 3 hashes)" 9 "$(jq '.ocsp | length' "$T/m-array.json")"
check_eq "... and the two RIM IDs its report names" \
    "NV_GPU_DRIVER_GH100_590.12 NV_GPU_VBIOS_G520_0200_885_9600A50001" "$(rims "$T/m-array.json")"
WANT_KEYS=$(keys "$T/m-array.json")

jq '.[0]' "$EV" >"$T/one.json"
jq -r '.[0].certificate' "$EV" >"$T/cert.b64"
base64 -d "$T/cert.b64" >"$T/chain.pem"
sed 's/$/\r/' "$T/chain.pem" >"$T/chain-crlf.pem"
awk -v d="$T" '/BEGIN CERTIFICATE/ { n++ } n { print > (d "/c" n ".pem") }' "$T/chain.pem"
for i in 1 2 3 4 5; do openssl x509 -in "$T/c$i.pem" -outform DER; done >"$T/chain.der"
base64 -w0 "$T/chain.der" >"$T/chain-der.b64"

ctl -C "$NOCACHE" manifest --evidence "$T/one.json" --out "$T/m-one.json"
check_eq "one evidence object, not in an array: exit 0" 0 "$CTL_RC"
check_eq "... the array's CertIDs" "$WANT_KEYS" "$(keys "$T/m-one.json")"
check_eq "... and its RIM IDs" "$(rims "$T/m-array.json")" "$(rims "$T/m-one.json")"
for f in cert.b64 chain-crlf.pem chain.der chain-der.b64; do
	ctl -C "$NOCACHE" manifest --chain "$T/$f" --out "$T/m-$f.json"
	check_eq "chain as $f: exit 0" 0 "$CTL_RC"
	check_eq "... the evidence's CertIDs" "$WANT_KEYS" "$(keys "$T/m-$f.json")"
done

ctl -C "$NOCACHE" manifest --rim-id NV_GPU_DRIVER_GH100_595.71.05 \
    --rim-id NV_GPU_VBIOS_1010_0210_886_96009F0004 --out "$T/m-rim.json"
check_eq "--rim-id alone: exit 0" 0 "$CTL_RC"
check_eq "... both named" "NV_GPU_DRIVER_GH100_595.71.05 NV_GPU_VBIOS_1010_0210_886_96009F0004" \
    "$(rims "$T/m-rim.json")"
ctl -C "$NOCACHE" manifest --evidence "$T/one.json" --rim-id NV_GPU_DRIVER_GH100_595.71.05 \
    --out "$T/m-both.json"
check_eq "--rim-id with --evidence: the evidence's RIM IDs and the one named" \
    "$(rims "$T/m-array.json") NV_GPU_DRIVER_GH100_595.71.05" "$(rims "$T/m-both.json")"
ctl -C "$NOCACHE" manifest --rim-id 'no/such id' --out "$T/m-bad.json"
check_eq "--rim-id that is no RIM ID: usage, exit 2" 2 "$CTL_RC"
check "... nothing written" test ! -e "$T/m-bad.json"

ctl -C "$NOCACHE" manifest --evidence "$CLAIMS" --out "$T/m-claims.json"
check_eq "nvattest attest's claims output: refused, exit 1" 1 "$CTL_RC"
check "... says it holds claims and no certificates" \
    grep -q 'nvattest attest output: it holds claims .* and no certificates' "$T/ctl.out"
check "... and names what to give instead" \
    grep -q 'nvattest collect-evidence --format json.*certificate chain' "$T/ctl.out"
check "... nothing written" test ! -e "$T/m-claims.json"

# ---- 2. fetch asks each CertID once ------------------------------------------------
# A refusing upstream: openssl ocsp for the test PKI's ICA answers every CertID
# (unknown for NVIDIA's), signed by a responder NVIDIA never authorised; the
# router in front counts the POSTs. Routes: the NVIDIA issuers' key hashes.
responder_start RP refusing "$(ca_cert ica)" "$(ca_index ica)" "$(ca_rsigner ica)" \
    "$(ca_rkey ica)" -ndays 1
routes=""
for i in 3 4 5; do
	for d in sha1 sha256 sha384; do
		routes="$routes,$(key_hash_hex "$T/c$i.pem" "$d")=127.0.0.1:$RP"
	done
done
: >"$T/refusing.count"
upstream_start REF refusing-router --mode "route:${routes#,}" --count-file "$T/refusing.count"
: >"$T/e503.count"
upstream_start E503 e503 --mode status:503 --count-file "$T/e503.count"
: >"$T/e404.count"
upstream_start E404 e404 --mode status:404 --count-file "$T/e404.count"

ctl -C "$NOCACHE" fetch --manifest "$T/m-chain.der.json" --out "$T/b-ref.jsonl" \
    --ocsp-upstream "http://127.0.0.1:$REF/"
check_eq "fetch against a refusing upstream: exit 1" 1 "$CTL_RC"
check_eq "... 9 POSTs for 9 CertIDs" 9 "$(count_of "$T/refusing.count")"
check "... the summary counts entries: 9 CertIDs: 0 stored, 9 refused" \
    grep -q '^staplectl: fetch: 9 CertIDs: 0 stored, 9 refused (9: ' "$T/ctl.out"
check "... the bundle says 0 entries, 9 failed" \
    grep -q 'fetch: 0 entries in .*, 9 failed$' "$T/ctl.out"

ctl -C "$NOCACHE" fetch --manifest "$T/m-chain.der.json" --out "$T/b-404.jsonl" \
    --ocsp-upstream "http://127.0.0.1:$E404/"
check_eq "fetch against a 404 upstream: exit 1" 1 "$CTL_RC"
check_eq "... a definitive answer is not asked again: 9 POSTs" 9 "$(count_of "$T/e404.count")"
check "... 9 not found" grep -q 'fetch: 9 CertIDs: 0 stored, 9 not found (9: HTTP 404' "$T/ctl.out"

# A 5xx upstream before the refusing one: each CertID is asked 1 + 2 times
# there (FETCH_RETRIES), until 3 CertIDs in a row ran out of retries and it
# is down for the run; every CertID still goes once to the next upstream.
REF0=$(count_of "$T/refusing.count")
ctl -C "$NOCACHE" fetch --manifest "$T/m-chain.der.json" --out "$T/b-5xx.jsonl" \
    --ocsp-upstream "http://127.0.0.1:$E503/" --ocsp-upstream "http://127.0.0.1:$REF/"
check_eq "fetch, 503 then refusing: exit 1" 1 "$CTL_RC"
check_eq "... the 503 upstream: 3 CertIDs, each asked 3 times" 9 "$(count_of "$T/e503.count")"
check "... then down for the run" grep -q '127.0.0.1:'"$E503"'/: down (3 entries in a row' "$T/ctl.out"
check_eq "... the refusing upstream: each CertID once" 9 "$(( $(count_of "$T/refusing.count") - REF0 ))"
check "... the outcome is the refusal" grep -q 'fetch: 9 CertIDs: 0 stored, 9 refused' "$T/ctl.out"

E5030=$(count_of "$T/e503.count")
ctl -C "$NOCACHE" fetch --manifest "$T/m-chain.der.json" --out "$T/b-503.jsonl" \
    --ocsp-upstream "http://127.0.0.1:$E503/"
check_eq "fetch against a 503 upstream alone: exit 1" 1 "$CTL_RC"
check_eq "... 9 POSTs: 3 CertIDs asked 3 times, then down" 9 "$(( $(count_of "$T/e503.count") - E5030 ))"
check "... 3 unreachable, 6 not asked" \
    grep -q 'fetch: 9 CertIDs: 0 stored, 3 unreachable (3: HTTP 503), 6 not asked' "$T/ctl.out"

# ---- 3. progress on a terminal, not in a pipe or with --quiet ------------------------
script -qc "$CTL -C $NOCACHE fetch --manifest $T/m-chain.der.json --out $T/b-tty.jsonl \
    --ocsp-upstream http://127.0.0.1:$REF/" /dev/null >"$T/tty.out" 2>&1
check "fetch on a terminal: a progress line, drawn in place" \
    grep -q "$(printf '\r')fetch: [0-9]*/9 entries" "$T/tty.out"
check "... erased before the summary" grep -q 'fetch: 9 CertIDs: 0 stored' "$T/tty.out"
script -qc "$CTL -q -C $NOCACHE fetch --manifest $T/m-chain.der.json --out $T/b-tty.jsonl \
    --ocsp-upstream http://127.0.0.1:$REF/" /dev/null >"$T/tty-q.out" 2>&1
check "fetch -q on a terminal: no progress line" sh -c "! grep -q '/9 entries' '$T/tty-q.out'"
check "... the summary still" grep -q 'fetch: 9 CertIDs: 0 stored' "$T/tty-q.out"
"$CTL" -C "$NOCACHE" fetch --manifest "$T/m-chain.der.json" --out "$T/b-pipe.jsonl" \
    --ocsp-upstream "http://127.0.0.1:$REF/" 2>&1 | cat >"$T/pipe.out"
check "fetch in a pipe: no progress line" sh -c "! grep -q '/9 entries' '$T/pipe.out'"
check "... no carriage return at all" sh -c "! grep -q \"\$(printf '\\r')\" '$T/pipe.out'"
check "... the summary" grep -q 'fetch: 9 CertIDs: 0 stored' "$T/pipe.out"

# verify, import and check, on a bundle of answers that verify (the test PKI's).
farm_start GOOD good -ndays 1 -rother CHAIN
cat >"$T/good.json" <<EOF
{
  "cache_dir": "$T/cache",
  $(ocsp_section "$GOOD")
}
EOF
cat "$LEAF1" "$ICA_CERT" "$IDENT_CERT" "$ROOT_CERT" >"$T/pki-chain.pem"
ctl -C "$NOCACHE" manifest --chain "$T/pki-chain.pem" --out "$T/m-pki.json"
check_eq "manifest of the test PKI's chain: exit 0" 0 "$CTL_RC"
ctl -f "$T/good.json" -C "$NOCACHE" fetch --manifest "$T/m-pki.json" --out "$T/b-good.jsonl"
check_eq "fetch from a good upstream: exit 0" 0 "$CTL_RC"
check "... 6 CertIDs: 6 stored" grep -q '^staplectl: fetch: 6 CertIDs: 6 stored$' "$T/ctl.out"
# verify --manifest: does the bundle hold what the manifest names?
ctl -f "$T/good.json" verify --manifest "$T/m-pki.json" "$T/b-good.jsonl"
check_eq "verify --manifest of a bundle that holds it all: exit 0" 0 "$CTL_RC"
check "... lacks 0 of 6" grep -q 'b-good.jsonl: lacks 0 of the 6 entries .*m-pki.json names$' "$T/ctl.out"
grep -v '"type":"header"\|"type":"end"' "$T/b-good.jsonl" |
    awk '/"type":"entry"/ && n++ >= 1 { next } { print }' | seal "$T/b-part.jsonl"
ctl -f "$T/good.json" verify --manifest "$T/m-pki.json" "$T/b-part.jsonl"
check_eq "verify --manifest of a bundle of one of them: exit 1" 1 "$CTL_RC"
check "... lacks 5 of 6, -v names them" grep -q 'lacks 5 of the 6 entries .* (-v names them)$' "$T/ctl.out"
ctl -f "$T/good.json" verify -v --manifest "$T/m-pki.json" "$T/b-part.jsonl"
check_eq "verify -v --manifest: five lacking lines" 5 "$(grep -c '^lacking ocsp serial=[0-9A-F]* sha' "$T/ctl.out")"
check_eq "... each a different entry" 5 "$(grep '^lacking' "$T/ctl.out" | sort -u | wc -l)"
if command -v jq >/dev/null 2>&1; then
	"$CTL" -f "$T/good.json" --json verify --manifest "$T/m-pki.json" \
	    "$T/b-part.jsonl" >"$T/part.json" 2>/dev/null
	check_eq "verify --json --manifest: the lacking array" 5 \
	    "$(jq '.lacking | length' "$T/part.json")"
fi
# A fetch that got nothing writes a bundle of no entries: verify refuses it.
ctl -C "$NOCACHE" verify "$T/b-ref.jsonl"
check_eq "verify of a bundle with no entries: exit 1" 1 "$CTL_RC"
check "... says so" grep -q 'b-ref.jsonl: no entries' "$T/ctl.out"
ctl -C "$NOCACHE" verify --manifest "$T/m-pki.json" --allow-partial "$T/b-ref.jsonl"
check_eq "verify --allow-partial: usage, exit 2" 2 "$CTL_RC"

CR=$(printf '\r')
for cmd in "verify $T/b-good.jsonl" "import $T/b-good.jsonl" check; do
	name=${cmd%% *}
	script -qc "$CTL -f $T/good.json $cmd" /dev/null >"$T/tty-$name.out" 2>&1
	check "$name on a terminal: a progress line, drawn in place" \
	    grep -q "$CR$name: " "$T/tty-$name.out"
	"$CTL" -f "$T/good.json" $cmd 2>&1 | cat >"$T/pipe-$name.out"
	check "$name in a pipe: no progress line" sh -c "! grep -q '$CR' '$T/pipe-$name.out'"
done
check "verify on a terminal: done of 6 entries" grep -q "${CR}verify: [0-9]*/6 entries" "$T/tty-verify.out"
check "... the line erased before the verdict lines" \
    grep -q "${CR}$(printf '\033')\\[Kok ocsp " "$T/tty-verify.out"
check "check on a terminal: bytes of the store" grep -q 'check: .*B/.*B (' "$T/tty-check.out"
check "... and the verdict" grep -q 'sound (every record read)' "$T/tty-check.out"

it_done
