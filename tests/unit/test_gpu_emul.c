/* test_gpu_emul.c — the CUDA kernels' code run on the CPU. CUZK_DEVICE_EMUL (hd.h)
 * makes field.h and curve.h compile in their device form here: the constants by
 * switch, the product on 32-bit words over carry32.h's carry chains (inline, and out of
 * line by value in the Fq2 arithmetic), the point formulas out of line per group —
 * what nvcc's device pass compiles, with only the PTX of carry32.h's operations
 * replaced by their plain-C definitions. Over that, the
 * kernels' per-thread logic (zk/cuda/msm_logic.h, ntt_logic.h) on a small grid. Checked:
 * the field operations against GMP, the point formulas against the host's ec_add /
 * ec_dbl (zk/curve.c, compiled in the host form), the whole MSM pipeline (digits, sort,
 * segmented bucket sums over several levels, scatter, range reduction, window
 * combination) against msm_naive / msm_run, the NTT stages (bit reversal,
 * shared-memory block stages, global stages, inverse, odd coset) against ntt_forward /
 * ntt_inverse / ntt_to_odd_coset, and the h = a·b - c step against GMP. No GPU is
 * needed: the kernels in zk/cuda/ are thin loops over these functions. */
#define CUZK_DEVICE_EMUL 1 /* before any include: the device form of the arithmetic */

#include <check.h>
#include <gmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zk/curve.h"
#include "zk/msm.h"
#include "zk/ntt.h"

#include "../../zk/cuda/msm_logic.h"
#include "../../zk/cuda/ntt_logic.h"
#include "helper_test.h"

#ifndef CUZK_DEVICE_CODE
#error "hd.h did not switch to the device form"
#endif

static const curve_group *const GROUPS[] = { &G1_BN254, &G2_BN254, &G1_BLS12_381, &G2_BLS12_381 };

/* A uniform element < p (canonical limbs are also valid Montgomery limbs), with the
 * edge values 0, 1, p - 1 and R mod p mixed in. */
static void rand_elem(const field_desc *F, uint64_t *a, int which)
{
    const unsigned n = fe_n(F);
    switch (which % 7) {
    case 0: fe_set_zero(F, a); return;
    case 1:
        fe_set_zero(F, a);
        a[0] = 1;
        return;
    case 2:
        fe_copy(F, a, F->p);
        a[0] -= 1;
        return;
    case 3: fe_set_one(F, a); return;
    default: break;
    }
    unsigned top = F->bits - 64 * (n - 1);
    do {
        for (unsigned i = 0; i < n; i++) a[i] = test_rng64();
        a[n - 1] &= top == 64 ? ~0ULL : ((1ULL << top) - 1);
    } while (!fe_is_reduced(F, a));
}

/* ---- field: the device form against GMP ----------------------------------- */

/* The value of n limbs, and back (reduced mod p). */
static void limbs_to_mpz(mpz_t z, const uint64_t *a, unsigned n)
{
    mpz_import(z, n, -1, sizeof *a, 0, 0, a);
}
static void mpz_to_limbs(uint64_t *a, unsigned n, mpz_t z, const mpz_t p)
{
    mpz_mod(z, z, p);
    memset(a, 0, n * sizeof *a);
    mpz_export(a, NULL, -1, sizeof *a, 0, 0, z);
}

enum gmp_op { OP_ADD, OP_SUB, OP_NEG, OP_MUL, OP_SQR, OP_FROM_MONT, OP_FQ2_MUL, OP_FQ2_SQR, OP_H };

/* r = op(a, b[, c]) on Montgomery elements (x·R), computed on integers by GMP:
 * a product is a·b·R^-1, from_mont a·R^-1; Fq2 operands are c0 then c1; OP_H is the
 * NTT's h step, (a·b - c) out of Montgomery form. */
