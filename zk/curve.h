/* curve.h — short Weierstrass curves y^2 = x^3 + b (a = 0), generic over the curve
 * and over the coordinate field (Fq for G1, Fq2 for G2).
 *
 * Layouts (limbs, little-endian, Montgomery form), with cl = deg * n coordinate limbs:
 *   affine   x || y        2*cl limbs — exactly a zkey point (spec §2.2, §2.3);
 *                          (0, 0) is the point at infinity, as in the zkey.
 *   jacobian X || Y || Z   3*cl limbs, (x, y) = (X/Z^2, Y/Z^3); Z = 0 is infinity.
 *
 * As in field.h, the arithmetic is written once for host and device: the formulas
 * take the group as an `enum curve_id` (the _id forms: ec_jac_add_id, ...; base field
 * and degree follow from the id by rule), and the `const curve_group *` API host code
 * calls is each the _id form for G->id. Everything is always-inline, so with a constant
 * group G1 and G2 of each curve get their own specialised code from one source; the
 * point formulas are also kept out of line once per group (ec_add_id and its kin:
 * zk/curve.c on the host, CUZK_DEVICE_OUTLINE copies on the device). Results first;
 * they may alias inputs unless said otherwise. */
#ifndef CUZK_CURVE_H
#define CUZK_CURVE_H

#include "zk/field.h"

#define EC_MAX_CL  (2 * FE_MAX_LIMBS) /* coordinate limbs, worst case */
#define EC_MAX_AFF (2 * EC_MAX_CL)
#define EC_MAX_JAC (3 * EC_MAX_CL)

enum curve_id { CURVE_G1_BN254, CURVE_G2_BN254, CURVE_G1_BLS12_381, CURVE_G2_BLS12_381 };

typedef struct curve_group {
    enum curve_id id;         /* identity: compare ids, not pointers (copies per TU) */
    const field_desc *F;      /* base field Fq */
    const field_desc *Fr;     /* scalar field (group order r) */
    unsigned deg;             /* 1: G1 over Fq, 2: G2 over Fq2 */
    uint64_t b[EC_MAX_CL];    /* curve constant b, Montgomery, deg*n limbs */
    uint64_t gen[EC_MAX_AFF]; /* generator, affine Montgomery */
    /* GLV endomorphism: phi(x, y) = (beta x, y) (beta a cube root of unity in Fq,
     * Montgomery; for G2 it multiplies both Fq coordinates of x) equals [lambda] on this
     * group (lambda a cube root of unity mod r, canonical, 4 limbs). Of the two betas,
     * G1 and G2 of a curve take different ones for the same lambda (checked by
     * test_curve against scalar multiplication); see ec_glv_split. */
    uint64_t beta[FE_MAX_LIMBS];
    uint64_t lambda[4];
    const char *name;
} curve_group;

/* Defined in the header so every translation unit can fold them (see field.h).
 * Constants from docs/snarkjs-groth16.md §7 in Montgomery form; tests check
 * each generator is on its curve and has order r. */
