#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Air gap: export a warm cache, import it into a daemon with no upstream, byte-identical answers;
# rejected bundles change nothing; an import while the daemon serves under load.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_airgap
need_ctl
need_cmd base64 sha256sum sed cmp
pki_make

# ---- helpers ------------------------------------------------------------------

# conf FILE CACHE URL NAME: a stapled config with the test anchors and pool.
conf() {
	cat >"$1" <<EOF
{
  "cache_dir": "$2",
  "ocsp": {
    "upstreams": [ { "url": "$3", "name": "$4" } ],
    "anchors": [ "$ANCHORS" ],
    "intermediates": [ "$INTERMEDIATES" ]
  }
}
EOF
}

# The bundles this script seals are dated before the test PKI's answers.
SEAL_CREATED=2025-01-01T00:00:00Z

# flip_sig IN OUT: flip the last byte of the BasicOCSPResponse signature.
flip_sig() {
	local _hl _ihl _il _ioff _off _pos _b
	read -r _off _hl <<EOF
$(openssl asn1parse -inform DER -in "$1" | awk '/OCTET STRING/ {
	split($1, a, ":"); sub(/hl=/, "", $2); print a[1], $2; exit }')
EOF
	read -r _ioff _ihl _il <<EOF
$(openssl asn1parse -inform DER -in "$1" -strparse "$_off" | awk '/d=1 .*BIT STRING/ {
	split($1, a, ":"); h = $0; sub(/.*hl= */, "", h); sub(/ .*/, "", h);
	l = $0; sub(/.*l= */, "", l); sub(/ .*/, "", l); print a[1], h, l; exit }')
EOF
	[ -n "$_il" ] || return 1
	_pos=$((_off + _hl + _ioff + _ihl + _il - 1))
	cp "$1" "$2"
	_b=$(od -An -tu1 -j "$_pos" -N1 "$1" | tr -d ' ')
	printf "\\$(printf '%03o' $(( _b ^ 1 )))" |
	    dd of="$2" bs=1 seek="$_pos" conv=notrunc 2>/dev/null
}

# ---- 1. daemon A with a live upstream warms its cache ----------------------------
farm_start UP good -ndays 1 -rother CHAIN
conf "$T/a.json" "$T/a" "http://127.0.0.1:$UP/" good
STAPLED_CACHE=$T/a stapled_start a -f "$T/a.json"
A_URL=$SURL; A_PID=$SPID

# The CertIDs a GPU asks about: leaves (one revoked), the ICA, the identity CA.
set -- "$ICA_CERT $LEAF1" "$ICA_CERT $LEAF2" "$ICA_CERT $LEAF3" \
    "$IDENT_CERT $ICA_CERT" "$ROOT_CERT $IDENT_CERT"
i=0
for pair in "$@"; do
	i=$((i + 1))
	set -- $pair
	openssl ocsp -url "$A_URL/ocsp" -issuer "$1" -cert "$2" -CAfile "$ANCHORS" \
	    -verify_other "$INTERMEDIATES" -respout "$T/a$i.der" >"$T/a$i.out" 2>&1 ||
	    die "warming A: openssl ocsp for pair $i failed ($(cat "$T/a$i.out"))"
	mkreq "$T/q$i.der" "$1" "$2"
	echo "$pair" >"$T/pair$i"
done
NPAIRS=$i
mkreq "$T/q6.der" "$ICA_CERT" "$LEAF1" -sha384
SURL=$A_URL post "$T/q6.der" "$T/a6.der"
check_eq "A: SHA-384 CertID answered" successful "$(resp_status "$T/a6.der")"
check_eq "A: six entries cached" 6 "$("$CTL" -C "$T/a" list | wc -l)"

