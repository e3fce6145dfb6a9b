#!/usr/bin/env bash
# cuzkd under systemd's Type=notify protocol: with NOTIFY_SOCKET set it sends READY=1
# only once every stage is up (each stage's pid in its stats slot), and STOPPING=1 on
# SIGTERM; then exits 0. A Python datagram socket stands in for systemd.
set -euo pipefail
BUILD="${BUILD:-build}"
bin="$(cd "$BUILD/bin" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
python3 - "$bin" "$tmp" <<'PY'
import os, signal, socket, subprocess, sys, time
bin, tmp = sys.argv[1], sys.argv[2]
sock = os.path.join(tmp, "notify")
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sock)
s.settimeout(30)
inst = "notify%d" % os.getpid()
env = dict(os.environ, NOTIFY_SOCKET=sock)
p = subprocess.Popen([bin + "/cuzkd", "--foreground", "--instance", inst, "--run-dir",
                      tmp + "/run", "--state-dir", tmp + "/state", "--devices", "cpu:2", "--buffers", "2", "--buffer-mb", "1"],
                     env=env)
try:
    msg = s.recv(4096).decode()
    print("notify:", msg.replace("\n", " | "))
    assert msg.startswith("READY=1"), msg
    # every stage is running when READY arrives
    st = subprocess.run([bin + "/cuzk", "--instance", inst, "--run-dir", tmp + "/run",
                         "--json", "status"], capture_output=True, text=True, timeout=20)
    print(st.stdout.strip()[:400])
    assert st.returncode == 0, st.stderr
    # the operator commands of docs/operations.md: cuzk-top once, restart a stage
    top = subprocess.run([bin + "/cuzk-top", "--instance", inst, "--run-dir", tmp + "/run",
                          "--once"], capture_output=True, text=True, timeout=20)
    print(top.stdout.strip()[:600])
    assert top.returncode == 0, top.stderr
    rs = subprocess.run([bin + "/cuzk", "--instance", inst, "--run-dir", tmp + "/run",
                         "restart", "worker", "0"], capture_output=True, text=True, timeout=20)
    print("restart worker 0:", rs.returncode, rs.stdout.strip(), rs.stderr.strip())
    assert rs.returncode == 0, rs.stderr
    p.send_signal(signal.SIGTERM)
    msg = s.recv(4096).decode()
    print("notify:", msg)
    assert "STOPPING=1" in msg, msg
    rc = p.wait(timeout=60)
    assert rc == 0, rc
    print("deploy_notify: READY after the stages, STOPPING on SIGTERM, exit 0")
finally:
    if p.poll() is None:
        p.kill()
PY
