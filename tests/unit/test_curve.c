/* test_curve.c — G1/G2 formulas (curve.h, zk/curve.c) for BN254 and BLS12-381:
 * generators, special cases of addition, batch conversion, scalar multiplication. */
#include <check.h>
#include <gmp.h>
#include <stdlib.h>
#include <string.h>

#include "zk/curve.h"

#include "helper_test.h"

static const curve_group *const GROUPS[] = { &G1_BN254, &G2_BN254, &G1_BLS12_381, &G2_BLS12_381 };

static void gen_jac(const curve_group *G, uint64_t *g)
{
    ec_jac_from_aff(G, g, G->gen);
}

/* random point k·G, jacobian with a non-trivial Z (it went through additions) */
static void rand_point(const curve_group *G, uint64_t *p)
{
    uint64_t g[EC_MAX_JAC], k[4];
    gen_jac(G, g);
    test_rand_scalar(G->Fr, k);
    ec_jac_mul_scalar(G, p, g, k, 4);
}

/* want = p + q by the general addition and by the mixed one (q made affine). */
static void check_sum(const curve_group *G, const uint64_t *want, const uint64_t *p, const uint64_t *q,
                      const char *what)
{
    uint64_t r[EC_MAX_JAC], qa[EC_MAX_AFF];
    ec_add(G, r, p, q);
    ck_assert_msg(ec_jac_eq(G, r, want), "%s: %s by ec_add", G->name, what);
    ec_jac_to_aff(G, qa, q);
    ec_add_aff(G, r, p, qa);
    ck_assert_msg(ec_jac_eq(G, r, want), "%s: %s by ec_add_aff", G->name, what);
}

TEST(test_curve_generator_on_curve_with_order_r, 4)
{
    const curve_group *G = GROUPS[_i];
    uint64_t g[EC_MAX_JAC], r[EC_MAX_JAC], rm1[4];
    ck_assert(ec_aff_is_on_curve(G, G->gen));
    ck_assert(!ec_aff_is_inf(G, G->gen));
    gen_jac(G, g);
    ec_jac_mul_scalar(G, r, g, G->Fr->p, 4); /* r·G = O */
    ck_assert(ec_jac_is_inf(G, r));
    memcpy(rm1, G->Fr->p, 32);
    rm1[0] -= 1;
    ec_jac_mul_scalar(G, r, g, rm1, 4); /* (r-1)·G = -G */
    ec_jac_neg(G, g, g);
    ck_assert(ec_jac_eq(G, r, g));
    uint64_t off[EC_MAX_AFF]; /* a perturbed point is off the curve */
    memcpy(off, G->gen, sizeof off);
    off[0] ^= 1;
    ck_assert(!ec_aff_is_on_curve(G, off));
    uint64_t inf[EC_MAX_AFF] = { 0 };
    ck_assert(ec_aff_is_on_curve(G, inf));
}
END_TEST

TEST(test_curve_point_plus_negation_is_infinity, 4)
{
    const curve_group *G = GROUPS[_i];
    uint64_t p[EC_MAX_JAC], n[EC_MAX_JAC], r[EC_MAX_JAC], o[EC_MAX_JAC], a[EC_MAX_AFF], na[EC_MAX_AFF];
    ec_jac_set_inf(G, o);
    for (int k = 0; k < 10; k++) {
        rand_point(G, p);
        ec_jac_neg(G, n, p);
        check_sum(G, o, p, n, "P + (-P) = O");
        ec_jac_to_aff(G, a, p); /* -P negated in affine form */
        ec_aff_neg(G, na, a);
        ck_assert(ec_aff_is_on_curve(G, na));
        ec_add_aff(G, r, p, na);
        ck_assert(ec_jac_is_inf(G, r));
    }
}
END_TEST

