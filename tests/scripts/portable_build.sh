#!/usr/bin/env bash
# The default build runs on an old CPU: `cuzk prove-local` of the bundled example
# (bn128 and bls12381 mulchain-10) and `cuzk verify` of its proof under qemu-x86_64
# -cpu Nehalem (x86-64-v2: no AVX, no BMI2/ADX, no AVX-512), where the kernels must take
# their portable paths by CPUID. snarkjs checks each proof, and the two proofs under
# emulation are byte-identical to the native binary's with the same --insecure-rs
# blinding (same arithmetic, other instructions). A build made with NATIVE=1 (or other
# ARCHFLAGS) is not the portable one: SKIP.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
need_cuzk
use_fixtures
use_tmp
fail() {
  echo "FAIL: $*"
  exit 1
}
need_tool qemu-x86_64 "qemu-x86_64 is not installed (qemu-user)"
flags="$(cat "$BUILD/obj/.archflags" 2>/dev/null || echo unknown)"
case "$flags" in
  *-march=x86-64-v2*) ;;
  *)
    echo "SKIP: $BUILD was built with ARCHFLAGS '$flags', not the portable default"
    exit 77
    ;;
esac
old=(qemu-x86_64 -cpu Nehalem)
"${old[@]}" /bin/true || {
  echo "SKIP: qemu-x86_64 -cpu Nehalem cannot run a program here"
  exit 77
}

# (qemu raises SIGILL on any instruction Nehalem lacks: a build with the previous
# default, -march=x86-64-v3, dies here at its first AVX2 or BMI2 instruction.)
rs="123456789,987654321"
for curve in bn128 bls12381; do
  fx="$FIXTURES/$curve/mulchain-10"
  [ -f "$fx/circuit_final.zkey" ] || bash "$MAKE_FIXTURES" -q --curve "$curve" --only mulchain-10 >/dev/null
  "${old[@]}" "$CUZK" prove-local --insecure-rs "$rs" "$fx/circuit_final.zkey" "$fx/witness.wtns" \
    "$tmp/$curve.old.proof.json" "$tmp/$curve.old.public.json" 2>"$tmp/err" ||
    fail "$curve: prove-local on the emulated Nehalem: $(cat "$tmp/err")"
  "$CUZK" prove-local --insecure-rs "$rs" "$fx/circuit_final.zkey" "$fx/witness.wtns" \
    "$tmp/$curve.native.proof.json" "$tmp/$curve.native.public.json" 2>"$tmp/err" ||
    fail "$curve: prove-local natively: $(cat "$tmp/err")"
  cmp -s "$tmp/$curve.old.proof.json" "$tmp/$curve.native.proof.json" ||
    fail "$curve: the emulated and the native proof differ"
  out="$("$SNARKJS" groth16 verify "$fx/verification_key.json" "$tmp/$curve.old.public.json" "$tmp/$curve.old.proof.json")"
  grep -q OK <<<"$out" || fail "$curve: snarkjs rejects the proof made on the emulated Nehalem: $out"
  "${old[@]}" "$CUZK" verify "$fx/verification_key.json" "$tmp/$curve.old.public.json" \
    "$tmp/$curve.old.proof.json" >"$tmp/v" 2>&1 || fail "$curve: cuzk verify on the emulated Nehalem: $(cat "$tmp/v")"
  echo "ok: $curve mulchain-10 proved and verified on an emulated Nehalem (snarkjs OK, same bytes as native)"
done
