#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The systemd protocol, against systemd's own tools and a stand-in notify
# socket: socket activation (the first request queued before stapled runs,
# a passed admin socket, a listen entry equal to a passed socket, one on a
# passed socket's port at another address),
# READY/STATUS/WATCHDOG/RELOADING/STOPPING, the watchdog stopping with a
# stopped loop, staplectl reload's verdicts, a second SIGTERM, the admin split.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_systemd
need_cmd systemd-socket-activate python3
STAPLECTL=$top_builddir/staplectl
RECV=$top_srcdir/tests/integration/notify_recv.py

# notify_start NAME: a receiver on an abstract socket; its name in NSOCK,
# its log in $T/NAME.notify.
notify_start() {
	NSOCK=@stapled-test-$$-$1
	bg_start _npid "$T/$1.recv.log" python3 "$RECV" "$NSOCK" "$T/$1.notify"
	wait_for_line "$T/$1.notify" '^LISTENING' >/dev/null ||
	    die "notify receiver $1 did not start"
}
# nsent NAME ERE: messages so far that match.
nsent() { grep -cE "$2" "$T/$1.notify" 2>/dev/null || true; }
# line_of NAME ERE: the line number of the last message that matches (0: none).
line_of() { awk -v re="$2" '$0 ~ re { n = NR } END { print n + 0 }' "$T/$1.notify"; }

# ---- 1. socket activation: queued first request, passed admin socket -------
notify_start act
P=$(free_port); PA=$(free_port)
bg_start APID "$T/act.log" systemd-socket-activate \
    -l "127.0.0.1:$P" -l "127.0.0.1:$PA" --fdname=web:admin \
    -E NOTIFY_SOCKET="$NSOCK" -E WATCHDOG_USEC=1000000 -- \
    "$STAPLED" --cache-dir "$T/c1" --listen "127.0.0.1:$P"
wait_for_line "$T/act.log" "Listening on 127.0.0.1:$PA" >/dev/null ||
    die "systemd-socket-activate did not listen"
check_eq "before the first connection stapled has not started" 0 \
    "$(grep -c 'ready:' "$T/act.log")"
# systemd-socket-activate starts stapled on this connection: the request
# waits in the passed socket's backlog until stapled accepts it.
code=$(curl -s -m 10 -o "$T/h1" -w '%{http_code}' "http://127.0.0.1:$PA/healthz")
check_eq "the request sent before stapled started is answered" 200 "$code"
wait_for_line "$T/act.log" 'ready:' >/dev/null || die "stapled did not start"
check_eq "it is the socket-activated stapled that answered" 1 \
    "$(grep -c 'ready:' "$T/act.log")"
check "each passed socket's address is logged" \
    grep -q "listening on 127.0.0.1:$PA (passed socket) (admin)" "$T/act.log"
check "the listen entry equal to a passed socket is served by it, not bound" \
    grep -q "listen 127.0.0.1:$P: served by the passed socket" "$T/act.log"
check "no EADDRINUSE" sh -c "! grep -qi 'in use' '$T/act.log'"
code=$(curl -s -m 5 -o "$T/r1" -w '%{http_code}' "http://127.0.0.1:$PA/readyz")
check_eq "/readyz on the passed admin socket" 200 "$code"
check "/readyz detail: entries, services and their upstreams" \
    sh -c "grep -q '^ready' '$T/r1' && grep -q '^service ocsp: ' '$T/r1' && grep -q '^entries' '$T/r1'"
code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$P/metrics")
check_eq "/metrics on the public passed socket: 404" 404 "$code"
code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$P/ocsp/MAo=")
check_eq "OCSP GET on the public passed socket is served (malformed: 200)" 200 "$code"

# ---- 2. notify: READY, STATUS, WATCHDOG rate, SIGSTOP, RELOADING ------------
check_eq "READY=1 sent once at start" 1 "$(nsent act 'READY=1')"
check "STATUS= with the figures" grep -qE 'STATUS=.*upstreams up: ocsp [0-9]+/[0-9]+' "$T/act.notify"
check "EXTEND_TIMEOUT_USEC= before the store is opened" grep -q 'EXTEND_TIMEOUT_USEC=' "$T/act.notify"
w0=$(nsent act '^[0-9.]+ WATCHDOG=1$'); sleep 3; w1=$(nsent act '^[0-9.]+ WATCHDOG=1$')
note "WATCHDOG=1 at WATCHDOG_USEC=1s: $((w1 - w0)) in 3 s (expected about 6)"
assert "WATCHDOG=1 about every half second ($((w1 - w0)) in 3 s)" \
    'between $((w1 - w0)) 3 10'
