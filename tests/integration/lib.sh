# SPDX-License-Identifier: Apache-2.0
# Shared helpers for the whole-process tests: temp dirs, background peers, clients, assertions.
#
# A test sources this file, calls it_init NAME, and ends with it_done.
# Exit status follows automake: 0 pass, 77 skip, 1 fail (99 hard error).
# Every background process started through bg_start is killed on exit.

set -u

: "${top_srcdir:?top_srcdir must be set (make check exports it)}"
: "${top_builddir:?top_builddir must be set (make check exports it)}"

# The system's tools first: the peers bootstrap installs are Debian's
# (python3 with python3-h11), and a wrapper earlier in PATH (a pyenv shim
# costs a third of a second a run) is neither what is tested nor cheap.
PATH=/usr/bin:/bin:$PATH

# staplectl without -f reads the configuration a package installed (its
# sysconfdir's stapled.json) when it is there: a host's own is not the test's.
export STAPLED_CONFIG=

STAPLED=$top_builddir/stapled
UPSTREAM=$top_builddir/tests/upstream
MKPKI=$top_srcdir/tests/pki/mkpki.sh
VECTORS=$top_srcdir/tests/vectors/nvidia

# Bounded waits, in tenths of a second.
WAIT_START_DS=${WAIT_START_DS:-100}	# 10 s for a process to come up
WAIT_STOP_DS=${WAIT_STOP_DS:-100}	# 10 s for a process to exit

CT_REQ='Content-Type: application/ocsp-request'

IT_FAILS=0
IT_PIDS=""
IT_PORTS=""

# ---- reporting --------------------------------------------------------------

note() { printf '# %s\n' "$*"; }
ok() { printf 'ok - %s\n' "$*"; }
fail() { printf 'FAIL - %s\n' "$*"; IT_FAILS=$((IT_FAILS + 1)); }
# A precondition that must hold for the rest of the test to mean anything.
die() { printf 'FAIL (fatal) - %s\n' "$*"; IT_FAILS=$((IT_FAILS + 1)); it_dump_logs; exit 1; }
skip() { printf 'SKIP - %s\n' "$*"; exit 77; }

# check "behaviour" command...: pass when the command succeeds.
check() {
	local _what
	_what=$1; shift
	if "$@"; then ok "$_what"; else fail "$_what"; fi
}

# check_eq "behaviour" expected actual
check_eq() {
	if [ "$2" = "$3" ]; then ok "$1"
	else fail "$1 (expected '$2', got '$3')"; fi
}

# assert "behaviour" 'shell expression': evaluated here, so variables and
# the helpers below are in reach.
assert() {
	local _what
	_what=$1; shift
	if eval "$1"; then ok "$_what"; else fail "$_what"; fi
}

# assert_figure "behaviour" EXPR: assert on a memory or time figure. Under
# the sanitizers (tools/bootstrap sanitize sets STAPLED_SANITIZED) such figures
# are the sanitizer's (its shadow memory, its checks on every access), so the
# check is only noted there.
assert_figure() {
	if [ -n "${STAPLED_SANITIZED:-}" ]; then
		note "not checked under the sanitizers: $1"
	else
		assert "$@"
	fi
}

# check_trylater "behaviour" FILE: the last post answered HTTP 200 tryLater.
check_trylater() {
	if [ "$HTTP_CODE" = 200 ] && is_trylater "$2"; then ok "$1"
	else fail "$1 (HTTP $HTTP_CODE, $(resp_status "$2"))"; fi
}

# check_malformed "behaviour" FILE: HTTP 200 malformedRequest.
check_malformed() {
	if [ "$HTTP_CODE" = 200 ] && is_malformed "$2"; then ok "$1"
	else fail "$1 (HTTP $HTTP_CODE, $(resp_status "$2"))"; fi
}

# check_bytes "behaviour" EXPECTED FILE: HTTP 200 and the same bytes.
check_bytes() {
	if [ "$HTTP_CODE" = 200 ] && cmp -s "$2" "$3"; then ok "$1"
	else fail "$1 (HTTP $HTTP_CODE, $(resp_status "$3"), bytes $(cmp -s "$2" "$3" && echo same || echo differ))"; fi
}

# Float comparisons through awk: lt A B is A < B.
lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }
between() { awk -v a="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(a >= lo && a <= hi) }'; }

# Print the tail of every log of this test, to explain a failure.
it_dump_logs() {
	local _f
	[ -d "${T:-/nonexistent}" ] || return 0
	for _f in "$T"/*.log; do
		[ -f "$_f" ] || continue
		printf '# ---- %s (last 25 lines)\n' "${_f##*/}"
		tail -n 25 "$_f" | sed 's/^/#   /'
	done
}

# ---- lifecycle --------------------------------------------------------------

it_init() {
	TEST=$1
	T=$top_builddir/tests/tmp/$TEST
	rm -rf "$T"
	mkdir -p "$T" || exit 99
	trap it_cleanup EXIT
	trap 'exit 1' INT TERM HUP
	need_cmd openssl curl awk od python3
	[ -x "$STAPLED" ] || skip "stapled not built at $STAPLED"
	[ -x "$UPSTREAM" ] || skip "tests/upstream not built (make check builds it)"
	[ -x "$MKPKI" ] || [ -f "$MKPKI" ] || skip "tests/pki/mkpki.sh missing"
	# Dead upstreams' ports, held from the start (see dead_port).
	bg_start IT_DEAD_PID "$T/dead-ports.log" "$UPSTREAM" \
	    --listen 127.0.0.1:0 --mode refuse:4
}

it_cleanup() {
	_rc=$?
	trap - EXIT
	for _p in $IT_PIDS; do
		kill -TERM "$_p" 2>/dev/null
	done
	for _p in $IT_PIDS; do
		_i=0
		while kill -0 "$_p" 2>/dev/null && [ $_i -lt 30 ]; do
			sleep 0.1; _i=$((_i + 1))
		done
		kill -KILL "$_p" 2>/dev/null
		wait "$_p" 2>/dev/null
	done
	exit $_rc
}