ctl -C "$T/a" -f "$T/a.json" export --out "$T/b.jsonl"
check_eq "export while A runs: exit 0" 0 "$CTL_RC"
check_eq "export: six entry lines" 6 "$(grep -c '"type":"entry"' "$T/b.jsonl")"
check "export: the header names the format and version 1" \
    grep -q '^{"type":"header","format":"stapled-bundle","version":1,' "$T/b.jsonl"
check "export: ends with the sealed trailer" \
    grep -q '^{"type":"end","entries":6,"sha256":"[0-9a-f]\{64\}"}$' "$T/b.jsonl"
assert "export: the trailer's digest is the sha256 of the bytes before it" \
    '[ "$(head -n -1 "$T/b.jsonl" | sha256sum | cut -d" " -f1)" = "$(tail -n 1 "$T/b.jsonl" | sed "s/.*sha256\":\"\([0-9a-f]*\).*/\1/")" ]'
check "export: carries the intermediates (cert lines)" grep -q '"type":"cert"' "$T/b.jsonl"
ctl verify "$T/b.jsonl"
check_eq "verify with the built-in NVIDIA anchors: the test PKI's answers are rejected" 1 "$CTL_RC"
ctl -f "$T/a.json" -C "$T/none" verify "$T/b.jsonl"
check_eq "verify with the test anchors: exit 0" 0 "$CTL_RC"
check_eq "verify: six ok lines" 6 "$(grep -c '^ok ocsp ' "$T/ctl.out")"

# ---- 2. daemon B, no upstream reachable, imports while it runs ---------------------
DEAD=$(dead_port 1)
conf "$T/b.json" "$T/b" "http://127.0.0.1:$DEAD/" dead
STAPLED_CACHE=$T/b stapled_start b -f "$T/b.json"
B_URL=$SURL; B_PID=$SPID
post "$T/q1.der" "$T/b0.der"
check_trylater "B before the import: tryLater (nothing cached, upstream dead)" "$T/b0.der"

ctl -C "$T/b" -f "$T/b.json" import "$T/b.jsonl"
check_eq "import into B while it runs: exit 0" 0 "$CTL_RC"
check_eq "import: six imported lines" 6 "$(grep -c '^imported ocsp ' "$T/ctl.out")"
check "import: the revoked leaf stays revoked" grep -q '^imported ocsp [0-9a-f]* revoked' "$T/ctl.out"
check "import: source names the file" sh -c "'$CTL' -C '$T/b' list | grep -q 'import:b.jsonl'"

for i in $(seq 1 "$NPAIRS"); do
	set -- $(cat "$T/pair$i")
	openssl ocsp -url "$B_URL/ocsp" -issuer "$1" -cert "$2" -CAfile "$ANCHORS" \
	    -verify_other "$INTERMEDIATES" -respout "$T/b$i.der" >"$T/b$i.out" 2>&1
	check "B: openssl ocsp pair $i: byte-identical to A's answer" cmp -s "$T/a$i.der" "$T/b$i.der"
	post "$T/q$i.der" "$T/c$i.der"
	check_bytes "B: curl POST pair $i: byte-identical to A's answer" "$T/a$i.der" "$T/c$i.der"
done
check_eq "B: the revoked leaf is served as revoked" revoked "$(cert_status "$T/b3.der")"
post "$T/q6.der" "$T/c6.der"
check_bytes "B: the SHA-384 entry too" "$T/a6.der" "$T/c6.der"

ctl -C "$T/b" -f "$T/b.json" import "$T/b.jsonl"
check_eq "import again: exit 0" 0 "$CTL_RC"
check_eq "import again: every entry kept (the cache holds the same answers)" 6 \
    "$(grep -c '^kept ocsp ' "$T/ctl.out")"

