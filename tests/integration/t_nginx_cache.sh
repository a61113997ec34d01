#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# nginx proxy_cache in front of stapled (docs/mirror.md's recipe, examples/nginx): the second GET of an
# OCSP, a PCCS, a KDS and a RIM object is a HIT at nginx and never reaches stapled;
# 304 on If-None-Match, HEAD, no-store on errors; nothing served past nextUpdate.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_nginx_cache
need_faketime
NGINX=$(command -v nginx || { [ -x /usr/sbin/nginx ] && echo /usr/sbin/nginx; }) ||
    skip "nginx not installed (Debian package nginx)"
IV=$top_srcdir/tests/vectors/intel/derived
AV=$top_srcdir/tests/vectors/amd
TD=$VECTORS/attestation-sdk/testdata
RIM_ID=NV_GPU_DRIVER_GH100_550.144.03
for f in "$IV/tdx_tcb_info.body.json" "$IV/tdx_tcb_info.TCB-Info-Issuer-Chain.txt" \
    "$AV/vcek_milan.der" "$AV/cert_chain_milan" "$TD/$RIM_ID.xml"; do
	[ -s "$f" ] || die "vector $f missing"
done
pki_make

# dir_put DIR PATH STATUS BODY HEADERS: tests/upstream --mode dir:DIR answers PATH so.
dir_put() {
	mkdir -p "$1"
	touch "$1/index"
	printf '%s\t%s\t%s\t%s\n' "$2" "$3" "$4" "$5" >>"$1/index"
}

# ---- the vendors ------------------------------------------------------------------

