#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The strict HTTP/1.1 parser, whole process over raw sockets: each refusal gets
# its status and a close, smuggled second requests are never answered, bare LF
# is a line end, GET outside the OCSP paths is 404, 100 Continue keeps its
# place; the limits and statuses stapled(8) states (16 CertIDs, 64 header
# lines, 414, 431, 411, 405 with Allow, OPTIONS * and CONNECT); then a
# differential run of a corpus against python3-h11's verdicts.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_http_strict
need_py
export PYTHONPATH=$top_srcdir/tests/integration	# http1.py

# No client request here reaches an upstream; the one configured is a closed port.
DEAD=$(dead_port 1)
cat >"$T/stapled.json" <<EOF
{
  "header_timeout_s": 5,
  "ocsp": { "upstreams": [ { "url": "http://127.0.0.1:$DEAD/", "name": "none" } ] }
}
EOF
stapled_start d1 -f "$T/stapled.json"

cat >"$T/client.py" <<'EOF'
import socket, sys, time
from http1 import scan_statuses

PORT = int(sys.argv[2])
WAIT_S = 3		# per exchange; every case here is answered (or closed) at once
REFUSED = (400, 411, 413, 414, 431, 501, 505)	# the parser's own refusals
fails = 0

def say(ok, what):
    global fails
    print("%s - %s" % ("ok" if ok else "FAIL", what))
    fails += 0 if ok else 1

def exchange(data, half_close=True, after=None, until_close=True):
    """Send data (then shut our side, if half_close); the answers as
    [(status, body)] and whether stapled closed the connection within
    WAIT_S (read until then, or until_close is false and an answer is whole)."""
    buf, closed = exchange_raw(data, half_close, after, until_close)
    return answers(buf), closed

def exchange_raw(data, half_close=True, after=None, until_close=True):
    """exchange's bytes as they came, and whether stapled closed."""
    s = socket.create_connection(("127.0.0.1", PORT), timeout=WAIT_S)
    s.sendall(data)
    if after is not None:
        time.sleep(0.3)
        s.sendall(after)
    if half_close:
        s.shutdown(socket.SHUT_WR)
    buf, closed, t0 = b"", False, time.time()
    while time.time() - t0 < WAIT_S:
        try:
            d = s.recv(65536)
        except (socket.timeout, ConnectionResetError):
            break
        if not d:
            closed = True
            break
        buf += d
        if not until_close and complete(buf):
            break
    s.close()
    return buf, closed

def answers(buf):
    out = []
    while b"\r\n\r\n" in buf:
        head, buf = buf.split(b"\r\n\r\n", 1)
        lines = head.split(b"\r\n")
        status = int(lines[0].split()[1])
        clen = 0
        for l in lines[1:]:
            k, _, v = l.partition(b":")
            if k.strip().lower() == b"content-length":
                clen = int(v.strip())
        out.append((status, buf[:clen]))
        buf = buf[clen:]
    return out

def complete(buf):
    a = answers(buf)
    return len(a) > 0 and a[-1][0] != 100

def statuses(data, **kw):
    a, closed = exchange(data, **kw)
    return [st for st, _ in a], closed, a

H = b"Host: x\r\n"
SMUGGLED = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"

