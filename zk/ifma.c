/* ifma.c — BN254 Fq products in the eight 64-bit lanes of a zmm register with
 * vpmadd52luq / vpmadd52huq (AVX-512 IFMA), and the MSM's batch-affine addition on
 * top of them. Layout, forms and bounds: include/cuzk/ifma.h.
 *
 * Everything vector is compiled for AVX-512 with __attribute__((target)) so the rest
 * of the build stays x86-64-v3; callers check ifma_available() first. */
#include "cuzk/ifma.h"

#include <gmp.h>
#include <stdlib.h>
#include <string.h>

#include "cuzk/field.h"

#define IFMA_M52 ((UINT64_C(1) << 52) - 1)

/* p in radix 2^52 and -p^-1 mod 2^52 (the low 52 bits of field.h's -p^-1 mod 2^64). */
static const uint64_t IFMA_P[IFMA_LIMBS] = { 0x08c16d87cfd47ULL, 0x916871ca8d3c2ULL, 0x181585d97816aULL,
                                             0xa029b85045b68ULL, 0x030644e72e131ULL };
#define IFMA_PINV (UINT64_C(0x87d20782e4866389) & IFMA_M52)
/* 2^264 mod p: the product by it turns field.h's x·2^256 into x·2^260 (load). */
/* 2^256 mod p (field.h's R mod p, relimbed): the product by it turns x·2^260 back
 * into x·2^256 (store). */
static const uint64_t IFMA_C256[IFMA_LIMBS] = { 0xd438dc58f0d9dULL, 0x28f5c70b3dd35ULL, 0x879462c0a78ebULL,
                                                0xdf2f666ea36f7ULL, 0x00e0a77c19a07ULL };
/* 2^260 mod p: the fq8 form of 1. */
static const uint64_t IFMA_ONE[IFMA_LIMBS] = { 0x20880f6fce4b4ULL, 0x49baa989a8455ULL, 0x18f014a498908ULL,
                                               0x724f85a9201d8ULL, 0x01f16424e1bb7ULL };
static const uint64_t IFMA_C264[IFMA_LIMBS] = { 0xb0f2afaec667aULL, 0xed9626b0fffbdULL, 0x9e2a0fcad825aULL,
                                                0xe357276f48b70ULL, 0x00d791464ef86ULL };
static const uint64_t IFMA_ZERO[IFMA_LIMBS];

/* ---- the shared inversion ----------------------------------------------------------
 *
 * r = a^-1 in field.h's form, a != 0: GMP's extended gcd (Lehmer) inverts the integer
 * A = x·2^256 to A^-1 = x^-1·2^-256, and one product by R^3 = 2^768 mod p turns that
 * into x^-1·2^256. Measured 1.2 us against 8-10 us for fe_inv's Fermat power (about 380
 * dependent products) on this machine: with one inversion per batch of 1024 additions
 * that was a quarter of the IFMA batch's time. Both batch forms below use it, so that
 * bench/ifma's comparison is of the products alone. (Not constant time; neither is the
 * MSM's bucket choice.) */
void ifma_fq_inv(uint64_t r[4], const uint64_t a[4])
{
    const field_desc *F = &FIELD_BN254_FQ;
    uint64_t y[4] = { 0 }, r3[4];
    mpz_t za, zy, zp;
    mpz_init2(zy, 320);
    mpz_roinit_n(za, (const mp_limb_t *)a, 4);
    mpz_roinit_n(zp, (const mp_limb_t *)F->p, 4);
    if (!mpz_invert(zy, za, zp)) mpz_set_ui(zy, 0); /* a = 0: 0, as fe_inv */
    mpz_export(y, NULL, -1, 8, 0, 0, zy);
    mpz_clear(zy);
    fe_mul(F, r3, F->r2, F->r2); /* 2^768 mod p */
    fe_mul(F, r, y, r3);
}

/* r[i] = a[i]^-1 for n <= 16 nonzero elements: Montgomery's trick around one
 * ifma_fq_inv (3(n-1) products). */
static void ifma_fq_batch_inv(uint64_t *r, const uint64_t *a, unsigned n)
{
    const field_desc *F = &FIELD_BN254_FQ;
    uint64_t pre[16][4], inv[4], t[4];
    fe_copy(F, pre[0], a);
    for (unsigned i = 1; i < n; i++) fe_mul(F, pre[i], pre[i - 1], a + 4 * i);
    ifma_fq_inv(inv, pre[n - 1]);
    for (unsigned i = n; i-- > 1;) {
        fe_mul(F, t, inv, pre[i - 1]);  /* 1/a_i */
        fe_mul(F, inv, inv, a + 4 * i); /* 1/(a_0 .. a_{i-1}) */
        fe_copy(F, r + 4 * i, t);
    }
    fe_copy(F, r, inv);
}

/* ---- scalar reference (portable) ------------------------------------------------ */

size_t ifma_g1_batch_scratch_bytes(size_t count)
{
    size_t blocks = (count + IFMA_LANES - 1) / IFMA_LANES;
    size_t ref = count * 4 * sizeof(uint64_t);
    size_t vec = blocks * sizeof(ifma_fq8);
    return ((ref > vec ? ref : vec) + 63) / 64 * 64; /* a valid aligned_alloc size */
}

/* msm.c's msm_aff_flush, G1 BN254 only: prefix products of the denominators, one
 * inversion (ifma_fq_inv, where msm.c has fe_inv), then back to front 1/den_i, lambda,
 * x3, y3 (6 products an addition). */
