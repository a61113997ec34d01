#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Damaged records under a running daemon, upstream dead: one byte altered
# inside two stored answers and inside a third entry's nextUpdate, each
# found in data.mdb by its own bytes (their structure intact: only the
# records' checksums can tell). Asked on the lookup threads, the three are
# never served (tryLater), the other entries are, byte for byte; each is
# counted once in stapled_store_damaged_total{where=...} however often it
# is asked, logged with its key, and removed from the store; importing a
# bundle exported before the damage stores them again, and they are served.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_record_damage
need_cmd python3
need_ctl
need_fill
N=20
ASKS=3			# rounds of asks: the count stays one per record
DROP_MAX_DS=50		# the removals land within 5 s

fill_pki "$T/pki" P-256
fill_signed "$T/out" "$T/cache" "$N" 86400
DEAD=$(dead_port 1)
cat >"$T/conf.json" <<EOF
{
  "cache_dir": "$T/cache",
  "lookup_threads": 2,
  "lookup_offload": "always",
  "ocsp": {
    "client_miss_rate_per_s": 0,
    "upstreams": [ { "url": "http://127.0.0.1:$DEAD/", "name": "dead" } ],
    "anchors": [ "$FILL_PKI/root.pem" ],
    "intermediates": [ "$FILL_PKI/ica.pem" ]
  }
}
EOF
"$CTL" -C "$T/cache" -f "$T/conf.json" export --out "$T/bundle" \
    >"$T/export.log" 2>&1 || die "staplectl export: $(cat "$T/export.log")"

# ask: GET every entry once; prints "stored=N trylater=N wrong=N" (wrong:
# anything but the stored bytes or tryLater: altered bytes served).
cat >"$T/ask.py" <<'EOF'
import http.client, os, sys, urllib.parse
port, out = int(sys.argv[1]), sys.argv[2]
trylater = bytes.fromhex("30030a0103")
n = {"stored": 0, "trylater": 0, "wrong": 0}
c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
for line in open(os.path.join(out, "paths")):
    path = line.strip()
    want = open(os.path.join(out, "www", urllib.parse.unquote(path).lstrip("/")), "rb").read()
    c.request("GET", path)
    r = c.getresponse()
    body = r.read()
    if r.status == 200 and body == want:
        n["stored"] += 1
    elif r.status == 200 and body == trylater:
        n["trylater"] += 1
    else:
        n["wrong"] += 1
print(" ".join("%s=%d" % kv for kv in n.items()))
EOF
ask() { python3 "$T/ask.py" "$SPORT" "$T/out"; }

# damage BUNDLE DATA: for the first three entries of the bundle by key,
# alter one bit of the answers of the first two wherever their bytes lie
# in DATA, and one bit of the third's nextUpdate in its meta record (the
# kind byte and key, then version 1, kind OCSP, the check byte). Prints
# the three keys.
damage() {
	python3 - "$1" "$2" <<'EOF'
import base64, json, struct, sys
bundle, path = sys.argv[1], sys.argv[2]
ents = sorted((json.loads(l) for l in open(bundle)), key=lambda e: e.get("key", ""))
ents = [e for e in ents if e.get("type") == "entry"][:3]
def where(data, pat, ok=lambda at: True):
    at, found = data.find(pat), []
    while at != -1:
        if ok(at):
            found.append(at)
        at = data.find(pat, at + 1)
    return found
# One byte written at each place, nothing else: the daemon writes beside us.
with open(path, "r+b") as f:
    data = f.read()
    flips = []
    for e in ents[:2]:
        der = base64.b64decode(e["response"])
        at = where(data, der)
        if not at:
            sys.exit("answer of %s not in the file" % e["key"])
        flips += [(a + len(der) // 2, 0x10) for a in at]
    pat = bytes([1]) + bytes.fromhex(ents[2]["key"]) + bytes([1, 1])
    # the meta record: after the key, version 1, kind 1, status, check 0x5a
    at = where(data, pat, lambda a: data[a + len(pat) + 1] == 0x5a)
    if not at:
        sys.exit("meta of %s not in the file" % ents[2]["key"])
    flips += [(a + len(pat) - 2 + 20 + 3, 0x02) for a in at]
    for off, bit in flips:
        f.seek(off)
        f.write(bytes([data[off] ^ bit]))
for e in ents:
    print(e["key"])
EOF
}

stapled_start d -f "$T/conf.json"
# Damage once the first pass over the store has ended, and before any
# ask: no write of the daemon moves a record while its bytes are found.
metric_wait "$T/m0" '^stapled_store_map_bytes$' 1 ||
    die "no complete pass over the store"
keys=$(damage "$T/bundle" "$T/cache/data.mdb") || die "damage not made"
set -- $keys
K1=$1 K2=$2 K3=$3

for i in $(seq "$ASKS"); do
	out=$(ask)
	check_eq "after the damage, round $i: the three never served, the rest as stored ($out)" \
	    "stored=$((N - 3)) trylater=3 wrong=0" "$out"
done
metrics_get "$T/m1"
check_eq "each damaged record counted once (records: lookup, walk, write)" 3 \
    "$(metric_sum "$T/m1" '^stapled_store_damaged_total[{]where="(lookup|walk|write)"[}]$')"
check_eq "... the two answers by the lookups that met them" 2 \
    "$(grep -c 'ocsp entry .* damaged: its body record fails its check (checksum mismatch), found by a lookup' "$T/d.log")"
check "the metric's series for a store moved aside stays 0" \
    grep -qx 'stapled_store_damaged_total{where="store"} 0' "$T/m1"
for k in $K1 $K2; do
	check "the log names the answer's key ${k:0:16}..." \
	    grep -q "error: cache .*: ocsp entry $k damaged: its body record fails its check (checksum mismatch), found by a lookup; " "$T/d.log"
done
check "the log names the altered meta's key ${K3:0:16}..." \
    grep -Eq "error: cache .*: ocsp entry $K3 damaged: its meta record fails its check \(checksum mismatch\), found by a (lookup|walk|write)" "$T/d.log"
check "no store moved aside for damage of records" \
    sh -c "! ls '$T/cache'/data.mdb.damaged-* >/dev/null 2>&1"

i=0
until [ "$("$CTL" -C "$T/cache" list 2>/dev/null | wc -l)" -eq $((N - 3)) ]; do
	i=$((i + 1)); [ $i -lt "$DROP_MAX_DS" ] || break
	sleep 0.1
done
"$CTL" -C "$T/cache" list >"$T/list" 2>"$T/list.err"
check_eq "the three removed from the store" $((N - 3)) "$(wc -l <"$T/list")"
check "... and no record of it fails its check" sh -c "! grep -q undecodable '$T/list.err'"

"$CTL" -C "$T/cache" -f "$T/conf.json" import "$T/bundle" >"$T/import.log" 2>&1
check_eq "staplectl import of the bundle beside the daemon exits 0" 0 $?
out=$(ask)
check_eq "after the import, every entry served as stored again ($out)" \
    "stored=$N trylater=0 wrong=0" "$out"
metrics_get "$T/m2"
check_eq "nothing more counted" 3 \
    "$(metric_sum "$T/m2" '^stapled_store_damaged_total[{]where="(lookup|walk|write)"[}]$')"
stapled_stop
check_eq "SIGTERM exits 0" 0 "$BG_RC"

it_done
