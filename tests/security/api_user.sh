#!/usr/bin/env bash
# cuzk-api under a user of its own (--api-user), not cuzkd's: cuzkd runs as root here,
# with `listen =`, `--api-user U --group U`; U is a real second Unix user made for the
# run. cuzkd starts cuzk-api as its child, which reads its tokens and binds as root and
# then becomes U (its groups too: U reaches the socket through --group). Checked:
#   the API process runs as U, not root;
#   a tenant's POST is accepted (cuzkd takes the tenant's name from U's connection),
#     proves, and snarkjs verifies the proof fetched over HTTP;
#   U cannot ptrace cuzkd (PTRACE_ATTACH: EPERM) nor read its environment, and cannot
#     read the job store; U may not operate cuzkd (`cuzk shutdown` refused);
#   a job's callback is delivered, signed, by the API as U (its deliveries' file in a
#     directory of the state dir that U owns);
#   --api-user with --listen under root but without a --group U is in: cuzkd refuses to
#     start and says why.
# Then the packaged layout: cuzkd as a user of its own, cuzk-api on its own as U (a
# member of cuzkd's group): the tenant's proof made and verified, U cannot ptrace cuzkd
# or read its job store, and U's control connections are not held to --conns-per-uid. Before --api-user, cuzkd did not know the option, the API it
# started as root stayed root, and an API under a user other than cuzkd's was refused
# every tenant. Skips (77) when not root (it makes the user) or without the API's tools.
# shellcheck disable=SC2154 # tok_NAME: set by api_tokens (api.sh, printf -v)
set -euo pipefail
. "$(dirname "$0")/../lib/daemon.sh"
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lib/wgen.sh"
. "$ROOT/tests/lib/api.sh"
daemon_init secapiuser
[ "$(id -u)" -eq 0 ] || {
  echo "SKIP: $(basename "$0") makes a second user and runs cuzkd as root"
  exit 77
}
command -v useradd >/dev/null && command -v runuser >/dev/null || {
  echo "SKIP: useradd or runuser missing"
  exit 77
}
api_init
apiu="cuzkapi$$"
sec_user_add "$apiu"
sec_user_reaches_tree "$apiu"
rport="$(free_port)"
api_tokens_callback alice "http://127.0.0.1:$rport"
recv_start "$tmp/alice.secret"

# Without a group the API user is in, the socket (root's, 0660) would be out of its reach.
port="$(free_port)"
rc=0
timeout 60 "$BUILD/bin/cuzkd" --instance "$inst" --run-dir "$run" --state-dir "$tmp/state" --foreground \
  --listen "127.0.0.1:$port" --api-tokens "$tmp/tokens" --api-user "$apiu" >"$tmp/nogroup.log" 2>&1 || rc=$?
[ $rc -ne 0 ] && grep -q -- "--api-user $apiu.*--group" "$tmp/nogroup.log" ||
  fail "--api-user without --group: exit $rc: $(cat "$tmp/nogroup.log")"
echo "ok: --api-user without a --group it is in refused: $(head -n1 "$tmp/nogroup.log")"

chmod 0711 "$tmp" # the API user passes through to the run dir; it lists nothing here
api_start http "" --api-user "$apiu" --group "$apiu"
apid=""
for _ in $(seq 1 100); do
  apid="$(pgrep -P "$daemon_pid" -x cuzk-api || true)"
  [ -z "$apid" ] || break
  sleep 0.1
done
[ -n "$apid" ] || fail "no cuzk-api child of cuzkd"
# The uid from status (a process that is not dumpable has a /proc/PID of root's).
auid="$(awk '/^Uid:/ { print $3 }' "/proc/$apid/status")"
[ "$auid" = "$(id -u "$apiu")" ] || fail "cuzk-api (pid $apid) runs as uid $auid, not $apiu's"
grep -q "^Groups:.*\b$(getent group "$apiu" | cut -d: -f3)\b" "/proc/$apid/status" || fail "cuzk-api lacks $apiu's group"
echo "ok: cuzkd (root) runs its cuzk-api as $apiu (pid $apid)"

api_proved p1 "$tok_alice" '{"x":"3","k":"1"}'
tenant="$(cuzk --json status | jq -r --argjson j "$id" '.jobs[]? | select(.job==$j) | .tenant // empty')"
echo "ok: alice's job $id made through the API as $apiu proved; snarkjs verifies it${tenant:+ (tenant $tenant)}"

# Its callbacks: the API, no longer root, still writes its deliveries' file (in a
# directory of the state dir that is its own) and signs with the tenant's secret.
url="$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "http://127.0.0.1:$rport/u/1")"
[ "$(http cb "$tok_alice" POST "/v1/circuits/mul/proofs?callback_url=$url" -H 'Content-Type: application/json' \
  --data-binary '{"x":"4","k":"3"}')" = 202 ] || fail "POST with a callback: $(cat "$tmp/http/cb.body")"
recv_wait /u/1 200 1
grep -q '"path": "/u/1", "status": 200, "sig_ok": true' "$tmp/recv.log" || fail "callback as $apiu: $(cat "$tmp/recv.log")"
cbdb="$(find "$tmp/state" -name callbacks.db)"
[ -n "$cbdb" ] && [ "$(stat -c %U "$(dirname "$cbdb")")" = "$apiu" ] || fail "the callbacks' file: ${cbdb:-none}"
echo "ok: a callback from the API as $apiu delivered and signed (its file in a dir of its own: $(stat -c '%U %a' "$(dirname "$cbdb")"))"

