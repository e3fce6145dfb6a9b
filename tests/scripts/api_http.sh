#!/usr/bin/env bash
# The HTTP API (cuzk-api) against a real cuzkd started with --listen on 127.0.0.1 and
# a free port, with curl and with Node's fetch; every proof it returns is verified by
# snarkjs. An input.json object (one partition), an array of three (one job, three
# partitions, proofs in the array's order), a .wtns body; ?wait= long-polls; the same
# Idempotency-Key with the same body answers the same job, with another body 409.
# Auth: no token and a wrong one 401 (WWW-Authenticate: Bearer); another tenant's job
# (status, long poll, proof, cancel) 404. Bad input: malformed JSON 400 with the byte offset, an
# array element that is no object 400, an unknown circuit 404, a Content-Length over
# the tenant's limit 413 before the body is read, a chunked body over the circuit's
# limit 413; a form body 415; unknown path 404, wrong method 405. /v1/circuits shows no path of the
# server. /healthz, /readyz, /metrics (the stats page's Prometheus text). kill -9 of
# cuzk-api: cuzkd starts it again and it answers (and serves the proofs kept before).
# kill -9 of cuzkd right after a submit: after the restart the job is done, the same
# Idempotency-Key answers it, its proofs and an older job's are served from the store.
# Signals: an input object without one of the circuit's signals, or with one it does
# not have, is a 422 "mismatch" naming it (and the array element) before any job; a
# circuit "small" compiled here with a circom assert(x < 10): x = 12 fails the job with
# circom's message as the partition's reason, x = 3 proves. No answer names a path of
# the server (the test's temp dir, the fixtures), not even the error of circuit "gone",
# whose zkey is missing (its file's name is kept). Tokens: a tenant added to the file
# works after SIGHUP of cuzk-api, one removed gets 401 after `cuzk reload` (forwarded
# by cuzkd), and a file that does not read keeps the old tokens; a long poll under way
# across the reloads still answers.
# Every answer is checked against docs/openapi.json (tests/lib/openapi_check.py).
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../lib" && pwd)/daemon.sh"
. "$ROOT/tests/lib/wgen.sh"
. "$ROOT/tests/lib/api.sh"
daemon_init api
api_init

api_tokens alice
api_tokens bob - - 2K # bodies of 2 KiB at most: a witness is more

# "small": a circuit with a circom assert, compiled here (circom runs under WASI and
# sees only the current directory: relative paths); its generator in $tmp (--wgen-dir)
mkdir -p "$tmp/a"
cp "$ROOT/tests/fixtures/circuits/small_assert.circom" "$tmp/a/small.circom"
(cd "$tmp/a" && "$CIRCOM" small.circom --r1cs --c --sym --prime bn128 -o . >"$tmp/circom.log" 2>&1) ||
  fail "circom: $(tail -5 "$tmp/circom.log")"
"$SNARKJS" groth16 setup "$tmp/a/small.r1cs" "$FIXTURES/ptau/bn128_12.ptau" "$tmp/a/small.zkey" >/dev/null ||
  fail "snarkjs groth16 setup of small"
"$SNARKJS" zkey export verificationkey "$tmp/a/small.zkey" "$tmp/a/small.vk.json" >/dev/null
"$BUILD/bin/cuzk" build-witness --prime bn128 --r1cs "$tmp/a/small.r1cs" "$tmp/a/small_cpp" "$tmp/small.wgen" >/dev/null ||
  fail "cuzk build-witness of small"
api_start http "max-input-bytes = 1M
[circuit small]
zkey = $tmp/a/small.zkey
witness-gen = $tmp/small.wgen
[circuit gone]
zkey = $tmp/nowhere/gone.zkey"
http_until 1200 200 ready "" GET /readyz
expect ready 200
http health "" GET /healthz >/dev/null
expect health 200
http metrics "" GET /metrics >/dev/null
expect metrics 200
grep -q '^cuzk_' "$tmp/http/metrics.body" || fail "/metrics has no cuzk_ series"
echo "ok: /healthz, /readyz (stages up, mul resident), /metrics"

