#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The Debian package: dpkg-buildpackage -b -uc -us on a copy of the tree, as the README says
# (its own tests included), builds stapled_*.deb with the binaries, units, sysusers/tmpfiles
# entries, example configuration, the gate's drop-in, the alert rules and the dashboard; every
# path docs/gate.md and docs/airgap.md name is one the package ships; lintian finds no error.
. "$top_srcdir/tests/integration/lib.sh"

# A whole package build: minutes of compiling, bounded here.
PACKAGE_BUILD_TIMEOUT_S=1200

it_init t_package
# debian/rules runs the suite unless told nocheck: never nest package builds.
[ -n "${STAPLED_PACKAGE_TEST:-}" ] && skip "inside a package build"
need_cmd dpkg-buildpackage dpkg-deb dpkg-parsechangelog lintian fakeroot timeout pkg-config
version=$(sed -n 's/^AC_INIT(\[stapled\], \[\([^]]*\)\].*/\1/p' "$top_srcdir/configure.ac")
[ -n "$version" ] || die "no version in configure.ac's AC_INIT"
check_eq "debian/changelog's version is configure.ac's" "$version" \
    "$(dpkg-parsechangelog -l "$top_srcdir/debian/changelog" -S Version)"

# ---- 1. a copy of the tree: the files git knows, or what make dist packs ------------------
S=$T/src/stapled-$version
mkdir -p "$S"
# A git checkout only when the source directory is its top (distcheck's
# unpacked tarball may sit inside an ignored directory of one). Otherwise
# (a release tarball) the distribution's files, never the whole directory:
# the build tree, and this copy in it, may be inside it.
if [ "$(git -C "$top_srcdir" rev-parse --show-toplevel 2>/dev/null)" = \
    "$(cd "$top_srcdir" && pwd -P)" ]; then
	(cd "$top_srcdir" && git ls-files -z --cached --others --exclude-standard |
	    xargs -0 tar -cf - --no-recursion) | tar -xf - -C "$S" ||
	    die "cannot copy the git tree"
else
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$top_builddir" distdir distdir="$S" \
	    >"$T/distdir.log" 2>&1 || die "make distdir failed (see distdir.log)"
fi
chmod -R u+w "$S" || die "cannot make the copy writable"
[ -x "$S/debian/rules" ] || die "the copy lacks an executable debian/rules"

# ---- 2. dpkg-buildpackage -b -uc -us, with the tests debian/rules runs -------------------
# Not this make's variables (MAKEFLAGS carries TESTS=... into every make below).
# Its tests: those that depend on the package's configuration (/etc, /var,
# the units), and one unit test to show it runs them; this suite runs every
# test on the same tree (debian/rules's STAPLED_PACKAGE_TESTS). No
# debug-symbol package: what is checked below is the package itself.
PACKAGE_TESTS="tests/unit/test_httpcache tests/integration/t_install.sh tests/integration/t_policy.sh"
(cd "$S" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL DEB_BUILD_OPTIONS="parallel=2 noddebs" \
    STAPLED_PACKAGE_TESTS="$PACKAGE_TESTS" \
    timeout "$PACKAGE_BUILD_TIMEOUT_S" dpkg-buildpackage -b -uc -us) >"$T/build.log" 2>&1
rc=$?
check_eq "dpkg-buildpackage -b -uc -us: exit 0" 0 "$rc"
[ "$rc" = 0 ] || sed -n '/^FAIL\|^ERROR\|^# FAIL\|error:\|dpkg-\(buildpackage\|checkbuilddeps\): error/p' \
    "$T/build.log" | head -n 40 | sed 's/^/#   /'
# The package build ran its tests, and they passed (debian/rules names them).
for t in $PACKAGE_TESTS; do
	check "the package build ran $t: PASS" grep -qx "PASS: $t" "$T/build.log"
done
check "the package build's tests: none failed" grep -qx '# FAIL:  0' "$T/build.log"
deb=$(ls "$T"/src/stapled_"$version"_*.deb 2>/dev/null | head -n 1)
[ -n "$deb" ] || die "no stapled_${version}_*.deb built (see build.log)"
ok "built ${deb##*/}"

