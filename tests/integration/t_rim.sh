#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The RIM route on real NVIDIA RIM documents: a good one is stored and served (also
# with every upstream gone); a tampered sha256, a mismatched id and a chain that
# does not reach the pinned CoRIM root are refused and never stored.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_rim
TD=$VECTORS/attestation-sdk/testdata
GOOD_ID=NV_GPU_DRIVER_GH100_550.144.03
GOOD_XML=$TD/$GOOD_ID.xml
SWITCH_ID=NV_SWITCH_BIOS_5612_0002_890_9610550001
SWITCH_XML=$TD/switchVBIOSRim_$SWITCH_ID.xml
DEBUG_XML=$TD/incorrect_cert_chain_driver_rim.xml
[ -f "$GOOD_XML" ] && [ -f "$SWITCH_XML" ] && [ -f "$DEBUG_XML" ] ||
    die "RIM vectors missing under $TD"

# envelope OUT ID XML [SHA256]: NVIDIA's RIM service JSON around a document.
envelope() {
	local _sha
	_sha=${4:-$(sha256sum "$3" | cut -d' ' -f1)}
	printf '{"id":"%s","rim":"%s","sha256":"%s","rim_format":"CORE_SWID","request_id":"%s"}' \
	    "$2" "$(base64 -w0 "$3")" "$_sha" "test-$RANDOM" >"$1"
}

# rim_get ID OUT: GET it from stapled; HTTP_CODE set.
rim_get() {
	HTTP_CODE=$(curl -s -m 10 -o "$2" -w '%{http_code}' "$SURL/v1/rim/$1")
}

envelope "$T/good.json" "$GOOD_ID" "$GOOD_XML"
envelope "$T/switch.json" "$SWITCH_ID" "$SWITCH_XML"
envelope "$T/badsha.json" "$GOOD_ID" "$GOOD_XML" \
    "$(printf '%064d' 0)"
envelope "$T/otherid.json" "NV_GPU_DRIVER_GH100_999.99.99" "$GOOD_XML"
envelope "$T/debug.json" "$GOOD_ID" "$DEBUG_XML"

upstream_start UGOOD good --mode "file:$T/good.json" --count-file "$T/good.count"
upstream_start USW switch --mode "file:$T/switch.json"
upstream_start UBADSHA badsha --mode "file:$T/badsha.json"
upstream_start UOTHER otherid --mode "file:$T/otherid.json"
upstream_start UDEBUG debug --mode "file:$T/debug.json"
U404=""; upstream_start U404 notfound --mode status:404 --count-file "$T/404.count"

# ---- a good RIM is verified, stored and served unmodified ---------------------
STAPLED_CACHE=$T/c1 stapled_start d1 --rim-upstream "http://127.0.0.1:$UGOOD"
rim_get "$GOOD_ID" "$T/a1.json"
check_eq "good RIM: HTTP 200" 200 "$HTTP_CODE"
check "good RIM: the upstream's bytes, unmodified" cmp -s "$T/a1.json" "$T/good.json"
rim_get "$GOOD_ID" "$T/a2.json"
check "good RIM, again: same bytes" cmp -s "$T/a2.json" "$T/good.json"
check_eq "good RIM: the second GET is a hit (one upstream request)" 1 \
    "$(count_of "$T/good.count")"
metrics_get "$T/m1"
assert "good RIM: counted as a hit" \
    '[ "$(metric_sum "$T/m1" "stapled_requests_total{route=\"rim\",result=\"hit\"}")" -ge 1 ]'
rim_get "bad%2Fid" "$T/a3.json"
check_eq "an id with a slash is refused before anything else: 400" 400 "$HTTP_CODE"
rim_get "$(printf 'A%.0s' $(seq 1 257))" "$T/a3.json"
check_eq "a 257-character id is refused: 400" 400 "$HTTP_CODE"
check_eq "refused ids never reach the upstream" 1 "$(count_of "$T/good.count")"
stapled_stop

# Served from the store with every upstream gone (a restart, then dead upstream).
STAPLED_CACHE=$T/c1 stapled_start d1b --rim-upstream "http://127.0.0.1:1"
rim_get "$GOOD_ID" "$T/a4.json"
check_eq "upstreams dead, cached RIM: HTTP 200" 200 "$HTTP_CODE"
check "upstreams dead, cached RIM: the stored bytes" cmp -s "$T/a4.json" "$T/good.json"
rim_get "NV_GPU_DRIVER_GH100_1.2.3" "$T/a5.json"
check_eq "upstreams dead, uncached RIM: a quick 503" 503 "$HTTP_CODE"
stapled_stop

# The NVSwitch BIOS RIM (LS10 chain) verifies too.
STAPLED_CACHE=$T/c2 stapled_start d2 --rim-upstream "http://127.0.0.1:$USW"
rim_get "$SWITCH_ID" "$T/s1.json"
check_eq "switch BIOS RIM: HTTP 200" 200 "$HTTP_CODE"
check "switch BIOS RIM: unmodified" cmp -s "$T/s1.json" "$T/switch.json"
stapled_stop

# ---- refused answers: never stored, and the next upstream is tried ------------
for bad in badsha:UBADSHA otherid:UOTHER debug:UDEBUG; do
	name=${bad%%:*}; var=${bad#*:}; port=$(eval echo "\$$var")
	STAPLED_CACHE=$T/c-$name stapled_start "d-$name" --rim-upstream "http://127.0.0.1:$port"
	rim_get "$GOOD_ID" "$T/$name.out"
	check_eq "$name: refused, the client gets 503 (nothing valid)" 503 "$HTTP_CODE"
	metrics_get "$T/$name.m"
	assert "$name: counted as refused" \
	    '[ "$(metric_sum "$T/$name.m" "stapled_rejected_total{kind=\"rim\"}")" -ge 1 ]'
	grep -q "refused an answer" "$T/d-$name.log" ||
	    fail "$name: the refusal is logged"
	stapled_stop
	# Nothing was stored: with the upstream gone it is still a miss.
	STAPLED_CACHE=$T/c-$name stapled_start "d-$name-b" --rim-upstream "http://127.0.0.1:1"
	rim_get "$GOOD_ID" "$T/$name.out2"
	check_eq "$name: nothing was stored" 503 "$HTTP_CODE"
	stapled_stop
done

# A tampered first upstream is skipped in favour of a good second one.
STAPLED_CACHE=$T/c3 stapled_start d3 --rim-upstream "http://127.0.0.1:$UBADSHA" \
    --rim-upstream "http://127.0.0.1:$UGOOD"
rim_get "$GOOD_ID" "$T/f1.json"
check_eq "tampered first, good second: HTTP 200" 200 "$HTTP_CODE"
check "tampered first, good second: the good bytes" cmp -s "$T/f1.json" "$T/good.json"
stapled_stop

# A 404 is an answer about the id: passed on, not retried elsewhere, remembered.
good_before=$(count_of "$T/good.count")
STAPLED_CACHE=$T/c4 stapled_start d4 --rim-upstream "http://127.0.0.1:$U404" \
    --rim-upstream "http://127.0.0.1:$UGOOD"
rim_get "$GOOD_ID" "$T/n1.json"
check_eq "404 from the first upstream: passed on" 404 "$HTTP_CODE"
rim_get "$GOOD_ID" "$T/n2.json"
check_eq "404 again within negative_ttl_s: still 404" 404 "$HTTP_CODE"
check_eq "404: the first upstream was asked once (negative cache)" 1 \
    "$(count_of "$T/404.count")"
check_eq "404: the second upstream was never asked" "$good_before" \
    "$(count_of "$T/good.count")"
stapled_stop

it_done
