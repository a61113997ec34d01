# SPDX-License-Identifier: Apache-2.0
# A stand-in for the service manager's notify socket: one AF_UNIX datagram socket, each message logged with its time.
import os
import socket
import sys
import time

# A third argument "realtime" stamps messages with the wall clock (tools/bench
# compares them with the shell's $EPOCHREALTIME), else the monotonic clock.
path, log = sys.argv[1], sys.argv[2]
clock = time.time if sys.argv[3:4] == ["realtime"] else time.monotonic
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
if path.startswith("@"):
    s.bind("\0" + path[1:])
else:
    s.bind(path)
with open(log, "a", buffering=1) as out:
    out.write("LISTENING\n")
    while True:
        msg = s.recv(4096).decode("utf-8", "replace")
        out.write("%.6f %s\n" % (clock(), msg.replace("\n", "|")))