# ---- 3. rejected bundles: each gets its reason, the cache is unchanged -----------
# L1: leaf2's entry (serial 3002, one SHA-1 CertID, issued by the ICA); L2: another.
K1=$("$CTL" -C "$T/b" list | awk '$3 == "serial=3002" { print $1 }')
L1=$(grep "\"key\":\"$K1\"" "$T/b.jsonl")
L2=$(grep '"type":"entry"' "$T/b.jsonl" | grep -v "\"key\":\"$K1\"" | head -n 1)
[ -n "$K1" ] && [ -n "$L1" ] && [ -n "$L2" ] || die "cannot find leaf2's entry in the bundle"
K2=$(field "$L2" key)
printf '%s' "$(field "$L1" response)" | base64 -d >"$T/l1.resp"
printf '%s' "$(field "$L1" request)" | base64 -d >"$T/l1.req"

flip_sig "$T/l1.resp" "$T/l1.flip" || die "cannot find the signature in a response"
entry_with "$L1" response "$(base64 -w0 "$T/l1.flip")" | seal "$T/r_sig.jsonl"
entry_with "$L1" key "$K2" | seal "$T/r_swap.jsonl"
# The look-alike tree (same names, other keys) answering for the genuine CertID.
openssl ocsp -index "$(ca_index evil_ica)" -CA "$(ca_cert evil_ica)" \
    -rsigner "$(ca_rsigner evil_ica)" -rkey "$(ca_rkey evil_ica)" -rother "$EVIL_CHAIN" \
    -reqin "$T/l1.req" -respout "$T/l1.evil" -ndays 1 >/dev/null 2>&1 ||
    die "the look-alike responder did not sign"
entry_with "$L1" response "$(base64 -w0 "$T/l1.evil")" | seal "$T/r_evil.jsonl"
head -c $(( $(wc -c <"$T/b.jsonl") / 2 )) "$T/b.jsonl" >"$T/r_trunc.jsonl"
head -n -1 "$T/b.jsonl" | grep -v '"type":"header"' | SEAL_VERSION=2 seal "$T/r_ver.jsonl"

