#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Hostile clients (the bounded front): a pipeline that never reads, the fd limit
# with 1,000 connections, a header trickle, half-closed clients on a miss and a hit.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_hostile
need_py
export PYTHONPATH=$top_srcdir/tests/integration	# http1.py
pki_make
farm_start UP good -ndays 1 -rother CHAIN

# The clients: stdlib only, 127.0.0.1 only, bounded in time and count.
cat >"$T/client.py" <<'EOF'
import os, resource, select, socket, sys, time
import http1
from procstat import status_kb

def stat_cpu(pid):
    # utime + stime in seconds (fields 14 and 15 of /proc/PID/stat).
    with open("/proc/%s/stat" % pid) as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return (int(rest[11]) + int(rest[12])) / os.sysconf("SC_CLK_TCK")

def connect(port, timeout=5):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.settimeout(timeout)
    return s

def read_answer(s):
    """One HTTP answer (status, body) from s; (None, b"") when it closes first."""
    a = http1.read_answer(s)
    return (None, b"") if a is None else (a[0], a[2])

def get(s, path, keepalive=True):
    s.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\n%s\r\n" %
              (path.encode(), b"" if keepalive else b"Connection: close\r\n"))
    return read_answer(s)[0]

def pipeline(port, pid):
    # 180,000 pipelined GET /metrics (6 MiB) on a connection never read.
    req = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n" * 180000
    bad = connect(port, timeout=0.5)
    sent, t0, peak = 0, time.time(), 0
    while sent < len(req) and time.time() - t0 < 4:
        try:
            sent += bad.send(req[sent:sent + 65536])
        except socket.timeout:
            pass
        peak = max(peak, status_kb(pid))
    for _ in range(20):		# 2 s more for stapled to work on what it took
        peak = max(peak, status_kb(pid))
        time.sleep(0.1)
    t1 = time.time()
    other = connect(port)
    code = get(other, "/healthz")
    ms = int((time.time() - t1) * 1000)
    peak = max(peak, status_kb(pid))
    print("sent=%d peak_rss_kb=%d other=%s other_ms=%d" % (sent, peak, code, ms))

def flood(port, pid, n, window):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < n + 64:
        print("skip=fd-limit")
        return
    resource.setrlimit(resource.RLIMIT_NOFILE, (n + 64, hard))
    ka = connect(port)
    ka0 = get(ka, "/healthz")
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.setblocking(False)
        try:
            s.connect(("127.0.0.1", port))
        except (BlockingIOError, InterruptedError):
            pass
        socks.append(s)
    time.sleep(1)		# let the wave land
    c0, t0 = stat_cpu(pid), time.time()
    time.sleep(window)
    c1, t1 = stat_cpu(pid), time.time()
    ka1 = get(ka, "/healthz")
    for s in socks:
        s.close()
    deadline, fresh = time.time() + 10, None
    while time.time() < deadline:
        try:
            s = connect(port, timeout=2)
            fresh = get(s, "/healthz", keepalive=False)
            s.close()
            if fresh == 200:
                break
        except OSError:
            pass
        time.sleep(0.2)
    ka.close()
    print("cpu_pct=%.1f ka_before=%s ka_during=%s fresh=%s" %
          (100 * (c1 - c0) / (t1 - t0), ka0, ka1, fresh))

def trickle(port, body):
    # Headers (or a body) one byte a second; when does stapled close?
    s = connect(port, timeout=0.2)
    if body:
        s.sendall(b"POST /ocsp HTTP/1.1\r\nHost: x\r\nContent-Type: application/ocsp-request\r\n"
                  b"Content-Length: 100\r\n\r\n")
    else:
        s.sendall(b"GET /healthz HTTP/1.1\r\n")
    t0, got, closed = time.time(), b"", None
    while time.time() - t0 < 12 and closed is None:
        try:
            d = s.recv(4096)
            if not d:
                closed = time.time() - t0
                break
            got += d
        except socket.timeout:
            pass
        except OSError:
            closed = time.time() - t0
            break
        try:
            s.send(b"a" if body else b"X")
        except OSError:
            closed = time.time() - t0
        time.sleep(0.8)
    status = got.split(b" ")[1].decode() if got.startswith(b"HTTP/") else "none"
    print("closed_s=%s status=%s" % ("%.1f" % closed if closed is not None else "open", status))

def idle(port, wait):
    # Keep-alive between requests is not the header deadline.
    s = connect(port)
    a = get(s, "/healthz")
    time.sleep(wait)
    try:
        b = get(s, "/healthz")
    except OSError:
        b = None
    print("first=%s second=%s" % (a, b))

def halfclose(port, reqfile, outfile):
    with open(reqfile, "rb") as f:
        der = f.read()
    s = connect(port, timeout=15)
    s.sendall(b"POST /ocsp HTTP/1.1\r\nHost: x\r\nContent-Type: application/ocsp-request\r\n"
              b"Content-Length: %d\r\n\r\n" % len(der) + der)
    s.shutdown(socket.SHUT_WR)
    try:
        code, body = read_answer(s)
    except OSError:
        code, body = None, b""
    with open(outfile, "wb") as f:
        f.write(body)
    print("code=%s" % code)

cmd = sys.argv[1]
if cmd == "pipeline":
    pipeline(int(sys.argv[2]), sys.argv[3])
elif cmd == "flood":
    flood(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), float(sys.argv[5]))