# ---- auth ------------------------------------------------------------------------
http noauth "" GET /v1/circuits >/dev/null
expect noauth 401 refused
grep -qi '^www-authenticate: bearer' "$tmp/http/noauth.head" || fail "401 without WWW-Authenticate"
# shellcheck disable=SC2154 # tok_NAME: set by api_tokens (api.sh)
http wrongtok "0123$tok_alice" GET /v1/circuits >/dev/null
expect wrongtok 401 refused
http circuits "$tok_alice" GET /v1/circuits >/dev/null
expect circuits 200
[ "$(jfield circuits 'r.circuits[0].name + " " + r.circuits[0].state + " " + r.circuits[0].curve')" = "mul resident bn128" ] ||
  fail "circuits: $(cat "$tmp/http/circuits.body")"
grep -q "$FX" "$tmp/http/circuits.body" && fail "/v1/circuits shows a path of the server"
[ "$(jfield circuits 'r.circuits[0].inputs.map((i) => i.name + ":" + i.size).join(" ")')" = "x:1 k:1" ] ||
  fail "circuits: mul's input signals: $(cat "$tmp/http/circuits.body")"
[ "$(jfield circuits 'r.circuits.filter((c) => c.name === "gone").map((c) => c.state + " " + /gone\.zkey/.test(c.error)).join("")')" = "failed true" ] ||
  fail "circuits: the failed circuit gone: $(cat "$tmp/http/circuits.body")"
echo "ok: no token and a wrong one -> 401; /v1/circuits lists mul with its inputs x and k, gone failed naming its zkey, no server path"

# ---- one input.json, long-polled, its proof verified -------------------------------
http one "$tok_alice" POST /v1/circuits/mul/proofs -H 'Content-Type: application/json' \
  --data-binary @"$FX/input.json" >/dev/null
expect one 202
job="$(jfield one r.job)"
grep -qi "^location: /v1/jobs/$job" "$tmp/http/one.head" || fail "no Location: /v1/jobs/$job"
http onew "$tok_alice" GET "/v1/jobs/$job?wait=300" >/dev/null
expect onew 200
[ "$(jfield onew r.state)" = "done" ] || fail "job $job: $(cat "$tmp/http/onew.body")"
[ "$(jfield onew 'typeof r.parts[0].timings_ms.prove')" = number ] || fail "no timings: $(cat "$tmp/http/onew.body")"
fetch_proof onep "$tok_alice" "/v1/jobs/$job/proofs/0"
echo "ok: input.json -> 202 + Location, ?wait long-poll -> done with timings, proof verified by snarkjs"

# ---- another tenant -----------------------------------------------------------------
# shellcheck disable=SC2154
http bobjob "$tok_bob" GET "/v1/jobs/$job" >/dev/null
expect bobjob 404 refused
http bobproof "$tok_bob" GET "/v1/jobs/$job/proofs/0" >/dev/null
expect bobproof 404 refused
http bobdel "$tok_bob" DELETE "/v1/jobs/$job" >/dev/null
expect bobdel 404 refused
http bobwait "$tok_bob" GET "/v1/jobs/$job?wait=30" >/dev/null
expect bobwait 404 refused
echo "ok: bob gets 404 for alice's job (status, long poll, proof, cancel)"

