#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# libcurl is opened at run time: without it stapled still starts, serves its store,
# answers a miss as if every upstream failed, and says why in its log.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_curl_missing
need_cmd unshare mount ldd
[ "$(id -u)" = 0 ] || skip "hiding libcurl needs a mount namespace (root)"
# staplectl links libcurl: where the loader finds it on this system.
LIBCURL=$(ldd "$top_builddir/staplectl" | awk '$1 ~ /^libcurl\.so\.4/ { print $3 }')
[ -n "$LIBCURL" ] && LIBCURL=$(readlink -f "$LIBCURL")
[ -f "$LIBCURL" ] || skip "libcurl.so.4 not found through staplectl"
unshare -m true 2>/dev/null || skip "unshare -m is not permitted here"
pki_make

farm_start UP good -ndays 1 -rother CHAIN
TRUST="--ocsp-anchor $ANCHORS --ocsp-intermediates $INTERMEDIATES"

# ---- with libcurl: one answer fetched and stored ------------------------------
stapled_start with --ocsp-upstream "http://127.0.0.1:$UP/" $TRUST
mkreq "$T/r1.der" "$ICA_CERT" "$LEAF1"
post "$T/r1.der" "$T/miss.der"
check_eq "with libcurl: the miss is fetched (HTTP 200, successful)" "200 successful" \
    "$HTTP_CODE $(resp_status "$T/miss.der")"
stapled_stop

# ---- without: the library's file is /dev/null in stapled's mount namespace ----
# unshare(1) makes the namespace's mounts private, so the host keeps its libcurl.
cat >"$T/hide-curl.sh" <<'EOF'
#!/bin/sh
lib=$1; shift
mount --bind /dev/null "$lib" || exit 99
exec "$@"
EOF
chmod +x "$T/hide-curl.sh"
STAPLED_WRAP="unshare -m $T/hide-curl.sh $LIBCURL" \
    stapled_start without --ocsp-upstream "http://127.0.0.1:$UP/" $TRUST
check "without libcurl: stapled comes up and says why it has no upstream" \
    wait_for_line "$T/without.log" "error: fetch: cannot load libcurl \\(.*libcurl\\.so\\.4.*\\): every upstream transfer fails until it is installed"
check_eq "without libcurl: /readyz is 200" 200 \
    "$(curl -s -o /dev/null -w '%{http_code}' -m 5 "$SURL/readyz")"

post "$T/r1.der" "$T/hit.der"
check_bytes "without libcurl: the stored answer is served" "$T/miss.der" "$T/hit.der"

before=$(upstream_count good)
mkreq "$T/r2.der" "$ICA_CERT" "$LEAF2"
post "$T/r2.der" "$T/r2.out.der"
check_trylater "without libcurl: a miss answers tryLater at once" "$T/r2.out.der"
check_eq "without libcurl: no request reached the upstream" "$before" "$(upstream_count good)"
check "without libcurl: the failure names the cause" \
    wait_for_line "$T/without.log" "every upstream failed.*libcurl is not loaded"
check_eq "without libcurl: the load failure is logged once" 1 \
    "$(grep -c 'cannot load libcurl' "$T/without.log")"
metrics_get "$T/m"
check "without libcurl: stapled_build_info says libcurl=\"unavailable\"" \
    grep -q 'libcurl="unavailable"' "$T/m"
stapled_stop
check_eq "without libcurl: SIGTERM stops it cleanly (exit 0)" 0 "$BG_RC"

it_done