elif cmd == "trickle":
    trickle(int(sys.argv[2]), sys.argv[3] == "body")
elif cmd == "idle":
    idle(int(sys.argv[2]), float(sys.argv[3]))
elif cmd == "halfclose":
    halfclose(int(sys.argv[2]), sys.argv[3], sys.argv[4])
EOF
client() { timeout 60 "$PY" "$T/client.py" "$@"; }
# kv "KEY" "LINE": the value of KEY=... in a client's output line.
kv() { printf '%s\n' "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"; }

cat >"$T/stapled.json" <<EOF
{
  "header_timeout_s": 2,
  "body_timeout_s": 2,
  "keepalive_timeout_s": 30,
  $(ocsp_section "$UP")
}
EOF
STAPLED_CACHE=$T/c1 stapled_start d1 -f "$T/stapled.json"

# ---- (a) a pipeline that is never read --------------------------------------
out=$(client pipeline "$SPORT" "$SPID")
note "pipeline: $out"
rss=$(kv peak_rss_kb "$out")
assert "no-read pipeline: stapled's RSS stays under 64 MiB (peak ${rss:-?} KiB)" \
    '[ -n "$rss" ] && [ "$rss" -gt 0 ] && [ "$rss" -lt 65536 ]'
check_eq "no-read pipeline: another client is served meanwhile" 200 "$(kv other "$out")"
assert "no-read pipeline: ... promptly ($(kv other_ms "$out") ms)" \
    '[ "$(kv other_ms "$out")" -lt 3000 ]'

# ---- (c) deadlines per phase, not per byte ------------------------------------
out=$(client trickle "$SPORT" headers)
note "header trickle: $out"
cs=$(kv closed_s "$out")
assert "header trickle, a byte a second: closed at header_timeout_s=2 (after $cs s)" \
    '[ "$cs" != open ] && between "$cs" 1.5 6'
check_eq "header trickle: answered 408 before the close" 408 "$(kv status "$out")"
out=$(client trickle "$SPORT" body)
note "body trickle: $out"
cs=$(kv closed_s "$out")
assert "body trickle, a byte a second: closed at body_timeout_s=2 (after $cs s)" \
    '[ "$cs" != open ] && between "$cs" 1.5 6'
out=$(client idle "$SPORT" 3)
check_eq "keep-alive idle 3 s (> header_timeout_s): the next request is served" \
    "first=200 second=200" "$out"

# ---- (d) half-closed clients get their answer ------------------------------------
mkreq "$T/r1.der" "$ICA_CERT" "$LEAF1"
out=$(client halfclose "$SPORT" "$T/r1.der" "$T/half-miss.der")
check_eq "half-closed, miss: HTTP 200" code=200 "$out"
check_eq "half-closed, miss: the genuine answer" successful "$(resp_status "$T/half-miss.der")"
out=$(client halfclose "$SPORT" "$T/r1.der" "$T/half-hit.der")
check_eq "half-closed, hit: HTTP 200" code=200 "$out"
assert "half-closed, hit: the stored bytes" 'cmp -s "$T/half-miss.der" "$T/half-hit.der"'
check_eq "the upstream saw one request (miss, then hit)" 1 "$(upstream_count good)"
stapled_stop
check_eq "SIGTERM: exit 0" 0 "$BG_RC"

# ---- (b) 1,000 connections against ulimit -n 256 -----------------------------------
printf '#!/bin/sh\nulimit -n 256 || exit 99\nexec "$@"\n' >"$T/ulimit256"
chmod +x "$T/ulimit256"
# Twice: max_connections from the fd limit (192), and one above it, so that
# accept() meets EMFILE.
for mc in 0 100000; do
	printf '{ "max_connections": %d, "ocsp": { "upstreams": [ { "url": "http://127.0.0.1:%s/" } ] } }\n' \
	    "$mc" "$UP" >"$T/fd$mc.json"
	STAPLED_WRAP=$T/ulimit256 STAPLED_CACHE=$T/c-fd$mc stapled_start fd$mc -f "$T/fd$mc.json"
	check_eq "max_connections $mc: stapled runs under ulimit -n 256" 256 \
	    "$(awk '/^Max open files/ { print $4 }' "/proc/$SPID/limits")"
	lines0=$(wc -l <"$T/fd$mc.log")
	out=$(client flood "$SPORT" "$SPID" 1000 3)
	note "max_connections $mc, 1,000 connections: $out"
	case $out in skip=*) skip "the test's own fd limit is below 1,100" ;; esac
	lines=$(( $(wc -l <"$T/fd$mc.log") - lines0 ))
	cpu=$(kv cpu_pct "$out")
	assert "max_connections $mc: under 10% of a core over 3 s with 1,000 connections ($cpu%)" \
	    '[ -n "$cpu" ] && lt "$cpu" 10'
	assert "max_connections $mc: under 100 log lines ($lines)" '[ "$lines" -lt 100 ]'
	check_eq "max_connections $mc: the keep-alive client is served before" 200 "$(kv ka_before "$out")"
	check_eq "max_connections $mc: ... and during" 200 "$(kv ka_during "$out")"
	check_eq "max_connections $mc: new clients are served after the connections close" \
	    200 "$(kv fresh "$out")"
	stapled_stop
	check_eq "max_connections $mc: SIGTERM: exit 0" 0 "$BG_RC"
	note "log lines: $(tail -n +$((lines0 + 1)) "$T/fd$mc.log" | grep -v listening | head -3)"
done

it_done
