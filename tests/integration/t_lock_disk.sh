#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# One daemon per store whatever is deleted, and a full disk that waits: a
# removed stapled.lock lets no second daemon in; a removed lock.mdb under
# a running daemon refuses staplectl's writes and the store stays whole; a
# move aside renames a lock file a staplectl holds; on a small tmpfs an
# import that does not fit exits 4 and gives the space back, a daemon
# started on the full disk serves read-only and writes again once there
# is room; a full map exits 4 and says what it needs.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_lock_disk
need_ctl
need_fill
[ "$(id -u)" = 0 ] || skip "mounting a tmpfs needs root"
need_cmd mount umount stat dd
NSMALL=100	# the served store
NBIG=1500	# a bundle of about 6 MiB of pages, more than the disk has left
DISK_MB=10
DISK=$T/disk
mkdir -p "$DISK"
mount -t tmpfs -o size=${DISK_MB}m tmpfs "$DISK" || skip "cannot mount a tmpfs"
lk_cleanup() { _rc=$?; umount -l "$DISK" 2>/dev/null; (exit $_rc); it_cleanup; }
trap lk_cleanup EXIT

# conf NAME CACHE [EXTRA-JSON]: the fill PKI's anchors, the upstream dead.
conf() {
	cat >"$T/$1.conf" <<-EOF
	{
	  "cache_dir": "$2",
	  "ocsp": {
	    "upstreams": ["http://127.0.0.1:$(dead_port 1)"],
	    "anchors": ["$FILL_PKI/root.pem"],
	    "intermediates": ["$FILL_PKI/ica.pem"]
	  }${3:-}
	}
	EOF
}
served() { curl -s -o /dev/null -w '%{http_code}' -m 5 "$SURL$(sed -n "${1}p" "$T/small/paths")"; }
size_of() { stat -c %s "$1"; }
free_kb() { echo $(( $(stat -f -c '%a * %S' "$DISK") / 1024 )); }
# fill_disk KB: leave about KB free on the tmpfs (0: none at all).
fill_disk() {
	local _n=$(( ($(free_kb) - $1) / 64 ))
	[ "$_n" -gt 0 ] && dd if=/dev/zero of="$DISK/filler.$1" bs=64k count="$_n" 2>/dev/null
	[ "$1" = 0 ] && dd if=/dev/zero of="$DISK/filler.z" bs=4k 2>/dev/null
	true
}

# hold_export DIR CONF GO: a staplectl export of DIR into a pipe nobody
# reads until the file GO exists; returns once the export's child holds
# DIR's lock file (LMDB's record lock on it) and is blocked writing, done
# with the map for now, its pid in HOLDER. Its exit status lands in GO.rc.
hold_export() {
	local _i=0 _ino
	_ino=$(stat -c %i "$1/lock.mdb")
	rm -f "$3" "$3.rc"
	("$CTL" -C "$1" -f "$2" export 2>"$3.err"; echo $? >"$3.rc") |
	    (while [ ! -e "$3" ]; do sleep 0.1; done; cat >/dev/null) &
	until HOLDER=$(awk -v ino="$_ino" '$2 == "POSIX" { split($6, d, ":")
	    if (d[3] == ino) { print $5; exit } }' /proc/locks) &&
	    [ -n "$HOLDER" ] && case $(cat "/proc/$HOLDER/wchan" 2>/dev/null) in
	    *pipe_write*) true ;; *) false ;; esac || [ $_i -ge 300 ]; do
		sleep 0.1; _i=$((_i + 1)); done
}
# release GO: let the held export go on; its exit status when it ends.
release() {
	local _i=0
	touch "$1"
	until [ -s "$1.rc" ] || [ $_i -ge 300 ]; do sleep 0.1; _i=$((_i + 1)); done
	cat "$1.rc" 2>/dev/null
}

fill_pki "$T/pki" P-256
mkdir -p "$T/small" "$T/big"
"$FILL" -s "$FILL_PKI" -o "$T/small" "$T/src_small" "$NSMALL" >"$T/fill1.log" 2>&1 ||
    die "bench-fill: $(tail -3 "$T/fill1.log")"
"$FILL" -s "$FILL_PKI" "$T/src_big" "$NBIG" >"$T/fill2.log" 2>&1 ||
    die "bench-fill: $(tail -3 "$T/fill2.log")"
