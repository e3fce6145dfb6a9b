# shellcheck shell=bash
# Helpers of the HTTP API tests (cuzk-api), on top of daemon.sh and wgen.sh. Sourced,
# never run.
#   api_tokens NAME [LIMITS]...  a new token for tenant NAME (cuzk token): sets
#                      tok_NAME, appends its line to $tmp/tokens (0600)
#   api_init           after daemon_init: cuzk-api built, curl and a generator's tools
#                      there (else SKIP); FX the bn128 mulchain-10 fixture, VK its key,
#                      gen its witness generator (wgen.sh), n=0 proofs verified
#   api_start http|https CIRCUIT-LINE [CUZKD OPTS]  cuzkd (daemon_start) with --listen
#                      on a free port (port, api_base set), $tmp/tokens, for https
#                      $tmp/cert.pem and key.pem; circuit mul (FX with its generator)
#                      with CIRCUIT-LINE added; waits until the API answers
#   free_port          a free TCP port on 127.0.0.1
#   api_base           http(s)://127.0.0.1:$port (set by the test)
#   CURL_TLS           curl's TLS options for http (an array, set by an https test:
#                      --cacert FILE)
#   http NAME TOKEN METHOD PATH [CURL ARGS...]   one request with curl (TOKEN "" for
#                      none): the body into $tmp/http/NAME.body, the head into
#                      NAME.head; prints the status; each is kept for the OpenAPI check
#                      (a line "METHOD PATH STATUS NAME" in $tmp/http/index)
#   jfield NAME EXPR   EXPR of the JSON body r of answer NAME (node)
#   expect NAME STATUS [TYPE]  fail unless answer NAME had STATUS (and problem TYPE)
#   verify_proof NAME  snarkjs accepts the {"proof","publicSignals"} answer NAME under
#                      $VK; adds 1 to n
#   fetch_proof NAME TOKEN PATH  GET PATH (a proof) as answer NAME: fail unless 200
#                      and verify_proof NAME
#   api_wait_up        until /healthz answers 200 (120 s; a liveness bound)
#   api_proved NAME TOKEN BODY  POST BODY to circuit mul (202), wait for the job (id in
#                      $id), fetch proof 0 and verify it (verify_proof); answers NAME,
#                      NAMEw, NAMEp
#   sdk_outputs N TOKEN  after an SDK's run (tests/lib/sdk_drive.py, .mjs) into $tmp/out:
#                      snarkjs accepts exactly its N proofs, and its vkey.json and
#                      obj.calldata are byte-equal to the API's answers to curl; n=N
api_init() {
  need_bins cuzk-api
  command -v curl >/dev/null || {
    echo "SKIP: curl missing"
    exit 77
  }
  wgen_skip_without_tools
  bash "$MAKE_FIXTURES" -q >/dev/null
  FX="$FIXTURES/bn128/mulchain-10"
  VK="$FX/verification_key.json"
  gen="$(CUZK="$BUILD/bin/cuzk" wgen_for "$FX")" || fail "building the generator"
  n=0
}

api_start() { # http|https CIRCUIT-LINE [cuzkd options]
  local scheme="$1" extra="$2"
  shift 2
  port="$(free_port)"
  api_base="$scheme://127.0.0.1:$port"
  # shellcheck disable=SC2154 # tmp: daemon_init's (daemon.sh)
  {
    echo "buffer-mb = 16"
    echo "listen = 127.0.0.1:$port"
    echo "api-tokens = $tmp/tokens"
    [ "$scheme" = http ] || printf 'tls-cert = %s\ntls-key = %s\n' "$tmp/cert.pem" "$tmp/key.pem"
    printf '[circuit mul]\nzkey = %s\nr1cs = %s\nwitness-gen = %s\n%s\n' \
      "$FX/circuit_final.zkey" "$FX/circuit.r1cs" "$gen" "$extra"
  } >"$tmp/cuzkd.conf"
  daemon_start --config "$tmp/cuzkd.conf" --devices cpu:1 "$@"
  api_wait_up
}