static void gmp_ref(const field_desc *F, enum gmp_op op, uint64_t *r, const uint64_t *a, const uint64_t *b,
                    const uint64_t *c)
{
    const unsigned n = F->n;
    mpz_t p, rinv, a0, a1, b0, b1, x, y;
    mpz_inits(p, rinv, a0, a1, b0, b1, x, y, NULL);
    limbs_to_mpz(p, F->p, n);
    mpz_set_ui(rinv, 1);
    mpz_mul_2exp(rinv, rinv, 64 * n);
    ck_assert(mpz_invert(rinv, rinv, p));
    limbs_to_mpz(a0, a, n);
    limbs_to_mpz(b0, b, n);
    if (op == OP_FQ2_MUL || op == OP_FQ2_SQR) {
        limbs_to_mpz(a1, a + n, n);
        limbs_to_mpz(b1, b + n, n);
        if (op == OP_FQ2_SQR) mpz_set(b0, a0), mpz_set(b1, a1);
        mpz_mul(x, a0, b0); /* c0 = (a0 b0 - a1 b1) R^-1 */
        mpz_submul(x, a1, b1);
        mpz_mul(x, x, rinv);
        mpz_mul(y, a0, b1); /* c1 = (a0 b1 + a1 b0) R^-1 */
        mpz_addmul(y, a1, b0);
        mpz_mul(y, y, rinv);
        mpz_to_limbs(r, n, x, p);
        mpz_to_limbs(r + n, n, y, p);
        mpz_clears(p, rinv, a0, a1, b0, b1, x, y, NULL);
        return;
    }
    switch (op) {
    case OP_ADD: mpz_add(x, a0, b0); break;
    case OP_SUB: mpz_sub(x, a0, b0); break;
    case OP_NEG: mpz_neg(x, a0); break;
    case OP_SQR: mpz_set(b0, a0); /* fall through */
    case OP_MUL: mpz_mul(x, a0, b0), mpz_mul(x, x, rinv); break;
    case OP_FROM_MONT: mpz_mul(x, a0, rinv); break;
    default: /* OP_H */
        limbs_to_mpz(y, c, n);
        mpz_mul(x, a0, b0);
        mpz_mul(x, x, rinv);
        mpz_sub(x, x, y);
        mpz_mul(x, x, rinv);
        break;
    }
    mpz_to_limbs(r, n, x, p);
    mpz_clears(p, rinv, a0, a1, b0, b1, x, y, NULL);
}

/* The logic functions are forced inline and expect a constant field/group (as in the
 * kernels); a run-time id would inline every field's code into every call (a
 * 5-minute compile). So each check is an always-inline body, instantiated once per
 * field or group below. */
#define EMUL_INLINE static inline __attribute__((always_inline))

/* One test (a tcase named NAME) that runs CHECK for one constant field or group: the
 * test's function is CHECK's out-of-line instance, check_<id>. */
