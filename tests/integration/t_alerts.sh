#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# docs/prometheus-alerts.yml passes `promtool check rules` and fires as
# documented (promtool test rules); docs/grafana-stapled.json parses; every
# metric either queries is one a running stapled exports.
. "$top_srcdir/tests/integration/lib.sh"

it_init t_alerts
command -v promtool >/dev/null 2>&1 || skip "promtool not installed (Debian package prometheus)"
RULES=$top_srcdir/docs/prometheus-alerts.yml
DASH=$top_srcdir/docs/grafana-stapled.json

check "promtool check rules accepts docs/prometheus-alerts.yml" \
    promtool check rules "$RULES"

# ---- the rules fire as docs/mirror.md says ----------------------------------------
cat >"$T/alerts.test.yml" <<YML
rule_files:
  - $RULES
evaluation_interval: 1m
tests:
  # 3 h left on OCSP, 20 h on PCCS: only OCSP warns, after 15 minutes.
  - interval: 1m
    input_series:
      - series: 'stapled_oldest_entry_remaining_seconds{instance="m1",job="stapled",service="ocsp"}'
        values: '10800x30'
      - series: 'stapled_oldest_entry_remaining_seconds{instance="m1",job="stapled",service="pccs"}'
        values: '72000x30'
    alert_rule_test:
      - eval_time: 10m
        alertname: StapledEntriesExpiringSoon
        exp_alerts: []
      - eval_time: 20m
        alertname: StapledEntriesExpiringSoon
        exp_alerts:
          - exp_labels: { severity: warning, instance: m1, job: stapled, service: ocsp }
            exp_annotations:
              summary: "stapled m1: a ocsp entry expires in 3h 0m 0s"
              description: "The oldest valid ocsp entry has less than 6 h left. Check the upstreams (or import a bundle); past nextUpdate it is no longer served and clients that need it fail."
      - eval_time: 20m
        alertname: StapledEntriesExpiringVerySoon
        exp_alerts: []
  # 1 h left on OCSP, 3 h on PCCS: only OCSP is critical, after 5 minutes.
  - interval: 1m
    input_series:
      - series: 'stapled_oldest_entry_remaining_seconds{instance="m1",job="stapled",service="ocsp"}'
        values: '3600x30'
      - series: 'stapled_oldest_entry_remaining_seconds{instance="m1",job="stapled",service="pccs"}'
        values: '10800x30'
    alert_rule_test:
      - eval_time: 3m
        alertname: StapledEntriesExpiringVerySoon
        exp_alerts: []
      - eval_time: 10m
        alertname: StapledEntriesExpiringVerySoon
        exp_alerts:
          - exp_labels: { severity: critical, instance: m1, job: stapled, service: ocsp }
            exp_annotations:
              summary: "stapled m1: a ocsp entry expires in 1h 0m 0s"
              description: "Less than 2 h before the oldest valid ocsp entry stops being served."
  # Every wanted OCSP entry of m1 expired (the worst state: no oldest valid
  # entry, so the two alerts above have no sample); m1's PCCS never had an
  # entry; m1's KDS entries expired unasked (idle); m2 still has a valid
  # OCSP entry beside expired ones. Only m1's OCSP fires, after 5 minutes.
  - interval: 1m
    input_series:
      - series: 'stapled_service_entries{instance="m1",job="stapled",service="ocsp",state="valid"}'
        values: '0x30'
      - series: 'stapled_service_entries{instance="m1",job="stapled",service="ocsp",state="expired"}'
        values: '3x30'
      - series: 'stapled_service_entries{instance="m1",job="stapled",service="ocsp",state="expired_idle"}'
        values: '1x30'
      - series: 'stapled_service_entries{instance="m1",job="stapled",service="pccs",state="valid"}'
        values: '0x30'
      - series: 'stapled_service_entries{instance="m1",job="stapled",service="pccs",state="expired"}'
        values: '0x30'
      - series: 'stapled_service_entries{instance="m1",job="stapled",service="kds",state="valid"}'
        values: '0x30'
      - series: 'stapled_service_entries{instance="m1",job="stapled",service="kds",state="expired"}'
        values: '0x30'
      - series: 'stapled_service_entries{instance="m1",job="stapled",service="kds",state="expired_idle"}'
        values: '2x30'
      - series: 'stapled_service_entries{instance="m2",job="stapled",service="ocsp",state="valid"}'
        values: '1x30'
      - series: 'stapled_service_entries{instance="m2",job="stapled",service="ocsp",state="expired"}'
        values: '5x30'
    alert_rule_test:
      - eval_time: 3m
        alertname: StapledNothingServable
        exp_alerts: []
      - eval_time: 10m
        alertname: StapledNothingServable
        exp_alerts:
          - exp_labels: { severity: critical, instance: m1, job: stapled, service: ocsp }
            exp_annotations:
              summary: "stapled m1: every ocsp entry has expired"
              description: "3 ocsp entries that clients ask for are past their nextUpdate and none is valid: OCSP clients get tryLater, RIM, PCCS and KDS clients 503. Refreshes are failing (see StapledAllUpstreamsDown and the warning log), or an air-gapped site's bundles stopped: import one."
      - eval_time: 10m
        alertname: StapledEntriesExpiringVerySoon
        exp_alerts: []
  # Imports at time 0. m1: no upstream answers, no import since; m2: the
  # same import, but its upstream answers (it refreshes itself); m3: an
  # import every 5 minutes; m4 never imported. Only m1 warns, once its
  # newest import is 16 h old, 15 minutes on.
  - interval: 5m
    input_series:
      - series: 'stapled_last_import_timestamp_seconds{instance="m1",job="stapled"}'
        values: '0x250'
      - series: 'stapled_upstream_up{instance="m1",job="stapled",service="ocsp",upstream="a"}'
        values: '0x250'
      - series: 'stapled_last_import_timestamp_seconds{instance="m2",job="stapled"}'
        values: '0x250'
      - series: 'stapled_upstream_up{instance="m2",job="stapled",service="ocsp",upstream="a"}'
        values: '1x250'
      - series: 'stapled_last_import_timestamp_seconds{instance="m3",job="stapled"}'
        values: '0+300x250'
      - series: 'stapled_upstream_up{instance="m3",job="stapled",service="ocsp",upstream="a"}'
        values: '0x250'
      - series: 'stapled_upstream_up{instance="m4",job="stapled",service="ocsp",upstream="a"}'
        values: '0x250'
    alert_rule_test:
      - eval_time: 16h5m
        alertname: StapledImportLate
        exp_alerts: []
      - eval_time: 17h
        alertname: StapledImportLate
        exp_alerts:
          - exp_labels: { severity: warning, instance: m1, job: stapled }
            exp_annotations:
              summary: "stapled m1: the newest import is 17h 0m 0s old"
              description: "No bundle has brought a newer entry for 17h 0m 0s, and no upstream answers this site: its entries are not renewed. Fetch a bundle on the connected side and import it (docs/airgap.md)."
  # Both OCSP upstreams down at m1; one of two down at m2; all down at the
  # air-gapped m3; m1's RIM upstream down but never asked (no client uses
  # RIM there): only m1's OCSP fires.
  - interval: 1m
    input_series:
      - series: 'stapled_upstream_requests_total{instance="m1",job="stapled",service="ocsp",upstream="a"}'
        values: '0+1x30'
      - series: 'stapled_upstream_requests_total{instance="m1",job="stapled",service="ocsp",upstream="b"}'
        values: '0+1x30'
      - series: 'stapled_upstream_requests_total{instance="m2",job="stapled",service="ocsp",upstream="a"}'
        values: '0+1x30'
      - series: 'stapled_upstream_requests_total{instance="m3",job="stapled",airgapped="true",service="ocsp",upstream="a"}'
        values: '0+1x30'
      - series: 'stapled_upstream_up{instance="m1",job="stapled",service="rim",upstream="nv"}'
        values: '0x30'
      - series: 'stapled_upstream_requests_total{instance="m1",job="stapled",service="rim",upstream="nv"}'
        values: '0x30'
      - series: 'stapled_upstream_up{instance="m1",job="stapled",service="ocsp",upstream="a"}'
        values: '0x30'
      - series: 'stapled_upstream_up{instance="m1",job="stapled",service="ocsp",upstream="b"}'
        values: '0x30'
      - series: 'stapled_upstream_up{instance="m2",job="stapled",service="ocsp",upstream="a"}'
        values: '0x30'
      - series: 'stapled_upstream_up{instance="m2",job="stapled",service="ocsp",upstream="b"}'
        values: '1x30'
      - series: 'stapled_upstream_up{instance="m3",job="stapled",airgapped="true",service="ocsp",upstream="a"}'
        values: '0x30'
    alert_rule_test:
      - eval_time: 5m
        alertname: StapledAllUpstreamsDown
        exp_alerts: []
      - eval_time: 15m
        alertname: StapledAllUpstreamsDown
        exp_alerts:
          - exp_labels: { severity: warning, instance: m1, job: stapled, service: ocsp }
            exp_annotations:
              summary: "stapled m1: every ocsp upstream is down"
              description: "No ocsp upstream has answered well for 10 minutes: misses get the failure answer and entries are not refreshed. The warning log line names the cause (dns, connect, tls, timeout, HTTP status, rejected)."
  # PCCS answers refused every minute for half an hour; KDS once. Nothing
  # fires before the refusals have gone on for 15 minutes.
  - interval: 1m
    input_series:
      - series: 'stapled_rejected_total{instance="m1",job="stapled",kind="pccs"}'
        values: '0+1x40'
      - series: 'stapled_rejected_total{instance="m1",job="stapled",kind="kds"}'
        values: '0 1x40'
    alert_rule_test:
      - eval_time: 10m
        alertname: StapledVerificationFailures
        exp_alerts: []
      - eval_time: 35m
        alertname: StapledVerificationFailures
        exp_alerts:
          - exp_labels: { severity: warning, instance: m1, job: stapled, kind: pccs }
            exp_annotations:
              summary: "stapled m1: pccs answers keep failing verification"
              description: "15 pccs answers were refused in 15 minutes, for 15 minutes: they are neither stored nor served. Log lines \"refused an answer from NAME: WHY\" say why."
  # m1's store refused writes twice ten minutes ago; m2's never did: only m1
  # warns, at once, until 15 minutes after the last refusal.
  - interval: 1m
    input_series:
      - series: 'stapled_store_errors_total{instance="m1",job="stapled"}'
        values: '0x10 1 2x30'
      - series: 'stapled_store_errors_total{instance="m2",job="stapled"}'
        values: '0x40'
    alert_rule_test:
      - eval_time: 5m
        alertname: StapledStoreErrors
        exp_alerts: []
      - eval_time: 20m
        alertname: StapledStoreErrors
        exp_alerts:
          - exp_labels: { severity: warning, instance: m1, job: stapled }
            exp_annotations:
              summary: "stapled m1: verified answers could not be stored"
              description: "The store refused writes (2 in 15 minutes); when stapled_store_map_full_total moves too, raise map_size_mb."
      - eval_time: 40m
        alertname: StapledStoreErrors
        exp_alerts: []
  # A 1 GiB map at its high-water mark: m1 has 50 MiB on the free list, m2
  # 500 MiB. Only m1 warns, after 30 minutes.
  - interval: 1m
    input_series:
      - series: 'stapled_store_map_bytes{instance="m1",job="stapled"}'
        values: '1073741824x40'
      - series: 'stapled_store_used_bytes{instance="m1",job="stapled"}'
        values: '1073741824x40'
      - series: 'stapled_store_free_bytes{instance="m1",job="stapled"}'
        values: '52428800x40'
      - series: 'stapled_store_map_bytes{instance="m2",job="stapled"}'
        values: '1073741824x40'
      - series: 'stapled_store_used_bytes{instance="m2",job="stapled"}'
        values: '1073741824x40'
      - series: 'stapled_store_free_bytes{instance="m2",job="stapled"}'
        values: '524288000x40'
    alert_rule_test:
      - eval_time: 20m
        alertname: StapledStoreNearlyFull
        exp_alerts: []
      - eval_time: 35m
        alertname: StapledStoreNearlyFull
        exp_alerts:
          - exp_labels: { severity: warning, instance: m1, job: stapled }
            exp_annotations:
              summary: "stapled m1: 50MiB of the store's map left for writes"
              description: "Less than a tenth of map_size_mb is left for writes, the free list included; when none is, refreshes are not stored and entries expire. Raise map_size_mb; if the store grew while its entries did not, look for a reader that never ends (a hung staplectl): mdb_stat -r lists the readers."
  # m1's reload at minute 2 is refused and stays so; m2 reloads well; m3's
  # refused reload is followed by a good one 2 minutes later. Only m1
  # warns, 5 minutes after its refusal.
  - interval: 1m
    input_series:
      - series: 'stapled_config_last_reload_successful{instance="m1",job="stapled"}'
        values: '1 1 0x20'
      - series: 'stapled_config_last_reload_successful{instance="m2",job="stapled"}'
        values: '1x22'
      - series: 'stapled_config_last_reload_successful{instance="m3",job="stapled"}'
        values: '1 1 0 0 1x18'
    alert_rule_test:
      - eval_time: 5m
        alertname: StapledConfigReloadFailed
        exp_alerts: []
      - eval_time: 10m
        alertname: StapledConfigReloadFailed
        exp_alerts:
          - exp_labels: { severity: warning, instance: m1, job: stapled }
            exp_annotations:
              summary: "stapled m1: the last configuration reload was refused"
              description: "stapled runs on with its previous configuration; the file it refused would fail the next start. staplectl reload and the log line \"SIGHUP: configuration not reloaded\" say why; stapled -n checks the file."
  # m1's store read-only for the whole window, m2's for 5 minutes: only m1
  # warns, after 15 minutes.
  - interval: 1m
    input_series:
      - series: 'stapled_store_read_only{instance="m1",job="stapled"}'
        values: '1x30'
      - series: 'stapled_store_read_only{instance="m2",job="stapled"}'
        values: '1x5 0x25'
    alert_rule_test:
      - eval_time: 10m
        alertname: StapledStoreReadOnly
        exp_alerts: []
      - eval_time: 20m
        alertname: StapledStoreReadOnly
        exp_alerts:
          - exp_labels: { severity: warning, instance: m1, job: stapled }
            exp_annotations:
              summary: "stapled m1: the store takes no writes"
              description: "For 15 minutes the store has been served read-only: nothing is refreshed or stored, and entries expire at their nextUpdate. /readyz and the log say why; a read-only file system or data.mdb that cannot be written needs a reload (staplectl reload) once mended."
  # The map full at m1 for 15 minutes, at m2 for 5: only m1 warns.
  - interval: 1m
    input_series:
      - series: 'stapled_store_map_full{instance="m1",job="stapled"}'
        values: '0 1x20'
      - series: 'stapled_store_map_full{instance="m2",job="stapled"}'
        values: '0 1x5 0x15'
    alert_rule_test:
      - eval_time: 8m
        alertname: StapledStoreMapFull
        exp_alerts: []
      - eval_time: 16m
        alertname: StapledStoreMapFull
        exp_alerts:
          - exp_labels: { severity: warning, instance: m1, job: stapled }
            exp_annotations:
              summary: "stapled m1: the store's map is full"
              description: "The map has refused writes for 10 minutes. Entries not in use are evicted to make room (stapled_store_full_evictions_total); a refresh that still finds no room backs off, and the entry it would renew expires at its nextUpdate. Raise map_size_mb, or lower max_entries."
