#!/usr/bin/env bash
# NUMA routing (route.h) on a fake two-node machine: cuzkd --test-fake-topology plans
# from tests/topologies/dual-xeon-8gpu.xml (two sockets) and runs here, with two CPU
# workers (one per node), one synth per node and the buffers split between the nodes.
# A job of 8 partitions must have each partition synthesized by the synth of its
# worker's node, into a buffer of that node (status JOB: who synthesized and proved it,
# its buffer's node; status: each stage's node), cuzk-top's per-node counts must say
# the same with no cross-node fallback, and snarkjs must accept every proof. Then synth
# 1 is killed and a second job must count every crossing it causes; and on three fake
# nodes with workers on two, the third node's synth must take nothing; with a node
# that has a worker but no buffers, its synth's crossings must be counted.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../lib" && pwd)/daemon.sh"
daemon_init numa
need_bins cuzk-top
topo="$ROOT/tests/topologies/dual-xeon-8gpu.xml"
fx="$REF_FIXTURES/bn128"
N=8
# shellcheck disable=SC2034  # counted by verify_outs (daemon.sh), which set -u needs set
n=0

# prove_round R: a job of the N witnesses of $tmp/in into $tmp/R/out, waited for; its
# id in job.
prove_round() {
  mkdir -p "$tmp/$1/out"
  out="$(cuzk --json prove --zkey "$fx/circuit_final.zkey" --out "$tmp/$1/out" "$tmp/in"/w*.wtns)" ||
    fail "submit $1: $out"
  job="$(js 'r.job' "$out")"
  timeout 600 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" wait "$job" >"$tmp/wait" ||
    fail "job $job did not finish: $(cat "$tmp/wait")"
}

# Without the test option a topology file only plans.
rc=0
"$BUILD/bin/cuzkd" --instance "$inst" --run-dir "$run" --topology "$topo" \
  --devices cpu:2 >"$tmp/refused" 2>&1 || rc=$?
[ $rc -eq 2 ] && grep -q -- '--test-fake-topology' "$tmp/refused" || fail "--topology without --plan: rc $rc: $(cat "$tmp/refused")"
echo "ok: --topology without --plan or --test-fake-topology is refused (exit 2)"

# Wait until every stage named ("role index" pairs) is up in cuzk-top (the synths look
# at each other's stats slots to route).
stages_up() {
  local _
  for _ in $(seq 1 100); do
    "$BUILD/bin/cuzk-top" --instance "$inst" --run-dir "$run" --once --json >"$tmp/top0.json" 2>/dev/null || true
    python3 - "$tmp/top0.json" "$@" <<'PY' && return 0
import json, sys
try: d = json.load(open(sys.argv[1]))
except Exception: sys.exit(1)
up = {f'{p["role"]} {p["index"]}' for p in d["processes"] if p["alive"]}
sys.exit(0 if set(sys.argv[2:]) <= up else 1)
PY
    sleep 0.1
  done
  fail "stages not up after 10 s: $*"
}

daemon_start --devices cpu:2 --buffers 4 --buffer-mb 16 --topology "$topo" --test-fake-topology
grep -q "not this machine's" "$tmp/cuzkd.log" || fail "the pool was not left unbound"

stages_up "synth 0" "synth 1" "gpuworker 0" "gpuworker 1" "finalizer 0"
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

mkdir -p "$tmp/in"
for i in $(seq 1 $N); do cp "$fx/witness.wtns" "$tmp/in/w$i.wtns"; done
prove_round 1
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
# Which worker takes which partition is the scheduler's choice (on a loaded machine one
# worker may take all 8): routing guarantees where each partition is synthesized and
# buffered, not a share of the work, so the share is printed, never asserted.
print(f"ok: every partition synthesized on its worker's node into that node's buffer "
      f"(node 0: {per[0]}, node 1: {per[1]})")
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

verify_outs 1 bn128 $N
echo "ok: $N proofs verified by snarkjs"

# The fallback: synth 1 killed (kill -9 from outside: restarted after its back-off).
# Whether synth 0 feeds worker 1 meanwhile depends on timing, so what is checked is
# that every buffer is still of its worker's node, and that each partition synthesized
# on the other node was counted as cross-node, no more and no fewer.
spid="$(js 'r.children.find(c => c.stage == "synth" && c.index == 1).pid' "$(cuzk --json status)")"
kill -KILL "$spid"
prove_round 2
job2="$job"
for _ in $( # synth 1 restarted (back-off 0.25 s), for its new pid
  seq 1 100
); do
  p1="$(js 'r.children.find(c => c.stage == "synth" && c.index == 1).pid' "$(cuzk --json status)")"
  [ "$p1" -gt 0 ] && [ "$p1" != "$spid" ] && break
  sleep 0.1
