#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Damage that arrives while stapled runs, after its start-up check passed
# (page noise, truncation to half, every page after the metas zeroed, a
# damaged branch page), with lookups on the loop and on four threads: it is
# counted and logged, and stapled serves again within 10 s, either in place
# or after one restart (a fault in the map: exit 3 and a marker, under a
# supervisor that restarts as systemd's Restart=on-failure does), never in
# a crash loop. After it, entries come again from a live upstream, and with
# the upstream dead the answers are tryLater, never bytes that were not
# stored.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_runtime_damage
need_cmd python3 truncate
export PYTHONPATH=$top_srcdir/tests/integration	# http1.py
need_fill
N=600			# signed entries: about 300 pages of bodies
SERVE_MAX_S=10		# from the damage to serving again
FAULT_EXIT=3		# stapled's exit after a fault in the map (stapled(8))

# The shipped unit restarts on exit 3, as the supervisor below does.
UNIT=$top_srcdir/systemd/stapled.service.in
check "stapled.service restarts on failure" grep -qx 'Restart=on-failure' "$UNIT"
check "stapled.service keeps exit $FAULT_EXIT restartable" \
    sh -c "! grep -Eq '^(RestartPreventExitStatus|SuccessExitStatus)=.*\\b$FAULT_EXIT\\b' '$UNIT'"

fill_pki "$T/pki" P-256
fill_signed "$T/out" "$T/pristine" "$N" 86400
fill_responder RP responder "$T/out/index.txt"
DEAD=$(dead_port 1)

# A round of GETs over every path on keep-alive connections (new ones when
# one closes or is refused). Prints "ok=N trylater=N wrong=N failed=N":
# with "stored", ok means the stored bytes; with "live", ok means any
# successful OCSP answer. wrong: a 200 that is neither.
cat >"$T/round.py" <<'EOF'
import os, socket, sys, time, urllib.parse
from http1 import read_answer, request
port, mode, www, paths = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
paths = [l.strip() for l in open(paths) if l.strip()]
TRYLATER = bytes.fromhex("30030a0103")
def stored(p):
    with open(os.path.join(www, "ocsp", urllib.parse.unquote(p[len("/ocsp/"):])), "rb") as f:
        return f.read()
def successful(b):
    # OCSPResponse ::= SEQUENCE { responseStatus ENUMERATED (0), responseBytes ... }
    if len(b) < 8 or b[0] != 0x30:
        return False
    i = 2 + (b[1] & 0x7f if b[1] & 0x80 else 0)
    return b[i:i + 3] == b"\x0a\x01\x00" and len(b) > 5
n = {"ok": 0, "trylater": 0, "wrong": 0, "failed": 0}
s, buf, gone = None, b"", 0
for p in paths:
    if gone >= 20:
        n["failed"] += 1	# nothing listens: no use waiting on each path
        continue
    for attempt in range(3):
        try:
            if s is None:
                s = socket.create_connection(("127.0.0.1", port), timeout=10)
                buf = b""
            s.sendall(request(p))
            a = read_answer(s, buf)
        except OSError:
            a = None
        if a is not None:
            break
        if s is not None:
            s.close()
        s = None
        time.sleep(0.05)
    if a is None:
        n["failed"] += 1
        gone += 1
        continue
    gone = 0
    status, head, body, buf = a
    if status != 200:
        n["failed"] += 1
    elif body == TRYLATER:
        n["trylater"] += 1
    elif (mode == "stored" and body == stored(p)) or (mode == "live" and successful(body)):
        n["ok"] += 1
    else:
        n["wrong"] += 1
print(" ".join("%s=%d" % kv for kv in n.items()))
EOF
round() { timeout 120 python3 "$T/round.py" "$1" "$2" "$T/out/www" "$T/out/paths"; }
kv() { printf '%s\n' "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"; }