void ifma_g1_batch_add_ref(uint64_t *A, const uint32_t *bb, const uint64_t *bp, size_t count, void *scratch)
{
    const field_desc *F = &FIELD_BN254_FQ;
    uint64_t *pre = scratch;
    uint64_t inv[4], di[4], l[4], x3[4], t[4], d[4];
    if (count == 0) return;
    for (size_t i = 0; i < count; i++) {
        fe_sub(F, d, bp + 8 * i, A + 8 * (size_t)bb[i]);
        if (i == 0)
            fe_copy(F, pre, d);
        else
            fe_mul(F, pre + 4 * i, pre + 4 * (i - 1), d);
    }
    ifma_fq_inv(inv, pre + 4 * (count - 1));
    for (size_t i = count; i-- > 0;) {
        uint64_t *Bx = A + 8 * (size_t)bb[i], *By = Bx + 4;
        const uint64_t *Px = bp + 8 * i, *Py = Px + 4;
        if (i > 0) {
            fe_sub(F, d, Px, Bx);
            fe_mul(F, di, inv, pre + 4 * (i - 1)); /* 1/den_i */
            fe_mul(F, inv, inv, d);                /* 1/(den_0 ... den_{i-1}) */
        } else {
            fe_copy(F, di, inv);
        }
        fe_sub(F, t, Py, By);
        fe_mul(F, l, t, di); /* lambda */
        fe_sqr(F, x3, l);
        fe_sub(F, x3, x3, Bx);
        fe_sub(F, x3, x3, Px); /* x3 = lambda^2 - Bx - Px */
        fe_sub(F, t, Bx, x3);
        fe_mul(F, t, l, t);
        fe_sub(F, By, t, By); /* y3 = lambda (Bx - x3) - By */
        fe_copy(F, Bx, x3);
    }
}

/* ---- G2 (Fq2 = Fq[u]/(u^2+1), element c0 then c1, 4 limbs each) ----------------- */

size_t ifma_g2_batch_scratch_bytes(size_t count)
{
    size_t blocks = (count + IFMA_LANES - 1) / IFMA_LANES;
    size_t ref = count * 8 * sizeof(uint64_t);
    size_t vec = blocks * 2 * sizeof(ifma_fq8);
    return ((ref > vec ? ref : vec) + 63) / 64 * 64;
}

/* r[i] = a[i]^-1 for n <= 16 nonzero Fq2 elements (8 limbs each): conj(a)/N(a) with
 * the norms a0^2 + a1^2 (in Fq) inverted together (ifma_fq_batch_inv); then times
 * `scale` (an Fq element in field.h's form) — the lanes take their 2^6 from here. */
static void ifma_fq2_batch_inv(uint64_t *r, const uint64_t *a, unsigned n, const uint64_t scale[4])
{
    const field_desc *F = &FIELD_BN254_FQ;
    uint64_t nrm[16][4], ninv[16][4], t[4];
    for (unsigned i = 0; i < n; i++) {
        fe_sqr(F, nrm[i], a + 8 * i);
        fe_sqr(F, t, a + 8 * i + 4);
        fe_add(F, nrm[i], nrm[i], t);
    }
    ifma_fq_batch_inv(ninv[0], nrm[0], n);
    for (unsigned i = 0; i < n; i++) {
        fe_mul(F, t, ninv[i], scale);
        fe_mul(F, r + 8 * i, a + 8 * i, t);
        fe_mul(F, r + 8 * i + 4, a + 8 * i + 4, t);
        fe_neg(F, r + 8 * i + 4, r + 8 * i + 4);
    }
}

/* msm.c's msm_aff_flush for G2 BN254 (fe2_mul: 3 fe_mul-class products, fe2_sqr: 2),
 * its one inversion as fe2_inv's conj/norm with ifma_fq_inv for the norm. */
void ifma_g2_batch_add_ref(uint64_t *A, const uint32_t *bb, const uint64_t *bp, size_t count, void *scratch)
{
    const field_desc *F = &FIELD_BN254_FQ;
    uint64_t *pre = scratch;
    uint64_t inv[8], di[8], l[8], x3[8], t[8], d[8];
    if (count == 0) return;
    for (size_t i = 0; i < count; i++) {
        fe2_sub(F, d, bp + 16 * i, A + 16 * (size_t)bb[i]);
        if (i == 0)
            memcpy(pre, d, sizeof d);
        else
            fe2_mul(F, pre + 8 * i, pre + 8 * (i - 1), d);
    }
    ifma_fq2_batch_inv(inv, pre + 8 * (count - 1), 1, F->one);
    for (size_t i = count; i-- > 0;) {
        uint64_t *Bx = A + 16 * (size_t)bb[i], *By = Bx + 8;
        const uint64_t *Px = bp + 16 * i, *Py = Px + 8;
        if (i > 0) {
            fe2_sub(F, d, Px, Bx);
            fe2_mul(F, di, inv, pre + 8 * (i - 1)); /* 1/den_i */
            fe2_mul(F, inv, inv, d);                /* 1/(den_0 ... den_{i-1}) */
        } else {
            memcpy(di, inv, sizeof di);
        }
        fe2_sub(F, t, Py, By);
        fe2_mul(F, l, t, di); /* lambda */
        fe2_sqr(F, x3, l);
        fe2_sub(F, x3, x3, Bx);
        fe2_sub(F, x3, x3, Px); /* x3 = lambda^2 - Bx - Px */
        fe2_sub(F, t, Bx, x3);
        fe2_mul(F, t, l, t);
        fe2_sub(F, By, t, By); /* y3 = lambda (Bx - x3) - By */
        memcpy(Bx, x3, sizeof x3);
    }
}

#if defined(__x86_64__)
#include <immintrin.h>

#define IFMA_FN     __attribute__((target("avx512f,avx512vl,avx512ifma")))
#define IFMA_INLINE static inline __attribute__((always_inline, target("avx512f,avx512vl,avx512ifma")))

static int ifma_state = -1; /* -1 unknown, 0 no, 1 yes; written once, same value by any thread */

bool ifma_available(void)
{
    int s = __atomic_load_n(&ifma_state, __ATOMIC_RELAXED);
    if (s < 0) {
        const char *e = getenv("CUZK_NO_IFMA");
        __builtin_cpu_init();
        /* libgcc's feature bits include the OS check (XCR0 enables the zmm state) */
        s = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
            __builtin_cpu_supports("avx512ifma") && !(e && strcmp(e, "1") == 0);
        __atomic_store_n(&ifma_state, s, __ATOMIC_RELAXED);
    }
    return s == 1;
}

/* Five limbs, limb k of the eight lanes in l[k]. */
typedef struct {
    __m512i l[IFMA_LIMBS];
} v5;

IFMA_INLINE v5 v5_load(const ifma_fq8 *a)
{
    v5 r;
    CUZK_UNROLL for (int k = 0; k < IFMA_LIMBS; k++) r.l[k] = _mm512_load_si512(a->l[k]);
    return r;
}

