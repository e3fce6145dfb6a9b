#!/usr/bin/env bash
# A crowd that trickles request heads (slowloris) never holds cuzk-api from its
# tenants. Before, 1023 connections each sending a header line every 10 s held every
# slot of --max-conns (the idle --timeout is reset by each byte) and every tenant got
# empty replies. A cuzk-api of the test's own (--max-conns 64, --per-ip 16,
# --header-timeout 5) beside the cuzkd it talks to:
#   a crowd of 100 sockets from 10 addresses (127.0.0.2-11) sends "GET /healthz
#   HTTP/1.1" and then a header line a second, never ending its head, and reconnects
#   each socket the server closes;
#   meanwhile a tenant (127.0.0.1) submits, waits for its job and fetches its proof
#   (snarkjs verifies it), and /readyz answers 200: connections without a token hold
#   at most a quarter of --max-conns (and of --per-ip from one address), the oldest
#   of the address holding the most closed to make room;
#   the crowd stops reconnecting: every socket it still holds is closed by the server
#   (the header deadline: each still trickles, so the idle --timeout 30 never fires),
#   none ever got a byte of an answer, and the log says why.
# Refusals are logged at most once a minute per address: 16 authenticated keep-alive
# connections from 127.0.0.40 fill its --per-ip; 20 more from it are closed
# unanswered, and the log has one line for them, then (within the minute) one line
# with the count of the 19 left out.
# shellcheck disable=SC2154 # tok_NAME: set by api_tokens (api.sh, printf -v)
set -euo pipefail
. "$(dirname "$0")/../lib/daemon.sh"
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lib/wgen.sh"
. "$ROOT/tests/lib/api.sh"
daemon_init secslow
[ "$(id -u)" -eq 0 ] || {
  echo "SKIP: $(basename "$0") runs cuzk-api as root beside root's cuzkd (--user 0)"
  exit 77
}
command -v python3 >/dev/null || {
  echo "SKIP: python3 missing"
  exit 77
}
api_init
api_tokens alice
api_start http ""
port2="$(free_port)"
"$BUILD/bin/cuzk-api" --socket "$run/$inst.sock" --listen "127.0.0.1:$port2" --api-tokens "$tmp/tokens" \
  --user 0 --max-conns 64 --per-ip 16 --header-timeout 5 --timeout 30 >"$tmp/api2.log" 2>&1 &
api2=$!
daemon_on_exit="kill $api2 2>/dev/null; ${daemon_on_exit:-}"
api_base="http://127.0.0.1:$port2"
api_wait_up

# ---- the crowd ------------------------------------------------------------------------
python3 - "$port2" "$tmp/crowd.ready" "$tmp/crowd.stop" >"$tmp/crowd.out" 2>&1 <<'PY' &
import os, select, socket, sys, time
port, ready, stop = int(sys.argv[1]), sys.argv[2], sys.argv[3]
addrs = [f"127.0.0.{i}" for i in range(2, 12)]
socks = {}   # socket -> source address
started = set()  # sockets that have sent their request line
closed = answered = 0
reopen = []  # (when, address) of sockets the server closed: opened again then
def opened(a):
    s = socket.socket()
    s.bind((a, 0))
    s.setblocking(False)
    try:
        s.connect(("127.0.0.1", port))
    except BlockingIOError:
        pass
    socks[s] = a
def trickle(s):
    global closed
    data = b"X-Trickle: 1\r\n" if s in started else b"GET /healthz HTTP/1.1\r\nHost: x\r\n"
    try:
        s.send(data)
        started.add(s)
        return True
    except (BlockingIOError, InterruptedError):
        return True
    except OSError:  # reset or refused: the server closed it
        closed += 1
        started.discard(s)
        s.close()
        return False
for a in addrs:
    for _ in range(10):
        opened(a)
time.sleep(0.5)
for s in list(socks):
    if not trickle(s):
        reopen.append((time.monotonic() + 1.0, socks.pop(s)))
open(ready, "w").close()
left_since = None
while True:
    stopping = os.path.exists(stop)
    if stopping and left_since is None:
        left_since = time.monotonic()
    if stopping and not socks:
        break
    if left_since is not None and time.monotonic() - left_since > 60:  # a liveness bound
        break
    r, _, _ = select.select(list(socks), [], [], 1.0)
    for s in r:
        try:
            b = s.recv(4096)
        except OSError:
            b = b""
        if b:
            answered += 1
            print("answered:", b[:100], flush=True)
        a = socks.pop(s)
        closed += 1
        started.discard(s)
        s.close()
        reopen.append((time.monotonic() + 1.0, a))
    now = time.monotonic()
    for s in list(socks):
        if not trickle(s):
            reopen.append((now + 1.0, socks.pop(s)))
    if not stopping:
        due = [a for t, a in reopen if t <= now]
        reopen = [(t, a) for t, a in reopen if t > now]
        for a in due:
            opened(a)
