/* ifma_lanes.h — the AVX-512 IFMA lanes and the MSM's batch-affine addition on them,
 * written once for both curves: zk/ifma.c (BN254) and zk/ifma381.c (BLS12-381) each
 * define the parameters below and include this file once, so everything here is a
 * static of that translation unit. Not a public header: only those two include it, and
 * zk/ntt_ifma_fr.h for the two scalar fields (arithmetic only, no batch addition).
 *
 * Why a body included twice rather than inline functions over a lane-field descriptor:
 * the limb count is the length of every register array here (5 zmm a BN254 value, 8
 * a BLS12-381 one). With a descriptor those arrays would be sized for 8 limbs on both
 * curves and the BN254 code would be good only if the compiler deleted the unused
 * three after unrolling; as array bounds the compiler sees, each curve gets the code
 * it would get from a copy written for it, and the constants are plain tables.
 *
 * Parameters (the includer defines them first):
 *   LANE_N          52-bit limbs a lane: R' = 2^(52 LANE_N) is the lanes' Montgomery
 *                   radix (a lane product is a·b/R' mod p);
 *   LANE_W          64-bit limbs of field.h's form x·R, R = 2^(64 LANE_W);
 *   LANE_F          the field_desc; LANE_G1, LANE_G2 its two curve_groups (an
 *                   instance without them, a scalar field for zk/ntt_lanes.h, gets the
 *                   field arithmetic only, not the batch-affine addition);
 *   lane_block      typedef: struct { uint64_t l[LANE_N][8]; }, 64-byte aligned (limb
 *                   k of lane j at l[k][j]: one zmm register a limb);
 *   lane_p          p in radix 2^52; LANE_PINV -p^-1 mod 2^52;
 *   lane_one        R' mod p (the lane form of 1), lane_c_in R'^2/R mod p (a product
 *                   by it multiplies by R'/R), lane_c_out R mod p (divides by R'/R);
 *   LANE_LAMBDA_LAZY (optional) G2's lambda goes into the shift and the square as the
 *                   product left it, not made canonical first: sound only where e is
 *                   tiny (BLS12-381; the bounds below say what it changes).
 *
 * Write g = 52 LANE_N - 64 LANE_W (R'/R = 2^g: 4 on BN254, 32 on BLS12-381) and
 * e = p/R' (0.0119 on BN254, below 2^-35 on BLS12-381). A lane product of a < αp by
 * b < βp is below (αβe + 1)p; its inputs need normalised limbs and values below R'
 * (84p on BN254, the tighter of the two, which sets every bound below). */
#if !defined(LANE_N) || !defined(LANE_W) || !defined(LANE_F)
#error "ifma_lanes.h: define LANE_N, LANE_W and LANE_F first"
#endif

#include <immintrin.h>

#include "zk/curve.h"
#include "zk/field.h"

#define LANE_G      (52 * LANE_N - 64 * LANE_W)
#define LANE_M52    ((UINT64_C(1) << 52) - 1)
#define LANE_FN     __attribute__((target("avx512f,avx512vl,avx512ifma")))
#define LANE_INLINE static inline __attribute__((always_inline, target("avx512f,avx512vl,avx512ifma")))

/* One Fq value in each of the eight lanes: limb k of all lanes in l[k]. */
typedef struct {
    __m512i l[LANE_N];
} vl;

LANE_INLINE vl vl_load(const lane_block *a)
{
    vl r;
    CUZK_UNROLL for (int k = 0; k < LANE_N; k++) r.l[k] = _mm512_load_si512(a->l[k]);
    return r;
}

LANE_INLINE void vl_store(lane_block *r, vl a)
{
    CUZK_UNROLL for (int k = 0; k < LANE_N; k++) _mm512_store_si512(r->l[k], a.l[k]);
}

/* A constant in every lane. */
LANE_INLINE vl vl_const(const uint64_t c[LANE_N])
{
    vl r;
    CUZK_UNROLL for (int k = 0; k < LANE_N; k++) r.l[k] = _mm512_set1_epi64((long long)c[k]);
    return r;
}

/* k·p (k <= 16) as unnormalised limbs, for sums and differences that are normalised
 * after. */
LANE_INLINE vl vl_pmul(unsigned m)
{
    vl r;
    CUZK_UNROLL for (int k = 0; k < LANE_N; k++) r.l[k] = _mm512_set1_epi64((long long)(lane_p[k] * m));
    return r;
}

/* Carry propagation: limbs back below 2^52. Arithmetic shifts, so a limb that went
 * negative in a difference borrows from the next; the value itself must be >= 0
 * (callers add a multiple of p first), then every limb ends in [0, 2^52). */
LANE_INLINE vl vl_norm(vl a)
{
    const __m512i M = _mm512_set1_epi64((long long)LANE_M52);
    CUZK_UNROLL for (int k = 0; k < LANE_N - 1; k++)
    {
        a.l[k + 1] = _mm512_add_epi64(a.l[k + 1], _mm512_srai_epi64(a.l[k], 52));
        a.l[k] = _mm512_and_si512(a.l[k], M);
    }
    return a;
}

