#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# TLS listeners: openssl ocsp and curl over https, protocol floor, ALPN, client
# certificates, certificate reload on SIGHUP without dropping connections, the
# handshake under the header deadline, and hits byte-identical to plain HTTP.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_tls
need_cmd python3
export PYTHONPATH=$top_srcdir/tests/integration	# http1.py
pki_make
farm_start UP good -ndays 1 -rother CHAIN

# ---- the TLS PKI of mkpki.sh: one CA, two server certificates, one client ---
TP=$T/tls
cp -r "$PKI/tls" "$TP" || die "the test PKI has no tls/"
cp "$TP/srv1.pem" "$TP/cert.pem"
cp "$TP/srv.key" "$TP/key.pem"

TPORT=$(free_port)
TURL=https://127.0.0.1:$TPORT
cat >"$T/stapled.json" <<EOF
{
  "cache_dir": "$T/cache",
  "header_timeout_s": 2,
  "max_connections": 24,
  $(ocsp_section "$UP")
}
EOF

# ---- 1. -n loads the files and refuses what does not load or match ---------
# conf_with LISTEN_JSON: the configuration above with this "listen".
conf_with() {
	python3 - "$T/stapled.json" "$1" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
c["listen"] = json.loads(sys.argv[2])
print(json.dumps(c))
EOF
}
good_tls="{\"cert\": \"$TP/cert.pem\", \"key\": \"$TP/key.pem\"}"
conf_with "[\"127.0.0.1:1\", {\"addr\": \"127.0.0.1:2\", \"tls\": $good_tls}]" >"$T/n_ok.json"
check "-n: a listen object with cert and key is accepted" \
    "$STAPLED" -n -f "$T/n_ok.json"
conf_with "[{\"addr\": \"127.0.0.1:2\", \"tls\": {\"cert\": \"$TP/cert.pem\", \"key\": \"$TP/other.key\"}}]" >"$T/n_mismatch.json"
"$STAPLED" -n -f "$T/n_mismatch.json" >"$T/n_mismatch.out" 2>&1
rc=$?
check "-n: a key that does not match its certificate is refused" [ $rc -ne 0 ]
check "-n: ... and the message says so" grep -q "does not match" "$T/n_mismatch.out"
conf_with "[{\"addr\": \"127.0.0.1:2\", \"tls\": {\"cert\": \"$TP/absent.pem\", \"key\": \"$TP/key.pem\"}}]" >"$T/n_absent.json"
"$STAPLED" -n -f "$T/n_absent.json" >"$T/n_absent.out" 2>&1
rc=$?
assert "-n: a certificate file that does not load is refused, named" \
    '[ $rc -ne 0 ] && grep -q "absent.pem" "$T/n_absent.out"'
conf_with "[{\"addr\": \"127.0.0.1:2\", \"tls\": {\"cert\": \"$TP/cert.pem\"}}]" >"$T/n_nokey.json"
"$STAPLED" -n -f "$T/n_nokey.json" >"$T/n_nokey.out" 2>&1
check "-n: tls without a key is refused at the key" \
    grep -q 'listen\[0\].tls: missing key "key"' "$T/n_nokey.out"
"$STAPLED" -n -f "$T/stapled.json" --listen-tls 127.0.0.1:2 >"$T/n_flags.out" 2>&1
rc=$?
check "--listen-tls without --tls-cert and --tls-key is refused" [ $rc -ne 0 ]

# ---- 2. a plain and a TLS listener (the flags) --------------------------------
stapled_start d1 -f "$T/stapled.json" --listen-tls "127.0.0.1:$TPORT" \
    --tls-cert "$TP/cert.pem" --tls-key "$TP/key.pem"
PID1=$SPID
check "the log names the TLS listener" grep -q "listening on 127.0.0.1:$TPORT (TLS)" "$T/d1.log"

openssl ocsp -url "$TURL/ocsp" -CAfile "$ANCHORS" -verify_other "$INTERMEDIATES" \
    -validity_period 5 -issuer "$ICA_CERT" -cert "$LEAF1" -respout "$T/miss.der" \
    >"$T/o1.out" 2>&1
rc=$?
check "openssl ocsp -url https://: the miss verifies (exit 0)" [ $rc -eq 0 ]
check "openssl ocsp -url https://: good" grep -q ": good" "$T/o1.out"
openssl ocsp -url "$TURL/ocsp" -CAfile "$ANCHORS" -verify_other "$INTERMEDIATES" \
    -validity_period 5 -issuer "$ICA_CERT" -cert "$LEAF1" -respout "$T/hit_tls.der" \
    >"$T/o2.out" 2>&1
