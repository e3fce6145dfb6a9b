#!/usr/bin/env bash
# The main job on its embedded default: prove the bundled example circuit
# (tests/fixtures/circuits/mulchain.circom at 2^10 constraints, BN254) with the CPU
# backend, then verify the proof with snarkjs. `make demo` runs this.
# Environment: BUILD (default build), DEMO_CIRCUIT (default mulchain-10),
# DEMO_CURVE (bn128 | bls12381).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BUILD="${BUILD:-build}"
CIRCUIT="${DEMO_CIRCUIT:-mulchain-10}"
CURVE="${DEMO_CURVE:-bn128}"
. tests/fixtures/env.sh

echo "== building the example fixture ($CURVE/$CIRCUIT: circom + snarkjs setup, cached)"
bash "$MAKE_FIXTURES" -q --curve "$CURVE" --only "$CIRCUIT"
fx="$FIXTURES/$CURVE/$CIRCUIT"
out="$BUILD/demo"
mkdir -p "$out"

echo "== proving with cuzk prove-local (CPU backend)"
"$BUILD/bin/cuzk" prove-local --timings "$fx/circuit_final.zkey" "$fx/witness.wtns" "$out/proof.json" "$out/public.json"

echo "== verifying with snarkjs groth16 verify"
"$SNARKJS" groth16 verify "$fx/verification_key.json" "$out/public.json" "$out/proof.json"
echo "demo: proof in $out/proof.json verified"
