/* test_msm_fixed.c — the fixed-base MSM (zk/msm_fixed.c, msm.h msm_table) against
 * msm_naive and msm_run on random and edge scalars and bases, both curves, G1 and G2. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zk/curve.h"
#include "zk/msm.h"
#include "zk/ifma.h"

#include "helper_test.h"

static const curve_group *const GROUPS[] = { &G1_BN254, &G2_BN254, &G1_BLS12_381, &G2_BLS12_381 };

/* r - 1 - k as 4 little-endian limbs (k small). */
static void r_minus(const curve_group *G, uint64_t out[4], uint64_t k)
{
    memcpy(out, G->Fr->p, 32);
    uint64_t borrow = k + 1;
    for (unsigned l = 0; l < 4 && borrow; l++) {
        uint64_t v = out[l];
        out[l] = v - borrow;
        borrow = v < borrow;
    }
}

/* The table's MSM equals msm_naive and msm_run on these terms, at window c (0: the
 * model's) and threads 1..3. */
static void check_table(const curve_group *G, const uint8_t *bases, const uint8_t *sc, size_t n, unsigned c,
                        const char *what)
{
    uint64_t want[EC_MAX_JAC], plain[EC_MAX_JAC], got[EC_MAX_JAC];
    msm_table *t = NULL;
    ck_assert_int_eq(msm_naive(G, want, bases, sc, n, 32), 0);
    ck_assert_int_eq(msm_run(G, plain, bases, sc, n, 32, 2), 0);
    ck_assert_msg(ec_jac_eq(G, plain, want), "%s: msm_run differs from msm_naive (%s)", G->name, what);
    ck_assert_int_eq(msm_table_build(G, &t, bases, n, c, 2), 0);
    ck_assert_uint_gt(msm_table_bytes(t), 0);
    for (unsigned th = 1; th <= 3; th++) {
        memset(got, 0xa5, sizeof got);
        ck_assert_int_eq(msm_run_table(t, got, sc, n, 32, th), 0);
        ck_assert_msg(ec_jac_eq(G, got, want), "%s: table MSM (%s, n=%zu, c=%u, threads=%u) differs", G->name,
                      what, n, msm_table_c(t), th);
    }
    msm_table_free(t);
}

/* Random terms at sizes around a range's edges, windows 2 .. 16. */
TEST(test_msm_table_matches_naive_on_random_terms, 4)
{
    const curve_group *G = GROUPS[_i];
    const size_t n = 67;
    uint64_t *pts = test_rand_points(G, n);
    uint64_t *sc = malloc(n * 32);
    ck_assert_ptr_nonnull(sc);
    test_rand_scalars(G->Fr, sc, n, TEST_SCALARS_UNIFORM);
    static const unsigned cs[] = { 2, 3, 5, 8, 13, 16 };
    for (size_t k = 0; k < TEST_N(cs); k++) check_table(G, (uint8_t *)pts, (uint8_t *)sc, n, cs[k], "random");
    check_table(G, (uint8_t *)pts, (uint8_t *)sc, 1, 4, "one term");
    test_rand_scalars(G->Fr, sc, n, TEST_SCALARS_WITNESS);
    check_table(G, (uint8_t *)pts, (uint8_t *)sc, n, 7, "witness-like");
    free(sc);
    free(pts);
}
END_TEST

/* 0, 1, 2, r-1, r-2, (r-1)/2 and (r+1)/2 (the fold's edge), digits of exactly
 * 2^(c-1) (the one window's sign flip) and all-ones windows, repeated bases, bases at
 * infinity, a term cancelling another. */
