/* test_field.c — Montgomery field arithmetic (field.h, zk/field.c) against GMP on
 * random values and the edges 0, 1, p-1, R, R^-1, for each of the four fields. */
#include <check.h>
#include <errno.h>
#include <gmp.h>
#include <stdlib.h>
#include <string.h>

#include "zk/field.h"

#include "helper_test.h"

static const field_desc *const FIELDS[] = { &FIELD_BN254_FQ, &FIELD_BN254_FR, &FIELD_BLS12_381_FQ,
                                            &FIELD_BLS12_381_FR };
#define RANDOM_ROUNDS 3000

static void z_from(mpz_t z, const field_desc *F, const uint64_t *a)
{
    mpz_import(z, F->n, -1, 8, 0, 0, a);
}
static void z_to(uint64_t *a, const field_desc *F, const mpz_t z)
{
    memset(a, 0, F->n * 8);
    mpz_export(a, NULL, -1, 8, 0, 0, z);
}

/* GMP context per field: p, R = 2^(64n) mod p, R^-1, and the edge values e: 0, 1, p-1,
 * R mod p, R^-1 mod p. */
struct ref {
    const field_desc *F;
    mpz_t p, R, Rinv, t, u, e[5];
};
static void ref_init(struct ref *g, const field_desc *F)
{
    g->F = F;
    mpz_inits(g->p, g->R, g->Rinv, g->t, g->u, NULL);
    z_from(g->p, F, F->p);
    mpz_set_ui(g->R, 1);
    mpz_mul_2exp(g->R, g->R, 64 * F->n);
    mpz_mod(g->R, g->R, g->p);
    ck_assert(mpz_invert(g->Rinv, g->R, g->p));
    mpz_init_set_ui(g->e[0], 0);
    mpz_init_set_ui(g->e[1], 1);
    mpz_init(g->e[2]);
    mpz_sub_ui(g->e[2], g->p, 1);
    mpz_init_set(g->e[3], g->R);
    mpz_init_set(g->e[4], g->Rinv);
}
static void ref_clear(struct ref *g)
{
    mpz_clears(g->p, g->R, g->Rinv, g->t, g->u, NULL);
    for (int i = 0; i < 5; i++) mpz_clear(g->e[i]);
}

/* A TEST over the 4 FIELDS: check(g) with the GMP context g of each. */
#define REF_TEST(name, check)     \
    TEST(name, 4)                 \
    {                             \
        struct ref g;             \
        ref_init(&g, FIELDS[_i]); \
        check(&g);                \
        ref_clear(&g);            \
    }                             \
    END_TEST

/* Montgomery limbs of the value v (v·R mod p), computed by GMP. */
static void ref_mont(struct ref *g, uint64_t *a, const mpz_t v)
{
    mpz_mul(g->t, v, g->R);
    mpz_mod(g->t, g->t, g->p);
    z_to(a, g->F, g->t);
}
static void rand_val(struct ref *g, mpz_t v)
{
    uint64_t a[FE_MAX_LIMBS];
    for (unsigned i = 0; i < g->F->n; i++) a[i] = test_rng64();
    z_from(v, g->F, a);
    mpz_mod(v, v, g->p);
}

/* got are the Montgomery limbs of want_val mod p (any integer: ref_mont reduces it). */
static void assert_mont_eq(struct ref *g, const uint64_t *got, const mpz_t want_val, const char *op)
{
    uint64_t w[FE_MAX_LIMBS];
    ref_mont(g, w, want_val);
    ck_assert_msg(fe_eq(g->F, got, w), "%s: %s wrong", g->F->name, op);
    ck_assert_msg(fe_is_reduced(g->F, got), "%s: %s not reduced", g->F->name, op);
}