# ---- an array of three with Node's fetch; a .wtns body ------------------------------
node - "$api_base" "$tok_alice" "$tmp/fetch.json" <<'JS' || fail "fetch: $(cat "$tmp/fetch.json" 2>/dev/null)"
const [base, tok, out] = process.argv.slice(2);
const H = { Authorization: `Bearer ${tok}` };
(async () => {
  const inputs = [{ x: "3", k: "5" }, { x: "7", k: "1234567" }, { x: "11", k: "2" }];
  let r = await fetch(`${base}/v1/circuits/mul/proofs`, { method: "POST",
    headers: { ...H, "Content-Type": "application/json" }, body: JSON.stringify(inputs) });
  if (r.status !== 202) throw new Error(`submit ${r.status} ${await r.text()}`);
  const sub = await r.json();
  r = await fetch(`${base}${r.headers.get("location")}?wait=300`, { headers: H });
  const job = await r.json();
  const proofs = [];
  for (let k = 0; k < 3; k++)
    proofs.push(await (await fetch(`${base}/v1/jobs/${sub.job}/proofs/${k}`, { headers: H })).json());
  require("fs").writeFileSync(out, JSON.stringify({ sub, job, proofs }));
})().catch((e) => { console.error(e.message); process.exit(1); });
JS
[ "$(js 'r.sub.partitions + " " + r.job.state + " " + r.job.parts.length' "$(cat "$tmp/fetch.json")")" = "3 done 3" ] ||
  fail "array job: $(cat "$tmp/fetch.json")"
for k in 0 1 2; do
  mkdir -p "$tmp/http"
  js "JSON.stringify(r.proofs[$k])" "$(cat "$tmp/fetch.json")" >"$tmp/http/arr$k.body"
  verify_proof "arr$k"
done
# in the array's order: partition k's public output is that input's (x^(k) chain)
[ "$(js 'r.proofs[1].publicSignals.join(",")' "$(cat "$tmp/fetch.json")")" = "$(jfield onep 'r.publicSignals.join(",")')" ] ||
  fail "proof 1 of the array is not the proof of its input (x=7, as the first job's)"
http wtns "$tok_alice" POST /v1/circuits/mul/proofs -H 'Content-Type: application/octet-stream' \
  --data-binary @"$FX/witness.wtns" >/dev/null
expect wtns 202
http wtnsw "$tok_alice" GET "/v1/jobs/$(jfield wtns r.job)?wait=300" >/dev/null
expect wtnsw 200
fetch_proof wtnsp "$tok_alice" "/v1/jobs/$(jfield wtns r.job)/proofs/0"
echo "ok: Node fetch: an array of 3 inputs -> one job, 3 proofs in order; a .wtns body; snarkjs verifies all"

# ---- idempotency ----------------------------------------------------------------------
http idem1 "$tok_alice" POST /v1/circuits/mul/proofs -H 'Content-Type: application/json' -H 'Idempotency-Key: order-17' \
  --data-binary '{"x":"5","k":"9"}' >/dev/null
expect idem1 202
http idem2 "$tok_alice" POST /v1/circuits/mul/proofs -H 'Content-Type: application/json' -H 'Idempotency-Key: order-17' \
  --data-binary '{"x":"5","k":"9"}' >/dev/null
expect idem2 202
[ "$(jfield idem2 r.job)" = "$(jfield idem1 r.job)" ] && [ "$(jfield idem2 r.existing)" = true ] ||
  fail "same key, same body: $(cat "$tmp/http/idem2.body")"
http idem3 "$tok_alice" POST /v1/circuits/mul/proofs -H 'Content-Type: application/json' -H 'Idempotency-Key: order-17' \
  --data-binary '{"x":"6","k":"9"}' >/dev/null
expect idem3 409 refused
[ "$(jfield idem3 r.code)" = idempotency_conflict ] || fail "409 code: $(cat "$tmp/http/idem3.body")"
http idemw "$tok_alice" GET "/v1/jobs/$(jfield idem1 r.job)?wait=300" >/dev/null
fetch_proof idemp "$tok_alice" "/v1/jobs/$(jfield idem1 r.job)/proofs/0"
echo "ok: Idempotency-Key: same body -> the same job (existing), another body -> 409 idempotency_conflict"

# ---- bad requests ----------------------------------------------------------------------
http badjson "$tok_alice" POST /v1/circuits/mul/proofs -H 'Content-Type: application/json' \
  --data-binary '{"x": "5", "k": }' >/dev/null
