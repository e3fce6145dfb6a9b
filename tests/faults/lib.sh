# shellcheck shell=bash
# Shared by the fault tests (source me after setting BUILD): start a cuzkd on a
# unique instance in a temp dir, talk to it, check the end state, clean up.
#   ft_init NAME          instance NAME$$, temp dir $FT_TMP, trap cleanup
#   ft_start ARGS...      cuzkd --foreground with ARGS (job store $FT_TMP/state, kept
#                         across restarts of the test's cuzkd); waits for its socket
#   ft_cuzk ARGS...       the client on this instance
#   ft_submit FX N JOB    a job of N copies of fixture FX's witness -> $FT_TMP/JOB/out;
#                         prints the job id
#   ft_stage_pids KIND    pids of running stage processes (synth|gpuworker|finalizer)
#   ft_pool_in_use        buffers in use, from `cuzk --json status`
#   ft_check_files JOB N  N proof/public pairs in JOB's out dir and nothing else
#   ft_verify FX JOB...   snarkjs accepts every proof of the jobs (fixture FX's key)
#   ft_shutdown           shutdown request, wait, no process/segment left
HERE_FT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE_FT/../.." && pwd)"
BUILD="${BUILD:-build}"
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
. "$ROOT/tests/fixtures/env.sh"
FXDIR="$REF_FIXTURES"

ft_init() {
  for b in cuzkd cuzk cuzk-synth cuzk-gpuworker cuzk-finalizer; do
    [ -x "$BUILD/bin/$b" ] || { echo "FAIL: $BUILD/bin/$b is missing (run make)"; exit 1; }
  done
  [ -x "$SNARKJS" ] || bash "$MAKE_FIXTURES" -q >/dev/null
  FT_INST="$1$$"
  FT_TMP="$(mktemp -d)"
  FT_RUN="$FT_TMP/run"
  FT_DPID=""
  trap ft_cleanup EXIT
}

ft_cleanup() {
  local rc=$?
  if [ -n "$FT_DPID" ] && kill -0 "$FT_DPID" 2>/dev/null; then
    kill -TERM "$FT_DPID" 2>/dev/null; sleep 2; kill -KILL "$FT_DPID" 2>/dev/null || true
  fi
  # stages die with cuzkd (PDEATHSIG); anything SIGSTOPped must be woken to die
  for p in $(pgrep -f -- "--instance $FT_INST " 2>/dev/null); do kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
  rm -f /dev/shm/cuzk-"$FT_INST".* 2>/dev/null || true
  [ -n "${FT_KEEP:-}" ] && echo "kept $FT_TMP" || rm -rf "$FT_TMP"
  exit $rc
}

ft_fail() {
  echo "FAIL: $*"
  echo "--- cuzkd log (tail)"; tail -n 60 "$FT_TMP/cuzkd.log" 2>/dev/null
  exit 1
}

ft_cuzk() { "$BUILD/bin/cuzk" --instance "$FT_INST" --run-dir "$FT_RUN" "$@"; }

ft_start() {
  "$BUILD/bin/cuzkd" --instance "$FT_INST" --run-dir "$FT_RUN" --state-dir "$FT_TMP/state" --foreground "$@" \
    >>"$FT_TMP/cuzkd.log" 2>&1 &
  FT_DPID=$!
  for _ in $(seq 1 150); do [ -S "$FT_RUN/$FT_INST.sock" ] && break; sleep 0.1; done
  [ -S "$FT_RUN/$FT_INST.sock" ] || ft_fail "cuzkd did not create its socket"
}

# A fixture: a name under the reference snarkjs fixtures (tests/fixtures/snarkjs-groth16), or an absolute directory.
ft_fx() { case "$1" in /*) echo "$1" ;; *) echo "$FXDIR/$1" ;; esac; }

ft_submit() {  # fixture n job [extra client args]
  local fx; fx="$(ft_fx "$1")"
  local n="$2" job="$3" out; shift 3
  mkdir -p "$FT_TMP/$job/in" "$FT_TMP/$job/out"
  for i in $(seq 1 "$n"); do cp "$fx/witness.wtns" "$FT_TMP/$job/in/w$i.wtns"; done
  out="$(ft_cuzk --json prove "$@" --zkey "$fx/circuit_final.zkey" --out "$FT_TMP/$job/out" \
    "$FT_TMP/$job/in"/w*.wtns)" || ft_fail "submit of $job: $out"
  jq -r .job <<<"$out"
}

ft_stage_pids() { pgrep -f -- "cuzk-$1 --instance $FT_INST " || true; }

ft_status() { ft_cuzk --json status; }

ft_pool_in_use() { ft_status | jq -r '.pool.in_use // "missing"'; }

ft_check_files() {  # job n: exactly w1..wN proof/public pairs, nothing else
  local job="$1" n="$2" d="$FT_TMP/$1/out" files
  files="$(ls -A "$d" | wc -l)"
  [ "$files" -eq $((2 * n)) ] || ft_fail "$job: $files files in its out dir, expected $((2 * n)): $(ls -A "$d" | tr '\n' ' ')"
  for i in $(seq 1 "$n"); do
    [ -f "$d/w$i.proof.json" ] && [ -f "$d/w$i.public.json" ] || ft_fail "$job: w$i proof or public missing"
  done
}

ft_verify() {  # fixture job...: snarkjs (one node process) accepts every proof of the jobs
  local fx="$1" dirs=() out; shift
  for j in "$@"; do dirs+=("$FT_TMP/$j/out"); done
  out="$(node "$HERE_FT/snarkjs_verify_all.cjs" "$FIXTURES/node/node_modules/snarkjs" \
    "$(ft_fx "$fx")/verification_key.json" "${dirs[@]}")" || ft_fail "snarkjs: $out"
  echo "$out"
}

ft_shutdown() {
  ft_cuzk shutdown >/dev/null || ft_fail "shutdown request"
  for _ in $(seq 1 300); do kill -0 "$FT_DPID" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$FT_DPID" 2>/dev/null && ft_fail "cuzkd still running 30 s after shutdown"
  local rc=0; wait "$FT_DPID" || rc=$?
  FT_DPID=""
  [ $rc -eq 0 ] || ft_fail "cuzkd exited with $rc after shutdown"
  ft_no_orphans
}

ft_no_orphans() {
  local left
  for _ in $(seq 1 30); do left="$(pgrep -f -- "--instance $FT_INST " || true)"; [ -z "$left" ] && break; sleep 0.1; done
  [ -z "$left" ] || ft_fail "stage processes left: $left"
  ls /dev/shm/cuzk-"$FT_INST".* >/dev/null 2>&1 && ft_fail "segments left: $(ls /dev/shm/cuzk-"$FT_INST".*)"
  return 0
}