static void check_constants(struct ref *g)
{
    const field_desc *F = g->F;
    ck_assert(mpz_probab_prime_p(g->p, 30));
    ck_assert_uint_eq(mpz_sizeinbase(g->p, 2), F->bits);
    ck_assert_uint_eq(F->inv * F->p[0], (uint64_t)0 - 1); /* inv = -p^-1 mod 2^64 */
    /* fe_mul_inline's no-carry CIOS needs the top limb below 2^63 - 1 */
    ck_assert_msg(F->p[F->n - 1] < 0x7fffffffffffffffULL, "%s: no-carry Montgomery precondition", F->name);
    uint64_t a[FE_MAX_LIMBS];
    z_to(a, F, g->R);
    ck_assert(fe_eq(F, a, F->one));
    mpz_mul(g->u, g->R, g->R);
    mpz_mod(g->u, g->u, g->p);
    z_to(a, F, g->u);
    ck_assert(fe_eq(F, a, F->r2));
}

REF_TEST(test_field_constants_match_gmp, check_constants)

/* add, sub, neg, dbl, mul, sqr, to_mont/from_mont on random values and edges. */
static void check_ops(struct ref *g, const mpz_t va, const mpz_t vb)
{
    const field_desc *F = g->F;
    uint64_t a[FE_MAX_LIMBS], b[FE_MAX_LIMBS], r[FE_MAX_LIMBS], c[FE_MAX_LIMBS];
    mpz_t w;
    mpz_init(w);
    ref_mont(g, a, va);
    ref_mont(g, b, vb);

    fe_add(F, r, a, b);
    mpz_add(w, va, vb);
    assert_mont_eq(g, r, w, "add");
    fe_sub(F, r, a, b);
    mpz_sub(w, va, vb);
    assert_mont_eq(g, r, w, "sub");
    fe_neg(F, r, a);
    mpz_neg(w, va);
    assert_mont_eq(g, r, w, "neg");
    fe_dbl(F, r, a);
    mpz_mul_2exp(w, va, 1);
    assert_mont_eq(g, r, w, "dbl");
    fe_mul(F, r, a, b);
    mpz_mul(w, va, vb);
    assert_mont_eq(g, r, w, "mul");
    fe_mul_inline(F, c, a, b);
    ck_assert(fe_eq(F, c, r));
    fe_sqr(F, r, a);
    mpz_mul(w, va, va);
    assert_mont_eq(g, r, w, "sqr");
    /* aliasing: r = a op a in place */
    fe_copy(F, r, a);
    fe_mul(F, r, r, r);
    assert_mont_eq(g, r, w, "mul in place");

    /* to_mont of the canonical value gives the GMP Montgomery limbs; from_mont inverts */
    z_to(c, F, va);
    fe_to_mont(F, r, c);
    ck_assert_msg(fe_eq(F, r, a), "%s: to_mont wrong", F->name);
    fe_from_mont(F, r, a);
    ck_assert_msg(fe_eq(F, r, c), "%s: from_mont wrong", F->name);
    mpz_clear(w);
}

static void check_inv_pow(struct ref *g, const mpz_t va)
{
    const field_desc *F = g->F;
    uint64_t a[FE_MAX_LIMBS], r[FE_MAX_LIMBS], e[FE_MAX_LIMBS];
    mpz_t w, ze;
    mpz_inits(w, ze, NULL);
    ref_mont(g, a, va);
    fe_inv(F, r, a);
    if (mpz_sgn(va) == 0)
        mpz_set_ui(w, 0);
    else
        ck_assert(mpz_invert(w, va, g->p));
    assert_mont_eq(g, r, w, "inv");
    for (unsigned i = 0; i < F->n; i++) e[i] = test_rng64();
    e[0] &= test_rng64() & 1 ? ~(uint64_t)0 : 0xff; /* some short exponents */
    fe_pow(F, r, a, e, F->n);
    z_from(ze, F, e);
    mpz_powm(w, va, ze, g->p);
    assert_mont_eq(g, r, w, "pow");
    mpz_clears(w, ze, NULL);
}