/* a + b, normalised. */
LANE_INLINE vl vl_add(vl a, vl b)
{
    CUZK_UNROLL for (int k = 0; k < LANE_N; k++) a.l[k] = _mm512_add_epi64(a.l[k], b.l[k]);
    return vl_norm(a);
}

/* a + kp - b, normalised (kp = vl_pmul(k), large enough to keep it >= 0). */
LANE_INLINE vl vl_sub_plus(vl a, vl b, vl kp)
{
    CUZK_UNROLL for (int k = 0; k < LANE_N; k++) a.l[k] =
        _mm512_sub_epi64(_mm512_add_epi64(a.l[k], kp.l[k]), b.l[k]);
    return vl_norm(a);
}

/* a + kp - b - c, normalised. */
LANE_INLINE vl vl_sub2_plus(vl a, vl b, vl c, vl kp)
{
    CUZK_UNROLL for (int k = 0; k < LANE_N; k++) a.l[k] =
        _mm512_sub_epi64(_mm512_add_epi64(a.l[k], kp.l[k]), _mm512_add_epi64(b.l[k], c.l[k]));
    return vl_norm(a);
}

/* a - kp where that is >= 0, else a (a normalised; lane by lane). */
LANE_INLINE vl vl_csub(vl a, vl kp)
{
    vl t;
    CUZK_UNROLL for (int k = 0; k < LANE_N; k++) t.l[k] = _mm512_sub_epi64(a.l[k], kp.l[k]);
    t = vl_norm(t);
    __mmask8 neg = _mm512_cmplt_epi64_mask(t.l[LANE_N - 1], _mm512_setzero_si512());
    CUZK_UNROLL for (int k = 0; k < LANE_N; k++) t.l[k] = _mm512_mask_blend_epi64(neg, t.l[k], a.l[k]);
    return t;
}

/* [0, m·p) -> [0, p), m a power of two: less m/2·p, ..., less p, each where possible. */
LANE_INLINE vl vl_canon(vl a, unsigned m)
{
    CUZK_UNROLL for (unsigned h = m / 2; h >= 1; h /= 2) a = vl_csub(a, vl_pmul(h));
    return a;
}

/* a·2^s (0 < s < 52; a normalised, a·2^s < R'). */
LANE_INLINE vl vl_shl(vl a, unsigned s)
{
    const __m512i M = _mm512_set1_epi64((long long)LANE_M52);
    vl r;
    r.l[0] = _mm512_and_si512(_mm512_slli_epi64(a.l[0], s), M);
    CUZK_UNROLL for (int k = 1; k < LANE_N; k++)
    {
        __m512i lo = _mm512_slli_epi64(a.l[k], s);
        if (k < LANE_N - 1) lo = _mm512_and_si512(lo, M);
        r.l[k] = _mm512_or_si512(lo, _mm512_srli_epi64(a.l[k - 1], 52 - s));
    }
    return r;
}

/* Montgomery product r = a·b/R' mod p lane by lane: operand scanning over the limbs of
 * b, one 52-bit reduction step per limb (m = t0·(-p^-1) mod 2^52 makes the low limb of
 * t + m·p zero, then t shifts down a limb). Inputs: limbs < 2^52 (the multipliers read
 * 52 bits only), values below R'. Output: (a·b + m·p)/R' < a·b/R' + p, normalised.
 * Accumulators: each limb takes at most 4 terms < 2^52 a step over LANE_N <= 8 steps,
 * plus carries: < 2^58, no 64-bit overflow. */
LANE_INLINE vl vl_mont(vl a, vl b)
{
    const __m512i z = _mm512_setzero_si512();
    const __m512i pinv = _mm512_set1_epi64((long long)LANE_PINV);
    __m512i p[LANE_N], t[LANE_N + 1];
    CUZK_UNROLL for (int k = 0; k < LANE_N; k++) p[k] = _mm512_set1_epi64((long long)lane_p[k]);
    CUZK_UNROLL for (int k = 0; k < LANE_N; k++) t[k] = z;
    CUZK_UNROLL for (int i = 0; i < LANE_N; i++)
    {
        __m512i bi = b.l[i];
        t[LANE_N] = z;
        /* t += a·b_i: low halves at limb j, high halves at limb j+1 */
        CUZK_UNROLL for (int j = 0; j < LANE_N; j++) t[j] = _mm512_madd52lo_epu64(t[j], a.l[j], bi);
        CUZK_UNROLL for (int j = 0; j < LANE_N; j++) t[j + 1] = _mm512_madd52hi_epu64(t[j + 1], a.l[j], bi);
        /* t += m·p (only t0's low 52 bits matter for m) */
        __m512i m = _mm512_madd52lo_epu64(z, t[0], pinv);
        CUZK_UNROLL for (int j = 0; j < LANE_N; j++) t[j] = _mm512_madd52lo_epu64(t[j], m, p[j]);
        CUZK_UNROLL for (int j = 0; j < LANE_N; j++) t[j + 1] = _mm512_madd52hi_epu64(t[j + 1], m, p[j]);
        /* t0 is 0 mod 2^52 now: shift down a limb, keeping its carry */
        t[1] = _mm512_add_epi64(t[1], _mm512_srli_epi64(t[0], 52));
        CUZK_UNROLL for (int j = 0; j < LANE_N; j++) t[j] = t[j + 1];
    }
    vl r;
    CUZK_UNROLL for (int k = 0; k < LANE_N; k++) r.l[k] = t[k];
    return vl_norm(r);
}

