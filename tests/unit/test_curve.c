/* test_curve.c — G1/G2 formulas (curve.h, zk/curve.c) for BN254 and BLS12-381:
 * generators, special cases of addition, batch conversion, scalar multiplication. */
#include <check.h>
#include <gmp.h>
#include <stdlib.h>
#include <string.h>

#include <cuzk/curve.h>

#include "helper_test.h"

static const curve_group *const GROUPS[] = {&G1_BN254, &G2_BN254, &G1_BLS12_381, &G2_BLS12_381};



static void gen_jac(const curve_group *G, uint64_t *g) { ec_jac_from_aff(G, g, G->gen); }

/* random point k·G, jacobian with a non-trivial Z (it went through additions) */
static void rand_point(const curve_group *G, uint64_t *p)
{
    uint64_t g[EC_MAX_JAC], k[4];
    gen_jac(G, g);
    test_rand_scalar(G->Fr, k);
    ec_jac_mul_scalar(G, p, g, k, 4);
}

START_TEST(test_curve_generator_on_curve_with_order_r)
{
    const curve_group *G = GROUPS[_i];
    uint64_t g[EC_MAX_JAC], r[EC_MAX_JAC], rm1[4];
    ck_assert(ec_aff_is_on_curve(G, G->gen));
    ck_assert(!ec_aff_is_inf(G, G->gen));
    gen_jac(G, g);
    ec_jac_mul_scalar(G, r, g, G->Fr->p, 4);        /* r·G = O */
    ck_assert(ec_jac_is_inf(G, r));
    memcpy(rm1, G->Fr->p, 32);
    rm1[0] -= 1;
    ec_jac_mul_scalar(G, r, g, rm1, 4);             /* (r-1)·G = -G */
    ec_jac_neg(G, g, g);
    ck_assert(ec_jac_eq(G, r, g));
    uint64_t off[EC_MAX_AFF];                        /* a perturbed point is off the curve */
    memcpy(off, G->gen, sizeof off);
    off[0] ^= 1;
    ck_assert(!ec_aff_is_on_curve(G, off));
    uint64_t inf[EC_MAX_AFF] = {0};
    ck_assert(ec_aff_is_on_curve(G, inf));
}
END_TEST

START_TEST(test_curve_point_plus_negation_is_infinity)
{
    const curve_group *G = GROUPS[_i];
    uint64_t p[EC_MAX_JAC], n[EC_MAX_JAC], r[EC_MAX_JAC], a[EC_MAX_AFF], na[EC_MAX_AFF];
    for (int k = 0; k < 10; k++) {
        rand_point(G, p);
        ec_jac_neg(G, n, p);
        ec_add(G, r, p, n);
        ck_assert(ec_jac_is_inf(G, r));
        ec_jac_to_aff(G, a, p);
        ec_aff_neg(G, na, a);
        ck_assert(ec_aff_is_on_curve(G, na));
        ec_add_aff(G, r, p, na);                      /* mixed: P + (-P) */
        ck_assert(ec_jac_is_inf(G, r));
    }
}
END_TEST

START_TEST(test_curve_double_equals_add_to_self)
{
    const curve_group *G = GROUPS[_i];
    uint64_t p[EC_MAX_JAC], d[EC_MAX_JAC], s[EC_MAX_JAC], q[EC_MAX_JAC], a[EC_MAX_AFF];
    for (int k = 0; k < 10; k++) {
        rand_point(G, p);
        ec_dbl(G, d, p);
        ec_jac_copy(G, q, p);
        ec_add(G, s, p, q);                           /* distinct buffers, same point */
        ck_assert(ec_jac_eq(G, d, s));
        ec_add(G, s, p, p);                           /* aliased */
        ck_assert(ec_jac_eq(G, d, s));
        ec_jac_to_aff(G, a, p);
        ec_add_aff(G, s, p, a);                       /* mixed P + P */
        ck_assert(ec_jac_eq(G, d, s));
        ec_jac_to_aff(G, a, d);
        ck_assert(ec_aff_is_on_curve(G, a));
    }
    ec_jac_set_inf(G, p);                             /* 2·O = O */
    ec_dbl(G, d, p);
    ck_assert(ec_jac_is_inf(G, d));
}
END_TEST

START_TEST(test_curve_mixed_add_handles_infinity_and_agrees_with_add)
{
    const curve_group *G = GROUPS[_i];
    uint64_t p[EC_MAX_JAC], q[EC_MAX_JAC], r1[EC_MAX_JAC], r2[EC_MAX_JAC], inf[EC_MAX_JAC], qa[EC_MAX_AFF];
    uint64_t infa[EC_MAX_AFF] = {0};
    ec_jac_set_inf(G, inf);
    for (int k = 0; k < 10; k++) {
        rand_point(G, p);
        rand_point(G, q);
        ec_jac_to_aff(G, qa, q);
        ec_add_aff(G, r1, p, qa);
        ec_add(G, r2, p, q);
        ck_assert(ec_jac_eq(G, r1, r2));
        ec_add_aff(G, r1, p, infa);                  /* P + O */
        ck_assert(ec_jac_eq(G, r1, p));
        ec_add_aff(G, r1, inf, qa);                  /* O + Q */
        ck_assert(ec_jac_eq(G, r1, q));
        ec_add(G, r1, inf, q);                       /* general: O + Q, P + O */
        ck_assert(ec_jac_eq(G, r1, q));
        ec_add(G, r1, p, inf);
        ck_assert(ec_jac_eq(G, r1, p));
    }
    ec_add_aff(G, r1, inf, infa);                     /* O + O */
    ck_assert(ec_jac_is_inf(G, r1));
}
END_TEST