YML
promtool test rules "$T/alerts.test.yml" >"$T/promtool-test.out" 2>&1
check "promtool test rules: expiring, nothing servable, import late, all upstreams down (not air-gapped), verification, store errors, store nearly full, map full, reload refused, store read-only" \
    [ $? -eq 0 ]
grep -q 'SUCCESS' "$T/promtool-test.out" || sed 's/^/#   /' "$T/promtool-test.out"

# Every alert the file ships is tested above, on series it fires on and on
# series it stays quiet on.
awk '$1 == "-" && $2 == "alert:" { print $3 }' "$RULES" | sort -u >"$T/shipped"
awk '$1 == "alertname:" { name = $2; next }
     name != "" && $1 == "exp_alerts:" { print name, ($2 == "[]" ? "quiet" : "fires"); name = "" }' \
    "$T/alerts.test.yml" | sort -u >"$T/tested"
untested=$(while read -r a; do
	for w in fires quiet; do grep -qx "$a $w" "$T/tested" || echo "$a($w)"; done
done <"$T/shipped")
check_eq "every shipped alert ($(wc -l <"$T/shipped")) has a test where it fires and one where it stays quiet" \
    "" "$untested"

# ---- every metric queried is exported ------------------------------------------
STAPLED_CACHE=$T/c1 stapled_start d1 --ocsp-upstream "http://127.0.0.1:$(dead_port 1)/"
metrics_get "$T/m"
# Names from the TYPE lines (a family is listed even with no sample yet);
# a histogram's samples are NAME_bucket, NAME_sum and NAME_count.
awk '$1 == "#" && $2 == "TYPE" { print $3; if ($4 == "histogram") {
    print $3 "_bucket"; print $3 "_sum"; print $3 "_count" } }' "$T/m" |
    sort -u >"$T/exported"
