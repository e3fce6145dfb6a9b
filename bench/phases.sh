#!/usr/bin/env bash
# bench/phases.sh — where one `cuzk prove-local` spends its CPU, by phase: `--timings`
# (each step's process CPU, all threads, user + sys) on bn128/mulchain-K or a
# real-shaped circuit, the median of the runs per phase in milliseconds: process
# start (the CPU spent before main: exec, the dynamic loader, constructors), reading
# the zkey and witness (read: header and sections mapped and checked), synthesis
# (matvec), the NTTs (with h), each MSM (A, B1, B2 on G2, C, H), blinding, the
# self-verify's pairing check, writing the two outputs (write; with PHASES_SYNC=1 the
# durable form, --sync, whose cost is mostly waiting, so see the wall), and exit (the
# process's CPU from wait4, bench/rusage, less what it counted itself); then the
# process's CPU and wall. CPU, not wall: on a loaded machine the wall stretches with
# the waits for a core. Every proof is verified by snarkjs. Not run by `make bench`.
# Environment: BUILD (default build), PHASES_SIZES ("16 18"; a name such as merkle-13
# is a real-shaped circuit of tests/fixtures/make.sh --real), PHASES_RUNS (5),
# PHASES_THREADS (--threads, default 2), PHASES_SYNC (1: --sync), PHASES_CURVE (bn128).
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" phases
bench_need bin/cuzk bench/rusage
RUNS="${PHASES_RUNS:-5}"
THREADS="${PHASES_THREADS:-2}"
CURVE="${PHASES_CURVE:-bn128}"
SYNC=()
[ "${PHASES_SYNC:-0}" = 1 ] && SYNC=(--sync)
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

cols="start read matvec ntt A B1 B2 C H blind verify write exit cpu wall"
echo "== prove-local --threads $THREADS ${SYNC[*]} CPU by phase, $CURVE (median of $RUNS, ms; load $(cut -d' ' -f1-3 /proc/loadavg))"
printf '%-12s' circuit
for c in $cols; do printf ' %7s' "$c"; done
printf '\n'
for K in ${PHASES_SIZES:-16 18}; do
  bench_fixture "$CURVE" "$K"
  name="mulchain-$K"
  case "$K" in *-*) name="$K" ;; esac
  d="$FIXTURES/$CURVE/$name"
  : >"$tmp/all"
  for ((r = 0; r < RUNS; r++)); do
    "$BUILD/bench/rusage" "$tmp/ru" "$CUZK" prove-local --threads "$THREADS" --timings "${SYNC[@]}" \
      "$d/circuit_final.zkey" "$d/witness.wtns" "$tmp/p.json" "$tmp/pub.json" 2>"$tmp/t"
    "$SNARKJS" groth16 verify "$d/verification_key.json" "$tmp/pub.json" "$tmp/p.json" | grep -q OK ||
      {
        echo "bench/phases: snarkjs rejects the proof of $name"
        exit 1
      }
    rm -f "$tmp/p.json" "$tmp/pub.json" # new files each run, as a service writes them
    # one line per run, the columns of $cols in ms: each step's CPU (the last field)
    awk -v ru="$(cat "$tmp/ru")" '
      /^timings/ { next }
      $1 == "start" { v["start"] = $NF; next }
      NF >= 3 { v[$1 == "msm" ? $2 : $1] = $NF }
      END {
        split(ru, r, " "); cpu = r[2] + r[3]
        read = ("read+check" in v) ? v["read+check"] : v["read+witness"]
        printf "%.2f %.2f %.2f %.2f %.2f %.2f %.2f %.2f %.2f %.2f %.2f %.2f %.2f %.2f %.2f\n",
          1000 * v["start"], 1000 * read, 1000 * v["matvec"], 1000 * v["ntt"],
          1000 * v["A"], 1000 * v["B1"], 1000 * v["B2"], 1000 * v["C"], 1000 * v["H"],
          1000 * v["blind"], 1000 * v["verify"], 1000 * v["write"],
          1000 * (cpu - v["start"] - v["total"]), 1000 * cpu, 1000 * r[1]
      }' "$tmp/t" >>"$tmp/all"
  done
  awk -v name="$name" '
    { for (i = 1; i <= NF; i++) col[i, NR] = $i; nf = NF }
    function med(i,   n, a, j, k, t) {
      n = NR; for (j = 1; j <= n; j++) a[j] = col[i, j]
      for (j = 2; j <= n; j++) { t = a[j]; for (k = j - 1; k >= 1 && a[k] > t; k--) a[k + 1] = a[k]; a[k + 1] = t }
      return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    END {
      printf "%-12s", name
      for (i = 1; i <= nf; i++) printf " %7.1f", med(i)
      printf "\n"
    }' "$tmp/all"
done
echo "(load after: $(cut -d' ' -f1-3 /proc/loadavg))"
