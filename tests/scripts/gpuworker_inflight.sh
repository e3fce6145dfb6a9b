#!/usr/bin/env bash
# The CPU backend that proves two small partitions side by side is named
# "cpu-inflight" (gpuworker/inflight.h: its in-flight threads); "cpu-lanes", its
# earlier name, stays accepted so that scripts and config files written with it keep
# working. Both prove through `cuzk-gpuworker prove --backend NAME --threads 2`, and
# snarkjs accepts each proof; an unknown name is refused with the list of backends,
# which names the current one.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
need_built bin/cuzk-gpuworker
need_tool node "snarkjs needs node"
use_fixtures
use_tmp

FX="$REF_FIXTURES/bn128"
for name in cpu-inflight cpu-lanes; do
  out="$("$BUILD/bin/cuzk-gpuworker" prove --backend "$name" --threads 2 "$FX/circuit_final.zkey" \
    "$FX/witness.wtns" "$tmp/$name.proof.json" "$tmp/$name.public.json" 2>&1)" ||
    {
      echo "FAIL: --backend $name: $out"
      exit 1
    }
  "$SNARKJS" groth16 verify "$FX/verification_key.json" "$tmp/$name.public.json" "$tmp/$name.proof.json" 2>&1 |
    grep -q OK || {
    echo "FAIL: snarkjs rejects the proof of --backend $name"
    exit 1
  }
  echo "ok: --backend $name: proof verified by snarkjs"
done

rc=0
out="$("$BUILD/bin/cuzk-gpuworker" prove --backend cpu-nosuch "$FX/circuit_final.zkey" "$FX/witness.wtns" \
  "$tmp/x.proof.json" "$tmp/x.public.json" 2>&1)" || rc=$?
[ $rc != 0 ] || {
  echo "FAIL: --backend cpu-nosuch was accepted"
  exit 1
}
grep -q "cpu-inflight" <<<"$out" || {
  echo "FAIL: the refusal does not list cpu-inflight: $out"
  exit 1
}
[ ! -e "$tmp/x.proof.json" ] || {
  echo "FAIL: a refused backend wrote a proof"
  exit 1
}
echo "ok: an unknown backend is refused (exit $rc) naming the backends: $out"
