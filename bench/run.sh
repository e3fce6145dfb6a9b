#!/usr/bin/env bash
# What `make bench` runs:
#   (a) $BUILD/bench/ring, if built;
#   (b) prove time of cuzk prove-local, rapidsnark (when RAPIDSNARK is set; bn128
#       only) and snarkjs groth16 prove on the mulchain fixtures (bn128: 2^12, 2^14,
#       2^16, 2^18 constraints; bls12381: 2^10, 2^12, 2^13, the largest the prepared
#       bls12381 ptau allows; built and cached by tests/fixtures/make.sh; a size the
#       fixture builder does not support is skipped with a note), median of
#       BENCH_RUNS runs each, the provers interleaved run by run; the ratios are
#       cuzk's time / the other's (below 1: cuzk is faster; issue 9's target is
#       cuzk/rapidsnark <= 0.5 at 2^16 and 2^18); every prover's last proof of a
#       row is checked with snarkjs;
#   (c) $BUILD/bench/msm_ntt, if built, then any other binary in $BUILD/bench/
#       (stats_dump is a tool of (d), not a benchmark);
#   (d) bench/pipeline.sh: cuzkd under a backlog of one circuit (partitions/s,
#       stage utilization, the worker's gaps) against the same partitions through
#       cuzk prove-local and rapidsnark back to back; BENCH_PIPELINE=0 skips it;
#   (e) bench/store.sh: the job store's cost, partitions/s of a backlog of 64 small
#       partitions with the SQLite store and with --no-store; BENCH_STORE=0 skips it;
#   (f) bench/inputjson.sh: end to end from input.json, cuzk prove-local vs snarkjs
#       fullprove vs circom's witness binary + rapidsnark (bench/native.sh: when
#       RAPIDSNARK and nlohmann/json.hpp are there); BENCH_INPUTJSON=0 skips it;
#   (f2) bench/backlog.sh: a daemon backlog of 32 input.json partitions (mulchain
#       2^16), partitions/s against prove-local and witness binary + rapidsnark back
#       to back, and the worker's idle share; BENCH_BACKLOG=0 skips it;
#   (g) bench/threads.sh: prove-local --threads 1..nproc on mulchain 2^14 and 2^16,
#       wall, CPU, speedup and threads created per proof; BENCH_THREADS=0 skips it;
#   (h) bench/curves.sh: CPU seconds of BLS12-381 against BN254 proofs at the same size
#       (mulchain 2^13; CURVES_SIZES), every proof checked by snarkjs; BENCH_CURVES=0
#       skips it.
#
# Environment:
#   BUILD        build dir (default build)
#   BENCH_SIZES  the bn128 mulchain sizes as powers of two (default "12 14 16 18";
#                sizes above what tests/fixtures/make.sh supports are skipped)
#   BENCH_BLS_SIZES  the bls12381 mulchain sizes (default "10 12 13"; at most 13; "" for none)
#   BENCH_RUNS   runs per prover and size (default 3)
#   PROVER_CMD   cuzk's command (default "$BUILD/bin/cuzk prove-local"), called as
#                $PROVER_CMD ZKEY WTNS PROOF PUBLIC
#   RAPIDSNARK   path of an external rapidsnark `prover` binary (iden3/rapidsnark,
#                built outside this repository; not built or shipped here): adds
#                its column here, in bench/pipeline.sh, inputjson.sh and backlog.sh
#   NLOHMANN_JSON_INCLUDE  a directory with nlohmann/json.hpp for circom's witness
#                binary (bench/native.sh), when the compiler does not find it
set -euo pipefail

# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" run
BENCH_SIZES="${BENCH_SIZES:-12 14 16 18}"
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

# ---- (b) prove: cuzk vs rapidsnark vs snarkjs ----------------------------------
# rows: "curve k", by size, bn128 then bls12381 at the same size (side by side).
# One make.sh call per size, so a size the builder does not support (exit 2: e.g.
# 2^18 before a larger ptau is prepared) or cannot build only drops its own row.
load0="$(cut -d' ' -f1-3 /proc/loadavg)"
rows=()
skipped=()
for c in bn128 bls12381; do
  [ $c = bn128 ] && ks="$BENCH_SIZES" || ks="$BENCH_BLS_SIZES"
  for k in $ks; do
    rc=0
    bash "$ROOT/tests/fixtures/make.sh" -q --curve "$c" --size "$k" >"$tmp/fx.log" 2>&1 || rc=$?
    if [ $rc -eq 0 ]; then
      rows+=("$c $k")
    elif [ $rc -eq 2 ]; then
      skipped+=("$c 2^$k: $(grep -m1 'make.sh:' "$tmp/fx.log" || tail -n 1 "$tmp/fx.log")")
    else
      skipped+=("$c 2^$k: fixture build failed: $(tail -n 3 "$tmp/fx.log" | tr '\n' ' ')")
      failures+=("fixture $c 2^$k")
    fi
  done