static void check_arithmetic(struct ref *g)
{
    mpz_t *e = g->e, a, b;
    mpz_inits(a, b, NULL);
    for (int i = 0; i < 5; i++) {
        check_inv_pow(g, e[i]);
        for (int j = 0; j < 5; j++) check_ops(g, e[i], e[j]);
    }
    for (int r = 0; r < RANDOM_ROUNDS; r++) {
        rand_val(g, a);
        rand_val(g, b);
        check_ops(g, a, b);
        check_ops(g, a, e[r % 5]);
        if (r % 4 == 0) check_inv_pow(g, a);
    }
    mpz_clears(a, b, NULL);
}

REF_TEST(test_field_arithmetic_matches_gmp, check_arithmetic)

/* Batch inversion equals single inversions; zeros stay zero; in place works. */
static void check_batch_inv(struct ref *g)
{
    const field_desc *F = g->F;
    const size_t cnt = 257;
    const unsigned n = F->n;
    uint64_t *a = malloc(cnt * n * 8), *r = malloc(cnt * n * 8), *scr = malloc(cnt * n * 8), s[FE_MAX_LIMBS];
    mpz_t v;
    mpz_init(v);
    for (size_t i = 0; i < cnt; i++) {
        rand_val(g, v);
        if (i % 17 == 3 || i == 0 || i == cnt - 1) mpz_set_ui(v, 0);
        ref_mont(g, a + i * n, v);
    }
    ck_assert_int_eq(fe_batch_inv(F, r, a, cnt, NULL), 0);
    for (size_t i = 0; i < cnt; i++) {
        fe_inv(F, s, a + i * n);
        ck_assert(fe_eq(F, s, r + i * n));
    }
    ck_assert_int_eq(fe_batch_inv(F, a, a, cnt, scr), 0); /* in place, caller scratch */
    ck_assert(memcmp(a, r, cnt * n * 8) == 0);
    ck_assert_int_eq(fe_batch_inv(F, r, a, 0, NULL), 0);
    mpz_clear(v);
    free(a);
    free(r);
    free(scr);
}

REF_TEST(test_field_batch_inv_matches_single, check_batch_inv)

/* Decimal I/O agrees with mpz_get_str / mpz_set_str; bad input is refused. */
static void check_decimal(struct ref *g)
{
    const field_desc *F = g->F;
    mpz_t v, *e = g->e;
    char buf[200], want[200];
    uint64_t a[FE_MAX_LIMBS], b[FE_MAX_LIMBS], m[FE_MAX_LIMBS];
    mpz_init(v);
    for (int r = 0; r < 500; r++) {
        if (r < 5)
            mpz_set(v, e[r]);
        else
            rand_val(g, v);
        if (r == 5) mpz_set_ui(v, 10000000000000000000ULL); /* 10^19: a chunk boundary */
        z_to(a, F, v);
        mpz_get_str(want, 10, v);
        fe_canon_to_dec(F, a, buf, sizeof buf);
        ck_assert_str_eq(buf, want);
        ck_assert_int_eq(fe_canon_from_dec(F, b, want), 0);
        ck_assert(fe_eq(F, a, b));
        ref_mont(g, m, v);
        fe_mont_to_dec(F, m, buf, sizeof buf);
        ck_assert_str_eq(buf, want);
    }
    mpz_get_str(want, 10, g->p);
    ck_assert_int_eq(fe_canon_from_dec(F, b, want), -ERANGE);
    ck_assert_int_eq(fe_canon_from_dec(F, b,
                                       "99999999999999999999999999999999999999999999999999999999999"
                                       "999999999999999999999999999999999999999999999999999999999999"
                                       "999999999999999999999999999999999999999999999999999999999999"),
                     -ERANGE);
    ck_assert_int_eq(fe_canon_from_dec(F, b, ""), -EINVAL);
    ck_assert_int_eq(fe_canon_from_dec(F, b, "12a"), -EINVAL);
    ck_assert_int_eq(fe_canon_from_dec(F, b, "-1"), -EINVAL);
    mpz_clear(v);
}

REF_TEST(test_field_decimal_round_trips, check_decimal)