static const curve_group G1_BN254 = {
    .id = CURVE_G1_BN254,
    .F = &FIELD_BN254_FQ,
    .Fr = &FIELD_BN254_FR,
    .deg = 1,
    .b = { 0x7a17caa950ad28d7ULL, 0x1f6ac17ae15521b9ULL, 0x334bea4e696bd284ULL, 0x2a1f6744ce179d8eULL },
    .gen = { 0xd35d438dc58f0d9dULL, 0x0a78eb28f5c70b3dULL, 0x666ea36f7879462cULL, 0x0e0a77c19a07df2fULL,
             0xa6ba871b8b1e1b3aULL, 0x14f1d651eb8e167bULL, 0xccdd46def0f28c58ULL, 0x1c14ef83340fbe5eULL },
    .beta = { 0x71930c11d782e155ULL, 0xa6bb947cffbe3323ULL, 0xaa303344d4741444ULL, 0x2c3b3f0d26594943ULL },
    .lambda = { 0x8b17ea66b99c90ddULL, 0x5bfc41088d8daaa7ULL, 0xb3c4d79d41a91758ULL, 0x0000000000000000ULL },
    .name = "bn254-g1",
};
static const curve_group G2_BN254 = {
    .id = CURVE_G2_BN254,
    .F = &FIELD_BN254_FQ,
    .Fr = &FIELD_BN254_FR,
    .deg = 2,
    .b = { 0x3bf938e377b802a8ULL, 0x020b1b273633535dULL, 0x26b7edf049755260ULL, 0x2514c6324384a86dULL,
           0x38e7ecccd1dcff67ULL, 0x65f0b37d93ce0d3eULL, 0xd749d0dd22ac00aaULL, 0x0141b9ce4a688d4dULL },
    .gen = { 0x8e83b5d102bc2026ULL, 0xdceb1935497b0172ULL, 0xfbb8264797811adfULL, 0x19573841af96503bULL,
             0xafb4737da84c6140ULL, 0x6043dd5a5802d8c4ULL, 0x09e950fc52a02f86ULL, 0x14fef0833aea7b6bULL,
             0x619dfa9d886be9f6ULL, 0xfe7fd297f59e9b78ULL, 0xff9e1a62231b7dfeULL, 0x28fd7eebae9e4206ULL,
             0x64095b56c71856eeULL, 0xdc57f922327d3cbbULL, 0x55f935be33351076ULL, 0x0da4a0e693fd6482ULL },
    .beta = { 0x3350c88e13e80b9cULL, 0x7dce557cdb5e56b9ULL, 0x6001b4b8b615564aULL, 0x2682e617020217e0ULL },
    .lambda = { 0x8b17ea66b99c90ddULL, 0x5bfc41088d8daaa7ULL, 0xb3c4d79d41a91758ULL, 0x0000000000000000ULL },
    .name = "bn254-g2",
};
static const curve_group G1_BLS12_381 = {
    .id = CURVE_G1_BLS12_381,
    .F = &FIELD_BLS12_381_FQ,
    .Fr = &FIELD_BLS12_381_FR,
    .deg = 1,
    .b = { 0xaa270000000cfff3ULL, 0x53cc0032fc34000aULL, 0x478fe97a6b0a807fULL, 0xb1d37ebee6ba24d7ULL,
           0x8ec9733bbf78ab2fULL, 0x09d645513d83de7eULL },
    .gen = { 0x5cb38790fd530c16ULL, 0x7817fc679976fff5ULL, 0x154f95c7143ba1c1ULL, 0xf0ae6acdf3d0e747ULL,
             0xedce6ecc21dbf440ULL, 0x120177419e0bfb75ULL, 0xbaac93d50ce72271ULL, 0x8c22631a7918fd8eULL,
             0xdd595f13570725ceULL, 0x51ac582950405194ULL, 0x0e1c8c3fad0059c0ULL, 0x0bbc3efc5008a26aULL },
    .beta = { 0xcd03c9e48671f071ULL, 0x5dab22461fcda5d2ULL, 0x587042afd3851b95ULL, 0x8eb60ebe01bacb9eULL,
              0x03f97d6e83d050d2ULL, 0x18f0206554638741ULL },
    .lambda = { 0x00000000ffffffffULL, 0xac45a4010001a402ULL, 0x0000000000000000ULL, 0x0000000000000000ULL },
    .name = "bls12-381-g1",
};
static const curve_group G2_BLS12_381 = {
    .id = CURVE_G2_BLS12_381,
    .F = &FIELD_BLS12_381_FQ,
    .Fr = &FIELD_BLS12_381_FR,
    .deg = 2,
    .b = { 0xaa270000000cfff3ULL, 0x53cc0032fc34000aULL, 0x478fe97a6b0a807fULL, 0xb1d37ebee6ba24d7ULL,
           0x8ec9733bbf78ab2fULL, 0x09d645513d83de7eULL, 0xaa270000000cfff3ULL, 0x53cc0032fc34000aULL,
           0x478fe97a6b0a807fULL, 0xb1d37ebee6ba24d7ULL, 0x8ec9733bbf78ab2fULL, 0x09d645513d83de7eULL },
    .gen = { 0xf5f28fa202940a10ULL, 0xb3f5fb2687b4961aULL, 0xa1a893b53e2ae580ULL, 0x9894999d1a3caee9ULL,
             0x6f67b7631863366bULL, 0x058191924350bcd7ULL, 0xa5a9c0759e23f606ULL, 0xaaa0c59dbccd60c3ULL,
             0x3bb17e18e2867806ULL, 0x1b1ab6cc8541b367ULL, 0xc2b6ed0ef2158547ULL, 0x11922a097360edf3ULL,
             0x4c730af860494c4aULL, 0x597cfa1f5e369c5aULL, 0xe7e6856caa0a635aULL, 0xbbefb5e96e0d495fULL,
             0x07d3a975f0ef25a2ULL, 0x0083fd8e7e80dae5ULL, 0xadc0fc92df64b05dULL, 0x18aa270a2b1461dcULL,
             0x86adac6a3be4eba0ULL, 0x79495c4ec93da33aULL, 0xe7175850a43ccaedULL, 0x0b2bc2a163de1bf2ULL },
    .beta = { 0x30f1361b798a64e8ULL, 0xf3b8ddab7ece5a2aULL, 0x16a8ca3ac61577f7ULL, 0xc26a2ff874fd029bULL,
              0x3636b76660701c6eULL, 0x051ba4ab241b6160ULL },
    .lambda = { 0x00000000ffffffffULL, 0xac45a4010001a402ULL, 0x0000000000000000ULL, 0x0000000000000000ULL },
    .name = "bls12-381-g2",
};

