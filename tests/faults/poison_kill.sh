#!/usr/bin/env bash
# A partition whose stage is killed from outside each time it works on it (kill -9,
# as the OOM killer would for a partition that exhausts memory) counts a try per kill
# like any crash: after --max-attempts kills it is FAILED with the reason, instead of
# being handed out forever. CUZK_TEST_HANG_ON=w3 (test-only hook) holds the worker in
# a long call on w3, so the test knows which process holds it when it kills. The
# job's other partitions prove (verified with snarkjs). (Deaths cuzkd causes itself,
# a restart or shutdown, count no try: tests/faults/restart.sh.)
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../lib" && pwd)/daemon.sh"
daemon_init poisonkill
K=3
# --long-call-timeout large: only our kills end the hung call (no stall kill).
CUZK_TEST_HANG_ON=w3 daemon_start --devices cpu:2 --buffers 6 --buffer-mb 16 --max-attempts "$K" \
  --long-call-timeout 3600
a="$(submit_copies bn128 6 a)"
# w3's holder: the pid status shows for it while it is proving (none between tries).
# (status exits 22 once the job has failed: that is what the loop waits for.)
st_a() { cuzk --json status "$a" || true; }
holder() { st_a | jq -r '.job.parts[] | select(.name == "w3" and .state == "proving") | .pid // empty'; }
kills=0 last=""
deadline=$((SECONDS + 240)) # liveness only
while [ $SECONDS -lt $deadline ]; do
  st="$(st_a | jq -r '.job.parts[] | select(.name == "w3") | .state')"
  [ "$st" = failed ] && break
  p="$(holder)"
  if [ -n "$p" ] && [ "$p" != "$last" ]; then
    last="$p"
    kill -KILL "$p" 2>/dev/null && kills=$((kills + 1)) && echo "kill -9 $p (holding w3): kill $kills"
  fi
  sleep 0.05
done
r="$(timeout 120 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" --json wait "$a")" || true
w3="$(jq -c '.job.parts[] | select(.name == "w3")' <<<"$r")"
[ "$(jq -r .state <<<"$w3")" = failed ] || fail "w3 did not fail after $kills external kills: $w3"
[ "$kills" -eq "$K" ] || fail "w3 failed after $kills kills, expected $K (--max-attempts $K)"
jq -r .reason <<<"$w3" | grep -q "crashed cuzk-gpuworker $K times (last: signal 9" || fail "w3 reason: $w3"
[ "$(jq -r .job.state <<<"$r")" = failed ] || fail "job a: $r"
[ "$(jq '[.job.parts[] | select(.state == "done")] | length' <<<"$r")" -eq 5 ] || fail "job a: $r"
echo "ok: w3 failed after $K kill -9s: $(jq -r .reason <<<"$w3")"
check_poisoned_w3
echo "ok: the job's other 5 partitions proved and verify"
daemon_shutdown_clean
