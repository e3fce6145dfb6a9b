# shellcheck shell=bash
# tests/security: the unprivileged users of the attacks (sourced after tests/lib/daemon.sh;
# call after daemon_init). Each user is created for this run with useradd and removed
# on exit (its processes killed first), so no user is left behind and parallel runs
# never share one. Without root (or useradd, runuser, setpriv) the test is skipped.
#   attacker_init       exit 77 unless root with the tools; creates the attacker:
#                       $atk (also $ATTACKER) with its own group, uid $ATTACKER_UID
#   victim_init         another user: $VICTIM, uid $vuid (rundir.sh)
#   as_attacker CMD...  run CMD as the attacker (its own group only)
#   asend_fds LINE FILE...  send_fds as the attacker (who opens the files)
#   stop_worker         SIGSTOP the worker (pid in wpid): nothing is proved meanwhile
#   attacker_reach      let the attacker reach the socket (a member of --group $atk)
#   fuse_hold NAME      a FUSE mount at $tmp/NAME whose server (fuse_stall.py --hold-dir)
#                       reads every request about the directory's contents and never
#                       answers: a hung file system. Its pid in $fuse_pid; unmounted
#                       and its server ended (woken first, if stopped) on exit
#   fuse_release NAME   the hung file system goes away: its server ended, $tmp/NAME
#                       unmounted (lazily: the processes stuck in it get their errors)
#   fuse_held NAME WHAT wait (a liveness bound) until a request reached NAME's server
#   hung_daemon NAME OPTS...  the set-up of the hung-out-dir tests: exit 77 without root
#                       or /dev/fuse; daemon_init NAME, A=bn128 mulchain-10, a cuzkd on one
#                       CPU worker (4 buffers of 16 MiB) with OPTS, job A's witness at
#                       $tmp/a/wa.wtns, job B's at $tmp/b/wb.wtns (out dir $tmp/b/out), the
#                       hung mount $tmp/fuse (fuse_hold), fin the finalizer's pid
#   new_finalizer       true once a finalizer other than $fin runs (its pid then in fin2)
#   prove_to OUT WTNS   submit a proof of $A's circuit to out dir OUT, the submit itself
#                       bounded (60 s: a hung out dir must not hold it); prints the job id
#   proved_verified J OUT NAME WHAT  job J proves (up to 300 s) and snarkjs accepts
#                       OUT/NAME.proof.json with its public.json (fail names WHAT)
#   attack_daemon NAME FX  daemon_init NAME, attacker_init, A=bn128 fixture FX, a cuzkd
#                       on one CPU worker (4 buffers of 16 MiB) the attacker can reach
attacker_init() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP: $(basename "$0") needs root to create an attacker user (useradd)"
    exit 77
  fi
  command -v useradd >/dev/null && command -v runuser >/dev/null && command -v setpriv >/dev/null ||
    {
      echo "SKIP: useradd, runuser or setpriv missing"
      exit 77
    }
  atk="cuzkatk$$"
  sec_user_add "$atk"
  # shellcheck disable=SC2034 # for the tests
  ATTACKER="$atk"
  # shellcheck disable=SC2034
  ATTACKER_UID="$(id -u "$atk")"
}
victim_init() {
  VICTIM="cuzkvic$$"
  sec_user_add "$VICTIM"
  # shellcheck disable=SC2034 # for the test
  vuid="$(id -u "$VICTIM")"
}
# sec_user_add NAME: the user with its own group, no home, removed at exit.
sec_user_add() {
  useradd -M -U -s /bin/sh "$1" || {
    echo "SKIP: useradd $1 failed"
    exit 77
  }
  daemon_on_exit="${daemon_on_exit:+$daemon_on_exit; }sec_user_del $1"
}
# sec_user_reaches_tree NAME: SKIP unless user NAME can run the built programs and read
# the tree (a case whose user runs build/bin/cuzk or reads the fixtures itself).
sec_user_reaches_tree() {
  # The user runs the built programs and reads the fixtures: a tree under a directory
  # others may not enter (a clone made in a `mktemp -d`, mode 0700) is out of its reach.
  # shellcheck disable=SC2016 # $1 and $2 are the inner sh's arguments
  runuser -u "$1" -- sh -c 'test -x "$1" && test -r "$2"' _ "$BUILD/bin/cuzk" "$ROOT/README.md" || {
    echo "SKIP: a second user cannot reach $BUILD/bin/cuzk or $ROOT (a directory above the tree is closed to others)"
    exit 77
  }
}
sec_user_del() {
  pkill -KILL -u "$1" 2>/dev/null || true
  local _
  for _ in $(seq 1 20); do
    pgrep -u "$1" >/dev/null || break
    sleep 0.1
  done
  userdel -f "$1" >/dev/null 2>&1 || true
  groupdel "$1" >/dev/null 2>&1 || true
}
as_attacker() { runuser -u "$atk" -- "$@"; }
# send_fds (daemon.sh) as the attacker: the descriptors are opened by the attacker's shell.
# shellcheck disable=SC2154 # run, inst: daemon_init's (daemon.sh)
asend_fds() { as_attacker bash -c "$(declare -f send_fds); run='$run' inst='$inst' send_fds \"\$@\"" _ "$@"; }
# Stop the worker (SIGSTOP; SIGKILL still ends it when cuzkd dies), so that nothing is
# proved until the test says; its pid in wpid.
stop_worker() {
  local _
  wpid=""
  for _ in $(seq 1 100); do
    wpid="$(js '(r.children.find(c=>c.stage=="worker")||{}).pid||""' "$(cuzk --json status)")"
    [ -n "$wpid" ] && [ "$wpid" != 0 ] && break
    sleep 0.1
  done
  [ -n "$wpid" ] && [ "$wpid" != 0 ] || fail "no worker"
  kill -STOP "$wpid"
}
# Let the attacker reach the socket (a member of --group $atk).
# shellcheck disable=SC2154 # tmp: daemon_init's (daemon.sh)
attacker_reach() {
  chmod 755 "$tmp" "$run"
  chmod 666 "$run/$inst.sock"
}
# The set-up the attacks share: an instance NAME, the attacker, A=$FIXTURES/bn128/FX, and
# a small cuzkd (--devices cpu:1, 4 buffers of 16 MiB, and the test's own options)
# admitting the attacker's group.
attack_daemon() { # NAME FX [cuzkd options]
  daemon_init "$1"
  attacker_init
  A="$FIXTURES/bn128/$2"
  daemon_start --devices cpu:1 --buffers 4 --buffer-mb 16 --group "$atk" "${@:3}"
  attacker_reach
}