/* The double-width product t = a·b, not reduced: 2 LANE_N limbs, limb k the sum of
 * the low and high halves that fall on it (at most 2 LANE_N terms < 2^52: < 2^56).
 * Inputs as vl_mont's. With vl_redc, an Fq2 product takes its three Karatsuba
 * products this way and reduces only the two sums: two reductions, not three. */
LANE_INLINE void vl_mul_wide(__m512i t[2 * LANE_N], vl a, vl b)
{
    const __m512i z = _mm512_setzero_si512();
    CUZK_UNROLL for (int k = 0; k < 2 * LANE_N; k++) t[k] = z;
    CUZK_UNROLL for (int i = 0; i < LANE_N; i++)
    {
        CUZK_UNROLL for (int j = 0; j < LANE_N; j++) t[i + j] =
            _mm512_madd52lo_epu64(t[i + j], a.l[j], b.l[i]);
        CUZK_UNROLL for (int j = 0; j < LANE_N; j++) t[i + j + 1] =
            _mm512_madd52hi_epu64(t[i + j + 1], a.l[j], b.l[i]);
    }
}

/* Montgomery reduction r = t/R' mod p of a double-width value (vl_mul_wide's sums and
 * differences): limbs may be negative (|limb| < 2^58; the multipliers read their low
 * 52 bits, which are the limb mod 2^52 in two's complement, and the carries shift
 * arithmetically), the value must be >= 0. Output: (t + m·p)/R' < t/R' + p,
 * normalised. Each step adds at most 2 LANE_N terms < 2^52 to a limb: no overflow. */
LANE_INLINE vl vl_redc(__m512i t[2 * LANE_N])
{
    const __m512i z = _mm512_setzero_si512();
    const __m512i pinv = _mm512_set1_epi64((long long)LANE_PINV);
    __m512i p[LANE_N];
    CUZK_UNROLL for (int k = 0; k < LANE_N; k++) p[k] = _mm512_set1_epi64((long long)lane_p[k]);
    CUZK_UNROLL for (int i = 0; i < LANE_N; i++)
    {
        __m512i m = _mm512_madd52lo_epu64(z, t[i], pinv);
        CUZK_UNROLL for (int j = 0; j < LANE_N; j++) t[i + j] = _mm512_madd52lo_epu64(t[i + j], m, p[j]);
        CUZK_UNROLL for (int j = 0; j < LANE_N; j++) t[i + j + 1] =
            _mm512_madd52hi_epu64(t[i + j + 1], m, p[j]);
        /* t_i is 0 mod 2^52 now: its quotient carries into the next limb */
        t[i + 1] = _mm512_add_epi64(t[i + 1], _mm512_srai_epi64(t[i], 52));
    }
    vl r;
    CUZK_UNROLL for (int k = 0; k < LANE_N; k++) r.l[k] = t[LANE_N + k];
    return vl_norm(r);
}

/* x·R -> x·R' (below 2p) and back (x·R', below R', -> x·R, canonical: the product by
 * R mod p < p is below 2p). */
LANE_INLINE vl vl_in(vl a)
{
    return vl_mont(a, vl_const(lane_c_in));
}
LANE_INLINE vl vl_out(vl a)
{
    return vl_canon(vl_mont(a, vl_const(lane_c_out)), 2);
}

/* ---- field.h's 64-bit limbs <-> lanes ---------------------------------------------
 *
 * The element at ptr[j] + off goes to lane j. Two ways to move them, by the width of
 * an element: 4 limbs (32 bytes, BN254) are one 256-bit load each and two rounds of
 * two-source permutes make limb rows of them (measured faster there than gathers);
 * 6 limbs (48 bytes, BLS12-381) have no such split, and go by vpgatherqq /
 * vpscatterqq, one instruction a limb row. */
#if LANE_W == 4
LANE_INLINE void lanes_load64(__m512i x[4], const uint64_t *const ptr[8], unsigned off)
{
    const __m512i i01 = _mm512_set_epi64(13, 9, 5, 1, 12, 8, 4, 0);
    const __m512i i23 = _mm512_set_epi64(15, 11, 7, 3, 14, 10, 6, 2);
    const __m512i lo = _mm512_set_epi64(11, 10, 9, 8, 3, 2, 1, 0);
    const __m512i hi = _mm512_set_epi64(15, 14, 13, 12, 7, 6, 5, 4);
    __m512i z[4];
    CUZK_UNROLL for (int q = 0; q < 4; q++) z[q] =
        _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(ptr[2 * q] + off))),
                           _mm256_loadu_si256((const __m256i *)(ptr[2 * q + 1] + off)), 1);
    __m512i u0 = _mm512_permutex2var_epi64(z[0], i01, z[1]); /* limbs 0|1 of elements 0-3 */
    __m512i u1 = _mm512_permutex2var_epi64(z[0], i23, z[1]); /* limbs 2|3 of elements 0-3 */
    __m512i v0 = _mm512_permutex2var_epi64(z[2], i01, z[3]); /* the same of elements 4-7 */
    __m512i v1 = _mm512_permutex2var_epi64(z[2], i23, z[3]);
    x[0] = _mm512_permutex2var_epi64(u0, lo, v0);
    x[1] = _mm512_permutex2var_epi64(u0, hi, v0);
    x[2] = _mm512_permutex2var_epi64(u1, lo, v1);
    x[3] = _mm512_permutex2var_epi64(u1, hi, v1);
}

