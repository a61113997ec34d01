# stapled-gpu.rego: nvattest's relying-party policy for GPUs attested through stapled.
#
# SPDX-License-Identifier: Apache-2.0
#
# Pass it as `nvattest attest ... --relying-party-policy
# /usr/share/stapled/policy/stapled-gpu.rego` (installed under the package's
# data directory). nvattest then judges by this policy instead of its
# built-in overall verdict; docs/gate.md explains each rule.
#
# What it changes: a cached OCSP answer carries the nonce of the request
# that fetched it, never the one nvattest just sent, so
# x-nvidia-cert-ocsp-nonce-matches is false on every cache hit. This policy
# does not read that claim. Everything else the built-in verdict requires is
# required here too, plus three per-device claims it leaves to the
# verifier's hard errors (evidence nonce, secure boot, debug status).
#
# What it cannot check: CC mode and DevTools mode are not claims in the
# SDK, and the nonce the gate generated is not an input of the policy (it
# sees only the claims). The gate checks those itself (docs/gate.md).
#
# Rego v0 syntax, as nvattest's embedded engine evaluates it; the entry
# point is data.policy.nv_match and the input is nvattest's claims array.

package policy

import future.keywords.every

default nv_match := false

# At least one device, and every device reported passes.
nv_match {
	count(input) > 0
	every device in input {
		device_ok(device)
	}
}

# Only the two device types the SDK knows; anything else fails.
device_ok(d) {
	d["x-nvidia-device-type"] == "gpu"
	gpu_ok(d)
}

device_ok(d) {
	d["x-nvidia-device-type"] == "nvswitch"
	switch_ok(d)
}

# A GPU: its measurements and its RIMs' opaque-data floors match, the
# evidence answers this run's nonce, the firmware booted securely with debug
# off, and its three certificate chains hold.
gpu_ok(d) {
	d.measres == "success"
	object.get(d, "x-nvidia-mismatch-opaque-data-records", null) == null
	d["x-nvidia-gpu-attestation-report-nonce-match"] == true
	d.secboot == true
	d.dbgstat == "disabled"
	chain_ok(d["x-nvidia-gpu-attestation-report-cert-chain"])
	chain_ok(d["x-nvidia-gpu-driver-rim-cert-chain"])
	chain_ok(d["x-nvidia-gpu-vbios-rim-cert-chain"])
}

# An NVSwitch: the same, for its report and its BIOS RIM chain.
switch_ok(d) {
	d.measres == "success"
	d["x-nvidia-switch-attestation-report-nonce-match"] == true
	d.secboot == true
	d.dbgstat == "disabled"
	chain_ok(d["x-nvidia-switch-attestation-report-cert-chain"])
	chain_ok(d["x-nvidia-switch-bios-rim-cert-chain"])
}

# One certificate chain: no certificate expired, every OCSP answer says
# good and verifies to NVIDIA's pinned root (signature and responder).
# x-nvidia-cert-ocsp-nonce-matches is deliberately not read (see the top).
chain_ok(c) {
	c["x-nvidia-cert-status"] == "valid"
	c["x-nvidia-cert-ocsp-status"] == "good"
	c["x-nvidia-cert-ocsp-response-valid"] == true
}
