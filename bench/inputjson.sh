#!/usr/bin/env bash
# bench/inputjson.sh — end to end from input.json to a verified proof (issue 19,
# "Benchmarks"); run by bench/run.sh, or alone.
#
# On bn128/mulchain-BENCH_IJ_SIZE (default 16) and bn128/poseidon (the fixture's
# Poseidon chain), median of BENCH_RUNS (3) wall times, interleaved run by run:
#   cuzk prove-local --witness-gen  (circom's C++ witness code in a .wgen, then prove)
#   snarkjs groth16 fullprove        (wasm witness, then snarkjs's prover)
#   witness binary + rapidsnark      (circom's C++ witness binary through a .wtns,
#                                     then rapidsnark's prover: bench/native.sh; only
#                                     when RAPIDSNARK and nlohmann/json.hpp are there,
#                                     else "-" and a line saying why)
# and the witness alone: cuzk witness vs snarkjs wtns calculate. Every proof is
# checked by snarkjs. Wall times include process start and file loading. The daemon
# backlog of input.json partitions is bench/backlog.sh.
# Environment: BUILD (default build), BENCH_IJ_SIZE (16), BENCH_RUNS (3),
#   RAPIDSNARK, NLOHMANN_JSON_INCLUDE (bench/native.sh).
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" inputjson
K="${BENCH_IJ_SIZE:-16}"
RUNS="${BENCH_RUNS:-3}"
bench_need bin/cuzk
for t in g++ nasm; do
  command -v "$t" >/dev/null || {
    echo "bench/inputjson: $t not installed: skipped"
    exit 0
  }
done
bash "$ROOT/tests/fixtures/make.sh" -q --curve bn128 --size "$K" >/dev/null
bash "$ROOT/tests/fixtures/make.sh" -q --curve bn128 --only poseidon >/dev/null
# shellcheck source=../tests/lib/wgen.sh
. "$ROOT/tests/lib/wgen.sh"
# shellcheck source=native.sh
. "$ROOT/bench/native.sh"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
native_init

median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END{ if (NR==0) print "-"; else if (NR%2) print v[(NR+1)/2]; else printf "%.3f", (v[NR/2]+v[NR/2+1])/2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (a=="-" || b=="-" || b+0==0) print "-"; else printf "%.3f", a/b }'; }
secs() { # command... -> wall seconds on stdout; the command's output to $tmp/out
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >"$tmp/out" 2>&1 || {
    echo "bench/inputjson: failed: $* ($(tail -3 "$tmp/out"))" >&2
    return 1
  }
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b-a}'
}
verify() { # vkey public proof
  "$SNARKJS" groth16 verify "$1" "$2" "$3" 2>&1 | grep -q OK || {
    echo "bench/inputjson: snarkjs rejects $3" >&2
    exit 1
  }
}

load0="$(cut -d' ' -f1-3 /proc/loadavg)"
echo "end to end from input.json (median of $RUNS, seconds; cuzk/X below 1: cuzk is faster)"
fmt='%-18s %10s %10s %8s %11s %8s %12s %12s %8s\n'
# shellcheck disable=SC2059
printf "$fmt" fixture "cuzk e2e" fullprove cuzk/fp "wbin+rapid" cuzk/wr "cuzk witness" "snarkjs wtns" cuzk/sj
for d in "$FIXTURES/bn128/mulchain-$K" "$FIXTURES/bn128/poseidon"; do
  g="$(wgen_for "$d")"
  ce=() fp=() cw=() sw=() nr=()
  [ "$NATIVE" = 0 ] || wb="$(native_witness_bin "$d")"
  for r in $(seq 1 "$RUNS"); do
    ce+=("$(secs "$CUZK" prove-local --witness-gen "$g" "$d/circuit_final.zkey" "$d/input.json" "$tmp/c.proof.json" "$tmp/c.public.json")")
    verify "$d/verification_key.json" "$tmp/c.public.json" "$tmp/c.proof.json"
    fp+=("$(secs "$SNARKJS" groth16 fullprove "$d/input.json" "$d/circuit_js/circuit.wasm" "$d/circuit_final.zkey" "$tmp/s.proof.json" "$tmp/s.public.json")")
    [ "$r" -gt 1 ] || verify "$d/verification_key.json" "$tmp/s.public.json" "$tmp/s.proof.json"
    if [ "$NATIVE" = 1 ]; then
      nr+=("$(secs native_prove "$wb" "$d/circuit_final.zkey" "$d/input.json" "$tmp/n.proof.json" "$tmp/n.public.json")")
      [ "$r" -gt 1 ] || verify "$d/verification_key.json" "$tmp/n.public.json" "$tmp/n.proof.json"
    fi
    cw+=("$(secs "$CUZK" witness --witness-gen "$g" "$d/input.json" "$tmp/c.wtns")")
    sw+=("$(secs "$SNARKJS" wtns calculate "$d/circuit_js/circuit.wasm" "$d/input.json" "$tmp/s.wtns")")
    cmp -s "$tmp/c.wtns" "$tmp/s.wtns" || {
      echo "bench/inputjson: witnesses differ on $d" >&2
      exit 1
    }
  done
  a="$(median "${ce[@]}")" b="$(median "${fp[@]}")" c="$(median "${cw[@]}")" e="$(median "${sw[@]}")"
  n=-
  [ ${#nr[@]} -eq 0 ] || n="$(median "${nr[@]}")"
  # shellcheck disable=SC2059
  printf "$fmt" "${d#"$FIXTURES"/bn128/}" "$a" "$b" "$(ratio "$a" "$b")" "$n" "$(ratio "$a" "$n")" "$c" "$e" "$(ratio "$c" "$e")"
done
[ "$NATIVE" = 1 ] || echo "(wbin+rapid, circom's witness binary + rapidsnark: skipped: $NATIVE_WHY)"
echo "($(nproc) CPUs; load average before: $load0; after: $(cut -d' ' -f1-3 /proc/loadavg))"