/* The inverse of lanes_load64; lanes not in `keep` are not written. */
LANE_INLINE void lanes_store64(uint64_t *const ptr[8], unsigned off, const __m512i x[4], unsigned keep)
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
        if (keep & (1u << (2 * q)))
            _mm256_storeu_si256((__m256i *)(ptr[2 * q] + off), _mm512_castsi512_si256(z[q]));
        if (keep & (1u << (2 * q + 1)))
            _mm256_storeu_si256((__m256i *)(ptr[2 * q + 1] + off), _mm512_extracti64x4_epi64(z[q], 1));
    }
}
#else
LANE_INLINE __m512i lanes_addr(const uint64_t *const ptr[8], unsigned off)
{
    return _mm512_set_epi64((long long)(ptr[7] + off), (long long)(ptr[6] + off), (long long)(ptr[5] + off),
                            (long long)(ptr[4] + off), (long long)(ptr[3] + off), (long long)(ptr[2] + off),
                            (long long)(ptr[1] + off), (long long)(ptr[0] + off));
}

LANE_INLINE void lanes_load64(__m512i x[LANE_W], const uint64_t *const ptr[8], unsigned off)
{
    __m512i vi = lanes_addr(ptr, off);
    CUZK_UNROLL for (int k = 0; k < LANE_W; k++) x[k] =
        _mm512_i64gather_epi64(vi, (const void *)(uintptr_t)(8 * k), 1);
}

LANE_INLINE void lanes_store64(uint64_t *const ptr[8], unsigned off, const __m512i x[LANE_W], unsigned keep)
{
    __m512i vi = lanes_addr((const uint64_t *const *)ptr, off);
    CUZK_UNROLL for (int k = 0; k < LANE_W; k++)
        _mm512_mask_i64scatter_epi64((void *)(uintptr_t)(8 * k), (__mmask8)keep, vi, x[k], 1);
}
#endif

/* LANE_W x 64 -> LANE_N x 52 bits (a value below 2^(64 LANE_W)): limb k is bits
 * 52k .. 52k+51, from word 52k/64 and, across a word boundary, the next. */
LANE_INLINE vl vl_from64(const __m512i x[LANE_W])
{
    const __m512i M = _mm512_set1_epi64((long long)LANE_M52);
    vl r;
    CUZK_UNROLL for (int k = 0; k < LANE_N; k++)
    {
        const int w = 52 * k / 64, s = 52 * k % 64;
        __m512i v = _mm512_srli_epi64(x[w], s);
        if (s > 12 && w + 1 < LANE_W) v = _mm512_or_si512(v, _mm512_slli_epi64(x[w + 1], 64 - s));
        r.l[k] = k < LANE_N - 1 ? _mm512_and_si512(v, M) : v;
    }
    return r;
}

/* LANE_N x 52 (normalised, value below 2^(64 LANE_W)) -> LANE_W x 64: word w is the
 * OR of the limbs that overlap bits 64w .. 64w+63, each shifted into place. */
LANE_INLINE void vl_to64(__m512i x[LANE_W], vl a)
{
    CUZK_UNROLL for (int w = 0; w < LANE_W; w++)
    {
        __m512i v = _mm512_setzero_si512();
        CUZK_UNROLL for (int k = 0; k < LANE_N; k++)
        {
            const int sh = 52 * k - 64 * w;
            if (sh >= 0 && sh < 64)
                v = _mm512_or_si512(v, _mm512_slli_epi64(a.l[k], sh));
            else if (sh < 0 && sh > -52)
                v = _mm512_or_si512(v, _mm512_srli_epi64(a.l[k], -sh));
        }
        x[w] = v;
    }
}

LANE_INLINE vl vl_gather(const uint64_t *const ptr[8], unsigned off)
{
    __m512i x[LANE_W];
    lanes_load64(x, ptr, off);
    return vl_from64(x);
}

LANE_INLINE void vl_scatter(uint64_t *const ptr[8], unsigned off, vl a, unsigned keep)
{
    __m512i x[LANE_W];
    vl_to64(x, a);
    lanes_store64(ptr, off, x, keep);
}

/* The 8 consecutive field.h elements at a (or r). */
LANE_INLINE void lanes_seq(const uint64_t *ptr[8], const uint64_t *a)
{
    CUZK_UNROLL for (int j = 0; j < 8; j++) ptr[j] = a + LANE_W * j;
}

