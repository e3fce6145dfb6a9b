/* ifma.c — the AVX-512 IFMA lanes on BN254 (ifma_lanes.h instantiated with 5 limbs of
 * 52 bits), ifma.h's fq8 API over them, and the batch-affine addition's entry points
 * for every group: BN254 here, BLS12-381 through zk/ifma381.c, the portable form for
 * both. Layout, forms and bounds: zk/ifma.h and zk/ifma_lanes.h.
 *
 * Everything vector is compiled for AVX-512 with __attribute__((target)) so the rest
 * of the build stays x86-64-v3; ifma_available() says whether it may run. */
#include "zk/ifma.h"

#include <stdlib.h>
#include <string.h>

#include "zk/curve.h"
#include "zk/field.h"
#include "zk/ifma381.h"
#include "base/barrier.h"

void ifma_fq_inv(uint64_t r[4], const uint64_t a[4])
{
    fe_inv_gcd(&FIELD_BN254_FQ, r, a);
}

/* The lanes' 52-bit limbs for a field of n 64-bit limbs: the fewest with room above
 * p's 64n bits (5 for BN254, 8 for BLS12-381). */
static size_t lane_limbs(const curve_group *G)
{
    return 64 * fe_n(G->F) / 52 + 1;
}

size_t ifma_batch_scratch_bytes(const curve_group *G, size_t count)
{
    size_t blocks = (count + IFMA_LANES - 1) / IFMA_LANES;
    size_t ref = count * ec_cl(G) * sizeof(uint64_t);                                 /* prefix products */
    size_t vec = blocks * 3 * G->deg * lane_limbs(G) * IFMA_LANES * sizeof(uint64_t); /* prefix, Px, Bx */
    return ((ref > vec ? ref : vec) + 63) / 64 * 64; /* a valid aligned_alloc size */
}

/* msm.c's msm_aff_flush: prefix products of the denominators, one inversion
 * (ecf_inv: GMP's gcd), then back to front 1/den_i, lambda, x3, y3. P_i at bp + 2cl·i,
 * or with bp NULL at (px[i], py[i]), y negated where neg[i]. */
static inline __attribute__((always_inline)) void batch_add_ref(const curve_group *G, uint64_t *A,
                                                                const uint32_t *bb, const uint64_t *bp,
                                                                const uint64_t *const *px,
                                                                const uint64_t *const *py, const uint8_t *neg,
                                                                size_t count, void *scratch)
{
    const unsigned cl = ec_cl(G);
    uint64_t *pre = scratch;
    uint64_t inv[EC_MAX_CL], di[EC_MAX_CL], l[EC_MAX_CL], x3[EC_MAX_CL], t[EC_MAX_CL], d[EC_MAX_CL];
    uint64_t ny[EC_MAX_CL];
    if (count == 0) return;
    for (size_t i = 0; i < count; i++) {
        ecf_sub(G, d, bp ? bp + 2 * cl * i : px[i], A + 2 * cl * (size_t)bb[i]);
        if (i == 0)
            ecf_copy(G, pre, d);
        else
            ecf_mul(G, pre + cl * i, pre + cl * (i - 1), d);
    }
    ecf_inv(G, inv, pre + cl * (count - 1));
    for (size_t i = count; i-- > 0;) {
        uint64_t *Bx = A + 2 * cl * (size_t)bb[i], *By = Bx + cl;
        const uint64_t *Px = bp ? bp + 2 * cl * i : px[i], *Py = bp ? Px + cl : py[i];
        if (!bp && neg[i]) {
            ecf_neg(G, ny, Py);
            Py = ny;
        }
        if (i > 0) {
            ecf_sub(G, d, Px, Bx);
            ecf_mul(G, di, inv, pre + cl * (i - 1)); /* 1/den_i */
            ecf_mul(G, inv, inv, d);                 /* 1/(den_0 ... den_{i-1}) */
        } else {
            ecf_copy(G, di, inv);
        }
        ec_aff_add_inv(G, Bx, By, Px, Py, di, t, l, x3);
    }
}

