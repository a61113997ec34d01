#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Both ends of the air gap's routine as packaged: stapled-fetch puts a bundle in the outbox, keeps the newest N, keeps a
# partial one and fails, stores nothing with every upstream dead; stapled-boot-import fills an empty store from a directory
# of bundles (the daemon not running), and stapled then serves them with its upstream dead.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_airgap_jobs
need_ctl
FETCH=$top_builddir/tools/stapled-fetch
BOOT=$top_builddir/tools/stapled-boot-import
[ -f "$FETCH" ] && [ -f "$BOOT" ] || skip "tools/stapled-fetch or stapled-boot-import not built"
need_cmd flock jq
pki_make
DEAD=$(dead_port 1)

# conf FILE CACHE_DIR UPSTREAM: the test anchors, one OCSP upstream.
conf() {
	jq -n --arg c "$2" --arg u "$3" --arg a "$ANCHORS" --arg i "$INTERMEDIATES" \
	    '{ cache_dir: $c, ocsp: { upstreams: [$u], anchors: [$a], intermediates: [$i] } }' >"$1"
}
# bundles: the outbox's bundle names, one line.
bundles() { (cd "$OUT" && ls stapled-*.jsonl 2>/dev/null | tr '\n' ' '); }
# entries FILE: the entry lines of a bundle.
entries() { grep -c '^{"type":"entry"' "$1"; }
# fetch_run LOG: one run of the script, with the settings in $T/fetch.conf only; status in RUN_RC.
fetch_run() {
	env -i PATH="$PATH" STAPLED_FETCH_CONF="$T/fetch.conf" timeout 120 sh "$FETCH" >"$1" 2>&1
	RUN_RC=$?
}

# ---- 1. the connected side: the manifest, the settings in one file -----------------
farm_start UP good -ndays 1 -rother CHAIN
cat "$LEAF4" "$ICA_CERT" "$IDENT_CERT" "$ROOT_CERT" >"$T/chain4.pem"
conf "$T/a.json" "$T/none" "http://127.0.0.1:$DEAD/"
ctl -f "$T/a.json" manifest --chain "$T/chain4.pem" --out "$T/manifest.json"
[ "$CTL_RC" = 0 ] || die "staplectl manifest failed: $(cat "$T/ctl.out")"
NKEYS=$(jq '.ocsp | length' "$T/manifest.json")
OUT=$T/out
mkdir -p "$OUT"
echo "not ours" >"$OUT/notes.txt"
# The vendor is the test upstream, given as the settings file says (options
# for staplectl fetch); the RIM upstream is dead and never asked here.
cat >"$T/fetch.conf" <<EOF
STAPLED_FETCH_MANIFEST=$T/manifest.json
STAPLED_FETCH_OUTBOX=$OUT
STAPLED_FETCH_KEEP=2
STAPLED_FETCH_OPTS="--ocsp-upstream http://127.0.0.1:$UP/ --rim-upstream http://127.0.0.1:$DEAD/"
STAPLED_CONFIG=$T/a.json
STAPLECTL=$CTL
EOF

fetch_run "$T/f1.log"
check_eq "stapled-fetch from the live upstream: exit 0" 0 "$RUN_RC"
B1=$(bundles)
check "one bundle in the outbox, named by the time (${B1:-none})" \
    sh -c "echo '$B1' | grep -Eqx 'stapled-[0-9]{8}T[0-9]{6}Z[.]jsonl '"
B1=${B1% }
check_eq "... it holds every CertID of the manifest" "$NKEYS" "$(entries "$OUT/$B1")"
ctl -f "$T/a.json" verify "$OUT/$B1"
check_eq "... and staplectl verify passes it" 0 "$CTL_RC"
check "... logged with its name and entries" \
    grep -qx "stapled-fetch: $B1: $NKEYS entries, every entry of the manifest" "$T/f1.log"
check "staplectl's summary goes to the log" grep -q '^staplectl: fetch: ' "$T/f1.log"
check_eq "nothing half-written left, nor the other files touched" \
    ".fetch.lock notes.txt $B1" "$(cd "$OUT" && LC_ALL=C ls -A | tr '\n' ' ' | sed 's/ $//')"

# ---- 2. pruning keeps the newest STAPLED_FETCH_KEEP ----------------------------------
fetch_run "$T/f2.log"
check_eq "second fetch: exit 0" 0 "$RUN_RC"
fetch_run "$T/f3.log"
check_eq "third fetch: exit 0" 0 "$RUN_RC"
set -- $(bundles)
check_eq "the outbox keeps 2 bundles (STAPLED_FETCH_KEEP=2)" 2 "$#"
check "... the oldest is the one removed" test ! -e "$OUT/$B1"
check "... and the removal is logged" grep -qx "stapled-fetch: $B1: removed (keeping the newest 2)" "$T/f3.log"
OLDER=$1 NEWER=$2
assert "... names in the order of the fetches (a name taken waits a second)" \
    '[[ "$OLDER" < "$NEWER" ]]'
