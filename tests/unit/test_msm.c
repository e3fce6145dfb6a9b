/* test_msm.c — Pippenger MSM (zk/msm.c) against the naive double-and-add sum, and at
 * large sizes against (sum s_i k_i mod r)·G computed with GMP (bases are k_i·G). */
#include <check.h>
#include <errno.h>
#include <gmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zk/curve.h"
#include "zk/msm.h"
#include "zk/ifma.h"

#include "helper_test.h"

/* A TEST of n loops runs over GROUPS[0 .. n). */
static const curve_group *const GROUPS[] = { &G1_BN254, &G2_BN254, &G1_BLS12_381, &G2_BLS12_381 };

/* ---- deterministic randomness ------------------------------------------------ */

/* ---- GMP helpers (the independent reference for scalar arithmetic) ------------- */

static void mpz_from_limbs(mpz_t z, const uint64_t *a, size_t n)
{
    mpz_import(z, n, -1, 8, 0, 0, a);
}
static void mpz_to_limbs(uint64_t *a, size_t n, const mpz_t z)
{
    memset(a, 0, n * 8);
    mpz_export(a, NULL, -1, 8, 0, 0, z);
}

/* ---- fixtures: bases k_i·G (affine, zkey layout) and their k_i ---------------- */

struct pts {
    const curve_group *G;
    size_t n;
    uint64_t *aff; /* n * 2cl limbs */
    uint64_t *k;   /* n * 4 limbs: aff[i] = k[i]·G */
    uint8_t *sc;   /* n random scalars < r, 32 bytes each: the terms' scalars */
};

static struct pts pts_make(const curve_group *G, size_t n)
{
    const unsigned cl = ec_cl(G);
    uint64_t g[EC_MAX_JAC];
    uint64_t *jac = malloc((n ? n : 1) * 3 * cl * 8);
    struct pts p = { .G = G, .n = n };
    p.aff = malloc((n ? n : 1) * 2 * cl * 8);
    p.k = malloc((n ? n : 1) * 4 * 8);
    p.sc = malloc((n ? n : 1) * 32);
    ck_assert(jac && p.aff && p.k && p.sc);
    ec_jac_from_aff(G, g, G->gen);
    for (size_t i = 0; i < n; i++) {
        test_rand_scalar(G->Fr, p.k + 4 * i);
        ec_jac_mul_scalar(G, jac + i * 3 * cl, g, p.k + 4 * i, 4);
    }
    ck_assert_int_eq(ec_batch_to_aff(G, p.aff, jac, n), 0);
    free(jac);
    for (size_t i = 0; i < n; i++) {
        uint64_t k[4];
        test_rand_scalar(G->Fr, k);
        memcpy(p.sc + 32 * i, k, 32);
    }
    return p;
}

static void pts_free(struct pts *p)
{
    free(p->aff);
    free(p->k);
    free(p->sc);
}

static void assert_same(const curve_group *G, const uint64_t *a, const uint64_t *b, const char *what)
{
    ck_assert_msg(ec_jac_eq(G, a, b), "%s: %s MSM differs from the reference", G->name, what);
}

/* msm_run (threads t, window c: 0 = auto) equals msm_naive on these inputs. */
static void check_vs_naive(const curve_group *G, const uint8_t *bases, const uint8_t *sc, size_t n,
                           unsigned threads, unsigned c, const char *what)
{
    uint64_t got[EC_MAX_JAC], want[EC_MAX_JAC];
    ck_assert_int_eq(msm_naive(G, want, bases, sc, n, 32), 0);
    ck_assert_int_eq(msm_run_window(G, got, bases, sc, n, 32, threads, c), 0);
    char buf[128];
    snprintf(buf, sizeof buf, "%s n=%zu threads=%u c=%u", what, n, threads, c);
    assert_same(G, got, want, buf);
    /* and each bucket form forced (AUTO picks one of them by size), with and without
     * the GLV split (AUTO takes it only from MSM_GLV_MIN terms on) */
    static const enum msm_buckets modes[] = { MSM_BUCKETS_JACOBIAN, MSM_BUCKETS_AFFINE };
    static const char *const names[] = { "jacobian", "affine" };
    for (int glv = 0; glv < 2; glv++)
        for (int m = 0; m < 2; m++) {
            ck_assert_int_eq(
                msm_run_ext(G, got, bases, sc, n, 32, threads, c, modes[m], glv ? MSM_GLV_ON : MSM_GLV_OFF),
                0);
            snprintf(buf, sizeof buf, "%s n=%zu threads=%u c=%u buckets=%s glv=%d", what, n, threads, c,
                     names[m], glv);
            assert_same(G, got, want, buf);
        }
}

/* A TEST over the 4 GROUPS: check(G, p, n) on count terms (bases k_i·G, random scalars). */
#define TERMS_TEST(name, count, check)              \
    TEST(name, 4)                                   \
    {                                               \
        struct pts p = pts_make(GROUPS[_i], count); \
        check(p.G, &p, p.n);                        \
        pts_free(&p);                               \
    }                                               \
    END_TEST