before=$(list_of "$T/b")
for case in "sig:signature" "swap:key: the entry's key is not its request's CertID key" \
    "evil:chain\|signer" "trunc:truncated\|corrupt" "ver:unsupported bundle version 2"; do
	name=${case%%:*}; why=${case#*:}
	ctl -C "$T/b" -f "$T/b.json" import "$T/r_$name.jsonl"
	check_eq "rejected bundle $name: exit 1" 1 "$CTL_RC"
	check "rejected bundle $name: the reason is given ($why)" grep -q "$why" "$T/ctl.out"
	check_eq "rejected bundle $name: the cache is unchanged" "$before" "$(list_of "$T/b")"
done

# Expired: an answer valid for one minute, imported two minutes later.
so=$(libfaketime_so) || so=""
if [ -n "$so" ]; then
	openssl ocsp -index "$(ca_index ica)" -CA "$ICA_CERT" -rsigner "$(ca_rsigner ica)" \
	    -rkey "$(ca_rkey ica)" -rother "$INTERMEDIATES" -reqin "$T/l1.req" \
	    -respout "$T/l1.short" -nmin 1 >/dev/null 2>&1 || die "cannot sign a 1-minute answer"
	entry_with "$L1" response "$(base64 -w0 "$T/l1.short")" | seal "$T/r_exp.jsonl"
	ctl -f "$T/b.json" -C "$T/none" verify "$T/r_exp.jsonl"
	check_eq "a one-minute answer verifies now" 0 "$CTL_RC"
	# An ASan build wants its runtime first in the preload list.
	asan=$(ldd "$CTL" 2>/dev/null | awk '/libasan/ { print $3; exit }')
	env LD_PRELOAD="${asan:+$asan:}$so" FAKETIME=+2m "$CTL" -C "$T/b" -f "$T/b.json" import "$T/r_exp.jsonl" \
	    >"$T/ctl.out" 2>&1
	check_eq "expired entry (two minutes later): exit 1" 1 "$?"
	check "expired entry: the reason is given" grep -q '^rejected ocsp .*expired' "$T/ctl.out"
	check_eq "expired entry: the cache is unchanged" "$before" "$(list_of "$T/b")"
else
	note "libfaketime not installed: expired-entry case skipped"
fi

# --allow-partial: the valid entry goes in, the forged one does not, exit 0.
{ printf '%s\n' "$L2"; entry_with "$L1" key "$K2"; } | seal "$T/r_part.jsonl"
ctl -C "$T/b" -f "$T/b.json" import "$T/r_part.jsonl"
check_eq "a mixed bundle without --allow-partial: exit 1" 1 "$CTL_RC"
check "the valid entry is held back" grep -q '^not imported ocsp' "$T/ctl.out"
ctl -C "$T/b" -f "$T/b.json" import --allow-partial "$T/r_part.jsonl"
check_eq "with --allow-partial: exit 0" 0 "$CTL_RC"
check "with --allow-partial: the forged entry is still rejected" grep -q '^rejected ocsp' "$T/ctl.out"

# ---- 4. import while B serves under load ----------------------------------------
# A warms entries B has never seen; export them.
i=0
for leaf in "$LEAF5" "$LEAF6" "$LEAF7" "$LEAF8"; do
	i=$((i + 1))
	mkreq "$T/n$i.der" "$ICA_CERT" "$leaf"
	SURL=$A_URL post "$T/n$i.der" "$T/an$i.der"
done
ctl -C "$T/a" -f "$T/a.json" export --out "$T/b2.jsonl"
check_eq "second export: ten entries" 10 "$(grep -c '"type":"entry"' "$T/b2.jsonl")"

: >"$T/load.fail"
(
	n=0
	while [ ! -f "$T/load.stop" ]; do
		n=$((n + 1))
		code=$(curl -s -m 5 -o "$T/load.der" -w '%{http_code}' -H "$CT_REQ" \
		    --data-binary @"$T/q1.der" "$B_URL/ocsp")
		if [ "$code" != 200 ] || ! cmp -s "$T/load.der" "$T/a1.der"; then
			echo "request $n: HTTP $code" >>"$T/load.fail"
		fi
	done
	echo "$n" >"$T/load.count"
) &
LOAD=$!
sleep 0.5
ctl -C "$T/b" -f "$T/b.json" import "$T/b2.jsonl"
check_eq "import under load: exit 0" 0 "$CTL_RC"
check_eq "import under load: four new entries imported" 4 "$(grep -c '^imported ocsp ' "$T/ctl.out")"
for i in 1 2 3 4; do
	SURL=$B_URL post "$T/n$i.der" "$T/bn$i.der"
	check_bytes "new entry $i served by B right after the import" "$T/an$i.der" "$T/bn$i.der"
done
sleep 0.5
touch "$T/load.stop"
wait "$LOAD"
note "$(cat "$T/load.count") requests during the import"
check_eq "no request failed while the import ran" "" "$(cat "$T/load.fail")"
assert "the load loop made requests" '[ "$(cat "$T/load.count")" -gt 5 ]'

# ---- 5. status, show, purge -----------------------------------------------------
# The daemon writes its health record every few seconds and when it stops.
SPID=$B_PID stapled_stop
check_eq "B stops cleanly after the imports" 0 "$BG_RC"
ctl -C "$T/b" status
check_eq "status: exit 0" 0 "$CTL_RC"
check "status: counts the OCSP entries" grep -q '^entries *ocsp 10:' "$T/ctl.out"
check "status: the daemon's record is there" grep -q '^daemon *pid' "$T/ctl.out"
ctl -C "$T/b" --json status
check "status --json parses" sh -c "jq -e '.kinds.ocsp.entries == 10' '$T/ctl.out' >/dev/null 2>&1 || ! command -v jq >/dev/null"
key=$("$CTL" -C "$T/b" list | awk '/ revoked / { print $1; exit }')
ctl -C "$T/b" -f "$T/b.json" show "$key"
check_eq "show: exit 0" 0 "$CTL_RC"
check "show: the cert status and reason" sh -c "grep -q 'cert_status *revoked' '$T/ctl.out' && grep -q 'reason *keyCompromise' '$T/ctl.out'"
check "show: the signer chain reaches the anchor" grep -q 'from *anchor' "$T/ctl.out"
check "show: it verifies now" grep -q 'verifies_now *ok' "$T/ctl.out"
ctl -C "$T/b" list --expiring-within 2d
check_eq "list --expiring-within 2d: every entry (valid one day)" 10 "$(wc -l <"$T/ctl.out")"
ctl -C "$T/b" list --expiring-within 1h
check_eq "list --expiring-within 1h: none" 0 "$(wc -l <"$T/ctl.out")"
HDR="KEY KIND SUBJECT STATUS THISUPDATE NEXTUPDATE LEFT SOURCE HASH"
ctl -C "$T/b" list --header
check_eq "list --header: the header line first" "$HDR" "$(head -n 1 "$T/ctl.out")"
check_eq "... then every entry" 11 "$(wc -l <"$T/ctl.out")"
check_eq "list on a terminal: the header line first" "$HDR" \
    "$(script -qc "$CTL -C $T/b list" /dev/null | head -n 1 | tr -d '\r')"
ctl -C "$T/b" purge "$key"
check_eq "purge KEY: exit 0" 0 "$CTL_RC"
check_eq "purge KEY: one entry fewer" 9 "$("$CTL" -C "$T/b" list | wc -l)"
ctl -C "$T/b" purge "$key"
check_eq "purge of an absent key: exit 1" 1 "$CTL_RC"
ctl -C "$T/b" list --kind nope
check_eq "usage error: exit 2" 2 "$CTL_RC"
ctl -C "$T/nonexistent" list
check_eq "missing cache: exit 3" 3 "$CTL_RC"

# ---- 6. manifest from a chain, fetch on the "connected" side, import --------------
# certid_of REQ: the DER of a request's first CertID, in hex (OCSPRequest,
# tbsRequest, requestList, Request, CertID), from one python run.
certid_of() {
	python3 - "$1" <<'PY'
import sys
der = open(sys.argv[1], "rb").read()
def tlv(i):
    """The element at i: where its contents start and where it ends."""
    n, j = der[i + 1], i + 2
    if n & 0x80:
        k, n = n & 0x7f, 0
        for _ in range(k):
            n, j = n << 8 | der[j], j + 1
    return j, j + n
try:
    c = tlv(0)[0]                       # OCSPRequest
    c = tlv(c)[0]                       # tbsRequest
    while der[c] in (0xa0, 0xa1):       # [0] version, [1] requestorName
        c = tlv(c)[1]
    c = tlv(c)[0]                       # requestList
    c = tlv(c)[0]                       # the first Request
    print(der[c:tlv(c)[1]].hex())       # its CertID, whole
except IndexError:
    print("no-certid-in-" + sys.argv[1])
PY
}

# manifest_certids MANIFEST: the CertID DER of every OCSP record, sorted.
manifest_certids() {
	sed -n 's/.*"request": "\([^"]*\)".*/\1/p' "$1" | while read -r _r; do
		printf '%s' "$_r" | base64 -d >"$T/mr.der"
		certid_of "$T/mr.der"
	done | sort
}

# openssl_certids PREFIX N: the CertIDs `openssl ocsp -HASH -issuer
# PREFIX<i+1>.pem -cert PREFIX<i>.pem -no_nonce -reqout` makes for the device
# chain PREFIX1..N minus its leaf and root, in each of sha1, sha256, sha384,
# sorted.
openssl_certids() {
	local _h _i
	for _i in $(seq 2 $(($2 - 1))); do
		for _h in sha1 sha256 sha384; do
			openssl ocsp -"$_h" -issuer "$1$((_i + 1)).pem" -cert "$1$_i.pem" \
			    -no_nonce -reqout "$T/oc.der" >/dev/null 2>&1 || echo "openssl-failed"
			certid_of "$T/oc.der"
		done
	done | sort
}

cat "$LEAF4" "$ICA_CERT" "$IDENT_CERT" "$ROOT_CERT" >"$T/chain4.pem"
ctl -C "$T/none" manifest --chain "$T/chain4.pem" --out "$T/m4.json"
check_eq "manifest --chain: exit 0" 0 "$CTL_RC"
check_eq "manifest --chain: the ICA and the identity CA, each in three hashes" 6 \
    "$(grep -c '"key"' "$T/m4.json")"
for h in sha1 sha256 sha384; do
	check_eq "manifest --chain: two records say \"hash\": \"$h\"" 2 \
	    "$(grep -c "\"hash\": \"$h\"" "$T/m4.json")"
