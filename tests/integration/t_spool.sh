#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The spool and big files: stapled-import takes any name and leaves what is not a bundle alone,
# keeps a bundle the cache cannot take now; verify and import refuse a 1 GiB non-bundle at once, in bounded memory.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_spool
need_ctl
IMPORT=$top_builddir/tools/stapled-import
[ -f "$IMPORT" ] || skip "stapled-import not built at $IMPORT"
need_cmd sha256sum truncate mkfifo flock
[ -x /usr/bin/time ] || skip "/usr/bin/time (the time package) not installed"
pki_make

# 64 MiB, in KiB as /usr/bin/time -f %M reports the maximum resident set.
RSS_MAX_KB=65536

# ---- a bundle from a cache warmed by a live upstream ------------------------------
ocsp_bundle_warmed "$T/good.jsonl"
farm_stop good
[ "$(grep -c '"type":"entry"' "$T/good.jsonl")" -eq 3 ] || die "the export holds no 3 entries"

# The importing side: no upstream it can reach.
cat >"$T/b.json" <<EOF
{ "cache_dir": "$T/b",
  "ocsp": { "upstreams": [ "http://127.0.0.1:9/" ],
            "anchors": [ "$ANCHORS" ], "intermediates": [ "$INTERMEDIATES" ] } }
EOF
mkdir -p "$T/b"
SPOOL=$T/spool
mkdir -p "$SPOOL/in" "$SPOOL/done" "$SPOOL/failed"

# spool_run LOG [STAPLECTL]: one run of the script on this spool; status in $RUN_RC.
spool_run() {
	STAPLED_SPOOL=$SPOOL STAPLED_CONFIG=$T/b.json STAPLECTL=${2:-$CTL} \
	    STAPLED_IMPORT_WAIT_S=60 timeout 120 sh "$IMPORT" >"$1" 2>&1
	RUN_RC=$?
}

# has_line FILE PREFIX...: a line of FILE starts with one of the PREFIXes (no pattern).
has_line() {
	local _f=$1 _l _p
	shift
	while IFS= read -r _l; do
		for _p in "$@"; do
			case $_l in "$_p"*) return 0 ;; esac
		done
	done <"$_f"
	return 1
}

# ---- 1. any name is imported and journalled under its name ----------------------
NL='
'
NAMES=("a|b.jsonl" "x&y.jsonl" 'back\slash.jsonl' "with space.jsonl" \
    "new${NL}line.jsonl" "-leading.jsonl" "s|^|&.jsonl")
for n in "${NAMES[@]}"; do
	cp "$T/good.jsonl" "$SPOOL/in/$n"