/* Runs `fn(&G_X, ...)` with the group that has G's id as a compile-time constant. */
#define CURVE_DISPATCH(G, fn, ...)                                      \
    do {                                                                \
        switch ((G)->id) {                                              \
        case CURVE_G1_BN254: fn(&G1_BN254, __VA_ARGS__); break;         \
        case CURVE_G2_BN254: fn(&G2_BN254, __VA_ARGS__); break;         \
        case CURVE_G1_BLS12_381: fn(&G1_BLS12_381, __VA_ARGS__); break; \
        case CURVE_G2_BLS12_381: fn(&G2_BLS12_381, __VA_ARGS__); break; \
        }                                                               \
    } while (0)

/* ---- the group by id (see field.h: one copy for host and device) ------------- */

/* The base field and degree of group g: rules, so they fold in device code too. */
CUZK_HD enum field_id ec_field_id(enum curve_id g)
{
    return g == CURVE_G1_BN254 || g == CURVE_G2_BN254 ? FIELD_ID_BN254_FQ : FIELD_ID_BLS12_381_FQ;
}
CUZK_HD unsigned ec_deg_id(enum curve_id g)
{
    return g == CURVE_G2_BN254 || g == CURVE_G2_BLS12_381 ? 2u : 1u;
}
/* coordinate limbs: deg * n */
CUZK_HD unsigned ec_cl_id(enum curve_id g)
{
    return ec_deg_id(g) * fe_n_id(ec_field_id(g));
}

/* ---- coordinate field: Fq or Fq2 depending on the degree ------------------- */

CUZK_HD void ecf_copy_id(enum curve_id g, uint64_t *r, const uint64_t *a)
{
    CUZK_UNROLL for (unsigned i = 0; i < ec_cl_id(g); i++) r[i] = a[i];
}
CUZK_HD bool ecf_is_zero_id(enum curve_id g, const uint64_t *a)
{
    uint64_t acc = 0;
    CUZK_UNROLL for (unsigned i = 0; i < ec_cl_id(g); i++) acc |= a[i];
    return acc == 0;
}
CUZK_HD void ecf_set_zero_id(enum curve_id g, uint64_t *r)
{
    CUZK_UNROLL for (unsigned i = 0; i < ec_cl_id(g); i++) r[i] = 0;
}
CUZK_HD void ecf_set_one_id(enum curve_id g, uint64_t *r)
{
    ecf_set_zero_id(g, r);
    fe_set_one_id(ec_field_id(g), r);
}
/* ecf_OP_id: fe_OP_id on Fq for G1, fe2_OP_id on Fq2 for G2. */
#define ECF_BY_DEG(op, params, args)                                 \
    CUZK_HD void ecf_##op##_id(enum curve_id g, CUZK_UNPAREN params) \
    {                                                                \
        if (ec_deg_id(g) == 1)                                       \
            fe_##op##_id(ec_field_id(g), CUZK_UNPAREN args);         \
        else                                                         \
            fe2_##op##_id(ec_field_id(g), CUZK_UNPAREN args);        \
    }
/* clang-format off */
ECF_BY_DEG(add, (uint64_t *r, const uint64_t *a, const uint64_t *b), (r, a, b))
ECF_BY_DEG(sub, (uint64_t *r, const uint64_t *a, const uint64_t *b), (r, a, b))
ECF_BY_DEG(neg, (uint64_t *r, const uint64_t *a), (r, a))
ECF_BY_DEG(mul, (uint64_t *r, const uint64_t *a, const uint64_t *b), (r, a, b))
ECF_BY_DEG(sqr, (uint64_t *r, const uint64_t *a), (r, a))
/* clang-format on */
CUZK_HD void ecf_dbl_id(enum curve_id g, uint64_t *r, const uint64_t *a)
{
    ecf_add_id(g, r, a, a);
}

/* ---- points --------------------------------------------------------------- */

CUZK_HD bool ec_aff_is_inf_id(enum curve_id g, const uint64_t *p)
{
    uint64_t acc = 0;
    CUZK_UNROLL for (unsigned i = 0; i < 2 * ec_cl_id(g); i++) acc |= p[i];
    return acc == 0;
}

/* Every formula tests Z only, so all-zero limbs (a cudaMemset bucket) are infinity too. */
CUZK_HD bool ec_jac_is_inf_id(enum curve_id g, const uint64_t *p)
{
    return ecf_is_zero_id(g, p + 2 * ec_cl_id(g));
}

CUZK_HD void ec_jac_set_inf_id(enum curve_id g, uint64_t *r)
{
    /* (1, 1, 0): any X, Y with Z = 0 is infinity; 1s keep formulas well defined */
    ecf_set_one_id(g, r);
    ecf_set_one_id(g, r + ec_cl_id(g));
    ecf_set_zero_id(g, r + 2 * ec_cl_id(g));
}

