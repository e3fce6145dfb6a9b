#!/usr/bin/env bash
# One tenant cannot fill the job table. cuzkd with --max-parts 8: a tenant's share is
# half (4 partitions, --quota-partitions), the last eighth (1) the operator's. alice
# POSTs 2 inputs at a time while nothing ends (stages stopped): before, the API's
# jobs were cuzkd's own user's (exempt from every quota and the reserve): 4 POSTs took
# all 8 partitions, bob got 503 and root's `cuzk prove` "the job table is full". Now a
# job with a tenant counts as an ordinary user's, by tenant: alice's third POST is 429
# quota, bob's POST is 202 and root's `cuzk prove --circuit` is accepted. Every job
# proves once the stages run (snarkjs verifies each proof).
# shellcheck disable=SC2154 # tok_NAME: set by api_tokens (api.sh, printf -v)
set -euo pipefail
. "$(dirname "$0")/../lib/daemon.sh"
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lib/wgen.sh"
. "$ROOT/tests/lib/api.sh"
daemon_init secquota
need_tool jq
need_root "$(basename "$0") runs cuzkd as root (root's prove is the one checked)"
api_init
api_tokens alice
api_tokens bob
api_start http "" --max-parts 8
freeze_stages
two='[{"x":"3","k":"1"},{"x":"4","k":"2"}]'
post() { # NAME TOKEN
  http "$1" "$2" POST /v1/circuits/mul/proofs -m 60 -H 'Content-Type: application/json' --data-binary "$two"
}
[ "$(post a1 "$tok_alice")" = 202 ] && [ "$(post a2 "$tok_alice")" = 202 ] || fail "alice's first 4 partitions"
post a3 "$tok_alice" >/dev/null
expect a3 429 quota
echo "ok: alice at her share (4 of 8 partitions): $(jfield a3 r.detail)"
post b1 "$tok_bob" >/dev/null
expect b1 202
echo "ok: bob's POST accepted while alice is at her share"
mkdir -p "$tmp/R/out"
r="$(timeout 60 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" --json prove --circuit mul --out "$tmp/R/out" \
  "$FX/input.json" 2>&1)" || fail "root's cuzk prove while the tenants hold their shares: $r"
rj="$(jq -r .job <<<"$r")"
echo "ok: root's cuzk prove accepted (job $rj)"
thaw
cuzk wait "$rj" >/dev/null || fail "root's job $rj"
node "$ROOT/tests/lib/snarkjs_verify_all.cjs" "$FIXTURES/node/node_modules/snarkjs" "$VK" "$tmp/R/out" >"$tmp/v" ||
  fail "snarkjs on root's proof: $(cat "$tmp/v")"
for j in a1:alice a2:alice b1:bob; do
  nm="${j%%:*}"
  tk="tok_${j#*:}"
  id="$(jfield "$nm" r.job)"
  http "${nm}w" "${!tk}" GET "/v1/jobs/$id?wait=300" >/dev/null
  expect "${nm}w" 200
  [ "$(jfield "${nm}w" r.state)" = "done" ] || fail "job $id: $(cat "$tmp/http/${nm}w.body")"
  for k in 0 1; do
    fetch_proof "${nm}p$k" "${!tk}" "/v1/jobs/$id/proofs/$k"
  done
done
echo "ok: every job proved once the stages ran; snarkjs verifies root's and the tenants' $n"
daemon_shutdown_clean
echo "PASS: api_tenant_quota"