IFMA_INLINE void v5_store(ifma_fq8 *r, v5 a)
{
    CUZK_UNROLL for (int k = 0; k < IFMA_LIMBS; k++) _mm512_store_si512(r->l[k], a.l[k]);
}

/* A constant in every lane. */
IFMA_INLINE v5 v5_const(const uint64_t c[IFMA_LIMBS])
{
    v5 r;
    CUZK_UNROLL for (int k = 0; k < IFMA_LIMBS; k++) r.l[k] = _mm512_set1_epi64((long long)c[k]);
    return r;
}

/* p·2^s (s <= 5, so the value stays below 2^259) as five unnormalised limbs: each limb
 * of p shifted, fine for sums and differences followed by v5_norm. */
IFMA_INLINE v5 v5_pmul(unsigned s)
{
    v5 r;
    CUZK_UNROLL for (int k = 0; k < IFMA_LIMBS; k++) r.l[k] = _mm512_set1_epi64((long long)(IFMA_P[k] << s));
    return r;
}

/* Carry propagation: limbs back below 2^52. Arithmetic shifts, so a limb that went
 * negative in a difference borrows from the next; the value itself must be >= 0
 * (callers add a multiple of p first), then every limb ends in [0, 2^52). */
IFMA_INLINE v5 v5_norm(v5 a)
{
    const __m512i M = _mm512_set1_epi64((long long)IFMA_M52);
    CUZK_UNROLL for (int k = 0; k < IFMA_LIMBS - 1; k++)
    {
        a.l[k + 1] = _mm512_add_epi64(a.l[k + 1], _mm512_srai_epi64(a.l[k], 52));
        a.l[k] = _mm512_and_si512(a.l[k], M);
    }
    return a;
}

IFMA_INLINE v5 v5_add_raw(v5 a, v5 b)
{
    CUZK_UNROLL for (int k = 0; k < IFMA_LIMBS; k++) a.l[k] = _mm512_add_epi64(a.l[k], b.l[k]);
    return a;
}

/* a + c - b limb by limb (normalise after). */
IFMA_INLINE v5 v5_sub_plus(v5 a, v5 b, v5 c)
{
    CUZK_UNROLL for (int k = 0; k < IFMA_LIMBS; k++) a.l[k] =
        _mm512_sub_epi64(_mm512_add_epi64(a.l[k], c.l[k]), b.l[k]);
    return a;
}

/* a - c where that is >= 0, else a (a normalised, c any limbs; lane by lane). */
IFMA_INLINE v5 v5_csub(v5 a, v5 c)
{
    v5 t;
    CUZK_UNROLL for (int k = 0; k < IFMA_LIMBS; k++) t.l[k] = _mm512_sub_epi64(a.l[k], c.l[k]);
    t = v5_norm(t);
    __mmask8 neg = _mm512_cmplt_epi64_mask(t.l[IFMA_LIMBS - 1], _mm512_setzero_si512());
    CUZK_UNROLL for (int k = 0; k < IFMA_LIMBS; k++) t.l[k] = _mm512_mask_blend_epi64(neg, t.l[k], a.l[k]);
    return t;
}

/* a·2^s for small s; the caller guarantees a·2^s < 2^260 (a normalised). */
IFMA_INLINE v5 v5_shl(v5 a, unsigned s)
{
    const __m512i M = _mm512_set1_epi64((long long)IFMA_M52);
    v5 r;
    r.l[0] = _mm512_and_si512(_mm512_slli_epi64(a.l[0], s), M);
    CUZK_UNROLL for (int k = 1; k < IFMA_LIMBS; k++)
    {
        __m512i hi = _mm512_srli_epi64(a.l[k - 1], 52 - s);
        __m512i lo = _mm512_slli_epi64(a.l[k], s);
        if (k < IFMA_LIMBS - 1) lo = _mm512_and_si512(lo, M);
        r.l[k] = _mm512_or_si512(lo, hi);
    }
    return r;
}

/* Montgomery product r = a·b·2^-260 mod p, lane by lane: operand scanning over the
 * limbs of b, one 52-bit reduction step per limb (m = t0·(-p^-1) mod 2^52 makes the
 * low limb of t + m·p zero, then t shifts down a limb).
 * Inputs: limbs < 2^52 (the multipliers read 52 bits only), values a, b < 2^260.
 * Output: t = (a·b + m·p)/2^260 < a·b/2^260 + p, normalised.
 * Accumulators: each limb gets at most 4 terms < 2^52 per step over 5 steps plus
 * carries, < 2^57: no 64-bit overflow. */
IFMA_INLINE v5 v5_mont(v5 a, v5 b)
{
    const __m512i z = _mm512_setzero_si512();
    const __m512i pinv = _mm512_set1_epi64((long long)IFMA_PINV);
    __m512i p[IFMA_LIMBS];
    CUZK_UNROLL for (int k = 0; k < IFMA_LIMBS; k++) p[k] = _mm512_set1_epi64((long long)IFMA_P[k]);
    __m512i t0 = z, t1 = z, t2 = z, t3 = z, t4 = z, t5;
    CUZK_UNROLL for (int i = 0; i < IFMA_LIMBS; i++)
    {
        __m512i bi = b.l[i];
        t5 = z;
        /* t += a·b_i: low halves at limb j, high halves at limb j+1 */
        t0 = _mm512_madd52lo_epu64(t0, a.l[0], bi);
        t1 = _mm512_madd52lo_epu64(t1, a.l[1], bi);
        t2 = _mm512_madd52lo_epu64(t2, a.l[2], bi);
        t3 = _mm512_madd52lo_epu64(t3, a.l[3], bi);
        t4 = _mm512_madd52lo_epu64(t4, a.l[4], bi);
        t1 = _mm512_madd52hi_epu64(t1, a.l[0], bi);
        t2 = _mm512_madd52hi_epu64(t2, a.l[1], bi);
        t3 = _mm512_madd52hi_epu64(t3, a.l[2], bi);
        t4 = _mm512_madd52hi_epu64(t4, a.l[3], bi);
        t5 = _mm512_madd52hi_epu64(t5, a.l[4], bi);
        /* t += m·p with m = t0·(-p^-1) mod 2^52 (only t0's low 52 bits matter) */
        __m512i m = _mm512_madd52lo_epu64(z, t0, pinv);
        t0 = _mm512_madd52lo_epu64(t0, m, p[0]);
        t1 = _mm512_madd52lo_epu64(t1, m, p[1]);
        t2 = _mm512_madd52lo_epu64(t2, m, p[2]);
        t3 = _mm512_madd52lo_epu64(t3, m, p[3]);
        t4 = _mm512_madd52lo_epu64(t4, m, p[4]);
        t1 = _mm512_madd52hi_epu64(t1, m, p[0]);
        t2 = _mm512_madd52hi_epu64(t2, m, p[1]);
        t3 = _mm512_madd52hi_epu64(t3, m, p[2]);
        t4 = _mm512_madd52hi_epu64(t4, m, p[3]);
        t5 = _mm512_madd52hi_epu64(t5, m, p[4]);
        /* t0 is now 0 mod 2^52: divide by 2^52, keeping its carry */
        t0 = _mm512_add_epi64(t1, _mm512_srli_epi64(t0, 52));
        t1 = t2;
        t2 = t3;
        t3 = t4;
        t4 = t5;
    }
    v5 r = { { t0, t1, t2, t3, t4 } };
    return v5_norm(r);
}

