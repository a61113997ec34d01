#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The man pages render as lintian renders them (no preprocessor but the one a page names on its
# first line): man --warnings prints no warning for any page, every table goes through tbl (its
# format line is not printed as text), and each page has its NAME section.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_man
need_cmd man

# page_problems FILE: one line per problem of the page, none when it renders.
page_problems() {
	local _f=$1 _out=$T/render.txt _err=$T/render.err _fmt
	# As lintian runs it (MANROFFSEQ empty: tbl only when the page asks on
	# its first line); the page on stdin, so that man's user need not reach
	# the tree.
	# The text without its bold and underline: groff 1.22 overstrikes
	# (Debian 12), groff 1.23 sends SGR escapes (Debian 13).
	LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 - \
	    <"$_f" 2>"$_err" | sed 's/.\x08//g; s/\x1b\[[0-9;]*m//g' >"$_out"
	[ -s "$_err" ] && echo "man --warnings: $(head -n 2 "$_err" | tr '\n' ' ')"
	grep -q '^NAME' "$_out" || echo "no NAME section rendered"
	# Each table's format line (the one after .TS and its options that ends in a dot).
	awk '/^\.TS/ { t = 1; next } t && /\.$/ { print; t = 0 }' "$_f" | while read -r _fmt; do
		grep -qF -- "$_fmt" "$_out" && echo "a table not run through tbl: '$_fmt' printed"
	done
}

n=0
for page in "$top_srcdir"/docs/*.[1-8]; do
	[ -f "$page" ] || continue
	n=$((n + 1))
	check_eq "${page##*/} renders without a warning" "" "$(page_problems "$page")"
done
assert "the man pages were found ($n)" '[ "$n" -ge 3 ]'
grep -q '^\.TS' "$top_srcdir/docs/stapled.conf.5" || die "stapled.conf(5) has no table to check"

# The check has teeth: stapled.conf(5) with its tbl line second (man reads it
# only on the first) prints its table's format line, and groff 1.23 warns
# that tbl was not run.
{ sed -n 2p "$top_srcdir/docs/stapled.conf.5"; sed -n 1p "$top_srcdir/docs/stapled.conf.5"
    sed 1,2d "$top_srcdir/docs/stapled.conf.5"; } >"$T/moved.5"
problems=$(page_problems "$T/moved.5")
note "with the tbl line second: $problems"
check "the tbl line second is caught" grep -q 'tbl' <<<"$problems"

it_done
