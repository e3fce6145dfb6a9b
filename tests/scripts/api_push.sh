#!/usr/bin/env bash
# Completion pushed (docs/api.md, "Completion pushed"), against a real cuzkd (CPU
# backend) and a cuzk-api of the test's own (--callback-db in $tmp, retries 100 ms
# apart at first), with a receiver on 127.0.0.1 (tests/lib/callback_receiver.py):
# - a callback's body (type job.ended, job, circuit, state, partitions, done, failed,
#   ended_unix) and its Cuzk-Signature (HMAC-SHA256 of "t.BODY" with the tenant's
#   secret from `cuzk token --callback-hosts`) are what the receiver checks;
# - a receiver that answers 500 twice gets it on the third try, and GET /v1/jobs/ID
#   shows callback {state delivered, attempts 3, last_status 200};
# - cuzk-api killed (-9) while a callback is being retried: the next cuzk-api delivers
#   it once, and after another kill -9 it is not sent again (a later job's callback,
#   which the deliverer reaches only after every older pending one, arrives alone);
# - a job that ends and leaves cuzkd's table (--keep-finished 1) while no cuzk-api
#   runs: the next one finds it in the store and calls back;
# - a URL to a host not on the tenant's list, over plain http to an https-only entry,
#   to a listed name that resolves to loopback (SSRF: only an address on the list may
#   be private), and any URL of a tenant without callbacks: 400 naming callback_url;
# - GET /v1/jobs/ID/events (the synth stage stopped while the job waits, so the
#   stream sees its partitions queued first): an event per partition, each one done
#   before the job event (done), then the stream ends; a client that hangs up gives
#   its long poll back (cuzk_api_long_polls); Last-Event-ID: end is 204; the last
#   part id after the end gives the partitions again and the job event.
# Every proof is verified by snarkjs; every JSON answer is checked against
# docs/openapi.json.
# shellcheck disable=SC2154 # tok_NAME: set by api_tokens (api.sh, printf -v)
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../lib" && pwd)/daemon.sh"
. "$ROOT/tests/lib/wgen.sh"
. "$ROOT/tests/lib/api.sh"
daemon_init apipush
api_init
command -v python3 >/dev/null || {
  echo "SKIP: python3 missing"
  exit 77
}

# ---- tenants: alice may be called back at the receiver, bob not at all ------------------
rport="$(free_port)"
api_tokens_callback alice "http://127.0.0.1:$rport,hooks.example.com,http://localhost:$rport"
api_tokens bob

recv_start "$tmp/alice.secret"
daemon_on_exit="[ -z \"\${api_pid:-}\" ] || kill \"\$api_pid\" 2>/dev/null || true; ${daemon_on_exit}"

# ---- cuzkd, and cuzk-api on its own ------------------------------------------------------
printf 'buffer-mb = 16\n[circuit mul]\nzkey = %s\nr1cs = %s\nwitness-gen = %s\n' \
  "$FX/circuit_final.zkey" "$FX/circuit.r1cs" "$gen" >"$tmp/cuzkd.conf"
daemon_start --config "$tmp/cuzkd.conf" --devices cpu:1 --keep-finished 1
port="$(free_port)"
api_base="http://127.0.0.1:$port"
api_pid=""
api_run() {
  "$BUILD/bin/cuzk-api" --socket "$run/$inst.sock" --listen "127.0.0.1:$port" --api-tokens "$tmp/tokens" \
    --user "$(id -u)" --instance "$inst" --callback-db "$tmp/callbacks.db" --callback-retry-base-ms 100 \
    >>"$tmp/api.log" 2>&1 &
  api_pid=$!
  api_wait_up
}
api_run

