#!/usr/bin/env bash
# Issue 16 item 8: metrics slowloris. An unprivileged user opens 100 connections to the
# metrics port, each sending a request head one byte at a time; a legitimate scrape
# must still be answered within 5 s (the old one-at-a-time server with a 2 s head
# deadline per connection took 30 s or more).
set -euo pipefail
. "$(dirname "$0")/../lib/daemon.sh"
. "$(dirname "$0")/lib.sh"
daemon_init secslow
attacker_init
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
daemon_start --devices cpu:1 --buffers 2 --buffer-mb 16 --metrics-listen "127.0.0.1:$port"

cat >"$tmp/slow.py" <<'PY'
import socket, sys, time
port, n, ready = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
socks = []
def opener():
    s = socket.socket(); s.setblocking(False)
    try: s.connect(("127.0.0.1", port))
    except BlockingIOError: pass
    except OSError: return None
    return s
for _ in range(n):
    s = opener()
    if s: socks.append(s)
open(ready, "w").write("%d\n" % len(socks))
t0 = time.time()
while time.time() - t0 < 20:  # trickle a byte each; reconnect the dropped ones
    for i, s in enumerate(socks):
        try: s.send(b"G")
        except OSError:
            s.close(); socks[i] = opener() or s
    time.sleep(0.3)
PY
chmod 755 "$tmp"
chmod 644 "$tmp/slow.py"
: >"$tmp/slow.ready"
chmod 666 "$tmp/slow.ready"
as_attacker python3 "$tmp/slow.py" "$port" 100 "$tmp/slow.ready" &
apid=$!
daemon_on_exit="kill $apid 2>/dev/null; $daemon_on_exit"
wait_until 100 [ -s "$tmp/slow.ready" ] || fail "the slow clients did not start"
sleep 1
echo "slow clients: $(cat "$tmp/slow.ready") connections"
t0=$(date +%s.%N)
python3 - "$port" <<'PY' || fail "a scrape behind 100 slow clients was not answered within 5 s"
import socket, sys, time
t0 = time.time()
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
s.settimeout(max(0.1, 5 - (time.time() - t0)))
s.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
buf = b""
while time.time() - t0 < 5:
    d = s.recv(65536)
    if not d: break
    buf += d
assert buf.startswith(b"HTTP/1.0 200") and b"cuzk_" in buf, buf[:200]
assert time.time() - t0 < 5
PY
echo "ok: scrape answered in $(python3 -c "import sys; print('%.2f' % ($(date +%s.%N) - $t0))") s behind 100 slow clients"
kill "$apid" 2>/dev/null || true
wait "$apid" 2>/dev/null || true
daemon_shutdown_clean
echo "PASS: metrics_slowloris"