/* ---- tests ----------------------------------------------------------------------- */

TEST(test_msm_count_zero_is_infinity, 1)
{
    for (size_t g = 0; g < 4; g++) {
        uint64_t r[EC_MAX_JAC];
        memset(r, 0xab, sizeof r);
        ck_assert_int_eq(msm_run(GROUPS[g], r, NULL, NULL, 0, 32, 1), 0);
        ck_assert(ec_jac_is_inf(GROUPS[g], r));
    }
}
END_TEST

TEST(test_msm_rejects_bad_arguments, 1)
{
    uint64_t r[EC_MAX_JAC];
    uint8_t b[64] = { 0 }, s[32] = { 0 };
    ck_assert_int_eq(msm_run(NULL, r, b, s, 1, 32, 1), -EINVAL);
    ck_assert_int_eq(msm_run(&G1_BN254, NULL, b, s, 1, 32, 1), -EINVAL);
    ck_assert_int_eq(msm_run(&G1_BN254, r, NULL, s, 1, 32, 1), -EINVAL);
    ck_assert_int_eq(msm_run(&G1_BN254, r, b, NULL, 1, 32, 1), -EINVAL);
    ck_assert_int_eq(msm_run(&G1_BN254, r, b, s, 1, 0, 1), -EINVAL);
    ck_assert_int_eq(msm_run(&G1_BN254, r, b, s, 1, 65, 1), -EINVAL);
    ck_assert_int_eq(msm_run_window(&G1_BN254, r, b, s, 1, 32, 1, MSM_MAX_WINDOW + 1), -EINVAL);
}
END_TEST

/* Random bases and scalars at sizes 1, 2, 3 and non-powers of two, threads 1..3. */
TEST(test_msm_matches_naive_on_random_terms, 4)
{
    const curve_group *G = GROUPS[_i];
    static const size_t sizes_bn[] = { 1, 2, 3, 5, 17, 100, 1000 };
    static const size_t sizes_bls[] = { 1, 2, 3, 5, 17, 100 };
    const size_t *sizes = G->F->n == 4 ? sizes_bn : sizes_bls;
    size_t ns = G->F->n == 4 ? 7 : 6;
    struct pts p = pts_make(G, sizes[ns - 1]);
    for (size_t i = 0; i < ns; i++)
        for (unsigned t = 1; t <= 3; t++) check_vs_naive(G, (uint8_t *)p.aff, p.sc, sizes[i], t, 0, "random");
    pts_free(&p);
}
END_TEST

/* Zero scalars, r-1, 1, small and small negative scalars, repeated bases, bases at
 * infinity, and a term and its negation cancelling. */
static void check_edge_terms(const curve_group *G, struct pts *p, size_t n)
{
    const unsigned cl = ec_cl(G);
    uint64_t rm1[4], k[4];
    memcpy(rm1, G->Fr->p, 32);
    rm1[0] -= 1;                     /* r - 1 */
    memset(p->sc + 0 * 32, 0, 32);   /* zero scalar */
    memcpy(p->sc + 1 * 32, rm1, 32); /* r - 1 */
    memset(p->sc + 2 * 32, 0, 32);
    p->sc[2 * 32] = 1; /* 1 */
    memset(p->sc + 3 * 32, 0, 32);
    p->sc[3 * 32] = 7; /* small */
    memcpy(k, rm1, 32);
    k[0] -= 4;
    memcpy(p->sc + 4 * 32, k, 32);              /* -5 */
    memset(p->aff + 5 * 2 * cl, 0, 2 * cl * 8); /* base at infinity, random scalar */
    memset(p->aff + 6 * 2 * cl, 0, 2 * cl * 8); /* base at infinity, scalar r - 1 */
    memcpy(p->sc + 6 * 32, rm1, 32);
    for (size_t i = 10; i < 20; i++) /* repeated base */
        memcpy(p->aff + i * 2 * cl, p->aff + 9 * 2 * cl, 2 * cl * 8);
    memcpy(p->aff + 21 * 2 * cl, p->aff + 20 * 2 * cl, 2 * cl * 8); /* s P + (r - s) P = O */
    memcpy(k, G->Fr->p, 32);
    {
        mpz_t a, b, r;
        mpz_inits(a, b, r, NULL);
        mpz_from_limbs(r, G->Fr->p, 4);
        mpz_import(a, 4, -1, 8, 0, 0, p->sc + 20 * 32);
        mpz_sub(b, r, a);
        mpz_to_limbs(k, 4, b);
        mpz_clears(a, b, r, NULL);
    }
    memcpy(p->sc + 21 * 32, k, 32);
    for (unsigned t = 1; t <= 3; t++) check_vs_naive(G, (uint8_t *)p->aff, p->sc, n, t, 0, "edge");

    /* all scalars zero, and all bases at infinity: infinity */
    uint64_t r[EC_MAX_JAC];
    uint8_t *z = calloc(n, 32);
    ck_assert_int_eq(msm_run(G, r, (uint8_t *)p->aff, z, n, 32, 2), 0);
    ck_assert(ec_jac_is_inf(G, r));
    memset(p->aff, 0, n * 2 * cl * 8);
    ck_assert_int_eq(msm_run(G, r, (uint8_t *)p->aff, p->sc, n, 32, 2), 0);
    ck_assert(ec_jac_is_inf(G, r));
    free(z);
}

