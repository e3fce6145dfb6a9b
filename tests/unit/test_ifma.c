/* test_ifma.c — the AVX-512 IFMA BN254 Fq lanes (zk/ifma.c) against field.h's scalar
 * products bit for bit and against GMP on the raw 52-bit lanes (including the lazy
 * [0, 2p) inputs field.h never sees), and the batch-affine addition against the
 * jacobian mixed addition of curve.h, one point at a time.
 *
 * Without AVX-512 IFMA the lane tests print SKIP and pass; the portable batch addition
 * (ifma_g1_batch_add_ref) is checked either way. */
#include <check.h>
#include <gmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuzk/curve.h>
#include <cuzk/field.h>
#include <cuzk/ifma.h>

#include "helper_test.h"

static const field_desc *const F = &FIELD_BN254_FQ;
#define ROUNDS 4000 /* random lane products per test (x 8 lanes) */

static bool have_ifma(void)
{
    static int said;
    if (ifma_available()) return true;
    if (!said++) fprintf(stderr, "SKIP: no AVX-512 IFMA on this CPU (or CUZK_NO_IFMA=1): lane tests not run\n");
    return false;
}

/* GMP context: p, and 2^-260 mod p */
static mpz_t zp, zrinv, z2p;
static void gmp_setup(void)
{
    mpz_inits(zp, zrinv, z2p, NULL);
    mpz_import(zp, 4, -1, 8, 0, 0, F->p);
    mpz_set_ui(zrinv, 1);
    mpz_mul_2exp(zrinv, zrinv, 260);
    if (!mpz_invert(zrinv, zrinv, zp)) abort(); /* p is prime: cannot happen */
    mpz_mul_2exp(z2p, zp, 1);
}
static void gmp_teardown(void) { mpz_clears(zp, zrinv, z2p, NULL); }

/* lane j of a as an integer; also checks its limbs are normalised (< 2^52) */
static void lane_get(mpz_t z, const ifma_fq8 *a, int j)
{
    mpz_set_ui(z, 0);
    for (int k = IFMA_LIMBS; k-- > 0;) {
        ck_assert_msg(a->l[k][j] >> 52 == 0, "limb %d of lane %d not normalised: %#llx", k, j,
                      (unsigned long long)a->l[k][j]);
        mpz_mul_2exp(z, z, 52);
        mpz_add_ui(z, z, a->l[k][j]);
    }
}
static void lane_set(ifma_fq8 *a, int j, const mpz_t z)
{
    mpz_t t;
    mpz_init_set(t, z);
    for (int k = 0; k < IFMA_LIMBS; k++) {
        a->l[k][j] = mpz_get_ui(t) & ((UINT64_C(1) << 52) - 1);
        mpz_tdiv_q_2exp(t, t, 52);
    }
    ck_assert(mpz_sgn(t) == 0);
    mpz_clear(t);
}

/* A reduced element of field.h's form: random, or one of the edges 0, 1, p-1, R mod p,
 * R^2 mod p, and the largest below 2^253 (the top limb of p is 0x3064..., so
 * 2^253 - 1 < p). */
static void rand_elem(uint64_t a[4], unsigned pick)
{
    switch (pick) {
    case 0: memset(a, 0, 32); return;
    case 1: memset(a, 0, 32); a[0] = 1; return;
    case 2: memcpy(a, F->p, 32); a[0] -= 1; return;
    case 3: memcpy(a, F->one, 32); return;
    case 4: memcpy(a, F->r2, 32); return;
    case 5: memset(a, 0xff, 32); a[3] = (UINT64_C(1) << 61) - 1; return;
    default:
        do {
            for (int i = 0; i < 4; i++) a[i] = test_rng64();
            a[3] &= (UINT64_C(1) << 62) - 1;
        } while (!fe_is_reduced(F, a));
    }
}
#define N_EDGES 6

/* A raw lane value in [0, 2p), the inputs the lazy lanes accept: random, or 0, 1,
 * p - 1, p, p + 1, 2^254 - 1, 2^254, 2p - 1. */
