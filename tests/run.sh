#!/usr/bin/env bash
# Runs every test: the Check unit-test binaries in $BUILD/tests/, then the script
# tests in tests/scripts/ (end to end: prove, then verify with snarkjs).
# Prints one line per test program, PASS, FAIL or SKIP, and closes with
# "tests: N passed, N failed, N skipped". A program that exits 77 could not run here
# (a missing tool, no root, a GPU present): it is SKIP, with the reason it printed
# (its last line starting with "SKIP"), and is counted apart, never as a pass.
#   --unit-only   skip the script tests (sanitizer runs)
#   TEST_FILTER=regex  run only programs whose name matches
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
cd "$root"
BUILD="${BUILD:-build}"
unit_only=0
[ "${1:-}" = "--unit-only" ] && unit_only=1
logdir="$BUILD/test-logs"
mkdir -p "$logdir"
pass=0; fail=0; skip=0; failed=()

run_one() {  # name, command...
  local name="$1"; shift
  if [ -n "${TEST_FILTER:-}" ] && ! [[ "$name" =~ $TEST_FILTER ]]; then return; fi
  local log="$logdir/$name.log" t0 t1 rc
  t0=$(date +%s.%N)
  "$@" >"$log" 2>&1; rc=$?
  t1=$(date +%s.%N)
  local secs; secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}')
  if [ $rc -eq 77 ]; then
    skip=$((skip+1))
    local why; why="$(grep -E '^SKIP' "$log" | tail -n1)"
    printf 'SKIP  %-34s %6ss  %s\n' "$name" "$secs" "${why:-$(tail -n1 "$log")}"
  elif [ $rc -eq 0 ]; then
    pass=$((pass+1)); printf 'PASS  %-34s %6ss  %s\n' "$name" "$secs" "$(grep -E '^[0-9]+%: Checks' "$log" | tail -n1)"
  else
    fail=$((fail+1)); failed+=("$name")
    printf 'FAIL  %-34s %6ss  (exit %d, log %s)\n' "$name" "$secs" "$rc" "$log"
    tail -n 30 "$log" | sed 's/^/      | /'
  fi
}

export CK_DEFAULT_TIMEOUT="${CK_DEFAULT_TIMEOUT:-600}"
for t in "$BUILD"/tests/test_*; do
  [ -x "$t" ] || continue
  run_one "$(basename "$t")" "$t"
done

if [ $unit_only -eq 0 ]; then
  for s in tests/scripts/*.sh; do
    [ -f "$s" ] || continue
    run_one "$(basename "$s" .sh)" env BUILD="$BUILD" bash "$s"
  done
fi

echo
[ $fail -gt 0 ] && echo "failed: ${failed[*]}"
echo "tests: $pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