expect badjson 400 format
[ "$(jfield badjson r.position)" = 17 ] || fail "400 without the byte offset: $(cat "$tmp/http/badjson.body")"
http badelem "$tok_alice" POST /v1/circuits/mul/proofs -H 'Content-Type: application/json' \
  --data-binary '[{"x":"5","k":"9"}, 7]' >/dev/null
expect badelem 400 format
[ "$(jfield badelem r.index)" = 1 ] || fail "400 without the element: $(cat "$tmp/http/badelem.body")"
http nocirc "$tok_alice" POST /v1/circuits/nope/proofs -H 'Content-Type: application/json' \
  --data-binary @"$FX/input.json" >/dev/null
expect nocirc 404 refused
http dots "$tok_alice" POST /v1/circuits/..%2F..%2Fetc/proofs --data-binary '{}' >/dev/null
expect dots 404
http big "$tok_bob" POST /v1/circuits/mul/proofs -H 'Content-Type: application/octet-stream' \
  --data-binary @"$FX/witness.wtns" >/dev/null
expect big 413 refused
[ "$(jfield big r.limit)" = 2048 ] || fail "413 without bob's limit: $(cat "$tmp/http/big.body")"
head -c 1100000 /dev/zero >"$tmp/zeros"
http chunked "$tok_alice" POST /v1/circuits/mul/proofs -H 'Content-Type: application/octet-stream' \
  -H 'Transfer-Encoding: chunked' --data-binary @"$tmp/zeros" >/dev/null
expect chunked 413 refused
http form "$tok_alice" POST /v1/circuits/mul/proofs --data 'x=5&k=9' >/dev/null
expect form 415 usage
http nopath "$tok_alice" GET /v1/nothing >/dev/null
expect nopath 404 usage
http method "$tok_alice" PUT /v1/circuits >/dev/null
expect method 405 usage
http nojob "$tok_alice" GET /v1/jobs/999999 >/dev/null
expect nojob 404 refused
http notproof "$tok_alice" GET "/v1/jobs/$job/proofs/5" >/dev/null
expect notproof 400 usage
echo "ok: malformed JSON -> 400 at byte 17 (jansson: past the bad token); a non-object element -> 400; unknown circuit, ../ -> 404;" \
  "over bob's 2K -> 413 (Content-Length); chunked over 1M -> 413; a form body -> 415; 404/405; proof index out of range -> 400"

# ---- signals: missing, extra, in an array; a circom assert ------------------------------
sig() { # NAME BODY SIGNAL CODE [INDEX]
  http "$1" "$tok_alice" POST /v1/circuits/mul/proofs -H 'Content-Type: application/json' --data-binary "$2" >/dev/null
  expect "$1" 422 mismatch
  [ "$(jfield "$1" 'r.signal + " " + r.code + " " + r.index')" = "$3 $4 ${5:-undefined}" ] ||
    fail "$1: $(cat "$tmp/http/$1.body")"
  grep -qF "signal $3" "$tmp/http/$1.body" || fail "$1: the detail does not name signal $3"
}
sig nok '{"x":"5"}' k missing_signal
sig extra '{"x":"5","k":"9","y":"1"}' y unknown_signal
sig arrmiss '[{"x":"5","k":"9"},{"k":"9"}]' x missing_signal 1
echo "ok: a signal left out, one the circuit lacks, one left out of array element 1 -> 422 mismatch naming it"
http small "$tok_alice" POST /v1/circuits/small/proofs -H 'Content-Type: application/json' --data-binary '{"x":"12"}' >/dev/null
expect small 202
http smallw "$tok_alice" GET "/v1/jobs/$(jfield small r.job)?wait=300" >/dev/null
expect smallw 200
[ "$(jfield smallw r.state)" = failed ] || fail "assert job: $(cat "$tmp/http/smallw.body")"
jfield smallw r.parts[0].reason | grep -Eq "Failed assert in template.* Small line 2" ||
  fail "the partition's reason is not circom's message: $(cat "$tmp/http/smallw.body")"
