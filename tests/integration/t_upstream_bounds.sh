#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Bounded upstream work (docs/refresh.md): 300 concurrent distinct misses
# hold at most max_upstream_inflight upstream connections and the rest get the
# failure answer within the client budget; a client over client_miss_rate_per_s
# gets the failure answer, counted as result="limited", while another client
# and hits are unaffected; the refresh walk takes at most half the transfers
# while client misses get the rest, the others counted in
# stapled_upstream_queued; X-Forwarded-For names the client only behind a
# trusted proxy; a 1.26 MB RIM envelope is fetched, stored, served and
# exported/imported; stapled -n refuses 17 listen addresses and a FIFO, and
# warns about a map larger than the disk.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_upstream_bounds
need_py
CTL=$top_builddir/staplectl
TD=$VECTORS/attestation-sdk/testdata
GOOD_ID=NV_GPU_DRIVER_GH100_550.144.03
GOOD_XML=$TD/$GOOD_ID.xml
[ -f "$GOOD_XML" ] || die "RIM vectors missing under $TD"
ulimit -n 4096 2>/dev/null || ulimit -n "$(ulimit -Hn)"
[ "$(ulimit -n)" -ge 1024 ] || skip "needs 1024 descriptors (ulimit -n)"

CAP=8
NCLIENTS=300
BUDGET_MS=2000

# envelope OUT ID XML: NVIDIA's RIM service JSON around a document.
envelope() {
	printf '{"id":"%s","rim":"%s","sha256":"%s","rim_format":"CORE_SWID","request_id":"t"}' \
	    "$2" "$(base64 -w0 "$3")" "$(sha256sum "$3" | cut -d' ' -f1)" >"$1"
}

# rim_get ID [curl options...]: HTTP_CODE set, body in $T/body, headers in $T/hdr.
rim_get() {
	local _id=$1; shift
	HTTP_CODE=$(curl -s -m 10 -D "$T/hdr" -o "$T/body" -w '%{http_code}' "$@" \
	    "$SURL/v1/rim/$_id")
}

limited() {
	metrics_get "$T/m"
	metric_sum "$T/m" 'stapled_requests_total\{route="rim",result="limited"\}'
}

cat >"$T/misses.py" <<'PYEOF'
import socket, sys, threading, time
from http1 import read_to_close
from netstat import upstream_conns

def get(host, port, path, timeout, out, i):
    t0 = time.monotonic()
    status = "error"
    try:
        s = socket.create_connection((host, port), timeout=timeout)
        s.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n"
                   % (path, host)).encode())
        buf = b""
        while b"\r\n" not in buf:
            d = s.recv(4096)
            if not d:
                break
            buf += d
        s.close()
        parts = buf.split(b" ", 2)
        if len(parts) >= 2:
            status = parts[1].decode()
    except OSError:
        pass
    out[i] = (status, (time.monotonic() - t0) * 1000)

