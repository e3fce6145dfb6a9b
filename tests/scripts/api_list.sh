#!/usr/bin/env bash
# GET /v1/jobs and Cuzk-Metadata against a real cuzkd (--listen, CPU backend,
# --keep-finished 1 so that jobs leave cuzkd's table and are read from the job store):
# - paging: alice's 6 jobs in pages of 2, newest first, followed by next and by
#   next_cursor; a job submitted between two pages does not shift the next one;
# - tenant isolation: bob lists his job alone, alice never sees it;
# - filters: state, circuit, since; a bad state, circuit, since, limit or cursor is
#   400 naming the parameter;
# - metadata: returned by the POST, GET /v1/jobs/{id} (in cuzkd's table and after it
#   left it) and the list; 16 keys, a 40-character key and a 500-character value are
#   taken; 17 keys, a 41-character key, a 501-character value, a header over 4096
#   bytes, an array or bad JSON are 400 with parameter Cuzk-Metadata; the same
#   Idempotency-Key and body with other metadata answer the first job and its metadata;
# - attempts: 1 for each partition of a clean job, the same once it left the table.
# Every proof is verified by snarkjs; every answer is checked against docs/openapi.json.
# shellcheck disable=SC2154 # tok_NAME: set by api_tokens (api.sh, printf -v)
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../lib" && pwd)/daemon.sh"
. "$ROOT/tests/lib/wgen.sh"
. "$ROOT/tests/lib/api.sh"
daemon_init apilist
api_init
api_tokens alice
api_tokens bob
api_start http "" --keep-finished 1
JSON=(-H 'Content-Type: application/json')
META=(-H 'Cuzk-Metadata: {"order":"17","customer":"acme","n":3,"paid":true}')

# one job of alice's per call: ID of answer NAME, once its proof verifies
prove() { # NAME TOKEN X [curl args]
  local name="$1" tok="$2" x="$3"
  shift 3
  http "$name" "$tok" POST /v1/circuits/mul/proofs "${JSON[@]}" "$@" --data-binary "{\"x\":\"$x\",\"k\":\"7\"}" >/dev/null
  expect "$name" 202
  http "${name}w" "$tok" GET "/v1/jobs/$(jfield "$name" r.job)?wait=300" >/dev/null
  expect "${name}w" 200
  [ "$(jfield "${name}w" r.state)" = "done" ] || fail "$name: $(cat "$tmp/http/${name}w.body")"
  http "${name}p" "$tok" GET "/v1/jobs/$(jfield "$name" r.job)/proofs/0" >/dev/null
  expect "${name}p" 200
  verify_proof "${name}p"
}

# ---- metadata round trip, attempts of a clean job -----------------------------------------------
t0="$(date +%s)"
prove a1 "$tok_alice" 1 "${META[@]}"
j1="$(jfield a1 r.job)"
[ "$(jfield a1 'JSON.stringify(r.metadata)')" = '{"order":"17","customer":"acme","n":3,"paid":true}' ] ||
  fail "the POST's answer without its metadata: $(cat "$tmp/http/a1.body")"
[ "$(jfield a1w 'r.metadata.order + " " + r.parts.map(p => p.attempts).join()')" = "17 1" ] ||
  fail "GET of a clean job (in cuzkd's table): $(cat "$tmp/http/a1w.body")"
wait_until 600 job_evicted "$j1" || fail "job $j1 still in cuzkd's table after 60 s"
http a1s "$tok_alice" GET "/v1/jobs/$j1" >/dev/null
expect a1s 200
[ "$(jfield a1s 'r.metadata.customer + " " + r.metadata.n + " " + r.parts.map(p => p.attempts).join()')" = "acme 3 1" ] ||
  fail "GET of a clean job from the job store: $(cat "$tmp/http/a1s.body")"
echo "ok: metadata in the POST's answer and GET (table and store); attempts 1 in both"

# a 3-input job: each partition tried once
python3 -c 'import json; print(json.dumps([{"x": str(i), "k": "5"} for i in range(1, 4)]))' >"$tmp/three.json"
http a2 "$tok_alice" POST '/v1/circuits/mul/proofs?wait=300' "${JSON[@]}" --data-binary @"$tmp/three.json" >/dev/null
expect a2 200
for k in 0 1 2; do
  node -e "const r=JSON.parse(require('fs').readFileSync(process.argv[1],'utf8')); console.log(JSON.stringify(r.proofs[$k]))" \
    "$tmp/http/a2.body" >"$tmp/http/a2_$k.body"
  verify_proof "a2_$k"
done
j2="$(jfield a2 r.job)"
http a2g "$tok_alice" GET "/v1/jobs/$j2" >/dev/null
[ "$(jfield a2g 'r.parts.map(p => p.attempts).join()')" = "1,1,1" ] || fail "attempts of a clean job: $(cat "$tmp/http/a2g.body")"
echo "ok: a clean 3-partition job reads attempts 1,1,1"

