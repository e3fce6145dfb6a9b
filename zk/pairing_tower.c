/* pairing_tower.c — the tower Fq2 ⊂ Fq6 ⊂ Fq12 of the pairing (pairing.h has the
 * layout), for both curves: every function takes the base-field descriptor or the
 * pairing's parameters (which hold xi) and works on run-time limb counts. These are
 * ordinary functions on purpose (field.h's note on compile time); a 4-pair check costs
 * a few ms, against a proof's tens of ms to seconds.
 *
 * Sizes in limbs with n = F->n: Fq2 2n, Fq6 6n, Fq12 12n. */
#include "zk/pairing_tower.h"

#include <stdbool.h>
#include <string.h>

#define FQ2_MAX  (2 * FE_MAX_LIMBS)
#define FQ6_MAX  (6 * FE_MAX_LIMBS)
#define FQ12_MAX FQ12_MAX_LIMBS

/* ---- Fq2 helpers beyond field.h ------------------------------------------- */

void fq2_copy(const field_desc *F, uint64_t *r, const uint64_t *a)
{
    memmove(r, a, 2 * F->n * sizeof *r);
}

void fq2_conj(const field_desc *F, uint64_t *r, const uint64_t *a)
{
    fe_copy(F, r, a);
    fe_neg(F, r + F->n, a + F->n);
}

/* r = a * s for s in Fq (both coordinates). */
void fq2_mul_fq(const field_desc *F, uint64_t *r, const uint64_t *a, const uint64_t *s)
{
    fe_mul(F, r, a, s);
    fe_mul(F, r + F->n, a + F->n, s);
}

/* ---- Fq6 = Fq2[v]/(v^3 - xi) ---------------------------------------------- */

/* r = a xi. Both curves' xi is small (pairing_params.c: 9 + u, 1 + u), so that
 * (a0 + a1 u)(k + u) = (k a0 - a1) + (a0 + k a1) u takes additions only: about half
 * an Fq2 product on BN254, a tenth on BLS12-381, and the Fq6 product takes two. Any
 * other field goes through the product by pp->xi. r may alias a. */
static void fq2_mul_xi(const pairing_params *pp, uint64_t *r, const uint64_t *a)
{
    const field_desc *F = pp->F;
    const unsigned n = F->n;
    uint64_t k0[FE_MAX_LIMBS], k1[FE_MAX_LIMBS];
    switch (F->id) {
    case FIELD_ID_BN254_FQ: /* k = 9: 8x by three doublings, plus one */
        fe_add(F, k0, a, a);
        fe_add(F, k1, a + n, a + n);
        fe_add(F, k0, k0, k0);
        fe_add(F, k1, k1, k1);
        fe_add(F, k0, k0, k0);
        fe_add(F, k1, k1, k1);
        fe_add(F, k0, k0, a);
        fe_add(F, k1, k1, a + n);
        break;
    case FIELD_ID_BLS12_381_FQ: /* k = 1 */
        fe_copy(F, k0, a);
        fe_copy(F, k1, a + n);
        break;
    default: fe2_mul(F, r, a, pp->xi); return;
    }
    fe_sub(F, k0, k0, a + n);
    fe_add(F, r + n, k1, a);
    fe_copy(F, r, k0);
}

static void fq6_add(const field_desc *F, uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    for (unsigned i = 0; i < 3; i++) fe2_add(F, r + 2 * i * F->n, a + 2 * i * F->n, b + 2 * i * F->n);
}

static void fq6_sub(const field_desc *F, uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    for (unsigned i = 0; i < 3; i++) fe2_sub(F, r + 2 * i * F->n, a + 2 * i * F->n, b + 2 * i * F->n);
}

static void fq6_neg(const field_desc *F, uint64_t *r, const uint64_t *a)
{
    for (unsigned i = 0; i < 3; i++) fe2_neg(F, r + 2 * i * F->n, a + 2 * i * F->n);
}