TEST(test_curve_double_equals_add_to_self, 4)
{
    const curve_group *G = GROUPS[_i];
    uint64_t p[EC_MAX_JAC], d[EC_MAX_JAC], s[EC_MAX_JAC], q[EC_MAX_JAC], a[EC_MAX_AFF];
    for (int k = 0; k < 10; k++) {
        rand_point(G, p);
        ec_dbl(G, d, p);
        ec_jac_copy(G, q, p);
        check_sum(G, d, p, q, "2P = P + P"); /* distinct buffers, same point */
        ec_add(G, s, p, p);                  /* aliased */
        ck_assert(ec_jac_eq(G, d, s));
        ec_jac_to_aff(G, a, d);
        ck_assert(ec_aff_is_on_curve(G, a));
    }
    ec_jac_set_inf(G, p); /* 2·O = O */
    ec_dbl(G, d, p);
    ck_assert(ec_jac_is_inf(G, d));
}
END_TEST

TEST(test_curve_mixed_add_handles_infinity_and_agrees_with_add, 4)
{
    const curve_group *G = GROUPS[_i];
    uint64_t p[EC_MAX_JAC], q[EC_MAX_JAC], r1[EC_MAX_JAC], r2[EC_MAX_JAC], inf[EC_MAX_JAC];
    uint64_t infa[EC_MAX_AFF] = { 0 };
    ec_jac_set_inf(G, inf);
    for (int k = 0; k < 10; k++) {
        rand_point(G, p);
        rand_point(G, q);
        ec_add(G, r2, p, q);
        check_sum(G, r2, p, q, "P + Q");
        check_sum(G, p, p, inf, "P + O");
        check_sum(G, q, inf, q, "O + Q");
    }
    ec_add_aff(G, r1, inf, infa); /* O + O */
    ck_assert(ec_jac_is_inf(G, r1));
}
END_TEST

TEST(test_curve_batch_to_aff_matches_single_with_infinity, 4)
{
    const curve_group *G = GROUPS[_i];
    const unsigned cl = ec_cl(G);
    const size_t n = 40;
    uint64_t *jac = malloc(n * 3 * cl * 8), *aff = malloc(n * 2 * cl * 8), one[EC_MAX_AFF];
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || i % 7 == 3 || i == n - 1)
            ec_jac_set_inf(G, jac + i * 3 * cl);
        else
            rand_point(G, jac + i * 3 * cl);
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

/* out = (k mod r)·p, k reduced by GMP (k is changed). */
static void mul_mod_r(const curve_group *G, uint64_t *out, const uint64_t *p, mpz_t k, const mpz_t r)
{
    uint64_t c[4] = { 0 };

    mpz_mod(k, k, r);
    mpz_export(c, NULL, -1, 8, 0, 0, k);
    ec_jac_mul_scalar(G, out, p, c, 4);
}

/* k = 2^bits + d (d may be negative). */
static void pow2_plus(mpz_t k, unsigned bits, int d)
{
    mpz_set_ui(k, 1);
    mpz_mul_2exp(k, k, bits);
    if (d < 0)
        mpz_sub_ui(k, k, (unsigned long)-d);
    else
        mpz_add_ui(k, k, (unsigned long)d);
}

/* a·P + b·P = ((a + b) mod r)·P, and (a·b)·G = a·(b·G), with GMP for the scalars. */
TEST(test_curve_scalar_mul_is_linear, 4)
{
    const curve_group *G = GROUPS[_i];
    uint64_t p[EC_MAX_JAC], ap[EC_MAX_JAC], bp[EC_MAX_JAC], s[EC_MAX_JAC], t[EC_MAX_JAC];
    uint64_t a[4], b[4];
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
        mul_mod_r(G, t, p, za, zr);
        ck_assert(ec_jac_eq(G, s, t));
        /* (a b mod r)·P = a·(b·P) */
        mpz_import(za, 4, -1, 8, 0, 0, a);
        mpz_mul(za, za, zb);
        mul_mod_r(G, t, p, za, zr);
        ec_jac_mul_scalar(G, s, bp, a, 4);
        ck_assert(ec_jac_eq(G, s, t));
    }
    mpz_clears(za, zb, zr, NULL);
}
END_TEST

