#!/usr/bin/env bash
# bench/prove.sh — the prove table of `make bench` (bench/run.sh part (b); issue 21
# item 5), or alone: one row per curve and mulchain size, side by side in one run,
# cuzk prove-local, rapidsnark (bn128 only; when RAPIDSNARK is set) and snarkjs groth16
# prove, each with wall, CPU (user + sys) seconds and peak RSS (MiB) of its process
# (bench/rusage: wait4), the median of the runs, the provers interleaved run by run.
# Every proof of every run is verified by snarkjs before its time counts (a rejected
# proof is reported and fails the bench). Ratios: cuzk / rapidsnark (wall, CPU, RSS),
# cuzk / snarkjs (wall), and on bls12381 rows cuzk BLS / cuzk BN254 at the same size
# (wall, CPU: cuzk bn128 proves that size in the same interleaved runs). Below 1, cuzk
# is faster or smaller. Wall times include process start, file loading and cuzk's
# own pairing check of its proof (rapidsnark and snarkjs check nothing).
#
# Environment:
#   BUILD             build dir (default build)
#   BENCH_SIZES       bn128 mulchain sizes, powers of two (default "12 14 16 18"; 20
#                     and 22 when asked; a size tests/fixtures/make.sh does not build
#                     is skipped with a note; above 2^16 the key is cuzk test-setup's,
#                     above 2^18 the circuit and witness bench/mulchain_gen's: the
#                     first use of 2^20 builds its fixture in about a minute, 2^22 in
#                     about 5 (2.3 GB key), on 2 CPUs)
#   BENCH_BLS_SIZES   bls12381 sizes (default "10 12 13"; "" for none)
#   BENCH_RUNS        runs per prover and size (default 3)
#   BENCH_RUNS_LARGE  runs at 2^22 and above (default 3; at most BENCH_RUNS): one
#                     rapidsnark proof there takes a minute or more on 2 CPUs
#   BENCH_SNARKJS_MAX largest size snarkjs proves (default 18: minutes a proof above;
#                     its proofs are not timed there, but every other prover's proof
#                     is still verified by snarkjs)
#   PROVER_CMD        cuzk's command (default "$BUILD/bin/cuzk prove-local"), called
#                     as $PROVER_CMD ZKEY WTNS PROOF PUBLIC
#   RAPIDSNARK        an iden3/rapidsnark `prover` binary, built outside this tree
#   BENCH_REAL        the real-shaped circuits of the second table (default "merkle-13
#                     eddsa-14 sha256-15 merkle-16 eddsa-17 sha256-17 merkle-18"; "" for none):
#                     circomlib-based, bn128, tests/fixtures/make.sh --real; their
#                     witnesses are mostly bits and small values where a mulchain's are
#                     full-size, and each row gives the witness's shape (bench/wtns_shape:
#                     shares of 0, of 1 and of values below 2^64, 0 and 1 included)
set -euo pipefail

# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" prove
bench_rapidsnark "its column"
read -r -a PROVER <<<"${PROVER_CMD:-$CUZK prove-local}"
[ -n "${PROVER_CMD:-}" ] || bench_need bin/cuzk
BENCH_SIZES="${BENCH_SIZES:-12 14 16 18}"
BENCH_BLS_SIZES="${BENCH_BLS_SIZES-10 12 13}"
BENCH_RUNS="${BENCH_RUNS:-3}"
BENCH_RUNS_LARGE="${BENCH_RUNS_LARGE:-3}"
BENCH_SNARKJS_MAX="${BENCH_SNARKJS_MAX:-18}"
BENCH_REAL="${BENCH_REAL-merkle-13 eddsa-14 sha256-15 merkle-16 eddsa-17 sha256-17 merkle-18}"
# A run count that is not a positive integer would leave every median empty ("-") and
# read as if the provers had failed; a size limit that is not a number stops the bench
# midway, at the first `[ -le ]`.
for v in BENCH_RUNS BENCH_RUNS_LARGE; do
  if ! [[ "${!v}" =~ ^[0-9]+$ ]] || [ "${!v}" -lt 1 ]; then
    echo "bench/prove: $v=${!v} is not a positive integer" >&2
    exit 2
  fi