/* A Karatsuba cross term: r = (x + y)(u + v) - p - q, with p = x u and q = y v the
 * products already made: x v + y u in one Fq2 product instead of two. */
static inline void fq2_cross(const field_desc *F, uint64_t *r, const uint64_t *x, const uint64_t *y,
                             const uint64_t *u, const uint64_t *v, const uint64_t *p, const uint64_t *q)
{
    uint64_t w[FQ2_MAX];
    fe2_add(F, r, x, y);
    fe2_add(F, w, u, v);
    fe2_mul(F, r, r, w);
    fe2_sub(F, r, r, p);
    fe2_sub(F, r, r, q);
}

/* Karatsuba over Fq2 (Devegili, O hEigeartaigh, Scott, Dahab 2006, "Multiplication
 * and squaring on pairing-friendly fields", §4): 6 Fq2 products. r may alias a or b. */
static void fq6_mul(const pairing_params *pp, uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    const field_desc *F = pp->F;
    const unsigned m = 2 * F->n;
    const uint64_t *a0 = a, *a1 = a + m, *a2 = a + 2 * m, *b0 = b, *b1 = b + m, *b2 = b + 2 * m;
    uint64_t t0[FQ2_MAX], t1[FQ2_MAX], t2[FQ2_MAX], s[FQ2_MAX], u[FQ2_MAX], c0[FQ2_MAX], c1[FQ2_MAX],
        c2[FQ2_MAX];
    fe2_mul(F, t0, a0, b0);
    fe2_mul(F, t1, a1, b1);
    fe2_mul(F, t2, a2, b2);
    fq2_cross(F, s, a1, a2, b1, b2, t1, t2);
    fq2_mul_xi(pp, s, s);
    fe2_add(F, c0, t0, s); /* c0 = t0 + xi((a1+a2)(b1+b2) - t1 - t2) */
    fq2_cross(F, s, a0, a1, b0, b1, t0, t1);
    fq2_mul_xi(pp, u, t2);
    fe2_add(F, c1, s, u); /* c1 = (a0+a1)(b0+b1) - t0 - t1 + xi t2 */
    fq2_cross(F, s, a0, a2, b0, b2, t0, t2);
    fe2_add(F, c2, s, t1); /* c2 = (a0+a2)(b0+b2) - t0 - t2 + t1 */
    fq2_copy(F, r, c0);
    fq2_copy(F, r + m, c1);
    fq2_copy(F, r + 2 * m, c2);
}

/* r = a * v: (a0, a1, a2) -> (xi a2, a0, a1). r may alias a. */
static void fq6_mul_v(const pairing_params *pp, uint64_t *r, const uint64_t *a)
{
    const unsigned m = 2 * pp->F->n;
    uint64_t t[FQ2_MAX];
    fq2_mul_xi(pp, t, a + 2 * m);
    fq2_copy(pp->F, r + 2 * m, a + m);
    fq2_copy(pp->F, r + m, a);
    fq2_copy(pp->F, r, t);
}

/* 1/a: c0 = a0^2 - xi a1 a2, c1 = xi a2^2 - a0 a1, c2 = a1^2 - a0 a2,
 * a^-1 = (c0, c1, c2) / (a0 c0 + xi (a2 c1 + a1 c2)). */