TEST(test_msm_table_edge_scalars_and_bases, 4)
{
    const curve_group *G = GROUPS[_i];
    const unsigned cl = ec_cl(G);
    const size_t n = 24, pl = 2 * cl;
    uint64_t *pts = test_rand_points(G, n);
    uint64_t sc[24][4];
    test_rand_scalars(G->Fr, &sc[0][0], n, TEST_SCALARS_UNIFORM);
    memset(sc[0], 0, 32);
    memset(sc[1], 0, 32);
    sc[1][0] = 1;
    memset(sc[2], 0, 32);
    sc[2][0] = 2;
    r_minus(G, sc[3], 0); /* r - 1 */
    r_minus(G, sc[4], 1); /* r - 2 */
    for (unsigned l = 0; l < 4; l++) sc[5][l] = (G->Fr->p[l] >> 1) | (l < 3 ? G->Fr->p[l + 1] << 63 : 0);
    memcpy(sc[6], sc[5], 32);
    sc[6][0] += 1; /* (r+1)/2: the first scalar folded */
    memset(sc[7], 0, 32);
    sc[7][0] = 1u << 3;   /* a digit 2^(c-1) at c = 4 */
    memset(sc[8], 0, 32); /* digits 2^(c-1) in many windows at c = 4: */
    for (unsigned l = 0; l < 3; l++) sc[8][l] = 0x8888888888888888ULL;
    memset(sc[9], 0, 32);
    sc[9][0] = ~UINT64_C(0);
    sc[9][1] = ~UINT64_C(0);          /* all ones: carries through every window */
    memset(pts + 10 * pl, 0, pl * 8); /* base at infinity, random scalar */
    memset(pts + 11 * pl, 0, pl * 8); /* base at infinity, r - 1 */
    memcpy(sc[11], sc[3], 32);
    for (size_t i = 13; i < 18; i++) memcpy(pts + i * pl, pts + 12 * pl, pl * 8); /* repeated base */
    memcpy(sc[14], sc[13], 32);                                                   /* ... same scalar too */
    memcpy(pts + 19 * pl, pts + 18 * pl, pl * 8);                                 /* s P + (r - s) P = O */
    {
        uint64_t rs[4], borrow = 0;
        for (unsigned l = 0; l < 4; l++) {
            unsigned __int128 d = (unsigned __int128)G->Fr->p[l] - sc[18][l] - borrow;
            rs[l] = (uint64_t)d;
            borrow = (uint64_t)(d >> 64) & 1;
        }
        memcpy(sc[19], rs, 32);
    }
    static const unsigned cs[] = { 2, 4, 9, 15 };
    for (size_t k = 0; k < TEST_N(cs); k++) check_table(G, (uint8_t *)pts, (uint8_t *)sc, n, cs[k], "edge");

    /* every base at infinity, and every scalar zero: infinity */
    uint64_t r[EC_MAX_JAC];
    msm_table *t = NULL;
    uint8_t *z = calloc(n, 32);
    ck_assert_int_eq(msm_table_build(G, &t, (uint8_t *)pts, n, 6, 1), 0);
    ck_assert_int_eq(msm_run_table(t, r, z, n, 32, 2), 0);
    ck_assert(ec_jac_is_inf(G, r));
    msm_table_free(t);
    memset(pts, 0, n * pl * 8);
    ck_assert_int_eq(msm_table_build(G, &t, (uint8_t *)pts, n, 6, 1), 0);
    ck_assert_int_eq(msm_run_table(t, r, (uint8_t *)sc, n, 32, 2), 0);
    ck_assert(ec_jac_is_inf(G, r));
    msm_table_free(t);
    free(z);
    free(pts);
}
END_TEST

/* Scalars at or above r (not what the table covers) still multiply exactly: msm_run's
 * path over the table's bases; and 64-byte scalars. */
TEST(test_msm_table_scalars_above_r, 2)
{
    const curve_group *G = GROUPS[2 * _i]; /* G1 of each curve */
    const size_t n = 9;
    uint64_t *pts = test_rand_points(G, n);
    uint64_t sc[9][4];
    test_rand_scalars(G->Fr, &sc[0][0], n, TEST_SCALARS_UNIFORM);
    memcpy(sc[2], G->Fr->p, 32); /* r */
    memset(sc[3], 0xff, 32);     /* 2^256 - 1 */
    check_table(G, (uint8_t *)pts, (uint8_t *)sc, n, 5, "above r");

    uint8_t wide[9 * 64] = { 0 };
    for (size_t i = 0; i < n; i++) memcpy(wide + 64 * i, sc[i], 32);
    wide[64 * 4 + 40] = 1; /* 2^320 + s */
    uint64_t want[EC_MAX_JAC], got[EC_MAX_JAC];
    msm_table *t = NULL;
    ck_assert_int_eq(msm_naive(G, want, (uint8_t *)pts, wide, n, 64), 0);
    ck_assert_int_eq(msm_table_build(G, &t, (uint8_t *)pts, n, 5, 1), 0);
    ck_assert_int_eq(msm_run_table(t, got, wide, n, 64, 2), 0);
    ck_assert(ec_jac_eq(G, got, want));
    msm_table_free(t);
    free(pts);
}
END_TEST

/* Enough terms for the preparation's several parts and the window's several ranges
 * (MSM_PREP_MIN_PART, MSM_FIXED_MIN_RANGE), the model's window, against msm_run. */
