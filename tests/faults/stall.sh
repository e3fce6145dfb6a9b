#!/usr/bin/env bash
# Hung stage: cuzkd --stall-timeout 2; SIGSTOP a worker while it proves a partition.
# cuzkd must see its heartbeat stop, SIGKILL and restart it, and the partition must be
# proved elsewhere or after the restart: the job ends DONE, one verified proof each.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../lib" && pwd)/daemon.sh"
daemon_init stall
# killed_by_stall_check WHAT: the SIGSTOPped stage $victim must be killed by cuzkd's
# stall check within 60 s (a liveness bound); else it is woken and the test fails.
victim_gone() { ! kill -0 "$victim" 2>/dev/null; }
killed_by_stall_check() {
  wait_until 600 victim_gone && return 0
  kill -CONT "$victim"
  fail "stopped $1 $victim still alive after 60 s"
}
N=100
daemon_start --devices cpu:2 --buffers 6 --buffer-mb 16 --stall-timeout 2
# The worker case proves mulchain-13 (2^13 constraints): its proofs take far longer
# than their synthesis and finalization, so the workers are the busy stage and a
# stopped worker nearly always holds a partition. (With bn128-chain the workers
# outran the finalizer and were idle for most of a job: 5 jobs went by without a
# catch, once in 6 runs.)
bash "$MAKE_FIXTURES" -q --curve bn128 --only mulchain-13 >/dev/null
FXW="$FIXTURES/bn128/mulchain-13"
NW=40
# Catch a worker holding a partition: stop it first, then ask what it holds (a stopped
# worker's partitions cannot move, so the answer is not a race), and let it go on if
# it holds nothing. A job that ends before a catch (a worker may be idle at every try
# while synthesis is the slow stage on a loaded machine) is checked and another one
# submitted: rounds, not a deadline on the machine's speed.
victim="" held="" job=""
for round in 1 2 3 4 5; do
  job=j$round
  id="$(submit_copies "$FXW" "$NW" "$job")"
  while [ "$(cuzk --json status "$id" | jq -r .job.state)" = running ]; do
    for w in $(stage_pids gpuworker); do
      kill -STOP "$w" 2>/dev/null || continue
      held="$(cuzk --json status "$id" | jq -r --arg p "$w" \
        '[(.job.parts // [])[] | select(.state == "proving" and .pid == ($p | tonumber)) | .name] | join(",")')"
      [ -n "$held" ] && {
        victim=$w
        break 3
      }
      kill -CONT "$w"
    done
    sleep 0.0$((RANDOM % 10))
  done
  echo "note: round $round ended before a worker was caught proving; another job"
  r="$(timeout 300 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" --json wait "$id")" || fail "wait: $r"
  [ "$(jq -r .job.state <<<"$r")" = "done" ] || fail "job $job ended $(jq -c .job <<<"$r")"
  check_out_files "$job" "$NW"
  verify_jobs "$FXW" "$job"
done
[ -n "$victim" ] || fail "no worker caught proving in 5 jobs of $NW partitions"
t0=$(date +%s.%N)
echo "stopped worker pid $victim (it holds: $held)"
killed_by_stall_check worker
dt=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
grep -q "pid $victim): no heartbeat" "$tmp/cuzkd.log" || fail "no stall message for pid $victim"
echo "ok: stall of pid $victim detected and killed after $dt s"
r="$(timeout 300 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" --json wait "$id")" || fail "wait: $r"
[ "$(jq -r .job.state <<<"$r")" = "done" ] || fail "job ended $(jq -c .job <<<"$r")"
check_out_files "$job" "$NW"
verify_jobs "$FXW" "$job"
for _ in $(seq 1 50); do
  [ "$(pool_in_use)" = 0 ] && break
  sleep 0.1
done
[ "$(pool_in_use)" = 0 ] || fail "pool in use: $(pool_in_use)"
down="$(cuzk --json status | jq '[.children[] | select(.pid == 0)] | length')"
[ "$down" -eq 0 ] || fail "$down stage(s) not restarted"
echo "ok: the job finished ($NW proofs verified; $held was held by the stopped worker)"

# The finalizer: SIGSTOP it while it holds a partition (FINAL) and plant the temp files
# it would be writing (OUT/<name>.{proof,public}.json.tmp.<pid>.<random>): after the stall kill
# they are removed and the partition is finalized again.
id2="$(submit_copies bn128 "$N" k)"
victim="" part=""
fpid="$(stage_pids finalizer)"
for _ in $(seq 1 60); do
  [ "$(cuzk --json status "$id2" | jq -r .job.state)" = running ] || break
  sleep 0.0$((RANDOM % 10))
  kill -STOP "$fpid" 2>/dev/null || break
  part="$(cuzk --json status "$id2" | jq -r --argjson p "$fpid" \
    '[(.job.parts // [])[] | select(.state == "final" and .pid == $p) | .name][0] // ""')"
  [ -n "$part" ] && {
    victim=$fpid
    break
  }
  kill -CONT "$fpid"
done
if [ -z "$victim" ]; then
  echo "note: never caught the finalizer holding a partition; temp-file check skipped"
else
  for k in proof public; do echo partial >"$tmp/k/out/$part.$k.json.tmp.$victim.0badc0de"; done
  echo "stopped finalizer pid $victim holding $part (FINAL); planted its temp files"
  killed_by_stall_check finalizer
  # Only the killed finalizer's own temp files (*.tmp.<victim pid>.*) must go: the
  # restarted finalizer may be writing its own *.tmp.<new pid>.* at this very moment.
  dead_tmp() { dir_list "$tmp/k/out" "*.tmp.$victim.*"; }
  for _ in $(seq 1 300); do
    [ -z "$(dead_tmp)" ] && break
    sleep 0.1
  done
  left="$(dead_tmp)"
  [ -z "$left" ] || fail "temp files of the dead finalizer left: $left"
  grep -q "pid $victim): no heartbeat" "$tmp/cuzkd.log" || fail "no stall message for pid $victim"
  echo "ok: finalizer stall detected and killed; its temp files for $part removed"
fi
r="$(timeout 300 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" --json wait "$id2")" || fail "wait: $r"
[ "$(jq -r .job.state <<<"$r")" = "done" ] || fail "job k ended $(jq -c .job <<<"$r")"
check_out_files k "$N"
verify_jobs bn128 k
daemon_shutdown_clean
