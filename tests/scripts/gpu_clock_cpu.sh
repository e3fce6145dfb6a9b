#!/usr/bin/env bash
# The device's own clock on the CPU backend (docs/cuda.md, "Accounting"): cuzkd
# --devices cpu:1 proves a small backlog (its compute sections stand for the device's
# spans), then the figures are read from outside:
#  1. `cuzk metrics` (the Prometheus text, checked by top_check.py's format checker):
#     cuzk_gpu_busy_seconds_total{device="0"} above 0 and not above the worker's wall,
#     cuzk_gpu_lane_occupied_seconds_total, the cuzk_gpu_idle_gap_seconds histogram
#     with one gap per partition after the first, cuzk_gpuworker_cpu_seconds above 0,
#     cuzk_gpu_nvml_up 0 and no NVML gauge (no driver here: the dlopen-absent path);
#  2. cuzk-top --once --json: the worker's counters gpu_busy_ns and lane_occupy_ns,
#     gauges cpu_ns and nvml_ok; --once text: the device line;
#  3. every proof verified by snarkjs.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/../lib/daemon.sh"
need_tool python3
if [ -e /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1 ] || ldconfig -p 2>/dev/null | grep -q 'libnvidia-ml\.so\.1'; then
  NVML_HERE=1
else
  NVML_HERE=0
fi
daemon_init gclk
daemon_start --devices cpu:1 --buffers 4 --buffer-mb 16

N=6
fx=bn128-chain
declare -A ids
mkdir -p "$tmp/a/in" "$tmp/a/out"
for i in $(seq 1 $N); do cp "$REF_FIXTURES/$fx/witness.wtns" "$tmp/a/in/w$i.wtns"; done
out="$(cuzk --json prove --zkey "$REF_FIXTURES/$fx/circuit_final.zkey" --out "$tmp/a/out" "$tmp/a/in"/w*.wtns)" ||
  fail "submit: $out"
ids[a]="$(js 'r.job' "$out")"
wait_jobs a
n=0
verify_outs a "$fx" $N
echo "ok: $n proofs verified by snarkjs"
# the worker samples its CPU time every 100 ms (and between partitions)
sleep 0.3

# ---- 1. the Prometheus text ----------------------------------------------------------
cuzk metrics >"$tmp/m.prom" || fail "cuzk metrics"
python3 "$HERE/top_check.py" prometheus "$tmp/m.prom" >/dev/null || fail "the metrics text fails the format check"
"$BUILD/bin/cuzk-top" --instance "$inst" --run-dir "$run" --once --json >"$tmp/top.json" || fail "cuzk-top --json"
python3 - "$tmp/m.prom" "$tmp/top.json" "$N" "$NVML_HERE" <<'PY' || fail "device figures"
import json, re, sys
prom, top, n, nvml_here = open(sys.argv[1]).read(), json.load(open(sys.argv[2])), int(sys.argv[3]), sys.argv[4] == "1"
def val(name):
    m = re.search(r'^' + re.escape(name) + r' (\S+)$', prom, re.M)
    if not m: raise SystemExit("missing: " + name)
    return float(m.group(1))
w = next(p for p in top["processes"] if p["role"] == "gpuworker" and p["index"] == 0)
wall = w["wall_ns"] / 1e9
busy = val('cuzk_gpu_busy_seconds_total{device="0"}')
occ = val('cuzk_gpu_lane_occupied_seconds_total{device="0"}')
gaps = val('cuzk_gpu_idle_gap_seconds_count{device="0"}')
inf = val('cuzk_gpu_idle_gap_seconds_bucket{device="0",le="+Inf"}')
cpu = val('cuzk_gpuworker_cpu_seconds{device="0"}')
up = val('cuzk_gpu_nvml_up{device="0"}')
bad = []
if not 0 < busy <= wall: bad.append(f"gpu_busy {busy} s not in (0, wall {wall} s]")
if not 0 < occ <= wall: bad.append(f"in-flight occupancy {occ} s not in (0, wall {wall} s]")
if gaps != n - 1 or inf != gaps: bad.append(f"{gaps} gaps (+Inf bucket {inf}), want {n - 1}")
if not cpu > 0: bad.append("cpu seconds 0")
# a CPU worker never loads NVML, driver or not
if up != 0: bad.append(f"nvml_up {up} on the CPU backend")
for fam in ("cuzk_gpu_utilization_ratio", "cuzk_gpu_memory_used_bytes", "cuzk_gpu_power_watts", "cuzk_gpu_sm_clock_hertz"):
    if "# TYPE %s gauge" % fam not in prom: bad.append("no family " + fam)
    if re.search(r'^' + fam + r'\{', prom, re.M): bad.append(fam + " has a sample without NVML")
c, g = w["counters"], w["gauges"]
if abs(c.get("gpu_busy_ns", -1) / 1e9 - busy) > 1: bad.append("gpu_busy_ns of the JSON disagrees")
if not c.get("lane_occupy_ns", 0) > 0: bad.append("lane_occupy_ns missing")
if "device_ns" in c: bad.append("the old name device_ns is still there")
if not g.get("cpu_ns", 0) > 0 or g.get("nvml_ok", -1) != 0: bad.append(f"gauges cpu_ns/nvml_ok: {g}")
if bad: raise SystemExit("; ".join(bad))
print(f"ok: gpu_busy {busy:.3f} s, in-flight occupancy {occ:.3f} s of {wall:.1f} s wall; {int(gaps)} gaps; "
      f"cpu {cpu:.2f} s; nvml_up 0 (NVML library on this machine: {'yes' if nvml_here else 'no'})")
PY
"$BUILD/bin/cuzk-top" --instance "$inst" --run-dir "$run" --once >"$tmp/top.txt" || fail "cuzk-top --once"
grep -Eq '^  device 0: gpu_busy [0-9.]+%  in-flight occupancy [0-9.]+%  gaps 5 p50 .* cpu [0-9.]+ s  nvml none$' "$tmp/top.txt" ||
  fail "cuzk-top --once has no device line: $(cat "$tmp/top.txt")"
echo "ok: cuzk-top --once: $(grep '^  device 0' "$tmp/top.txt")"
daemon_stop
