#!/usr/bin/env bash
# The job store's per-user bounds (--store-keep-jobs) count each API tenant on its
# own. Every API job is submitted by the API process, so all tenants share its uid:
# pruned by uid alone, one tenant who submits and cancels past the bound evicted
# every other tenant's stored jobs and proofs. A cuzkd with --store-keep-jobs 3:
#   bob proves one job over the API (snarkjs verifies its proof);
#   alice then submits and cancels 6 jobs, each decided;
#   cuzkd restarts (the per-user prune runs at start, logged);
#   bob's job and its proof are still served (snarkjs verifies it again), and
#   alice keeps her 3 newest decided jobs in the store.
# shellcheck disable=SC2154 # tok_NAME: set by api_tokens (api.sh, printf -v)
set -euo pipefail
. "$(dirname "$0")/../lib/daemon.sh"
. "$ROOT/tests/lib/wgen.sh"
. "$ROOT/tests/lib/api.sh"
daemon_init secprune
command -v python3 >/dev/null || {
  echo "SKIP: python3 missing"
  exit 77
}
api_init
api_tokens alice
api_tokens bob
keep=(--store-keep-jobs 3)
api_start http "" "${keep[@]}"
json=(-H 'Content-Type: application/json')

http b1 "$tok_bob" POST /v1/circuits/mul/proofs "${json[@]}" --data-binary @"$FX/input.json" >/dev/null
expect b1 202
jb="$(jfield b1 r.job)"
http b1w "$tok_bob" GET "/v1/jobs/$jb?wait=300" >/dev/null
[ "$(jfield b1w r.state)" = "done" ] || fail "bob's job: $(cat "$tmp/http/b1w.body")"
http b1p "$tok_bob" GET "/v1/jobs/$jb/proofs/0" >/dev/null
expect b1p 200
verify_proof b1p
echo "ok: bob's job $jb proved over the API (snarkjs verifies)"

for i in 1 2 3 4 5 6; do
  http "a$i" "$tok_alice" POST /v1/circuits/mul/proofs "${json[@]}" --data-binary @"$FX/input.json" >/dev/null
  expect "a$i" 202
  ja="$(jfield "a$i" r.job)"
  http "a${i}d" "$tok_alice" DELETE "/v1/jobs/$ja" >/dev/null
  expect "a${i}d" 200
  http "a${i}w" "$tok_alice" GET "/v1/jobs/$ja?wait=300" >/dev/null
  case "$(jfield "a${i}w" r.state)" in
    cancelled | failed | done) ;;
    *) fail "alice's job $ja not decided: $(cat "$tmp/http/a${i}w.body")" ;;
  esac
done
echo "ok: alice submitted and cancelled 6 jobs past --store-keep-jobs 3"

# tenant_rows NAME: that tenant's decided jobs in the store
tenant_rows() {
  python3 - "$tmp/state/$inst.db" "$1" <<'PY'
import sqlite3, sys
db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
print(db.execute("SELECT count(*) FROM jobs WHERE state != 'running' AND json_extract(request, '$.tenant') = ?",
                 (sys.argv[2],)).fetchone()[0])
PY
}
daemon_stop
mv "$tmp/cuzkd.log" "$tmp/cuzkd.1.log"
daemon_start --config "$tmp/cuzkd.conf" --devices cpu:1 "${keep[@]}"
# the prune at start, logged (a liveness bound)
wait_until 300 grep "beyond a user's" "$tmp/cuzkd.log" || fail "no prune logged at start"
api_wait_up
http b2 "$tok_bob" GET "/v1/jobs/$jb/proofs/0" >/dev/null
expect b2 200
verify_proof b2
[ "$(tenant_rows bob)" = 1 ] || fail "bob has $(tenant_rows bob) jobs in the store, not 1"
[ "$(tenant_rows alice)" = 3 ] || fail "alice has $(tenant_rows alice) decided jobs in the store, not her 3 newest"
echo "ok: after the prune bob's job $jb and its proof are served (snarkjs verifies); alice keeps 3 jobs"
python3 "$ROOT/tests/lib/openapi_check.py" "$ROOT/docs/openapi.json" "$tmp/http" || fail "answers against docs/openapi.json"
daemon_shutdown_clean
echo "PASS: api_prune_tenant ($n proofs verified by snarkjs)"