/* Fq2 (u^2 = -1): mul, sqr, inv against (a0+a1u)(b0+b1u) computed with GMP. */
TEST(test_field_fq2_matches_gmp, 2)
{
    const field_desc *F = _i == 0 ? &FIELD_BN254_FQ : &FIELD_BLS12_381_FQ;
    const unsigned n = F->n;
    struct ref g;
    ref_init(&g, F);
    mpz_t a0, a1, b0, b1, c0, c1, t, d;
    mpz_inits(a0, a1, b0, b1, c0, c1, t, d, NULL);
    uint64_t a[2 * FE_MAX_LIMBS], b[2 * FE_MAX_LIMBS], r[2 * FE_MAX_LIMBS];
    for (int k = 0; k < RANDOM_ROUNDS; k++) {
        rand_val(&g, a0);
        rand_val(&g, a1);
        rand_val(&g, b0);
        rand_val(&g, b1);
        if (k == 0) mpz_set_ui(a1, 0);
        if (k == 1) mpz_set_ui(a0, 0);
        if (k == 2) mpz_sub_ui(a0, g.p, 1), mpz_sub_ui(a1, g.p, 1);
        ref_mont(&g, a, a0);
        ref_mont(&g, a + n, a1);
        ref_mont(&g, b, b0);
        ref_mont(&g, b + n, b1);
        /* mul: c0 = a0b0 - a1b1, c1 = a0b1 + a1b0 */
        mpz_mul(c0, a0, b0);
        mpz_submul(c0, a1, b1);
        mpz_mod(c0, c0, g.p);
        mpz_mul(c1, a0, b1);
        mpz_addmul(c1, a1, b0);
        mpz_mod(c1, c1, g.p);
        fe2_mul(F, r, a, b);
        assert_mont_eq(&g, r, c0, "fq2 mul c0");
        assert_mont_eq(&g, r + n, c1, "fq2 mul c1");
        /* sqr */
        mpz_mul(c0, a0, a0);
        mpz_submul(c0, a1, a1);
        mpz_mod(c0, c0, g.p);
        mpz_mul(c1, a0, a1);
        mpz_mul_2exp(c1, c1, 1);
        mpz_mod(c1, c1, g.p);
        fe2_sqr(F, r, a);
        assert_mont_eq(&g, r, c0, "fq2 sqr c0");
        assert_mont_eq(&g, r + n, c1, "fq2 sqr c1");
        /* inv: (a0 - a1 u) / (a0^2 + a1^2) */
        mpz_mul(d, a0, a0);
        mpz_addmul(d, a1, a1);
        mpz_mod(d, d, g.p);
        ck_assert(mpz_invert(t, d, g.p));
        mpz_mul(c0, a0, t);
        mpz_mod(c0, c0, g.p);
        mpz_mul(c1, a1, t);
        mpz_neg(c1, c1);
        mpz_mod(c1, c1, g.p);
        fe2_inv(F, r, a);
        assert_mont_eq(&g, r, c0, "fq2 inv c0");
        assert_mont_eq(&g, r + n, c1, "fq2 inv c1");
    }
    mpz_clears(a0, a1, b0, b1, c0, c1, t, d, NULL);
    ref_clear(&g);
}
END_TEST

TEST(test_field_lookup_by_modulus, 4)
{
    const field_desc *F = FIELDS[_i];
    uint8_t bytes[48];
    memcpy(bytes, F->p, F->n * 8);
    ck_assert_int_eq(field_by_modulus(bytes, F->n * 8)->id, F->id);
    bytes[0] ^= 2;
    ck_assert_ptr_null(field_by_modulus(bytes, F->n * 8));
}
END_TEST

/* The mulx/adcx/adox products (zk/field.c, used when the CPU has BMI2 and ADX) equal
 * the portable C product bit for bit: random operands, operands with extreme limbs
 * (all-ones low limbs below p, p-1, p-2, small values, powers of two) and every pair
 * of those; the portable path is the oracle (itself checked against GMP above, and the
 * arithmetic test runs once per path). Skipped where the CPU lacks mulx. */
