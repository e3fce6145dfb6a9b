/* curve.c — curve constants and the out-of-line curve helpers. Formulas are inline
 * in curve.h. Each public function dispatches on the group id to an inlined body
 * specialised for that group (CURVE_DISPATCH). */
#include "zk/curve.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

CUZK_HD void to_aff_impl(const curve_group *G, uint64_t *aff, const uint64_t *jac)
{
    const unsigned cl = ec_cl(G);
    uint64_t zi[EC_MAX_CL], zi2[EC_MAX_CL], t[EC_MAX_CL];
    if (ec_jac_is_inf(G, jac)) {
        memset(aff, 0, 2 * cl * sizeof *aff);
        return;
    }
    ecf_inv(G, zi, jac + 2 * cl);
    ecf_sqr(G, zi2, zi);
    ecf_mul(G, t, jac, zi2); /* x = X / Z^2 */
    ecf_mul(G, zi2, zi2, zi);
    ecf_mul(G, aff + cl, jac + cl, zi2); /* y = Y / Z^3 */
    ecf_copy(G, aff, t);
}

CUZK_HD void batch_to_aff_impl(const curve_group *G, uint64_t *aff, const uint64_t *jac, size_t count,
                               uint64_t *pre)
{
    const unsigned cl = ec_cl(G);
    /* Montgomery's trick over the Z coordinates; infinity (Z = 0) is skipped. */
    uint64_t acc[EC_MAX_CL], inv[EC_MAX_CL], zi[EC_MAX_CL], zi2[EC_MAX_CL], t[EC_MAX_CL], z[EC_MAX_CL];
    ecf_set_one(G, acc);
    for (size_t i = 0; i < count; i++) {
        const uint64_t *p = jac + i * 3 * cl;
        if (!ec_jac_is_inf(G, p)) ecf_mul(G, acc, acc, p + 2 * cl);
        ecf_copy(G, pre + i * cl, acc);
    }
    ecf_inv(G, inv, acc);
    for (size_t i = count; i-- > 0;) {
        const uint64_t *p = jac + i * 3 * cl;
        uint64_t *a = aff + i * 2 * cl;
        if (ec_jac_is_inf(G, p)) {
            memset(a, 0, 2 * cl * sizeof *a);
            continue;
        }
        ecf_copy(G, z, p + 2 * cl);
        if (i > 0)
            ecf_mul(G, zi, inv, pre + (i - 1) * cl);
        else
            ecf_copy(G, zi, inv);
        ecf_mul(G, inv, inv, z);
        ecf_sqr(G, zi2, zi);
        ecf_mul(G, t, p, zi2);
        ecf_mul(G, zi2, zi2, zi);
        ecf_mul(G, a + cl, p + cl, zi2);
        ecf_copy(G, a, t);
    }
}

CUZK_HD void on_curve_impl(const curve_group *G, bool *out, const uint64_t *aff)
{
    const unsigned cl = ec_cl(G), n = fe_n(G->F);
    uint64_t lhs[EC_MAX_CL], rhs[EC_MAX_CL];
    *out = true;
    if (ec_aff_is_inf(G, aff)) return;
    *out = false;
    for (unsigned i = 0; i < 2 * G->deg; i++)
        if (!fe_is_reduced(G->F, aff + i * n)) return;
    ecf_sqr(G, lhs, aff + cl); /* y^2 */
    ecf_sqr(G, rhs, aff);
    ecf_mul(G, rhs, rhs, aff);
    ecf_add(G, rhs, rhs, G->b); /* x^3 + b */
    *out = ecf_eq(G, lhs, rhs);
}

CUZK_HD void eq_impl(const curve_group *G, bool *out, const uint64_t *p, const uint64_t *q)
{
    const unsigned cl = ec_cl(G);
    bool pi = ec_jac_is_inf(G, p), qi = ec_jac_is_inf(G, q);
    *out = pi && qi;
    if (pi || qi) return;
    /* X1 Z2^2 == X2 Z1^2 and Y1 Z2^3 == Y2 Z1^3 */
    uint64_t z1z1[EC_MAX_CL], z2z2[EC_MAX_CL], a[EC_MAX_CL], b[EC_MAX_CL];
    ecf_sqr(G, z1z1, p + 2 * cl);
    ecf_sqr(G, z2z2, q + 2 * cl);
    ecf_mul(G, a, p, z2z2);
    ecf_mul(G, b, q, z1z1);
    *out = false;
    if (!ecf_eq(G, a, b)) return;
    ecf_mul(G, z1z1, z1z1, p + 2 * cl);
    ecf_mul(G, z2z2, z2z2, q + 2 * cl);
    ecf_mul(G, a, p + cl, z2z2);
    ecf_mul(G, b, q + cl, z1z1);
    *out = ecf_eq(G, a, b);
}

