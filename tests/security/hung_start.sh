#!/usr/bin/env bash
# Many stored jobs whose out dirs hang cost cuzkd's start one deadline, not one each,
# and a cuzkd killed while those opens hang does not keep the next one from starting.
# 16 jobs are accepted whose out dirs' recorded paths lie on a FUSE mount whose server
# reads every lookup and never answers (fuse_stall.py --hold-dir: the caller waits
# uninterruptibly, even SIGKILL does not end it); cuzkd is killed before it proves.
# Before, the resume opened the dirs one after the other, each with its own 5 s
# deadline (16 dirs: 80 s before cuzkd answered anyone), and each abandoned open left a
# thread of cuzkd's in the kernel: a cuzkd killed then stayed a zombie holding its pid
# file and socket, and the next one refused to start ("already running") until the
# file system went away. Now the dirs are opened at once by a helper process that
# cuzkd abandons at one deadline: cuzkd answers well within 16 deadlines (a liveness
# bound of 6, for a loaded machine), fails those jobs with "did not answer", a cuzkd
# SIGKILLed in the middle of those opens leaves for good, the next one starts, and an
# honest job proves (snarkjs verifies). SKIP (77) without root or /dev/fuse.
set -euo pipefail
. "$(dirname "$0")/../lib/daemon.sh"
. "$(dirname "$0")/lib.sh"
hung_daemon hungstart
n=16
# This instance's processes but the openers cuzkd abandoned (cuzkd-open, waiting in
# the mount until it goes away); in_hung_open: how many of all of them wait in the
# kernel (D).
instance_procs() {
  local p
  for p in $(pgrep -f -- "--instance $inst " || true); do
    [ "$(cat "/proc/$p/comm" 2>/dev/null)" = cuzkd-open ] || echo "$p"
  done
}
# cuzkd killed with its jobs unproved (the worker stopped), its stages gone.
kill_unproved() {
  kill -KILL "$daemon_pid"
  # A bound, not a wait: a cuzkd with a thread stuck in the mount never finishes its
  # exit (a zombie no one can reap), which is what this test is about.
  for _ in $(seq 1 300); do
    [ -d "/proc/$daemon_pid" ] || break
    sleep 0.1
  done
  [ ! -d "/proc/$daemon_pid" ] || fail "cuzkd $daemon_pid did not finish its exit after kill -9 ($(awk '{print $3}' "/proc/$daemon_pid/stat" 2>/dev/null): a thread stuck in the hung mount?)"
  wait "$daemon_pid" 2>/dev/null || true
  kill -CONT "$wpid" 2>/dev/null || true
  for _ in $(seq 1 250); do
    [ -z "$(instance_procs)" ] && break
    sleep 0.02
  done
}
# A job whose out dir's recorded path is DIR on the mount (the descriptor passed is
# of $tmp/out; the path is what the resume reopens): prints its id.
submit_hung() {
  local r
  r="$(send_fds "{\"req\":\"submit\",\"fds\":3,\"zkey\":{\"fd\":0,\"path\":\"c.zkey\"},\"out_dir\":{\"fd\":1,\"path\":\"$tmp/fuse/$1\"},\"witnesses\":[{\"fd\":2,\"path\":\"w.wtns\"}]}" \
    "$A/circuit_final.zkey" "$tmp/out" "$A/witness.wtns")"
  [ "$(js 'typeof r.job' "$r")" = number ] || {
    echo "submit to $1 refused: $r" >&2
    return 1
  }
  js 'r.job' "$r"
}
in_hung_open() {
  local p t n=0
  for p in $(pgrep -f -- "--instance $inst " || true); do
    for t in /proc/"$p"/task/*/stat; do
      [ "$(awk '{print $3}' "$t" 2>/dev/null)" = D ] && n=$((n + 1))
    done
  done
  echo "$n"
}
stop_worker
mkdir -p "$tmp/out"
jobs=()
for k in $(seq 1 $n); do
  j="$(submit_hung "out$k")" || fail "a submit was refused"
  jobs+=("$j")
done
kill_unproved
echo "killed cuzkd with $n jobs unproved whose out dirs lie on the hung mount"

t0=$SECONDS
daemon_start --devices cpu:1 --buffers 4 --buffer-mb 16
took=$((SECONDS - t0))
[ "$took" -le 30 ] || fail "cuzkd took ${took} s to answer with $n hung out dirs (one 5 s deadline each?)"
echo "ok: cuzkd answered ${took} s after its start with $n stored out dirs hung (one deadline, not $n)"
for j in "${jobs[@]}"; do
  st="$(cuzk --json status "$j" || true)"
  [ "$(jq -r '.job.parts[0].state' <<<"$st")" = failed ] || fail "job $j: $(jq -c .job <<<"$st")"
  jq -r '.job.parts[0].reason' <<<"$st" | grep -q "did not answer" || fail "job $j's reason: $(jq -c .job <<<"$st")"
done
echo "ok: the $n jobs failed: $(jq -r '.job.parts[0].reason' <<<"$st")"

# Those jobs are decided now: store new ones for the next start to hang on.
stop_worker
for k in 1 2 3 4; do
  submit_hung "again$k" >/dev/null || fail "a submit was refused"
done
kill_unproved
# A cuzkd killed while its opens of those dirs hang: it is under way once one more
# thread of this instance waits in the mount.
before="$(in_hung_open)"
"$BUILD/bin/cuzkd" --instance "$inst" --run-dir "$run" --state-dir "$tmp/state" --foreground \
  --devices cpu:1 --buffers 4 --buffer-mb 16 >>"$tmp/cuzkd.log" 2>&1 &
stuck=$!
for _ in $(seq 1 600); do
  [ "$(in_hung_open)" -gt "$before" ] && break
  if ! kill -0 "$stuck" 2>/dev/null; then
    rc=0
    wait "$stuck" || rc=$?
    fail "cuzkd $stuck exited (status $rc) before its resume reached the hung out dirs"
  fi
  sleep 0.1
done
[ "$(in_hung_open)" -gt "$before" ] || fail "the resume of cuzkd $stuck never reached the hung out dirs"
kill -KILL "$stuck" || fail "cuzkd $stuck was gone before the kill"
echo "killed cuzkd $stuck -9 while its opens of 4 stored out dirs hang"
daemon_start --devices cpu:1 --buffers 4 --buffer-mb 16
echo "ok: a new cuzkd started beside the killed one ($(tr -d '\n' <"$run/$inst.pid") runs)"

job_b_proved proved
# The openers of the killed cuzkd, stuck in the hung out dirs.
stuck_openers() {
  local p
  for p in $(pgrep -f -- "--instance $inst " || true); do
    if [ "$(cat "/proc/$p/comm" 2>/dev/null)" = cuzkd-open ]; then echo "$p"; fi
  done
}
fuse_release_drained openers stuck_openers
echo "ok: the abandoned openers ended once the file system went away"
daemon_shutdown_clean
echo "PASS: hung_start"
