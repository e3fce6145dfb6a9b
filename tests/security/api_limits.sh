#!/usr/bin/env bash
# The HTTP API's edges (cuzk-api). TLS: a certificate made here by openssl; curl and
# Node's fetch trust it and are answered over HTTPS; plain HTTP to that port gets no
# answer. A tenant over its max-running-jobs -> 429 with Retry-After. DELETE of a
# running job (the finalizer held back by --test-finalizer-delay-ms) -> its unfinished
# partitions fail; their proof -> 422 job_failed. An input.json without a signal the
# circuit needs -> 422 mismatch at the POST, naming it; one whose signal has two values
# for one -> the job fails, naming it. cuzk-api started by root on its own
# (--socket, its systemd unit's way) with --user: after binding it runs as that user
# with no other group (/proc/PID/status), and so cannot reach root's cuzkd (readyz
# 503 no_daemon, healthz 200). --per-ip 2: a third connection from 127.0.0.1 is
# closed unanswered while two that have shown a token are open (one that has not
# would be closed to make room); --timeout 2: an idle connection is closed.
set -euo pipefail
. "$(dirname "$0")/../lib/daemon.sh"
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lib/wgen.sh"
. "$ROOT/tests/lib/api.sh"
daemon_init secapi
attacker_init
need_tool openssl
api_init

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=127.0.0.1 \
  -addext subjectAltName=IP:127.0.0.1 -keyout "$tmp/key.pem" -out "$tmp/cert.pem" 2>/dev/null ||
  fail "openssl could not make a certificate"
api_tokens alice - 1 # one running job at most
api_tokens bob
api_tokens carol - - - 2 # two requests in flight at most
CURL_TLS=(--cacert "$tmp/cert.pem")
api_start https "" --test-finalizer-delay-ms 1500

# ---- TLS -----------------------------------------------------------------------------
# shellcheck disable=SC2154 # tok_NAME: set by api_tokens (api.sh)
http tls "$tok_bob" GET /v1/circuits >/dev/null
expect tls 200
plain="$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/healthz" || true)"
[ "$plain" = 000 ] || fail "plain HTTP to the TLS port answered $plain"
http one "$tok_bob" POST /v1/circuits/mul/proofs -H 'Content-Type: application/json' \
  --data-binary @"$FX/input.json" >/dev/null
expect one 202
NODE_EXTRA_CA_CERTS="$tmp/cert.pem" node - "$api_base" "$tok_bob" "$(jfield one r.job)" >"$tmp/http/fetch.body" <<'JS' ||
const [base, tok, job] = process.argv.slice(2);
const H = { Authorization: `Bearer ${tok}` };
(async () => {
  await fetch(`${base}/v1/jobs/${job}?wait=300`, { headers: H });
  const r = await fetch(`${base}/v1/jobs/${job}/proofs/0`, { headers: H });
  if (r.status !== 200) throw new Error(`proof: ${r.status} ${await r.text()}`);
  process.stdout.write(await r.text());
})().catch((e) => { console.error(e.message); process.exit(1); });
JS
  fail "fetch over TLS: $(cat "$tmp/http/fetch.body")"
verify_proof fetch
echo "ok: TLS (openssl's certificate): curl and Node fetch answered over HTTPS, proof verified; plain HTTP unanswered"

# ---- quota, cancel, a missing signal ------------------------------------------------------
# shellcheck disable=SC2154
http run1 "$tok_alice" POST /v1/circuits/mul/proofs -H 'Content-Type: application/json' \
  --data-binary '[{"x":"1","k":"1"},{"x":"2","k":"2"},{"x":"3","k":"3"},{"x":"4","k":"4"}]' >/dev/null
expect run1 202
http run2 "$tok_alice" POST /v1/circuits/mul/proofs -H 'Content-Type: application/json' \
  --data-binary @"$FX/input.json" >/dev/null
expect run2 429 quota
grep -qi '^retry-after: [0-9]' "$tmp/http/run2.head" || fail "429 without Retry-After"
echo "ok: alice at her max-running-jobs (1) -> 429 quota, Retry-After"
j1="$(jfield run1 r.job)"
http del "$tok_alice" DELETE "/v1/jobs/$j1" >/dev/null
expect del 200
http delw "$tok_alice" GET "/v1/jobs/$j1?wait=300" >/dev/null
expect delw 200
[ "$(jfield delw r.state)" = cancelled ] || fail "cancelled job: $(cat "$tmp/http/delw.body")"
http delp "$tok_alice" GET "/v1/jobs/$j1/proofs/3" >/dev/null
expect delp 422 job_failed
echo "ok: DELETE of a running job -> cancelled; its last partition's proof -> 422 job_failed: $(jfield delp r.detail)"
http miss "$tok_alice" POST /v1/circuits/mul/proofs -H 'Content-Type: application/json' \
  --data-binary '{"x":"5"}' >/dev/null
expect miss 422 mismatch
[ "$(jfield miss r.signal)" = k ] || fail "422 without the signal: $(cat "$tmp/http/miss.body")"
http two "$tok_alice" POST /v1/circuits/mul/proofs -H 'Content-Type: application/json' \
  --data-binary '{"x":"5","k":["1","2"]}' >/dev/null
expect two 202
http twow "$tok_alice" GET "/v1/jobs/$(jfield two r.job)?wait=300" >/dev/null
[ "$(jfield twow r.state)" = failed ] || fail "input with two values of k: $(cat "$tmp/http/twow.body")"
jfield twow 'r.parts[0].reason' | grep -q "signal k has 2 values" || fail "reason: $(cat "$tmp/http/twow.body")"
http twop "$tok_alice" GET "/v1/jobs/$(jfield two r.job)/proofs/0" >/dev/null
expect twop 422 job_failed
echo "ok: an input without signal k -> 422 mismatch (signal k); two values for k -> the job fails: $(jfield twow 'r.parts[0].reason')"

