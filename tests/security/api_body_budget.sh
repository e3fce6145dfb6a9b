#!/usr/bin/env bash
# What request bodies may cost cuzk-api. A cuzk-api of the test's own (--max-body 16M,
# --max-inflight-body 65M: a tenant's share is 32.5M; the spare MiB covers a small
# body whose request has been answered but not yet ended) beside the cuzkd it talks to. Each
# large body is the largest allowed, 16 MiB of JSON that used to cost jansson about 21
# times its size ({"x":[1,1,...],"k":"5","zz":1}: 8 million numbers, refused 422 at
# its last key, so the whole body is read). Requests are held open with Expect:
# 100-continue: the 100 says the server has taken the head (and reserved the
# Content-Length), so the order below is the server's, with no timing in it:
#   alice holds two (32 MiB, her share): a third of hers -> 429 too_many_bytes, Retry-After
#   bob's small input meanwhile -> 202, its proof verified by snarkjs
#   carol and dave hold one each (64 MiB in all): bob's large one -> 503 busy, Retry-After
#   the four held bodies then sent at once -> each 422 (read whole, scanned, refused)
#   a 16 MiB body without Content-Length (chunked) -> 422 as well
# Through all of it cuzk-api's peak resident memory (VmHWM) stays under the documented
# bound, 256 MiB + 2 x --max-inflight-body, and grows by less than twice the bodies in
# flight (jansson's trees took about 330 MB per body: over both, for one body alone).
# shellcheck disable=SC2154 # tok_NAME: set by api_tokens (api.sh, printf -v)
set -euo pipefail
. "$(dirname "$0")/../lib/daemon.sh"
. "$ROOT/tests/lib/wgen.sh"
. "$ROOT/tests/lib/api.sh"
daemon_init secbudget
need_tool python3
api_init
for t in alice bob carol dave; do api_tokens "$t"; done
api_start http ""

port2="$(free_port)"
"$BUILD/bin/cuzk-api" --socket "$run/$inst.sock" --listen "127.0.0.1:$port2" --api-tokens "$tmp/tokens" \
  --user "$(id -u)" --max-body 16M --max-inflight-body 65M >"$tmp/api2.log" 2>&1 &
api2=$!
daemon_on_exit="kill $api2 2>/dev/null; ${daemon_on_exit:-}"
api_base="http://127.0.0.1:$port2"
api_wait_up
rss0="$(awk '/^VmRSS/{print $2}' "/proc/$api2/status")"

python3 - "$port2" "$tmp" "$tok_alice" "$tok_bob" "$tok_carol" "$tok_dave" <<'PY' || fail "the budget's answers"
import json, socket, sys, threading
port, tmp = int(sys.argv[1]), sys.argv[2]
tok = dict(zip(["alice", "bob", "carol", "dave"], sys.argv[3:7]))
MiB = 1 << 20
# 16 MiB exactly: {"x":[1,1,...,1],"k":"5","zz":1}
tail = b'],"k":"5","zz":1}'
n = (16 * MiB - len(b'{"x":[') - len(tail) + 1) // 2
big = b'{"x":[' + b"1," * (n - 1) + b"1" + tail
big += b" " * (16 * MiB - len(big))
assert len(big) == 16 * MiB

def head(who, length=None, chunked=False):
    h = "POST /v1/circuits/mul/proofs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n" \
        "Content-Type: application/json\r\nExpect: 100-continue\r\n" % tok[who]
    h += "Transfer-Encoding: chunked\r\n" if chunked else "Content-Length: %d\r\n" % length
    return (h + "\r\n").encode()

def read_answer(s):  # (status, headers dict, body) of one answer; a 100 Continue skipped
    buf = b""
    while True:
        while b"\r\n\r\n" not in buf:
            d = s.recv(65536)
            if not d: raise SystemExit("connection closed before an answer")
            buf += d
        h, buf = buf.split(b"\r\n\r\n", 1)
        lines = h.decode().split("\r\n")
        status = int(lines[0].split()[1])
        hdr = {l.split(":", 1)[0].lower(): l.split(":", 1)[1].strip() for l in lines[1:]}
        if status == 100:
            return status, hdr, b""
        need = int(hdr.get("content-length", "0"))
        while len(buf) < need:
            d = s.recv(65536)
            if not d: break
            buf += d
        return status, hdr, buf[:need]