# ---- 3. what the package holds ------------------------------------------------------------
# The units where this release's systemd wants them (debian/rules asks pkg-config too):
# /lib/systemd/system on Debian 12, /usr/lib/systemd/system on Debian 13.
U=$(pkg-config --variable=systemdsystemunitdir systemd 2>/dev/null)
[ -n "$U" ] || die "pkg-config names no systemd unit directory (systemd-dev on Debian 13)"
note "units under $U"
dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's|^\./|/|' >"$T/files"
for f in /usr/sbin/stapled /usr/sbin/staplectl /usr/libexec/stapled/stapled-import \
    $U/stapled.service $U/stapled.socket $U/stapled-import.service $U/stapled-import.path \
    $U/stapled-import.timer /usr/lib/sysusers.d/stapled.conf \
    /usr/lib/tmpfiles.d/stapled.conf /etc/stapled/stapled.json \
    /usr/share/man/man8/stapled.8.gz /usr/share/man/man8/staplectl.8.gz \
    /usr/share/man/man5/stapled.conf.5.gz /usr/share/doc/stapled/copyright \
    $U/nvattest-gate.service.d/stapled.conf \
    /usr/share/stapled/nvattest-gate.conf /usr/share/stapled/prometheus-alerts.yml \
    /usr/share/stapled/grafana-stapled.json; do
	check "the package holds $f" grep -qx "$f" "$T/files"
done
# dh_compress compresses the longer documents.
for f in README.md airgap.md design.md; do
	check "the package holds the document $f" \
	    grep -Eqx "/usr/share/doc/stapled/$f(\.gz)?" "$T/files"
