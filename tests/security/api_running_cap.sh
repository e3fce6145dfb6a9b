#!/usr/bin/env bash
# A tenant's max-running-jobs holds under concurrent POSTs. alice's token line says 2;
# the stages are stopped, so no job ends. 16 POSTs at once: before, the API counted
# her jobs with one request and submitted with another, and all 16 made jobs (queue
# mode: 4). Now cuzkd counts and admits in one step of its loop (the API passes the
# tenant's cap with the submit), and in queue mode the count runs in the inserting
# transaction under a per-tenant advisory lock: exactly 2 are 202, 14 are 429 quota
# with Retry-After, in both modes (queue mode: a second cuzk-api with --queue on a
# real PostgreSQL cluster, its jobs counted in the table). The two local jobs prove
# once the stages run (snarkjs verifies).
# shellcheck disable=SC2154 # tok_NAME: set by api_tokens (api.sh, printf -v)
set -euo pipefail
. "$(dirname "$0")/../lib/daemon.sh"
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lib/wgen.sh"
. "$ROOT/tests/lib/api.sh"
. "$ROOT/tests/lib/pg.sh"
daemon_init seccap
need_tool jq
api_init
api_tokens alice - 2
api_start http ""
freeze_stages

burst() { # BASE-URL DIR: 16 POSTs of alice at once, each status into DIR/N
  mkdir -p "$2"
  local i pids=()
  for i in $(seq 1 16); do
    curl -s -o "$2/$i.body" -D "$2/$i.head" -w '%{http_code}' -m 120 -H "Authorization: Bearer $tok_alice" \
      -H 'Content-Type: application/json' --data-binary @"$FX/input.json" \
      "$1/v1/circuits/mul/proofs" >"$2/$i.code" 2>/dev/null &
    pids+=($!)
  done
  wait "${pids[@]}" || true
  ok="$(cat "$2"/*.code | grep -o 202 | wc -l || true)"
  quota="$(cat "$2"/*.code | grep -o 429 | wc -l || true)"
}
burst "$api_base" "$tmp/local"
[ "$ok" = 2 ] && [ "$quota" = 14 ] || fail "16 POSTs under max-running-jobs 2: $ok accepted, $quota refused 429"
for f in "$tmp"/local/*.head; do
  grep -q '^HTTP/1.1 429' "$f" || continue
  grep -qi '^retry-after: [0-9]' "$f" || fail "a 429 without Retry-After"
done
running="$(cuzk --json status | jq '[.jobs[] | select(.tenant == "alice" and .state == "running")] | length')"
[ "$running" = 2 ] || fail "cuzkd runs $running jobs of alice, not 2"
echo "ok: local: 16 POSTs at once under max-running-jobs 2: 2 jobs, 14 refused 429 with Retry-After"

# Queue mode: a second cuzk-api on the same cuzkd (its circuits), jobs into PostgreSQL.
pg_cluster_start api_running_cap
qport="$(free_port)"
"$BUILD/bin/cuzk-api" --socket "$run/$inst.sock" --listen "127.0.0.1:$qport" --api-tokens "$tmp/tokens" \
  --user 0 --instance "$inst" --queue "$url" >"$tmp/qapi.log" 2>&1 &
qpid=$!
daemon_on_exit="kill $qpid 2>/dev/null || true${daemon_on_exit:+; $daemon_on_exit}"
for _ in $(seq 1 600); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$qport/healthz")" = 200 ] && break
  sleep 0.1
done
burst "http://127.0.0.1:$qport" "$tmp/queue"
[ "$ok" = 2 ] && [ "$quota" = 14 ] ||
  fail "queue mode: 16 POSTs under max-running-jobs 2: $ok accepted, $quota refused 429: $(cat "$tmp/qapi.log")"
rows="$(psql_q "SELECT count(*) FROM cuzk_jobs WHERE tenant = 'alice' AND state = 'running'")"
[ "$rows" = 2 ] || fail "the queue holds $rows running jobs of alice, not 2"
echo "ok: queue mode: 16 POSTs at once: 2 jobs in the queue, 14 refused 429"

thaw
for f in "$tmp"/local/*.code; do
  [ "$(cat "$f")" = 202 ] || continue
  i="$(basename "$f" .code)"
  mkdir -p "$tmp/http"
  cp "$tmp/local/$i.body" "$tmp/http/acc$i.body"
  j="$(jfield "acc$i" r.job)"
  http "w$i" "$tok_alice" GET "/v1/jobs/$j?wait=300" >/dev/null
  expect "w$i" 200
  [ "$(jfield "w$i" r.state)" = "done" ] || fail "job $j: $(cat "$tmp/http/w$i.body")"
  fetch_proof "p$i" "$tok_alice" "/v1/jobs/$j/proofs/0"
done
[ "$n" = 2 ] || fail "$n proofs verified, not 2"
echo "ok: the 2 accepted local jobs proved; snarkjs verifies both"
kill "$qpid" 2>/dev/null || true
wait "$qpid" 2>/dev/null || true
daemon_shutdown_clean
echo "PASS: api_running_cap"