#if defined(LANE_G1) && defined(LANE_G2)
/* r[i] = fe_mul(a[i], b[i]) for count elements (a multiple of 8) through the lanes:
 * no conversion product, since a stays x·R (relimbed) and b is shifted to y·R' (b < p
 * < R' 2^-g), so their product divides by R' into xy·R, below (2^g e + 1)p < 2p. */
LANE_FN static void lanes_fq_mul_aos(uint64_t *r, const uint64_t *a, const uint64_t *b, size_t count)
{
    const uint64_t *pa[8], *pb[8], *pr[8];
    for (size_t i = 0; i + 8 <= count; i += 8) {
        lanes_seq(pa, a + LANE_W * i);
        lanes_seq(pb, b + LANE_W * i);
        lanes_seq(pr, r + LANE_W * i);
        vl x = vl_gather(pa, 0), y = vl_shl(vl_gather(pb, 0), LANE_G);
        vl_scatter((uint64_t *const *)pr, 0, vl_canon(vl_mont(x, y), 2), 0xff);
    }
}

/* ---- G1 and G2 alike: a lane value of the coordinate field ------------------------
 *
 * Fq (deg 1: c[0]) or Fq2 = Fq[u]/(u^2 + 1) (deg 2: c[0] + c[1] u). Every function
 * takes deg as a constant (it is inlined into lanes_batch_add_g1/_g2), so the loops over
 * components unroll and G1 carries no second component. Fq2 products by Karatsuba (3
 * double-width products; u^2 = -1) with one reduction a component, lazily: operands
 * below αp and βp (each component) give c0 < (αβe + 2)p and c1 < (2αβe + 1)p, not
 * reduced further, the batch below says how large they get. Against three reduced
 * lane products, the merged form saves a third of the reductions and leaves the two
 * left independent of each other: BLS12-381's G2 addition 0.72x, BN254's 0.9x. */
typedef struct {
    vl c[2];
} ve;

#define EACH(d, deg) CUZK_UNROLL for (unsigned d = 0; d < (deg); d++)

LANE_INLINE ve ve_mul(unsigned deg, ve a, ve b)
{
    ve r;
    if (deg == 1) {
        r.c[0] = vl_mont(a.c[0], b.c[0]);
    } else {
        /* c0 = a0 b0 - a1 b1 + p·R' (>= 0: a1 b1 < p·R' while the operands' bounds
         * multiply to less than R'/p, 84 on BN254) and c1 = a0 b1 + a1 b0 =
         * (a0 + a1)(b0 + b1) - a0 b0 - a1 b1 (exact, >= 0), each reduced once */
        __m512i t0[2 * LANE_N], t1[2 * LANE_N], t2[2 * LANE_N];
        vl_mul_wide(t0, a.c[0], b.c[0]);
        vl_mul_wide(t1, a.c[1], b.c[1]);
        vl_mul_wide(t2, vl_add(a.c[0], a.c[1]), vl_add(b.c[0], b.c[1]));
        CUZK_UNROLL for (int k = 0; k < 2 * LANE_N; k++)
        {
            t2[k] = _mm512_sub_epi64(t2[k], _mm512_add_epi64(t0[k], t1[k]));
            t0[k] = _mm512_sub_epi64(t0[k], t1[k]);
        }
        CUZK_UNROLL for (int k = 0; k < LANE_N; k++) t0[LANE_N + k] =
            _mm512_add_epi64(t0[LANE_N + k], _mm512_set1_epi64((long long)lane_p[k]));
        r.c[0] = vl_redc(t0);
        r.c[1] = vl_redc(t2);
    }
    return r;
}

/* a^2 from a and a2 = a·2^k, the product scaled as a·a2: on Fq2 (a0 + a1)(a0 - a1 +
 * LANE_SQR_KP·p) + 2 a0 a1 u, 2 lane products. a canonical, or with LANE_LAMBDA_LAZY
 * below (2.0001p, 1.0001p), which the 2p keeps a0 - a1 above 0 for. */
#ifdef LANE_LAMBDA_LAZY
#define LANE_SQR_KP  2
#define LANE_X3_C0_M 8 /* G2's lambda^2 c0 below 2.5p: x3's below 4.5p */
#else
#define LANE_SQR_KP  1
#define LANE_X3_C0_M 4
#endif
LANE_INLINE ve ve_sqr(unsigned deg, ve a, ve a2)
{
    ve r;
    if (deg == 1) {
        r.c[0] = vl_mont(a.c[0], a2.c[0]);
    } else {
        r.c[0] = vl_mont(vl_add(a2.c[0], a2.c[1]), vl_sub_plus(a.c[0], a.c[1], vl_pmul(LANE_SQR_KP)));
        r.c[1] = vl_mont(vl_add(a2.c[0], a2.c[0]), a.c[1]);
    }
    return r;
}

