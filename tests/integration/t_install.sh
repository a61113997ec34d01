#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# make install into a temporary prefix: the units pass systemd-analyze verify, the example
# configuration passes stapled -n, sysusers/tmpfiles make the user and directories, and the
# installed stapled-import moves a good bundle to done/, a tampered one to failed/.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_install
need_cmd make systemd-analyze flock jq
pki_make

# configure leaves the units out when pkg-config names no unit directory.
grep -qx 'systemdsystemunitdir = no' "$top_builddir/Makefile" &&
    die "configured without a systemd unit directory (no systemd.pc: systemd-dev on Debian 13)"

P=$T/inst
UNITDIR=$P/lib/systemd/system
CTL=$P/sbin/staplectl
IMPORT=$P/libexec/stapled/stapled-import

# ---- 1. make install: every path under the prefix, the units naming them ----------
# A prefix install (no DESTDIR), so every ExecStart= exists for verify. The
# directories configure may have set outside the prefix are set too (the
# package configures /etc and /var), or the install would write there.
make -C "$top_builddir" install prefix="$P" sysconfdir="$P/etc" \
    localstatedir="$P/var" systemdsystemunitdir="$UNITDIR" \
    sysusersdir="$P/lib/sysusers.d" tmpfilesdir="$P/lib/tmpfiles.d" \
    >"$T/install.log" 2>&1 || die "make install prefix=$P failed"
for f in sbin/stapled sbin/staplectl libexec/stapled/stapled-import; do
	check "installed and executable: $f" test -x "$P/$f"
done
for f in etc/stapled/stapled.json lib/sysusers.d/stapled.conf \
    lib/tmpfiles.d/stapled.conf share/man/man8/stapled.8 \
    share/man/man8/staplectl.8 share/man/man5/stapled.conf.5 \
    share/doc/stapled/LICENSE share/doc/stapled/airgap.md \
    share/doc/stapled/design.md share/stapled/prometheus-alerts.yml \
    share/stapled/grafana-stapled.json; do
	check "installed: $f" test -s "$P/$f"
done
# The configuration examples, each as it is in the tree.
n=0
for f in $(cd "$top_srcdir" && find examples -type f | sort); do
	cmp -s "$top_srcdir/$f" "$P/share/doc/stapled/$f" || fail "installed as in the tree: $f"
	n=$((n + 1))
done
check_eq "the $n configuration examples, under share/doc/stapled/examples" "$n" \
    "$(find "$P/share/doc/stapled/examples" -type f | wc -l)"
UNITS="stapled.service stapled.socket stapled-import.service stapled-import.path stapled-import.timer"
# The connected side's fetch and the guest's boot import (not enabled by the package).
UNITS="$UNITS stapled-fetch.service stapled-fetch.timer stapled-boot-import.service"
for u in $UNITS; do
	check "installed: unit $u" test -s "$UNITDIR/$u"
done
check_eq "ExecStart= is the installed daemon with the installed configuration" \
    "ExecStart=$P/sbin/stapled -f $P/etc/stapled/stapled.json" \
    "$(grep '^ExecStart=' "$UNITDIR/stapled.service")"
check_eq "ExecReload= is the installed staplectl" \
    "ExecReload=$P/sbin/staplectl -f $P/etc/stapled/stapled.json reload" \
    "$(grep '^ExecReload=' "$UNITDIR/stapled.service")"
check_eq "the import service runs the installed script" "ExecStart=$IMPORT" \
    "$(grep '^ExecStart=' "$UNITDIR/stapled-import.service")"
check "the path unit watches the spool's in/" \
    grep -qx "PathChanged=$P/var/spool/stapled/in" "$UNITDIR/stapled-import.path"
check "the socket listens on 127.0.0.1:8090" \
    grep -qx 'ListenStream=127.0.0.1:8090' "$UNITDIR/stapled.socket"
assert "no generated file keeps an @name@ placeholder" \
    '! grep -rl "@[a-z_]*@" "$UNITDIR" "$P"/lib/*.d/stapled.conf "$IMPORT" "$P/etc/stapled/stapled.json"'
for j in stapled-fetch stapled-boot-import; do
	check "installed and executable: libexec/stapled/$j" test -x "$P/libexec/stapled/$j"
	check_eq "$j.service runs the installed script" "ExecStart=$P/libexec/stapled/$j" \
	    "$(grep '^ExecStart=' "$UNITDIR/$j.service")"
done
for f in fetch.conf boot-import.conf; do
	check "installed: etc/stapled/$f, every setting commented" \
	    sh -c "test -s '$P/etc/stapled/$f' && ! grep -q '^[^#]' '$P/etc/stapled/$f'"
