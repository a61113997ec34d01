#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The store survives damage: truncated, page-corrupted and zero-length data.mdb
# are moved aside and stapled serves from an empty store, never killed by a
# signal; staplectl refuses a damaged store with exit 3 (a reader killed by
# the damage, a writer or `check` by the walk first); one daemon per cache
# directory; entries long past nextUpdate are purged (under libfaketime).
. "$top_srcdir/tests/integration/lib.sh"

it_init t_store_damage
need_cmd python3 truncate
STAPLECTL=$top_builddir/staplectl
need_fill
ENTRIES=3000
READY_MAX_MS=5000	# generous: the cheap checks take milliseconds
# Every upstream on 127.0.0.1's discard port: nothing leaves the machine.
UPS="--ocsp-upstream http://127.0.0.1:9/ --rim-upstream http://127.0.0.1:9/"
UPS="$UPS --pccs-upstream http://127.0.0.1:9/ --kds-upstream http://127.0.0.1:9/"

# fill DIR: a sound store of $ENTRIES synthetic OCSP entries.
fill() { "$FILL" "$1" "$ENTRIES" >/dev/null 2>&1 || die "bench-fill $1"; }

# corrupt_pages FILE N SEED: overwrite N random non-meta pages with noise.
corrupt_pages() {
	python3 - "$1" "$2" "$3" <<'PY'
import os, random, sys
path, n, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
psize = 4096
pages = os.path.getsize(path) // psize
r = random.Random(seed)
with open(path, "r+b") as f:
    for p in r.sample(range(2, pages), n):
        f.seek(p * psize)
        f.write(bytes(r.getrandbits(8) for _ in range(psize)))
PY
}

# damaged_case NAME DIR: start on DIR, expect it moved aside within
# READY_MAX_MS (or, found by the walk, within the start wait), the same PID
# serving, /readyz and staplectl status saying damaged, SIGTERM exit 0.
damaged_case() {
	local name=$1 dir=$2 t0 t1 pid
	t0=$(now_ms)
	STAPLED_CACHE=$dir stapled_start "$name" $UPS
	t1=$(now_ms)
	pid=$SPID
	check "$name: ready within ${READY_MAX_MS} ms ($((t1 - t0)) ms)" \
	    lt $((t1 - t0)) $READY_MAX_MS
	wait_for_line "$T/$name.log" 'damaged' >/dev/null
	check "$name: logged at error with the word damaged" \
	    grep -q 'error: .*damaged' "$T/$name.log"
	check "$name: data.mdb moved aside" \
	    sh -c "ls '$dir'/data.mdb.damaged-* >/dev/null 2>&1"
	check "$name: the same process still runs" kill -0 "$pid"
	code=$(curl -s -o "$T/$name.readyz" -w '%{http_code}' "$SURL/readyz")
	check_eq "$name: /readyz 200" 200 "$code"
	check "$name: /readyz detail says damaged" grep -q damaged "$T/$name.readyz"
	metrics_get "$T/$name.metrics"
	check_eq "$name: stapled_store_damaged_total 1" 1 \
	    "$(metric_sum "$T/$name.metrics" '^stapled_store_damaged_total[{]where="store"[}]$')"
	"$STAPLECTL" -C "$dir" status >"$T/$name.status" 2>&1
	check_eq "$name: staplectl status beside the daemon exits 0" 0 $?
	check "$name: staplectl status names the damaged store" \
	    grep -q '^damaged ' "$T/$name.status"
	n=$("$STAPLECTL" -C "$dir" list 2>/dev/null | wc -l)
	check_eq "$name: the new store is empty" 0 "$n"
	stapled_stop
	check_eq "$name: SIGTERM exits 0 (never killed by a signal)" 0 "$BG_RC"
}

# ---- 1. truncated to half -----------------------------------------------------
fill "$T/trunc"
sz=$(stat -c %s "$T/trunc/data.mdb")
truncate -s $((sz / 2)) "$T/trunc/data.mdb"
damaged_case trunc "$T/trunc"

# ---- 2. 20 random pages overwritten -----------------------------------------
fill "$T/pages"
corrupt_pages "$T/pages/data.mdb" 20 9
cp -r "$T/pages" "$T/pages_ctl"
damaged_case pages "$T/pages"

# ---- 3. zero length ---------------------------------------------------------
fill "$T/zero"
: >"$T/zero/data.mdb"
damaged_case zero "$T/zero"

# ---- 4. staplectl on a damaged store: exit 3, never a signal -----------------
fill "$T/good"
"$STAPLECTL" -C "$T/good" export --out "$T/bundle.json" >/dev/null 2>&1
[ -s "$T/bundle.json" ] || die "staplectl export of a sound store"
for cmd in status list "import --allow-partial $T/bundle.json"; do
	"$STAPLECTL" -C "$T/pages_ctl" $cmd >"$T/ctl.out" 2>"$T/ctl.err"
	rc=$?
	check_eq "staplectl $cmd on a damaged store exits 3" 3 "$rc"
	check "staplectl $cmd says damaged" grep -q damaged "$T/ctl.err"