http smallp "$tok_alice" GET "/v1/jobs/$(jfield small r.job)/proofs/0" >/dev/null
[ "$(jfield smallp r.status)" -ge 400 ] || fail "a proof of a failed partition: $(cat "$tmp/http/smallp.body")"
http small3 "$tok_alice" POST /v1/circuits/small/proofs -H 'Content-Type: application/json' --data-binary '{"x":"3"}' >/dev/null
expect small3 202
http small3w "$tok_alice" GET "/v1/jobs/$(jfield small3 r.job)?wait=300" >/dev/null
expect small3w 200
http small3p "$tok_alice" GET "/v1/jobs/$(jfield small3 r.job)/proofs/0" >/dev/null
expect small3p 200
VK="$tmp/a/small.vk.json" verify_proof small3p
echo "ok: circom's assert(x < 10) with x = 12: the job fails, its reason is circom's ($(jfield smallw r.parts[0].reason | head -c 80)); x = 3 proves"

# ---- cancel -----------------------------------------------------------------------------
http can "$tok_alice" POST /v1/circuits/mul/proofs -H 'Content-Type: application/json' \
  --data-binary '[{"x":"1","k":"1"},{"x":"2","k":"2"},{"x":"3","k":"3"},{"x":"4","k":"4"}]' >/dev/null
expect can 202
http cand "$tok_alice" DELETE "/v1/jobs/$(jfield can r.job)" >/dev/null
expect cand 200
http canw "$tok_alice" GET "/v1/jobs/$(jfield can r.job)?wait=300" >/dev/null
expect canw 200
[ "$(jfield canw r.state)" != running ] || fail "cancelled job still running: $(cat "$tmp/http/canw.body")"
echo "ok: DELETE /v1/jobs/ID -> 200; the job is decided ($(jfield canw r.state))"

# ---- kill -9 of cuzk-api: cuzkd starts it again ------------------------------------------
apipid="$(pgrep -f -- "cuzk-api --socket $run/$inst.sock" | head -n1)"
[ -n "$apipid" ] || fail "no cuzk-api process"
kill -9 "$apipid"
for _ in $(seq 1 1200); do
  p2="$(pgrep -f -- "cuzk-api --socket $run/$inst.sock" | head -n1 || true)"
  [ -n "$p2" ] && [ "$p2" != "$apipid" ] && break
  sleep 0.1
done
api_wait_up
fetch_proof again "$tok_alice" "/v1/jobs/$job/proofs/0"
echo "ok: kill -9 of cuzk-api (pid $apipid): cuzkd started it again (pid $p2); the proof is served again"

# ---- kill -9 of cuzkd right after a submit: the job and the proofs before it survive ----
http k9 "$tok_alice" POST /v1/circuits/mul/proofs -H 'Content-Type: application/json' -H 'Idempotency-Key: k9' \
  --data-binary '[{"x":"2","k":"3"},{"x":"4","k":"5"}]' >/dev/null
expect k9 202
daemon_kill9
daemon_start --config "$tmp/cuzkd.conf" --devices cpu:1
api_wait_up
http k9again "$tok_alice" POST /v1/circuits/mul/proofs -H 'Content-Type: application/json' -H 'Idempotency-Key: k9' \
  --data-binary '[{"x":"2","k":"3"},{"x":"4","k":"5"}]' >/dev/null
expect k9again 202
[ "$(jfield k9again r.job)" = "$(jfield k9 r.job)" ] || fail "the idempotency key after the restart: $(cat "$tmp/http/k9again.body")"
http k9w "$tok_alice" GET "/v1/jobs/$(jfield k9 r.job)?wait=300" >/dev/null
expect k9w 200
[ "$(jfield k9w r.state)" = "done" ] || fail "job after kill -9: $(cat "$tmp/http/k9w.body")"
for k in 0 1; do
  fetch_proof "k9p$k" "$tok_alice" "/v1/jobs/$(jfield k9 r.job)/proofs/$k"