# damage KIND FILE: what befalls the running daemon's data.mdb.
damage() {
	python3 - "$1" "$2" <<'EOF'
import os, random, struct, sys
kind, path = sys.argv[1], sys.argv[2]
psize = 4096
size = os.path.getsize(path)
pages = size // psize
r = random.Random(7)
def noise():
    return bytes(r.getrandbits(8) for _ in range(psize))
def first_leaf(root):
    """The first child of a branch page: a leaf of the same tree."""
    with open(path, "rb") as f:
        f.seek(root * psize)
        pg = f.read(psize)
    off = struct.unpack_from("<H", pg, 16)[0]
    lo, hi, fl = struct.unpack_from("<HHH", pg, off)
    return lo | hi << 16 | fl << 32
def meta_root():
    """The root page of the "meta" database, from the newest meta page."""
    with open(path, "rb") as f:
        m = []
        for p in (0, 1):
            f.seek(p * psize + 16)
            b = f.read(136)
            # magic, version, address, mapsize, free db, main db, last_pg, txnid
            m.append((struct.unpack_from("<Q", b, 128)[0], struct.unpack_from("<Q", b, 24 + 48 + 40)[0]))
        main_root = max(m)[1]
        f.seek(main_root * psize)
        pg = f.read(psize)
    lower = struct.unpack_from("<H", pg, 12)[0]
    for i in range((lower - 16) // 2):
        off = struct.unpack_from("<H", pg, 16 + 2 * i)[0]
        lo, hi, flags, ksize = struct.unpack_from("<HHHH", pg, off)
        if pg[off + 8:off + 8 + ksize] == b"meta":
            return struct.unpack_from("<Q", pg, off + 8 + ksize + 40)[0]
    sys.exit("no meta database")
with open(path, "r+b") as f:
    if kind == "noise":
        for p in r.sample(range(2, pages), 40):
            f.seek(p * psize)
            f.write(noise())
    elif kind == "truncate":
        f.truncate(size // 2)
    elif kind == "zeroed":
        f.seek(2 * psize)
        f.write(bytes(size - 2 * psize))
    elif kind == "leaf":
        f.seek(first_leaf(meta_root()) * psize)
        f.write(bytes(psize))
    elif kind == "branch":
        # Still a branch page with its own number, but one key and noise
        # after it: LMDB asserts that a branch page has two keys or more.
        root = meta_root()
        f.seek(root * psize + 8)
        flags = struct.unpack("<H", f.read(4)[2:])[0]
        if not flags & 1:
            sys.exit("the meta database's root %d is not a branch page" % root)
        page = bytearray(noise())
        page[0:16] = struct.pack("<QHHHH", root, 0, 1, 18, psize - 64)
        f.seek(root * psize)
        f.write(page)
EOF
}

# supervise NAME CONF PORT: stapled on PORT under a loop that restarts it,
# as Restart=on-failure would, when it exits with FAULT_EXIT (at most 3
# times); each exit status is appended to $T/NAME.exits, the pid running
# is in $T/NAME.pid. SIGTERM to the loop stops stapled and the loop.
supervise() {
	local name=$1 conf=$2 port=$3
	: >"$T/$name.exits"
	(
		child=
		trap 'kill -TERM "$child" 2>/dev/null; wait "$child"; echo $? >>"$T/$name.exits"; exit 0' TERM
		for _ in 1 2 3 4; do
			"$STAPLED" -f "$conf" --listen "127.0.0.1:$port" >>"$T/$name.log" 2>&1 &
			child=$!
			echo "$child" >"$T/$name.pid"
			wait "$child"
			rc=$?
			echo "$rc" >>"$T/$name.exits"
			[ "$rc" = "$FAULT_EXIT" ] || exit 0
		done
	) &
	SUP=$!
	IT_PIDS="$IT_PIDS $SUP"
}

# serving PORT: /healthz answers and the store's damage is counted.
serving_counted() {
	SURL=http://127.0.0.1:$1
	curl -s -o /dev/null -m 1 "$SURL/healthz" || return 1
	metrics_get "$T/m.now" || return 1
	[ "$(metric_sum "$T/m.now" '^stapled_store_damaged_total[{]where="store"[}]$')" -ge 1 ]
}

# one KIND THREADS UPSTREAM(live|dead) [EXPECT]: EXPECT "place" (survived
# by the same process) or a word the restart's cause names (SIGBUS).
one() {
	local kind=$1 threads=$2 up=$3 expect=${4:-} name=$1_$2 port t0 t1 out i upurl
	mkdir -p "$T/$name"
	cp -a "$T/pristine" "$T/$name/cache"
	if [ "$up" = live ]; then upurl=http://127.0.0.1:$RP/; else upurl=http://127.0.0.1:$DEAD/; fi
	cat >"$T/$name/conf.json" <<-EOF
	{
	  "cache_dir": "$T/$name/cache",
	  "lookup_threads": $threads,
	  "lookup_offload": "always",
	  "ocsp": {
	    "client_miss_rate_per_s": 0,
	    "upstreams": [ { "url": "$upurl", "name": "up" } ],
	    "anchors": [ "$FILL_PKI/root.pem" ],
	    "intermediates": [ "$FILL_PKI/ica.pem" ]
	  }
	}
	EOF
	port=$(free_port)
	SURL=http://127.0.0.1:$port
	supervise "$name" "$T/$name/conf.json" "$port"
	i=0
	until curl -s -o /dev/null -m 1 "$SURL/healthz"; do
		i=$((i + 1)); [ $i -lt 100 ] || die "$name: stapled did not come up"
		sleep 0.1
	done
	# The refresh walk's first pass ends after the check walk passed.
	metric_wait "$T/$name/m0" '^stapled_store_map_bytes$' 1 ||
	    die "$name: no complete pass over the sound store"
	check_eq "$name: the start-up check found the store sound" 0 \
	    "$(metric_sum "$T/$name/m0" '^stapled_store_damaged_total[{]where="store"[}]$')"

	t0=$(now_ms)
	damage "$kind" "$T/$name/cache/data.mdb" || die "$name: damage not made"
	round "$port" stored >/dev/null
	until serving_counted "$port"; do
		[ $(( $(now_ms) - t0 )) -lt $((SERVE_MAX_S * 1000)) ] || break
		sleep 0.1
	done
	t1=$(now_ms)
	check "$name: serving again, the damage counted, within ${SERVE_MAX_S} s ($((t1 - t0)) ms)" \
	    serving_counted "$port"
	check "$name: the damage logged with its cause" \
	    grep -Eq 'error: cache .*store damaged \(.+\): moved aside' "$T/$name.log"
	check "$name: data.mdb moved aside" \
	    sh -c "ls '$T/$name/cache'/data.mdb.damaged-* >/dev/null 2>&1"
	restarts=$(grep -c "^$FAULT_EXIT\$" "$T/$name.exits")
	check "$name: restarted at most once ($restarts)" [ "$restarts" -le 1 ]
	case $expect in
	place)
		check_eq "$name: survived in place, no restart" 0 "$restarts" ;;
	?*)
		check_eq "$name: one restart, after exit $FAULT_EXIT" 1 "$restarts"
		check "$name: the fault's line names $expect and the marker" \
		    grep -q "error: the store is damaged: .*$expect.*exiting for a restart" "$T/$name.log"
		check "$name: the restart moved it aside for what the marker said" \
		    grep -q "store damaged (the last run stopped at .*$expect" "$T/$name.log" ;;
	esac
	if [ "$up" = live ]; then
		out=$(round "$port" live)
		check_eq "$name: after it, every entry is served again from the live upstream ($out)" \
		    "ok=$N trylater=0 wrong=0 failed=0" "$out"
	else
		# The salvage ends within seconds; then what it carried is served.
		for _i in $(seq 100); do
			grep -q 'salvaged [0-9]* of [0-9]* entries' "$T/$name.log" && break
			sleep 0.1
		done
		salvaged=$(sed -n 's/.*salvaged \([0-9]*\) of [0-9]* entries.*/\1/p' "$T/$name.log" | tail -1)
		out=$(round "$port" stored)
		assert "$name: upstream dead: the salvaged entries (${salvaged:-none}) with their stored bytes, the rest tryLater, never other bytes ($out)" \
		    '[ -n "$salvaged" ] && [ "$(kv wrong "$out")" = 0 ] &&
		    [ "$(kv failed "$out")" = 0 ] && [ "$(kv ok "$out")" -ge "$salvaged" ]'
	fi
	check "$name: no crash loop: the same process still runs" \
	    kill -0 "$(cat "$T/$name.pid")"
	check "$name: no fault marker left" [ ! -e "$T/$name/cache/stapled.fault" ]
	bg_kill "$SUP" TERM
	check_eq "$name: then SIGTERM stops it with 0" "$restarts 0" \
	    "$restarts $(tail -n 1 "$T/$name.exits")"
}

# staplectl: a page LMDB finds of the wrong type (a zeroed leaf, past the
# cheap checks) stops the command with exit 3, saying damaged.
CTL=$top_builddir/staplectl
cp -a "$T/pristine" "$T/ctl"
damage leaf "$T/ctl/data.mdb" || die "leaf damage not made"
"$CTL" -C "$T/ctl" list >"$T/ctl.out" 2>"$T/ctl.err"
check_eq "staplectl list on a store LMDB reports damaged exits 3" 3 "$?"
check "staplectl says the store is damaged and why" \
    grep -q "cache $T/ctl is damaged: walk: MDB_CORRUPTED" "$T/ctl.err"

# Noise lands where the keys put it: any of the three ways.
one noise 0 live
one noise 4 dead
one truncate 4 live SIGBUS
one truncate 0 dead SIGBUS
one zeroed 0 dead place
one zeroed 4 live place
one branch 4 dead "LMDB assertion"
one branch 0 live "LMDB assertion"

it_done