#define EMUL_TEST(name, check, desc, id) \
    TEST_AS(#name, check##_##id, 1)      \
    {                                    \
        check(&desc, id);                \
    }

#define CHECK_OP(what, op, got)                                                                       \
    do {                                                                                              \
        gmp_ref(F, op, want, a, b, NULL);                                                             \
        ck_assert_msg(memcmp(want, got, (op == OP_FQ2_MUL || op == OP_FQ2_SQR ? 2 : 1) * n * 8) == 0, \
                      "%s: device %s differs from GMP (iteration %d)", F->name, what, it);            \
    } while (0)

EMUL_INLINE void check_field(const field_desc *F, const enum field_id f)
{
    const unsigned n = fe_n(F);
    /* the device's constants (switches over the lists) are the host descriptor's */
    ck_assert_uint_eq(fe_n_id(f), n);
    for (unsigned i = 0; i < n; i++) {
        ck_assert_uint_eq(fe_p_id(f, i), F->p[i]);
        ck_assert_uint_eq(fe_one_id(f, i), F->one[i]);
        ck_assert_uint_eq(fe_r2_id(f, i), F->r2[i]);
    }
    ck_assert_uint_eq(fe_inv_id(f), F->inv);
    for (int it = 0; it < 2000; it++) {
        uint64_t a[12], b[12], r[12], want[12];
        rand_elem(F, a, it);
        rand_elem(F, b, it / 7);
        rand_elem(F, a + n, it + 3);
        rand_elem(F, b + n, it / 5);
        fe_mul_id(f, r, a, b);
        CHECK_OP("mul", OP_MUL, r);
        fe_sqr_id(f, r, a);
        CHECK_OP("sqr", OP_SQR, r);
        fe_add_id(f, r, a, b);
        CHECK_OP("add", OP_ADD, r);
        fe_sub_id(f, r, a, b);
        CHECK_OP("sub", OP_SUB, r);
        fe_neg_id(f, r, a);
        CHECK_OP("neg", OP_NEG, r);
        fe_from_mont_id(f, r, a);
        CHECK_OP("from_mont", OP_FROM_MONT, r);
        if (f == FIELD_ID_BN254_FQ || f == FIELD_ID_BLS12_381_FQ) {
            fe2_mul_id(f, r, a, b);
            CHECK_OP("fq2 mul", OP_FQ2_MUL, r);
            fe2_sqr_id(f, r, a);
            CHECK_OP("fq2 sqr", OP_FQ2_SQR, r);
        }
    }
}

EMUL_TEST(device_field_matches_gmp, check_field, FIELD_BN254_FQ, FIELD_ID_BN254_FQ)
EMUL_TEST(device_field_matches_gmp, check_field, FIELD_BN254_FR, FIELD_ID_BN254_FR)
EMUL_TEST(device_field_matches_gmp, check_field, FIELD_BLS12_381_FQ, FIELD_ID_BLS12_381_FQ)
EMUL_TEST(device_field_matches_gmp, check_field, FIELD_BLS12_381_FR, FIELD_ID_BLS12_381_FR)

/* ---- the device's product on 32-bit words (field.h fe_mul32_id, carry32.h) -------- */

/* Operand `which` of the edge list: 0, 1, 2, p-1, p-2, then 2^k, 2^k - 1 and p-1-2^k
 * for every k below the modulus' bit length (long runs of all-ones and all-zero 32-bit
 * words: where a carry the chains drop or add twice would show), then uniform. */
static unsigned edge_count(const field_desc *F)
{
    return 5 + 3 * F->bits + 64;
}
static void edge_elem(const field_desc *F, uint64_t *a, unsigned which)
{
    const unsigned n = fe_n(F);
    fe_set_zero(F, a);
    if (which < 5) {
        static const uint64_t low[5] = { 0, 1, 2, 0, 0 };
        if (which < 3) {
            a[0] = low[which];
        } else {
            fe_copy(F, a, F->p);
            a[0] -= which == 3 ? 1 : 2;
        }
        return;
    }
    which -= 5;
    const unsigned k = which % F->bits, kind = which / F->bits;
    if (kind > 2) {
        rand_elem(F, a, 4);
        return;
    }
    a[k / 64] = 1ULL << (k % 64); /* 2^k < p: k < bits - 1, or the top bit where p has it */
    if (kind == 1) {              /* 2^k - 1 */
        for (unsigned i = 0; i < k / 64; i++) a[i] = ~0ULL;
        a[k / 64] -= 1;
    } else if (kind == 2) { /* p - 1 - 2^k */
        uint64_t t[FE_MAX_LIMBS];
        unsigned char borrow = 0;
        fe_copy(F, t, a);
        for (unsigned i = 0; i < n; i++) a[i] = fe_sbb(F->p[i], t[i], &borrow);
        borrow = 0;
        for (unsigned i = 0; i < n; i++) a[i] = fe_sbb(a[i], i == 0, &borrow);
    }
    if (!fe_is_reduced(F, a)) fe_sub(F, a, a, F->p); /* 2^(bits-1) may exceed p */
}

/* fe_mul32_id (what fe_mul_id is in device code: PTX carry chains on the GPU, carry32.h's
 * plain-C definitions here) against the 64-bit-limb product fe_mul_inline_id (the
 * host's portable product, checked against GMP by test_field) for every pair of edge
 * operands, and against GMP for a sample of them and for Fq2 products built from them
 * (the G2 coordinate fields). */
EMUL_INLINE void check_mul32(const field_desc *F, const enum field_id f)
{
    const unsigned n = fe_n(F), ne = edge_count(F);
    uint64_t *ev = malloc((size_t)ne * n * 8);
    ck_assert(ev);
    for (unsigned i = 0; i < ne; i++) edge_elem(F, ev + (size_t)i * n, i);
    for (unsigned i = 0; i < ne; i++) ck_assert(fe_is_reduced(F, ev + (size_t)i * n));
    int it = 0;
    for (unsigned i = 0; i < ne; i++)
        for (unsigned j = i; j < ne; j++, it++) {
            const uint64_t *a = ev + (size_t)i * n, *b = ev + (size_t)j * n;
            uint64_t r[FE_MAX_LIMBS], want[2 * FE_MAX_LIMBS];
            fe_mul32_id(f, r, a, b);
            fe_mul_inline_id(f, want, a, b);
            ck_assert_msg(memcmp(r, want, n * 8) == 0,
                          "%s: 32-bit-word product differs from the 64-bit one for edge operands %u, %u",
                          F->name, i, j);
            if (it % 61 == 0) CHECK_OP("32-bit-word mul", OP_MUL, r);
        }
    if (f == FIELD_ID_BN254_FQ || f == FIELD_ID_BLS12_381_FQ)
        for (it = 0; it < 4000; it++) {
            uint64_t a[2 * FE_MAX_LIMBS], b[2 * FE_MAX_LIMBS], r[2 * FE_MAX_LIMBS], want[2 * FE_MAX_LIMBS];
            memcpy(a, ev + (size_t)(it % ne) * n, n * 8);
            memcpy(a + n, ev + (size_t)((it * 7 + 1) % ne) * n, n * 8);
            memcpy(b, ev + (size_t)((it * 13 + 2) % ne) * n, n * 8);
            memcpy(b + n, ev + (size_t)((it / 3 + 3) % ne) * n, n * 8);
            fe2_mul_id(f, r, a, b);
            CHECK_OP("fq2 mul (32-bit words)", OP_FQ2_MUL, r);
            fe2_sqr_id(f, r, a);
            CHECK_OP("fq2 sqr (32-bit words)", OP_FQ2_SQR, r);
        }
    free(ev);
}

EMUL_TEST(device_mul32_matches_64bit_and_gmp, check_mul32, FIELD_BN254_FQ, FIELD_ID_BN254_FQ)
EMUL_TEST(device_mul32_matches_64bit_and_gmp, check_mul32, FIELD_BN254_FR, FIELD_ID_BN254_FR)
EMUL_TEST(device_mul32_matches_64bit_and_gmp, check_mul32, FIELD_BLS12_381_FQ, FIELD_ID_BLS12_381_FQ)
EMUL_TEST(device_mul32_matches_64bit_and_gmp, check_mul32, FIELD_BLS12_381_FR, FIELD_ID_BLS12_381_FR)

/* ---- curve -------------------------------------------------------------------- */

/* k·G for a random k, jacobian with a random-looking Z (from an addition), and affine. */
static void rand_point(const curve_group *G, uint64_t *jac, uint64_t *aff)
{
    uint64_t g[EC_MAX_JAC], k[4];
    ec_jac_from_aff(G, g, G->gen);
    test_rand_scalar(G->Fr, k);
    ec_jac_mul_scalar(G, jac, g, k, 4);
    ec_jac_to_aff(G, aff, jac);
}

EMUL_INLINE void check_points(const curve_group *G, const enum curve_id g)
{
    {
        const unsigned cl = ec_cl(G);
        ck_assert_uint_eq(ec_cl_id(g), cl);
        for (int it = 0; it < 20; it++) {
            uint64_t p[EC_MAX_JAC], pa[EC_MAX_AFF], q[EC_MAX_JAC], qa[EC_MAX_AFF], r1[EC_MAX_JAC],
                r2[EC_MAX_JAC];
            rand_point(G, p, pa);
            rand_point(G, q, qa);
            if (it == 1) memcpy(qa, pa, sizeof pa);                      /* p == q: doubling inside */
            if (it == 2) ec_aff_neg(G, qa, pa);                          /* p == -q: infinity */
            if (it == 3) memset(qa, 0, sizeof qa);                       /* q = infinity */
            if (it == 4) ec_jac_set_inf(G, p), memset(pa, 0, sizeof pa); /* p = infinity */
            ec_jac_from_aff(G, q, qa);
            ec_add_aff(G, r1, p, qa);
            ec_add_aff_id(g, r2, p, qa);
            ck_assert_msg(ec_jac_eq(G, r1, r2), "%s: device ec_add_aff (case %d)", G->name, it);
            ec_add(G, r1, p, q);
            ec_add_id(g, r2, p, q);
            ck_assert_msg(ec_jac_eq(G, r1, r2), "%s: device ec_add (case %d)", G->name, it);
            ec_dbl(G, r1, p);
            ec_dbl_id(g, r2, p);
            ck_assert_msg(ec_jac_eq(G, r1, r2), "%s: device ec_dbl (case %d)", G->name, it);
            /* the bucket zero state: all-zero limbs must act as infinity */
            memset(r2, 0, sizeof r2);
            ec_add_id(g, r2, r2, q);
            ck_assert_msg(ec_jac_eq(G, r2, q), "%s: zeroed bucket is not infinity", G->name);
        }
    }
}

EMUL_TEST(device_points_match_host, check_points, G1_BN254, CURVE_G1_BN254)
EMUL_TEST(device_points_match_host, check_points, G2_BN254, CURVE_G2_BN254)
EMUL_TEST(device_points_match_host, check_points, G1_BLS12_381, CURVE_G1_BLS12_381)
EMUL_TEST(device_points_match_host, check_points, G2_BLS12_381, CURVE_G2_BLS12_381)

/* ---- MSM: the pipeline of msm.cu, step by step on the CPU ---------------------- */

struct pair {
    uint32_t key, val, pos;
};

static int pair_cmp(const void *x, const void *y)
{
    const struct pair *a = x, *b = y;
    if (a->key != b->key) return a->key < b->key ? -1 : 1;
    return a->pos < b->pos ? -1 : a->pos > b->pos; /* stable, like CUB's radix sort */
}

/* One segmentation level over n sorted keys: flags, exclusive scan, segment table.
 * Returns nseg. */
static size_t emul_segments(size_t n, const uint32_t *keys, uint32_t *key_start, uint32_t *flags,
                            uint32_t *segid, uint32_t *seg_first, uint32_t *seg_key, uint32_t *distinct,
                            size_t *ndistinct)
{
    for (size_t i = 0; i < n; i++) gmsm_run_start_thread(i, keys, key_start, distinct);
    size_t nd = 0;
    for (size_t i = 0; i < n; i++) nd += distinct[i];
    if (ndistinct) *ndistinct = nd;
    for (size_t i = 0; i < n; i++) gmsm_head_thread(i, keys, key_start, flags);
    uint32_t acc = 0;
    for (size_t i = 0; i < n; i++) segid[i] = acc, acc += flags[i];
    for (size_t i = 0; i < n; i++) gmsm_seg_write_thread(i, n, flags, segid, keys, seg_first, seg_key);
    return acc;
}

/* The whole GPU MSM plan of msm.cu on the CPU: result jacobian (3·cl limbs). */
EMUL_INLINE void emul_msm_body(const curve_group *G, const enum curve_id g, uint64_t *result,
                               const uint64_t *bases, const uint64_t *scalars, size_t count, int *levels_out)
{
    const unsigned cl = ec_cl(G), c = gmsm_window_bits(count), nwin = gmsm_nwin(c);
    const uint32_t nb = gmsm_nbuckets(c), nkeys = nwin * nb;
    const size_t N = (size_t)nwin * count;
    uint32_t *keys = malloc((N + 1) * 4), *vals = malloc((N + 1) * 4), *flags = malloc((N + 1) * 4),
             *segid = malloc((N + 1) * 4), *distinct = malloc((N + 1) * 4), *seg_first = malloc((N + 2) * 4),
             *seg_key = malloc((N + 1) * 4), *key_start = malloc((nkeys + 1) * 4);
    struct pair *pr = malloc((N + 1) * sizeof *pr);
    uint64_t *lv_a = malloc((N + 1) * 3 * cl * 8), *lv_b = malloc((N + 1) * 3 * cl * 8);
    uint64_t *buckets = calloc((size_t)nkeys * 3 * cl, 8);
    const uint32_t nr = gmsm_nranges(c);
    uint64_t *ranges = malloc((size_t)nwin * nr * 3 * cl * 8), *win = malloc((size_t)nwin * 3 * cl * 8);
    uint64_t *rscratch = malloc((size_t)2 * nwin * nr * 3 * cl * 8);
    ck_assert(keys && vals && flags && segid && distinct && seg_first && seg_key && key_start && pr && lv_a &&
              lv_b && buckets && ranges && win && rscratch);

    for (size_t i = 0; i < count; i++) gmsm_digits_thread(i, count, c, scalars, keys, vals);
    for (size_t i = 0; i < N; i++) pr[i] = (struct pair){ keys[i], vals[i], (uint32_t)i };
    qsort(pr, N, sizeof *pr, pair_cmp);
    for (size_t i = 0; i < N; i++) keys[i] = pr[i].key, vals[i] = pr[i].val;
    uint32_t nvalid = 0;
    for (size_t i = 0; i < N; i++) gmsm_nvalid_thread(i, N, keys, nkeys, &nvalid);
    for (size_t i = 0; i < N; i++) /* the sentinel count, independently */
        ck_assert(i < nvalid ? keys[i] < nkeys : keys[i] == nkeys);

    int levels = 0;
    if (nvalid > 0) {
        size_t ndistinct;
        size_t nseg =
            emul_segments(nvalid, keys, key_start, flags, segid, seg_first, seg_key, distinct, &ndistinct);
        for (size_t s = 0; s < nseg; s++) gmsm_sum_bases_thread(g, s, seg_first, vals, bases, lv_a);
        levels = 1;
        while (nseg > ndistinct) {
            memcpy(keys, seg_key, nseg * 4);
            size_t n2 = nseg;
            nseg = emul_segments(n2, keys, key_start, flags, segid, seg_first, seg_key, distinct, NULL);
            for (size_t s = 0; s < nseg; s++) gmsm_sum_jac_thread(g, s, seg_first, lv_a, lv_b);
            uint64_t *t = lv_a;
            lv_a = lv_b;
            lv_b = t;
            levels++;
        }
        ck_assert_uint_eq(nseg, ndistinct);
        for (size_t s = 0; s < nseg; s++) gmsm_scatter_thread(g, s, seg_key, lv_a, buckets);
    }
    for (size_t t = 0; t < (size_t)nwin * nr; t++)
        gmsm_reduce_range_thread(g, t, nb, nr, buckets, ranges, rscratch);
    /* the window tree, pass by pass as msm_impl.cuh launches it (threads of one pass
     * touch disjoint ranges; run them from the last so that an order bug shows) */
    for (uint32_t half = nr / 2; half >= 1; half /= 2)
        for (size_t t = (size_t)nwin * half; t-- > 0;) gmsm_window_tree_thread(g, t, nr, half, ranges, win);
    if (nr == 1)
        for (size_t w = 0; w < nwin; w++) gmsm_window_tree_thread(g, w, nr, 0, ranges, win);
    gmsm_combine(g, c, win, result);
    if (levels_out) *levels_out = levels;
    free(keys), free(vals), free(flags), free(segid), free(distinct), free(seg_first), free(seg_key);
    free(key_start), free(pr), free(lv_a), free(lv_b), free(buckets), free(ranges), free(win), free(rscratch);
}

#define EMUL_MSM(name, GRP, ID)                                                            \
    static void name(uint64_t *r, const uint64_t *b, const uint64_t *s, size_t n, int *lv) \
    {                                                                                      \
        emul_msm_body(&GRP, ID, r, b, s, n, lv);                                           \
    }
EMUL_MSM(emul_msm_g1_bn254, G1_BN254, CURVE_G1_BN254)
EMUL_MSM(emul_msm_g2_bn254, G2_BN254, CURVE_G2_BN254)
EMUL_MSM(emul_msm_g1_bls, G1_BLS12_381, CURVE_G1_BLS12_381)
EMUL_MSM(emul_msm_g2_bls, G2_BLS12_381, CURVE_G2_BLS12_381)

static void emul_msm(const curve_group *G, uint64_t *r, const uint64_t *b, const uint64_t *s, size_t n,
                     int *lv)
{
    switch (G->id) {
    case CURVE_G1_BN254: emul_msm_g1_bn254(r, b, s, n, lv); break;
    case CURVE_G2_BN254: emul_msm_g2_bn254(r, b, s, n, lv); break;
    case CURVE_G1_BLS12_381: emul_msm_g1_bls(r, b, s, n, lv); break;
    case CURVE_G2_BLS12_381: emul_msm_g2_bls(r, b, s, n, lv); break;
    }
}

TEST_AS("msm_pipeline_matches_cpu", test_msm_pipeline_matches_cpu, 4)
{
    static const size_t counts[] = { 1, 2, 33, 300, 1500 };
    const curve_group *G = GROUPS[_i];
    const unsigned cl = ec_cl(G);
    for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++) {
        size_t count = counts[ci];
        if (cl == 12 && count > 300) continue; /* BLS12-381 G2 on the CPU: keep the test short */
        uint64_t *bases = test_rand_points(G, count), *sc = malloc(count * 32);
        ck_assert(sc);
        if (count > 2) memset(bases + 2 * cl, 0, 2 * cl * 8); /* one base at infinity */
        if (count > 3)
            memcpy(bases + 3 * 2 * cl, bases, 2 * cl * 8); /* a repeated base: doubling in a bucket */
        for (enum test_scalars kind = TEST_SCALARS_UNIFORM; kind <= TEST_SCALARS_ONES; kind++) {
            uint64_t want[EC_MAX_JAC], got[EC_MAX_JAC];
            int levels = 0;
            test_rand_scalars(G->Fr, sc, count, kind);
            if (count <= 33)
                ck_assert_int_eq(msm_naive(G, want, (const uint8_t *)bases, (const uint8_t *)sc, count, 32),
                                 0);
            else
                ck_assert_int_eq(msm_run(G, want, (const uint8_t *)bases, (const uint8_t *)sc, count, 32, 1),
                                 0);
            emul_msm(G, got, bases, sc, count, &levels);
            ck_assert_msg(ec_jac_eq(G, want, got), "%s: emulated GPU MSM differs at count %zu, scalars %d",
                          G->name, count, (int)kind);
            /* witness-like scalars pile ~40% of the points into one bucket: more than
             * one segment level must have run (the tree path is tested) */
            if (kind == TEST_SCALARS_WITNESS && count >= 300) ck_assert_int_ge(levels, 2);
        }
        free(bases), free(sc);
    }
}
END_TEST

