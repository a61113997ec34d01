#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Closing without destroying answers, and fields in several lines: a client
# that pipelines 300 hits, a malformed request and 256 KiB more gets all 300
# answers and the 400, plain and over TLS (close_notify first); a request
# sent a byte a segment (a record over TLS) is paced but answered; a
# lingering close still counts toward max_connections and ends at its bound;
# X-Forwarded-For in two lines behind a trusted proxy (and past a second
# trusted proxy) is limited like one line; a repeated Host or Content-Type
# is refused.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_http_close
need_py
export PYTHONPATH=$top_srcdir/tests/integration	# http1.py
TD=$VECTORS/attestation-sdk/testdata
GOOD_ID=NV_GPU_DRIVER_GH100_550.144.03
GOOD_XML=$TD/$GOOD_ID.xml
[ -f "$GOOD_XML" ] || die "RIM vectors missing under $TD"
MAXCONN=4

pki_make
farm_start UP good -ndays 1 -rother CHAIN
printf '{"id":"%s","rim":"%s","sha256":"%s","rim_format":"CORE_SWID","request_id":"t"}' \
    "$GOOD_ID" "$(base64 -w0 "$GOOD_XML")" "$(sha256sum "$GOOD_XML" | cut -d' ' -f1)" \
    >"$T/good.json"
upstream_start URIM rim --mode "file:$T/good.json" --count-file "$T/rim.count"

# The test PKI's TLS server certificate for 127.0.0.1, and its CA for the clients.
TLS_CERT=$PKI/tls/srv1.pem
TLS_KEY=$PKI/tls/srv.key
TLS_CA=$PKI/tls/ca.pem

TPORT=$(free_port)
cat >"$T/stapled.json" <<EOF
{
  "max_connections": $MAXCONN,
  "trusted_proxies": ["127.0.0.1", "10.0.0.0/8"],
  $(ocsp_section "$UP"),
  "rim": { "client_miss_rate_per_s": 0.1, "negative_ttl_s": 0 }
}
EOF
stapled_start d1 -f "$T/stapled.json" --listen-tls "127.0.0.1:$TPORT" \
    --tls-cert "$TLS_CERT" --tls-key "$TLS_KEY" \
    --rim-upstream "http://127.0.0.1:$URIM"

mkreq "$T/r1.der" "$ICA_CERT" "$LEAF1"
post "$T/r1.der" "$T/miss.der" /ocsp
check_eq "the question is a miss, answered 200" 200 "$HTTP_CODE"
HIT=/ocsp/$(openssl base64 -A <"$T/r1.der")
post "$T/r1.der" "$T/hit.der" /ocsp
check_bytes "the same question again is a hit" "$T/miss.der" "$T/hit.der"

# ---- the graceful close, plain and TLS ----------------------------------------
cat >"$T/close.py" <<'EOF'
import select, socket, ssl, sys, time
from http1 import scan_statuses

mode, port, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
NHITS = 300
MORE = 256 * 1024
WAIT_S = 60		# for the whole exchange; it takes well under a second

raw = socket.create_connection(("127.0.0.1", port), timeout=10)
if mode == "tls":
    ctx = ssl.create_default_context(cafile=sys.argv[4])
    s = ctx.wrap_socket(raw, server_hostname="127.0.0.1")
else:
    s = raw
s.setblocking(False)
hit = ("GET %s HTTP/1.1\r\nHost: t\r\n\r\n" % path).encode()
data = memoryview(hit * NHITS + b"GET /healthz HTTP/1.1\r\nHost: t\r\nno colon\r\n\r\n" +
                  b"x" * MORE)
sent, buf, eof, err = 0, bytearray(), False, None
t0 = time.time()
# Send everything while reading whatever comes, then read to the end.
while not (eof and sent == len(data)) and time.time() - t0 < WAIT_S:
    want_w = [s] if sent < len(data) else []
    pending = mode == "tls" and s.pending() > 0
    r, w, _ = select.select([s] if not eof else [], want_w, [], 0 if pending else 1)
    if r or pending:
        try:
            d = s.recv(65536)
            if d:
                buf += d
            else:
                eof = True
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError):
            pass
        except OSError as e:
            err = repr(e)
            break
    if w:
        try:
            sent += s.send(data[sent:sent + 16384])
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError):
            pass
        except OSError as e:
            err = repr(e)	# closed by stapled before it read everything: lost answers
            break
got = scan_statuses(buf)
print("answers=%d hits=%d last=%s eof=%d sent=%d total=%d err=%s" %
      (len(got), got.count(200), got[-1] if got else None, int(eof), sent, len(data), err))
s.close()
EOF
for mode in plain tls; do
	port=$SPORT
	[ $mode = tls ] && port=$TPORT
	timeout 120 "$PY" "$T/close.py" $mode "$port" "$HIT" "$TLS_CA" >"$T/close_$mode.out" 2>&1
	note "$mode: $(cat "$T/close_$mode.out")"
	o=$(cat "$T/close_$mode.out")
	assert "$mode: 300 pipelined hits, a malformed request and 256 KiB more: all 300 answers and the 400" \
	    '[[ "$o" == *"answers=301 hits=300 last=400 "* ]]'
	assert "$mode: ... then stapled's EOF, with nothing reset" \
	    '[[ "$o" == *"eof=1 "* ]] && [[ "$o" == *"err=None"* ]]'
done

