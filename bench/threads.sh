#!/usr/bin/env bash
# bench/threads.sh — `cuzk prove-local --threads N` for N = 1..nproc (issue 21 item 4);
# run by bench/run.sh, or alone.
#
# On bn128/mulchain-K for each K of BENCH_THREADS_SIZES (default "14 16"), median of
# BENCH_RUNS (3) runs, interleaved N by N: wall and CPU (user + sys) seconds and the
# speedup wall(1) / wall(N), side by side in one run. Every proof is checked by snarkjs
# before its time counts. With strace installed, also the threads one proof creates
# (the MSM and NTT start theirs per call today: (N - 1) per parallel phase).
# Environment: BUILD (default build), BENCH_THREADS_SIZES ("14 16"), BENCH_RUNS (3).
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" threads
RUNS="${BENCH_RUNS:-3}"
NP="$(nproc)"
bench_need bin/cuzk
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END{ if (NR%2) print v[(NR+1)/2]; else printf "%.3f", (v[NR/2]+v[NR/2+1])/2 }'; }

echo "prove-local --threads N (median of $RUNS, interleaved; machine: $NP CPUs, load $(cut -d' ' -f1-3 /proc/loadavg))"
printf '%-12s %4s %8s %8s %8s %8s\n' circuit N wall_s cpu_s speedup threads
for K in ${BENCH_THREADS_SIZES:-14 16}; do
  bash "$MAKE_FIXTURES" -q --curve bn128 --size "$K" >/dev/null
  d="$FIXTURES/bn128/mulchain-$K"
  declare -A W=() C=()
  for ((r = 0; r < RUNS; r++)); do
    for ((n = 1; n <= NP; n++)); do
      rm -f "$tmp/p.json" "$tmp/pub.json"
      /usr/bin/time -f "%e %U %S" -o "$tmp/t" "$CUZK" prove-local --threads "$n" "$d/circuit_final.zkey" \
        "$d/witness.wtns" "$tmp/p.json" "$tmp/pub.json"
      "$SNARKJS" groth16 verify "$d/verification_key.json" "$tmp/pub.json" "$tmp/p.json" | grep -q OK ||
        {
          echo "bench/threads: snarkjs rejects the proof of mulchain-$K at --threads $n"
          exit 1
        }
      read -r w u s <"$tmp/t"
      W[$n]+="$w "
      C[$n]+="$(awk -v u="$u" -v s="$s" 'BEGIN{printf "%.2f", u + s}') "
    done
  done
  # shellcheck disable=SC2086
  w1="$(median ${W[1]})"
  for ((n = 1; n <= NP; n++)); do
    nt=-
    if command -v strace >/dev/null 2>&1; then
      strace -f -qq -e trace=clone,clone3 -o "$tmp/st" "$CUZK" prove-local --threads "$n" \
        "$d/circuit_final.zkey" "$d/witness.wtns" "$tmp/p.json" "$tmp/pub.json" && nt="$(grep -c -E 'clone3?\(' "$tmp/st" || true)"
    fi
    # shellcheck disable=SC2086 # the samples are words
    w="$(median ${W[$n]})"
    # shellcheck disable=SC2086
    c="$(median ${C[$n]})"
    printf '%-12s %4d %8s %8s %8s %8s\n' "mulchain-$K" "$n" "$w" "$c" "$(awk -v a="$w1" -v b="$w" 'BEGIN{printf "%.2f", a / b}')" "$nt"
  done
  unset W C
done