# ---- metadata limits --------------------------------------------------------------------------
keys16="$(python3 -c 'import json; print(json.dumps({f"k{i:02d}": "v" for i in range(16)}))')"
keys17="$(python3 -c 'import json; print(json.dumps({f"k{i:02d}": "v" for i in range(17)}))')"
key40="$(python3 -c 'import json; print(json.dumps({"k" * 40: "v"}))')"
key41="$(python3 -c 'import json; print(json.dumps({"k" * 41: "v"}))')"
val500="$(python3 -c 'import json; print(json.dumps({"v": "\u00e9" * 500}, ensure_ascii=False))')"
val501="$(python3 -c 'import json; print(json.dumps({"v": "x" * 501}))')"
big="$(python3 -c 'import json; print(json.dumps({f"k{i}": "x" * 300 for i in range(14)}))')" # > 4096 bytes
i=0
for m in "$keys16" "$key40" "$val500"; do
  i=$((i + 1))
  http "mok$i" "$tok_alice" POST /v1/circuits/mul/proofs "${JSON[@]}" -H "Cuzk-Metadata: $m" \
    --data-binary "{\"x\":\"$((20 + i))\",\"k\":\"7\"}" >/dev/null
  expect "mok$i" 202
  [ "$(jfield "mok$i" 'JSON.stringify(r.metadata)')" = "$(python3 -c 'import json,sys; print(json.dumps(json.loads(sys.argv[1]), separators=(",", ":"), ensure_ascii=False))' "$m")" ] ||
    fail "metadata $i not returned as sent: $(head -c 300 "$tmp/http/mok$i.body")"
done
i=0
for m in "$keys17" "$key41" "$val501" "$big" '["a"]' '{"a":' '{"a":{"b":"c"}}' '{"a":"x","a":"y"}'; do
  i=$((i + 1))
  http "mbad$i" "$tok_alice" POST /v1/circuits/mul/proofs "${JSON[@]}" -H "Cuzk-Metadata: $m" \
    --data-binary @"$FX/input.json" >/dev/null
  expect "mbad$i" 400 usage
  [ "$(jfield "mbad$i" r.parameter)" = Cuzk-Metadata ] || fail "metadata $m: $(cat "$tmp/http/mbad$i.body")"
done
echo "ok: 16 keys, a 40-character key, a 500-character value taken; 8 bad headers 400 (Cuzk-Metadata), e.g. $(jfield mbad1 r.detail)"
for i in 1 2 3; do
  http "mokw$i" "$tok_alice" GET "/v1/jobs/$(jfield "mok$i" r.job)?wait=300" >/dev/null
  [ "$(jfield "mokw$i" r.state)" = "done" ] || fail "job of mok$i: $(cat "$tmp/http/mokw$i.body")"
  http "mokp$i" "$tok_alice" GET "/v1/jobs/$(jfield "mok$i" r.job)/proofs/0" >/dev/null
  verify_proof "mokp$i"
done

# the same key and body with other metadata: the first job, its metadata
http i1 "$tok_alice" POST /v1/circuits/mul/proofs "${JSON[@]}" -H 'Idempotency-Key: list-1' \
  -H 'Cuzk-Metadata: {"try":"first"}' --data-binary '{"x":"40","k":"7"}' >/dev/null
expect i1 202
http i2 "$tok_alice" POST /v1/circuits/mul/proofs "${JSON[@]}" -H 'Idempotency-Key: list-1' \
  -H 'Cuzk-Metadata: {"try":"second"}' --data-binary '{"x":"40","k":"7"}' >/dev/null
expect i2 202
[ "$(jfield i2 'r.existing + " " + r.job + " " + r.metadata.try')" = "true $(jfield i1 r.job) first" ] ||
  fail "a replayed key with other metadata: $(cat "$tmp/http/i2.body")"
http i1w "$tok_alice" GET "/v1/jobs/$(jfield i1 r.job)?wait=300" >/dev/null
http i1p "$tok_alice" GET "/v1/jobs/$(jfield i1 r.job)/proofs/0" >/dev/null
expect i1p 200
verify_proof i1p
echo "ok: the same Idempotency-Key and body with other metadata -> the first job, metadata {\"try\":\"first\"}"

# ---- bob's job; alice's list in pages --------------------------------------------------------
prove b1 "$tok_bob" 2 -H 'Cuzk-Metadata: {"who":"bob"}'
jb="$(jfield b1 r.job)"
mine="$(printf '%s\n' "$j1" "$j2" "$(jfield mok1 r.job)" "$(jfield mok2 r.job)" "$(jfield mok3 r.job)" "$(jfield i1 r.job)" | sort -rn | tr '\n' ' ')"
http lall "$tok_alice" GET /v1/jobs >/dev/null
expect lall 200
[ "$(jfield lall 'r.jobs.map(j => j.job).join(" ") + " "')" = "$mine" ] ||
  fail "alice's list: $(jfield lall 'r.jobs.map(j => j.job).join(" ")'), expected $mine"
