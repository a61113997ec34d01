#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# docs/airgap.md's routine, run as printed: the blocks marked airgap-routine, in order, on
# their side (the air-gapped one from examples/airgapped/stapled.json, the connected one),
# with the test PKI and its responders in place of NVIDIA's, and the paths under the test's
# directory; then the connected side's cron line (examples/connected/stapled-fetch.cron), which
# runs stapled-fetch.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_airgap_doc
need_ctl
need_cmd jq base64 sha256sum
pki_make
BLOCKS=$top_srcdir/tests/integration/doc_blocks.py
EV=$VECTORS/attestation-sdk/serialized_test_evidence

# ---- the vendor: the test PKI's responders, and a RIM service ----------------------
farm_start UP good -ndays 1 -rother CHAIN
RIMDIR=$T/rims
mkdir -p "$RIMDIR" && : >"$RIMDIR/index"
upstream_start URIM rim --mode "dir:$RIMDIR"
# The RIM signer: a leaf of the test PKI, its chain in the document's KeyInfo
# (what stapled checks of a RIM; the XML signature is nvattest's to check).
RIM_KEYINFO=$(for c in "$LEAF5" "$ICA_CERT" "$IDENT_CERT" "$ROOT_CERT"; do
	printf '<ds:X509Certificate>%s</ds:X509Certificate>' \
	    "$(openssl x509 -in "$c" -outform DER | base64 -w0)"
done)
# rim_serve ID: the RIM service answers GET /v1/rim/ID with a document for it.
rim_serve() {
	local _x=$RIMDIR/$1.xml
	{
		printf '<?xml version="1.0" encoding="UTF-8"?>\n'
		printf '<SoftwareIdentity xmlns="http://standards.iso.org/iso/19770/-2/2015/schema.xsd" name="%s" version="1">' "$1"
		printf '<ds:Signature xmlns:ds="http://www.w3.org/2000/09/xmldsig#"><ds:KeyInfo><ds:X509Data>%s' "$RIM_KEYINFO"
		printf '</ds:X509Data></ds:KeyInfo></ds:Signature></SoftwareIdentity>\n'
	} >"$_x"
	printf '{"id":"%s","rim":"%s","sha256":"%s","rim_format":"CORE_SWID","request_id":"t_airgap_doc"}' \
	    "$1" "$(base64 -w0 "$_x")" "$(sha256sum "$_x" | cut -d' ' -f1)" >"$RIMDIR/$1.json"
	printf 'Content-Type: application/json\n' >"$RIMDIR/json.hdr"
	dir_put "$RIMDIR" "/v1/rim/$1" 200 "$RIMDIR/$1.json" "$RIMDIR/json.hdr"
}

# ---- the two sides' configurations --------------------------------------------------
# The air-gapped side: the example as it is, its cache under $T, the test
# PKI's root pinned in place of NVIDIA's.
AG=$T/air-gapped; CN=$T/connected
mkdir -p "$AG" "$CN/cache" "$T/tmp" "$T/bin"	# the package's tmpfiles.d makes the cache
jq --arg c "$AG/cache" --arg a "$ANCHORS" '.cache_dir = $c | .ocsp.anchors = [$a] |
    .rim.anchors = [$a]' "$top_srcdir/examples/airgapped/stapled.json" >"$AG/stapled.json" ||
    die "cannot read examples/airgapped/stapled.json"
# The connected side: the test's responders and RIM service are NVIDIA's.
cat >"$CN/stapled.json" <<EOF
{ "cache_dir": "$CN/cache",
  "ocsp": { "upstreams": [ "http://127.0.0.1:$UP/" ], "anchors": [ "$ANCHORS" ] },
  "rim": { "upstreams": [ "http://127.0.0.1:$URIM" ], "anchors": [ "$ANCHORS" ] } }
EOF

# nvattest collect-evidence: NVIDIA's serialized test evidence (its reports
# name the RIMs), each device's certificate chain the test PKI's.
cat "$LEAF1" "$ICA_CERT" "$IDENT_CERT" "$ROOT_CERT" >"$T/gpu-chain.pem"
cat "$LEAF2" "$ICA_CERT" "$IDENT_CERT" "$ROOT_CERT" >"$T/switch-chain.pem"
for d in gpu:hopper_evidence.json:gpu-chain.pem nvswitch:switch_evidence_ls10.json:switch-chain.pem; do
	IFS=: read -r dev file chain <<EOF
$d
EOF
	jq --arg c "$(base64 -w0 "$T/$chain")" \
	    '{ result_code: 0, result_message: "Ok", evidences: [ .[0] | .certificate = $c ] }' \
	    "$EV/$file" >"$T/evidence-$dev.json" || die "cannot make the $dev evidence"