it_done() {
	if [ "$IT_FAILS" -ne 0 ]; then
		note "$IT_FAILS assertion(s) failed"
		it_dump_logs
		exit 1
	fi
	note "all assertions passed"
	exit 0
}

need_cmd() {
	local _c
	for _c in "$@"; do
		command -v "$_c" >/dev/null 2>&1 || skip "$_c not installed"
	done
}

# ---- background processes ---------------------------------------------------

# bg_start VAR LOG command...: start in the background, PID into $VAR.
bg_start() {
	local _log _pid _var
	_var=$1; _log=$2; shift 2
	"$@" >"$_log" 2>&1 &
	_pid=$!
	IT_PIDS="$IT_PIDS $_pid"
	eval "$_var=$_pid"
}

bg_forget() {
	local _new _p
	_new=""
	for _p in $IT_PIDS; do [ "$_p" = "$1" ] || _new="$_new $_p"; done
	IT_PIDS=$_new
}

# bg_kill PID [SIGNAL]: signal, wait (bounded), forget. Status of wait in $BG_RC.
bg_kill() {
	local _pid _sig
	_pid=$1; _sig=${2:-TERM}
	BG_RC=""
	kill -"$_sig" "$_pid" 2>/dev/null
	bg_wait "$_pid"
}

# bg_wait PID: wait for exit up to WAIT_STOP_DS; exit status in $BG_RC
# (999 when it had to be killed).
bg_wait() {
	local _i _pid _st
	_pid=$1; _i=0
	while kill -0 "$_pid" 2>/dev/null; do
		# A zombie child still answers kill -0; its state (after the
		# command's name in /proc's stat) tells, with no process to run.
		_st=
		read -r _st 2>/dev/null <"/proc/$_pid/stat" || break
		case ${_st##*) } in Z*) break ;; esac
		if [ $_i -ge "$WAIT_STOP_DS" ]; then
			kill -KILL "$_pid" 2>/dev/null
			wait "$_pid" 2>/dev/null
			BG_RC=999
			bg_forget "$_pid"
			return 0
		fi
		sleep 0.1; _i=$((_i + 1))
	done
	wait "$_pid" 2>/dev/null
	BG_RC=$?
	bg_forget "$_pid"
}

# wait_for_line FILE REGEX: until a line matches (bounded). Prints the line.
wait_for_line() {
	local _i
	_i=0
	while [ $_i -lt "$WAIT_START_DS" ]; do
		if [ -f "$1" ] && grep -E -m1 "$2" "$1" 2>/dev/null; then return 0; fi
		sleep 0.1; _i=$((_i + 1))
	done
	return 1
}

# ---- ports ------------------------------------------------------------------

# dead_port K (1 to 4): a port on 127.0.0.1 that refuses every connection
# for the whole test, for a dead upstream. tests/upstream holds it bound and
# never listens on it. A port that was merely free when asked could be
# taken later by another test's listener, and the "dead" upstream answer.
dead_port() {
	local _line
	case $1 in [1-4]) ;; *) die "dead_port $1: 1 to 4" ;; esac
	_line=$(wait_for_line "$T/dead-ports.log" '^PORTS=') ||
	    die "tests/upstream --mode refuse did not start"
	set -- "$1" ${_line#PORTS=}
	shift "$1"
	echo "$1"
}

# A TCP port nobody listens on now, not handed out before in this test, for
# stapled's own listener (stapled_start retries when the race is lost). Peers
# that can bind port 0 do so and report their port. Below the kernel's
# ephemeral range when there is room, so that no port 0 bind or outgoing
# connection of a test running beside this one can take it meanwhile.
free_port() {
	local _p _used _lo _span
	_used=$(ss -Htan 2>/dev/null | awk '{ n = split($4, a, ":"); print a[n] }')
	read -r _lo _ 2>/dev/null </proc/sys/net/ipv4/ip_local_port_range || _lo=0
	_span=$(( _lo - 20000 ))
	[ "$_span" -ge 4000 ] || _span=40000
	while :; do
		_p=$(( 20000 + ( $(od -An -N2 -tu2 /dev/urandom) % _span ) ))
		case " $IT_PORTS " in *" $_p "*) continue ;; esac
		printf '%s\n' "$_used" | grep -qx "$_p" && continue
		IT_PORTS="$IT_PORTS $_p"
		echo "$_p"
		return 0
	done
}

# ---- test PKI -----------------------------------------------------------------

# pki_make [DIR]: the NVIDIA-shaped test PKI (tests/pki/mkpki.sh) into $PKI,
# plus leaf5..leaf8 from the same ICA, so that eight GPUs have eight BROM
# certificates. pki_layout names the files:
#   ANCHORS INTERMEDIATES ROOT_CERT IDENT_CERT ICA_CERT LEAF1..LEAF8
#   (LEAF3 is revoked)
#   PKI_CAS: the issuing CAs, each with ca_cert/ca_index/ca_rsigner/ca_rkey
#   EVIL_CAS: the look-alike tree's CAs (same names, other keys), same
#   accessors, EVIL_CHAIN for its -rother
# Made once per build tree and version of mkpki.sh and of this file, by the
# first test that asks (under a lock: tests run in parallel), and copied by
# each: making it is some 40 openssl processes, and most tests need one.
pki_make() {
	local _i _made
	PKI=${1:-$T/pki}
	_made=$top_builddir/tests/tmp/pki-$(cat "$MKPKI" "${BASH_SOURCE[0]}" |
	    sha256sum | cut -c1-16)
	(
		flock 9 || exit 1
		[ -f "$_made/made" ] && exit 0
		rm -rf "$_made.new"
		bash "$MKPKI" "$_made.new" >"$T/mkpki.log" 2>&1 || exit 1
		echo 3005 >"$_made.new/ica/serial"
		for _i in 5 6 7 8; do
			PKI=$_made.new pki_issue "$_made.new/ica" "$_made.new/leaf.key" \
			    "/serialNumber=4100000000000000$_i/C=US/O=Test NVIDIA Corporation/CN=Test GH100 A01 GSP BROM" \
			    v3_leaf "$_made.new/leaf$_i.pem" || exit 1
		done
		touch "$_made.new/made" && mv "$_made.new" "$_made"
	) 9>"$top_builddir/tests/tmp/pki.lock" || die "$MKPKI: cannot make the test PKI (see mkpki.log)"
	mkdir -p "$(dirname "$PKI")" && rm -rf "$PKI" && cp -a "$_made" "$PKI" ||
	    die "cannot copy the test PKI to $PKI"
	pki_layout
	for _i in "$ANCHORS" "$INTERMEDIATES" "$ROOT_CERT" "$IDENT_CERT" "$ICA_CERT" \
	    "$LEAF1" "$LEAF8" "$EVIL_CHAIN"; do
		[ -s "$_i" ] || die "test PKI lacks $_i"
	done
}