static void fq6_inv(const pairing_params *pp, uint64_t *r, const uint64_t *a)
{
    const field_desc *F = pp->F;
    const unsigned m = 2 * F->n;
    const uint64_t *a0 = a, *a1 = a + m, *a2 = a + 2 * m;
    uint64_t c0[FQ2_MAX], c1[FQ2_MAX], c2[FQ2_MAX], t[FQ2_MAX], s[FQ2_MAX];
    fe2_sqr(F, c0, a0);
    fe2_mul(F, t, a1, a2);
    fq2_mul_xi(pp, t, t);
    fe2_sub(F, c0, c0, t);
    fe2_sqr(F, c1, a2);
    fq2_mul_xi(pp, c1, c1);
    fe2_mul(F, t, a0, a1);
    fe2_sub(F, c1, c1, t);
    fe2_sqr(F, c2, a1);
    fe2_mul(F, t, a0, a2);
    fe2_sub(F, c2, c2, t);
    fe2_mul(F, t, a2, c1);
    fe2_mul(F, s, a1, c2);
    fe2_add(F, t, t, s);
    fq2_mul_xi(pp, t, t);
    fe2_mul(F, s, a0, c0);
    fe2_add(F, t, t, s);
    fe2_inv(F, t, t);
    fe2_mul(F, r, c0, t);
    fe2_mul(F, r + m, c1, t);
    fe2_mul(F, r + 2 * m, c2, t);
}

/* ---- Fq12 = Fq6[w]/(w^2 - v) ---------------------------------------------- */

/* The parameters hold the Fq2 constant xi the tower needs; the public Fq12 functions
 * take only F, so they look the parameters up by field. */
#define params_of pairing_params_get

void fq12_set_one(const field_desc *F, uint64_t *r)
{
    memset(r, 0, 12 * F->n * sizeof *r);
    fe_set_one(F, r);
}

bool fq12_eq(const field_desc *F, const uint64_t *a, const uint64_t *b)
{
    return memcmp(a, b, 12 * F->n * sizeof *a) == 0; /* elements are fully reduced */
}

bool fq12_is_one(const field_desc *F, const uint64_t *a)
{
    uint64_t one[FQ12_MAX];
    fq12_set_one(F, one);
    return fq12_eq(F, a, one);
}

void fq12_conj(const field_desc *F, uint64_t *r, const uint64_t *a)
{
    if (r != a) memcpy(r, a, 6 * F->n * sizeof *r);
    fq6_neg(F, r + 6 * F->n, a + 6 * F->n);
}

/* (a0 + a1 w)(b0 + b1 w) = a0 b0 + a1 b1 v + ((a0+a1)(b0+b1) - a0 b0 - a1 b1) w:
 * 3 Fq6 products = 54 Fq products. r may alias a or b. */
void fq12_mul_pp(const pairing_params *pp, uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    const field_desc *F = pp->F;
    const unsigned h = 6 * F->n;
    uint64_t t0[FQ6_MAX], t1[FQ6_MAX], s[FQ6_MAX], u[FQ6_MAX];
    fq6_mul(pp, t0, a, b);
    fq6_mul(pp, t1, a + h, b + h);
    fq6_add(F, s, a, a + h);
    fq6_add(F, u, b, b + h);
    fq6_mul(pp, s, s, u);
    fq6_sub(F, s, s, t0);
    fq6_sub(F, r + h, s, t1);
    fq6_mul_v(pp, t1, t1);
    fq6_add(F, r, t0, t1);
}

/* Complex squaring: t = a0 a1; c0 = (a0 + a1)(a0 + v a1) - t - v t; c1 = 2t.
 * 2 Fq6 products. r may alias a. */
void fq12_sqr_pp(const pairing_params *pp, uint64_t *r, const uint64_t *a)
{
    const field_desc *F = pp->F;
    const unsigned h = 6 * F->n;
    uint64_t t[FQ6_MAX], s[FQ6_MAX], u[FQ6_MAX];
    fq6_mul(pp, t, a, a + h);
    fq6_add(F, s, a, a + h);
    fq6_mul_v(pp, u, a + h);
    fq6_add(F, u, u, a);
    fq6_mul(pp, s, s, u);
    fq6_sub(F, s, s, t);
    fq6_mul_v(pp, u, t);
    fq6_sub(F, r, s, u);
    fq6_add(F, r + h, t, t);
}

/* (z0 + z1 s)^2 in Fq4 = Fq2[s]/(s^2 - xi): t0 = z0^2 + xi z1^2, t1 = 2 z0 z1, as
 * (z0 + z1)^2 - z0^2 - z1^2: three Fq2 squares. t0, t1 must not alias z0, z1. */