TERMS_TEST(test_msm_handles_edge_scalars_and_bases, 40, check_edge_terms)

/* Witness-like scalars: mostly 0 and 1, some small, some -1: few windows. */
static void check_witness_like(const curve_group *G, struct pts *p, size_t n)
{
    uint8_t *sc = calloc(n, 32);
    uint64_t rm1[4];
    memcpy(rm1, G->Fr->p, 32);
    rm1[0] -= 1;
    for (size_t i = 0; i < n; i++) {
        uint64_t v = test_rng64() % 8;
        if (v < 5)
            sc[i * 32] = (uint8_t)(v & 1);
        else if (v == 5)
            sc[i * 32] = (uint8_t)test_rng64();
        else if (v == 6)
            memcpy(sc + i * 32, rm1, 32);
        else
            memcpy(sc + i * 32, &(uint64_t){ test_rng64() }, 8);
    }
    for (unsigned t = 1; t <= 3; t++) check_vs_naive(G, (uint8_t *)p->aff, sc, n, t, 0, "witness-like");
    free(sc);
}

TERMS_TEST(test_msm_small_witness_scalars, 300, check_witness_like)

/* Bases 4 bytes off an 8-byte boundary, as in a mapped zkey section. */
static void check_misaligned(const curve_group *G, struct pts *p, size_t n)
{
    const size_t pb = 2 * ec_cl(G) * 8;
    uint8_t *buf = malloc(n * pb + 8), *mis = buf + 4;
    memcpy(mis, p->aff, n * pb);
    uint64_t got[EC_MAX_JAC], want[EC_MAX_JAC];
    ck_assert_int_eq(msm_naive(G, want, (uint8_t *)p->aff, p->sc, n, 32), 0);
    for (unsigned t = 1; t <= 3; t++) {
        ck_assert_int_eq(msm_run(G, got, mis, p->sc, n, 32, t), 0);
        assert_same(G, got, want, "misaligned");
    }
    /* misaligned scalars too */
    uint8_t *sbuf = malloc(n * 32 + 8);
    memcpy(sbuf + 4, p->sc, n * 32);
    ck_assert_int_eq(msm_run(G, got, mis, sbuf + 4, n, 32, 2), 0);
    assert_same(G, got, want, "misaligned scalars");
    free(sbuf);
    free(buf);
}

TERMS_TEST(test_msm_reads_misaligned_bases, 50, check_misaligned)

/* Every forced window width gives the same sum (covers top-window carries). */
static void check_every_window(const curve_group *G, struct pts *p, size_t n)
{
    uint64_t want[EC_MAX_JAC], got[EC_MAX_JAC];
    ck_assert_int_eq(msm_naive(G, want, (uint8_t *)p->aff, p->sc, n, 32), 0);
    /* Each window reduces 2^(c-1) buckets whatever n is: c = 20 alone takes seconds,
     * so widths above 13 are covered once, on BN254 G1. */
    static const unsigned wide[] = { 16, 20 };
    unsigned nc = 13 + (G->id == CURVE_G1_BN254 ? 2 : 0);
    for (unsigned ci = 0; ci < nc; ci++) {
        unsigned c = ci < 13 ? ci + 1 : wide[ci - 13];
        ck_assert_int_eq(msm_run_window(G, got, (uint8_t *)p->aff, p->sc, n, 32, 1 + c % 3, c), 0);
        char buf[64];
        snprintf(buf, sizeof buf, "window c=%u", c);
        assert_same(G, got, want, buf);
        ck_assert_int_eq(
            msm_run_ext(G, got, (uint8_t *)p->aff, p->sc, n, 32, 1 + c % 3, c, MSM_BUCKETS_AUTO, MSM_GLV_ON),
            0);
        snprintf(buf, sizeof buf, "window c=%u glv", c);
        assert_same(G, got, want, buf);
    }
}

TERMS_TEST(test_msm_every_window_width_agrees, 33, check_every_window)

/* 2^12 terms: sum s_i (k_i G) = (sum s_i k_i mod r) G, the scalar sum by GMP. */
/* want = (sum_i s_i k_i mod r)·G: the bases are k_i·G (pts_make), GMP sums the scalars. */
static void gmp_scalar_sum(const curve_group *G, const struct pts *p, size_t n, uint64_t *want)
{
    mpz_t acc, r, a, b;
    mpz_inits(acc, r, a, b, NULL);
    mpz_from_limbs(r, G->Fr->p, 4);
    for (size_t i = 0; i < n; i++) {
        mpz_import(a, 4, -1, 8, 0, 0, p->sc + 32 * i);
        mpz_from_limbs(b, p->k + 4 * i, 4);
        mpz_addmul(acc, a, b);
    }
    mpz_mod(acc, acc, r);
    uint64_t k[4], g[EC_MAX_JAC];
    mpz_to_limbs(k, 4, acc);
    mpz_clears(acc, r, a, b, NULL);
    ec_jac_from_aff(G, g, G->gen);
    ec_jac_mul_scalar(G, want, g, k, 4);
}

