# SPDX-License-Identifier: Apache-2.0
# bench-lib.sh: helpers of the benchmark scripts (sourced by tools/bench-scale):
# tools, processes started and stopped by pid, free ports, /proc figures, medians.
#
# The sourcing script sets BENCH_NAME (for messages) and calls bench_tmp
# once; every process it starts goes into the array `pids` (cleaned up on
# exit). Nothing here kills a process it was not given.

die() { echo "$BENCH_NAME: $*" >&2; exit 1; }
note() { echo "$BENCH_NAME: $(date -u +%T) $*" >&2; }

find_nginx() {
	command -v nginx 2>/dev/null ||
	    { [ -x /usr/sbin/nginx ] && echo /usr/sbin/nginx; }
}

# bench_need CMD...: install what is missing with apt-get (as root on
# Debian), or fail naming it. nginx comes from nginx-light.
bench_need() {
	local t missing= pkgs=
	for t in "$@"; do
		case $t in
		nginx) [ -n "$(find_nginx)" ] || missing="$missing nginx" ;;
		*) command -v "$t" >/dev/null 2>&1 || missing="$missing $t" ;;
		esac
	done
	[ -z "$missing" ] && return 0
	if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
		die "missing:$missing; install them (Debian: apt-get install$missing) or run as root"
	fi
	for t in $missing; do
		case $t in nginx) pkgs="$pkgs nginx-light" ;; *) pkgs="$pkgs $t" ;; esac
	done
	note "installing$pkgs"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q $pkgs >/dev/null ||
	    { apt-get update -q >/dev/null &&
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -q $pkgs >/dev/null; } ||
	    die "apt-get install$pkgs failed"
}

# bench_tmp: a private directory in $1 (or $TMPDIR) as $tmp, removed on exit
# with every process in `pids`.
pids=()
bench_tmp() {
	tmp=$(mktemp -d "${1:-${TMPDIR:-/tmp}}/stapled-$BENCH_NAME.XXXXXX") ||
	    die "mktemp failed"
	trap bench_cleanup EXIT
	trap 'exit 130' INT TERM
}
bench_cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	[ -n "${tmp:-}" ] && rm -rf "$tmp"
}

# stop PID: one process we started; SIGKILL after 5 s.
stop() {
	local p=$1 i
	kill "$p" 2>/dev/null
	for i in $(seq 50); do
		kill -0 "$p" 2>/dev/null || break
		sleep 0.1
	done
	kill -9 "$p" 2>/dev/null
	wait "$p" 2>/dev/null
	forget "$p"
}
forget() {	# drop a process that has ended from the cleanup list
	local i keep=()
	for i in "${pids[@]}"; do [ "$i" = "$1" ] || keep+=("$i"); done
	pids=("${keep[@]}")
}

# free_port: a loopback port nothing listens on now, below the kernel's
# ephemeral range when there is room (no outgoing connection or port 0 bind
# takes it meanwhile), not handed out before: called as $(free_port), each
# call is a subshell, so the ports handed out are kept in $tmp/ports.
free_port() {
	local p lo span used_ports_file=${tmp:?}/ports
	touch "$used_ports_file"
	read -r lo _ 2>/dev/null </proc/sys/net/ipv4/ip_local_port_range || lo=0
	span=$((lo - 20000))
	[ "$span" -ge 4000 ] || span=40000
	while :; do
		p=$((20000 + (RANDOM * 32768 + RANDOM) % span))
		grep -qx "$p" "$used_ports_file" && continue
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p" >>"$used_ports_file"
			echo "$p"
			return
		fi
	done
}

# mem_of PID: "VmRSS VmHWM RssAnon" in KiB. RssAnon leaves out the mapped
# files (libraries, and the LMDB map, whose pages are clean page cache).
mem_of() {
	awk '/^VmRSS:/ { r = $2 } /^VmHWM:/ { h = $2 } /^RssAnon:/ { a = $2 }
	    END { print r, h, a }' "/proc/$1/status" 2>/dev/null
}

# map_rss_of PID: KiB of the LMDB map (data.mdb) resident in PID, from smaps:
# what of VmRSS is the store's page cache rather than libraries or heap.
map_rss_of() {
	awk '/^[0-9a-f]+-[0-9a-f]+ / { m = ($NF ~ /\/data\.mdb$/) }
	    m && /^Rss:/ { s += $2 } END { print s + 0 }' "/proc/$1/smaps" 2>/dev/null
}

# cpu_ticks PID: user + system CPU time so far, in clock ticks.
cpu_ticks() {
	# the command name (field 2) may hold spaces: count from its ')'
	sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{ print $12 + $13 }'
}

median() {
	sort -g | awk '{ v[NR] = $1 } END {
		if (NR == 0) { print "nan"; exit }
		if (NR % 2) print v[(NR + 1) / 2]
		else printf "%.6g\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# notify_listen LOG: a stand-in for systemd's notify socket (the test suite's
# notify_recv.py), stamping each message with the wall clock; sets $notify_sock.
# stapled started with NOTIFY_SOCKET=$notify_sock sends READY=1 the moment it
# serves: what a unit ordered After= it waits for, with no client in between.
notify_listen() {
	notify_sock=@stapled-bench-$$
	python3 "$here/tests/integration/notify_recv.py" "$notify_sock" "$1" realtime \
	    >/dev/null 2>&1 &
	pids+=("$!")
	local i
	for i in $(seq 100); do
		grep -q '^LISTENING' "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	die "the notify receiver did not start"
}
# notify_ready_ms LOG T0: ms from $EPOCHREALTIME value T0 to the first READY=1
# stamped after T0 (waits up to 10 s for it), or "nan".
notify_ready_ms() {
	local i v
	for i in $(seq 200); do
		v=$(awk -v a="$2" '$1 > a && /READY=1/ {
			printf "%.1f\n", ($1 - a) * 1000; exit }' "$1")
		[ -n "$v" ] && { echo "$v"; return 0; }
		sleep 0.05
	done
	echo nan
}

# ms_since T0: milliseconds from $EPOCHREALTIME value T0 to now.
ms_since() {
	awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f\n", (b - a) * 1000 }'
}
