/* test_pairing.c — the optimal ate pairing (pairing.h, zk/pairing.c) on BN254 and
 * BLS12-381, checked against the properties that define it: bilinearity, non-
 * degeneracy, order r of the result, and the multi-pairing product. Each loop index
 * is a curve: 0 BN254, 1 BLS12-381. (Agreement with snarkjs's verifier on real proofs
 * is tests/scripts/verify_vs_snarkjs.sh.) */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "zk/pairing.h"
#include "zk/pairing_tower.h"
#include <gmp.h>

#include "helper_test.h"

static const field_desc *const FQ[] = { &FIELD_BN254_FQ, &FIELD_BLS12_381_FQ };

/* affine k·gen */
static void mul_gen(const curve_group *G, uint64_t *aff, const uint64_t *k, unsigned nk)
{
    uint64_t p[EC_MAX_JAC];
    ec_jac_from_aff(G, p, G->gen);
    ec_jac_mul_scalar(G, p, p, k, nk);
    ec_jac_to_aff(G, aff, p);
}

/* n random pairs (P[i], Q[i]) = ([a]G1, [b]G2), p1 and p2 pointing at them, as the
 * Miller loop takes them. */
static void rand_pairs(const pairing_params *pp, uint64_t (*P)[EC_MAX_AFF], uint64_t (*Q)[EC_MAX_AFF],
                       const uint64_t **p1, const uint64_t **p2, int n)
{
    uint64_t k[4];
    for (int i = 0; i < n; i++) {
        test_rand_scalar(pp->g1->Fr, k);
        mul_gen(pp->g1, P[i], k, 4);
        test_rand_scalar(pp->g1->Fr, k);
        mul_gen(pp->g2, Q[i], k, 4);
        p1[i] = P[i];
        p2[i] = Q[i];
    }
}

TEST(test_pairing_is_bilinear, 2)
{
    const pairing_params *pp = pairing_params_get(FQ[_i]);
    const field_desc *Fr = pp->g1->Fr;
    uint64_t a[4], b[4], ab[8] = { 0 }, P[EC_MAX_AFF], Q[EC_MAX_AFF], aP[EC_MAX_AFF], bQ[EC_MAX_AFF];
    uint64_t e1[FQ12_MAX_LIMBS], e2[FQ12_MAX_LIMBS], e3[FQ12_MAX_LIMBS];
    test_rand_scalar(Fr, a);
    test_rand_scalar(Fr, b);
    /* ab as an 8-limb integer (no reduction needed: the result has order r) */
    for (int i = 0; i < 4; i++) {
        unsigned __int128 c = 0;
        for (int j = 0; j < 4; j++) {
            c += (unsigned __int128)a[i] * b[j] + ab[i + j];
            ab[i + j] = (uint64_t)c;
            c >>= 64;
        }
        ab[i + 4] = (uint64_t)c;
    }
    memcpy(P, pp->g1->gen, sizeof P);
    memcpy(Q, pp->g2->gen, sizeof Q);
    mul_gen(pp->g1, aP, a, 4);
    mul_gen(pp->g2, bQ, b, 4);
    pairing(pp, e1, aP, bQ); /* e(aP, bQ) */
    pairing(pp, e2, P, Q);
    fq12_pow(pp->F, e2, e2, ab, 8); /* e(P, Q)^(ab) */
    ck_assert(fq12_eq(pp->F, e1, e2));
    /* and each argument separately: e(aP, Q) = e(P, aQ) */
    mul_gen(pp->g2, bQ, a, 4);
    pairing(pp, e1, aP, Q);
    pairing(pp, e3, P, bQ);
    ck_assert(fq12_eq(pp->F, e1, e3));
}
END_TEST

