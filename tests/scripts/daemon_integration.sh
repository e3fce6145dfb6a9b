#!/usr/bin/env bash
# cuzkd end to end: start a daemon (unique instance, temp run dir, --devices cpu:2),
# submit three jobs of four partitions over two circuits at once, wait for each,
# verify every proof with snarkjs, shut down, and check that no stage process,
# socket, pid file or shared-memory segment remains.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
cd "$ROOT"
BUILD="${BUILD:-build}"
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
. "$ROOT/tests/fixtures/env.sh"
for b in cuzkd cuzk cuzk-synth cuzk-gpuworker cuzk-finalizer; do
  [ -x "$BUILD/bin/$b" ] || { echo "FAIL: $BUILD/bin/$b is missing (run make)"; exit 1; }
done
[ -x "$SNARKJS" ] || bash "$MAKE_FIXTURES" -q >/dev/null

inst="itest$$"
tmp="$(mktemp -d)"
run="$tmp/run"
daemon_pid=""
cleanup() {
  if [ -n "$daemon_pid" ] && kill -0 "$daemon_pid" 2>/dev/null; then
    kill -TERM "$daemon_pid" 2>/dev/null; sleep 2; kill -KILL "$daemon_pid" 2>/dev/null || true
  fi
  rm -f /dev/shm/cuzk-"$inst".* 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
cuzk() { "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" "$@"; }
fail() { echo "FAIL: $*"; echo "--- cuzkd log"; cat "$tmp/cuzkd.log" 2>/dev/null | tail -n 40; exit 1; }

"$BUILD/bin/cuzkd" --instance "$inst" --run-dir "$run" --devices cpu:2 --buffers 8 \
  --buffer-mb 16 --foreground >"$tmp/cuzkd.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 1 100); do [ -S "$run/$inst.sock" ] && break; sleep 0.1; done
[ -S "$run/$inst.sock" ] || fail "cuzkd did not create its socket"

# Three jobs, two circuits, four witnesses each (copies of the fixture's witness).
declare -A fx=([a]=bn128 [b]=bn128-chain [c]=bn128)
for j in a b c; do
  mkdir -p "$tmp/$j/in" "$tmp/$j/out"
  for i in 1 2 3 4; do cp "$SHARED/fixtures/snarkjs-groth16/${fx[$j]}/witness.wtns" "$tmp/$j/in/w$i.wtns"; done
done
declare -A ids
for j in a b c; do
  d="$SHARED/fixtures/snarkjs-groth16/${fx[$j]}"
  out="$(cuzk --json prove --zkey "$d/circuit_final.zkey" --out "$tmp/$j/out" "$tmp/$j/in"/w*.wtns)" \
    || fail "submit of job $j: $out"
  ids[$j]="$(node -e 'console.log(JSON.parse(process.argv[1]).job)' "$out")"
done
for j in a b c; do
  timeout 600 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" wait "${ids[$j]}" >"$tmp/wait.$j" \
    || fail "job $j (${ids[$j]}) did not finish: $(cat "$tmp/wait.$j")"
done
n=0
for j in a b c; do
  vk="$SHARED/fixtures/snarkjs-groth16/${fx[$j]}/verification_key.json"
  for i in 1 2 3 4; do
    p="$tmp/$j/out/w$i.proof.json"; pub="$tmp/$j/out/w$i.public.json"
    [ -f "$p" ] && [ -f "$pub" ] || fail "job $j: w$i.proof.json or w$i.public.json missing"
    "$SNARKJS" groth16 verify "$vk" "$pub" "$p" 2>&1 | grep -q OK || fail "snarkjs rejects $p"
    n=$((n + 1))
  done
done
echo "ok: $n proofs from 3 concurrent jobs verified by snarkjs"

cuzk status >/dev/null || fail "status"
cuzk shutdown >/dev/null || fail "shutdown request"
for _ in $(seq 1 300); do kill -0 "$daemon_pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$daemon_pid" 2>/dev/null && fail "cuzkd still running 30 s after shutdown"
rc=0; wait "$daemon_pid" || rc=$?
daemon_pid=""
[ $rc -eq 0 ] || fail "cuzkd exited with $rc after shutdown"
left="$(pgrep -f -- "--instance $inst " || true)"
[ -z "$left" ] || fail "stage processes left: $left"
[ ! -e "$run/$inst.sock" ] || fail "socket left behind"
[ ! -e "$run/$inst.pid" ] || fail "pid file left behind"
ls /dev/shm/cuzk-"$inst".* >/dev/null 2>&1 && fail "segments left: $(ls /dev/shm/cuzk-"$inst".*)"
echo "ok: clean shutdown (no process, socket, pid file or segment left)"
