# SPDX-License-Identifier: Apache-2.0
# Established TCP connections to a local port, from /proc/net/tcp{,6}: how many connections stapled holds open to an upstream.

PROC_NET_TCP = ("/proc/net/tcp", "/proc/net/tcp6")
TCP_ESTABLISHED = "01"  # the st column's value for ESTABLISHED


def upstream_conns(uport):
    """Established connections whose remote port is uport (IPv4 and IPv6)."""
    n = 0
    for f in PROC_NET_TCP:
        try:
            with open(f) as fh:
                next(fh)
                for line in fh:
                    c = line.split()
                    if c[3] == TCP_ESTABLISHED and int(c[2].split(":")[1], 16) == uport:
                        n += 1
        except OSError:
            pass
    return n