done
for f in "$top_srcdir"/policy/*.rego; do
	[ -f "$f" ] || continue
	check "the package holds the policy ${f##*/}" \
	    grep -qx "/usr/share/stapled/policy/${f##*/}" "$T/files"
done
check "no file under /usr/local" sh -c "! grep -q '^/usr/local' '$T/files'"
check "every unit under $U" sh -c "! grep -v '^$U/' '$T/files' | grep -q 'systemd/system/'"

dpkg-deb -x "$deb" "$T/root" && dpkg-deb -e "$deb" "$T/control" || die "cannot unpack $deb"
# The configuration examples, not compressed: the files the docs quote.
for f in examples/regional/stapled.json examples/nginx/stapled.conf; do
	check "/usr/share/doc/stapled/$f is the tree's, uncompressed" \
	    cmp -s "$top_srcdir/$f" "$T/root/usr/share/doc/stapled/$f"
done
# Prometheus and Grafana load these as they are: not compressed, the tree's bytes.
for f in prometheus-alerts.yml grafana-stapled.json; do
	check "/usr/share/stapled/$f is docs/$f, uncompressed" \
	    cmp -s "$top_srcdir/docs/$f" "$T/root/usr/share/stapled/$f"
done
check "the gate's drop-in names the packaged policy" \
    grep -q -- '--relying-party-policy /usr/share/stapled/policy/stapled-gpu.rego"' \
    "$T/root$U/nvattest-gate.service.d/stapled.conf"

check_eq "the unit runs the packaged daemon with /etc/stapled/stapled.json" \
    "ExecStart=/usr/sbin/stapled -f /etc/stapled/stapled.json" \
    "$(grep '^ExecStart=' "$T/root$U/stapled.service")"
check_eq "the example configuration's cache is /var/lib/stapled" /var/lib/stapled \
    "$(jq -r .cache_dir "$T/root/etc/stapled/stapled.json")"
check "the example configuration is a conffile" \
    grep -qx /etc/stapled/stapled.json "$T/control/conffiles"
check "postinst creates the user (systemd-sysusers)" \
    grep -q 'systemd-sysusers' "$T/control/postinst"
check "postinst creates the directories (systemd-tmpfiles --create)" \
    grep -q 'systemd-tmpfiles .*--create' "$T/control/postinst"
for u in stapled.service stapled.socket stapled-import.path stapled-import.timer; do
	check "postinst enables $u" \
	    grep -q "deb-systemd-helper.* enable .*$u\|enable.*'$u'\|$u.*enable" "$T/control/postinst"
done

# The connected side's fetch and the guest's boot import: shipped, and
# left for the administrator to enable (the unit directory as the package has it).
udir=$(sed -n 's|/stapled[.]service$||p' "$T/files" | head -n 1)
for f in /usr/libexec/stapled/stapled-fetch /usr/libexec/stapled/stapled-boot-import \
    /etc/stapled/fetch.conf /etc/stapled/boot-import.conf "$udir/stapled-fetch.service" \
    "$udir/stapled-fetch.timer" "$udir/stapled-boot-import.service"; do
	check "the package holds $f" grep -qx "$f" "$T/files"
done
for f in fetch.conf boot-import.conf; do
	check "/etc/stapled/$f is a conffile" grep -qx "/etc/stapled/$f" "$T/control/conffiles"
done
# enabled_in UNIT: a block of postinst that enables on installation (debhelper's
# "was-enabled defaults to true") or starts names UNIT.
enabled_in() {
	awk -v u="'$1'" '/^if \[ "\$1" = "configure" \]/ { b = ""; inb = 1 }
	    inb { b = b $0 "\n" }
	    inb && /^fi$/ { if (index(b, u) && (index(b, "was-enabled defaults to true") ||
	        index(b, "deb-systemd-invoke"))) bad = 1; inb = 0 }
	    END { exit !bad }' "$T/control/postinst"
}
for u in stapled-fetch.timer stapled-fetch.service stapled-boot-import.service; do
	assert "postinst neither enables nor starts $u" '! enabled_in "$u"'
done
# Those with an [Install] section are the administrator's to enable; the
# package only disables them on purge.
for u in stapled-fetch.timer stapled-boot-import.service; do
	check "... postinst knows $u, to disable it on purge" \
	    grep -q "deb-systemd-helper debian-installed .*'$u'" "$T/control/postinst"
done
check "the check has teeth: postinst enables stapled-import.timer" enabled_in stapled-import.timer
check "the gate's drop-in orders the gate after the boot import" \
    grep -qx 'After=stapled-boot-import.service' "$T/root$udir/nvattest-gate.service.d/stapled.conf"

# ---- 3b. every path docs/gate.md and docs/airgap.md name is the package's, or not ours ------
# /etc/systemd/system, /usr/local, /media, /srv and /tmp are the administrator's, /dev the
# kernel's, /usr/bin/nvattest NVIDIA's. Under /var: a directory the package's tmpfiles.d
# entry makes, or a file in one.
in_tmpfiles() {
	local _d=$1
	while [ -n "$_d" ] && [ "$_d" != /var ]; do
		grep -qE "^[dDvq][[:space:]]+$_d[[:space:]]" \
		    "$T/root/usr/lib/tmpfiles.d/stapled.conf" && return 0
		_d=${_d%/*}
	done
	return 1
}
for doc in gate.md airgap.md; do
	grep -o '/\(lib\|usr\|etc\|var\|dev\|run\|opt\|srv\|media\|tmp\)/[A-Za-z0-9._@/-]*' \
	    "$top_srcdir/docs/$doc" | sed 's/[.]*$//' | sort -u >"$T/paths-$doc"
	n=0
	while read -r p; do
		case $p in
		/etc/systemd/system/* | /usr/local/* | /usr/local | /media/* | /srv/* | \
		    /tmp/* | /dev/* | /usr/bin/nvattest) continue ;;
		/var/*)
			check "docs/$doc's $p: under a directory of the package's tmpfiles.d entry" \
			    in_tmpfiles "$p" ;;
		/lib/* | /usr/lib/*)
			# Under merged /usr, /lib/X and /usr/lib/X are one file.
			check "docs/$doc's $p: in the package" grep -q \
			    "^\(/usr\)\?/lib/${p#*/lib/}\(/\|\$\)" "$T/files" ;;
		*)
			check "docs/$doc's $p: in the package" grep -q "^$p\(/\|\$\)" "$T/files" ;;
		esac
		n=$((n + 1))
	done <"$T/paths-$doc"
	assert "docs/$doc names paths of the package ($n checked)" '[ "$n" -ge 5 ]'
done

# ---- 4. lintian ----------------------------------------------------------------------------
changes=$(ls "$T"/src/stapled_"$version"_*.changes 2>/dev/null | head -n 1)
lintian "${changes:-$deb}" >"$T/lintian.log" 2>&1
note "lintian: $(grep -c '^W:' "$T/lintian.log") warning(s), $(grep -c '^E:' "$T/lintian.log") error(s)"
sed 's/^/#   /' "$T/lintian.log"
check "lintian: no error" sh -c "! grep -q '^E:' '$T/lintian.log'"

it_done
