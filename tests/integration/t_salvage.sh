#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Salvage: a 400-entry store of signed OCSP answers with 16 random pages
# overwritten is moved aside at start, and what of it verifies again is
# carried into the new store: with the upstream dead, at least 75 % of the
# entries are served again byte for byte, and no answer differs from what
# was stored. `staplectl check --salvage` does the same offline.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_salvage
need_cmd openssl python3 flock
CTL=$top_builddir/staplectl
need_fill

N=400
DAMAGED_PAGES=16
MIN_PCT=75
VALIDITY_S=86400
SEED=${SALVAGE_SEED:-$(( $(od -An -N2 -tu2 /dev/urandom) ))}
echo "# damage seed $SEED (SALVAGE_SEED=$SEED repeats it)"

fill_pki "$T/pki"
P=$FILL_PKI
fill_signed "$T/out" "$T/cache" "$N" "$VALIDITY_S"
cp -r "$T/cache" "$T/offline"
cp -r "$T/cache" "$T/root"

# damage FILE N SEED: overwrite N random pages holding tree pages (their
# header names them, leaf or branch) with noise; the metas stay.
damage() {
	python3 - "$1" "$2" "$3" <<'PY'
import os, random, struct, sys
path, n, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
psize = 4096
r = random.Random(seed)
with open(path, "r+b") as f:
    data = f.read()
    tree = [p for p in range(2, len(data) // psize)
            if struct.unpack_from("<Q", data, p * psize)[0] == p and
            struct.unpack_from("<H", data, p * psize + 10)[0] & 0x03]
    for p in r.sample(tree, n):
        f.seek(p * psize)
        f.write(bytes(r.getrandbits(8) for _ in range(psize)))
PY
}
# damage_root FILE: noise over the page the newest meta names as the main
# tree's root (MDB_meta: dbs[1].md_root at 128, mm_txnid at 144), which
# the cheap checks at start read: the store is moved aside before serving.
damage_root() {
	python3 - "$1" <<'PY'
import os, struct, sys
psize = 4096
with open(sys.argv[1], "r+b") as f:
    metas = []
    for m in (0, 1):
        f.seek(m * psize + 128)
        root, = struct.unpack("<Q", f.read(8))
        f.seek(m * psize + 144)
        txn, = struct.unpack("<Q", f.read(8))
        metas.append((txn, root))
    f.seek(max(metas)[1] * psize)
    f.write(os.urandom(psize))
PY
}
damage "$T/cache/data.mdb" "$DAMAGED_PAGES" "$SEED" || die "damage"
damage_root "$T/root/data.mdb" || die "damage (root)"
damage "$T/offline/data.mdb" "$DAMAGED_PAGES" "$SEED" || die "damage (offline)"

cat >"$T/conf.json" <<EOF
{"ocsp": {"anchors": ["$P/root.pem"], "intermediates": ["$P/ica.pem"]}}
EOF

# serve_check NAME: GET every entry from $SURL; counts into $T/NAME.count
# as "same OTHER": answers byte-identical to the stored one, and answers
# that are neither that nor tryLater (which must be none).
serve_check() {
	python3 - "$SURL" "$T/out" >"$T/$1.count" <<'PY'
import http.client, os, sys, urllib.parse
url, out = sys.argv[1], sys.argv[2]
host, port = urllib.parse.urlparse(url).netloc.split(":")
c = http.client.HTTPConnection(host, int(port), timeout=30)
trylater = bytes.fromhex("30030a0103")
same = other = 0
for line in open(os.path.join(out, "paths")):
    path = line.strip()
    want = open(os.path.join(out, "www", urllib.parse.unquote(path).lstrip("/")), "rb").read()
    c.request("GET", path)
    resp = c.getresponse()
    body = resp.read()
    if resp.status == 200 and body == want:
        same += 1
    elif not (resp.status == 200 and body == trylater) and resp.status not in (502, 503, 504):
        other += 1
        print("differs: %s: HTTP %d, %d bytes" % (path, resp.status, len(body)), file=sys.stderr)
print(same, other)
PY
}

# ---- 1. the daemon, upstream dead: moved aside, salvaged, served ----------------
t0=$(now_ms)
stapled_start d -f "$T/conf.json" --ocsp-upstream http://127.0.0.1:9/
line=$(wait_for_line "$T/d.log" 'salvaged [0-9]+ of [0-9]+ entries') ||
    fail "the daemon logs 'salvaged N of M entries'"
t1=$(now_ms)
echo "# $line ($((t1 - t0)) ms from the start)"
check "the damage was logged at error" grep -q 'error: .*damaged' "$T/d.log"
check "data.mdb moved aside" sh -c "ls '$T/cache'/data.mdb.damaged-* >/dev/null 2>&1"
got=$(printf '%s\n' "$line" | sed -E 's/.*salvaged ([0-9]+) of ([0-9]+) entries.*/\1/')
of=$(printf '%s\n' "$line" | sed -E 's/.*salvaged ([0-9]+) of ([0-9]+) entries.*/\2/')
check "the log names the damaged file" \
    sh -c "printf '%s\n' '$line' | grep -q 'from .*data.mdb.damaged-'"
check "at least $MIN_PCT % of $N salvaged ($got of $of found)" \
    lt $(( N * MIN_PCT - 1 )) $(( got * 100 ))
metrics_get "$T/m"
check_eq "stapled_store_salvaged_total counts them" "$got" \
    "$(metric_sum "$T/m" '^stapled_store_salvaged_total$')"
check_eq "stapled_store_damaged_total 1" 1 \
    "$(metric_sum "$T/m" '^stapled_store_damaged_total[{]where="store"[}]$')"
curl -s -o "$T/readyz" "$SURL/readyz"
check "/readyz says what was salvaged" grep -q 'salvaged [0-9]* of' "$T/readyz"
serve_check d
read -r same other <"$T/d.count"
check_eq "no answer differs from the stored bytes" 0 "$other"
check "at least $MIN_PCT % served byte for byte with the upstream dead ($same of $N)" \
    lt $(( N * MIN_PCT - 1 )) $(( same * 100 ))
check_eq "every entry salvaged is served" "$got" "$same"
stapled_stop
check_eq "SIGTERM exits 0" 0 "$BG_RC"

# ---- 2. the main tree's root damaged: found at start, every entry salvaged -------
STAPLED_CACHE=$T/root stapled_start r -f "$T/conf.json" --ocsp-upstream http://127.0.0.1:9/
line=$(wait_for_line "$T/r.log" 'salvaged [0-9]+ of [0-9]+ entries') ||
    fail "root: the daemon logs 'salvaged N of M entries'"
check "root: moved aside by the checks at start, before ready" \
    awk '/store damaged/ { d = NR } /ready:/ { r = NR } END { exit !(d && r && d < r) }' \
    "$T/r.log"
serve_check r
read -r same other <"$T/r.count"
check_eq "root: no answer differs from the stored bytes" 0 "$other"
check_eq "root: every entry served again, byte for byte" "$N" "$same"
stapled_stop

# ---- 3. staplectl check --salvage, offline ------------------------------------------
"$CTL" -C "$T/offline" -f "$T/conf.json" check >"$T/c0.out" 2>"$T/c0.err"
check_eq "check on the damaged copy: exit 3" 3 "$?"
# The daemon's claim on the directory (flock(1) plays the daemon): refused, left in place.
flock -n "$T/offline" "$CTL" -C "$T/offline" -f "$T/conf.json" \
    check --salvage >"$T/cl.out" 2>"$T/cl.err"
check_eq "check --salvage while the directory is claimed: exit 3" 3 "$?"
check "... it names the claim" grep -q 'in use by another stapled' "$T/cl.err"
check "... and leaves data.mdb where it is" \
    sh -c "[ -s '$T/offline/data.mdb' ] && ! ls '$T/offline'/data.mdb.damaged-* >/dev/null 2>&1"
"$CTL" -C "$T/offline" -f "$T/conf.json" check --salvage >"$T/c1.out" 2>"$T/c1.err"
check_eq "check --salvage: exit 0" 0 "$?"
check "check --salvage says where the store went" grep -q 'moved aside to .*data.mdb.damaged-' "$T/c1.out"
off=$(sed -nE 's/.*salvaged ([0-9]+) of ([0-9]+) entries.*/\1/p' "$T/c1.out")
check_eq "check --salvage salvages what the daemon did" "$got" "${off:-none}"
"$CTL" -C "$T/offline" check >"$T/c2.out" 2>&1
check_eq "the new store is sound" 0 "$?"
n=$("$CTL" -C "$T/offline" list 2>/dev/null | wc -l)
check_eq "staplectl list shows the salvaged entries" "$got" "$n"
"$CTL" -C "$T/offline" -f "$T/conf.json" check --salvage >"$T/c3.out" 2>&1
check_eq "check --salvage on a sound store: exit 0, nothing moved" 0 "$?"
check_eq "... one file moved aside, not two" 1 \
    "$(ls "$T/offline" | grep -c '^data.mdb.damaged-')"
STAPLED_CACHE=$T/offline stapled_start off -f "$T/conf.json" --ocsp-upstream http://127.0.0.1:9/
serve_check off
read -r same2 other2 <"$T/off.count"
check_eq "offline salvage: no answer differs" 0 "$other2"
check_eq "offline salvage: every salvaged entry served" "$got" "$same2"
stapled_stop

it_done