TEST(test_pairing_is_non_degenerate_of_order_r, 2)
{
    const pairing_params *pp = pairing_params_get(FQ[_i]);
    uint64_t e[FQ12_MAX_LIMBS], er[FQ12_MAX_LIMBS];
    pairing(pp, e, pp->g1->gen, pp->g2->gen);
    ck_assert(!fq12_is_one(pp->F, e));
    fq12_pow(pp->F, er, e, pp->g1->Fr->p, 4); /* e^r = 1 */
    ck_assert(fq12_is_one(pp->F, er));
}
END_TEST

TEST(test_pairing_with_negation_cancels, 2)
{
    const pairing_params *pp = pairing_params_get(FQ[_i]);
    uint64_t k[4], P[EC_MAX_AFF], nP[EC_MAX_AFF], Q[EC_MAX_AFF], nQ[EC_MAX_AFF];
    test_rand_scalar(pp->g1->Fr, k);
    mul_gen(pp->g1, P, k, 4);
    test_rand_scalar(pp->g1->Fr, k);
    mul_gen(pp->g2, Q, k, 4);
    ec_aff_neg(pp->g1, nP, P);
    ec_aff_neg(pp->g2, nQ, Q);
    bool one = false;
    const uint64_t *g1[2] = { P, nP }, *g2[2] = { Q, Q };
    ck_assert_int_eq(pairing_multi_check(pp, g1, g2, 2, &one), 0); /* e(P,Q) e(-P,Q) = 1 */
    ck_assert(one);
    const uint64_t *h1[2] = { P, P }, *h2[2] = { Q, nQ };
    ck_assert_int_eq(pairing_multi_check(pp, h1, h2, 2, &one), 0); /* e(P,Q) e(P,-Q) = 1 */
    ck_assert(one);
    const uint64_t *d1[2] = { P, P }, *d2[2] = { Q, Q };
    ck_assert_int_eq(pairing_multi_check(pp, d1, d2, 2, &one), 0); /* e(P,Q)^2 != 1 */
    ck_assert(!one);
}
END_TEST

/* A Groth16-shaped product of four: e(-aP, bQ) e(cP, dQ) e(eP, Q) e(gP, Q) = 1 with
 * ab = cd + e + g (mod r). Infinity entries contribute 1. */
TEST(test_pairing_multi_check_of_four_and_infinity, 2)
{
    const pairing_params *pp = pairing_params_get(FQ[_i]);
    const curve_group *G1 = pp->g1, *G2 = pp->g2;
    const field_desc *Fr = G1->Fr;
    enum { a, b, c, d, e }; /* k[a] .. k[e]: random scalars, km their Montgomery forms */
    uint64_t k[5][FE_MAX_LIMBS], km[5][FE_MAX_LIMBS], g[FE_MAX_LIMBS], t[FE_MAX_LIMBS], m[FE_MAX_LIMBS];
    for (int i = a; i <= e; i++) {
        test_rand_scalar(Fr, k[i]);
        fe_to_mont(Fr, km[i], k[i]);
    }
    /* g = ab - cd - e in Fr (Montgomery products cancel: mont(x)·mont(y) -> mont(xy)) */
    fe_mul(Fr, t, km[a], km[b]);
    fe_mul(Fr, m, km[c], km[d]);
    fe_sub(Fr, t, t, m);
    fe_sub(Fr, t, t, km[e]);
    fe_from_mont(Fr, g, t);
    uint64_t A[EC_MAX_AFF], B[EC_MAX_AFF], C[EC_MAX_AFF], D[EC_MAX_AFF], E[EC_MAX_AFF], Gp[EC_MAX_AFF],
        inf1[EC_MAX_AFF] = { 0 }, inf2[EC_MAX_AFF] = { 0 };
    mul_gen(G1, A, k[a], 4);
    ec_aff_neg(G1, A, A);
    mul_gen(G2, B, k[b], 4);
    mul_gen(G1, C, k[c], 4);
    mul_gen(G2, D, k[d], 4);
    mul_gen(G1, E, k[e], 4);
    mul_gen(G1, Gp, g, 4);
    const uint64_t *p1[6] = { A, C, E, Gp, inf1, G1->gen },
                   *p2[6] = { B, D, G2->gen, G2->gen, G2->gen, inf2 };
    bool one = false;
    ck_assert_int_eq(pairing_multi_check(pairing_params_get(FQ[_i]), p1, p2, 6, &one), 0);
    ck_assert(one);
    p1[2] = C; /* now wrong */
    ck_assert_int_eq(pairing_multi_check(pp, p1, p2, 6, &one), 0);
    ck_assert(!one);
}
END_TEST