static void check_mulx(struct ref *g)
{
    const field_desc *F = g->F;
    if (!fe_cpu_has_mulx()) return;
    enum { NEDGE = 12 };
    uint64_t e[NEDGE][FE_MAX_LIMBS], a[FE_MAX_LIMBS], b[FE_MAX_LIMBS], want[FE_MAX_LIMBS], got[FE_MAX_LIMBS];
    uint64_t sq[FE_MAX_LIMBS];
    mpz_t v;
    mpz_init(v);
    memset(e, 0, sizeof e);
    e[1][0] = 1;
    fe_copy(F, e[2], F->p);
    e[2][0] -= 1; /* p - 1 */
    fe_copy(F, e[3], F->p);
    e[3][0] -= 2;             /* p - 2 */
    fe_copy(F, e[4], F->one); /* R mod p */
    fe_copy(F, e[5], F->r2);
    for (unsigned i = 0; i + 1 < F->n; i++) e[6][i] = ~(uint64_t)0; /* 2^(64(n-1)) - 1 */
    e[7][F->n - 1] = F->p[F->n - 1] - 1;                            /* top limb just below p's */
    for (unsigned i = 0; i + 1 < F->n; i++) e[7][i] = ~(uint64_t)0;
    e[8][F->n - 1] = (uint64_t)1 << 60; /* powers of two */
    e[9][F->n / 2] = (uint64_t)1 << 63;
    mpz_sub_ui(v, g->p, 1); /* (p-1)/2 */
    mpz_fdiv_q_2exp(v, v, 1);
    z_to(e[10], F, v);
    z_to(e[11], F, g->Rinv);
    bool was = fe_set_mulx(true);
    for (int i = 0; i < NEDGE; i++)
        for (int j = 0; j < NEDGE; j++) {
            ck_assert(fe_is_reduced(F, e[i]) && fe_is_reduced(F, e[j]));
            fe_mul_inline(F, want, e[i], e[j]);
            fe_mul(F, got, e[i], e[j]);
            ck_assert_msg(fe_eq(F, got, want), "%s: mulx product of edges %d, %d differs", F->name, i, j);
        }
    for (int i = 0; i < NEDGE; i++) {
        fe_mul_inline(F, want, e[i], e[i]);
        fe_sqr(F, got, e[i]);
        ck_assert_msg(fe_eq(F, got, want), "%s: mulx square of edge %d differs", F->name, i);
    }
    for (int r = 0; r < 200000; r++) {
        rand_val(g, v);
        z_to(a, F, v);
        if (r % 3 == 0)
            fe_copy(F, b, a);
        else if (r % 7 == 0)
            fe_copy(F, b, e[r % NEDGE]);
        else {
            rand_val(g, v);
            z_to(b, F, v);
        }
        fe_mul_inline(F, want, a, b);
        fe_mul(F, got, a, b);
        ck_assert_msg(fe_eq(F, got, want), "%s: mulx product differs (round %d)", F->name, r);
        fe_mul_inline(F, sq, a, a);
        fe_sqr(F, got, a);
        ck_assert_msg(fe_eq(F, got, sq), "%s: mulx square differs (round %d)", F->name, r);
        fe_mul(F, a, a, b); /* in place */
        ck_assert(fe_eq(F, a, want));
    }
    fe_set_mulx(was);
    mpz_clear(v);
}

REF_TEST(test_field_mulx_matches_portable, check_mulx)

/* The Fq2 products with lazy reduction (zk/field.c, mulx; BN254 and BLS12-381) equal the plain
 * Karatsuba of reduced products (fe2_mul_generic, itself checked against GMP) bit for
 * bit: random operands, edge coordinates (0, 1, p-1, p-2, (p-1)/2, R mod p, limbs of
 * all ones below p) in every pairing, and results written over either operand. */
