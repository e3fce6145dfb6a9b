#!/usr/bin/env bash
# /readyz takes no token and costs cuzkd at most one look a second. 300 clients at
# once (from 10 source addresses: --per-ip is 32) ask /readyz over and over: before,
# each answer took two control connections of its own, and root's `cuzk status` failed
# "busy" 8 of 20 times. Now readiness is answered from one look shared by every
# caller, taken again at most once a second: root's status succeeds 20 of 20 and the
# probes are answered 200.
set -euo pipefail
. "$(dirname "$0")/../lib/daemon.sh"
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lib/wgen.sh"
. "$ROOT/tests/lib/api.sh"
daemon_init secrdy
need_root "$(basename "$0") runs cuzkd as root (root's status is the one checked)"
api_init
api_tokens alice
api_start http ""
for _ in $(seq 1 600); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' "$api_base/readyz")" = 200 ] && break
  sleep 0.1
done
mkdir -p "$tmp/rdy"
probe() { # I: 10 /readyz from source address 127.0.0.(I % 10 + 1), their statuses into $tmp/rdy/I
  local a="127.0.0.$(($1 % 10 + 1))" _
  for _ in $(seq 1 10); do
    curl -s -o /dev/null -w '%{http_code}\n' -m 60 --interface "$a" "$api_base/readyz" || true
  done >"$tmp/rdy/$1"
}
pids=()
for i in $(seq 1 300); do
  probe "$i" &
  pids+=($!)
done
ok=0
for i in $(seq 1 20); do
  if timeout 30 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" status >/dev/null 2>"$tmp/st.err"; then
    ok=$((ok + 1))
  else
    echo "status $i: $(cat "$tmp/st.err")"
  fi
done
wait "${pids[@]}" || true
[ "$ok" = 20 ] || fail "root's cuzk status succeeded $ok of 20 times under 300 /readyz clients"
good="$(cat "$tmp"/rdy/* | grep -c '^200$' || true)"
[ "$good" -gt 0 ] || fail "no /readyz was answered 200"
echo "ok: root's status 20 of 20 under 300 /readyz clients; $good probes answered 200"
bad="$(cat "$tmp"/rdy/* | grep -v '^200$' | grep -v '^000$' | sort | uniq -c || true)"
[ -z "$bad" ] || fail "/readyz answered other than 200: $bad"
daemon_shutdown_clean
echo "PASS: api_readyz_flood"