START_TEST(test_curve_batch_to_aff_matches_single_with_infinity)
{
    const curve_group *G = GROUPS[_i];
    const unsigned cl = ec_cl(G);
    const size_t n = 40;
    uint64_t *jac = malloc(n * 3 * cl * 8), *aff = malloc(n * 2 * cl * 8), one[EC_MAX_AFF];
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || i % 7 == 3 || i == n - 1) ec_jac_set_inf(G, jac + i * 3 * cl);
        else rand_point(G, jac + i * 3 * cl);
    }
    ck_assert_int_eq(ec_batch_to_aff(G, aff, jac, n), 0);
    for (size_t i = 0; i < n; i++) {
        ec_jac_to_aff(G, one, jac + i * 3 * cl);
        ck_assert(memcmp(one, aff + i * 2 * cl, 2 * cl * 8) == 0);
        ck_assert(ec_aff_is_on_curve(G, one));
        if (ec_jac_is_inf(G, jac + i * 3 * cl)) ck_assert(ec_aff_is_inf(G, one));
    }
    ck_assert_int_eq(ec_batch_to_aff(G, aff, jac, 0), 0);
    free(jac);
    free(aff);
}
END_TEST

/* a·P + b·P = ((a + b) mod r)·P, and (a·b)·G = a·(b·G), with GMP for the scalars. */
START_TEST(test_curve_scalar_mul_is_linear)
{
    const curve_group *G = GROUPS[_i];
    uint64_t p[EC_MAX_JAC], ap[EC_MAX_JAC], bp[EC_MAX_JAC], s[EC_MAX_JAC], t[EC_MAX_JAC];
    uint64_t a[4], b[4], c[4];
    mpz_t za, zb, zr;
    mpz_inits(za, zb, zr, NULL);
    mpz_import(zr, 4, -1, 8, 0, 0, G->Fr->p);
    for (int k = 0; k < 6; k++) {
        rand_point(G, p);
        test_rand_scalar(G->Fr, a);
        test_rand_scalar(G->Fr, b);
        if (k == 0) memset(a, 0, sizeof a);           /* 0·P = O */
        if (k == 1) memset(b, 0, sizeof b), b[0] = 1; /* 1·P = P */
        ec_jac_mul_scalar(G, ap, p, a, 4);
        ec_jac_mul_scalar(G, bp, p, b, 4);
        if (k == 0) ck_assert(ec_jac_is_inf(G, ap));
        if (k == 1) ck_assert(ec_jac_eq(G, bp, p));
        ec_add(G, s, ap, bp);
        mpz_import(za, 4, -1, 8, 0, 0, a);
        mpz_import(zb, 4, -1, 8, 0, 0, b);
        mpz_add(za, za, zb);
        mpz_mod(za, za, zr);
        memset(c, 0, sizeof c);
        mpz_export(c, NULL, -1, 8, 0, 0, za);
        ec_jac_mul_scalar(G, t, p, c, 4);
        ck_assert(ec_jac_eq(G, s, t));
        /* (a b mod r)·P = a·(b·P) */
        mpz_import(za, 4, -1, 8, 0, 0, a);
        mpz_mul(za, za, zb);
        mpz_mod(za, za, zr);
        memset(c, 0, sizeof c);
        mpz_export(c, NULL, -1, 8, 0, 0, za);
        ec_jac_mul_scalar(G, t, p, c, 4);
        ec_jac_mul_scalar(G, s, bp, a, 4);
        ck_assert(ec_jac_eq(G, s, t));
    }
    mpz_clears(za, zb, zr, NULL);
}
END_TEST

START_TEST(test_curve_lookup_by_fields)
{
    ck_assert_int_eq(curve_g1_for(&FIELD_BN254_FQ, &FIELD_BN254_FR)->id, CURVE_G1_BN254);
    ck_assert_int_eq(curve_g2_for(&FIELD_BN254_FQ, &FIELD_BN254_FR)->id, CURVE_G2_BN254);
    ck_assert_int_eq(curve_g1_for(&FIELD_BLS12_381_FQ, &FIELD_BLS12_381_FR)->id, CURVE_G1_BLS12_381);
    ck_assert_int_eq(curve_g2_for(&FIELD_BLS12_381_FQ, &FIELD_BLS12_381_FR)->id, CURVE_G2_BLS12_381);
    ck_assert_ptr_null(curve_g1_for(&FIELD_BN254_FQ, &FIELD_BLS12_381_FR));
}
END_TEST

int main(void)
{
    const struct test_case t[] = {
        {"generator_on_curve_with_order_r", test_curve_generator_on_curve_with_order_r, 4},
        {"point_plus_negation_is_infinity", test_curve_point_plus_negation_is_infinity, 4},
        {"double_equals_add_to_self", test_curve_double_equals_add_to_self, 4},
        {"mixed_add_handles_infinity_and_agrees_with_add", test_curve_mixed_add_handles_infinity_and_agrees_with_add, 4},
        {"batch_to_aff_matches_single_with_infinity", test_curve_batch_to_aff_matches_single_with_infinity, 4},
        {"scalar_mul_is_linear", test_curve_scalar_mul_is_linear, 4},
        {"lookup_by_fields", test_curve_lookup_by_fields, 1},
    };
    test_rng_seed(0xda3e39cb94b95bdbULL);
    return test_run_suite("curve", t, sizeof t / sizeof t[0], 120);
}