done
cat >"$T/bin/nvattest" <<EOF
#!/bin/sh
# nvattest collect-evidence --device gpu|nvswitch --format json, from files
case " \$* " in
*" collect-evidence "*"--device gpu "*) exec cat "$T/evidence-gpu.json" ;;
*" collect-evidence "*"--device nvswitch "*) exec cat "$T/evidence-nvswitch.json" ;;
esac
echo "nvattest (test): not understood: \$*" >&2
exit 2
EOF
# staplectl: the built one; without -f it reads its side's configuration,
# as the package's staplectl reads /etc/stapled/stapled.json.
cat >"$T/bin/staplectl" <<EOF
#!/bin/sh
case " \$* " in
*" -f "*) exec "$CTL" "\$@" ;;
esac
exec "$CTL" -f "\$STAPLECTL_CONF" "\$@"
EOF
chmod +x "$T/bin/nvattest" "$T/bin/staplectl"

# subst: the doc's paths as the test has them (a path starts a word).
subst() {
	local _b='\(^\|[[:space:]>="(]\)'
	sed -e "s#$_b/tmp/#\1$T/tmp/#g" \
	    -e "s#$_b/etc/stapled/stapled.json#\1$AG/stapled.json#g" \
	    -e "s#$_b/media/transfer#\1$T/media/transfer#g" \
	    -e "s#$_b/srv/stapled/#\1$CN/srv/#g" -e "s#$_b/usr/sbin/staplectl#\1staplectl#g"
}

# ---- the routine, as docs/airgap.md prints it ---------------------------------------
python3 "$BLOCKS" routine "$top_srcdir/docs/airgap.md" >"$T/routine.txt" ||
    die "cannot read the routine's blocks"
check_eq "docs/airgap.md marks the routine: 6 blocks, both sides" \
    "air-gapped air-gapped connected connected air-gapped air-gapped" \
    "$(sed -n 's/^#@ \([a-z-]*\) .*/\1/p' "$T/routine.txt" | tr '\n' ' ' | sed 's/ $//')"
{
	printf 'set -eE\n'
	printf 'PATH=%s:$PATH\n' "$T/bin"
	printf "trap 'echo \"the routine stopped: docs/airgap.md:\$AT: \$BASH_COMMAND\" >&2' ERR\n"
	# Before the connected side's first block: the RIM service has every
	# RIM the manifest names (the vendor's, for any RIM it is asked).
	printf 'step() { AT=$2; echo "== $1 side, docs/airgap.md:$2"; case $1 in\n'
	printf '  air-gapped) STAPLECTL_CONF=%s ;;\n' "$AG/stapled.json"
	printf '  connected) STAPLECTL_CONF=%s; [ -f %s ] || { for id in $(jq -r ".rim[]" %s); do rim_serve "$id"; done; touch %s; } ;;\n' \
	    "$CN/stapled.json" "$T/rims.served" "$T/media/transfer/stapled-manifest.json" "$T/rims.served"
	printf 'esac; export STAPLECTL_CONF; }\n'
	subst <"$T/routine.txt" | sed 's/^#@ \([a-z-]*\) \([0-9]*\)$/step \1 \2/'
	printf 'echo "== routine done"\n'
} >"$T/routine.sh"

# The air-gapped daemon serves while the bundle is imported, its upstreams dead.
STAPLED_CACHE=$AG/cache stapled_start ag -f "$AG/stapled.json"
mkreq "$T/q-ica.der" "$IDENT_CERT" "$ICA_CERT"
post "$T/q-ica.der" "$T/before.der"
check_trylater "before the routine: the air-gapped daemon has nothing (tryLater)" "$T/before.der"

# The functions the routine's step needs, then the routine in one shell.
(
	. "$top_srcdir/tests/integration/lib.sh"
	export -f rim_serve dir_put
	RIMDIR=$RIMDIR RIM_KEYINFO=$RIM_KEYINFO bash "$T/routine.sh"
) >"$T/routine.log" 2>&1
rc=$?
check_eq "the routine, as printed: every command exits 0" 0 "$rc"
sed 's/^/#   /' "$T/routine.log" | grep -v '^#   \(imported\|ok\) ' | tail -n 25

M=$T/media/transfer/stapled-manifest.json
check_eq "the manifest: the GPU's and the NVSwitch's CertIDs, in three hashes" 6 \
    "$(jq '.ocsp | length' "$M" 2>/dev/null)"