check "openssl ocsp over https: the hit is the stored answer" cmp -s "$T/miss.der" "$T/hit_tls.der"
mkreq "$T/r1.der" "$ICA_CERT" "$LEAF1"
post "$T/r1.der" "$T/hit_plain.der" /ocsp
check_eq "plain POST of the same question: 200" 200 "$HTTP_CODE"
check "a hit over TLS is byte-identical to the plain listener's" \
    cmp -s "$T/hit_plain.der" "$T/hit_tls.der"
check_eq "one upstream request for all of it" 1 "$(upstream_count good)"

b64=$(openssl base64 -A <"$T/r1.der")
curl -s -m 10 --cacert "$TP/ca.pem" -o "$T/get_tls.der" -D "$T/get_tls.hdr" \
    -w '%{http_code}\n' "$TURL/ocsp/$b64" >"$T/get_tls.code"
check_eq "curl GET OCSP over https: 200" 200 "$(cat "$T/get_tls.code")"
curl -s -m 10 -o "$T/get_plain.der" -D "$T/get_plain.hdr" "$SURL/ocsp/$b64"
check "GET over https: the same bytes as over plain HTTP" cmp -s "$T/get_plain.der" "$T/get_tls.der"
check_eq "GET over https: the same ETag as over plain HTTP" \
    "$(header "$T/get_plain.hdr" etag)" "$(header "$T/get_tls.hdr" etag)"
check_eq "curl /healthz over https (verified against the test CA): 200" 200 \
    "$(curl -s -m 10 --cacert "$TP/ca.pem" -o /dev/null -w '%{http_code}' "$TURL/healthz")"
check_eq "two requests on one TLS connection (keep-alive): one connect" "200 1 200 0" \
    "$(curl -s -m 10 --cacert "$TP/ca.pem" -o /dev/null -o /dev/null \
    -w '%{http_code} %{num_connects} ' "$TURL/healthz" "$TURL/healthz" | sed 's/ $//')"

# ---- 3. protocol floor and ALPN -------------------------------------------------
openssl s_client -connect "127.0.0.1:$TPORT" -tls1_2 </dev/null >"$T/s12.out" 2>&1
check "TLS 1.2 is accepted" grep -q "Protocol *: TLSv1.2" "$T/s12.out"
openssl s_client -connect "127.0.0.1:$TPORT" -tls1_1 -cipher 'DEFAULT@SECLEVEL=0' \
    </dev/null >"$T/s11.out" 2>&1
check "TLS 1.1 is refused (protocol version alert)" grep -qi "alert protocol version" "$T/s11.out"
openssl s_client -connect "127.0.0.1:$TPORT" -alpn h2,http/1.1 </dev/null >"$T/alpn.out" 2>&1
check "ALPN h2,http/1.1: http/1.1 is selected" grep -q "ALPN protocol: http/1.1" "$T/alpn.out"
openssl s_client -connect "127.0.0.1:$TPORT" -alpn h2 </dev/null >"$T/alpn2.out" 2>&1
check "ALPN h2 only: the handshake completes without ALPN" \
    grep -q "No ALPN negotiated" "$T/alpn2.out"
check_eq "curl --http2 over TLS falls back to HTTP/1.1" "200 1.1" \
    "$(curl -s -m 10 --http2 --cacert "$TP/ca.pem" -o /dev/null \
    -w '%{http_code} %{http_version}' "$TURL/healthz")"

# ---- 4. a handshake that never completes is closed at the header deadline ----
python3 - "$TPORT" >"$T/stall.out" 2>&1 <<'EOF'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
# The first bytes of a TLS 1.2 ClientHello record, then nothing.
s.sendall(bytes.fromhex("160301020001"))
t0 = time.monotonic()
s.settimeout(30)
try:
    while s.recv(4096):
        pass
except OSError:
    pass
print("closed_after %.1f" % (time.monotonic() - t0))
EOF
secs=$(awk '/closed_after/ { print $2 }' "$T/stall.out")
assert "a stalled handshake is closed at header_timeout_s 2 (after ${secs:-?} s)" \
    'between "${secs:-99}" 1 8'

# ---- 5. the hostile-client limits hold for TLS connections -------------------
cat >"$T/hostile.py" <<'EOF'
import os, socket, ssl, sys, time
import http1
from procstat import status_kb
port, ca, pid = int(sys.argv[2]), sys.argv[3], sys.argv[4]

def nfds():
    return len(os.listdir("/proc/%s/fd" % pid))

def tls(timeout=5):
    ctx = ssl.create_default_context(cafile=ca)
    s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=timeout),
                        server_hostname="127.0.0.1")
    s.settimeout(timeout)
    return s

