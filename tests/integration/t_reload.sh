#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A reload accepts exactly what a start accepts: a configuration start or
# stapled -n would refuse (TLS files missing, two listeners on one address,
# a wildcard or dual-stack [::] among them, admin_listen over listen, an
# admin listener over a passed socket) is refused whole by SIGHUP, staplectl
# reload says why and exits 1, stapled_config_last_reload_successful is 0
# and the old listeners serve on; a good file then sets it to 1 and the
# success timestamp.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_reload
need_ctl
DEAD=http://127.0.0.1:$(dead_port 1)/

# conf LISTEN [MORE]: a configuration file's text, listen LISTEN (JSON),
# then MORE (", key: value" pairs).
conf() {
	printf '{ "listen": %s, "cache_dir": "%s",\n  "ocsp": { "upstreams": ["%s"] }%s }\n' \
	    "$1" "$T/c" "$DEAD" "${2-}"
}
# metric NAME: its value in a fresh scrape.
metric() { metrics_get "$T/m"; awk -v n="$1" '$1 == n { print $2 }' "$T/m"; }
# reload_of FILE: the daemon's file replaced with FILE, then staplectl
# reload; its output in RL_OUT, its status in RL_RC.
reload_of() {
	cp "$1" "$T/live.json"
	RL_OUT=$("$CTL" -C "$T/c" reload 2>&1); RL_RC=$?
	note "staplectl reload ($(basename "$1")): $RL_OUT"
}

# ---- the running daemon: one plain listener, from the file alone ------------
P=$(free_port); Q=$(free_port)
SURL=http://127.0.0.1:$P
conf "[\"127.0.0.1:$P\"]" >"$T/good.json"
cp "$T/good.json" "$T/live.json"
bg_start SPID "$T/d.log" "$STAPLED" -f "$T/live.json"
i=0
while ! curl -s -o /dev/null -m 1 "$SURL/healthz" && [ $i -lt 100 ]; do
	kill -0 "$SPID" 2>/dev/null || die "stapled did not start: $(cat "$T/d.log")"
	sleep 0.1; i=$((i + 1))
done
check_eq "after start: stapled_config_last_reload_successful 1" 1 \
    "$(metric stapled_config_last_reload_successful)"
ts0=$(metric stapled_config_last_reload_success_timestamp_seconds)
assert "after start: the success timestamp is the start's ($ts0)" \
    '[ -n "$ts0" ] && [ $(( $(date +%s) - ts0 )) -le 60 ]'

# ---- configurations that start and stapled -n refuse -------------------------
# NAME, configuration, what the refusal says (ERE).
conf "[\"127.0.0.1:$P\", {\"addr\": \"127.0.0.1:$Q\", \"tls\": {\"cert\": \"$T/no-cert.pem\", \"key\": \"$T/no-key.pem\"}}]" \
    >"$T/tls-missing.json"
conf "[\"127.0.0.1:$P\", \"127.0.0.1:$P\"]" >"$T/dup.json"
conf "[\"127.0.0.1:$P\", \"0.0.0.0:$Q\", \"[::]:$Q\"]" >"$T/dual.json"
conf "[\"127.0.0.1:$P\", \"0.0.0.0:$P\"]" >"$T/wild.json"
conf "[\"127.0.0.1:$P\"]" ", \"admin_listen\": \"127.0.0.1:$P\"" >"$T/admin.json"
while read -r name want; do
	out=$("$STAPLED" -n -f "$T/$name.json" 2>&1); rc=$?
	check_eq "stapled -n refuses $name: exit 1" 1 "$rc"
	check "stapled -n on $name says why ($out)" sh -c "printf '%s' '$out' | grep -Eq '$want'"
	reload_of "$T/$name.json"
	check_eq "staplectl reload of $name: exit 1" 1 "$RL_RC"
	check "staplectl reload of $name: refused, with the reason" \
	    sh -c "printf '%s' '$RL_OUT' | grep -Eq 'refused: configuration refused, the old one stays: .*$want'"
	check_eq "after $name: stapled_config_last_reload_successful 0" 0 \
	    "$(metric stapled_config_last_reload_successful)"
	check_eq "after $name: the success timestamp stays the start's" "$ts0" \
	    "$(metric stapled_config_last_reload_success_timestamp_seconds)"
	check_eq "after $name: the old listener serves" 200 \
	    "$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$SURL/healthz")"
done <<EOF2
tls-missing listen 127.0.0.1:$Q: tls cert $T/no-cert.pem: No such file or directory
dup listen\[1\] "127.0.0.1:$P" and listen\[0\] "127.0.0.1:$P" cannot both listen: the same address
dual listen\[2\] "\[::\]:$Q" and listen\[1\] "0.0.0.0:$Q" cannot both listen: \[::\] takes IPv4 as well
wild listen\[1\] "0.0.0.0:$P" and listen\[0\] "127.0.0.1:$P" cannot both listen: a wildcard address
admin admin_listen\[0\] "127.0.0.1:$P" and listen\[0\] "127.0.0.1:$P" cannot both listen: the same address; the admin listener must be apart
EOF2
check "the TLS listener of the refused file was never opened" \
    sh -c "! grep -q 'listening on 127.0.0.1:$Q' '$T/d.log'"
