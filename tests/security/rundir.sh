#!/usr/bin/env bash
# Issue 16 item 3: an untrusted run directory. With no XDG_RUNTIME_DIR a user's default
# run dir is /tmp/cuzk-UID, a name any other user can take first. Attacks, by a second
# unprivileged user against a victim user (both created here):
#  1. the attacker makes /tmp/cuzk-VICTIM (0777, symlinks at the pid file's names to a
#     file of the victim's): cuzkd must refuse the dir, and the file must be untouched;
#  2. a symlink (and a FIFO) at the pid file in a trusted run dir is refused, never
#     followed; a stale regular pid file of a dead process is replaced;
#  3. the attacker puts a fake daemon behind /tmp/cuzk-VICTIM/INSTANCE.sock: the victim's
#     `cuzk` must refuse to talk to it.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/../lib/daemon.sh"
. "$here/lib.sh"
daemon_init secrd
attacker_init
victim_init
as_victim() { env -u XDG_RUNTIME_DIR setpriv --reuid="$vuid" --regid="$(id -g "$VICTIM")" --clear-groups -- "$@"; }
evil="/tmp/cuzk-$vuid"
vpid="" fpid=""
cleanup_rd() {
  [ -z "$vpid" ] || kill -KILL "$vpid" 2>/dev/null || true
  [ -z "$fpid" ] || kill -KILL "$fpid" 2>/dev/null || true
  rm -rf "$evil"
  rm -f /dev/shm/cuzk-"$inst"v.* 2>/dev/null || true
}
# First: the users' processes die after the fake daemon and victim's cuzkd are gone.
daemon_on_exit="cleanup_rd${daemon_on_exit:+; $daemon_on_exit}"
rm -rf "$evil"
chmod 0711 "$tmp"

# 1. The attacker's /tmp/cuzk-VICTIM.
mkdir -p "$tmp/victim"
printf 'VICTIM DATA\n' >"$tmp/victim/data"
chown -R "$VICTIM" "$tmp/victim"
chmod 0700 "$tmp/victim"
chmod 0600 "$tmp/victim/data"
as_attacker mkdir -m 0777 "$evil"
as_attacker chmod 0777 "$evil"
as_attacker ln -s "$tmp/victim/data" "$evil/${inst}v.pid"
as_attacker ln -s "$tmp/victim/data" "$evil/${inst}v.pid.tmp"
as_victim "$BUILD/bin/cuzkd" --instance "${inst}v" --state-dir "$tmp/vstate" --foreground --devices cpu:1 --buffer-mb 16 \
  >"$tmp/victim.log" 2>&1 &
vpid=$!
for _ in $(seq 1 100); do
  kill -0 "$vpid" 2>/dev/null || break
  sleep 0.1
done
if kill -0 "$vpid" 2>/dev/null; then
  kill -KILL "$vpid"
  wait "$vpid" 2>/dev/null || true
  vpid=""
  [ "$(cat "$tmp/victim/data")" = "VICTIM DATA" ] || fail "cuzkd wrote its pid through the attacker's symlink"
  fail "cuzkd accepted a run dir another user owns ($evil): $(cat "$tmp/victim.log")"
fi
rc=0
wait "$vpid" || rc=$?
vpid=""
[ "$(cat "$tmp/victim/data")" = "VICTIM DATA" ] || fail "cuzkd wrote its pid through the attacker's symlink"
[ $rc -ne 0 ] || fail "cuzkd exited 0 in a foreign run dir"
grep -q "run directory $evil" "$tmp/victim.log" || fail "no clear message: $(cat "$tmp/victim.log")"
echo "ok: a foreign /tmp/cuzk-UID is refused: $(grep "run directory" "$tmp/victim.log")"

# 2. The pid file in a trusted run dir.
mkdir -m 0700 "$run"
printf 'ROOT SECRET\n' >"$tmp/secret"
chmod 0600 "$tmp/secret"
ln -s "$tmp/secret" "$run/$inst.pid"
"$BUILD/bin/cuzkd" --instance "$inst" --run-dir "$run" --state-dir "$tmp/state" --foreground --devices cpu:1 --buffer-mb 16 \
  >"$tmp/cuzkd.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 1 100); do
  kill -0 "$daemon_pid" 2>/dev/null || break
  [ -S "$run/$inst.sock" ] && break
  sleep 0.1
done
sleep 0.5
[ "$(cat "$tmp/secret")" = "ROOT SECRET" ] || fail "the pid was written through a symlink at the pid file"
if kill -0 "$daemon_pid" 2>/dev/null; then fail "cuzkd started with a symlink at its pid file"; fi
rc=0
wait "$daemon_pid" || rc=$?
daemon_pid=""
[ $rc -ne 0 ] && grep -q "not a regular file" "$tmp/cuzkd.log" || fail "no clear refusal (exit $rc)"
[ -L "$run/$inst.pid" ] || fail "the symlink was removed or replaced"
echo "ok: a symlink at the pid file is refused: $(grep "pid file" "$tmp/cuzkd.log" | tail -n1)"
rm -f "$run/$inst.pid"
rm -f /dev/shm/cuzk-"$inst".* 2>/dev/null || true
sh -c 'exit 0' &
dead=$!
wait "$dead"
echo "$dead" >"$run/$inst.pid"
daemon_start --devices cpu:1 --buffer-mb 16
[ "$(cat "$run/$inst.pid")" = "$daemon_pid" ] || fail "stale pid file not replaced: $(cat "$run/$inst.pid")"
echo "ok: a stale pid file (dead pid $dead) is replaced"
daemon_stop

# 3. A fake daemon behind the victim's default socket.
rm -rf "$evil"
as_attacker mkdir -m 0755 "$evil"
apy=""
for c in /usr/bin/python3 /usr/local/bin/python3 python3; do
  as_attacker "$c" -c '' 2>/dev/null && {
    apy="$c"
    break
  }
done
[ -n "$apy" ] || fail "no python3 the attacker can run"
flog="$evil/fake.log"
(exec setpriv --reuid="$ATTACKER_UID" --regid="$(id -g "$ATTACKER")" --clear-groups -- \
  "$apy" - "$evil/${inst}v.sock" "$flog" >/dev/null 2>&1) <<'PY' &
import os, socket, sys
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o777); s.listen(4)
while True:
    c, _ = s.accept()
    with open(sys.argv[2], "a") as f: f.write("connection\n")
    c.recv(65536); c.sendall(b'{"ok":true,"job":"1","state":"running"}\n'); c.close()
PY
fpid=$!
wait_until 50 [ -S "$evil/${inst}v.sock" ] || fail "fake daemon did not start"
rc=0
as_victim "$BUILD/bin/cuzk" --instance "${inst}v" status >"$tmp/client.out" 2>&1 || rc=$?
kill -KILL "$fpid" 2>/dev/null || true
fpid=""
[ ! -s "$flog" ] || fail "the victim's cuzk talked to the attacker's socket (exit $rc): $(cat "$tmp/client.out")"
[ $rc -ne 0 ] && grep -q "refusing" "$tmp/client.out" || fail "no clear refusal (exit $rc): $(cat "$tmp/client.out")"
echo "ok: cuzk refuses a socket dir another user controls: $(head -n1 "$tmp/client.out")"
