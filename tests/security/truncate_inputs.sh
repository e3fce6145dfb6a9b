#!/usr/bin/env bash
# Issue 16 items 6 and 5: a client's own files turned against the daemon. As an
# admitted but unprivileged user, the attacker
#   - truncates and rewrites its zkey and witness in a tight loop while it submits
#     (the submit check once mapped the zkey: SIGBUS killed cuzkd, exit 135),
#   - truncates its zkey and witnesses to nothing right after a submit, while the job
#     runs (a stage mapping them would die of SIGBUS and count crashes against every
#     partition it held),
#   - passes a FIFO, and /dev/zero, as its inputs (an open or read of them blocks).
# cuzkd must stay up, answer at once, no stage may die, each of the attacker's jobs
# ends on its own (proved from the bytes it had at submit, or failed), and root's job,
# running meanwhile, must finish with proofs snarkjs accepts.
set -euo pipefail
. "$(dirname "$0")/../lib/daemon.sh"
. "$(dirname "$0")/lib.sh"
attack_daemon sectrunc mulchain-13

mkdir -p "$tmp/atk/in" "$tmp/atk/out" "$tmp/root/in" "$tmp/root/out"
install -m 0755 "$BUILD/bin/cuzk" "$tmp/atk/cuzk"
cp "$A/circuit_final.zkey" "$tmp/atk/in/c.zkey"
cp "$A/circuit_final.zkey" "$tmp/atk/in/good.zkey"
for i in 1 2 3 4; do cp "$A/witness.wtns" "$tmp/atk/in/w$i.wtns"; done
cp "$A/witness.wtns" "$tmp/atk/in/good.wtns"
mkfifo "$tmp/atk/in/fifo.zkey"
chown -R "$atk:$atk" "$tmp/atk"
for i in 1 2 3 4 5 6; do cp "$A/witness.wtns" "$tmp/root/in/r$i.wtns"; done
acuzk() { as_attacker "$tmp/atk/cuzk" --instance "$inst" --run-dir "$run" "$@"; }
alive() { kill -0 "$daemon_pid" 2>/dev/null || fail "cuzkd died ($1)"; }
restarts() { js 'r.children.reduce((a,c)=>a+(c.restarts||0),0)' "$(cuzk --json status)"; }

# Root's job, running through all of it.
out="$(cuzk --json prove --zkey "$A/circuit_final.zkey" --out "$tmp/root/out" "$tmp/root/in"/r*.wtns)" || fail "root's submit: $out"
rjob="$(js 'r.job' "$out")"
cuzk wait "$rjob" >"$tmp/rwait.out" 2>&1 &
rwait=$!

# 1. Truncate and rewrite while submitting: one thread rewrites c.zkey and w1.wtns
#    (to nothing, to half, whole again) as fast as it can, the other submits them.
cat >"$tmp/race.py" <<'PY'
import json, os, socket, sys, threading, time
sock, d, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
files = {p: open(os.path.join(d, p), "rb").read() for p in ("c.zkey", "w1.wtns")}
stop = False
def churn():
    while not stop:
        for p, b in files.items():
            fd = os.open(os.path.join(d, p), os.O_WRONLY)
            os.ftruncate(fd, 0); os.ftruncate(fd, len(b) // 2); os.ftruncate(fd, 0)
            os.pwrite(fd, b, 0); os.close(fd)
        time.sleep(0.002)  # whole for a moment: some submits get through
t = threading.Thread(target=churn); t.start()
ok, refused, jobs, msgs = 0, 0, [], set()
try:
    for i in range(n):
        fds = [os.open(os.path.join(d, "c.zkey"), os.O_RDONLY),
               os.open(os.path.join(d, "../out"), os.O_PATH | os.O_DIRECTORY),
               os.open(os.path.join(d, "w1.wtns"), os.O_RDONLY)]
        req = {"req": "submit", "fds": 3, "zkey": {"fd": 0, "path": "c.zkey"},
               "out_dir": {"fd": 1, "path": "out"},
               "witnesses": [{"fd": 2, "path": "w1.wtns", "name": "race%d" % i}]}
        s = socket.socket(socket.AF_UNIX); s.connect(sock)
        line = json.dumps(req).encode() + b"\n"
        socket.send_fds(s, [line[:1]], fds); s.sendall(line[1:])
        for f in fds: os.close(f)
        buf = b""
        while b"\n" not in buf:
            x = s.recv(65536)
            if not x: raise SystemExit("cuzkd closed the connection without a reply")
            buf += x
        s.close()
        r = json.loads(buf.split(b"\n")[0])
        if r.get("ok"): ok += 1; jobs.append(r["job"])
        else:
            refused += 1; msgs.add(r.get("message", "")[:120])
finally:
    stop = True; t.join()
for m in sorted(msgs): print("refused: " + m, file=sys.stderr)
print(ok, refused, " ".join(map(str, jobs)))
PY
chmod 644 "$tmp/race.py"
res="$(as_attacker python3 "$tmp/race.py" "$run/$inst.sock" "$tmp/atk/in" 40)" || fail "the race script: $res"
alive "truncating the zkey during submits"
read -r nok nref jobs <<<"$res"
echo "ok: 40 submits of a zkey and witness being truncated and rewritten: cuzkd alive ($nok accepted, $nref refused)"
for j in $jobs; do
  cuzk wait "$j" >/dev/null 2>&1 || true # its own job may fail; nothing else may
  st="$(js 'r.job.state' "$(cuzk --json status "$j")")"
  case "$st" in
    done)
      n="$(js 'r.job.parts[0].name' "$(cuzk --json status "$j")")"
      "$SNARKJS" groth16 verify "$A/verification_key.json" "$tmp/atk/out/$n.public.json" "$tmp/atk/out/$n.proof.json" 2>&1 |
        grep -q OK || fail "job $j is done but snarkjs rejects its proof"
      ;;
    failed) ;;
    *) fail "job $j ended $st" ;;
  esac
