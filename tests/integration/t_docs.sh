#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Every block the docs print is checked: a quoted example is its file in examples/, byte
# for byte; every whole configuration passes stapled -n, nginx -t, varnishd -C or promtool,
# with Debian's directories and placeholder certificates; stapled.conf(5)'s first example
# and the packaged stapled.json serve under a passed socket, as the package's socket unit
# passes it. The markers: tests/integration/doc_blocks.py. Every section the code and
# the docs cite by title or number exists: tests/integration/doc_cites.py.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_docs
need_cmd nginx varnishd promtool systemd-socket-activate
BLOCKS=$top_srcdir/tests/integration/doc_blocks.py
EX=$top_srcdir/examples
NGINX=$(command -v nginx)
VARNISHD=$(command -v varnishd)

# ---- every marked block, and every configuration block marked -------------------
mkdir -p "$T/blocks"
python3 "$BLOCKS" check "$top_srcdir" "$T/blocks" >"$T/blocks.out" 2>&1
check "each quoted example is its file, each configuration block has a marker" [ $? -eq 0 ]
sed -n 's/^FAIL - /#   /p; /^# blocks/p' "$T/blocks.out"
check "the docs quote the examples (markers found)" \
    grep -q '^# blocks marked example: [1-9]' "$T/blocks.out"

# ---- every section the code and the docs cite exists -----------------------------
python3 "$top_srcdir/tests/integration/doc_cites.py" "$top_srcdir" >"$T/cites.out" 2>&1
check "every document section cited by the code and the docs exists" [ $? -eq 0 ]
sed -n 's/^FAIL - /#   /p' "$T/cites.out"
check "citations were found to check" grep -q '^# citations checked: [1-9]' "$T/cites.out"

# ---- a root with the directories Debian has, and placeholder certificates -------
# Absolute paths in a configuration move under $R. /var/cache exists on every
# Debian system; /var/cache/nginx does not (Debian's nginx uses /var/lib/nginx).
R=$T/root
mkdir -p "$R/etc/stapled" "$R/etc/nginx/conf.d" "$R/var/cache" "$R/var/lib/stapled" \
    "$R/var/lib/nginx" "$R/var/log/nginx" "$R/usr/share/stapled" "$T/pki"
cp "$top_srcdir/docs/prometheus-alerts.yml" "$R/usr/share/stapled/"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj "/CN=Placeholder CA" -addext basicConstraints=critical,CA:TRUE \
    -addext keyUsage=critical,keyCertSign,cRLSign \
    -keyout "$T/pki/ca.key" -out "$T/pki/ca.pem" >/dev/null 2>&1 &&
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -subj "/CN=mirror.example" -keyout "$T/pki/key.pem" -out "$T/pki/req.pem" >/dev/null 2>&1 &&
printf 'subjectAltName=DNS:mirror.example\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n' \
    >"$T/pki/ext.cnf" &&
openssl x509 -req -in "$T/pki/req.pem" -CA "$T/pki/ca.pem" -CAkey "$T/pki/ca.key" \
    -CAcreateserial -days 2 -extfile "$T/pki/ext.cnf" -out "$T/pki/cert.pem" >/dev/null 2>&1 ||
    die "cannot make the placeholder certificates"
cat "$T/pki/cert.pem" "$T/pki/ca.pem" >"$T/pki/fullchain.pem"

# relocate IN OUT: IN with its absolute paths under $R.
relocate() {
	sed -e "s#\"/etc/#\"$R/etc/#g; s#\"/var/#\"$R/var/#g" \
	    -e "s#\\([[:space:]]\\)/etc/#\\1$R/etc/#g; s#\\([[:space:]]\\)/var/#\\1$R/var/#g" \
	    -e "s#\\([[:space:]]\\)/usr/share/stapled/#\\1$R/usr/share/stapled/#g" "$1" >"$2"
}

# placeholders FILE: each file under $R/etc that FILE names, made as its
# name says: a key, a CA, a certificate chain, or the PCS API key (hex).
placeholders() {
	local _p
	for _p in $(grep -o "$R/etc/[A-Za-z0-9._/-]*" "$1" | sort -u); do
		mkdir -p "${_p%/*}"
		case ${_p##*/} in
		*key*.pem) cp "$T/pki/key.pem" "$_p" ;;
		*ca*.pem) cp "$T/pki/ca.pem" "$_p" ;;
		*.pem) cp "$T/pki/fullchain.pem" "$_p" ;;
		*.key) echo 0123456789abcdef0123456789abcdef >"$_p" ;;
		*) fail "$1 names $_p: the test does not know what to put there"; return 1 ;;
		esac
	done
}

