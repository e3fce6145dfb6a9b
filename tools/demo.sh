#!/usr/bin/env bash
# The main job on its embedded default: start cuzkd with the CPU backend, prove the
# bundled example circuit (tests/fixtures/circuits/mulchain.circom at 2^10 constraints,
# BN254) as one job of four partitions, print where the proofs are and what each
# stage did, verify every proof with snarkjs, and shut the daemon down.
# `make demo` runs this. Environment: BUILD (default build), DEMO_CIRCUIT (default
# mulchain-10), DEMO_CURVE (bn128 | bls12381), DEMO_PARTS (default 4).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. tests/fixtures/env.sh # ROOT, and BUILD made absolute
CIRCUIT="${DEMO_CIRCUIT:-mulchain-10}"
CURVE="${DEMO_CURVE:-bn128}"
PARTS="${DEMO_PARTS:-4}"

echo "== building the example fixture ($CURVE/$CIRCUIT: circom + snarkjs setup, cached)"
bash "$MAKE_FIXTURES" -q --curve "$CURVE" --only "$CIRCUIT"
fx="$FIXTURES/$CURVE/$CIRCUIT"
out="$BUILD/demo/out"
work="$BUILD/demo"
rm -rf "$out" "$work/in" "$work/state" # a fresh demo: nothing to resume
mkdir -p "$out" "$work/in"
for i in $(seq 1 "$PARTS"); do cp "$fx/witness.wtns" "$work/in/w$i.wtns"; done

inst="demo$$"
run="$work/run"
cuzk() { "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" "$@"; }
daemon_pid=""
cleanup() {
  if [ -n "$daemon_pid" ] && kill -0 "$daemon_pid" 2>/dev/null; then
    cuzk shutdown >/dev/null 2>&1 || kill -TERM "$daemon_pid"
    wait "$daemon_pid" 2>/dev/null || true
  fi
}
trap cleanup EXIT

echo "== starting cuzkd (instance $inst, CPU backend: --devices cpu:1)"
"$BUILD/bin/cuzkd" --instance "$inst" --run-dir "$run" --state-dir "$work/state" --devices cpu:1 --buffers 4 --buffer-mb 16 \
  --foreground >"$work/cuzkd.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 1 100); do
  [ -S "$run/$inst.sock" ] && break
  sleep 0.1
done
[ -S "$run/$inst.sock" ] || {
  echo "cuzkd did not start:"
  cat "$work/cuzkd.log"
  exit 1
}
sed -n '1,20p' "$work/cuzkd.log"

echo "== submitting one job of $PARTS partitions and waiting"
t0=$(date +%s.%N)
cuzk prove --zkey "$fx/circuit_final.zkey" --out "$out" --wait "$work/in"/w*.wtns
t1=$(date +%s.%N)
awk -v a="$t0" -v b="$t1" -v n="$PARTS" 'BEGIN{printf "job done: %d partitions in %.2f s (%.2f partitions/s)\n", n, b-a, n/(b-a)}'

echo "== the daemon's view (stages, jobs)"
cuzk status

echo "== one partition's step timings (cuzk prove-local --timings, same circuit)"
"$BUILD/bin/cuzk" prove-local --timings "$fx/circuit_final.zkey" "$fx/witness.wtns" "$work/local.proof.json" \
  "$work/local.public.json"

echo "== verifying every proof with snarkjs groth16 verify"
for i in $(seq 1 "$PARTS"); do
  printf '%s: ' "$out/w$i.proof.json"
  "$SNARKJS" groth16 verify "$fx/verification_key.json" "$out/w$i.public.json" "$out/w$i.proof.json" | tail -n 1
done

echo "== shutting down"
cuzk shutdown
wait "$daemon_pid"
daemon_pid=""
echo "demo: $PARTS proofs in $out, all verified by snarkjs"