LANE_INLINE ve ve_sub_plus(unsigned deg, ve a, ve b, vl kp)
{
    EACH(d, deg) a.c[d] = vl_sub_plus(a.c[d], b.c[d], kp);
    return a;
}

LANE_INLINE ve ve_canon(unsigned deg, ve a, unsigned m)
{
    EACH(d, deg) a.c[d] = vl_canon(a.c[d], m);
    return a;
}

LANE_INLINE ve ve_shl(unsigned deg, ve a, unsigned s)
{
    EACH(d, deg) a.c[d] = vl_shl(a.c[d], s);
    return a;
}

LANE_INLINE ve ve_in(unsigned deg, ve a)
{
    EACH(d, deg) a.c[d] = vl_in(a.c[d]);
    return a;
}

LANE_INLINE ve ve_load(unsigned deg, const lane_block *a)
{
    ve r;
    EACH(d, deg) r.c[d] = vl_load(a + d);
    return r;
}

LANE_INLINE void ve_store(unsigned deg, lane_block *r, ve a)
{
    EACH(d, deg) vl_store(r + d, a.c[d]);
}

/* components c0, c1 at ptr[j] + off, + off + LANE_W */
LANE_INLINE ve ve_gather(unsigned deg, const uint64_t *const ptr[8], unsigned off)
{
    ve r;
    EACH(d, deg) r.c[d] = vl_gather(ptr, off + LANE_W * d);
    return r;
}

LANE_INLINE void ve_scatter(unsigned deg, uint64_t *const ptr[8], unsigned off, ve a, unsigned keep)
{
    EACH(d, deg) vl_scatter(ptr, off + LANE_W * d, a.c[d], keep);
}

/* ---- batch-affine addition -----------------------------------------------------------
 *
 * For i < count: A[bb[i]] += P_i (msm.c's bucket flush, ifma.h's contract), lane j of
 * block k being addition 8k + j. Each lane runs its chain of prefix products of the
 * denominators through the blocks; the eight lane totals are inverted together on the
 * scalar side (lanes_batch_inv8: 21 products and one inversion, in Fq or Fq2); then
 * the blocks are walked back as msm_aff_flush does. 6 lane products an addition on
 * G1 (prefix 1; back: 2 for the inverses, lambda, lambda^2, y3), 17 on G2 (3, 6, 3, 2,
 * 3).
 *
 * Forms: the coordinates stay in field.h's form x·R (only relimbed), and no product by
 * a conversion constant is spent on them: write v@s for the integer v·2^s mod p, so a
 * lane product maps a@s, b@t to ab@(s + t - 52 LANE_N), and vl_shl(·, g) maps v@s to
 * v@(s + g). With r = 64 LANE_W, r' = 52 LANE_N = r + g:
 *   den = Px + p - Bx @r; acc starts at 1@r' and pre_k = acc·den @(r' - g(k+1));
 *   the last, read as a field.h element, inverts on the scalar side to @(r + g(L-1))
 *   (L blocks), and vl_in's product by R'/R makes it inv_{L-1} @(r' + g(L-1)); then
 *   inv_k @(r' + gk), and 1/den_k = inv_k·pre_{k-1} @r' for every k;
 *   lambda = dy·(1/den) @r, l' = lambda << g @r'; lambda^2 = lambda·l' @r and
 *   y3 = l'·(Bx - x3) @r: the results are in field.h's form again.
 * Bounds (BN254's e = 0.0119; BLS12-381's e < 2^-35 makes each looser product smaller):
 *   inputs canonical; den, dy in (0, 2p).
 *   G1: every product of two operands below 2p is below 1.05p (acc, pre, inv, 1/den,
 *   lambda); l' < 2^g·1.05p < 17p; lambda^2 < 1.21p; x3 = lambda^2 + 2p - Bx - Px in
 *   (0, 3.21p), made canonical; Bx + p - x3 in (0, 2p); y3 = l'·that < 1.4p, plus p
 *   less By below 2.4p, made canonical.
 *   G2 (ve_mul's bounds; the largest αβ is 32, so c0's p·R' covers a1 b1): acc and
 *   inv stay below (2.05p, 1.1p) per component, 1/den and lambda likewise, lambda made
 *   canonical before the shift (l' < 16p); lambda^2: (l'0 + l'1)(l0 - l1 + p) < 1.76p
 *   and 2 l'0 l1 < 1.38p, so x3 = lambda^2 + 2p - Bx - Px is below 3.76p, made
 *   canonical; y3 = l'·(Bx + p - x3) below (2.38p, 1.76p), plus p less By below 3.38p,
 *   made canonical. Totals are made canonical before the scalar inversion.
 *   Every operand stays below 32p: limbs stay 52-bit after normalisation.
 *   LANE_LAMBDA_LAZY (BLS12-381, g = 32, e < 2^-35, R'/p > 2^35): lambda stays below
 *   (2.0001p, 1.0001p) as ve_mul left it (saving three conditional subtractions a
 *   component), so l' < 2^32·2.0001p < 2^414 and l'0 + l'1 < 2^415, below R';
 *   lambda^2: (l'0 + l'1)(l0 - l1 + 2p) < (2^32·3.0002·4.0001e + 1)p < 2.5p and
 *   2 l'0 l1 < 1.5p, so x3's c0 is below 4.5p (made canonical from 8p, one
 *   subtraction more) and c1 below 3.5p; y3 = l'·(Bx + p - x3) below (2.5p, 2p), plus
 *   p less By below 3.5p; c0's p·R' covers a1 b1 < 2^33 p^2. */