done
"$STAPLECTL" -C "$T/pages_ctl" check >"$T/ctl.out" 2>"$T/ctl.err"
check_eq "staplectl check on a damaged store exits 3" 3 "$?"
check "staplectl check says damaged" grep -q damaged "$T/ctl.err"
"$STAPLECTL" -C "$T/good" check >"$T/ctl.out" 2>"$T/ctl.err"
check_eq "staplectl check on a sound store exits 0" 0 "$?"
check "staplectl check says sound" grep -q 'sound' "$T/ctl.out"
"$STAPLECTL" -C "$T/pages_ctl" verify "$T/bundle.json" >"$T/ctl.out" 2>"$T/ctl.err"
rc=$?
check "staplectl verify beside a damaged store: a documented status, no signal ($rc)" \
    between "$rc" 0 3
check "the staplectl checks left the damaged store where it was" \
    test -s "$T/pages_ctl/data.mdb"

# ---- 5. one daemon per cache directory -------------------------------------------
STAPLED_CACHE=$T/good stapled_start first $UPS
port2=$(free_port)
timeout 10 "$STAPLED" --listen "127.0.0.1:$port2" --cache-dir "$T/good" $UPS \
    >"$T/second.log" 2>&1
rc=$?
check_eq "a second stapled on the same directory exits 1" 1 "$rc"
check "it says the directory is in use by another stapled" \
    grep -q "in use by another stapled (pid $SPID)" "$T/second.log"
check "the first keeps serving" curl -sf -o /dev/null -m 5 "$SURL/healthz"
n=$("$STAPLECTL" -C "$T/good" list 2>/dev/null | wc -l)
check_eq "staplectl list works beside the running daemon" "$ENTRIES" "$n"
stapled_stop
check_eq "first: SIGTERM exits 0" 0 "$BG_RC"

# ---- 6. purge: past nextUpdate (a week ahead) by more than the 7-day grace ----
need_faketime
fill "$T/purge"
STAPLED_WRAP=$(faketime_env "+13d") \
    STAPLED_CACHE=$T/purge stapled_start within_grace $UPS
metric_wait "$T/m_within" '^stapled_entries_expired$' "$ENTRIES" ||
    fail "13 days on: the walk counts $ENTRIES expired entries"
check_eq "13 days on (within the grace): nothing purged" 0 \
    "$(metric_sum "$T/m_within" '^stapled_entries_purged_total$')"
stapled_stop
STAPLED_WRAP=$(faketime_env "+15d") \
    STAPLED_CACHE=$T/purge stapled_start past_grace $UPS
metric_wait "$T/m_past" '^stapled_entries_purged_total$' "$ENTRIES" ||
    fail "15 days on: the walk purges all $ENTRIES entries"
check_eq "15 days on: no expired entry left" 0 \
    "$(metric_sum "$T/m_past" '^stapled_entries_expired$')"
check "the purge is logged" grep -q 'purged .* past nextUpdate' "$T/past_grace.log"
stapled_stop
n=$("$STAPLECTL" -C "$T/purge" list 2>/dev/null | wc -l)
check_eq "the purged entries are gone from the store" 0 "$n"

# ---- 7. a full map: "map full" in the log and the metric -----------------------
pki_make
farm_start UP good -ndays 1 -rother CHAIN
# A 1 MiB map filled to the brim; bench-fill stops at the first failed put.
BENCH_FILL_MAP_MB=1 "$FILL" "$T/full" 100000 >/dev/null 2>"$T/fill.err"
check "bench-fill stopped at map full" grep -q 'map full' "$T/fill.err"
cat >"$T/full.json" <<JSON
{
  "cache_dir": "$T/full",
  "map_size_mb": 1,
  $(ocsp_section "$UP")
}
JSON
STAPLED_CACHE=$T/full stapled_start full -f "$T/full.json"
mkreq "$T/full.req" "$ICA_CERT" "$LEAF1"
post "$T/full.req" "$T/full.der"
check_eq "full map: the verified answer still reaches the client" 200 "$HTTP_CODE"
check "full map: logged as map full" grep -q 'not stored: .*map full' "$T/full.log"
metrics_get "$T/m_full"
check "full map: stapled_store_map_full_total counts it" \
    lt 0 "$(metric_sum "$T/m_full" '^stapled_store_map_full_total$')"
check "full map: no verification failure is reported" \
    eval '! grep -q "could not be verified" "$T/full.log"'
metric_wait "$T/m_room" '^stapled_store_map_bytes$' 1048576 ||
    fail "full map: a pass over the store reports its room"
map=$(metric_sum "$T/m_room" '^stapled_store_map_bytes$')
used=$(metric_sum "$T/m_room" '^stapled_store_used_bytes$')
free=$(metric_sum "$T/m_room" '^stapled_store_free_bytes$')
check_eq "full map: stapled_store_map_bytes is map_size_mb" 1048576 "$map"
check "full map: the room for writes, map - used + free, is under a quarter ($used used, $free free)" \
    lt $(( (map - used + free) * 4 )) "$map"
stapled_stop
check_eq "full: SIGTERM exits 0" 0 "$BG_RC"

it_done
