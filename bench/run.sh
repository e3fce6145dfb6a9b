#!/usr/bin/env bash
# What `make bench` runs:
#   (a) $BUILD/bench/ring, if built;
#   (b) prove time of cuzk prove-local against snarkjs groth16 prove on the
#       mulchain fixtures (bn128: 2^10, 2^12, 2^14, 2^16 constraints; bls12381:
#       2^10, 2^12, 2^13, the largest the prepared bls12381 ptau allows; built and
#       cached by tests/fixtures/make.sh), median of BENCH_RUNS runs each, the
#       provers interleaved run by run; cuzk's proof is checked with snarkjs;
#   (c) $BUILD/bench/msm_ntt, if built, then any other binary in $BUILD/bench/
#       (stats_dump is a tool of (d), not a benchmark);
#   (d) bench/pipeline.sh: cuzkd with cpu:1 under a backlog of 32 partitions of
#       bn128/mulchain-14 (partitions/s, stage utilization, the worker's gaps) against
#       the same partitions through cuzk prove-local; BENCH_PIPELINE=0 skips it.
#
# Environment:
#   BUILD        build dir (default build)
#   BENCH_SIZES  the bn128 mulchain sizes as powers of two (default "10 12 14 16"; at most 16)
#   BENCH_BLS_SIZES  the bls12381 mulchain sizes (default "10 12 13"; at most 13; "" for none)
#   BENCH_RUNS   runs per prover and size (default 3)
#   PROVER_CMD   cuzk's command (default "$BUILD/bin/cuzk prove-local"), called as
#                $PROVER_CMD ZKEY WTNS PROOF PUBLIC
#   RAPIDSNARK   path of an external rapidsnark `prover` binary: adds a column
#                (not built or shipped here)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
cd "$ROOT"
BUILD="${BUILD:-build}"
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
BENCH_SIZES="${BENCH_SIZES:-10 12 14 16}"
BENCH_BLS_SIZES="${BENCH_BLS_SIZES-10 12 13}"
BENCH_RUNS="${BENCH_RUNS:-3}"
RAPIDSNARK="${RAPIDSNARK:-}"

cuzk_ok=1
if [ -z "${PROVER_CMD:-}" ]; then
  PROVER_CMD="$BUILD/bin/cuzk prove-local"
  [ -x "$BUILD/bin/cuzk" ] || cuzk_ok=0
fi
read -r -a PROVER <<<"$PROVER_CMD"
if [ -n "$RAPIDSNARK" ] && [ ! -x "$RAPIDSNARK" ]; then
  echo "bench: RAPIDSNARK=$RAPIDSNARK is not an executable; column left out" >&2
  RAPIDSNARK=""
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
failures=()

run_bin() {  # path
  local b="$1" rc=0
  echo "== $(basename "$b")"
  "$b" || rc=$?
  if [ $rc -ne 0 ]; then echo "bench: $(basename "$b") failed (exit $rc)"; failures+=("$(basename "$b")"); fi
  echo
}

# ---- (a) ring ----------------------------------------------------------------
if [ -x "$BUILD/bench/ring" ]; then run_bin "$BUILD/bench/ring"; fi

# ---- (b) prove: cuzk vs snarkjs (vs rapidsnark) --------------------------------
# rows: "curve k", by size, bn128 then bls12381 at the same size (side by side)
rows=()
for c in bn128 bls12381; do
  [ $c = bn128 ] && ks="$BENCH_SIZES" || ks="$BENCH_BLS_SIZES"
  [ -n "$ks" ] || continue
  size_args=()
  for k in $ks; do size_args+=(--size "$k"); rows+=("$c $k"); done
  bash "$ROOT/tests/fixtures/make.sh" -q --curve "$c" "${size_args[@]}" >/dev/null
done
mapfile -t rows < <(printf '%s\n' "${rows[@]}" | sort -s -k2,2n)
echo "== prove (mulchain, bn128 and bls12381; median of $BENCH_RUNS, interleaved)"
# shellcheck source=../tests/fixtures/env.sh
. "$ROOT/tests/fixtures/env.sh"
[ $cuzk_ok -eq 1 ] || echo "(cuzk is not built: $BUILD/bin/cuzk; its column is empty)"