static void mpz_from_limbs(mpz_t z, const uint64_t *a, size_t n)
{
    mpz_import(z, n, -1, 8, 0, 0, a);
}

/* The GLV constants, by GMP: beta^3 = 1 in Fq (beta != 1), lambda^2 + lambda + 1 = 0
 * mod r (so lambda^3 = 1, lambda != 1), and phi(P) = (beta x, y) equals lambda P for the
 * generator, random points and infinity, against the double-and-add multiplication. */
TEST(test_curve_glv_endomorphism_is_lambda, 4)
{
    const curve_group *G = GROUPS[_i];
    const unsigned n = G->F->n;
    mpz_t q, r, b, l, t;
    mpz_inits(q, r, b, l, t, NULL);
    mpz_from_limbs(q, G->F->p, n);
    mpz_from_limbs(r, G->Fr->p, 4);
    uint64_t bc[FE_MAX_LIMBS];
    fe_from_mont(G->F, bc, G->beta);
    mpz_from_limbs(b, bc, n);
    mpz_powm_ui(t, b, 3, q);
    ck_assert_int_eq(mpz_cmp_ui(t, 1), 0);
    ck_assert_int_ne(mpz_cmp_ui(b, 1), 0);
    mpz_from_limbs(l, G->lambda, 4);
    ck_assert_int_lt(mpz_cmp(l, r), 0);
    mpz_mul(t, l, l);
    mpz_add(t, t, l);
    mpz_add_ui(t, t, 1);
    mpz_mod(t, t, r);
    ck_assert_int_eq(mpz_sgn(t), 0);
    mpz_powm_ui(t, l, 3, r);
    ck_assert_int_eq(mpz_cmp_ui(t, 1), 0);
    mpz_clears(q, r, b, l, t, NULL);

    uint64_t p[EC_MAX_JAC], a[EC_MAX_AFF], e[EC_MAX_AFF], ej[EC_MAX_JAC], want[EC_MAX_JAC];
    for (int k = 0; k < 6; k++) {
        if (k == 0)
            gen_jac(G, p);
        else
            rand_point(G, p);
        ec_jac_to_aff(G, a, p);
        ec_aff_endo(G, e, a);
        ck_assert(ec_aff_is_on_curve(G, e));
        ec_jac_from_aff(G, ej, e);
        ec_jac_mul_scalar(G, want, p, G->lambda, 4);
        ck_assert_msg(ec_jac_eq(G, ej, want), "%s: phi(P) != lambda P (point %d)", G->name, k);
        ec_aff_endo(G, a, a); /* in place */
        ck_assert(ec_jac_eq(G, ej, (ec_jac_from_aff(G, want, a), want)));
    }
    uint64_t inf[EC_MAX_AFF] = { 0 };
    ec_aff_endo(G, e, inf);
    ck_assert(ec_aff_is_inf(G, e));
}
END_TEST

/* ec_glv_split against GMP: k = +-k1 +- k2 lambda (mod r) with k1, k2 < 2^128, for
 * random scalars, the edges (0, 1, r-1, lambda and neighbours, r - lambda, (r-1)/2,
 * 2^127, 2^128 - 1, 2^254 and 2^255 when below r) and scalars next to where the
 * Babai quotients floor(k g / 2^256) step (k = ceil(m 2^256 / g) + {-1, 0, 1}). */