[ "$(jfield lall 'r.next === undefined && r.next_cursor === undefined')" = true ] || fail "one page with a next"
[ "$(jfield lall "JSON.stringify(r.jobs.find(j => j.job == $j1))")" = \
  "{\"job\":$j1,\"circuit\":\"mul\",\"state\":\"done\",\"submitted_unix\":$(jfield a1s r.submitted_unix),\"partitions\":1,\"done\":1,\"failed\":0,\"metadata\":{\"order\":\"17\",\"customer\":\"acme\",\"n\":3,\"paid\":true}}" ] ||
  fail "job $j1 in the list: $(jfield lall "JSON.stringify(r.jobs.find(j => j.job == $j1))")"
http lbob "$tok_bob" GET /v1/jobs >/dev/null
expect lbob 200
[ "$(jfield lbob 'r.jobs.map(j => j.job + " " + j.metadata.who).join()')" = "$jb bob" ] || fail "bob's list: $(cat "$tmp/http/lbob.body")"
echo "ok: alice lists her 6 jobs newest first ($mine), bob his one; neither sees the other's"

# pages of 2, by next; a job submitted after the first page does not shift the others
http pg1 "$tok_alice" GET '/v1/jobs?limit=2' >/dev/null
expect pg1 200
got="$(jfield pg1 'r.jobs.map(j => j.job).join(" ")')"
prove a3 "$tok_alice" 3
next="$(jfield pg1 r.next)"
pages=1
while [ "$next" != undefined ]; do
  pages=$((pages + 1))
  http "pg$pages" "$tok_alice" GET "$next" >/dev/null
  expect "pg$pages" 200
  [ "$(jfield "pg$pages" 'r.jobs.length')" -le 2 ] || fail "page $pages over its limit"
  got="$got $(jfield "pg$pages" 'r.jobs.map(j => j.job).join(" ")')"
  next="$(jfield "pg$pages" r.next)"
  [ "$pages" -lt 10 ] || fail "more than 10 pages"
done
[ "$got " = "$mine" ] || fail "pages of 2 read $got, expected $mine"
[ "$pages" -eq 3 ] || fail "6 jobs in pages of 2: $pages pages"
# the same by next_cursor, with the new job first now
http pc1 "$tok_alice" GET '/v1/jobs?limit=4' >/dev/null
http pc2 "$tok_alice" GET "/v1/jobs?limit=4&cursor=$(jfield pc1 r.next_cursor)" >/dev/null
expect pc2 200
[ "$(jfield pc1 'r.jobs.map(j => j.job).join(" ")') $(jfield pc2 'r.jobs.map(j => j.job).join(" ")') " = "$(jfield a3 r.job) $mine" ] ||
  fail "by next_cursor: $(cat "$tmp/http/pc1.body") $(cat "$tmp/http/pc2.body")"
[ "$(jfield pc2 'r.next_cursor === undefined && r.next === undefined')" = true ] || fail "the last page has a next"
echo "ok: 3 pages of 2 by next while a job came in ($got); by next_cursor pages of 4: 4 + 3"

# ---- filters, bad parameters -------------------------------------------------------------------
http fdone "$tok_alice" GET '/v1/jobs?state=done&circuit=mul&since=0' >/dev/null
[ "$(jfield fdone 'r.jobs.length')" -eq 7 ] || fail "state=done: $(cat "$tmp/http/fdone.body")"
for q in 'state=failed' 'state=cancelled' 'state=running' 'circuit=other' "since=$(($(date +%s) + 3600))"; do
  http fnone "$tok_alice" GET "/v1/jobs?$q" >/dev/null
  expect fnone 200
  [ "$(jfield fnone 'r.jobs.length')" -eq 0 ] || fail "$q: $(cat "$tmp/http/fnone.body")"
done
http fsince "$tok_alice" GET "/v1/jobs?since=$t0&limit=200" >/dev/null
[ "$(jfield fsince 'r.jobs.length')" -eq 7 ] || fail "since=$t0: $(cat "$tmp/http/fsince.body")"
for q in state=finished circuit=a/b since=-1 since=x limit=0 limit=201 cursor=%21%21 cursor=MA; do
  http fbad "$tok_alice" GET "/v1/jobs?$q" >/dev/null
  expect fbad 400 usage
  [ "$(jfield fbad r.parameter)" = "${q%%=*}" ] || fail "$q: $(cat "$tmp/http/fbad.body")"
done
http fnotok "" GET /v1/jobs >/dev/null
expect fnotok 401 refused
echo "ok: state/circuit/since filter; 8 bad parameters 400 naming theirs; no token 401"

python3 "$ROOT/tests/lib/openapi_check.py" "$ROOT/docs/openapi.json" "$tmp/http" || fail "answers against docs/openapi.json"
echo "ok: every answer ($(wc -l <"$tmp/http/index")) matches docs/openapi.json"
daemon_shutdown_clean
echo "PASS: api_list ($n proofs verified by snarkjs)"
