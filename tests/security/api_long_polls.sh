#!/usr/bin/env bash
# Long polls hold none of cuzkd's control connections. 100 GET /v1/jobs/ID?wait=600 of
# one tenant (from 4 source addresses: --per-ip is 32) on a job that cannot end (the
# stages stopped): before, each held a control connection of its own and took all 72
# (root's `cuzk status` got "busy", other tenants 503). Now every wait sleeps on the
# API's one subscription to job ends: the tenant gets API_TENANT_WAITS (32) and 429
# with Retry-After past them; root's `cuzk status` (20 of 20) and another tenant's
# POST succeed meanwhile; cuzkd holds no more sockets than before the polls (its
# /proc fd list). The clients hang up: their waits are dropped at once (the tenant
# gets its 32 long polls again). Then the stages run and every proof verifies.
# shellcheck disable=SC2154 # tok_NAME: set by api_tokens (api.sh, printf -v)
set -euo pipefail
. "$(dirname "$0")/../lib/daemon.sh"
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lib/wgen.sh"
. "$ROOT/tests/lib/api.sh"
daemon_init seclp
need_tool jq
need_root "$(basename "$0") runs cuzkd as root (root's status is the one checked)"
api_init
api_tokens alice
api_tokens bob
api_start http ""
st="$(cuzk --json status)"
cpid="$(jq -r .pid <<<"$st")"
stages="$(jq -r '.children[].pid' <<<"$st")"
thaw() { for p in $stages; do kill -CONT "$p" 2>/dev/null || true; done; }
daemon_on_exit="thaw${daemon_on_exit:+; $daemon_on_exit}"
socks() { find "/proc/$cpid/fd" -lname 'socket:*' 2>/dev/null | wc -l; }
base="$(socks)"
for p in $stages; do kill -STOP "$p"; done

http j1 "$tok_alice" POST /v1/circuits/mul/proofs -H 'Content-Type: application/json' \
  --data-binary @"$FX/input.json" >/dev/null
expect j1 202
job="$(jfield j1 r.job)"
mkdir -p "$tmp/lp"
poll() { # N: one long poll in the background, its status into $tmp/lp/N
  curl -s -o /dev/null -w '%{http_code}' --interface "127.0.0.$(($1 % 4 + 1))" \
    -H "Authorization: Bearer $tok_alice" "$api_base/v1/jobs/$job?wait=600" >"$tmp/lp/$1" 2>/dev/null &
  lp_pids+=($!)
}
settled() { # WANT: wait (a liveness bound, 60 s) until WANT polls were refused 429
  local _
  for _ in $(seq 1 600); do
    [ "$(cat "$tmp"/lp/* 2>/dev/null | grep -o 429 | wc -l)" -ge "$1" ] && return 0
    sleep 0.1
  done
  fail "$(cat "$tmp"/lp/* | grep -o 429 | wc -l) of the long polls refused 429, expected $1"
}
lp_pids=()
for i in $(seq 1 100); do poll "$i"; done
settled 68
echo "ok: 100 long polls of alice: 32 waiting, 68 refused 429 (her long polls at once)"
for i in $(seq 1 20); do
  timeout 30 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" status >/dev/null ||
    fail "root's cuzk status $i of 20 failed while alice's long polls wait"
done
http bobpost "$tok_bob" POST /v1/circuits/mul/proofs -m 30 -H 'Content-Type: application/json' \
  --data-binary @"$FX/input.json" >/dev/null
expect bobpost 202
http bobget "$tok_bob" GET "/v1/jobs/$(jfield bobpost r.job)" -m 30 >/dev/null
expect bobget 200
now="$(socks)"
[ "$now" -le "$((base + 3))" ] || fail "cuzkd holds $now sockets with the long polls waiting, $base before"
echo "ok: root's status 20 of 20, bob's POST and GET answered; cuzkd's sockets $now (before the polls: $base)"

kill "${lp_pids[@]}" 2>/dev/null || true
wait "${lp_pids[@]}" 2>/dev/null || true
# The API drops a hung-up client's wait at its next look at the socket (every 200 ms):
# its /metrics gauge of long polls falls to 0 (a liveness bound, 60 s; no time is
# asserted), and then 40 fresh polls find 32 places again: 32 admitted (the gauge) and
# exactly 8 refused.
long_polls() { curl -s "$api_base/metrics" | sed -n 's/^cuzk_api_long_polls \([0-9]*\)$/\1/p'; }
for _ in $(seq 1 600); do
  [ "$(long_polls)" = 0 ] && break
  sleep 0.1
done
[ "$(long_polls)" = 0 ] || fail "the hung-up long polls still count: the gauge reads $(long_polls)"
rm -f "$tmp"/lp/*
lp_pids=()
for i in $(seq 1 40); do poll "$i"; done
settled 8
for _ in $(seq 1 600); do
  [ "$(long_polls)" = 32 ] && break
  sleep 0.1
done
[ "$(long_polls)" = 32 ] || fail "32 fresh long polls expected waiting, the gauge reads $(long_polls)"
refused="$(cat "$tmp"/lp/* 2>/dev/null | grep -o 429 | wc -l)"
[ "$refused" -eq 8 ] || fail "the hung-up long polls still count: $refused of 40 fresh polls refused"
echo "ok: the hung-up clients' waits were dropped: alice has her 32 long polls again"
kill "${lp_pids[@]}" 2>/dev/null || true
wait "${lp_pids[@]}" 2>/dev/null || true

thaw
for j in j1 bobpost; do
  tk="$tok_alice"
  [ "$j" = bobpost ] && tk="$tok_bob"
  http "${j}w" "$tk" GET "/v1/jobs/$(jfield "$j" r.job)?wait=300" >/dev/null
  expect "${j}w" 200
  [ "$(jfield "${j}w" r.state)" = "done" ] || fail "job $(jfield "$j" r.job): $(cat "$tmp/http/${j}w.body")"
  fetch_proof "${j}p" "$tk" "/v1/jobs/$(jfield "$j" r.job)/proofs/0"
done
echo "ok: both jobs proved once the stages ran; snarkjs verifies $n proofs"
daemon_shutdown_clean
echo "PASS: api_long_polls"