TEST(test_curve_glv_split_identity, 4)
{
    const curve_group *G = GROUPS[_i];
    mpz_t r, l, k, a, b, t, g1, g2, m;
    gmp_randstate_t rs;
    gmp_randinit_default(rs);
    gmp_randseed_ui(rs, 0x5eed + (unsigned long)_i);
    mpz_inits(r, l, k, a, b, t, g1, g2, m, NULL);
    mpz_from_limbs(r, G->Fr->p, 4);
    mpz_from_limbs(l, G->lambda, 4);
    /* the quotient multipliers (as in zk/curve.c, recomputed here): BN254 g1, g2 from
     * the basis; BLS12-381 floor(2^256 / lambda) */
    if (G->Fr->id == FIELD_ID_BN254_FR) {
        mpz_set_str(g1, "89d3256894d213e3", 16);
        mpz_mul_2exp(g1, g1, 256);
        mpz_fdiv_q(g1, g1, r);
        mpz_set_str(g2, "6f4d8248eeb859fc8211bbeb7d4f1128", 16);
        mpz_mul_2exp(g2, g2, 256);
        mpz_fdiv_q(g2, g2, r);
    } else {
        mpz_set_ui(g1, 1);
        mpz_mul_2exp(g1, g1, 256);
        mpz_fdiv_q(g1, g1, l);
        mpz_set(g2, g1);
    }
    const int nrand = 20000, nedge = 40, nstep = 3 * 2 * 200;
    for (int it = 0; it < nrand + nedge + nstep; it++) {
        uint64_t kl[4] = { 0 }, k1[2], k2[2];
        if (it < nrand) {
            test_rand_scalar(G->Fr, kl);
            mpz_from_limbs(k, kl, 4);
        } else if (it < nrand + nedge) {
            int e = it - nrand;
            switch (e % 10) {
            case 0: mpz_set_ui(k, (unsigned long)(e / 10)); break;        /* 0..3 */
            case 1: mpz_sub_ui(k, r, (unsigned long)(1 + e / 10)); break; /* r-1.. */
            case 2: mpz_add_ui(k, l, (unsigned long)(e / 10)); break;     /* lambda.. */
            case 3: mpz_sub_ui(k, l, (unsigned long)(1 + e / 10)); break;
            case 4:
                mpz_sub(k, r, l);
                mpz_add_ui(k, k, (unsigned long)(e / 10));
                break;
            case 5:
                mpz_fdiv_q_2exp(k, r, 1);
                mpz_add_ui(k, k, (unsigned long)(e / 10));
                break;
            case 6: pow2_plus(k, 127, -(e / 10)); break;
            case 7: pow2_plus(k, 128, -(1 + e / 10)); break;
            case 8: pow2_plus(k, 254, e / 10); break;
            default:
                mpz_mul(k, l, l);
                mpz_add_ui(k, k, (unsigned long)(e / 10));
                mpz_mod(k, k, r);
                break;
            }
            if (mpz_cmp(k, r) >= 0) mpz_mod(k, k, r);
        } else {
            int e = it - nrand - nedge;
            /* quotient m of the size c1 (64 bits) or c2 (127) take below r */
            mpz_urandomb(m, rs, (e / 3) % 2 || G->Fr->id != FIELD_ID_BN254_FR ? 127 : 64);
            mpz_mul_2exp(k, m, 256);
            mpz_cdiv_q(k, k, (e / 3) % 2 ? g2 : g1);
            mpz_add_ui(k, k, 1);
            mpz_sub_ui(k, k, (unsigned long)(e % 3));
            mpz_mod(k, k, r);
        }
        memset(kl, 0, sizeof kl);
        mpz_export(kl, NULL, -1, 8, 0, 0, k);
        unsigned neg = ec_glv_split(G, k1, k2, kl);
        ck_assert_uint_lt(neg, 4);
        mpz_from_limbs(a, k1, 2);
        mpz_from_limbs(b, k2, 2);
        if (neg & 1) mpz_neg(a, a);
        if (neg & 2) mpz_neg(b, b);
        mpz_addmul(a, b, l); /* +-k1 +- k2 lambda */
        mpz_sub(a, a, k);
        mpz_mod(a, a, r);
        ck_assert_msg(mpz_sgn(a) == 0, "%s: GLV split identity fails (case %d)", G->name, it);
    }
    mpz_clears(r, l, k, a, b, t, g1, g2, m, NULL);
    gmp_randclear(rs);
}
END_TEST

TEST(test_curve_lookup_by_fields, 1)
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
    const struct test_opts o = { .timeout = 120 };

    test_rng_seed(0xda3e39cb94b95bdbULL);
    return test_main("curve", &o);
}