def get(s):
    a = http1.get(s, "/healthz", "x")
    return None if a is None else a[0]

if sys.argv[1] == "pipeline":
    # Pipelined GET /metrics over TLS, never read: stapled stops reading.
    req = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n" * 120000
    bad = tls(timeout=0.5)
    sent, t0, peak = 0, time.time(), 0
    while sent < len(req) and time.time() - t0 < 4:
        try:
            sent += bad.send(req[sent:sent + 16384])
        except (socket.timeout, ssl.SSLWantWriteError):
            pass
        peak = max(peak, status_kb(pid))
    time.sleep(1)
    t1 = time.time()
    code = get(tls())
    print("sent=%d total=%d peak_rss_kb=%d other=%s other_ms=%d" %
          (sent, len(req), max(peak, status_kb(pid)), code, int((time.time() - t1) * 1000)))
elif sys.argv[1] == "slowread":
    # 400 pipelined GET /metrics, read only after a pause: the answers
    # outgrow the socket buffers, so records wait and are retried as the
    # output buffer grows and moves under them.
    n = 400
    s = tls(timeout=10)
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n" * n)
    time.sleep(1.5)
    buf, read, ok, t0 = b"", 0, 0, time.time()
    while read < n and time.time() - t0 < 30:
        a = http1.read_answer(s, buf)
        if a is None:
            break
        status, _, body, buf = a
        read += 1
        ok += status == 200 and body.startswith(b"# ")
    print("answers=%d of=%d" % (ok, n))
elif sys.argv[1] == "flood":
    # 60 connections that never start their handshake, max_connections 24.
    base = nfds()
    ka = tls()
    before = get(ka)
    raw = [socket.create_connection(("127.0.0.1", port)) for _ in range(60)]
    time.sleep(0.5)
    during = nfds() - base
    during_ka = get(ka)
    t0 = time.time()
    fresh = get(tls(timeout=10))
    print("extra_fds=%d ka_before=%s ka_during=%s fresh=%s fresh_s=%.1f" %
          (during, before, during_ka, fresh, time.time() - t0))
EOF
kv() { printf '%s\n' "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
out=$(timeout 60 python3 "$T/hostile.py" pipeline "$TPORT" "$TP/ca.pem" "$PID1" 2>&1)
note "TLS pipeline: $out"
rss=$(kv peak_rss_kb "$out")
assert "TLS no-read pipeline: stapled stopped reading (sent $(kv sent "$out") of $(kv total "$out"))" \
    '[ -n "$(kv sent "$out")" ] && [ "$(kv sent "$out")" -lt "$(kv total "$out")" ]'
assert "TLS no-read pipeline: RSS stays under 64 MiB (peak ${rss:-?} KiB)" \
    '[ -n "$rss" ] && [ "$rss" -gt 0 ] && [ "$rss" -lt 65536 ]'
check_eq "TLS no-read pipeline: another TLS client is served meanwhile" 200 "$(kv other "$out")"
out=$(timeout 60 python3 "$T/hostile.py" slowread "$TPORT" "$TP/ca.pem" "$PID1" 2>&1)
note "TLS slow reader: $out"
check_eq "TLS: 400 pipelined answers read late arrive whole and in order" 400 "$(kv answers "$out")"
out=$(timeout 60 python3 "$T/hostile.py" flood "$TPORT" "$TP/ca.pem" "$PID1" 2>&1)
note "TLS flood: $out"
assert "max_connections 24 holds for TLS: at most 24 more fds with 60 stalled handshakes ($(kv extra_fds "$out"))" \
    '[ -n "$(kv extra_fds "$out")" ] && [ "$(kv extra_fds "$out")" -le 24 ]'
check_eq "a TLS keep-alive client is served before the flood" 200 "$(kv ka_before "$out")"
check_eq "... and during it" 200 "$(kv ka_during "$out")"
check_eq "a new TLS client is served once the stalled ones reach the header deadline" 200 \
    "$(kv fresh "$out")"

# ---- 6. SIGHUP: a new certificate for new connections, old ones stay ---------
subject_cn() {
	openssl s_client -connect "127.0.0.1:$TPORT" </dev/null 2>/dev/null |
	    sed -n 's/^subject=.*CN *= *//p'
}
check_eq "before the reload the listener shows the first certificate" "stapled one" "$(subject_cn)"
rm -f "$T/go"
python3 - "$TPORT" "$TP/ca.pem" "$T/go" >"$T/ka.out" 2>&1 <<'EOF' &
import os, socket, ssl, sys, time
import http1
port, ca, go = int(sys.argv[1]), sys.argv[2], sys.argv[3]
ctx = ssl.create_default_context(cafile=ca)
s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="127.0.0.1")
s.settimeout(10)
def get():
    a = http1.get(s, "/healthz", "x")
    return None if a is None else a[1].split(b"\r\n")[0].decode()
