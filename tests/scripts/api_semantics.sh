#!/usr/bin/env bash
# The HTTP API's answers say one thing each, against a real cuzkd (--listen, CPU
# backend, --keep-finished 1 so a job leaves cuzkd's table within seconds and is read
# back from the job store):
# - DELETE of a finished job: 200 {"cancelled":false,"state":"done"}, the same after
#   the job left cuzkd's table, while GET still answers; DELETE of a running job:
#   {"cancelled":true}, the job then reads "cancelled" (reason cancelled), and a second
#   DELETE, after the table forgot it too, answers cancelled true again.
# - A method a path does not take: 405 with an Allow header, on every route; OPTIONS:
#   204 with Allow; with --cors-origin the preflight of that origin is answered
#   (Access-Control-Allow-Origin/-Methods/-Headers), another origin gets none.
# - ?priority= over 1000000: 400 whose detail gives the range and the direction.
# - Idempotency-Key with a space (printable ASCII): accepted, replayed.
# - A 413 says whose limit was hit (limit_source: tenant, circuit).
# - A proof index out of range: 400 naming k, the path's parameter.
# - Requests that keep coming while cuzkd stops do not hold its shutdown: cuzk-api,
#   whose server waits for them, is killed after the grace, and cuzkd exits clean
#   (daemon_shutdown_clean's 30 s is the liveness bound).
# Every proof is verified by snarkjs; every answer is checked against docs/openapi.json.
# shellcheck disable=SC2154 # tok_NAME: set by api_tokens (api.sh, printf -v)
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../lib" && pwd)/daemon.sh"
. "$ROOT/tests/lib/wgen.sh"
. "$ROOT/tests/lib/api.sh"
daemon_init apisem
api_init
api_tokens alice
api_tokens bob - - 1K # bob's bodies: 1 KiB at most
ORIGIN="https://app.example"
api_start http "max-input-bytes = 8K" --keep-finished 1 --cors-origin "$ORIGIN"
grep -q -- "--cors-origin $ORIGIN" <(ps -o args= -p "$(pgrep -f -- "cuzk-api --socket $run/$inst.sock" | head -n1)") ||
  fail "cuzkd did not pass --cors-origin to cuzk-api"
JSON=(-H 'Content-Type: application/json')

# ---- DELETE: one meaning for the job's whole life ------------------------------------------
http d1 "$tok_alice" POST /v1/circuits/mul/proofs "${JSON[@]}" --data-binary @"$FX/input.json" >/dev/null
expect d1 202
j1="$(jfield d1 r.job)"
http d1w "$tok_alice" GET "/v1/jobs/$j1?wait=300" >/dev/null
expect d1w 200
[ "$(jfield d1w r.state)" = "done" ] || fail "job $j1: $(cat "$tmp/http/d1w.body")"
fetch_proof d1p "$tok_alice" "/v1/jobs/$j1/proofs/0"
http d1del "$tok_alice" DELETE "/v1/jobs/$j1" >/dev/null
expect d1del 200
[ "$(jfield d1del 'r.cancelled + " " + r.state')" = "false done" ] || fail "DELETE of a done job: $(cat "$tmp/http/d1del.body")"
# until cuzkd's table forgets it (--keep-finished 1): then the store answers
wait_until 600 job_evicted "$j1" || fail "job $j1 still in cuzkd's table after 60 s"
http d1del2 "$tok_alice" DELETE "/v1/jobs/$j1" >/dev/null
expect d1del2 200
[ "$(jfield d1del2 'r.cancelled + " " + r.state')" = "false done" ] ||
  fail "DELETE of a done job out of cuzkd's table: $(cat "$tmp/http/d1del2.body")"
http d1get "$tok_alice" GET "/v1/jobs/$j1" >/dev/null
expect d1get 200
http d1bob "$tok_bob" DELETE "/v1/jobs/$j1" >/dev/null
expect d1bob 404 refused
echo "ok: DELETE of a done job -> 200 cancelled false (state done), the same once cuzkd's table forgot it; bob 404"

