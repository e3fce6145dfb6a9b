/* test_ifma381.c — the edges of BLS12-381's lazy lambda (LANE_LAMBDA_LAZY in
 * zk/ifma381.c): G2's batch-affine addition squares and shifts lambda as the lane
 * product left it, below (2.0001p, 1.0001p) a component, not made canonical, and
 * ifma_lanes.h states how far that carries each later stage. Here every stage from
 * lambda on (ifma381_test_g2_from_lambda) is checked against GMP with lambda's
 * components at those bounds and at the other edges (0, p - 1, p, 2p - 1, limbs of all
 * ones under the bound, random): each value equal mod p to GMP's, each below the
 * bound ifma_lanes.h claims for it, every limb below 2^52. Then whole G2 additions
 * through the lanes (ifma_batch_add) against curve.h's mixed addition, on edge
 * coordinates: x's differing in one limb, y = 0, components 0 and p - 1.
 *
 * Without AVX-512 IFMA (or off x86-64) the tests print SKIP and pass, as test_ifma's. */
#include <check.h>
#include <gmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zk/curve.h"
#include "zk/field.h"
#include "zk/ifma.h"
#include "zk/ifma381.h"

#include "helper_lanes.h"
#include "helper_test.h"

static const field_desc *const Q = &FIELD_BLS12_381_FQ;

static bool have_ifma(void)
{
#if defined(__x86_64__)
    if (ifma_available()) return true;
#endif
    fprintf(stderr, "SKIP: no AVX-512 IFMA on this CPU (or CUZK_NO_IFMA=1): lane tests not run\n");
    return false;
}

#if defined(__x86_64__)
/* One block of 8 lanes: limb k of lane j at l[k][j] (ifma381.h's layout). */
typedef struct {
    uint64_t l[8][8];
} __attribute__((aligned(64))) block;

/* p, R = 2^384 (field.h's radix) and R' = 2^416 (the lanes'), the bounds lambda
 * stays below, floor(2.0001p) and floor(1.0001p) */
static mpz_t zp, zr_inv, lam_max[2];

static void gmp_setup(void)
{
    mpz_inits(zp, zr_inv, lam_max[0], lam_max[1], NULL);
    mpz_import(zp, 6, -1, 8, 0, 0, Q->p);
    mpz_setbit(zr_inv, 384);
    if (!mpz_invert(zr_inv, zr_inv, zp)) abort(); /* p is prime: cannot happen */
    for (int c = 0; c < 2; c++) {
        mpz_mul_ui(lam_max[c], zp, c == 0 ? 20001 : 10001);
        mpz_fdiv_q_ui(lam_max[c], lam_max[c], 10000);
    }
}

static void gmp_teardown(void)
{
    mpz_clears(zp, zr_inv, lam_max[0], lam_max[1], NULL);
}

static void lane_get(mpz_t z, const block *a, int j, const char *what)
{
    test_lane_get(z, a->l, 8, j, what);
}

static void lane_set(block *a, int j, const mpz_t z)
{
    test_lane_set(a->l, 8, j, z);
}

/* Below `max` (exclusive): 0, 1, p - 1, p, p + 1, 2p - 1, 2p (those of them below max),
 * max - 1, max - 2^52 (a carry into every limb), limbs 0..6 all ones under max's top
 * limb less one, 2^380 - 1, 2^381 - 1, or random. */