/* BN254: 3·4096 + 5 terms, so that step 1 (prepare) runs in 2 and 3 parts whose terms
 * are closed up after (msm.c, MSM_PREP_MIN_PART); BLS12-381 bases cost a scalar
 * multiplication each to make: 2^10 there. */
TEST(test_msm_large_matches_gmp_scalar_sum, 4)
{
    const curve_group *G = GROUPS[_i];
    const size_t n = G->F->n == 4 ? 3 * 4096 + 5 : 1024;
    struct pts p = pts_make(G, n);
    for (size_t i = 0; i < n; i += 97) memset(p.sc + 32 * i, 0, 32); /* some zeros */
    uint64_t want[EC_MAX_JAC], got[EC_MAX_JAC];
    gmp_scalar_sum(G, &p, n, want);
    for (unsigned t = 1; t <= 3; t++) {
        ck_assert_int_eq(msm_run(G, got, (uint8_t *)p.aff, p.sc, n, 32, t), 0);
        assert_same(G, got, want, "large");
        ck_assert_int_eq(msm_run_opts(G, got, (uint8_t *)p.aff, p.sc, n, 32, t, 0, MSM_BUCKETS_JACOBIAN), 0);
        assert_same(G, got, want, "large jacobian");
        ck_assert_int_eq(msm_run_opts(G, got, (uint8_t *)p.aff, p.sc, n, 32, t, 0, MSM_BUCKETS_AFFINE), 0);
        assert_same(G, got, want, "large affine");
        for (int glv = 0; glv < 2; glv++) {
            ck_assert_int_eq(msm_run_ext(G, got, (uint8_t *)p.aff, p.sc, n, 32, t, 0, MSM_BUCKETS_AUTO,
                                         glv ? MSM_GLV_ON : MSM_GLV_OFF),
                             0);
            assert_same(G, got, want, glv ? "large glv" : "large no glv");
        }
    }
    /* The last term's scalar becomes r (not reduced): the last part finds it after the
     * others have split theirs, and GLV must give way to the plain path for all. */
    memcpy(p.sc + 32 * (n - 1), G->Fr->p, 32);
    gmp_scalar_sum(G, &p, n, want);
    for (unsigned t = 1; t <= 3; t++) {
        ck_assert_int_eq(
            msm_run_ext(G, got, (uint8_t *)p.aff, p.sc, n, 32, t, 0, MSM_BUCKETS_AUTO, MSM_GLV_ON), 0);
        assert_same(G, got, want, "large, a scalar = r");
    }
    pts_free(&p);
}
END_TEST

/* GLV split at its edges: k = 0, 1, 2, r-1, r-2, lambda, lambda +- 1, r - lambda,
 * lambda^2 = r - 1 - lambda, (r-1)/2, (r+1)/2, 2^127, 2^128 +- 1, multiples of a
 * lattice vector coordinate, and scalars at or above r (2^256 - 1, r, r + 1: GLV needs
 * k < r, so those MSMs run the plain path and must still multiply exactly). */
