#!/usr/bin/env bash
# Mixed-curve pipeline (issue 10): one cuzkd (unique instance, temp run dir,
# --devices cpu:2) takes bn128 and bls12381 jobs at once — two jobs per curve over
# two circuit shapes, four partitions each, all submitted before any is waited for —
# so synth, both workers and the finalizer interleave partitions of both curves.
# Every proof is checked with snarkjs (which also checks the proof's "curve"), then
# the daemon is shut down and nothing (process, socket, pid file, segment) may remain.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../lib" && pwd)/daemon.sh"
daemon_init mixc

daemon_start --devices cpu:2 --buffers 8 --buffer-mb 16

# Jobs alternate curves in submit order, so both curves are queued at once.
SG="$REF_FIXTURES"
jobs=(a b c d)
declare -A dir=([a]="$SG/bn128" [b]="$SG/bls12381" [c]="$SG/bn128-chain" [d]="$SG/bls12381-chain")
declare -A curve=([a]=bn128 [b]=bls12381 [c]=bn128 [d]=bls12381)
parts=4
for j in "${jobs[@]}"; do
  [ -f "${dir[$j]}/circuit_final.zkey" ] || fail "fixture ${dir[$j]} is missing"
  mkdir -p "$tmp/$j/in" "$tmp/$j/out"
  for i in $(seq 1 $parts); do cp "${dir[$j]}/witness.wtns" "$tmp/$j/in/w$i.wtns"; done
done
declare -A ids
for j in "${jobs[@]}"; do
  out="$(cuzk --json prove --zkey "${dir[$j]}/circuit_final.zkey" --out "$tmp/$j/out" "$tmp/$j/in"/w*.wtns)" ||
    fail "submit of job $j (${curve[$j]}): $out"
  ids[$j]="$(node -e 'console.log(JSON.parse(process.argv[1]).job)' "$out")"
done
for j in "${jobs[@]}"; do
  timeout 600 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" wait "${ids[$j]}" >"$tmp/wait.$j" 2>&1 ||
    fail "job $j (${curve[$j]}, ${ids[$j]}) did not finish: $(cat "$tmp/wait.$j")"
done
declare -A n=([bn128]=0 [bls12381]=0)
for j in "${jobs[@]}"; do
  vk="${dir[$j]}/verification_key.json"
  for i in $(seq 1 $parts); do
    p="$tmp/$j/out/w$i.proof.json"
    pub="$tmp/$j/out/w$i.public.json"
    [ -f "$p" ] && [ -f "$pub" ] || fail "job $j: w$i.proof.json or w$i.public.json missing"
    c="$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1])).curve)' "$p")"
    [ "$c" = "${curve[$j]}" ] || fail "$p says curve \"$c\", expected ${curve[$j]}"
    "$SNARKJS" groth16 verify "$vk" "$pub" "$p" 2>&1 | grep -q OK || fail "snarkjs rejects $p (${curve[$j]})"
    n[${curve[$j]}]=$((n[${curve[$j]}] + 1))
  done
done
echo "ok: ${n[bn128]} bn128 + ${n[bls12381]} bls12381 proofs from 4 concurrent jobs verified by snarkjs"

daemon_shutdown_clean
