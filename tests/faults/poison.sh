#!/usr/bin/env bash
# Poison partition: CUZK_TEST_CRASH_ON=w3 (test-only hook) makes the worker abort on
# the partition named w3. With --max-attempts 2 that partition ends FAILED with the
# reason after 2 crashes; the job's other partitions and another job end DONE.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../lib" && pwd)/daemon.sh"
daemon_init poison
CUZK_TEST_CRASH_ON=w3 daemon_start --devices cpu:2 --buffers 6 --buffer-mb 16 --max-attempts 2
a="$(submit_copies bn128 6 a)"
b="$(submit_copies bn128-chain 2 b)"
r="$(timeout 120 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" --json wait "$a")" || true
[ "$(jq -r .job.state <<<"$r")" = failed ] || fail "job a: $r"
w3="$(jq -c '.job.parts[] | select(.name == "w3")' <<<"$r")"
[ "$(jq -r .state <<<"$w3")" = failed ] || fail "w3: $w3"
jq -r .reason <<<"$w3" | grep -q "crashed cuzk-gpuworker 2 times" || fail "w3 reason: $w3"
[ "$(jq '[.job.parts[] | select(.state == "done")] | length' <<<"$r")" -eq 5 ] || fail "job a: $r"
echo "ok: w3 failed: $(jq -r .reason <<<"$w3") (attempts $(jq -r .attempts <<<"$w3")); job a: $(jq -r .job.reason <<<"$r")"
r="$(timeout 120 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" --json wait "$b")" || fail "job b: $r"
[ "$(jq -r .job.state <<<"$r")" = "done" ] || fail "job b: $r"
[ "$(grep -c 'CUZK_TEST_CRASH_ON=w3: aborting' "$tmp/cuzkd.log")" -eq 2 ] || fail "expected 2 crashes"
check_poisoned_w3
check_out_files b 2
verify_jobs bn128-chain b
[ "$(pool_in_use)" = 0 ] || fail "pool in use: $(pool_in_use)"
daemon_shutdown_clean
