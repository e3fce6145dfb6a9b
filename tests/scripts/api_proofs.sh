#!/usr/bin/env bash
# A job's proofs in few requests, and what a verifier contract needs, against a real
# cuzkd (--listen, CPU backend) with two circuits: mul (bn128 mulchain-10, input.json
# through its generator) and bls (bls12381 mulchain-10, .wtns bodies):
# - POST ?wait=300: 200 with the proofs inline (one input, then an array of three);
#   ?wait=0: the 202 as without it.
# - GET /v1/jobs/ID/proofs: every proof in one answer; ?limit=2 pages with next.
# - Every proof answer says "verified": true, and snarkjs verifies each one.
# - GET /v1/circuits/NAME/vkey: byte-equal to `snarkjs zkey export verificationkey`
#   of the circuit's zkey, on both curves.
# - GET .../proofs/K?format=calldata: byte-equal to `snarkjs zkey export
#   soliditycalldata` of the same proof and public signals, on both curves.
# Every answer is checked against docs/openapi.json.
# shellcheck disable=SC2154 # tok_NAME: set by api_tokens (api.sh, printf -v)
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../lib" && pwd)/daemon.sh"
. "$ROOT/tests/lib/wgen.sh"
. "$ROOT/tests/lib/api.sh"
daemon_init apiproofs
api_init
api_tokens alice
BLS="$FIXTURES/bls12381/mulchain-10"
[ -f "$BLS/circuit_final.zkey" ] || fail "no bls12381 fixture at $BLS"
api_start http "[circuit bls]
zkey = $BLS/circuit_final.zkey"
http_until 1200 200 ready "" GET /readyz
JSON=(-H 'Content-Type: application/json')

# proofs NAME [VK]: every {"k","proof","publicSignals","verified"} of answer NAME's
# "proofs" verified by snarkjs (as answer NAME.K)
proofs() {
  local k
  for k in $(jfield "$1" 'r.proofs.map((p) => p.k).join(" ")'); do
    [ "$(jfield "$1" "r.proofs.find((p) => p.k === $k).verified")" = true ] || fail "$1: proof $k without verified: true"
    jfield "$1" "JSON.stringify(r.proofs.find((p) => p.k === $k))" >"$tmp/http/$1.$k.body"
    VK="${2:-$VK}" verify_proof "$1.$k"
  done
}

# ---- the proof in one call ----------------------------------------------------------------
http w1 "$tok_alice" POST '/v1/circuits/mul/proofs?wait=300' "${JSON[@]}" --data-binary @"$FX/input.json" >/dev/null
expect w1 200
[ "$(jfield w1 'r.state + " " + r.partitions + " " + r.proofs.length + " " + r.location')" = "done 1 1 /v1/jobs/$(jfield w1 r.job)" ] ||
  fail "POST ?wait: $(head -c 400 "$tmp/http/w1.body")"
grep -qi "^location: /v1/jobs/$(jfield w1 r.job)" "$tmp/http/w1.head" || fail "POST ?wait 200 without Location"
proofs w1
http w3 "$tok_alice" POST '/v1/circuits/mul/proofs?wait=300' "${JSON[@]}" \
  --data-binary '[{"x":"3","k":"5"},{"x":"7","k":"1234567"},{"x":"11","k":"2"}]' >/dev/null
expect w3 200
[ "$(jfield w3 'r.proofs.map((p) => p.k).join(",")')" = "0,1,2" ] || fail "POST ?wait array: $(head -c 400 "$tmp/http/w3.body")"
proofs w3
http w0 "$tok_alice" POST '/v1/circuits/mul/proofs?wait=0' "${JSON[@]}" --data-binary @"$FX/input.json" >/dev/null
expect w0 202
http wbad "$tok_alice" POST '/v1/circuits/mul/proofs?wait=601' "${JSON[@]}" --data-binary @"$FX/input.json" >/dev/null
expect wbad 400 usage
echo "ok: POST ?wait=300 -> 200 with the proof inline (1, then an array of 3, in order), verified: true and by snarkjs; ?wait=0 -> 202; 601 -> 400"