TEST(test_field_fq2_lazy_matches_generic, 2)
{
    const field_desc *F = _i == 0 ? &FIELD_BN254_FQ : &FIELD_BLS12_381_FQ;
    const unsigned n = F->n;
    const size_t sz = 2 * n * sizeof(uint64_t);
    struct ref g;
    ref_init(&g, F);
    enum { NEDGE = 8 };
    uint64_t e[NEDGE][FE_MAX_LIMBS], a[2 * FE_MAX_LIMBS], b[2 * FE_MAX_LIMBS], want[2 * FE_MAX_LIMBS],
        got[2 * FE_MAX_LIMBS];
    mpz_t v;
    mpz_init(v);
    memset(e, 0, sizeof e);
    e[1][0] = 1;
    fe_copy(F, e[2], F->p);
    e[2][0] -= 1;
    fe_copy(F, e[3], F->p);
    e[3][0] -= 2;
    mpz_sub_ui(v, g.p, 1);
    mpz_fdiv_q_2exp(v, v, 1);
    z_to(e[4], F, v);
    fe_copy(F, e[5], F->one);
    for (unsigned k = 0; k + 1 < n; k++) e[6][k] = ~(uint64_t)0;
    fe_copy(F, e[7], F->p);
    e[7][n - 1] -= 1; /* top limb below p's */
    for (int i = 0; i < NEDGE * NEDGE; i++)
        for (int j = 0; j < NEDGE * NEDGE; j++) {
            memcpy(a, e[i % NEDGE], sz / 2);
            memcpy(a + n, e[i / NEDGE], sz / 2);
            memcpy(b, e[j % NEDGE], sz / 2);
            memcpy(b + n, e[j / NEDGE], sz / 2);
            fe2_mul_generic(F, want, a, b);
            fe2_mul(F, got, a, b);
            ck_assert_msg(memcmp(got, want, sz) == 0, "%s: fq2 lazy product of edges %d, %d differs", F->name,
                          i, j);
        }
    for (int r = 0; r < 100000; r++) {
        for (int k = 0; k < 2; k++) {
            rand_val(&g, v);
            z_to(a + n * k, F, v);
            rand_val(&g, v);
            z_to(b + n * k, F, v);
        }
        if (r % 5 == 0) memcpy(b, a, sz);
        fe2_mul_generic(F, want, a, b);
        fe2_mul(F, got, a, b);
        ck_assert_msg(memcmp(got, want, sz) == 0, "%s: fq2 lazy product differs (round %d)", F->name, r);
        if (r % 2) {
            fe2_mul(F, a, a, b); /* r aliases a */
            ck_assert(memcmp(a, want, sz) == 0);
        } else {
            fe2_mul(F, b, a, b); /* r aliases b */
            ck_assert(memcmp(b, want, sz) == 0);
        }
    }
    mpz_clear(v);
    ref_clear(&g);
}
END_TEST

/* Edge operands for the products: 0, 1, 2, p-1, p-2, (p-1)/2, (p+1)/2, R, R^2, R^-1
 * (mod p), 2^(bits-1), 2^(bits-1) - 1, and per limb k: 2^(64k) - 1 (every limb below
 * k all ones: carries run the whole row), 2^(64k), p - 2^(64k), a lone all-ones limb
 * k, and all ones below limb k under p's top limb minus one. All reduced. Returns the
 * count (at most 12 + 5 FE_MAX_LIMBS). */
