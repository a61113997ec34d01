#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The HTTP front's budgets: the admin listener answers /healthz and /readyz
# while the public listeners are at max_connections, at the fd limit and
# under reconnecting slowloris, and /readyz names the saturation; clients
# that pipeline hits and never read cost a bounded amount of memory,
# stapled's heap and its sockets' send queues together, plain and over
# TLS, while a fresh client is still answered.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_front_budget
need_py
need_cmd ss
export PYTHONPATH=$top_srcdir/tests/integration	# http1.py, front_load.py
need_fill

# Generous bounds: the targets are 100 ms and 200 ms; the figures are noted.
PROBE_MAX_MS=1000
HIT_MAX_MS=1000
NOREAD_CLIENTS=200
NOREAD_REQUESTS=4000
MAX_PER_CONN_KB=1024	# stapled's RssAnon growth plus Send-Q, per client
# ... of which the heap: the 256 KiB output bound counts the memory held,
# and 41 KiB of request buffers; answers queued in their own half-empty
# buffer chains hold about twice their bytes and fail this.
MAX_HEAP_PER_CONN_KB=384
SEND_BUFFER_TB=262144	# send_buffer_kb 256 as the kernel reports it (ss's tb)

# The clients here hold up to 400 sockets, the no-read ones 400 more.
ulimit -n 4096 2>/dev/null || ulimit -n "$(ulimit -Hn)"
[ "$(ulimit -n)" -ge 1024 ] || skip "needs 1024 descriptors (ulimit -n)"

kv() { printf '%s\n' "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"; }

# One stored OCSP entry, and the DER request that hits it.
fill_pki "$T/pki"
mkdir -p "$T/store" "$T/out"
"$FILL" -s "$FILL_PKI" -o "$T/out" "$T/store" 1 >"$T/fill.log" 2>&1 ||
    die "bench-fill: $(tail -3 "$T/fill.log")"
"$PY" - "$T/out/paths" "$T/req.der" <<'EOF' || die "no request from bench-fill's paths"
import base64, sys, urllib.parse
p = open(sys.argv[1]).readline().strip()
open(sys.argv[2], "wb").write(base64.b64decode(urllib.parse.unquote(p[len("/ocsp/"):])))
EOF

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj "/CN=127.0.0.1" -keyout "$T/tls.key" -out "$T/tls.pem" 2>/dev/null ||
    die "cannot make the TLS certificate"

# conf NAME EXTRA-JSON: the filled store (copied: STAPLED_CACHE), the upstream dead.
conf() {
	cp -r "$T/store" "$T/store-$1"
	cat >"$T/$1.json" <<-EOF
	{
	  "cache_dir": "$T/store-$1",
	  "ocsp": {
	    "upstreams": ["http://127.0.0.1:$(dead_port 1)"],
	    "anchors": ["$FILL_PKI/root.pem"],
	    "intermediates": ["$FILL_PKI/ica.pem"]
	  }$2
	}
	EOF
}

cat >"$T/admin.py" <<'EOF'
import sys, time
import front_load as fl

mode, pport, aport, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
if mode == "idle":
    held = fl.hold_idle(pport, n)
    time.sleep(0.5)
    # A probe of the public port is a client like the others: it waits.
    st, ms, _ = fl.probe(pport, "/healthz", 1.0)
    extra = "held=%d public_probe=%d" % (len(held), st)
else:
    lo = fl.Slowloris(pport, n)
    lo.start()
    time.sleep(2.5)
    extra = "reconnects=%d" % lo.reconnects
ok, worst, body = fl.probes(aport, 10 if mode == "idle" else 15, 0.1)
if mode != "idle":
    extra += " reconnects_after=%d" % lo.reconnects
    lo.stop = True
    lo.join()
line = [l for l in body.decode().splitlines() if l.startswith("public_listeners:")]
print("%s probes_ok=%d probes_max_ms=%.1f" % (extra, ok, worst))
print("readyz=" + (line[0] if line else "none").replace(" ", "_"))
EOF

# admin_run NAME MODE N: the load on stapled's public port, the probes on
# its admin port; output into $out.
admin_run() {
	out=$(timeout 120 "$PY" "$T/admin.py" "$2" "$SPORT" "$APORT" "$3" 2>&1)
	note "$1: $out"
}

# ---- 1. at max_connections: 80 idle clients against 50 --------------------------
APORT=$(free_port)
conf cap ", \"max_connections\": 50, \"admin_listen\": \"127.0.0.1:$APORT\""
STAPLED_CACHE=$T/store-cap stapled_start cap -f "$T/cap.json"
admin_run "at max_connections" idle 80
check_eq "at max_connections: 80 idle clients connect" 80 "$(kv held "$out")"
check_eq "at max_connections: a probe of the public port gets no answer within 1 s" \
    0 "$(kv public_probe "$out")"
check_eq "at max_connections: all 20 admin /healthz and /readyz probes answer 200" \
    20 "$(kv probes_ok "$out")"
assert "at max_connections: each within $PROBE_MAX_MS ms ($(kv probes_max_ms "$out") ms)" \
    'lt "$(kv probes_max_ms "$out")" "$PROBE_MAX_MS"'
check_eq "at max_connections: /readyz says so, and stays ready" \
    "public_listeners:_saturated,_at_max_connections_(50/50_connections);_ready_all_the_same" \
    "$(kv readyz "$out")"
# Their closes reach stapled in a moment (the ones in the backlog after it took them).
for i in $(seq 50); do
	body=$(curl -s -m 5 "http://127.0.0.1:$APORT/readyz")
	grep -q "^public_listeners: accepting (0/50 connections)$" <<<"$body" && break
	sleep 0.1