#define N_LAMBDA_EDGES 13
static void lambda_value(mpz_t z, const mpz_t max, unsigned pick)
{
    switch (pick) {
    case 0: mpz_set_ui(z, 0); break;
    case 1: mpz_set_ui(z, 1); break;
    case 2: mpz_sub_ui(z, zp, 1); break;
    case 3: mpz_set(z, zp); break;
    case 4: mpz_add_ui(z, zp, 1); break;
    case 5: mpz_mul_2exp(z, zp, 1), mpz_sub_ui(z, z, 1); break;
    case 6: mpz_mul_2exp(z, zp, 1); break;
    case 7: mpz_sub_ui(z, max, 1); break;
    case 8: mpz_set_ui(z, 1), mpz_mul_2exp(z, z, 52), mpz_sub(z, max, z); break;
    case 9: /* top limb under max's, every other limb 2^52 - 1 */
        mpz_tdiv_q_2exp(z, max, 364);
        mpz_sub_ui(z, z, 1);
        mpz_mul_2exp(z, z, 364);
        mpz_setbit(z, 364), mpz_sub_ui(z, z, 1);
        break;
    case 10: mpz_set_ui(z, 0), mpz_setbit(z, 380), mpz_sub_ui(z, z, 1); break;
    case 11: mpz_set_ui(z, 0), mpz_setbit(z, 381), mpz_sub_ui(z, z, 1); break;
    default: {
        uint64_t w[7];
        for (int i = 0; i < 7; i++) w[i] = test_rng64();
        mpz_import(z, 7, -1, 8, 0, 0, w);
        mpz_mod(z, z, max);
    }
    }
    if (mpz_cmp(z, max) >= 0) mpz_sub_ui(z, max, 1); /* 2p and the like under 1.0001p */
}

/* A canonical coordinate component (< p): 0, 1, p - 1, limbs of all ones under p's
 * top limb, or random. */
static void coord_value(mpz_t z, unsigned pick)
{
    switch (pick % 6) {
    case 0: mpz_set_ui(z, 0); break;
    case 1: mpz_set_ui(z, 1); break;
    case 2: mpz_sub_ui(z, zp, 1); break;
    case 3:
        mpz_tdiv_q_2exp(z, zp, 364);
        mpz_mul_2exp(z, z, 364);
        mpz_sub_ui(z, z, 1);
        break;
    default: {
        uint64_t w[7];
        for (int i = 0; i < 7; i++) w[i] = test_rng64();
        mpz_import(z, 7, -1, 8, 0, 0, w);
        mpz_mod(z, z, zp);
    }
    }
}

/* Lane j of the pair st (c0, c1) equals want mod p, each component below
 * bound10[c]/10 times p, its limbs normalised. */
static void check_stage(const block *st, int j, mpz_t want[2], const unsigned bound10[2], const char *what,
                        int round)
{
    mpz_t g, lim;
    mpz_inits(g, lim, NULL);
    for (int c = 0; c < 2; c++) {
        lane_get(g, &st[c], j, what);
        mpz_mul_ui(lim, zp, bound10[c]);
        mpz_fdiv_q_ui(lim, lim, 10);
        ck_assert_msg(mpz_cmp(g, lim) < 0, "round %d lane %d: %s c%d not below %u.%up", round, j, what, c,
                      bound10[c] / 10, bound10[c] % 10);
        mpz_mod(want[c], want[c], zp);
        mpz_mod(g, g, zp);
        ck_assert_msg(mpz_cmp(g, want[c]) == 0, "round %d lane %d: %s c%d differs from GMP", round, j, what,
                      c);
    }
    mpz_clears(g, lim, NULL);
}

/* The lanes' sums and differences are exact: lane j of st (c0, c1) must equal from's
 * lane + k·p - s1 (- s2 unless NULL); r gets that value. */
static void check_exact(const block *st, int j, mpz_t r[2], const block *from, unsigned k, mpz_t s1[2],
                        mpz_t *s2, const char *what, int round)
{
    mpz_t g;
    mpz_init(g);
    for (int c = 0; c < 2; c++) {
        lane_get(r[c], &from[c], j, what);
        mpz_addmul_ui(r[c], zp, k);
        mpz_sub(r[c], r[c], s1[c]);
        if (s2) mpz_sub(r[c], r[c], s2[c]);
        lane_get(g, &st[c], j, what);
        ck_assert_msg(mpz_cmp(g, r[c]) == 0, "round %d lane %d: %s c%d wrong", round, j, what, c);
    }
    mpz_clear(g);
}

/* GMP: r = a·b·rinv mod p in Fq2 (u^2 = -1); a, b component pairs */
static void fq2_mul(mpz_t r[2], mpz_t a[2], mpz_t b[2], const mpz_t rinv)
{
    mpz_t t;
    mpz_init(t);
    mpz_mul(r[0], a[0], b[0]);
    mpz_mul(t, a[1], b[1]);
    mpz_sub(r[0], r[0], t);
    mpz_mul(r[1], a[0], b[1]);
    mpz_addmul(r[1], a[1], b[0]);
    for (int c = 0; c < 2; c++) mpz_mul(r[c], r[c], rinv), mpz_mod(r[c], r[c], zp);
    mpz_clear(t);
}

