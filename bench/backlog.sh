#!/usr/bin/env bash
# bench/backlog.sh — a daemon backlog of input.json partitions (issue 19,
# "Benchmarks"); run by bench/run.sh, or alone.
#
# BENCH_BL_PARTS (32) copies of bn128/mulchain-BENCH_BL_SIZE's (16) input.json, in 4
# jobs submitted at once to a fresh cuzkd (--devices cpu:1: 1 synth, 1 worker, 1
# finalizer; the synth runs the circuit's compiled witness generator), then the same
# inputs back to back, one process each:
#   daemon        submit -> every job done (tests/lib/backlog.sh: all proofs checked
#                 by snarkjs after the clock stops);
#   prove-local   cuzk prove-local --witness-gen, one per input;
#   wbin+rapid    circom's C++ witness binary, then rapidsnark's prover, one pair per
#                 input (bench/native.sh: only when RAPIDSNARK and nlohmann/json.hpp
#                 are there, else a line says why); first and last proof checked.
# Prints partitions/s of each, daemon / each, and the worker's idle share of the
# daemon's window (idle and wait states on the stats page; goal < 5%).
# Environment: BUILD (default build), BENCH_BL_PARTS (32), BENCH_BL_SIZE (16),
#   RAPIDSNARK, NLOHMANN_JSON_INCLUDE (bench/native.sh).
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/tests/lib/daemon.sh"
. "$ROOT/tests/lib/wgen.sh"
. "$ROOT/tests/lib/backlog.sh"
. "$ROOT/bench/native.sh"
N="${BENCH_BL_PARTS:-32}"
K="${BENCH_BL_SIZE:-16}"
CUZK="$BUILD/bin/cuzk"
for t in g++ nasm; do
  command -v "$t" >/dev/null || {
    echo "bench/backlog: $t not installed: skipped"
    exit 0
  }
done
daemon_init blbench
need_bins cuzk-top
bash "$MAKE_FIXTURES" -q --curve bn128 --size "$K" >/dev/null
d="$FIXTURES/bn128/mulchain-$K"
g="$(wgen_for "$d")"
dom="$(sed -n 's/.*domain=\([0-9]*\).*/\1/p' "$d/info.txt")"
nv="$(sed -n 's/.*nVars=\([0-9]*\).*/\1/p' "$d/info.txt")"
native_init
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.3f", b-a}'; }
rate() { awk -v n="$N" -v s="$1" 'BEGIN{ if (s == "" || s + 0 == 0) print "-"; else printf "%.3f", n/s }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (a == "-" || b == "-" || b + 0 == 0) print "-"; else printf "%.2f", a/b }'; }
top() { "$BUILD/bin/cuzk-top" --instance "$inst" --run-dir "$run" --once --json >"$1" || fail "cuzk-top --once --json"; }

load0="$(cut -d' ' -f1-3 /proc/loadavg)"
backlog_inputs "$d" "$N" "$tmp/in"
mkdir -p "$tmp/warm"
daemon_start --devices cpu:1 --buffers 4 --buffer-mb $((((3 * dom + nv) * 32 + (1 << 20) - 1) >> 20))
cuzk prove --zkey "$d/circuit_final.zkey" --witness-gen "$g" --out "$tmp/warm" --wait "$tmp/in/p1.json" >/dev/null ||
  fail "warm-up job" # the stages load the key and the generator once, outside the window
top "$tmp/before.json"
# The window ends when the last job is done (backlog_run's hook), not after the
# snarkjs checks that follow: the worker idled through those (32 verifies, seconds),
# which once read as 17.9% idle.
td="$(backlog_run "$d" 4 "$tmp/in" "$tmp/out" "top $tmp/after.json")"
idle="$(node -e '
  const fs = require("fs"), ld = (f) => JSON.parse(fs.readFileSync(f)).processes;
  const w = (l) => l.find((s) => s.role === "gpuworker" && s.index === 0);
  const b = w(ld(process.argv[1])), a = w(ld(process.argv[2]));
  if (!a || !b || a.generation !== b.generation) { console.log("- (worker restarted)"); process.exit(0); }
  let idle = 0, parts = [];
  const wall = a.wall_ns - b.wall_ns;
  for (const [k, v] of Object.entries(a.states))
    if (k === "idle" || k.startsWith("wait")) {
      const d = v - (b.states[k] || 0);
      idle += d;
      if (d > 0) parts.push(k + " " + (100 * d / wall).toFixed(2) + "%");
    }
  console.log((100 * idle / wall).toFixed(2) + "%" + (parts.length ? " (" + parts.join(", ") + ")" : ""));' "$tmp/before.json" "$tmp/after.json")"
daemon_stop

t0="$(now)"
for i in $(seq 1 "$N"); do
  "$CUZK" prove-local --witness-gen "$g" "$d/circuit_final.zkey" "$tmp/in/p$i.json" "$tmp/l.proof.json" \
    "$tmp/l.public.json" >"$tmp/l.log" 2>&1 || fail "prove-local p$i: $(tail -3 "$tmp/l.log")"
done
tl="$(since "$t0")"
"$SNARKJS" groth16 verify "$d/verification_key.json" "$tmp/l.public.json" "$tmp/l.proof.json" | grep -q OK ||
  fail "snarkjs rejects prove-local's proof"

tn=""
if [ "$NATIVE" = 1 ]; then
  wb="$(native_witness_bin "$d")" || fail "circom's witness binary"
  t0="$(now)"
  for i in $(seq 1 "$N"); do
    native_prove "$wb" "$d/circuit_final.zkey" "$tmp/in/p$i.json" "$tmp/n$i.proof.json" "$tmp/n$i.public.json" ||
      fail "witness binary + rapidsnark on p$i"
  done
  tn="$(since "$t0")"
  for i in 1 "$N"; do
    "$SNARKJS" groth16 verify "$d/verification_key.json" "$tmp/n$i.public.json" "$tmp/n$i.proof.json" | grep -q OK ||
      fail "snarkjs rejects rapidsnark's proof of p$i"
  done
fi

echo "== daemon backlog from input.json (bn128 mulchain-$K: domain $dom; $N partitions in 4 jobs; --devices cpu:1)"
printf '  %-34s %8s s %8s partitions/s\n' "daemon (snarkjs verified all $N)" "$td" "$(rate "$td")"
printf '  %-34s %8s s %8s partitions/s   daemon/it %sx\n' "prove-local back to back" "$tl" "$(rate "$tl")" \
  "$(ratio "$(rate "$td")" "$(rate "$tl")")"
if [ "$NATIVE" = 1 ]; then
  printf '  %-34s %8s s %8s partitions/s   daemon/it %sx\n' "witness binary + rapidsnark" "$tn" "$(rate "$tn")" \
    "$(ratio "$(rate "$td")" "$(rate "$tn")")"
else
  echo "  witness binary + rapidsnark: skipped: $NATIVE_WHY"
fi
echo "  worker idle share of the daemon's window: $idle (goal < 5%)"
echo "  ($(nproc) CPUs; load average before: $load0; after: $(cut -d' ' -f1-3 /proc/loadavg))"
