#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The release of LMDB's map pages (docs/refresh.md, "Memory"): under hit
# load the pages the hits read stay mapped (a second round over the same
# keys faults little), a quiet daemon lets them go at the end of a walk
# pass, and with map_resident_max_mb they go under load too.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_map_release
need_py
export PYTHONPATH=$top_srcdir/tests/integration	# http1.py
need_fill

NENT=8000
MAP_MB=256

fill_pki "$T/pki"
pki=$FILL_PKI

mkdir -p "$T/store" "$T/out"
BENCH_FILL_MAP_MB=$MAP_MB "$FILL" -s "$pki" -o "$T/out" "$T/store" "$NENT" \
    >"$T/fill.log" 2>&1 || die "bench-fill: $(tail -3 "$T/fill.log")"

cat >"$T/client.py" <<'EOF'
import socket, sys, time
from http1 import read_answer, request

def status(pid):
    f = {}
    with open("/proc/%s/status" % pid) as fh:
        for line in fh:
            k, _, v = line.partition(":")
            f[k] = v.split()[0] if v.split() else ""
    with open("/proc/%s/stat" % pid) as fh:
        minflt = int(fh.read().rsplit(")", 1)[1].split()[7])
    return minflt, int(f["RssFile"])

def round_over(port, paths):
    """GET every path on one keep-alive connection: the 200 answers."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.settimeout(10)
    ok, buf = 0, b""
    for p in paths:
        s.sendall(request(p))
        a = read_answer(s, buf)
        if a is None:
            return ok
        ok += a[0] == 200
        buf = a[3]
    s.close()
    return ok

port, pid, nrounds = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
paths = [l.strip() for l in open(sys.argv[4]) if l.strip()]
pause = float(sys.argv[5]) if len(sys.argv) > 5 else 0.0
f0, r0 = status(pid)
faults, ok = [], 0
for i in range(nrounds):
    if i > 0 and pause > 0:
        time.sleep(pause)
        f0, _ = status(pid)
    ok += round_over(port, paths)
    f, r = status(pid)
    faults.append(f - f0)
    f0 = f
print("ok=%d of=%d rssfile_start_kb=%d rssfile_end_kb=%d faults=%s" %
      (ok, nrounds * len(paths), r0, r, ",".join(map(str, faults))))
EOF

kv() { printf '%s\n' "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
rss_file_kb() { awk '/^RssFile:/ { print $2 }' "/proc/$1/status"; }

# conf NAME [EXTRA-JSON]: a config on the filled store, the upstream dead
conf() {
	cat >"$T/$1.conf" <<-EOF
	{
	  "cache_dir": "$T/store",
	  "map_size_mb": $MAP_MB,
	  "ocsp": {
	    "upstreams": ["http://127.0.0.1:$(dead_port 1)"],
	    "anchors": ["$pki/root.pem"],
	    "intermediates": ["$pki/ica.pem"]
	  }${2:-}
	}
	EOF
}

# 1. Hits keep their pages; a quiet daemon drops them at a pass's end.
conf plain
STAPLED_CACHE=$T/store stapled_start plain -f "$T/plain.conf"
# The load is measured once a second: until the first check inside round
# 1, walk chunks may still release, so round 3 is the one compared.
out=$(timeout 120 "$PY" "$T/client.py" "$SPORT" "$SPID" 3 "$T/out/paths" 2>&1)
note "$out"
assert "every GET over $NENT entries answered 200, three times" \
    '[ -n "$(kv ok "$out")" ] && [ "$(kv ok "$out")" = "$(kv of "$out")" ]'
f1=$(kv faults "$out" | cut -d, -f1)
f2=$(kv faults "$out" | cut -d, -f2)
f3=$(kv faults "$out" | cut -d, -f3)
# The uncapped daemon's worst later round: the reference for section 2.
ref=$f3
[ -n "$f2" ] && [ "$f2" -gt "$ref" ] && ref=$f2
assert "a third round over the same keys faults under a third as often ($f3 vs $f1)" \
    '[ -n "$f3" ] && [ "$f1" -gt 0 ] && [ $((f3 * 3)) -lt "$f1" ]'
loaded=$(kv rssfile_end_kb "$out")
base=$(kv rssfile_start_kb "$out")
# Quiet: a pass ends (a second apart at most, plus the pass) and releases.
dropped=
for i in $(seq 100); do
	now=$(rss_file_kb "$SPID")
	if [ $((now - base)) -lt $(((loaded - base) / 2)) ]; then
		dropped=$now
		break
	fi
	sleep 0.1
done
assert "quiet, the mapped pages are released (RssFile ${loaded:-?} KiB -> ${dropped:-not dropped})" \
    '[ -n "$dropped" ]'
stapled_stop

# 2. map_resident_max_mb: past it, pages are released under load too. The
# release is decided at a check once a second: a pause of 2.5 s between
# rounds puts a check before each later round, however fast rounds run,
# with one to spare for a loaded machine whose timers run late.
conf capped ', "map_resident_max_mb": 1'
STAPLED_CACHE=$T/store stapled_start capped -f "$T/capped.conf"
out=$(timeout 120 "$PY" "$T/client.py" "$SPORT" "$SPID" 4 "$T/out/paths" 2.5 2>&1)
note "$out"
f1=$(kv faults "$out" | cut -d, -f1)
rest=$(kv faults "$out" | cut -d, -f2- | tr ',' '\n' | awk '{ s += $1 } END { print s + 0 }')
# How much a later round faults again depends on what fault-around maps
# back per fault and on where in a round the release fell (CI saw 946,
# 491, 616 after 4510), so the measure is the uncapped daemon's worst later
# round over the same keys: the three capped rounds fault at least three
# times as often each. (Fresh-clone runs saw 856 to 2,411 a capped round
# beside 229 to 289 uncapped, whose walk passes release too; a cap that did
# nothing would fault about as the uncapped daemon does.)
assert "with map_resident_max_mb 1, later rounds fault again ($rest after $f1; uncapped: $ref a round at worst)" \
    '[ -n "$f1" ] && [ "$f1" -gt 0 ] && [ "$rest" -ge $((9 * (ref + 5))) ]'
stapled_stop
it_done
