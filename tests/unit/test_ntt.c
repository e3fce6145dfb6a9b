/* test_ntt.c — NTTs against a naive DFT, snarkjs's roots (§7.3), the odd coset (§4.2)
 * against its definition and against the bn128 fixture, thread-count independence. */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "zk/ifma.h"
#include "zk/ntt.h"

#include "../../zk/ntt_kernels.h"
#include "helper_test.h"

#define L 4

static const field_desc *const FIELDS[] = { &FIELD_BN254_FR, &FIELD_BLS12_381_FR };

/* xorshift64*: deterministic data, so a failure reproduces. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint64_t rng_next(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dULL;
}

/* Uniform reduced element; any reduced value is also a valid Montgomery form. */
static void rand_fe(const field_desc *F, uint64_t *x)
{
    do {
        for (unsigned i = 0; i < L; i++) x[i] = rng_next();
        x[L - 1] &= (1ULL << (F->bits - 192)) - 1;
    } while (!fe_is_reduced(F, x));
}

static uint64_t *vec_new(size_t n)
{
    uint64_t *v = aligned_alloc(64, (n * L * 8 + 63) / 64 * 64);
    ck_assert_ptr_nonnull(v);
    return v;
}

static uint64_t *vec_rand(const field_desc *F, size_t n)
{
    uint64_t *v = vec_new(n);
    for (size_t i = 0; i < n; i++) rand_fe(F, v + i * L);
    return v;
}

static uint64_t *vec_dup(const uint64_t *v, size_t n)
{
    uint64_t *c = vec_new(n);
    memcpy(c, v, n * L * 8);
    return c;
}

/* out[j] = scale · sum_i in[i] w^(ij), O(n^2), with the powers of w tabulated. */
static void naive_dft(const field_desc *F, uint64_t *out, const uint64_t *in, size_t n, const uint64_t *w,
                      const uint64_t *scale)
{
    uint64_t *pw = vec_new(n), t[FE_MAX_LIMBS];
    fe_set_one(F, pw);
    for (size_t i = 1; i < n; i++) fe_mul(F, pw + i * L, pw + (i - 1) * L, w);
    for (size_t j = 0; j < n; j++) {
        uint64_t acc[FE_MAX_LIMBS];
        fe_set_zero(F, acc);
        for (size_t i = 0; i < n; i++) {
            fe_mul(F, t, in + i * L, pw + (i * j % n) * L);
            fe_add(F, acc, acc, t);
        }
        fe_mul(F, out + j * L, acc, scale);
    }
    free(pw);
}

/* P(x) for coefficients c[0..n-1], Horner. */
static void poly_eval(const field_desc *F, uint64_t *r, const uint64_t *c, size_t n, const uint64_t *x)
{
    uint64_t acc[FE_MAX_LIMBS];
    fe_set_zero(F, acc);
    for (size_t i = n; i-- > 0;) {
        fe_mul(F, acc, acc, x);
        fe_add(F, acc, acc, c + i * L);
    }
    fe_copy(F, r, acc);
}

static void assert_vec_eq(const field_desc *F, const uint64_t *a, const uint64_t *b, size_t n,
                          const char *what)
{
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(fe_eq(F, a + i * L, b + i * L), "%s: %s differs at %zu of %zu", F->name, what, i, n);
}

static void dec_to_mont(const field_desc *F, uint64_t *r, const char *dec)
{
    uint64_t c[FE_MAX_LIMBS];
    ck_assert_int_eq(fe_canon_from_dec(F, c, dec), 0);
    fe_to_mont(F, r, c);
}

/* A check of one domain d (field F = d->Fr, size n = d->n) on a random vector v. */
typedef void domain_check(const field_desc *F, const ntt_domain *d, size_t n, const uint64_t *v);

/* For each of FIELDS and each size 2^lo .. 2^hi: check that domain with a random vector
 * (each check's messages name the field and size). */
