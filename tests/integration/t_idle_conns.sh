#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Idle keep-alive clients hold no request buffers: stapled's RSS per idle
# connection stays small, and the connections still answer afterwards
# (split, pipelined and plain requests on connections that went idle).
. "$top_srcdir/tests/integration/lib.sh"

it_init t_idle_conns
need_py
export PYTHONPATH=$top_srcdir/tests/integration	# http1.py

NCONN=2000
# Bytes of RSS per idle connection: a connection holding its input, head
# and path buffers (about 40 KiB, 20 KiB or more of it touched) fails this.
MAX_PER_CONN_BYTES=6144

# Each client is a socket here and one in stapled, which inherits this limit.
ulimit -n $((NCONN + 512)) 2>/dev/null ||
    skip "cannot raise the fd limit to $((NCONN + 512))"

cat >"$T/client.py" <<'EOF'
import socket, sys, time
from http1 import request, statuses as answers
from procstat import status_kb

port, pid, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
GET = request("/healthz")

def connect():
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.settimeout(10)
    # The second half of a split request goes out at once, not after the
    # delayed ACK of the first (Nagle).
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s

# Warm up the allocator with connections that come and go.
for i in range(100):
    s = connect()
    s.sendall(GET)
    answers(s, 1)
    s.close()
time.sleep(0.3)
before = status_kb(pid)
conns, bad = [], 0
for i in range(n):
    s = connect()
    s.sendall(GET)
    if answers(s, 1) != [200]:
        bad += 1
    conns.append(s)
time.sleep(0.5)
after = status_kb(pid)
print("per_conn_bytes=%d rss_before_kb=%d rss_after_kb=%d first_bad=%d" %
      ((after - before) * 1024 // n, before, after, bad))

# Idle connections answer again: a plain request, a split one, two pipelined.
bad = 0
for i, s in enumerate(conns):
    if i % 3 == 0:
        s.sendall(GET)
        bad += answers(s, 1) != [200]
    elif i % 3 == 1:
        s.sendall(GET[:12])
        if i < 60:
            time.sleep(0.01)
        s.sendall(GET[12:])
        bad += answers(s, 1) != [200]
    else:
        s.sendall(GET + GET)
        bad += answers(s, 2) != [200, 200]
print("again_bad=%d" % bad)
for s in conns:
    s.close()
EOF

kv() { printf '%s\n' "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"; }

# Set: the default max_connections is a quarter of memory at 1 MiB each.
printf '{ "max_connections": %d }\n' $((NCONN + 256)) >"$T/idle.json"
stapled_start idle -f "$T/idle.json" --ocsp-upstream "http://127.0.0.1:$(dead_port 1)/"
out=$(timeout 120 "$PY" "$T/client.py" "$SPORT" "$SPID" "$NCONN" 2>&1)
note "$out"
per=$(kv per_conn_bytes "$out")
assert "every first request on $NCONN connections answered 200" \
    '[ "$(kv first_bad "$out")" = 0 ]'
assert "idle keep-alive connections cost under $MAX_PER_CONN_BYTES bytes of RSS each (${per:-?})" \
    '[ -n "$per" ] && [ "$per" -lt "$MAX_PER_CONN_BYTES" ]'
assert "idle connections answer plain, split and pipelined requests again" \
    '[ "$(kv again_bad "$out")" = 0 ]'
kill -0 "$SPID" 2>/dev/null && ok "stapled still runs" || fail "stapled died"
stapled_stop
it_done
