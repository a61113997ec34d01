#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The gate's policy and drop-in: stapled-gpu.rego against the SDK's facts and real claims, the drop-in as systemd reads it.
#
# policy_check.py (python3 stdlib) parses policy/stapled-gpu.rego in the few
# statement shapes it uses and checks: every claim key it reads is one the
# SDK defines; it differs from nvattest's built-in verdict only by dropping
# the OCSP nonce check and adding the evidence nonce, secboot and dbgstat
# rules; its verdicts on real nvattest and NRAS claims, on cache-hit copies
# and on copies with each condition broken. No Rego engine is packaged in
# Debian 12, so this is not an evaluation by OPA or nvattest's engine (see
# the checker's header for what it does not check).
#
# systemd/nvattest-gate.conf.in is substituted as make install does and
# loaded by systemd-analyze verify as a drop-in of a stand-in gate unit.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_policy
need_py
need_cmd sed grep

POLICY=$top_srcdir/policy/stapled-gpu.rego
FACTS=$VECTORS/policy/sdk-claims.txt
DROPIN_IN=$top_srcdir/systemd/nvattest-gate.conf.in
# Where make install puts the policy: $(pkgdatadir)/policy, with the
# default prefix /usr/share/stapled/policy (the path docs/gate.md gives).
PKGDATADIR=/usr/share/stapled
GATE=nvattest-gate.service

# ---- the policy -----------------------------------------------------------------

"$PY" "$top_srcdir/tests/integration/policy_check.py" "$POLICY" "$FACTS" \
	"$VECTORS/policy" >"$T/policy.out" 2>&1
PC_RC=$?
cat "$T/policy.out"
assert "policy_check.py passes (exit $PC_RC)" "[ $PC_RC -eq 0 ]"
assert "policy_check.py ran to its last check" \
	"grep -q '^ok - NRAS: each condition broken' '$T/policy.out'"

# ---- the drop-in ----------------------------------------------------------------

U=$T/units
mkdir -p "$U/$GATE.d"
DROPIN=$U/$GATE.d/stapled.conf
sed -e "s|@GATE_UNIT@|$GATE|g" -e "s|@pkgdatadir@|$PKGDATADIR|g" \
	"$DROPIN_IN" >"$DROPIN"
assert "the drop-in uses only @GATE_UNIT@ and @pkgdatadir@" \
	"! grep -n '@[A-Za-z_]*@' '$DROPIN'"
assert "the gate wants stapled.socket and stapled.service" \
	"grep -qx 'Wants=stapled.socket stapled.service' '$DROPIN'"
assert "the gate starts after the socket, the daemon and a boot-time import" \
	"grep -qx 'After=stapled.socket stapled.service stapled-import.service' '$DROPIN'"
assert "... and after the import at boot inside a guest" \
	"grep -qx 'After=stapled-boot-import.service' '$DROPIN'"
assert "NVAT_OCSP_BASE_URL is stapled's /ocsp" \
	"grep -qx 'Environment=NVAT_OCSP_BASE_URL=http://127.0.0.1:8090/ocsp' '$DROPIN'"
assert "NVAT_RIM_SERVICE_BASE_URL is stapled's base URL" \
	"grep -qx 'Environment=NVAT_RIM_SERVICE_BASE_URL=http://127.0.0.1:8090' '$DROPIN'"
assert "the attest flags name the installed policy" \
	'grep -qF -- "--relying-party-policy $PKGDATADIR/policy/${POLICY##*/}\"" "$DROPIN"'
assert "the attest-v2 flags rewrite NVIDIA's OCSP URL onto stapled" \
	"grep -qF -- '--ocsp-url-rewrite http://ocsp.ndis.nvidia.com http://127.0.0.1:8090 ' '$DROPIN'"
assert "the attest-v2 flags rewrite NVIDIA's RIM URL onto stapled" \
	"grep -qF -- '--rim-url-rewrite https://rim.attestation.nvidia.com http://127.0.0.1:8090\"' '$DROPIN'"

if command -v systemd-analyze >/dev/null 2>&1; then
	# Stand-ins: a gate whose command line expands the flag variables as
	# the docs show, and the units the drop-in names.
	cat >"$U/$GATE" <<-EOF
	[Unit]
	Description=stand-in GPU attestation gate
	[Service]
	Type=oneshot
	ExecStart=/bin/echo attest \$STAPLED_NVATTEST_ATTEST_FLAGS
	ExecStart=/bin/echo attest-v2 \$STAPLED_NVATTEST_ATTEST_V2_FLAGS
	EOF
	printf '[Socket]\nListenStream=127.0.0.1:8090\n' >"$U/stapled.socket"
	printf '[Service]\nExecStart=/bin/true\n' >"$U/stapled.service"
	printf '[Service]\nType=oneshot\nExecStart=/bin/true\n' >"$U/stapled-import.service"
	verify() {
		SYSTEMD_UNIT_PATH="$U:" systemd-analyze verify --man=no "$U/$GATE" \
			>"$T/verify.out" 2>&1
		VERIFY_RC=$?
		cat "$T/verify.out"
	}
	verify
	assert "systemd-analyze verify loads the gate with the drop-in, no warning" \
		'[ $VERIFY_RC -eq 0 ] && [ ! -s "$T/verify.out" ]'
	# The same check on a damaged copy must complain, or it proves nothing.
	cp "$DROPIN" "$T/dropin.good"
	sed -i 's/^Wants=/Wantz=/' "$DROPIN"
	verify
	assert "systemd-analyze verify reads the drop-in (a damaged copy is reported)" \
		'grep -q "stapled.conf.*Wantz" "$T/verify.out"'
	cp "$T/dropin.good" "$DROPIN"
else
	note "systemd-analyze not installed: the drop-in was not loaded by systemd"
fi

it_done