done
check "once they left, /readyz says the public listeners accept again" \
    grep -q "^public_listeners: accepting (0/50 connections)$" <<<"$body"
curl -s -m 5 -o "$T/cap.metrics" "http://127.0.0.1:$APORT/metrics"
check "/metrics has the connection gauges" \
    grep -q '^stapled_http_connections{listener="admin"} 1$' "$T/cap.metrics"
stapled_stop

# ---- 2. at the fd limit: 400 idle clients against ulimit -n 128 ----------------
printf '#!/bin/sh\nulimit -n 128 || exit 99\nexec "$@"\n' >"$T/ulimit128"
chmod +x "$T/ulimit128"
APORT=$(free_port)
conf fd ", \"max_connections\": 1000, \"admin_listen\": \"127.0.0.1:$APORT\""
STAPLED_WRAP=$T/ulimit128 STAPLED_CACHE=$T/store-fd stapled_start fd -f "$T/fd.json"
admin_run "at the fd limit" idle 400
check_eq "at the fd limit: all 20 admin probes answer 200" 20 "$(kv probes_ok "$out")"
assert "at the fd limit: each within $PROBE_MAX_MS ms ($(kv probes_max_ms "$out") ms)" \
    'lt "$(kv probes_max_ms "$out")" "$PROBE_MAX_MS"'
assert "at the fd limit: /readyz says the public listeners are out of descriptors ($(kv readyz "$out"))" \
    '[ "$(kv readyz "$out" | sed "s/(.*)//")" = "public_listeners:_saturated,_out_of_file_descriptors_;_ready_all_the_same" ]'
stapled_stop

# ---- 3. reconnecting slowloris: 200 one-byte clients against 50 -----------------
APORT=$(free_port)
conf loris ", \"max_connections\": 50, \"header_timeout_s\": 1, \"admin_listen\": \"127.0.0.1:$APORT\""
STAPLED_CACHE=$T/store-loris stapled_start loris -f "$T/loris.json"
admin_run "slowloris" loris 200
assert "slowloris: the clients were closed and reconnected ($(kv reconnects "$out") by the probes)" \
    '[ "$(kv reconnects "$out")" -ge 50 ]'
check_eq "slowloris: all 30 admin probes answer 200" 30 "$(kv probes_ok "$out")"
assert "slowloris: each within $PROBE_MAX_MS ms ($(kv probes_max_ms "$out") ms)" \
    'lt "$(kv probes_max_ms "$out")" "$PROBE_MAX_MS"'
stapled_stop

# ---- 4. no-read clients: memory per connection, plain and TLS ------------------
cat >"$T/noread.py" <<'EOF'
import sys
import front_load as fl

port, pid, n, count, tls = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[6] == "tls"
r = fl.no_read(port, pid, n, count, open(sys.argv[5], "rb").read(), tls)
print(" ".join("%s=%s" % kv for kv in r.items()))
EOF
TPORT=$(free_port)
conf mem ""
STAPLED_CACHE=$T/store-mem stapled_start mem -f "$T/mem.json" --listen-tls "127.0.0.1:$TPORT" \
    --tls-cert "$T/tls.pem" --tls-key "$T/tls.key"
for kind in plain tls; do
	port=$SPORT
	[ $kind = tls ] && port=$TPORT
	out=$(timeout 150 "$PY" "$T/noread.py" "$port" "$SPID" "$NOREAD_CLIENTS" \
	    "$NOREAD_REQUESTS" "$T/req.der" $kind 2>&1)
	note "no-read $kind: $out"
	check_eq "no-read $kind: the warm-up hits answer 200" 3 "$(kv warm_ok "$out")"
	check_eq "no-read $kind: stapled holds the $NOREAD_CLIENTS connections" \
	    "$NOREAD_CLIENTS" "$(kv sockets "$out")"
	assert "no-read $kind: at most $MAX_PER_CONN_KB KiB a client, RssAnon growth plus Send-Q ($(kv per_conn_kb "$out") KiB: heap $(kv heap_per_conn_kb "$out"), Send-Q $(kv sendq_per_conn_kb "$out"))" \
	    '[ -n "$(kv per_conn_kb "$out")" ] && [ "$(kv per_conn_kb "$out")" -le "$MAX_PER_CONN_KB" ]'
	assert "no-read $kind: ... of it at most $MAX_HEAP_PER_CONN_KB KiB of heap ($(kv heap_per_conn_kb "$out") KiB)" \
	    '[ -n "$(kv heap_per_conn_kb "$out")" ] && [ "$(kv heap_per_conn_kb "$out")" -le "$MAX_HEAP_PER_CONN_KB" ]'
	check_eq "no-read $kind: each socket's send buffer is capped (tb)" \
	    "$SEND_BUFFER_TB" "$(kv tb "$out")"
	check_eq "no-read $kind: a fresh client's hits answer 200 meanwhile" 5 "$(kv fresh_ok "$out")"
	assert "no-read $kind: ... each within $HIT_MAX_MS ms ($(kv fresh_ms "$out") ms)" \
	    'lt "$(kv fresh_ms "$out")" "$HIT_MAX_MS"'
	grow=$(( $(kv rss_loaded_kb "$out") - $(kv rss_base_kb "$out") ))
	left=$(( $(kv rss_after_kb "$out") - $(kv rss_base_kb "$out") ))
	assert "no-read $kind: once they left, the heap is given back (RssAnon +$left KiB of +$grow KiB left)" \
	    '[ $((left * 4)) -lt "$grow" ]'
done
kill -0 "$SPID" 2>/dev/null && ok "stapled still runs" || fail "stapled died"
stapled_stop
it_done
