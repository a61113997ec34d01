#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The fuzz targets, built without libFuzzer under the sanitizers, replay their
# seeds (tests/fuzz/corpus, the real vendor requests and answers, a store the
# suite made) and a fixed series of mutations of each; any sanitizer report fails
# the run (tools/bootstrap sanitize). A build without --enable-asan skips.
set -u
b=${top_builddir:-.}/tests/fuzz
s=${top_srcdir:-.}
[ -x "$b/replay_http" ] || { echo "SKIP - not a sanitizer build (configure --enable-asan)"; exit 77; }
v=$s/tests/vectors/nvidia
rc=0
run() {
	local name=$1
	shift
	if "$b/replay_$name" "$@"; then echo "ok - $name"; else echo "FAIL - $name"; rc=1; fi
}
run http -m 2000 "$s/tests/fuzz/corpus/http"
run config -m 500 "$s/tests/fuzz/corpus/config" "$s/docs/stapled.json.in"
run ocsp_req -m 300 "$v/derived/ocsp_requests" "$v/captured/requests"
run ocsp_resp -m 1000 "$v/captured/fmc-leaf-unauthorized.resp.der" "$v/captured/requests"
# A store some whole-process test left, its first 64 KiB as pages.
store=$(find "${top_builddir:-.}/tests/tmp" -name data.mdb -size +16k 2>/dev/null | head -n 1)
if [ -n "$store" ]; then
	head -c 65536 "$store" >"$b/scan-seed.bin"
	run scan -m 300 "$b/scan-seed.bin" "$s/tests/fuzz/corpus/http"
else
	run scan -m 300 "$s/tests/fuzz/corpus/http"
fi
exit $rc