static void for_each_domain(unsigned lo, unsigned hi, domain_check *check)
{
    for (unsigned f = 0; f < 2; f++) {
        for (unsigned lg = lo; lg <= hi; lg++) {
            ntt_domain d;
            ck_assert_int_eq(ntt_domain_init(&d, FIELDS[f], lg), 0);
            uint64_t *v = vec_rand(FIELDS[f], d.n);
            check(FIELDS[f], &d, d.n, v);
            free(v);
            ntt_domain_free(&d);
        }
    }
}

/* A TEST that runs check on each domain of for_each_domain(lo, hi). */
#define DOMAIN_TEST(name, lo, hi, check) \
    TEST(name, 1)                        \
    {                                    \
        for_each_domain(lo, hi, check);  \
    }                                    \
    END_TEST

/* forward and inverse against the naive DFT */
static void check_naive_dft(const field_desc *F, const ntt_domain *d, size_t n, const uint64_t *v)
{
    uint64_t *w = vec_dup(v, n), *ref = vec_new(n);

    naive_dft(F, ref, v, n, d->omega, F->one);
    ntt_forward(d, w, 1);
    assert_vec_eq(F, w, ref, n, "forward");

    memcpy(w, v, n * L * 8);
    naive_dft(F, ref, v, n, d->omega_inv, d->n_inv);
    ntt_inverse(d, w, 1);
    assert_vec_eq(F, w, ref, n, "inverse");
    free(w), free(ref);
}

/* every power of two 1 .. 2^10, both fields */
DOMAIN_TEST(test_ntt_matches_naive_dft_up_to_1024, 0, 10, check_naive_dft)

/* inverse(forward(v)) = v, all threads and one; forward(inverse(v)) = v too */
static void check_roundtrip(const field_desc *F, const ntt_domain *d, size_t n, const uint64_t *v)
{
    uint64_t *w = vec_dup(v, n);

    ntt_forward(d, w, 0);
    ntt_inverse(d, w, 1);
    assert_vec_eq(F, w, v, n, "inverse(forward)");
    ntt_inverse(d, w, 1);
    ntt_forward(d, w, 0);
    assert_vec_eq(F, w, v, n, "forward(inverse)");
    free(w);
}

DOMAIN_TEST(test_ntt_roundtrip_2_16, 16, 16, check_roundtrip)

/* a few outputs of the multithreaded forward by the O(n) definition v[j] = sum_i v[i] w^(ij) */
static void check_spots(const field_desc *F, const ntt_domain *d, size_t n, const uint64_t *v)
{
    uint64_t *w = vec_dup(v, n);

    ntt_forward(d, w, 3);
    size_t js[] = { 0, 1, 2, n / 2, n - 1, 12345, 31000 };
    for (unsigned k = 0; k < sizeof js / sizeof js[0]; k++) {
        uint64_t x[FE_MAX_LIMBS], acc[FE_MAX_LIMBS];
        fe_pow(F, x, d->omega, (uint64_t[]){ js[k] }, 1);
        poly_eval(F, acc, v, n, x);
        ck_assert_msg(fe_eq(F, acc, w + js[k] * L), "%s: forward 2^%u output %zu", F->name, d->lg, js[k]);
    }
    free(w);
}

/* 2^15: one radix-2 plus radix-4 global stages */
DOMAIN_TEST(test_ntt_large_spot_checks_against_definition, 15, 15, check_spots)

/* v_odd[j] = A(coset·w^j), A = interpolant of v over {w^i}: coefficients by the naive
 * inverse DFT, evaluation by Horner at the coset points */
static void check_odd_coset(const field_desc *F, const ntt_domain *d, size_t n, const uint64_t *v)
{
    unsigned lg = d->lg;
    uint64_t *w = vec_dup(v, n), *coef = vec_new(n), x[FE_MAX_LIMBS];

    naive_dft(F, coef, v, n, d->omega_inv, d->n_inv);
    ntt_to_odd_coset(d, w, 1);
    fe_copy(F, x, d->coset);
    for (size_t j = 0; j < n; j++) {
        uint64_t y[FE_MAX_LIMBS];
        poly_eval(F, y, coef, n, x);
        ck_assert_msg(fe_eq(F, y, w + j * L), "%s: coset 2^%u output %zu", F->name, lg, j);
        fe_mul(F, x, x, d->omega);
    }
    for (size_t i = 0; i < n; i++) { /* coset_scale_br[rev(i)] = coset^i / n */
        uint64_t p[FE_MAX_LIMBS];
        size_t r = 0;
        for (unsigned b = 0; b < lg; b++) r |= ((i >> b) & 1) << (lg - 1 - b);
        fe_pow(F, p, d->coset, (uint64_t[]){ i }, 1);
        fe_mul(F, p, p, d->n_inv);
        ck_assert_msg(fe_eq(F, p, d->coset_scale_br + r * L), "%s: coset_scale 2^%u at %zu", F->name, lg, i);
    }
    free(w), free(coef);
}