static void check_glv_edges(const curve_group *G, struct pts *p, size_t n)
{
    mpz_t r, lam, v;
    mpz_inits(r, lam, v, NULL);
    mpz_from_limbs(r, G->Fr->p, 4);
    mpz_from_limbs(lam, G->lambda, 4);
    const char *hexes[] = { "0",
                            "1",
                            "2",
                            "89d3256894d213e3",
                            "6f4d8248eeb859fd0be4e1541221250b",
                            "6f4d8248eeb859fc8211bbeb7d4f1128",
                            "80000000000000000000000000000000",
                            "100000000000000000000000000000001",
                            "ffffffffffffffffffffffffffffffff" };
    size_t at = 0;
    for (size_t h = 0; h < sizeof hexes / sizeof hexes[0]; h++) {
        mpz_set_str(v, hexes[h], 16);
        mpz_to_limbs((uint64_t *)(p->sc + 32 * at++), 4, v);
    }
    for (int d = -2; d <= 2; d++) { /* r + d for d < 0, lambda + d, r - lambda + d */
        if (d < 0) {
            mpz_add_ui(v, r, 0);
            mpz_sub_ui(v, v, (unsigned long)-d);
            mpz_to_limbs((uint64_t *)(p->sc + 32 * at++), 4, v);
        }
        d < 0 ? mpz_sub_ui(v, lam, (unsigned long)-d) : mpz_add_ui(v, lam, (unsigned long)d);
        mpz_to_limbs((uint64_t *)(p->sc + 32 * at++), 4, v);
        mpz_sub(v, r, lam);
        d < 0 ? mpz_sub_ui(v, v, (unsigned long)-d) : mpz_add_ui(v, v, (unsigned long)d);
        mpz_to_limbs((uint64_t *)(p->sc + 32 * at++), 4, v);
    }
    mpz_mul(v, lam, lam);
    mpz_mod(v, v, r);
    mpz_to_limbs((uint64_t *)(p->sc + 32 * at++), 4, v); /* lambda^2 */
    mpz_sub_ui(v, r, 1);
    mpz_fdiv_q_2exp(v, v, 1);
    mpz_to_limbs((uint64_t *)(p->sc + 32 * at++), 4, v); /* (r-1)/2 */
    mpz_add_ui(v, v, 1);
    mpz_to_limbs((uint64_t *)(p->sc + 32 * at++), 4, v); /* (r+1)/2 */
    ck_assert(at <= n);
    for (unsigned t = 1; t <= 3; t++) check_vs_naive(G, (uint8_t *)p->aff, p->sc, n, t, 0, "glv edges");
    /* all of them in one MSM, with scalars >= r: the plain path multiplies exactly */
    memset(p->sc + 32 * (n - 3), 0xff, 32);                 /* 2^256 - 1 */
    mpz_to_limbs((uint64_t *)(p->sc + 32 * (n - 2)), 4, r); /* r */
    mpz_add_ui(v, r, 1);
    mpz_to_limbs((uint64_t *)(p->sc + 32 * (n - 1)), 4, v); /* r + 1 */
    check_vs_naive(G, (uint8_t *)p->aff, p->sc, n, 2, 0, "glv edges, scalars >= r");
    mpz_clears(r, lam, v, NULL);
}

TERMS_TEST(test_msm_glv_edge_scalars, 40, check_glv_edges)

/* Batch-affine buckets under collisions: most scalars 1 (every point into one bucket
 * of window 0, past the deferral limit into the jacobian overflow), -1 and 2 on the
 * same few bases (P + P doubles, P + (-P) cancels inside a bucket), some random; at
 * several window widths (batch sizes from 1 up) and thread counts. */
/* Batches full of repeated bases and buckets (doublings, cancellations, deferrals),
 * every bucket form against msm_naive. */
static void check_batch_affine_collisions(const curve_group *G)
{
    const unsigned cl = ec_cl(G);
    const size_t nd = 24, n = G->deg == 1 ? 3000 : 1200;
    struct pts p = pts_make(G, nd);
    uint64_t *bases = malloc(n * 2 * cl * 8);
    uint8_t *sc = calloc(n, 32);
    uint64_t rm1[4];
    ck_assert(bases && sc);
    memcpy(rm1, G->Fr->p, 32);
    rm1[0] -= 1;
    for (size_t i = 0; i < n; i++) {
        memcpy(bases + i * 2 * cl, p.aff + (i % nd) * 2 * cl, 2 * cl * 8);
        uint64_t v = test_rng64() % 10;
        if (v < 7)
            sc[i * 32] = 1;
        else if (v == 7)
            memcpy(sc + i * 32, rm1, 32);
        else if (v == 8)
            sc[i * 32] = 2;
        else {
            uint64_t k[4];
            test_rand_scalar(G->Fr, k);
            memcpy(sc + i * 32, k, 32);
        }
    }
    uint64_t got[EC_MAX_JAC], want[EC_MAX_JAC];
    ck_assert_int_eq(msm_naive(G, want, (uint8_t *)bases, sc, n, 32), 0);
    static const unsigned cs[] = { 0, 2, 5, 9, 13 };
    for (unsigned ci = 0; ci < sizeof cs / sizeof cs[0]; ci++)
        for (unsigned t = 1; t <= 2; t++)
            for (int glv = 0; glv < 2; glv++) {
                ck_assert_int_eq(msm_run_ext(G, got, (uint8_t *)bases, sc, n, 32, t, cs[ci],
                                             MSM_BUCKETS_AFFINE, glv ? MSM_GLV_ON : MSM_GLV_OFF),
                                 0);
                char buf[64];
                snprintf(buf, sizeof buf, "collisions c=%u threads=%u glv=%d", cs[ci], t, glv);
                assert_same(G, got, want, buf);
            }
    free(bases);
    free(sc);
    pts_free(&p);
}

TEST(test_msm_batch_affine_collisions, 4)
{
    check_batch_affine_collisions(GROUPS[_i]);
}
END_TEST

/* The batch-affine bucket reduction (msm.c msm_aff_reduce: groups of 32 buckets at
 * c = 13, window 0 without GLV) at its degenerate additions: in group 0 bucket 2 holds
 * P and bucket 1 -P (run_g + B cancels), in group 1 buckets 34 and 33 both R (run_g + B
 * doubles), in group 2 only bucket 65 is used (sum_g + run_g doubles at the next
 * step); 300 more terms of digit 2000 in window 0 (group 62) and random above fill
 * the batches enough for the reduction to run. Threads 1..3, IFMA as the CPU has. */