CUZK_HD void ec_jac_copy_id(enum curve_id g, uint64_t *r, const uint64_t *p)
{
    CUZK_UNROLL for (unsigned i = 0; i < 3 * ec_cl_id(g); i++) r[i] = p[i];
}

CUZK_HD void ec_jac_from_aff_id(enum curve_id g, uint64_t *r, const uint64_t *a)
{
    const unsigned cl = ec_cl_id(g);
    if (ec_aff_is_inf_id(g, a)) {
        ec_jac_set_inf_id(g, r);
        return;
    }
    ecf_copy_id(g, r, a);
    ecf_copy_id(g, r + cl, a + cl);
    ecf_set_one_id(g, r + 2 * cl);
}

CUZK_HD void ec_jac_neg_id(enum curve_id g, uint64_t *r, const uint64_t *p)
{
    const unsigned cl = ec_cl_id(g);
    if (r != p) ec_jac_copy_id(g, r, p);
    ecf_neg_id(g, r + cl, p + cl);
}

CUZK_HD void ec_aff_neg_id(enum curve_id g, uint64_t *r, const uint64_t *p)
{
    const unsigned cl = ec_cl_id(g);
    if (r != p) ecf_copy_id(g, r, p);
    ecf_neg_id(g, r + cl, p + cl); /* -(0,0) = (0,0): neg(0) = 0 */
}

/* The formulas out of line, one copy per group, by id (defined after the formulas):
 * on the host ec_dbl / ec_add / ec_add_aff of zk/curve.c, in device code the
 * CUZK_DEVICE_OUTLINE copies below (inlining every addition into every kernel made one
 * file a 5+ minute compile, nvcc and gcc alike). The doubling case inside an addition
 * is rare (p == q) and calls ec_dbl_id, so an addition does not inline a second copy
 * of the doubling formulas (that doubled compile time and code size for nothing). */
CUZK_HD void ec_dbl_id(enum curve_id g, uint64_t *r, const uint64_t *p);

/* Doubling, "dbl-2009-l" (Explicit-Formulas Database, a = 0): 2M + 5S. */
CUZK_HD void ec_jac_dbl_id(enum curve_id g, uint64_t *r, const uint64_t *p)
{
    const unsigned cl = ec_cl_id(g);
    const uint64_t *X1 = p, *Y1 = p + cl, *Z1 = p + 2 * cl;
    uint64_t A[EC_MAX_CL], B[EC_MAX_CL], C[EC_MAX_CL], D[EC_MAX_CL], E[EC_MAX_CL], F[EC_MAX_CL],
        Z3[EC_MAX_CL];
    if (ec_jac_is_inf_id(g, p)) {
        ec_jac_set_inf_id(g, r);
        return;
    }
    ecf_sqr_id(g, A, X1); /* A = X1^2 */
    ecf_sqr_id(g, B, Y1); /* B = Y1^2 */
    ecf_sqr_id(g, C, B);  /* C = B^2 */
    ecf_add_id(g, D, X1, B);
    ecf_sqr_id(g, D, D);
    ecf_sub_id(g, D, D, A);
    ecf_sub_id(g, D, D, C);
    ecf_dbl_id(g, D, D); /* D = 2((X1+B)^2 - A - C) */
    ecf_dbl_id(g, E, A);
    ecf_add_id(g, E, E, A); /* E = 3A */
    ecf_sqr_id(g, F, E);    /* F = E^2 */
    ecf_mul_id(g, Z3, Y1, Z1);
    ecf_dbl_id(g, Z3, Z3); /* Z3 = 2 Y1 Z1 */
    ecf_sub_id(g, r, F, D);
    ecf_sub_id(g, r, r, D); /* X3 = F - 2D */
    ecf_sub_id(g, D, D, r);
    ecf_mul_id(g, D, E, D); /* E (D - X3) */
    ecf_dbl_id(g, C, C);
    ecf_dbl_id(g, C, C);
    ecf_dbl_id(g, C, C);         /* 8C */
    ecf_sub_id(g, r + cl, D, C); /* Y3 = E (D - X3) - 8C */
    ecf_copy_id(g, r + 2 * cl, Z3);
}

/* The end both additions share: X3 = rr^2 - J - 2V and Y3 = rr (V - X3) - y (y = 2 Y1 J
 * or 2 S1 J) into r's X and Y; V is scratch. Every input is a local of the caller, so
 * r may alias the points it added. */