cat >"$tmp/ptrace.py" <<'PY'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
r = libc.ptrace(16, int(sys.argv[1]), None, None)  # PTRACE_ATTACH
print("attached" if r == 0 else os.strerror(ctypes.get_errno()))
PY
got="$(runuser -u "$apiu" -- python3 "$tmp/ptrace.py" "$daemon_pid")"
[ "$got" != attached ] || fail "$apiu attached to cuzkd with ptrace"
echo "ok: $apiu cannot ptrace cuzkd: $got"
! runuser -u "$apiu" -- cat "/proc/$daemon_pid/environ" >/dev/null 2>&1 || fail "$apiu reads cuzkd's environment"
db="$(find "$tmp/state" -name '*.db' | head -n1)"
[ -n "$db" ] || fail "no job store in $tmp/state"
! runuser -u "$apiu" -- cat "$db" >/dev/null 2>&1 || fail "$apiu reads the job store $db"
echo "ok: $apiu reads neither cuzkd's environment nor the job store ($(stat -c '%U %a' "$db"))"
r="$(runuser -u "$apiu" -- "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" shutdown 2>&1)" &&
  fail "$apiu shut cuzkd down: $r"
grep -q "may not shut down" <<<"$r" || fail "$apiu's shutdown: $r"
echo "ok: $apiu may not operate cuzkd: $r"
daemon_shutdown_clean

# The packaged layout (cuzkd.service, cuzk-api.service): cuzkd as a user of its own, D,
# with --group D --api-user U; cuzk-api started on its own as U, a member of D's group,
# reading a tokens file root:U 0640. U reaches the socket and names tenants, and still
# cannot ptrace D's cuzkd nor read D's job store.
dusr="cuzkd$$"
sec_user_add "$dusr"
usermod -aG "$dusr" "$apiu"
run="$tmp/run2"
mkdir -p "$run" "$tmp/state2"
chown "$dusr:$dusr" "$run" "$tmp/state2"
chmod 0700 "$run" "$tmp/state2"
chgrp "$apiu" "$tmp/tokens"
chmod 0640 "$tmp/tokens"
setpriv --reuid "$dusr" --regid "$dusr" --init-groups "$BUILD/bin/cuzkd" --instance "$inst" --run-dir "$run" \
  --state-dir "$tmp/state2" --foreground --wgen-dir "$BUILD/wgen:$tmp" --config "$tmp/cuzkd.conf" --devices cpu:1 \
  --group "$dusr" --api-user "$apiu" >>"$tmp/cuzkd2.log" 2>&1 &
daemon_pid=$!
daemon_answers "$tmp/cuzkd2.log"
port="$(free_port)"
api_base="http://127.0.0.1:$port"
sed -i '/^listen = /d; /^api-tokens = /d' "$tmp/cuzkd.conf" # not the child: the API on its own
setpriv --reuid "$apiu" --regid "$apiu" --init-groups "$BUILD/bin/cuzk-api" --socket "$run/$inst.sock" \
  --instance "$inst" --listen "127.0.0.1:$port" --api-tokens "$tmp/tokens" >"$tmp/api2.log" 2>&1 &
api2=$!
daemon_on_exit="kill -TERM $api2 2>/dev/null${daemon_on_exit:+; $daemon_on_exit}"
api_wait_up
api_proved q1 "$tok_alice" '{"x":"5","k":"2"}'
echo "ok: cuzkd as $dusr, cuzk-api on its own as $apiu (group $dusr): alice's job $id proved, snarkjs verifies it"
got="$(runuser -u "$apiu" -- python3 "$tmp/ptrace.py" "$daemon_pid")"
[ "$got" != attached ] || fail "$apiu attached to $dusr's cuzkd with ptrace"
! runuser -u "$apiu" -- cat "/proc/$daemon_pid/environ" >/dev/null 2>&1 || fail "$apiu reads $dusr's cuzkd's environment"
db="$(find "$tmp/state2" -name '*.db' | head -n1)"
[ -n "$db" ] && ! runuser -u "$apiu" -- cat "$db" >/dev/null 2>&1 || fail "$apiu reads $dusr's job store ${db:-(none)}"
echo "ok: $apiu cannot ptrace $dusr's cuzkd ($got) nor read its job store ($(stat -c '%U %a' "$db"))"
# The API opens a control connection per request in flight (up to 16): U's are API
# connections, not held to --conns-per-uid (8), as the API child's are not.
got="$(
  runuser -u "$apiu" -- python3 - "$run/$inst.sock" <<'PY'
import socket, sys
conns = []
for _ in range(12):
    c = socket.socket(socket.AF_UNIX)
    c.connect(sys.argv[1])
    conns.append(c)
answered = 0
for c in conns:
    try:  # a connection over the cap is answered "busy" and closed
        c.sendall(b'{"req":"status"}\n')
        answered += b'"ok":true' in c.makefile("rb").readline()
    except OSError:
        pass
print(answered)
PY
)"
[ "$got" = 12 ] || fail "$apiu's 12 control connections at once: $got answered (held to --conns-per-uid?)"
echo "ok: $apiu holds 12 control connections at once, each answered (not held to --conns-per-uid 8)"
kill -TERM "$api2"
wait "$api2" || true
daemon_shutdown_clean
echo "PASS: api_user ($n proofs verified)"
