#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Regenerate attest/nvidia_certs.c from NVIDIA's published test vectors and
# the material captured from NVIDIA's production services.
#
# usage: tools/gen-nvidia-certs.sh tests/vectors/nvidia > attest/nvidia_certs.c
#
# The argument is the vectors/nvidia tree (tests/vectors/nvidia in the
# repository, so the output is reproducible from it; see its SOURCES.md and
# captured/SOURCES.md). Anchors are pinned by file: the NVIDIA Device
# Identity CA root and the NVIDIA CoRIM signing Root CA. The pool is every
# CA certificate (basicConstraints CA:TRUE, not self-signed, CN starting
# "NVIDIA", so no per-device BROM certs) found in
#   - device chains: *CertChain*.txt, *.pem, and the "certificate" fields
#     (base64 of a PEM chain) of evidence JSON;
#   - RIM KeyInfo blocks: *.xml and *.swidtag documents, and the RIM
#     service's JSON envelopes (*.json with a "rim" field: base64 of the
#     SWID document);
# that chains to one of the anchors through the others, time ignored.
# Certificates are deduplicated by SHA-256 fingerprint and sorted by it, so
# the output depends only on the set of certificates found.
set -euo pipefail

[ $# -eq 1 ] || { echo "usage: $0 VECTORS_DIR" >&2; exit 2; }
V=$1
DEV_ROOT=$V/nvtrust/local_gpu_verifier/certs/verifier_device_root.pem
RIM_ROOT=$V/attestation-sdk/testdata/trusted_certs/rim_root.crt
for f in "$DEV_ROOT" "$RIM_ROOT"; do
	[ -r "$f" ] || { echo "$0: $f: not readable" >&2; exit 1; }
done

T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir "$T/c"

# met TEXT: true when TEXT was met before (the same certificate, chain or
# document in another vector); notes it otherwise. The vectors repeat the
# same chains hundreds of times, and each openssl run costs a process.
declare -A seen
met() {
	[ -n "${seen[$1]+x}" ] && return 0
	seen[$1]=1
	return 1
}

# split_pem FILE: write each PEM certificate in FILE to $T/c/<sha256>.pem
split_pem() {
	local r pem
	awk -v dir="$T/raw" '
	    /-----BEGIN CERTIFICATE-----/ { f = sprintf("%s.%06d", dir, ++n); inblk = 1 }
	    inblk { print > f }
	    /-----END CERTIFICATE-----/ { inblk = 0; close(f) }
	' "$1"
	for r in "$T"/raw.*; do
		[ -e "$r" ] || continue
		IFS= read -r -d '' pem < "$r" || true
		met "${pem//[$'\r\n\t ']/}" || add_cert "$r" PEM
		rm -f "$r"
	done
}

# add_cert FILE FORM: normalise one certificate, name it by fingerprint
add_cert() {
	local out fp
	# One run: the fingerprint's line, then the certificate in PEM.
	out=$(openssl x509 -inform "$2" -in "$1" -fingerprint -sha256 \
	    2>/dev/null) || return 0
	fp=${out%%$'\n'*}
	fp=${fp#*=}
	fp=${fp//:/}
	[ -n "$fp" ] && [ "$fp" != "$out" ] || return 0
	printf '%s\n' "${out#*$'\n'}" > "$T/c/$fp.pem"
}

# xml_certs FILE: every <ds:X509Certificate>base64 DER</ds:X509Certificate>
# of a RIM document (the KeyInfo chain).
xml_certs() {
	tr -d '\r\n\t ' < "$1" |
	    { grep -o '<[A-Za-z]*:*X509Certificate>[^<]*</' || true; } |
	    sed 's/^<[^>]*>//; s/<\/$//' |
	while read -r b; do
		met "$b" && continue
		printf '%s' "$b" | base64 -d > "$T/rim.der" 2>/dev/null || continue
		add_cert "$T/rim.der" DER
	done
}

# Device chains: PEM text files.
while IFS= read -r -d '' f; do
	split_pem "$f"
done < <(find "$V" \( -name '*CertChain*.txt' -o -name '*.pem' \) -print0 |
    sort -z)

# Evidence JSON: "certificate": base64 of a PEM chain. RIM service
# envelopes: "rim": base64 of the SWID document.
while IFS= read -r -d '' f; do
	{ grep -o '"certificate": *"[A-Za-z0-9+/=]*"' "$f" || true; } |
	    sed 's/.*: *"//; s/"$//' |
	while read -r b; do
		met "$b" && continue
		printf '%s' "$b" | base64 -d > "$T/json.pem" 2>/dev/null || continue
		split_pem "$T/json.pem"
	done
	{ grep -o '"rim": *"[A-Za-z0-9+/=]*"' "$f" || true; } |
	    sed 's/.*: *"//; s/"$//' |
	while read -r b; do
		met "$b" && continue
		printf '%s' "$b" | base64 -d > "$T/envelope.xml" 2>/dev/null ||
		    continue
		xml_certs "$T/envelope.xml"
	done
done < <(find "$V" -name '*.json' -print0 | sort -z)

# RIM documents.
while IFS= read -r -d '' f; do
	xml_certs "$f"
done < <(find "$V" \( -name '*.xml' -o -name '*.swidtag' \) -print0 | sort -z)

# Normalised: a PEM file need not end with a newline.
{ openssl x509 -in "$DEV_ROOT"; openssl x509 -in "$RIM_ROOT"; } > "$T/anchors.pem"
DEV_FP=$(openssl x509 -in "$DEV_ROOT" -noout -fingerprint -sha256 | sed 's/.*=//; s/://g')
RIM_FP=$(openssl x509 -in "$RIM_ROOT" -noout -fingerprint -sha256 | sed 's/.*=//; s/://g')

# CA certificates that are not self-signed: candidates for the pool.
: > "$T/cas.pem"
: > "$T/cand"
for c in "$T"/c/*.pem; do
	fp=$(basename "$c" .pem)
	if [ "$fp" = "$DEV_FP" ] || [ "$fp" = "$RIM_FP" ]; then
		continue
	fi
	# One run: subject=..., issuer=..., then the extension (if any).
	out=$(openssl x509 -in "$c" -noout -subject -issuer -nameopt RFC2253 \
	    -ext basicConstraints 2>/dev/null) || continue
	case "$out" in *CA:TRUE*) ;; *) continue ;; esac
	subj=$(sed -n 's/^subject=//p' <<<"$out")
	iss=$(sed -n 's/^issuer=//p' <<<"$out")
	[ "$subj" = "$iss" ] && continue
	# Per-device BROM certs are CA:TRUE (they issue the device's alias
	# certs) but belong to one GPU or switch: not public intermediates.
	case "$subj" in *"CN=NVIDIA"*) ;; *) continue ;; esac
	cat "$c" >> "$T/cas.pem"
	echo "$fp" >> "$T/cand"
done

# Keep only those that chain to a pinned anchor.
: > "$T/pool"
while read -r fp; do
	if openssl verify -no_check_time -CAfile "$T/anchors.pem" \
	    -untrusted "$T/cas.pem" "$T/c/$fp.pem" > /dev/null 2>&1; then
		echo "$fp" >> "$T/pool"
	else
		echo "$0: skipping $fp: does not chain to a pinned anchor" >&2
	fi
done < "$T/cand"

# emit_array NAME FILE-OF-FPS: one struct vendor_root per fingerprint
emit_array() {
	local name=$1 list=$2 fp subj
	printf 'const struct vendor_root %s[] = {\n' "$name"
	while read -r fp; do
		[ -n "$fp" ] || continue
		subj=$(openssl x509 -in "$T/c/$fp.pem" -noout -subject \
		    -nameopt RFC2253 | sed 's/^subject=//; s/\\/\\\\/g; s/"/\\"/g')
		printf '\t/*\n\t * %s\n\t * SHA-256 %s\n\t */\n' "$subj" "$fp"
		printf '\t{ "%s",\n\t  "%s",\n' "$subj" "$fp"
		sed 's/^/\t  "/; s/$/\\n"/' "$T/c/$fp.pem"
		printf '\t},\n'
	done < "$list"
	printf '};\nconst size_t %s_count = sizeof(%s) / sizeof(%s[0]);\n\n' \
	    "$name" "$name" "$name"
}

openssl x509 -in "$DEV_ROOT" -out "$T/c/$DEV_FP.pem"
openssl x509 -in "$RIM_ROOT" -out "$T/c/$RIM_FP.pem"
printf '%s\n%s\n' "$DEV_FP" "$RIM_FP" > "$T/anchors"
sort -u "$T/pool" -o "$T/pool"

cat <<'HDR'
/* SPDX-License-Identifier: Apache-2.0 */
/* NVIDIA's pinned roots and public intermediates, compiled in (generated). */
/*
 * Generated from NVIDIA's published test vectors (NVIDIA/attestation-sdk,
 * NVIDIA/nvtrust) and the chains and RIM envelopes captured from NVIDIA's
 * production services, all under tests/vectors/nvidia (see its
 * SOURCES.md and captured/SOURCES.md), by
 *   tools/gen-nvidia-certs.sh tests/vectors/nvidia > attest/nvidia_certs.c
 * Do not edit; add the vector and rerun the script.
 */
#include <stddef.h>

#include "attest/nvidia_certs.h"

HDR
emit_array nvidia_anchors "$T/anchors"
emit_array nvidia_pool "$T/pool"
