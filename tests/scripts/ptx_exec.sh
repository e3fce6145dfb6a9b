#!/usr/bin/env bash
# The device code's PTX, executed on the CPU: nvcc compiles the shipped kernels
# (zk/cuda/*.cu) and tests/ptx/fields.cu to PTX, and tests/ptx/ptx.py, a small PTX
# interpreter (integer ops, predicates, branches, .param calls, global/shared/local
# memory, the carry flag explicit and poisoned across calls, every dropped carry of 1
# counted), runs them against independent references in Python: the field products of
# all four fields on edge and random operands with planted carry mutants that must be
# caught, the NTT kernels against a naive DFT, and each MSM kernel in the whole MSM
# pipeline (CUB's sort and scans done in Python) against an affine MSM, G1 and G2 of
# both curves. It sees nvcc's PTX, not ptxas's machine code (that is the device
# check's, bench/gpu-check.sh). docs/cuda.md, "The PTX on the CPU".
# One check per process, two at a time; the PTX and its translation are cached under
# $BUILD/ptx, keyed by the sources, the flags and nvcc's version.
# shellcheck disable=SC2317 # ptx_of and check are run by name, through run_check
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
NVCC="${NVCC:-$(command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)}"
[ -n "$NVCC" ] || {
  echo "SKIP: no nvcc (the PTX checks need CUDA's compiler)"
  exit 77
}
need_tool python3 "no python3"

dir="$BUILD/ptx"
mkdir -p "$dir"
export PYTHONPYCACHEPREFIX="$dir/pycache" # bytecode beside the build, never in tests/ptx
flags=(-ptx -arch=sm_90 -std=c++17 -O3 -I. -D_GNU_SOURCE -DCUZK_HAVE_CUDA)
key="$({
  "$NVCC" --version
  echo "${flags[*]}"
  cat zk/*.h zk/cuda/*.h zk/cuda/*.cu zk/cuda/*.cuh base/error.h tests/ptx/*.cu
} | sha256sum | cut -c1-16)"

# the PTX of one source, cached: $dir/NAME-KEY.ptx
ptx_of() {
  local src="$1" out
  out="$dir/$(basename "$src" .cu)-$key.ptx"
  if [ ! -s "$out" ]; then
    "$NVCC" "${flags[@]}" "$src" -o "$out.$$.tmp" || {
      echo "FAIL: nvcc -ptx $src" >&2
      return 1
    }
    mv "$out.$$.tmp" "$out"
  fi
  echo "$out"
}

# check NAME COMMAND...: run it, its output to $dir/NAME.log
checks=()
run_check() {
  local name="$1"
  shift
  checks+=("$name")
  { if "$@" >"$dir/$name.log" 2>&1; then echo 0; else echo $?; fi >"$dir/$name.rc"; } &
}
wait_slot() { while [ "$(jobs -rp | wc -l)" -ge "${PTX_JOBS:-2}" ]; do wait -n || true; done; }

# one check: compile (or take the cached PTX), then run its Python
check() {
  local what="$1" src="$2"
  shift 2
  local ptx
  ptx="$(ptx_of "$src")" || return 1
  python3 "tests/ptx/check_$what.py" "$ptx" "$dir/py" "$@"
}

rm -f "$dir"/*.rc "$dir"/*.log
touch "$dir/.start"
# the interpreter itself first, on hand-written PTX (a second)
python3 tests/ptx/check_interp.py >"$dir/interp.log" 2>&1 || {
  sed 's/^/interp: /' "$dir/interp.log"
  echo "FAIL: interp"
  exit 1
}
sed 's/^/interp: /' "$dir/interp.log"
# the longest first (G2 BLS12-381: the 255-register kernel's formulas)
for g in g2_bls12_381 g1_bls12_381 g2_bn254; do
  wait_slot
  run_check "msm_$g" check msm "zk/cuda/msm_$g.cu" "$g"
done
wait_slot
run_check fields check fields tests/ptx/fields.cu
wait_slot
run_check msm_g1_bn254 check msm zk/cuda/msm_g1_bn254.cu g1_bn254 4 # and 4 carry mutants
wait_slot
run_check ntt check ntt zk/cuda/ntt.cu
wait
fail=0
for c in "${checks[@]}"; do
  rc="$(cat "$dir/$c.rc")"
  sed "s/^/$c: /" "$dir/$c.log"
  [ "$rc" = 0 ] || {
    echo "FAIL: $c (exit $rc)"
    fail=1
  }
done
# what older sources left: their PTX, translations not used by this run, and then the
# bytecode (Python keeps it by the source's path, so it goes with them)
find "$dir" -maxdepth 1 -name '*.ptx' ! -name "*-$key.ptx" -delete
if [ "$fail" = 0 ] && [ -n "$(find "$dir/py" -name 'k_*' ! -newer "$dir/.start" 2>/dev/null)" ]; then
  find "$dir/py" -name 'k_*' ! -newer "$dir/.start" -delete
  rm -rf "$dir/pycache"
fi
[ "$fail" = 0 ] && echo "ok: the PTX of ${#checks[@]} checks ran right"
exit "$fail"