check_eq "... the RIMs the reports name and the two named with --rim-id" \
    "NV_GPU_DRIVER_GH100_590.12 NV_GPU_DRIVER_GH100_595.71.05 NV_GPU_VBIOS_1010_0210_886_96009F0004 NV_GPU_VBIOS_G520_0200_885_9600A50001 NV_SWITCH_BIOS_5612_0002_890_9610550001" \
    "$(jq -r '.rim[]' "$M" 2>/dev/null | sort | tr '\n' ' ' | sed 's/ $//')"
B=$(ls "$T"/media/transfer/stapled-2*.jsonl 2>/dev/null | tail -n 1)
check "the bundle is on the medium, named by the time it was fetched" \
    sh -c "echo '${B##*/}' | grep -qx 'stapled-[0-9]\{8\}T[0-9]\{4\}Z.jsonl'"
check "fetch stored every RIM and CertID (the RIMs' chains' too)" \
    grep -q 'fetch: 5 RIMs: 5 stored' "$T/routine.log"
check "... and that nothing failed" grep -q 'fetch: 14 entries in .*, 0 failed$' "$T/routine.log"
check "import: every entry imported" sh -c "grep -q '^imported ocsp' '$T/routine.log' &&
    ! grep -q '^rejected' '$T/routine.log'"
check "the bundle checked against the manifest (5 RIMs, 6 records): it lacks none" \
    grep -q 'lacks 0 of the 11 entries .*stapled-manifest.json names$' "$T/routine.log"
check "verify and import name a RIM by its ID" sh -c "grep -q '^ok rim NV_GPU_DRIVER_GH100_595.71.05 ' '$T/routine.log' &&
    grep -q '^imported rim NV_GPU_DRIVER_GH100_595.71.05 ' '$T/routine.log'"
check "staplectl status and list ran on the air-gapped cache" \
    grep -q '^earliest ' "$T/routine.log"

# What the air-gapped daemon serves now, with no upstream.
openssl ocsp -url "$SURL/ocsp" -issuer "$IDENT_CERT" -cert "$ICA_CERT" -CAfile "$ANCHORS" \
    -verify_other "$INTERMEDIATES" -no_nonce >"$T/after.out" 2>&1
check "after the import: the air-gapped daemon answers the GPU chain's CertID (good)" \
    grep -q ': good' "$T/after.out"
code=$(curl -s -m 5 -o "$T/rim.json" -w '%{http_code}' "$SURL/v1/rim/NV_GPU_DRIVER_GH100_595.71.05")
check_eq "... and serves the driver RIM named with --rim-id" 200 "$code"
stapled_stop

# ---- the connected side's cron line ------------------------------------------------
# The command after the five time fields and the user, as cron's /bin/sh runs
# it (cron turns \% into %): the package's stapled-fetch, the build's here,
# its settings file naming the manifest and the outbox under $CN.
mkdir -p "$CN/srv/out" && cp "$M" "$CN/srv/manifest.json"
printf '%s\n' "STAPLED_FETCH_MANIFEST=$CN/srv/manifest.json" \
    "STAPLED_FETCH_OUTBOX=$CN/srv/out" "STAPLED_CONFIG=$CN/stapled.json" \
    "STAPLECTL=$CTL" >"$CN/fetch.conf"
line=$(sed "s#[[:space:]]/usr/libexec/stapled/stapled-fetch# $top_builddir/tools/stapled-fetch#" \
    "$top_srcdir/examples/connected/stapled-fetch.cron" | grep -v '^#' | head -n 1)
cmd=$(printf '%s\n' "$line" | cut -d' ' -f7- | sed 's/\\%/%/g')
check_eq "the cron line runs as the stapled user" stapled "$(printf '%s\n' "$line" | cut -d' ' -f6)"
check_eq "... every 8 hours, the timer's cadence" "0 0,8,16 * * *" \
    "$(printf '%s\n' "$line" | cut -d' ' -f1-5)"
STAPLED_FETCH_CONF=$CN/fetch.conf sh -c "$cmd" >"$T/cron.log" 2>&1
check_eq "the cron line's command: exit 0" 0 "$?"
check "... a dated bundle in the outgoing directory" \
    sh -c "ls '$CN/srv/out' | grep -qx 'stapled-[0-9]\{8\}T[0-9]\{6\}Z.jsonl'"

# ---- an --out into a directory that does not exist says which -------------------
"$CTL" -f "$AG/stapled.json" manifest --evidence "$T/evidence-gpu.json" \
    --out "$T/no-such-medium/stapled-manifest.json" >"$T/nodir.out" 2>&1
check "--out in a missing directory: the message names the directory, not a temporary file" \
    grep -q "stapled-manifest.json: cannot write in the directory $T/no-such-medium: No such file or directory" \
    "$T/nodir.out"

it_done
