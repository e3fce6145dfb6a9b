/* ifma381.c — the AVX-512 IFMA lanes on BLS12-381 (ifma_lanes.h instantiated with 8
 * limbs of 52 bits) and its batch-affine additions, called by ifma.c's
 * ifma_batch_add. Forms and bounds: zk/ifma_lanes.h. */
#include "zk/ifma381.h"

#include "zk/curve.h"
#include "zk/field.h"

#if defined(__x86_64__)
/* BLS12-381 Fq: p, R' = 2^416, R = 2^384, all in radix 2^52 (test_ifma checks the
 * products they make against fe_mul and GMP). */
#define LANE_N  8
#define LANE_W  6
#define LANE_F  (&FIELD_BLS12_381_FQ)
#define LANE_G1 G1_BLS12_381
#define LANE_G2 G2_BLS12_381
/* G2's lambda is not made canonical before the shift and the square: with R'/p > 2^35
 * the unreduced value fits (ifma_lanes.h's bounds), three conditional subtractions a
 * component fewer. */
#define LANE_LAMBDA_LAZY
#define LANE_PINV \
    (UINT64_C(0x89f3fffcfffcfffd) & ((UINT64_C(1) << 52) - 1)) /* field.h's -p^-1, low 52 bits */
typedef struct {
    uint64_t l[LANE_N][8];
} __attribute__((aligned(64))) lane_block;
static const uint64_t lane_p[LANE_N] = { 0xeffffffffaaabULL, 0xfeb153ffffb9fULL, 0x6b0f6241eabffULL,
                                         0x12bf6730d2a0fULL, 0x764774b84f385ULL, 0x1ba7b6434bacdULL,
                                         0x1ea397fe69a4bULL, 0x000000001a011ULL };
static const uint64_t lane_one[LANE_N] = { 0x6480ea8e9b9afULL, 0x65766c8fe444fULL, 0x8b540fea96f7dULL,
                                           0x3b2ee82efd422ULL, 0xa6723e5f0ade5ULL, 0xff6eb6fdd4230ULL,
                                           0xe06ef23c24a25ULL, 0x0000000014c8eULL }; /* 2^416 mod p */
static const uint64_t lane_c_in[LANE_N] = { 0x7fde37dba9366ULL, 0x4e27525bc342bULL, 0x1f5b1e9778489ULL,
                                            0xb872b2b91b9dcULL, 0xb206f497dfcafULL, 0x4137cc89a9b0bULL,
                                            0xd9d20d7e39959ULL, 0x000000000411cULL }; /* 2^448 mod p */
static const uint64_t lane_c_out[LANE_N] = { 0x900000002fffdULL, 0x0bc40c0002760ULL, 0x3c758baebf400ULL,
                                             0x57455f4898575ULL, 0xd77ce58537052ULL, 0x071a97a256ec6ULL,
                                             0xec3fa80e4935cULL, 0x0000000015f65ULL }; /* 2^384 mod p */
#include "ifma_lanes.h"

void ifma381_fq_mul_aos(uint64_t *r, const uint64_t *a, const uint64_t *b, size_t count)
{
    lanes_fq_mul_aos(r, a, b, count);
}

void ifma381_batch_add(const curve_group *G, uint64_t *A, const uint32_t *bb, const uint64_t *bp,
                       size_t count, void *scratch)
{
    if (G->deg == 1)
        lanes_batch_add_g1(A, bb, bp, count, scratch);
    else
        lanes_batch_add_g2(A, bb, bp, count, scratch);
}

void ifma381_batch_add_refs(const curve_group *G, uint64_t *A, const uint32_t *bb, const uint64_t *const *px,
                            const uint64_t *const *py, const uint8_t *neg, size_t count, void *scratch)
{
    if (G->deg == 1)
        lanes_batch_add_refs_g1(A, bb, px, py, neg, count, scratch);
    else
        lanes_batch_add_refs_g2(A, bb, px, py, neg, count, scratch);
}

/* The test hook of ifma381.h: lanes_batch_add's G2 walk-back from lambda on, step by
 * step with the same kernels and constants, each stage stored so a test can hold it
 * to the bounds ifma_lanes.h states (the step itself has no stage to read them from). */
LANE_FN void ifma381_test_g2_from_lambda(void *out, const void *in)
{
    const lane_block *b = in;
    lane_block *o = out;
    const vl P1 = vl_pmul(1), P2 = vl_pmul(2);
    ve l = ve_load(2, b), bx = ve_load(2, b + 2), px = ve_load(2, b + 4), by = ve_load(2, b + 6);
    ve l2 = ve_shl(2, l, LANE_G), sq = ve_sqr(2, l, l2), x3p, x3;
    EACH(d, 2)
    {
        x3p.c[d] = vl_sub2_plus(sq.c[d], bx.c[d], px.c[d], P2);
        x3.c[d] = vl_canon(x3p.c[d], d == 0 ? LANE_X3_C0_M : 4);
    }
    ve y3m = ve_mul(2, l2, ve_sub_plus(2, bx, x3, P1)), y3p = ve_sub_plus(2, y3m, by, P1);
    const ve stages[7] = { l2, sq, x3p, x3, y3m, y3p, ve_canon(2, y3p, 8) };
    for (unsigned s = 0; s < 7; s++) ve_store(2, o + 2 * s, stages[s]);
}
#else
void ifma381_fq_mul_aos(uint64_t *r, const uint64_t *a, const uint64_t *b, size_t count)
{
    for (size_t i = 0; i < count; i++) fe_mul(&FIELD_BLS12_381_FQ, r + 6 * i, a + 6 * i, b + 6 * i);
}
#endif
