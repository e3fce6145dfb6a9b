#!/usr/bin/env bash
# The build check of the kernels' stack per thread (CUDA builds): ptxas -v's report,
# kept by the Makefile beside each kernel object, must show at most 64 bytes of stack
# in every kernel. A thread's stack is local memory (device DRAM behind L1): point
# arrays there once made the bucket kernels 576 to 2880 bytes per thread. The G2
# kernels keep 1728 bytes (the Fq2 temporaries of the point formulas, whose addresses go
# to the out-of-line Fq2 product; docs/cuda.md): they are held at that ceiling until the
# Fq2 product is inlined, so that no change makes them worse unnoticed.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
shopt -s nullglob
reports=("$BUILD"/obj/zk/cuda/*.o.ptxas)
if [ ${#reports[@]} -eq 0 ]; then
  echo "SKIP: no ptxas reports in $BUILD/obj/zk/cuda (a build without CUDA, or objects built before the report)"
  exit 77
fi
g2=() rest=()
for r in "${reports[@]}"; do
  case "$(basename "$r")" in msm_g2_*) g2+=("$r") ;; *) rest+=("$r") ;; esac
done
bash "$ROOT/tools/cuda_stack.sh" 64 "${rest[@]}" >"$BUILD/cuda-stack.txt" \
  || { cat "$BUILD/cuda-stack.txt"; echo "FAIL: a kernel keeps more than 64 bytes of stack per thread"; exit 1; }
bash "$ROOT/tools/cuda_stack.sh" 1728 "${g2[@]}" >>"$BUILD/cuda-stack.txt" \
  || { cat "$BUILD/cuda-stack.txt"; echo "FAIL: a G2 kernel keeps more stack than its 1728-byte ceiling"; exit 1; }
n="$(grep -c ' B stack ' "$BUILD/cuda-stack.txt")"
echo "ok: $n kernels; the largest stacks:"
sort -k4,4nr "$BUILD/cuda-stack.txt" | sed -n '1,6s/^/  /p' | cut -c1-110 # (sed reads it all: no SIGPIPE under pipefail)
