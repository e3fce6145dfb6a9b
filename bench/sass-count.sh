#!/usr/bin/env bash
# bench/sass-count.sh — SASS instructions of the device field and curve arithmetic on
# sm_90, counted without a GPU and without cuobjdump: a few one-operation kernels (and
# the out-of-line functions they call) are compiled to a cubin, and each function's
# symbol size is measured (every sm_90 instruction is 16 bytes). An operation's count is
# what one of it runs: its own code plus, for each call in it (from the PTX), the
# callee's count — the code is straight-line but for the rare cases (a doubling inside
# an addition: its calls of the doubling are not counted). Inline operations are
# measured as a kernel minus an empty kernel's loads and stores. Prints one line per
# operation: the Fp product (inline: G1 and the NTT; out of line: the one the G2
# formulas call), the Fq2 product, the mixed and full additions of G1 and G2, for
# BN254 and BLS12-381. A measure of code, not of time (what the device runs per
# operation, before scheduling). Needs nvcc; make bench runs it when found.
#   bench/sass-count.sh [ARCH]   (default 90)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
arch="${1:-90}"
NVCC="${NVCC:-$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)}"
[ -n "$NVCC" ] || {
  echo "sass-count: no nvcc: skipped"
  exit 0
}
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/ops.cu" <<'CU'
#include "zk/curve.h"
#include "zk/field.h"
// one operation per kernel, on operands in global memory
__global__ void k_empty(uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    for (int i = 0; i < 12; i++) r[i] = a[i] ^ b[i];
}
// K_PRODUCT(NAME, OP, FIELD, N): a kernel of one product OP(FIELD, z, x, y) of N limbs,
// its operands loaded into registers and its result stored back
#define K_PRODUCT(NAME, OP, FIELD, N)                                     \
    __global__ void NAME(uint64_t *r, const uint64_t *a, const uint64_t *b) \
    {                                                                     \
        uint64_t x[N], y[N], z[N];                                        \
        for (int i = 0; i < N; i++) x[i] = a[i], y[i] = b[i];             \
        OP(FIELD, z, x, y);                                               \
        for (int i = 0; i < N; i++) r[i] = z[i];                          \
    }
