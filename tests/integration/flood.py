# SPDX-License-Identifier: Apache-2.0
# OCSP requests for minted serials under one issuer, asked by "real" clients and by a flood from many source addresses: for t_flood.
import argparse
import socket
import sys
import threading
import time

from http1 import read_answer

SHA1_ALG = bytes.fromhex("300906052b0e03021a0500")	# sha1, NULL parameters
TRY_LATER = bytes.fromhex("30030a0103")


def der(tag, body):
    """One DER element (short or long length)."""
    n = len(body)
    if n < 0x80:
        return bytes([tag, n]) + body
    nb = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([tag, 0x80 | len(nb)]) + nb + body


def issuer_hashes(template):
    """issuerNameHash and issuerKeyHash: the first two 20-byte OCTET STRINGs
    of a SHA-1 CertID (a request `openssl ocsp -reqout` made)."""
    out, i = [], 0
    while len(out) < 2:
        i = template.index(b"\x04\x14", i)
        out.append(template[i + 2:i + 22])
        i += 22
    return out


def ocsp_request(hashes, serial):
    """An OCSPRequest of one SHA-1 CertID for serial, without a nonce."""
    s = serial.to_bytes((serial.bit_length() + 8) // 8, "big")
    certid = der(0x30, SHA1_ALG + der(0x04, hashes[0]) + der(0x04, hashes[1]) +
                 der(0x02, s))
    return der(0x30, der(0x30, der(0x30, der(0x30, certid))))


def post(body, port):
    head = ("POST /ocsp HTTP/1.1\r\nHost: t\r\n"
            "Content-Type: application/ocsp-request\r\n"
            "Content-Length: %d\r\n\r\n" % len(body)).encode()
    return head + body


class Client:
    """A keep-alive connection from one source address; reconnects when closed."""

    def __init__(self, port, src):
        self.port, self.src, self.sock = port, src, None

    def ask(self, body):
        """The answer's status and body, or (0, b"") when none came."""
        for _ in range(2):
            try:
                if self.sock is None:
                    s = socket.socket()
                    s.settimeout(10)
                    s.bind((self.src, 0))
                    s.connect(("127.0.0.1", self.port))
                    self.sock = s
                self.sock.sendall(post(body, self.port))
                a = read_answer(self.sock)
                if a is not None:
                    return a[0], a[2]
            except OSError:
                pass
            if self.sock is not None:
                self.sock.close()
                self.sock = None
        return 0, b""


def served(status, body):
    """A signed answer (not tryLater, not an error)."""
    return status == 200 and len(body) > 5 and body != TRY_LATER


def real_loop(port, reqs, stop, every_s, res, asked_twice):
    """Ask every real entry, every every_s seconds, until stop is set;
    asked_twice is set once every entry was asked twice.

    A hit is the stored answer, byte for byte; an answer that differs from
    the first one for its entry was signed again (the responder signs each
    request anew): the entry had been evicted and was fetched again.
    """
    c = Client(port, "127.0.0.1")
    first = {}
    while not stop.is_set():
        t0 = time.monotonic()
        for i, r in enumerate(reqs):
            st, b = c.ask(r)
            res["asked"] += 1
            if not served(st, b):
                continue
            res["served"] += 1
            if first.setdefault(i, b) != b:
                res["refetched"] += 1
                first[i] = b
        res["rounds"] += 1
        if res["rounds"] >= 2:
            asked_twice.set()
        stop.wait(max(0.0, every_s - (time.monotonic() - t0)))


def flood_worker(port, srcs, serials, hashes, rate, res, lock):
    """Each source address in turn, at most rate requests a second each."""
    clients = [Client(port, s) for s in srcs]
    gap = 1.0 / rate / len(clients)
    t_next = time.monotonic()
    n = served_n = limited = 0
    for i, serial in enumerate(serials):
        now = time.monotonic()
        if now < t_next:
            time.sleep(t_next - now)
        t_next = max(t_next + gap, time.monotonic() - 1.0)
        st, b = clients[i % len(clients)].ask(ocsp_request(hashes, serial))
        n += 1
        served_n += served(st, b)
        limited += b == TRY_LATER
    with lock:
        res["flood"] += n
        res["flood_served"] += served_n
        res["flood_trylater"] += limited


def flood(port, srcs, serials, hashes, rate, res, lock):
    """serials from every source address, two to a thread, rate a second each."""
    nthr = (len(srcs) + 1) // 2
    workers = []
    for k in range(nthr):
        w = threading.Thread(target=flood_worker,
                             args=(port, srcs[2 * k:2 * k + 2],
                                   serials[k::nthr], hashes, rate, res, lock))
        w.start()
        workers.append(w)
    for w in workers:
        w.join()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=("run", "ask"))
    p.add_argument("port", type=int)
    p.add_argument("template", help="a SHA-1 request for the issuer (DER)")
    p.add_argument("--real", type=lambda s: int(s, 16), nargs="+", required=True)
    p.add_argument("--flood", type=lambda s: int(s, 16), default=0,
                   help="the first minted serial (hex)")
    p.add_argument("--count", type=int, default=0)
    p.add_argument("--tail", type=int, default=0,
                   help="of count, sent once the real clients have paused")
    p.add_argument("--addrs", type=int, default=50)
    p.add_argument("--rate", type=float, default=40, help="per address, a second")
    p.add_argument("--every", type=float, default=2.0)
    p.add_argument("--warm", type=float, default=1.0,
                   help="seconds from the second real round to the flood")
    a = p.parse_args()
    hashes = issuer_hashes(open(a.template, "rb").read())
    reqs = [ocsp_request(hashes, s) for s in a.real]
    if a.mode == "ask":
        c = Client(a.port, "127.0.0.1")
        ok = sum(served(*c.ask(r)) for r in reqs)
        print("served %d of %d" % (ok, len(reqs)))
        return 0
    res = {"asked": 0, "served": 0, "refetched": 0, "rounds": 0, "flood": 0,
           "flood_served": 0, "flood_trylater": 0}
    stop, lock, asked_twice = threading.Event(), threading.Lock(), threading.Event()
    real = threading.Thread(target=real_loop,
                            args=(a.port, reqs, stop, a.every, res, asked_twice))
    real.start()
    # The flood begins once the real entries were asked twice, and a
    # moment more (a walk pass) later.
    if not asked_twice.wait(60):
        stop.set()
        print("the real clients did not finish two rounds", file=sys.stderr)
        return 1
    time.sleep(a.warm)
    # 25 threads of two source addresses each: 127.0.0.2 .. 127.0.0.51.
    srcs = ["127.0.0.%d" % (2 + i) for i in range(a.addrs)]
    serials = [a.flood + i for i in range(a.count)]
    t0 = time.monotonic()
    flood(a.port, srcs, serials[:a.count - a.tail], hashes, a.rate, res, lock)
    # The real clients pause; the flood's tail goes on without them.
    stop.set()
    real.join()
    flood(a.port, srcs, serials[a.count - a.tail:], hashes, a.rate, res, lock)
    secs = time.monotonic() - t0
    print("flood %d in %.1f s, %d answered, %d tryLater" %
          (res["flood"], secs, res["flood_served"], res["flood_trylater"]))
    print("real asked %d, served %d, fetched again %d" %
          (res["asked"], res["served"], res["refetched"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