/* Prepared lines (pairing_g2_lines_make) give the Miller loop value of the plain loop,
 * bit for bit: 3 plain pairs and 7 prepared ones (10 pairs: two batches), with a
 * prepared G2 point at infinity and a G1 point at infinity among them; and a changed
 * line coefficient (a planted bug in the lines) changes the value. */
TEST(test_pairing_prepared_lines_match_the_plain_loop, 2)
{
    const pairing_params *pp = pairing_params_get(FQ[_i]);
    enum { NP = 10, NPREP = 7 };
    uint64_t P[NP][EC_MAX_AFF], Q[NP][EC_MAX_AFF];
    const uint64_t *p1[NP], *p2[NP];
    rand_pairs(pp, P, Q, p1, p2, NP);
    memset(Q[4], 0, sizeof Q[4]); /* a prepared pair with Q at infinity */
    memset(P[5], 0, sizeof P[5]); /* a prepared pair with P at infinity */
    uint64_t want[FQ12_MAX_LIMBS], got[FQ12_MAX_LIMBS];
    pairing_miller_loop(pp, want, p1, p2, NP);
    pairing_g2_lines L[NPREP];
    const pairing_g2_lines *lp[NPREP];
    for (int i = 0; i < NPREP; i++) {
        ck_assert_int_eq(pairing_g2_lines_make(pp, &L[i], Q[i]), 0);
        lp[i] = &L[i];
    }
    ck_assert_uint_eq(L[4].n, 0);
    ck_assert_uint_gt(L[0].n, pp->loop_bits - 1);
    pairing_miller_loop_prep(pp, got, p1 + NPREP, p2 + NPREP, NP - NPREP, p1, lp, NPREP);
    ck_assert(fq12_eq(pp->F, got, want));
    /* the same with no plain pair, against pairing() after the final exponentiation */
    uint64_t e1[FQ12_MAX_LIMBS], e2[FQ12_MAX_LIMBS];
    pairing(pp, e1, P[0], Q[0]);
    pairing_miller_loop_prep(pp, e2, NULL, NULL, 0, p1, lp, 1);
    pairing_final_exp(pp, e2, e2);
    ck_assert(fq12_eq(pp->F, e1, e2));
    /* planted bug: one coefficient of one line changed */
    L[2].c[(L[2].n / 2) * 6 * pp->F->n] ^= 1;
    pairing_miller_loop_prep(pp, got, p1 + NPREP, p2 + NPREP, NP - NPREP, p1, lp, NPREP);
    ck_assert(!fq12_eq(pp->F, got, want));
    for (int i = 0; i < NPREP; i++) pairing_g2_lines_free(&L[i]);
    pairing_g2_lines_free(&L[0]); /* a freed value is accepted again */
}
END_TEST

/* sqrt in Fq for q = 3 mod 4 (both curves): a^((q+1)/4); false when a is no square. */
static bool fq_sqrt(const field_desc *F, uint64_t *r, const uint64_t *a)
{
    const unsigned n = F->n;
    uint64_t e[FE_MAX_LIMBS], chk[FE_MAX_LIMBS];
    memcpy(e, F->p, n * sizeof *e);
    e[0] += 1; /* p odd: no carry out of limb 0 beyond what the shift keeps (p+1 < 2^64n) */
    for (unsigned i = 0; i < n; i++) e[i] = (e[i] >> 2) | (i + 1 < n ? e[i + 1] << 62 : 0);
    fe_pow(F, r, a, e, n);
    fe_sqr(F, chk, r);
    return fe_eq(F, chk, a);
}