# ---- stapled -n: the examples' stapled.json, and each inline configuration -------
# stapled_n NAME FILE: FILE relocated, its files made, passes stapled -n.
stapled_n() {
	relocate "$2" "$T/n.json" && placeholders "$T/n.json" || return 1
	"$STAPLED" -n -f "$T/n.json" >"$T/n.out" 2>&1
	check "stapled -n: $1" grep -qx 'configuration OK' "$T/n.out"
	grep -qx 'configuration OK' "$T/n.out" || sed 's/^/#   /' "$T/n.out"
}
n=0
for f in "$EX"/*/stapled.json; do
	stapled_n "examples/${f#"$EX"/}" "$f"; n=$((n + 1))
done
while IFS="$(printf '\t')" read -r kind file origin; do
	case $kind in
	stapled) stapled_n "$origin" "$T/blocks/$file"; n=$((n + 1)) ;;
	stapled-cmdline)
		# one command, its continuation lines joined; -n checks and exits
		args=$(sed -e ':a' -e '/\\$/N; s/\\\n//; ta' "$T/blocks/$file" | sed 's/^stapled //')
		# shellcheck disable=SC2086
		"$STAPLED" -n $args >"$T/n.out" 2>&1
		check "stapled -n with the flags of $origin" grep -qx 'configuration OK' "$T/n.out"
		n=$((n + 1)) ;;
	esac
done <"$T/blocks/tasks"
check "stapled -n checked the examples and the inline configurations ($n)" [ "$n" -ge 10 ]
relocate "$top_builddir/docs/stapled.json" "$T/pkg.json"
stapled_n "the packaged /etc/stapled/stapled.json" "$T/pkg.json"

# ---- nginx -t: the example, inside an http {} block as Debian's nginx.conf ------
# nginx_t NAME FILE: the fragment FILE, relocated, included in a whole
# nginx.conf; nginx -t passes. Output in $T/nginx-t.out.
nginx_t() {
	local _n=$T/nginx
	rm -rf "$_n" && mkdir -p "$_n/conf.d" || return 1
	relocate "$2" "$_n/conf.d/site.conf" && placeholders "$_n/conf.d/site.conf" || return 1
	cat >"$_n/nginx.conf" <<EOF
pid $_n/nginx.pid;
error_log $_n/error.log;
events { worker_connections 64; }
http {
	access_log off;
	client_body_temp_path $_n/tmp;
	proxy_temp_path $_n/tmp;
	include $_n/conf.d/site.conf;
}
EOF
	"$NGINX" -t -p "$_n" -c "$_n/nginx.conf" -e "$_n/error.log" >"$T/nginx-t.out" 2>&1
}
for f in "$EX"/nginx/*.conf; do
	nginx_t "$f" "$f"
	check "nginx -t: examples/${f#"$EX"/} inside http {}" [ $? -eq 0 ]
	grep -q 'test is successful' "$T/nginx-t.out" || sed 's/^/#   /' "$T/nginx-t.out"
done
check "... nginx made the cache directory under /var/cache" \
    test -d "$R/var/cache/nginx-stapled"
# Control: this root is Debian's, so the cache path the docs printed before
# (/var/cache/nginx/stapled) fails here as on Debian 12.
sed 's#/var/cache/nginx-stapled#/var/cache/nginx/stapled#' "$EX/nginx/stapled.conf" >"$T/old.conf"
nginx_t old "$T/old.conf"
check "control: a cache under /var/cache/nginx/, which Debian does not make, fails nginx -t" \
    grep -q 'mkdir() .*/var/cache/nginx/stapled" failed' "$T/nginx-t.out"
while IFS="$(printf '\t')" read -r kind file origin; do
	[ "$kind" = nginx ] || continue
	nginx_t "$origin" "$T/blocks/$file"
	check "nginx -t: $origin inside http {}" [ $? -eq 0 ]
done <"$T/blocks/tasks"