def hold(who):  # a large body's head; its 100 Continue (the bytes reserved) awaited
    s = socket.create_connection(("127.0.0.1", port)); s.settimeout(300)
    s.sendall(head(who, len(big)))
    st, hdr, body = read_answer(s)
    return s, st, hdr, body

def expect_refused(who, status, code):
    s, st, hdr, body = hold(who)
    s.close()
    assert st == status, "%s: %d, expected %d: %s" % (who, st, status, body)
    p = json.loads(body)
    assert p["code"] == code and p["status"] == status, p
    assert int(hdr.get("retry-after", "0")) > 0, "%d without Retry-After" % status
    print("ok: %s's large body -> %d %s, Retry-After %s: %s" % (who, status, code, hdr["retry-after"], p["detail"]))

held = []
for who in ["alice", "alice"]:
    s, st, _, body = hold(who)
    assert st == 100, "alice's body not taken: %d %s" % (st, body)
    held.append(s)
expect_refused("alice", 429, "too_many_bytes")
# bob's small input while alice holds her share
s = socket.create_connection(("127.0.0.1", port)); s.settimeout(300)
small = b'{"x":"7","k":"1234567"}'
s.sendall(head("bob", len(small)))
st, _, _ = read_answer(s)
assert st == 100, st
s.sendall(small)
st, hdr, body = read_answer(s)
assert st == 202, "bob's small input: %d %s" % (st, body)
open(tmp + "/bob.job", "w").write(str(json.loads(body)["job"]))
s.close()
print("ok: bob's small input -> 202 while alice holds her share")
for who in ["carol", "dave"]:
    s, st, _, body = hold(who)
    assert st == 100, "%s's body not taken: %d %s" % (who, st, body)
    held.append(s)
expect_refused("bob", 503, "busy")
answers = [None] * len(held)
def send(i):
    held[i].sendall(big)
    answers[i] = read_answer(held[i])
ts = [threading.Thread(target=send, args=(i,)) for i in range(len(held))]
for t in ts: t.start()
for t in ts: t.join()
for st, _, body in answers:
    p = json.loads(body)
    assert st == 422 and p["code"] == "unknown_signal" and p["signal"] == "zz", (st, body)
print("ok: the four held 16 MiB bodies sent at once -> 422 unknown_signal zz each (read whole)")
# chunked: reserved as its bytes arrive
s = socket.create_connection(("127.0.0.1", port)); s.settimeout(300)
s.sendall(head("bob", chunked=True))
st, _, _ = read_answer(s)
assert st == 100, st
for i in range(0, len(big), MiB):
    s.sendall(b"%x\r\n" % MiB + big[i:i + MiB] + b"\r\n")
s.sendall(b"0\r\n\r\n")
st, _, body = read_answer(s)
assert st == 422 and json.loads(body)["signal"] == "zz", (st, body)
print("ok: a chunked 16 MiB body -> 422 unknown_signal zz")
PY

hwm="$(awk '/^VmHWM/{print $2}' "/proc/$api2/status")"
bound=$(((256 + 2 * 65) * 1024))
echo "cuzk-api: VmRSS at start $rss0 kB, VmHWM after $hwm kB (bound $bound kB; growth allowed $((2 * 65 * 1024)) kB)"
[ "$hwm" -lt "$bound" ] || fail "cuzk-api's peak RSS $hwm kB is over the documented bound $bound kB"
[ $((hwm - rss0)) -lt $((2 * 65 * 1024)) ] || fail "cuzk-api grew by $((hwm - rss0)) kB for 64 MiB of bodies"
echo "ok: cuzk-api's peak RSS $hwm kB: under 256 MiB + 2 x --max-inflight-body, and grew by $((hwm - rss0)) kB"

job="$(cat "$tmp/bob.job")"
http bw "$tok_bob" GET "/v1/jobs/$job?wait=300" >/dev/null
expect bw 200
[ "$(jfield bw r.state)" = "done" ] || fail "bob's job: $(cat "$tmp/http/bw.body")"
fetch_proof bp "$tok_bob" "/v1/jobs/$job/proofs/0"
kill "$api2"
wait "$api2" || true
daemon_shutdown_clean
echo "PASS: api_body_budget ($n proofs verified by snarkjs)"