# ---- a request a byte at a time is read at a bounded rate, and answered ---------
# Past a few small reads stapled reads such a connection every 20 ms; over
# TLS each byte is a record of its own, and every record that came in
# between is taken at once (1,100 records one by one every 20 ms would
# pass body_timeout_s, 10 s, and get 408).
cat >"$T/trickle.py" <<'EOF'
import socket, ssl, sys, time
mode, port = sys.argv[1], int(sys.argv[2])
raw = socket.create_connection(("127.0.0.1", port), timeout=30)
raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
if mode == "tls":
    s = ssl.create_default_context(cafile=sys.argv[3]).wrap_socket(raw, server_hostname="127.0.0.1")
else:
    s = raw
body = b"b" * 1024
req = b"POST /healthz HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n" % len(body) + body
t0 = time.time()
for i in range(len(req)):
    s.sendall(req[i:i + 1])	# one segment, and over TLS one record, each
    time.sleep(0.001)
a = s.recv(4096)
print("status=%s ms=%d" % (a.split(b" ")[1].decode() if a else "none",
      int((time.time() - t0) * 1000)))
EOF
for mode in plain tls; do
	port=$SPORT
	[ $mode = tls ] && port=$TPORT
	o=$(timeout 60 "$PY" "$T/trickle.py" $mode "$port" "$TLS_CA" 2>&1)
	note "$mode trickle: $o"
	assert "$mode: a POST sent a byte a segment is read to its end and answered (405)" \
	    '[[ "$o" == "status=405 "* ]]'
done

# ---- a lingering connection still counts, and ends at its bound --------------
cat >"$T/budget.py" <<'EOF'
import socket, sys, time
from http1 import read_to_close
port, n = int(sys.argv[1]), int(sys.argv[2])
held = []
for i in range(n):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\nno colon\r\n\r\n")
    buf = read_to_close(s)
    held.append((s, buf.startswith(b"HTTP/1.1 400 ")))	# kept open: stapled lingers
t0 = time.time()
c = socket.create_connection(("127.0.0.1", port), timeout=30)
c.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
a = c.recv(4096)
ms = int((time.time() - t0) * 1000)
print("refused=%d answered=%d after_ms=%d" % (sum(ok for _, ok in held),
      int(a.startswith(b"HTTP/1.1 200 ")), ms))
EOF
timeout 60 "$PY" "$T/budget.py" "$SPORT" "$MAXCONN" >"$T/budget.out" 2>&1
note "$(cat "$T/budget.out")"
val() { sed -n "s/.*$1=\([0-9]*\).*/\1/p" "$T/budget.out"; }
check_eq "$MAXCONN clients refused (400) that keep their side open" "$MAXCONN" "$(val refused)"
check_eq "the next client is answered once the lingering ones end" 1 "$(val answered)"
# Lingering for HTTP_LINGER_MS (2 s): not before 1.5 s (the slots were
# taken), well within 20 s (they ended at their bound).
assert "... after the 2 s linger (after $(val after_ms) ms)" \
    'between "$(val after_ms)" 1500 20000'

# ---- fields in several lines ----------------------------------------------------
# rim_get ID [curl options...]: HTTP_CODE set.
rim_get() {
	local _id=$1; shift
	HTTP_CODE=$(curl -s -m 10 -o /dev/null -w '%{http_code}' "$@" "$SURL/v1/rim/$_id")
}
limited() {
	metrics_get "$T/m"
	metric_sum "$T/m" 'stapled_requests_total\{route="rim",result="limited"\}'
}
# The proxy (127.0.0.1) adds its own line after the client's forged one;
# each forged address is used once, so only the real client can be limited.
lim0=$(limited)
for i in 1 2 3 4 5 6; do
	rim_get "NV_XFF_A_$i" -H "X-Forwarded-For: 203.0.113.$i" -H "X-Forwarded-For: 192.0.2.1"
done
n=$(( $(limited) - lim0 ))
assert "xff in two lines: the client on the proxy's line is limited ($n of 6)" '[ "$n" -ge 4 ]'
lim0=$(limited)
for i in 1 2 3 4 5 6; do
	rim_get "NV_XFF_B_$i" -H "X-Forwarded-For: 203.0.113.$i, 192.0.2.2"
done
n=$(( $(limited) - lim0 ))
assert "xff in one line: the same hops, limited alike ($n of 6)" '[ "$n" -ge 4 ]'
# Behind two trusted proxies: the walk goes past 10.1.1.1 to 192.0.2.4.
lim0=$(limited)
for i in 1 2 3 4 5 6; do
	rim_get "NV_XFF_C_$i" -H "X-Forwarded-For: 198.51.100.$i" \
	    -H "X-Forwarded-For: 192.0.2.4" -H "X-Forwarded-For: 10.1.1.$i"
done
n=$(( $(limited) - lim0 ))
assert "xff past a second trusted proxy: the client before it is limited ($n of 6)" '[ "$n" -ge 4 ]'
before=$(count_of "$T/rim.count"); lim0=$(limited)
rim_get NV_XFF_D_1 -H "X-Forwarded-For: 192.0.2.1" -H "X-Forwarded-For: 192.0.2.3"
check_eq "xff: another client behind the same proxy reaches the upstream" \
    $((before + 1)) "$(count_of "$T/rim.count")"
check_eq "xff: ... not limited" "$lim0" "$(limited)"

# curl sends one Host only: the raw bytes, and the status line back.
code=$(timeout 20 "$PY" -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(b"GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n")
print(s.recv(4096).split(b" ")[1].decode())' "$SPORT")
check_eq "two Host lines: 400" 400 "$code"
code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' --data-binary "@$T/r1.der" \
    -H "$CT_REQ" -H "Content-Type: text/plain" "$SURL/ocsp")
check_eq "two Content-Type lines: 400" 400 "$code"
kill -0 "$SPID" || fail "stapled is still running"

it_done