# ocsp_section PORT [MEMBER]: the "ocsp" member of a configuration for the
# test PKI (pki_make): one upstream named good on PORT, the PKI's anchors
# and intermediates, and MEMBER (one more member of the section) if given.
ocsp_section() {
	printf '"ocsp": {\n    "upstreams": [ { "url": "http://127.0.0.1:%s/", "name": "good" } ],\n    "anchors": [ "%s" ],\n    "intermediates": [ "%s" ]%s\n  }' \
	    "$1" "$ANCHORS" "$INTERMEDIATES" "${2:+,
    $2}"
}

# pki_issue CADIR KEY SUBJECT EXTENSIONS OUT [selfsign]: one certificate,
# with mkpki.sh's openssl ca configuration (CADIR holds ca.pem, ca.key,
# index.txt, serial, newcerts/).
pki_issue() {
	local _cadir=$1 _key=$2 _subj=$3 _ext=$4 _out=$5 _self=${6:-}
	CADIR=$_cadir openssl req -new -config "$PKI/openssl.cnf" -key "$_key" \
	    -subj "$_subj" -out "$_out.csr" 2>/dev/null || return 1
	if [ -n "$_self" ]; then
		CADIR=$_cadir openssl ca -batch -notext -config "$PKI/openssl.cnf" \
		    -selfsign -keyfile "$_key" -extensions "$_ext" \
		    -startdate 20200101000000Z -enddate 20491231235959Z \
		    -in "$_out.csr" -out "$_out" 2>/dev/null || return 1
	else
		CADIR=$_cadir openssl ca -batch -notext -config "$PKI/openssl.cnf" \
		    -cert "$_cadir/ca.pem" -keyfile "$_cadir/ca.key" -extensions "$_ext" \
		    -startdate 20200101000000Z -enddate 20491231235959Z \
		    -in "$_out.csr" -out "$_out" 2>/dev/null || return 1
	fi
	rm -f "$_out.csr"
}

# pki_ca_new CADIR SUBJECT [PARENT_CADIR]: a P-384 CA (self-signed without a
# parent) with a delegated responder, in mkpki.sh's layout; then
# pki_ca_register NAME CADIR makes it usable in farm_start.
pki_ca_new() {
	local _d=$1 _subj=$2 _parent=${3:-}
	mkdir -p "$_d/newcerts" && : >"$_d/index.txt" || return 1
	printf '5%03x\n' $(( $(od -An -N2 -tu2 /dev/urandom) % 4096 )) >"$_d/serial"
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-384 -out "$_d/ca.key" 2>/dev/null
	if [ -z "$_parent" ]; then
		pki_issue "$_d" "$_d/ca.key" "$_subj" v3_ca "$_d/ca.pem" selfsign || return 1
	else
		pki_issue "$_parent" "$_d/ca.key" "$_subj" v3_ca "$_d/ca.pem" || return 1
	fi
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-384 -out "$_d/responder.key" 2>/dev/null
	pki_issue "$_d" "$_d/responder.key" "/O=Test NVIDIA/CN=Test OCSP Responder ${_subj##*=}" \
	    v3_ocsp "$_d/responder.pem"
}

# pki_ca_register NAME CADIR: accessors for a CA in mkpki.sh's layout.
pki_ca_register() {
	eval "CA_${1}_CERT=\$2/ca.pem CA_${1}_INDEX=\$2/index.txt"
	eval "CA_${1}_RSIGNER=\$2/responder.pem CA_${1}_RKEY=\$2/responder.key"
}

# The names mkpki.sh gives its files.
pki_layout() {
	local _ca _i
	ANCHORS=$PKI/anchors.pem
	INTERMEDIATES=$PKI/intermediates.pem
	ROOT_CERT=$PKI/root/ca.pem
	IDENT_CERT=$PKI/identity/ca.pem
	ICA_CERT=$PKI/ica/ca.pem
	for _i in 1 2 3 4 5 6 7 8; do eval "LEAF$_i=\$PKI/leaf$_i.pem"; done
	PKI_CAS="root identity ica"
	for _ca in $PKI_CAS; do pki_ca_register "$_ca" "$PKI/$_ca"; done
	EVIL_CAS="evil_root evil_identity evil_ica"
	for _ca in root identity ica; do pki_ca_register "evil_$_ca" "$PKI/evil/$_ca"; done
	EVIL_CHAIN=$PKI/evil/chain.pem
}

ca_cert() { eval "echo \"\$CA_${1}_CERT\""; }
# ca_chain CA: its chain.pem (the CA and the CAs above it), what its
# responder embeds with -rother: stapled refuses an answer that embeds a
# certificate off the responder's chain; NVIDIA embeds only its responder.
ca_chain() { echo "$(dirname "$(ca_cert "$1")")/chain.pem"; }
ca_index() { eval "echo \"\$CA_${1}_INDEX\""; }
ca_rsigner() { eval "echo \"\$CA_${1}_RSIGNER\""; }
ca_rkey() { eval "echo \"\$CA_${1}_RKEY\""; }

