#!/usr/bin/env bash
# --backend cuda where it cannot run (nothing here needs a GPU):
#   - a build without the CUDA backend (make CUDA=0, or no nvcc): cuzk-gpuworker
#     --backend cuda says in one line that the backend is not built (exit 111, not a
#     crash), and cuzkd --devices cuda:0 refuses to start with the same idea;
#   - a CUDA build on a machine without a GPU: cuzkd --devices cuda:0 (the driver's
#     list faked with --driver-gpus, so the plan has a device) starts its worker, which
#     exits with one line "no CUDA device ..." (exit 111, no signal); cuzkd logs the
#     exit, stays up (status answers, the worker is restarted with backoff), shuts
#     down cleanly. On a machine with a GPU that case does not apply: SKIP.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../lib" && pwd)/daemon.sh"
daemon_init cudat

rc=0
"$BUILD/bin/cuzk-gpuworker" --instance "nosuch$$" --backend cuda >"$tmp/w.out" 2>&1 || rc=$?
if grep -q "not built" "$tmp/w.out"; then
  [ "$(wc -l <"$tmp/w.out")" = 1 ] || fail "more than one line: $(cat "$tmp/w.out")"
  grep -q "the CUDA backend is not built into this cuzk-gpuworker" "$tmp/w.out" ||
    fail "unclear message: $(cat "$tmp/w.out")"
  [ $rc = 111 ] || fail "exit $rc (expected 111): $(cat "$tmp/w.out")"
  echo "ok: CUDA=0 build: $(cat "$tmp/w.out")"
  rc=0
  "$BUILD/bin/cuzkd" --instance "$inst" --run-dir "$run" --state-dir "$tmp/state" --foreground --devices cuda:0 \
    --driver-gpus 0000:01:00.0 >"$tmp/d.out" 2>&1 || rc=$?
  [ $rc != 0 ] && grep -q "built without the CUDA backend" "$tmp/d.out" ||
    fail "cuzkd --devices cuda:0 in a CUDA=0 build: rc $rc: $(cat "$tmp/d.out")"
  echo "ok: CUDA=0 build: cuzkd: $(head -n 1 "$tmp/d.out")"
  exit 0
fi
grep -q "nosuch$$" "$tmp/w.out" || fail "CUDA build, no instance: unexpected: $(cat "$tmp/w.out")"
if command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -c '^GPU' >/dev/null; then # -c reads all: no SIGPIPE under pipefail
  echo "SKIP: this machine has a GPU (bench/gpu-check.sh tests the CUDA backend there)"
  exit 77
fi

daemon_start --devices cuda:0 --driver-gpus 0000:01:00.0 --buffers 2 --buffer-mb 16
# The worker dies at start; wait for two of its deaths (the first restart is ~250 ms).
for _ in $(seq 1 100); do
  [ "$(grep -c 'cuzk-gpuworker 0 (pid [0-9]*) exited with code' "$tmp/cuzkd.log")" -ge 2 ] && break
  sleep 0.1
done
grep -q 'cuzk-gpuworker 0 (pid [0-9]*) exited with code 111' "$tmp/cuzkd.log" ||
  fail "cuzkd did not report the worker's exit code 111"
grep -q 'killed by signal' "$tmp/cuzkd.log" && fail "a stage crashed with a signal"
line="$(grep -m1 'cuzk-gpuworker\[.*no CUDA device' "$tmp/cuzkd.log")" ||
  fail "the worker's 'no CUDA device' line is missing"
# the sentence names the CUDA error and the fix (gpu_device_probe), not only "no device"
grep -q 'cudaError[A-Za-z]*' <<<"$line" && grep -q 'or use --devices cpu:N' <<<"$line" ||
  fail "the worker's line does not name the CUDA error and the fix: $line"
echo "ok: worker: $line"
echo "ok: cuzkd: $(grep -m1 'cuzk-gpuworker 0 (pid [0-9]*) exited with code' "$tmp/cuzkd.log")"
kill -0 "$daemon_pid" 2>/dev/null || fail "cuzkd died"
st="$(cuzk --json status)" || fail "status does not answer"
js 'r.ok !== false' "$st" | grep -q true || fail "status: $st"
echo "ok: cuzkd is up and answers status while the worker cannot start"
daemon_stop
echo "ok: cuda backend without a GPU"
