#!/usr/bin/env bash
# The CPU worker's fixed-base MSM tables (gpuworker/fixed_base.h; docs/operations.md,
# "Fixed-base tables"), through a real cuzkd:
#  0. a --fixed-base-mb (or fixed-base-mb =) that is not a whole number from 0 to
#     4194304 is refused with exit 2 naming it, and leaves nothing in the run dir;
#  1. --fixed-base-mb 64 and the test knob CUZK_FIXED_BASE_AFTER=2 (tables after two
#     proofs of a circuit instead of 64): a first job of one circuit makes the worker
#     build its five tables in the background (fixed_tables 5, fixed_bytes within
#     fixed_budget); every partition of a second job then runs its five MSMs through them
#     (fixed_msms grows by 5 a partition); snarkjs accepts every proof of both jobs;
#  2. --fixed-base-mb 1: the tables of a second circuit (bls12381's chain) do not fit
#     beside the first's, so the least recently proved circuit's go (fixed_evicted 1),
#     the bytes stay within the MiB, and both circuits' proofs are accepted;
#  3. --fixed-base-mb 0 with the same knob: no table is built or used, and the proofs
#     are accepted.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/../lib/daemon.sh"
daemon_init tfb
export CUZK_FIXED_BASE_AFTER=2 # the test knob: cuzkd's workers inherit it
FX=bn128-chain
NPART=4

metric() { # COUNTER-OR-GAUGE: the worker's value, from `cuzk metrics`
  cuzk metrics | sed -n "s/^cuzk_stage_counter_total{stage=\"gpuworker\",index=\"0\",counter=\"$1\"} //p;
    s/^cuzk_gauge{stage=\"gpuworker\",index=\"0\",name=\"$1\"} //p"
}
tables_built() { [ "$(metric fixed_tables)" = "$1" ]; }

# ---- 0. a budget that is not a whole number of MiB up to 4 TiB is refused, on the command
# line and in a config file, before anything starts (exit 2, the option named) ---------
for bad in abc -1 4194305; do
  rc=0
  "$BUILD/bin/cuzkd" --instance "$inst" --run-dir "$run" --foreground --fixed-base-mb "$bad" >"$tmp/bad.log" 2>&1 || rc=$?
  [ $rc -eq 2 ] && grep -q -- "--fixed-base-mb $bad: expected a whole number from 0 to 4194304" "$tmp/bad.log" ||
    fail "--fixed-base-mb $bad: exit $rc: $(cat "$tmp/bad.log")"
  printf 'fixed-base-mb = %s\n' "$bad" >"$tmp/bad.conf"
  rc=0
  "$BUILD/bin/cuzkd" --instance "$inst" --run-dir "$run" --foreground --config "$tmp/bad.conf" >"$tmp/bad.log" 2>&1 || rc=$?
  [ $rc -eq 2 ] && grep -q -- "bad.conf:1: --fixed-base-mb $bad: expected a whole number" "$tmp/bad.log" ||
    fail "fixed-base-mb = $bad in a config: exit $rc: $(cat "$tmp/bad.log")"
done
[ -z "$(ls -A "$run")" ] || fail "a refused cuzkd left $(ls -A "$run") in its run dir"
echo "ok: --fixed-base-mb abc, -1, 4194305 refused (exit 2, on the command line and in a config file), nothing left"

# ---- 1. tables built after two proofs, then used --------------------------------------
daemon_start --devices cpu:1 --buffers 4 --buffer-mb 16 --fixed-base-mb 64 \
  --keep-finished 3600
a="$(submit_copies "$FX" "$NPART" a)"
timeout 600 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" wait "$a" >/dev/null || fail "job a did not finish"
[ "$(metric fixed_budget)" = $((64 << 20)) ] || fail "fixed_budget $(metric fixed_budget), want 64 MiB"
# The builder runs at nice 19 beside the provers: a liveness bound, not a speed check
# (the worker reports its counters with each partition and every 100 ms when idle).
wait_until 1200 tables_built 5 || fail "fixed_tables $(metric fixed_tables) after job a, want 5"
bytes="$(metric fixed_bytes)"
[ "$bytes" -gt 0 ] && [ "$bytes" -le $((64 << 20)) ] || fail "fixed_bytes $bytes, want 1 .. 64 MiB"
before="$(metric fixed_msms)"
b="$(submit_copies "$FX" "$NPART" b)"
timeout 600 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" wait "$b" >/dev/null || fail "job b did not finish"
after="$(metric fixed_msms)"
[ $((after - before)) -eq $((5 * NPART)) ] ||
  fail "fixed_msms grew by $((after - before)) over job b, want $((5 * NPART)) (5 a partition)"
tables_built 5 || fail "fixed_tables $(metric fixed_tables) after job b, want still 5"
[ "$(metric fixed_evicted)" = 0 ] || fail "fixed_evicted $(metric fixed_evicted), want 0"
check_out_files a "$NPART"
check_out_files b "$NPART"
verify_jobs "$FX" a b
echo "ok: 5 tables ($bytes bytes) built after 2 proofs; job b's $NPART partitions ran $((after - before)) MSMs through them"
daemon_stop

# ---- 2. eviction: the least recently proved circuit's tables make room ----------------
daemon_start --devices cpu:1 --buffers 4 --buffer-mb 16 --fixed-base-mb 1 --keep-finished 3600
d="$(submit_copies "$FX" "$NPART" d)"
timeout 600 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" wait "$d" >/dev/null || fail "job d did not finish"
wait_until 1200 tables_built 5 || fail "fixed_tables $(metric fixed_tables) after job d, want 5"
first="$(metric fixed_bytes)"
e="$(submit_copies bls12381-chain "$NPART" e)"
timeout 600 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" wait "$e" >/dev/null || fail "job e did not finish"
evicted() { [ "$(metric fixed_evicted)" = 1 ] && [ "$(metric fixed_pending)" = 0 ]; }
wait_until 1200 evicted || fail "fixed_evicted $(metric fixed_evicted), pending $(metric fixed_pending), want 1 and 0"
tables_built 10 || fail "fixed_tables $(metric fixed_tables) after job e, want 10 (5 a circuit)"
bytes="$(metric fixed_bytes)"
[ "$bytes" -gt 0 ] && [ "$bytes" -le $((1 << 20)) ] || fail "fixed_bytes $bytes, want 1 .. 1 MiB"
verify_jobs "$FX" d
verify_jobs bls12381-chain e
echo "ok: --fixed-base-mb 1: bls12381's tables ($bytes bytes) took the place of bn128's ($first)"
daemon_stop

# ---- 3. --fixed-base-mb 0: none -----------------------------------------------------------
daemon_start --devices cpu:1 --buffers 4 --buffer-mb 16 --fixed-base-mb 0 \
  --keep-finished 3600
c="$(submit_copies "$FX" $((2 * NPART)) c)"
timeout 600 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" wait "$c" >/dev/null || fail "job c did not finish"
for m in fixed_tables fixed_msms fixed_bytes fixed_budget; do
  [ "$(metric $m)" = 0 ] || fail "--fixed-base-mb 0: $m $(metric $m), want 0"
done
check_out_files c $((2 * NPART))
verify_jobs "$FX" c
echo "ok: --fixed-base-mb 0: no table built or used over $((2 * NPART)) partitions"
