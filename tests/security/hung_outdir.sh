#!/usr/bin/env bash
# An out dir on a hung file system stalls only its own job.
# Job A's out dir is a FUSE mount (tests/security/fuse_stall.py --hold-dir) whose server
# reads every request about the directory's contents and never answers: whoever opens
# or creates a file there waits uninterruptibly (even SIGKILL does not end the wait
# until the server answers or dies), as on a hard NFS mount whose server went away.
# Before, the single finalizer did that write itself, inside a long call the stall
# check exempts for up to 1800 s: every other job waited behind A. Now each out dir has
# a writer process of its own (finalizer/out_writer.c) with a deadline (--write-timeout,
# 5 s here): job B, submitted after A to another out dir, proves meanwhile (snarkjs
# verifies), and A fails with a reason saying its out dir did not answer. cuzkd then
# shuts down cleanly while A's killed writer is still stuck in the file system, and
# that writer ends once the server goes away: no process is left.
# A later job to A's out dir fails at once while that writer is stuck (no new one).
# Job C's out dir is a second such mount whose server is stopped (SIGSTOP) before it
# reads anything: there the kill ends the writer at once, so the try is retried with a
# fresh writer (--max-attempts 2) and the job fails after its second try; meanwhile
# the finalizer is restarted with C's write under way (C goes back to "proved" and is
# tried again by the next finalizer; cuzkd never touches that directory itself).
# SKIP (77) without root or /dev/fuse.
set -euo pipefail
. "$(dirname "$0")/../lib/daemon.sh"
. "$(dirname "$0")/lib.sh"
hung_daemon hungout --write-timeout 5 --max-attempts 2
fuse1_pid=$fuse_pid
mkdir -p "$tmp/c"
cp "$A/witness.wtns" "$tmp/c/wc.wtns"
fuse_hold fuse2
fuse2_pid=$fuse_pid
# fuse2: its root's attributes and access answer cached (3600 s), then its server stopped
stat "$tmp/fuse2" >/dev/null && [ -w "$tmp/fuse2" ] || fail "fuse2 does not answer"
kill -STOP "$fuse2_pid"

ja="$(prove_to "$tmp/fuse" "$tmp/a/wa.wtns")" || fail "submit of job A"
fuse_held fuse "job A's write"
echo "ok: job $ja's write is blocked in its out dir (the FUSE server holds the request)"

job_b_proved "(another out dir, submitted after A) proved meanwhile"

rc=0
timeout 300 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" wait "$ja" >/dev/null 2>&1 || rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "job A ($ja) did not fail (rc $rc)"
st="$(cuzk --json status "$ja" || true)"
[ "$(jq -r '.job.parts[0].state' <<<"$st")" = failed ] || fail "job A: $(jq -c .job <<<"$st")"
reason="$(jq -r '.job.parts[0].reason' <<<"$st")"
grep -q "out dir $tmp/fuse did not answer" <<<"$reason" && grep -q -- "--write-timeout" <<<"$reason" ||
  fail "job A's reason: $reason"
echo "ok: job $ja failed: $reason"

# While A's writer is stuck, another job to that out dir fails at once: nothing more is
# sent to a directory whose writer has not ended (a stuck process each, otherwise).
cp "$A/witness.wtns" "$tmp/a/wa2.wtns"
ja2="$(prove_to "$tmp/fuse" "$tmp/a/wa2.wtns")" || fail "submit of job A2"
timeout 300 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" wait "$ja2" >/dev/null 2>&1 || true
reason="$(cuzk --json status "$ja2" | jq -r '.job.parts[0].reason' || true)"
grep -q "out dir $tmp/fuse did not answer: a write there has been stuck" <<<"$reason" ||
  fail "job A2's reason: $reason"
echo "ok: job $ja2 to the same out dir failed without a new writer: $reason"

jc="$(prove_to "$tmp/fuse2" "$tmp/c/wc.wtns")" || fail "submit of job C"
# While C's write waits, the finalizer is restarted: it gives C back (proved) instead
# of leaving cuzkd to clean up after it in a directory that does not answer; cuzkd
# keeps answering, and the next finalizer tries C again.
waiting() { for p in $(pgrep -f -- "--out-writer $fin\$" || true); do
  cat "/proc/$p/wchan" 2>/dev/null
  echo
done |
  grep -c request_wait_answer || true; }
for _ in $(seq 1 600); do
  [ "$(waiting)" -ge 2 ] && break
  sleep 0.1
done
[ "$(waiting)" -ge 2 ] || fail "job C's write never reached its out dir"
cuzk restart finalizer >/dev/null || fail "restart finalizer"
wait_until 300 new_finalizer || fail "no new finalizer after the restart"
timeout 30 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" status >/dev/null || fail "cuzkd stopped answering"
echo "ok: the finalizer restarted (pid $fin -> $fin2) with job $jc's write waiting; cuzkd answers"
rc=0
timeout 300 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" wait "$jc" >/dev/null 2>&1 || rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "job C ($jc) did not fail (rc $rc)"
reason="$(cuzk --json status "$jc" | jq -r '.job.parts[0].reason' || true)"
grep -q "out dir $tmp/fuse2 did not answer: writing its proof files took over 5 s .*(2 tries)" <<<"$reason" ||
  fail "job C's reason: $reason"
echo "ok: job $jc failed after two tries: $reason"

stuck="$(pgrep -f -- "--out-writer $fin\$" || true)"
[ -n "$stuck" ] || fail "no writer of the finalizer (pid $fin) left: which one was stuck?"
states="$(for p in $stuck; do ps -o stat= -p "$p"; done | tr -d ' ' | tr '\n' ' ')"
grep -q D <<<"$states" || fail "no writer stuck in the file system (states: $states)"
echo "ok: job A's killed writer is still stuck in the file system (state $states)"
daemon_shutdown_clean
echo "ok: cuzkd shut down cleanly with that writer stuck"

kill "$fuse1_pid"
wait "$fuse1_pid" 2>/dev/null || true
kill -CONT "$fuse2_pid"
kill "$fuse2_pid"
wait "$fuse2_pid" 2>/dev/null || true
umount -l "$tmp/fuse" 2>/dev/null || true
umount -l "$tmp/fuse2" 2>/dev/null || true
for _ in $(seq 1 300); do
  left="$(pgrep -f -- "--out-writer ($fin|$fin2)\$" || true)"
  [ -z "$left" ] && break
  sleep 0.1
done
[ -z "$left" ] || fail "writer processes left once the file system answered: $left ($(ps -o pid,stat,cmd -p "$left"))"
echo "ok: the stuck writer ended once its file system went away; no process left"
echo "PASS: hung_outdir"
