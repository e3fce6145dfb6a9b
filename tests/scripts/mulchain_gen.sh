#!/usr/bin/env bash
# bench/mulchain_gen (the mulchain fixture without circom, used by tests/fixtures/make.sh
# above 2^18) checked from outside, against circom's own files:
#   * bn128 mulchain-10 and -13, bls12381 mulchain-10: circuit.r1cs and witness.wtns
#     byte for byte equal to those circom 2 and its witness calculator wrote for the
#     fixture (tests/fixtures/circuits/mulchain.circom, mulchain.input.json);
#   * a generated 2^10 circuit under a fresh `cuzk test-setup` key: `cuzk prove-local
#     --r1cs` (every constraint checked against the witness), snarkjs groth16 verify OK;
#   * usage: a size out of range, a missing argument, an unknown curve (exit 2), an
#     output directory that does not exist (exit 1).
#
# Environment: BUILD (default build).
set -euo pipefail

# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
need_cuzk
need_built bench/mulchain_gen
GEN="$BUILD/bench/mulchain_gen"

use_fixtures

use_tmp
fails=0

# ---- byte for byte against circom ---------------------------------------------------
for ck in "bn128 10" "bn128 13" "bls12381 10"; do
  c="${ck% *}"
  k="${ck#* }"
  F="$FIXTURES/$c/mulchain-$k"
  w="$tmp/$c-$k"
  mkdir -p "$w"
  if ! "$GEN" --curve "$c" "$k" "$w" 2>"$w/err"; then
    bad "mulchain_gen --curve $c $k failed: $(head -c 300 "$w/err")"
    continue
  fi
  for f in circuit.r1cs witness.wtns; do
    if cmp -s "$w/$f" "$F/$f"; then
      ok "$c/mulchain-$k: $f is circom's, byte for byte ($(stat -c %s "$F/$f") bytes)"
    else
      bad "$c/mulchain-$k: $f differs from circom's: $(cmp "$w/$f" "$F/$f" 2>&1 | head -c 200)"
    fi
  done
done

# ---- a generated circuit proves and verifies -----------------------------------------
w="$tmp/prove"
mkdir -p "$w"
step() { # cmd...: runs it, its output into $w/log; a failure is reported
  "$@" >"$w/log" 2>&1 || {
    bad "generated 2^10: ${*:1:2} failed: $(tail -c 300 "$w/log")"
    return 1
  }
}
if step "$GEN" 10 "$w" && step "$CUZK" test-setup -q "$w/circuit.r1cs" "$w/k.zkey" &&
  step "$SNARKJS" zkey export verificationkey "$w/k.zkey" "$w/vk.json" &&
  step "$CUZK" prove-local --r1cs "$w/circuit.r1cs" "$w/k.zkey" "$w/witness.wtns" "$w/p.json" "$w/pub.json" &&
  step "$SNARKJS" groth16 verify "$w/vk.json" "$w/pub.json" "$w/p.json"; then
  if grep -q "OK" "$w/log"; then
    ok "generated 2^10: test-setup, prove-local --r1cs, snarkjs groth16 verify OK"
  else
    bad "snarkjs rejects cuzk's proof of the generated circuit: $(head -c 300 "$w/log")"
  fi
fi

# ---- usage -----------------------------------------------------------------------------
expect_rc() { # rc what cmd...
  local want="$1" what="$2" rc=0
  shift 2
  "$@" >/dev/null 2>&1 || rc=$?
  if [ "$rc" = "$want" ]; then ok "$what: exit $rc"; else bad "$what: exit $rc, expected $want"; fi
}
expect_rc 2 "size 3 (below 4)" "$GEN" 3 "$tmp"
expect_rc 2 "size 29 (above 28)" "$GEN" 29 "$tmp"
expect_rc 2 "size not a number" "$GEN" 1x "$tmp"
expect_rc 2 "no output directory" "$GEN" 10
expect_rc 2 "unknown curve" "$GEN" --curve bn254x 10 "$tmp"
expect_rc 1 "output directory missing" "$GEN" 10 "$tmp/nowhere"

[ $fails -eq 0 ] || {
  echo "mulchain_gen: $fails failure(s)"
  exit 1
}
echo "mulchain_gen: all checks passed"