done
[[ "$BENCH_SNARKJS_MAX" =~ ^[0-9]+$ ]] || {
  echo "bench/prove: BENCH_SNARKJS_MAX=$BENCH_SNARKJS_MAX is not a number (the largest size, as a power of two, snarkjs proves)" >&2
  exit 2
}
# what a row at 2^22 and above runs: BENCH_RUNS_LARGE, never more than BENCH_RUNS
runs_large="$BENCH_RUNS_LARGE"
[ "$runs_large" -le "$BENCH_RUNS" ] || runs_large="$BENCH_RUNS"
# Per-process wall, CPU and peak RSS: bench/rusage (built by make bench), else GNU time.
if [ -x "$BUILD/bench/rusage" ]; then
  timed() { "$BUILD/bench/rusage" "$tmp/ru" "$@"; }
elif [ -x /usr/bin/time ]; then
  timed() { /usr/bin/time -f "%e %U %S %M" -o "$tmp/ru" "$@"; }
else
  echo "bench/prove: neither $BUILD/bench/rusage (make bench) nor GNU time (/usr/bin/time)"
  exit 1
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail=0
load() { cut -d' ' -f1 /proc/loadavg; }
# the load column: the 1-minute average at the row's start and at its end (a row at
# 2^22 runs for minutes, and the others' load can change in that time)
loads() { echo "$1-$(load)"; }

# ---- fixtures: one make.sh call per size, so a size it cannot build drops its row ----
fixture() { # curve k|name -> 0 when the fixture is there; else a note in skipped
  local rc=0 what="$1 2^$2"
  case "$2" in *-*) what="$1 $2" ;; esac
  BENCH_FXLOG="$tmp/fx.log" bench_fixture "$1" "$2" || rc=$?
  [ $rc -ne 0 ] || return 0
  if [ $rc -eq 2 ]; then
    skipped+=("$what: $(grep -m1 'make.sh:' "$tmp/fx.log" || tail -n 1 "$tmp/fx.log")")
  else
    skipped+=("$what: fixture build failed: $(tail -n 3 "$tmp/fx.log" | tr '\n' ' ')")
    fail=1
  fi
  return 1
}
rows=()
skipped=()
for k in $BENCH_SIZES; do fixture bn128 "$k" && rows+=("bn128 $k"); done
for k in $BENCH_BLS_SIZES; do
  # the BLS/BN ratio needs bn128 at the same size
  fixture bls12381 "$k" && fixture bn128 "$k" && rows+=("bls12381 $k")
done
real_rows=()
for n in $BENCH_REAL; do fixture bn128 "$n" && real_rows+=("$n"); done

