#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Make a test PKI shaped like NVIDIA's device identity PKI, for OCSP tests.
#
# usage: tests/pki/mkpki.sh OUTDIR
#
# Everything is ECDSA P-384 / SHA-384, valid 2020-01-01 .. 2049-12-31, made
# with the openssl CLI only (`openssl ca`, so every issuing CA has the
# index.txt that `openssl ocsp -index` reads). Keys are fresh on every run;
# file names and serial numbers are fixed:
#
#   OUTDIR/anchors.pem        the real test root (the only trust anchor)
#   OUTDIR/intermediates.pem  identity + ica CA certs (the untrusted pool)
#   OUTDIR/openssl.cnf        the `openssl ca` configuration used
#
#   One directory per issuing CA, root/ identity/ ica/:
#     ca.pem ca.key               the CA
#     responder.pem responder.key its delegated OCSP responder
#                                 (EKU OCSPSigning, issued by this CA)
#     index.txt                   every certificate this CA issued
#     chain.pem                   ca.pem and the CAs above it, up to the root
#
#     root/      "Test Device Identity CA" (self-signed), issues identity
#     identity/  "Test GH100 Identity", issues ica
#     ica/       "Test GH100 Provisioner ICA 1", issues the leaves
#
#   OUTDIR/leaf1.pem .. leaf4.pem  BROM-like leaves issued by ica, serials
#                                  0x3001..0x3004; leaf3 is revoked
#                                  (keyCompromise) in ica/index.txt
#   OUTDIR/leaf.key                the key of all four leaves
#   Serial 0x3FFF was never issued by ica: `openssl ocsp -serial 0x3FFF`
#   gets status unknown.
#
#   OUTDIR/rogue/responder.pem .key  an OCSP responder (EKU OCSPSigning)
#                                    issued by identity, NOT by ica: it is
#                                    not authorised for the leaves
#   OUTDIR/evil/{root,identity,ica}/ an attacker PKI with the SAME subject
#                                    names as root/, identity/, ica/ but its
#                                    own keys; same files as above
#   OUTDIR/evil/leaf1.pem            a leaf issued by evil/ica (serial 0x9001)
#   OUTDIR/evil/chain.pem            evil ica + identity + root, for -rother
#
#   OUTDIR/tls/  a TLS PKI for the listeners (P-256):
#     ca.pem ca.key            "Test TLS CA" (self-signed)
#     srv.key                  the servers' key
#     srv1.pem srv2.pem        "stapled one", "stapled two": serverAuth, IP 127.0.0.1
#     cli.pem cli.key          "a client": clientAuth
#     other.key                a key of no certificate
#     rogue_ca.pem rogue_ca.key  "Rogue CA", another CA
#     rogue_cli.pem            "a rogue client" for cli.key, issued by the rogue CA
#
# Every certificate is shaped as a real CA issues it, since strict
# verifiers (Python 3.13's ssl) refuse less: a CA carries basicConstraints
# (critical, CA:TRUE), keyUsage (critical, keyCertSign and cRLSign) and a
# subject key identifier; an end entity basicConstraints (critical,
# CA:FALSE), keyUsage, its extended key usage and both key identifiers;
# every certificate but a self-signed one an authority key identifier.
#
# A responder for one issuing CA X (integration tests):
#   openssl ocsp -index OUTDIR/X/index.txt -CA OUTDIR/X/ca.pem \
#       -rsigner OUTDIR/X/responder.pem -rkey OUTDIR/X/responder.key \
#       -port N [-nmin M]
# A single response without a server:
#   openssl ocsp -index ... -CA ... -rsigner ... -rkey ... \
#       -reqin REQ.der -respout RESP.der [-ndays N] [-rother F]
set -euo pipefail