def cases():
    # (name, bytes, expected statuses in order, must the connection close)
    n = len(SMUGGLED)
    return [
        ("CL and TE", b"POST /healthz HTTP/1.1\r\n" + H + b"Content-Length: %d\r\n"
         b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n" % (n + 5) + SMUGGLED, [400], True),
        ("'Content-Length : N' (space before the colon)", b"POST /healthz HTTP/1.1\r\n" + H +
         b"Content-Length : %d\r\n\r\n" % n + SMUGGLED, [400], True),
        ("'Transfer-Encoding : chunked'", b"POST /healthz HTTP/1.1\r\n" + H +
         b"Transfer-Encoding : chunked\r\n\r\n" + SMUGGLED, [400], True),
        ("Transfer-Encoding: chunked alone (not implemented)", b"POST /healthz HTTP/1.1\r\n" + H +
         b"Transfer-Encoding: chunked\r\n\r\n%x\r\n" % n + SMUGGLED + b"\r\n0\r\n\r\n", [501], True),
        ("two different Content-Lengths", b"POST /healthz HTTP/1.1\r\n" + H +
         b"Content-Length: 0\r\nContent-Length: %d\r\n\r\n" % n + SMUGGLED, [400], True),
        ("NUL in a header line", b"GET /healthz HTTP/1.1\r\n" + H + b"X: a\0b\r\n"
         b"Content-Length: %d\r\n\r\n" % n + SMUGGLED, [400], True),
        ("a control byte in a header value", b"GET /healthz HTTP/1.1\r\n" + H +
         b"X: a\x01b\r\n\r\n" + SMUGGLED, [400], True),
        ("obs-fold hiding a Content-Length", b"POST /healthz HTTP/1.1\r\n" + H +
         b"X: a\r\n Content-Length: %d\r\n\r\n" % n + SMUGGLED, [400], True),
        ("a lone CR", b"GET /healthz HTTP/1.1\r\n" + H + b"X: a\rContent-Length: 5\r\n\r\n"
         + SMUGGLED, [400], True),
        ("HTTP/1.1 without Host", b"GET /healthz HTTP/1.1\r\n\r\n" + SMUGGLED, [400], True),
        ("HTTP/1.1 with two Hosts", b"GET /healthz HTTP/1.1\r\n" + H + H + b"\r\n", [400], True),
        ("HTTP/1.0 without Host", b"GET /healthz HTTP/1.0\r\n\r\n", [200], True),
        ("HTTP/2.0 on the HTTP/1 port", b"GET /healthz HTTP/2.0\r\n" + H + b"\r\n", [505], True),
        ("a body that looks like a request is a body", b"POST /healthz HTTP/1.1\r\n" + H +
         b"Content-Length: %d\r\n\r\n" % n + SMUGGLED + b"GET /healthz HTTP/1.1\r\n" + H + b"\r\n",
         [405, 200], True),
        ("bare LF line ends", b"GET /healthz HTTP/1.1\n" + H.replace(b"\r", b"") + b"\n", [200], True),
        ("CRLF and bare LF mixed", b"GET /healthz HTTP/1.1\r\nHost: x\n\r\n", [200], True),
        ("absolute-form target", b"GET http://x/healthz HTTP/1.1\r\n" + H + b"\r\n", [200], True),
        ("GET /health is no OCSP request", b"GET /health HTTP/1.1\r\n" + H + b"\r\n", [404], True),
        ("GET /ready", b"GET /ready HTTP/1.1\r\n" + H + b"\r\n", [404], True),
        ("GET /status", b"GET /status HTTP/1.1\r\n" + H + b"\r\n", [404], True),
        ("GET /healthz/ (ops endpoints match exactly)", b"GET /healthz/ HTTP/1.1\r\n" + H + b"\r\n",
         [404], True),
        ("GET /metrics/x", b"GET /metrics/x HTTP/1.1\r\n" + H + b"\r\n", [404], True),
        ("GET /favicon.ico", b"GET /favicon.ico HTTP/1.1\r\n" + H + b"\r\n", [404], True),
        ("GET /ocsp/ of base64 garbage: malformedRequest", b"GET /ocsp/aGVsbG8gd29ybGQ= HTTP/1.1\r\n"
         + H + b"\r\n", [200], True),
        ("GET at the root of base64 DER, not OCSP: malformedRequest",
         b"GET /MAMCAQE%3D HTTP/1.1\r\n" + H + b"\r\n", [200], True),
        ("head over 8 KiB", b"GET /healthz HTTP/1.1\r\n" + H + b"X: " + b"a" * 9000 + b"\r\n\r\n",
         [431], True),
    ]

def run_cases():
    for name, data, want, must_close in cases():
        got, closed, a = statuses(data, half_close=(want[-1] not in REFUSED))
        say(got == want, "%s: %s (got %s)" % (name, want, got))
        if want[-1] in REFUSED:
            say(closed, "%s: the connection is closed" % name)
        say(all(b"stapled_" not in body for _, body in a),
            "%s: no smuggled /metrics answered" % name)
    malformed = b"\x30\x03\x0a\x01\x01"
    got, _, a = statuses(b"GET /ocsp/aGVsbG8gd29ybGQ= HTTP/1.1\r\n" + H + b"\r\n")
    say(a and a[0][1] == malformed, "GET /ocsp/{garbage}: the body is malformedRequest")

# ---- the limits and statuses stapled(8) states ------------------------------
def first_head(buf):
    """The first answer's status and its header fields ({lower-case name: value})."""
    lines = buf.split(b"\r\n\r\n", 1)[0].split(b"\r\n")
    fields = {}
    for l in lines[1:]:
        k, _, v = l.partition(b":")
        fields[k.strip().lower().decode()] = v.strip().decode()
    return (int(lines[0].split()[1]) if lines[0] else None), fields

def der(tag, body):
    n = len(body)
    ln = bytes([n]) if n < 0x80 else (b"\x81" + bytes([n]) if n < 0x100 else b"\x82" + n.to_bytes(2, "big"))
    return bytes([tag]) + ln + body

def ocsp_request(n):
    """An OCSP request of n SHA-1 CertIDs (RFC 6960 4.1.1), serials 1..n."""
    alg = der(0x30, der(0x06, bytes.fromhex("2b0e03021a")) + b"\x05\x00")
    reqs = b"".join(der(0x30, der(0x30, alg + der(0x04, b"\x11" * 20) + der(0x04, b"\x22" * 20) +
                                  der(0x02, bytes([i])))) for i in range(1, n + 1))
    return der(0x30, der(0x30, der(0x30, reqs)))

MALFORMED = b"\x30\x03\x0a\x01\x01"
TRYLATER = b"\x30\x03\x0a\x01\x03"

def post_ocsp(body):
    return (b"POST /ocsp HTTP/1.1\r\n" + H + b"Content-Type: application/ocsp-request\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body) + body)

def limit_cases():
    # (name, bytes, status, Allow or None, must the connection close, body or None)
    fields = lambda k: b"".join(b"X-%d: v\r\n" % i for i in range(k))
    g = b"GET /healthz HTTP/1.1\r\n" + H
    return [
        ("16 CertIDs in one request: served (tryLater, the upstream is dead)",
         post_ocsp(ocsp_request(16)), 200, None, False, TRYLATER),
        ("17 CertIDs: malformedRequest", post_ocsp(ocsp_request(17)), 200, None, False, MALFORMED),
        ("64 header lines (Host and 63)", g + fields(63) + b"\r\n", 200, None, False, None),
        ("65 header lines: 431", g + fields(64) + b"\r\n", 431, None, True, None),
        ("a head over 8 KiB in its fields: 431", g + b"X: " + b"a" * 8200 + b"\r\n\r\n",
         431, None, True, None),
        ("a request line over 8 KiB: 414", b"GET /ocsp/" + b"A" * 8200 + b" HTTP/1.1\r\n" + H +
         b"\r\n", 414, None, True, None),
        ("a POST without Content-Length: 411", b"POST /ocsp HTTP/1.1\r\n" + H +
         b"Content-Type: application/ocsp-request\r\n\r\n", 411, None, True, None),
        ("a POST of Content-Length 0: malformedRequest", post_ocsp(b""), 200, None, False, MALFORMED),
        ("PUT /ocsp: 405", b"PUT /ocsp HTTP/1.1\r\n" + H + b"Content-Length: 0\r\n\r\n",
         405, "GET, HEAD, POST", False, None),
        ("OPTIONS /ocsp: 405", b"OPTIONS /ocsp HTTP/1.1\r\n" + H + b"\r\n",
         405, "GET, HEAD, POST", False, None),
        ("POST /healthz: 405", b"POST /healthz HTTP/1.1\r\n" + H + b"Content-Length: 0\r\n\r\n",
         405, "GET, HEAD", False, None),
        ("OPTIONS *: 405, then a close", b"OPTIONS * HTTP/1.1\r\n" + H + b"\r\n" + SMUGGLED,
         405, "GET, HEAD, POST", True, None),
        ("CONNECT host:port: 405, then a close (never a tunnel)", b"CONNECT 127.0.0.1:%d HTTP/1.1\r\n"
         b"Host: 127.0.0.1:%d\r\n\r\n" % (PORT, PORT) + SMUGGLED, 405, "GET, HEAD, POST", True, None),
        ("GET *: 400", b"GET * HTTP/1.1\r\n" + H + b"\r\n", 400, None, True, None),
    ]

def run_limits():
    for name, data, want, allow, must_close, body in limit_cases():
        # Not half-closed where a close is checked: the close must be stapled's own.
        buf, closed = exchange_raw(data, half_close=not must_close)
        st, f = first_head(buf)
        a = answers(buf)
        say(st == want, "%s (got %s)" % (name, st))
        if allow is not None:
            say(f.get("allow") == allow, "%s: Allow: %s (got %s)" % (name, allow, f.get("allow")))
        if must_close:
            say(closed and len(a) == 1, "%s: the connection is closed, nothing after it answered "
                "(closed %s, %d answers)" % (name, closed, len(a)))
        if body is not None:
            say(len(a) > 0 and a[0][1] == body, "%s: the body is %s (got %s)" %
                (name, body.hex(), a[0][1].hex() if a else None))

def run_bare_lf():
    # Not half-closed: a bare-LF request must be answered at once, not at a timeout.
    t0 = time.time()
    got, closed, _ = statuses(b"GET /healthz HTTP/1.1\nHost: x\n\n", half_close=False,
                              until_close=False)
    ms = int((time.time() - t0) * 1000)
    say(got == [200] and ms < 2000, "bare LF, connection kept open: answered (%s in %d ms)" % (got, ms))

# Connection is a list of tokens (RFC 9110 7.6.1): any case, OWS, several fields.
def conn_cases():
    g = b"GET /healthz HTTP/1.1\r\nHost: x\r\n"
    return [
        # (name, the first request, does stapled close after answering it)
        ("Connection: keep-alive, close", g + b"Connection: keep-alive, close\r\n\r\n", True),
        ("Connection: Close", g + b"Connection: Close\r\n\r\n", True),
        ("Connection: ' \\t close \\t' (OWS)", g + b"Connection: \t close \t\r\n\r\n", True),
        ("Connection: TE,close", g + b"Connection: TE,close\r\n\r\n", True),
        ("two Connection fields, the second close", g + b"Connection: TE\r\nConnection: close\r\n\r\n", True),
        ("Connection: closed (not the close token)", g + b"Connection: closed\r\n\r\n", False),
        ("HTTP/1.1 Connection: keep-alive", g + b"Connection: keep-alive\r\n\r\n", False),
        ("HTTP/1.1, no Connection", g + b"\r\n", False),
        ("HTTP/1.0 Connection: keep-alive", b"GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", False),
        ("HTTP/1.0 Connection: TE, Keep-Alive", b"GET /healthz HTTP/1.0\r\nConnection: TE, Keep-Alive\r\n\r\n", False),
        ("HTTP/1.0, no Connection", b"GET /healthz HTTP/1.0\r\n\r\n", True),
        ("HTTP/1.0 Connection: keep-alive, close", b"GET /healthz HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n", True),
    ]

def closes_after(first):
    """Send first, wait for its answer, then a second request: whether the
    connection was closed (EOF or reset) instead of the second being answered."""
    s = socket.create_connection(("127.0.0.1", PORT), timeout=WAIT_S)
    s.sendall(first)
    buf, t0 = b"", time.time()
    while not complete(buf) and time.time() - t0 < WAIT_S:
        d = s.recv(65536)
        if not d:
            break
        buf += d
    n = len(answers(buf))
    try:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        while time.time() - t0 < 2 * WAIT_S:
            d = s.recv(65536)
            if not d:
                break
            buf += d
    except (socket.timeout, ConnectionResetError, BrokenPipeError):
        pass
    s.close()
    return n, len(answers(buf)) == n

def run_connection():
    for name, first, want_close in conn_cases():
        n, closed = closes_after(first)
        say(n == 1 and closed == want_close, "%s: answered, then %s (got %d answer(s), %s)" %
            (name, "closed" if want_close else "kept open", n, "closed" if closed else "kept open"))

def recv_until(s, buf, mark, deadline, pause=0):
    while time.time() < deadline and (mark is None or buf.find(mark, max(0, len(buf) - 65600)) < 0):
        time.sleep(pause)
        try:
            d = s.recv(65536)
        except socket.timeout:
            break
        if not d:
            break
        buf += d
    return buf

def run_continue():
    # The client reads nothing at first and has a small receive buffer: the
    # answers to k pipelined GET /metrics (6 MiB, more than the kernel's
    # socket buffers take: tcp_wmem's 4 MiB) fill the socket and wait in
    # stapled's output; then a POST asking 100-continue. 100 must come after
    # every queued answer and before the body is sent, then the POST's 405.
    # (Written past the queue, it would come early, or be lost to EAGAIN.)
    _, _, a = statuses(b"GET /metrics HTTP/1.1\r\n" + H + b"\r\n")
    k = 6 * 1024 * 1024 // max(1, len(a[0][1]) if a else 1) + 1
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
    s.settimeout(WAIT_S)
    s.connect(("127.0.0.1", PORT))
    s.sendall((b"GET /metrics HTTP/1.1\r\n" + H + b"\r\n") * k +
              b"POST /healthz HTTP/1.1\r\n" + H +
              b"Expect: 100-continue\r\nContent-Length: 5\r\n\r\n")
    time.sleep(0.5)
    # Then read, but slower than stapled answers: its socket stays full and
    # the answers to the last GETs still wait in its output when it reads
    # the POST.
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    t0 = time.time()
    buf = recv_until(s, b"", b"HTTP/1.1 100 Continue\r\n", t0 + 4 * WAIT_S, 0.002)
    first = scan_statuses(buf)
    s.sendall(b"hello")
    s.shutdown(socket.SHUT_WR)
    got = scan_statuses(recv_until(s, buf, None, t0 + 5 * WAIT_S))
    s.close()
    say(first == [200] * k + [100], "100 Continue after the %d queued answers, before the body "
        "(got %d answers, 100 at %s)" % (k, len(first), first.index(100) if 100 in first else None))
    say(got == [200] * k + [100, 405], "then the POST's own answer (got %s)" % got[k:])

# ---- the differential corpus ----------------------------------------------
# Each request is whole; stapled's verdict is "refuse" when its first answer
# is one of REFUSED, h11's when it raises RemoteProtocolError, "incomplete"
# when no answer (or no whole message) comes. Where stapled is stricter on
# purpose, DEVIATIONS says why.
G = b"GET /healthz HTTP/1.1\r\nHost: x\r\n"
P = b"POST /healthz HTTP/1.1\r\nHost: x\r\n"
CORPUS = [
    ("plain GET", G + b"\r\n"),
    ("HTTP/1.0, no Host", b"GET /healthz HTTP/1.0\r\n\r\n"),
    ("HEAD", b"HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n"),
    ("usual client headers", G + b"User-Agent: curl/7.88\r\nAccept: */*\r\n\r\n"),
    ("POST with a body", P + b"Content-Length: 5\r\n\r\nhello"),
    ("POST, Content-Length 0", P + b"Content-Length: 0\r\n\r\n"),
    ("Content-Length with leading zeros", P + b"Content-Length: 005\r\n\r\nhello"),
    ("a query", b"GET /healthz?a=1&b HTTP/1.1\r\nHost: x\r\n\r\n"),
    ("HTAB inside a value", G + b"X: a\tb\r\n\r\n"),
    ("obs-text in a value", G + b"X: caf\xc3\xa9\r\n\r\n"),
    ("an empty value", G + b"X:\r\n\r\n"),
    ("OWS around a value", G + b"X: \t a \t\r\n\r\n"),
    ("an empty Host", b"GET /healthz HTTP/1.1\r\nHost:\r\n\r\n"),
    ("lower-case names", b"GET /healthz HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n"),
    ("every tchar in a name", G + b"X-!#$%&'*+.^_`|~09az: v\r\n\r\n"),
    ("bare LF everywhere", b"GET /healthz HTTP/1.1\nHost: x\n\n"),
    ("CRLF and LF mixed", b"GET /healthz HTTP/1.1\r\nHost: x\nX: y\r\n\n"),
    ("an unknown method", b"FOO /healthz HTTP/1.1\r\nHost: x\r\n\r\n"),
    ("a lower-case method", b"get /healthz HTTP/1.1\r\nHost: x\r\n\r\n"),
    ("absolute-form", b"GET http://x/healthz HTTP/1.1\r\nHost: x\r\n\r\n"),
    ("Expect: 100-continue with its body", P + b"Expect: 100-continue\r\nContent-Length: 2\r\n\r\nhi"),
    ("Connection: close", G + b"Connection: close\r\n\r\n"),
    ("HTTP/1.0 keep-alive", b"GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"),
    ("a percent-encoded path", b"GET /%68ealthz HTTP/1.1\r\nHost: x\r\n\r\n"),
    ("space before the colon", P + b"Content-Length : 5\r\n\r\nhello"),
    ("HTAB before the colon", G + b"X\t: y\r\n\r\n"),
    ("space inside a name", G + b"X Y: z\r\n\r\n"),
    ("an empty name", G + b": v\r\n\r\n"),
    ("no colon", G + b"Xyz\r\n\r\n"),
    ("NUL in a value", G + b"X: a\x00b\r\n\r\n"),
    ("NUL in the request line", b"GET /hea\x00lthz HTTP/1.1\r\nHost: x\r\n\r\n"),
    ("a control byte in a value", G + b"X: a\x01b\r\n\r\n"),
    ("DEL in a value", G + b"X: a\x7fb\r\n\r\n"),
    ("a lone CR in a value", G + b"X: a\rb\r\n\r\n"),
    ("obs-fold", G + b"X: a\r\n b\r\n\r\n"),
    ("a continuation line first", b"GET /healthz HTTP/1.1\r\n Host: x\r\n\r\n"),
    ("Content-Length and Transfer-Encoding", P + b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
    ("Transfer-Encoding: chunked", P + b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"),
    ("Transfer-Encoding: gzip", P + b"Transfer-Encoding: gzip\r\n\r\n"),
    ("Content-Length not a number", P + b"Content-Length: abc\r\n\r\n"),
    ("Content-Length with a sign", P + b"Content-Length: +5\r\n\r\nhello"),
    ("Content-Length negative", P + b"Content-Length: -1\r\n\r\n"),
    ("Content-Length twice, equal", P + b"Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello"),
    ("Content-Length as a list", P + b"Content-Length: 5, 5\r\n\r\nhello"),
    ("Content-Length twice, different", P + b"Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!"),
    ("HTTP/1.1 without Host", b"GET /healthz HTTP/1.1\r\n\r\n"),
    ("two Hosts", G + b"Host: y\r\n\r\n"),
    ("HTTP/1.0 with two Hosts", b"GET /healthz HTTP/1.0\r\nHost: x\r\nHost: y\r\n\r\n"),
    ("HTTP/2.0", b"GET /healthz HTTP/2.0\r\nHost: x\r\n\r\n"),
    ("HTTP/1.2", b"GET /healthz HTTP/1.2\r\nHost: x\r\n\r\n"),
    ("a lower-case version", b"GET /healthz http/1.1\r\nHost: x\r\n\r\n"),
    ("two spaces in the request line", b"GET  /healthz HTTP/1.1\r\nHost: x\r\n\r\n"),
    ("HTAB in the request line", b"GET\t/healthz HTTP/1.1\r\nHost: x\r\n\r\n"),
    ("a space after the version", b"GET /healthz HTTP/1.1 \r\nHost: x\r\n\r\n"),
    ("no version (HTTP/0.9)", b"GET /healthz\r\n\r\n"),
    ("an empty line first", b"\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"),
    ("obs-text in the target", b"GET /heal\xffthz HTTP/1.1\r\nHost: x\r\n\r\n"),
    ("the asterisk form", b"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n"),
    ("a POST without Content-Length", P + b"\r\n"),
    ("a request line over 8 KiB", b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n"),
    ("a non-ASCII name", G + b"X\xc3\xa9: v\r\n\r\n"),
    ("a head over 8 KiB", G + b"X: " + b"a" * 9000 + b"\r\n\r\n"),
    ("a body over 16 KiB announced", P + b"Content-Length: 20000\r\n\r\n" + b"a" * 20000),
]
DEVIATIONS = {
    "a control byte in a value": "RFC 9110 5.5: a value is VCHAR, obs-text, SP and HTAB; h11 0.14 lets other control bytes through",
    "DEL in a value": "DEL is a control byte (RFC 5234 CTL), not VCHAR; h11 0.14 lets it through",
    "obs-fold": "RFC 9112 5.2 allows a 400; a fold is a classic way to hide a field from one parser",
    "Content-Length and Transfer-Encoding": "the smuggling pair: RFC 9112 6.3 lets a server refuse it; h11 lets chunked win",
    "Transfer-Encoding: chunked": "stapled implements no transfer coding (OCSP clients send Content-Length): 501",
    "Content-Length twice, equal": "one Content-Length only; RFC 9112 6.3 allows refusing duplicates",
    "Content-Length as a list": "one Content-Length only; RFC 9112 6.3 allows refusing a list",
    "HTTP/2.0": "only HTTP/1.0 and 1.1 are spoken: 505; h11 parses any HTTP/d.d",
    "HTTP/1.2": "only HTTP/1.0 and 1.1 are spoken: 505; h11 parses any HTTP/d.d",
    "a POST without Content-Length": "RFC 9112 6.3 makes its body empty; stapled asks for the length (411)",
    "a request line over 8 KiB": "stapled's head limit is 8 KiB (414 in the request line); h11's is 16 KiB",
    "a head over 8 KiB": "stapled's head limit is 8 KiB (431); h11's is 16 KiB",
    "a body over 16 KiB announced": "stapled's body limit is 16 KiB (413); h11 has none",
}

def h11_verdict(data):
    import h11
    c = h11.Connection(h11.SERVER)
    c.receive_data(data)
    try:
        while True:
            e = c.next_event()
            if e is h11.NEED_DATA:
                return "incomplete"
            if isinstance(e, h11.EndOfMessage):
                return "accept"
    except h11.RemoteProtocolError:
        return "refuse"

def stapled_verdict(data):
    a, _ = exchange(data)
    if not a:
        return "incomplete"
    st = a[0][0] if a[0][0] != 100 or len(a) < 2 else a[1][0]
    return "refuse" if st in REFUSED else "accept"

def run_diff():
    same = dev = 0
    for name, data in CORPUS:
        s, h = stapled_verdict(data), h11_verdict(data)
        if name in DEVIATIONS:
            dev += 1
            say(s == "refuse" and h != "refuse",
                "%s: stapled refuses, h11 does not (%s; got stapled %s, h11 %s)" %
                (name, DEVIATIONS[name], s, h))
        else:
            same += 1
            say(s == h and s != "incomplete", "%s: stapled %s, h11 %s" % (name, s, h))
    print("# corpus %d requests: %d same verdict expected, %d deliberate deviations" %
          (len(CORPUS), same, dev))

if sys.argv[1] == "diff":
    run_diff()
if sys.argv[1] == "cases":
    run_cases(); run_limits(); run_bare_lf(); run_connection(); run_continue()
sys.exit(1 if fails else 0)
EOF
out=$(timeout 120 "$PY" "$T/client.py" cases "$SPORT")
printf '%s\n' "$out"
IT_FAILS=$((IT_FAILS + $(printf '%s\n' "$out" | grep -c '^FAIL')))
[ -n "$out" ] || fail "the client printed nothing"
kill -0 "$SPID" || fail "stapled is still running"

# The differential run needs python3-h11 (Debian's, for the system python3).
if "$PY" -c 'import h11' 2>/dev/null; then
	out=$(timeout 120 "$PY" "$T/client.py" diff "$SPORT")
	printf '%s\n' "$out"
	IT_FAILS=$((IT_FAILS + $(printf '%s\n' "$out" | grep -c '^FAIL')))
	printf '%s\n' "$out" | grep -q '^# corpus' || fail "the differential run did not finish"
	kill -0 "$SPID" || fail "stapled is still running after the corpus"
elif [ "$IT_FAILS" -eq 0 ]; then
	skip "python3-h11 not installed: the differential run did not run"
fi

it_done