# key_hash_hex ISSUER [DIGEST]: issuerKeyHash of a CertID for that issuer,
# lower-case hex (DIGEST sha1, sha256 or sha384; sha1 by default). The hash
# covers the subjectPublicKey BIT STRING contents without the unused-bits
# octet (RFC 6960 4.1.1). One python run walks the first certificate's DER
# in the PEM file (with openssl it took seven processes a hash, and a
# farm wants nine).
key_hash_hex() {
	python3 - "$1" "${2:-sha1}" <<'PY'
import base64, hashlib, sys
pem = open(sys.argv[1]).read().split("-----BEGIN CERTIFICATE-----")[1]
der = base64.b64decode("".join(pem.split("-----END CERTIFICATE-----")[0].split()))
def tlv(i):
    """The element at i: its tag, where its contents start and end."""
    tag, n, i = der[i], der[i + 1], i + 2
    if n & 0x80:
        k, n = n & 0x7f, 0
        for _ in range(k):
            n, i = n << 8 | der[i], i + 1
    return tag, i, i + n
_, i, _ = tlv(0)                        # Certificate
_, i, _ = tlv(i)                        # tbsCertificate
if der[i] == 0xa0:                      # [0] version
    i = tlv(i)[2]
for _ in range(5):                      # serial, signature, issuer, validity, subject
    i = tlv(i)[2]
_, i, _ = tlv(i)                        # SubjectPublicKeyInfo
_, s, e = tlv(tlv(i)[2])                # the BIT STRING after the algorithm
print(hashlib.new(sys.argv[2], der[s + 1:e]).hexdigest())
PY
}

# fill_pki DIR [CA_CURVE]: the PKI tools/bench-fill -s signs with, into DIR
# (and FILL_PKI): shaped like NVIDIA's, a P-384 root (root.pem) and issuing
# CA (ica.pem, ica.key), and under the CA a delegated OCSP responder
# (resp.pem, resp.key) with a P-256 key, so that thousands of answers sign
# in seconds. CA_CURVE P-256 makes the CAs P-256 too: stapled verifies
# each refreshed answer's chain, and P-384 CAs take about a third off the
# refreshes a second it reaches on a small machine.
fill_pki() {
	local _ca=${2:-P-384} _k
	FILL_PKI=$1
	mkdir -p "$FILL_PKI"
	cat >"$FILL_PKI/ext.cnf" <<-'EOF'
	[ca]
	basicConstraints = critical, CA:TRUE
	keyUsage = critical, keyCertSign, cRLSign
	subjectKeyIdentifier = hash
	authorityKeyIdentifier = keyid
	[responder]
	basicConstraints = critical, CA:FALSE
	keyUsage = critical, digitalSignature
	extendedKeyUsage = OCSPSigning
	subjectKeyIdentifier = hash
	authorityKeyIdentifier = keyid
	EOF
	for _k in root:$_ca ica:$_ca resp:P-256; do
		openssl genpkey -algorithm EC -pkeyopt "ec_paramgen_curve:${_k#*:}" \
		    -out "$FILL_PKI/${_k%%:*}.key" 2>/dev/null || die "openssl genpkey (${_k%%:*})"
	done
	openssl req -x509 -new -key "$FILL_PKI/root.key" -subj "/O=$TEST/CN=$TEST root" \
	    -days 30 -sha384 -addext "basicConstraints=critical,CA:TRUE" \
	    -addext "keyUsage=critical,keyCertSign,cRLSign" -out "$FILL_PKI/root.pem" \
	    2>/dev/null || die "openssl req (root)"
	fill_pki_issue ica "/O=$TEST/CN=$TEST issuing CA" root ca 1
	fill_pki_issue resp "/O=$TEST/CN=$TEST responder" ica responder 2
}

# fill_signed OUT CACHE N VALIDITY_S: N OCSP answers signed now by
# fill_pki's responder (tools/bench-fill -s), valid for VALIDITY_S, their
# thisUpdate spread over the last half of it (refresh.fraction 0.5), put
# into the store CACHE; OUT gets bench-fill's index.txt and paths. Sets
# FILL_NOW, the clock bench-fill signed at.
fill_signed() {
	mkdir -p "$1/www"
	"$top_builddir/tools/bench-fill" -s "$FILL_PKI" -o "$1" -v "$4" -f 0.5 \
	    "$2" "$3" >"$1/fill.out" || die "bench-fill -s failed"
	FILL_NOW=$(awk '$1 == "now" { print $2 }' "$1/fill.out")
	[ -n "$FILL_NOW" ] || die "bench-fill did not say its clock"
}

# fill_pki_issue NAME SUBJECT ISSUER SECTION SERIAL: $FILL_PKI/NAME.pem for
# NAME.key, signed by ISSUER with ext.cnf's SECTION.
fill_pki_issue() {
	openssl req -new -key "$FILL_PKI/$1.key" -subj "$2" -out "$FILL_PKI/$1.csr" \
	    2>/dev/null &&
	openssl x509 -req -in "$FILL_PKI/$1.csr" -CA "$FILL_PKI/$3.pem" \
	    -CAkey "$FILL_PKI/$3.key" -set_serial "$5" -days 30 -sha384 \
	    -extfile "$FILL_PKI/ext.cnf" -extensions "$4" -out "$FILL_PKI/$1.pem" \
	    2>/dev/null || die "openssl x509 ($1)"
}

# ---- peers ----------------------------------------------------------------------

# responder_start VAR NAME CA_CERT INDEX RSIGNER RKEY [openssl ocsp options...]
# An `openssl ocsp` responder on a port of its choosing; port into $VAR,
# PID into ${VAR}_PID, its output in $T/NAME.log. One responder serves one
# CA. It is never probed with a bare connect. RESPONDER_WRAP runs it under
# a command (a libfaketime clock; stdbuf -oL for a log read as it grows).
responder_start() {
	local _ca _idx _line _name _port _rk _rs _rv
	_rv=$1; _name=$2; _ca=$3; _idx=$4; _rs=$5; _rk=$6; shift 6
	bg_start _rpid "$T/$_name.log" ${RESPONDER_WRAP:-} openssl ocsp -port 0 \
	    -index "$_idx" -CA "$_ca" -rsigner "$_rs" -rkey "$_rk" "$@"
	_line=$(wait_for_line "$T/$_name.log" '^ACCEPT ') ||
	    die "openssl ocsp responder $_name did not start"
	_port=$(printf '%s\n' "$_line" | sed -E 's/^ACCEPT .*:([0-9]+)( .*)?$/\1/')
	eval "$_rv=$_port"
	eval "${_rv}_PID=$_rpid"
}

