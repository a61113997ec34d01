# SPDX-License-Identifier: Apache-2.0
# HTTP/1.1 answers read off a socket (plain or TLS) by their Content-Length: for the tests that keep connections alive, pipeline or read late.

HEAD_END = b"\r\n\r\n"
RECV_BYTES = 65536


def request(path="/healthz", host="t"):
    """A GET of path as bytes, keep-alive (HTTP/1.1's default)."""
    return ("GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (path, host)).encode()


def content_length(head):
    """The Content-Length of an answer's head (bytes), 0 when it has none."""
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            return int(v)
    return 0


def read_answer(sock, buf=b""):
    """One answer off sock, buf holding what was read past the one before.

    Returns (status, head, body, rest), rest being the bytes read past this
    answer (the start of the next, when pipelined); None when the peer
    closes before the answer is whole. A timeout of sock's is raised.
    """
    while HEAD_END not in buf:
        d = sock.recv(RECV_BYTES)
        if not d:
            return None
        buf += d
    head, _, buf = buf.partition(HEAD_END)
    clen = content_length(head)
    while len(buf) < clen:
        d = sock.recv(RECV_BYTES)
        if not d:
            return None
        buf += d
    return int(head.split(b" ")[1]), head, buf[:clen], buf[clen:]


def scan_statuses(buf):
    """The statuses of the whole answers in buf (bytes, or a bytearray still
    filling), in order; an answer cut short ends the list. buf is not copied."""
    out, pos = [], 0
    while True:
        e = buf.find(HEAD_END, pos)
        if e < 0:
            return out
        head = bytes(buf[pos:e])
        end = e + len(HEAD_END) + content_length(head)
        if end > len(buf):
            return out
        out.append(int(head.split()[1]))
        pos = end


def read_to_close(sock):
    """Everything sock sends until the peer closes its side."""
    buf = b""
    while True:
        d = sock.recv(RECV_BYTES)
        if not d:
            return buf
        buf += d


def statuses(sock, count):
    """The status codes of the next count answers on sock; fewer when it closes."""
    buf, codes = b"", []
    while len(codes) < count:
        a = read_answer(sock, buf)
        if a is None:
            break
        codes.append(a[0])
        buf = a[3]
    return codes


def get(sock, path="/healthz", host="t"):
    """Send a GET of path and read its answer: (status, head, body), or None."""
    sock.sendall(request(path, host))
    a = read_answer(sock)
    return None if a is None else a[:3]