/* The sizes where the window tree has many passes (2^12: c 8, 8 ranges per window, 3
 * passes; 2^16: c 12, 128 ranges, 7 passes) and the segment levels run deep, on both
 * curves' G1 (G2 adds only time here: its formulas are checked at the sizes above). */
TEST_AS("msm_pipeline_large_sizes", test_msm_pipeline_large_sizes, 2)
{
    static const unsigned lgs[] = { 12, 16 };
    const curve_group *G = _i ? &G1_BLS12_381 : &G1_BN254;
    for (size_t li = 0; li < TEST_N(lgs); li++) {
        const size_t count = (size_t)1 << lgs[li];
        uint64_t *bases = test_rand_points(G, count), *sc = malloc(count * 32), want[EC_MAX_JAC],
                 got[EC_MAX_JAC];
        ck_assert(sc);
        test_rand_scalars(G->Fr, sc, count, lgs[li] == 16 ? TEST_SCALARS_UNIFORM : TEST_SCALARS_WITNESS);
        ck_assert_int_eq(msm_run(G, want, (const uint8_t *)bases, (const uint8_t *)sc, count, 32, 1), 0);
        emul_msm(G, got, bases, sc, count, NULL);
        ck_assert_msg(ec_jac_eq(G, want, got), "%s: emulated GPU MSM differs at 2^%u", G->name, lgs[li]);
        free(bases), free(sc);
    }
}
END_TEST