done
echo "ok: every accepted job ended on its own; each that is done verifies (proved from the bytes copied at submit)"

# 2. Truncate after the submit, while the job runs: it is proved from cuzkd's copies.
out="$(acuzk --json prove --zkey "$tmp/atk/in/good.zkey" --out "$tmp/atk/out" "$tmp/atk/in/w2.wtns" "$tmp/atk/in/w3.wtns" "$tmp/atk/in/w4.wtns")" ||
  fail "the attacker's submit: $out"
ajob="$(js 'r.job' "$out")"
as_attacker truncate -s 0 "$tmp/atk/in/good.zkey" "$tmp/atk/in/w2.wtns" "$tmp/atk/in/w3.wtns" "$tmp/atk/in/w4.wtns"
cuzk wait "$ajob" >/dev/null 2>&1 || fail "the attacker's job $ajob failed after its files were truncated: $(cuzk status "$ajob")"
for i in 2 3 4; do
  "$SNARKJS" groth16 verify "$A/verification_key.json" "$tmp/atk/out/w$i.public.json" "$tmp/atk/out/w$i.proof.json" 2>&1 |
    grep -q OK || fail "snarkjs rejects w$i, proved after its files were truncated"
done
alive "truncating inputs during a job"
echo "ok: inputs truncated to nothing during the job: it proves from cuzkd's copies, 3 proofs verify"

# 3. A FIFO (no writer, ever) and /dev/zero as inputs: refused before any read.
r="$(asend_fds '{"req":"submit","fds":3,"zkey":{"fd":0,"path":"fifo.zkey"},"out_dir":{"fd":1,"path":"out"},"witnesses":[{"fd":2,"path":"good.wtns"}]}' \
  "$tmp/atk/in/fifo.zkey" "$tmp/atk/out" "$tmp/atk/in/good.wtns")"
grep -q '"ok":false' <<<"$r" && grep -q "FIFO" <<<"$r" || fail "a FIFO as zkey: $r"
r="$(asend_fds '{"req":"preload","fds":1,"zkey":{"fd":0,"path":"fifo.zkey"}}' "$tmp/atk/in/fifo.zkey")"
grep -q '"ok":false' <<<"$r" && grep -q "FIFO" <<<"$r" || fail "a FIFO preloaded: $r"
r="$(asend_fds '{"req":"submit","fds":3,"zkey":{"fd":0,"path":"zero"},"out_dir":{"fd":1,"path":"out"},"witnesses":[{"fd":2,"path":"good.wtns"}]}' \
  /dev/zero "$tmp/atk/out" "$tmp/atk/in/good.wtns")"
grep -q '"ok":false' <<<"$r" && grep -q "character device" <<<"$r" || fail "/dev/zero as zkey: $r"
timeout 10 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" status >/dev/null || fail "status not answered after the FIFO"
echo "ok: a FIFO and /dev/zero as inputs are refused at once; cuzkd answers"

wait "$rwait" || fail "root's job $rjob: $(cat "$tmp/rwait.out")"
for i in 1 2 3 4 5 6; do
  "$SNARKJS" groth16 verify "$A/verification_key.json" "$tmp/root/out/r$i.public.json" "$tmp/root/out/r$i.proof.json" 2>&1 |
    grep -q OK || fail "snarkjs rejects root's r$i"
done
[ "$(restarts)" = 0 ] || fail "a stage died during the attacks: $(cuzk --json status | jq -c .children 2>/dev/null)"
alive "the end"
echo "ok: root's job finished, its 6 proofs verify; no stage died"
daemon_stop