CUZK_HD void ec_add_finish_id(enum curve_id g, uint64_t *r, const uint64_t *rr, const uint64_t *J,
                              uint64_t *V, const uint64_t *y)
{
    const unsigned cl = ec_cl_id(g);
    uint64_t X3[EC_MAX_CL];
    ecf_sqr_id(g, X3, rr);
    ecf_sub_id(g, X3, X3, J);
    ecf_sub_id(g, X3, X3, V);
    ecf_sub_id(g, X3, X3, V); /* X3 = r^2 - J - 2V */
    ecf_sub_id(g, V, V, X3);
    ecf_mul_id(g, V, rr, V);
    ecf_sub_id(g, r + cl, V, y); /* Y3 = r (V - X3) - y */
    ecf_copy_id(g, r, X3);
}

/* Mixed addition r = p + q with q affine, "madd-2007-bl": 7M + 4S.
 * Handles p = infinity, q = infinity, p = q (doubles) and p = -q. r may alias p. */
CUZK_HD void ec_jac_add_aff_id(enum curve_id g, uint64_t *r, const uint64_t *p, const uint64_t *q)
{
    const unsigned cl = ec_cl_id(g);
    const uint64_t *X1 = p, *Y1 = p + cl, *Z1 = p + 2 * cl, *X2 = q, *Y2 = q + cl;
    uint64_t Z1Z1[EC_MAX_CL], U2[EC_MAX_CL], S2[EC_MAX_CL], H[EC_MAX_CL], HH[EC_MAX_CL], I[EC_MAX_CL],
        J[EC_MAX_CL], rr[EC_MAX_CL], V[EC_MAX_CL], t[EC_MAX_CL];
    if (ec_aff_is_inf_id(g, q)) {
        if (r != p) ec_jac_copy_id(g, r, p);
        return;
    }
    if (ec_jac_is_inf_id(g, p)) {
        ec_jac_from_aff_id(g, r, q);
        return;
    }
    ecf_sqr_id(g, Z1Z1, Z1);     /* Z1Z1 = Z1^2 */
    ecf_mul_id(g, U2, X2, Z1Z1); /* U2 = X2 Z1Z1 */
    ecf_mul_id(g, S2, Y2, Z1);
    ecf_mul_id(g, S2, S2, Z1Z1); /* S2 = Y2 Z1 Z1Z1 */
    ecf_sub_id(g, H, U2, X1);    /* H = U2 - X1 */
    ecf_sub_id(g, rr, S2, Y1);
    if (ecf_is_zero_id(g, H)) {
        if (ecf_is_zero_id(g, rr)) { /* same point: double q, in r (p is no longer read) */
            /* no local point: an array whose address goes to the out-of-line doubling
             * was the 288 bytes of stack of every G1 bucket kernel that inlines this */
            ec_jac_from_aff_id(g, r, q);
            ec_dbl_id(g, r, r);
        } else { /* p = -q */
            ec_jac_set_inf_id(g, r);
        }
        return;
    }
    ecf_dbl_id(g, rr, rr); /* r = 2 (S2 - Y1) */
    ecf_sqr_id(g, HH, H);  /* HH = H^2 */
    /* Z3 = (Z1 + H)^2 - Z1Z1 - HH, now: the last read of Z1 and of Z1Z1 (r's Z is not
     * p's X or Y, which are read below) */
    ecf_add_id(g, t, Z1, H);
    ecf_sqr_id(g, t, t);
    ecf_sub_id(g, t, t, Z1Z1);
    ecf_sub_id(g, r + 2 * cl, t, HH);
    ecf_dbl_id(g, I, HH);
    ecf_dbl_id(g, I, I);     /* I = 4 HH */
    ecf_mul_id(g, J, H, I);  /* J = H I */
    ecf_mul_id(g, V, X1, I); /* V = X1 I */
    ecf_mul_id(g, t, Y1, J);
    ecf_dbl_id(g, t, t); /* 2 Y1 J (Y1 read before Y3 is written) */
    ec_add_finish_id(g, r, rr, J, V, t);
}

/* General addition r = p + q, "add-2007-bl": 11M + 5S. Handles every special case;
 * r may alias p or q. The order keeps few coordinates live at once (on the device a G2
 * coordinate is 24 registers, and what is live across the out-of-line base product of
 * the Fq2 arithmetic beyond the registers it leaves free is spilled to the stack): p
 * and q are read to the end first, S2 before U2 so that Z1Z1 dies early, then Z3 goes
 * straight to r, then X3 and Y3. */
