#!/usr/bin/env bash
# cuzk-api's TLS and the files it holds secrets in. A cuzk-api of the test's own (root,
# --user 0) beside the cuzkd it talks to, with an RSA certificate made here by openssl
# (so that a static-RSA key exchange could be offered at all):
#   the private key at mode 0644, or 0640 with a group neither root's nor the API's
#   (nogroup) -> refused at start, exit 2, the key named; at 0600 it serves;
#   openssl s_client: TLS 1.1 (the client willing, @SECLEVEL=0) and TLS 1.2 with the
#   static-RSA suite AES128-GCM-SHA256 fail the handshake; TLS 1.2 (ECDHE) and 1.3
#   are answered, and curl's GET /v1/circuits over them is 200;
#   the tokens file at 0644, or 0640 with a group neither root's nor the API's
#   (nogroup) -> refused at start, exit 2; 0640 with group root serves;
#   a SIGHUP with the file made 0644 (a new tenant added) keeps the old tokens and
#   says why in the log; back at 0600, the next SIGHUP reads it (the new tenant 200).
# shellcheck disable=SC2154 # tok_NAME: set by api_tokens (api.sh, printf -v)
set -euo pipefail
. "$(dirname "$0")/../lib/daemon.sh"
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lib/wgen.sh"
. "$ROOT/tests/lib/api.sh"
daemon_init sectls
[ "$(id -u)" -eq 0 ] || {
  echo "SKIP: $(basename "$0") runs cuzk-api as root (--user 0) and sets files' groups"
  exit 77
}
command -v openssl >/dev/null && getent group nogroup >/dev/null || {
  echo "SKIP: openssl or the group nogroup missing"
  exit 77
}
api_init
api_tokens alice
api_start http ""
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
  -keyout "$tmp/key.pem" -out "$tmp/cert.pem" 2>/dev/null || fail "openssl could not make a certificate"
port2="$(free_port)"
api2=""
start_api() { # start cuzk-api on port2; its exit status when it ends within its start, else 0
  "$BUILD/bin/cuzk-api" --socket "$run/$inst.sock" --listen "127.0.0.1:$port2" --api-tokens "$tmp/tokens" \
    --user 0 --tls-cert "$tmp/cert.pem" --tls-key "$tmp/key.pem" >"$tmp/api2.log" 2>&1 &
  api2=$!
  daemon_on_exit="kill $api2 2>/dev/null; ${daemon_on_exit:-}"
  local _
  # a liveness bound
  for _ in $(seq 1 1200); do
    kill -0 "$api2" 2>/dev/null || break
    grep -q "serving https" "$tmp/api2.log" && return 0
    sleep 0.1
  done
  kill -0 "$api2" 2>/dev/null && fail "cuzk-api neither served nor ended in 120 s: $(cat "$tmp/api2.log")"
  local rc=0
  wait "$api2" || rc=$?
  api2=""
  return "$rc"
}
refused_start() { # WHAT PATTERN: cuzk-api exits 2 at start, its log matching PATTERN
  local rc=0
  start_api || rc=$?
  [ -z "$api2" ] || fail "$1: cuzk-api started"
  [ "$rc" = 2 ] || fail "$1: exit $rc, not 2: $(cat "$tmp/api2.log")"
  grep -q "$2" "$tmp/api2.log" || fail "$1: no clear error: $(cat "$tmp/api2.log")"
  echo "ok: $1 -> refused, exit 2: $(tail -n1 "$tmp/api2.log")"
}
stop_api() {
  kill "$api2"
  wait "$api2" || true
  api2=""
}

chmod 644 "$tmp/key.pem"
refused_start "the TLS key at mode 0644" "tls-key .*key.pem: mode 0644"
chmod 640 "$tmp/key.pem"
chgrp nogroup "$tmp/key.pem"
refused_start "the TLS key at mode 0640, group nogroup" "tls-key .*key.pem: mode 0640"
chgrp root "$tmp/key.pem"
chmod 600 "$tmp/key.pem"
start_api || fail "cuzk-api with a 0600 key: $(cat "$tmp/api2.log")"
echo "ok: the TLS key at mode 0600 -> serving"