check_eq "the refused files left no TLS handshake counters" 0 \
    "$(grep -c 'stapled_tls_handshake_failures_total' "$T/m")"

# A start refuses them with the same words, not with EADDRINUSE.
bg_start BPID "$T/start-dual.log" "$STAPLED" -f "$T/dual.json" --cache-dir "$T/c2"
bg_wait "$BPID"
check_eq "a start with the dual-stack file: exit 1" 1 "$BG_RC"
check "a start says why as stapled -n does, before binding" \
    sh -c "grep -q 'cannot both listen: \[::\] takes IPv4 as well' '$T/start-dual.log' && ! grep -qi 'in use' '$T/start-dual.log'"

# ---- a good file: reloaded, the metric 1 and the timestamp moved -------------
conf "[\"127.0.0.1:$P\"]" ", \"admin_listen\": \"127.0.0.1:$Q\"" >"$T/good2.json"
out=$("$STAPLED" -n -f "$T/good2.json" 2>&1)
check_eq "stapled -n accepts the good file" "configuration OK" "$out"
# The timestamp counts seconds: the reload's must be later than the start's.
[ "$(date +%s)" -gt "$ts0" ] || sleep 1
t1=$(date +%s)
reload_of "$T/good2.json"
check_eq "staplectl reload of the good file: exit 0" 0 "$RL_RC"
check_eq "after it: stapled_config_last_reload_successful 1" 1 \
    "$(metric stapled_config_last_reload_successful)"
ts1=$(metric stapled_config_last_reload_success_timestamp_seconds)
assert "after it: the success timestamp is the reload's ($ts1, not before $t1)" \
    '[ -n "$ts1" ] && [ "$ts1" -ge "$t1" ] && [ "$ts1" -gt "$ts0" ]'
check "the admin_listen change waits for a restart (warned)" \
    grep -q 'admin_listen.*take effect at the next restart' "$T/d.log"
stapled_stop

# ---- socket activation: the passed sockets count as listeners ----------------
if command -v systemd-socket-activate >/dev/null 2>&1; then
	P2=$(free_port)
	SURL=http://127.0.0.1:$P2
	conf "[\"127.0.0.1:$P2\"]" | sed "s|$T/c\"|$T/c3\"|" >"$T/live.json"
	cp "$T/live.json" "$T/act-good.json"
	bg_start SPID "$T/act.log" systemd-socket-activate -l "127.0.0.1:$P2" -- \
	    "$STAPLED" -f "$T/live.json"
	wait_for_line "$T/act.log" "Listening on 127.0.0.1:$P2" >/dev/null ||
	    die "systemd-socket-activate did not listen"
	check_eq "activated: served on the passed socket" 200 \
	    "$(curl -s -m 10 -o /dev/null -w '%{http_code}' "$SURL/healthz")"
	out=$("$CTL" -C "$T/c3" reload 2>&1); rc=$?
	check_eq "activated: reload of listen equal to the passed socket: exit 0" 0 "$rc"
	# A public wildcard over the passed socket is what a start leaves out
	# (the passed socket serves, t_systemd): a reload takes it, for then.
	conf "[\"0.0.0.0:$P2\"]" | sed "s|$T/c\"|$T/c3\"|" >"$T/act-wild.json"
	cp "$T/act-wild.json" "$T/live.json"
	out=$("$CTL" -C "$T/c3" reload 2>&1); rc=$?
	check_eq "activated: reload of a public wildcard over the passed socket: exit 0 (a start leaves it out)" 0 "$rc"
	# An admin listener over it has nowhere to go: refused.
	conf "[\"127.0.0.1:$P2\"]" ", \"admin_listen\": [\"0.0.0.0:$P2\"]" |
	    sed "s|$T/c\"|$T/c3\"|" >"$T/act-admin.json"
	cp "$T/act-admin.json" "$T/live.json"
	out=$("$CTL" -C "$T/c3" reload 2>&1); rc=$?
	note "staplectl reload (act-admin): $out"
	check_eq "activated: reload of admin_listen over the passed socket: exit 1" 1 "$rc"
	check "activated: the refusal names the passed socket" \
	    sh -c "printf '%s' '$out' | grep -q 'admin_listen\[0\] \"0.0.0.0:$P2\" and the passed socket 127.0.0.1:$P2 cannot both listen'"
	check_eq "activated: still served on the passed socket" 200 \
	    "$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$SURL/healthz")"
	check_eq "activated: stapled_config_last_reload_successful 0" 0 \
	    "$(metric stapled_config_last_reload_successful)"
	bg_kill "$SPID" TERM
else
	note "systemd-socket-activate not installed: the activation part is left out"
fi

it_done