# secs CMD... -> prints the wall time in seconds, or "fail"
secs() {
  local t0 t1
  t0=$(date +%s.%N)
  if "$@" >"$tmp/out" 2>&1; then
    t1=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b-a}'
  else
    echo fail
  fi
}
median() { printf '%s\n' "$@" | grep -v fail | sort -g | awk '{v[NR]=$1} END{ if (NR==0) print "-"; else if (NR%2) print v[(NR+1)/2]; else printf "%.3f", (v[NR/2]+v[NR/2+1])/2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (a=="-" || b=="-" || b+0==0) print "-"; else printf "%.2fx", a/b }'; }

hdr="$(printf '%-9s %-6s %9s %8s %11s %11s %9s' curve size constraints domain "cuzk s" "snarkjs s" speedup)"
[ -z "$RAPIDSNARK" ] || hdr="$hdr$(printf ' %13s %11s' "rapidsnark s" "vs rapid")"
echo "$hdr"
for row in "${rows[@]}"; do
  c="${row% *}"; k="${row#* }"
  d="$FIXTURES/$c/mulchain-$k"
  zkey="$d/circuit_final.zkey"; wtns="$d/witness.wtns"
  nc="$(sed -n 's/.*constraints=\([0-9]*\).*/\1/p' "$d/info.txt")"
  dom="$(sed -n 's/.*domain=\([0-9]*\).*/\1/p' "$d/info.txt")"
  tc=(); ts=(); tr=(); note=""
  for _ in $(seq "$BENCH_RUNS"); do
    if [ $cuzk_ok -eq 1 ]; then
      t="$(secs "${PROVER[@]}" "$zkey" "$wtns" "$tmp/proof_cuzk.json" "$tmp/public_cuzk.json")"
      [ "$t" != fail ] || note="$note cuzk failed: $(head -c 200 "$tmp/out" | tr '\n' ' ')"
      tc+=("$t")
    fi
    ts+=("$(secs "$SNARKJS" groth16 prove "$zkey" "$wtns" "$tmp/proof_s.json" "$tmp/public_s.json")")
    if [ -n "$RAPIDSNARK" ]; then
      tr+=("$(secs "$RAPIDSNARK" "$zkey" "$wtns" "$tmp/proof_r.json" "$tmp/public_r.json")")
    fi
  done
  if [ $cuzk_ok -eq 1 ] && [ -f "$tmp/proof_cuzk.json" ] && \
     ! "$SNARKJS" groth16 verify "$d/verification_key.json" "$tmp/public_cuzk.json" "$tmp/proof_cuzk.json" >/dev/null 2>&1; then
    note="$note cuzk's proof does NOT verify"
  fi
  rm -f "$tmp/proof_cuzk.json"
  mc="$( [ ${#tc[@]} -gt 0 ] && median "${tc[@]}" || echo -)"
  ms="$(median "${ts[@]}")"
  line="$(printf '%-9s %-6s %9s %8s %11s %11s %9s' "$c" "2^$k" "$nc" "$dom" "$mc" "$ms" "$(ratio "$ms" "$mc")")"
  if [ -n "$RAPIDSNARK" ]; then
    mr="$(median "${tr[@]}")"
    line="$line$(printf ' %13s %11s' "$mr" "$(ratio "$mr" "$mc")")"
  fi
  echo "$line${note:+  !$note}"
  [ -z "$note" ] || failures+=("prove $c 2^$k")
done
echo "(speedup = other prover's time / cuzk's time; wall times include process start and file loading)"
echo

# ---- (c) msm_ntt, then any other bench binary --------------------------------
if [ -x "$BUILD/bench/msm_ntt" ]; then run_bin "$BUILD/bench/msm_ntt"; fi
for b in "$BUILD"/bench/*; do
  case "$(basename "$b")" in ring|msm_ntt|stats_dump|*.o|*.d) continue ;; esac
  if [ -f "$b" ] && [ -x "$b" ]; then run_bin "$b"; fi
done

# ---- (d) pipeline under backlog ---------------------------------------------------
if [ "${BENCH_PIPELINE:-1}" != 0 ]; then
  rc=0
  BUILD="$BUILD" bash "$ROOT/bench/pipeline.sh" || rc=$?
  [ $rc -eq 0 ] || failures+=("pipeline")
  echo
fi

if [ ${#failures[@]} -gt 0 ]; then
  echo "bench: failures: ${failures[*]}"
  exit 1
fi
