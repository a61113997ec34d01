# SPDX-License-Identifier: Apache-2.0
# Loads on stapled's public listeners (idle connections, reconnecting slowloris, clients that pipeline and never read) and the probes measured meanwhile: for t_front_budget.
import selectors
import socket
import ssl
import subprocess
import threading
import time

from http1 import read_answer, request
from procstat import status_kb


def connect(port, timeout=5.0):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.settimeout(timeout)
    return s


def probe(port, path, timeout=1.0):
    """GET path on a new connection: (status or 0, milliseconds, body)."""
    t0 = time.monotonic()
    try:
        s = connect(port, timeout)
        try:
            s.sendall(request(path))
            a = read_answer(s)
        finally:
            s.close()
    except OSError:
        a = None
    ms = (time.monotonic() - t0) * 1000.0
    return (0, ms, b"") if a is None else (a[0], ms, a[2])


def probes(port, n=5, gap=0.05):
    """n probes each of /healthz and /readyz: (answered 200, max ms, a /readyz body)."""
    ok, worst, body = 0, 0.0, b""
    for _ in range(n):
        for path in ("/healthz", "/readyz"):
            st, ms, b = probe(port, path)
            ok += st == 200
            worst = max(worst, ms)
            if path == "/readyz" and st == 200:
                body = b
        time.sleep(gap)
    return ok, worst, body


def hold_idle(port, n):
    """n connections that send nothing: (connected, sockets)."""
    conns = []
    for _ in range(n):
        try:
            s = socket.socket()
            s.settimeout(0.5)
            s.connect(("127.0.0.1", port))
            conns.append(s)
        except OSError:
            s.close()
    return conns


class Slowloris(threading.Thread):
    """n clients sending one byte each, reconnecting as soon as closed."""

    def __init__(self, port, n):
        super().__init__(daemon=True)
        self.port, self.n, self.stop, self.reconnects = port, n, False, 0

    def open_one(self, sel):
        try:
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex(("127.0.0.1", self.port))
            sel.register(s, selectors.EVENT_WRITE, "connecting")
        except OSError:
            pass

    def run(self):
        sel = selectors.DefaultSelector()
        for _ in range(self.n):
            self.open_one(sel)
        while not self.stop:
            for key, _ in sel.select(0.1):
                s = key.fileobj
                if key.data == "connecting":
                    try:
                        s.send(b"G")
                        sel.modify(s, selectors.EVENT_READ, "open")
                        continue
                    except OSError:
                        pass
                else:
                    try:
                        if s.recv(4096):
                            continue
                    except BlockingIOError:
                        continue
                    except OSError:
                        pass
                sel.unregister(s)
                s.close()
                self.reconnects += 1
                self.open_one(sel)
        for key in list(sel.get_map().values()):
            key.fileobj.close()


def send_q(port):
    """Over the daemon's sockets on port: (count, sum of wmem_queued, max tb, sum of rmem)."""
    out = subprocess.run(["ss", "-tmnH", "state", "established", "sport", "=",
                          ":%d" % port], capture_output=True, text=True).stdout
    n = w = tb = r = 0
    for tok in out.split():
        if tok.startswith("skmem:("):
            f = dict((k.rstrip("0123456789"), int(k[len(k.rstrip("0123456789")):]))
                     for k in tok[7:].rstrip(")").split(","))
            n += 1
            w += f.get("w", 0)
            r += f.get("r", 0)
            tb = max(tb, f.get("tb", 0))
    return n, w, tb, r


def post(body, host="t"):
    return (b"POST /ocsp HTTP/1.1\r\nHost: " + host.encode() +
            b"\r\nContent-Type: application/ocsp-request\r\nContent-Length: " +
            str(len(body)).encode() + b"\r\n\r\n" + body)


def tls_wrap(s, ctx):
    t = ctx.wrap_socket(s, server_hostname="127.0.0.1")
    t.do_handshake()
    return t


def hit_ms(port, req, ctx, tries=5):
    """A fresh client's hit, tries times: (answered 200, max ms)."""
    ok, worst = 0, 0.0
    for _ in range(tries):
        t0 = time.monotonic()
        try:
            s = connect(port, 10)
            if ctx is not None:
                s = tls_wrap(s, ctx)
            s.sendall(req)
            a = read_answer(s)
            s.close()
        except OSError:
            a = None
        worst = max(worst, (time.monotonic() - t0) * 1000.0)
        ok += a is not None and a[0] == 200
        time.sleep(0.05)
    return ok, worst


def no_read(port, pid, n, count, body, use_tls, settle_s=1.0, max_s=60.0):
    """n clients pipeline count hit POSTs each and never read; figures as a dict."""
    ctx = None
    if use_tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    one = post(body)
    # Warm the allocator and the entry's page, then the baseline.
    ok, _ = hit_ms(port, one, ctx, 3)
    time.sleep(0.3)
    base = status_kb(pid, "RssAnon")
    payload = memoryview(one * count)
    conns = []
    for _ in range(n):
        s = connect(port, 10)
        if ctx is not None:
            s = tls_wrap(s, ctx)
        s.setblocking(False)
        conns.append([s, 0])
    t0 = last = time.monotonic()
    sent = 0
    while time.monotonic() - last < settle_s and time.monotonic() - t0 < max_s:
        progress = False
        for c in conns:
            if c[1] >= len(payload):
                continue
            try:
                k = c[0].send(payload[c[1]:c[1] + 65536])
            except (BlockingIOError, ssl.SSLWantWriteError, ssl.SSLWantReadError):
                continue
            if k > 0:
                c[1] += k
                sent += k
                progress = True
        if progress:
            last = time.monotonic()
        else:
            time.sleep(0.02)
    # The clients' kernels hold what they sent: wait until stapled stops
    # taking more (its heap and send queues steady for settle_s).
    prev, still = None, time.monotonic()
    while time.monotonic() - t0 < max_s:
        rss = status_kb(pid, "RssAnon")
        nsock, w, tb, r = send_q(port)
        cur = rss * 1024 + w
        if prev is None or abs(cur - prev) > prev // 100:
            prev, still = cur, time.monotonic()
        elif time.monotonic() - still >= settle_s:
            break
        time.sleep(0.2)
    fill_s = time.monotonic() - t0
    fresh_ok, fresh_ms = hit_ms(port, one, ctx)
    for c in conns:
        try:
            c[0].close()
        except OSError:
            pass
    # After they leave: the heap is given back (a trim follows the closes).
    time.sleep(2.0)
    after = status_kb(pid, "RssAnon")
    growth = (rss - base) * 1024
    return {
        "warm_ok": ok, "fill_s": "%.1f" % fill_s,
        "sent_kb": sent // 1024, "requests_sent": sent // len(one),
        "rss_base_kb": base, "rss_loaded_kb": rss, "rss_after_kb": after,
        "sockets": nsock, "sendq_kb": w // 1024, "tb": tb,
        "recvq_kb": r // 1024,
        "per_conn_kb": (growth + w) // 1024 // n,
        "heap_per_conn_kb": growth // 1024 // n,
        "sendq_per_conn_kb": w // 1024 // n,
        "fresh_ok": fresh_ok, "fresh_ms": "%.1f" % fresh_ms,
    }
