#!/usr/bin/env bash
# The dashboard and the alert rules against real data: Debian's Prometheus, on
# loopback, loads deploy/monitoring/cuzk-alerts.yml and scrapes a real cuzkd every
# second while it proves a small backlog (8 partitions of bn128/mulchain-10 in 2 jobs
# on 2 buffers, verified by snarkjs). cuzkd runs with a fleet queue on a throwaway
# PostgreSQL cluster (unix socket in the temp dir, run as nobody) so that the fleet
# metrics exist too. Then, through Prometheus's HTTP API:
#   - every series selector of the dashboard and of the rules (as Prometheus loaded
#     them) has data: a renamed metric or label fails here;
#   - every dashboard query runs and returns series;
#   - every rule evaluates (health ok, no error) and no alert fires on this healthy
#     daemon.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../lib" && pwd)/daemon.sh"
prom="$(command -v prometheus || true)"
[ -n "$prom" ] || {
  echo "SKIP: prometheus not installed (deploy/install-deps.sh installs it)"
  exit 77
}
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: monitoring_prometheus runs PostgreSQL as nobody, which needs root"
  exit 77
fi
bindir="$(find /usr/lib/postgresql -mindepth 2 -maxdepth 2 -name bin -type d 2>/dev/null | sort -V | tail -n1)"
[ -n "$bindir" ] && [ -x "$bindir/initdb" ] ||
  {
    echo "SKIP: no PostgreSQL server binaries (deploy/install-deps.sh installs postgresql)"
    exit 77
  }
daemon_init mon
FX="$FIXTURES/bn128/mulchain-10"
[ -f "$FX/circuit_final.zkey" ] || bash "$MAKE_FIXTURES" -q --curve bn128 --only mulchain-10 >/dev/null
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# PostgreSQL: unix socket only (listen_addresses ''), as nobody (initdb refuses root).
pg="$tmp/pg"
mkdir -p "$pg"
chown nobody "$pg"
chmod 755 "$tmp"
as_pg() { runuser -u nobody -- "$@"; }
pgport="$(free_port)"
daemon_on_exit="as_pg $bindir/pg_ctl -D $pg/data -m immediate stop >/dev/null 2>&1 || true; [ -z \"\${prom_pid:-}\" ] || kill \$prom_pid 2>/dev/null || true"
as_pg "$bindir/initdb" -D "$pg/data" -U cuzk --auth=trust -E UTF8 >"$tmp/initdb.log" 2>&1 || {
  cat "$tmp/initdb.log"
  fail "initdb"
}
as_pg "$bindir/pg_ctl" -D "$pg/data" -l "$pg/log" -w -t 60 -o "-p $pgport -k $pg -c listen_addresses=''" start >/dev/null ||
  {
    tail "$pg/log"
    fail "pg_ctl start"
  }
as_pg "$bindir/createdb" -h "$pg" -p "$pgport" -U cuzk cuzk
url="postgresql://cuzk@/cuzk?host=$pg&port=$pgport"

mport="$(free_port)"
daemon_start --devices cpu:1 --buffers 2 --buffer-mb 16 --queue "$url" --metrics-listen "127.0.0.1:$mport"

# Prometheus on loopback: scrape every second, evaluate the rules every second.
pport="$(free_port)"
cat >"$tmp/prometheus.yml" <<YML
global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: ["$ROOT/deploy/monitoring/cuzk-alerts.yml"]
scrape_configs:
  - job_name: cuzk
    static_configs: [{targets: ["127.0.0.1:$mport"]}]
YML
"$prom" --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/tsdb" \
  --web.listen-address="127.0.0.1:$pport" >"$tmp/prometheus.log" 2>&1 &
prom_pid=$!
api="http://127.0.0.1:$pport/api/v1"
for _ in $(seq 1 600); do
  curl -fsS "$api/query?query=up" 2>/dev/null | grep -q '"value"' && break
  kill -0 $prom_pid 2>/dev/null || {
    tail "$tmp/prometheus.log"
    fail "prometheus exited"
  }
  sleep 0.1
done
echo "ok   $($prom --version 2>&1 | head -n1) on 127.0.0.1:$pport, scraping cuzkd's 127.0.0.1:$mport"

# The backlog: 8 witnesses in 2 jobs, both submitted before the first wait.
mkdir -p "$tmp/in" "$tmp/out"
for i in $(seq 1 8); do cp "$FX/witness.wtns" "$tmp/in/w$i.wtns"; done
j1="$(cuzk --json prove --zkey "$FX/circuit_final.zkey" --out "$tmp/out" "$tmp"/in/w[1-4].wtns | js 'r.job' "$(cat)")"
j2="$(cuzk --json prove --zkey "$FX/circuit_final.zkey" --out "$tmp/out" "$tmp"/in/w[5-8].wtns | js 'r.job' "$(cat)")"
for j in "$j1" "$j2"; do cuzk wait "$j" --timeout-ms 600000 >/dev/null || fail "job $j: $(cuzk status "$j")"; done
verified="$(node "$ROOT/tests/lib/snarkjs_verify_all.cjs" "$FIXTURES/node/node_modules/snarkjs" \
  "$FX/verification_key.json" "$tmp/out")" || fail "snarkjs: $verified"