# ---- a tenant's requests in flight ---------------------------------------------------------
# carol's line allows 2: two POSTs whose bodies trickle in (1 KiB/s of 64 KiB) hold
# both; a third request of hers is 429 too_many_requests while bob is served; once
# the two are cut off, she is served again. (The loops are liveness bounds: the
# server counts a request when its head has arrived, and lets go when it ends.)
head -c 65536 /dev/zero | tr '\0' ' ' >"$tmp/slow.json"
slow=()
for i in 1 2; do
  # shellcheck disable=SC2154 # tok_carol: set by api_tokens (api.sh)
  curl -sS -o /dev/null "${CURL_TLS[@]}" -H "Authorization: Bearer $tok_carol" -H 'Content-Type: application/json' \
    -H 'Expect:' --limit-rate 1k --data-binary @"$tmp/slow.json" "$api_base/v1/circuits/mul/proofs" 2>/dev/null &
  slow+=($!)
done
daemon_on_exit="kill ${slow[*]} 2>/dev/null; ${daemon_on_exit:-}"
http_until 300 429 c3 "$tok_carol" GET /v1/circuits
expect c3 429 quota
[ "$(jfield c3 r.code)" = too_many_requests ] && [ "$(jfield c3 r.max_requests)" = 2 ] || fail "c3: $(cat "$tmp/http/c3.body")"
grep -qi '^retry-after: [0-9]' "$tmp/http/c3.head" || fail "429 without Retry-After"
http cb "$tok_bob" GET /v1/circuits >/dev/null
expect cb 200
kill "${slow[@]}" 2>/dev/null || true
wait "${slow[@]}" 2>/dev/null || true
http_until 300 200 c4 "$tok_carol" GET /v1/circuits
expect c4 200
echo "ok: carol with 2 requests in flight -> 429 too_many_requests, Retry-After (bob served meanwhile); served again once they ended"

# ---- standalone, privileges dropped, per-IP limit, idle timeout --------------------------
port2="$(free_port)"
"$BUILD/bin/cuzk-api" --socket "$run/$inst.sock" --listen "127.0.0.1:$port2" --api-tokens "$tmp/tokens" \
  --user "$atk" --per-ip 2 --timeout 2 >"$tmp/api2.log" 2>&1 &
api2=$!
daemon_on_exit="kill $api2 2>/dev/null; ${daemon_on_exit:-}"
api_base="http://127.0.0.1:$port2"
CURL_TLS=()
api_wait_up
st="$(grep -E '^(Uid|Gid|Groups):' "/proc/$api2/status" | tr -s '\t ' ' ')"
grep -q "^Uid: $ATTACKER_UID $ATTACKER_UID $ATTACKER_UID $ATTACKER_UID" <<<"$st" || fail "uid not dropped: $st"
# its groups are the user's own (/etc/group: how an --api-user reaches cuzkd's socket), none of root's
want="$(id -G "$atk" | tr ' ' '\n' | sort -n | tr '\n' ' ')"
got="$(sed -n 's/^Groups: *//p' <<<"$st" | tr ' ' '\n' | grep . | sort -n | tr '\n' ' ')"
[ "$got" = "$want" ] || fail "groups not $atk's own ($want): $st"
http ready2 "" GET /readyz >/dev/null
expect ready2 503 no_daemon
echo "ok: cuzk-api started by root with --user $atk runs as uid $ATTACKER_UID with its own groups only; root's cuzkd out of its reach (readyz 503)"
python3 - "$port2" "$tok_bob" <<'PY' || fail "per-IP limit or idle timeout"
import socket, sys, time
port = int(sys.argv[1])
def conn():
    s = socket.create_connection(("127.0.0.1", port)); s.settimeout(30); return s
def answer(s):  # the first bytes of the answer; b"" when closed unanswered (EOF or reset)
    try:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        return s.recv(100)
    except (ConnectionResetError, BrokenPipeError):
        return b""
def authed():  # a keep-alive connection that has shown a token (its answer read whole)
    s = conn()
    s.sendall(b"GET /v1/circuits HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + sys.argv[2].encode() + b"\r\n\r\n")
    b = b""
    while b"\r\n\r\n" not in b:
        c = s.recv(4096)
        assert c, b
        b += c
    head, body = b.split(b"\r\n\r\n", 1)
    n = int(next(l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")))
    while len(body) < n:
        c = s.recv(4096)
        assert c, b
        body += c
    assert head.startswith(b"HTTP/1.1 "), head
    return s
a, b = authed(), authed()
assert answer(conn()) == b"", "a third connection from 127.0.0.1 was answered"
a.close(); b.close()
for _ in range(300):  # the server sees the two close at its next poll (a liveness bound)
    if answer(conn()).startswith(b"HTTP/1.1 200"):
        break
    time.sleep(0.1)
else:
    sys.exit("no answer once the other two closed")
e = conn()  # idle: closed by --timeout 2 (30 s: a liveness bound)
try:
    assert e.recv(100) == b"", "an idle connection got bytes"
except ConnectionResetError:
    pass
print("ok: --per-ip 2: a third connection closed unanswered; --timeout 2: an idle connection closed")
PY
python3 "$ROOT/tests/lib/openapi_check.py" "$ROOT/docs/openapi.json" "$tmp/http" || fail "answers against docs/openapi.json"
kill "$api2"
wait "$api2" || true
daemon_shutdown_clean
echo "PASS: api_limits ($n proofs verified by snarkjs)"
