#!/usr/bin/env bash
# A partition's attempts over the HTTP API count its tries, and read the same for the
# job's whole life: a job whose one partition ("0") the worker holds in a call that
# never returns (CUZK_TEST_HANG_ON=0, the test-only hook of tests/faults/; a worker
# holds the partitions of its in-flight threads, so the job has no other, which a kill would cut
# short too), the worker killed with kill -9 while it proves it: the partition reads
# attempts 2 on its second try; a second kill fails it (--max-attempts 2) and it reads
# 2; the same once the job left cuzkd's table (--keep-finished 1) and is read from the
# job store, and the job is listed by GET /v1/jobs?state=failed. (A clean job's 1:
# api_list.sh, whose proofs snarkjs verifies.) Every answer is checked against
# docs/openapi.json.
# shellcheck disable=SC2154 # tok_NAME: set by api_tokens (api.sh, printf -v)
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../lib" && pwd)/daemon.sh"
. "$ROOT/tests/lib/wgen.sh"
. "$ROOT/tests/lib/api.sh"
daemon_init apiattempts
api_init
api_tokens alice
# --long-call-timeout large: only the test's kills end the hung call
CUZK_TEST_HANG_ON=0 api_start http "" --keep-finished 1 --max-attempts 2 --long-call-timeout 3600
http sub "$tok_alice" POST /v1/circuits/mul/proofs -H 'Content-Type: application/json' --data-binary @"$FX/input.json" >/dev/null
expect sub 202
j="$(jfield sub r.job)"

# the pid of the worker that holds the partition now ("" while none does)
holder() { cuzk --json status "$j" 2>/dev/null | jq -r '.job.parts[] | select(.index == 0 and .state == "proving") | .pid // empty' || true; }
# kill -9 the partition's holder other than pid $1; prints the killed pid
kill_holder() {
  local p _
  # liveness bound: 120 s
  for _ in $(seq 1 1200); do
    p="$(holder)"
    if [ -n "$p" ] && [ "$p" != "$1" ]; then
      kill -KILL "$p"
      echo "$p"
      return 0
    fi
    sleep 0.1
  done
  fail "no worker held the partition within 120 s"
}
p1="$(kill_holder "")"
# its second try: attempts 2 while the new worker holds it
for _ in $(seq 1 1200); do
  h="$(holder)" # once: a second look may find it between two holders
  [ -n "$h" ] && [ "$h" != "$p1" ] && break
  sleep 0.1
done
http try2 "$tok_alice" GET "/v1/jobs/$j" >/dev/null
expect try2 200
[ "$(jfield try2 'r.parts[0].state + " " + r.parts[0].attempts')" = "proving 2" ] ||
  fail "the partition on its second try: $(cat "$tmp/http/try2.body")"
echo "ok: kill -9 of worker $p1 mid-proof: the partition reads attempts 2 on its second try"
p2="$(kill_holder "$p1")"
http end "$tok_alice" GET "/v1/jobs/$j?wait=300" >/dev/null
expect end 200
[ "$(jfield end 'r.state + " " + r.parts.map(p => p.state + ":" + p.attempts).join()')" = "failed failed:2" ] ||
  fail "after the second kill: $(cat "$tmp/http/end.body")"
jfield end r.parts[0].reason | grep -q "crashed" || fail "the partition's reason: $(jfield end r.parts[0].reason)"
http proof "$tok_alice" GET "/v1/jobs/$j/proofs/0" >/dev/null
expect proof 422 job_failed
echo "ok: kill -9 of worker $p2: the partition failed after 2 tries ($(jfield end r.parts[0].reason))"

wait_until 600 job_evicted "$j" || fail "job $j still in cuzkd's table after 60 s"
http stored "$tok_alice" GET "/v1/jobs/$j" >/dev/null
expect stored 200
[ "$(jfield stored 'r.state + " " + r.parts.map(p => p.state + ":" + p.attempts).join()')" = "failed failed:2" ] ||
  fail "from the job store: $(cat "$tmp/http/stored.body")"
http list "$tok_alice" GET '/v1/jobs?state=failed' >/dev/null
expect list 200
[ "$(jfield list 'r.jobs.map(x => x.job + " " + x.reason).join()')" = "$j 1 of 1 partitions failed" ] ||
  fail "GET /v1/jobs?state=failed: $(cat "$tmp/http/list.body")"
echo "ok: from the job store the same attempts (2); listed as failed"

python3 "$ROOT/tests/lib/openapi_check.py" "$ROOT/docs/openapi.json" "$tmp/http" || fail "answers against docs/openapi.json"
daemon_shutdown_clean
echo "PASS: api_attempts"