[ "$verified" = "8 verified" ] || fail "snarkjs: $verified, want 8"
echo "ok   8 partitions in 2 jobs proved, snarkjs verified 8"

# Wait until Prometheus has scraped the finished backlog (its own clock, no timing
# asserted: the loop ends on the data, the bound only stops a broken run).
q() { curl -fsS --get "$api/$1" --data-urlencode "$2" ${3:+--data-urlencode "$3"} ${4:+--data-urlencode "$4"}; }
for _ in $(seq 1 1200); do
  v="$(q query 'query=sum(cuzk_stage_counter_total{job="cuzk",stage="finalizer",counter="parts_done"})' |
    python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)')"
  [ "${v%.*}" -ge 8 ] 2>/dev/null && break
  sleep 0.1
done
[ "${v%.*}" -ge 8 ] 2>/dev/null || fail "Prometheus never saw 8 finished partitions (last: $v)"
t_done="$(date +%s.%N)"

python3 - "$api" "$ROOT/deploy/monitoring/cuzk-dashboard.json" "$t_done" "$tmp" <<'PY' || fail "the dashboard or the rules against Prometheus"
import datetime, json, os, re, sys, time, urllib.parse, urllib.request
api, dash, t_done, tmp = sys.argv[1], json.load(open(sys.argv[2])), float(sys.argv[3]), sys.argv[4]
def get(path, **params):
    with urllib.request.urlopen(f"{api}/{path}?{urllib.parse.urlencode(params, doseq=True)}", timeout=30) as r:
        return json.load(r)
def stamp(s):  # RFC 3339 with up to nanoseconds -> seconds since the epoch
    m = re.match(r"(.*T\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-].*)$", s)
    t = datetime.datetime.fromisoformat(m.group(1) + (m.group(3) if m.group(3) != "Z" else "+00:00"))
    return t.timestamp() + float(m.group(2) or 0)
# Every rule evaluated after the finished backlog was scraped (the loop ends on that;
# its bound only stops a broken run): states now are those of the idle daemon.
for _ in range(1200):
    groups = get("rules")["data"]["groups"]
    if all(stamp(r["lastEvaluation"]) > t_done + 1 for g in groups for r in g["rules"]):
        break
    time.sleep(0.1)
else:
    raise SystemExit("the rules were not evaluated after the backlog")
# The one alert this machine itself may trip: its disk.
v = os.statvfs(tmp)
disk_low = v.f_bavail < 0.10 * v.f_blocks
def concrete(e):  # Grafana's variables, as Grafana would fill them in
    return e.replace("$instance", ".+").replace("$__rate_interval", "1m")
# series selectors: a metric name, optionally with its label matchers
SEL = re.compile(r'(?<![\w"$])(cuzk_\w+|up)(\{[^}]*\})?(?!\s*\()')
rules = groups
exprs = {}
for p in dash["panels"]:
    for t in p.get("targets", []):
        exprs[concrete(t["expr"])] = f"dashboard panel '{p['title']}'"
for v in dash["templating"]["list"]:
    if v["type"] == "query":
        exprs[re.sub(r"^label_values\((\w+).*", r"\1", v["query"]["query"])] = f"dashboard variable {v['name']}"
nrules = 0
for g in rules:
    for r in g["rules"]:
        nrules += 1
        exprs[r["query"]] = f"rule {r['name']}"
        assert r["health"] == "ok" and not r.get("lastError"), f"rule {r['name']}: {r['health']} {r.get('lastError')}"
        if not (r["name"] == "CuzkJobStoreDiskNearlyFull" and disk_low):
            assert r["state"] == "inactive", f"rule {r['name']} is {r['state']} on a healthy cuzkd: {r.get('alerts')}"
sels = {}
for e, where in exprs.items():
    for m in SEL.finditer(e):
        sels.setdefault(m.group(0), where)
now = time.time()
empty = []
for s, where in sorted(sels.items()):
    d = get("series", **{"match[]": s, "start": now - 3600, "end": now})
    assert d["status"] == "success", (s, d)
    if not d["data"]:
        empty.append(f"{s} ({where})")
assert not empty, "no series for: " + "; ".join(empty)
print(f"ok   {len(sels)} selectors of the dashboard and {nrules} rules: each has series")
bad = []
for e, where in exprs.items():
    if where.startswith("rule"):
        continue
    d = get("query", query=e)
    if d["status"] != "success" or not d["data"]["result"]:
        bad.append(f"{where}: {e} -> {d.get('error') or 'no series'}")
assert not bad, "\n".join(bad)
print(f"ok   every dashboard query ({sum(1 for w in exprs.values() if not w.startswith('rule'))}) returns series; every rule evaluates, none fires")
PY
kill $prom_pid
wait $prom_pid 2>/dev/null || true
prom_pid=""
daemon_shutdown_clean
echo "PASS: Prometheus scraped a real cuzkd; every metric of the dashboard and the rules has series"