TEST_AS("msm_digits_reconstruct_scalar", test_msm_digits_reconstruct_scalar, 1)
{
    /* sum_w d_w 2^(wc) = s for every width: checked with exact 320-bit arithmetic */
    for (unsigned c = 4; c <= GMSM_MAX_C; c++) {
        for (int it = 0; it < 200; it++) {
            uint64_t s[4], acc[5] = { 0 };
            for (int k = 0; k < 4; k++) s[k] = it == 0 ? ~0ULL : test_rng64();
            for (unsigned w = gmsm_nwin(c); w-- > 0;) {
                /* acc = acc·2^c + d (acc >= 0 at every step from the top) */
                for (unsigned b = 0; b < c; b++) {
                    for (int k = 4; k > 0; k--) acc[k] = (acc[k] << 1) | (acc[k - 1] >> 63);
                    acc[0] <<= 1;
                }
                int d = gmsm_digit(s, w, c);
                ck_assert_int_le(d < 0 ? -d : d, (int)gmsm_nbuckets(c));
                unsigned __int128 carry = 0;
                uint64_t add = (uint64_t)(d < 0 ? -(int64_t)d : d);
                for (int k = 0; k < 5; k++) {
                    unsigned __int128 x = d >= 0 ? (unsigned __int128)acc[k] + (k == 0 ? add : 0) + carry
                                                 : (unsigned __int128)acc[k] - (k == 0 ? add : 0) - carry;
                    acc[k] = (uint64_t)x;
                    carry = d >= 0 ? x >> 64 : (x >> 64) & 1;
                }
            }
            ck_assert_msg(acc[4] == 0 && memcmp(acc, s, 32) == 0,
                          "digits of width %u do not rebuild the scalar", c);
        }
    }
}
END_TEST