static void check_reduce_degenerate(const curve_group *G, struct pts *p, size_t n)
{
    const unsigned cl = ec_cl(G);
    uint8_t *sc = calloc(n, 32);
    ck_assert(sc);
    memcpy(p->aff + 1 * 2 * cl, p->aff, 2 * cl * 8);
    ecf_neg(G, p->aff + 1 * 2 * cl + cl, p->aff + cl);            /* base 1 = -base 0 */
    memcpy(p->aff + 3 * 2 * cl, p->aff + 2 * 2 * cl, 2 * cl * 8); /* base 3 = base 2 */
    sc[0 * 32] = 2;
    sc[1 * 32] = 1;
    sc[2 * 32] = 34;
    sc[3 * 32] = 33;
    sc[4 * 32] = 66;
    for (size_t i = 5; i < n; i++) {
        uint64_t k[4];
        test_rand_scalar(G->Fr, k);
        k[3] = (k[2] >> 51); /* (k mod 2^192)·2^13 + 2000 */
        k[2] = (k[2] << 13) | (k[1] >> 51);
        k[1] = (k[1] << 13) | (k[0] >> 51);
        k[0] = (k[0] << 13) | 2000;
        memcpy(sc + i * 32, k, 32);
    }
    uint64_t got[EC_MAX_JAC], want[EC_MAX_JAC];
    ck_assert_int_eq(msm_naive(G, want, (uint8_t *)p->aff, sc, n, 32), 0);
    for (unsigned t = 1; t <= 3; t++)
        for (int m = 0; m < 2; m++) {
            ck_assert_int_eq(msm_run_ext(G, got, (uint8_t *)p->aff, sc, n, 32, t, 13,
                                         m ? MSM_BUCKETS_AFFINE : MSM_BUCKETS_AUTO, MSM_GLV_OFF),
                             0);
            char buf[64];
            snprintf(buf, sizeof buf, "reduce degenerate threads=%u affine=%d", t, m);
            assert_same(G, got, want, buf);
        }
    free(sc);
}

TERMS_TEST(test_msm_reduce_degenerate_additions, 305, check_reduce_degenerate)

/* One GLV split for several MSMs (msm_split, as groth16.c's A, B1, B2 and C): made on
 * G1, run on G1 or G2 of the curve, over the whole vector and over suffixes (C), with
 * zero scalars, r - 1 and bases at infinity on both sides of the suffix's start, at
 * threads 1..3; and a vector with a scalar = r gets no split (the MSMs run plain). */
static void check_split(const curve_group *G, struct pts *p, size_t n)
{
    const unsigned cl = ec_cl(G);
    const size_t pb = 2 * cl * 8;
    const curve_group *G1 = G->F->n == 4 ? &G1_BN254 : &G1_BLS12_381;
    uint64_t rm1[4], got[EC_MAX_JAC], want[EC_MAX_JAC];
    memcpy(rm1, G->Fr->p, 32);
    rm1[0] -= 1;
    memset(p->sc, 0, 32);               /* zero scalar */
    memcpy(p->sc + 3 * 32, rm1, 32);    /* r - 1 */
    memset(p->aff + 5 * 2 * cl, 0, pb); /* bases at infinity, before and after 300 */
    memset(p->aff + 299 * 2 * cl, 0, pb);
    memset(p->aff + 400 * 2 * cl, 0, pb);
    memset(p->sc + 401 * 32, 0, 32);
    msm_split *sp = NULL;
    ck_assert_int_eq(msm_split_make(G1, &sp, p->sc, n, 32, 2), 0);
    ck_assert(sp != NULL);
    static const size_t firsts[] = { 0, 7, 300 };
    for (size_t f = 0; f < 3; f++) {
        const size_t first = firsts[f];
        ck_assert_int_eq(
            msm_naive(G, want, (uint8_t *)p->aff + first * pb, p->sc + first * 32, n - first, 32), 0);
        for (unsigned t = 1; t <= 3; t++) {
            ck_assert_int_eq(msm_run_split(G, got, (uint8_t *)p->aff + first * pb, p->sc + first * 32,
                                           n - first, 32, sp, first, t),
                             0);
            char buf[64];
            snprintf(buf, sizeof buf, "split first=%zu threads=%u", first, t);
            assert_same(G, got, want, buf);
        }
    }
    msm_split_free(sp);
    memcpy(p->sc + 10 * 32, G->Fr->p, 32); /* r: no split */
    ck_assert_int_eq(msm_split_make(G1, &sp, p->sc, n, 32, 2), 0);
    ck_assert(sp == NULL);
    ck_assert_int_eq(msm_naive(G, want, (uint8_t *)p->aff, p->sc, n, 32), 0);
    ck_assert_int_eq(msm_run_split(G, got, (uint8_t *)p->aff, p->sc, n, 32, sp, 0, 2), 0);
    assert_same(G, got, want, "no split, a scalar = r");
}