DOMAIN_TEST(test_ntt_odd_coset_matches_definition, 0, 7, check_odd_coset)

TEST(test_ntt_snarkjs_roots, 1)
{
    /* §7.3: BN254 w[28], w[4], w[5]; BLS12-381 w[32] (5-based, not arkworks' 7-based), w[4], w[5] */
    static const struct {
        const field_desc *F;
        unsigned k;
        const char *dec;
    } roots[] = {
        { &FIELD_BN254_FR, 28,
          "19103219067921713944291392827692070036145651957329286315305642004821462161904" },
        { &FIELD_BN254_FR, 4,
          "14940766826517323942636479241147756311199852622225275649687664389641784935947" },
        { &FIELD_BN254_FR, 5,
          "4419234939496763621076330863786513495701855246241724391626358375488475697872" },
        { &FIELD_BLS12_381_FR, 32,
          "937917089079007706106976984802249742464848817460758522850752807661925904159" },
        { &FIELD_BLS12_381_FR, 4,
          "35811073542294463015946892559272836998938171743018714161809767624935956676211" },
        { &FIELD_BLS12_381_FR, 5,
          "32311457133713125762627935188100354218453688428796477340173861531654182464166" },
    };
    for (unsigned i = 0; i < sizeof roots / sizeof roots[0]; i++) {
        uint64_t want[FE_MAX_LIMBS], got[FE_MAX_LIMBS];
        dec_to_mont(roots[i].F, want, roots[i].dec);
        ck_assert_int_eq(fr_root_of_unity(roots[i].F, roots[i].k, got), 0);
        ck_assert_msg(fe_eq(roots[i].F, got, want), "%s w[%u]", roots[i].F->name, roots[i].k);
    }
    uint64_t one[FE_MAX_LIMBS], x[FE_MAX_LIMBS];
    ck_assert_int_eq(fr_root_of_unity(&FIELD_BN254_FR, 0, one), 0);
    ck_assert(fe_eq(&FIELD_BN254_FR, one, FIELD_BN254_FR.one));
    ck_assert_int_eq(fr_root_of_unity(&FIELD_BN254_FR, 29, x), -EINVAL);
    ck_assert_int_eq(fr_root_of_unity(&FIELD_BLS12_381_FR, 33, x), -EINVAL);

    /* the domain takes w[lg] and w[lg+1]: refuses lg + 1 > s, and non-Fr fields */
    ntt_domain d;
    ck_assert_int_eq(ntt_domain_init(&d, &FIELD_BN254_FR, 28), -EINVAL);
    ck_assert_int_eq(ntt_domain_init(&d, &FIELD_BLS12_381_FR, 32), -EINVAL);
    ck_assert_int_eq(ntt_domain_init(&d, &FIELD_BN254_FQ, 4), -EINVAL);
    ntt_domain_free(&d);
    ntt_domain_free(NULL);
    ck_assert_int_eq(ntt_domain_init(&d, &FIELD_BLS12_381_FR, 4), 0);
    dec_to_mont(&FIELD_BLS12_381_FR, x, roots[4].dec);
    ck_assert(fe_eq(&FIELD_BLS12_381_FR, d.omega, x));
    dec_to_mont(&FIELD_BLS12_381_FR, x, roots[5].dec);
    ck_assert(fe_eq(&FIELD_BLS12_381_FR, d.coset, x));
    ntt_domain_free(&d);
}
END_TEST