# OCSP: answers valid for one minute, so nginx's copy must end within it.
farm_start UP ocsp -nmin 1 -rother CHAIN
# KDS: a real Milan VCEK and its chain (never refreshed: 24 h at most).
printf 'Content-Type: application/pkix-cert\n' >"$T/h_der"
printf 'Content-Type: application/x-pem-file\n' >"$T/h_pem"
# The upstream is asked the canonical form; find it from the VCEK's own SPLs.
VCEK_URL=$(vcek_url "$AV/vcek_milan.der" Milan)
VCEK_PATH=${VCEK_URL%%\?*}
VCEK_Q=${VCEK_URL#*\?}
dir_put "$T/K" "$VCEK_PATH?$VCEK_Q" 200 "$AV/vcek_milan.der" "$T/h_der"
dir_put "$T/K" /vcek/v1/Milan/cert_chain 200 "$AV/cert_chain_milan" "$T/h_pem"
upstream_start UK kds --mode "dir:$T/K"
# RIM: NVIDIA's RIM service JSON around a real RIM.
printf '{"id":"%s","rim":"%s","sha256":"%s","rim_format":"CORE_SWID","request_id":"t-%s"}' \
    "$RIM_ID" "$(base64 -w0 "$TD/$RIM_ID.xml")" \
    "$(sha256sum "$TD/$RIM_ID.xml" | cut -d' ' -f1)" "$RANDOM" >"$T/rim.json"
upstream_start UR rim --mode "file:$T/rim.json"
# PCCS: a real TDX TCB info, valid 2025-05-27 to 2025-06-26.
TCB_PATH="/tdx/certification/v4/tcb?fmspc=00806F050000"
{ printf 'Content-Type: application/json\n'
  printf 'TCB-Info-Issuer-Chain: %s\n' "$(cat "$IV/tdx_tcb_info.TCB-Info-Issuer-Chain.txt")"
} >"$T/h_tcb"
dir_put "$T/P" "$TCB_PATH&update=standard" 200 "$IV/tdx_tcb_info.body.json" "$T/h_tcb"
upstream_start UP_PCCS pccs --mode "dir:$T/P"

# ---- two stapleds: one on our clock, one at 2025-06-01 for the Intel capture --------

stapled_start now --ocsp-upstream "http://127.0.0.1:$UP/" --ocsp-anchor "$ANCHORS" \
    --ocsp-intermediates "$INTERMEDIATES" --kds-upstream "http://127.0.0.1:$UK" \
    --rim-upstream "http://127.0.0.1:$UR"
A_URL=$SURL; A_PORT=$SPORT
fake_off=$(secs_until 2025-06-01T00:00:00Z)
STAPLED_WRAP=$(faketime_env "$fake_off") \
    STAPLED_CACHE=$T/cache_pccs stapled_start intel --pccs-upstream "http://127.0.0.1:$UP_PCCS"
B_URL=$SURL; B_PORT=$SPORT

# ---- nginx: docs/mirror.md's proxy_cache recipe ---------------------------------------
# examples/nginx/stapled.conf (what docs/mirror.md prints; t_docs checks they
# are the same) inside http {}, as Debian's nginx.conf includes conf.d/: its
# cache under $N, its backend the OCSP/KDS/RIM stapled, its listener plain
# HTTP on a test port (no certificate), and one location more for /tdx/,
# which the stapled under libfaketime serves.

NP=$(free_port)
N=$T/nginx
mkdir -p "$N/tmp" "$N/cache"
sed -e "s#/var/cache/nginx-stapled#$N/cache#" \
    -e "s#server 127.0.0.1:8090;#server 127.0.0.1:$A_PORT;#" \
    -e "s#listen 443 ssl;#listen 127.0.0.1:$NP;#" -e '/ssl_certificate/d' \
    -e 's#^\( *\)location / { proxy_pass http://stapled; }#&\n\1location /tdx/ { proxy_pass http://stapled_intel; }#' \
    "$top_srcdir/examples/nginx/stapled.conf" >"$N/stapled.conf"
for want in "$N/cache" "127.0.0.1:$A_PORT" "listen 127.0.0.1:$NP;" "location /tdx/" \
    "proxy_cache_revalidate on" "proxy_cache_lock on"; do
	grep -qF "$want" "$N/stapled.conf" ||
	    die "examples/nginx/stapled.conf changed shape: no '$want' after the test's edits"
done
grep -q 'ssl' "$N/stapled.conf" && die "examples/nginx/stapled.conf: TLS left after the test's edits"
user_line=
[ "$(id -u)" = 0 ] && user_line="user root;"	# the cache lives in a 0700 dir
cat >"$N/nginx.conf" <<EOF
$user_line
worker_processes 1;
daemon off;
pid $N/tmp/nginx.pid;
error_log $N/error.log info;
events { worker_connections 256; }
http {
	access_log off;
	client_body_temp_path $N/tmp;
	proxy_temp_path $N/tmp;
	fastcgi_temp_path $N/tmp;
	uwsgi_temp_path $N/tmp;
	scgi_temp_path $N/tmp;
	upstream stapled_intel { server 127.0.0.1:$B_PORT; keepalive 8; }
	include $N/stapled.conf;
}
EOF
bg_start NPID "$N/stderr.log" "$NGINX" -p "$N" -c "$N/nginx.conf" -e "$N/error.log"
i=0
until curl -s -o /dev/null "http://127.0.0.1:$NP/healthz"; do
	i=$((i + 1)); [ $i -lt 100 ] || die "nginx did not start: $(cat "$N/error.log")"
	sleep 0.1
done
NURL=http://127.0.0.1:$NP

# nget URL OUT [curl options]: GET; CODE set, headers in OUT.hdr.
nget() {
	_u=$1; _o=$2; shift 2
	CODE=$(curl -s -m 20 -o "$_o" -D "$_o.hdr" -w '%{http_code}' "$@" "$_u")
}
# served URL ROUTE: requests stapled at URL has answered on that route.
served() {
	curl -s -m 5 -o "$T/m.tmp" "$1/metrics"
	metric_sum "$T/m.tmp" "^stapled_requests_total\\{route=\"$2\""
}

mkreq "$T/req.der" "$ICA_CERT" "$LEAF1"
OCSP_GET=/ocsp/$(ocsp_b64 "$T/req.der")

# ---- each kind: MISS, then a HIT that never reaches stapled ------------------------------

# kind NAME ROUTE STAPLED_URL PATH
kind() {
	local _n=$1 _r=$2 _s=$3 _p=$4 _before _mid _after _cc _ma
	_before=$(served "$_s" "$_r")
	nget "$NURL$_p" "$T/$_n.1"
	check_eq "$_n: first GET through nginx: HTTP 200" 200 "$CODE"
	check_eq "$_n: first GET is a MISS at nginx" MISS "$(header "$T/$_n.1.hdr" x-cache-status)"
	_mid=$(served "$_s" "$_r")
	check_eq "$_n: the MISS reached stapled once" $((_before + 1)) "$_mid"
	_cc=$(header "$T/$_n.1.hdr" cache-control)
	_ma=$(printf '%s' "$_cc" | sed -n 's/.*max-age=\([0-9]*\).*/\1/p')
	assert "$_n: Cache-Control public with a max-age > 0 ($_cc)" \
	    '[ "${_ma:-0}" -gt 0 ] && case $_cc in *public*) true ;; *) false ;; esac'
	for h in etag expires last-modified; do
		check "$_n: $h header" [ -n "$(header "$T/$_n.1.hdr" $h)" ]
	done
	nget "$NURL$_p" "$T/$_n.2"
	check_eq "$_n: second GET: HTTP 200" 200 "$CODE"
	check_eq "$_n: second GET is a HIT at nginx" HIT "$(header "$T/$_n.2.hdr" x-cache-status)"
	check "$_n: the HIT serves the same bytes" cmp -s "$T/$_n.1" "$T/$_n.2"
	_after=$(served "$_s" "$_r")
	check_eq "$_n: the HIT never reached stapled" "$_mid" "$_after"
	eval "MAXAGE_$_n=\${_ma:-0}"
}
t_first=$(date +%s)
kind ocsp ocsp_get "$A_URL" "$OCSP_GET"
kind pccs pccs "$B_URL" "$TCB_PATH"
kind kds kds "$A_URL" "$VCEK_PATH?$VCEK_Q"
kind rim rim "$A_URL" "/v1/rim/$RIM_ID"
check "pccs: the body is Intel's TCB info" cmp -s "$IV/tdx_tcb_info.body.json" "$T/pccs.2"
check "kds: the body is AMD's VCEK" cmp -s "$AV/vcek_milan.der" "$T/kds.2"
check "rim: the body is the RIM service's JSON" cmp -s "$T/rim.json" "$T/rim.2"
nu=$(date -d "$(next_update "$T/ocsp.1")" +%s)
assert "ocsp: max-age ($MAXAGE_ocsp) does not reach past nextUpdate ($((nu - t_first)) s left then)" \
    '[ "$MAXAGE_ocsp" -le $((nu - t_first + 1)) ]'
assert "kds: a VCEK is never refreshed: max-age at most 24 h ($MAXAGE_kds)" \
    '[ "$MAXAGE_kds" -gt 0 ] && [ "$MAXAGE_kds" -le 86400 ]'
# TCB info is valid to 2025-06-26 (25 days at the faked clock), refreshed before that.
assert "pccs: max-age capped by the next planned refresh, not the 25 days of validity ($MAXAGE_pccs)" \
    '[ "$MAXAGE_pccs" -lt $((25 * 86400)) ]'

# ---- stapled itself: 304, HEAD, no-store on answers no cache may keep --------------------

for k in pccs:$B_URL:$TCB_PATH kds:$A_URL:/vcek/v1/Milan/cert_chain rim:$A_URL:/v1/rim/$RIM_ID; do
	n=${k%%:*}; rest=${k#*:}; u=${rest%:/*}; p=/${rest##*:/}
	nget "$u$p" "$T/d_$n"
	et=$(header "$T/d_$n.hdr" etag)
	assert "$n: the ETag is the body's SHA-256, quoted ($et)" \
	    '[ "$et" = "\"$(sha256sum "$T/d_$n" | cut -d" " -f1)\"" ]'
	nget "$u$p" "$T/d_$n.304" -H "If-None-Match: \"00\", W/$et"
	check_eq "$n: If-None-Match listing the ETag (weak form, second): 304" 304 "$CODE"
	assert "$n: the 304 has no body, and carries ETag, Cache-Control and Expires" \
	    '! [ -s "$T/d_$n.304" ] && [ "$(header "$T/d_$n.304.hdr" etag)" = "$et" ] &&
	     [ -n "$(header "$T/d_$n.304.hdr" cache-control)" ] && [ -n "$(header "$T/d_$n.304.hdr" expires)" ]'
	nget "$u$p" "$T/d_$n.star" -H "If-None-Match: *"
	check_eq "$n: If-None-Match: * gives 304" 304 "$CODE"
	nget "$u$p" "$T/d_$n.other" -H 'If-None-Match: "0123"'
	check_eq "$n: another ETag gives 200" 200 "$CODE"
	nget "$u$p" "$T/d_$n.head" -I
	check_eq "$n: HEAD: 200" 200 "$CODE"
	check_eq "$n: HEAD carries the same ETag" "$et" "$(header "$T/d_$n.head.hdr" etag)"
	check "$n: HEAD carries Cache-Control" [ -n "$(header "$T/d_$n.head.hdr" cache-control)" ]
done
nget "$A_URL/vcek/v1/Milan/cert_chain" "$T/chain2" -H "If-None-Match: W/\"$(sha256sum "$AV/cert_chain_milan" | cut -d' ' -f1)\""
check_eq "kds: the cert_chain's ETag is the hash of AMD's bytes" 304 "$CODE"

nget "$A_URL/vcek/v1/Turin/cert_chain" "$T/e404"
check_eq "KDS: the vendor's 404 passed on" 404 "$CODE"
check_eq "the vendor's 404: Cache-Control no-store" no-store "$(header "$T/e404.hdr" cache-control)"
nget "$A_URL/vcek/v1/Milan/cert_chain/x" "$T/e400"
check_eq "KDS: a request that is no KDS request: 400" 400 "$CODE"
check_eq "400: Cache-Control no-store" no-store "$(header "$T/e400.hdr" cache-control)"
nget "$A_URL/no/such/thing" "$T/e404b"
check_eq "an unknown path: 404" 404 "$CODE"
check_eq "404: Cache-Control no-store" no-store "$(header "$T/e404b.hdr" cache-control)"
bg_kill "$UR_PID" TERM
nget "$A_URL/v1/rim/NV_GPU_DRIVER_GH100_1.2.3" "$T/e503"
check_eq "an uncached RIM with its upstream gone: 503" 503 "$CODE"
check_eq "503: Cache-Control no-store" no-store "$(header "$T/e503.hdr" cache-control)"
bg_kill "$UK_PID" TERM
b=$(served "$A_URL" kds)
nget "$NURL/vcek/v1/Genoa/cert_chain" "$T/n503"
nget "$NURL/vcek/v1/Genoa/cert_chain" "$T/n503b"
check_eq "kds, vendor gone, through nginx: 503" 503 "$CODE"
check_eq "kds 503 through nginx: not cached (both reached stapled)" $((b + 2)) "$(served "$A_URL" kds)"

# POST is not cached by nginx: each one reaches stapled.
b=$(served "$A_URL" ocsp_post)
for i in 1 2; do
	curl -s -m 20 -o "$T/post$i" -D "$T/post$i.hdr" -H "$CT_REQ" --data-binary @"$T/req.der" "$NURL/ocsp"
done
check_eq "POST through nginx: both reach stapled" $((b + 2)) "$(served "$A_URL" ocsp_post)"
check "POST: no public caching headers" [ -z "$(header "$T/post2.hdr" etag)" ]

# ---- nothing served by nginx past the OCSP answer's nextUpdate ----------------------------

# Until well past the first answer's nextUpdate, every answer nginx serves is valid
# when it arrives, and once the first answer's max-age has run out nginx asks stapled
# again. That can be a second or so before nextUpdate (max-age is rounded down and
# counted from when nginx received it), so the loop looks for a non-HIT from the end
# of max-age on, not only from nextUpdate on: after the one refetch nginx serves HITs
# of the newer answer again.
deadline=$((nu + 8))
n=0; stale=0; again=0
b=$(served "$A_URL" ocsp_get)
while [ "$(date +%s)" -le "$deadline" ]; do
	n=$((n + 1))
	nget "$NURL$OCSP_GET" "$T/loop.der"
	got=$(date +%s)
	lnu=$(date -d "$(next_update "$T/loop.der")" +%s 2>/dev/null || echo 0)
	st=$(header "$T/loop.der.hdr" x-cache-status)
	if [ "$CODE" != 200 ] || [ "$lnu" -lt "$got" ]; then
		stale=$((stale + 1))
		note "answer $n at $got: HTTP $CODE, $st, nextUpdate $lnu"
	fi
	[ "$got" -ge $((t_first + MAXAGE_ocsp)) ] && [ "$st" != HIT ] && again=1
	sleep 3
done
check_eq "$n answers through nginx over $((deadline - nu + 60)) s: none past its nextUpdate" 0 "$stale"
check "once max-age ran out, nginx asked stapled again (EXPIRED or MISS)" [ "$again" = 1 ]
assert "stapled saw nginx come back ($(( $(served "$A_URL" ocsp_get) - b )) GETs)" \
    '[ "$(served "$A_URL" ocsp_get)" -gt "$b" ]'
check "the answer nginx now serves is newer than the first" \
    [ "$(date -d "$(this_update "$T/loop.der")" +%s)" -gt "$(date -d "$(this_update "$T/ocsp.1")" +%s)" ]

bg_kill "$NPID" QUIT
it_done
