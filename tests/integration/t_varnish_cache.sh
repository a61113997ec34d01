#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Varnish in front of stapled, with its built-in VCL (nothing tuned) and with docs/mirror.md's
# recipe: an OCSP GET (RFC 6960 appendix A) is a HIT at Varnish, and with the vendor dead
# neither Varnish serves the one-minute answer past its nextUpdate (no grace: stapled sends
# stale-while-revalidate=0).
. "$top_srcdir/tests/integration/lib.sh"

it_init t_varnish_cache
VARNISHD=$(command -v varnishd || { [ -x /usr/sbin/varnishd ] && echo /usr/sbin/varnishd; }) ||
    skip "varnishd not installed (Debian package varnish)"
need_cmd openssl curl
pki_make

# OCSP answers valid for one minute, the shortest openssl ocsp signs.
farm_start UP ocsp -nmin 1 -rother CHAIN
stapled_start s --ocsp-upstream "http://127.0.0.1:$UP/" --ocsp-anchor "$ANCHORS" \
    --ocsp-intermediates "$INTERMEDIATES"

# ---- two Varnishes: the built-in VCL, and docs/mirror.md's recipe ---------------------

# The recipe docs/mirror.md prints (examples/varnish/stapled.vcl; t_docs
# checks that they are the same), pointed at this stapled.
sed "s/\.port = \"8090\"/.port = \"$SPORT\"/" "$top_srcdir/examples/varnish/stapled.vcl" \
    >"$T/recipe.vcl"
grep -q "^vcl 4" "$T/recipe.vcl" || die "examples/varnish/stapled.vcl is not VCL 4"
grep -q "\"$SPORT\"" "$T/recipe.vcl" || die "the recipe's backend is not 127.0.0.1:8090"

# varnish_start NAME ARGS...: varnishd in the foreground, its work directory under $T;
# VURL_<NAME> once it answers. No jail (-j none): as root, varnishd's jail reads the VCL file
# as its own unprivileged user, which cannot when the checkout sits under a directory only
# root may enter (root's home, a mode-700 temporary directory).
varnish_start() {
	local _n=$1 _p _i
	shift
	_p=$(free_port)
	bg_start "VPID_$_n" "$T/varnish-$_n.log" "$VARNISHD" -F -j none -n "$T/varnish-$_n" \
	    -a "127.0.0.1:$_p" -s malloc,16m "$@"
	_i=0
	until curl -s -o /dev/null -m 2 "http://127.0.0.1:$_p/healthz"; do
		_i=$((_i + 1))
		[ $_i -lt 300 ] || die "varnishd ($_n) did not start: $(cat "$T/varnish-$_n.log")"
		sleep 0.1
	done
	eval "VURL_$_n=http://127.0.0.1:$_p"
}
varnish_start builtin -b "127.0.0.1:$SPORT"
varnish_start recipe -f "$T/recipe.vcl"

# vget URL OUT: GET; CODE set, headers in OUT.hdr.
vget() { CODE=$(curl -s -m 20 -o "$2" -D "$2.hdr" -w '%{http_code}' "$1"); }
served() {
	curl -s -m 5 -o "$T/m.tmp" "$SURL/metrics"
	metric_sum "$T/m.tmp" '^stapled_requests_total\{route="ocsp_get"'
}

mkreq "$T/req.der" "$ICA_CERT" "$LEAF1"
OCSP_GET=/ocsp/$(ocsp_b64 "$T/req.der")

# ---- a MISS, then a HIT that never reaches stapled ------------------------------------

for v in builtin recipe; do
	eval "u=\$VURL_$v"
	b=$(served)
	vget "$u$OCSP_GET" "$T/$v.1"
	check_eq "$v: first OCSP GET through Varnish: HTTP 200" 200 "$CODE"
	check_eq "$v: ... and a good answer" good "$(cert_status "$T/$v.1")"
	check_eq "$v: the first GET reached stapled" $((b + 1)) "$(served)"
	cc=$(header "$T/$v.1.hdr" cache-control)
	assert "$v: Cache-Control forbids serving it stale ($cc)" \
	    'case $cc in *stale-while-revalidate=0*stale-if-error=0*) true ;; *) false ;; esac'
	vget "$u$OCSP_GET" "$T/$v.2"
	check_eq "$v: second GET: HTTP 200" 200 "$CODE"
	check "$v: the second GET serves the same bytes" cmp -s "$T/$v.1" "$T/$v.2"
	check_eq "$v: the second GET is a HIT (stapled not asked)" $((b + 1)) "$(served)"
	assert "$v: Varnish says it was a hit (X-Varnish: two ids)" \
	    '[ "$(header "$T/$v.2.hdr" x-varnish | wc -w)" = 2 ]'
done
nu=$(date -d "$(next_update "$T/builtin.1")" +%s)
[ "$nu" -gt 0 ] || die "no nextUpdate in the first answer"

# ---- the vendor dies; poll both until well past nextUpdate ------------------------------

# stapled keeps answering from its store until nextUpdate, then tryLater (no-store).
# Varnish's default grace (10 s) would serve its copy past max-age, so past nextUpdate.
# No request in the last 3 s before nextUpdate: the first request after the copy's
# max-age then comes after nextUpdate, as when clients are few; one inside grace but
# before nextUpdate would get a valid copy and make Varnish fetch anew.
farm_stop ocsp
deadline=$((nu + 3))
n=0; stale=0; after=0
while [ "$(date +%s)" -le "$deadline" ]; do
	t=$(now_ms)
	if [ "$t" -ge $(((nu - 3) * 1000)) ] && [ "$t" -le $((nu * 1000 + 100)) ]; then
		sleep 0.1
		continue
	fi
	for v in builtin recipe; do
		eval "u=\$VURL_$v"
		n=$((n + 1))
		asked=$(now_ms)
		vget "$u$OCSP_GET" "$T/loop.der"
		[ "$asked" -gt $((nu * 1000)) ] && after=$((after + 1))
		if is_trylater "$T/loop.der"; then continue; fi
		lnu=$(date -d "$(next_update "$T/loop.der")" +%s 2>/dev/null || echo 0)
		if [ "$CODE" != 200 ] || [ "$asked" -gt $((lnu * 1000)) ]; then
			stale=$((stale + 1))
			note "$v: asked at $asked ms: HTTP $CODE, nextUpdate $lnu, Age $(header "$T/loop.der.hdr" age)"
		fi
	done
	sleep 0.5
done
check_eq "$n answers through Varnish, $after asked after nextUpdate: none past its nextUpdate" 0 "$stale"
assert "the loop asked past nextUpdate ($after times)" '[ "$after" -ge 4 ]'
vget "$VURL_builtin$OCSP_GET" "$T/last.der"
check "after nextUpdate with the vendor dead: tryLater" is_trylater "$T/last.der"

bg_kill "$VPID_builtin" TERM
bg_kill "$VPID_recipe" TERM
it_done
