#!/usr/bin/env bash
# An array body of 4096 input objects (the documented most) through cuzk-api: one
# job of 4096 partitions (202), its inputs carried to cuzkd in one memfd (framed:
# "inputs_batch"), not a descriptor each. While the body trickles in and is handed
# on, cuzk-api's descriptors (/proc/PID/fd, sampled every 10 ms) stay within a few of
# what it had idle, and another tenant's request is answered; cuzkd holds one copy
# per partition (the job's inputs), not more. A sample of the proofs (the first three:
# the partitions are proved in order, about 4 a second here) is verified by snarkjs;
# the job lists 4096 partitions, and cuzkd took the job only with every frame where
# it belongs (the frames fill the memfd exactly, their count is
# the array's). The rest of the job is then cancelled (a liveness matter only).
# shellcheck disable=SC2154 # tok_NAME: set by api_tokens (api.sh, printf -v)
set -euo pipefail
. "$(dirname "$0")/../lib/daemon.sh"
. "$ROOT/tests/lib/wgen.sh"
. "$ROOT/tests/lib/api.sh"
daemon_init secbatch
need_tool python3
api_init
api_tokens alice
api_tokens bob
# --max-parts 8192: the operator keeps the last eighth of the table (512 of the default
# 4096), so a tenant's 4096 partitions need a table of more than 4681.
api_start http "" --max-parts 8192
apid="$(pgrep -P "$daemon_pid" -x cuzk-api)" || fail "no cuzk-api child of cuzkd"
fds() { find "/proc/$1/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }
api_fd0="$(fds "$apid")"
d_fd0="$(fds "$daemon_pid")"

python3 - "$tmp/batch.json" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    f.write("[" + ",".join('{"x":"%d","k":"%d"}' % (i + 1, 7 * i + 3) for i in range(4096)) + "]")
PY
echo "the body: $(wc -c <"$tmp/batch.json") bytes, 4096 input objects"

# the sampler: the most descriptors cuzk-api had, until told to stop
: >"$tmp/fdmax"
(
  m=0
  while [ ! -e "$tmp/fdstop" ]; do
    c="$(fds "$apid")"
    [ "$c" -le "$m" ] || {
      m="$c"
      echo "$m" >"$tmp/fdmax"
    }
    sleep 0.01
  done
) &
sampler=$!
daemon_on_exit="touch $tmp/fdstop; ${daemon_on_exit:-}"
http batch "$tok_alice" POST /v1/circuits/mul/proofs -H 'Content-Type: application/json' -H 'Expect:' \
  --limit-rate 200k --data-binary @"$tmp/batch.json" >/dev/null &
poster=$!
for _ in $( # while the body arrives: bob is served
  seq 1 600
); do
  [ -s "$tmp/http/batch.head" ] && break
  http other "$tok_bob" GET /v1/circuits >/dev/null
  sleep 0.2
done
wait "$poster" || true
touch "$tmp/fdstop"
wait "$sampler" || true
expect batch 202
expect other 200
[ "$(jfield batch r.partitions)" = 4096 ] || fail "partitions: $(cat "$tmp/http/batch.body")"
api_fdmax="$(cat "$tmp/fdmax")"
echo "cuzk-api's descriptors: $api_fd0 idle, at most $api_fdmax during the request"
[ "$api_fdmax" -le $((api_fd0 + 8)) ] || fail "cuzk-api opened $((api_fdmax - api_fd0)) descriptors for one request"
job="$(jfield batch r.job)"
d_fd1="$(fds "$daemon_pid")"
echo "cuzkd's descriptors: $d_fd0 before, $d_fd1 with the job's 4096 partitions"
[ "$d_fd1" -le $((d_fd0 + 4096 + 16)) ] || fail "cuzkd holds $((d_fd1 - d_fd0)) more descriptors for 4096 inputs"
echo "ok: 4096 inputs in one request: 202, cuzk-api at most $((api_fdmax - api_fd0)) descriptors more, bob served meanwhile"

for k in 0 1 2; do
  for _ in $( # a liveness bound: 10 minutes
    seq 1 3000
  ); do
    st="$(http "p$k" "$tok_alice" GET "/v1/jobs/$job/proofs/$k")"
    [ "$st" = 409 ] || [ "$st" = 425 ] || [ "$st" = 503 ] || break
    sleep 0.2
  done
  expect "p$k" 200
  verify_proof "p$k"
done
http st "$tok_alice" GET "/v1/jobs/$job" >/dev/null
expect st 200
[ "$(jfield st 'r.parts.length')" = 4096 ] && [ "$(jfield st 'r.partitions')" = 4096 ] ||
  fail "the job's partitions: $(jfield st 'r.partitions') ($(jfield st 'r.parts.length') listed)"
http del "$tok_alice" DELETE "/v1/jobs/$job" >/dev/null
expect del 200
http delw "$tok_alice" GET "/v1/jobs/$job?wait=300" >/dev/null
expect delw 200
[ "$(jfield delw r.state)" = cancelled ] || fail "the cancelled job: $(jfield delw r.state)"
daemon_shutdown_clean
echo "PASS: api_batch ($n proofs verified by snarkjs)"