static json_t *fixture_load(void)
{
    char path[4096];
    json_error_t err;
    test_ref_fixture(path, sizeof path, "bn128", "intermediates_fixed_rs.json");
    json_t *j = json_load_file(path, 0, &err);
    ck_assert_msg(j != NULL, "%s: %s (set CUZK_REF_FIXTURES)", path, err.text);
    return j;
}

static uint64_t *fixture_vec(const field_desc *F, json_t *j, const char *key, size_t n)
{
    json_t *a = json_object_get(j, key);
    ck_assert_msg(json_is_array(a) && json_array_size(a) == n, "fixture key %s", key);
    uint64_t *v = vec_new(n);
    for (size_t i = 0; i < n; i++) dec_to_mont(F, v + i * L, json_string_value(json_array_get(a, i)));
    return v;
}

TEST(test_ntt_reproduces_bn128_fixture_coset_evaluations, 1)
{
    /* intermediates_fixed_rs.json: a/b/c_eval -> a/b/c_coset, h = a_coset·b_coset - c_coset */
    const field_desc *F = &FIELD_BN254_FR;
    json_t *j = fixture_load();
    size_t n = (size_t)json_integer_value(json_object_get(j, "domainSize"));
    unsigned lg = (unsigned)json_integer_value(json_object_get(j, "power"));
    ck_assert_uint_eq(n, (size_t)1 << lg);
    ntt_domain d;
    uint64_t x[FE_MAX_LIMBS];
    ck_assert_int_eq(ntt_domain_init(&d, F, lg), 0);
    dec_to_mont(F, x, json_string_value(json_object_get(j, "omega")));
    ck_assert(fe_eq(F, x, d.omega));
    dec_to_mont(F, x, json_string_value(json_object_get(j, "coset_inc")));
    ck_assert(fe_eq(F, x, d.coset));

    static const char *const ev[] = { "a_eval", "b_eval", "c_eval" },
                             *const co[] = { "a_coset", "b_coset", "c_coset" };
    uint64_t *odd[3];
    for (int k = 0; k < 3; k++) {
        uint64_t *want = fixture_vec(F, j, co[k], n);
        odd[k] = fixture_vec(F, j, ev[k], n);
        ntt_to_odd_coset(&d, odd[k], 0);
        assert_vec_eq(F, odd[k], want, n, co[k]);
        free(want);
    }
    uint64_t *h = fixture_vec(F, j, "h", n);
    for (size_t i = 0; i < n; i++) {
        fe_mul(F, x, odd[0] + i * L, odd[1] + i * L);
        fe_sub(F, x, x, odd[2] + i * L);
        ck_assert_msg(fe_eq(F, x, h + i * L), "h[%zu]", i);
    }
    for (int k = 0; k < 3; k++) free(odd[k]);
    free(h);
    ntt_domain_free(&d);
    json_decref(j);
}
END_TEST

/* threads 1, 2, 3 bit for bit */
static void check_thread_counts(const field_desc *F, const ntt_domain *d, size_t n, const uint64_t *v)
{
    void (*const ops[])(const ntt_domain *, uint64_t *, unsigned) = { ntt_forward, ntt_inverse,
                                                                      ntt_to_odd_coset };
    for (unsigned o = 0; o < 3; o++) {
        uint64_t *r1 = vec_dup(v, n);
        ops[o](d, r1, 1);
        for (unsigned t = 2; t <= 3; t++) {
            uint64_t *rt = vec_dup(v, n);
            ops[o](d, rt, t);
            ck_assert_msg(memcmp(r1, rt, n * L * 8) == 0, "%s 2^%u op %u threads %u", F->name, d->lg, o, t);
            free(rt);
        }
        free(r1);
    }
}

/* sizes with an even and an odd number of global stages */
DOMAIN_TEST(test_ntt_thread_count_does_not_change_result, 12, 15, check_thread_counts)

/* The coset path equals the composition of the separately checked inverse and forward
 * transforms with the shift coset^i in between, at 1, 2 and 3 threads. */