print("first", get(), flush=True)
for _ in range(300):
    if os.path.exists(go):
        break
    time.sleep(0.1)
cn = dict(x[0] for x in s.getpeercert()["subject"])["commonName"]
print("second", get(), "cn=" + cn, flush=True)
EOF
KA=$!
IT_PIDS="$IT_PIDS $KA"
wait_for_line "$T/ka.out" '^first' >/dev/null || fail "the keep-alive client did not connect"
cp "$TP/srv2.pem" "$TP/cert.pem"
kill -HUP "$PID1"
wait_for_line "$T/d1.log" 'SIGHUP: configuration reloaded' >/dev/null ||
    fail "no reload line after SIGHUP"
check_eq "after the reload a new connection shows the new certificate" "stapled two" "$(subject_cn)"
touch "$T/go"
bg_wait "$KA"
check "the connection opened before the reload still answers (keep-alive)" \
    grep -q "^second HTTP/1.1 200 OK cn=stapled one" "$T/ka.out"

# A reload whose key does not load is refused whole: the old context stays.
echo "not a key" >"$TP/key.pem"
kill -HUP "$PID1"
wait_for_line "$T/d1.log" 'SIGHUP: configuration not reloaded' >/dev/null
check "a failed certificate reload is logged as an error" \
    grep -q "SIGHUP: configuration not reloaded, keeping the old one (and each TLS listener its certificate): listen 127.0.0.1:$TPORT: tls key" "$T/d1.log"
check_eq "... and the listener keeps serving the last good certificate" "stapled two" "$(subject_cn)"
check "the daemon is still up after the failed reload" kill -0 "$PID1"
stapled_stop
cp "$TP/srv.key" "$TP/key.pem"

# ---- 7. client certificates, from the configuration file --------------------
MPORT=$(free_port)
MURL=https://127.0.0.1:$MPORT
PPORT=$(free_port)
conf_with "[\"127.0.0.1:$PPORT\", {\"addr\": \"127.0.0.1:$MPORT\", \"tls\": {\"cert\": \"$TP/cert.pem\", \"key\": \"$TP/key.pem\", \"client_ca\": \"$TP/ca.pem\"}}]" >"$T/mtls.json"
bg_start SPID "$T/d2.log" "$STAPLED" -f "$T/mtls.json"
i=0
while ! curl -s -o /dev/null -m 1 "http://127.0.0.1:$PPORT/healthz" && [ $i -lt 100 ]; do
	sleep 0.1; i=$((i + 1))
done
check "the listen object's TLS listener is up" grep -q "listening on 127.0.0.1:$MPORT (TLS)" "$T/d2.log"
code=$(curl -s -m 10 --cacert "$TP/ca.pem" -o /dev/null -w '%{http_code}' "$MURL/healthz")
check "client_ca: curl without a client certificate is refused (HTTP ${code})" [ "$code" = 000 ]
check_eq "client_ca: curl with a client certificate gets 200" 200 \
    "$(curl -s -m 10 --cacert "$TP/ca.pem" --cert "$TP/cli.pem" --key "$TP/cli.key" \
    -o /dev/null -w '%{http_code}' "$MURL/healthz")"
code=$(curl -s -m 10 --cacert "$TP/ca.pem" --cert "$TP/srv1.pem" --key "$TP/srv.key" \
    -o /dev/null -w '%{http_code}' "$MURL/healthz")
check_eq "client_ca: the server certificate (no clientAuth) is not a client's" 000 "$code"
openssl ocsp -url "$MURL/ocsp" -CAfile "$ANCHORS" -verify_other "$INTERMEDIATES" \
    -validity_period 5 -issuer "$ICA_CERT" -cert "$LEAF1" -respout "$T/m.der" \
    >"$T/o3.out" 2>&1
check "client_ca: openssl ocsp without a client certificate gets no answer" \
    [ ! -s "$T/m.der" ]
stapled_stop