CUZK_HD void mul_scalar_impl(const curve_group *G, uint64_t *r, const uint64_t *p_jac, const uint64_t *k,
                             unsigned nk)
{
    uint64_t acc[EC_MAX_JAC], base[EC_MAX_JAC];
    ec_jac_copy(G, base, p_jac);
    ec_jac_set_inf(G, acc);
    for (unsigned i = nk * 64; i-- > 0;) {
        ec_dbl(G, acc, acc);
        if ((k[i / 64] >> (i % 64)) & 1) ec_add(G, acc, acc, base);
    }
    ec_jac_copy(G, r, acc);
}

void ec_dbl(const curve_group *G, uint64_t *r, const uint64_t *p)
{
    CURVE_DISPATCH(G, ec_jac_dbl, r, p);
}

void ec_add(const curve_group *G, uint64_t *r, const uint64_t *p, const uint64_t *q)
{
    CURVE_DISPATCH(G, ec_jac_add, r, p, q);
}

void ec_add_aff(const curve_group *G, uint64_t *r, const uint64_t *p, const uint64_t *q_aff)
{
    CURVE_DISPATCH(G, ec_jac_add_aff, r, p, q_aff);
}

void ec_jac_to_aff(const curve_group *G, uint64_t *aff, const uint64_t *jac)
{
    CURVE_DISPATCH(G, to_aff_impl, aff, jac);
}

int ec_batch_to_aff(const curve_group *G, uint64_t *aff, const uint64_t *jac, size_t count)
{
    if (count == 0) return 0;
    uint64_t *pre = malloc(count * ec_cl(G) * sizeof *pre);
    if (!pre) return -ENOMEM;
    CURVE_DISPATCH(G, batch_to_aff_impl, aff, jac, count, pre);
    free(pre);
    return 0;
}

bool ec_aff_is_on_curve(const curve_group *G, const uint64_t *aff)
{
    bool out = false;
    CURVE_DISPATCH(G, on_curve_impl, &out, aff);
    return out;
}

bool ec_jac_eq(const curve_group *G, const uint64_t *p, const uint64_t *q)
{
    bool out = false;
    CURVE_DISPATCH(G, eq_impl, &out, p, q);
    return out;
}

void ec_jac_mul_scalar(const curve_group *G, uint64_t *r, const uint64_t *p_jac, const uint64_t *k,
                       unsigned nk)
{
    CURVE_DISPATCH(G, mul_scalar_impl, r, p_jac, k, nk);
}

/* ---- GLV scalar split (see curve.h) ---------------------------------------- */

/* r = a b, na and nb limbs into na + nb limbs (r must not alias a or b). */
static void glv_mp_mul(uint64_t *r, const uint64_t *a, unsigned na, const uint64_t *b, unsigned nb)
{
    for (unsigned i = 0; i < na + nb; i++) r[i] = 0;
    for (unsigned i = 0; i < na; i++) {
        uint64_t carry = 0;
        for (unsigned j = 0; j < nb; j++) {
            fe_u128 t = (fe_u128)a[i] * b[j] + r[i + j] + carry;
            r[i + j] = (uint64_t)t;
            carry = (uint64_t)(t >> 64);
        }
        r[i + nb] = carry;
    }
}

/* a -= b over n limbs (mod 2^(64n)); returns the borrow out. */
static uint64_t glv_mp_sub(uint64_t *a, const uint64_t *b, unsigned n)
{
    uint64_t borrow = 0;
    for (unsigned i = 0; i < n; i++) {
        fe_u128 d = (fe_u128)a[i] - b[i] - borrow;
        a[i] = (uint64_t)d;
        borrow = (uint64_t)(d >> 64) & 1;
    }
    return borrow;
}

/* BN254 (constants derived with extended Euclid on (r, lambda); test_curve re-checks
 * a_i + b_i lambda = 0 mod r and the split identity with GMP):
 *   a1 = b2 = 0x89d3256894d213e3, a2 = 0x6f4d8248eeb859fd0be4e1541221250b,
 *   b1 = -0x6f4d8248eeb859fc8211bbeb7d4f1128, det(a, b) = r.
 * c1 = floor(k g1 / 2^256), c2 = floor(k g2 / 2^256) with g1 = floor(2^256 b2 / r),
 * g2 = floor(2^256 |b1| / r) are the Babai coefficients k b2 / r, -k b1 / r rounded
 * down by delta_i in [0, 1.25) (the floor, plus k < 2^254 times the error of g_i below
 * 2^-256). Then (k1, k2) = (k, 0) - c1 (a1, b1) - c2 (a2, b2) = delta1 (a1, b1) +
 * delta2 (a2, b2): k1 in [0, 1.25 (a1 + a2)) is never negative and |k2| < 1.25 |b1|,
 * both below 0.55 * 2^128. */
