/* gec.h — elliptic-curve point arithmetic for the CUDA kernels (and the CPU emulation
 * test), over gf.h. The group is a compile-time `enum curve_id`; formulas and layouts
 * are curve.h's (a = 0; affine x || y with (0,0) = infinity; jacobian X || Y || Z with
 * Z = 0 = infinity), so results compare with the CPU's ec_* functions directly. */
#ifndef CUZK_CUDA_GEC_H
#define CUZK_CUDA_GEC_H

#include "cuzk/curve.h"
#include "gf.h"

#define GEC_MAX_CL  12
#define GEC_MAX_AFF 24
#define GEC_MAX_JAC 36

CUZK_HD enum field_id gec_field(enum curve_id g)
{
    return g == CURVE_G1_BN254 || g == CURVE_G2_BN254 ? FIELD_ID_BN254_FQ : FIELD_ID_BLS12_381_FQ;
}
CUZK_HD unsigned gec_deg(enum curve_id g)
{
    return g == CURVE_G2_BN254 || g == CURVE_G2_BLS12_381 ? 2u : 1u;
}
CUZK_HD unsigned gec_cl(enum curve_id g)
{
    return gec_deg(g) * gf_n(gec_field(g));
}

/* coordinate field: Fq or Fq2 */
CUZK_HD void gecf_add(enum curve_id g, uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    if (gec_deg(g) == 1)
        gf_add(gec_field(g), r, a, b);
    else
        gf2_add(gec_field(g), r, a, b);
}
CUZK_HD void gecf_sub(enum curve_id g, uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    if (gec_deg(g) == 1)
        gf_sub(gec_field(g), r, a, b);
    else
        gf2_sub(gec_field(g), r, a, b);
}
CUZK_HD void gecf_neg(enum curve_id g, uint64_t *r, const uint64_t *a)
{
    if (gec_deg(g) == 1)
        gf_neg(gec_field(g), r, a);
    else
        gf2_neg(gec_field(g), r, a);
}
CUZK_HD void gecf_dbl(enum curve_id g, uint64_t *r, const uint64_t *a)
{
    gecf_add(g, r, a, a);
}
CUZK_HD void gecf_mul(enum curve_id g, uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    if (gec_deg(g) == 1)
        gf_mul(gec_field(g), r, a, b);
    else
        gf2_mul(gec_field(g), r, a, b);
}
CUZK_HD void gecf_sqr(enum curve_id g, uint64_t *r, const uint64_t *a)
{
    if (gec_deg(g) == 1)
        gf_sqr(gec_field(g), r, a);
    else
        gf2_sqr(gec_field(g), r, a);
}
CUZK_HD bool gecf_is_zero(enum curve_id g, const uint64_t *a)
{
    uint64_t acc = 0;
    CUZK_UNROLL for (unsigned i = 0; i < gec_cl(g); i++) acc |= a[i];
    return acc == 0;
}
CUZK_HD void gecf_copy(enum curve_id g, uint64_t *r, const uint64_t *a)
{
    CUZK_UNROLL for (unsigned i = 0; i < gec_cl(g); i++) r[i] = a[i];
}
/* Montgomery one in the coordinate field (c1 = 0 for Fq2) */
CUZK_HD void gecf_set_one(enum curve_id g, uint64_t *r)
{
    const unsigned n = gf_n(gec_field(g));
    CUZK_UNROLL for (unsigned i = 0; i < gec_cl(g); i++) r[i] = i < n ? gf_one(gec_field(g), i) : 0;
}

CUZK_HD bool gec_aff_is_inf(enum curve_id g, const uint64_t *p)
{
    uint64_t acc = 0;
    CUZK_UNROLL for (unsigned i = 0; i < 2 * gec_cl(g); i++) acc |= p[i];
    return acc == 0;
}
CUZK_HD bool gec_jac_is_inf(enum curve_id g, const uint64_t *p)
{
    return gecf_is_zero(g, p + 2 * gec_cl(g));
}