static void check_odd_coset_composition(const field_desc *F, const ntt_domain *d, size_t n, const uint64_t *v)
{
    uint64_t *ref = vec_dup(v, n), x[FE_MAX_LIMBS];

    ntt_inverse(d, ref, 1);
    fe_set_one(F, x);
    for (size_t i = 0; i < n; i++) {
        fe_mul(F, ref + i * L, ref + i * L, x);
        fe_mul(F, x, x, d->coset);
    }
    ntt_forward(d, ref, 1);
    for (unsigned t = 1; t <= 3; t++) {
        uint64_t *w = vec_dup(v, n);
        ntt_to_odd_coset(d, w, t);
        assert_vec_eq(F, w, ref, n, "odd coset");
        free(w);
    }
    free(ref);
}

/* Above the 2^12 block the coset path runs global DIF passes (an odd and an even
 * number of them). */
DOMAIN_TEST(test_ntt_odd_coset_large_is_inverse_shift_forward, 13, 15, check_odd_coset_composition)

/* ---- the IFMA lane kernels against the scalar ones ---------------------------------
 *
 * On an IFMA CPU every case above runs the lane kernels (zk/ntt_lanes.h). These two
 * keep the scalar kernels checked and compare the two bit for bit: Check forks each
 * test, so a test that sets CUZK_NO_IFMA=1 before the first ifma_available() has the
 * scalar path to itself, and the comparison computes its scalar side in a child
 * forked before the test's own first call. */

/* Sizes below, at and above the 2^12 in-cache block (one and three lane values, one
 * block, global radix-2 and radix-4 passes). */
static const unsigned LANE_LGS[] = { 3, 4, 5, 8, 11, 12, 13, 14, 15 };
#define NOPS 3

static void run_op(const ntt_domain *d, unsigned op, uint64_t *v, unsigned threads)
{
    void (*const ops[NOPS])(const ntt_domain *, uint64_t *, unsigned) = { ntt_forward, ntt_inverse,
                                                                          ntt_to_odd_coset };
    ops[op](d, v, threads);
}

/* Per size: the domain's three tables, then each op at 1 .. 3 threads. */
#define NSLOTS (3 + NOPS * 3)

/* out[k] = the tables of the domain 2^lgs[k] and the results on v[k], k < count, by
 * the scalar code, in one child (forked before this process asks ifma_available()) */
static void scalar_results(const field_desc *F, const unsigned *lgs, uint64_t *const *v, uint64_t *const *out,
                           unsigned count)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        setenv("CUZK_NO_IFMA", "1", 1);
        if (ifma_available()) _exit(3);
        for (unsigned k = 0; k < count; k++) {
            ntt_domain d;
            if (ntt_domain_init(&d, F, lgs[k])) _exit(4);
            const size_t n = d.n;
            memcpy(out[k], d.tw, n * L * 8);
            memcpy(out[k] + n * L, d.tw_inv, n * L * 8);
            memcpy(out[k] + 2 * n * L, d.coset_scale_br, n * L * 8);
            for (unsigned op = 0; op < NOPS; op++)
                for (unsigned t = 1; t <= 3; t++) {
                    uint64_t *r = out[k] + (3 + op * 3 + t - 1) * n * L;
                    memcpy(r, v[k], n * L * 8);
                    run_op(&d, op, r, t);
                }
            ntt_domain_free(&d);
        }
        _exit(0);
    }
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "scalar child: status %d", st);
}

