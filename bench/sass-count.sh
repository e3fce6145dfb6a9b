#!/usr/bin/env bash
# bench/sass-count.sh — SASS instructions of the device field and curve arithmetic on
# sm_90, counted without a GPU and without cuobjdump: a few one-operation kernels (and
# the out-of-line formulas they call) are compiled to a cubin, and each function's
# symbol size is measured (every sm_90 instruction is 16 bytes). Prints one line per
# operation: the Fp product (inline in its kernel, minus an empty kernel's loads and
# stores), the Fq2 product and the mixed and full additions (their out-of-line
# functions), for BN254 and BLS12-381. A measure of code, not of time (what the device
# runs per operation, before scheduling). Needs nvcc; make bench runs it when found.
#   bench/sass-count.sh [ARCH]   (default 90)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
arch="${1:-90}"
NVCC="${NVCC:-$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)}"
[ -n "$NVCC" ] || { echo "sass-count: no nvcc: skipped"; exit 0; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/ops.cu" <<'CU'
#include "cuzk/curve.h"
#include "cuzk/field.h"
// one operation per kernel, on operands in global memory
__global__ void k_empty(uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    for (int i = 0; i < 12; i++) r[i] = a[i] ^ b[i];
}
__global__ void k_fp_mul_bn254(uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    uint64_t x[4], y[4], z[4];
    for (int i = 0; i < 4; i++) x[i] = a[i], y[i] = b[i];
    fe_mul_id(FIELD_ID_BN254_FQ, z, x, y);
    for (int i = 0; i < 4; i++) r[i] = z[i];
}
__global__ void k_fp_mul_bls(uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    uint64_t x[6], y[6], z[6];
    for (int i = 0; i < 6; i++) x[i] = a[i], y[i] = b[i];
    fe_mul_id(FIELD_ID_BLS12_381_FQ, z, x, y);
    for (int i = 0; i < 6; i++) r[i] = z[i];
}
__global__ void k_fp2_mul(uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    fe2_mul_id(FIELD_ID_BN254_FQ, r, a, b);
    fe2_mul_id(FIELD_ID_BLS12_381_FQ, r + 8, a + 8, b + 8);
}
__global__ void k_points(uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    ec_add_aff_id(CURVE_G1_BN254, r, r, a);
    ec_add_aff_id(CURVE_G1_BLS12_381, r, r, a);
    ec_add_id(CURVE_G1_BN254, r, r, b);
    ec_add_id(CURVE_G1_BLS12_381, r, r, b);
}
CU
"$NVCC" -std=c++17 -O3 -cubin -arch=sm_"$arch" -I"$root/include" -D_GNU_SOURCE -o "$tmp/ops.cubin" "$tmp/ops.cu" \
  2>"$tmp/nvcc.log" || { cat "$tmp/nvcc.log"; exit 1; }
# function -> instructions: each FUNC symbol's size / 16 (an out-of-line device function
# is a symbol "$KERNEL$FUNCTION" inside its caller's .text section; a kernel's own
# symbol spans its callees too, so only callee-free kernels are counted by kernel)
readelf -sW "$tmp/ops.cubin" 2>/dev/null | awk '$4 == "FUNC" { print $NF, $3 }' \
  | while read -r name size; do echo "${name##*\$} $((size / 16))"; done | sort -u >"$tmp/sizes"
ins() { awk -v p="$1" 'index($1, p) && !seen[$1]++ { n = $2 } END { print n + 0 }' "$tmp/sizes"; }
empty="$(ins k_empty)"
echo "SASS instructions on sm_$arch (.text / 16 bytes; $(basename "$NVCC") $("$NVCC" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')):"
printf '  %-34s %6d\n' "Fp product BN254 (inline, net)" $(($(ins k_fp_mul_bn254) - empty))
printf '  %-34s %6d\n' "Fp product BLS12-381 (inline, net)" $(($(ins k_fp_mul_bls) - empty))
printf '  %-34s %6d\n' "Fq2 product BN254" "$(ins fe2_mul_dev_bn254_fq)"
printf '  %-34s %6d\n' "Fq2 product BLS12-381" "$(ins fe2_mul_dev_bls12_381_fq)"
printf '  %-34s %6d\n' "mixed addition G1 BN254" "$(ins ec_add_aff_dev_g1_bn254)"
printf '  %-34s %6d\n' "mixed addition G1 BLS12-381" "$(ins ec_add_aff_dev_g1_bls12_381)"
printf '  %-34s %6d\n' "full addition G1 BN254" "$(ins ec_add_dev_g1_bn254)"
printf '  %-34s %6d\n' "full addition G1 BLS12-381" "$(ins ec_add_dev_g1_bls12_381)"