/* 8 elements of 4x64 limbs at ptr[0..7] -> limb k of the 8 lanes in x[k]: one 512-bit
 * register per two elements, then two rounds of two-source permutes (8 in all). */
IFMA_INLINE void aos4_load(__m512i x[4], const uint64_t *const ptr[8])
{
    __m512i z[4];
    CUZK_UNROLL for (int q = 0; q < 4; q++) z[q] =
        _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)ptr[2 * q])),
                           _mm256_loadu_si256((const __m256i *)ptr[2 * q + 1]), 1);
    const __m512i i01 = _mm512_set_epi64(13, 9, 5, 1, 12, 8, 4, 0);
    const __m512i i23 = _mm512_set_epi64(15, 11, 7, 3, 14, 10, 6, 2);
    const __m512i lo = _mm512_set_epi64(11, 10, 9, 8, 3, 2, 1, 0);
    const __m512i hi = _mm512_set_epi64(15, 14, 13, 12, 7, 6, 5, 4);
    __m512i u0 = _mm512_permutex2var_epi64(z[0], i01, z[1]); /* limbs 0|1 of elements 0-3 */
    __m512i u1 = _mm512_permutex2var_epi64(z[0], i23, z[1]); /* limbs 2|3 of elements 0-3 */
    __m512i v0 = _mm512_permutex2var_epi64(z[2], i01, z[3]); /* the same of elements 4-7 */
    __m512i v1 = _mm512_permutex2var_epi64(z[2], i23, z[3]);
    x[0] = _mm512_permutex2var_epi64(u0, lo, v0);
    x[1] = _mm512_permutex2var_epi64(u0, hi, v0);
    x[2] = _mm512_permutex2var_epi64(u1, lo, v1);
    x[3] = _mm512_permutex2var_epi64(u1, hi, v1);
}

/* The inverse of aos4_load; lanes not in `keep` are not written. */
IFMA_INLINE void aos4_store(uint64_t *const ptr[8], const __m512i x[4], unsigned keep)
{
    const __m512i i01 = _mm512_set_epi64(13, 9, 5, 1, 12, 8, 4, 0);
    const __m512i i23 = _mm512_set_epi64(15, 11, 7, 3, 14, 10, 6, 2);
    const __m512i lo = _mm512_set_epi64(11, 10, 9, 8, 3, 2, 1, 0);
    const __m512i hi = _mm512_set_epi64(15, 14, 13, 12, 7, 6, 5, 4);
    __m512i u0 = _mm512_permutex2var_epi64(x[0], lo, x[1]); /* limbs 0|1 of lanes 0-3 */
    __m512i v0 = _mm512_permutex2var_epi64(x[0], hi, x[1]); /* limbs 0|1 of lanes 4-7 */
    __m512i u1 = _mm512_permutex2var_epi64(x[2], lo, x[3]);
    __m512i v1 = _mm512_permutex2var_epi64(x[2], hi, x[3]);
    __m512i z[4];
    z[0] = _mm512_permutex2var_epi64(u0, i01, u1); /* elements 0 and 1 */
    z[1] = _mm512_permutex2var_epi64(u0, i23, u1);
    z[2] = _mm512_permutex2var_epi64(v0, i01, v1);
    z[3] = _mm512_permutex2var_epi64(v0, i23, v1);
    CUZK_UNROLL for (int q = 0; q < 4; q++)
    {
        if (keep & (1u << (2 * q))) _mm256_storeu_si256((__m256i *)ptr[2 * q], _mm512_castsi512_si256(z[q]));
        if (keep & (1u << (2 * q + 1)))
            _mm256_storeu_si256((__m256i *)ptr[2 * q + 1], _mm512_extracti64x4_epi64(z[q], 1));
    }
}

/* 4x64 -> 5x52 limbs (a value < 2^256). */
IFMA_INLINE v5 v5_from64(const __m512i x[4])
{
    const __m512i M = _mm512_set1_epi64((long long)IFMA_M52);
    v5 r;
    r.l[0] = _mm512_and_si512(x[0], M);
    r.l[1] = _mm512_and_si512(_mm512_or_si512(_mm512_srli_epi64(x[0], 52), _mm512_slli_epi64(x[1], 12)), M);
    r.l[2] = _mm512_and_si512(_mm512_or_si512(_mm512_srli_epi64(x[1], 40), _mm512_slli_epi64(x[2], 24)), M);
    r.l[3] = _mm512_and_si512(_mm512_or_si512(_mm512_srli_epi64(x[2], 28), _mm512_slli_epi64(x[3], 36)), M);
    r.l[4] = _mm512_srli_epi64(x[3], 16);
    return r;
}

