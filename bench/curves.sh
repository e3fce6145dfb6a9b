#!/usr/bin/env bash
# bench/curves.sh — BLS12-381 against BN254 at the same size (issue 21's "cuzk BLS /
# cuzk BN254 <= 2.0"): CPU seconds (user + sys) of `cuzk prove-local` on mulchain-K of
# both curves, runs interleaved, every proof checked by snarkjs before its time counts.
# CPU time, not wall: on a shared machine it moves far less (with --threads 1 it is the
# proof's work; wall time waits for the other tenants). Min and median of the runs.
#
# Environment:
#   BUILD          build dir (default build)
#   CURVES_SIZES   mulchain sizes (powers of two; default "13"; above 13 the bls12381
#                  key comes from cuzk test-setup, tests/fixtures/make.sh --help)
#   CURVES_RUNS    runs per binary, curve and size (default 5)
#   CURVES_THREADS prove-local --threads (default 1)
#   CURVES_BINS    cuzk binaries to compare, interleaved run by run (default
#                  $BUILD/bin/cuzk), e.g. "old/cuzk build/bin/cuzk" for a before/after
set -euo pipefail

# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" curves
CURVES_SIZES="${CURVES_SIZES:-13}"
CURVES_RUNS="${CURVES_RUNS:-5}"
CURVES_THREADS="${CURVES_THREADS:-1}"
read -r -a BINS <<<"${CURVES_BINS:-$CUZK}"
for b in "${BINS[@]}"; do [ -x "$b" ] || {
  echo "bench/curves: $b is not an executable (make all)"
  exit 1
}; done

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
stat() { # values... -> "min median"
  printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END{ if (NR%2) m=v[(NR+1)/2]; else m=(v[NR/2]+v[NR/2+1])/2; printf "%.3f %.3f", v[1], m }'
}

echo "== BLS12-381 vs BN254, prove-local --threads $CURVES_THREADS, CPU s (user+sys), $CURVES_RUNS runs interleaved, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-5s %-28s %15s %15s %12s\n' size binary "bn128 min/med" "bls min/med" "bls/bn (med)"
fail=0
for k in $CURVES_SIZES; do
  for c in bn128 bls12381; do
    bash "$ROOT/tests/fixtures/make.sh" -q --curve "$c" --size "$k" >"$tmp/fx.log" 2>&1 ||
      {
        echo "bench/curves: no $c mulchain-$k fixture: $(tail -n 2 "$tmp/fx.log" | tr '\n' ' ')"
        exit 1
      }
  done
  declare -A cpu=()
  for _ in $(seq "$CURVES_RUNS"); do
    for bi in "${!BINS[@]}"; do
      for c in bn128 bls12381; do
        d="$FIXTURES/$c/mulchain-$k"
        rm -f "$tmp/proof.json" "$tmp/public.json"
        if ! /usr/bin/time -f '%U %S' -o "$tmp/time" "${BINS[$bi]}" prove-local --threads "$CURVES_THREADS" \
          "$d/circuit_final.zkey" "$d/witness.wtns" "$tmp/proof.json" "$tmp/public.json" >"$tmp/out" 2>&1; then
          echo "bench/curves: ${BINS[$bi]} failed on $c 2^$k: $(head -c 300 "$tmp/out")"
          fail=1
          continue
        fi
        if ! "$SNARKJS" groth16 verify "$d/verification_key.json" "$tmp/public.json" "$tmp/proof.json" 2>&1 |
          grep -q OK; then
          echo "bench/curves: ${BINS[$bi]}'s $c 2^$k proof does NOT verify (snarkjs): time not counted"
          fail=1
          continue
        fi
        cpu[$bi.$c]+="$(awk '{printf "%.3f", $1 + $2}' "$tmp/time") "
      done
    done
  done
  for bi in "${!BINS[@]}"; do
    # shellcheck disable=SC2086  # the list is words
    read -r bnmin bnmed <<<"$(stat ${cpu[$bi.bn128]:-0})"
    # shellcheck disable=SC2086
    read -r blmin blmed <<<"$(stat ${cpu[$bi.bls12381]:-0})"
    b="${BINS[$bi]}"
    [ ${#b} -le 28 ] || b="...${b: -25}"
    printf '%-5s %-28s %15s %15s %12s\n' "2^$k" "$b" "$bnmin/$bnmed" "$blmin/$blmed" \
      "$(awk -v a="$blmed" -v b="$bnmed" 'BEGIN{ if (b + 0 == 0) print "-"; else printf "%.2f", a / b }')"
  done
  unset cpu
done
exit $fail
