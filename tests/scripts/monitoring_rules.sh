#!/usr/bin/env bash
# deploy/monitoring: `promtool check rules` on the alert rules, `promtool test rules`
# (every alert fires on synthetic series that show its problem and stays quiet on
# healthy ones), every alert has its runbook entry in docs/runbook.md, and the
# Grafana dashboard is JSON whose every panel has a query on a cuzk metric. (That the
# metrics exist is tests/scripts/monitoring_prometheus.sh's part.)
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
need_tool promtool "promtool not installed (deploy/install-deps.sh installs prometheus)"
fail() {
  echo "monitoring_rules: FAIL: $*" >&2
  exit 1
}
m=deploy/monitoring

promtool check rules "$m/cuzk-alerts.yml" || fail "promtool check rules"
(cd "$m" && promtool test rules cuzk-alerts.test.yml) || fail "promtool test rules"
python3 - "$m/cuzk-alerts.yml" "$m/cuzk-alerts.test.yml" docs/runbook.md "$m/cuzk-dashboard.json" <<'PY' || fail "rules, runbook or dashboard"
import json, re, sys
rules, tests, runbook, dash = (open(p).read() for p in sys.argv[1:5])
alerts = re.findall(r'^\s+- alert: (\w+)', rules, re.M)
heads = re.findall(r'^## (\w+)$', runbook, re.M)
tested = set(re.findall(r'alertname: (\w+)', tests))
for a in alerts:
    assert a in heads, f"{a}: no '## {a}' entry in docs/runbook.md"
    assert f"docs/runbook.md#{a.lower()}" in rules, f"{a}: its runbook annotation does not point to its entry"
    assert a in tested, f"{a}: no promtool unit test in cuzk-alerts.test.yml"
for h in heads:
    assert h in alerts, f"docs/runbook.md has '## {h}', no such alert"
print(f"ok   {len(alerts)} alerts, each with a runbook entry and a unit test")
d = json.loads(dash)
panels = [p for p in d["panels"] if p["type"] != "row"]
assert panels, "no panels"
ids = [p["id"] for p in d["panels"]]
assert len(ids) == len(set(ids)), "duplicate panel ids"
for p in panels:
    assert p.get("targets"), f"panel {p['title']}: no query"
    for t in p["targets"]:
        assert re.search(r'\bcuzk_\w+', t["expr"]), f"panel {p['title']}: {t['expr']} reads no cuzk metric"
        assert t["expr"].count("(") == t["expr"].count(")"), f"panel {p['title']}: unbalanced {t['expr']}"
names = {v["name"] for v in d["templating"]["list"]}
assert {"datasource", "instance"} <= names, f"template variables {names}"
print(f"ok   dashboard: {len(panels)} panels, {sum(len(p['targets']) for p in panels)} queries")
PY
echo "PASS: alert rules checked and unit-tested, dashboard well-formed"