print(f"closed {closed} held {len(socks)} answered {answered}", flush=True)
sys.exit(0 if not socks and not answered else 1)
PY
crowd=$!
daemon_on_exit="kill $crowd 2>/dev/null; ${daemon_on_exit:-}"
# a liveness bound
for _ in $(seq 1 300); do
  [ -e "$tmp/crowd.ready" ] && break
  sleep 0.1
done
[ -e "$tmp/crowd.ready" ] || fail "the crowd did not connect: $(cat "$tmp/crowd.out")"

# ---- the tenant, while the crowd trickles ---------------------------------------------
# (a status of 000: the connection closed unanswered, as every tenant's was before)
st="$(http post "$tok_alice" POST /v1/circuits/mul/proofs -H 'Content-Type: application/json' \
  --data-binary @"$FX/input.json")"
[ "$st" = 202 ] || fail "the tenant's POST under the crowd: status $st"
job="$(jfield post r.job)"
st="$(http wait "$tok_alice" GET "/v1/jobs/$job?wait=300")"
[ "$st" = 200 ] || fail "the tenant's wait under the crowd: status $st"
[ "$(jfield wait r.state)" = "done" ] || fail "the tenant's job: $(cat "$tmp/http/wait.body")"
st="$(http proof "$tok_alice" GET "/v1/jobs/$job/proofs/0")"
[ "$st" = 200 ] || fail "the tenant's proof under the crowd: status $st"
verify_proof proof
st="$(http ready "" GET /readyz)"
[ "$st" = 200 ] || fail "/readyz under the crowd: status $st"
kill -0 "$crowd" 2>/dev/null || fail "the crowd ended early: $(cat "$tmp/crowd.out")"
echo "ok: under a crowd of 100 trickling sockets from 10 addresses the tenant's job proved (snarkjs verifies) and /readyz answered 200"

touch "$tmp/crowd.stop"
wait "$crowd" || fail "the crowd's sockets: $(cat "$tmp/crowd.out") (held: not closed by the server in 60 s; answered: got bytes)"
crowd=""
grep -q "sent no whole request head within --header-timeout" "$tmp/api2.log" ||
  fail "no header deadline logged: $(tail -5 "$tmp/api2.log")"
echo "ok: the crowd's sockets were all closed unanswered ($(cat "$tmp/crowd.out")), the last by the header deadline"

# ---- refusals logged once a minute per address ------------------------------------------
python3 - "$port2" "$tok_alice" <<'PY' || fail "the per-ip refusals"
import http.client, socket, sys, time
port, tok = int(sys.argv[1]), sys.argv[2]
held = []
for _ in range(16):  # authenticated and kept alive: not to be closed to make room
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30, source_address=("127.0.0.40", 0))
    c.request("GET", "/v1/circuits", headers={"Authorization": f"Bearer {tok}"})
    r = c.getresponse()
    r.read()
    assert r.status == 200, r.status
    held.append(c)
for i in range(20):
    s = socket.create_connection(("127.0.0.1", port), timeout=30, source_address=("127.0.0.40", 0))
    try:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        b = s.recv(100)
    except (ConnectionResetError, BrokenPipeError):
        b = b""
    assert b == b"", f"connection {i} past --per-ip answered: {b!r}"
    s.close()
print("ok: 20 connections past --per-ip from 127.0.0.40 closed unanswered")
PY
n_ref="$(grep -c '127\.0\.0\.40: connection refused' "$tmp/api2.log" || true)"
[ "$n_ref" = 1 ] || fail "$n_ref lines for 20 refusals from 127.0.0.40: $(grep -c 'connection limit' "$tmp/api2.log" || true) of libmicrohttpd's"
# the minute's count (a liveness bound)
wait_until 900 grep '127\.0\.0\.40: 19 more like this' "$tmp/api2.log" || fail "no count of the refusals left out: $(grep '127.0.0.40' "$tmp/api2.log")"
echo "ok: 20 refusals from one address: one line, then the count of the 19 left out"
python3 "$ROOT/tests/lib/openapi_check.py" "$ROOT/docs/openapi.json" "$tmp/http" || fail "answers against docs/openapi.json"
kill "$api2"
wait "$api2" || true
daemon_shutdown_clean
echo "PASS: api_slowloris ($n proofs verified by snarkjs)"
