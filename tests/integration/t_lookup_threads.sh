#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# lookup_threads: hits looked up on threads of their own answer as the loop's did: the same bytes,
# in order on a pipelined connection, misses and tryLater behind them, clients that leave mid-lookup;
# with lookup_offload "disk" (the default) a store in memory is looked up on the loop.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_lookup_threads
pki_make
need_cmd python3

farm_start UP good -ndays 1 -rother CHAIN

# conf LOOKUP_THREADS [LOOKUP_OFFLOAD]
conf() {
	cat >"$T/stapled.json" <<EOF
{
  "cache_dir": "$T/cache",
  "lookup_threads": $1,
  "lookup_offload": "${2:-always}",
  $(ocsp_section "$UP")
}
EOF
}
conf 3
stapled_start d1 -f "$T/stapled.json"
assert "start-up: no fallback to lookups on the loop" \
    '! grep -q "looks entries up itself" "$T/d1.log"'
check_eq "three lookup threads, named for top -H and ps -L" 3 \
    "$(cat /proc/"$SPID"/task/*/comm | grep -c '^stapled-lookup$')"

# ---- 1. misses fill the store, then hits come off the threads ----------------
for i in 1 2 3 4 5 6; do
	mkreq "$T/r$i.der" "$ICA_CERT" "$(eval echo "\$LEAF$i")"
	post "$T/r$i.der" "$T/miss$i.der" /ocsp
	[ "$HTTP_CODE" = 200 ] || fail "miss $i: HTTP $HTTP_CODE"
done
check_eq "six misses made six upstream requests" 6 "$(upstream_count good)"
for i in 1 2 3 4 5 6; do
	post "$T/r$i.der" "$T/hit$i.der" /ocsp
	cmp -s "$T/miss$i.der" "$T/hit$i.der" || fail "hit $i: not the stored bytes"
done
ok "six hits: the bytes each miss stored"
check_eq "the hits asked no upstream" 6 "$(upstream_count good)"
metrics_get "$T/m1"
check_eq "counted as hits" 6 \
    "$(metric_sum "$T/m1" 'stapled_requests_total.*route="ocsp_post".*result="hit"')"
check_eq "lookup_offload always: every lookup ran on a thread" "12 0" \
    "$(metric_sum "$T/m1" 'stapled_lookups_total\{where="thread"') $(metric_sum "$T/m1" 'stapled_lookups_total\{where="loop"')"

# ---- 2. a pipelined connection: answers in order, a miss among the hits ---------
mkreq "$T/r7.der" "$ICA_CERT" "$LEAF7"
cat >"$T/pipe.py" <<'EOF'
import socket, sys
sys.path.insert(0, sys.argv[1])
import http1
port, out = int(sys.argv[2]), sys.argv[3]
ders = [open(p, "rb").read() for p in sys.argv[4:]]
s = socket.create_connection(("127.0.0.1", port), timeout=20)
wire = b"".join(b"POST /ocsp HTTP/1.1\r\nHost: t\r\nContent-Type: application/ocsp-request\r\n"
                b"Content-Length: %d\r\n\r\n" % len(d) + d for d in ders)
s.sendall(wire)
buf = b""
for i in range(len(ders)):
    r = http1.read_answer(s, buf)
    if r is None:
        sys.exit("closed after %d answers" % i)
    status, head, body, buf = r
    open("%s%d.der" % (out, i), "wb").write(body)
EOF
python3 "$T/pipe.py" "$top_srcdir/tests/integration" "$SPORT" "$T/pipe" \
    "$T/r1.der" "$T/r2.der" "$T/r7.der" "$T/r3.der" "$T/r1.der" "$T/r6.der" ||
    fail "pipelined: not every answer came"
n=0
for want in miss1 miss2 - miss3 miss1 miss6; do
	if [ "$want" = - ]; then
		[ "$(resp_status "$T/pipe$n.der")" = successful ] ||
		    fail "pipelined answer $n (a miss) is not a successful answer"
	else
		cmp -s "$T/$want.der" "$T/pipe$n.der" ||
		    fail "pipelined answer $n is not $want's bytes"
	fi
	n=$((n + 1))
done
ok "pipelined: six answers in the order asked, the miss among them fetched"
check_eq "the pipeline's one miss made one upstream request" 7 "$(upstream_count good)"

# ---- 3. clients that leave before their answer; many at once ----------------------
cat >"$T/crowd.py" <<'EOF'
import socket, struct, sys, threading
sys.path.insert(0, sys.argv[1])
import http1
port, mode, n = int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
ders = [open(p, "rb").read() for p in sys.argv[5:]]
def req(d):
    return (b"POST /ocsp HTTP/1.1\r\nHost: t\r\nContent-Type: application/ocsp-request\r\n"
            b"Content-Length: %d\r\n\r\n" % len(d) + d)
bad = []
sent = threading.Barrier(n)
def one(i):
    d = ders[i % len(ders)]
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=20)
        if mode == "leave":
            # Every request in, then every client resets at once: the
            # lookups queued behind one another are in flight when it shows.
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.sendall(req(d))
            sent.wait()
            s.close()
            return
        s.sendall(req(d))
        r = http1.read_answer(s, b"")
        if r is None or r[0] != 200:
            bad.append(i)
        s.close()
    except OSError as e:
        bad.append(i)
ts = [threading.Thread(target=one, args=(i,)) for i in range(n)]
for t in ts: t.start()
for t in ts: t.join()
print(len(bad))
EOF
fds_before=$(ls "/proc/$SPID/fd" | wc -l)
python3 "$T/crowd.py" "$top_srcdir/tests/integration" "$SPORT" leave 400 \
    "$T/r1.der" "$T/r2.der" "$T/r3.der" >/dev/null