/* ---- NTT ---------------------------------------------------------------------- */

/* The forward DIT of ntt.cu on the CPU: bit reversal, block stages (per block: each
 * thread's copy into a separate buffer as into shared memory, then stage by stage,
 * thread by thread, then each thread's copy back), global stages. */
EMUL_INLINE void emul_ntt_dit_body(const enum field_id f, uint64_t *v, const uint64_t *tw, unsigned lg)
{
    const size_t n = (size_t)1 << lg;
    for (size_t i = 0; i < n; i++) gntt_bitrev_thread(i, lg, v);
    const unsigned blg = lg < GNTT_BLOCK_LG ? lg : GNTT_BLOCK_LG;
    const size_t bs = (size_t)1 << blg;
    uint64_t *sh = malloc(bs * GNTT_LIMBS * 8);
    ck_assert(sh);
    for (size_t blk = 0; blk < n / bs; blk++) {
        memset(sh, 0xa5, bs * GNTT_LIMBS * 8); /* what a missed copy would leave */
        for (unsigned t = 0; t < bs / 2; t++) gntt_block_copy_thread(blk * bs, t, bs, sh, v, true);
        for (unsigned lgm = 0; lgm < blg; lgm++)
            for (size_t t = 0; t < bs / 2; t++) gntt_bfly_thread(f, t, lgm, sh, tw);
        for (unsigned t = 0; t < bs / 2; t++) gntt_block_copy_thread(blk * bs, t, bs, sh, v, false);
    }
    free(sh);
    for (unsigned lgm = blg; lgm < lg; lgm++)
        for (size_t k = 0; k < n / 2; k++) gntt_bfly_thread(f, k, lgm, v, tw);
}