done
awk -v d="$T/t4_" '/BEGIN CERT/ { n++ } { print > (d n ".pem") }' "$T/chain4.pem"
manifest_certids "$T/m4.json" >"$T/m4.ours"
openssl_certids "$T/t4_" 4 >"$T/m4.cli"
check "manifest --chain: its requests' CertIDs are openssl's -sha1, -sha256 and -sha384 ones (DER)" \
    cmp -s "$T/m4.ours" "$T/m4.cli"
ctl -f "$T/a.json" -C "$T/none" fetch --manifest "$T/m4.json" --out "$T/f4.jsonl" \
    --ocsp-upstream "http://127.0.0.1:$UP/" --rim-upstream "http://127.0.0.1:$DEAD/"
check_eq "fetch from the live upstream: exit 0" 0 "$CTL_RC"
ctl -f "$T/b.json" -C "$T/f" import "$T/f4.jsonl"
check_eq "the fetched bundle imports into a fresh cache" 0 "$CTL_RC"
check_eq "every CertID of the manifest was fetched and imported" \
    "$(grep -c '"key"' "$T/m4.json")" "$(grep -c '^imported ocsp ' "$T/ctl.out")"

# The imported cache, no upstream: clients asking in each hash get good.
conf "$T/f.json" "$T/f" "http://127.0.0.1:$DEAD/" dead
STAPLED_CACHE=$T/f stapled_start f -f "$T/f.json"
for h in sha1 sha256 sha384; do
	for pair in "$IDENT_CERT $ICA_CERT" "$ROOT_CERT $IDENT_CERT"; do
		set -- $pair
		openssl ocsp -url "$SURL/ocsp" -"$h" -issuer "$1" -cert "$2" -no_nonce \
		    -CAfile "$ANCHORS" -verify_other "$INTERMEDIATES" \
		    -respout "$T/fh.der" >"$T/fh.out" 2>&1
		rc=$?
		what=$(basename "$(dirname "$2")")
		check "imported bundle, no upstream: openssl ocsp -$h for the $what CA: good ($(resp_status "$T/fh.der"))" \
		    sh -c "[ $rc = 0 ] && grep -q ': good' '$T/fh.out'"
	done