/* sqrt in Fq2 through the norm: s = sqrt(a0^2 + a1^2), x0 = sqrt((a0 ± s)/2), x1 = a1/(2 x0). */
static bool fq2_sqrt(const field_desc *F, uint64_t *r, const uint64_t *a)
{
    const unsigned n = F->n;
    uint64_t N[FE_MAX_LIMBS], t[FE_MAX_LIMBS], s[FE_MAX_LIMBS], half[FE_MAX_LIMBS],
        two[FE_MAX_LIMBS] = { 2 }, x0[FE_MAX_LIMBS], chk[2 * FE_MAX_LIMBS];
    fe_sqr(F, N, a);
    fe_sqr(F, t, a + n);
    fe_add(F, N, N, t);
    if (!fq_sqrt(F, s, N)) return false;
    fe_to_mont(F, two, two);
    fe_inv(F, half, two);
    for (int sign = 0; sign < 2; sign++) {
        if (sign)
            fe_sub(F, t, a, s);
        else
            fe_add(F, t, a, s);
        fe_mul(F, t, t, half);
        if (!fq_sqrt(F, x0, t) || fe_is_zero(F, x0)) continue;
        fe_add(F, t, x0, x0);
        fe_inv(F, t, t);
        memcpy(r, x0, n * sizeof *r);
        fe_mul(F, r + n, a + n, t);
        fe2_sqr(F, chk, r);
        if (memcmp(chk, a, 2 * n * sizeof *a) == 0) return true;
    }
    return false;
}

TEST(test_pairing_subgroup_check, 2)
{
    const pairing_params *pp = pairing_params_get(FQ[_i]);
    ck_assert(pairing_in_subgroup(pp->g2, pp->g2->gen));
    ck_assert(pairing_in_subgroup(pp->g1, pp->g1->gen));
    /* A point of the twist E'(Fq2) outside G2: x = (1 + k) + u for the first k making
     * x^3 + b' a square. The twist's cofactor is huge, so such a point is (with
     * overwhelming odds) not of order r; and it must still be on the curve. */
    const field_desc *F = pp->F;
    const unsigned n = F->n;
    uint64_t P[EC_MAX_AFF] = { 0 }, rhs[2 * FE_MAX_LIMBS];
    bool found = false;
    for (uint64_t k = 1; k < 64 && !found; k++) {
        uint64_t x0[FE_MAX_LIMBS] = { k };
        fe_to_mont(F, P, x0);
        fe_set_one(F, P + n);
        fe2_sqr(F, rhs, P);
        fe2_mul(F, rhs, rhs, P);
        fe2_add(F, rhs, rhs, pp->g2->b);
        found = fq2_sqrt(F, P + 2 * n, rhs);
    }
    ck_assert(found);
    ck_assert(ec_aff_is_on_curve(pp->g2, P));
    ck_assert(!pairing_in_subgroup(pp->g2, P));
}
END_TEST

/* A random Fq12 element: each Fq coefficient a random value below r (so below q),
 * in Montgomery form. */
static void rand_fq12(const field_desc *F, uint64_t *f)
{
    for (unsigned i = 0; i < 12; i++) {
        uint64_t k[FE_MAX_LIMBS] = { 0 };
        test_rand_scalar(pairing_params_get(F)->g1->Fr, k);
        fe_to_mont(F, f + i * F->n, k);
    }
}

/* f^((q^6 - 1)(q^2 + 1)), the final exponentiation's easy part, by the definition:
 * conj(f)/f is f^(q^6 - 1). Its result lies in the cyclotomic subgroup. */
