#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# staplectl -f reads the configuration as stapled does: a file stapled -n refuses stops every
# staplectl command with exit 2 and stapled's own file:line:column message; a good file is used.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_ctl_config
need_ctl
need_cmd sha256sum cut

# ---- helpers ------------------------------------------------------------------

# ctl ARGS...: staplectl, its exit status in CTL_RC, stdout and stderr apart.
ctl() {
	"$CTL" "$@" >"$T/ctl.out" 2>"$T/ctl.err"
	CTL_RC=$?
}

# stapled_check FILE: stapled -n's exit status in CHECK_RC, its stderr in $T/check.err.
stapled_check() {
	"$STAPLED" -n -f "$1" >"$T/check.out" 2>"$T/check.err"
	CHECK_RC=$?
}

# Every command of `staplectl --help`, with arguments it would otherwise act on.
CACHE=$T/cache
commands() {
	cat <<EOF
status
list
show 0123456789abcdef
export --out $T/out.jsonl
verify $T/none.jsonl
import $T/none.jsonl
manifest --evidence $T/none.json --out $T/m.json
fetch --manifest $T/none.json --out $T/f.jsonl
prefetch --evidence $T/none.json
purge --expired
export-rim-store $T/rims
EOF
}

# refused NAME FILE: stapled -n refuses FILE; every staplectl command then exits 2 with
# "staplectl: " and exactly stapled's message, and writes nothing.
refused() {
	local _name _file _want _line _n
	_name=$1; _file=$2
	stapled_check "$_file"
	check_eq "$_name: stapled -n refuses it (exit 1)" 1 "$CHECK_RC"
	_want="staplectl: $(cat "$T/check.err")"
	_n=0
	while read -r _line; do
		# shellcheck disable=SC2086 # the arguments split on purpose
		ctl -C "$CACHE" -f "$_file" $_line
		if [ "$CTL_RC" != 2 ] || [ "$(cat "$T/ctl.err")" != "$_want" ] || [ -s "$T/ctl.out" ]; then
			fail "$_name: staplectl ${_line%% *}: exit $CTL_RC, said '$(cat "$T/ctl.err")'"
			continue
		fi
		_n=$((_n + 1))
	done <<EOF
$(commands)
EOF
	check_eq "$_name: all $(commands | wc -l) commands exit 2 with stapled's message" \
	    "$(commands | wc -l)" "$_n"
	assert "$_name: nothing was written" \
	    '[ ! -e "$T/out.jsonl" ] && [ ! -e "$T/rims" ] && [ ! -e "$T/m.json" ] &&
	    [ ! -e "$T/f.jsonl" ] && [ ! -e "$CACHE" ]'
}

# ---- 1. configurations stapled -n refuses --------------------------------------

printf '{\n  "cache_dir": "%s",\n  "ocsp": {\n    "anchor": ["%s/root.pem"]\n  }\n}\n' \
    "$CACHE" "$T" >"$T/typo.json"
refused "a typo'd key (ocsp.anchor)" "$T/typo.json"
check_eq "the typo: the message points at the key" \
    "$T/typo.json:4:5: ocsp: unknown key \"anchor\"" "$(cat "$T/check.err")"

printf '{"map_size_mb": "64"}\n' >"$T/type.json"
refused "a wrong type (map_size_mb a string)" "$T/type.json"

printf '{"ocsp": {"skew_s": 60},\n "pccs": {"mode": "fastest"}}\n' >"$T/mode.json"
refused "a bad mode (pccs.mode)" "$T/mode.json"
check_eq "the mode: the message names the choices" \
    "$T/mode.json:2:19: pccs.mode: must be one of \"cache_first\", \"upstream_first\"" \
    "$(cat "$T/check.err")"

printf '{"listen": ["127.0.0.1:8090", "localhost"]}\n' >"$T/listen.json"
refused "a listen address without a port" "$T/listen.json"
printf '{"listen": "::1:8090"}\n' >"$T/listen6.json"
refused "an IPv6 listen address without brackets" "$T/listen6.json"

printf '{"rim": {"upstreams": [{"url": "https://rim.example", "nonce": false}]}}\n' \
    >"$T/upkey.json"
refused "an unknown key in an upstream object" "$T/upkey.json"
printf '{"amd_kds": {"upstreams": [{"url": "https://a.example"}], "api_key_file": "/k"}}\n' \
    >"$T/svc.json"
refused "a PCCS-only key under amd_kds" "$T/svc.json"
printf '{"ocsp": {"refresh": {"min_interval_s": 60, "max_interval_s": 30}}}\n' >"$T/range.json"
refused "refresh bounds out of order" "$T/range.json"
printf '{"cache_dir": "/x",\n "ocsp": {}\n' >"$T/syntax.json"
refused "a syntax error" "$T/syntax.json"

# ---- 2. a file that cannot be read: exit 3, the same words as stapled -------------

stapled_check "$T/missing.json"
ctl -C "$CACHE" -f "$T/missing.json" status
check_eq "a missing -f file: exit 3 (cannot open a file)" 3 "$CTL_RC"
check_eq "a missing -f file: stapled's message" "staplectl: $(cat "$T/check.err")" \
    "$(cat "$T/ctl.err")"