kill -STOP "$APID"
sleep 0.3; s0=$(nsent act 'WATCHDOG=1'); sleep 2; s1=$(nsent act 'WATCHDOG=1')
kill -CONT "$APID"
# At most one late datagram from before the stop (a running loop sends 4).
assert "a stopped event loop sends no WATCHDOG=1, what WatchdogSec= catches ($((s1 - s0)) in 2 s)" \
    '[ $((s1 - s0)) -le 1 ]'
sleep 1.5; s2=$(nsent act 'WATCHDOG=1')
assert "after SIGCONT the pings resume ($((s2 - s1)) in 1.5 s)" '[ $((s2 - s1)) -ge 1 ]'

out=$("$STAPLECTL" -C "$T/c1" reload 2>&1); rc=$?
note "staplectl reload: $out"
check_eq "staplectl reload: exit 0 on a good configuration" 0 "$rc"
check "staplectl reload prints the daemon's verdict" sh -c "echo '$out' | grep -q ': ok: configuration reloaded'"
check_eq "RELOADING=1 sent" 1 "$(nsent act 'RELOADING=1')"
lr=$(line_of act 'RELOADING=1'); lready=$(line_of act 'READY=1')
assert "READY=1 follows RELOADING=1 (messages $lr, $lready)" '[ "$lr" -gt 0 ] && [ "$lr" -lt "$lready" ]'
check_eq "READY=1 twice now (start, reload)" 2 "$(nsent act 'READY=1')"
bg_kill "$APID" TERM
check_eq "SIGTERM: exit 0" 0 "$BG_RC"
check "STOPPING=1 sent" grep -q 'STOPPING=1' "$T/act.notify"

# ---- 3. the default listen is not bound beside passed sockets ---------------
P3=$(free_port)
# A Unix socket path has at most 107 bytes: a deep build tree uses /tmp.
USOCK=$T/s.sock
[ ${#USOCK} -lt 100 ] || {
	USOCK=$(mktemp -d)/s.sock
	trap '_rc=$?; rm -rf "${USOCK%/s.sock}"; (exit $_rc); it_cleanup' EXIT
}
bg_start BPID "$T/def.log" systemd-socket-activate -l "127.0.0.1:$P3" \
    -l "$USOCK" -- "$STAPLED" --cache-dir "$T/c3"
wait_for_line "$T/def.log" "Listening on 127.0.0.1:$P3" >/dev/null ||
    die "systemd-socket-activate did not listen"
code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$P3/healthz")
check_eq "without listen: served on the passed TCP socket" 200 "$code"
code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' --unix-socket "$USOCK" \
    http://localhost/healthz)
check_eq "without listen: served on the passed Unix socket" 200 "$code"
check "the passed Unix socket's path is logged" \
    grep -q "listening on unix:$USOCK (passed socket)" "$T/def.log"
check "without listen: the default address is not bound" \
    grep -q 'serving on the 2 passed socket(s) only' "$T/def.log"
bg_kill "$BPID" TERM

# A listen entry on the passed socket's port at another address (0.0.0.0
# beside 127.0.0.1, as an operator edits stapled.json under the packaged
# socket unit): the passed socket serves, and the log says why, instead of
# a failed start that Restart= would repeat.
P4=$(free_port)
bg_start OPID "$T/over.log" systemd-socket-activate -l "127.0.0.1:$P4" -- \
    "$STAPLED" --cache-dir "$T/c6" --listen "0.0.0.0:$P4"
wait_for_line "$T/over.log" "Listening on 127.0.0.1:$P4" >/dev/null ||
    die "systemd-socket-activate did not listen"
code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$P4/healthz")
check_eq "listen 0.0.0.0:P beside a passed 127.0.0.1:P: served on the passed socket" 200 "$code"
check "... the log names the entry left out, the socket that serves, and where addresses live" \
    grep -q "warning: listen 0.0.0.0:$P4: not bound: the socket passed by the service manager holds 127.0.0.1:$P4, the same port; serving on the passed sockets.*(systemctl edit stapled.socket)" \
    "$T/over.log"
check "... and stapled keeps running" kill -0 "$OPID"
bg_kill "$OPID" TERM

# A passed socket that is not listening: refused with a clear message.
bg_start DPID "$T/dgram.log" systemd-socket-activate --datagram \
    -l "127.0.0.1:$(free_port)" -- "$STAPLED" --cache-dir "$T/c4"
wait_for_line "$T/dgram.log" "Listening on 127.0.0.1:" >/dev/null ||
    die "systemd-socket-activate did not listen"
python3 -c "import socket,sys; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', int(sys.argv[1])))" \
    "$(sed -nE 's/^Listening on 127.0.0.1:([0-9]+).*/\1/p' "$T/dgram.log" | head -1)"
bg_wait "$DPID"
check_eq "a passed datagram socket: stapled exits 1" 1 "$BG_RC"
check "a passed datagram socket: the message says why" \
    grep -q 'passed fd 3 is not a stream socket' "$T/dgram.log"

# ---- 4. staplectl reload: a configuration the daemon refuses -----------------
pki_make
TRUST="--ocsp-anchor $ANCHORS --ocsp-intermediates $INTERMEDIATES"
printf '{ "ocsp": { "anchors": ["%s"] } }\n' "$ANCHORS" >"$T/conf.json"
STAPLED_CACHE=$T/c5 stapled_start d5 -f "$T/conf.json"
out=$("$STAPLECTL" -C "$T/c5" reload 2>&1); rc=$?
check_eq "reload of an unchanged good file: exit 0" 0 "$rc"
echo "not a certificate" >"$T/bad-anchor.pem"
printf '{ "ocsp": { "anchors": ["%s"] } }\n' "$T/bad-anchor.pem" >"$T/conf.json"
out=$("$STAPLECTL" -C "$T/c5" reload 2>&1); rc=$?
note "staplectl reload, bad anchors: $out"
check_eq "reload refused by the daemon: exit 1" 1 "$rc"
check "the refusal names the anchor file" sh -c "echo '$out' | grep -q 'refused.*bad-anchor.pem'"
check_eq "the daemon still serves" 200 \
    "$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$SURL/healthz")"
