#!/usr/bin/env bash
# Runs every test: the Check unit-test binaries in $BUILD/tests/, then the script
# tests in tests/scripts/ (end to end: prove, then verify with snarkjs).
# Prints one line per test program, PASS, FAIL or SKIP, as each one ends, and closes
# with "tests: N passed, N failed, N skipped". A program that exits 77 could not run
# here (a missing tool, no root, a GPU present): it is SKIP, with the reason it printed
# (its last line starting with "SKIP"), and is counted apart, never as a pass.
#
# Programs run side by side, TEST_JOBS at a time (default: the number of CPUs). That
# is safe because no test asserts on time (timing lives in `make bench`) and every
# daemon test has its own instance, run dir and temp dir. A script that touches
# something machine-wide (creates Unix users, mounts a file system) says so with a
# line "# test: exclusive" and runs with nothing beside it. The longest programs of
# the previous run start first ($BUILD/test-logs/durations, else tests/durations),
# so that the last one to start is a short one and the run ends soon after the
# slowest test.
# Each fault case (tests/faults/NAME.sh) and each security attack (tests/security/NAME.sh)
# is a program of its own, named faults/NAME and security/NAME.
#   --unit-only   skip the script tests (sanitizer runs)
#   --list        print the name of every program, one a line, and run none
#   NAME ...      run only the programs so named (test_msm, fleet_pg, faults/poison, ...;
#                 a fault or security case also by its bare name: poison); a name
#                 that is no program is an error, so a typo never runs the whole suite
#   TEST_FILTER=regex  run only programs whose name matches
#   TEST_JOBS=N   how many programs run at once (1: one after the other)
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
cd "$root" || exit 2
BUILD="${BUILD:-build}"
unit_only=0
list=0
declare -A wanted=()
for a in "$@"; do
  case "$a" in
    --unit-only) unit_only=1 ;;
    --list) list=1 ;;
    -*)
      echo "run.sh: unknown option $a (usage: run.sh [--unit-only] [--list] [NAME ...])" >&2
      exit 2
      ;;
    *) wanted["$a"]=0 ;;
  esac
done
logdir="$BUILD/test-logs"
mkdir -p "$logdir" "$logdir/faults" "$logdir/security"
jobs="${TEST_JOBS:-$(nproc 2>/dev/null || echo 1)}"
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || {
  echo "run.sh: TEST_JOBS must be a positive number" >&2
  exit 2
}
pass=0
fail=0
skip=0
failed=()
export CK_DEFAULT_TIMEOUT="${CK_DEFAULT_TIMEOUT:-600}"