# ---- one measured run ---------------------------------------------------------------
# run_one KEY DIR CMD...: runs CMD (which writes $tmp/proof.json, $tmp/public.json),
# has snarkjs verify the proof under DIR's key, and appends "wall cpu rss_MiB" to
# M[KEY]; a failure or a rejected proof goes into note.
declare -A M=()
run_one() {
  local key="$1" d="$2" rc=0
  shift 2
  rm -f "$tmp/proof.json" "$tmp/public.json" "$tmp/ru"
  timed "$@" >"$tmp/out" 2>&1 || rc=$?
  if [ $rc -ne 0 ]; then
    note="$note $key failed (exit $rc): $(tail -c 200 "$tmp/out" | tr '\n' ' ')"
    return
  fi
  if ! "$SNARKJS" groth16 verify "$d/verification_key.json" \
    "$tmp/public.json" "$tmp/proof.json" 2>&1 | grep -q OK; then
    note="$note $key's proof does NOT verify (snarkjs)"
    return
  fi
  M[$key]+="$(awk '{printf "%s,%.3f,%.1f", $1, $2 + $3, $4 / 1024}' "$tmp/ru") "
}
# med KEY FIELD (1 wall, 2 cpu, 3 rss) -> the median, or "-"
med() {
  [ -n "${M[$1]:-}" ] || {
    echo -
    return
  }
  # shellcheck disable=SC2086  # the list is words
  printf '%s\n' ${M[$1]:-} | cut -d, -f"$2" | sort -g |
    awk '{v[NR]=$1} END{ if (NR==0) print "-"; else if (NR%2) print v[(NR+1)/2]; else printf "%.3f", (v[NR/2]+v[NR/2+1])/2 }'
}
# medians: the row's medians of M into cw cc cr (cuzk wall, CPU, RSS), rw rcpu rr
# (rapidsnark) and sw sc sr (snarkjs)
medians() {
  cw="$(med cuzk 1)" cc="$(med cuzk 2)" cr="$(med cuzk 3)"
  rw="$(med rapidsnark 1)" rcpu="$(med rapidsnark 2)" rr="$(med rapidsnark 3)"
  sw="$(med snarkjs 1)" sc="$(med snarkjs 2)" sr="$(med snarkjs 3)"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (a=="-" || b=="-" || b+0==0) print "-"; else printf "%.2f", a/b }'; }
# fmt VALUE DECIMALS: VALUE with DECIMALS places, fewer where that would not fit the
# 6-character columns (a rapidsnark proof at 2^18 on a loaded machine, or at 2^20 and
# 2^22, takes 100 s and more: 110.076 pushed the rest of its row out of line)
fmt() {
  awk -v v="$1" -v p="$2" 'BEGIN{
    if (v == "-") { print "-"; exit }
    s = sprintf("%." p "f", v)
    while (length(s) > 6 && p > 0) s = sprintf("%." --p "f", v)
    print s
  }'
}

# prove_all CURVE K DIR: one run of each prover on DIR's zkey and witness (rapidsnark on
# bn128 only, snarkjs up to BENCH_SNARKJS_MAX)
prove_all() {
  local c="$1" k="$2" d="$3"
  run_one cuzk "$d" "${PROVER[@]}" "$d/circuit_final.zkey" "$d/witness.wtns" "$tmp/proof.json" "$tmp/public.json"
  if [ "$c" = bn128 ] && [ -n "$RAPIDSNARK" ]; then
    run_one rapidsnark "$d" "$RAPIDSNARK" "$d/circuit_final.zkey" "$d/witness.wtns" "$tmp/proof.json" "$tmp/public.json"
  fi
  if [ "$k" -le "$BENCH_SNARKJS_MAX" ]; then
    run_one snarkjs "$d" "$SNARKJS" groth16 prove "$d/circuit_final.zkey" "$d/witness.wtns" "$tmp/proof.json" "$tmp/public.json"
  fi
}