check "the file that is not a bundle is left alone" test -f "$OUT/notes.txt"
KEPT="$*"

# ---- 3. every upstream dead: nothing stored, the outbox as it was --------------------
farm_stop good
sed -i "s|127.0.0.1:$UP/|127.0.0.1:$DEAD/|" "$T/fetch.conf"
fetch_run "$T/f4.log"
check_eq "stapled-fetch with every upstream dead: exit 2" 2 "$RUN_RC"
check "... says that nothing was stored" \
    grep -q '^stapled-fetch: nothing stored (staplectl exit status 1)' "$T/f4.log"
check_eq "... the outbox keeps the previous bundles" "$KEPT" "$(bundles | sed 's/ $//')"
check_eq "... and holds no new file" ".fetch.lock notes.txt $KEPT" \
    "$(cd "$OUT" && LC_ALL=C ls -A | tr '\n' ' ' | sed 's/ $//')"

# ---- 4. a partial fetch: the bundle kept, the run failed -----------------------------
farm_start UP good -ndays 1 -rother CHAIN
ctl -f "$T/a.json" manifest --chain "$T/chain4.pem" --rim-id NV_GPU_DRIVER_GH100_595.71.05 \
    --out "$T/manifest-rim.json"
[ "$CTL_RC" = 0 ] || die "staplectl manifest --rim-id failed: $(cat "$T/ctl.out")"
sed -i -e "s|127.0.0.1:$DEAD/ --rim|127.0.0.1:$UP/ --rim|" \
    -e "s|^STAPLED_FETCH_MANIFEST=.*|STAPLED_FETCH_MANIFEST=$T/manifest-rim.json|" "$T/fetch.conf"
fetch_run "$T/f5.log"
check_eq "a fetch that lacks the RIM (its upstream dead): exit 1" 1 "$RUN_RC"
set -- $(bundles)
NEWEST=$(eval "echo \${$#}")
check_eq "... the outbox still keeps 2, the partial bundle the newest" "2 $NKEYS" \
    "$# $(entries "$OUT/$NEWEST")"
check "... logged as missing entries" \
    grep -qx "stapled-fetch: $NEWEST: $NKEYS entries, some missing (staplectl exit status 1, above)" "$T/f5.log"
check "... the RIM it lacks named by its ID" \
    grep -q 'fetch: rim NV_GPU_DRIVER_GH100_595.71.05: no upstream gave a valid answer' "$T/f5.log"
ctl -f "$T/a.json" verify -v --manifest "$T/manifest-rim.json" "$OUT/$NEWEST"
check_eq "verify --manifest of the partial bundle: exit 1" 1 "$CTL_RC"
check "... names the RIM it lacks" grep -qx 'lacking rim NV_GPU_DRIVER_GH100_595.71.05' "$T/ctl.out"
check "... and only that" grep -q "lacks 1 of the $((NKEYS + 1)) entries" "$T/ctl.out"

# ---- 5. settings that cannot work: exit 2, with the reason ---------------------------
sed -i "s|^STAPLED_FETCH_MANIFEST=.*|STAPLED_FETCH_MANIFEST=$T/no-manifest.json|" "$T/fetch.conf"
fetch_run "$T/f6.log"
check_eq "no manifest: exit 2" 2 "$RUN_RC"
check "... the message names it" grep -q "$T/no-manifest.json: no manifest to fetch" "$T/f6.log"
env -i PATH="$PATH" STAPLED_FETCH_CONF="$T/none.conf" STAPLED_FETCH_MANIFEST="$T/manifest.json" \
    STAPLED_FETCH_OUTBOX="$OUT" STAPLED_FETCH_KEEP=0 sh "$FETCH" >"$T/f7.log" 2>&1
check_eq "STAPLED_FETCH_KEEP=0 from the environment, no settings file: exit 2" 2 "$?"
check "... the message says why" grep -q 'STAPLED_FETCH_KEEP=0: not a count' "$T/f7.log"
exec 8>>"$OUT/.fetch.lock"
flock -n 8 || die "cannot take the outbox's lock"
sed -i "s|^STAPLED_FETCH_MANIFEST=.*|STAPLED_FETCH_MANIFEST=$T/manifest.json|" "$T/fetch.conf"
fetch_run "$T/f8.log"
check_eq "another fetch holds the outbox's lock: exit 2" 2 "$RUN_RC"
check "... and says so" grep -q 'another fetch into .* still runs' "$T/f8.log"
exec 8>&-
farm_stop good