# ---- all proofs, paged ----------------------------------------------------------------------
j3="$(jfield w3 r.job)"
http all "$tok_alice" GET "/v1/jobs/$j3/proofs" >/dev/null
expect all 200
[ "$(jfield all 'r.proofs.length + " " + (r.next === undefined)')" = "3 true" ] || fail "all proofs: $(head -c 300 "$tmp/http/all.body")"
proofs all
http pg1 "$tok_alice" GET "/v1/jobs/$j3/proofs?limit=2" >/dev/null
expect pg1 200
[ "$(jfield pg1 'r.proofs.map((p) => p.k).join(",") + " " + r.next')" = "0,1 /v1/jobs/$j3/proofs?offset=2&limit=2" ] ||
  fail "page 1: $(head -c 300 "$tmp/http/pg1.body")"
http pg2 "$tok_alice" GET "$(jfield pg1 r.next)" >/dev/null
expect pg2 200
[ "$(jfield pg2 'r.proofs.map((p) => p.k).join(",") + " " + (r.next === undefined)')" = "2 true" ] ||
  fail "page 2: $(head -c 300 "$tmp/http/pg2.body")"
[ "$(jfield pg2 'JSON.stringify(r.proofs[0].proof)')" = "$(jfield all 'JSON.stringify(r.proofs[2].proof)')" ] ||
  fail "page 2's proof is not the third"
http nojob "$tok_alice" GET "/v1/jobs/999999/proofs" >/dev/null
expect nojob 404 refused
echo "ok: GET /v1/jobs/$j3/proofs -> 3 proofs in one answer; ?limit=2 -> 2 + next -> the third"

# ---- vkey and calldata against snarkjs, both curves --------------------------------------------
for c in mul bls; do
  zk="$FX/circuit_final.zkey"
  [ "$c" = bls ] && zk="$BLS/circuit_final.zkey"
  (cd "$tmp" && "$SNARKJS" zkey export verificationkey "$zk" "$tmp/$c.vk.json" >/dev/null)
  http "vk$c" "$tok_alice" GET "/v1/circuits/$c/vkey" >/dev/null
  expect "vk$c" 200
  cmp "$tmp/http/vk$c.body" "$tmp/$c.vk.json" ||
    {
      diff <(head -c 2000 "$tmp/http/vk$c.body") <(head -c 2000 "$tmp/$c.vk.json") | head -20
      fail "$c: vkey is not snarkjs's"
    }
done
http nokey "$tok_alice" GET "/v1/circuits/nope/vkey" >/dev/null
expect nokey 404 refused
http bw "$tok_alice" POST '/v1/circuits/bls/proofs?wait=300' -H 'Content-Type: application/octet-stream' \
  --data-binary @"$BLS/witness.wtns" >/dev/null
expect bw 200
proofs bw "$BLS/verification_key.json"
for a in "w1 $(jfield w1 r.job) 0" "w3 $j3 2" "bw $(jfield bw r.job) 0"; do
  # shellcheck disable=SC2086 # the pair: split into its words
  set -- $a
  http "cd$1" "$tok_alice" GET "/v1/jobs/$2/proofs/$3?format=calldata" >/dev/null
  expect "cd$1" 200
  grep -qi '^content-type: text/plain' "$tmp/http/cd$1.head" || fail "calldata is not text/plain"
  jfield "$1.$3" 'JSON.stringify(r.proof)' >"$tmp/$1.cproof.json"
  jfield "$1.$3" 'JSON.stringify(r.publicSignals)' >"$tmp/$1.cpublic.json"
  (cd "$tmp" && "$SNARKJS" zkey export soliditycalldata "$tmp/$1.cpublic.json" "$tmp/$1.cproof.json") >"$tmp/$1.calldata"
  cmp "$tmp/http/cd$1.body" "$tmp/$1.calldata" ||
    {
      cat "$tmp/http/cd$1.body" "$tmp/$1.calldata"
      fail "calldata of $1 partition $3 is not snarkjs's"
    }
done
http badfmt "$tok_alice" GET "/v1/jobs/$j3/proofs/0?format=xml" >/dev/null
expect badfmt 400 usage
echo "ok: /vkey byte-equal to snarkjs zkey export verificationkey (bn128, bls12381); ?format=calldata byte-equal to" \
  "snarkjs zkey export soliditycalldata (bn128 x2, bls12381); a BLS .wtns with ?wait verified"

python3 "$ROOT/tests/lib/openapi_check.py" "$ROOT/docs/openapi.json" "$tmp/http" || fail "answers against docs/openapi.json"
echo "ok: every answer ($(wc -l <"$tmp/http/index")) matches docs/openapi.json"
daemon_shutdown_clean
echo "PASS: api_proofs ($n proofs verified by snarkjs)"
