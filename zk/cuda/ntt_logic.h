/* ntt_logic.h — one thread's work in the GPU NTT kernels (zk/cuda/ntt.cu) and the h
 * step, as CUZK_HD functions gcc also compiles (tests/unit/test_gpu_emul.c runs them
 * on the CPU and compares with ntt_forward / ntt_inverse / ntt_to_odd_coset).
 *
 * Forward transform, decimation in time as zk/ntt.c: bit-reverse permutation, then
 * stages m = 1, 2, ..., n/2 of butterflies (a, b) -> (a + w b, a - w b) with
 * w = tw[m + j] = w[2m]^j (the same table layout as ntt_domain's). The first stages
 * (m < 2^GNTT_BLOCK_LG) only mix elements inside aligned blocks of 2^GNTT_BLOCK_LG, so
 * one CUDA block runs them all in shared memory; the rest are one global launch per
 * stage. The inverse is the forward transform with omega^-1 twiddles, then 1/n; the odd
 * coset (snarkjs §4.2) is: inverse without the 1/n, v[i] *= coset^i / n (one table),
 * forward. Every element is a fully reduced Montgomery value, so the results are the
 * unique reduced representatives: bit for bit zk/ntt.c's whatever the order of work. */
#ifndef CUZK_CUDA_NTT_LOGIC_H
#define CUZK_CUDA_NTT_LOGIC_H

#include <stddef.h>
#include <stdint.h>

#include "zk/field.h"

#define GNTT_LIMBS    4
#define GNTT_BLOCK_LG 10 /* 1024 elements = 32 KiB of shared memory per block */

CUZK_HD uint32_t gntt_bitrev(uint32_t i, unsigned lg)
{
    uint32_t r = 0;
    for (unsigned b = 0; b < lg; b++) r |= ((i >> b) & 1u) << (lg - 1 - b);
    return r;
}

/* Thread i < n: swap v[i] and v[rev(i)] once (by the smaller index). */
CUZK_HD void gntt_bitrev_thread(size_t i, unsigned lg, uint64_t *v)
{
    size_t j = gntt_bitrev((uint32_t)i, lg);
    if (i < j) {
        for (unsigned l = 0; l < GNTT_LIMBS; l++) {
            uint64_t t = v[i * GNTT_LIMBS + l];
            v[i * GNTT_LIMBS + l] = v[j * GNTT_LIMBS + l];
            v[j * GNTT_LIMBS + l] = t;
        }
    }
}

/* Butterfly k < n/2 of the stage with half-width m = 2^lgm: elements i0 = (k / m)·2m +
 * k % m and i0 + m of v, twiddle tw[m + k % m]. v may be a block (shared memory) as
 * long as the stage stays inside it. */
CUZK_HD void gntt_bfly_thread(enum field_id f, size_t k, unsigned lgm, uint64_t *v, const uint64_t *tw)
{
    const size_t m = (size_t)1 << lgm, j = k & (m - 1);
    const size_t i0 = ((k >> lgm) << (lgm + 1)) + j, i1 = i0 + m;
    uint64_t a[FE_MAX_LIMBS], b[FE_MAX_LIMBS], w[FE_MAX_LIMBS],
        t[FE_MAX_LIMBS]; /* f may be a run-time value (CPU test) */
    for (unsigned l = 0; l < GNTT_LIMBS; l++) {
        a[l] = v[i0 * GNTT_LIMBS + l];
        b[l] = v[i1 * GNTT_LIMBS + l];
        w[l] = tw[(m + j) * GNTT_LIMBS + l];
    }
    fe_mul_id(f, t, w, b);
    fe_sub_id(f, b, a, t);
    fe_add_id(f, a, a, t);
    for (unsigned l = 0; l < GNTT_LIMBS; l++) {
        v[i0 * GNTT_LIMBS + l] = a[l];
        v[i1 * GNTT_LIMBS + l] = b[l];
    }
}