python3 "$T/crowd.py" "$top_srcdir/tests/integration" "$SPORT" leave 400 \
    "$T/r4.der" "$T/r5.der" "$T/r6.der" >/dev/null
check "400 x 2 clients that left mid-lookup: stapled still runs" kill -0 "$SPID"
post "$T/r2.der" "$T/after.der" /ocsp
check_bytes "after them a hit is answered with the stored bytes" "$T/miss2.der" "$T/after.der"
for _ in $(seq 50); do
	[ "$(ls "/proc/$SPID/fd" | wc -l)" -le "$fds_before" ] && break
	sleep 0.1
done
check "their connections are closed (fds back to $fds_before)" \
    [ "$(ls "/proc/$SPID/fd" | wc -l)" -le "$fds_before" ]
check_eq "300 clients at once, every one answered 200" 0 \
    "$(python3 "$T/crowd.py" "$top_srcdir/tests/integration" "$SPORT" wait 300 \
    "$T/r1.der" "$T/r2.der" "$T/r3.der" "$T/r4.der" "$T/r5.der" "$T/r6.der")"

# ---- 4. upstream dead: stored entries are served, the rest get tryLater --------------
farm_stop good
post "$T/r5.der" "$T/dead5.der" /ocsp
check_bytes "upstream dead: a stored entry is served" "$T/miss5.der" "$T/dead5.der"
mkreq "$T/r8.der" "$ICA_CERT" "$LEAF8"
post "$T/r8.der" "$T/dead8.der" /ocsp
check_trylater "upstream dead: an entry not stored gets tryLater" "$T/dead8.der"

# ---- 5. a reload keeps the threads; the count takes effect at a restart -------------
conf 1 always
kill -HUP "$SPID"
wait_for_line "$T/d1.log" "lookup_threads take effect at the next restart" >/dev/null ||
    fail "SIGHUP with another lookup_threads: no line saying it waits for a restart"
post "$T/r3.der" "$T/reload3.der" /ocsp
check_bytes "after the reload a hit is served" "$T/miss3.der" "$T/reload3.der"
stapled_stop
check_eq "SIGTERM: stapled exits 0" 0 "$BG_RC"

# ---- 6. lookup_offload "disk": a store in memory is looked up on the loop ----------
conf 2 disk
stapled_start d2 -f "$T/stapled.json"
# A major fault of the daemon's own (a library page a loaded machine
# dropped) also counts as reading from the disk, for CACHE_READER_HOLD_US
# (2 s): six hits again after that hold, at most twice more, and one round
# of six with the store in memory must stay on the loop.
loop_thread() {
	metrics_get "$1"
	echo "$(metric_sum "$1" 'stapled_lookups_total\{where="loop"') $(metric_sum "$1" 'stapled_lookups_total\{where="thread"')"
}
got=
for attempt in 1 2 3; do
	read -r l0 t0 <<<"$(loop_thread "$T/m2a")"
	for i in 1 2 3 4 5 6; do
		post "$T/r$i.der" "$T/disk$i.der" /ocsp
		cmp -s "$T/miss$i.der" "$T/disk$i.der" || fail "lookup_offload disk: hit $i not the stored bytes"
	done
	read -r l1 t1 <<<"$(loop_thread "$T/m2")"
	got="$((l1 - l0)) $((t1 - t0))"
	[ "$got" = "6 0" ] && break
	note "round $attempt of six hits: $got (loop, thread); again after the hold"
	sleep 2.2
done
check_eq "lookup_offload disk, store in memory: six lookups on the loop, none on a thread" "6 0" "$got"

# Then the store leaves memory: once the quiet daemon has released its map
# (docs/refresh.md, "Memory"), the kernel may drop the file's pages, and the
# next hit reads its pages from the disk. From there the threads take the
# lookups.
map_rss_kb() {
	awk '/^[0-9a-f]+-[0-9a-f]+ / { m = ($NF ~ /\/data\.mdb$/) } m && /^Rss:/ { s += $2 }
	    END { print s + 0 }' "/proc/$SPID/smaps"
}
for _ in $(seq 50); do [ "$(map_rss_kb)" = 0 ] && break; sleep 0.1; done
python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)' "$T/cache/data.mdb"
resident=$(fincore -n -b -o RES "$T/cache/data.mdb" 2>/dev/null | tr -d ' ')
if [ "$(map_rss_kb)" = 0 ] && [ "$resident" = 0 ]; then
	for i in 1 2 3 4 5 6; do post "$T/r$i.der" "$T/cold$i.der" /ocsp; done
	check_bytes "the store read from the disk: the stored bytes" "$T/miss6.der" "$T/cold6.der"
	metrics_get "$T/m3"
	assert "a lookup read from the disk sent the next ones to the threads" \
	    '[ "$(metric_sum "$T/m3" "stapled_lookups_total.where=.thread")" -ge 1 ]'
else
	note "SKIP the store read from the disk: its pages stayed in memory" \
	    "(mapped: $(map_rss_kb) KiB; resident after the advice: ${resident:-unknown} bytes)"
fi
stapled_stop

# ---- 7. a configuration outside 0..64 is refused -----------------------------------
conf 65
assert "lookup_threads 65: refused by -n" '! "$STAPLED" -n -f "$T/stapled.json" >"$T/n.out" 2>&1'
check "the error names the key" grep -q "lookup_threads" "$T/n.out"
conf 2 sometimes
assert "lookup_offload \"sometimes\": refused by -n" '! "$STAPLED" -n -f "$T/stapled.json" >"$T/n2.out" 2>&1'
check "the error names the choices" grep -q '"disk", "always"' "$T/n2.out"

it_done