CUZK_HD void ec_jac_add_id(enum curve_id g, uint64_t *r, const uint64_t *p, const uint64_t *q)
{
    const unsigned cl = ec_cl_id(g);
    const uint64_t *X1 = p, *Y1 = p + cl, *Z1 = p + 2 * cl, *X2 = q, *Y2 = q + cl, *Z2 = q + 2 * cl;
    uint64_t Z1Z1[EC_MAX_CL], Z2Z2[EC_MAX_CL], U1[EC_MAX_CL], S1[EC_MAX_CL], H[EC_MAX_CL], rr[EC_MAX_CL];
    if (ec_jac_is_inf_id(g, q)) {
        if (r != p) ec_jac_copy_id(g, r, p);
        return;
    }
    if (ec_jac_is_inf_id(g, p)) {
        if (r != q) ec_jac_copy_id(g, r, q);
        return;
    }
    ecf_sqr_id(g, Z2Z2, Z2);     /* Z2Z2 = Z2^2 */
    ecf_mul_id(g, U1, X1, Z2Z2); /* U1 = X1 Z2Z2 */
    ecf_mul_id(g, S1, Y1, Z2);
    ecf_mul_id(g, S1, S1, Z2Z2); /* S1 = Y1 Z2 Z2Z2 */
    ecf_sqr_id(g, Z1Z1, Z1);     /* Z1Z1 = Z1^2 */
    ecf_mul_id(g, rr, Y2, Z1);
    ecf_mul_id(g, rr, rr, Z1Z1);
    ecf_sub_id(g, rr, rr, S1); /* S2 - S1, S2 = Y2 Z1 Z1Z1 */
    ecf_mul_id(g, H, X2, Z1Z1);
    ecf_sub_id(g, H, H, U1); /* H = U2 - U1, U2 = X2 Z1Z1 */
    if (ecf_is_zero_id(g, H)) {
        if (ecf_is_zero_id(g, rr))
            ec_dbl_id(g, r, p);
        else
            ec_jac_set_inf_id(g, r);
        return;
    }
    /* Z3 = 2 Z1 Z2 H (add-2007-bl's ((Z1+Z2)^2 - Z1Z1 - Z2Z2) H, one product for the
     * square and subtractions, so that Z1Z1 and Z2Z2 need not live until here): the
     * last read of p and q, so Z3 goes to r now */
    ecf_mul_id(g, Z1Z1, Z1, Z2);
    ecf_mul_id(g, Z1Z1, Z1Z1, H);
    ecf_dbl_id(g, r + 2 * cl, Z1Z1);
    ecf_dbl_id(g, rr, rr); /* r = 2 (S2 - S1) */
    uint64_t *I = Z2Z2, *J = Z1Z1;
    ecf_dbl_id(g, I, H);
    ecf_sqr_id(g, I, I);      /* I = (2H)^2 */
    ecf_mul_id(g, J, H, I);   /* J = H I */
    ecf_mul_id(g, U1, U1, I); /* V = U1 I */
    ecf_mul_id(g, S1, S1, J);
    ecf_dbl_id(g, S1, S1); /* 2 S1 J */
    ec_add_finish_id(g, r, rr, J, U1, S1);
}

/* ---- the formulas out of line, by id --------------------------------------- */

/* Host: zk/curve.c's out-of-line, group-specialised forms of the formulas above, for
 * code outside the innermost loops (one copy of each formula per group). */
void ec_dbl(const curve_group *G, uint64_t *r, const uint64_t *p);
void ec_add(const curve_group *G, uint64_t *r, const uint64_t *p, const uint64_t *q);
void ec_add_aff(const curve_group *G, uint64_t *r, const uint64_t *p, const uint64_t *q_aff);

/* The group with id g (host code only: device code has no descriptors). */
static inline const curve_group *ec_group(enum curve_id g)
{
    switch (g) {
    case CURVE_G1_BN254: return &G1_BN254;
    case CURVE_G2_BN254: return &G2_BN254;
    case CURVE_G1_BLS12_381: return &G1_BLS12_381;
    case CURVE_G2_BLS12_381: break;
    }
    return &G2_BLS12_381;
}

#ifdef CUZK_DEVICE_OUTLINE_ON
#define EC_DEVICE_INSTANCE(sfx, ID)                                                                  \
    CUZK_DEVICE_OUTLINE void ec_dbl_dev_##sfx(uint64_t *r, const uint64_t *p)                        \
    {                                                                                                \
        ec_jac_dbl_id(ID, r, p);                                                                     \
    }                                                                                                \
    CUZK_DEVICE_OUTLINE void ec_add_dev_##sfx(uint64_t *r, const uint64_t *p, const uint64_t *q)     \
    {                                                                                                \
        ec_jac_add_id(ID, r, p, q);                                                                  \
    }                                                                                                \
    CUZK_DEVICE_OUTLINE void ec_add_aff_dev_##sfx(uint64_t *r, const uint64_t *p, const uint64_t *q) \
    {                                                                                                \
        ec_jac_add_aff_id(ID, r, p, q);                                                              \
    }
EC_DEVICE_INSTANCE(g1_bn254, CURVE_G1_BN254)
EC_DEVICE_INSTANCE(g2_bn254, CURVE_G2_BN254)
EC_DEVICE_INSTANCE(g1_bls12_381, CURVE_G1_BLS12_381)
EC_DEVICE_INSTANCE(g2_bls12_381, CURVE_G2_BLS12_381)
#endif

