# SPDX-License-Identifier: Apache-2.0
# Established TCP connections to a local port, from /proc/net/tcp{,6}: how many connections stapled holds open to an upstream.
import os

PROC_NET_TCP = ("/proc/net/tcp", "/proc/net/tcp6")
TCP_ESTABLISHED = "01"  # the st column's value for ESTABLISHED


def socket_inodes(pid):
    """The inodes of the sockets process pid holds open (an empty set once it is gone)."""
    inodes = set()
    fds = "/proc/%d/fd" % pid
    try:
        names = os.listdir(fds)
    except OSError:
        return inodes
    for name in names:
        try:
            target = os.readlink(os.path.join(fds, name))
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    return inodes


def upstream_conns(uport, pid=None):
    """Established connections whose remote port is uport (IPv4 and IPv6),
    only those of process pid when it is given: another test's client of a
    listener on the same port number (on another address) is not counted."""
    n = 0
    mine = socket_inodes(pid) if pid is not None else None
    for f in PROC_NET_TCP:
        try:
            with open(f) as fh:
                next(fh)
                for line in fh:
                    c = line.split()
                    if c[3] != TCP_ESTABLISHED or int(c[2].split(":")[1], 16) != uport:
                        continue
                    if mine is None or c[9] in mine:
                        n += 1
        except OSError:
            pass
    return n
