#!/usr/bin/env bash
# Descriptor hoarding. The attacker (an admitted user) opens 8 connections, queues
# 4,301 descriptors on each (17 messages of 253, each with one byte of a request line
# that never ends) and keeps each alive with one byte every 5 s. Before, that took
# cuzkd to its open-file limit: root and every user got no answer, and the loop spun
# on EMFILE. Now an ordinary uid holds at most two requests' worth of descriptors
# (2 x (--max-parts + 16)) and all of them half the limit, so meanwhile root's status
# answers and root's job proves (verified with snarkjs); and each trickling connection
# is closed once its line has been unfinished for 30 s, however it trickles.
set -euo pipefail
. "$(dirname "$0")/../lib/daemon.sh"
. "$(dirname "$0")/lib.sh"
attack_daemon sechoard mulchain-10
lim="$(awk '/Max open files/ {print $4}' "/proc/$daemon_pid/limits")"
echo "cuzkd's descriptor limit: $lim"
echo hoard >"$tmp/f"
chmod 644 "$tmp/f"
cat >"$tmp/hoard.py" <<'PY'
import os, resource, socket, sys, time
# Descriptors in flight count against the sender's limit: raised to its hard one.
h = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
resource.setrlimit(resource.RLIMIT_NOFILE, (h, h))
sock, f, status = sys.argv[1], sys.argv[2], sys.argv[3]
fd = os.open(f, os.O_RDONLY)
conns, sent = [], 0
for i in range(8):
    s = socket.socket(socket.AF_UNIX); s.connect(sock); conns.append(s)
    for m in range(17):
        try:
            socket.send_fds(s, [b"{" if m == 0 else b" "], [fd] * 253); sent += 253
        except OSError:
            break
open(status, "w").write("ready %d\n" % sent)
alive = list(conns)
while alive:
    time.sleep(5)
    for s in list(alive):
        try:
            s.setblocking(False)
            try:
                if s.recv(65536) == b"":
                    raise ConnectionResetError
            except BlockingIOError:
                pass
            s.send(b" ")
        except OSError:
            alive.remove(s)
    open(status, "w").write("alive %d\n" % len(alive))
PY
chmod 644 "$tmp/hoard.py"
touch "$tmp/hoard.status"
chown "$atk" "$tmp/hoard.status"
as_attacker python3 "$tmp/hoard.py" "$run/$inst.sock" "$tmp/f" "$tmp/hoard.status" &
hp=$!
daemon_on_exit="kill $hp 2>/dev/null || true; ${daemon_on_exit}"
for _ in $(seq 1 600); do
  grep -q '^ready\|^alive' "$tmp/hoard.status" && break
  sleep 0.1
done
grep -q '^ready\|^alive' "$tmp/hoard.status" || fail "the attacker did not get its connections up"
nfd="$(dir_count "/proc/$daemon_pid/fd")"
echo "ok: attacker: $(cat "$tmp/hoard.status"); cuzkd holds $nfd descriptors"
# At most half the limit for ordinary users, plus cuzkd's own (a few hundred at most).
[ "$nfd" -le $((lim / 2 + 512)) ] || fail "the attacker made cuzkd hold $nfd descriptors of its $lim"
timeout 30 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" status >/dev/null ||
  fail "root's status got no answer while the attacker hoards descriptors"
mkdir -p "$tmp/rootout"
timeout 300 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" prove --zkey "$A/circuit_final.zkey" \
  --out "$tmp/rootout" --wait "$A/witness.wtns" >/dev/null || fail "root's job did not prove meanwhile"
"$SNARKJS" groth16 verify "$A/verification_key.json" "$tmp/rootout/witness.public.json" \
  "$tmp/rootout/witness.proof.json" >/dev/null || fail "snarkjs rejects root's proof"
echo "ok: root's status answers and its job proves (snarkjs verifies) meanwhile"
# Liveness bound 120 s: each connection goes 30 s after its line began.
wait_until 1200 grep -q '^alive 0' "$tmp/hoard.status" || fail "trickling connections still open: $(cat "$tmp/hoard.status")"
echo "ok: every trickling connection was closed (its line never ended)"
wait "$hp" 2>/dev/null || true
daemon_shutdown_clean
echo "PASS: fd_hoard"