/* 5x52 (normalised, value < 2^256) -> 4x64. */
IFMA_INLINE void v5_to64(__m512i x[4], v5 a)
{
    x[0] = _mm512_or_si512(a.l[0], _mm512_slli_epi64(a.l[1], 52));
    x[1] = _mm512_or_si512(_mm512_srli_epi64(a.l[1], 12), _mm512_slli_epi64(a.l[2], 40));
    x[2] = _mm512_or_si512(_mm512_srli_epi64(a.l[2], 24), _mm512_slli_epi64(a.l[3], 28));
    x[3] = _mm512_or_si512(_mm512_srli_epi64(a.l[3], 36), _mm512_slli_epi64(a.l[4], 16));
}

/* [0, 2p) -> [0, p) */
IFMA_INLINE v5 v5_canon(v5 a)
{
    return v5_csub(a, v5_const(IFMA_P));
}

/* 8 contiguous field.h elements -> their 5x52 limbs, same value (x·2^256 mod p). */
IFMA_INLINE v5 v5_load_aos(const uint64_t *a)
{
    const uint64_t *ptr[8];
    __m512i x[4];
    CUZK_UNROLL for (int j = 0; j < 8; j++) ptr[j] = a + 4 * j;
    aos4_load(x, ptr);
    return v5_from64(x);
}

IFMA_INLINE void v5_store_aos(uint64_t *r, v5 a)
{
    uint64_t *ptr[8];
    __m512i x[4];
    CUZK_UNROLL for (int j = 0; j < 8; j++) ptr[j] = r + 4 * j;
    v5_to64(x, a);
    aos4_store(ptr, x, 0xff);
}

/* field.h form (x·2^256) -> fq8 form (x·2^260): times 2^264, divided by 2^260. */
IFMA_INLINE v5 v5_to_fq8(v5 a)
{
    return v5_mont(a, v5_const(IFMA_C264));
}

/* fq8 form -> field.h form, canonical: times 2^256 mod p (field.h's one), divided by
 * 2^260; a < 2^260 and the constant < p give a result below 2p, one subtraction. */
IFMA_INLINE v5 v5_from_fq8(v5 a)
{
    return v5_canon(v5_mont(a, v5_const(IFMA_C256)));
}

IFMA_FN void ifma_fq8_load(ifma_fq8 *r, const uint64_t *a)
{
    v5_store(r, v5_to_fq8(v5_load_aos(a)));
}

IFMA_FN void ifma_fq8_store(uint64_t *r, const ifma_fq8 *a)
{
    v5_store_aos(r, v5_from_fq8(v5_load(a)));
}

IFMA_FN void ifma_fq8_mul(ifma_fq8 *r, const ifma_fq8 *a, const ifma_fq8 *b)
{
    v5_store(r, v5_mont(v5_load(a), v5_load(b)));
}

/* [0,2p) + [0,2p) < 4p, less 2p where possible */
IFMA_FN void ifma_fq8_add(ifma_fq8 *r, const ifma_fq8 *a, const ifma_fq8 *b)
{
    v5 s = v5_norm(v5_add_raw(v5_load(a), v5_load(b)));
    v5_store(r, v5_csub(s, v5_pmul(1)));
}

/* a - b + 2p in (0, 4p), less 2p where possible */
IFMA_FN void ifma_fq8_sub(ifma_fq8 *r, const ifma_fq8 *a, const ifma_fq8 *b)
{
    v5 d = v5_norm(v5_sub_plus(v5_load(a), v5_load(b), v5_pmul(1)));
    v5_store(r, v5_csub(d, v5_pmul(1)));
}

IFMA_FN void ifma_fq8_mul_n(ifma_fq8 *r, const ifma_fq8 *a, const ifma_fq8 *b, size_t n)
{
    for (size_t k = 0; k < n; k++) v5_store(r + k, v5_mont(v5_load(a + k), v5_load(b + k)));
}

/* No conversion product here: a stays x·2^256 (relimbed), b is shifted to y·2^260
 * (16b < 16p < 2^258), and their product divides by 2^260: xy·2^256, field.h's form,
 * below (16p·p/2^260 + 1)p < 1.2p, so one conditional subtraction. */
IFMA_FN void ifma_fq_mul_aos(uint64_t *r, const uint64_t *a, const uint64_t *b, size_t count)
{
    for (size_t i = 0; i + 8 <= count; i += 8) {
        v5 x = v5_load_aos(a + 4 * i), y = v5_shl(v5_load_aos(b + 4 * i), 4);
        v5_store_aos(r + 4 * i, v5_canon(v5_mont(x, y)));
    }
}

/* ---- batch-affine addition ---------------------------------------------------------
 *
 * Lane j of block k is addition 8k + j; each lane runs its own chain of prefix
 * products through the blocks, the eight lane totals are inverted together on the
 * scalar side (ifma_fq_batch_inv: 21 products and one inversion), then the blocks are
 * walked back as in msm_aff_flush.
 *
 * Forms: the buckets and points stay in field.h's form x·2^256 (just relimbed), and
 * no product by a conversion constant is needed, because the 2^-260 of each product
 * is tracked as a scale: write v@s for the integer v·2^s mod p; a product maps
 * a@s, b@t to ab@(s+t-260), and v5_shl(x, k) maps x@s to x@(s+k).
 *   - den_i = Px - Bx + p is den@256 in (0, 2p);
 *   - pre[k] = acc·den, acc starting at 1@260: pre[k] @ 260 - 4(k+1); the last,
 *     read as a field.h element, inverts (ifma_fq_batch_inv) to its inverse @ 252 + 4L
 *     (L blocks);
 *   - walking back, inv_k @ 256 + 4k, so 1/den = inv_k·pre[k-1] @ 256 for every k
 *     (and inv_0 itself @ 256);
 *   - lambda = (dy << 2)·(1/den << 4) @ 258, lambda^2 @ 256; y3 = lambda·((Bx - x3)
 *     << 2) @ 256: the results are in field.h's form again.
 * Bounds (p/2^260 < 0.0119; a product of a < αp and b < βp is < (αβ·0.0119 + 1)p):
 *   den, dy < 2p; pre < (4·0.0119 + 1)p < 2p; inv < 2p; 1/den < 1.05p;
 *   lambda < (8·2·16·0.0119 + 1)p < 4.1p; lambda^2 < 1.2p; x3 = lambda^2 + 2p - Bx -
 *   Px in (0, 3.2p); Bx + 4p - x3 in (0, 5p), shifted < 20p; lambda·that < 2p;
 *   y3 = that + p - By in (0, 3p); then two conditional subtractions (2p, p) make
 *   x3 and y3 canonical. Every shifted operand stays below 32p < 2^259, so all limbs
 *   stay 52-bit after normalisation. */