K_PRODUCT(k_fp_mul_bn254, fe_mul_id, FIELD_ID_BN254_FQ, 4)
K_PRODUCT(k_fp_mul_bls, fe_mul_id, FIELD_ID_BLS12_381_FQ, 6)
K_PRODUCT(k_fp2_mul_bn254, fe2_mul_id, FIELD_ID_BN254_FQ, 8)
K_PRODUCT(k_fp2_mul_bls, fe2_mul_id, FIELD_ID_BLS12_381_FQ, 12)
__global__ void k_points(uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    ec_add_aff_id(CURVE_G1_BN254, r, r, a);
    ec_add_aff_id(CURVE_G1_BLS12_381, r, r, a);
    ec_add_id(CURVE_G1_BN254, r, r, b);
    ec_add_id(CURVE_G1_BLS12_381, r, r, b);
    ec_add_aff_id(CURVE_G2_BN254, r, r, a);
    ec_add_aff_id(CURVE_G2_BLS12_381, r, r, a);
    ec_add_id(CURVE_G2_BN254, r, r, b);
    ec_add_id(CURVE_G2_BLS12_381, r, r, b);
}
CU
"$NVCC" -std=c++17 -O3 -cubin -arch=sm_"$arch" -I"$root" -D_GNU_SOURCE -o "$tmp/ops.cubin" "$tmp/ops.cu" \
  2>"$tmp/nvcc.log" || {
  cat "$tmp/nvcc.log"
  exit 1
}
"$NVCC" -std=c++17 -O3 -ptx -arch=sm_"$arch" -I"$root" -D_GNU_SOURCE -o "$tmp/ops.ptx" "$tmp/ops.cu" \
  2>>"$tmp/nvcc.log" || {
  cat "$tmp/nvcc.log"
  exit 1
}
# function -> its own instructions: each FUNC symbol's size / 16. An out-of-line device
# function is a symbol "$KERNEL$FUNCTION" inside its caller's .text section, and the
# kernel's own symbol spans that whole section: a kernel's own code is its size less
# its functions'. Of several copies of a function (one per calling kernel) the first.
readelf -sW "$tmp/ops.cubin" 2>/dev/null | awk '$4 == "FUNC" { print $NF, $3 }' >"$tmp/syms"
own() {
  awk -v p="$1" '{ sz[$1] = $2; names[NR] = $1 }
    END {
      for (i = 1; i <= NR; i++) { s = names[i]; short = s; sub(/.*\$/, "", short); if (index(short, p)) { pick = s; break } }
      if (pick == "") { print 0; exit }
      n = sz[pick]
      if (pick !~ /\$/) for (s in sz) if (index(s, "$" pick "$") == 1) n -= sz[s]
      print int(n / 16)
    }' "$tmp/syms"
}
# caller callee pairs, one per call in the PTX (the callee's name is the line after "call")
awk '/^[.a-z ]*\.(func|entry)/ { f = ""; for (i = 1; i <= NF; i++) if ($i ~ /\($/ || $i ~ /^[_A-Za-z][_A-Za-z0-9$]*\(/) { f = $i; sub(/\(.*/, "", f) } }
     /^[.a-z ]*\.(func|entry)/ && f == "" { want = 1; next }
     want && /^[_A-Za-z]/ { f = $1; sub(/\(.*/, "", f); want = 0 }
     /^\tcall/ { grab = 1; next }
     grab { c = $1; sub(/,$/, "", c); print f, c; grab = 0 }' "$tmp/ops.ptx" >"$tmp/calls"
# run NAME: own code plus the callees' (recursively; the doubling inside an addition is
# its rare case and is left out)
run() {
  local name="$1" total callee k
  total="$(own "$name")"
  while read -r callee k; do
    total=$((total + k * $(run "$callee")))
  done < <(awk -v p="$1" 'index($1, p) && $2 !~ /ec_dbl_dev/ { n[$2]++ } END { for (c in n) print c, n[c] }' "$tmp/calls")
  echo "$total"
}
empty="$(own k_empty)"
echo "SASS instructions on sm_$arch (.text / 16 bytes; $(basename "$NVCC") $("$NVCC" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')):"
row() { printf '  %-40s %6d\n' "$1" "$2"; }
row "Fp product BN254 (inline, net)" $(($(run k_fp_mul_bn254) - empty))
row "Fp product BLS12-381 (inline, net)" $(($(run k_fp_mul_bls) - empty))
row "Fp product BN254 (out of line, G2)" "$(run fe_mul_dev_bn254_fq)"
row "Fp product BLS12-381 (out of line, G2)" "$(run fe_mul_dev_bls12_381_fq)"
row "Fq2 product BN254" $(($(run k_fp2_mul_bn254) - empty))
row "Fq2 product BLS12-381" $(($(run k_fp2_mul_bls) - empty))
row "mixed addition G1 BN254" "$(run ec_add_aff_dev_g1_bn254)"
row "mixed addition G1 BLS12-381" "$(run ec_add_aff_dev_g1_bls12_381)"
row "full addition G1 BN254" "$(run ec_add_dev_g1_bn254)"
row "full addition G1 BLS12-381" "$(run ec_add_dev_g1_bls12_381)"
row "mixed addition G2 BN254" "$(run ec_add_aff_dev_g2_bn254)"
row "mixed addition G2 BLS12-381" "$(run ec_add_aff_dev_g2_bls12_381)"
row "full addition G2 BN254" "$(run ec_add_dev_g2_bn254)"
row "full addition G2 BLS12-381" "$(run ec_add_dev_g2_bls12_381)"