JSON=(-H 'Content-Type: application/json')
enc() { python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"; }
# submit NAME PATH: a job of alice's with its callback at the receiver's PATH; prints its id
submit() {
  http "$1" "$tok_alice" POST "/v1/circuits/mul/proofs?callback_url=$(enc "http://127.0.0.1:$rport$2")" \
    "${JSON[@]}" --data-binary @"$FX/input.json" >/dev/null
  expect "$1" 202
  jfield "$1" r.job
}
# delivered NAME JOB: until GET /v1/jobs/JOB (answer NAME) reads callback.state delivered:
# the state is committed just after the receiver answered (a liveness bound of 60 s)
delivered() {
  local _
  for _ in $(seq 1 600); do
    http "$1" "$tok_alice" GET "/v1/jobs/$2" >/dev/null
    [ "$(jfield "$1" 'r.callback.state')" = delivered ] && return 0
    sleep 0.1
  done
  fail "job $2's callback: $(cat "$tmp/http/$1.body")"
}
proof_of() { # NAME JOB: the job's proof 0 fetched and verified
  http "$1" "$tok_alice" GET "/v1/jobs/$2/proofs/0" >/dev/null
  expect "$1" 200
  verify_proof "$1"
}

# ---- a callback, signed -------------------------------------------------------------------
j1="$(submit s1 /ok/1)"
recv_wait /ok/1 200 1
python3 - "$tmp/recv.log" "$j1" <<'EOF' || fail "callback of job $j1: $(cat "$tmp/recv.log")"
import json, sys
r = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
r = [x for x in r if x["path"] == "/ok/1"]
assert len(r) == 1, r
b = r[0]["body"]
assert r[0]["sig_ok"], "signature"
assert b["type"] == "job.ended" and b["job"] == int(sys.argv[2]) and b["circuit"] == "mul", b
assert b["state"] == "done" and b["partitions"] == 1 and b["done"] == 1 and b["failed"] == 0, b
assert isinstance(b["ended_unix"], int) and b["ended_unix"] > 1600000000, b
EOF
proof_of s1p "$j1"
delivered s1g "$j1"
[ "$(jfield s1g 'r.callback.state + " " + r.callback.attempts + " " + r.callback.last_status')" = "delivered 1 200" ] ||
  fail "job $j1's callback: $(cat "$tmp/http/s1g.body")"

# ---- 500 twice, then 200: the third try -----------------------------------------------------
j2="$(submit s2 /fail2/2)"
recv_wait /fail2/2 200 1
[ "$(recv_count /fail2/2 500)" = 2 ] || fail "job $j2: expected two 500s before the 200: $(cat "$tmp/recv.log")"
delivered s2g "$j2"
[ "$(jfield s2g 'r.callback.state + " " + r.callback.attempts + " " + r.callback.last_status')" = "delivered 3 200" ] ||
  fail "job $j2's callback: $(cat "$tmp/http/s2g.body")"
proof_of s2p "$j2"

# ---- kill -9 while retrying: delivered once by the next cuzk-api -----------------------------
touch "$tmp/hold"
j3="$(submit s3 /hold/3)"
recv_wait /hold/3 500 1
kill -9 "$api_pid"
wait "$api_pid" 2>/dev/null || true
rm -f "$tmp/hold"
api_run
recv_wait /hold/3 200 1
delivered s3g "$j3"
proof_of s3p "$j3"
# delivered is kept: after another kill -9, a newer job's callback comes, and no second one of j3
kill -9 "$api_pid"
wait "$api_pid" 2>/dev/null || true
api_run
j4="$(submit s4 /ok/4)"
recv_wait /ok/4 200 1
[ "$(recv_count /hold/3 200)" = 1 ] || fail "job $j3's callback was delivered again after a restart"
[ "$(recv_count /ok/1 200)" = 1 ] || fail "job $j1's callback was delivered again after a restart"
proof_of s4p "$j4"

# ---- a job that ends, and leaves cuzkd's table, while no cuzk-api runs ----------------------
j6="$(submit s6 /ok/6)"
kill -9 "$api_pid"
wait "$api_pid" 2>/dev/null || true
cuzk wait "$j6" >/dev/null 2>&1 || true
# --keep-finished 1: then only the job store knows it
for _ in $(seq 1 600); do
  cuzk --json status 2>/dev/null | grep -q "\"id\": *${j6}[,}]" || break
  sleep 0.1
done
api_run
recv_wait /ok/6 200 1
proof_of s6p "$j6"

# ---- refused URLs ------------------------------------------------------------------------------
bad() { # NAME TOKEN URL
  http "$1" "$2" POST "/v1/circuits/mul/proofs?callback_url=$(enc "$3")" "${JSON[@]}" \
    --data-binary @"$FX/input.json" >/dev/null
  expect "$1" 400 usage
  [ "$(jfield "$1" r.parameter)" = callback_url ] || fail "$1: $(cat "$tmp/http/$1.body")"
}
bad b1 "$tok_alice" "https://evil.example.net/hook"
bad b2 "$tok_alice" "http://hooks.example.com/hook" # an https-only entry
bad b3 "$tok_alice" "http://127.0.0.1:$((rport == 65535 ? 1 : rport + 1))/hook"
bad b4 "$tok_alice" "not a url"
bad b6 "$tok_alice" "http://localhost:$rport/ok/6" # on the list, but a name that leads to loopback
grep -q "private or loopback" "$tmp/http/b6.body" || fail "b6: $(cat "$tmp/http/b6.body")"
bad b5 "$tok_bob" "http://127.0.0.1:$rport/ok/5"

# ---- Server-Sent Events -------------------------------------------------------------------------
node -e 'const x=require("fs").readFileSync(process.argv[1],"utf8"); process.stdout.write(JSON.stringify([JSON.parse(x),JSON.parse(x),JSON.parse(x)]))' \
  "$FX/input.json" >"$tmp/three.json"
# The synth stage stopped (SIGSTOP) while the job is submitted: its partitions wait,
# so the streams see them before they are done, whatever the machine's speed.
synth="$(stage_pids synth)"
[ -n "$synth" ] || fail "no synth stage"
kill -STOP "$synth"
http e0 "$tok_alice" POST /v1/circuits/mul/proofs "${JSON[@]}" --data-binary @"$tmp/three.json" >/dev/null
expect e0 202
j5="$(jfield e0 r.job)"
# until FILE shows partition 2 (the first batch has every partition)
first_batch() {
  local _
  for _ in $(seq 1 600); do
    grep -q '"k":2' "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  fail "no first batch of events in 60 s: $(cat "$1")"
}
long_polls() { curl -s "$api_base/metrics" | awk '$1 == "cuzk_api_long_polls" {print $2}'; }
# a client that hangs up: its long poll is given back
curl -sS -N -H "Authorization: Bearer $tok_alice" "$api_base/v1/jobs/$j5/events" >"$tmp/evcut.txt" 2>/dev/null &
cut_pid=$!
first_batch "$tmp/evcut.txt"
[ "$(long_polls)" = 1 ] || fail "an open stream is not counted as a long poll: $(long_polls)"
kill "$cut_pid"
wait "$cut_pid" 2>/dev/null || true
for _ in $(seq 1 600); do
  [ "$(long_polls)" = 0 ] && break
  sleep 0.1
done
[ "$(long_polls)" = 0 ] || fail "a stream whose client hung up is still counted: $(long_polls)"
# a stream to the end
http ev "$tok_alice" GET "/v1/jobs/$j5/events" -N --max-time 300 >"$tmp/ev.status" &
ev_pid=$!
first_batch "$tmp/http/ev.body"
kill -CONT "$synth"
wait "$ev_pid" || true
[ "$(cat "$tmp/ev.status")" = 200 ] || fail "the events stream did not end well: $(cat "$tmp/http/ev.body")"
grep -q '"k":0,"state":"queued"' "$tmp/http/ev.body" || fail "events: no queued partition 0: $(cat "$tmp/http/ev.body")"
grep -qi '^content-type: text/event-stream' "$tmp/http/ev.head" || fail "events: $(cat "$tmp/http/ev.head")"
check_events() { # FILE: each of the 3 partitions done, then one job event (done), last
  python3 - "$1" <<'EOF'
import json, sys
evs, cur = [], {}
for line in open(sys.argv[1]).read().split("\n"):
    if line == "":
        if cur: evs.append(cur)
        cur = {}
    elif line.startswith(":"):
        continue
    else:
        k, _, v = line.partition(": ")
        cur[k] = v
assert evs and evs[-1].get("event") == "job" and evs[-1].get("id") == "end", evs
job = json.loads(evs[-1]["data"])
assert job["state"] == "done" and job["done"] == 3, job
last = {}
for e in evs[:-1]:
    assert e["event"] == "part", e
    d = json.loads(e["data"])
    last[d["k"]] = d["state"]
assert last == {0: "done", 1: "done", 2: "done"}, last
ids = [e["id"] for e in evs[:-1] if "id" in e]
assert ids and all(i.isdigit() for i in ids), evs
print(ids[-1])
EOF
}
lastid="$(check_events "$tmp/http/ev.body")" || fail "events of job $j5: $(cat "$tmp/http/ev.body")"
for k in 0 1 2; do
  http "ep$k" "$tok_alice" GET "/v1/jobs/$j5/proofs/$k" >/dev/null
  expect "ep$k" 200
  verify_proof "ep$k"
done
st="$(curl -sS -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $tok_alice" -H 'Last-Event-ID: end' \
  "$api_base/v1/jobs/$j5/events")"
[ "$st" = 204 ] || fail "events with Last-Event-ID: end: $st, expected 204"
[ "$(http ev2 "$tok_alice" GET "/v1/jobs/$j5/events" -N --max-time 300 -H "Last-Event-ID: $lastid")" = 200 ] ||
  fail "the resumed stream did not end well"
check_events "$tmp/http/ev2.body" >/dev/null || fail "resumed events of job $j5: $(cat "$tmp/http/ev2.body")"
http e9 "$tok_bob" GET "/v1/jobs/$j5/events" >/dev/null
expect e9 404

python3 "$ROOT/tests/lib/openapi_check.py" "$ROOT/docs/openapi.json" "$tmp/http" ||
  fail "an answer does not match docs/openapi.json"
echo "api_push: callbacks signed, retried, kept across kill -9; refused URLs; events; $n proofs verified"