static int carry_edges(struct ref *g, uint64_t (*e)[FE_MAX_LIMBS])
{
    const field_desc *F = g->F;
    const unsigned n = F->n;
    int c = 0;
    mpz_t v;
    mpz_init(v);
    memset(e, 0, (12 + 5 * FE_MAX_LIMBS) * sizeof *e);
    for (int k = 0; k < 3; k++) e[c++][0] = (uint64_t)k;
    mpz_sub_ui(v, g->p, 1), z_to(e[c++], F, v);
    mpz_sub_ui(v, g->p, 2), z_to(e[c++], F, v);
    mpz_sub_ui(v, g->p, 1), mpz_fdiv_q_2exp(v, v, 1), z_to(e[c++], F, v);
    mpz_add_ui(v, v, 1), z_to(e[c++], F, v);
    z_to(e[c++], F, g->R);
    fe_copy(F, e[c++], F->r2);
    z_to(e[c++], F, g->Rinv);
    mpz_set_ui(v, 0), mpz_setbit(v, F->bits - 1), z_to(e[c++], F, v);
    mpz_sub_ui(v, v, 1), z_to(e[c++], F, v);
    for (unsigned k = 0; k < n; k++) {
        for (unsigned i = 0; i < k; i++) e[c][i] = ~(uint64_t)0;
        c++;
        e[c++][k] = 1;
        mpz_set_ui(v, 0), mpz_setbit(v, 64 * k), mpz_sub(v, g->p, v), z_to(e[c++], F, v);
        if (k + 1 < n)
            e[c++][k] = ~(uint64_t)0;
        else
            e[c++][k] = F->p[k] - 1;
        for (unsigned i = 0; i < k; i++) e[c][i] = ~(uint64_t)0;
        e[c++][k] = k + 1 < n ? 0 : F->p[k] - 1;
    }
    mpz_clear(v);
    for (int i = 0; i < c; i++) ck_assert_msg(fe_is_reduced(F, e[i]), "%s: edge %d not reduced", F->name, i);
    return c;
}

/* want = a b R^-1 mod p for raw limbs a, b: the Montgomery product by GMP. */
static void ref_mont_mul(struct ref *g, uint64_t *want, const uint64_t *a, const uint64_t *b)
{
    mpz_t x, y;
    mpz_inits(x, y, NULL);
    z_from(x, g->F, a);
    z_from(y, g->F, b);
    mpz_mul(x, x, y);
    mpz_mul(x, x, g->Rinv);
    mpz_mod(x, x, g->p);
    z_to(want, g->F, x);
    mpz_clears(x, y, NULL);
}

/* Both product paths (mulx where the CPU has it, then the portable C) against GMP
 * directly, not only against each other: fe_mul and fe_sqr on every pair of the carry
 * edges above and on random operands; for the base fields also fe2_mul (lazy Karatsuba
 * with mulx) on pairs of edges as coordinates. */
static void check_products(struct ref *g)
{
    const field_desc *F = g->F;
    const unsigned n = F->n;
    uint64_t e[12 + 5 * FE_MAX_LIMBS][FE_MAX_LIMBS], want[FE_MAX_LIMBS], got[FE_MAX_LIMBS];
    uint64_t a[2 * FE_MAX_LIMBS], b[2 * FE_MAX_LIMBS], r2[2 * FE_MAX_LIMBS], w2[2 * FE_MAX_LIMBS];
    int ne = carry_edges(g, e);
    mpz_t v, x0, x1, y0, y1, c0;
    mpz_inits(v, x0, x1, y0, y1, c0, NULL);
    bool fq = F->id == FIELD_ID_BN254_FQ || F->id == FIELD_ID_BLS12_381_FQ;
    for (int path = 0; path < 2; path++) {
        if (path == 0 && !fe_cpu_has_mulx()) continue;
        bool was = fe_set_mulx(path == 0);
        for (int i = 0; i < ne; i++) {
            ref_mont_mul(g, want, e[i], e[i]);
            fe_sqr(F, got, e[i]);
            ck_assert_msg(fe_eq(F, got, want), "%s path %d: square of edge %d wrong", F->name, path, i);
            for (int j = 0; j < ne; j++) {
                ref_mont_mul(g, want, e[i], e[j]);
                fe_mul(F, got, e[i], e[j]);
                ck_assert_msg(fe_eq(F, got, want), "%s path %d: product of edges %d, %d wrong", F->name, path,
                              i, j);
            }
        }
        for (int r = 0; r < 20000; r++) {
            rand_val(g, v);
            z_to(a, F, v);
            rand_val(g, v);
            z_to(b, F, v);
            ref_mont_mul(g, want, a, b);
            fe_mul(F, got, a, b);
            ck_assert_msg(fe_eq(F, got, want), "%s path %d: random product wrong (round %d)", F->name, path,
                          r);
            ref_mont_mul(g, want, a, a);
            fe_sqr(F, got, a);
            ck_assert_msg(fe_eq(F, got, want), "%s path %d: random square wrong (round %d)", F->name, path,
                          r);
        }
        /* Fq2: c0 = a0b0 - a1b1, c1 = a0b1 + a1b0, each times R^-1 (Montgomery) */
        for (int i = 0; fq && i < ne * ne; i += 7)
            for (int j = 0; j < ne * ne; j += 5) {
                fe_copy(F, a, e[i % ne]);
                fe_copy(F, a + n, e[i / ne]);
                fe_copy(F, b, e[j % ne]);
                fe_copy(F, b + n, e[j / ne]);
                fe2_mul(F, r2, a, b);
                z_from(x0, F, a), z_from(x1, F, a + n), z_from(y0, F, b), z_from(y1, F, b + n);
                mpz_mul(c0, x0, y0), mpz_submul(c0, x1, y1), mpz_mul(c0, c0, g->Rinv), mpz_mod(c0, c0, g->p);
                z_to(w2, F, c0);
                mpz_mul(c0, x0, y1), mpz_addmul(c0, x1, y0), mpz_mul(c0, c0, g->Rinv), mpz_mod(c0, c0, g->p);
                z_to(w2 + n, F, c0);
                ck_assert_msg(fe_eq(F, r2, w2) && fe_eq(F, r2 + n, w2 + n),
                              "%s path %d: fq2 product of edge pairs %d, %d wrong", F->name, path, i, j);
            }
        fe_set_mulx(was);
    }
    mpz_clears(v, x0, x1, y0, y1, c0, NULL);
}