done
[ ${#rows[@]} -eq 0 ] || mapfile -t rows < <(printf '%s\n' "${rows[@]}" | sort -s -k2,2n)
echo "== prove (mulchain, bn128 and bls12381; median of $BENCH_RUNS, interleaved)"
[ $cuzk_ok -eq 1 ] || echo "(cuzk is not built: $BUILD/bin/cuzk; its column is empty)"
[ -n "$RAPIDSNARK" ] || echo "(RAPIDSNARK is not set: no rapidsnark column; set it to an iden3/rapidsnark prover binary)"
for sk in "${skipped[@]}"; do echo "skipped: $sk"; done

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
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (a=="-" || b=="-" || b+0==0) print "-"; else printf "%.2f", a/b }'; }
# verified NAME VKEY PUBLIC PROOF: appends to note unless snarkjs accepts the proof
verified() {
  [ -f "$4" ] || return 0
  "$SNARKJS" groth16 verify "$2" "$3" "$4" 2>&1 | grep -q OK || note="$note $1's proof does NOT verify"
}

hdr="$(printf '%-9s %-6s %9s %8s %9s %12s %10s %11s %12s' curve size constraints domain \
  "cuzk s" "rapidsnark s" "snarkjs s" "cuzk/rapid" "cuzk/snarkjs")"
echo "$hdr"
for row in "${rows[@]}"; do
  c="${row% *}"; k="${row#* }"
  d="$FIXTURES/$c/mulchain-$k"
  zkey="$d/circuit_final.zkey"; wtns="$d/witness.wtns"
  nc="$(sed -n 's/.*constraints=\([0-9]*\).*/\1/p' "$d/info.txt")"
  dom="$(sed -n 's/.*domain=\([0-9]*\).*/\1/p' "$d/info.txt")"
  tc=(); ts=(); tr=(); note=""
  rm -f "$tmp"/proof_*.json
  rs=""   # rapidsnark proves bn128 only
  [ -z "$RAPIDSNARK" ] || [ "$c" != bn128 ] || rs="$RAPIDSNARK"
  for _ in $(seq "$BENCH_RUNS"); do
    if [ $cuzk_ok -eq 1 ]; then
      t="$(secs "${PROVER[@]}" "$zkey" "$wtns" "$tmp/proof_c.json" "$tmp/public_c.json")"
      [ "$t" != fail ] || note="$note cuzk failed: $(head -c 200 "$tmp/out" | tr '\n' ' ')"
      tc+=("$t")
    fi
    if [ -n "$rs" ]; then
      t="$(secs "$rs" "$zkey" "$wtns" "$tmp/proof_r.json" "$tmp/public_r.json")"
      [ "$t" != fail ] || note="$note rapidsnark failed: $(head -c 200 "$tmp/out" | tr '\n' ' ')"
      tr+=("$t")
    fi
    ts+=("$(secs "$SNARKJS" groth16 prove "$zkey" "$wtns" "$tmp/proof_s.json" "$tmp/public_s.json")")
  done
  verified cuzk "$d/verification_key.json" "$tmp/public_c.json" "$tmp/proof_c.json"
  verified rapidsnark "$d/verification_key.json" "$tmp/public_r.json" "$tmp/proof_r.json"
  mc="$( [ ${#tc[@]} -gt 0 ] && median "${tc[@]}" || echo -)"
  mr="$( [ ${#tr[@]} -gt 0 ] && median "${tr[@]}" || echo -)"
  ms="$(median "${ts[@]}")"
  line="$(printf '%-9s %-6s %9s %8s %9s %12s %10s %11s %12s' "$c" "2^$k" "$nc" "$dom" \
    "$mc" "$mr" "$ms" "$(ratio "$mc" "$mr")" "$(ratio "$mc" "$ms")")"
  echo "$line${note:+  !$note}"
  [ -z "$note" ] || failures+=("prove $c 2^$k")
done
echo "(cuzk/X = cuzk's time / X's time: below 1, cuzk is faster; issue 9 target: cuzk/rapid <= 0.50"
echo " at 2^16 and 2^18; wall times include process start and file loading; $(nproc) CPUs;"
echo " load average before: $load0; after: $(cut -d' ' -f1-3 /proc/loadavg))"
echo

# ---- (c) msm_ntt, then any other bench binary --------------------------------
if [ -x "$BUILD/bench/msm_ntt" ]; then run_bin "$BUILD/bench/msm_ntt"; fi
for b in "$BUILD"/bench/*; do
  case "$(basename "$b")" in ring|msm_ntt|stats_dump|*.o|*.d) continue ;; esac
  if [ -f "$b" ] && [ -x "$b" ]; then run_bin "$b"; fi
done

# bench_script NAME: bench/NAME.sh, unless BENCH_NAME (upper case) is 0; a failure is
# counted under NAME.
bench_script() {
  local var="BENCH_${1^^}" rc=0
  [ "${!var:-1}" != 0 ] || return 0
  BUILD="$BUILD" bash "$ROOT/bench/$1.sh" || rc=$?
  [ $rc -eq 0 ] || failures+=("$1")
  echo
}

# ---- (d) pipeline under backlog ---------------------------------------------------
bench_script pipeline

# ---- (e) job store overhead ------------------------------------------------------------
bench_script store

# ---- (e2) fleet on one PostgreSQL (issue 17) ------------------------------------------
bench_script fleet

# ---- (f) end to end from input.json (issue 19) -------------------------------------
bench_script inputjson

# ---- (f2) a daemon backlog of input.json partitions (issue 19) -----------------------
bench_script backlog

# ---- (g) prove-local --threads 1..nproc (issue 21 item 4) ---------------------------
bench_script threads

# ---- (h) BLS12-381 / BN254 CPU time at the same size (issue 21) ----------------------
if [ "${BENCH_CURVES:-1}" != 0 ]; then
  rc=0
  BUILD="$BUILD" bash "$ROOT/bench/curves.sh" || rc=$?
  [ $rc -eq 0 ] || failures+=("curves")
  echo
fi

if [ ${#failures[@]} -gt 0 ]; then
  echo "bench: failures: ${failures[*]}"
  exit 1
fi