/* The bounds ifma_lanes.h states for LANE_LAMBDA_LAZY, in tenths of p: l' is checked
 * against 2^414 apart; lambda^2 below (2.5p, 1.5p), x3 below (4.5p, 3.5p) before it is
 * made canonical, l'·(Bx + p - x3) below (2.5p, 2p), y3 below 3.5p before. */
static const unsigned B_SQ[2] = { 25, 15 }, B_X3P[2] = { 45, 35 }, B_Y3M[2] = { 25, 20 },
                      B_Y3P[2] = { 35, 35 }, B_CANON[2] = { 10, 10 };

/* Rounds of 8 lanes: the first N_LAMBDA_EDGES^2 / 8 go through every pair of lambda
 * edges (c0 below 2.0001p, c1 below 1.0001p); the rest are random below the bounds
 * with an edge now and then. Bx, Px, By: coord_value's edges and random. */
#define ROUNDS 1500
START_TEST(test_ifma381_lazy_lambda_matches_gmp)
{
    if (!have_ifma()) return;
    test_rng_seed(0x1a2b);
    block *in = aligned_alloc(64, 8 * sizeof(block)), *out = aligned_alloc(64, 14 * sizeof(block));
    ck_assert(in && out);
    mpz_t lam[2], bx[2], px[2], by[2], want[2], t[2], g, two414;
    for (int c = 0; c < 2; c++) mpz_inits(lam[c], bx[c], px[c], by[c], want[c], t[c], NULL);
    mpz_inits(g, two414, NULL);
    mpz_setbit(two414, 414);
    mpz_t *ins[4] = { lam, bx, px, by };
    for (int round = 0; round < ROUNDS; round++) {
        for (int j = 0; j < 8; j++) {
            unsigned e = (unsigned)(8 * round + j);
            const bool grid = e < N_LAMBDA_EDGES * N_LAMBDA_EDGES;
            for (int c = 0; c < 2; c++) {
                unsigned pick = grid ? (c == 0 ? e / N_LAMBDA_EDGES : e % N_LAMBDA_EDGES)
                                     : (test_rng64() % 4 == 0 ? (unsigned)(test_rng64() % N_LAMBDA_EDGES)
                                                              : N_LAMBDA_EDGES - 1);
                lambda_value(lam[c], lam_max[c], pick);
                coord_value(bx[c], e + 2 * (unsigned)c);
                coord_value(px[c], e / 6 + (unsigned)c);
                coord_value(by[c], e / 36 + 3 * (unsigned)c);
            }
            for (int v = 0; v < 4; v++)
                for (int c = 0; c < 2; c++) lane_set(&in[2 * v + c], j, ins[v][c]);
        }
        ifma381_test_g2_from_lambda(out, in);
        for (int j = 0; j < 8; j++) {
            for (int v = 0; v < 4; v++)
                for (int c = 0; c < 2; c++) lane_get(ins[v][c], &in[2 * v + c], j, "input");
            /* l' = lambda·2^32 exactly, below 2^414 */
            for (int c = 0; c < 2; c++) {
                lane_get(g, &out[c], j, "l'");
                mpz_mul_2exp(t[c], lam[c], 32);
                ck_assert_msg(mpz_cmp(g, t[c]) == 0, "round %d lane %d: l' c%d != lambda 2^32", round, j, c);
                ck_assert_msg(mpz_cmp(g, two414) < 0, "round %d lane %d: l' c%d not below 2^414", round, j,
                              c);
            }
            /* lambda^2 in field.h's form: lambda·l'/R' = lambda^2/R */
            fq2_mul(want, lam, lam, zr_inv);
            check_stage(&out[2], j, want, B_SQ, "lambda^2", round);
            /* x3 = lambda^2 + 2p - Bx - Px, exact before it is made canonical */
            mpz_t x3[2], y3[2];
            for (int c = 0; c < 2; c++) mpz_inits(x3[c], y3[c], NULL);
            check_exact(&out[4], j, x3, &out[2], 2, bx, px, "x3 before canonical", round);
            for (int c = 0; c < 2; c++) mpz_set(want[c], x3[c]);
            check_stage(&out[4], j, want, B_X3P, "x3 before canonical", round);
            for (int c = 0; c < 2; c++) mpz_mod(want[c], x3[c], zp), mpz_mod(x3[c], x3[c], zp);
            check_stage(&out[6], j, want, B_CANON, "x3", round);
            /* y3 = l'·(Bx + p - x3)/R' + p - By, then canonical */
            for (int c = 0; c < 2; c++) mpz_sub(t[c], bx[c], x3[c]), mpz_mod(t[c], t[c], zp);
            fq2_mul(want, lam, t, zr_inv);
            check_stage(&out[8], j, want, B_Y3M, "l'(Bx + p - x3)", round);
            check_exact(&out[10], j, y3, &out[8], 1, by, NULL, "y3 before canonical", round);
            for (int c = 0; c < 2; c++) mpz_set(want[c], y3[c]);
            check_stage(&out[10], j, want, B_Y3P, "y3 before canonical", round);
            for (int c = 0; c < 2; c++) mpz_set(want[c], y3[c]);
            check_stage(&out[12], j, want, B_CANON, "y3", round);
            for (int c = 0; c < 2; c++) mpz_clears(x3[c], y3[c], NULL);
        }
    }
    for (int c = 0; c < 2; c++) mpz_clears(lam[c], bx[c], px[c], by[c], want[c], t[c], NULL);
    mpz_clears(g, two414, NULL);
    free(in);
    free(out);
}
END_TEST
#endif