done
stapled_stop

# --hash chooses; unknown names are a usage error.
ctl -f "$T/a.json" -C "$T/none" fetch --manifest "$T/m4.json" --out "$T/f4s.jsonl" \
    --hash sha256 --ocsp-upstream "http://127.0.0.1:$UP/" --rim-upstream "http://127.0.0.1:$DEAD/"
check_eq "fetch --hash sha256: exit 0" 0 "$CTL_RC"
check_eq "fetch --hash sha256: the two SHA-256 CertIDs only" 2 \
    "$(grep -c '"type":"entry"' "$T/f4s.jsonl")"
ctl -C "$T/none" manifest --chain "$T/chain4.pem" --hash sha1,sha384 --out "$T/m4b.json"
check_eq "manifest --hash sha1,sha384: four records, none SHA-256" "0 4 0" \
    "$CTL_RC $(grep -c '"key"' "$T/m4b.json") $(grep -c '"hash": "sha256"' "$T/m4b.json")"
for bad in md5 "sha1,,sha256" "" "sha1,sha512"; do
	ctl -C "$T/none" manifest --chain "$T/chain4.pem" --hash "$bad" --out "$T/m4x.json"
	check_eq "manifest --hash '$bad': usage error, exit 2" 2 "$CTL_RC"
	check "manifest --hash '$bad': the error says why" \
	    grep -q -- "--hash .*\(not a CertID hash\|empty\|no hash\)" "$T/ctl.out"
	ctl -C "$T/none" fetch --manifest "$T/m4.json" --out "$T/f4x.jsonl" --hash "$bad"
	check_eq "fetch --hash '$bad': exit 2" 2 "$CTL_RC"
