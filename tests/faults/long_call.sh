#!/usr/bin/env bash
# A stage stuck inside one long call (issue 16 item 5, "a deadline on long calls"):
# CUZK_TEST_HANG_ON=w2 (test-only hook) makes the worker enter a long call on w2 and
# never return. The heartbeat thread beats for it only --long-call-timeout seconds;
# then --stall-timeout kills the worker, the partition counts a try, and after
# --max-attempts it is FAILED. The job's other partitions and another job end DONE.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../lib" && pwd)/daemon.sh"
daemon_init longcall
CUZK_TEST_HANG_ON=w2 daemon_start --devices cpu:1 --buffers 4 --buffer-mb 16 --max-attempts 2 \
  --stall-timeout 1 --long-call-timeout 2
a="$(submit_copies bn128 4 a)"
b="$(submit_copies bn128 1 b)" # w1 only: its w2 would hang too
r="$(timeout 120 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" --json wait "$a")" || true
[ "$(jq -r .job.state <<<"$r")" = failed ] || fail "job a: $r"
w2="$(jq -c '.job.parts[] | select(.name == "w2")' <<<"$r")"
[ "$(jq -r .state <<<"$w2")" = failed ] || fail "w2: $w2"
[ "$(jq '[.job.parts[] | select(.state == "done")] | length' <<<"$r")" -eq 3 ] || fail "job a: $r"
[ "$(grep -c 'CUZK_TEST_HANG_ON=w2: hanging' "$tmp/cuzkd.log")" -eq 2 ] || fail "expected 2 hangs: $(grep HANG "$tmp/cuzkd.log")"
grep -q "no more heartbeats" "$tmp/cuzkd.log" || fail "the stage did not say it stopped beating"
echo "ok: w2 failed after 2 stuck long calls: $(jq -r .reason <<<"$w2")"
r="$(timeout 120 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" --json wait "$b")" || fail "job b: $r"
[ "$(jq -r .job.state <<<"$r")" = "done" ] || fail "job b: $r"
rm -f "$tmp/a/in/w2.wtns"
verify_jobs bn128 a
check_out_files b 1
verify_jobs bn128 b
echo "ok: the other partitions and job b proved and verify"
daemon_shutdown_clean