/* Infinity as all-zero limbs: what cudaMemset(0) produces, so zeroed buckets are
 * infinity; every formula tests Z only. */
CUZK_HD void gec_jac_set_inf(enum curve_id g, uint64_t *r)
{
    CUZK_UNROLL for (unsigned i = 0; i < 3 * gec_cl(g); i++) r[i] = 0;
}
CUZK_HD void gec_jac_copy(enum curve_id g, uint64_t *r, const uint64_t *p)
{
    CUZK_UNROLL for (unsigned i = 0; i < 3 * gec_cl(g); i++) r[i] = p[i];
}
CUZK_HD void gec_jac_from_aff(enum curve_id g, uint64_t *r, const uint64_t *a)
{
    const unsigned cl = gec_cl(g);
    if (gec_aff_is_inf(g, a)) {
        gec_jac_set_inf(g, r);
        return;
    }
    gecf_copy(g, r, a);
    gecf_copy(g, r + cl, a + cl);
    gecf_set_one(g, r + 2 * cl);
}
/* affine negation in place of a copy: (x, -y); infinity stays (0, 0) */
CUZK_HD void gec_aff_neg(enum curve_id g, uint64_t *r, const uint64_t *p)
{
    const unsigned cl = gec_cl(g);
    gecf_copy(g, r, p);
    gecf_neg(g, r + cl, p + cl);
}

/* The point formulas exist once per group, out of line (GEC_OUTLINE below): inlining
 * every addition into every kernel and test made one file a 5+ minute compile (nvcc
 * and gcc alike) for code that is mostly the same few functions. The field products
 * inside them stay inline. gec_add / gec_add_aff / gec_dbl dispatch on the constant
 * group to that group's copy. */
CUZK_HD void gec_dbl(enum curve_id g, uint64_t *r, const uint64_t *p);

/* dbl-2009-l, 2M + 5S (curve.h's ec_jac_dbl). */
CUZK_HD void gec_dbl_body(enum curve_id g, uint64_t *r, const uint64_t *p)
{
    const unsigned cl = gec_cl(g);
    const uint64_t *X1 = p, *Y1 = p + cl, *Z1 = p + 2 * cl;
    uint64_t A[GEC_MAX_CL], B[GEC_MAX_CL], C[GEC_MAX_CL], D[GEC_MAX_CL], E[GEC_MAX_CL], F[GEC_MAX_CL],
        Z3[GEC_MAX_CL];
    if (gec_jac_is_inf(g, p)) {
        gec_jac_set_inf(g, r);
        return;
    }
    gecf_sqr(g, A, X1);
    gecf_sqr(g, B, Y1);
    gecf_sqr(g, C, B);
    gecf_add(g, D, X1, B);
    gecf_sqr(g, D, D);
    gecf_sub(g, D, D, A);
    gecf_sub(g, D, D, C);
    gecf_dbl(g, D, D);
    gecf_dbl(g, E, A);
    gecf_add(g, E, E, A);
    gecf_sqr(g, F, E);
    gecf_mul(g, Z3, Y1, Z1);
    gecf_dbl(g, Z3, Z3);
    gecf_sub(g, r, F, D);
    gecf_sub(g, r, r, D);
    gecf_sub(g, D, D, r);
    gecf_mul(g, D, E, D);
    gecf_dbl(g, C, C);
    gecf_dbl(g, C, C);
    gecf_dbl(g, C, C);
    gecf_sub(g, r + cl, D, C);
    gecf_copy(g, r + 2 * cl, Z3);
}

/* r = p + q, q affine: madd-2007-bl (curve.h's ec_jac_add_aff), all special cases.
 * r may alias p. */
