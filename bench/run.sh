#!/usr/bin/env bash
# What `make bench` runs:
#   (a) $BUILD/bench/ring, if built;
#   (b) bench/prove.sh: one table, side by side in one run, of cuzk prove-local,
#       rapidsnark (when RAPIDSNARK is set; bn128 only) and snarkjs groth16 prove on
#       the mulchain fixtures (bn128 BENCH_SIZES, bls12381 BENCH_BLS_SIZES; made and
#       cached by tests/fixtures/make.sh, a size it does not build is skipped with a
#       note): wall, CPU and peak RSS of each process, median of BENCH_RUNS
#       interleaved runs, ratios cuzk/rapidsnark, cuzk/snarkjs and cuzk BLS/BN at the
#       same size; then the real-shaped circuits (BENCH_REAL: circomlib Merkle paths,
#       EdDSA checks, SHA-256, 2^13-2^17) with each witness's shape; every proof is
#       verified by snarkjs before its time counts; BENCH_PROVE=0 skips it;
#   (c) $BUILD/bench/msm_ntt, if built, then any other binary in $BUILD/bench/
#       (stats_dump is a tool of (d), rusage and wtns_shape of (b), mulchain_gen the fixture
#       builder's, not benchmarks);
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
#   (f3) bench/api.sh: the HTTP API (cuzk-api) on mulchain 2^10 and 2^14 input.json:
#       proofs/s of BENCH_API_CLIENTS clients against `cuzk prove --circuit` on the
#       same daemon, latency p50/p99 against prove-local --witness-gen, cuzk-api's RSS
#       with 1,000 idle connections; skipped when cuzk-api is not built; BENCH_API=0
#       skips it;
#   (g) bench/threads.sh: prove-local --threads 1..nproc on mulchain 2^14 and 2^16,
#       wall, CPU, speedup and threads created per proof; BENCH_THREADS=0 skips it;
#   (h) bench/curves.sh: CPU seconds of BLS12-381 against BN254 proofs at the same size
#       (mulchain 2^13; CURVES_SIZES), every proof checked by snarkjs; BENCH_CURVES=0
#       skips it.
#
# Environment:
#   BUILD        build dir (default build)
#   BENCH_SIZES  the bn128 mulchain sizes as powers of two (default "12 14 16 18";
#                20 and 22 when asked; sizes tests/fixtures/make.sh does not build are
#                skipped); BENCH_BLS_SIZES (default "10 12 13"), BENCH_RUNS (3),
#                BENCH_RUNS_LARGE, BENCH_SNARKJS_MAX, PROVER_CMD: bench/prove.sh
#   RAPIDSNARK   path of an external rapidsnark `prover` binary (iden3/rapidsnark,
#                built outside this repository; not built or shipped here): adds
#                its column here, in bench/pipeline.sh, inputjson.sh and backlog.sh
#   NLOHMANN_JSON_INCLUDE  a directory with nlohmann/json.hpp for circom's witness
#                binary (bench/native.sh), when the compiler does not find it
set -euo pipefail

# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" run
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
failures=()

run_bin() { # path
  local b="$1" rc=0
  echo "== $(basename "$b")"
  "$b" || rc=$?
  if [ $rc -ne 0 ]; then
    echo "bench: $(basename "$b") failed (exit $rc)"
    failures+=("$(basename "$b")")
  fi
  echo
}

# ---- (a) ring ----------------------------------------------------------------
if [ -x "$BUILD/bench/ring" ]; then run_bin "$BUILD/bench/ring"; fi

# bench_script NAME: bench/NAME.sh, unless BENCH_NAME (upper case, '-' as '_': e.g.
# BENCH_SASS_COUNT) is 0; a failure is counted under NAME.
bench_script() {
  local var="BENCH_${1^^}" rc=0
  var="${var//-/_}"
  [ "${!var:-1}" != 0 ] || return 0
  BUILD="$BUILD" bash "$ROOT/bench/$1.sh" || rc=$?
  [ $rc -eq 0 ] || failures+=("$1")
  echo
}

# ---- (b) prove: cuzk vs rapidsnark vs snarkjs, one table (bench/prove.sh) ------------
bench_script prove

# ---- (c) msm_ntt, then any other bench binary --------------------------------
if [ -x "$BUILD/bench/msm_ntt" ]; then run_bin "$BUILD/bench/msm_ntt"; fi
for b in "$BUILD"/bench/*; do
  case "$(basename "$b")" in ring | msm_ntt | stats_dump | rusage | wtns_shape | mulchain_gen | *.o | *.d) continue ;; esac
  if [ -f "$b" ] && [ -x "$b" ]; then run_bin "$b"; fi
done

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

# ---- (f3) the HTTP API against the CLI on the same daemon ----------------------------
bench_script api

# ---- (g) prove-local --threads 1..nproc (issue 21 item 4) ---------------------------
bench_script threads

# ---- (h) BLS12-381 / BN254 CPU time at the same size (issue 21) ----------------------
if [ "${BENCH_CURVES:-1}" != 0 ]; then
  rc=0
  BUILD="$BUILD" bash "$ROOT/bench/curves.sh" || rc=$?
  [ $rc -eq 0 ] || failures+=("curves")
  echo
fi

# ---- (i) SASS instructions per Fp/Fq2 product and point addition on sm_90 (nvcc only;
# no GPU needed; bench/sass-count.sh; BENCH_SASS_COUNT=0 leaves it out) ---------------
bench_script sass-count

if [ ${#failures[@]} -gt 0 ]; then
  echo "bench: failures: ${failures[*]}"
  exit 1
fi
