/* ifma381.c — BLS12-381 Fq products in AVX-512 IFMA lanes and the G1 batch-affine
 * addition on them. Forms and bounds: include/cuzk/ifma381.h. */
#include "cuzk/ifma381.h"

#include <string.h>

#include "cuzk/field.h"
#include "cuzk/ifma.h"

#define L8 8 /* 52-bit limbs a lane */

typedef struct {
    uint64_t l[L8][8];
} __attribute__((aligned(64))) fq8x381;

size_t ifma381_g1_batch_scratch_bytes(size_t count)
{
    size_t blocks = (count + 7) / 8;
    size_t ref = count * 6 * sizeof(uint64_t);
    size_t vec = blocks * 3 * sizeof(fq8x381); /* prefix products, Px, Bx per block */
    return ((ref > vec ? ref : vec) + 63) / 64 * 64;
}

/* msm.c's msm_aff_flush on G1 BLS12-381, with its products and ecf_inv's inversion. */
void ifma381_g1_batch_add_ref(uint64_t *A, const uint32_t *bb, const uint64_t *bp, size_t count,
                              void *scratch)
{
    const field_desc *F = &FIELD_BLS12_381_FQ;
    uint64_t *pre = scratch;
    uint64_t inv[6], di[6], l[6], x3[6], t[6], d[6];
    if (count == 0) return;
    for (size_t i = 0; i < count; i++) {
        fe_sub(F, d, bp + 12 * i, A + 12 * (size_t)bb[i]);
        if (i == 0)
            fe_copy(F, pre, d);
        else
            fe_mul(F, pre + 6 * i, pre + 6 * (i - 1), d);
    }
    fe_inv_gcd(F, inv, pre + 6 * (count - 1));
    for (size_t i = count; i-- > 0;) {
        uint64_t *Bx = A + 12 * (size_t)bb[i], *By = Bx + 6;
        const uint64_t *Px = bp + 12 * i, *Py = Px + 6;
        if (i > 0) {
            fe_sub(F, d, Px, Bx);
            fe_mul(F, di, inv, pre + 6 * (i - 1)); /* 1/den_i */
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

size_t ifma381_g2_batch_scratch_bytes(size_t count)
{
    size_t blocks = (count + 7) / 8;
    size_t ref = count * 12 * sizeof(uint64_t);
    size_t vec = blocks * 6 * sizeof(fq8x381); /* prefix, Px, Bx per block, two components each */
    return ((ref > vec ? ref : vec) + 63) / 64 * 64;
}

/* msm.c's msm_aff_flush on G2 BLS12-381 (fe2_mul, fe2_sqr, fe2_inv). */
void ifma381_g2_batch_add_ref(uint64_t *A, const uint32_t *bb, const uint64_t *bp, size_t count,
                              void *scratch)
{
    const field_desc *F = &FIELD_BLS12_381_FQ;
    uint64_t *pre = scratch;
    uint64_t inv[12], di[12], l[12], x3[12], t[12], d[12];
    if (count == 0) return;
    for (size_t i = 0; i < count; i++) {
        fe2_sub(F, d, bp + 24 * i, A + 24 * (size_t)bb[i]);
        if (i == 0)
            memcpy(pre, d, sizeof d);
        else
            fe2_mul(F, pre + 12 * i, pre + 12 * (i - 1), d);
    }
    fe2_inv(F, inv, pre + 12 * (count - 1));
    for (size_t i = count; i-- > 0;) {
        uint64_t *Bx = A + 24 * (size_t)bb[i], *By = Bx + 12;
        const uint64_t *Px = bp + 24 * i, *Py = Px + 12;
        if (i > 0) {
            fe2_sub(F, d, Px, Bx);
            fe2_mul(F, di, inv, pre + 12 * (i - 1)); /* 1/den_i */
            fe2_mul(F, inv, inv, d);                 /* 1/(den_0 ... den_{i-1}) */
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

#define V8_FN     __attribute__((target("avx512f,avx512vl,avx512ifma")))
#define V8_INLINE static inline __attribute__((always_inline, target("avx512f,avx512vl,avx512ifma")))
#define M52       ((UINT64_C(1) << 52) - 1)

/* p, 2^448, 2^384 (field.h's one) and 2^416 (the lanes' one), all mod p, radix 2^52;
 * -p^-1 mod 2^52 (the low 52 bits of field.h's inv). test_ifma checks the products
 * they make against fe_mul. */
static const uint64_t P52[L8] = { 0xeffffffffaaabULL, 0xfeb153ffffb9fULL, 0x6b0f6241eabffULL,
                                  0x12bf6730d2a0fULL, 0x764774b84f385ULL, 0x1ba7b6434bacdULL,
                                  0x1ea397fe69a4bULL, 0x000000001a011ULL };
static const uint64_t C448[L8] = { 0x7fde37dba9366ULL, 0x4e27525bc342bULL, 0x1f5b1e9778489ULL,
                                   0xb872b2b91b9dcULL, 0xb206f497dfcafULL, 0x4137cc89a9b0bULL,
                                   0xd9d20d7e39959ULL, 0x000000000411cULL };
static const uint64_t C384[L8] = { 0x900000002fffdULL, 0x0bc40c0002760ULL, 0x3c758baebf400ULL,
                                   0x57455f4898575ULL, 0xd77ce58537052ULL, 0x071a97a256ec6ULL,
                                   0xec3fa80e4935cULL, 0x0000000015f65ULL };
static const uint64_t ONE416[L8] = { 0x6480ea8e9b9afULL, 0x65766c8fe444fULL, 0x8b540fea96f7dULL,
                                     0x3b2ee82efd422ULL, 0xa6723e5f0ade5ULL, 0xff6eb6fdd4230ULL,
                                     0xe06ef23c24a25ULL, 0x0000000014c8eULL };
#define PINV52 (UINT64_C(0x89f3fffcfffcfffd) & M52)

typedef struct {
    __m512i l[L8];
} v8;

V8_INLINE v8 v8_const(const uint64_t c[L8])
{
    v8 r;
    CUZK_UNROLL for (int k = 0; k < L8; k++) r.l[k] = _mm512_set1_epi64((long long)c[k]);
    return r;
}

/* k·p as unnormalised limbs (k <= 16: the value stays below 2^386). */
V8_INLINE v8 v8_pmul(unsigned k)
{
    v8 r;
    CUZK_UNROLL for (int i = 0; i < L8; i++) r.l[i] = _mm512_set1_epi64((long long)(P52[i] * k));
    return r;
}

V8_INLINE v8 v8_load(const fq8x381 *a)
{
    v8 r;
    CUZK_UNROLL for (int k = 0; k < L8; k++) r.l[k] = _mm512_load_si512(a->l[k]);
    return r;
}

V8_INLINE void v8_store(fq8x381 *r, v8 a)
{
    CUZK_UNROLL for (int k = 0; k < L8; k++) _mm512_store_si512(r->l[k], a.l[k]);
}

/* Limbs back below 2^52, borrows by arithmetic shifts; the value must be >= 0. */
V8_INLINE v8 v8_norm(v8 a)
{
    const __m512i M = _mm512_set1_epi64((long long)M52);
    CUZK_UNROLL for (int k = 0; k < L8 - 1; k++)
    {
        a.l[k + 1] = _mm512_add_epi64(a.l[k + 1], _mm512_srai_epi64(a.l[k], 52));
        a.l[k] = _mm512_and_si512(a.l[k], M);
    }
    return a;
}

/* a + c - b, limb by limb, normalised (the caller makes it >= 0). */
V8_INLINE v8 v8_sub_plus(v8 a, v8 b, v8 c)
{
    CUZK_UNROLL for (int k = 0; k < L8; k++) a.l[k] =
        _mm512_sub_epi64(_mm512_add_epi64(a.l[k], c.l[k]), b.l[k]);
    return v8_norm(a);
}

/* a - p where that is >= 0, else a (a normalised). */
V8_INLINE v8 v8_csub_p(v8 a)
{
    v8 t;
    CUZK_UNROLL for (int k = 0; k < L8; k++) t.l[k] =
        _mm512_sub_epi64(a.l[k], _mm512_set1_epi64((long long)P52[k]));
    t = v8_norm(t);
    __mmask8 neg = _mm512_cmplt_epi64_mask(t.l[L8 - 1], _mm512_setzero_si512());
    CUZK_UNROLL for (int k = 0; k < L8; k++) t.l[k] = _mm512_mask_blend_epi64(neg, t.l[k], a.l[k]);
    return t;
}

/* r = a·b·2^-416 mod p lane by lane, < a·b/2^416 + p: ifma.c's v5_mont with 8 limbs
 * (operand scanning over b, one 52-bit reduction step per limb). Inputs normalised,
 * values below 2^416. Each limb takes at most 4 terms < 2^52 a step over 8 steps,
 * plus carries: < 2^58, no 64-bit overflow. */
V8_INLINE v8 v8_mont(v8 a, v8 b)
{
    const __m512i z = _mm512_setzero_si512();
    const __m512i pinv = _mm512_set1_epi64((long long)PINV52);
    __m512i p[L8], t[L8 + 1];
    CUZK_UNROLL for (int k = 0; k < L8; k++) p[k] = _mm512_set1_epi64((long long)P52[k]);
    CUZK_UNROLL for (int k = 0; k < L8; k++) t[k] = z;
    CUZK_UNROLL for (int i = 0; i < L8; i++)
    {
        __m512i bi = b.l[i];
        t[L8] = z;
        CUZK_UNROLL for (int j = 0; j < L8; j++) t[j] = _mm512_madd52lo_epu64(t[j], a.l[j], bi);
        CUZK_UNROLL for (int j = 0; j < L8; j++) t[j + 1] = _mm512_madd52hi_epu64(t[j + 1], a.l[j], bi);
        __m512i m = _mm512_madd52lo_epu64(z, t[0], pinv);
        CUZK_UNROLL for (int j = 0; j < L8; j++) t[j] = _mm512_madd52lo_epu64(t[j], m, p[j]);
        CUZK_UNROLL for (int j = 0; j < L8; j++) t[j + 1] = _mm512_madd52hi_epu64(t[j + 1], m, p[j]);
        /* t0 is 0 mod 2^52 now: shift down a limb, keeping its carry */
        t[1] = _mm512_add_epi64(t[1], _mm512_srli_epi64(t[0], 52));
        CUZK_UNROLL for (int j = 0; j < L8; j++) t[j] = t[j + 1];
    }
    v8 r;
    CUZK_UNROLL for (int k = 0; k < L8; k++) r.l[k] = t[k];
    return v8_norm(r);
}

/* The 6x64 limbs at ptr[j] + off of the 8 lanes (gathered), relimbed to 8x52. */
V8_INLINE v8 v8_gather(const uint64_t *const ptr[8], unsigned off)
{
    const __m512i M = _mm512_set1_epi64((long long)M52);
    __m512i vi =
        _mm512_set_epi64((long long)(ptr[7] + off), (long long)(ptr[6] + off), (long long)(ptr[5] + off),
                         (long long)(ptr[4] + off), (long long)(ptr[3] + off), (long long)(ptr[2] + off),
                         (long long)(ptr[1] + off), (long long)(ptr[0] + off));
    __m512i x[6];
    CUZK_UNROLL for (int k = 0; k < 6; k++) x[k] =
        _mm512_i64gather_epi64(vi, (const void *)(uintptr_t)(8 * k), 1);
    v8 r;
    r.l[0] = _mm512_and_si512(x[0], M);
    r.l[1] = _mm512_and_si512(_mm512_or_si512(_mm512_srli_epi64(x[0], 52), _mm512_slli_epi64(x[1], 12)), M);
    r.l[2] = _mm512_and_si512(_mm512_or_si512(_mm512_srli_epi64(x[1], 40), _mm512_slli_epi64(x[2], 24)), M);
    r.l[3] = _mm512_and_si512(_mm512_or_si512(_mm512_srli_epi64(x[2], 28), _mm512_slli_epi64(x[3], 36)), M);
    r.l[4] = _mm512_and_si512(_mm512_or_si512(_mm512_srli_epi64(x[3], 16), _mm512_slli_epi64(x[4], 48)), M);
    r.l[5] = _mm512_and_si512(_mm512_srli_epi64(x[4], 4), M);
    r.l[6] = _mm512_and_si512(_mm512_or_si512(_mm512_srli_epi64(x[4], 56), _mm512_slli_epi64(x[5], 8)), M);
    r.l[7] = _mm512_srli_epi64(x[5], 44);
    return r;
}

/* a (normalised, value < 2^384) as 6x64 limbs scattered to ptr[j] + off for the lanes
 * in keep. */
V8_INLINE void v8_scatter(uint64_t *const ptr[8], unsigned off, v8 a, __mmask8 keep)
{
    __m512i vi =
        _mm512_set_epi64((long long)(ptr[7] + off), (long long)(ptr[6] + off), (long long)(ptr[5] + off),
                         (long long)(ptr[4] + off), (long long)(ptr[3] + off), (long long)(ptr[2] + off),
                         (long long)(ptr[1] + off), (long long)(ptr[0] + off));
    __m512i x[6];
    x[0] = _mm512_or_si512(a.l[0], _mm512_slli_epi64(a.l[1], 52));
    x[1] = _mm512_or_si512(_mm512_srli_epi64(a.l[1], 12), _mm512_slli_epi64(a.l[2], 40));
    x[2] = _mm512_or_si512(_mm512_srli_epi64(a.l[2], 24), _mm512_slli_epi64(a.l[3], 28));
    x[3] = _mm512_or_si512(_mm512_srli_epi64(a.l[3], 36), _mm512_slli_epi64(a.l[4], 16));
    x[4] = _mm512_or_si512(_mm512_or_si512(_mm512_srli_epi64(a.l[4], 48), _mm512_slli_epi64(a.l[5], 4)),
                           _mm512_slli_epi64(a.l[6], 56));
    x[5] = _mm512_or_si512(_mm512_srli_epi64(a.l[6], 8), _mm512_slli_epi64(a.l[7], 44));
    CUZK_UNROLL for (int k = 0; k < 6; k++)
        _mm512_mask_i64scatter_epi64((void *)(uintptr_t)(8 * k), keep, vi, x[k], 1);
}

/* field.h form (x·2^384) -> lanes (x·2^416), < 2p; and back, canonical. */
V8_INLINE v8 v8_in(v8 a)
{
    return v8_mont(a, v8_const(C448));
}
V8_INLINE v8 v8_out(v8 a)
{
    return v8_csub_p(v8_mont(a, v8_const(C384)));
}

V8_FN void ifma381_fq_mul_aos(uint64_t *r, const uint64_t *a, const uint64_t *b, size_t count)
{
    for (size_t i = 0; i + 8 <= count; i += 8) {
        const uint64_t *pa[8], *pb[8];
        uint64_t *pr[8];
        for (int j = 0; j < 8; j++) {
            pa[j] = a + 6 * (i + j);
            pb[j] = b + 6 * (i + j);
            pr[j] = r + 6 * (i + j);
        }
        v8 x = v8_in(v8_gather(pa, 0)), y = v8_in(v8_gather(pb, 0));
        v8_scatter(pr, 0, v8_out(v8_mont(x, y)), 0xff);
    }
}

/* Lanes past count: P = (1, 0), B = (0, 0) in field.h's form, so the denominator is 1
 * and never 0; they are never written back (the scatter's mask). */
static const uint64_t PAD_P[24] = { 0x760900000002fffdULL, 0xebf4000bc40c0002ULL, 0x5f48985753c758baULL,
                                    0x77ce585370525745ULL, 0x5c071a97a256ec6dULL, 0x15f65ec3fa80e493ULL };
static const uint64_t PAD_B[24];

/* al: limbs an affine point (12 on G1, 24 on G2; PAD_P is (1, 0) on both). */
static inline __mmask8 block_ptrs(const uint64_t *pp[8], uint64_t *bq[8], uint64_t *A, const uint32_t *bb,
                                  const uint64_t *bp, size_t count, size_t k, unsigned al)
{
    unsigned keep = 0;
    for (unsigned j = 0; j < 8; j++) {
        size_t i = 8 * k + j;
        if (i < count) {
            pp[j] = bp + al * i;
            bq[j] = A + al * (size_t)bb[i];
            keep |= 1u << j;
        } else {
            pp[j] = PAD_P;
            bq[j] = (uint64_t *)PAD_B; /* read only: masked out of every scatter */
        }
    }
    return (__mmask8)keep;
}

/* a·2^32 (a normalised, value below 2^384, so the result stays below 2^416). */
V8_INLINE v8 v8_shl32(v8 a)
{
    const __m512i M = _mm512_set1_epi64((long long)M52);
    v8 r;
    r.l[0] = _mm512_and_si512(_mm512_slli_epi64(a.l[0], 32), M);
    CUZK_UNROLL for (int k = 1; k < L8; k++)
    {
        __m512i lo = _mm512_slli_epi64(a.l[k], 32);
        if (k < L8 - 1) lo = _mm512_and_si512(lo, M);
        r.l[k] = _mm512_or_si512(lo, _mm512_srli_epi64(a.l[k - 1], 20));
    }
    return r;
}

/* a - kp where that is >= 0, else a (a normalised; kp = v8_pmul(k)). */
V8_INLINE v8 v8_csub(v8 a, v8 kp)
{
    v8 t;
    CUZK_UNROLL for (int k = 0; k < L8; k++) t.l[k] = _mm512_sub_epi64(a.l[k], kp.l[k]);
    t = v8_norm(t);
    __mmask8 neg = _mm512_cmplt_epi64_mask(t.l[L8 - 1], _mm512_setzero_si512());
    CUZK_UNROLL for (int k = 0; k < L8; k++) t.l[k] = _mm512_mask_blend_epi64(neg, t.l[k], a.l[k]);
    return t;
}

/* Lane j of block k is addition 8k + j; one prefix-product chain per lane, the eight
 * totals inverted on the scalar side (3·7 products and fe_inv_gcd), then the blocks
 * walked back as msm_aff_flush does.
 *
 * Forms, as ifma.c: the coordinates stay in field.h's form x·2^384, only relimbed, and
 * no conversion product is spent on them; write v@s for v·2^s mod p, so a lane product
 * maps a@s, b@t to ab@(s+t-416) and v8_shl32 maps v@s to v@(s+32). Then:
 *   den = Px + p - Bx @384, den' = den << 32 @416; acc starts at 1@416 and
 *   acc·den' stays @416, so the prefix products and, after the scalar inversion (one
 *   conversion each way for the 8 totals), inv and 1/den = inv·pre are @416 too;
 *   lambda = dy·(1/den) @384, lambda' = lambda << 32 @416; lambda·lambda' @384 and
 *   lambda'·(Bx - x3) @384: the results are in field.h's form. 6 lane products an
 *   addition (1 prefix; back: 2 for the inverses, lambda, lambda^2, y3), as BN254's.
 * Bounds (a lane product of a < αp and b < βp is below (αβ 2^-35 + 1)p): the inputs
 * are canonical; den, dy in (0, 2p); den', lambda' < 2^33 p, so acc·den' and
 * lambda·lambda' < 1.5p, and everything else out of a product < 2p;
 * x3 = lambda^2 + 2p - Bx - Px in (0, 3.5p), made canonical (less 2p, less p) before
 * Bx + p - x3 in (0, 2p) is used; y3 = lambda'·that (< 1.5p) + p - By in (0, 2.5p),
 * less 2p, less p. Every operand stays below 2^416. */
V8_FN void ifma381_g1_batch_add(uint64_t *A, const uint32_t *bb, const uint64_t *bp, size_t count,
                                void *scratch)
{
    const field_desc *F = &FIELD_BLS12_381_FQ;
    fq8x381 *sc = scratch; /* block k: prefix at 3k, Px at 3k+1, Bx at 3k+2 */
    const size_t L = (count + 7) / 8;
    const uint64_t *pp[8];
    uint64_t *bq[8];
    if (count == 0) return;
    const v8 P1 = v8_pmul(1), P2 = v8_pmul(2);

    v8 acc = v8_const(ONE416);
    for (size_t k = 0; k < L; k++) {
        block_ptrs(pp, bq, A, bb, bp, count, k, 12);
        v8 px = v8_gather(pp, 0), bx = v8_gather((const uint64_t *const *)bq, 0);
        acc = v8_mont(acc, v8_shl32(v8_sub_plus(px, bx, P1)));
        v8_store(sc + 3 * k, acc);
        v8_store(sc + 3 * k + 1, px);
        v8_store(sc + 3 * k + 2, bx);
    }

    /* the eight lane totals (nonzero: no denominator is), inverted together */
    uint64_t tot[8][12], inv8[8][12], pre8[8][6], t[6];
    {
        uint64_t *pt[8];
        for (int j = 0; j < 8; j++) pt[j] = tot[j];
        v8_scatter(pt, 0, v8_out(acc), 0xff);
    }
    fe_copy(F, pre8[0], tot[0]);
    for (int j = 1; j < 8; j++) fe_mul(F, pre8[j], pre8[j - 1], tot[j]);
    fe_inv_gcd(F, t, pre8[7]);
    for (int j = 7; j > 0; j--) {
        fe_mul(F, inv8[j], t, pre8[j - 1]);
        fe_mul(F, t, t, tot[j]);
    }
    fe_copy(F, inv8[0], t);
    v8 inv;
    {
        const uint64_t *pi[8];
        for (int j = 0; j < 8; j++) pi[j] = inv8[j];
        inv = v8_in(v8_gather(pi, 0));
    }

    for (size_t k = L; k-- > 0;) {
        __mmask8 keep = block_ptrs(pp, bq, A, bb, bp, count, k, 12);
        v8 px = v8_load(sc + 3 * k + 1), bx = v8_load(sc + 3 * k + 2);
        v8 di;
        if (k > 0) {
            di = v8_mont(inv, v8_load(sc + 3 * (k - 1)));          /* 1/den_k @416 */
            inv = v8_mont(inv, v8_shl32(v8_sub_plus(px, bx, P1))); /* 1/(den_0 .. den_{k-1}) */
        } else {
            di = inv;
        }
        v8 py = v8_gather(pp, 6), by = v8_gather((const uint64_t *const *)bq, 6);
        v8 l = v8_mont(v8_sub_plus(py, by, P1), di); /* lambda @384 */
        v8 l32 = v8_shl32(l);                        /* lambda @416 */
        v8 x3 = v8_mont(l, l32);                     /* lambda^2 @384 */
        x3 = v8_sub_plus(x3, bx, P2);
        CUZK_UNROLL for (int m = 0; m < L8; m++) x3.l[m] = _mm512_sub_epi64(x3.l[m], px.l[m]);
        x3 = v8_csub(v8_csub(v8_norm(x3), P2), P1);    /* lambda^2 - Bx - Px, canonical */
        v8 y3 = v8_mont(l32, v8_sub_plus(bx, x3, P1)); /* lambda (Bx - x3) @384 */
        y3 = v8_csub(v8_csub(v8_sub_plus(y3, by, P1), P2), P1);
        v8_scatter(bq, 0, x3, keep);
        v8_scatter(bq, 6, y3, keep);
    }
}

/* ---- G2: Fq2 = Fq[u]/(u^2+1) in lanes ----------------------------------------------
 *
 * An Fq2 lane value is two v8 (c0, c1). Products by Karatsuba (3 lane products),
 * squares by (a0+a1)(a0-a1) + (2a0)a1 u (2). Bounds, per component (every lane product
 * of operands below 64p is below 2p): a product's c0 = t0 + 2p - t1 is in (0, 4p) and
 * c1 = t2 + 4p - t0 - t1 in (0, 6p); a square's components are below 2p (its inputs
 * below 8p). */
typedef struct {
    v8 c0, c1;
} v82;

V8_INLINE v8 v8_add(v8 a, v8 b)
{
    CUZK_UNROLL for (int k = 0; k < L8; k++) a.l[k] = _mm512_add_epi64(a.l[k], b.l[k]);
    return v8_norm(a);
}

V8_INLINE v82 v82_mul(v82 a, v82 b)
{
    const v8 P2 = v8_pmul(2), P4 = v8_pmul(4);
    v8 t0 = v8_mont(a.c0, b.c0), t1 = v8_mont(a.c1, b.c1);
    v8 t2 = v8_mont(v8_add(a.c0, a.c1), v8_add(b.c0, b.c1));
    v82 r;
    r.c0 = v8_sub_plus(t0, t1, P2);
    v8 s = t2;
    CUZK_UNROLL for (int k = 0; k < L8; k++) s.l[k] =
        _mm512_sub_epi64(_mm512_add_epi64(s.l[k], P4.l[k]), _mm512_add_epi64(t0.l[k], t1.l[k]));
    r.c1 = v8_norm(s);
    return r;
}

/* a's components below 8p */
V8_INLINE v82 v82_sqr(v82 a)
{
    const v8 P8 = v8_pmul(8);
    v82 r;
    r.c0 = v8_mont(v8_add(a.c0, a.c1), v8_sub_plus(a.c0, a.c1, P8));
    r.c1 = v8_mont(v8_add(a.c0, a.c0), a.c1);
    return r;
}

/* a + kp - b per component */
V8_INLINE v82 v82_sub_plus(v82 a, v82 b, v8 kp)
{
    v82 r = { v8_sub_plus(a.c0, b.c0, kp), v8_sub_plus(a.c1, b.c1, kp) };
    return r;
}

V8_INLINE v82 v82_gather_in(const uint64_t *const ptr[8], unsigned off)
{
    v82 r = { v8_in(v8_gather(ptr, off)), v8_in(v8_gather(ptr, off + 6)) };
    return r;
}

V8_INLINE void v82_scatter_out(uint64_t *const ptr[8], unsigned off, v82 a, __mmask8 keep)
{
    v8_scatter(ptr, off, v8_out(a.c0), keep);
    v8_scatter(ptr, off + 6, v8_out(a.c1), keep);
}

/* canonical (< p) from below 8p, per component */
V8_INLINE v8 v8_canon8(v8 a)
{
    return v8_csub(v8_csub(v8_csub(a, v8_pmul(4)), v8_pmul(2)), v8_pmul(1));
}

/* 2^416 mod p in field.h's 6x64 limbs: fe_mul by it multiplies by 2^32. */
static const uint64_t K32_64[6] = { 0x44f6480ea8e9b9afULL, 0xa96f7d65766c8fe4ULL, 0xe82efd4228b540feULL,
                                    0x6723e5f0ade53b2eULL, 0x25ff6eb6fdd4230aULL, 0x14c8ee06ef23c24aULL };

/* ifma381_g1_batch_add on G2: 24 limbs a point (x c0, x c1, y c0, y c1). Scales as
 * the G1 flush, but the prefix chain is not shifted (a shifted Fq2 operand makes the
 * Karatsuba sums too large): den = Px + p - Bx @384, so pre_k = acc·den drifts to
 * @(416 - 32(k+1)); the scalar side returns inv_{L-1} @(416 + 32(L-1)) (fe2_inv gives
 * W^-1 2^768 for the integer pair W, times 2^32: one fe_mul by 2^416 mod p), after
 * which inv_k @(416 + 32k) and 1/den_k = inv_k·pre_{k-1} @416 for every k. Then lambda
 * = dy·(1/den) @384, made canonical and shifted (L = lambda << 32 @416); lambda^2 =
 * (L0 + L1)(l0 - l1) + 2 L0 l1 u @384 and y3 = L·(Bx - x3) @384. 17 lane products an
 * addition (prefix 3; back: inverses 6, lambda 3, lambda^2 2, y3 3), no conversions.
 * Bounds per component (a lane product of a < αp, b < βp is < (αβ 2^-35 + 1)p):
 * inputs canonical; den, dy in (0, 2p); every product of unshifted operands has
 * t0, t1, t2 < 1.01p, so c0 < 3.01p, c1 < 5.1p (acc, inv, 1/den, lambda); L < 2^32 p;
 * lambda^2 components < 1.5p, x3 = lambda^2 + 2p - Bx - Px in (0, 3.5p), made
 * canonical; y3 = L·(Bx + p - x3): t0, t1 < 1.25p, t2 < 2p, so c0 < 3.25p, c1 < 6p,
 * plus p less By below 7p, made canonical. Totals are made canonical before the
 * scalar inversion. Every operand stays below 2^416. */
V8_FN void ifma381_g2_batch_add(uint64_t *A, const uint32_t *bb, const uint64_t *bp, size_t count,
                                void *scratch)
{
    const field_desc *F = &FIELD_BLS12_381_FQ;
    fq8x381 *sc = scratch; /* block k: prefix at 6k (c0, c1), Px at 6k+2, Bx at 6k+4 */
    const size_t L = (count + 7) / 8;
    const uint64_t *pp[8];
    uint64_t *bq[8];
    if (count == 0) return;
    const v8 P1 = v8_pmul(1), P2 = v8_pmul(2);

    v82 acc = { v8_const(ONE416), v8_pmul(0) };
    for (size_t k = 0; k < L; k++) {
        block_ptrs(pp, bq, A, bb, bp, count, k, 24);
        v82 px = { v8_gather(pp, 0), v8_gather(pp, 6) };
        v82 bx = { v8_gather((const uint64_t *const *)bq, 0), v8_gather((const uint64_t *const *)bq, 6) };
        acc = v82_mul(acc, v82_sub_plus(px, bx, P1));
        v8_store(sc + 6 * k, acc.c0);
        v8_store(sc + 6 * k + 1, acc.c1);
        v8_store(sc + 6 * k + 2, px.c0);
        v8_store(sc + 6 * k + 3, px.c1);
        v8_store(sc + 6 * k + 4, bx.c0);
        v8_store(sc + 6 * k + 5, bx.c1);
    }

    /* the eight lane totals (nonzero), canonical, inverted together by Montgomery's
     * trick in Fq2 around one fe2_inv, then times 2^32 */
    uint64_t tot[8][24], inv8[8][12], pre8[8][12], t[12];
    {
        uint64_t *pt[8];
        for (int j = 0; j < 8; j++) pt[j] = tot[j];
        v8_scatter(pt, 0, v8_canon8(acc.c0), 0xff);
        v8_scatter(pt, 6, v8_canon8(acc.c1), 0xff);
    }
    memcpy(pre8[0], tot[0], sizeof pre8[0]);
    for (int j = 1; j < 8; j++) fe2_mul(F, pre8[j], pre8[j - 1], tot[j]);
    fe2_inv(F, t, pre8[7]);
    for (int j = 7; j > 0; j--) {
        fe2_mul(F, inv8[j], t, pre8[j - 1]);
        fe2_mul(F, t, t, tot[j]);
    }
    memcpy(inv8[0], t, sizeof t);
    for (int j = 0; j < 8; j++) {
        fe_mul(F, inv8[j], inv8[j], K32_64);
        fe_mul(F, inv8[j] + 6, inv8[j] + 6, K32_64);
    }
    v82 inv;
    {
        const uint64_t *pi[8];
        for (int j = 0; j < 8; j++) pi[j] = inv8[j];
        inv.c0 = v8_gather(pi, 0);
        inv.c1 = v8_gather(pi, 6);
    }

    for (size_t k = L; k-- > 0;) {
        __mmask8 keep = block_ptrs(pp, bq, A, bb, bp, count, k, 24);
        v82 px = { v8_load(sc + 6 * k + 2), v8_load(sc + 6 * k + 3) };
        v82 bx = { v8_load(sc + 6 * k + 4), v8_load(sc + 6 * k + 5) };
        v82 di;
        if (k > 0) {
            v82 pk = { v8_load(sc + 6 * (k - 1)), v8_load(sc + 6 * (k - 1) + 1) };
            di = v82_mul(inv, pk);                        /* 1/den_k @416 */
            inv = v82_mul(inv, v82_sub_plus(px, bx, P1)); /* 1/(den_0 .. den_{k-1}) */
        } else {
            di = inv;
        }
        v82 py = { v8_gather(pp, 12), v8_gather(pp, 18) };
        v82 by = { v8_gather((const uint64_t *const *)bq, 12), v8_gather((const uint64_t *const *)bq, 18) };
        v82 l = v82_mul(v82_sub_plus(py, by, P1), di); /* lambda @384 */
        l.c0 = v8_canon8(l.c0);
        l.c1 = v8_canon8(l.c1);
        v82 l32 = { v8_shl32(l.c0), v8_shl32(l.c1) }; /* lambda @416 */
        v82 x3;
        x3.c0 = v8_mont(v8_add(l32.c0, l32.c1), v8_sub_plus(l.c0, l.c1, P1)); /* lambda^2 @384 */
        x3.c1 = v8_mont(v8_add(l32.c0, l32.c0), l.c1);
        x3 = v82_sub_plus(x3, bx, P2);
        CUZK_UNROLL for (int m = 0; m < L8; m++)
        {
            x3.c0.l[m] = _mm512_sub_epi64(x3.c0.l[m], px.c0.l[m]);
            x3.c1.l[m] = _mm512_sub_epi64(x3.c1.l[m], px.c1.l[m]);
        }
        x3.c0 = v8_csub(v8_csub(v8_norm(x3.c0), P2), P1); /* lambda^2 - Bx - Px, canonical */
        x3.c1 = v8_csub(v8_csub(v8_norm(x3.c1), P2), P1);
        v82 y3 = v82_mul(l32, v82_sub_plus(bx, x3, P1)); /* lambda (Bx - x3) @384 */
        y3 = v82_sub_plus(y3, by, P1);
        y3.c0 = v8_canon8(y3.c0);
        y3.c1 = v8_canon8(y3.c1);
        v8_scatter(bq, 0, x3.c0, keep);
        v8_scatter(bq, 6, x3.c1, keep);
        v8_scatter(bq, 12, y3.c0, keep);
        v8_scatter(bq, 18, y3.c1, keep);
    }
}

#else
/* Without x86-64 only the portable form exists (ifma_available() says so). */
void ifma381_g1_batch_add(uint64_t *A, const uint32_t *bb, const uint64_t *bp, size_t count, void *scratch)
{
    ifma381_g1_batch_add_ref(A, bb, bp, count, scratch);
}

void ifma381_g2_batch_add(uint64_t *A, const uint32_t *bb, const uint64_t *bp, size_t count, void *scratch)
{
    ifma381_g2_batch_add_ref(A, bb, bp, count, scratch);
}

void ifma381_fq_mul_aos(uint64_t *r, const uint64_t *a, const uint64_t *b, size_t count)
{
    for (size_t i = 0; i < count; i++) fe_mul(&FIELD_BLS12_381_FQ, r + 6 * i, a + 6 * i, b + 6 * i);
}
#endif