done
check "fetch.conf names the installed spool" \
    grep -qx "#STAPLED_FETCH_OUTBOX=$P/var/spool/stapled/out" "$P/etc/stapled/fetch.conf"
check "the boot import is ordered before stapled, and wanted by it once enabled" \
    sh -c "grep -qx 'Before=stapled.service' '$UNITDIR/stapled-boot-import.service' &&
	grep -qx 'WantedBy=stapled.service' '$UNITDIR/stapled-boot-import.service'"
check "the fetch timer: every 8 hours, a randomised delay" \
    sh -c "grep -qx 'OnCalendar=\*-\*-\* 00/8:00:00' '$UNITDIR/stapled-fetch.timer' &&
	grep -q '^RandomizedDelaySec=' '$UNITDIR/stapled-fetch.timer'"
assert "no fetch or boot import script or settings file keeps an @name@ placeholder" \
    '! grep -l "@[a-z_]*@" "$P"/libexec/stapled/stapled-fetch "$P"/libexec/stapled/stapled-boot-import "$P"/etc/stapled/*.conf'

# ---- 2. systemd-analyze verify, every unit ----------------------------------------------
# On a host with a running systemd, verify also loads the host's units and
# may warn about them: only lines about our units (all named stapled*) count.
for u in $UNITS; do
	systemd-analyze verify --man=no "$UNITDIR/$u" >"$T/verify-$u.log" 2>&1
	rc=$?
	if ! grep -q stapled "$T/verify-$u.log"; then ok "systemd-analyze verify $u: clean (exit $rc)"
	else fail "systemd-analyze verify $u: exit $rc: $(grep stapled "$T/verify-$u.log" | head -n 3)"; fi
done
# The check has teeth: a unit whose ExecStart= is missing is reported.
sed "s|^ExecStart=.*|ExecStart=$P/sbin/no-such-stapled|" "$UNITDIR/stapled.service" \
    >"$T/broken.service"
systemd-analyze verify --man=no "$T/broken.service" >"$T/verify-broken.log" 2>&1
check "verify reports a unit whose command does not exist" \
    grep -q 'no-such-stapled' "$T/verify-broken.log"

# ---- 3. the example configuration -------------------------------------------------------
"$P/sbin/stapled" -n -f "$P/etc/stapled/stapled.json" >"$T/n.log" 2>&1
check_eq "stapled -n accepts the installed example configuration" 0 "$?"
check_eq "the example's cache_dir is the state directory" "$P/var/lib/stapled" \
    "$(jq -r .cache_dir "$P/etc/stapled/stapled.json")"
jq '.log_level = "debug"' "$P/etc/stapled/stapled.json" >"$T/own.json" &&
    cp "$T/own.json" "$P/etc/stapled/stapled.json"
make -C "$top_builddir" install-conf prefix="$P" sysconfdir="$P/etc" >"$T/install2.log" 2>&1
check_eq "a second install leaves the operator's configuration alone" debug \
    "$(jq -r .log_level "$P/etc/stapled/stapled.json")"

# ---- 4. sysusers.d and tmpfiles.d, applied to a scratch root ------------------------------
R=$T/root
mkdir -p "$R/etc"
if [ "$(id -u)" != 0 ]; then
	note "not root (a package build as a user): sysusers and tmpfiles entries not applied"
elif command -v systemd-sysusers >/dev/null && command -v systemd-tmpfiles >/dev/null; then
	systemd-sysusers --root="$R" "$P/lib/sysusers.d/stapled.conf" >"$T/sysusers.log" 2>&1
	check "sysusers: a stapled system user with no login" \
	    grep -q '^stapled:x:[0-9]*:[0-9]*:.*:/usr/sbin/nologin$' "$R/etc/passwd"
	check "sysusers: a stapled group" grep -q '^stapled:x:' "$R/etc/group"
	uid=$(awk -F: '$1 == "stapled" { print $3 }' "$R/etc/passwd")
	assert "sysusers: a system user (uid below 1000)" '[ -n "$uid" ] && [ "$uid" -lt 1000 ]'
	systemd-tmpfiles --create --root="$R" "$P/lib/tmpfiles.d/stapled.conf" \
	    >"$T/tmpfiles.log" 2>&1
	check_eq "tmpfiles: the cache directory, group-writable and setgid" 2770 \
	    "$(stat -c %a "$R$P/var/lib/stapled" 2>&1)"
	check_eq "tmpfiles: in/ takes drops from the group" 2770 \
	    "$(stat -c %a "$R$P/var/spool/stapled/in" 2>&1)"
	for d in done failed; do
		check_eq "tmpfiles: $d/ readable by the group" 2750 \
		    "$(stat -c %a "$R$P/var/spool/stapled/$d" 2>&1)"
	done
	check_eq "tmpfiles: owned by the stapled user" "$uid" \
	    "$(stat -c %u "$R$P/var/lib/stapled" 2>&1)"
	check_eq "tmpfiles: fetch's outbox out/, readable by the group" "2750 $uid" \
	    "$(stat -c '%a %u' "$R$P/var/spool/stapled/out" 2>&1)"
	check_eq "tmpfiles: the boot import's source boot/, root's, read by the group" "750 0" \
	    "$(stat -c '%a %u' "$R$P/var/spool/stapled/boot" 2>&1)"