done
fetch_proof oldp "$tok_alice" "/v1/jobs/$job/proofs/0"
http oldbob "$tok_bob" GET "/v1/jobs/$job" >/dev/null
expect oldbob 404 refused
echo "ok: kill -9 of cuzkd after a submit: restarted, its API answers; the same Idempotency-Key -> the same job;" \
  "both proofs and the first job's (from the store) verify; still 404 to bob"

# ---- the tokens file read again: SIGHUP of cuzk-api, `cuzk reload` through cuzkd --------
apipid="$(pgrep -f -- "cuzk-api --socket $run/$inst.sock" | head -n1)"
http hold "$tok_alice" POST /v1/circuits/mul/proofs -H 'Content-Type: application/json' \
  --data-binary '[{"x":"6","k":"7"},{"x":"8","k":"9"}]' >/dev/null
expect hold 202
http holdw "$tok_alice" GET "/v1/jobs/$(jfield hold r.job)?wait=300" >/dev/null &
holdpid=$!
api_tokens carol
# shellcheck disable=SC2154
http carol1 "$tok_carol" GET /v1/circuits >/dev/null
expect carol1 401 refused
kill -HUP "$apipid"
http_until 600 200 carol2 "$tok_carol" GET /v1/circuits
expect carol2 200
grep -v '^bob ' "$tmp/tokens" >"$tmp/tokens.new" && chmod 600 "$tmp/tokens.new" && mv "$tmp/tokens.new" "$tmp/tokens"
cuzk reload >/dev/null 2>&1 || true # cuzkd's circuits read again too; its answer is not the point here
http_until 600 401 bobgone "$tok_bob" GET /v1/circuits
expect bobgone 401 refused
cp "$tmp/tokens" "$tmp/tokens.good"
echo "not a token line" >>"$tmp/tokens"
kill -HUP "$apipid"
for _ in $(seq 1 600); do
  grep -q "SIGHUP: .*line .*the old tokens stay" "$tmp/cuzkd.log" && break
  sleep 0.1
done
grep -q "SIGHUP: .*the old tokens stay" "$tmp/cuzkd.log" || fail "no logged error for a tokens file that does not read"
http carol3 "$tok_carol" GET /v1/circuits >/dev/null
expect carol3 200
http alice3 "$tok_alice" GET /v1/circuits >/dev/null
expect alice3 200
mv "$tmp/tokens.good" "$tmp/tokens"
wait "$holdpid" || true
expect holdw 200
[ "$(jfield holdw r.state)" = "done" ] || fail "the long poll across the reloads: $(cat "$tmp/http/holdw.body")"
[ "$(pgrep -f -- "cuzk-api --socket $run/$inst.sock" | head -n1)" = "$apipid" ] || fail "cuzk-api was restarted by a reload"
echo "ok: tokens file: carol added -> 401 before, 200 after SIGHUP; bob removed -> 401 after cuzk reload;" \
  "a bad line -> logged, old tokens kept; a long poll across the reloads answered; the same cuzk-api process"

# ---- no answer names a path of this machine -------------------------------------------------
for d in "$tmp" "$FX" "$ROOT"; do
  if grep -lF -- "$d" "$tmp/http/"*.body "$tmp/http/"*.head >/dev/null 2>&1; then
    fail "an answer names $d: $(grep -lF -- "$d" "$tmp/http/"*.body "$tmp/http/"*.head | head -3)"
  fi
done
echo "ok: no answer ($(wc -l <"$tmp/http/index")) names the temp dir, the fixtures or the source tree"

python3 "$ROOT/tests/lib/openapi_check.py" "$ROOT/docs/openapi.json" "$tmp/http" || fail "answers against docs/openapi.json"
echo "ok: every answer ($(wc -l <"$tmp/http/index")) matches docs/openapi.json"
daemon_shutdown_clean
echo "PASS: api_http ($n proofs verified by snarkjs)"