/* A canonical Fq element in field.h's form (6 limbs): random below p. */
static void rand_fq(uint64_t a[6])
{
    for (int k = 0; k < 6; k++) a[k] = test_rng64();
    a[5] %= Q->p[5];
}

/* P_i and its bucket B_i, both G2 affine (x c0, x c1, y c0, y c1: 6 limbs each), by
 * the edge `kind`. The addition formulas never read the curve's b, so the coordinates
 * need not be on the curve; they only need x's that differ (ifma.h's precondition)
 * and neither point all zero (curve.h's infinity). */
#define N_POINT_EDGES 8
static void edge_pair(uint64_t P[24], uint64_t B[24], unsigned kind, unsigned i)
{
    for (int c = 0; c < 4; c++) rand_fq(P + 6 * c), rand_fq(B + 6 * c);
    switch (kind) {
    case 0: /* x's differ in one limb only (one bit of it) */
        memcpy(B, P, 12 * sizeof(uint64_t));
        B[i % 12] ^= (uint64_t)1 << (i % 5);
        if (!fe_is_reduced(Q, B + 6 * (i % 12 / 6))) B[i % 12] ^= (uint64_t)3 << (i % 5);
        break;
    case 1: memset(P + 12, 0, 12 * sizeof(uint64_t)); break; /* P.y = 0 */
    case 2: memset(B + 12, 0, 12 * sizeof(uint64_t)); break; /* B.y = 0 */
    case 3:                                                  /* x components 0 and p - 1 */
        memset(P, 0, 12 * sizeof(uint64_t));
        memset(B, 0, 12 * sizeof(uint64_t));
        fe_copy(Q, P, Q->p), P[0] -= 1;
        fe_copy(Q, B + 6, Q->p), B[6] -= 1;
        break;
    case 4: ecf_neg(&G2_BLS12_381, P + 12, B + 12); break;        /* P.y = -B.y */
    case 5: memcpy(P + 12, B + 12, 12 * sizeof(uint64_t)); break; /* P.y = B.y: lambda 0 */
    case 6: /* every component p - 1 but B.x's c1, p - 2 */
        for (int c = 0; c < 4; c++) fe_copy(Q, P + 6 * c, Q->p), P[6 * c] -= 1;
        memcpy(B, P, 24 * sizeof(uint64_t));
        B[6] -= 1;
        break;
    default: break;
    }
}

