#!/usr/bin/env bash
# A finalizer that dies while its write waits on a hung out dir costs cuzkd nothing.
# cuzkd removes a dead finalizer's temp files from the out dirs of the partitions it
# held. That directory may be the very one that hangs (here a FUSE mount whose server
# reads every request about the directory's contents and never answers: the dead
# finalizer's writer is stuck in it). cuzkd used to read it on its own loop: after
# a kill -9 of the finalizer it answered no one and started no new finalizer. Now the
# sweep runs in a detached process of its own (cuzkd-sweep): cuzkd answers, a new
# finalizer comes up, and a job to another out dir proves (snarkjs verifies). Once the
# file system goes away, the sweep and the stuck writer end: no process is left.
# SKIP (77) without root or /dev/fuse.
set -euo pipefail
. "$(dirname "$0")/../lib/daemon.sh"
. "$(dirname "$0")/lib.sh"
# A write deadline longer than the test: the write must still be waiting at the kill
# (and job A may still be running at the shutdown: a short drain).
hung_daemon hungcrash --write-timeout 600 --drain-timeout 2

ja="$(prove_to "$tmp/fuse" "$tmp/a/wa.wtns")" || fail "submit of job A"
fuse_held fuse "job A's write"
echo "ok: job $ja's write waits in its out dir (the FUSE server holds the request)"

kill -9 "$fin"
wait_until 600 new_finalizer || fail "no new finalizer after the kill (cuzkd stuck in the hung out dir?)"
timeout 30 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" status >/dev/null || fail "cuzkd stopped answering"
echo "ok: finalizer $fin killed with job $ja's write waiting: a new one ($fin2) came up, cuzkd answers"
grep -q "removing the dead finalizer's temp files in $tmp/fuse" "$tmp/cuzkd.log" ||
  fail "cuzkd did not sweep the dead finalizer's temp files"

job_b_proved "(another out dir) proved after the kill"

# The sweep, and the dead finalizer's writer stuck in the hung out dir.
stuck_on_fuse() { echo "$(pgrep -x cuzkd-sweep || true) $(pgrep -f -- "--out-writer $fin\$" || true)"; }
fuse_release_drained processes stuck_on_fuse
echo "ok: the sweep and the dead finalizer's stuck writer ended once the file system went away"
daemon_shutdown_clean
echo "PASS: hung_outdir_crash"