CUZK_HD void gec_add_aff_body(enum curve_id g, uint64_t *r, const uint64_t *p, const uint64_t *q)
{
    const unsigned cl = gec_cl(g);
    const uint64_t *X1 = p, *Y1 = p + cl, *Z1 = p + 2 * cl, *X2 = q, *Y2 = q + cl;
    uint64_t Z1Z1[GEC_MAX_CL], U2[GEC_MAX_CL], S2[GEC_MAX_CL], H[GEC_MAX_CL], HH[GEC_MAX_CL], I[GEC_MAX_CL],
        J[GEC_MAX_CL], rr[GEC_MAX_CL], V[GEC_MAX_CL], t[GEC_MAX_CL];
    if (gec_aff_is_inf(g, q)) {
        if (r != p) gec_jac_copy(g, r, p);
        return;
    }
    if (gec_jac_is_inf(g, p)) {
        gec_jac_from_aff(g, r, q);
        return;
    }
    gecf_sqr(g, Z1Z1, Z1);
    gecf_mul(g, U2, X2, Z1Z1);
    gecf_mul(g, S2, Y2, Z1);
    gecf_mul(g, S2, S2, Z1Z1);
    gecf_sub(g, H, U2, X1);
    gecf_sub(g, rr, S2, Y1);
    if (gecf_is_zero(g, H)) {
        if (gecf_is_zero(g, rr)) {
            uint64_t pj[GEC_MAX_JAC];
            gec_jac_from_aff(g, pj, q);
            gec_dbl(g, r, pj);
        } else {
            gec_jac_set_inf(g, r);
        }
        return;
    }
    gecf_dbl(g, rr, rr);
    gecf_sqr(g, HH, H);
    gecf_dbl(g, I, HH);
    gecf_dbl(g, I, I);
    gecf_mul(g, J, H, I);
    gecf_mul(g, V, X1, I);
    gecf_add(g, t, Z1, H);
    gecf_sqr(g, t, t);
    gecf_sub(g, t, t, Z1Z1);
    gecf_sub(g, r + 2 * cl, t, HH);
    gecf_mul(g, t, Y1, J);
    gecf_dbl(g, t, t);
    gecf_sqr(g, U2, rr);
    gecf_sub(g, U2, U2, J);
    gecf_sub(g, U2, U2, V);
    gecf_sub(g, U2, U2, V);
    gecf_sub(g, V, V, U2);
    gecf_mul(g, V, rr, V);
    gecf_sub(g, r + cl, V, t);
    gecf_copy(g, r, U2);
}

/* r = p + q, both jacobian: add-2007-bl (curve.h's ec_jac_add). r may alias p or q. */
CUZK_HD void gec_add_body(enum curve_id g, uint64_t *r, const uint64_t *p, const uint64_t *q)
{
    const unsigned cl = gec_cl(g);
    const uint64_t *X1 = p, *Y1 = p + cl, *Z1 = p + 2 * cl, *X2 = q, *Y2 = q + cl, *Z2 = q + 2 * cl;
    uint64_t Z1Z1[GEC_MAX_CL], Z2Z2[GEC_MAX_CL], U1[GEC_MAX_CL], U2[GEC_MAX_CL], S1[GEC_MAX_CL],
        S2[GEC_MAX_CL], H[GEC_MAX_CL], I[GEC_MAX_CL], J[GEC_MAX_CL], rr[GEC_MAX_CL], V[GEC_MAX_CL],
        Z3[GEC_MAX_CL];
    if (gec_jac_is_inf(g, q)) {
        if (r != p) gec_jac_copy(g, r, p);
        return;
    }
    if (gec_jac_is_inf(g, p)) {
        if (r != q) gec_jac_copy(g, r, q);
        return;
    }
    gecf_sqr(g, Z1Z1, Z1);
    gecf_sqr(g, Z2Z2, Z2);
    gecf_mul(g, U1, X1, Z2Z2);
    gecf_mul(g, U2, X2, Z1Z1);
    gecf_mul(g, S1, Y1, Z2);
    gecf_mul(g, S1, S1, Z2Z2);
    gecf_mul(g, S2, Y2, Z1);
    gecf_mul(g, S2, S2, Z1Z1);
    gecf_sub(g, H, U2, U1);
    gecf_sub(g, rr, S2, S1);
    if (gecf_is_zero(g, H)) {
        if (gecf_is_zero(g, rr))
            gec_dbl(g, r, p);
        else
            gec_jac_set_inf(g, r);
        return;
    }
    gecf_dbl(g, rr, rr);
    gecf_dbl(g, I, H);
    gecf_sqr(g, I, I);
    gecf_mul(g, J, H, I);
    gecf_mul(g, V, U1, I);
    gecf_add(g, Z3, Z1, Z2);
    gecf_sqr(g, Z3, Z3);
    gecf_sub(g, Z3, Z3, Z1Z1);
    gecf_sub(g, Z3, Z3, Z2Z2);
    gecf_mul(g, Z3, Z3, H);
    gecf_sqr(g, U2, rr);
    gecf_sub(g, U2, U2, J);
    gecf_sub(g, U2, U2, V);
    gecf_sub(g, U2, U2, V);
    gecf_sub(g, V, V, U2);
    gecf_mul(g, V, rr, V);
    gecf_mul(g, S1, S1, J);
    gecf_dbl(g, S1, S1);
    gecf_sub(g, r + cl, V, S1);
    gecf_copy(g, r, U2);
    gecf_copy(g, r + 2 * cl, Z3);
}