# fill_responder VAR NAME INDEX [openssl ocsp options...]: responder_start
# for fill_pki's issuing CA with its responder, embedding the CA as
# bench-fill -s does, answering from INDEX (bench-fill -o's index.txt).
fill_responder() {
	local _idx _name _rv
	_rv=$1; _name=$2; _idx=$3; shift 3
	responder_start "$_rv" "$_name" "$FILL_PKI/ica.pem" "$_idx" \
	    "$FILL_PKI/resp.pem" "$FILL_PKI/resp.key" -rother "$FILL_PKI/ica.pem" "$@"
}

# fill_stapled NAME RATE PORT: stapled_start NAME trusting fill_pki's CAs,
# refreshing at most RATE a second from the OCSP upstream at PORT (the
# configuration in $T/conf.json).
fill_stapled() {
	cat >"$T/conf.json" <<EOF
{"ocsp": {"anchors": ["$FILL_PKI/root.pem"], "intermediates": ["$FILL_PKI/ica.pem"],
  "rate_limit_per_s": $2}}
EOF
	stapled_start "$1" -f "$T/conf.json" --ocsp-upstream "http://127.0.0.1:$3/"
}

# upstream_start VAR NAME [tests/upstream options...]: port into $VAR,
# PID into ${VAR}_PID.
upstream_start() {
	local _line _name _uv
	_uv=$1; _name=$2; shift 2
	bg_start _upid "$T/$_name.log" "$UPSTREAM" --listen 127.0.0.1:0 "$@"
	_line=$(wait_for_line "$T/$_name.log" '^PORT=[0-9]+') ||
	    die "tests/upstream $_name did not start ($*)"
	eval "$_uv=${_line#PORT=}"
	eval "${_uv}_PID=$_upid"
}

# farm_start VAR NAME [openssl ocsp options...]: one `openssl ocsp` per
# issuing CA of $PKI_CAS (or $FARM_CAS), behind tests/upstream in route mode
# (by the CertID's issuerKeyHash, SHA-1/256/384). Router port into $VAR;
# it counts requests into $T/NAME.count. FARM_UPSTREAM_OPTS adds options
# to the router (--delay-ms 50). FARM_ROUTE_AS maps each CA of FARM_CAS to
# the key hashes of another CA list (the look-alike tree answering for
# the genuine issuers).
farm_start() {
	local _a _args _as _ca _cas _d _fn _fv _routes _tgt _up
	_fv=$1; _fn=$2; shift 2
	_routes=""
	_cas=${FARM_CAS:-$PKI_CAS}
	_as=${FARM_ROUTE_AS:-$_cas}
	for _ca in $_cas; do
		# "-rother CHAIN": each responder embeds its own CA's chain
		_args=()
		for _a in "$@"; do
			[ "$_a" = CHAIN ] && _a=$(ca_chain "$_ca")
			_args+=("$_a")
		done
		responder_start _rp "$_fn-$_ca" "$(ca_cert "$_ca")" "$(ca_index "$_ca")" \
		    "$(ca_rsigner "$_ca")" "$(ca_rkey "$_ca")" "${_args[@]}"
		eval "FARM_${_fn}_PIDS=\"\${FARM_${_fn}_PIDS:-} \$_rp_PID\""
		# The CA whose CertIDs this responder gets.
		_tgt=$(echo "$_as" | awk -v n="$(echo "$_cas" | awk -v c="$_ca" '{ for (i = 1; i <= NF; i++) if ($i == c) print i }')" '{ print $n }')
		for _d in sha1 sha256 sha384; do
			_routes="$_routes,$(key_hash_hex "$(ca_cert "$_tgt")" "$_d")=127.0.0.1:$_rp"
		done
	done
	: >"$T/$_fn.count"
	upstream_start "$_fv" "$_fn" --mode "route:${_routes#,}" \
	    --count-file "$T/$_fn.count" ${FARM_UPSTREAM_OPTS:-}
	eval "_up=\$${_fv}_PID"
	eval "FARM_${_fn}_PIDS=\"\${FARM_${_fn}_PIDS:-} \$_up\""
}

# farm_stop NAME: kill its router and responders; the port is then dead.
farm_stop() {
	local _p _pids
	eval "_pids=\${FARM_${1}_PIDS:-}"
	for _p in $_pids; do bg_kill "$_p" TERM; done
	eval "FARM_${1}_PIDS="
}

# lookalike_start VAR NAME [options]: the look-alike tree's responders,
# answering for the genuine issuers' CertIDs.
lookalike_start() {
	FARM_CAS=$EVIL_CAS FARM_ROUTE_AS=$PKI_CAS farm_start "$@"
}

# upstream_count NAME: requests the router NAME has received.
upstream_count() { count_of "$T/$1.count"; }

# stapled_start NAME [stapled options...]: the daemon on a fresh port, with
# ${STAPLED_CACHE:-$T/cache} as cache. Sets SPORT, SURL, SPID. Waits for
# /healthz.
stapled_start() {
	local _i _name _tries
	_name=$1; shift
	_tries=0
	while :; do
		SPORT=$(free_port)
		SURL=http://127.0.0.1:$SPORT
		bg_start SPID "$T/$_name.log" ${STAPLED_WRAP:-} "$STAPLED" \
		    --listen "127.0.0.1:$SPORT" --cache-dir "${STAPLED_CACHE:-$T/cache}" "$@"
		_i=0
		while [ $_i -lt "$WAIT_START_DS" ]; do
			if curl -s -o /dev/null -m 1 "$SURL/healthz"; then return 0; fi
			kill -0 "$SPID" 2>/dev/null || break
			sleep 0.1; _i=$((_i + 1))
		done
		bg_wait "$SPID"
		# Lost a race for the port: try another one, a few times.
		if [ "$BG_RC" != 999 ] && grep -qi 'in use' "$T/$_name.log" && [ $_tries -lt 3 ]; then
			_tries=$((_tries + 1)); continue
		fi
		die "stapled ($_name) did not come up: $STAPLED $*"
	done
}