[ $# -eq 1 ] || { echo "usage: $0 OUTDIR" >&2; exit 2; }
OUT=$1
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

START=20200101000000Z
END=20491231235959Z
CNF=$OUT/openssl.cnf

cat > "$CNF" <<'EOF'
# openssl ca configuration for tests/pki/mkpki.sh; CADIR names the CA.
[ ca ]
default_ca = test_ca

[ test_ca ]
dir = $ENV::CADIR
database = $dir/index.txt
new_certs_dir = $dir/newcerts
serial = $dir/serial
default_md = sha384
policy = policy_any
unique_subject = no
copy_extensions = none
email_in_dn = no
preserve = yes

[ policy_any ]
serialNumber = optional
countryName = optional
organizationName = optional
commonName = supplied

[ req ]
distinguished_name = req_dn
prompt = no
[ req_dn ]
CN = unused

[ v3_ca ]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always

[ v3_ocsp ]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = critical, OCSPSigning
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always

[ v3_leaf ]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always

[ v3_tls_ca ]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash

[ v3_tls_server ]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always

[ v3_tls_client ]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = clientAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always
EOF

# key OUT [CURVE]: a fresh EC key, P-384 unless named
key() {
	openssl genpkey -algorithm EC -pkeyopt "ec_paramgen_curve:${2:-P-384}" \
	    -out "$1" 2>/dev/null
}

# ca_init DIR SERIAL: an empty openssl ca database
ca_init() {
	mkdir -p "$1/newcerts"
	: > "$1/index.txt"
	echo "$2" > "$1/serial"
}

# sign CADIR KEY SUBJECT EXTENSIONS OUT [selfsign]
sign() {
	local cadir=$1 k=$2 subj=$3 ext=$4 out=$5 self=${6:-}
	CADIR=$cadir openssl req -new -config "$CNF" -key "$k" -subj "$subj" \
	    -out "$out.csr"
	if [ -n "$self" ]; then
		CADIR=$cadir openssl ca -batch -notext -config "$CNF" \
		    -selfsign -keyfile "$k" -extensions "$ext" \
		    -startdate $START -enddate $END -in "$out.csr" \
		    -out "$out" 2>/dev/null
	else
		CADIR=$cadir openssl ca -batch -notext -config "$CNF" \
		    -cert "$cadir/ca.pem" -keyfile "$cadir/ca.key" \
		    -extensions "$ext" -startdate $START -enddate $END \
		    -in "$out.csr" -out "$out" 2>/dev/null
	fi
	rm -f "$out.csr"
}

# responder CADIR NAME: a delegated responder of CADIR
responder() {
	key "$1/responder.key"
	sign "$1" "$1/responder.key" "/O=Test NVIDIA/CN=$2" v3_ocsp \
	    "$1/responder.pem"
}

# pki DIR SERIALBASE: root -> identity -> ica, each with a responder
pki() {
	local d=$1 s=$2
	ca_init "$d/root" "${s}000"
	ca_init "$d/identity" "${s}100"
	ca_init "$d/ica" "${s}200"

	key "$d/root/ca.key"
	sign "$d/root" "$d/root/ca.key" "/O=Test NVIDIA/CN=Test Device Identity CA" \
	    v3_ca "$d/root/ca.pem" selfsign
	responder "$d/root" "Test OCSP Responder Device Identity CA"

	key "$d/identity/ca.key"
	sign "$d/root" "$d/identity/ca.key" \
	    "/O=Test NVIDIA Corporation/CN=Test GH100 Identity" \
	    v3_ca "$d/identity/ca.pem"
	responder "$d/identity" "Test OCSP Responder GH100 Identity"

	key "$d/ica/ca.key"
	sign "$d/identity" "$d/ica/ca.key" \
	    "/C=US/O=Test NVIDIA Corporation/CN=Test GH100 Provisioner ICA 1" \
	    v3_ca "$d/ica/ca.pem"
	responder "$d/ica" "Test OCSP Responder GH100 Provisioner ICA 1"

	cp "$d/root/ca.pem" "$d/root/chain.pem"
	cat "$d/identity/ca.pem" "$d/root/ca.pem" > "$d/identity/chain.pem"
	cat "$d/ica/ca.pem" "$d/identity/chain.pem" > "$d/ica/chain.pem"
}

pki "$OUT" 1
# openssl ca serials: root 0x1000.., identity 0x1100.., ica 0x1200..;
# leaves get 0x3001.. from a serial file of their own.
echo 3001 > "$OUT/ica/serial"
key "$OUT/leaf.key"
for i in 1 2 3 4; do
	sign "$OUT/ica" "$OUT/leaf.key" \
	    "/serialNumber=4100000000000000$i/C=US/O=Test NVIDIA Corporation/CN=Test GH100 A01 GSP BROM" \
	    v3_leaf "$OUT/leaf$i.pem"
done
CADIR=$OUT/ica openssl ca -config "$CNF" -cert "$OUT/ica/ca.pem" \
    -keyfile "$OUT/ica/ca.key" -revoke "$OUT/leaf3.pem" \
    -crl_reason keyCompromise 2>/dev/null

cat "$OUT/root/ca.pem" > "$OUT/anchors.pem"
cat "$OUT/identity/ca.pem" "$OUT/ica/ca.pem" > "$OUT/intermediates.pem"

# A responder of the wrong issuer: identity's, though the leaves are ica's.
mkdir -p "$OUT/rogue"
key "$OUT/rogue/responder.key"
sign "$OUT/identity" "$OUT/rogue/responder.key" \
    "/O=Test NVIDIA/CN=Test Rogue OCSP Responder" v3_ocsp \
    "$OUT/rogue/responder.pem"

# The look-alike PKI: same names, other keys.
pki "$OUT/evil" 8
echo 9001 > "$OUT/evil/ica/serial"
sign "$OUT/evil/ica" "$OUT/leaf.key" \
    "/serialNumber=41000000000000001/C=US/O=Test NVIDIA Corporation/CN=Test GH100 A01 GSP BROM" \
    v3_leaf "$OUT/evil/leaf1.pem"
cp "$OUT/evil/ica/chain.pem" "$OUT/evil/chain.pem"

# The TLS PKI: each CA in a directory of its own (its openssl ca database).
L=$OUT/tls
ca_init "$L/ca" 5000
ca_init "$L/rogue" 6000
key "$L/ca/ca.key" P-256
sign "$L/ca" "$L/ca/ca.key" "/CN=Test TLS CA" v3_tls_ca "$L/ca/ca.pem" selfsign
key "$L/srv.key" P-256
sign "$L/ca" "$L/srv.key" "/CN=stapled one" v3_tls_server "$L/srv1.pem"
sign "$L/ca" "$L/srv.key" "/CN=stapled two" v3_tls_server "$L/srv2.pem"
key "$L/cli.key" P-256
sign "$L/ca" "$L/cli.key" "/CN=a client" v3_tls_client "$L/cli.pem"
key "$L/other.key" P-256
key "$L/rogue/ca.key" P-256
sign "$L/rogue" "$L/rogue/ca.key" "/CN=Rogue CA" v3_tls_ca "$L/rogue/ca.pem" selfsign
sign "$L/rogue" "$L/cli.key" "/CN=a rogue client" v3_tls_client "$L/rogue_cli.pem"
cp "$L/ca/ca.pem" "$L/ca.pem"
cp "$L/ca/ca.key" "$L/ca.key"
cp "$L/rogue/ca.pem" "$L/rogue_ca.pem"
cp "$L/rogue/ca.key" "$L/rogue_ca.key"