# 200 partitions: the DELETE comes while most are still queued
python3 -c 'import json; print(json.dumps([{"x": str(i), "k": str(i)} for i in range(1, 201)]))' >"$tmp/many.json"
http d2 "$tok_alice" POST /v1/circuits/mul/proofs "${JSON[@]}" --data-binary @"$tmp/many.json" >/dev/null
expect d2 202
j2="$(jfield d2 r.job)"
http d2del "$tok_alice" DELETE "/v1/jobs/$j2" >/dev/null
expect d2del 200
http d2w "$tok_alice" GET "/v1/jobs/$j2?wait=300" >/dev/null
expect d2w 200
if [ "$(jfield d2del r.cancelled)" = true ]; then
  [ "$(jfield d2w 'r.state + " " + r.reason')" = "cancelled cancelled" ] || fail "a cancelled job reads: $(cat "$tmp/http/d2w.body")"
  for _ in $(seq 1 600); do
    cuzk --json status 2>/dev/null | grep -q "\"id\": *${j2}[,}]" || break
    sleep 0.1
  done
  http d2del2 "$tok_alice" DELETE "/v1/jobs/$j2" >/dev/null
  expect d2del2 200
  [ "$(jfield d2del2 'r.cancelled + " " + r.state')" = "true cancelled" ] || fail "second DELETE: $(cat "$tmp/http/d2del2.body")"
  echo "ok: DELETE of a running job -> cancelled true; it reads state cancelled, reason cancelled; a later DELETE says the same"
else # the machine proved all 200 before the DELETE came: the done case again
  [ "$(jfield d2del 'r.state')" = "done" ] || fail "DELETE: cancelled false for a job not done: $(cat "$tmp/http/d2del.body")"
  echo "ok: (the 200 partitions were done before the DELETE: cancelled false, state done)"
fi

# ---- 405 + Allow on every route; OPTIONS; CORS ------------------------------------------------
for route in "PUT /v1/circuits GET" "GET /v1/circuits/mul/proofs POST" "POST /v1/jobs/$j1 DELETE" \
  "DELETE /v1/jobs/$j1/proofs/0 GET" "POST /healthz GET" "PUT /readyz GET" "DELETE /metrics GET"; do
  # shellcheck disable=SC2086 # "METHOD PATH": split into its words
  set -- $route
  http m405 "$tok_alice" "$1" "$2" >/dev/null
  expect m405 405 usage
  grep -qi "^allow: .*$3" "$tmp/http/m405.head" || fail "$1 $2: 405 without Allow naming $3: $(cat "$tmp/http/m405.head")"
done
http opt "" OPTIONS "/v1/circuits/mul/proofs" -H "Origin: $ORIGIN" -H 'Access-Control-Request-Method: POST' \
  -H 'Access-Control-Request-Headers: authorization, content-type' >/dev/null
expect opt 204
grep -qi '^allow: POST, OPTIONS' "$tmp/http/opt.head" || fail "OPTIONS without Allow"
grep -qi "^access-control-allow-origin: $ORIGIN" "$tmp/http/opt.head" || fail "preflight without the origin"
grep -qi '^access-control-allow-methods: .*POST' "$tmp/http/opt.head" || fail "preflight without POST"
grep -qi '^access-control-allow-headers: .*authorization.*content-type' "$tmp/http/opt.head" || fail "preflight without the headers"
http optx "" OPTIONS "/v1/jobs/$j1" -H 'Origin: https://evil.example' >/dev/null
expect optx 204
grep -qi '^access-control-allow-origin' "$tmp/http/optx.head" && fail "another origin got CORS headers"
http corsget "$tok_alice" GET "/v1/jobs/$j1" -H "Origin: $ORIGIN" >/dev/null
expect corsget 200
grep -qi "^access-control-allow-origin: $ORIGIN" "$tmp/http/corsget.head" || fail "GET from the origin without CORS"
grep -qi '^access-control-expose-headers: .*location' "$tmp/http/corsget.head" || fail "Location not exposed"
echo "ok: 405 with Allow on 7 routes; OPTIONS 204 with Allow; preflight of $ORIGIN answered, another origin none"