TEST(test_ntt_lanes_match_scalar_bit_for_bit, 2)
{
    enum { K = sizeof LANE_LGS / sizeof LANE_LGS[0] };
    const field_desc *F = FIELDS[_i];
    uint64_t *v[K], *ref[K];
    for (unsigned k = 0; k < K; k++) {
        const size_t n = (size_t)1 << LANE_LGS[k];
        v[k] = vec_rand(F, n);
        ref[k] = mmap(NULL, NSLOTS * n * L * 8, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        ck_assert_ptr_ne(ref[k], MAP_FAILED);
    }
    scalar_results(F, LANE_LGS, v, ref, K);
    for (unsigned k = 0; k < K; k++) {
        ntt_domain d;
        ck_assert_int_eq(ntt_domain_init(&d, F, LANE_LGS[k]), 0);
        const size_t n = d.n, bytes = n * L * 8;
        const uint64_t *const tabs[3] = { d.tw, d.tw_inv, d.coset_scale_br };
        for (unsigned q = 0; q < 3; q++)
            ck_assert_msg(memcmp(tabs[q], ref[k] + q * n * L, bytes) == 0, "%s 2^%u table %u differs",
                          F->name, d.lg, q);
        uint64_t *w = vec_new(n);
        for (unsigned op = 0; op < NOPS; op++)
            for (unsigned t = 1; t <= 3; t++) {
                memcpy(w, v[k], bytes);
                run_op(&d, op, w, t);
                ck_assert_msg(memcmp(w, ref[k] + (3 + op * 3 + t - 1) * n * L, bytes) == 0,
                              "%s 2^%u op %u threads %u: lanes differ from scalar", F->name, d.lg, op, t);
            }
        free(w);
        munmap(ref[k], NSLOTS * bytes);
        free(v[k]);
        ntt_domain_free(&d);
    }
    if (!ifma_available()) fprintf(stderr, "note: no IFMA here: %s compared scalar with scalar\n", F->name);
}
END_TEST

/* groth16's h through the lanes, a = from_mont(a·b - c), against field.h's products on
 * random canonical inputs and the edge values 0, 1, p - 1 (so a·b - c = 0 occurs). */
TEST(test_ntt_lanes_h_matches_field, 2)
{
#if defined(__x86_64__)
    const field_desc *F = FIELDS[_i];
    if (!ifma_available()) {
        fprintf(stderr, "SKIP: no IFMA here: the lane h is not used\n");
        return;
    }
    const size_t n = 4096;
    uint64_t *a = vec_rand(F, n), *b = vec_rand(F, n), *c = vec_rand(F, n), *want = vec_new(n);
    uint64_t edge[3][FE_MAX_LIMBS];
    fe_set_zero(F, edge[0]);
    fe_set_one(F, edge[1]);
    fe_neg(F, edge[2], F->one);
    for (size_t i = 0; i < 27; i++) { /* every (a, b, c) of edge values */
        fe_copy(F, a + i * L, edge[i % 3]);
        fe_copy(F, b + i * L, edge[i / 3 % 3]);
        fe_copy(F, c + i * L, edge[i / 9]);
    }
    fe_mul(F, c + 27 * L, a + 27 * L, b + 27 * L); /* a·b - c = 0 from random a, b */
    for (size_t i = 0; i < n; i++) {
        fe_mul(F, want + i * L, a + i * L, b + i * L);
        fe_sub(F, want + i * L, want + i * L, c + i * L);
        fe_from_mont(F, want + i * L, want + i * L);
    }
    (F == &FIELD_BN254_FR ? ntt_lanes_h_bn254 : ntt_lanes_h_bls12_381)(a, b, c, n);
    ck_assert_msg(memcmp(a, want, n * L * 8) == 0, "%s: lane h differs", F->name);
    free(a), free(b), free(c), free(want);
#endif
}
END_TEST

/* The scalar kernels alone against the independent references: the naive DFT up to
 * 2^10 and, above the block, the coset as inverse, shift, forward. */
TEST(test_ntt_scalar_kernels_without_ifma, 1)
{
    setenv("CUZK_NO_IFMA", "1", 1);
    ck_assert(!ifma_available());
    for_each_domain(0, 10, check_naive_dft);
    for_each_domain(13, 13, check_odd_coset_composition);
}
END_TEST

TEST(test_ntt_domain_cache_shares_keeps_and_evicts, 1)
{
    ntt_cache_stats st0, st;
    const ntt_domain *a, *b, *c;
    ntt_cache_get_stats(&st0);
    ck_assert_int_eq(ntt_domain_acquire(&FIELD_BN254_FR, 10, &a), 0);
    ck_assert_int_eq(ntt_domain_acquire(&FIELD_BN254_FR, 10, &b), 0);
    ck_assert_ptr_eq(a, b); /* one domain, shared */
    ck_assert_int_eq(ntt_domain_acquire(&FIELD_BLS12_381_FR, 10, &c), 0);
    ck_assert_ptr_ne(a, c); /* keyed by field as well as size */
    ck_assert_uint_eq(c->n, 1024);
    ntt_cache_get_stats(&st);
    ck_assert_uint_eq(st.misses - st0.misses, 2);
    ck_assert_uint_eq(st.hits - st0.hits, 1);
    ck_assert_uint_eq(st.bytes, (size_t)2 * 3 * 1024 * 32);

    /* a zero budget frees nothing in use ... */
    ntt_cache_set_budget(0);
    ntt_cache_get_stats(&st);
    ck_assert_uint_eq(st.domains, 2);
    ck_assert_uint_eq(a->n, 1024); /* still readable */
    ntt_domain_release(b);
    ntt_cache_get_stats(&st);
    ck_assert_uint_eq(st.domains, 2); /* a still holds it */
    /* ... and frees each as its last user lets go */
    ntt_domain_release(a);
    ntt_domain_release(c);
    ntt_cache_get_stats(&st);
    ck_assert_uint_eq(st.domains, 0);
    ck_assert_uint_eq(st.bytes, 0);
    ck_assert_uint_eq(st.evictions - st0.evictions, 2);

    /* with room for one domain the least recently used one goes */
    ntt_cache_set_budget((size_t)3 * 1024 * 32);
    ck_assert_int_eq(ntt_domain_acquire(&FIELD_BN254_FR, 9, &a), 0);
    ntt_domain_release(a);
    ck_assert_int_eq(ntt_domain_acquire(&FIELD_BN254_FR, 10, &b), 0);
    ntt_domain_release(b);
    ntt_cache_get_stats(&st);
    ck_assert_uint_eq(st.domains, 1);
    ck_assert_int_eq(ntt_domain_acquire(&FIELD_BN254_FR, 10, &b), 0); /* kept: a hit */
    ntt_cache_stats st2;
    ntt_cache_get_stats(&st2);
    ck_assert_uint_eq(st2.hits, st.hits + 1);
    ntt_domain_release(b);
    ck_assert_int_eq(ntt_domain_acquire(&FIELD_BN254_FR, 30, &a), -EINVAL); /* errors pass through */
    ck_assert_ptr_null(a);
    ntt_cache_set_budget(NTT_CACHE_DEFAULT_BUDGET);
}
END_TEST

struct racer {
    pthread_barrier_t *go;
    const ntt_domain *d;
    int rc;
};

static void *race_acquire(void *arg)
{
    struct racer *r = arg;
    pthread_barrier_wait(r->go);
    r->rc = ntt_domain_acquire(&FIELD_BN254_FR, 14, &r->d);
    return NULL;
}

/* Threads missing on one new domain at once (the CPU worker's two lanes starting two
 * partitions of a new circuit) build it once: one miss, the others wait and hit, and
 * all share the one domain. (Before, each built its own copy: more than one miss.) */
TEST(test_ntt_domain_cache_builds_a_domain_once_under_a_race, 1)
{
    enum { NT = 4 };
    pthread_t th[NT];
    struct racer r[NT];
    pthread_barrier_t go;
    ntt_cache_stats st0, st;
    ntt_cache_get_stats(&st0);
    pthread_barrier_init(&go, NULL, NT);
    for (int i = 0; i < NT; i++) {
        r[i] = (struct racer){ .go = &go };
        ck_assert_int_eq(pthread_create(&th[i], NULL, race_acquire, &r[i]), 0);
    }
    for (int i = 0; i < NT; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&go);
    ntt_cache_get_stats(&st);
    ck_assert_uint_eq(st.misses - st0.misses, 1);
    ck_assert_uint_eq(st.hits - st0.hits, NT - 1);
    for (int i = 0; i < NT; i++) {
        ck_assert_int_eq(r[i].rc, 0);
        ck_assert_ptr_eq(r[i].d, r[0].d);
        ntt_domain_release(r[i].d);
    }
}
END_TEST

int main(void)
{
    const struct test_opts o = { .timeout = 120 };

    return test_main("ntt", &o);
}
