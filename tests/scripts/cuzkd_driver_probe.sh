#!/usr/bin/env bash
# cuzkd reads the CUDA driver's GPU list (cuInit, cuDeviceGetPCIBusId) in a short-lived
# child, never in itself: cuzkd forks to daemonize and to start every stage, and CUDA
# forbids using a context (or its driver state) across a fork without exec. Shown with
# a stand-in libcuda.so.1 (this machine has no NVIDIA driver; the real one would need a
# GPU), built here, that records the pid and parent pid of the process that calls cuInit:
#   - cuzkd --check and cuzkd --plan list the stand-in's GPU (the child's answer
#     crosses the pipe), and cuInit ran in a child of cuzkd, not in cuzkd;
#   - a failing cuInit is reported with the driver's error name (cuGetErrorName);
#   - with no driver library at all, the sentence says so;
#   - (CUDA builds) the CUDA backend's probe (gpu_device_probe) tells a driver too old
#     for this build's runtime from "no device": a stand-in driver that reports CUDA 11.2
#     gets cudaErrorInsufficientDriver named with "update the driver", not "no CUDA device".
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
need_built bin/cuzkd
use_tmp
need_tool cc "no C compiler to build the stand-in driver"
fail() {
  echo "FAIL: $*"
  exit 1
}

mkdir -p "$tmp/drv"
cat >"$tmp/drv.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static int init_rc(void)
{
    const char *e = getenv("STANDIN_CUINIT_RC");
    return e ? atoi(e) : 0;
}
int cuInit(unsigned flags)
{
    const char *log = getenv("STANDIN_LOG");
    (void)flags;
    if (log) {
        FILE *f = fopen(log, "a");
        if (f) {
            fprintf(f, "cuInit pid %d ppid %d\n", (int)getpid(), (int)getppid());
            fclose(f);
        }
    }
    return init_rc();
}
int cuDeviceGetCount(int *n) { *n = 1; return 0; }
int cuDeviceGet(int *d, int i) { *d = i; return 0; }
int cuDeviceGetPCIBusId(char *b, int len, int d) { (void)d; snprintf(b, (size_t)len, "0000:01:00.0"); return 0; }
int cuGetErrorName(int rc, const char **s) { *s = rc == 999 ? "CUDA_ERROR_UNKNOWN" : "CUDA_ERROR_OTHER"; return 0; }
C
cc -shared -fPIC -o "$tmp/drv/libcuda.so.1" "$tmp/drv.c"

# 1. --check: the child's list reaches cuzkd; cuInit ran in a child of cuzkd.
rc=0
STANDIN_LOG="$tmp/log" LD_LIBRARY_PATH="$tmp/drv" "$BUILD/bin/cuzkd" --check --devices cuda:0 \
  --run-dir "$tmp/run" --state-dir "$tmp/state" --instance "probe$$" >"$tmp/check.out" 2>&1 &
pid=$!
wait $pid || rc=$?
grep -q "the CUDA driver lists 1 GPU" "$tmp/check.out" || fail "--check (rc $rc) did not list the GPU: $(cat "$tmp/check.out")"
read -r _ _ cpid _ ppid <"$tmp/log" || fail "the stand-in driver was never initialised"
[ "$cpid" != "$pid" ] || fail "cuInit ran inside cuzkd (pid $pid) itself"
[ "$ppid" = "$pid" ] || fail "cuInit ran in pid $cpid whose parent is $ppid, not cuzkd ($pid)"
echo "ok: --check: $(grep -m1 'CUDA driver lists' "$tmp/check.out" | sed 's/^ *//'); cuInit in child $cpid of cuzkd $pid"

# 2. --plan: the same probe numbers the GPUs for the plan.
rm -f "$tmp/log"
STANDIN_LOG="$tmp/log" LD_LIBRARY_PATH="$tmp/drv" "$BUILD/bin/cuzkd" --plan --devices cuda:0 >"$tmp/plan.out" 2>&1 &
pid=$!
wait $pid || true
if [ -s "$tmp/log" ]; then
  read -r _ _ cpid _ ppid <"$tmp/log"
  [ "$cpid" != "$pid" ] && [ "$ppid" = "$pid" ] || fail "--plan: cuInit in pid $cpid (parent $ppid), cuzkd is $pid"
  echo "ok: --plan: cuInit in child $cpid of cuzkd $pid"
fi

# 3. cuInit fails: the driver's error name is in the sentence.
STANDIN_CUINIT_RC=999 LD_LIBRARY_PATH="$tmp/drv" "$BUILD/bin/cuzkd" --check --devices cuda:0 \
  --run-dir "$tmp/run" --state-dir "$tmp/state" --instance "probe$$" >"$tmp/check2.out" 2>&1 || true
grep -q "cuInit failed with CUDA_ERROR_UNKNOWN (999)" "$tmp/check2.out" ||
  fail "a failing cuInit is not named: $(grep -i gpus "$tmp/check2.out")"
echo "ok: $(grep -m1 'cuInit failed' "$tmp/check2.out" | sed 's/^ *//' | cut -c1-150)"

# 4. no driver library where the loader looks (this machine; skipped where one is installed).
if ! grep -q 'libcuda\.so\.1 ' <<<"$(ldconfig -p 2>/dev/null)"; then # (no pipe into grep -q: SIGPIPE)
  "$BUILD/bin/cuzkd" --check --devices cuda:0 --run-dir "$tmp/run" --state-dir "$tmp/state" \
    --instance "probe$$" >"$tmp/check3.out" 2>&1 || true
  grep -q "libcuda.so.1 not found" "$tmp/check3.out" || fail "no driver: $(grep -i gpus "$tmp/check3.out")"
  echo "ok: no driver: $(grep -m1 'libcuda.so.1 not found' "$tmp/check3.out" | sed 's/^ *//' | cut -c1-120)"
fi

# 5. a driver too old for the runtime (the statically linked cudart asks for its version)
if [ -x "$BUILD/bench-gpu/gpu_bench" ]; then
  mkdir -p "$tmp/old"
  printf 'int cuInit(unsigned f) { (void)f; return 0; }\nint cuDriverGetVersion(int *v) { *v = 11020; return 0; }\n' >"$tmp/old.c"
  cc -shared -fPIC -o "$tmp/old/libcuda.so.1" "$tmp/old.c"
  rc=0
  LD_LIBRARY_PATH="$tmp/old" "$BUILD/bench-gpu/gpu_bench" probe >"$tmp/old.out" 2>&1 || rc=$?
  [ $rc = 77 ] || fail "gpu_bench probe with an old driver: exit $rc: $(cat "$tmp/old.out")"
  grep -q "cudaErrorInsufficientDriver" "$tmp/old.out" && grep -q "update the driver" "$tmp/old.out" &&
    ! grep -q "no CUDA device" "$tmp/old.out" || fail "an old driver is not named: $(cat "$tmp/old.out")"
  echo "ok: old driver: $(cut -c1-160 "$tmp/old.out")"
fi
echo "ok: the CUDA driver is probed in a child; cuzkd holds no CUDA state"