conf src "$T/src_small"
ctl -C "$T/src_small" -f "$T/src.conf" export --out "$T/small.jsonl"
[ "$CTL_RC" = 0 ] || die "export small: $(cat "$T/ctl.out")"
ctl -C "$T/src_big" -f "$T/src.conf" export --out "$T/big.jsonl"
[ "$CTL_RC" = 0 ] || die "export big: $(cat "$T/ctl.out")"

# ---- 1. stapled.lock removed: a second daemon is still refused ---------------
S=$T/s1
conf s1 "$S"
ctl -C "$S" -f "$T/s1.conf" import "$T/small.jsonl"
check_eq "import the small bundle: exit 0" 0 "$CTL_RC"
STAPLED_CACHE=$S stapled_start first -f "$T/s1.conf"
rm -f "$S/stapled.lock"
timeout 20 "$STAPLED" --listen "127.0.0.1:$(free_port)" -f "$T/s1.conf" \
    >"$T/second.log" 2>&1
check_eq "stapled.lock removed: a second stapled exits 1" 1 "$?"
check "it names the running one (pid $SPID)" \
    grep -q "in use by another stapled (pid $SPID)" "$T/second.log"
check_eq "the first still serves" 200 "$(served 1)"

# ---- 2. lock.mdb removed under the daemon: staplectl's writes refused ---------
# A staplectl holds the old lock file meanwhile, so the daemon cannot
# reopen the store before the writes below are tried.
hold_export "$S" "$T/s1.conf" "$T/go2"
check "a staplectl export holds the store (pid ${HOLDER:-none})" test -n "$HOLDER"
rm -f "$S/lock.mdb"
key=$("$CTL" -C "$S" list 2>/dev/null | awk 'NR == 1 { print $1 }')
ctl -C "$S" -f "$T/s1.conf" purge "$key"
check "purge beside a daemon that does not share lock.mdb: refused ($CTL_RC)" \
    test "$CTL_RC" != 0
check "it says the daemon does not share the lock file" \
    grep -q "stapled (pid $SPID) does not share this lock.mdb" "$T/ctl.out"
ctl -C "$S" -f "$T/s1.conf" import "$T/big.jsonl"
check_eq "import beside it: exit 4 (the cache cannot take it now)" 4 "$CTL_RC"
check "it says why" grep -q 'does not share this lock.mdb' "$T/ctl.out"
ctl -C "$S" check
check_eq "staplectl check: the store is sound" 0 "$CTL_RC"
check_eq "every entry still stored" "$NSMALL" "$("$CTL" -C "$S" list 2>/dev/null | wc -l)"
check_eq "an entry still served" 200 "$(served 1)"
check_eq "the last entry still served" 200 "$(served $NSMALL)"
# The daemon's own writes stop too, said at its next check (every 10 s).
i=0
until grep -q 'lock.mdb was removed or replaced.*serving read-only' "$T/first.log" ||
    [ $i -ge 300 ]; do sleep 0.1; i=$((i + 1)); done
check "the daemon logs lock.mdb removed, serving read-only" \
    grep -q 'error: .*lock.mdb was removed or replaced.*serving read-only' "$T/first.log"
metrics_get "$T/m2"
check_eq "stapled_store_read_only 1" 1 "$(metric_sum "$T/m2" '^stapled_store_read_only$')"
check "the held export ends with a documented status" between "$(release "$T/go2")" 0 3
# Nobody holds the old lock file now: the daemon opens the store again.
i=0
until grep -q 'writing again' "$T/first.log" || [ $i -ge 300 ]; do
	sleep 0.1; i=$((i + 1)); done
check "then it opens the store again with the new lock.mdb" \
    grep -q 'opened the store again, with the lock.mdb now at its path' "$T/first.log"
metrics_get "$T/m2b"
check_eq "stapled_store_read_only 0" 0 "$(metric_sum "$T/m2b" '^stapled_store_read_only$')"
ctl -C "$S" -f "$T/s1.conf" purge "$key"
check_eq "they share it now: purge exit 0" 0 "$CTL_RC"
check_eq "the purged entry is gone" $((NSMALL - 1)) "$("$CTL" -C "$S" list 2>/dev/null | wc -l)"
stapled_stop
check_eq "SIGTERM exits 0" 0 "$BG_RC"