# ---- 3. a good configuration is used ----------------------------------------------

printf '{"cache_dir": "%s", "map_size_mb": 16, "rim": {"retention_s": 0}}\n' \
    "$CACHE" >"$T/good.json"
stapled_check "$T/good.json"
check_eq "the good file: stapled -n accepts it" 0 "$CHECK_RC"
ctl -f "$T/good.json" status
check_eq "status: the file's cache_dir is the one opened (missing: exit 3)" 3 "$CTL_RC"
check "status: the message names the file's cache_dir" grep -qF "$CACHE" "$T/ctl.err"
ctl -f "$T/good.json" purge --expired
check_eq "purge --expired creates the file's cache_dir: exit 0" 0 "$CTL_RC"
check "purge: the cache is where the file says" [ -f "$CACHE/data.mdb" ]
ctl -f "$T/good.json" status
check_eq "status on the file's cache: exit 0" 0 "$CTL_RC"
ctl -C "$T/other" -f "$T/good.json" status
check_eq "-C wins over the file's cache_dir (missing: exit 3)" 3 "$CTL_RC"
check "-C: the message names -C's directory" grep -qF "$T/other" "$T/ctl.err"

# A trust file that does not load keeps its own message: stapled -n says it, staplectl when
# a command loads the anchors (verify), and commands that do not need them work.
printf '{"cache_dir": "%s", "ocsp": {"anchors": "%s/absent.pem"}}\n' "$CACHE" "$T" \
    >"$T/anchor.json"
stapled_check "$T/anchor.json"
check_eq "an absent anchors file: stapled -n refuses it" 1 "$CHECK_RC"
ctl -f "$T/anchor.json" status
check_eq "an absent anchors file: status does not read it (exit 0)" 0 "$CTL_RC"
# An empty, sealed bundle: read once the anchors load, and refused for its emptiness.
printf '{"type":"header","format":"stapled-bundle","version":1}\n' >"$T/b.jsonl"
printf '{"type":"end","entries":0,"sha256":"%s"}\n' "$(sha256sum "$T/b.jsonl" | cut -d' ' -f1)" \
    >>"$T/b.jsonl"
ctl -f "$T/good.json" verify "$T/b.jsonl"
check_eq "an empty sealed bundle, with the good file: read, exit 1 (no entries)" 1 "$CTL_RC"
check "... says it has no entries" grep -q 'b.jsonl: no entries' "$T/ctl.err"
ctl -f "$T/anchor.json" verify "$T/b.jsonl"
check_eq "an absent anchors file: verify exits 3 (cannot open a file)" 3 "$CTL_RC"
check "an absent anchors file: verify names it" grep -qF "$T/absent.pem" "$T/ctl.err"

# ---- without -f: $STAPLED_CONFIG, else the installed configuration -----------------
printf '{"cache_dir": "%s"}\n' "$T/dflt" >"$T/dflt.json"
STAPLED_CONFIG=$T/dflt.json ctl purge --expired
STAPLED_CONFIG=$T/dflt.json ctl status
check_eq "STAPLED_CONFIG, no -f: status says which file it read" "config     $T/dflt.json" \
    "$(head -n 1 "$T/ctl.out")"
check "... and uses its cache_dir" grep -q "^cache      $T/dflt " "$T/ctl.out"
ctl -C "$T/dflt" status
check "STAPLED_CONFIG empty (as lib.sh sets it): status says none is read" \
    grep -q '^config     none: the built-in defaults' "$T/ctl.out"
# The build's default, staplectl_paths.h's, over a directory of the test's in
# a mount namespace of its own: the host's own is neither read nor touched.
DEF=$(sed -n 's/^#define CTL_DEFAULT_CONFIG[[:space:]]*"\(.*\)"$/\1/p' \
    "$top_builddir/tools/staplectl_paths.h")
SYSC=${DEF%/stapled/stapled.json}
if [ -n "$DEF" ] && [ -d "$SYSC" ] && unshare -m true 2>/dev/null; then
	mkdir -p "$T/etc/stapled"
	cp "$T/dflt.json" "$T/etc/stapled/stapled.json"
	inst() {
		env -u STAPLED_CONFIG unshare -m sh -c 'mount --bind "$1" "$2" && shift 2 &&
		    exec "$@"' sh "$T/etc" "$SYSC" "$CTL" "$@" >"$T/ctl.out" 2>"$T/ctl.err"
		CTL_RC=$?
	}
	inst status
	check_eq "no -f: the installed $DEF is read, and status names it" \
	    "0 config     $DEF" "$CTL_RC $(head -n 1 "$T/ctl.out")"
	check "... its cache_dir used" grep -q "^cache      $T/dflt " "$T/ctl.out"
	inst -f "$T/good.json" status
	check "-f wins over the installed file" grep -q "^config     $T/good.json$" "$T/ctl.out"
	printf '{"cache_dir": 7}\n' >"$T/etc/stapled/stapled.json"
	inst status
	check_eq "an installed file stapled -n refuses: exit 2, as with -f" 2 "$CTL_RC"
else
	echo "# no mount namespace or no $SYSC here: the installed default is not tried"
fi

it_done