EMUL_INLINE void check_ntt(const field_desc *F, const enum field_id f)
{
    static const unsigned lgs[] = { 0, 1, 2, 5, 10, 11, 13 };
    {
        for (size_t li = 0; li < sizeof lgs / sizeof lgs[0]; li++) {
            const unsigned lg = lgs[li];
            const size_t n = (size_t)1 << lg;
            ntt_domain d;
            ck_assert_int_eq(ntt_domain_init(&d, F, lg), 0);
            uint64_t *tw = malloc(n * 32), *twi = malloc(n * 32), *cs = malloc(n * 32);
            uint64_t *v = malloc(n * 32), *want = malloc(n * 32), *got = malloc(n * 32);
            ck_assert(tw && twi && cs && v && want && got);
            gntt_twiddles(f, tw, d.omega, lg);
            gntt_twiddles(f, twi, d.omega_inv, lg);
            gntt_coset_table(f, cs, d.coset, d.n_inv, lg);
            for (size_t i = 0; i < n; i++) rand_elem(F, v + 4 * i, (int)i + 4);
            for (int op = 0; op < 3; op++) {
                memcpy(want, v, n * 32);
                memcpy(got, v, n * 32);
                if (op == 0) {
                    ntt_forward(&d, want, 1);
                    emul_ntt_dit_body(f, got, tw, lg);
                } else if (op == 1) {
                    ntt_inverse(&d, want, 1);
                    emul_ntt_dit_body(f, got, twi, lg);
                    for (size_t i = 0; i < n; i++) gntt_scale_thread(f, i, got, d.n_inv);
                } else {
                    ntt_to_odd_coset(&d, want, 1);
                    emul_ntt_dit_body(f, got, twi, lg);
                    for (size_t i = 0; i < n; i++) gntt_mul_table_thread(f, i, got, cs);
                    emul_ntt_dit_body(f, got, tw, lg);
                }
                ck_assert_msg(memcmp(want, got, n * 32) == 0, "%s: emulated GPU NTT (op %d) differs at 2^%u",
                              F->name, op, lg);
            }
            /* h = a·b - c out of Montgomery form, against GMP */
            uint64_t *b = want, *cc = got;
            for (size_t i = 0; i < n; i++) {
                rand_elem(F, b + 4 * i, (int)i);
                rand_elem(F, cc + 4 * i, (int)i + 2);
            }
            for (size_t i = 0; i < n; i++) {
                uint64_t ref[FE_MAX_LIMBS];
                gmp_ref(F, OP_H, ref, v + 4 * i, b + 4 * i, cc + 4 * i);
                gntt_h_thread(f, i, v, b, cc);
                ck_assert_msg(memcmp(ref, v + 4 * i, 32) == 0, "%s: h step", F->name);
            }
            ntt_domain_free(&d);
            free(tw), free(twi), free(cs), free(v), free(want), free(got);
        }
    }
}