/* void NAME_id(g, params): in device code NAME_dev_GROUP(args) for the group g, on the
 * host NAME(G, args) of zk/curve.c. */
#ifdef CUZK_DEVICE_CODE
#define EC_OUTLINED(name, params, args)                               \
    CUZK_HD void name##_id(enum curve_id g, CUZK_UNPAREN params)      \
    {                                                                 \
        switch (g) {                                                  \
        case CURVE_G1_BN254: name##_dev_g1_bn254 args; break;         \
        case CURVE_G2_BN254: name##_dev_g2_bn254 args; break;         \
        case CURVE_G1_BLS12_381: name##_dev_g1_bls12_381 args; break; \
        case CURVE_G2_BLS12_381: name##_dev_g2_bls12_381 args; break; \
        }                                                             \
    }
#else
#define EC_OUTLINED(name, params, args)                          \
    CUZK_HD void name##_id(enum curve_id g, CUZK_UNPAREN params) \
    {                                                            \
        name(ec_group(g), CUZK_UNPAREN args);                    \
    }
#endif
/* (clang-format would read "uint64_t *r" in these lists as a product) */
/* clang-format off */
EC_OUTLINED(ec_dbl, (uint64_t *r, const uint64_t *p), (r, p))                           /* r = 2p */
EC_OUTLINED(ec_add, (uint64_t *r, const uint64_t *p, const uint64_t *q), (r, p, q))     /* r = p + q */
EC_OUTLINED(ec_add_aff, (uint64_t *r, const uint64_t *p, const uint64_t *q), (r, p, q)) /* q affine */
/* clang-format on */

/* ---- the group API: each the _id form above for G->id (field.h's CUZK_BY_ID) ---- */

CUZK_HD unsigned ec_cl(const curve_group *G)
{
    return G->deg * fe_n(G->F);
}
#define EC_BY_ID(name, params, args) CUZK_BY_ID(name, curve_group, params, args)
CUZK_HD bool ecf_is_zero(const curve_group *G, const uint64_t *a)
{
    return ecf_is_zero_id(G->id, a);
}
CUZK_HD bool ec_aff_is_inf(const curve_group *G, const uint64_t *p)
{
    return ec_aff_is_inf_id(G->id, p);
}
CUZK_HD bool ec_jac_is_inf(const curve_group *G, const uint64_t *p)
{
    return ec_jac_is_inf_id(G->id, p);
}
/* (clang-format would read "uint64_t *r" in these lists as a product) */
/* clang-format off */
EC_BY_ID(ecf_copy, (uint64_t *r, const uint64_t *a), (r, a))
EC_BY_ID(ecf_set_zero, (uint64_t *r), (r))
EC_BY_ID(ecf_set_one, (uint64_t *r), (r))
EC_BY_ID(ecf_add, (uint64_t *r, const uint64_t *a, const uint64_t *b), (r, a, b))
EC_BY_ID(ecf_sub, (uint64_t *r, const uint64_t *a, const uint64_t *b), (r, a, b))
EC_BY_ID(ecf_neg, (uint64_t *r, const uint64_t *a), (r, a))
EC_BY_ID(ecf_dbl, (uint64_t *r, const uint64_t *a), (r, a))
EC_BY_ID(ecf_mul, (uint64_t *r, const uint64_t *a, const uint64_t *b), (r, a, b))
EC_BY_ID(ecf_sqr, (uint64_t *r, const uint64_t *a), (r, a))
EC_BY_ID(ec_jac_set_inf, (uint64_t *r), (r))
EC_BY_ID(ec_jac_copy, (uint64_t *r, const uint64_t *p), (r, p))
EC_BY_ID(ec_jac_from_aff, (uint64_t *r, const uint64_t *a), (r, a))
EC_BY_ID(ec_jac_neg, (uint64_t *r, const uint64_t *p), (r, p))
EC_BY_ID(ec_aff_neg, (uint64_t *r, const uint64_t *p), (r, p))
EC_BY_ID(ec_jac_dbl, (uint64_t *r, const uint64_t *p), (r, p))
EC_BY_ID(ec_jac_add_aff, (uint64_t *r, const uint64_t *p, const uint64_t *q), (r, p, q))
EC_BY_ID(ec_jac_add, (uint64_t *r, const uint64_t *p, const uint64_t *q), (r, p, q))
/* clang-format on */

/* ---- the batch-affine addition (msm.c's msm_aff_flush, ifma.c's reference) ---- */

/* B = B + P on affine points, given di = 1/(Px - Bx) (a batch shares one inversion):
 * lambda = (Py - By) di, x3 = lambda^2 - Bx - Px, y3 = lambda (Bx - x3) - By. B is
 * written in place; P is neither B nor -B, nor infinity. t, l, x3: the caller's
 * scratch (EC_MAX_CL limbs each), declared once outside its loop over the batch. */
