// fields.cu — test-only kernels around the shipped field products, compiled to PTX
// alone (never linked) for tests/ptx/check_fields.py: thread i computes r[i] = a[i]·b[i]
// with the very device functions the kernels of zk/cuda/ call.
#include <stddef.h>
#include <stdint.h>
#if defined(__x86_64__)
#include <x86intrin.h> /* before the extern "C" block: field.h includes it on x86-64 */
#endif

extern "C" {
#include "zk/field.h"
}

#define PTX_THREAD()                                          \
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; \
    if (i >= n) return

// fe_mul_id: the device's inline Montgomery product (fe_mul32_id), as the NTT and the
// G1 formulas inline it.
#define PTX_MUL(sfx, ID)                                                                                  \
    extern "C" __global__ void ptx_mul_##sfx(size_t n, const uint64_t *a, const uint64_t *b, uint64_t *r) \
    {                                                                                                     \
        PTX_THREAD();                                                                                     \
        const unsigned w = FIELD_##ID##_N;                                                                \
        fe_mul_id(FIELD_ID_##ID, r + i * w, a + i * w, b + i * w);                                        \
    }
PTX_MUL(bn254_fq, BN254_FQ)
PTX_MUL(bn254_fr, BN254_FR)
PTX_MUL(bls12_381_fq, BLS12_381_FQ)
PTX_MUL(bls12_381_fr, BLS12_381_FR)

// fe2_mul_id: the Fq2 product of the G2 formulas, over the out-of-line by-value base
// product (fe_mul_dev_*, a .param call).
#define PTX_MUL2(sfx, ID)                                                                                  \
    extern "C" __global__ void ptx_mul2_##sfx(size_t n, const uint64_t *a, const uint64_t *b, uint64_t *r) \
    {                                                                                                      \
        PTX_THREAD();                                                                                      \
        const unsigned w = 2 * FIELD_##ID##_N;                                                             \
        fe2_mul_id(FIELD_ID_##ID, r + i * w, a + i * w, b + i * w);                                        \
    }
PTX_MUL2(bn254_fq, BN254_FQ)
PTX_MUL2(bls12_381_fq, BLS12_381_FQ)