done
spool_run "$T/names.log"
check_eq "stapled-import with every name: exit 0" 0 "$RUN_RC"
for n in "${NAMES[@]}"; do
	shown=${n//$NL/\\n}
	check "'$shown' moved to done/ under its own name" test -f "$SPOOL/done/$n"
	check "'$shown': its move is logged under its exact name" \
	    grep -qxF "stapled-import: $shown: imported, moved to done/" "$T/names.log"
	check "'$shown': staplectl's verdicts are prefixed with its exact name" \
	    has_line "$T/names.log" "$shown: imported ocsp " "$shown: kept ocsp "
done
check_eq "in/ is empty" "" "$(ls -A "$SPOOL/in")"
check_eq "the entries are in the cache" 3 "$("$CTL" -f "$T/b.json" list 2>/dev/null | wc -l)"

# ---- 2. what is not a regular, visible, complete file is left alone --------------
cp "$T/good.jsonl" "$T/outside.jsonl"
ln -s "$T/outside.jsonl" "$SPOOL/in/link.jsonl"
ln -s "$T/nowhere.jsonl" "$SPOOL/in/dangling.jsonl"
mkfifo "$SPOOL/in/fifo.jsonl"
mkdir "$SPOOL/in/dir.jsonl"
cp "$T/good.jsonl" "$SPOOL/in/.hidden.jsonl"
cp "$T/good.jsonl" "$SPOOL/in/late.jsonl.part"
ls -lA --time-style=+%s "$SPOOL/in" >"$T/in.before"
spool_run "$T/alone.log"
check_eq "nothing to import: exit 0" 0 "$RUN_RC"
ls -lA --time-style=+%s "$SPOOL/in" >"$T/in.after"
check "in/ is as it was" cmp -s "$T/in.before" "$T/in.after"
check_eq "the symlink still points where it did" "$T/outside.jsonl" \
    "$(readlink "$SPOOL/in/link.jsonl")"
check "the FIFO is still a FIFO" test -p "$SPOOL/in/fifo.jsonl"
check "the hidden file and the .part are unchanged" \
    eval 'cmp -s "$T/good.jsonl" "$SPOOL/in/.hidden.jsonl" && cmp -s "$T/good.jsonl" "$SPOOL/in/late.jsonl.part"'
check_eq "none of them is logged" "" "$(cat "$T/alone.log")"
check_eq "done/ and failed/ got nothing new" "${#NAMES[@]} 0" \
    "$(find "$SPOOL/done" -mindepth 1 -printf . | wc -c) $(find "$SPOOL/failed" -mindepth 1 -printf . | wc -c)"
rm -rf "$SPOOL/in"/* "$SPOOL/in"/.hidden.jsonl

# ---- 3. exit 4: the cache cannot take it now; the next run imports it ------------
cat >"$T/full-staplectl" <<'EOF'
#!/bin/sh
echo "staplectl: cache: map full (1 MiB used of 1 MiB)" >&2
exit 4
EOF
chmod +x "$T/full-staplectl"
cp "$T/good.jsonl" "$SPOOL/in/later.jsonl"
spool_run "$T/full.log" "$T/full-staplectl"
check_eq "a bundle the cache cannot take: exit 1" 1 "$RUN_RC"
check "... and it stays in in/" test -f "$SPOOL/in/later.jsonl"
check "... not in failed/" test ! -e "$SPOOL/failed/later.jsonl"
check "... logged as left to be retried" \
    grep -q '^stapled-import: later.jsonl: the cache cannot take it now (staplectl exit status 4), left in in/ to be retried' "$T/full.log"
check "... with staplectl's reason under its name" \
    grep -qxF 'later.jsonl: staplectl: cache: map full (1 MiB used of 1 MiB)' "$T/full.log"
spool_run "$T/retry.log"
check_eq "the next run: exit 0" 0 "$RUN_RC"
check "the next run moves it to done/" test -f "$SPOOL/done/later.jsonl"

# A bundle refused for its content goes to failed/.
{ head -n 1 "$T/good.jsonl"; echo '{"type":"entry"'; } >"$SPOOL/in/bad.jsonl"
spool_run "$T/bad.log"
check_eq "a bundle refused for its content: exit 1" 1 "$RUN_RC"
check "... moved to failed/" test -f "$SPOOL/failed/bad.jsonl"

# ---- 4. a 1 GiB file that is not a bundle: refused at its first bad line ---------
# measure FILE LOG CMD...: max RSS (KiB) into $RSS, exit status into $MRC.
measure() {
	local _f=$1 _log=$2
	shift 2
	/usr/bin/time -f %M -o "$_f" "$@" >"$_log" 2>&1
	MRC=$?
	RSS=$(tail -n 1 "$_f")
}
truncate -s 1G "$T/nul.jsonl"
for cmd in verify import; do
	measure "$T/rss.$cmd" "$T/nul.$cmd.log" "$CTL" -f "$T/b.json" "$cmd" "$T/nul.jsonl"
	check_eq "$cmd of 1 GiB of NUL bytes: exit 1" 1 "$MRC"
	check "... refused at line 1 as not text" grep -q 'line 1: not a text file (NUL byte)' "$T/nul.$cmd.log"
	assert_figure "... in under 64 MiB of RSS ($RSS KiB)" '[ "$RSS" -lt $RSS_MAX_KB ]'
done
# A good header, then NUL bytes: refused at line 2.
head -n 1 "$T/good.jsonl" >"$T/hnul.jsonl"
truncate -s 1G "$T/hnul.jsonl"
measure "$T/rss.hnul" "$T/hnul.log" "$CTL" -f "$T/b.json" verify "$T/hnul.jsonl"
check "a header then NUL bytes: refused at line 2" grep -q 'line 2: not a text file (NUL byte)' "$T/hnul.log"
assert_figure "... in under 64 MiB of RSS ($RSS KiB)" '[ "$RSS" -lt $RSS_MAX_KB ]'
rm -f "$T/nul.jsonl" "$T/hnul.jsonl"
# From a pipe: refused at the first byte too (head then stops on SIGPIPE).
head -c 1G /dev/zero | /usr/bin/time -f %M -o "$T/rss.pipe" \
    "$CTL" -f "$T/b.json" verify - >"$T/pipe.log" 2>&1
check "1 GiB of NUL bytes from a pipe: refused at line 1" \
    grep -q -- '-: refused, nothing verified: line 1: not a text file (NUL byte)' "$T/pipe.log"
RSS=$(tail -n 1 "$T/rss.pipe")
assert_figure "... in under 64 MiB of RSS ($RSS KiB)" '[ "$RSS" -lt $RSS_MAX_KB ]'
# A good bundle from a pipe is read twice through a copy.
cat "$T/good.jsonl" | "$CTL" -f "$T/b.json" verify - >"$T/pipe-good.log" 2>&1
check_eq "a bundle from a pipe verifies: one ok per entry" 3 "$(grep -c '^ok ocsp ' "$T/pipe-good.log")"
check_eq "the cache still holds its 3 entries" 3 "$("$CTL" -f "$T/b.json" list 2>/dev/null | wc -l)"

# ---- 5. a big valid bundle is verified in the memory of a small one --------------
# big N OUT: the export's entry and cert lines N times over, sealed.
big() {
	awk -v n="$1" '!/"type":"header"/ && !/"type":"end"/ { l[++k] = $0 }
	    END { for (i = 0; i < n; i++) for (j = 1; j <= k; j++) print l[j] }' \
	    "$T/good.jsonl" | seal "$2"
}
big 50 "$T/small.jsonl"
big 1500 "$T/big.jsonl"
measure "$T/rss.small" "$T/small.log" "$CTL" -f "$T/b.json" verify "$T/small.jsonl"
check_eq "verify of 150 entries: exit 0" 0 "$MRC"
SMALL=$RSS
measure "$T/rss.big" "$T/big.log" "$CTL" -f "$T/b.json" verify "$T/big.jsonl"
check_eq "verify of 4500 entries ($(($(stat -c %s "$T/big.jsonl") >> 20)) MiB): exit 0" 0 "$MRC"
check_eq "... one verdict per entry: its 3 entries ok, their repeats duplicates" "3 4497" \
    "$(grep -c '^ok ocsp ' "$T/big.log") $(grep -c '^duplicate ocsp ' "$T/big.log")"
note "max RSS: 150 entries $SMALL KiB, 4500 entries $RSS KiB"
assert_figure "... in about the memory of 150 entries ($SMALL KiB and $RSS KiB: under 4 MiB more)" \
    '[ "$RSS" -lt $((SMALL + 4096)) ]'

it_done