static void rand_raw(mpz_t z, unsigned pick)
{
    switch (pick) {
    case 0: mpz_set_ui(z, 0); return;
    case 1: mpz_set_ui(z, 1); return;
    case 2: mpz_sub_ui(z, zp, 1); return;
    case 3: mpz_set(z, zp); return;
    case 4: mpz_add_ui(z, zp, 1); return;
    case 5: mpz_set_ui(z, 1); mpz_mul_2exp(z, z, 254); mpz_sub_ui(z, z, 1); return;
    case 6: mpz_set_ui(z, 1); mpz_mul_2exp(z, z, 254); return;
    case 7: mpz_sub_ui(z, z2p, 1); return;
    default: {
        uint64_t a[4];
        for (int i = 0; i < 4; i++) a[i] = test_rng64();
        mpz_import(z, 4, -1, 8, 0, 0, a);
        mpz_mod(z, z, z2p);
    }
    }
}
#define N_RAW_EDGES 8

START_TEST(test_ifma_mul_matches_fe_mul)
{
    if (!have_ifma()) return;
    test_rng_seed(0x1f3a);
    uint64_t a[32], b[32], want[32], got[32];
    ifma_fq8 x, y, r;
    for (int round = 0; round < ROUNDS; round++) {
        for (int j = 0; j < 8; j++) {
            /* the first rounds pair every edge with every edge */
            unsigned ea = round < 8 ? (unsigned)(8 * round + j) / N_EDGES : 99;
            unsigned eb = round < 8 ? (unsigned)(8 * round + j) % N_EDGES : 99;
            rand_elem(a + 4 * j, ea);
            rand_elem(b + 4 * j, eb);
            fe_mul(F, want + 4 * j, a + 4 * j, b + 4 * j);
        }
        ifma_fq8_load(&x, a);
        ifma_fq8_load(&y, b);
        ifma_fq8_mul(&r, &x, &y);
        ifma_fq8_store(got, &r);
        ck_assert_msg(memcmp(got, want, sizeof want) == 0, "round %d: lanes differ from fe_mul", round);
        ifma_fq_mul_aos(got, a, b, 8);
        ck_assert_msg(memcmp(got, want, sizeof want) == 0, "round %d: ifma_fq_mul_aos differs", round);
        /* the product aliasing its input */
        ifma_fq8_mul(&x, &x, &y);
        ifma_fq8_store(got, &x);
        ck_assert_msg(memcmp(got, want, sizeof want) == 0, "round %d: aliased product differs", round);
    }
}
END_TEST

START_TEST(test_ifma_load_store_round_trip)
{
    if (!have_ifma()) return;
    test_rng_seed(0x2b7c);
    uint64_t a[32], back[32];
    ifma_fq8 x;
    mpz_t v, w;
    mpz_inits(v, w, NULL);
    for (int round = 0; round < ROUNDS; round++) {
        for (int j = 0; j < 8; j++) rand_elem(a + 4 * j, round == 0 && j < N_EDGES ? (unsigned)j : 99);
        ifma_fq8_load(&x, a);
        ifma_fq8_store(back, &x);
        ck_assert_msg(memcmp(a, back, sizeof a) == 0, "round %d: store(load(a)) != a", round);
        /* the lane value is a·2^4 mod p (field.h's x·2^256 -> x·2^260), below 2p */
        for (int j = 0; j < 8; j++) {
            lane_get(v, &x, j);
            ck_assert(mpz_cmp(v, z2p) < 0);
            mpz_import(w, 4, -1, 8, 0, 0, a + 4 * j);
            mpz_mul_2exp(w, w, 4);
            mpz_sub(w, w, v);
            ck_assert_msg(mpz_divisible_p(w, zp), "round %d lane %d: load is not x·16 mod p", round, j);
        }
    }
    /* and 1 (field.h's R mod p) loads as 2^260 mod p */
    for (int j = 0; j < 8; j++) memcpy(a + 4 * j, F->one, 32);
    ifma_fq8_load(&x, a);
    mpz_set_ui(w, 1);
    mpz_mul_2exp(w, w, 260);
    mpz_mod(w, w, zp);
    lane_get(v, &x, 3);
    mpz_mod(v, v, zp);
    ck_assert(mpz_cmp(v, w) == 0);
    mpz_clears(v, w, NULL);
}
END_TEST