static const uint64_t GLV_BN_G1[2] = { 0xd91d232ec7e0b3d7ULL, 0x2ULL };
static const uint64_t GLV_BN_G2[3] = { 0x7a7bd9d4391eb18dULL, 0x4ccef014a773d2cfULL, 0x2ULL };
static const uint64_t GLV_BN_A1 = 0x89d3256894d213e3ULL; /* = b2 */
static const uint64_t GLV_BN_A2[2] = { 0x0be4e1541221250bULL, 0x6f4d8248eeb859fdULL };
static const uint64_t GLV_BN_B1[2] = { 0x8211bbeb7d4f1128ULL, 0x6f4d8248eeb859fcULL }; /* |b1| */
/* BLS12-381: floor(2^256 / lambda), 129 bits. */
static const uint64_t GLV_BLS_G[3] = { 0x63f6e522f6cfee30ULL, 0x7c6becf1e01faaddULL, 0x1ULL };

static unsigned glv_split_bn254(uint64_t k1[2], uint64_t k2[2], const uint64_t k[4])
{
    uint64_t t[7], c1, c2[2], u[4], v[3], w[3];
    unsigned neg = 0;
    glv_mp_mul(t, k, 4, GLV_BN_G1, 2);
    c1 = t[4]; /* < 2^64 */
    glv_mp_mul(t, k, 4, GLV_BN_G2, 3);
    c2[0] = t[4];
    c2[1] = t[5]; /* < 2^128 */
    /* k1 = k - c1 a1 - c2 a2, known to lie in [0, 2^128): compute it mod 2^128 */
    k1[0] = k[0];
    k1[1] = k[1];
    glv_mp_mul(u, &c1, 1, &GLV_BN_A1, 1);
    glv_mp_sub(k1, u, 2);
    glv_mp_mul(u, c2, 2, GLV_BN_A2, 2);
    glv_mp_sub(k1, u, 2);
    /* k2 = c1 |b1| - c2 b2, |k2| < 2^128: in 192 bits, then sign and magnitude */
    glv_mp_mul(v, &c1, 1, GLV_BN_B1, 2);
    glv_mp_mul(w, c2, 2, &GLV_BN_A1, 1);
    if (glv_mp_sub(v, w, 3)) {
        uint64_t z[3] = { 0, 0, 0 };
        glv_mp_sub(z, v, 3);
        v[0] = z[0];
        v[1] = z[1];
        neg |= 2;
    }
    k2[0] = v[0];
    k2[1] = v[1];
    return neg;
}

static unsigned glv_split_bls12_381(const curve_group *G, uint64_t k1[2], uint64_t k2[2], const uint64_t k[4])
{
    uint64_t t[7], q[2], u[4], rem[4];
    const uint64_t *lam = G->lambda;
    /* q = floor(k g / 2^256) <= k div lambda, short of it by less than 1.5 */
    glv_mp_mul(t, k, 4, GLV_BLS_G, 3);
    q[0] = t[4];
    q[1] = t[5];
    memcpy(rem, k, sizeof rem);
    glv_mp_mul(u, q, 2, lam, 2);
    glv_mp_sub(rem, u, 4); /* k - q lambda >= 0 */
    for (;;) {             /* at most twice */
        uint64_t d[4] = { rem[0], rem[1], rem[2], rem[3] }, l4[4] = { lam[0], lam[1], 0, 0 };
        if (glv_mp_sub(d, l4, 4)) break; /* rem < lambda */
        memcpy(rem, d, sizeof rem);
        if (++q[0] == 0) q[1]++;
    }
    k1[0] = rem[0];
    k1[1] = rem[1];
    k2[0] = q[0]; /* <= (r-1)/lambda = lambda + 1 < 2^128 */
    k2[1] = q[1];
    return 0;
}

unsigned ec_glv_split(const curve_group *G, uint64_t k1[2], uint64_t k2[2], const uint64_t k[4])
{
    if (G->Fr->id == FIELD_ID_BN254_FR) return glv_split_bn254(k1, k2, k);
    return glv_split_bls12_381(G, k1, k2, k);
}

const curve_group *curve_g1_for(const field_desc *Fq, const field_desc *Fr)
{
    if (Fq->id == FIELD_ID_BN254_FQ && Fr->id == FIELD_ID_BN254_FR) return &G1_BN254;
    if (Fq->id == FIELD_ID_BLS12_381_FQ && Fr->id == FIELD_ID_BLS12_381_FR) return &G1_BLS12_381;
    return NULL;
}

const curve_group *curve_g2_for(const field_desc *Fq, const field_desc *Fr)
{
    if (Fq->id == FIELD_ID_BN254_FQ && Fr->id == FIELD_ID_BN254_FR) return &G2_BN254;
    if (Fq->id == FIELD_ID_BLS12_381_FQ && Fr->id == FIELD_ID_BLS12_381_FR) return &G2_BLS12_381;
    return NULL;
}
