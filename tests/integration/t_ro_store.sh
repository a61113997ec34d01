#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A store that cannot be written is served: on a read-only bind mount of a
# filled store stapled starts, serves what is stored, says read-only in
# /readyz and stapled_store_read_only, refreshes and stores nothing (a miss
# is answered from the upstream, not stored), and a staplectl writing
# through the writable path refuses; remounted read-write, a SIGHUP opens
# it for writing: refreshes and misses are stored again. Then a data.mdb
# made immutable (chattr +i): read-only too, until staplectl reload.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_ro_store
need_ctl
need_fill
[ "$(id -u)" = 0 ] || skip "mounting a tmpfs needs root"
need_cmd mount umount chattr
N=8		# stored entries; the ninth is a miss
VALIDITY_S=600
DISK=$T/disk	# a small tmpfs, the store's file system
RO=$T/ro	# the store, through a read-only bind mount
mkdir -p "$DISK" "$RO"
mount -t tmpfs -o size=16m tmpfs "$DISK" || skip "cannot mount a tmpfs"
ro_cleanup() {
	_rc=$?
	chattr -i "$DISK/c/data.mdb" 2>/dev/null
	umount "$RO" 2>/dev/null
	umount -l "$DISK" 2>/dev/null
	(exit $_rc)
	it_cleanup
}
trap ro_cleanup EXIT

fill_pki "$T/pki" P-256
mkdir -p "$T/fa/www" "$T/fb/www"
# N entries, due for refresh within 6 s (refresh.fraction 0.01 of 600 s);
# the same series one longer, for the responder and the miss's path.
"$FILL" -s "$FILL_PKI" -o "$T/fa" -v "$VALIDITY_S" -f 0.01 "$DISK/c" "$N" \
    >"$T/fill.log" 2>&1 || die "bench-fill: $(tail -3 "$T/fill.log")"
"$FILL" -s "$FILL_PKI" -o "$T/fb" -v "$VALIDITY_S" -f 0.01 "$T/scratch" \
    $((N + 1)) >>"$T/fill.log" 2>&1 || die "bench-fill: $(tail -3 "$T/fill.log")"
FILL_NOW=$(awk '$1 == "now" { print $2 }' "$T/fill.log" | head -1)
fill_responder RP responder "$T/fb/index.txt" -nmin 10
upstream_start UP router --mode "route:$(key_hash_hex "$FILL_PKI/ica.pem")=127.0.0.1:$RP" \
    --count-file "$T/router.count"
cat >"$T/conf.json" <<EOF
{"ocsp": {"upstreams": ["http://127.0.0.1:$UP"], "anchors": ["$FILL_PKI/root.pem"],
  "intermediates": ["$FILL_PKI/ica.pem"]}}
EOF
ctl -C "$T/scratch" -f "$T/conf.json" export --out "$T/b.jsonl"
[ "$CTL_RC" = 0 ] || die "export: $(cat "$T/ctl.out")"

get() { curl -s -o /dev/null -w '%{http_code}' -m 5 "$SURL$(sed -n "${1}p" "$T/fb/paths")"; }
entries() { "$CTL" -C "$1" list 2>/dev/null | wc -l; }
gauge() { metrics_get "$T/m"; metric_sum "$T/m" "^$1\$"; }
readyz() { curl -s -m 5 "$SURL/readyz" | grep '^store:'; }

# ---- 1. a read-only mount ----------------------------------------------------------
mount --bind "$DISK/c" "$RO" && mount -o remount,bind,ro "$RO" ||
    die "cannot make a read-only bind mount"
check "the bind mount is read-only" sh -c "! touch '$RO/x' 2>/dev/null"
STAPLED_CACHE=$RO stapled_start ro -f "$T/conf.json"
check "it starts and warns: read-only file system" \
    grep -q 'warning: .*file system is read-only.*serving read-only' "$T/ro.log"
check_eq "a stored entry is served" 200 "$(get 1)"
check_eq "the last stored entry is served" 200 "$(get $N)"
check_eq "stapled_store_read_only 1" 1 "$(gauge stapled_store_read_only)"
check "/readyz says read-only ($(readyz))" sh -c "curl -s -m 5 '$SURL/readyz' |
    grep -q '^store: read-only (cannot be opened for writing)'"
check_eq "a miss is answered from the upstream" 200 "$(get $((N + 1)))"
check_eq "... and not stored" "$N" "$(entries "$RO")"
ctl -C "$DISK/c" -f "$T/conf.json" import "$T/b.jsonl"
check_eq "staplectl import through the writable path: exit 4" 4 "$CTL_RC"
check "it says the daemon does not share its lock file" \
    grep -q "does not share this lock.mdb" "$T/ctl.out"
# Every entry is due by FILL_NOW + 6; a due turn runs every second.
sleep $(( FILL_NOW + 8 - $(date +%s) > 0 ? FILL_NOW + 8 - $(date +%s) : 0 ))
check_eq "due entries are not refreshed: only the miss reached the upstream" \
    1 "$(upstream_count router)"
check_eq "stapled_refresh_total 0" 0 "$(gauge 'stapled_refresh_total\{result="(ok|failed)"\}')"
check "no write was tried (no error logged)" sh -c "! grep -q 'error:' '$T/ro.log'"

# ---- 2. remounted read-write: a SIGHUP writes again ---------------------------------
mount -o remount,bind,rw "$RO" || die "cannot remount read-write"
kill -HUP "$SPID"
wait_for_line "$T/ro.log" 'writing again' >/dev/null
check "SIGHUP: it opens the store for writing" \
    grep -q 'opened the store for writing' "$T/ro.log"
check_eq "stapled_store_read_only 0" 0 "$(gauge stapled_store_read_only)"
check_eq "/readyz: store: writing" "store: writing" "$(readyz)"
metric_wait "$T/m" 'stapled_refresh_total\{result="ok"\}' "$N" >/dev/null
check_eq "the due entries are refreshed and stored" "$N" \
    "$(metric_sum "$T/m" 'stapled_refresh_total\{result="ok"\}')"
check_eq "the miss asked again" 200 "$(get $((N + 1)))"
check_eq "... is stored" $((N + 1)) "$(entries "$RO")"
stapled_stop
check_eq "SIGTERM: exit 0" 0 "$BG_RC"

# ---- 3. data.mdb immutable on a writable file system --------------------------------
chattr +i "$DISK/c/data.mdb" || skip "chattr +i not supported here"
STAPLED_CACHE=$DISK/c stapled_start imm -f "$T/conf.json"
check "data.mdb immutable: it starts and warns" \
    grep -q 'warning: .*data.mdb cannot be written (Operation not permitted).*serving read-only' "$T/imm.log"
check_eq "an entry is served" 200 "$(get 1)"
check_eq "stapled_store_read_only 1" 1 "$(gauge stapled_store_read_only)"
chattr -i "$DISK/c/data.mdb"
ctl -C "$DISK/c" reload
check_eq "mended, staplectl reload: exit 0" 0 "$CTL_RC"
check "it opens the store for writing" grep -q 'opened the store for writing' "$T/imm.log"
check_eq "stapled_store_read_only 0" 0 "$(gauge stapled_store_read_only)"
stapled_stop
check_eq "SIGTERM: exit 0" 0 "$BG_RC"
it_done