# stapled_stop: SIGTERM and wait; exit status in $BG_RC.
stapled_stop() { bg_kill "$SPID" TERM; }

# ocsp_bundle_warmed OUT: a bundle of three OCSP entries (two leaves and the
# intermediate) at OUT, exported from the cache $T/a that a daemon filled
# from the live upstream "good" (left running, its port in UP); the
# configuration in $T/a.json.
ocsp_bundle_warmed() {
	local _out=$1 pair
	farm_start UP good -ndays 1 -rother CHAIN
	cat >"$T/a.json" <<EOF
{ "cache_dir": "$T/a",
  "ocsp": { "upstreams": [ { "url": "http://127.0.0.1:$UP/", "name": "good" } ],
            "anchors": [ "$ANCHORS" ], "intermediates": [ "$INTERMEDIATES" ] } }
EOF
	STAPLED_CACHE=$T/a stapled_start a -f "$T/a.json"
	for pair in "$ICA_CERT $LEAF1" "$ICA_CERT $LEAF2" "$IDENT_CERT $ICA_CERT"; do
		set -- $pair
		openssl ocsp -url "$SURL/ocsp" -issuer "$1" -cert "$2" -CAfile "$ANCHORS" \
		    -verify_other "$INTERMEDIATES" >"$T/warm.out" 2>&1 ||
		    die "warming: openssl ocsp failed ($(cat "$T/warm.out"))"
	done
	"$CTL" -C "$T/a" -f "$T/a.json" export --out "$_out" >"$T/export.log" 2>&1 ||
	    die "staplectl export failed: $(cat "$T/export.log")"
	stapled_stop
}

# need_ctl: CTL set to the staplectl of the build, or the test skips.
need_ctl() {
	CTL=$top_builddir/staplectl
	[ -x "$CTL" ] || skip "staplectl not built at $CTL"
}

# need_fill: FILL set to the bench-fill of the build, or the test skips.
need_fill() {
	FILL=$top_builddir/tools/bench-fill
	[ -x "$FILL" ] || skip "tools/bench-fill not built"
}

# need_py: PY set to the system's python3, or the test skips.
need_py() {
	PY=/usr/bin/python3
	[ -x "$PY" ] || skip "$PY not installed"
}

# need_vectors DIR FILE...: every FILE under DIR there and not empty, or the
# test fails naming the first one missing.
need_vectors() {
	local _dir=$1 _f
	shift
	for _f in "$@"; do
		[ -s "$_dir/$_f" ] || die "vector $_f missing under $_dir"
	done
}

# ---- clients ----------------------------------------------------------------------

# ocsp_b64 FILE: FILE's DER in base64, percent-encoded for a GET /ocsp/ path.
ocsp_b64() { base64 -w0 <"$1" | sed -e 's/+/%2B/g' -e 's#/#%2F#g' -e 's/=/%3D/g'; }

# mkreq OUT ISSUER CERT [openssl ocsp options...]: a DER OCSPRequest with a
# fresh nonce (nvattest's shape: one SHA-1 CertID, 16-byte nonce).
mkreq() {
	local _cert _iss _out
	_out=$1; _iss=$2; _cert=$3; shift 3
	# Options first: -sha384 applies to the -cert after it.
	openssl ocsp "$@" -issuer "$_iss" -cert "$_cert" -reqout "$_out" >/dev/null 2>&1 ||
	    die "openssl ocsp -reqout $_out failed"
}

# post REQ OUT [URL_PATH [curl options...]]: POST the DER request to
# stapled. Sets HTTP_CODE and HTTP_TIME (seconds); body in OUT, headers in
# OUT.hdr.
post() {
	local _out _path _req
	_req=$1; _out=$2; _path=${3:-/ocsp}
	[ $# -ge 3 ] && shift 3 || shift $#
	HTTP_CODE=000; HTTP_TIME=0
	curl -s -m 30 -o "$_out" -D "$_out.hdr" -w '%{http_code} %{time_total}\n' \
	    -H "$CT_REQ" --data-binary @"$_req" "$@" "$SURL$_path" >"$_out.w"
	read -r HTTP_CODE HTTP_TIME <"$_out.w"
}
# check_successful DESC REQ ANS ISSUER CERT: a request for CERT (issued by
# ISSUER) into REQ, POSTed with its answer into ANS; the check DESC that the
# answer is successful.
check_successful() {
	mkreq "$2" "$4" "$5"
	post "$2" "$3"
	check_eq "$1" successful "$(resp_status "$3")"
}

# ossl_verify RESP ISSUER CERT: the saved response verifies with the test
# anchors and intermediates, strict on times (the client's view).
ossl_verify() {
	openssl ocsp -respin "$1" -CAfile "$ANCHORS" -verify_other "$INTERMEDIATES" \
	    -issuer "$2" -cert "$3" -no_nonce -validity_period 5 >/dev/null 2>&1
}

# resp_status FILE: successful, malformedRequest, tryLater, ... or "none".
resp_status() {
	case $(hex_of "$1") in
	30030a0101) echo malformedRequest; return ;;
	30030a0102) echo internalError; return ;;
	30030a0103) echo tryLater; return ;;
	30030a0106) echo unauthorized; return ;;
	esac
	openssl ocsp -respin "$1" -resp_text -noverify 2>/dev/null |
	    awk -F': ' '/OCSP Response Status:/ { split($2, a, " "); print a[1]; f = 1; exit }
	        END { if (!f) print "none" }'
}