/* r[j] = a[j]^-1 for the 8 coordinate-field elements at a (cl = ec_cl(G) limbs each,
 * nonzero): Montgomery's trick around one ecf_inv (GMP's gcd). Inline, so that G is a
 * constant and field.h's products are the specialised ones: with G unknown they took
 * half again the whole batch's time on BN254 G2. */
LANE_INLINE void lanes_batch_inv8(const curve_group *G, uint64_t *r, const uint64_t *a)
{
    const unsigned cl = ec_cl(G);
    uint64_t pre[8][EC_MAX_CL], t[EC_MAX_CL];
    ecf_copy(G, pre[0], a);
    for (unsigned j = 1; j < 8; j++) ecf_mul(G, pre[j], pre[j - 1], a + cl * j);
    ecf_inv(G, t, pre[7]);
    for (unsigned j = 7; j > 0; j--) {
        ecf_mul(G, r + cl * j, t, pre[j - 1]); /* 1/a_j */
        ecf_mul(G, t, t, a + cl * j);          /* 1/(a_0 .. a_{j-1}) */
    }
    ecf_copy(G, r, t);
}

/* Points and buckets of block k (al limbs a point); returns the lanes that are real
 * additions. P_i is at bp + al·i, or with bp NULL at (rx[i], ry[i]) with y negated
 * where neg[i] (the lanes in *negm). The others read pad_p = (1, 0) and pad_b = (0, 0),
 * so their denominator is 1, never 0, and are never written. */
static inline unsigned lanes_block_ptrs(const uint64_t *pp[8], const uint64_t *py[8], unsigned *negm,
                                        uint64_t *bq[8], const uint64_t *pad_p, uint64_t *pad_b, uint64_t *A,
                                        const uint32_t *bb, const uint64_t *bp, const uint64_t *const *rx,
                                        const uint64_t *const *ry, const uint8_t *neg, size_t count, size_t k,
                                        unsigned al)
{
    unsigned keep = 0, nm = 0;
    for (unsigned j = 0; j < 8; j++) {
        size_t i = 8 * k + j;
        if (i < count) {
            if (bp) {
                pp[j] = bp + al * i;
                py[j] = pp[j] + al / 2;
            } else {
                pp[j] = rx[i];
                py[j] = ry[i];
                nm |= (unsigned)(neg[i] != 0) << j;
            }
            bq[j] = A + al * (size_t)bb[i];
            keep |= 1u << j;
        } else {
            pp[j] = pad_p;
            py[j] = pad_p + al / 2;
            bq[j] = pad_b;
        }
    }
    *negm = nm;
    return keep;
}

static inline void lanes_prefetch_block(uint64_t *A, const uint32_t *bb, size_t count, size_t k, unsigned al)
{
    for (size_t i = 8 * k; i < 8 * k + 8 && i < count; i++) {
        const uint64_t *b = A + al * (size_t)bb[i];
        for (unsigned o = 0; o < al; o += 8) __builtin_prefetch(b + o, 1);
        __builtin_prefetch(b + al - 1, 1);
    }
}

/* scratch: 3·deg lane blocks a block of 8 additions (the prefix product, Px, Bx: the
 * walk back reads them instead of gathering and relimbing again; on BN254, where a
 * gather is a cheap transpose, both ways measured the same). */