# ---- TLS versions and key exchanges ------------------------------------------------------
hs() { # openssl s_client ARGS...: 0 when the handshake completes
  timeout 30 openssl s_client -connect "127.0.0.1:$port2" -CAfile "$tmp/cert.pem" -brief "$@" </dev/null \
    >"$tmp/hs.out" 2>&1
}
hs -tls1_1 -cipher 'DEFAULT:@SECLEVEL=0' && fail "a TLS 1.1 handshake completed: $(cat "$tmp/hs.out")"
echo "ok: TLS 1.1 refused"
hs -tls1_2 -cipher 'AES128-GCM-SHA256' && fail "a static-RSA key exchange completed: $(cat "$tmp/hs.out")"
echo "ok: TLS 1.2 with static RSA (AES128-GCM-SHA256) refused"
hs -tls1_2 || fail "TLS 1.2: $(cat "$tmp/hs.out")"
grep -q 'TLSv1.2' "$tmp/hs.out" || fail "TLS 1.2: $(cat "$tmp/hs.out")"
hs -tls1_3 || fail "TLS 1.3: $(cat "$tmp/hs.out")"
grep -q 'TLSv1.3' "$tmp/hs.out" || fail "TLS 1.3: $(cat "$tmp/hs.out")"
api_base="https://127.0.0.1:$port2"
for v in --tlsv1.2 --tlsv1.3; do
  CURL_TLS=(--cacert "$tmp/cert.pem" "$v")
  [ "$v" = --tlsv1.2 ] && CURL_TLS+=(--tls-max 1.2)
  http "circ${v#--tlsv}" "$tok_alice" GET /v1/circuits >/dev/null
  expect "circ${v#--tlsv}" 200
done
echo "ok: TLS 1.2 (ECDHE) and 1.3 handshakes complete; curl over each: GET /v1/circuits 200"

# ---- the tokens file's mode -----------------------------------------------------------------
stop_api
chmod 644 "$tmp/tokens"
refused_start "the tokens file at mode 0644" "api-tokens .*tokens: mode 0644"
chmod 640 "$tmp/tokens"
chgrp nogroup "$tmp/tokens"
refused_start "the tokens file at mode 0640, group nogroup" "api-tokens .*tokens: mode 0640"
chgrp root "$tmp/tokens"
start_api || fail "cuzk-api with the tokens file at 0640, group root: $(cat "$tmp/api2.log")"
echo "ok: the tokens file at 0640, group root -> serving"
http t1 "$tok_alice" GET /v1/circuits >/dev/null
expect t1 200
api_tokens bob # appends bob and makes the file 0600: made 0644 below before the SIGHUP
chmod 644 "$tmp/tokens"
kill -HUP "$api2"
wait_until 300 grep "SIGHUP: .*mode 0644.*the old tokens stay" "$tmp/api2.log" || fail "no logged refusal of the 0644 file: $(tail -3 "$tmp/api2.log")"
http t2 "$tok_bob" GET /v1/circuits >/dev/null
expect t2 401 refused
http t3 "$tok_alice" GET /v1/circuits >/dev/null
expect t3 200
chmod 600 "$tmp/tokens"
kill -HUP "$api2"
http_until 300 200 t4 "$tok_bob" GET /v1/circuits
expect t4 200
echo "ok: SIGHUP with the tokens file at 0644 -> logged, old tokens kept (bob 401, alice 200); at 0600 read again (bob 200)"
python3 "$ROOT/tests/lib/openapi_check.py" "$ROOT/docs/openapi.json" "$tmp/http" || fail "answers against docs/openapi.json"
stop_api
daemon_shutdown_clean
echo "PASS: api_tls_files"