static void fq4_sqr(const pairing_params *pp, uint64_t *t0, uint64_t *t1, const uint64_t *z0,
                    const uint64_t *z1)
{
    const field_desc *F = pp->F;
    uint64_t s0[FQ2_MAX], s1[FQ2_MAX];
    fe2_sqr(F, s0, z0);
    fe2_sqr(F, s1, z1);
    fe2_add(F, t1, z0, z1);
    fe2_sqr(F, t1, t1);
    fe2_sub(F, t1, t1, s0);
    fe2_sub(F, t1, t1, s1);
    fq2_mul_xi(pp, t0, s1);
    fe2_add(F, t0, t0, s0);
}

/* r = 3t - 2z (minus) or 3t + 2z: Granger-Scott's recombination. r may alias z. */
static void fq2_gs_comb(const field_desc *F, uint64_t *r, const uint64_t *t, const uint64_t *z, bool minus)
{
    uint64_t u[FQ2_MAX];
    (minus ? fe2_sub : fe2_add)(F, u, t, z);
    fe2_add(F, u, u, u);
    fe2_add(F, r, u, t);
}

/* Squaring in the cyclotomic subgroup (a^(q^4 - q^2 + 1) = 1, which the final
 * exponentiation's whole easy part, f^((q^6 - 1)(q^2 + 1)), lands in; after the
 * conjugate quotient alone the result is not the square): Granger and Scott, "Faster squaring in the
 * cyclotomic subgroup of sixth degree extensions" (PKC 2010), §3.1, in the form of
 * arkworks' Fp12 cyclotomic_square for this tower. With s = w^3 (s^2 = v^3 = xi),
 * Fq12 = Fq4[w]/(w^3 - s) over Fq4 = Fq2[s]/(s^2 - xi), and a = A + B w + C w^2 with
 * A = z0 + z1 s, B = z2 + z3 s, C = z4 + z5 s: z0 = a0.c0 (w^0), z1 = a1.c1 (w^3),
 * z2 = a1.c0 (w^1), z3 = a0.c2 (w^4), z4 = a0.c1 (w^2), z5 = a1.c2 (w^5). In the
 * subgroup the square is 3A^2 - 2 conj(A) and the like for B, C (with s C^2 for B):
 * 9 Fq2 squares, 18 Fq products, where fq12_sqr_pp takes 12 Fq2 products (36) and 6
 * by xi. r may alias a. */
void fq12_cyclo_sqr_pp(const pairing_params *pp, uint64_t *r, const uint64_t *a)
{
    const field_desc *F = pp->F;
    const unsigned m = 2 * F->n;
    uint64_t z0[FQ2_MAX], z1[FQ2_MAX], z2[FQ2_MAX], z3[FQ2_MAX], z4[FQ2_MAX], z5[FQ2_MAX];
    uint64_t t0[FQ2_MAX], t1[FQ2_MAX], t2[FQ2_MAX], t3[FQ2_MAX], t4[FQ2_MAX], t5[FQ2_MAX];
    fq2_copy(F, z0, a);         /* c0.c0 */
    fq2_copy(F, z4, a + m);     /* c0.c1 */
    fq2_copy(F, z3, a + 2 * m); /* c0.c2 */
    fq2_copy(F, z2, a + 3 * m); /* c1.c0 */
    fq2_copy(F, z1, a + 4 * m); /* c1.c1 */
    fq2_copy(F, z5, a + 5 * m); /* c1.c2 */
    fq4_sqr(pp, t0, t1, z0, z1);
    fq4_sqr(pp, t2, t3, z2, z3);
    fq4_sqr(pp, t4, t5, z4, z5);
    fq2_gs_comb(F, z0, t0, z0, true);  /* 3 t0 - 2 z0 */
    fq2_gs_comb(F, z1, t1, z1, false); /* 3 t1 + 2 z1 */
    fq2_mul_xi(pp, t5, t5);
    fq2_gs_comb(F, z2, t5, z2, false); /* 3 xi t5 + 2 z2 */
    fq2_gs_comb(F, z3, t4, z3, true);  /* 3 t4 - 2 z3 */
    fq2_gs_comb(F, z4, t2, z4, true);  /* 3 t2 - 2 z4 */
    fq2_gs_comb(F, z5, t3, z5, false); /* 3 t3 + 2 z5 */
    fq2_copy(F, r, z0);
    fq2_copy(F, r + m, z4);
    fq2_copy(F, r + 2 * m, z3);
    fq2_copy(F, r + 3 * m, z2);
    fq2_copy(F, r + 4 * m, z1);
    fq2_copy(F, r + 5 * m, z5);
}