# ---- 8. handshake failures are counted; a close without close_notify is not one -
# A client certificate from a CA that client_ca does not name: the PKI's
# rogue_cli.pem (for cli.key), issued by rogue_ca.pem.
MPORT=$(free_port)
PPORT=$(free_port)
conf_with "[\"127.0.0.1:$PPORT\", {\"addr\": \"127.0.0.1:$MPORT\", \"tls\": {\"cert\": \"$TP/cert.pem\", \"key\": \"$TP/key.pem\", \"client_ca\": \"$TP/ca.pem\"}}]" >"$T/fail.json"
bg_start SPID "$T/d3.log" "$STAPLED" -d -f "$T/fail.json"
i=0
while ! curl -s -o /dev/null -m 1 "http://127.0.0.1:$PPORT/healthz" && [ $i -lt 100 ]; do
	sleep 0.1; i=$((i + 1))
done
SURL=http://127.0.0.1:$PPORT
# hs_failures REASON: the TLS listener's counter for REASON ("" when absent).
hs_failures() {
	metrics_get "$T/hs.prom"
	sed -n "s/^stapled_tls_handshake_failures_total{listener=\"127.0.0.1:$MPORT\",reason=\"$1\"} //p" \
	    "$T/hs.prom"
}
check_eq "handshake failures: the counter is there at 0 before any client" 0 "$(hs_failures plain_http)"

# Clients that are answered, then drop the TCP connection without close_notify.
python3 - "$MPORT" "$TP/ca.pem" "$TP/cli.pem" "$TP/cli.key" >"$T/nonotify.out" 2>&1 <<'PY'
import socket, ssl, sys
import http1
port, ca, cert, key = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
ok = 0
for _ in range(3):
    ctx = ssl.create_default_context(cafile=ca)
    ctx.load_cert_chain(cert, key)
    s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10),
                        server_hostname="127.0.0.1")
    a = http1.get(s, "/healthz", "x")
    ok += a is not None and a[0] == 200
    s.close()    # no unwrap(): the TCP connection ends without close_notify
print("answered=%d" % ok)
PY
check "clients that close without close_notify were answered first" \
    grep -q "answered=3" "$T/nonotify.out"
# openssl s_client, answered, then killed: its pid is $! (the fifo holds its stdin).
mkfifo "$T/sc.in"
openssl s_client -connect "127.0.0.1:$MPORT" -cert "$TP/cli.pem" \
    -key "$TP/cli.key" -CAfile "$TP/ca.pem" -quiet <"$T/sc.in" >"$T/sclient_kill.out" 2>&1 &
SC=$!
IT_PIDS="$IT_PIDS $SC"
exec 7>"$T/sc.in"
printf 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n' >&7
wait_for_line "$T/sclient_kill.out" '^HTTP/1.1 200' >/dev/null ||
    fail "openssl s_client was not answered"
kill -KILL "$SC" 2>/dev/null
wait "$SC" 2>/dev/null
exec 7>&-
sleep 0.5
check_eq "a close without close_notify after the answer: no TLS error in the debug log" "" \
    "$(grep -iE 'tls: .*(error|eof|closed)' "$T/d3.log")"
check_eq "... and it is not counted as a handshake failure" 0 "$(hs_failures closed)"

code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$MPORT/healthz")
check_eq "plain HTTP to the TLS port gets no HTTP answer" 000 "$code"
check_eq "... and counts as reason plain_http" 1 "$(hs_failures plain_http)"
code=$(curl -s -m 10 --cacert "$TP/ca.pem" -o /dev/null -w '%{http_code}' \
    "https://127.0.0.1:$MPORT/healthz")
check_eq "a client without the required certificate gets no HTTP answer" 000 "$code"
check_eq "... and counts as reason no_client_cert" 1 "$(hs_failures no_client_cert)"
code=$(curl -s -m 10 --cacert "$TP/ca.pem" --cert "$TP/rogue_cli.pem" \
    --key "$TP/cli.key" -o /dev/null -w '%{http_code}' "https://127.0.0.1:$MPORT/healthz")
check_eq "a client certificate client_ca did not issue gets no HTTP answer" 000 "$code"
check_eq "... and counts as reason bad_client_cert" 1 "$(hs_failures bad_client_cert)"
openssl s_client -connect "127.0.0.1:$MPORT" -tls1_1 -cipher 'DEFAULT@SECLEVEL=0' \
    </dev/null >/dev/null 2>&1
check_eq "TLS 1.1 counts as reason protocol_version" 1 "$(hs_failures protocol_version)"
# The server's key is EC: a TLS 1.2 client offering only RSA-signed suites.
openssl s_client -connect "127.0.0.1:$MPORT" -tls1_2 -cipher aRSA </dev/null >/dev/null 2>&1
check_eq "no shared cipher counts as reason no_shared_cipher" 1 "$(hs_failures no_shared_cipher)"
check_eq "the answered clients still count nothing as closed" 0 "$(hs_failures closed)"
check "the daemon is up after all of it" kill -0 "$SPID"
stapled_stop

it_done