/* k_block_stages' copy of thread t's two elements (t and t + bs/2 of the block that
 * starts at element `base`, bs elements) between the vector v and the block's shared
 * memory sh: in (v -> sh) before the stages, out (sh -> v) after them. */
CUZK_HD void gntt_block_copy_thread(size_t base, unsigned t, size_t bs, uint64_t *sh, uint64_t *v, bool in)
{
    for (unsigned l = 0; l < GNTT_LIMBS; l++) {
        uint64_t *s0 = sh + (size_t)t * GNTT_LIMBS + l, *s1 = sh + (t + bs / 2) * GNTT_LIMBS + l;
        uint64_t *v0 = v + (base + t) * GNTT_LIMBS + l, *v1 = v + (base + t + bs / 2) * GNTT_LIMBS + l;
        if (in)
            *s0 = *v0, *s1 = *v1;
        else
            *v0 = *s0, *v1 = *s1;
    }
}

/* Thread i < n: v[i] *= s (one constant, e.g. 1/n). */
CUZK_HD void gntt_scale_thread(enum field_id f, size_t i, uint64_t *v, const uint64_t *s)
{
    fe_mul_id(f, v + i * GNTT_LIMBS, v + i * GNTT_LIMBS, s);
}

/* Thread i < n: v[i] *= table[i] (the coset scale coset^i / n). */
CUZK_HD void gntt_mul_table_thread(enum field_id f, size_t i, uint64_t *v, const uint64_t *table)
{
    fe_mul_id(f, v + i * GNTT_LIMBS, v + i * GNTT_LIMBS, table + i * GNTT_LIMBS);
}

/* Thread i < n: a[i] = a[i]·b[i] - c[i], then out of Montgomery form (the MSM scalars
 * are canonical; zk/groth16.c's h_impl). */
CUZK_HD void gntt_h_thread(enum field_id f, size_t i, uint64_t *a, const uint64_t *b, const uint64_t *c)
{
    uint64_t *ai = a + i * GNTT_LIMBS;
    fe_mul_id(f, ai, ai, b + i * GNTT_LIMBS);
    fe_sub_id(f, ai, ai, c + i * GNTT_LIMBS);
    fe_from_mont_id(f, ai, ai);
}

/* Host: tw[m + j] = w^(j n / 2m) for m = 1 .. n/2, j < m (zk/ntt.c's ntt_twiddles), from
 * the primitive n-th root w; tw[0] = 1. n = 2^lg >= 1 elements. */
CUZK_HD void gntt_twiddles(enum field_id f, uint64_t *tw, const uint64_t *w, unsigned lg)
{
    const size_t n = (size_t)1 << lg;
    fe_set_one_id(f, tw);
    if (n < 2) return;
    const size_t h = n / 2;
    fe_set_one_id(f, tw + h * GNTT_LIMBS);
    for (size_t j = 1; j < h; j++) fe_mul_id(f, tw + (h + j) * GNTT_LIMBS, tw + (h + j - 1) * GNTT_LIMBS, w);
    for (size_t m = h / 2; m >= 1; m /= 2)
        for (size_t j = 0; j < m; j++)
            fe_copy_id(f, tw + (m + j) * GNTT_LIMBS, tw + (2 * m + 2 * j) * GNTT_LIMBS);
}

/* Host: table[i] = coset^i · ninv, i < 2^lg. */
CUZK_HD void gntt_coset_table(enum field_id f, uint64_t *table, const uint64_t *coset, const uint64_t *ninv,
                              unsigned lg)
{
    uint64_t x[FE_MAX_LIMBS];
    fe_copy_id(f, x, ninv);
    for (size_t i = 0; i < ((size_t)1 << lg); i++) {
        fe_copy_id(f, table + i * GNTT_LIMBS, x);
        fe_mul_id(f, x, x, coset);
    }
}

#endif
