/* curve.c — curve constants and the out-of-line curve helpers. Formulas are inline
 * in curve.h. Each public function dispatches on the group id to an inlined body
 * specialised for that group (CURVE_DISPATCH). */
#include "cuzk/curve.h"

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
    ecf_mul(G, t, jac, zi2);            /* x = X / Z^2 */
    ecf_mul(G, zi2, zi2, zi);
    ecf_mul(G, aff + cl, jac + cl, zi2); /* y = Y / Z^3 */
    ecf_copy(G, aff, t);
}

CUZK_HD void batch_to_aff_impl(const curve_group *G, uint64_t *aff, const uint64_t *jac, size_t count, uint64_t *pre)
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
        if (i > 0) ecf_mul(G, zi, inv, pre + (i - 1) * cl);
        else ecf_copy(G, zi, inv);
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
    ecf_sqr(G, lhs, aff + cl);          /* y^2 */
    ecf_sqr(G, rhs, aff);
    ecf_mul(G, rhs, rhs, aff);
    ecf_add(G, rhs, rhs, G->b);         /* x^3 + b */
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

CUZK_HD void mul_scalar_impl(const curve_group *G, uint64_t *r, const uint64_t *p_jac, const uint64_t *k, unsigned nk)
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

void ec_jac_mul_scalar(const curve_group *G, uint64_t *r, const uint64_t *p_jac, const uint64_t *k, unsigned nk)
{
    CURVE_DISPATCH(G, mul_scalar_impl, r, p_jac, k, nk);
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
