#!/usr/bin/env bash
# bench/phases.sh — where one `cuzk prove-local` spends its time, by phase (issue 21's
# profile of a missed goal): `--timings` on bn128/mulchain-K, median of the runs per
# phase, as seconds and shares of the process's wall time: the G1 MSMs (A, B1, C, H),
# the G2 MSM (B2), the NTTs (with h), file loading (read+check), and the rest (matvec,
# blinding, the proof's pairing check, writing, process start and exit). The phases
# run one after another, so the shares are of wall time; on a loaded machine they
# stretch alike. Every proof is verified by snarkjs. Not run by `make bench`.
# Environment: BUILD (default build), PHASES_SIZES ("16 18"; a name such as merkle-13
# is a real-shaped circuit of tests/fixtures/make.sh --real), PHASES_RUNS (5),
# PHASES_THREADS (--threads, default 2).
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" phases
bench_need bin/cuzk bench/rusage
RUNS="${PHASES_RUNS:-5}"
THREADS="${PHASES_THREADS:-2}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

echo "== prove-local --threads $THREADS by phase (median of $RUNS; s and share of wall; load $(cut -d' ' -f1-3 /proc/loadavg))"
printf '%-12s %7s %6s %14s %14s %14s %14s %14s\n' circuit wall cpu "G1 MSMs" "G2 MSM" "NTT+h" "load files" other
for K in ${PHASES_SIZES:-16 18}; do
  bench_fixture bn128 "$K"
  name="mulchain-$K"
  case "$K" in *-*) name="$K" ;; esac
  d="$FIXTURES/bn128/$name"
  : >"$tmp/all"
  for ((r = 0; r < RUNS; r++)); do
    "$BUILD/bench/rusage" "$tmp/ru" "$CUZK" prove-local --threads "$THREADS" --timings \
      "$d/circuit_final.zkey" "$d/witness.wtns" "$tmp/p.json" "$tmp/pub.json" 2>"$tmp/t"
    "$SNARKJS" groth16 verify "$d/verification_key.json" "$tmp/pub.json" "$tmp/p.json" | grep -q OK ||
      { echo "bench/phases: snarkjs rejects the proof of $name"; exit 1; }
    # one line per run: wall cpu g1 g2 ntt load other
    awk -v ru="$(cat "$tmp/ru")" '
      NF >= 3 { v[$1 == "msm" ? $1 " " $2 : $1] = $(NF - 1) }
      END {
        split(ru, r, " "); wall = r[1]; cpu = r[2] + r[3]
        g1 = v["msm A"] + v["msm B1"] + v["msm C"] + v["msm H"]
        printf "%s %s %s %s %s %s %s\n", wall, cpu, g1, v["msm B2"], v["ntt"], v["read+check"],
          wall - g1 - v["msm B2"] - v["ntt"] - v["read+check"]
      }' "$tmp/t" >>"$tmp/all"
  done
  awk -v name="$name" '
    { for (i = 1; i <= 7; i++) col[i, NR] = $i }
    function med(i,   n, a, j, k, t) {
      n = NR; for (j = 1; j <= n; j++) a[j] = col[i, j]
      for (j = 2; j <= n; j++) { t = a[j]; for (k = j - 1; k >= 1 && a[k] > t; k--) a[k + 1] = a[k]; a[k + 1] = t }
      return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    END {
      w = med(1); printf "%-12s %7.3f %6.2f", name, w, med(2)
      for (i = 3; i <= 7; i++) printf " %7.3f %4.1f%% ", med(i), 100 * med(i) / w
      printf "\n"
    }' "$tmp/all"
done
echo "(load after: $(cut -d' ' -f1-3 /proc/loadavg))"