# ---- priority, Idempotency-Key with a space, 413's limit, k ------------------------------------
http prio "$tok_alice" POST '/v1/circuits/mul/proofs?priority=1000001' "${JSON[@]}" --data-binary @"$FX/input.json" >/dev/null
expect prio 400 usage
jfield prio r.detail | grep -q "0 to 1000000.*higher" || fail "priority's 400 without range and direction: $(jfield prio r.detail)"
http sp1 "$tok_alice" POST /v1/circuits/mul/proofs "${JSON[@]}" -H 'Idempotency-Key: order 17 / a b' \
  --data-binary '{"x":"5","k":"9"}' >/dev/null
expect sp1 202
http sp2 "$tok_alice" POST /v1/circuits/mul/proofs "${JSON[@]}" -H 'Idempotency-Key: order 17 / a b' \
  --data-binary '{"x":"5","k":"9"}' >/dev/null
expect sp2 202
[ "$(jfield sp2 'r.existing + " " + r.job')" = "true $(jfield sp1 r.job)" ] || fail "key with a space: $(cat "$tmp/http/sp2.body")"
http spw "$tok_alice" GET "/v1/jobs/$(jfield sp1 r.job)?wait=300" >/dev/null
expect spw 200
fetch_proof spp "$tok_alice" "/v1/jobs/$(jfield sp1 r.job)/proofs/0"
http long "$tok_alice" POST /v1/circuits/mul/proofs "${JSON[@]}" -H "Idempotency-Key: $(printf 'k%.0s' $(seq 129))" \
  --data-binary '{"x":"5","k":"9"}' >/dev/null
expect long 400 usage
head -c 1500 /dev/zero >"$tmp/b1500"
head -c 9000 /dev/zero >"$tmp/b3000"
http bigb "$tok_bob" POST /v1/circuits/mul/proofs -H 'Content-Type: application/octet-stream' --data-binary @"$tmp/b1500" >/dev/null
expect bigb 413 refused
[ "$(jfield bigb 'r.limit + " " + r.limit_source')" = "1024 tenant" ] || fail "413 of bob's limit: $(cat "$tmp/http/bigb.body")"
jfield bigb r.detail | grep -q tenant || fail "413's detail does not say the tenant's limit: $(jfield bigb r.detail)"
http bigc "$tok_alice" POST /v1/circuits/mul/proofs -H 'Content-Type: application/octet-stream' --data-binary @"$tmp/b3000" >/dev/null
expect bigc 413 refused
[ "$(jfield bigc 'r.limit + " " + r.limit_source')" = "8192 circuit" ] || fail "413 of the circuit's limit: $(cat "$tmp/http/bigc.body")"
http kout "$tok_alice" GET "/v1/jobs/$j1/proofs/7" >/dev/null
expect kout 400 usage
jfield kout r.detail | grep -q '^k = 7' || fail "out of range without k: $(jfield kout r.detail)"
jfield kout r.detail | grep -q index && fail "out of range names index: $(jfield kout r.detail)"
echo "ok: priority 1000001 -> 400 ($(jfield prio r.detail)); a key with spaces replayed, one of 129 characters 400;" \
  "413 says tenant 1024 / circuit 8192; k out of range -> $(jfield kout r.detail)"

python3 "$ROOT/tests/lib/openapi_check.py" "$ROOT/docs/openapi.json" "$tmp/http" || fail "answers against docs/openapi.json"
echo "ok: every answer ($(wc -l <"$tmp/http/index")) matches docs/openapi.json"
# requests every 50 ms from before the shutdown to past it: some come after the stop
(for _ in $(seq 1 60); do
  curl -s -m 60 -o /dev/null -H "Authorization: Bearer $tok_alice" "$api_base/v1/circuits" || true
  sleep 0.05
done) &
busy=$!
sleep 0.5
daemon_shutdown_clean
wait "$busy" || true
echo "PASS: api_semantics ($n proofs verified by snarkjs)"