static inline __attribute__((always_inline)) void batch_add_ref_bp(const curve_group *G, uint64_t *A,
                                                                   const uint32_t *bb, const uint64_t *bp,
                                                                   size_t count, void *scratch)
{
    batch_add_ref(G, A, bb, bp, NULL, NULL, NULL, count, scratch);
}

static inline __attribute__((always_inline)) void
batch_add_ref_refs(const curve_group *G, uint64_t *A, const uint32_t *bb, const uint64_t *const *px,
                   const uint64_t *const *py, const uint8_t *neg, size_t count, void *scratch)
{
    batch_add_ref(G, A, bb, NULL, px, py, neg, count, scratch);
}

void ifma_batch_add_ref(const curve_group *G, uint64_t *A, const uint32_t *bb, const uint64_t *bp,
                        size_t count, void *scratch)
{
    CURVE_DISPATCH(G, batch_add_ref_bp, A, bb, bp, count, scratch);
}

void ifma_batch_add_refs_ref(const curve_group *G, uint64_t *A, const uint32_t *bb, const uint64_t *const *px,
                             const uint64_t *const *py, const uint8_t *neg, size_t count, void *scratch)
{
    CURVE_DISPATCH(G, batch_add_ref_refs, A, bb, px, py, neg, count, scratch);
}

#if defined(__x86_64__)
static int ifma_state = -1; /* -1 unknown, 0 no, 1 yes; written once, same value by any thread */

bool ifma_available(void)
{
    int s = barrier_load_relaxed(&ifma_state);
    if (s < 0) {
        const char *e = getenv("CUZK_NO_IFMA");
        __builtin_cpu_init();
        /* libgcc's feature bits include the OS check (XCR0 enables the zmm state) */
        s = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
            __builtin_cpu_supports("avx512ifma") && !(e && strcmp(e, "1") == 0);
        barrier_store_relaxed(&ifma_state, s);
    }
    return s == 1;
}

/* BN254 Fq: p, R' = 2^260, R = 2^256, all in radix 2^52 (test_ifma checks the
 * products they make against fe_mul and GMP). */
#define LANE_N  IFMA_LIMBS
#define LANE_W  4
#define LANE_F  (&FIELD_BN254_FQ)
#define LANE_G1 G1_BN254
#define LANE_G2 G2_BN254
#define LANE_PINV \
    (UINT64_C(0x87d20782e4866389) & ((UINT64_C(1) << 52) - 1)) /* field.h's -p^-1, low 52 bits */
typedef ifma_fq8 lane_block;
static const uint64_t lane_p[LANE_N] = { 0x08c16d87cfd47ULL, 0x916871ca8d3c2ULL, 0x181585d97816aULL,
                                         0xa029b85045b68ULL, 0x030644e72e131ULL };
static const uint64_t lane_one[LANE_N] = { 0x20880f6fce4b4ULL, 0x49baa989a8455ULL, 0x18f014a498908ULL,
                                           0x724f85a9201d8ULL, 0x01f16424e1bb7ULL }; /* 2^260 mod p */
static const uint64_t lane_c_in[LANE_N] = { 0xb0f2afaec667aULL, 0xed9626b0fffbdULL, 0x9e2a0fcad825aULL,
                                            0xe357276f48b70ULL, 0x00d791464ef86ULL }; /* 2^264 mod p */
static const uint64_t lane_c_out[LANE_N] = { 0xd438dc58f0d9dULL, 0x28f5c70b3dd35ULL, 0x879462c0a78ebULL,
                                             0xdf2f666ea36f7ULL, 0x00e0a77c19a07ULL }; /* 2^256 mod p */
#include "ifma_lanes.h"

LANE_FN void ifma_fq8_load(ifma_fq8 *r, const uint64_t *a)
{
    const uint64_t *pa[8];
    lanes_seq(pa, a);
    vl_store(r, vl_in(vl_gather(pa, 0)));
}