TEST(test_msm_table_large_matches_msm_run, 4)
{
    const curve_group *G = GROUPS[_i];
    const size_t n = G->F->n == 4 ? 2 * 4096 + 3 : 1500;
    uint64_t *pts = test_rand_points(G, n), *sc = malloc(n * 32);
    ck_assert_ptr_nonnull(sc);
    test_rand_scalars(G->Fr, sc, n, TEST_SCALARS_UNIFORM);
    for (size_t i = 0; i < n; i += 89) memset(sc + 4 * i, 0, 32);
    uint64_t want[EC_MAX_JAC], got[EC_MAX_JAC];
    ck_assert_int_eq(msm_run(G, want, (uint8_t *)pts, (uint8_t *)sc, n, 32, 2), 0);
    msm_table *t = NULL;
    ck_assert_int_eq(msm_table_build(G, &t, (uint8_t *)pts, n, 0, 3), 0);
    for (unsigned th = 1; th <= 3; th++) {
        ck_assert_int_eq(msm_run_table(t, got, (uint8_t *)sc, n, 32, th), 0);
        ck_assert_msg(ec_jac_eq(G, got, want), "%s: table MSM of %zu terms, threads %u", G->name, n, th);
    }
    msm_table_free(t);
    free(sc);
    free(pts);
}
END_TEST

/* The window rule: a table only where it fits the budget; the model's choice at 2^14
 * (the daemon's small partitions) is wide, and every choice fits what it was given. */
TEST(test_msm_table_window_rule, 4)
{
    const curve_group *G = GROUPS[_i];
    const size_t pb = 2 * ec_cl(G) * 8, n = (size_t)1 << 14;
    unsigned c = msm_table_window(G, n, SIZE_MAX);
    ck_assert_uint_ge(c, 12);
    ck_assert_uint_le(c, MSM_MAX_WINDOW);
    ck_assert_uint_eq(msm_table_window(G, n, n * pb), 0); /* the bases' own size: no table fits */
    const size_t budget = 24 * n * pb;
    unsigned cb = msm_table_window(G, n, budget);
    ck_assert_uint_gt(cb, 0);
    ck_assert_uint_le(n * ((G->Fr->bits - 1) / cb + 1) * pb, budget);
    ck_assert_uint_eq(msm_table_window(G, 0, SIZE_MAX), 0);
}
END_TEST

TEST(test_msm_table_rejects_bad_arguments, 1)
{
    uint64_t r[EC_MAX_JAC];
    uint8_t b[64] = { 0 }, s[32] = { 0 };
    msm_table *t = NULL;
    ck_assert_int_eq(msm_table_build(NULL, &t, b, 1, 4, 1), -EINVAL);
    ck_assert_int_eq(msm_table_build(&G1_BN254, NULL, b, 1, 4, 1), -EINVAL);
    ck_assert_int_eq(msm_table_build(&G1_BN254, &t, NULL, 1, 4, 1), -EINVAL);
    ck_assert_int_eq(msm_table_build(&G1_BN254, &t, b, 0, 4, 1), -EINVAL);
    ck_assert_int_eq(msm_table_build(&G1_BN254, &t, b, 1, 1, 1), -EINVAL);
    ck_assert_int_eq(msm_table_build(&G1_BN254, &t, b, 1, MSM_MAX_WINDOW + 1, 1), -EINVAL);
    ck_assert_ptr_null(t);
    ck_assert_int_eq(msm_table_build(&G1_BN254, &t, b, 1, 4, 1), 0);
    ck_assert_int_eq(msm_run_table(NULL, r, s, 1, 32, 1), -EINVAL);
    ck_assert_int_eq(msm_run_table(t, NULL, s, 1, 32, 1), -EINVAL);
    ck_assert_int_eq(msm_run_table(t, r, NULL, 1, 32, 1), -EINVAL);
    ck_assert_int_eq(msm_run_table(t, r, s, 2, 32, 1), -EINVAL); /* not the table's count */
    ck_assert_int_eq(msm_run_table(t, r, s, 1, 0, 1), -EINVAL);
    ck_assert_int_eq(msm_run_table(t, r, s, 1, 65, 1), -EINVAL);
    msm_table_free(t);
    msm_table_free(NULL);
}
END_TEST

/* The scalar flush (no IFMA lanes) through the table too: Check forks each test, so
 * the cached answer of ifma_available is this test's own. */
TEST(test_msm_table_scalar_flush, 2)
{
    setenv("CUZK_NO_IFMA", "1", 1);
    ck_assert(!ifma_available());
    const curve_group *G = GROUPS[_i]; /* BN254 G1 and G2 */
    const size_t n = 300;
    uint64_t *pts = test_rand_points(G, n), *sc = malloc(n * 32);
    ck_assert_ptr_nonnull(sc);
    test_rand_scalars(G->Fr, sc, n, TEST_SCALARS_UNIFORM);
    check_table(G, (uint8_t *)pts, (uint8_t *)sc, n, 11, "scalar flush");
    free(sc);
    free(pts);
}
END_TEST

int main(void)
{
    const struct test_opts o = { .timeout = 300 };

    test_rng_seed(0x2545f4914f6cdd1dULL);
    return test_main("msm_fixed", &o);
}
