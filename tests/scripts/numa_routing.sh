#!/usr/bin/env bash
# NUMA routing (route.h) on a fake two-node machine: cuzkd --test-fake-topology plans
# from tests/topologies/dual-xeon-8gpu.xml (two sockets) and runs here, with two CPU
# workers (one per node), one synth per node and the buffers split between the nodes.
# A job of 8 partitions must have each partition synthesized by the synth of its
# worker's node, into a buffer of that node (status JOB: who synthesized and proved it,
# its buffer's node; status: each stage's node), cuzk-top's per-node counts must say
# the same with no cross-node fallback, and snarkjs must accept every proof.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../lib" && pwd)/daemon.sh"
daemon_init numa
need_bins cuzk-top
topo="$ROOT/tests/topologies/dual-xeon-8gpu.xml"
fx="$SHARED/fixtures/snarkjs-groth16/bn128"
N=8

# Without the test option a topology file only plans.
rc=0; "$BUILD/bin/cuzkd" --instance "$inst" --run-dir "$run" --topology "$topo" \
  --devices cpu:2 >"$tmp/refused" 2>&1 || rc=$?
[ $rc -eq 2 ] && grep -q -- '--test-fake-topology' "$tmp/refused" || fail "--topology without --plan: rc $rc: $(cat "$tmp/refused")"
echo "ok: --topology without --plan or --test-fake-topology is refused (exit 2)"

daemon_start --devices cpu:2 --buffers 4 --buffer-mb 16 --topology "$topo" --test-fake-topology
grep -q "not this machine's" "$tmp/cuzkd.log" || fail "the pool was not left unbound"

# Every stage up (the synths look at each other's stats slots to route).
for _ in $(seq 1 100); do
  "$BUILD/bin/cuzk-top" --instance "$inst" --run-dir "$run" --once --json >"$tmp/top0.json" 2>/dev/null || true
  python3 - "$tmp/top0.json" <<'PY' && break
import json, sys
try: d = json.load(open(sys.argv[1]))
except Exception: sys.exit(1)
up = {(p["role"], p["index"]) for p in d["processes"] if p["alive"]}
sys.exit(0 if {("synth", 0), ("synth", 1), ("gpuworker", 0), ("gpuworker", 1), ("finalizer", 0)} <= up else 1)
PY
  sleep 0.1
done
cuzk --json status >"$tmp/status.json" || fail "status"
python3 - "$tmp/status.json" <<'PY' || fail "stage nodes: $(cat "$tmp/status.json")"
import json, sys
d = json.load(open(sys.argv[1]))
node = {(c["stage"], c["index"]): c["node"] for c in d["children"]}
want = {("worker", 0): 0, ("worker", 1): 1, ("synth", 0): 0, ("synth", 1): 1, ("finalizer", 0): 0}
for k, v in want.items():
    assert node.get(k) == v, f"{k} on node {node.get(k)}, expected {v}"
assert all(c["pid"] > 0 for c in d["children"]), "a stage is not running"
print("ok: status places worker 0 and synth 0 on node 0, worker 1 and synth 1 on node 1")
PY

mkdir -p "$tmp/in" "$tmp/out"
for i in $(seq 1 $N); do cp "$fx/witness.wtns" "$tmp/in/w$i.wtns"; done
out="$(cuzk --json prove --zkey "$fx/circuit_final.zkey" --out "$tmp/out" "$tmp/in"/w*.wtns)" || fail "submit: $out"
job="$(js 'r.job' "$out")"
timeout 600 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" wait "$job" >"$tmp/wait" ||
  fail "job $job did not finish: $(cat "$tmp/wait")"
cuzk --json status "$job" >"$tmp/job.json" || fail "status $job"
"$BUILD/bin/cuzk-top" --instance "$inst" --run-dir "$run" --once --json >"$tmp/top.json" || fail "cuzk-top"
python3 "$ROOT/tests/scripts/top_check.py" schema "$tmp/top.json" || fail "cuzk-top schema"

python3 - "$tmp/status.json" "$tmp/job.json" "$tmp/top.json" "$N" <<'PY' || fail "routing"
import json, sys
st, job, top, n = (json.load(open(sys.argv[1])), json.load(open(sys.argv[2])),
                   json.load(open(sys.argv[3])), int(sys.argv[4]))
node = {(c["stage"], c["index"]): c["node"] for c in st["children"]}
job = job.get("job", job)
parts = job["parts"]
assert len(parts) == n, f"{len(parts)} parts"
per = {0: 0, 1: 0}
for p in parts:
    assert p["state"] == "done", p
    t = p["times"]
    sn = node[("synth", t["synth"]["by"])]
    wn = node[("worker", t["prove"]["by"])]
    bn = t["synth"]["buf_node"]
    assert sn == wn == bn, f"{p['name']}: synth on node {sn}, worker on node {wn}, buffer on node {bn}"
    per[sn] += 1
print(f"ok: every partition synthesized on its worker's node into that node's buffer "
      f"(node 0: {per[0]}, node 1: {per[1]})")
assert per[0] and per[1], f"one node did all the work: {per}"
nodes = {x["node"]: x for x in top["nodes"]}
assert sorted(nodes) == [0, 1], top["nodes"]
for k in (0, 1):
    x = nodes[k]
    assert x["synths"] == 1, x
    assert x["synth_parts"] == per[k] and x["bufs_taken"] == per[k], (k, x, per)
    assert x["cross_node"] == 0, x
print("ok: cuzk-top per node: " + ", ".join(
    f"node {k}: {nodes[k]['synth_parts']} synthesized, {nodes[k]['bufs_taken']} buffers, "
    f"{nodes[k]['cross_node']} cross-node" for k in (0, 1)))
PY
"$BUILD/bin/cuzk-top" --instance "$inst" --run-dir "$run" --once >"$tmp/top.txt" || fail "cuzk-top --once"
grep -q '^nodes:  n0 .* n1 .*cross-node 0$' "$tmp/top.txt" || fail "no nodes line: $(cat "$tmp/top.txt")"

for i in $(seq 1 $N); do
  "$SNARKJS" groth16 verify "$fx/verification_key.json" "$tmp/out/w$i.public.json" "$tmp/out/w$i.proof.json" 2>&1 |
    grep -q OK || fail "snarkjs rejects w$i.proof.json"
done
echo "ok: $N proofs verified by snarkjs"
daemon_shutdown_clean