/* Padding for the lanes past count: P = (1, 0), B = (0, 0) in field.h's form, so the
 * denominator is 1, never 0; nothing is written back for them. */
static const uint64_t IFMA_PAD_P[8] = { 0xd35d438dc58f0d9dULL, 0x0a78eb28f5c70b3dULL, 0x666ea36f7879462cULL,
                                        0x0e0a77c19a07df2fULL };
static uint64_t ifma_pad_b[8];

/* Points and buckets of block k (8 lanes); returns the lanes that are real additions. */
static inline unsigned ifma_block_ptrs(const uint64_t *pp[8], uint64_t *bq[8], uint64_t *A,
                                       const uint32_t *bb, const uint64_t *bp, size_t count, size_t k)
{
    unsigned keep = 0;
    for (unsigned j = 0; j < 8; j++) {
        size_t i = 8 * k + j;
        if (i < count) {
            pp[j] = bp + 8 * i;
            bq[j] = A + 8 * (size_t)bb[i];
            keep |= 1u << j;
        } else {
            pp[j] = IFMA_PAD_P;
            bq[j] = ifma_pad_b;
        }
    }
    return keep;
}

static inline void ifma_prefetch_block(uint64_t *A, const uint32_t *bb, size_t count, size_t k)
{
    for (size_t i = 8 * k; i < 8 * k + 8 && i < count; i++) {
        const uint64_t *b = A + 8 * (size_t)bb[i];
        __builtin_prefetch(b, 1);
        __builtin_prefetch(b + 7, 1);
    }
}

/* x or y coordinates (off 0 or 4) of the 8 points -> 5x52 limbs */
IFMA_INLINE v5 v5_gather(const uint64_t *const ptr[8], unsigned off)
{
    const uint64_t *q[8];
    __m512i x[4];
    CUZK_UNROLL for (int j = 0; j < 8; j++) q[j] = ptr[j] + off;
    aos4_load(x, q);
    return v5_from64(x);
}

IFMA_FN void ifma_g1_batch_add(uint64_t *A, const uint32_t *bb, const uint64_t *bp, size_t count,
                               void *scratch)
{
    ifma_fq8 *pre = scratch;
    const size_t L = (count + 7) / 8;
    const uint64_t *pp[8];
    uint64_t *bq[8];
    if (count == 0) return;
    const v5 P1 = v5_const(IFMA_P), P2 = v5_pmul(1), P4 = v5_pmul(2);

    /* One chain per lane. Two (even and odd blocks, 16 totals to invert) measured 3%
     * slower at B = 1024: the out-of-order core already overlaps the chain's 35 ns
     * product latency with the next block's loads, and the bigger scalar batch
     * inversion costs 24 products more. */
    v5 acc = v5_const(IFMA_ONE);
    for (size_t k = 0; k < L; k++) {
        if (k + 1 < L) ifma_prefetch_block(A, bb, count, k + 1);
        ifma_block_ptrs(pp, bq, A, bb, bp, count, k);
        v5 px = v5_gather(pp, 0), bx = v5_gather((const uint64_t *const *)bq, 0);
        v5 den = v5_norm(v5_sub_plus(px, bx, P1));
        acc = v5_mont(acc, den);
        v5_store(pre + k, acc);
    }

    /* the eight lane totals: nonzero, since no denominator is */
    uint64_t tot[32], inv8[32];
    v5_store_aos(tot, v5_canon(acc));
    ifma_fq_batch_inv(inv8, tot, 8);
    v5 inv = v5_load_aos(inv8);

    for (size_t k = L; k-- > 0;) {
        if (k > 0) ifma_prefetch_block(A, bb, count, k - 1);
        unsigned keep = ifma_block_ptrs(pp, bq, A, bb, bp, count, k);
        v5 px = v5_gather(pp, 0), py = v5_gather(pp, 4);
        v5 bx = v5_gather((const uint64_t *const *)bq, 0), by = v5_gather((const uint64_t *const *)bq, 4);
        v5 di;
        if (k > 0) {
            v5 den = v5_norm(v5_sub_plus(px, bx, P1));
            di = v5_mont(inv, v5_load(pre + k - 1)); /* 1/den @256 */
            inv = v5_mont(inv, den);                 /* 1/(den_0 .. den_{k-1}) */
        } else {
            di = inv;
        }
        v5 dy = v5_norm(v5_sub_plus(py, by, P1));
        v5 l = v5_mont(v5_shl(dy, 2), v5_shl(di, 4)); /* lambda @258 */
        v5 x3 = v5_mont(l, l);                        /* lambda^2 @256 */
        x3 = v5_sub_plus(x3, bx, P2);
        CUZK_UNROLL for (int m = 0; m < IFMA_LIMBS; m++) x3.l[m] = _mm512_sub_epi64(x3.l[m], px.l[m]);
        x3 = v5_norm(x3); /* lambda^2 - Bx - Px + 2p */
        v5 t = v5_shl(v5_norm(v5_sub_plus(bx, x3, P4)), 2);
        v5 y3 = v5_mont(l, t); /* lambda (Bx - x3) @256 */
        y3 = v5_norm(v5_sub_plus(y3, by, P1));
        x3 = v5_csub(v5_csub(x3, P2), P1);
        y3 = v5_csub(v5_csub(y3, P2), P1);
        __m512i o[4];
        v5_to64(o, x3);
        aos4_store(bq, o, keep);
        uint64_t *bqy[8];
        CUZK_UNROLL for (int j = 0; j < 8; j++) bqy[j] = bq[j] + 4;
        v5_to64(o, y3);
        aos4_store(bqy, o, keep);
    }
}
/* ---- G2: the same in Fq2 lanes -----------------------------------------------------
 *
 * An Fq2 value is two fq8 blocks (c0, c1) per 8 additions. Products by Karatsuba
 * (3 lane products; u^2 = -1), squares by (a0+a1)(a0-a1) + (2a0)a1 u (2 products). A
 * product maps c0 and c1 at scale s and t (see above) to s + t - 260 as in Fq, since
 * every lane product in it has operands at those scales; sums and differences of
 * components keep the scale. Per addition 17 lane products (prefix 3, back 6,
 * lambda 3, lambda^2 2, y3 3) against G1's 6.
 *
 * Scales: as G1, except that the 2^6 G1 got from shifting dy by 2 and 1/den by 4 comes
 * from the scalar inversion (times 64: inv_k @ 262 + 4k, 1/den @ 262), so that
 * lambda = dy·(1/den) @ 258 needs no shifted operand (a shifted 1/den, 16 times its
 * bound, made the Karatsuba sum product exceed 2p); only Bx - x3 is still shifted by
 * 2 for y3 @ 256.
 * Bounds (a product of a < αp by b < βp is < (αβ·0.0119 + 1)p, and below 2p whenever
 * αβ < 84): fq2 products below take components a < 2p, b < 8p; the Karatsuba sums are
 * < 4p and < 16p, so t0, t1 < 1.2p and t2 < 1.8p; c0 = t0 + 2p - t1 in (0, 3.2p),
 * less 2p where possible: [0, 2p); c1 = t2 + 4p - t0 - t1 in (1.6p, 5.8p), less 4p,
 * then 2p, where possible: [0, 2p). Squares take a < 2p: (a0+a1) < 4p times
 * a0 - a1 + 2p < 4p, and 2a0 < 4p times a1 < 2p, both < 1.2p. So every Fq2 value out
 * of a product or square is in [0, 2p) per component, the same contract as fq8.
 *   den, dy = P - B + p in (0, 2p) (the inputs are canonical); acc, pre, inv, 1/den,
 *   lambda < 2p; lambda^2 < 1.2p; x3 = lambda^2 + 2p - Bx - Px in (0, 3.2p), made
 *   canonical at once (less 2p, less p) so that Bx + p - x3 is in (0, 2p), shifted
 *   < 8p; y3 = lambda·that < 2p, plus p less By in (0, 3p), less 2p, less p. */