EMUL_TEST(ntt_stages_match_cpu, check_ntt, FIELD_BN254_FR, FIELD_ID_BN254_FR)
EMUL_TEST(ntt_stages_match_cpu, check_ntt, FIELD_BLS12_381_FR, FIELD_ID_BLS12_381_FR)

/* ---- the MSM's scratch budget (host) ------------------------------------------- */

/* Two gpu_devs sharing one device size their scratch from the same free-memory reading: the
 * chunks they pick must fit side by side in 70% of it (each once took 70%: 140% in
 * all, the second sharer's allocation failing or evicting circuits for nothing). One
 * sharer keeps the whole 70%; the chunk never exceeds 2^24 points, never drops below
 * GMSM_MIN_CHUNK, and is the largest power-of-two halving of the count that fits. */
TEST(msm_scratch_budget_splits_across_sharers, 1)
{
    static const unsigned cls[] = { 4, 8, 6, 12 }; /* G1/G2 BN254, G1/G2 BLS12-381 */
    static const size_t frees[] = { (size_t)80 << 30, (size_t)20 << 30, (size_t)6 << 30, (size_t)1 << 30 };
    static const unsigned lgs[] = { 16, 20, 22, 24, 26 };
    for (size_t ci = 0; ci < TEST_N(cls); ci++)
        for (size_t fi = 0; fi < TEST_N(frees); fi++)
            for (size_t li = 0; li < TEST_N(lgs); li++) {
                const size_t count = (size_t)1 << lgs[li], fr = frees[fi];
                for (unsigned sharers = 1; sharers <= 4; sharers++) {
                    size_t ch = gmsm_chunk_points(cls[ci], count, fr, sharers);
                    ck_assert(ch >= GMSM_MIN_CHUNK && ch <= GMSM_MAX_CHUNK && ch <= count);
                    if (ch > GMSM_MIN_CHUNK) {
                        /* all sharers at once fit in 70% of the reading */
                        ck_assert_msg(sharers * gmsm_chunk_bytes(cls[ci], ch) <= fr / 10 * 7,
                                      "cl %u, 2^%u points, %zu GiB free, %u sharers: chunk %zu overcommits",
                                      cls[ci], lgs[li], fr >> 30, sharers, ch);
                        /* and it is the largest halving that does */
                        if (ch < count && ch < GMSM_MAX_CHUNK)
                            ck_assert(sharers * gmsm_chunk_bytes(cls[ci], 2 * ch) > fr / 10 * 7);
                    }
                }
                /* one sharer: the old budget (70% of free), unchanged */
                size_t one = gmsm_chunk_points(cls[ci], count, fr, 1),
                       zero = gmsm_chunk_points(cls[ci], count, fr, 0);
                ck_assert(one == zero);
            }
    /* the figure the README's budget table quotes: a 2^24 G1 chunk on an 80 GiB device
     * with two sharers is not cut */
    ck_assert(gmsm_chunk_points(4, (size_t)1 << 24, (size_t)70 << 30, 2) == (size_t)1 << 24);
}
END_TEST

int main(void)
{
    const struct test_opts o = { .timeout = 300 };

    test_rng_seed(0x6770755f656d756cULL);
    return test_main("gpu_emul", &o);
}