#ifdef __CUDACC__
#define GEC_OUTLINE static __host__ __device__ __noinline__
#else
#define GEC_OUTLINE static __attribute__((noinline, unused))
#endif

#define GEC_INSTANCE(sfx, ID)                                                             \
    GEC_OUTLINE void gec_dbl_##sfx(uint64_t *r, const uint64_t *p)                        \
    {                                                                                     \
        gec_dbl_body(ID, r, p);                                                           \
    }                                                                                     \
    GEC_OUTLINE void gec_add_##sfx(uint64_t *r, const uint64_t *p, const uint64_t *q)     \
    {                                                                                     \
        gec_add_body(ID, r, p, q);                                                        \
    }                                                                                     \
    GEC_OUTLINE void gec_add_aff_##sfx(uint64_t *r, const uint64_t *p, const uint64_t *q) \
    {                                                                                     \
        gec_add_aff_body(ID, r, p, q);                                                    \
    }
GEC_INSTANCE(g1_bn254, CURVE_G1_BN254)
GEC_INSTANCE(g2_bn254, CURVE_G2_BN254)
GEC_INSTANCE(g1_bls, CURVE_G1_BLS12_381)
GEC_INSTANCE(g2_bls, CURVE_G2_BLS12_381)

#define GEC_DISPATCH(fn, g, ...)                                  \
    do {                                                          \
        switch (g) {                                              \
        case CURVE_G1_BN254: fn##_g1_bn254(__VA_ARGS__); break;   \
        case CURVE_G2_BN254: fn##_g2_bn254(__VA_ARGS__); break;   \
        case CURVE_G1_BLS12_381: fn##_g1_bls(__VA_ARGS__); break; \
        case CURVE_G2_BLS12_381: fn##_g2_bls(__VA_ARGS__); break; \
        }                                                         \
    } while (0)

CUZK_HD void gec_dbl(enum curve_id g, uint64_t *r, const uint64_t *p)
{
    GEC_DISPATCH(gec_dbl, g, r, p);
}
/* r = p + q (jacobian); r may alias p or q. */
CUZK_HD void gec_add(enum curve_id g, uint64_t *r, const uint64_t *p, const uint64_t *q)
{
    GEC_DISPATCH(gec_add, g, r, p, q);
}
/* r = p + q, q affine; r may alias p. */
CUZK_HD void gec_add_aff(enum curve_id g, uint64_t *r, const uint64_t *p, const uint64_t *q)
{
    GEC_DISPATCH(gec_add_aff, g, r, p, q);
}

#endif