static void easy_part(const pairing_params *pp, uint64_t *r, const uint64_t *f)
{
    uint64_t t[FQ12_MAX_LIMBS], u[FQ12_MAX_LIMBS];
    fq12_inv(pp->F, t, f);
    fq12_conj(pp->F, u, f);
    fq12_mul(pp->F, t, u, t);
    fq12_frob(pp, u, t, 2);
    fq12_mul(pp->F, r, u, t);
}

/* Granger-Scott's squaring (fq12_cyclo_sqr_pp) equals the plain one on cyclotomic
 * elements, over a chain of 40 squares; and a planted bug (one coefficient of the
 * input changed, so it is no longer cyclotomic) gives a value the plain squaring
 * does not: the comparison sees a wrong coefficient. */
TEST(test_pairing_cyclotomic_square_is_the_square, 2)
{
    const pairing_params *pp = pairing_params_get(FQ[_i]);
    const field_desc *F = pp->F;
    uint64_t f[FQ12_MAX_LIMBS], g[FQ12_MAX_LIMBS], want[FQ12_MAX_LIMBS], got[FQ12_MAX_LIMBS];
    rand_fq12(F, f);
    easy_part(pp, g, f);
    memcpy(got, g, sizeof got);
    for (int k = 0; k < 40; k++) {
        fq12_sqr(F, want, got);
        fq12_cyclo_sqr_pp(pp, got, got); /* in place, as the final exponentiation calls it */
        ck_assert(fq12_eq(F, got, want));
    }
    g[3 * F->n] ^= 1; /* planted bug: one limb of one coefficient */
    fq12_sqr(F, want, g);
    fq12_cyclo_sqr_pp(pp, got, g);
    ck_assert(!fq12_eq(F, got, want));
}
END_TEST

/* The final exponentiation (its easy part, then the hard part's base-q digits with
 * cyclotomic squares) against the definition: f^((q^12 - 1)/r) by plain square and
 * multiply (fq12_pow) with the exponent computed by GMP from q and r. Random f, not
 * only Miller-loop values; and a planted bug (the exponent plus one) is told apart. */
TEST(test_pairing_final_exp_is_the_definition, 2)
{
    const pairing_params *pp = pairing_params_get(FQ[_i]);
    const field_desc *F = pp->F, *Fr = pp->g1->Fr;
    mpz_t q, r, e;
    uint64_t ex[12 * FE_MAX_LIMBS + 1] = { 0 }, f[FQ12_MAX_LIMBS], want[FQ12_MAX_LIMBS], got[FQ12_MAX_LIMBS];
    size_t ne = 0;
    mpz_inits(q, r, e, NULL);
    mpz_import(q, F->n, -1, 8, 0, 0, F->p);
    mpz_import(r, Fr->n, -1, 8, 0, 0, Fr->p);
    mpz_pow_ui(e, q, 12);
    mpz_sub_ui(e, e, 1);
    ck_assert(mpz_divisible_p(e, r));
    mpz_divexact(e, e, r);
    mpz_export(ex, &ne, -1, 8, 0, 0, e);
    ck_assert_uint_le(ne, TEST_N(ex));
    for (int k = 0; k < 2; k++) {
        rand_fq12(F, f);
        fq12_pow(F, want, f, ex, (unsigned)ne);
        pairing_final_exp(pp, got, f);
        ck_assert(fq12_eq(F, got, want));
    }
    mpz_add_ui(e, e, 1); /* planted bug: f^(e + 1) */
    mpz_export(ex, &ne, -1, 8, 0, 0, e);
    fq12_pow(F, want, f, ex, (unsigned)ne);
    ck_assert(!fq12_eq(F, got, want));
    mpz_clears(q, r, e, NULL);
}
END_TEST

/* The Frobenius constants (pairing_params_get derives them from one exponentiation)
 * against their definition, xi^(i (q^k - 1)/6) by square and multiply in Fq2 with the
 * exponent computed by GMP, for k = 1..3 and i = 0..5. */
