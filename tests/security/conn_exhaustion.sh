#!/usr/bin/env bash
# Issue 16 item 4: connection exhaustion on the control socket. An admitted but
# unprivileged user (a member of --group) opens 70 idle connections: root's `cuzk status`
# must still be answered (reserved slots), the attacker's connections beyond
# --conns-per-uid are refused with a one-line "busy: too many connections for uid N",
# and its idle connections are closed after --idle-timeout.
set -euo pipefail
. "$(dirname "$0")/../lib/daemon.sh"
. "$(dirname "$0")/lib.sh"
daemon_init secconn
attacker_init
daemon_start --devices cpu:1 --buffers 2 --buffer-mb 16 --group "$atk" \
  --conns-per-uid 8 --idle-timeout 3
attacker_reach
uid="$(id -u "$atk")"

cat >"$tmp/atk.py" <<'PY'
import socket, sys, time, select
path, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
socks, refused, msg = [], 0, ""
for _ in range(n):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(path)
    except OSError:
        refused += 1; continue
    socks.append(s)
time.sleep(1.0)
held = []
for s in socks:  # refused ones got one line and EOF at once
    r, _, _ = select.select([s], [], [], 0)
    if r:
        d = s.recv(4096)
        if d and not msg: msg = d.decode(errors="replace").strip()
        refused += 1; s.close()
    else:
        held.append(s)
with open(out + ".ready", "w") as f:
    f.write("%d %d %s\n" % (len(held), refused, msg))
t0 = time.time(); closed = 0
while held and time.time() - t0 < 60:  # the daemon closes idle ones
    r, _, _ = select.select(held, [], [], 1)
    for s in r:
        s.recv(4096); held.remove(s); s.close(); closed += 1
with open(out, "w") as f:
    f.write("%d %d\n" % (closed, len(held)))
PY
chmod 644 "$tmp/atk.py"
: >"$tmp/atk.out"
chmod 666 "$tmp/atk.out"
chmod 777 "$tmp"
as_attacker python3 "$tmp/atk.py" "$run/$inst.sock" 70 "$tmp/atk.out" &
apid=$!
wait_until 150 [ -s "$tmp/atk.out.ready" ] || fail "the attacker did not get its connections"
read -r held refused msg <"$tmp/atk.out.ready"
echo "attacker: $held connections held, $refused refused (${msg:0:100})"
# While the attacker holds its connections (the idle timeout is 3 s, the check is at once):
timeout 10 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" status >/dev/null ||
  fail "root's cuzk status not answered while uid $uid holds $held connections"
echo "ok: root's status answered while the attacker holds its connections"
[ "$held" -le 8 ] || fail "uid $uid holds $held connections (cap 8)"
[ "$refused" -ge 62 ] || fail "only $refused of 70 refused"
case "$msg" in *"busy: too many connections for uid $uid"*) ;; *) fail "refusal: $msg" ;; esac
echo "ok: per-uid cap: $held held, $refused refused with a busy line"
wait "$apid" || fail "attacker script failed"
read -r closed left <"$tmp/atk.out"
[ "$left" -eq 0 ] && [ "$closed" -eq "$held" ] || fail "idle connections: $closed closed, $left still open after 60 s"
echo "ok: the $closed idle connections were closed (--idle-timeout 3)"
# And the uid can connect again after its idle ones are gone.
[ "$(as_attacker python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"{\"req\":\"status\"}\n"); print(int(b"\"ok\":true" in s.recv(65536)))' "$run/$inst.sock")" = 1 ] ||
  fail "uid $uid is not served after its idle connections closed"
echo "ok: uid $uid served again"
# A wait in progress is not idle: with the synth stopped (SIGSTOP) a job cannot
# finish, and `cuzk wait --timeout-ms 6000` (longer than --idle-timeout 3) must get
# its "still running" answer (exit 23), not a closed connection.
A="$REF_FIXTURES/bn128"
mkdir -p "$tmp/in" "$tmp/out"
cp "$A/witness.wtns" "$tmp/in/w1.wtns"
spid="$(pgrep -f -- "cuzk-synth.*--instance $inst " | head -1)"
[ -n "$spid" ] || fail "no synth process"
kill -STOP "$spid"
out="$(cuzk --json prove --zkey "$A/circuit_final.zkey" --out "$tmp/out" "$tmp/in/w1.wtns")" ||
  {
    kill -CONT "$spid"
    fail "submit: $out"
  }
id="$(js r.job "$out")"
rc=0
w="$(timeout 30 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" wait "$id" --timeout-ms 6000 2>&1)" || rc=$?
kill -CONT "$spid"
[ $rc -eq 23 ] || fail "wait (6 s, longer than --idle-timeout 3): exit $rc, want 23 (timed out): $w"
echo "ok: a 6 s wait outlived --idle-timeout 3 (answered: timed out)"
timeout 120 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" wait "$id" >/dev/null || fail "job $id did not finish"
daemon_shutdown_clean
echo "PASS: conn_exhaustion"