else
	note "systemd-sysusers or systemd-tmpfiles missing: their entries not applied"
fi

# ---- 5. stapled-import against the installed paths ---------------------------------------
# A bundle from a cache warmed by a live upstream (as t_airgap makes one).
ocsp_bundle_warmed "$T/good.jsonl"

# The installed configuration, with the test anchors; cache_dir stays the
# installed state directory. The script then runs with no overrides at all.
jq --arg a "$ANCHORS" --arg i "$INTERMEDIATES" \
    '.ocsp = { "upstreams": ["http://127.0.0.1:9/"], "anchors": [$a], "intermediates": [$i] }' \
    "$P/etc/stapled/stapled.json" >"$T/conf.json" && cp "$T/conf.json" "$P/etc/stapled/stapled.json"
SPOOL=$P/var/spool/stapled
mkdir -p "$SPOOL/in" "$SPOOL/done" "$SPOOL/failed"
# Tampered: one character of the first response changed, the trailer left as it was.
sed '0,/"response":"MII/ s/"response":"MII/"response":"MIJ/' "$T/good.jsonl" \
    >"$SPOOL/in/2-tampered.jsonl"
cmp -s "$T/good.jsonl" "$SPOOL/in/2-tampered.jsonl" && die "the tampered bundle is unchanged"
cp "$T/good.jsonl" "$SPOOL/in/1-good.jsonl"
cp "$T/good.jsonl" "$SPOOL/in/3-late.jsonl.part"

# Another import holds the lock: this run waits, gives up, moves nothing.
flock "$SPOOL/.import.lock" sleep 5 &
LOCKER=$!
IT_PIDS="$IT_PIDS $LOCKER"
sleep 0.5
STAPLED_IMPORT_WAIT_S=1 "$IMPORT" >"$T/import-locked.log" 2>&1
check_eq "a second import while one holds the lock: exit 2" 2 "$?"
check "... and every bundle stays in in/" test -f "$SPOOL/in/1-good.jsonl"
bg_kill "$LOCKER"

# No state directory yet (tmpfiles.d makes it): staplectl cannot open the
# cache (exit 3), which is not the bundle's fault.
"$IMPORT" >"$T/import0.log" 2>&1
check_eq "stapled-import with no cache directory: exit 1" 1 "$?"
check "the tampered bundle moved to failed/" test -f "$SPOOL/failed/2-tampered.jsonl"
check "the good bundle stays in in/ while the cache cannot be opened" \
    test -f "$SPOOL/in/1-good.jsonl"
check "the refusal is logged under the tampered bundle's name" \
    grep -q '^stapled-import: 2-tampered.jsonl: refused, moved to failed/' "$T/import0.log"

mkdir -p "$P/var/lib/stapled"
"$IMPORT" >"$T/import.log" 2>&1
check_eq "stapled-import: exit 0" 0 "$?"
check "the good bundle moved to done/" test -f "$SPOOL/done/1-good.jsonl"
check "the *.part file is left in in/" test -f "$SPOOL/in/3-late.jsonl.part"
check_eq "in/ holds only the *.part file" "3-late.jsonl.part" "$(ls "$SPOOL/in")"
check_eq "the entries are in the installed cache" 3 \
    "$("$CTL" -f "$P/etc/stapled/stapled.json" list 2>/dev/null | wc -l)"
check "each entry's verdict is logged under its bundle's name" \
    grep -q '^1-good.jsonl: imported ocsp ' "$T/import.log"

# The same name again: done/ keeps both.
cp "$T/good.jsonl" "$SPOOL/in/1-good.jsonl"
"$IMPORT" >"$T/import2.log" 2>&1
check_eq "a bundle already imported: exit 0 (entries kept)" 0 "$?"
check_eq "done/ keeps both copies of a name" 2 "$(ls "$SPOOL/done" | grep -c '^1-good.jsonl')"

it_done