done
cuzk --json status >"$tmp/status2.json" || fail "status"
cuzk --json status "$job2" >"$tmp/job2.json" || fail "status $job2"
"$BUILD/bin/cuzk-top" --instance "$inst" --run-dir "$run" --once --json >"$tmp/top2.json" || fail "cuzk-top"
python3 - "$tmp/status2.json" "$tmp/job2.json" "$tmp/top2.json" "$spid" <<'PY' || fail "fallback"
import json, sys
st, job, top = (json.load(open(a)) for a in sys.argv[1:4])
node = {(c["stage"], c["index"]): c["node"] for c in st["children"]}
s1 = [c for c in st["children"] if c["stage"] == "synth" and c["index"] == 1][0]
assert s1["pid"] != int(sys.argv[4]) and s1["restarts"] >= 1, f"synth 1 not restarted: {s1}"
crossed = 0
for p in job.get("job", job)["parts"]:
    assert p["state"] == "done", p
    t = p["times"]
    sn, wn = node[("synth", t["synth"]["by"])], node[("worker", t["prove"]["by"])]
    assert wn == t["synth"]["buf_node"], f"{p['name']}: worker on node {wn}, buffer on {t['synth']['buf_node']}"
    assert t["synth"]["by"] == 0 or sn == wn, f"{p['name']}: the restarted synth crossed"
    crossed += sn != wn
nodes = {x["node"]: x for x in top["nodes"]}
assert nodes[0]["cross_node"] == crossed and nodes[1]["cross_node"] == 0, (crossed, top["nodes"])
print(f"ok: synth 1 killed: buffers stayed on their worker's node, {crossed} partition(s) "
      "synthesized across by synth 0, each counted as cross_node")
PY
verify_outs 2 bn128 $N
echo "ok: $N more proofs verified by snarkjs"
daemon_shutdown_clean

# Three nodes, workers on two: the third node's synth serves nobody and takes nothing.
daemon_start --devices cpu:2 --buffers 4 --buffer-mb 16 --synthetic "pack:3 numa:1 core:2 pu:1" \
  --test-fake-topology
stages_up "synth 0" "synth 1" "synth 2" "gpuworker 0" "gpuworker 1" "finalizer 0"
prove_round 3
"$BUILD/bin/cuzk-top" --instance "$inst" --run-dir "$run" --once --json >"$tmp/top3.json" || fail "cuzk-top"
python3 - "$tmp/top3.json" "$N" <<'PY' || fail "three nodes: $(cat "$tmp/top3.json")"
import json, sys
top, n = json.load(open(sys.argv[1])), int(sys.argv[2])
nodes = {x["node"]: x for x in top["nodes"]}
assert sorted(nodes) == [0, 1, 2], top["nodes"]
assert nodes[2]["synth_parts"] == 0 and nodes[2]["bufs_taken"] == 0, nodes[2]
assert sum(x["synth_parts"] for x in nodes.values()) == n, top["nodes"]
assert all(x["cross_node"] == 0 for x in nodes.values()), top["nodes"]
assert all(nodes[k]["synth_parts"] == nodes[k]["bufs_taken"] for k in (0, 1)), top["nodes"]
print(f"ok: three nodes, workers on two: node 2's synth took none of the {n} partitions")
PY
verify_outs 3 bn128 $N
echo "ok: $N proofs verified by snarkjs"
daemon_shutdown_clean

# Fewer buffers than nodes with workers: node 2 has a worker and a synth but no pool
# share. Its synth takes any node's buffer (counted cross_node) and the partition goes
# to a worker on the buffer's node; nothing waits forever.
daemon_start --devices cpu:3 --buffers 2 --buffer-mb 16 --synthetic "pack:3 numa:1 core:2 pu:1" \
  --test-fake-topology
stages_up "synth 0" "synth 1" "synth 2" "gpuworker 0" "gpuworker 1" "gpuworker 2" "finalizer 0"
prove_round 4
job4="$job"
cuzk --json status >"$tmp/status4.json" || fail "status"
cuzk --json status "$job4" >"$tmp/job4.json" || fail "status $job4"
"$BUILD/bin/cuzk-top" --instance "$inst" --run-dir "$run" --once --json >"$tmp/top4.json" || fail "cuzk-top"
python3 - "$tmp/status4.json" "$tmp/job4.json" "$tmp/top4.json" <<'PY' || fail "node without buffers"
import json, sys
st, job, top = (json.load(open(a)) for a in sys.argv[1:4])
node = {(c["stage"], c["index"]): c["node"] for c in st["children"]}
crossed = 0
for p in job.get("job", job)["parts"]:
    assert p["state"] == "done", p
    t = p["times"]
    sn, wn = node[("synth", t["synth"]["by"])], node[("worker", t["prove"]["by"])]
    assert wn == t["synth"]["buf_node"] and wn in (0, 1), (p["name"], wn, t)
    crossed += sn != wn
nodes = {x["node"]: x for x in top["nodes"]}
assert nodes[2]["cross_node"] == nodes[2]["synth_parts"] == crossed, (crossed, top["nodes"])
assert nodes[0]["cross_node"] == nodes[1]["cross_node"] == 0, top["nodes"]
print(f"ok: node 2 without buffers: its synth made {crossed} partition(s) into other nodes' "
      "buffers, each counted as cross_node, proved on the buffer's node")
PY
verify_outs 4 bn128 $N
echo "ok: $N proofs verified by snarkjs"
daemon_shutdown_clean