# ---- the list: name, exclusive (0/1), command -------------------------------------
names=()
excl=()
cmds=()
add() { # name, exclusive, command...
  local name="$1" x="$2"
  shift 2
  if [ -n "${TEST_FILTER:-}" ] && ! [[ "$name" =~ $TEST_FILTER ]]; then return; fi
  if [ ${#wanted[@]} -gt 0 ]; then
    local bare="${name##*/}"
    if [ -n "${wanted[$name]+x}" ]; then
      wanted["$name"]=1
    elif [ "$bare" != "$name" ] && [ -n "${wanted[$bare]+x}" ]; then
      wanted["$bare"]=1
    else
      return
    fi
  fi
  names+=("$name")
  excl+=("$x")
  cmds+=("$(printf '%q ' "$@")")
}
for t in "$BUILD"/tests/test_*; do
  [ -x "$t" ] || continue
  # test_fleet_pg needs a PostgreSQL cluster: tests/scripts/fleet_pg.sh starts one and
  # runs it there (alone it could only SKIP).
  [ "$(basename "$t")" = test_fleet_pg ] && continue
  add "$(basename "$t")" 0 "$t"
done
if [ $unit_only -eq 0 ]; then
  for s in tests/scripts/*.sh; do
    [ -f "$s" ] || continue
    x=0
    grep -q '^# test: exclusive' "$s" && x=1
    add "$(basename "$s" .sh)" "$x" env BUILD="$BUILD" bash "$s"
  done
  # The fault and security cases, one program each. A security case creates Unix users
  # (useradd and userdel lock /etc/passwd), so it runs alone; without root it SKIPs.
  for s in tests/faults/*.sh tests/security/*.sh; do
    [ "$(basename "$s")" != lib.sh ] || continue
    d="$(basename "$(dirname "$s")")"
    x=0
    { [ "$d" = security ] || grep -q '^# test: exclusive' "$s"; } && x=1
    add "$d/$(basename "$s" .sh)" "$x" env BUILD="$BUILD" bash "$s"
  done
fi
for a in "${!wanted[@]}"; do
  if [ "${wanted[$a]}" = 0 ]; then
    echo "run.sh: no test program named $a (run.sh --list names them)" >&2
    exit 2
  fi
done
if [ $list -eq 1 ]; then
  printf '%s\n' "${names[@]}" | sort
  exit 0
fi

# Longest first, by the previous run's durations (unknown programs count as long:
# a new test is usually an end-to-end one).
declare -A last=()
durations="$logdir/durations"
# A fresh clone (CI) has no previous run: tests/durations holds figures of a run on a
# 2-core machine, committed so that the first run is ordered well too.
[ -f "$durations" ] || durations="$here/durations"
if [ -f "$durations" ]; then
  while read -r n d; do last["$n"]="$d"; done <"$durations"
fi
order=()
while read -r _ i; do order+=("$i"); done < <(
  for i in "${!names[@]}"; do echo "${last[${names[$i]}]:-9999} $i"; done | sort -k1,1nr -k2,2n
)

# ---- running ------------------------------------------------------------------------
declare -A running=() t0=() # pid -> index, pid -> start time
report() {                  # index, rc, seconds
  local name="${names[$1]}" rc="$2" secs="$3" log="$logdir/${names[$1]}.log"
  echo "$name $secs" >>"$logdir/durations.new"
  if [ "$rc" -eq 77 ]; then
    skip=$((skip + 1))
    local why
    why="$(grep -E '^SKIP' "$log" | tail -n1)"
    printf 'SKIP  %-34s %6ss  %s\n' "$name" "$secs" "${why:-$(tail -n1 "$log")}"
  elif [ "$rc" -eq 0 ]; then
    pass=$((pass + 1))
    printf 'PASS  %-34s %6ss  %s\n' "$name" "$secs" "$(grep -E '^[0-9]+%: Checks' "$log" | tail -n1)"
  else
    fail=$((fail + 1))
    failed+=("$name")
    printf 'FAIL  %-34s %6ss  (exit %d, log %s)\n' "$name" "$secs" "$rc" "$log"
    tail -n 30 "$log" | sed 's/^/      | /'
  fi
}
reap_one() { # waits for any running program to end and reports it
  local pid rc now
  wait -n -p pid "${!running[@]}"
  rc=$?
  now=$(date +%s.%N)
  report "${running[$pid]}" "$rc" "$(awk -v a="${t0[$pid]}" -v b="$now" 'BEGIN{printf "%.1f", b-a}')"
  unset "running[$pid]" "t0[$pid]"
}
start() { # index
  local i="$1"
  eval "${cmds[$i]}" >"$logdir/${names[$i]}.log" 2>&1 </dev/null &
  running[$!]="$i"
  t0[$!]=$(date +%s.%N)
}

: >"$logdir/durations.new"
for i in "${order[@]}"; do
  if [ "${excl[$i]}" = 1 ]; then
    while [ ${#running[@]} -gt 0 ]; do reap_one; done
    start "$i"
    reap_one
    continue
  fi
  while [ ${#running[@]} -ge "$jobs" ]; do reap_one; done
  start "$i"
done
while [ ${#running[@]} -gt 0 ]; do reap_one; done
# A filtered run keeps the other programs' figures.
if [ -f "$logdir/durations" ]; then
  awk 'NR==FNR{seen[$1]=1; print; next} !($1 in seen)' "$logdir/durations.new" \
    "$logdir/durations" >"$logdir/durations.tmp" && mv "$logdir/durations.tmp" "$logdir/durations"
  rm -f "$logdir/durations.new"
else
  mv "$logdir/durations.new" "$logdir/durations"
fi

echo
[ $fail -gt 0 ] && echo "failed: ${failed[*]}"
echo "tests: $pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