typedef struct {
    v5 c0, c1;
} v52;

IFMA_INLINE v5 v5_sub_mod(v5 a, v5 b, v5 kp)
{
    return v5_norm(v5_sub_plus(a, b, kp));
}

/* Fq2 product, a components < 2p, b components < 8p (limbs < 2^52): [0, 2p) each. */
IFMA_INLINE v52 v52_mul(v52 a, v52 b)
{
    const v5 P2 = v5_pmul(1), P4 = v5_pmul(2);
    v5 t0 = v5_mont(a.c0, b.c0), t1 = v5_mont(a.c1, b.c1);
    v5 t2 = v5_mont(v5_norm(v5_add_raw(a.c0, a.c1)), v5_norm(v5_add_raw(b.c0, b.c1)));
    v52 r;
    r.c0 = v5_csub(v5_sub_mod(t0, t1, P2), P2);
    v5 c1 = v5_sub_plus(t2, t0, P4);
    CUZK_UNROLL for (int k = 0; k < IFMA_LIMBS; k++) c1.l[k] = _mm512_sub_epi64(c1.l[k], t1.l[k]);
    r.c1 = v5_csub(v5_csub(v5_norm(c1), P4), P2);
    return r;
}

/* Fq2 square, a components < 2p: [0, 1.2p) each. */
IFMA_INLINE v52 v52_sqr(v52 a)
{
    v52 r;
    r.c0 = v5_mont(v5_norm(v5_add_raw(a.c0, a.c1)), v5_sub_mod(a.c0, a.c1, v5_pmul(1)));
    r.c1 = v5_mont(v5_shl(a.c0, 1), a.c1);
    return r;
}

IFMA_INLINE v52 v52_load(const ifma_fq8 *a)
{
    v52 r = { v5_load(a), v5_load(a + 1) };
    return r;
}

IFMA_INLINE void v52_store(ifma_fq8 *r, v52 a)
{
    v5_store(r, a.c0);
    v5_store(r + 1, a.c1);
}

/* a - b + p (a, b canonical) componentwise: (0, 2p) */
IFMA_INLINE v52 v52_sub_p(v52 a, v52 b)
{
    const v5 P1 = v5_const(IFMA_P);
    v52 r = { v5_sub_mod(a.c0, b.c0, P1), v5_sub_mod(a.c1, b.c1, P1) };
    return r;
}

/* [0, 4p) -> [0, p) */
IFMA_INLINE v5 v5_canon4(v5 a)
{
    return v5_csub(v5_csub(a, v5_pmul(1)), v5_const(IFMA_P));
}

IFMA_FN void ifma_fq2x8_mul(ifma_fq8 r[2], const ifma_fq8 a[2], const ifma_fq8 b[2])
{
    v52_store(r, v52_mul(v52_load(a), v52_load(b)));
}

IFMA_FN void ifma_fq2x8_sqr(ifma_fq8 r[2], const ifma_fq8 a[2])
{
    v52_store(r, v52_sqr(v52_load(a)));
}

/* Padding lanes for G2: P = (1, 0) (x = 1 + 0u), B = 0. */
static const uint64_t IFMA_PAD_P2[16] = { 0xd35d438dc58f0d9dULL, 0x0a78eb28f5c70b3dULL, 0x666ea36f7879462cULL,
                                          0x0e0a77c19a07df2fULL };
static uint64_t ifma_pad_b2[16];

static inline unsigned ifma_block_ptrs2(const uint64_t *pp[8], uint64_t *bq[8], uint64_t *A,
                                        const uint32_t *bb, const uint64_t *bp, size_t count, size_t k)
{
    unsigned keep = 0;
    for (unsigned j = 0; j < 8; j++) {
        size_t i = 8 * k + j;
        if (i < count) {
            pp[j] = bp + 16 * i;
            bq[j] = A + 16 * (size_t)bb[i];
            keep |= 1u << j;
        } else {
            pp[j] = IFMA_PAD_P2;
            bq[j] = ifma_pad_b2;
        }
    }
    return keep;
}

