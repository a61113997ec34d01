#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# staplectl at a site's scale: a FIFO, a device or a directory refused at once (standard input only as -);
# a bundle's repeated lines reported as duplicates; a 64 MiB manifest and a 64 MiB evidence file in bounded memory.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_ctl_scale
need_ctl
need_fill
need_py
need_cmd timeout mkfifo jq
[ -x /usr/bin/time ] || skip "/usr/bin/time not installed"

MAX_RSS_KIB=262144		# 256 MiB: the target for a 64 MiB input
BIG_BYTES=67108864		# 64 MiB
DEAD=$(dead_port 1)
DEADURL=http://127.0.0.1:$DEAD/
NOCACHE=$T/no-cache

# A store of 20 answers signed by a test responder, and its bundle.
fill_pki "$T/pki"
cat >"$T/conf.json" <<EOF
{"ocsp": {"anchors": ["$FILL_PKI/root.pem"], "intermediates": ["$FILL_PKI/ica.pem"]}}
EOF
fill_signed "$T/fill" "$T/store" 20 86400
ctl -C "$T/store" -f "$T/conf.json" export --out "$T/b.jsonl"
assert "export of 20 answers: exit 0" '[ "$CTL_RC" = 0 ]'

# ---- 1. what is not a regular file is refused at once ---------------------------
mkfifo "$T/fifo"
mkdir "$T/dir"
printf '{}\n' >"$T/m-empty.json"
# refused WHAT PATH ARGS...: staplectl ARGS (PATH among them) exits 3 at once, naming PATH as WHAT.
refused() {
	local _what=$1 _path=$2
	shift 2
	timeout 10 "$CTL" "$@" >"$T/ctl.out" 2>&1
	CTL_RC=$?
	check_eq "$* ($_what): refused, exit 3" 3 "$CTL_RC"
	check "... says $_path is $_what and asks for a regular file or -" \
	    grep -q "^staplectl: $_path: $_what: give a regular file, or - for standard input$" \
	    "$T/ctl.out"
}
for what in "a FIFO:$T/fifo" "a device:/dev/zero" "a directory:$T/dir"; do
	w=${what%%:*}
	p=${what#*:}
	refused "$w" "$p" -C "$T/imp" -f "$T/conf.json" import "$p"
	refused "$w" "$p" -C "$T/store" -f "$T/conf.json" verify "$p"
	refused "$w" "$p" -C "$NOCACHE" fetch --manifest "$p" --out "$T/f.jsonl" \
	    --ocsp-upstream "$DEADURL"
	refused "$w" "$p" -C "$NOCACHE" manifest --evidence "$p" --out "$T/m.json"
done
check "nothing imported from them" test ! -e "$T/imp/data.mdb"
check "no bundle or manifest written" test ! -e "$T/f.jsonl" -a ! -e "$T/m.json"
# A pipe is read as standard input, "-", and only so.
cat "$T/b.jsonl" | timeout 30 "$CTL" -C "$T/store" -f "$T/conf.json" verify - \
    >"$T/ctl.out" 2>&1
check_eq "verify - from a pipe: exit 0" 0 "$?"
check "... 20 ok" grep -q ': 20 ok, 0 rejected, 0 duplicate(s)' "$T/ctl.out"
cat "$T/b.jsonl" | timeout 10 "$CTL" -C "$T/store" -f "$T/conf.json" verify /dev/stdin \
    >"$T/ctl.out" 2>&1
check_eq "verify /dev/stdin from a pipe: refused, exit 3" 3 "$?"
check "... as a FIFO" grep -q '/dev/stdin: a FIFO: give a regular file, or -' "$T/ctl.out"

# ---- 2. repeated lines are duplicates --------------------------------------------
# The bundle's 20 entries, each line 100 times, sealed again.
"$PY" - "$T/b.jsonl" "$T/dup.jsonl" <<'EOF'
import hashlib, json, sys
lines = open(sys.argv[1]).read().split("\n")[:-1]
ents = [l for l in lines if l.startswith('{"type":"entry"')]
certs = [l for l in lines if l.startswith('{"type":"cert"')]
body = "\n".join([lines[0]] + ents * 100 + certs) + "\n"
end = {"type": "end", "entries": len(ents) * 100,
       "sha256": hashlib.sha256(body.encode()).hexdigest()}
open(sys.argv[2], "w").write(body + json.dumps(end, separators=(",", ":")) + "\n")
EOF
ctl -C "$T/store" -f "$T/conf.json" verify "$T/dup.jsonl"
check_eq "verify of 2,000 lines repeating 20 entries: exit 0" 0 "$CTL_RC"
check "... 20 ok, 1,980 duplicates" \
    grep -q 'dup.jsonl: 20 ok, 0 rejected, 1980 duplicate(s), 1 certificate(s)$' "$T/ctl.out"
check_eq "... 20 ok lines" 20 "$(grep -c '^ok ocsp ' "$T/ctl.out")"
check "... line 22 names the line it repeats" \
    grep -q '^duplicate ocsp [0-9a-f]* (line 22): the same entry as line 2$' "$T/ctl.out"
ctl -C "$T/imp" -f "$T/conf.json" import "$T/dup.jsonl"
check_eq "import of it: exit 0" 0 "$CTL_RC"
check "... 20 imported, 1,980 duplicates" \
    grep -q 'dup.jsonl: 20 imported, 0 kept, 1980 duplicate(s), 0 rejected;' "$T/ctl.out"
check_eq "... 20 imported lines, 1,980 duplicate lines" "20 1980" \
    "$(grep -c '^imported ocsp ' "$T/ctl.out") $(grep -c '^duplicate ocsp ' "$T/ctl.out")"
check_eq "... 20 entries in the cache" 20 "$("$CTL" -C "$T/imp" list | wc -l)"
"$CTL" -C "$T/imp" -f "$T/conf.json" --json import "$T/dup.jsonl" >"$T/dup.json" 2>/dev/null
check_eq "import --json of it again: every entry kept, the duplicates counted" "20 0 1980" \
    "$(jq -r '"\(.kept) \(.imported) \(.duplicates)"' "$T/dup.json" 2>/dev/null)"

# ---- 3. a 64 MiB manifest and a 64 MiB evidence file in bounded memory ----------------
# OCSP records as staplectl writes them, under the test issuing CA, all
# upstreams dead: each is noted and not asked once the upstream is down.
openssl ocsp -issuer "$FILL_PKI/ica.pem" -serial 0x10000000 -no_nonce \
    -reqout "$T/tmpl.der" >/dev/null 2>&1 || die "openssl ocsp -reqout"
nrec=$("$PY" "$top_srcdir/tests/integration/big_manifest.py" "$T/tmpl.der" "$T/big.json" \
    --bytes "$BIG_BYTES") || die "big_manifest.py failed"
/usr/bin/time -f %M -o "$T/fetch.rss" "$CTL" -q -C "$NOCACHE" fetch \
    --manifest "$T/big.json" --out "$T/big.jsonl" --hash sha1 --ocsp-upstream "$DEADURL" \
    --rim-upstream "$DEADURL" >"$T/ctl.out" 2>&1
check_eq "fetch of a 64 MiB manifest, every upstream dead: exit 1 (nothing stored)" 1 "$?"
check "... every one of its $nrec records asked or noted as not asked" \
    grep -q "fetch: $nrec CertIDs: 0 stored, 3 unreachable .*, $((nrec - 3)) not asked" "$T/ctl.out"
rss=$(tail -n 1 "$T/fetch.rss")
check "... in at most 256 MiB (max RSS $rss KiB)" [ "${rss:-0}" -gt 0 -a "${rss:-0}" -le "$MAX_RSS_KIB" ]

# One evidence object with a member of 64 MiB of small values: jansson's
# tree of the whole is about twenty times its text.
"$PY" - "$top_srcdir/tests/vectors/nvidia/attestation-sdk/serialized_test_evidence/hopper_evidence.json" \
    "$T/big-ev.json" "$BIG_BYTES" <<'EOF'
import json, sys
o = json.load(open(sys.argv[1]))[0]
head = json.dumps(o)[:-1] + ', "padding": ['
n = (int(sys.argv[3]) - len(head) - 2) // 2
open(sys.argv[2], "w").write(head + "0," * (n - 1) + "0]}")
EOF
/usr/bin/time -f %M -o "$T/manifest.rss" "$CTL" -C "$NOCACHE" manifest \
    --evidence "$T/big-ev.json" --out "$T/m-big.json" >"$T/ctl.out" 2>&1
check_eq "manifest of a 64 MiB evidence file: exit 0" 0 "$?"
check "... its device's 9 CertIDs" grep -q "1 device(s), 9 CertID(s)" "$T/ctl.out"
rss=$(tail -n 1 "$T/manifest.rss")
check "... in at most 256 MiB (max RSS $rss KiB)" [ "${rss:-0}" -gt 0 -a "${rss:-0}" -le "$MAX_RSS_KIB" ]

it_done