done
check "a refused --hash writes nothing" sh -c "[ ! -e '$T/m4x.json' ] && [ ! -e '$T/f4x.jsonl' ]"
ctl -C "$T/none" prefetch --chain "$T/chain4.pem" --hash sha
check_eq "prefetch --hash sha: exit 2" 2 "$CTL_RC"

# A manifest of an older staplectl: SHA-1 records without "hash". fetch
# restates them in SHA-256 and SHA-384 from the issuers it knows (-f).
ctl -C "$T/none" manifest --chain "$T/chain4.pem" --hash sha1 --out "$T/m4old.json"
sed -i '/"hash": /d' "$T/m4old.json"
ctl -f "$T/a.json" -C "$T/none" fetch --manifest "$T/m4old.json" --out "$T/f4old.jsonl" \
    --ocsp-upstream "http://127.0.0.1:$UP/" --rim-upstream "http://127.0.0.1:$DEAD/"
check_eq "fetch of an older (SHA-1) manifest: exit 0" 0 "$CTL_RC"
check_eq "fetch of an older manifest: both CertIDs in every hash, as from a new one" \
    "$(grep '"type":"entry"' "$T/f4.jsonl" | sed 's/.*"key":"\([0-9a-f]*\)".*/\1/' | sort | tr '\n' ' ')" \
    "$(grep '"type":"entry"' "$T/f4old.jsonl" | sed 's/.*"key":"\([0-9a-f]*\)".*/\1/' | sort | tr '\n' ' ')"
# Without the test PKI's CAs (no -f) the issuers are unknown: said, not fatal.
ctl -C "$T/none" fetch --manifest "$T/m4old.json" --out "$T/f4u.jsonl" --hash sha256 \
    --ocsp-upstream "http://127.0.0.1:$DEAD/" --rim-upstream "http://127.0.0.1:$DEAD/"
check "fetch: a record whose issuer is unknown is named, with the hash it is not asked in" \
    grep -q "ocsp\[0\] (serial=.*): its issuer's certificate is not known here.*sha256" "$T/ctl.out"
sed 's/"request": /"hash": "sha384", "request": /' "$T/m4old.json" >"$T/m4lie.json"
ctl -f "$T/a.json" -C "$T/none" fetch --manifest "$T/m4lie.json" --out "$T/f4lie.jsonl" \
    --ocsp-upstream "http://127.0.0.1:$UP/" --rim-upstream "http://127.0.0.1:$DEAD/"
check_eq "fetch: a record whose \"hash\" is not its request's: exit 1" 1 "$CTL_RC"
check "fetch: ... and the reason" grep -q '"hash" is sha384 but its request asks with sha1' "$T/ctl.out"