/* 1/(a0 + a1 w) = (a0 - a1 w) / (a0^2 - v a1^2). */
void fq12_inv_pp(const pairing_params *pp, uint64_t *r, const uint64_t *a)
{
    const field_desc *F = pp->F;
    const unsigned h = 6 * F->n;
    uint64_t t[FQ6_MAX], s[FQ6_MAX];
    fq6_mul(pp, t, a, a);
    fq6_mul(pp, s, a + h, a + h);
    fq6_mul_v(pp, s, s);
    fq6_sub(F, t, t, s);
    fq6_inv(pp, t, t);
    fq6_mul(pp, r, a, t);
    fq6_mul(pp, r + h, a + h, t);
    fq6_neg(F, r + h, r + h);
}

void fq12_mul(const field_desc *F, uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    fq12_mul_pp(params_of(F), r, a, b);
}

void fq12_sqr(const field_desc *F, uint64_t *r, const uint64_t *a)
{
    fq12_sqr_pp(params_of(F), r, a);
}

void fq12_inv(const field_desc *F, uint64_t *r, const uint64_t *a)
{
    fq12_inv_pp(params_of(F), r, a);
}

void fq12_pow(const field_desc *F, uint64_t *r, const uint64_t *a, const uint64_t *e, unsigned ne)
{
    const pairing_params *pp = params_of(F);
    uint64_t acc[FQ12_MAX], base[FQ12_MAX];
    memcpy(base, a, 12 * F->n * sizeof *a);
    fq12_set_one(F, acc);
    for (unsigned i = ne * 64; i-- > 0;) {
        fq12_sqr_pp(pp, acc, acc);
        if ((e[i / 64] >> (i % 64)) & 1) fq12_mul_pp(pp, acc, acc, base);
    }
    memcpy(r, acc, 12 * F->n * sizeof *r);
}

/* Where the coefficient of w^i lies, in Fq2 units: w^0 w^2 w^4 are c0.a0 a1 a2 and
 * w^1 w^3 w^5 are c1.a0 a1 a2. */
static unsigned wpos(unsigned i)
{
    return (i % 2) * 3 + i / 2;
}

/* r = a^(q^k), k = 1..3: sum c_i w^i -> sum conj^k(c_i) xi^(i (q^k - 1)/6) w^i,
 * since w^(q^k) = w (w^6)^((q^k - 1)/6). r may alias a. */
void fq12_frob(const pairing_params *pp, uint64_t *r, const uint64_t *a, unsigned k)
{
    const field_desc *F = pp->F;
    const unsigned m = 2 * F->n;
    uint64_t t[FQ2_MAX];
    for (unsigned i = 0; i < 6; i++) {
        const uint64_t *c = a + wpos(i) * m;
        if (k % 2)
            fq2_conj(F, t, c);
        else
            fq2_copy(F, t, c);
        fe2_mul(F, r + wpos(i) * m, t, pp->frob[k - 1][i]);
    }
}

/* ---- Miller loop ------------------------------------------------------------ */

/* r = a (b0 + b1 v), a sparse Fq6 product (Karatsuba on the two terms): 5 Fq2
 * products. r may alias a. */
