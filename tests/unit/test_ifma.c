/* test_ifma.c — the AVX-512 IFMA lanes (zk/ifma_lanes.h, instantiated for BN254 in
 * zk/ifma.c and for BLS12-381 in zk/ifma381.c): the BN254 Fq lanes against field.h's
 * scalar products bit for bit and against GMP on the raw 52-bit lanes (including the
 * lazy [0, 2p) inputs field.h never sees), the Fq2 lane product and square against GMP
 * on the edges of their input ranges, the BLS12-381 lane product against fe_mul and
 * GMP, and the batch-affine addition on G1 and G2 of both curves against the jacobian
 * mixed addition of curve.h, one point at a time, with the points copied into a batch
 * or by reference (negated y, x elsewhere, misaligned).
 *
 * Without AVX-512 IFMA the lane tests print SKIP and pass; the portable batch addition
 * (ifma_batch_add_ref) is checked either way. */
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

static const field_desc *const F = &FIELD_BN254_FQ;
#define ROUNDS 4000 /* random lane products per test (x 8 lanes) */

static bool have_ifma(void)
{
    static int said;
    if (ifma_available()) return true;
    if (!said++)
        fprintf(stderr, "SKIP: no AVX-512 IFMA on this CPU (or CUZK_NO_IFMA=1): lane tests not run\n");
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
static void gmp_teardown(void)
{
    mpz_clears(zp, zrinv, z2p, NULL);
}

/* lane j of a as an integer; also checks its limbs are normalised (< 2^52) */
static void lane_get(mpz_t z, const ifma_fq8 *a, int j)
{
    test_lane_get(z, a->l, IFMA_LIMBS, j, "lane");
}
static void lane_set(ifma_fq8 *a, int j, const mpz_t z)
{
    test_lane_set(a->l, IFMA_LIMBS, j, z);
}

/* A reduced element of field.h's form: random, or one of the edges 0, 1, p-1, R mod p,
 * R^2 mod p, and the largest below 2^253 (the top limb of p is 0x3064..., so
 * 2^253 - 1 < p). */
static void rand_elem(uint64_t a[4], unsigned pick)
{
    switch (pick) {
    case 0: memset(a, 0, 32); return;
    case 1:
        memset(a, 0, 32);
        a[0] = 1;
        return;
    case 2:
        memcpy(a, F->p, 32);
        a[0] -= 1;
        return;
    case 3: memcpy(a, F->one, 32); return;
    case 4: memcpy(a, F->r2, 32); return;
    case 5:
        memset(a, 0xff, 32);
        a[3] = (UINT64_C(1) << 61) - 1;
        return;
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
    case 5:
        mpz_set_ui(z, 1);
        mpz_mul_2exp(z, z, 254);
        mpz_sub_ui(z, z, 1);
        return;
    case 6:
        mpz_set_ui(z, 1);
        mpz_mul_2exp(z, z, 254);
        return;
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

/* Lane j of r is a·b·2^-260 (op 'x'), a + b ('+') or a - b ('-') mod p for the
 * lanes' a = za[j], b = zb[j], below 2p with normalised limbs. */
static void check_raw_op(const ifma_fq8 *r, mpz_t za[8], mpz_t zb[8], char op, const char *what, int round,
                         mpz_t v, mpz_t w)
{
    for (int j = 0; j < 8; j++) {
        lane_get(v, r, j);
        ck_assert_msg(mpz_cmp(v, z2p) < 0, "round %d lane %d: %s not below 2p", round, j, what);
        if (op == 'x') {
            mpz_mul(w, za[j], zb[j]);
            mpz_mul(w, w, zrinv);
        } else if (op == '+') {
            mpz_add(w, za[j], zb[j]);
        } else {
            mpz_sub(w, za[j], zb[j]);
        }
        mpz_sub(w, w, v);
        ck_assert_msg(mpz_divisible_p(w, zp), "round %d lane %d: %s wrong", round, j, what);
    }
}

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
        check_raw_op(&r, za, zb, 'x', "product", round, v, w);
        ifma_fq8_add(&r, &x, &y);
        check_raw_op(&r, za, zb, '+', "sum", round, v, w);
        ifma_fq8_sub(&r, &x, &y);
        check_raw_op(&r, za, zb, '-', "difference", round, v, w);
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

/* A raw lane value in [0, 8p), the range of the second operand of the Fq2 lane
 * product: rand_raw's edges, then 2p, 4p - 1, 4p, 6p + 1, 8p - 1, and random. */
static void rand_raw8(mpz_t z, unsigned pick)
{
    static const unsigned mul[] = { 2, 4, 4, 6, 8 };
    static const int add[] = { 0, -1, 0, 1, -1 };
    if (pick < N_RAW_EDGES) {
        rand_raw(z, pick);
    } else if (pick < N_RAW_EDGES + 5) {
        mpz_mul_ui(z, zp, mul[pick - N_RAW_EDGES]);
        if (add[pick - N_RAW_EDGES] < 0)
            mpz_sub_ui(z, z, 1);
        else
            mpz_add_ui(z, z, (unsigned long)add[pick - N_RAW_EDGES]);
    } else {
        uint64_t a[5];
        mpz_t e8p;
        for (int i = 0; i < 5; i++) a[i] = test_rng64();
        mpz_init(e8p);
        mpz_mul_2exp(e8p, zp, 3);
        mpz_import(z, 5, -1, 8, 0, 0, a);
        mpz_mod(z, z, e8p);
        mpz_clear(e8p);
    }
}
#define N_RAW8_EDGES (N_RAW_EDGES + 5)

/* got == want·2^-260 mod p, got < bound·p with normalised limbs */
static void check_lane(const ifma_fq8 *r, int j, const mpz_t want, unsigned bound, const char *what,
                       int round, mpz_t v, mpz_t w)
{
    lane_get(v, r, j);
    mpz_mul_ui(w, zp, bound);
    ck_assert_msg(mpz_cmp(v, w) < 0, "round %d lane %d: %s not below %up", round, j, what, bound);
    mpz_mul(w, want, zrinv);
    mpz_sub(w, w, v);
    ck_assert_msg(mpz_divisible_p(w, zp), "round %d lane %d: %s wrong", round, j, what);
}

/* The Fq2 lane product and square against GMP's (a0 + a1 u)(b0 + b1 u) with u^2 = -1,
 * on every pairing of the edges of each component's allowed range (a < 2p, b < 8p;
 * the square's a < p) and random values in them; products below (4p, 6p), squares
 * below 2p (ifma.h); r aliasing a. */
START_TEST(test_ifma_fq2_lanes_match_gmp)
{
    if (!have_ifma()) return;
    test_rng_seed(0x6a2e);
    ifma_fq8 x[2], y[2], r[2];
    mpz_t a0[8], a1[8], b0[8], b1[8], v, w, t;
    for (int j = 0; j < 8; j++) mpz_inits(a0[j], a1[j], b0[j], b1[j], NULL);
    mpz_inits(v, w, t, NULL);
    const int edge_rounds = (N_RAW_EDGES * N_RAW_EDGES * N_RAW8_EDGES * N_RAW8_EDGES + 7) / 8;
    for (int round = 0; round < edge_rounds + ROUNDS; round++) {
        for (int j = 0; j < 8; j++) {
            unsigned e = (unsigned)(8 * round + j), ea0 = 99, ea1 = 99, eb0 = 99, eb1 = 99;
            if (round < edge_rounds) {
                eb1 = e % N_RAW8_EDGES;
                e /= N_RAW8_EDGES;
                eb0 = e % N_RAW8_EDGES;
                e /= N_RAW8_EDGES;
                ea1 = e % N_RAW_EDGES;
                ea0 = (e / N_RAW_EDGES) % N_RAW_EDGES;
            }
            rand_raw(a0[j], ea0);
            rand_raw(a1[j], ea1);
            rand_raw8(b0[j], eb0);
            rand_raw8(b1[j], eb1);
            lane_set(&x[0], j, a0[j]);
            lane_set(&x[1], j, a1[j]);
            lane_set(&y[0], j, b0[j]);
            lane_set(&y[1], j, b1[j]);
        }
        ifma_fq2x8_mul(r, x, y);
        for (int j = 0; j < 8; j++) {
            mpz_mul(t, a0[j], b0[j]);
            mpz_submul(t, a1[j], b1[j]);
            check_lane(&r[0], j, t, 4, "c0 of a·b", round, v, w);
            mpz_mul(t, a0[j], b1[j]);
            mpz_addmul(t, a1[j], b0[j]);
            check_lane(&r[1], j, t, 6, "c1 of a·b", round, v, w);
        }
        /* the square takes canonical components: a mod p (the edges 0, 1, p - 1 among them) */
        ifma_fq8 xs[2];
        for (int j = 0; j < 8; j++) {
            mpz_mod(a0[j], a0[j], zp);
            mpz_mod(a1[j], a1[j], zp);
            lane_set(&xs[0], j, a0[j]);
            lane_set(&xs[1], j, a1[j]);
        }
        ifma_fq2x8_sqr(r, xs);
        for (int j = 0; j < 8; j++) {
            mpz_mul(t, a0[j], a0[j]);
            mpz_submul(t, a1[j], a1[j]);
            check_lane(&r[0], j, t, 2, "c0 of a^2", round, v, w);
            mpz_mul(t, a0[j], a1[j]);
            mpz_mul_2exp(t, t, 1);
            check_lane(&r[1], j, t, 2, "c1 of a^2", round, v, w);
        }
        /* aliased: x = x·y, then the same values again */
        ifma_fq8 keep[2];
        memcpy(keep, r, sizeof keep);
        ifma_fq2x8_mul(r, x, y);
        ifma_fq2x8_mul(x, x, y);
        ck_assert_msg(memcmp(x, r, sizeof r) == 0, "round %d: aliased Fq2 product differs", round);
    }
    for (int j = 0; j < 8; j++) mpz_clears(a0[j], a1[j], b0[j], b1[j], NULL);
    mpz_clears(v, w, t, NULL);
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

static const size_t BATCH_COUNTS[] = { 0, 1, 2, 7, 8, 9, 15, 16, 17, 100, 512, 1000, 1024, 2048 };

/* A[bb[i]] += P_i for distinct random buckets, against B + P by the jacobian mixed
 * addition (ec_add_aff) and back to affine, for each count; the IFMA form and the
 * portable one both; G1 (deg 1) or G2 (deg 2, the Fq2 lanes). */
static void check_batch_add(const curve_group *G, size_t count, uint64_t seed)
{
    const unsigned al = 2 * ec_cl(G); /* limbs an affine point */
    const size_t nbuckets = 2 * count + 3, pb = al * 8;
    test_rng_seed(seed);
    uint64_t *pts = test_rand_points(G, count + nbuckets);
    uint64_t *bp = pts, *A0 = pts + al * count;
    uint64_t *A = malloc(nbuckets * pb), *want = malloc(nbuckets * pb);
    uint32_t *bb = malloc(count * sizeof *bb);
    void *scratch = aligned_alloc(64, ifma_batch_scratch_bytes(G, count) + 64);
    ck_assert(A && want && bb && scratch);
    test_rand_distinct(bb, count, nbuckets);
    memcpy(want, A0, nbuckets * pb);
    for (size_t i = 0; i < count; i++) {
        uint64_t *B = want + al * (size_t)bb[i], j[EC_MAX_JAC];
        ck_assert(!ecf_eq(G, B, bp + al * i)); /* the precondition: no doubling */
        ec_jac_from_aff(G, j, B);
        ec_add_aff(G, j, j, bp + al * i);
        ec_jac_to_aff(G, B, j);
    }
    /* The same points by reference (ifma_batch_add_refs, msm.c's flush): x in an array
     * of its own or in place (a phi image or a base), y stored negated where neg[i]
     * (the lanes negate it back), both at 4 bytes off alignment for the lanes (the
     * zkey's bases are), aligned for the portable form. */
    const unsigned cl = al / 2;
    const size_t eb = cl * sizeof(uint64_t);
    unsigned char *xs = malloc(count * eb + 8), *ys = malloc(count * eb + 8);
    const uint64_t **rx = malloc((count + 1) * sizeof *rx), **ry = malloc((count + 1) * sizeof *ry);
    uint8_t *neg = malloc(count + 1);
    ck_assert(xs && ys && rx && ry && neg);
    for (int form = 0; form < 4; form++) {
        if (form % 2 == 1 && !have_ifma()) continue;
        const size_t off = form == 3 ? 4 : 0;
        for (size_t i = 0; i < count; i++) {
            uint64_t y[EC_MAX_CL];
            neg[i] = (uint8_t)(test_rng64() & 1);
            ecf_copy(G, y, bp + al * i + cl);
            if (neg[i]) ecf_neg(G, y, y);
            memcpy(xs + off + eb * i, bp + al * i, eb);
            memcpy(ys + off + eb * i, y, eb);
            rx[i] = i % 3 == 0 ? bp + al * i : (const uint64_t *)(const void *)(xs + off + eb * i);
            ry[i] = (const uint64_t *)(const void *)(ys + off + eb * i);
        }
        memcpy(A, A0, nbuckets * pb);
        if (form == 0)
            ifma_batch_add_ref(G, A, bb, bp, count, scratch);
        else if (form == 1)
            ifma_batch_add(G, A, bb, bp, count, scratch);
        else if (form == 2)
            ifma_batch_add_refs_ref(G, A, bb, rx, ry, neg, count, scratch);
        else
            ifma_batch_add_refs(G, A, bb, rx, ry, neg, count, scratch);
        static const char *const FORMS[] = { "ref", "ifma", "refs ref", "refs ifma" };
        for (size_t b = 0; b < nbuckets; b++)
            ck_assert_msg(memcmp(A + al * b, want + al * b, pb) == 0, "%s %s, count %zu: bucket %zu wrong",
                          G->name, FORMS[form], count, b);
    }
    free(xs);
    free(ys);
    free(rx);
    free(ry);
    free(neg);
    free(pts);
    free(A);
    free(want);
    free(bb);
    free(scratch);
}

START_TEST(test_ifma_batch_add_matches_jacobian)
{
    check_batch_add(&G1_BN254, BATCH_COUNTS[_i], 0x4d00 + (uint64_t)_i);
}
END_TEST

/* G2: every count from 0 to 39 (each partial block, none to five blocks), then the
 * larger ones up to 2048 (msm.c's batches are at most 1024). */
static const size_t G2_BIG_COUNTS[] = { 63, 64, 65, 100, 511, 512, 1000, 1024, 2047, 2048 };
#define G2_SMALL 40
START_TEST(test_ifma_g2_batch_add_matches_jacobian)
{
    size_t count = _i < G2_SMALL ? (size_t)_i : G2_BIG_COUNTS[_i - G2_SMALL];
    check_batch_add(&G2_BN254, count, 0x7e00 + (uint64_t)_i);
}
END_TEST

/* BLS12-381 G1 (zk/ifma381.c: 8 limbs of 52 bits): the same check, every count. */
START_TEST(test_ifma381_g1_batch_add_matches_jacobian)
{
    check_batch_add(&G1_BLS12_381, BATCH_COUNTS[_i], 0x3810 + (uint64_t)_i);
}
END_TEST

/* BLS12-381 G2 (Fq2 lanes of zk/ifma381.c): counts 0..39 and G2_BIG_COUNTS. */
START_TEST(test_ifma381_g2_batch_add_matches_jacobian)
{
    size_t count = _i < G2_SMALL ? (size_t)_i : G2_BIG_COUNTS[_i - G2_SMALL];
    check_batch_add(&G2_BLS12_381, count, 0x3820 + (uint64_t)_i);
}
END_TEST

/* The BLS12-381 Fq lane product with its conversions in and out equals fe_mul bit for
 * bit and GMP's a b R^-1 mod p (R = 2^384): random operands and the edges 0, 1, p-1,
 * p-2, R mod p, limbs of all ones below p's top limb, 2^380, in every lane position. */
START_TEST(test_ifma381_mul_matches_fe_mul)
{
    if (!have_ifma()) return;
    const field_desc *Q = &FIELD_BLS12_381_FQ;
    enum { N = 64, NE = 8 };
    uint64_t a[6 * N], b[6 * N], got[6 * N], want[6], e[NE][6];
    mpz_t zq, zri, x, y;
    mpz_inits(zq, zri, x, y, NULL);
    mpz_import(zq, 6, -1, 8, 0, 0, Q->p);
    mpz_set_ui(zri, 1);
    mpz_mul_2exp(zri, zri, 384);
    ck_assert(mpz_invert(zri, zri, zq));
    memset(e, 0, sizeof e);
    e[1][0] = 1;
    fe_copy(Q, e[2], Q->p), e[2][0] -= 1;
    fe_copy(Q, e[3], Q->p), e[3][0] -= 2;
    fe_copy(Q, e[4], Q->one);
    for (int k = 0; k < 5; k++) e[5][k] = ~(uint64_t)0;
    e[5][5] = Q->p[5] - 1;
    e[6][5] = (uint64_t)1 << (380 - 320);
    for (int k = 0; k < 6; k++) e[7][k] = 0x8000000000000000ULL >> k;
    for (int round = 0; round < ROUNDS / 8; round++) {
        for (int i = 0; i < N; i++) {
            for (int k = 0; k < 6; k++) {
                a[6 * i + k] = test_rng64();
                b[6 * i + k] = test_rng64();
            }
            a[6 * i + 5] %= Q->p[5]; /* below p: top limb under p's */
            b[6 * i + 5] %= Q->p[5];
            if ((i + round) % 5 == 0) fe_copy(Q, a + 6 * i, e[(i + round) % NE]);
            if ((i + 2 * round) % 7 == 0) fe_copy(Q, b + 6 * i, e[(i / 7 + round) % NE]);
        }
        ifma381_fq_mul_aos(got, a, b, N);
        for (int i = 0; i < N; i++) {
            fe_mul(Q, want, a + 6 * i, b + 6 * i);
            ck_assert_msg(fe_eq(Q, got + 6 * i, want), "round %d lane %d: lane product differs from fe_mul",
                          round, i);
            mpz_import(x, 6, -1, 8, 0, 0, a + 6 * i);
            mpz_import(y, 6, -1, 8, 0, 0, b + 6 * i);
            mpz_mul(x, x, y);
            mpz_mul(x, x, zri);
            mpz_mod(x, x, zq);
            memset(want, 0, sizeof want);
            mpz_export(want, NULL, -1, 8, 0, 0, x);
            ck_assert_msg(fe_eq(Q, got + 6 * i, want), "round %d lane %d: lane product differs from GMP",
                          round, i);
        }
    }
    mpz_clears(zq, zri, x, y, NULL);
}
END_TEST

int main(void)
{
    gmp_setup();
    const struct test_case cases[] = {
        { "ifma_mul_matches_fe_mul", test_ifma_mul_matches_fe_mul, 1 },
        { "ifma_load_store_round_trip", test_ifma_load_store_round_trip, 1 },
        { "ifma_lanes_match_gmp", test_ifma_lanes_match_gmp, 1 },
        { "ifma_fq_inv_matches_fe_inv", test_ifma_fq_inv_matches_fe_inv, 1 },
        { "ifma_batch_add_matches_jacobian", test_ifma_batch_add_matches_jacobian,
          (int)(sizeof BATCH_COUNTS / sizeof BATCH_COUNTS[0]) },
        { "ifma_fq2_lanes_match_gmp", test_ifma_fq2_lanes_match_gmp, 1 },
        { "ifma_g2_batch_add_matches_jacobian", test_ifma_g2_batch_add_matches_jacobian,
          G2_SMALL + (int)(sizeof G2_BIG_COUNTS / sizeof G2_BIG_COUNTS[0]) },
        { "ifma381_mul_matches_fe_mul", test_ifma381_mul_matches_fe_mul, 1 },
        { "ifma381_g1_batch_add_matches_jacobian", test_ifma381_g1_batch_add_matches_jacobian,
          (int)(sizeof BATCH_COUNTS / sizeof BATCH_COUNTS[0]) },
        { "ifma381_g2_batch_add_matches_jacobian", test_ifma381_g2_batch_add_matches_jacobian,
          G2_SMALL + (int)(sizeof G2_BIG_COUNTS / sizeof G2_BIG_COUNTS[0]) },
    };
    int rc = test_run_suite("ifma", cases, sizeof cases / sizeof cases[0], 120);
    gmp_teardown();
    return rc;
}