host, port, uport = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
n, timeout, spid = int(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
out = [None] * n
ts = [threading.Thread(target=get, args=(host, port,
      "/v1/rim/NV_BOUNDS_TEST_%d" % i, timeout, out, i)) for i in range(n)]
for t in ts:
    t.start()
maxconn = 0
while any(t.is_alive() for t in ts):
    maxconn = max(maxconn, upstream_conns(uport, spid))
    time.sleep(0.02)
maxconn = max(maxconn, upstream_conns(uport, spid))
counts = {}
for st, _ in out:
    counts[st] = counts.get(st, 0) + 1
for st in sorted(counts):
    print("status_%s=%d" % (st, counts[st]))
print("maxconn=%d" % maxconn)
print("slowest_ms=%d" % max(ms for _, ms in out))
PYEOF

# ---- 300 concurrent distinct misses against a hanging upstream --------------
upstream_start UHANG hang --mode hang --count-file "$T/hang.count"
cat >"$T/cap.json" <<JSON
{"rim": {"max_upstream_inflight": $CAP, "client_budget_ms": $BUDGET_MS,
  "timeout_ms": 20000, "hedge_ms": 0, "client_miss_rate_per_s": 0}}
JSON
STAPLED_CACHE=$T/c1 stapled_start d1 -f "$T/cap.json" \
    --rim-upstream "http://127.0.0.1:$UHANG"
PYTHONPATH="$top_srcdir/tests/integration" "$PY" "$T/misses.py" 127.0.0.1 "$SPORT" "$UHANG" "$NCLIENTS" 15 "$SPID" >"$T/misses.out" ||
    fail "the client script failed"
note "$(tr '\n' ' ' <"$T/misses.out")"
val() { sed -n "s/^$1=//p" "$T/misses.out"; }
check_eq "every client got 503 (the RIM failure answer)" "$NCLIENTS" \
    "$(val status_503)"
assert "the upstream held at most $CAP connections at once" \
    '[ "$(val maxconn)" -ge 1 ] && [ "$(val maxconn)" -le '"$CAP"' ]'
assert "every client was answered within its budget (2 s, with a wide margin)" \
    '[ "$(val slowest_ms)" -lt $((BUDGET_MS * 4)) ]'
# Queued jobs whose clients left are dropped unasked: only the first CAP
# ever reached the upstream.
sleep 0.5
assert "the upstream saw at most $CAP requests" \
    '[ "$(count_of "$T/hang.count")" -le '"$CAP"' ]'
check "the failure answer says when to come back (Retry-After)" \
    rim_get NV_BOUNDS_TEST_ONE_MORE
check_eq "... Retry-After: 1" 1 "$(header "$T/hdr" Retry-After)"
# Gone first, so that the fetches it holds fail now: SIGTERM lets fetches in
# flight run to their timeout (20 s here) before the daemon exits.
bg_kill "$UHANG_PID"
stapled_stop

# ---- the per-client miss rate ---------------------------------------------
envelope "$T/good.json" "$GOOD_ID" "$GOOD_XML"
upstream_start UGOOD good --mode "file:$T/good.json" --count-file "$T/good.count"
cat >"$T/rate.json" <<JSON
{"rim": {"client_miss_rate_per_s": 0.1, "negative_ttl_s": 0}}
JSON
STAPLED_CACHE=$T/c2 stapled_start d2 -f "$T/rate.json" \
    --rim-upstream "http://127.0.0.1:$UGOOD"
rim_get "$GOOD_ID"
check_eq "rate: the good RIM is a miss, fetched and served" 200 "$HTTP_CODE"
# Other ids: the upstream answers the good envelope, refused (id mismatch).
for i in 1 2 3 4 5 6; do rim_get "NV_RATE_A_$i"; done
n_lim=$(limited)
# 0.1/s: a burst of one token, the next in 10 s (the test takes less)
assert "rate: a client over 0.1/s is limited ($n_lim of 6)" '[ "$n_lim" -ge 5 ]'
check_eq "rate: a limited miss gets the failure answer (503)" 503 "$HTTP_CODE"
assert "rate: the upstream was asked at most twice" \
    '[ "$(count_of "$T/good.count")" -le 2 ]'
rim_get "$GOOD_ID"
check_eq "rate: a hit is never limited" 200 "$HTTP_CODE"
before=$(count_of "$T/good.count"); lim_before=$(limited)
rim_get NV_RATE_B_1 --interface 127.0.0.2
check_eq "rate: another client's miss reaches the upstream" $((before + 1)) \
    "$(count_of "$T/good.count")"
check_eq "rate: ... and is not counted as limited" "$lim_before" "$(limited)"
check "rate: the limit is logged" grep -q "over client_miss_rate_per_s" "$T/d2.log"
# X-Forwarded-For from an untrusted peer changes nothing.
before=$(count_of "$T/good.count")
rim_get NV_RATE_A_7 -H "X-Forwarded-For: 192.0.2.7"
check_eq "xff untrusted: still the limited client (503)" 503 "$HTTP_CODE"
check_eq "xff untrusted: the upstream was not asked" "$before" \
    "$(count_of "$T/good.count")"
stapled_stop

cat >"$T/xff.json" <<JSON
{"trusted_proxies": ["127.0.0.1"],
 "rim": {"client_miss_rate_per_s": 0.1, "negative_ttl_s": 0}}
JSON
STAPLED_CACHE=$T/c3 stapled_start d3 -f "$T/xff.json" \
    --rim-upstream "http://127.0.0.1:$UGOOD"
for i in 1 2 3 4 5 6; do
	rim_get "NV_XFF_A_$i" -H "X-Forwarded-For: 198.51.100.9, 192.0.2.1"
done
assert "xff trusted: the client behind the proxy is limited" '[ "$(limited)" -ge 4 ]'
before=$(count_of "$T/good.count"); lim_before=$(limited)
rim_get NV_XFF_B_1 -H "X-Forwarded-For: 192.0.2.1, 192.0.2.2"
check_eq "xff trusted: another client behind the same proxy reaches the upstream" \
    $((before + 1)) "$(count_of "$T/good.count")"
check_eq "xff trusted: ... not limited" "$lim_before" "$(limited)"
stapled_stop

# ---- a 1.26 MB RIM envelope -----------------------------------------------
# The genuine document, padded with a comment after its root element: XML
# canonicalisation (c14n 1.1 without comments, the document's own
# transform) drops it, so the signature still verifies; only size changes.
{
	cat "$GOOD_XML"
	printf '<!--'
	head -c 930000 /dev/zero | tr '\0' 'p'
	printf -- '-->\n'
} >"$T/big.xml"
envelope "$T/big.json" "$GOOD_ID" "$T/big.xml"
size=$(stat -c %s "$T/big.json")
assert "the big envelope is 1.2 to 1.3 MB ($size)" \
    '[ "$size" -gt 1200000 ] && [ "$size" -lt 1300000 ]'
# canonical XML without comments (Python's C14N 2.0: the same rules for
# comments and for what lies outside the root element)
c14n() {
	"$PY" -c 'import sys, xml.etree.ElementTree as E
sys.stdout.write(E.canonicalize(from_file=sys.argv[1], with_comments=False))' "$1"
}
check "big RIM: canonical without comments, it is the signed document" \
    cmp -s <(c14n "$GOOD_XML") <(c14n "$T/big.xml")
check "big RIM: ... and the padding is really there" \
    [ "$(c14n "$T/big.xml" | wc -c)" -lt 100000 ]
upstream_start UBIG big --mode "file:$T/big.json"
STAPLED_CACHE=$T/c4 stapled_start d4 --rim-upstream "http://127.0.0.1:$UBIG"
rim_get "$GOOD_ID"
check_eq "big RIM: HTTP 200" 200 "$HTTP_CODE"
check "big RIM: the upstream's bytes, unmodified" cmp -s "$T/body" "$T/big.json"
rim_get "$GOOD_ID"
check "big RIM, again from the store" cmp -s "$T/body" "$T/big.json"
stapled_stop
"$CTL" -C "$T/c4" export --out "$T/big.jsonl" >"$T/ctl.out" 2>&1
check_eq "big RIM: staplectl export" 0 "$?"
"$CTL" -C "$T/c5" import "$T/big.jsonl" >"$T/ctl.out" 2>&1
check_eq "big RIM: staplectl import into a fresh cache" 0 "$?"
STAPLED_CACHE=$T/c5 stapled_start d5 --rim-upstream "http://127.0.0.1:1"
rim_get "$GOOD_ID"
check "big RIM: served after import with no upstream" cmp -s "$T/body" "$T/big.json"
stapled_stop

# ---- the refresh walk takes at most half the cap; client misses the rest -------
# 100 stored OCSP entries, all due (libfaketime: four days on) against a
# hanging upstream: the walk holds at most CAP/2 transfers, and CAP+4
# distinct client misses then get the other half, the rest waiting in line
# (stapled_upstream_queued) until their budget runs out.
so=$(libfaketime_so) || so=""
FILL=$top_builddir/tools/bench-fill
if [ -n "$so" ] && [ -x "$FILL" ]; then
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	    -subj /CN=t_upstream_bounds -keyout "$T/ca.key" -out "$T/ca.pem" \
	    -days 2 >/dev/null 2>&1 || die "openssl req"
	for i in $(seq 1 $((CAP + 4))); do
		openssl ocsp -issuer "$T/ca.pem" -serial "$((1000 + i))" \
		    -reqout "$T/half$i.der" >/dev/null 2>&1 || die "openssl ocsp -reqout"
	done
	# Their stored request is a real one: each refresh reaches the upstream.
	"$FILL" "$T/c5" 100 "$T/half1.der" "$T/half1.der" >/dev/null 2>&1 ||
	    die "bench-fill"
	upstream_start UHALF half --mode hang --count-file "$T/half.count"
	cat >"$T/half.json" <<JSON
{"ocsp": {"max_upstream_inflight": $CAP, "client_budget_ms": 3000,
  "timeout_ms": 30000, "hedge_ms": 0, "client_miss_rate_per_s": 0,
  "rate_limit_per_s": 1000}}
JSON
	STAPLED_WRAP=$(faketime_env "+4d") \
	    STAPLED_CACHE=$T/c5 stapled_start d5 -f "$T/half.json" \
	    --ocsp-upstream "http://127.0.0.1:$UHALF/"
	cat >"$T/half.py" <<'PYEOF'
import socket, sys, threading, time
from http1 import read_to_close
from netstat import upstream_conns

port, uport, n, tmp = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
spid = int(sys.argv[5])

def watch(secs):
    m, t0 = 0, time.monotonic()
    while time.monotonic() - t0 < secs:
        m = max(m, upstream_conns(uport, spid))
        time.sleep(0.02)
    return m

def post(i):
    body = open("%s/half%d.der" % (tmp, i), "rb").read()
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(b"POST /ocsp HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                  b"Content-Type: application/ocsp-request\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(body) + body)
        while s.recv(4096):
            pass
        s.close()
    except OSError:
        pass

def queued():
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    for line in read_to_close(s).decode().splitlines():
        if line.startswith('stapled_upstream_queued{service="ocsp"}'):
            return int(line.split()[1])
    return -1

print("refresh_max=%d" % watch(3))
ts = [threading.Thread(target=post, args=(i,)) for i in range(1, n + 1)]
for t in ts:
    t.start()
total = watch(1)
print("queued=%d" % queued())
print("total_max=%d" % max(total, watch(0.5)))
for t in ts:
    t.join()
PYEOF
	PYTHONPATH="$top_srcdir/tests/integration" "$PY" "$T/half.py" "$SPORT" "$UHALF" $((CAP + 4)) "$T" "$SPID" >"$T/half.out" ||
	    fail "the half-cap client script failed"
	note "$(tr '\n' ' ' <"$T/half.out")"
	hval() { sed -n "s/^$1=//p" "$T/half.out"; }
	assert "the refresh walk alone held 1 to $((CAP / 2)) upstream transfers" \
	    '[ "$(hval refresh_max)" -ge 1 ] && [ "$(hval refresh_max)" -le '"$((CAP / 2))"' ]'
	assert "with client misses: the whole cap ($CAP) in use, never more" \
	    '[ "$(hval total_max)" -eq '"$CAP"' ]'
	assert "client misses got at least half the cap" \
	    '[ $(( $(hval total_max) - $(hval refresh_max) )) -ge '"$((CAP / 2))"' ]'
	check_eq "misses past the cap wait in line: stapled_upstream_queued" \
	    $((CAP + 4 - (CAP - $(hval refresh_max)))) "$(hval queued)"
	bg_kill "$UHALF_PID"	# its fetches fail now, not at their timeout
	stapled_stop
	STAPLED_WRAP=
else
	note "SKIP the half-cap check: libfaketime or tools/bench-fill missing"
fi

# ---- stapled -n ----------------------------------------------------------------
args=()
for i in $(seq 1 17); do args+=(--listen "127.0.0.1:$((40000 + i))"); done
"$STAPLED" -n "${args[@]}" --cache-dir "$T/c6" >"$T/n.out" 2>&1
check_eq "-n: 17 listen addresses are refused" 1 "$?"
check "-n: ... saying so" grep -q "listen: 17 addresses, at most 16" "$T/n.out"
mkfifo "$T/fifo.json"
t0=$(now_ms)
timeout 10 "$STAPLED" -n -f "$T/fifo.json" >"$T/n.out" 2>&1
rc=$?
check_eq "-n: a FIFO as config file is refused" 1 "$rc"
assert "-n: ... at once (no writer needed)" '[ $(( $(now_ms) - t0 )) -lt 5000 ]'
check "-n: ... saying why" grep -q "not a regular file" "$T/n.out"
echo '{"map_size_mb": 1000000000}' >"$T/huge.json"
"$STAPLED" -n -f "$T/huge.json" --cache-dir "$T/c7" >"$T/n.out" 2>&1
check_eq "-n: a map larger than the disk is accepted" 0 "$?"
check "-n: ... with a warning" grep -q "warning: map_size_mb 1000000000 is more than" "$T/n.out"

it_done
