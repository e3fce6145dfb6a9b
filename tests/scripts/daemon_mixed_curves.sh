#!/usr/bin/env bash
# Mixed-curve pipeline (issue 10): one cuzkd (unique instance, temp run dir,
# --devices cpu:2) takes bn128 and bls12381 jobs at once — two jobs per curve over
# two circuit shapes, four partitions each, all submitted before any is waited for —
# so synth, both workers and the finalizer interleave partitions of both curves.
# Every proof is checked with snarkjs (which also checks the proof's "curve"), then
# the daemon is shut down and nothing (process, socket, pid file, segment) may remain.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
cd "$ROOT"
BUILD="${BUILD:-build}"
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
. "$ROOT/tests/fixtures/env.sh"
for b in cuzkd cuzk cuzk-synth cuzk-gpuworker cuzk-finalizer; do
  [ -x "$BUILD/bin/$b" ] || { echo "FAIL: $BUILD/bin/$b is missing (run make)"; exit 1; }
done
[ -x "$SNARKJS" ] || bash "$MAKE_FIXTURES" -q >/dev/null

inst="mixc$$"
tmp="$(mktemp -d)"
run="$tmp/run"
daemon_pid=""
cleanup() {
  if [ -n "$daemon_pid" ] && kill -0 "$daemon_pid" 2>/dev/null; then
    kill -TERM "$daemon_pid" 2>/dev/null; sleep 2; kill -KILL "$daemon_pid" 2>/dev/null || true
  fi
  rm -f /dev/shm/cuzk-"$inst".* 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
cuzk() { "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" "$@"; }
fail() { echo "FAIL: $*"; echo "--- cuzkd log"; tail -n 40 "$tmp/cuzkd.log" 2>/dev/null; exit 1; }

"$BUILD/bin/cuzkd" --instance "$inst" --run-dir "$run" --devices cpu:2 --buffers 8 \
  --buffer-mb 16 --foreground >"$tmp/cuzkd.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 1 100); do [ -S "$run/$inst.sock" ] && break; sleep 0.1; done
[ -S "$run/$inst.sock" ] || fail "cuzkd did not create its socket"

# Jobs alternate curves in submit order, so both curves are queued at once.
SG="$SHARED/fixtures/snarkjs-groth16"
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
  out="$(cuzk --json prove --zkey "${dir[$j]}/circuit_final.zkey" --out "$tmp/$j/out" "$tmp/$j/in"/w*.wtns)" \
    || fail "submit of job $j (${curve[$j]}): $out"
  ids[$j]="$(node -e 'console.log(JSON.parse(process.argv[1]).job)' "$out")"
done
for j in "${jobs[@]}"; do
  timeout 600 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" wait "${ids[$j]}" >"$tmp/wait.$j" 2>&1 \
    || fail "job $j (${curve[$j]}, ${ids[$j]}) did not finish: $(cat "$tmp/wait.$j")"
done
declare -A n=([bn128]=0 [bls12381]=0)
for j in "${jobs[@]}"; do
  vk="${dir[$j]}/verification_key.json"
  for i in $(seq 1 $parts); do
    p="$tmp/$j/out/w$i.proof.json"; pub="$tmp/$j/out/w$i.public.json"
    [ -f "$p" ] && [ -f "$pub" ] || fail "job $j: w$i.proof.json or w$i.public.json missing"
    c="$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1])).curve)' "$p")"
    [ "$c" = "${curve[$j]}" ] || fail "$p says curve \"$c\", expected ${curve[$j]}"
    "$SNARKJS" groth16 verify "$vk" "$pub" "$p" 2>&1 | grep -q OK || fail "snarkjs rejects $p (${curve[$j]})"
    n[${curve[$j]}]=$((n[${curve[$j]}] + 1))
  done
done
echo "ok: ${n[bn128]} bn128 + ${n[bls12381]} bls12381 proofs from 4 concurrent jobs verified by snarkjs"

cuzk status >/dev/null || fail "status"
cuzk shutdown >/dev/null || fail "shutdown request"
for _ in $(seq 1 300); do kill -0 "$daemon_pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$daemon_pid" 2>/dev/null && fail "cuzkd still running 30 s after shutdown"
rc=0; wait "$daemon_pid" || rc=$?
daemon_pid=""
[ $rc -eq 0 ] || fail "cuzkd exited with $rc after shutdown"
left="$(pgrep -f -- "--instance $inst " || true)"
[ -z "$left" ] || fail "stage processes left: $left"
[ ! -e "$run/$inst.sock" ] || fail "socket left behind"
[ ! -e "$run/$inst.pid" ] || fail "pid file left behind"
ls /dev/shm/cuzk-"$inst".* >/dev/null 2>&1 && fail "segments left: $(ls /dev/shm/cuzk-"$inst".*)"
echo "ok: clean shutdown (no process, socket, pid file or segment left)"