fuse_hold() {
  local m="$tmp/$1"
  mkdir -p "$m"
  python3 "$(dirname "${BASH_SOURCE[0]}")/fuse_stall.py" "$m" 0 "$m.held" --hold-dir 2>"$m.log" &
  fuse_pid=$!
  daemon_on_exit="kill -CONT $fuse_pid 2>/dev/null; kill $fuse_pid 2>/dev/null; umount -l '$m' 2>/dev/null; ${daemon_on_exit:-}"
  for _ in $(seq 1 50); do
    grep -q " $m fuse" /proc/self/mounts && return 0
    sleep 0.1
  done
  fail "the FUSE mount $1 did not come up: $(cat "$m.log")"
}

fuse_release() {
  kill "$fuse_pid"
  wait "$fuse_pid" 2>/dev/null || true
  umount -l "$tmp/$1" 2>/dev/null || true
}

# The FUSE server goes away (fuse_release fuse); then what the command LISTER... lists
# (processes stuck on the file system) must come to nothing within 30 s, a liveness
# bound, or the test fails naming WHAT and those left.
fuse_release_drained() { # WHAT LISTER...
  local what="$1" left="" _
  shift
  fuse_release fuse
  for _ in $(seq 1 300); do
    left="$("$@")"
    [ -z "${left//[[:space:]]/}" ] && return 0
    sleep 0.1
  done
  fail "$what left once the file system went away: $left"
}

# Job B, into its own out dir beside the hung one: proved, and snarkjs verifies it.
job_b_proved() { # WHEN (for the ok line)
  jb="$(prove_to "$tmp/b/out" "$tmp/b/wb.wtns")" || fail "submit of job B"
  proved_verified "$jb" "$tmp/b/out" wb "job B"
  echo "ok: job $jb $1; snarkjs verifies it"
}

fuse_held() {
  for _ in $(seq 1 600); do
    [ -e "$tmp/$1.held" ] && return 0
    sleep 0.1
  done
  fail "$2 never reached its out dir"
}

hung_daemon() {
  local name="$1"
  shift
  [ "$(id -u)" = 0 ] && [ -c /dev/fuse ] || {
    echo "SKIP: $(basename "$0" .sh) needs root and /dev/fuse"
    exit 77
  }
  daemon_init "$name"
  A="$FIXTURES/bn128/mulchain-10"
  daemon_start --devices cpu:1 --buffers 4 --buffer-mb 16 "$@"
  mkdir -p "$tmp/a" "$tmp/b/out"
  cp "$A/witness.wtns" "$tmp/a/wa.wtns"
  cp "$A/witness.wtns" "$tmp/b/wb.wtns"
  fuse_hold fuse
  fin="$(stage_pids finalizer)"
  [ -n "$fin" ] || fail "no finalizer"
}

new_finalizer() {
  fin2="$(stage_pids finalizer)"
  [ -n "$fin2" ] && [ "$fin2" != "$fin" ]
}

prove_to() {
  timeout 60 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" --json prove \
    --zkey "$A/circuit_final.zkey" --out "$1" "$2" | jq -r .job
}

proved_verified() {
  timeout 300 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" wait "$1" >/dev/null || fail "$4 ($1) did not prove"
  "$SNARKJS" groth16 verify "$A/verification_key.json" "$2/$3.public.json" "$2/$3.proof.json" |
    grep -q OK || fail "snarkjs rejects $4's proof"
}