# cert_status FILE: good, revoked or unknown from the first SingleResponse.
cert_status() {
	openssl ocsp -respin "$1" -resp_text -noverify 2>/dev/null |
	    awk -F': ' '/Cert Status:/ { print $2; exit }'
}

# this_update FILE / next_update FILE: as openssl prints them.
this_update() {
	openssl ocsp -respin "$1" -resp_text -noverify 2>/dev/null |
	    awk -F'Update: ' '/This Update:/ { print $2; exit }'
}
next_update() {
	openssl ocsp -respin "$1" -resp_text -noverify 2>/dev/null |
	    awk -F'Update: ' '/Next Update:/ { print $2; exit }'
}

hex_of() { od -An -v -tx1 "$1" 2>/dev/null | tr -d ' \n'; }
is_trylater() { [ "$(hex_of "$1")" = 30030a0103 ]; }
is_malformed() { [ "$(hex_of "$1")" = 30030a0101 ]; }

# header FILE.hdr NAME: the value of a response header (last one wins).
header() {
	tr -d '\r' <"$1" | awk -v n="$2" 'BEGIN { n = tolower(n) }
	    { i = index($0, ":"); if (i && tolower(substr($0, 1, i - 1)) == n) { v = substr($0, i + 1); sub(/^ +/, "", v) } }
	    END { print v }'
}

# ---- metrics ----------------------------------------------------------------------

# metrics_get FILE: a snapshot of /metrics.
metrics_get() { curl -s -m 5 -o "$1" "$SURL/metrics"; }

# metric_sum FILE ERE: the sum of every sample whose name{labels} matches.
metric_sum() {
	awk -v re="$2" '!/^#/ && NF >= 2 { k = $1; if (k ~ re) s += $2 } END { printf "%d\n", s }' "$1"
}

# metric_wait FILE ERE MIN: refetch /metrics into FILE until the sum reaches
# MIN (gauges from a pass over the store lag), at most 5 s.
metric_wait() {
	local _i=0
	while :; do
		metrics_get "$1"
		[ "$(metric_sum "$1" "$2")" -ge "$3" ] && return 0
		[ $_i -ge 50 ] && return 1
		sleep 0.1; _i=$((_i + 1))
	done
}

# count_of FILE: the upstream's request counter (0 when absent).
count_of() {
	if [ -s "$1" ]; then tr -dc '0-9' <"$1"; echo; else echo 0; fi
}

