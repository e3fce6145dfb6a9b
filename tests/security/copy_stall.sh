#!/usr/bin/env bash
# Issue 16: a submit whose file never gives a byte must not hold cuzkd. The attacker,
# an admitted but unprivileged user, passes as its zkey the descriptor of a file on a
# FUSE mount whose reads are never answered (tests/security/fuse_stall.py; a user
# would mount its own with fusermount, here root mounts it since the test runs as
# root: for cuzkd it is the same descriptor). The old cuzkd copied the zkey in its
# event loop: the read blocked it for good, and no status, wait or submit of anyone
# was answered. Now the copy runs in an intake thread: root's status and a job of
# root's are answered and proved meanwhile, the attacker's submit fails after
# --copy-timeout with a clear message, a third stuck submit is refused as busy, and
# once the FUSE server goes away the stuck threads end and cuzkd is still up.
set -euo pipefail
. "$(dirname "$0")/../lib/daemon.sh"
. "$(dirname "$0")/lib.sh"
attack_daemon seccopy mulchain-13 --copy-timeout 2

mkdir -p "$tmp/fuse" "$tmp/atk/in" "$tmp/atk/out" "$tmp/root/out"
cp "$A/witness.wtns" "$tmp/atk/in/w.wtns"
chown -R "$atk:$atk" "$tmp/atk"
size="$(stat -c %s "$A/circuit_final.zkey")"
python3 "$(dirname "$0")/fuse_stall.py" "$tmp/fuse" "$size" "$tmp/fuse.read" 2>"$tmp/fuse.log" &
fuse_pid=$!
daemon_on_exit="[ -z \"\$fuse_pid\" ] || kill \$fuse_pid 2>/dev/null; umount -l '$tmp/fuse' 2>/dev/null; ${daemon_on_exit:-}"
wait_until 50 [ -f "$tmp/fuse/c.zkey" ] || fail "the FUSE mount did not come up: $(cat "$tmp/fuse.log")"
rcuzk() { timeout "$1" "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" "${@:2}"; }
alive() { kill -0 "$daemon_pid" 2>/dev/null || fail "cuzkd died ($1)"; }

# The attacker's raw submit of the FUSE zkey; prints the reply line.
cat >"$tmp/stuck.py" <<'PY'
import json, os, socket, sys
sock, zkey, out, wtns, name = sys.argv[1:6]
fds = [os.open(zkey, os.O_RDONLY), os.open(out, os.O_PATH | os.O_DIRECTORY), os.open(wtns, os.O_RDONLY)]
req = {"req": "submit", "fds": 3, "zkey": {"fd": 0, "path": "c.zkey"}, "out_dir": {"fd": 1, "path": "out"},
       "witnesses": [{"fd": 2, "path": "w.wtns", "name": name}]}
s = socket.socket(socket.AF_UNIX); s.connect(sock)
line = json.dumps(req).encode() + b"\n"
socket.send_fds(s, [line[:1]], fds); s.sendall(line[1:])
# a status behind it on the same connection: answered after the submit, in order
s.sendall(b'{"req":"status"}\n')
buf = b""
while buf.count(b"\n") < 2:
    x = s.recv(65536)
    if not x: break
    buf += x
print("\n".join(buf.decode().split("\n")[:2]))
PY
chmod 644 "$tmp/stuck.py"
stuck() { as_attacker timeout 120 python3 "$tmp/stuck.py" "$run/$inst.sock" "$tmp/fuse/c.zkey" "$tmp/atk/out" "$tmp/atk/in/w.wtns" "$1"; }
stuck s1 >"$tmp/s1.out" 2>&1 &
s1=$!
wait_until 100 [ -f "$tmp/fuse.read" ] || fail "cuzkd never read the FUSE zkey: $(cat "$tmp/s1.out")"
echo "ok: cuzkd is inside a read of the FUSE zkey that will never return"

# Meanwhile root is served: status, and a whole job proved.
rcuzk 10 status >/dev/null || fail "root's status was not answered while a submit's read blocks (the event loop is held)"
rcuzk 60 prove --wait --zkey "$A/circuit_final.zkey" --out "$tmp/root/out" "$A/witness.wtns" >"$tmp/rprove.out" 2>&1 ||
  fail "root's job was not proved while a submit's read blocks: $(cat "$tmp/rprove.out")"
"$SNARKJS" groth16 verify "$A/verification_key.json" "$tmp/root/out/witness.public.json" "$tmp/root/out/witness.proof.json" 2>&1 |
  grep -q OK || fail "snarkjs rejects root's proof"
echo "ok: while the read blocks, root's status is answered and its job is proved (snarkjs verifies)"

wait "$s1" || fail "the attacker's stuck submit got no answer: $(cat "$tmp/s1.out")"
r1="$(sed -n 1p "$tmp/s1.out")"
r2="$(sed -n 2p "$tmp/s1.out")"
grep -q '"ok":false' <<<"$r1" && grep -q 'copy-timeout' <<<"$r1" || fail "the stuck submit's answer: $r1"
grep -q '"ok":true' <<<"$r2" && grep -q '"jobs"' <<<"$r2" || fail "the status behind the stuck submit: $r2"
echo "ok: the stuck submit fails after --copy-timeout: $(js 'r.message' "$r1" | cut -c1-90)...; the status behind it follows"

# A second stuck one is given up on too; a third is refused at once (stuck threads are bounded).
stuck s2 >"$tmp/s2.out" 2>&1 || fail "second stuck submit: $(cat "$tmp/s2.out")"
grep -q 'copy-timeout' "$tmp/s2.out" || fail "second stuck submit: $(cat "$tmp/s2.out")"
stuck s3 >"$tmp/s3.out" 2>&1 || fail "third stuck submit: $(cat "$tmp/s3.out")"
grep -q '"error":"busy"' "$tmp/s3.out" && grep -q 'still stuck' "$tmp/s3.out" || fail "third stuck submit: $(cat "$tmp/s3.out")"
echo "ok: two submits stuck in reads are the most one uid gets; the third is refused as busy"

# A preload of the FUSE zkey (root's: its own stuck count) is copied off the loop too.
send_fds '{"req":"preload","fds":1,"zkey":{"fd":0,"path":"c.zkey"}}' "$tmp/fuse/c.zkey" >"$tmp/p1.out" 2>&1 &
p1=$!
rcuzk 10 status >/dev/null || fail "status not answered while a preload's read blocks"
wait "$p1" || fail "the stuck preload got no answer: $(cat "$tmp/p1.out")"
grep -q '"ok":false' "$tmp/p1.out" && grep -q 'copy-timeout' "$tmp/p1.out" || fail "the stuck preload's answer: $(cat "$tmp/p1.out")"
echo "ok: a preload whose zkey read blocks fails after --copy-timeout; status is answered meanwhile"

# The FUSE server goes: the reads fail, the threads end, cuzkd carries on.
kill "$fuse_pid"
wait "$fuse_pid" 2>/dev/null || true
fuse_pid="" # gone: its pid may be another process's soon
umount -l "$tmp/fuse" 2>/dev/null || true
for _ in $(seq 1 100); do
  [ "$(grep -c 'ended after all' "$tmp/cuzkd.log")" -ge 3 ] && break
  sleep 0.1
done
[ "$(grep -c 'ended after all' "$tmp/cuzkd.log")" -ge 3 ] || fail "the stuck reads did not end: $(tail -5 "$tmp/cuzkd.log")"
alive "after the FUSE server went"
out="$(cuzk --json status)" || fail "status after the FUSE server went"
echo "ok: the stuck threads ended once their reads failed; cuzkd is up"
daemon_stop