# nlogn_fit: how the bn128 rows' times grow against n log n (n = 2^k constraints), the
# cost a prover's NTTs and MSMs have: t = a * n * log2(n) fitted by least squares through
# the origin (each point weighted by its own size, so the large rows decide), then each
# row's measured time over the fit. A ratio that rises with k says something grows faster
# than n log n (memory traffic, a table that stops fitting a cache); one that falls, that a
# fixed cost still weighs on the small rows.
fit=()
nlogn_fit() {
  [ ${#fit[@]} -ge 2 ] || return 0
  echo "-- bn128 mulchain against n log n (t = a * n * log2 n, least squares; each row: measured / fitted)"
  printf '%s\n' "${fit[@]}" | awk '
    function x(k) { return 2^k * k }
    { k[NR] = $1; t[1, NR] = $2; t[2, NR] = $3; t[3, NR] = $4; t[4, NR] = $5 }
    END {
      split("cuzk wall,cuzk CPU,rapidsnark wall,rapidsnark CPU", name, ",")
      for (j = 1; j <= 4; j++) {
        sxy = 0; sxx = 0
        for (i = 1; i <= NR; i++) if (t[j, i] != "-") { sxy += x(k[i]) * t[j, i]; sxx += x(k[i])^2 }
        if (sxx == 0) continue
        a = sxy / sxx
        line = sprintf("%-17s a = %.3f ns per n log2 n:", name[j], a * 1e9)
        for (i = 1; i <= NR; i++)
          line = line sprintf("  2^%s %s", k[i], t[j, i] == "-" ? "-" : sprintf("%.2f", t[j, i] / (a * x(k[i]))))
        print line
      }
    }'
}

if [ ${#rows[@]} -gt 0 ] || [ ${#real_rows[@]} -eq 0 ]; then
  large=""
  for row in "${rows[@]}"; do [ "${row#* }" -lt 22 ] || [ "$runs_large" -eq "$BENCH_RUNS" ] || large=", $runs_large at 2^22+"; done
  echo "== prove: cuzk prove-local, rapidsnark, snarkjs (mulchain; median of $BENCH_RUNS$large, interleaved; wall s, CPU s, peak RSS MiB)"
  [ -n "$RAPIDSNARK" ] || echo "(RAPIDSNARK is not set: no rapidsnark column; set it to an iden3/rapidsnark prover binary)"
  for sk in "${skipped[@]}"; do echo "skipped: $sk"; done
  printf '%-13s | %-20s | %-20s | %-20s | %-17s | %-6s | %-11s |\n' \
    "" " cuzk prove-local" " rapidsnark" " snarkjs" " cuzk/rapidsnark" " c/s" " BLS/BN"
  printf '%-8s %-4s | %6s %6s %6s | %6s %6s %6s | %6s %6s %6s | %5s %5s %5s | %6s | %5s %5s | %s\n' \
    curve size wall cpu MiB wall cpu MiB wall cpu MiB wall cpu rss wall wall cpu load
  for row in "${rows[@]}"; do
    c="${row% *}"
    k="${row#* }"
    d="$FIXTURES/$c/mulchain-$k"
    dbn="$FIXTURES/bn128/mulchain-$k"
    runs="$BENCH_RUNS"
    [ "$k" -lt 22 ] || runs="$runs_large"
    M=()
    note=""
    l0="$(load)"
    for _ in $(seq "$runs"); do
      prove_all "$c" "$k" "$d"
      if [ "$c" = bls12381 ]; then
        run_one cuzk_bn "$dbn" "${PROVER[@]}" "$dbn/circuit_final.zkey" "$dbn/witness.wtns" "$tmp/proof.json" "$tmp/public.json"
      fi
    done
    [ "$k" -le "$BENCH_SNARKJS_MAX" ] || note="$note snarkjs not run above 2^$BENCH_SNARKJS_MAX (BENCH_SNARKJS_MAX)"
    [ "$runs" -eq "$BENCH_RUNS" ] || note="$note median of $runs (BENCH_RUNS_LARGE)"
    medians
    bw=-
    bc=-
    if [ "$c" = bls12381 ]; then
      bw="$(ratio "$cw" "$(med cuzk_bn 1)")"
      bc="$(ratio "$cc" "$(med cuzk_bn 2)")"
    fi
    printf '%-8s %-4s | %6s %6s %6s | %6s %6s %6s | %6s %6s %6s | %5s %5s %5s | %6s | %5s %5s | %-11s%s\n' \
      "$c" "2^$k" "$(fmt "$cw" 3)" "$(fmt "$cc" 2)" "$(fmt "$cr" 0)" "$(fmt "$rw" 3)" "$(fmt "$rcpu" 2)" "$(fmt "$rr" 0)" \
      "$(fmt "$sw" 2)" "$(fmt "$sc" 1)" "$(fmt "$sr" 0)" "$(ratio "$cw" "$rw")" "$(ratio "$cc" "$rcpu")" "$(ratio "$cr" "$rr")" \
      "$(ratio "$cw" "$sw")" "$bw" "$bc" "$(loads "$l0")" "${note:+  !$note}"
    case "$note" in *failed* | *NOT*) fail=1 ;; esac
    [ "$c" != bn128 ] || fit+=("$k $cw $cc $rw $rcpu")
  done
  nlogn_fit
fi
# ---- the real-shaped circuits: same provers and medians, and the witness's shape ----
if [ ${#real_rows[@]} -gt 0 ]; then
  echo
  echo "== prove, real-shaped circuits (circomlib, circom --O2, bn128; median of $BENCH_RUNS, interleaved; wall s, CPU s, peak RSS MiB; witness shape: % of values 0, 1, < 2^64)"
  printf '%-10s %-7s | %6s %6s %6s | %6s %6s %6s | %6s | %5s %5s %5s | %5s | %5s %5s %5s | %s\n' \
    circuit constr wall cpu MiB wall cpu MiB snarkjs c/r c/r rss c/s "0" "1" "<2^64" load
  for name in "${real_rows[@]}"; do
    d="$FIXTURES/bn128/$name"
    k="${name##*-}"
    nc="$(sed -n 's/.*constraints=\([0-9]*\).*/\1/p' "$d/info.txt")"
    shape="$("$BUILD/bench/wtns_shape" "$d/witness.wtns" 2>/dev/null || echo "zeros=- ones=- small=-")"
    sh0="$(echo "$shape" | sed -n 's/.*zeros=\([0-9.]*\)%.*/\1/p')"
    sh1="$(echo "$shape" | sed -n 's/.*ones=\([0-9.]*\)%.*/\1/p')"
    shs="$(echo "$shape" | sed -n 's/.*small=\([0-9.]*\)%.*/\1/p')"
    M=()
    note=""
    l0="$(load)"
    for _ in $(seq "$BENCH_RUNS"); do prove_all bn128 "$k" "$d"; done
    [ "$k" -le "$BENCH_SNARKJS_MAX" ] || note="$note snarkjs not run above 2^$BENCH_SNARKJS_MAX"
    medians
    printf '%-10s %-7s | %6s %6s %6s | %6s %6s %6s | %6s | %5s %5s %5s | %5s | %5s %5s %5s | %-11s%s\n' \
      "$name" "${nc:--}" "$(fmt "$cw" 3)" "$(fmt "$cc" 2)" "$(fmt "$cr" 0)" "$(fmt "$rw" 3)" "$(fmt "$rcpu" 2)" "$(fmt "$rr" 0)" \
      "$(fmt "$sw" 2)" "$(ratio "$cw" "$rw")" "$(ratio "$cc" "$rcpu")" "$(ratio "$cr" "$rr")" "$(ratio "$cw" "$sw")" \
      "${sh0:--}" "${sh1:--}" "${shs:--}" "$(loads "$l0")" "${note:+  !$note}"
    case "$note" in *failed* | *NOT*) fail=1 ;; esac
  done
  echo "(real-shaped: NAME-K fills a 2^K domain; c/r wall <= 0.20 is the goal on every row)"
fi
echo "(c/r = cuzk / rapidsnark, c/s = cuzk / snarkjs, BLS/BN = cuzk bls12381 / cuzk bn128 at the"
echo " same size; below 1 cuzk is faster or smaller. Goals: c/r wall <= 0.16 at 2^18 to 2^22"
echo " (mulchain) and <= 0.20 on every real-shaped row from 2^13; RSS <= rapidsnark's from 2^18;"
echo " BLS/BN <= 1.5 at 2^13."
echo " $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')$(grep -q avx512ifma /proc/cpuinfo && echo ' with AVX-512 IFMA');"
echo " load: the 1-minute average at the row's start - at its end)"
exit $fail
