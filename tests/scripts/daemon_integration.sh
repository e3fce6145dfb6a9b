#!/usr/bin/env bash
# cuzkd end to end: start a daemon (unique instance, temp run dir, --devices cpu:2),
# submit three jobs of four partitions over two circuits at once, wait for each,
# verify every proof with snarkjs, shut down, and check that no stage process,
# socket, pid file or shared-memory segment remains.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../lib" && pwd)/daemon.sh"
daemon_init itest

daemon_start --devices cpu:2 --buffers 8 --buffer-mb 16

# Three jobs, two circuits, four witnesses each (copies of the fixture's witness).
declare -A fx=([a]=bn128 [b]=bn128-chain [c]=bn128)
for j in a b c; do
  mkdir -p "$tmp/$j/in" "$tmp/$j/out"
  for i in 1 2 3 4; do cp "$REF_FIXTURES/${fx[$j]}/witness.wtns" "$tmp/$j/in/w$i.wtns"; done
done
declare -A ids
for j in a b c; do
  d="$REF_FIXTURES/${fx[$j]}"
  out="$(cuzk --json prove --zkey "$d/circuit_final.zkey" --out "$tmp/$j/out" "$tmp/$j/in"/w*.wtns)" ||
    fail "submit of job $j: $out"
  ids[$j]="$(node -e 'console.log(JSON.parse(process.argv[1]).job)' "$out")"
done
wait_jobs a b c
n=0
for j in a b c; do verify_outs "$j" "${fx[$j]}" 4; done
echo "ok: $n proofs from 3 concurrent jobs verified by snarkjs"

daemon_shutdown_clean
