#!/usr/bin/env bash
# The build check of the kernels' stack per thread (CUDA builds): ptxas -v's report,
# kept by the Makefile beside each kernel object, must show at most 64 bytes of stack
# in every kernel. A thread's stack is local memory (device DRAM behind L1): point
# arrays there once made the bucket kernels 576 to 2880 bytes per thread, and the G2
# formulas' Fq2 temporaries, passed by address to an out-of-line Fq2 product, kept the
# G2 kernels at 1536-1728 bytes (docs/cuda.md, "Kernel stack per thread").
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
shopt -s nullglob
reports=("$BUILD"/obj/zk/cuda/*.o.ptxas)
if [ ${#reports[@]} -eq 0 ]; then
  echo "SKIP: no ptxas reports in $BUILD/obj/zk/cuda (a build without CUDA, or objects built before the report)"
  exit 77
fi
bash "$ROOT/tools/cuda_stack.sh" 64 "${reports[@]}" >"$BUILD/cuda-stack.txt" ||
  {
    cat "$BUILD/cuda-stack.txt"
    echo "FAIL: a kernel keeps more than 64 bytes of stack per thread"
    exit 1
  }
n="$(grep -c ' B stack ' "$BUILD/cuda-stack.txt")"
echo "ok: $n kernels; the largest stacks:"
sort -k4,4nr "$BUILD/cuda-stack.txt" | sed -n '1,6s/^/  /p' | cut -c1-110 # (sed reads it all: no SIGPIPE under pipefail)