CUZK_HD void ec_aff_add_inv(const curve_group *G, uint64_t *Bx, uint64_t *By, const uint64_t *Px,
                            const uint64_t *Py, const uint64_t *di, uint64_t *t, uint64_t *l, uint64_t *x3)
{
    ecf_sub(G, t, Py, By);
    ecf_mul(G, l, t, di); /* lambda */
    ecf_sqr(G, x3, l);
    ecf_sub(G, x3, x3, Bx);
    ecf_sub(G, x3, x3, Px); /* x3 = lambda^2 - Bx - Px */
    ecf_sub(G, t, Bx, x3);
    ecf_mul(G, t, l, t);
    ecf_sub(G, By, t, By); /* y3 = lambda (Bx - x3) - By */
    ecf_copy(G, Bx, x3);
}

/* ---- host-side operations (group only; the kernels do not use them) ---------- */

CUZK_HD bool ecf_eq(const curve_group *G, const uint64_t *a, const uint64_t *b)
{
    uint64_t acc = 0;
    CUZK_UNROLL for (unsigned i = 0; i < ec_cl(G); i++) acc |= a[i] ^ b[i];
    return acc == 0;
}
CUZK_HD void ecf_inv(const curve_group *G, uint64_t *r, const uint64_t *a)
{
#ifdef __CUDA_ARCH__
    if (G->deg == 1) fe_inv(G->F, r, a);
#else
    if (G->deg == 1) fe_inv_gcd(G->F, r, a); /* GMP's gcd: ~8x Fermat's power (field.h) */
#endif
    else
        fe2_inv(G->F, r, a);
}

/* r = phi(p) = (beta x, y), which is [lambda] p on the group (see curve_group.beta):
 * one Fq product per Fq coordinate of x. Infinity (0, 0) stays (0, 0). */
CUZK_HD void ec_aff_endo(const curve_group *G, uint64_t *r, const uint64_t *p)
{
    const unsigned n = fe_n(G->F), cl = ec_cl(G);
    for (unsigned i = 0; i < G->deg; i++) fe_mul(G->F, r + i * n, p + i * n, G->beta);
    if (r != p) ecf_copy(G, r + cl, p + cl);
}

/* ---- out-of-line helpers (zk/curve.c) ------------------------------------- */

/* Jacobian -> affine (one inversion); infinity -> (0, 0). */
void ec_jac_to_aff(const curve_group *G, uint64_t *aff, const uint64_t *jac);

/* count jacobian points -> affine with one shared inversion. Returns 0 or -ENOMEM. */
int ec_batch_to_aff(const curve_group *G, uint64_t *aff, const uint64_t *jac, size_t count);

/* Is the affine point on the curve (infinity counts as on it)? Coordinates must be
 * reduced; a coordinate >= q makes it false. */
bool ec_aff_is_on_curve(const curve_group *G, const uint64_t *aff);

/* Projective equality of two jacobian points. */
bool ec_jac_eq(const curve_group *G, const uint64_t *p, const uint64_t *q);

/* r = k * p, k canonical little-endian limbs (nk limbs), double-and-add. For blinding
 * terms and as the naive reference in tests; not constant time. */
void ec_jac_mul_scalar(const curve_group *G, uint64_t *r, const uint64_t *p_jac, const uint64_t *k,
                       unsigned nk);

/* GLV split of a scalar 0 <= k < r (4 limbs, canonical, not Montgomery):
 *   k = (-1)^n1 k1 + (-1)^n2 k2 lambda  (mod r),  0 <= k1, k2 < 2^128,
 * where n1, n2 are bits 0 and 1 of the return value. So k P = +-k1 P +- k2 phi(P) with
 * half-length scalars. BN254: Babai rounding against the short lattice basis
 * (a1, b1) = (0x89d3..13e3, -0x6f4d..1128), (a2, b2) = (0x6f4d..250b, 0x89d3..13e3)
 * (a + b lambda = 0 mod r; extended Euclid on (r, lambda) as in Gallant-Lambert-
 * Vanstone 2001), the quotients by r taken as products with floor(2^256 b / r).
 * BLS12-381: r = lambda^2 + lambda + 1 with lambda = z^2 - 1 (127 bits), so
 * k2 = k div lambda, k1 = k mod lambda. test_curve checks the identity with GMP. */
unsigned ec_glv_split(const curve_group *G, uint64_t k1[2], uint64_t k2[2], const uint64_t k[4]);

/* Which curve (G1 of it) has this base field and scalar field? NULL if unknown. */
const curve_group *curve_g1_for(const field_desc *Fq, const field_desc *Fr);
const curve_group *curve_g2_for(const field_desc *Fq, const field_desc *Fr);

#endif
