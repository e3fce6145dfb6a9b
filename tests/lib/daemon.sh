# shellcheck shell=bash
# The one helper library of the shell tests that run a cuzkd: tests/scripts/, the fault
# cases of tests/faults/ and the attacks of tests/security/ (with security/lib.sh for
# their second users). Sourced, never run. After `. tests/lib/daemon.sh` and `daemon_init NAME`:
#   ROOT, BUILD (absolute), REF_FIXTURES, FIXTURES, SNARKJS ...  (tests/fixtures/env.sh)
#   inst   a unique instance name (NAME + pid)      tmp  a temp dir, removed on exit
#   run    the run dir (socket, pid file)           daemon_pid  set by daemon_start
#   (the job store is $tmp/state/$inst.db: each test's own, never the default)
#   cuzk ARGS...       the client for this instance
#   fail MSG           print MSG and the tail of the daemon's log, exit 1
#   send LINE          one raw protocol line on a fresh connection; prints the reply
#   expect_error WHAT CODE LINE  send LINE; fail unless the reply is an error CODE with
#                      a message (printed: "ok: WHAT -> CODE: message")
#   expect_fds WHAT CODE LINE FILE...  the same, LINE sent with the FILEs' descriptors
#   wait_jobs J...     cuzk wait ${ids[J]} for each J (up to 10 min each); fail if one does not end
#   verify_outs J FX N snarkjs accepts $tmp/J/out/w{1..N}.proof.json with its public.json under
#                      fixture set FX's key (fail otherwise); adds N to n
#   js EXPR JSON       evaluate EXPR with r = JSON.parse(JSON) in node, print it
#   daemon_start OPTS  start cuzkd --foreground with OPTS (and --wgen-dir $BUILD/wgen:$tmp),
#                      wait until it answers status
#   daemon_stop        graceful `cuzk shutdown`, up to 10 s, then SIGKILL; segments removed
#   daemon_kill9 [PID...]  SIGKILL cuzkd (no shutdown: a crash) and the PIDs (a stage the
#                      test SIGSTOPped: the SIGTERM its death sends would wait for a
#                      SIGCONT) and wait until every process of the instance is gone (a
#                      liveness bound of 30 s), so a new cuzkd meets none of them
#   daemon_shutdown_clean  the check: status answers, `cuzk shutdown` stops cuzkd with
#                      exit 0 within 30 s, and no stage process, socket, pid file or
#                      segment is left
#   daemon_on_exit     set to a command run first at exit (the test's own cleanup)
#   job_evicted ID     true once `cuzk status` no longer lists job ID (it left the table)
#   freeze_stages      SIGSTOP every stage cuzkd runs now (nothing is proved meanwhile);
#   thaw               SIGCONT them (also done at exit, before daemon_on_exit)
#   need_bins B...     FAIL unless $BUILD/bin/B exists for each B
# and for the fault tests (tests/faults/), on jobs of copies of one fixture's witness:
#   submit_copies FX N JOB [ARGS]  a job of N copies of FX's witness (a set name under
#                      $REF_FIXTURES, or a directory) -> $tmp/JOB/out; prints its id
#   stage_pids KIND    pids of this instance's running KIND processes (synth|gpuworker|finalizer)
#   pool_in_use        buffers in use, from `cuzk --json status`
#   check_out_files JOB N  exactly w1..wN proof/public pairs in $tmp/JOB/out, nothing else
#   verify_jobs FX JOB...  snarkjs (one node process) accepts every proof of the jobs
#   check_poisoned_w3  job a (6 copies of bn128's witness, submit_copies) lost w3 to the
#                      poison tests' crashes: no proof of w3, the other 5 there and verified
#   no_orphans         no stage process and no segment of this instance is left
# On exit the daemon (if still running) is stopped, its segments and tmp removed
# (tmp is kept, and named, when KEEP is set).
# shellcheck source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
. "$ROOT/tests/fixtures/env.sh"

need_bins() { NEED_MAKE="make" need_built "${@/#/bin/}"; }

daemon_init() {
  need_bins cuzkd cuzk cuzk-synth cuzk-gpuworker cuzk-finalizer
  [ -x "$SNARKJS" ] || bash "$MAKE_FIXTURES" -q >/dev/null
  inst="${1:-t}$$"
  tmp="$(mktemp -d)"
  run="$tmp/run"
  daemon_pid=""
  daemon_on_exit=""
  trap daemon_cleanup EXIT
}

daemon_stop() {
  if [ -n "$daemon_pid" ] && kill -0 "$daemon_pid" 2>/dev/null; then
    cuzk shutdown >/dev/null 2>&1 || true
    local _
    for _ in $(seq 1 100); do
      kill -0 "$daemon_pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$daemon_pid" 2>/dev/null || true
  fi
  daemon_pid=""
  rm -f /dev/shm/cuzk-"$inst".* 2>/dev/null || true
}