LANE_INLINE void lanes_batch_add(const curve_group *G, uint64_t *A, const uint32_t *bb, const uint64_t *bp,
                                 const uint64_t *const *rx, const uint64_t *const *ry, const uint8_t *neg,
                                 size_t count, void *scratch)
{
    const unsigned deg = G->deg, cl = deg * LANE_W, al = 2 * cl, sb = 3 * deg;
    lane_block *sc = scratch;
    const size_t L = (count + 7) / 8;
    const uint64_t *pp[8], *py[8];
    uint64_t *bq[8];
    unsigned negm;
    uint64_t pad_p[4 * LANE_W] = { 0 }, pad_b[4 * LANE_W] = { 0 };
    if (count == 0) return;
    fe_copy(LANE_F, pad_p, LANE_F->one);
    const vl P1 = vl_pmul(1), P2 = vl_pmul(2);
    const uint64_t *const *bqc = (const uint64_t *const *)bq;

    ve acc;
    acc.c[0] = vl_const(lane_one);
    acc.c[1] = vl_pmul(0);
    for (size_t k = 0; k < L; k++) {
        if (k + 1 < L) lanes_prefetch_block(A, bb, count, k + 1, al);
        lanes_block_ptrs(pp, py, &negm, bq, pad_p, pad_b, A, bb, bp, rx, ry, neg, count, k, al);
        ve px = ve_gather(deg, pp, 0), bx = ve_gather(deg, bqc, 0);
        acc = ve_mul(deg, acc, ve_sub_plus(deg, px, bx, P1));
        ve_store(deg, sc + sb * k, acc);
        ve_store(deg, sc + sb * k + deg, px);
        ve_store(deg, sc + sb * k + 2 * deg, bx);
    }

    /* the eight lane totals (nonzero: no denominator is), canonical, inverted */
    uint64_t tot[8 * 2 * LANE_W], inv8[8 * 2 * LANE_W], *pt[8];
    const uint64_t *pi[8];
    for (unsigned j = 0; j < 8; j++) {
        pt[j] = tot + cl * j;
        pi[j] = inv8 + cl * j;
    }
    ve_scatter(deg, pt, 0, ve_canon(deg, acc, deg == 1 ? 2 : 8), 0xff);
    lanes_batch_inv8(G, inv8, tot);
    ve inv = ve_in(deg, ve_gather(deg, pi, 0));

    for (size_t k = L; k-- > 0;) {
        if (k > 0) lanes_prefetch_block(A, bb, count, k - 1, al);
        unsigned keep =
            lanes_block_ptrs(pp, py, &negm, bq, pad_p, pad_b, A, bb, bp, rx, ry, neg, count, k, al);
        ve px = ve_load(deg, sc + sb * k + deg), bx = ve_load(deg, sc + sb * k + 2 * deg);
        ve di;
        if (k > 0) {
            di = ve_mul(deg, inv, ve_load(deg, sc + sb * (k - 1))); /* 1/den_k @r' */
            inv = ve_mul(deg, inv, ve_sub_plus(deg, px, bx, P1));   /* 1/(den_0 .. den_{k-1}) */
        } else {
            di = inv;
        }
        ve by = ve_gather(deg, bqc, cl);
        ve pyv = ve_gather(deg, py, 0);
        ve dy = ve_sub_plus(deg, pyv, by, P1); /* Py + p - By */
        if (!bp && negm) {                     /* -Py: 2p - Py - By, in (0, 2p] like the above */
            EACH(d, deg)
            {
                vl t = vl_sub2_plus(vl_pmul(0), pyv.c[d], by.c[d], P2);
                CUZK_UNROLL for (int q = 0; q < LANE_N; q++) dy.c[d].l[q] =
                    _mm512_mask_blend_epi64((__mmask8)negm, dy.c[d].l[q], t.l[q]);
            }
        }
        ve l = ve_mul(deg, dy, di); /* lambda @r */
#ifndef LANE_LAMBDA_LAZY
        if (deg == 2) l = ve_canon(deg, l, 8); /* below 2^r for the shift (G1's is already) */
#endif
        ve l2 = ve_shl(deg, l, LANE_G); /* lambda @r' */
        ve x3 = ve_sqr(deg, l, l2);     /* lambda^2 @r */
        EACH(d, deg)
        { /* - Bx - Px, canonical (G2's c0 from below LANE_X3_C0_M·p) */
            const unsigned m = deg == 2 && d == 0 ? LANE_X3_C0_M : 4;
            x3.c[d] = vl_canon(vl_sub2_plus(x3.c[d], bx.c[d], px.c[d], P2), m);
        }
        ve y3 = ve_mul(deg, l2, ve_sub_plus(deg, bx, x3, P1)); /* lambda (Bx - x3) @r */
        y3 = ve_canon(deg, ve_sub_plus(deg, y3, by, P1), deg == 1 ? 4 : 8);
        ve_scatter(deg, bq, 0, x3, keep);
        ve_scatter(deg, bq, cl, y3, keep);
    }
}

/* The two entry points (each with deg, and so every loop bound, a constant). */
LANE_FN static void lanes_batch_add_g1(uint64_t *A, const uint32_t *bb, const uint64_t *bp, size_t count,
                                       void *scratch)
{
    lanes_batch_add(&LANE_G1, A, bb, bp, NULL, NULL, NULL, count, scratch);
}

LANE_FN static void lanes_batch_add_g2(uint64_t *A, const uint32_t *bb, const uint64_t *bp, size_t count,
                                       void *scratch)
{
    lanes_batch_add(&LANE_G2, A, bb, bp, NULL, NULL, NULL, count, scratch);
}

/* The same with P_i by reference (ifma.h's ifma_batch_add_refs). */
LANE_FN static void lanes_batch_add_refs_g1(uint64_t *A, const uint32_t *bb, const uint64_t *const *px,
                                            const uint64_t *const *py, const uint8_t *neg, size_t count,
                                            void *scratch)
{
    lanes_batch_add(&LANE_G1, A, bb, NULL, px, py, neg, count, scratch);
}

LANE_FN static void lanes_batch_add_refs_g2(uint64_t *A, const uint32_t *bb, const uint64_t *const *px,
                                            const uint64_t *const *py, const uint8_t *neg, size_t count,
                                            void *scratch)
{
    lanes_batch_add(&LANE_G2, A, bb, NULL, px, py, neg, count, scratch);
}
#endif /* LANE_G1 && LANE_G2 */