/* Whole G2 additions A[bb[i]] += P_i through the lanes (ifma_batch_add, and by reference
 * with y negated where neg[i]) against curve.h's mixed addition, on edge_pair's edges
 * in every lane position and in partial blocks. */
START_TEST(test_ifma381_g2_edge_additions_match_jacobian)
{
    if (!have_ifma()) return;
    const curve_group *G = &G2_BLS12_381;
    const unsigned al = 24, cl = 12;
    const size_t count = 8 * N_POINT_EDGES * 8 + 5;
    test_rng_seed(0x3e9e);
    uint64_t *bp = malloc(count * al * sizeof(uint64_t)), *A0 = malloc(count * al * sizeof(uint64_t));
    uint64_t *A = malloc(count * al * sizeof(uint64_t)), *want = malloc(count * al * sizeof(uint64_t));
    uint64_t *ys = malloc(count * cl * sizeof(uint64_t));
    const uint64_t **rx = malloc(count * sizeof *rx), **ry = malloc(count * sizeof *ry);
    uint8_t *neg = malloc(count);
    uint32_t *bb = malloc(count * sizeof *bb);
    void *scratch = aligned_alloc(64, ifma_batch_scratch_bytes(G, count) + 64);
    ck_assert(bp && A0 && A && want && ys && rx && ry && neg && bb && scratch);
    for (size_t i = 0; i < count; i++) {
        /* every third addition walks the edges in turn, the others by block and
         * position: each edge lands in every lane position and beside the others */
        unsigned kind = (unsigned)(i % 3 == 0 ? (i / 3) % N_POINT_EDGES : (i / 8 + i) % N_POINT_EDGES);
        bb[i] = (uint32_t)((i * 7) % count); /* distinct: 7 is prime to count */
        edge_pair(bp + al * i, A0 + al * bb[i], kind, (unsigned)i);
        ck_assert(!ecf_eq(G, bp + al * i, A0 + al * bb[i]));
        neg[i] = (uint8_t)(i % 2);
        rx[i] = bp + al * i;
        ecf_copy(G, ys + cl * i, bp + al * i + cl);
        if (neg[i]) ecf_neg(G, ys + cl * i, ys + cl * i);
        ry[i] = ys + cl * i;
    }
    memcpy(want, A0, count * al * sizeof(uint64_t));
    for (size_t i = 0; i < count; i++) {
        uint64_t *B = want + al * (size_t)bb[i], j[EC_MAX_JAC];
        ec_jac_from_aff(G, j, B);
        ec_add_aff(G, j, j, bp + al * i);
        ec_jac_to_aff(G, B, j);
    }
    for (int form = 0; form < 2; form++) {
        memcpy(A, A0, count * al * sizeof(uint64_t));
        if (form == 0)
            ifma_batch_add(G, A, bb, bp, count, scratch);
        else
            ifma_batch_add_refs(G, A, bb, rx, ry, neg, count, scratch);
        for (size_t i = 0; i < count; i++)
            ck_assert_msg(memcmp(A + al * (size_t)bb[i], want + al * (size_t)bb[i], al * sizeof(uint64_t)) ==
                              0,
                          "%s: addition %zu wrong", form == 0 ? "ifma_batch_add" : "ifma_batch_add_refs", i);
    }
    free(bp);
    free(A0);
    free(A);
    free(want);
    free(ys);
    free(rx);
    free(ry);
    free(neg);
    free(bb);
    free(scratch);
}
END_TEST

int main(void)
{
#if defined(__x86_64__)
    gmp_setup();
#endif
    const struct test_case cases[] = {
#if defined(__x86_64__)
        { "ifma381_lazy_lambda_matches_gmp", test_ifma381_lazy_lambda_matches_gmp, 1 },
#endif
        { "ifma381_g2_edge_additions_match_jacobian", test_ifma381_g2_edge_additions_match_jacobian, 1 },
    };
    int rc = test_run_suite("ifma381", cases, sizeof cases / sizeof cases[0], 120);
#if defined(__x86_64__)
    gmp_teardown();
#endif
    return rc;
}