/* The raw lane product, the lazy bound and the add/sub, each against GMP alone. */
START_TEST(test_ifma_lanes_match_gmp)
{
    if (!have_ifma()) return;
    test_rng_seed(0x3c9d);
    ifma_fq8 x, y, r;
    mpz_t za[8], zb[8], v, w;
    for (int j = 0; j < 8; j++) mpz_inits(za[j], zb[j], NULL);
    mpz_inits(v, w, NULL);
    for (int round = 0; round < ROUNDS; round++) {
        for (int j = 0; j < 8; j++) {
            unsigned ea = round < 8 ? (unsigned)(8 * round + j) / N_RAW_EDGES : 99;
            unsigned eb = round < 8 ? (unsigned)(8 * round + j) % N_RAW_EDGES : 99;
            rand_raw(za[j], ea);
            rand_raw(zb[j], eb);
            lane_set(&x, j, za[j]);
            lane_set(&y, j, zb[j]);
        }
        ifma_fq8_mul(&r, &x, &y);
        for (int j = 0; j < 8; j++) {
            lane_get(v, &r, j);
            ck_assert_msg(mpz_cmp(v, z2p) < 0, "round %d lane %d: product not below 2p", round, j);
            mpz_mul(w, za[j], zb[j]);
            mpz_mul(w, w, zrinv);
            mpz_sub(w, w, v);
            ck_assert_msg(mpz_divisible_p(w, zp), "round %d lane %d: product != a·b·2^-260", round, j);
        }
        ifma_fq8_add(&r, &x, &y);
        for (int j = 0; j < 8; j++) {
            lane_get(v, &r, j);
            ck_assert_msg(mpz_cmp(v, z2p) < 0, "round %d lane %d: sum not below 2p", round, j);
            mpz_add(w, za[j], zb[j]);
            mpz_sub(w, w, v);
            ck_assert_msg(mpz_divisible_p(w, zp), "round %d lane %d: sum wrong", round, j);
        }
        ifma_fq8_sub(&r, &x, &y);
        for (int j = 0; j < 8; j++) {
            lane_get(v, &r, j);
            ck_assert_msg(mpz_cmp(v, z2p) < 0, "round %d lane %d: difference not below 2p", round, j);
            mpz_sub(w, za[j], zb[j]);
            mpz_sub(w, w, v);
            ck_assert_msg(mpz_divisible_p(w, zp), "round %d lane %d: difference wrong", round, j);
        }
    }
    /* ifma_fq8_mul_n: blocks independent of each other */
    ifma_fq8 *xa = aligned_alloc(64, 3 * sizeof(ifma_fq8)), *ya = aligned_alloc(64, 3 * sizeof(ifma_fq8)),
             *ra = aligned_alloc(64, 3 * sizeof(ifma_fq8));
    ck_assert(xa && ya && ra);
    for (int k = 0; k < 3; k++)
        for (int j = 0; j < 8; j++) {
            rand_raw(v, 99);
            lane_set(&xa[k], j, v);
            rand_raw(v, 99);
            lane_set(&ya[k], j, v);
        }
    ifma_fq8_mul_n(ra, xa, ya, 3);
    for (int k = 0; k < 3; k++) {
        ifma_fq8_mul(&r, &xa[k], &ya[k]);
        ck_assert(memcmp(&r, &ra[k], sizeof r) == 0);
    }
    free(xa);
    free(ya);
    free(ra);
    for (int j = 0; j < 8; j++) mpz_clears(za[j], zb[j], NULL);
    mpz_clears(v, w, NULL);
}
END_TEST

/* ifma_fq_inv (GMP's gcd) against fe_inv (Fermat) and against a·a^-1 = 1, on the
 * edges and random elements; 0 inverts to 0 as in fe_inv. Needs no IFMA. */
START_TEST(test_ifma_fq_inv_matches_fe_inv)
{
    test_rng_seed(0x5e11);
    uint64_t a[4], want[4], got[4], one[4];
    for (int round = 0; round < 2000; round++) {
        rand_elem(a, round < N_EDGES ? (unsigned)round : 99);
        fe_inv(F, want, a);
        ifma_fq_inv(got, a);
        ck_assert_msg(fe_eq(F, got, want), "round %d: ifma_fq_inv != fe_inv", round);
        if (round == 0) continue; /* 0 */
        fe_mul(F, one, a, got);
        ck_assert_msg(fe_eq(F, one, F->one), "round %d: a * a^-1 != 1", round);
    }
}
END_TEST

