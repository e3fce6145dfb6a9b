#!/usr/bin/env bash
# The worker's asynchronous path (backend.h submit/collect, inflight.h) — the one the CUDA
# backend takes — on the CPU: cuzkd with CUZK_TEST_BACKEND=cpu-async (two in-flight threads of
# groth16_compute, so two partitions in flight). Three jobs over three circuits (two
# curves) submitted at once, so the worker switches circuits with partitions in flight
# (it must drain first: the zkey cache could close a zkey an in-flight thread still reads), and a
# preload + evict while they run (applied only with nothing in flight). Every proof is
# verified by snarkjs; the worker's stats show its "device" state, gpu_busy_ns, one gap
# per partition after the first, and nothing failed.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../lib" && pwd)/daemon.sh"
daemon_init async

CUZK_TEST_BACKEND=cpu-async daemon_start --devices cpu:1 --buffers 6 --buffer-mb 16

declare -A fx=([a]=bn128 [b]=bn128-chain [c]=bls12381) cnt=([a]=6 [b]=4 [c]=3)
declare -A ids
for j in a b c; do
  mkdir -p "$tmp/$j/in" "$tmp/$j/out"
  for i in $(seq 1 "${cnt[$j]}"); do
    cp "$REF_FIXTURES/${fx[$j]}/witness.wtns" "$tmp/$j/in/w$i.wtns"
  done
done
for j in a b c; do
  out="$(cuzk --json prove --zkey "$REF_FIXTURES/${fx[$j]}/circuit_final.zkey" \
    --out "$tmp/$j/out" "$tmp/$j/in"/w*.wtns)" || fail "submit of job $j: $out"
  ids[$j]="$(node -e 'console.log(JSON.parse(process.argv[1]).job)' "$out")"
done
# While they run: preload and evict the first circuit (the worker applies the table
# between partitions, once nothing is in flight; both must complete).
Z="$REF_FIXTURES/bn128/circuit_final.zkey"
out="$(timeout 120 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" --json preload "$Z")" ||
  fail "preload while jobs run: $out"
out="$(timeout 120 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" --json evict "$Z")" ||
  fail "evict while jobs run: $out"
echo "ok: preload and evict applied by every stage while the async worker had work"
wait_jobs a b c
n=0
for j in a b c; do verify_outs "$j" "${fx[$j]}" "${cnt[$j]}"; done
echo "ok: $n proofs from 3 concurrent jobs (3 circuits) through the async worker verified by snarkjs"

"$BUILD/bin/cuzk-top" --instance "$inst" --run-dir "$run" --once --json >"$tmp/top.json" || fail "cuzk-top"
node - "$tmp/top.json" "$n" <<'JS' || fail "worker stats"
const j = JSON.parse(require("fs").readFileSync(process.argv[2])), n = +process.argv[3];
const w = j.processes.find((p) => p.role === "gpuworker" && p.index === 0);
const bad = [];
if (!w) { console.log("no worker slot"); process.exit(1); }
if (w.restarts !== 0) bad.push(`restarted ${w.restarts} times`);
if (w.counters.parts_done !== n) bad.push(`parts_done ${w.counters.parts_done} != ${n}`);
if (w.counters.parts_failed !== 0) bad.push(`parts_failed ${w.counters.parts_failed}`);
if (!(w.counters.gpu_busy_ns > 0)) bad.push("gpu_busy_ns is 0");
// gpu_busy_ns is the union of the in-flight threads' busy time: never above wall, even with two in flight
if (w.counters.gpu_busy_ns > w.wall_ns) bad.push(`gpu_busy_ns ${w.counters.gpu_busy_ns} > wall ${w.wall_ns}`);
if (!(w.states.device > 0)) bad.push("no time in state device");
if (w.histograms.gap.count !== n - 1) bad.push(`gap count ${w.histograms.gap.count} != ${n - 1}`);
if (w.histograms.prove.count !== n) bad.push(`prove count ${w.histograms.prove.count} != ${n}`);
// every nanosecond of the slot's wall time is in one state (stats.h)
const sum = Object.values(w.states).reduce((a, b) => a + b, 0);
if (Math.abs(sum - w.wall_ns) > 1e6) bad.push(`states sum ${sum} != wall ${w.wall_ns}`);
if (bad.length) { console.log(bad.join("; ")); process.exit(1); }
console.log(`ok: worker stats: ${n} done, device ${(w.states.device / 1e6).toFixed(1)} ms, ` +
            `gpu_busy_ns ${(w.counters.gpu_busy_ns / 1e6).toFixed(1)} ms, ${w.histograms.gap.count} gaps`);
JS
grep -q "failed\|device fault" "$tmp/cuzkd.log" && fail "the log reports a failure"
daemon_stop
echo "ok: async worker"