TERMS_TEST(test_msm_split_shared_by_msms, 600, check_split)

/* Scalars equal to 1 are summed apart from the other terms (msm.c, msm_take_ones and
 * msm_run_ones: MSM_ONES_MIN = 64 of them at least): every shape of witness around
 * that pass, against GMP's sum of scalar * k_i (the independent reference), on each
 * group, at threads 1..3, each bucket form forced and AUTO, GLV on and off:
 *   all ones; ones and zeros; 63 ones (below the pass: stays in the job) and 64;
 *   ones with r - 1 (folded to 1 with the base negated: the pass's negation) and with
 *   small values (2..2^16: the rest's windows then cover 17 bits); a mix of 0, 1, r-1,
 *   small and uniform scalars (the rest full-size). The 1600-term cases give the pass
 *   ranges big enough for batches of 32 (IFMA) and 256 (mulx) at 2 threads. */
enum ones_shape { ONES_ALL, ONES_ZEROS, ONES_63, ONES_64, ONES_NEG, ONES_SMALL, ONES_MIXED, ONES_SHAPES };
static const char *const ones_names[] = { "all ones",     "ones and zeros", "63 ones", "64 ones",
                                          "ones and r-1", "ones and small", "mixed" };

static void ones_scalars(const curve_group *G, uint8_t *sc, size_t n, enum ones_shape shape)
{
    uint64_t rm1[4];
    memcpy(rm1, G->Fr->p, 32);
    rm1[0] -= 1;
    for (size_t i = 0; i < n; i++) {
        uint64_t k[4] = { 0 };
        unsigned v = (unsigned)test_rng64() % 8;
        switch (shape) {
        case ONES_ALL: k[0] = 1; break;
        case ONES_ZEROS: k[0] = v < 4; break;
        case ONES_63: k[0] = i < 63; break;
        case ONES_64: k[0] = i < 64 ? 1 : (i < 100 ? 0 : 1 + (i % 5)); break;
        case ONES_NEG:
            if (v < 4)
                k[0] = 1;
            else if (v < 7)
                memcpy(k, rm1, 32);
            break;
        case ONES_SMALL: k[0] = v < 5 ? 1 : (v < 7 ? 2 + test_rng64() % 65535 : 0); break;
        default:
            if (v < 3)
                k[0] = 1;
            else if (v == 3)
                memcpy(k, rm1, 32);
            else if (v == 4)
                k[0] = test_rng64() % 1000;
            else if (v == 5)
                test_rand_scalar(G->Fr, k);
            break;
        }
        memcpy(sc + 32 * i, k, 32);
    }
}

/* msm_run_ext on p's terms equals GMP's sum at threads 1..3, each bucket form forced
 * and AUTO, GLV on and off. */
static void check_forms_vs_gmp(const curve_group *G, struct pts *p, size_t n, const char *what)
{
    static const enum msm_buckets modes[] = { MSM_BUCKETS_AUTO, MSM_BUCKETS_JACOBIAN, MSM_BUCKETS_AFFINE };
    uint64_t want[EC_MAX_JAC], got[EC_MAX_JAC];
    gmp_scalar_sum(G, p, n, want);
    for (unsigned t = 1; t <= 3; t++)
        for (int m = 0; m < 3; m++)
            for (int glv = 0; glv < 2; glv++) {
                ck_assert_int_eq(msm_run_ext(G, got, (uint8_t *)p->aff, p->sc, n, 32, t, 0, modes[m],
                                             glv ? MSM_GLV_ON : MSM_GLV_OFF),
                                 0);
                char buf[128];
                snprintf(buf, sizeof buf, "%s, n=%zu threads=%u buckets=%d glv=%d", what, n, t, m, glv);
                assert_same(G, got, want, buf);
            }
}

static void check_ones(const curve_group *G, struct pts *p, size_t n)
{
    for (int shape = 0; shape < ONES_SHAPES; shape++) {
        ones_scalars(G, p->sc, n, (enum ones_shape)shape);
        check_forms_vs_gmp(G, p, n, ones_names[shape]);
    }
}

TERMS_TEST(test_msm_ones_apart_small, 200, check_ones)
TERMS_TEST(test_msm_ones_apart_batches, 1600, check_ones)

/* Terms of one repeated scalar are summed and run as one term of a second MSM (msm.c,
 * msm_take_repeats: from MSM_REP_MIN = 1024 prepared terms, when 1/32 of the first
 * 4096 repeat): every shape of repeats against GMP, each group, threads 1..3, each
 * bucket form, GLV on and off (1600 terms: 3200 GLV halves, 1600 plain):
 *   full-size values from a pool of 40; the pool and its negatives r - v (folded to
 *   one scalar, the bases negated: groups of mixed signs); the pool with 0, 1, r - 1,
 *   small and uniform scalars; the pool and distinct small values (the terms left
 *   alone all below 2^64: their windows few); the pool and near twins (the same low limbs, bit 192
 *   flipped: one hash, not one scalar); few repeats (1 in 64: below the probe's share,
 *   no pass); and pairs of opposite bases with one scalar, whose group sums are infinity
 *   (the second MSM drops them). */