static inline void ifma_prefetch_block2(uint64_t *A, const uint32_t *bb, size_t count, size_t k)
{
    for (size_t i = 8 * k; i < 8 * k + 8 && i < count; i++) {
        const uint64_t *b = A + 16 * (size_t)bb[i];
        __builtin_prefetch(b, 1);
        __builtin_prefetch(b + 8, 1);
        __builtin_prefetch(b + 15, 1);
    }
}

IFMA_INLINE v52 v52_gather(const uint64_t *const ptr[8], unsigned off)
{
    v52 r = { v5_gather(ptr, off), v5_gather(ptr, off + 4) };
    return r;
}

IFMA_INLINE void v52_scatter(uint64_t *const ptr[8], unsigned off, v52 a, unsigned keep)
{
    uint64_t *q[8];
    __m512i o[4];
    CUZK_UNROLL for (int j = 0; j < 8; j++) q[j] = ptr[j] + off;
    v5_to64(o, a.c0);
    aos4_store(q, o, keep);
    CUZK_UNROLL for (int j = 0; j < 8; j++) q[j] = ptr[j] + off + 4;
    v5_to64(o, a.c1);
    aos4_store(q, o, keep);
}

IFMA_FN void ifma_g2_batch_add(uint64_t *A, const uint32_t *bb, const uint64_t *bp, size_t count,
                               void *scratch)
{
    ifma_fq8 *pre = scratch;
    const size_t L = (count + 7) / 8;
    const uint64_t *pp[8];
    uint64_t *bq[8];
    if (count == 0) return;
    const v5 P1 = v5_const(IFMA_P), P2 = v5_pmul(1);

    v52 acc = { v5_const(IFMA_ONE), v5_const(IFMA_ZERO) };
    for (size_t k = 0; k < L; k++) {
        if (k + 1 < L) ifma_prefetch_block2(A, bb, count, k + 1);
        ifma_block_ptrs2(pp, bq, A, bb, bp, count, k);
        v52 den = v52_sub_p(v52_gather(pp, 0), v52_gather((const uint64_t *const *)bq, 0));
        acc = v52_mul(acc, den);
        v52_store(pre + 2 * k, acc);
    }

    /* the eight lane totals (nonzero: no denominator is), inverted times 2^6 */
    uint64_t tot[64], inv8[64], s64[4];
    {
        uint64_t *ptr[8];
        __m512i o[4];
        for (int j = 0; j < 8; j++) ptr[j] = tot + 8 * j;
        v5_to64(o, v5_canon(acc.c0));
        aos4_store(ptr, o, 0xff);
        for (int j = 0; j < 8; j++) ptr[j] = tot + 8 * j + 4;
        v5_to64(o, v5_canon(acc.c1));
        aos4_store(ptr, o, 0xff);
    }
    fe_copy(&FIELD_BN254_FQ, s64, FIELD_BN254_FQ.one);
    for (int i = 0; i < 6; i++) fe_add(&FIELD_BN254_FQ, s64, s64, s64);
    ifma_fq2_batch_inv(inv8, tot, 8, s64);
    v52 inv;
    {
        const uint64_t *ptr[8];
        for (int j = 0; j < 8; j++) ptr[j] = inv8 + 8 * j;
        inv = v52_gather(ptr, 0);
    }

    for (size_t k = L; k-- > 0;) {
        if (k > 0) ifma_prefetch_block2(A, bb, count, k - 1);
        unsigned keep = ifma_block_ptrs2(pp, bq, A, bb, bp, count, k);
        const uint64_t *const *bqc = (const uint64_t *const *)bq;
        v52 px = v52_gather(pp, 0), bx = v52_gather(bqc, 0);
        v52 di;
        if (k > 0) {
            v52 den = v52_sub_p(px, bx);
            di = v52_mul(inv, v52_load(pre + 2 * (k - 1))); /* 1/den @262 */
            inv = v52_mul(inv, den);                        /* 1/(den_0 .. den_{k-1}) */
        } else {
            di = inv;
        }
        v52 dy = v52_sub_p(v52_gather(pp, 8), v52_gather(bqc, 8));
        v52 l = v52_mul(dy, di); /* lambda @258 */
        v52 x3 = v52_sqr(l);     /* lambda^2 @256 */
        x3.c0 = v5_sub_plus(x3.c0, bx.c0, P2);
        x3.c1 = v5_sub_plus(x3.c1, bx.c1, P2);
        CUZK_UNROLL for (int m = 0; m < IFMA_LIMBS; m++)
        {
            x3.c0.l[m] = _mm512_sub_epi64(x3.c0.l[m], px.c0.l[m]);
            x3.c1.l[m] = _mm512_sub_epi64(x3.c1.l[m], px.c1.l[m]);
        }
        x3.c0 = v5_canon4(v5_norm(x3.c0));
        x3.c1 = v5_canon4(v5_norm(x3.c1)); /* lambda^2 - Bx - Px, canonical */
        v52 t = v52_sub_p(bx, x3);
        t.c0 = v5_shl(t.c0, 2);
        t.c1 = v5_shl(t.c1, 2);
        v52 y3 = v52_mul(l, t); /* lambda (Bx - x3) @256 */
        v52 by = v52_gather(bqc, 8);
        y3.c0 = v5_canon4(v5_sub_mod(y3.c0, by.c0, P1));
        y3.c1 = v5_canon4(v5_sub_mod(y3.c1, by.c1, P1));
        v52_scatter(bq, 0, x3, keep);
        v52_scatter(bq, 8, y3, keep);
    }
}
#else
bool ifma_available(void)
{
    return false;
}

/* Without x86-64 only the portable form exists (ifma_available() says so). */
void ifma_g1_batch_add(uint64_t *A, const uint32_t *bb, const uint64_t *bp, size_t count, void *scratch)
{
    ifma_g1_batch_add_ref(A, bb, bp, count, scratch);
}

void ifma_g2_batch_add(uint64_t *A, const uint32_t *bb, const uint64_t *bp, size_t count, void *scratch)
{
    ifma_g2_batch_add_ref(A, bb, bp, count, scratch);
}

#endif