static void fq6_mul_01(const pairing_params *pp, uint64_t *r, const uint64_t *a, const uint64_t *b0,
                       const uint64_t *b1)
{
    const field_desc *F = pp->F;
    const unsigned m = 2 * F->n;
    const uint64_t *a0 = a, *a1 = a + m, *a2 = a + 2 * m;
    uint64_t t0[FQ2_MAX], t1[FQ2_MAX], s[FQ2_MAX], u[FQ2_MAX], c0[FQ2_MAX], c1[FQ2_MAX], c2[FQ2_MAX];
    fe2_mul(F, t0, a0, b0);
    fe2_mul(F, t1, a1, b1);
    fe2_mul(F, s, a2, b1);
    fq2_mul_xi(pp, s, s);
    fe2_add(F, c0, t0, s); /* c0 = a0 b0 + xi a2 b1 */
    fe2_add(F, s, a0, a1);
    fe2_add(F, u, b0, b1);
    fe2_mul(F, s, s, u);
    fe2_sub(F, s, s, t0);
    fe2_sub(F, c1, s, t1); /* c1 = a0 b1 + a1 b0 */
    fe2_mul(F, s, a2, b0);
    fe2_add(F, c2, t1, s); /* c2 = a1 b1 + a2 b0 */
    fq2_copy(F, r, c0);
    fq2_copy(F, r + m, c1);
    fq2_copy(F, r + 2 * m, c2);
}

/* r = a b0 (b0 in Fq2) or, with v set, a b0 v. r may alias a. */
static void fq6_mul_fq2(const pairing_params *pp, uint64_t *r, const uint64_t *a, const uint64_t *b0, bool v)
{
    const field_desc *F = pp->F;
    const unsigned m = 2 * F->n;
    for (unsigned i = 0; i < 3; i++) fe2_mul(F, r + i * m, a + i * m, b0);
    if (v) fq6_mul_v(pp, r, r);
}

/* f *= the line, scaled by an Fq2 factor s: A0 + A1 w + A3 w^3 for the D twist with
 * A0 = yP s, A1 = -lambda xP s, A3 = (lambda xT - yT) s (lambda: the slope on the
 * twist); for the M twist the untwisted line times w^3, A3 + A1 w^2 + A0 w^3. Fq2
 * factors and w^3 (whose square xi is in Fq2) lie in proper subfields, which the final
 * exponentiation sends to 1. As l = l0 + l1 w with l0, l1 in Fq6 (w^2 = v):
 *   D: l0 = A0,         l1 = A1 + A3 v;   M: l0 = A3 + A1 v,   l1 = A0 v,
 * and f l = f0 l0 + f1 l1 v + ((f0 + f1)(l0 + l1) - f0 l0 - f1 l1) w with sparse Fq6
 * products: 13 Fq2 products where the general Fq12 product takes 18. */
void fq12_mul_line(const pairing_params *pp, uint64_t *f, const uint64_t *A0, const uint64_t *A1,
                   const uint64_t *A3)
{
    const field_desc *F = pp->F;
    const unsigned h = 6 * F->n;
    uint64_t t0[FQ6_MAX], t1[FQ6_MAX], s[FQ6_MAX], c[FQ2_MAX];
    fq6_add(F, s, f, f + h);
    if (pp->twist == PAIRING_TWIST_D) {
        fq6_mul_fq2(pp, t0, f, A0, false);
        fq6_mul_01(pp, t1, f + h, A1, A3);
        fe2_add(F, c, A0, A1);
        fq6_mul_01(pp, s, s, c, A3);
    } else {
        fq6_mul_01(pp, t0, f, A3, A1);
        fq6_mul_fq2(pp, t1, f + h, A0, true);
        fe2_add(F, c, A1, A0);
        fq6_mul_01(pp, s, s, A3, c);
    }
    fq6_sub(F, s, s, t0);
    fq6_sub(F, f + h, s, t1);
    fq6_mul_v(pp, t1, t1);
    fq6_add(F, f, t0, t1);
}