check "the scrape lists stapled_build_info and the process metrics" \
    grep -qx process_open_fds "$T/exported"
python3 - "$DASH" "$RULES" "$T/exported" >"$T/names.out" 2>&1 <<'PY'
import json, re, sys
dash = json.load(open(sys.argv[1]))
exported = set(open(sys.argv[3]).read().split())
exprs = []
for p in dash["panels"]:
    for t in p.get("targets", []):
        exprs.append(t["expr"])
# expr: one line, or a folded block (">-") of the lines indented below it
block = None
for line in open(sys.argv[2]):
    indent = len(line) - len(line.lstrip())
    if block is not None:
        if line.strip() and indent > block[0]:
            block[1].append(line.strip())
            continue
        exprs.append(" ".join(block[1]))
        block = None
    m = re.match(r"\s*expr:\s*(.*)$", line)
    if m and m.group(1) in (">-", ">", "|", "|-"):
        block = (indent, [])
    elif m:
        exprs.append(m.group(1))
if block is not None:
    exprs.append(" ".join(block[1]))
if any(not e for e in exprs):
    print("an empty expr")
    sys.exit(1)
# Names of series: stapled_* and process_* identifiers, not in label matchers.
names = set()
for e in exprs:
    e = re.sub(r'\{[^}]*\}', '{}', e)
    names.update(re.findall(r'\b((?:stapled|process)_[a-z_]+)\b', e))
missing = sorted(names - exported)
print("queried:", len(exprs), "expressions,", len(names), "metrics")
for n in missing:
    print("not exported:", n)
sys.exit(1 if missing or len(names) < 10 else 0)
PY
check "the dashboard parses, and every metric it and the rules query is exported" [ $? -eq 0 ]
sed 's/^/# /' "$T/names.out"
stapled_stop

it_done