enum rep_shape { REP_POOL, REP_FOLD, REP_MIXED, REP_SMALL, REP_NEAR, REP_FEW, REP_CANCEL, REP_SHAPES };
static const char *const rep_names[] = {
    "pool",        "pool and negatives", "pool mixed", "pool and small", "pool and near twins",
    "few repeats", "cancelling pairs"
};

static void rep_scalars(const curve_group *G, struct pts *p, size_t n, enum rep_shape shape)
{
    uint64_t pool[40][4], rm1[4];
    memcpy(rm1, G->Fr->p, 32);
    rm1[0] -= 1;
    for (int i = 0; i < 40; i++) test_rand_scalar(G->Fr, pool[i]);
    mpz_t r, v;
    mpz_inits(r, v, NULL);
    mpz_from_limbs(r, G->Fr->p, 4);
    for (size_t i = 0; i < n; i++) {
        uint64_t k[4] = { 0 };
        const unsigned u = (unsigned)(test_rng64() % 8);
        memcpy(k, pool[test_rng64() % 40], 32);
        if (shape == REP_FOLD && u < 4) { /* r - v */
            mpz_from_limbs(v, k, 4);
            mpz_sub(v, r, v);
            mpz_to_limbs(k, 4, v);
        }
        if (shape == REP_MIXED) {
            if (u == 0)
                memset(k, 0, 32);
            else if (u == 1)
                memcpy(k, (uint64_t[4]){ 1 }, 32);
            else if (u == 2)
                memcpy(k, rm1, 32);
            else if (u == 3)
                memcpy(k, (uint64_t[4]){ 2 + test_rng64() % 1000 }, 32);
            else if (u == 4)
                test_rand_scalar(G->Fr, k);
        }
        if (shape == REP_SMALL && u < 4) memcpy(k, (uint64_t[4]){ 2 + i }, 32);
        if (shape == REP_NEAR && u < 4) k[3] ^= 1; /* still below r: r's top limb is far larger */
        if (shape == REP_FEW && i % 64) test_rand_scalar(G->Fr, k);
        memcpy(p->sc + 32 * i, k, 32);
    }
    if (shape == REP_CANCEL) /* base 2i+1 = -base 2i, same scalar: each pair sums to 0 */
        for (size_t i = 0; i + 1 < n; i += 2) {
            const unsigned cl = ec_cl(G);
            uint64_t *a = p->aff + i * 2 * cl, *b = a + 2 * cl;
            memcpy(b, a, 2 * cl * 8);
            ecf_neg(G, b + cl, b + cl);
            mpz_from_limbs(v, p->k + 4 * i, 4);
            mpz_sub(v, r, v);
            mpz_to_limbs(p->k + 4 * (i + 1), 4, v);
            memcpy(p->sc + 32 * (i + 1), p->sc + 32 * i, 32);
        }
    mpz_clears(r, v, NULL);
}

static void check_repeats(const curve_group *G, struct pts *p, size_t n)
{
    for (int shape = 0; shape < REP_SHAPES; shape++) { /* REP_CANCEL last: it changes the bases */
        rep_scalars(G, p, n, (enum rep_shape)shape);
        check_forms_vs_gmp(G, p, n, rep_names[shape]);
    }
}

TERMS_TEST(test_msm_repeated_scalars, 1600, check_repeats)

/* On an IFMA CPU the BN254 G1 and G2 flushes run in lanes (ifma.h), so the cases above check
 * that path; this one turns it off (Check forks each test, so the cached answer of
 * ifma_available is this test's own) to keep the scalar flush checked too. */
TEST(test_msm_batch_affine_scalar_flush, 1)
{
    setenv("CUZK_NO_IFMA", "1", 1);
    ck_assert(!ifma_available());
    check_batch_affine_collisions(GROUPS[0]);
    check_batch_affine_collisions(GROUPS[1]); /* BN254 G2 */
    const curve_group *G = GROUPS[0];
    struct pts p = pts_make(G, 4096);
    uint64_t got[EC_MAX_JAC], want[EC_MAX_JAC];
    ck_assert_int_eq(msm_naive(G, want, (uint8_t *)p.aff, p.sc, 4096, 32), 0);
    ck_assert_int_eq(msm_run_opts(G, got, (uint8_t *)p.aff, p.sc, 4096, 32, 2, 12, MSM_BUCKETS_AFFINE), 0);
    assert_same(G, got, want, "scalar flush, 2^12 random terms, c=12");
    pts_free(&p);
}
END_TEST

int main(void)
{
    const struct test_opts o = { .timeout = 300 };

    test_rng_seed(0x9e3779b97f4a7c15ULL);
    return test_main("msm", &o);
}