# ---- 6. the guest's boot: bundles from a directory into an empty store ---------------
SRC=$T/boot
mkdir -p "$SRC" "$T/g"
# The outbox's two bundles (the newest complete one and the partial one),
# and what is not to be read.
cp "$OUT"/stapled-*.jsonl "$SRC/"
cp "$OUT/$NEWEST" "$SRC/late.jsonl.part"
cp "$OUT/$NEWEST" "$SRC/.hidden.jsonl"
ln -s "$OUT/$NEWEST" "$SRC/link.jsonl"
conf "$T/g.json" "$T/g" "http://127.0.0.1:$DEAD/"
cat >"$T/boot.conf" <<EOF
STAPLED_BOOT_IMPORT_SOURCE=$SRC
STAPLED_CONFIG=$T/g.json
STAPLECTL=$CTL
EOF
boot_run() {
	env -i PATH="$PATH" STAPLED_BOOT_IMPORT_CONF="$T/boot.conf" timeout 120 sh "$BOOT" >"$1" 2>&1
	RUN_RC=$?
}
boot_run "$T/b1.log"
check_eq "stapled-boot-import into an empty store, no daemon: exit 0" 0 "$RUN_RC"
check_eq "... each bundle imported, the others left alone" 2 \
    "$(grep -c '^stapled-boot-import: stapled-.*[.]jsonl: imported$' "$T/b1.log")"
check "... staplectl's lines prefixed with the bundle's name" \
    grep -q '^stapled-.*[.]jsonl: imported ocsp ' "$T/b1.log"
check "... neither the .part, the hidden file nor the symlink read" \
    sh -c "! grep -q 'late\|hidden\|link' '$T/b1.log'"
check_eq "... the source is left as it was" 5 "$(ls -A "$SRC" | wc -l)"
check_eq "the store holds every CertID of the manifest" "$NKEYS" \
    "$("$CTL" -f "$T/g.json" list 2>/dev/null | wc -l)"

# stapled starts on the store; its upstream is dead: every answer from the import.
STAPLED_CACHE=$T/g stapled_start g -f "$T/g.json"
for h in sha1 sha256 sha384; do
	for pair in "$IDENT_CERT $ICA_CERT" "$ROOT_CERT $IDENT_CERT"; do
		set -- $pair
		openssl ocsp -url "$SURL/ocsp" -"$h" -issuer "$1" -cert "$2" -no_nonce \
		    -CAfile "$ANCHORS" -verify_other "$INTERMEDIATES" \
		    -respout "$T/g.der" >"$T/g.out" 2>&1
		rc=$?
		what=$(basename "$(dirname "$2")")
		check "after the boot import, upstream dead: $h for the $what CA is good" \
		    sh -c "[ $rc = 0 ] && grep -q ': good' '$T/g.out'"
	done
done
stapled_stop

# A second boot finds the same bundles: kept, exit 0.
boot_run "$T/b2.log"
check_eq "the next boot, the same bundles: exit 0" 0 "$RUN_RC"
check "... the entries kept" grep -q '^stapled-.*[.]jsonl: kept ocsp ' "$T/b2.log"

# ---- 7. the boot source: one file, absent, not a bundle ------------------------------
sed -i "s|^STAPLED_BOOT_IMPORT_SOURCE=.*|STAPLED_BOOT_IMPORT_SOURCE=$T/nothing-here|" "$T/boot.conf"
boot_run "$T/b3.log"
check_eq "no boot source: exit 0, nothing to do" 0 "$RUN_RC"
check "... and says so" grep -q "$T/nothing-here: no bundles at boot; nothing to import" "$T/b3.log"
rm -rf "$T/g" && mkdir -p "$T/g"
sed -i "s|^STAPLED_BOOT_IMPORT_SOURCE=.*|STAPLED_BOOT_IMPORT_SOURCE=$OUT/$NEWEST|" "$T/boot.conf"
boot_run "$T/b4.log"
check_eq "a boot source that is one bundle: exit 0" 0 "$RUN_RC"
check_eq "... its entries in the store" "$NKEYS" "$("$CTL" -f "$T/g.json" list 2>/dev/null | wc -l)"
echo "not a bundle" >"$SRC/0-junk.jsonl"
sed -i "s|^STAPLED_BOOT_IMPORT_SOURCE=.*|STAPLED_BOOT_IMPORT_SOURCE=$SRC|" "$T/boot.conf"
boot_run "$T/b5.log"
check_eq "a file that is no bundle in the source: exit 1 (the service fails)" 1 "$RUN_RC"
check "... named, with staplectl's status" \
    grep -q '^stapled-boot-import: 0-junk.jsonl: not imported (staplectl exit status 1)' "$T/b5.log"
check_eq "... the bundles after it still imported" 2 \
    "$(grep -c '^stapled-boot-import: stapled-.*[.]jsonl: imported$' "$T/b5.log")"

it_done