# libfaketime_so: the preload library of Debian's faketime package, or
# nothing. Tests preload it themselves (env LD_PRELOAD=... FAKETIME=...),
# because the faketime wrapper forks and would not pass signals on.
libfaketime_so() {
	local _so
	for _so in /usr/lib/*/faketime/libfaketime.so.1 /usr/lib/faketime/libfaketime.so.1 \
	    /usr/local/lib/faketime/libfaketime.so.1; do
		[ -f "$_so" ] && { echo "$_so"; return 0; }
	done
	return 1
}

# need_faketime: so set to libfaketime_so's library, or the test skips.
need_faketime() {
	so=$(libfaketime_so) || skip "libfaketime not installed (Debian package faketime)"
}

# faketime_env FAKETIME: the env(1) prefix that runs a program under
# libfaketime ($so) at FAKETIME ("+13d", or an offset in seconds), its
# monotonic clocks left alone.
faketime_env() { echo "env LD_PRELOAD=$so FAKETIME=$1 FAKETIME_DONT_FAKE_MONOTONIC=1"; }

# secs_until DATE: seconds from now to DATE (what date -d reads; negative
# when it is past).
secs_until() { echo $(( $(date -u -d "$1" +%s) - $(date +%s) )); }

# ---- time ----------------------------------------------------------------------

# Milliseconds since the epoch, from bash (no date process): the seconds
# and microseconds of EPOCHREALTIME, less three digits.
now_ms() { local _t=${EPOCHREALTIME//[.,]/}; echo "${_t%???}"; }

# ---- staplectl, bundles and the directory upstream (tests/upstream.c -d) ------

# ctl ARGS...: staplectl (under $STAPLED_WRAP when set, e.g. faketime), output
# in $T/ctl.out (stdout and stderr), exit status in $CTL_RC.
ctl() {
	${STAPLED_WRAP-} "$CTL" "$@" >"$T/ctl.out" 2>&1
	CTL_RC=$?
}
# list_of CACHE: `staplectl list` without the time-left column, to compare.
list_of() { ${STAPLED_WRAP-} "$CTL" -C "$1" list 2>&1 | awk '{ $7 = ""; print }'; }
# field LINE NAME: a string member of one compact JSON line.
field() { printf '%s\n' "$1" | sed -n "s/.*\"$2\":\"\\([^\"]*\\)\".*/\\1/p"; }
# entry_with LINE NAME VALUE: the entry line with one string member replaced.
entry_with() { printf '%s\n' "$1" | sed "s|\"$2\":\"[^\"]*\"|\"$2\":\"$3\"|"; }
hexstr() { printf '%s' "$1" | od -An -v -tx1 | tr -d ' \n'; }

# seal OUT < lines: a bundle header, the lines, and a trailer that matches
# them. SEAL_VERSION (1) and SEAL_CREATED (2025-06-01T00:00:00Z) set the header.
seal() {
	local _n
	{
		printf '{"type":"header","format":"stapled-bundle","version":%s,"created":"%s","generator":"%s"}\n' \
		    "${SEAL_VERSION:-1}" "${SEAL_CREATED:-2025-06-01T00:00:00Z}" \
		    "$(basename "$0" .sh)"
		cat
	} >"$1.body"
	_n=$(grep -c '"type":"entry"' "$1.body")
	cp "$1.body" "$1"
	printf '{"type":"end","entries":%d,"sha256":"%s"}\n' "$_n" \
	    "$(sha256sum "$1.body" | cut -d' ' -f1)" >>"$1"
	rm -f "$1.body"
}

# dir_put DIR PATH STATUS BODY HEADERS: the directory upstream answers PATH
# (as stapled asks it) so.
dir_put() {
	mkdir -p "$1"
	touch "$1/index"
	awk -F'\t' -v p="$2" '$1 != p' "$1/index" >"$1/index.new"
	printf '%s\t%s\t%s\t%s\n' "$2" "$3" "$4" "$5" >>"$1/index.new"
	mv "$1/index.new" "$1/index"
}

# dir_rate_limited NAME DIR PATH...: a directory upstream (port in NAME) that
# answers each PATH with 429 Too Many Requests and Retry-After: 30.
dir_rate_limited() {
	local _name=$1 _dir=$2 _p
	shift 2
	mkdir -p "$_dir"
	printf 'Content-Type: text/plain\nRetry-After: 30\n' >"$_dir/429.hdr"
	printf 'Too Many Requests\n' >"$_dir/429.txt"
	for _p in "$@"; do dir_put "$_dir" "$_p" 429 "$_dir/429.txt" "$_dir/429.hdr"; done
	upstream_start "$_name" r --mode "dir:$_dir"
}

# check_429_handoff FLAG UPATH1 UPATH2 GET1 WANT1 GET2 WANT2: a daemon (cache
# $T/c_f2) with two endpoints by FLAG (--kds-upstream, --pccs-upstream): the
# first answers UPATH1 and UPATH2 with 429 and Retry-After (dir_rate_limited
# UR over $T/R), the second is $UG over $T/G. GET1 and GET2 are served the
# bytes of WANT1 and WANT2 by the second, and the first is asked once only
# (it rests as told).
check_429_handoff() {
	local _flag=$1 _g0
	dir_rate_limited UR "$T/R" "$2" "$3"
	_g0=$(dir_total "$T/G")
	STAPLED_CACHE=$T/c_f2 stapled_start d_f2 "$_flag" "http://127.0.0.1:$UR" \
	    "$_flag" "http://127.0.0.1:$UG"
	get "$4" "$T/f2.out"
	check_bytes "429 first: the next endpoint's answer is served" "$5" "$T/f2.out"
	get "$6" "$T/f2b.out"
	check_bytes "429 first, Retry-After 30: the next request is served too" "$7" "$T/f2b.out"
	check_eq "Retry-After honoured: the rate-limited endpoint is not asked again within 30 s" 1 \
	    "$(dir_total "$T/R")"
	check_eq "429 first: the second endpoint answered both" 2 "$(( $(dir_total "$T/G") - _g0 ))"
	stapled_stop
}

# check_forged_refused NAME FLAG UPATH BODY HFILE GET: $UB (a directory
# upstream over $T/B) answers UPATH with BODY (headers HFILE) and nothing
# else; a daemon (cache $T/c_NAME, log $T/d_NAME.log) whose only upstream is
# UB by FLAG is asked GET into $T/NAME.out and refuses the answer: 503 (in
# HTTP_CODE), not BODY, the refusal logged with UB's name. The daemon is
# left running.
check_forged_refused() {
	local _n=$1 _body=$4
	rm -f "$T/B/index" "$T/B/requests"
	dir_put "$T/B" "$3" 200 "$_body" "$5"
	STAPLED_CACHE=$T/c_$_n stapled_start "d_$_n" "$2" "http://127.0.0.1:$UB"
	get "$6" "$T/$_n.out"
	check_eq "$_n: refused, the only upstream failed: 503" 503 "$HTTP_CODE"
	assert "$_n: the forged body is not served" '! cmp -s "$T/$_n.out" "$_body"'
	assert "$_n: the refusal is logged with the upstream's name" \
	    'grep -q "refused an answer from 127.0.0.1:$UB" "$T/d_$_n.log"'
}
# dir_hits DIR PATH: how many requests for PATH the upstream DIR has had.
dir_hits() {
	if [ -f "$1/requests" ]; then grep -cxF -- "$2" "$1/requests" || true
	else echo 0; fi
}
dir_total() { if [ -f "$1/requests" ]; then wc -l <"$1/requests" | tr -d ' '; else echo 0; fi; }
# hdrs OUT CONTENT-TYPE [NAME VALUE-FILE]: a headers file as PCS sends them.
hdrs() {
	{
		printf 'Content-Type: %s\n' "$2"
		[ -n "${HDRS_REQUEST_ID-}" ] && printf 'Request-ID: %s\n' "$HDRS_REQUEST_ID-$RANDOM"
		[ $# -ge 4 ] && printf '%s: %s\n' "$3" "$(cat "$4")"
	} >"$1"
}
# get PATH OUT: GET $SURL PATH; HTTP_CODE set, headers in OUT.hdr.
get() {
	HTTP_CODE=$(curl -s -m 20 -o "$2" -D "$2.hdr" -w '%{http_code}' "$SURL$1")
}
# vcek_ext DER OID: the hex dump of that extension's value.
vcek_ext() {
	openssl asn1parse -inform DER -in "$1" | awk -v oid=":$2" '
	    want && /OCTET STRING/ { sub(/.*\[HEX DUMP\]:/, ""); print; exit }
	    { n = length(oid); want = /OBJECT/ && substr($0, length($0) - n + 1) == oid }'
}
# vcek_spl DER N: SPL 1.3.6.1.4.1.3704.1.3.N, a DER INTEGER, in decimal.
vcek_spl() {
	local _h
	_h=$(vcek_ext "$1" "1.3.6.1.4.1.3704.1.3.$2")
	[ -n "$_h" ] || return 1
	echo $(( 16#${_h:4} ))
}
vcek_hwid() { vcek_ext "$1" 1.3.6.1.4.1.3704.1.4 | tr 'A-F' 'a-f'; }
# vcek_url DER PRODUCT: the canonical KDS path and query of the VCEK in DER.
vcek_url() {
	printf '/vcek/v1/%s/%s?blSPL=%s&teeSPL=%s&snpSPL=%s&ucodeSPL=%s' "$2" \
	    "$(vcek_hwid "$1")" "$(vcek_spl "$1" 1)" "$(vcek_spl "$1" 2)" \
	    "$(vcek_spl "$1" 3)" "$(vcek_spl "$1" 8)"
}
