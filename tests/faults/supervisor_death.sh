#!/usr/bin/env bash
# Supervisor death: SIGKILL cuzkd during a job. Its stages exit at once (PDEATHSIG).
# 1. With the job store (the default): a new cuzkd on the same store resumes the job
#    under its id (log, `cuzk status` marks it resumed, `cuzk wait ID` sees it DONE),
#    every partition has its proof and public file, snarkjs accepts each, no temp file
#    is left; job ids continue after it; new jobs are proved.
# 2. With --no-store (nothing remembers ids across a clean stop there): the new cuzkd
#    reports the job LOST by id (log, `cuzk status`, `cuzk wait ID`) and its ids
#    continue after the lost one.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../lib" && pwd)/daemon.sh"
daemon_init sdeath
N=60
kill_daemon() {
  local old=$daemon_pid t0
  kill -KILL "$old"
  wait "$old" 2>/dev/null || true
  daemon_pid=""
  t0=$(date +%s.%N)
  for _ in $(seq 1 500); do
    [ -z "$(pgrep -f -- "--instance $inst " || true)" ] && break
    sleep 0.02
  done
  left="$(pgrep -f -- "--instance $inst " || true)"
  [ -z "$left" ] || fail "stages still running 10 s after cuzkd died (they must die with it): $left"
  echo "ok: stages gone $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}') s after cuzkd was killed"
}
wait_done() { # id k: until k partitions of job id are done
  for _ in $(seq 1 200); do
    [ "$(cuzk --json status "$1" | jq .job.done)" -ge "$2" ] && break
    sleep 0.05
  done
}
# after_kill D OLD_ID E K WHAT: no temp file left in D's out dir; a new job E of K
# partitions gets an id after OLD_ID (else: "reuses WHAT"), is proved and verified;
# then cuzkd shuts down.
after_kill() {
  local tmpf id_new
  tmpf="$(dir_list "$tmp/$1/out" '*.tmp.*')"
  [ -z "$tmpf" ] || fail "temp files left: $tmpf"
  id_new="$(submit_copies bn128 "$4" "$3")"
  [ "$id_new" -gt "$2" ] || fail "job id $id_new reuses $5"
  cuzk wait "$id_new" >/dev/null || fail "new job $id_new"
  check_out_files "$3" "$4"
  verify_jobs bn128 "$3"
  daemon_shutdown_clean
}
answering() {
  for _ in $(seq 1 150); do
    cuzk status >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  fail "cuzkd does not answer"
}

# The job must still be running when cuzkd is killed, whatever the machine's speed (on a
# quiet machine a 30-partition job of this circuit can finish in under a second, before
# the kill, and then nothing is lost). CUZK_TEST_HANG_ON (test-only hook) holds the
# worker in a long call on the job's last witness, so the job cannot end before the
# kill; the restarted cuzkd runs without it.
# ---- 1. with the store: resumed ------------------------------------------------------
CUZK_TEST_HANG_ON="w$N" daemon_start --devices cpu:2 --buffers 6 --buffer-mb 16
id="$(submit_copies bn128-chain "$N" a)"
wait_done "$id" 3
kill_daemon
daemon_start --devices cpu:2 --buffers 6 --buffer-mb 16
answering
grep -q "job $id resumed from the job store" "$tmp/cuzkd.log" || fail "no resume line for job $id"
grep -q "job $id LOST" "$tmp/cuzkd.log" && fail "job $id reported lost although the store resumed it"
st="$(cuzk --json status "$id")" || fail "status $id after the restart: $st"
[ "$(jq -r .job.resumed <<<"$st")" = true ] || fail "status $id does not say resumed: $st"
cuzk --json status | jq -e '.lost_jobs == null' >/dev/null || fail "lost_jobs listed: $(cuzk --json status | jq -c .lost_jobs)"
echo "ok: $(grep -o "job $id resumed.*" "$tmp/cuzkd.log" | sed 's/ -> .*//')"
r="$(timeout 300 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" --json wait "$id")" || fail "wait $id: $r"
[ "$(jq -r .job.state <<<"$r")" = "done" ] || fail "resumed job $id: $r"
check_out_files a "$N"
verify_jobs bn128-chain a
after_kill a "$id" b 4 "an id of the resumed range ($id)"

# ---- 2. --no-store: lost -----------------------------------------------------------------
CUZK_TEST_HANG_ON=w30 daemon_start --no-store --devices cpu:2 --buffers 6 --buffer-mb 16
id3="$(submit_copies bn128-chain 30 c)"
wait_done "$id3" 2
kill_daemon
daemon_start --no-store --devices cpu:2 --buffers 6 --buffer-mb 16
wait_until 300 grep -q "job $id3 LOST" "$tmp/cuzkd.log" || fail "no LOST line for job $id3"
answering
out="$(cuzk --json status "$id3" 2>&1)" && fail "status of lost job succeeded: $out"
grep -q "was lost" <<<"$out" || fail "status $id3: $out"
out="$(cuzk --json wait "$id3" 2>&1)" && fail "wait of lost job succeeded: $out"
grep -q "was lost" <<<"$out" || fail "wait $id3: $out"
cuzk --json status | jq -e --argjson id "$id3" '.lost_jobs | map(.id) | index($id) != null' >/dev/null ||
  fail "status has no lost_jobs entry: $(cuzk --json status)"
echo "ok: --no-store: $(grep -o "job $id3 LOST.*" "$tmp/cuzkd.log")"
after_kill c "$id3" d 2 "the lost range (lost $id3)"