# ---- 7. manifest: CertIDs equal those the openssl command line derives ---------
# Genuine device chains from production GPUs, in all three hashes; the SHA-384
# (nvtrust) and SHA-256 (nvattest 2.0) requests captured with them.
CAP=$VECTORS/captured
for chain in h100-a gb100 h100-nvl; do
	ctl -C "$T/m" manifest --chain "$CAP/$chain-device-chain.pem" --out "$T/mc-$chain.json"
	check_eq "manifest --chain $chain: exit 0, nine CertIDs" "0 9" \
	    "$CTL_RC $(grep -c '"key"' "$T/mc-$chain.json")"
	awk -v d="$T/$chain." '/BEGIN CERT/ { n++ } { print > (d n ".pem") }' \
	    "$CAP/$chain-device-chain.pem"
	manifest_certids "$T/mc-$chain.json" >"$T/mc-$chain.ours"
	openssl_certids "$T/$chain." 5 >"$T/mc-$chain.cli"
	check "manifest --chain $chain: the CertIDs (DER) equal openssl's -sha1, -sha256, -sha384" \
	    cmp -s "$T/mc-$chain.ours" "$T/mc-$chain.cli"
done
for r in h100-a-1-brom.nononce.sha384 h100-a-2-provisioner-ica.nononce.sha384 \
    h100-a-3-identity.nononce.sha384 h100-a-1-brom.nonce.sha384; do
	check "captured request $r: its CertID is in the manifest" \
	    grep -qx "$(certid_of "$CAP/requests/$r.req.der")" "$T/mc-h100-a.ours"
done
for r in h100-nvl-gh100-a01-gsp-brom h100-nvl-gh100-provisioner-ica1 h100-nvl-gh100-identity; do
	check "captured request $r.sha256: its CertID is in the manifest" \
	    grep -qx "$(certid_of "$CAP/requests/$r.sha256.nononce.req.der")" "$T/mc-h100-nvl.ours"
done
for r in h100-a-0-leaf-fmc.nononce.sha384 h100-nvl-gh100-a01-gsp-fmc-lf.sha256.nononce; do
	check "captured request $r: the leaf is not asked about" \
	    sh -c "! grep -qx '$(certid_of "$CAP/requests/$r.req.der")' '$T/mc-h100-a.ours' '$T/mc-h100-nvl.ours'"
done

EV=$VECTORS/attestation-sdk/serialized_test_evidence/hopper_evidence.json
if [ -f "$EV" ] && command -v jq >/dev/null 2>&1; then
	ctl -C "$T/m" manifest --evidence "$EV" --out "$T/m.json"
	check_eq "manifest --evidence: exit 0" 0 "$CTL_RC"
	manifest_certids "$T/m.json" >"$T/m.ours"
	# openssl's: the device chain minus its leaf and root, each with its issuer.
	jq -r '.[0].certificate' "$EV" | base64 -d |
	    awk -v d="$T/ev" '/BEGIN CERT/ { n++ } { print > (d n ".pem") }'
	n=$(ls "$T"/ev*.pem | wc -l)
	openssl_certids "$T/ev" "$n" >"$T/m.cli"
	check_eq "manifest: $((n - 2)) certificates in three hashes for a chain of $n" \
	    $((3 * (n - 2))) "$(wc -l <"$T/m.ours")"
	check "manifest: the CertIDs equal those openssl ocsp derives from the same chain" \
	    cmp -s "$T/m.ours" "$T/m.cli"
	check "manifest: the driver RIM ID the SDK requests" \
	    sh -c "jq -r '.rim[]' '$T/m.json' | grep -q '^NV_GPU_DRIVER_GH100_'"
	check "manifest: the VBIOS RIM ID" sh -c "jq -r '.rim[]' '$T/m.json' | grep -q '^NV_GPU_VBIOS_'"
	printf '[]' >"$T/not-evidence.json"
	ctl -C "$T/m" manifest --evidence "$T/not-evidence.json"
	check_eq "manifest on a file that is not evidence: exit 1" 1 "$CTL_RC"
else
	note "evidence vectors or jq missing: manifest case skipped"
fi

it_done