/* n random affine points of G1 (consecutive multiples k0·G + i·k1·G, one inversion). */
static uint64_t *rand_points(size_t n)
{
    const curve_group *G = &G1_BN254;
    uint64_t k[4], s[12], q[12], *jac = malloc(n * 12 * 8), *aff = malloc(n * 8 * 8);
    uint64_t gj[12];
    ck_assert(jac && aff);
    ec_jac_from_aff(G, gj, G->gen);
    test_rand_scalar(G->Fr, k);
    ec_jac_mul_scalar(G, q, gj, k, 4);
    test_rand_scalar(G->Fr, k);
    ec_jac_mul_scalar(G, s, gj, k, 4);
    for (size_t i = 0; i < n; i++) {
        memcpy(jac + 12 * i, q, sizeof q);
        ec_add(G, q, q, s);
    }
    ck_assert_int_eq(ec_batch_to_aff(G, aff, jac, n), 0);
    free(jac);
    return aff;
}

static const size_t BATCH_COUNTS[] = {1, 2, 7, 8, 9, 15, 16, 17, 100, 512, 1000, 1024, 2048};

/* A[bb[i]] += P_i for distinct random buckets, against B + P by the jacobian mixed
 * addition (ec_add_aff) and back to affine, for each count; the IFMA form and the
 * portable one both. */
START_TEST(test_ifma_batch_add_matches_jacobian)
{
    const curve_group *G = &G1_BN254;
    const size_t count = BATCH_COUNTS[_i], nbuckets = 2 * count + 3;
    test_rng_seed(0x4d00 + (uint64_t)_i);
    uint64_t *pts = rand_points(count + nbuckets);
    uint64_t *bp = pts, *A0 = pts + 8 * count;
    uint64_t *A = malloc(nbuckets * 64), *want = malloc(nbuckets * 64);
    uint32_t *bb = malloc(count * sizeof *bb), *perm = malloc(nbuckets * sizeof *perm);
    void *scratch = aligned_alloc(64, (ifma_g1_batch_scratch_bytes(count) + 63) / 64 * 64);
    ck_assert(A && want && bb && perm && scratch);
    /* distinct buckets: the head of a random permutation */
    for (size_t b = 0; b < nbuckets; b++) perm[b] = (uint32_t)b;
    for (size_t b = nbuckets; b-- > 1;) {
        size_t c = test_rng64() % (b + 1);
        uint32_t t = perm[b];
        perm[b] = perm[c];
        perm[c] = t;
    }
    memcpy(bb, perm, count * sizeof *bb);
    memcpy(want, A0, nbuckets * 64);
    for (size_t i = 0; i < count; i++) {
        uint64_t *B = want + 8 * (size_t)bb[i], j[12];
        ck_assert(!fe_eq(F, B, bp + 8 * i)); /* the precondition: no doubling */
        ec_jac_from_aff(G, j, B);
        ec_add_aff(G, j, j, bp + 8 * i);
        ec_jac_to_aff(G, B, j);
    }
    for (int form = 0; form < 2; form++) {
        if (form == 1 && !have_ifma()) break;
        memcpy(A, A0, nbuckets * 64);
        if (form == 0) ifma_g1_batch_add_ref(A, bb, bp, count, scratch);
        else ifma_g1_batch_add(A, bb, bp, count, scratch);
        for (size_t b = 0; b < nbuckets; b++)
            ck_assert_msg(memcmp(A + 8 * b, want + 8 * b, 64) == 0, "%s, count %zu: bucket %zu wrong",
                          form ? "ifma" : "ref", count, b);
    }
    free(pts);
    free(A);
    free(want);
    free(bb);
    free(perm);
    free(scratch);
}
END_TEST

int main(void)
{
    gmp_setup();
    const struct test_case cases[] = {
        {"ifma_mul_matches_fe_mul", test_ifma_mul_matches_fe_mul, 1},
        {"ifma_load_store_round_trip", test_ifma_load_store_round_trip, 1},
        {"ifma_lanes_match_gmp", test_ifma_lanes_match_gmp, 1},
        {"ifma_fq_inv_matches_fe_inv", test_ifma_fq_inv_matches_fe_inv, 1},
        {"ifma_batch_add_matches_jacobian", test_ifma_batch_add_matches_jacobian,
         (int)(sizeof BATCH_COUNTS / sizeof BATCH_COUNTS[0])},
    };
    int rc = test_run_suite("ifma", cases, sizeof cases / sizeof cases[0], 120);
    gmp_teardown();
    return rc;
}