# ---- varnishd -C --------------------------------------------------------------------
# The VCL from a directory every user may read: varnishd reads it as vcache.
VCL=$(mktemp -d /tmp/stapled-t_docs.XXXXXX) || die "mktemp"
trap '_rc=$?; rm -rf "$VCL"; (exit $_rc); it_cleanup' EXIT
chmod 755 "$VCL"
vcl_c() {
	cp "$2" "$VCL/t.vcl" && chmod 644 "$VCL/t.vcl"
	# The C it compiles to goes to stderr, a refusal's reasons too.
	if "$VARNISHD" -C -n "$T/varnish" -f "$VCL/t.vcl" >/dev/null 2>"$T/vcl.err"; then
		ok "varnishd -C: $1"
	else
		fail "varnishd -C: $1"
		grep -v '^[/ ]\*\|^#\|^$' "$T/vcl.err" | head -n 10 | sed 's/^/#   /'
	fi
}
for f in "$EX"/varnish/*.vcl; do vcl_c "examples/${f#"$EX"/}" "$f"; done
while IFS="$(printf '\t')" read -r kind file origin; do
	[ "$kind" = vcl ] && vcl_c "$origin" "$T/blocks/$file"
done <"$T/blocks/tasks"

# ---- promtool: the rule file the package ships, the example prometheus.yml -----
# promtool_ok WHAT ARGS...: promtool passes; its report only on a failure.
promtool_ok() {
	local _w=$1
	shift
	if promtool "$@" >"$T/promtool.out" 2>&1; then ok "$_w"
	else fail "$_w"; sed 's/^/#   /' "$T/promtool.out"; fi
}
promtool_ok "promtool check rules: docs/prometheus-alerts.yml" \
    check rules "$top_srcdir/docs/prometheus-alerts.yml"
for f in "$EX"/prometheus/*.yml; do
	relocate "$f" "$T/prometheus.yml"
	promtool_ok "promtool check config: examples/${f#"$EX"/}, its rule file the package's" \
	    check config "$T/prometheus.yml"
done
while IFS="$(printf '\t')" read -r kind file origin; do
	case $kind in
	prometheus-rules) promtool_ok "promtool check rules: $origin" check rules "$T/blocks/$file" ;;
	prometheus-config)
		relocate "$T/blocks/$file" "$T/p.yml"
		promtool_ok "promtool check config: $origin" check config "$T/p.yml" ;;
	esac
done <"$T/blocks/tasks"

# ---- configurations of other programs: they parse --------------------------------
parses() {
	python3 -c 'import json, sys, tomllib
f = sys.argv[2]
if sys.argv[1] == "toml":
    tomllib.load(open(f, "rb"))
else:
    json.load(open(f))' "$1" "$2" 2>"$T/parse.err"
}
for f in "$EX"/*/*.toml; do check "TOML: examples/${f#"$EX"/}" parses toml "$f"; done
while IFS="$(printf '\t')" read -r kind file origin; do
	case $kind in json|toml) check "$kind: $origin" parses "$kind" "$T/blocks/$file" ;; esac
done <"$T/blocks/tasks"

# ---- every file in examples/ is one of the kinds checked here or by t_airgap_doc --
others=$(cd "$EX" && find . -type f ! -name README.md ! -name stapled.json \
    ! -path './nginx/*.conf' ! -path './varnish/*.vcl' ! -path './prometheus/*.yml' \
    ! -name '*.toml' ! -path './connected/stapled-fetch.cron' | sort)
check_eq "no file in examples/ that no test checks" "" "$others"
missing=$(cd "$top_srcdir" && find examples -type f | sort | while read -r f; do
	grep -q "[[:space:]]$f\( \|\$\)" Makefile.am || echo "$f"
done)
check_eq "every file in examples/ is installed (Makefile.am)" "" "$missing"

# ---- under a passed socket, as stapled.socket passes it ------------------------
# stapled.conf(5)'s first example, and the packaged stapled.json, with the
# package's unit: the passed 127.0.0.1 socket serves, nothing else is bound.
# The socket unit's port 8090 is the test's port P, in the file too.
first=$(awk -F'\t' '$1 == "stapled" && $3 ~ /^docs\/stapled\.conf\.5:/ { print $2; exit }' \
    "$T/blocks/tasks")
[ -n "$first" ] || die "no checked example in docs/stapled.conf.5"
check "stapled.conf(5)'s first example leaves the address to the socket unit" \
    sh -c "! grep -q '\"listen\"' '$T/blocks/$first'"
for c in "first:$T/blocks/$first" "packaged:$top_builddir/docs/stapled.json"; do
	name=${c%%:*}
	P=$(free_port)
	sed "s/:8090\([^0-9]\)/:$P\1/g" "${c#*:}" >"$T/sa-$name.json"
	bg_start SAPID "$T/sa-$name.log" systemd-socket-activate -l "127.0.0.1:$P" -- \
	    "$STAPLED" -f "$T/sa-$name.json" --cache-dir "$T/c-$name"
	wait_for_line "$T/sa-$name.log" "Listening on 127.0.0.1:$P" >/dev/null ||
	    die "systemd-socket-activate did not listen"
	code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$P/healthz")
	check_eq "$name configuration under a passed socket: served" 200 "$code"
	check "... no warning, and only the passed socket" \
	    sh -c "! grep -q 'warning\|error' '$T/sa-$name.log' && [ \$(grep -c 'listening on' '$T/sa-$name.log') = 1 ]"
	bg_kill "$SAPID" TERM
done

it_done