LANE_FN void ifma_fq8_store(uint64_t *r, const ifma_fq8 *a)
{
    const uint64_t *pr[8];
    lanes_seq(pr, r);
    vl_scatter((uint64_t *const *)pr, 0, vl_out(vl_load(a)), 0xff);
}

LANE_FN void ifma_fq8_mul(ifma_fq8 *r, const ifma_fq8 *a, const ifma_fq8 *b)
{
    vl_store(r, vl_mont(vl_load(a), vl_load(b)));
}

/* [0,2p) + [0,2p) < 4p, less 2p where possible */
LANE_FN void ifma_fq8_add(ifma_fq8 *r, const ifma_fq8 *a, const ifma_fq8 *b)
{
    vl_store(r, vl_csub(vl_add(vl_load(a), vl_load(b)), vl_pmul(2)));
}

/* a - b + 2p in (0, 4p), less 2p where possible */
LANE_FN void ifma_fq8_sub(ifma_fq8 *r, const ifma_fq8 *a, const ifma_fq8 *b)
{
    vl_store(r, vl_csub(vl_sub_plus(vl_load(a), vl_load(b), vl_pmul(2)), vl_pmul(2)));
}

LANE_FN void ifma_fq8_mul_n(ifma_fq8 *r, const ifma_fq8 *a, const ifma_fq8 *b, size_t n)
{
    for (size_t k = 0; k < n; k++) vl_store(r + k, vl_mont(vl_load(a + k), vl_load(b + k)));
}

void ifma_fq_mul_aos(uint64_t *r, const uint64_t *a, const uint64_t *b, size_t count)
{
    lanes_fq_mul_aos(r, a, b, count);
}

LANE_FN void ifma_fq2x8_mul(ifma_fq8 r[2], const ifma_fq8 a[2], const ifma_fq8 b[2])
{
    ve_store(2, r, ve_mul(2, ve_load(2, a), ve_load(2, b)));
}

LANE_FN void ifma_fq2x8_sqr(ifma_fq8 r[2], const ifma_fq8 a[2])
{
    ve x = ve_load(2, a);
    ve_store(2, r, ve_sqr(2, x, x));
}

void ifma_batch_add(const curve_group *G, uint64_t *A, const uint32_t *bb, const uint64_t *bp, size_t count,
                    void *scratch)
{
    if (!ifma_available())
        ifma_batch_add_ref(G, A, bb, bp, count, scratch);
    else if (G->id == CURVE_G1_BN254)
        lanes_batch_add_g1(A, bb, bp, count, scratch);
    else if (G->id == CURVE_G2_BN254)
        lanes_batch_add_g2(A, bb, bp, count, scratch);
    else
        ifma381_batch_add(G, A, bb, bp, count, scratch);
}

void ifma_batch_add_refs(const curve_group *G, uint64_t *A, const uint32_t *bb, const uint64_t *const *px,
                         const uint64_t *const *py, const uint8_t *neg, size_t count, void *scratch)
{
    if (!ifma_available())
        ifma_batch_add_refs_ref(G, A, bb, px, py, neg, count, scratch);
    else if (G->id == CURVE_G1_BN254)
        lanes_batch_add_refs_g1(A, bb, px, py, neg, count, scratch);
    else if (G->id == CURVE_G2_BN254)
        lanes_batch_add_refs_g2(A, bb, px, py, neg, count, scratch);
    else
        ifma381_batch_add_refs(G, A, bb, px, py, neg, count, scratch);
}
#else
bool ifma_available(void)
{
    return false;
}

/* Without x86-64 only the portable form exists (ifma_available() says so). */
void ifma_batch_add(const curve_group *G, uint64_t *A, const uint32_t *bb, const uint64_t *bp, size_t count,
                    void *scratch)
{
    ifma_batch_add_ref(G, A, bb, bp, count, scratch);
}

void ifma_batch_add_refs(const curve_group *G, uint64_t *A, const uint32_t *bb, const uint64_t *const *px,
                         const uint64_t *const *py, const uint8_t *neg, size_t count, void *scratch)
{
    ifma_batch_add_refs_ref(G, A, bb, px, py, neg, count, scratch);
}
#endif