stapled_stop
out=$("$STAPLECTL" -C "$T/c5" reload 2>&1); rc=$?
check_eq "reload with no daemon: exit 5" 5 "$rc"
check "reload with no daemon: says so" sh -c "echo '$out' | grep -q 'no stapled runs'"

# ---- 5. a second SIGTERM while a fetch hangs exits at once -------------------
upstream_start UHANG hang --mode hang --count-file "$T/hang.count"
printf '{ "ocsp": { "anchors": ["%s"], "intermediates": ["%s"], "upstreams": ["http://127.0.0.1:%s/"], "timeout_ms": 10000, "connect_timeout_ms": 10000, "client_budget_ms": 10000 } }\n' \
    "$ANCHORS" "$INTERMEDIATES" "$UHANG" >"$T/hang.json"
STAPLED_CACHE=$T/c6 stapled_start d6 -f "$T/hang.json"
mkreq "$T/q.der" "$ICA_CERT" "$LEAF1"
curl -s -m 15 -o /dev/null -H "$CT_REQ" --data-binary @"$T/q.der" "$SURL/ocsp" &
CURL_PID=$!
i=0; while [ "$(count_of "$T/hang.count")" -lt 1 ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
check_eq "the fetch hangs on the blackholed upstream" 1 "$(count_of "$T/hang.count")"
kill -TERM "$SPID"; sleep 0.5
check "after one SIGTERM it waits for the fetch" kill -0 "$SPID"
t0=$(date +%s.%N)
bg_kill "$SPID" TERM
t1=$(date +%s.%N)
el=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
note "second SIGTERM: exited after $el s (the grace would be about 11 s)"
assert "a second SIGTERM exits at once ($el s < 2 s)" 'lt "$el" 2'
check_eq "a second SIGTERM: exit status 0" 0 "$BG_RC"
check "a second SIGTERM is logged" grep -q 'SIGTERM again: exiting now' "$T/d6.log"
wait "$CURL_PID" 2>/dev/null

# ---- 6. admin_listen: ops there only, nothing else there ----------------------
AP=$(free_port)
STAPLED_CACHE=$T/c7 stapled_start d7 $TRUST --admin-listen "127.0.0.1:$AP" || true
ADM=http://127.0.0.1:$AP
for p in /metrics /healthz /readyz; do
	check_eq "admin_listen: $p on the public listener is 404" 404 \
	    "$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$SURL$p")"
	check_eq "admin_listen: $p on the admin listener is 200" 200 \
	    "$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$ADM$p")"
done
code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' -H "$CT_REQ" \
    --data-binary @"$T/q.der" "$ADM/ocsp")
check_eq "admin_listen: an OCSP POST on the admin listener is 404" 404 "$code"
code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$ADM/rim/NV_TEST")
check_eq "admin_listen: a RIM GET on the admin listener is 404" 404 "$code"
stapled_stop

it_done