TEST(test_pairing_frobenius_constants_are_the_definition, 2)
{
    const pairing_params *pp = pairing_params_get(FQ[_i]);
    const field_desc *F = pp->F;
    const unsigned n = F->n;
    mpz_t q, e;
    mpz_inits(q, e, NULL);
    mpz_import(q, n, -1, 8, 0, 0, F->p);
    for (unsigned k = 1; k <= 3; k++) {
        for (unsigned i = 0; i < 6; i++) {
            uint64_t ex[3 * FE_MAX_LIMBS + 1] = { 0 }, acc[2 * FE_MAX_LIMBS];
            size_t ne = 0;
            mpz_pow_ui(e, q, k);
            mpz_sub_ui(e, e, 1);
            mpz_mul_ui(e, e, i);
            ck_assert(mpz_divisible_ui_p(e, 6));
            mpz_divexact_ui(e, e, 6);
            mpz_export(ex, &ne, -1, 8, 0, 0, e);
            fe_set_one(F, acc);
            fe_set_zero(F, acc + n);
            for (size_t b = ne * 64; b-- > 0;) {
                fe2_sqr(F, acc, acc);
                if ((ex[b / 64] >> (b % 64)) & 1) fe2_mul(F, acc, acc, pp->xi);
            }
            ck_assert_msg(memcmp(acc, pp->frob[k - 1][i], 2 * n * sizeof *acc) == 0, "frob[%u][%u]", k - 1,
                          i);
        }
    }
    mpz_clears(q, e, NULL);
}
END_TEST

/* The multi-pairing (one Miller loop over n pairs, one final exponentiation) equals
 * the product of n single pairings, on random points of both groups (n = 1..4), with
 * and without prepared lines for some of the G2 points; and one changed point is
 * told apart. */
TEST(test_pairing_multi_pairing_is_the_product_of_pairings, 2)
{
    const pairing_params *pp = pairing_params_get(FQ[_i]);
    const field_desc *F = pp->F;
    enum { NP = 4 };
    uint64_t P[NP][EC_MAX_AFF], Q[NP][EC_MAX_AFF];
    const uint64_t *p1[NP], *p2[NP];
    rand_pairs(pp, P, Q, p1, p2, NP);
    uint64_t want[FQ12_MAX_LIMBS], e[FQ12_MAX_LIMBS], got[FQ12_MAX_LIMBS];
    for (size_t n = 1; n <= NP; n++) {
        fq12_set_one(F, want);
        for (size_t i = 0; i < n; i++) {
            pairing(pp, e, P[i], Q[i]);
            fq12_mul(F, want, want, e);
        }
        pairing_miller_loop(pp, got, p1, p2, n);
        pairing_final_exp(pp, got, got);
        ck_assert(fq12_eq(F, got, want));
        /* the last pair's G2 point by prepared lines */
        pairing_g2_lines L;
        ck_assert_int_eq(pairing_g2_lines_make(pp, &L, Q[n - 1]), 0);
        const pairing_g2_lines *lp[1] = { &L };
        const uint64_t *pg1[1] = { P[n - 1] };
        pairing_miller_loop_prep(pp, got, p1, p2, n - 1, pg1, lp, 1);
        pairing_final_exp(pp, got, got);
        ck_assert(fq12_eq(F, got, want));
        pairing_g2_lines_free(&L);
    }
    p1[1] = P[0]; /* planted bug: one pair's G1 point replaced */
    pairing_miller_loop(pp, got, p1, p2, NP);
    pairing_final_exp(pp, got, got);
    ck_assert(!fq12_eq(F, got, want));
}
END_TEST

int main(void)
{
    const struct test_opts o = { .timeout = 120 };

    test_rng_seed(0x6a09e667f3bcc908ULL);
    return test_main("pairing", &o);
}