daemon_cleanup() {
  [ -z "${daemon_on_exit:-}" ] || eval "$daemon_on_exit" || true
  if [ -n "$daemon_pid" ] && kill -0 "$daemon_pid" 2>/dev/null; then
    kill -TERM "$daemon_pid" 2>/dev/null
    sleep 2
    kill -KILL "$daemon_pid" 2>/dev/null || true
  fi
  # Stages die with cuzkd (PDEATHSIG), but one a fault test SIGSTOPped must be woken to.
  local p
  for p in $(pgrep -f -- "--instance $inst " 2>/dev/null); do
    kill -CONT "$p" 2>/dev/null
    kill -KILL "$p" 2>/dev/null
  done
  rm -f /dev/shm/cuzk-"$inst".* 2>/dev/null || true
  if [ -n "${KEEP:-}" ]; then echo "kept $tmp"; else rm -rf "$tmp"; fi
}

expect_error() { expect_fds "$1" "$2" "$3"; } # what, code, request line

expect_fds() { # what, code, request line, files...
  local r
  r="$(send_fds "${@:3}")"
  grep -q "\"ok\":false" <<<"$r" && grep -q "\"error\":\"$2\"" <<<"$r" && grep -q '"message":"[^"]' <<<"$r" ||
    fail "$1: expected error $2, got: $r"
  # shellcheck disable=SC2001 # a capture group, which ${r//} has not
  echo "ok: $1 -> $2: $(sed 's/.*"message":"\([^"]*\)".*/\1/' <<<"$r")"
}

wait_jobs() {
  local j
  for j in "$@"; do
    # shellcheck disable=SC2154 # ids: the test's job ids by name, set by the test
    timeout 600 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" wait "${ids[$j]}" >"$tmp/wait.$j" ||
      fail "job $j (${ids[$j]}) did not finish: $(cat "$tmp/wait.$j")"
  done
}

verify_outs() { # J FX N
  local vk="$REF_FIXTURES/$2/verification_key.json" i p pub
  for i in $(seq 1 "$3"); do
    p="$tmp/$1/out/w$i.proof.json"
    pub="$tmp/$1/out/w$i.public.json"
    [ -f "$p" ] && [ -f "$pub" ] || fail "job $1: w$i.proof.json or w$i.public.json missing"
    "$SNARKJS" groth16 verify "$vk" "$pub" "$p" 2>&1 | grep -q OK || fail "snarkjs rejects $p"
    n=$((n + 1))
  done
}

cuzk() { "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" "$@"; }
fail() { fail_with_log "" 40 "$*"; }
js() { node -e "const r=JSON.parse(process.argv[1]); console.log($1)" "$2"; }

send() { send_fds "$1"; } # no descriptors: a plain line (declare -f send send_fds to pass it on)
# send_fds LINE FILE...: LINE with the FILEs' descriptors (SCM_RIGHTS), as cuzk prove
# passes them (control.h); a directory goes as O_PATH|O_DIRECTORY, anything else
# O_RDONLY|O_NONBLOCK (a FIFO opens without a writer). Prints the reply line.
send_fds() {
  python3 - "$run/$inst.sock" "$@" <<'PY'
import os, socket, stat, sys
fds = []
for p in sys.argv[3:]:
    if os.path.isdir(p):
        fds.append(os.open(p, os.O_PATH | os.O_DIRECTORY))
    else:
        fds.append(os.open(p, os.O_RDONLY | os.O_NONBLOCK))
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
line = sys.argv[2].encode() + b"\n"
if fds:
    socket.send_fds(s, [line[:1]], fds)
    line = line[1:]
s.sendall(line)
buf = b""
while b"\n" not in buf:
    d = s.recv(65536)
    if not d: break
    buf += d
print(buf.decode().split("\n")[0])
PY
}

daemon_start() { # appends to the log: a test that restarts its cuzkd keeps both lives
  # Witness generators are taken only from --wgen-dir: the tests' are built into
  # $BUILD/wgen (tests/lib/wgen.sh) or made in $tmp (a later --wgen-dir in OPTS wins).
  "$BUILD/bin/cuzkd" --instance "$inst" --run-dir "$run" --state-dir "$tmp/state" --foreground \
    --wgen-dir "$BUILD/wgen:$tmp" "$@" >>"$tmp/cuzkd.log" 2>&1 &
  daemon_pid=$!
  wait_until 100 [ -S "$run/$inst.sock" ] || fail "cuzkd did not create its socket"
  # The socket is bound before the segments are made (and their log lines written):
  # the daemon is up once it answers, which its event loop does only after set-up.
  # (numa_routing grepped the log at the socket's appearance and missed the buffers
  # line on a loaded machine.) A liveness bound, not a speed check.
  daemon_answers "$tmp/cuzkd.log"
}

# shellcheck disable=SC2120 # the PIDs are optional: most callers stopped no stage
daemon_kill9() {
  kill -KILL "$daemon_pid"
  wait "$daemon_pid" 2>/dev/null || true
  daemon_pid=""
  [ $# -eq 0 ] || kill -KILL "$@" 2>/dev/null || true
  wait_until 300 no_instance_process || true
}
no_instance_process() { [ -z "$(pgrep -f -- "--instance $inst " || true)" ]; }

# A cuzkd the test started itself (as another user, under strace...), its pid in
# daemon_pid: until it answers status (120 s, a liveness bound); fail, with LOG's last
# lines, if it exits first.
daemon_answers() { # LOG
  local _
  for _ in $(seq 1 1200); do
    cuzk status >/dev/null 2>&1 && return 0
    kill -0 "$daemon_pid" 2>/dev/null || fail "cuzkd exited: $(tail -n 5 "$1")"
    sleep 0.1
  done
  fail "cuzkd did not answer status within 120 s"
}

daemon_shutdown_clean() {
  local rc=0 left _
  cuzk status >/dev/null || fail "status"
  cuzk shutdown >/dev/null || fail "shutdown request"
  for _ in $(seq 1 300); do
    kill -0 "$daemon_pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$daemon_pid" 2>/dev/null && fail "cuzkd still running 30 s after shutdown"
  wait "$daemon_pid" || rc=$?
  daemon_pid=""
  [ $rc -eq 0 ] || fail "cuzkd exited with $rc after shutdown"
  left="$(pgrep -f -- "--instance $inst " || true)"
  [ -z "$left" ] || fail "stage processes left: $left"
  [ ! -e "$run/$inst.sock" ] || fail "socket left behind"
  [ ! -e "$run/$inst.pid" ] || fail "pid file left behind"
  ls /dev/shm/cuzk-"$inst".* >/dev/null 2>&1 && fail "segments left: $(ls /dev/shm/cuzk-"$inst".*)"
  echo "ok: clean shutdown (no process, socket, pid file or segment left)"
}

job_evicted() {
  local st
  st="$(cuzk --json status 2>/dev/null)" || return 1
  ! grep -q "\"id\": *$1[,}]" <<<"$st"
}

freeze_stages() {
  frozen="$(cuzk --json status | jq -r '.children[].pid')"
  daemon_on_exit="thaw${daemon_on_exit:+; $daemon_on_exit}"
  local p
  for p in $frozen; do kill -STOP "$p"; done
}
thaw() {
  local p
  for p in ${frozen:-}; do kill -CONT "$p" 2>/dev/null || true; done
}

# ---- the fault tests' jobs ------------------------------------------------------------
fixture_dir() { case "$1" in /*) echo "$1" ;; *) echo "$REF_FIXTURES/$1" ;; esac }

submit_copies() { # fixture n job [extra client args]
  local fx n="$2" job="$3" out i
  fx="$(fixture_dir "$1")"
  shift 3
  mkdir -p "$tmp/$job/in" "$tmp/$job/out"
  for i in $(seq 1 "$n"); do cp "$fx/witness.wtns" "$tmp/$job/in/w$i.wtns"; done
  out="$(cuzk --json prove "$@" --zkey "$fx/circuit_final.zkey" --out "$tmp/$job/out" \
    "$tmp/$job/in"/w*.wtns)" || fail "submit of $job: $out"
  jq -r .job <<<"$out"
}

stage_pids() { pgrep -f -- "cuzk-$1 --instance $inst " || true; }

pool_in_use() { cuzk --json status | jq -r '.pool.in_use // "missing"'; }

check_out_files() { # job n: exactly w1..wN proof/public pairs, nothing else
  local job="$1" n="$2" d="$tmp/$1/out" files i
  files="$(dir_count "$d")"
  [ "$files" -eq $((2 * n)) ] || fail "$job: $files files in its out dir, expected $((2 * n)): $(dir_list "$d" | tr '\n' ' ')"
  for i in $(seq 1 "$n"); do
    [ -f "$d/w$i.proof.json" ] && [ -f "$d/w$i.public.json" ] || fail "$job: w$i proof or public missing"
  done
}

verify_jobs() { # fixture job...: snarkjs (one node process) accepts every proof of the jobs
  local fx="$1" dirs=() out j
  shift
  for j in "$@"; do dirs+=("$tmp/$j/out"); done
  out="$(node "$ROOT/tests/lib/snarkjs_verify_all.cjs" "$FIXTURES/node/node_modules/snarkjs" \
    "$(fixture_dir "$fx")/verification_key.json" "${dirs[@]}")" || fail "snarkjs: $out"
  echo "$out"
}

check_poisoned_w3() {
  local d="$tmp/a/out" i
  [ ! -e "$d/w3.proof.json" ] || fail "w3 has a proof"
  rm -f "$tmp/a/in/w3.wtns"
  for i in 1 2 4 5 6; do [ -f "$d/w$i.proof.json" ] || fail "w$i proof missing"; done
  [ "$(dir_count "$d")" -eq 10 ] || fail "stray files in $d: $(dir_list "$d" | tr '\n' ' ')"
  verify_jobs bn128 a
}

no_orphans() {
  local left _
  for _ in $(seq 1 30); do
    left="$(pgrep -f -- "--instance $inst " || true)"
    [ -z "$left" ] && break
    sleep 0.1
  done
  [ -z "$left" ] || fail "stage processes left: $left"
  ls /dev/shm/cuzk-"$inst".* >/dev/null 2>&1 && fail "segments left: $(ls /dev/shm/cuzk-"$inst".*)"
  return 0
}