REF_TEST(test_field_products_match_gmp_at_carry_edges, check_products)

/* fe_inv_gcd (GMP's gcd, what the host's batch inversions use) equals fe_inv (Fermat,
 * the portable reference) bit for bit and GMP's inverse of the value: on the carry
 * edges (0 -> 0 included) and random values, with mulx and with the portable product. */
static void check_inv_gcd(struct ref *g)
{
    const field_desc *F = g->F;
    uint64_t e[12 + 5 * FE_MAX_LIMBS][FE_MAX_LIMBS], a[FE_MAX_LIMBS], want[FE_MAX_LIMBS], got[FE_MAX_LIMBS];
    int ne = carry_edges(g, e);
    mpz_t v, w;
    mpz_inits(v, w, NULL);
    for (int path = 0; path < 2; path++) {
        bool was = fe_set_mulx(path == 0);
        for (int r = 0; r < ne + 300; r++) {
            if (r < ne) {
                fe_copy(F, a, e[r]);
                z_from(v, F, a);
                mpz_mul(v, v, g->Rinv); /* the value whose Montgomery limbs a is */
                mpz_mod(v, v, g->p);
            } else {
                rand_val(g, v);
                ref_mont(g, a, v);
            }
            fe_inv(F, want, a);
            fe_inv_gcd(F, got, a);
            ck_assert_msg(fe_eq(F, got, want), "%s path %d: gcd inverse differs from Fermat's (case %d)",
                          F->name, path, r);
            if (mpz_sgn(v) == 0)
                mpz_set_ui(w, 0);
            else
                ck_assert(mpz_invert(w, v, g->p));
            assert_mont_eq(g, got, w, "inv_gcd");
            fe_inv_gcd(F, a, a); /* in place */
            ck_assert(fe_eq(F, a, want));
        }
        fe_set_mulx(was);
    }
    mpz_clears(v, w, NULL);
}

REF_TEST(test_field_inv_gcd_matches_fermat, check_inv_gcd)

/* The whole GMP comparison again with the portable product forced. */
static void check_arithmetic_portable(struct ref *g)
{
    bool was = fe_set_mulx(false);
    check_arithmetic(g);
    fe_set_mulx(was);
}

REF_TEST(test_field_arithmetic_portable_matches_gmp, check_arithmetic_portable)

int main(void)
{
    const struct test_opts o = { .timeout = 120 };

    test_rng_seed(0x853c49e6748fea9bULL);
    return test_main("field", &o);
}