# recv_start SECRET-FILE: a callback receiver (tests/lib/callback_receiver.py) on
# 127.0.0.1:$rport (chosen first: the tenant's callback-hosts name it), its requests in
# $tmp/recv.log, stopped when the test exits; returns once it listens
recv_start() {
  : >"$tmp/recv.log"
  # shellcheck disable=SC2154 # rport: the caller sets it before the tenant's token
  python3 "$ROOT/tests/lib/callback_receiver.py" "$rport" "$1" "$tmp/recv.log" "$tmp/hold" >"$tmp/recv.out" 2>&1 &
  recv_pid=$!
  daemon_on_exit="kill $recv_pid 2>/dev/null || true${daemon_on_exit:+; $daemon_on_exit}"
  wait_listening "$rport" "$recv_pid" "the callback receiver" "$tmp/recv.out"
}
# proxy_start: tests/lib/sse_cut_proxy.py on a free port to the API's (api_start's
# $port): proxy_base its address, its requests in $tmp/proxy.log; stopped when the test
# exits; returns once it listens
proxy_start() {
  local pport
  pport="$(free_port)"
  : >"$tmp/proxy.log"
  python3 "$ROOT/tests/lib/sse_cut_proxy.py" "$pport" "$port" "$tmp/proxy.log" >"$tmp/proxy.out" 2>&1 &
  proxy_pid=$!
  daemon_on_exit="kill $proxy_pid 2>/dev/null || true${daemon_on_exit:+; $daemon_on_exit}"
  # shellcheck disable=SC2034 # proxy_base: the test's, for its client
  proxy_base="http://127.0.0.1:$pport"
  wait_listening "$pport" "$proxy_pid" "the stream-cutting proxy" "$tmp/proxy.out"
}
# wait_listening PORT PID WHAT OUTPUT: until 127.0.0.1:PORT accepts (30 s; a liveness
# bound) while process PID lives, else fail naming WHAT with its OUTPUT file
wait_listening() {
  local _
  for _ in $(seq 1 300); do
    python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1).close()' "$1" \
      2>/dev/null && return 0
    kill -0 "$2" 2>/dev/null || break
    sleep 0.1
  done
  fail "$3 did not listen on $1: $(cat "$4")"
}
# recv_count PATH STATUS: the receiver's requests to PATH answered STATUS
recv_count() { python3 -c 'import json, sys
print(sum(1 for l in open(sys.argv[1]) if l.strip() and json.loads(l)["path"] == sys.argv[2] and json.loads(l)["status"] == int(sys.argv[3])))' "$tmp/recv.log" "$1" "$2"; }
# recv_wait PATH STATUS N: until the receiver has N such requests (a liveness bound of 120 s)
recv_wait() {
  local _
  for _ in $(seq 1 1200); do
    [ "$(recv_count "$1" "$2")" -ge "$3" ] && return 0
    sleep 0.1
  done
  fail "the receiver got $(recv_count "$1" "$2") request(s) to $1 answered $2, expected $3: $(cat "$tmp/recv.log")"
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

api_tokens() { # NAME [LIMITS]
  local out
  out="$("$BUILD/bin/cuzk" token "$@")" || fail "cuzk token $*"
  printf -v "tok_$1" '%s' "$(head -n1 <<<"$out")"
  tail -n1 <<<"$out" >>"$tmp/tokens"
  chmod 600 "$tmp/tokens" # cuzk-api refuses a tokens file others may read
}

api_tokens_callback() { # NAME HOSTS: as api_tokens, a tenant called back at HOSTS (cuzk token
  # --callback-hosts); its callback secret in $tmp/NAME.secret
  local out
  out="$("$BUILD/bin/cuzk" token --callback-hosts "$2" "$1")" || fail "cuzk token --callback-hosts $2 $1"
  [ "$(wc -l <<<"$out")" = 3 ] || fail "cuzk token --callback-hosts: expected 3 lines: $out"
  printf -v "tok_$1" '%s' "$(sed -n 1p <<<"$out")"
  sed -n 2p <<<"$out" >"$tmp/$1.secret"
  tail -n1 <<<"$out" >>"$tmp/tokens"
  chmod 600 "$tmp/tokens"
  grep -q "callback-secret=$(cat "$tmp/$1.secret")" "$tmp/tokens" || fail "the tokens line of $1 holds no callback-secret"
}

http() { # NAME TOKEN METHOD PATH [curl args]
  local name="$1" token="$2" method="$3" path="$4" st
  shift 4
  mkdir -p "$tmp/http"
  local auth=()
  [ -z "$token" ] || auth=(-H "Authorization: Bearer $token")
  st="$(curl -sS -o "$tmp/http/$name.body" -D "$tmp/http/$name.head" -w '%{http_code}' -X "$method" \
    ${CURL_TLS[@]+"${CURL_TLS[@]}"} "${auth[@]}" "$@" "$api_base$path")" || st="000"
  echo "$method ${path%%\?*} $st $name" >>"$tmp/http/index"
  echo "$st"
}

# Ask again, every 0.1 s and at most TRIES times (a liveness bound), until the answer's
# status is STATUS; the answer stays in NAME's files for the expect that follows, which
# judges it (so this never fails itself).
http_until() { # TRIES STATUS NAME TOKEN METHOD PATH [curl args]
  local tries="$1" want="$2" _
  shift 2
  for _ in $(seq 1 "$tries"); do
    [ "$(http "$@")" = "$want" ] && return 0
    sleep 0.1
  done
  return 0
}

jfield() { node -e "const r=JSON.parse(require('fs').readFileSync(process.argv[1],'utf8')); console.log($2)" "$tmp/http/$1.body"; }

expect() { # NAME STATUS [TYPE]
  local st
  # a 100 Continue head comes first: the last status line is the answer's
  st="$(grep -a '^HTTP/' "$tmp/http/$1.head" | tail -n1 | awk '{print $2}')"
  [ "$st" = "$2" ] || fail "$1: status $st, expected $2: $(head -c 400 "$tmp/http/$1.body")"
  if [ -n "${3:-}" ]; then
    grep -qi '^content-type: application/problem+json' "$tmp/http/$1.head" || fail "$1: not a problem document"
    [ "$(jfield "$1" r.type)" = "$3" ] || fail "$1: problem type $(jfield "$1" r.type), expected $3"
    [ "$(jfield "$1" r.status)" = "$2" ] || fail "$1: problem status member is not $2"
  fi
}

verify_proof() { # NAME
  node -e "const r=JSON.parse(require('fs').readFileSync(process.argv[1],'utf8'));
    require('fs').writeFileSync(process.argv[2], JSON.stringify(r.proof));
    require('fs').writeFileSync(process.argv[3], JSON.stringify(r.publicSignals));" \
    "$tmp/http/$1.body" "$tmp/$1.proof.json" "$tmp/$1.public.json"
  "$SNARKJS" groth16 verify "$VK" "$tmp/$1.public.json" "$tmp/$1.proof.json" 2>&1 | grep -q OK ||
    fail "snarkjs rejects the proof of answer $1"
  n=$((n + 1))
}

fetch_proof() { # NAME TOKEN PATH
  http "$1" "$2" GET "$3" >/dev/null
  expect "$1" 200
  verify_proof "$1"
}

api_wait_up() {
  local _
  for _ in $(seq 1 1200); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' ${CURL_TLS[@]+"${CURL_TLS[@]}"} "$api_base/healthz")" = 200 ] && return 0
    sleep 0.1
  done
  fail "the API did not answer /healthz within 120 s"
}

api_proved() { # NAME TOKEN BODY
  [ "$(http "$1" "$2" POST /v1/circuits/mul/proofs -m 60 -H 'Content-Type: application/json' \
    --data-binary "$3")" = 202 ] || fail "POST $1: $(cat "$tmp/http/$1.body")"
  id="$(jfield "$1" r.job)"
  http "$1w" "$2" GET "/v1/jobs/$id?wait=300" >/dev/null
  expect "$1w" 200
  [ "$(jfield "$1w" r.state)" = "done" ] || fail "job $id: $(cat "$tmp/http/$1w.body")"
  http "$1p" "$2" GET "/v1/jobs/$id/proofs/0" >/dev/null
  expect "$1p" 200
  verify_proof "$1p"
}

# sdk_serve: what the SDK tests drive: cuzkd and its API, tenant sdk (called back at the
# receiver on $rport, its secret in $tmp/sdk.secret) and tenant one (one job at a time, so a
# second is 429 quota), and the SSE proxy that cuts a stream (proxy_start)
sdk_serve() {
  api_init
  rport="$(free_port)"
  api_tokens_callback sdk "http://127.0.0.1:$rport"
  recv_start "$tmp/sdk.secret"
  api_tokens one - 1
  api_start http ""
  proxy_start
}

sdk_outputs() { # N TOKEN
  local r
  r="$(node "$ROOT/tests/lib/snarkjs_verify_all.cjs" "$FIXTURES/node/node_modules/snarkjs" "$VK" "$tmp/out")" ||
    fail "snarkjs: $r"
  [ "$r" = "$1 verified" ] || fail "expected the SDK's $1 proofs verified, snarkjs says: $r"
  n="$1"
  echo "ok: snarkjs verifies the $1 proofs the SDK fetched"
  [ "$(http vkey "$2" GET /v1/circuits/mul/vkey)" = 200 ] || fail "GET vkey"
  cmp "$tmp/out/vkey.json" "$tmp/http/vkey.body" || fail "the SDK's raw vkey is not the bytes the API serves"
  [ "$(http cd "$2" GET "/v1/jobs/$(cat "$tmp/out/obj.job")/proofs/0?format=calldata")" = 200 ] || fail "GET calldata"
  cmp "$tmp/out/obj.calldata" "$tmp/http/cd.body" || fail "the SDK's calldata is not the text the API serves"
  echo "ok: the SDK's raw vkey and calldata byte-equal to the API's answers"
}