# ---- 3. a move aside beside a staplectl that holds the store ------------------
M=$T/s3
conf s3 "$M"
ctl -C "$M" -f "$T/s3.conf" import "$T/big.jsonl"
check_eq "import the big bundle: exit 0" 0 "$CTL_RC"
ino=$(stat -c %i "$M/lock.mdb")
hold_export "$M" "$T/s3.conf" "$T/go3"
check "a staplectl export holds the store, blocked (pid ${HOLDER:-none})" test -n "$HOLDER"
sz=$(size_of "$M/data.mdb")
truncate -s $((sz / 2)) "$M/data.mdb"
STAPLED_CACHE=$M stapled_start moved -f "$T/s3.conf"
wait_for_line "$T/moved.log" 'damaged' >/dev/null
check "the damaged store is moved aside" sh -c "ls '$M'/data.mdb.damaged-* >/dev/null 2>&1"
alock=$(ls "$M"/data.mdb.damaged-*.lock 2>/dev/null | head -1)
check "the lock file the staplectl holds is renamed beside it, not removed" test -n "$alock"
check_eq "it is the same file" "$ino" "$(stat -c %i "$alock" 2>/dev/null)"
check "the daemon has a lock file of its own" \
    test "$(stat -c %i "$M/lock.mdb" 2>/dev/null)" != "$ino"
check "the held export ends with a documented status" between "$(release "$T/go3")" 0 3
ctl -C "$M" -f "$T/s3.conf" import "$T/small.jsonl"
check_eq "an import beside the daemon's new store: exit 0" 0 "$CTL_RC"
check_eq "the daemon serves it" 200 "$(served 1)"
stapled_stop

# ---- 4. a full disk: exit 4, nothing grown, imported once there is room -------
D=$DISK/c
conf d "$D"
ctl -C "$D" -f "$T/d.conf" import "$T/small.jsonl"
check_eq "tmpfs: import the small bundle: exit 0" 0 "$CTL_RC"
before=$(size_of "$D/data.mdb")
fill_disk 2048
note "free before the import: $(free_kb) KiB"
ctl -C "$D" -f "$T/d.conf" import "$T/big.jsonl"
check_eq "an import the disk cannot hold: exit 4" 4 "$CTL_RC"
check "it says no space left on device" grep -q 'no space left on device' "$T/ctl.out"
check "and that it gave back what the failed write added" grep -q 'gave back the [0-9]* KiB' "$T/ctl.out"
check_eq "data.mdb is not grown" "$before" "$(size_of "$D/data.mdb")"
check "the space is given back (over 1 MiB free: $(free_kb) KiB)" lt 1024 "$(free_kb)"
ctl -C "$D" check
check_eq "the store is sound" 0 "$CTL_RC"
rm -f "$DISK"/filler.*
ctl -C "$D" -f "$T/d.conf" import "$T/big.jsonl"
check_eq "with room again: exit 0" 0 "$CTL_RC"
# bench-fill's keys are the same series: the small bundle's are the big one's first.
check_eq "every entry stored" "$NBIG" "$("$CTL" -C "$D" list 2>/dev/null | wc -l)"

# ---- 5. a daemon started on the full disk serves, read-only, until room ------
rm -f "$D/stapled.lock"
fill_disk 0
STAPLED_CACHE=$D stapled_start full -f "$T/d.conf"
check_eq "started on a full disk: an entry is served" 200 "$(served 1)"
check "it warns: read-only" grep -q 'warning: .*no space left on device.*serving read-only' "$T/full.log"
metrics_get "$T/m5"
check_eq "stapled_store_read_only 1" 1 "$(metric_sum "$T/m5" '^stapled_store_read_only$')"
rm -f "$DISK"/filler.*
i=0
until grep -q 'writing again' "$T/full.log" || [ $i -ge 300 ]; do
	sleep 0.1; i=$((i + 1)); done
check "with room again it says it writes again" grep -q 'writing again' "$T/full.log"
metrics_get "$T/m5b"
check_eq "stapled_store_read_only 0" 0 "$(metric_sum "$T/m5b" '^stapled_store_read_only$')"
stapled_stop
check_eq "SIGTERM exits 0" 0 "$BG_RC"

# ---- 6. a full map: exit 4, and what it needs --------------------------------
conf map "$T/map" ', "map_size_mb": 2'
ctl -C "$T/map" -f "$T/map.conf" import "$T/big.jsonl"
check_eq "a bundle over map_size_mb: exit 4" 4 "$CTL_RC"
check "it says what the map needs" \
    grep -q 'map full: needs about [0-9]* MiB, map_size_mb is 2' "$T/ctl.out"

it_done
