/* pairing.c — optimal ate pairing over the Fq12 tower (see pairing.h for the layout).
 *
 * Written once for both curves: every function takes the base-field descriptor and
 * works on run-time limb counts. These are ordinary functions on purpose (field.h's
 * note on compile time); a 4-pair check costs a few ms, against a 2^16 proof's seconds.
 *
 * Sizes in limbs with n = F->n: Fq2 2n, Fq6 6n, Fq12 12n. */
#include "cuzk/pairing.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define FQ2_MAX  (2 * FE_MAX_LIMBS)
#define FQ6_MAX  (6 * FE_MAX_LIMBS)
#define FQ12_MAX FQ12_MAX_LIMBS

/* ---- Fq2 helpers beyond field.h ------------------------------------------- */

static void fq2_copy(const field_desc *F, uint64_t *r, const uint64_t *a)
{
    memmove(r, a, 2 * F->n * sizeof *r);
}

static void fq2_conj(const field_desc *F, uint64_t *r, const uint64_t *a)
{
    fe_copy(F, r, a);
    fe_neg(F, r + F->n, a + F->n);
}

/* r = a * s for s in Fq (both coordinates). */
static void fq2_mul_fq(const field_desc *F, uint64_t *r, const uint64_t *a, const uint64_t *s)
{
    fe_mul(F, r, a, s);
    fe_mul(F, r + F->n, a + F->n, s);
}

/* ---- Fq6 = Fq2[v]/(v^3 - xi) ---------------------------------------------- */

static void fq2_mul_xi(const pairing_params *pp, uint64_t *r, const uint64_t *a)
{
    fe2_mul(pp->F, r, a, pp->xi);
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
    fe2_add(F, s, a1, a2);
    fe2_add(F, u, b1, b2);
    fe2_mul(F, s, s, u);
    fe2_sub(F, s, s, t1);
    fe2_sub(F, s, s, t2);
    fq2_mul_xi(pp, s, s);
    fe2_add(F, c0, t0, s); /* c0 = t0 + xi((a1+a2)(b1+b2) - t1 - t2) */
    fe2_add(F, s, a0, a1);
    fe2_add(F, u, b0, b1);
    fe2_mul(F, s, s, u);
    fe2_sub(F, s, s, t0);
    fe2_sub(F, s, s, t1);
    fq2_mul_xi(pp, u, t2);
    fe2_add(F, c1, s, u); /* c1 = (a0+a1)(b0+b1) - t0 - t1 + xi t2 */
    fe2_add(F, s, a0, a2);
    fe2_add(F, u, b0, b2);
    fe2_mul(F, s, s, u);
    fe2_sub(F, s, s, t0);
    fe2_sub(F, s, s, t2);
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

static void fq12_conj(const field_desc *F, uint64_t *r, const uint64_t *a)
{
    if (r != a) memcpy(r, a, 6 * F->n * sizeof *r);
    fq6_neg(F, r + 6 * F->n, a + 6 * F->n);
}

/* (a0 + a1 w)(b0 + b1 w) = a0 b0 + a1 b1 v + ((a0+a1)(b0+b1) - a0 b0 - a1 b1) w:
 * 3 Fq6 products = 54 Fq products. r may alias a or b. */
static void fq12_mul_pp(const pairing_params *pp, uint64_t *r, const uint64_t *a, const uint64_t *b)
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
static void fq12_sqr_pp(const pairing_params *pp, uint64_t *r, const uint64_t *a)
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

/* 1/(a0 + a1 w) = (a0 - a1 w) / (a0^2 - v a1^2). */
static void fq12_inv_pp(const pairing_params *pp, uint64_t *r, const uint64_t *a)
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
static void fq12_frob(const pairing_params *pp, uint64_t *r, const uint64_t *a, unsigned k)
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
static void mul_line(const pairing_params *pp, uint64_t *f, const uint64_t *A0, const uint64_t *A1,
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

/* A line's coefficients L = (L0, L1, L3), 3 Fq2, depend on the G2 side alone: at P the
 * line is A0 = L0 yP, A1 = L1 xP, A3 = L3 (line_eval). A fixed G2 point's lines are
 * computed once (pairing_g2_lines_make) and evaluated at every P. */
#define LINE_LIMBS(F) (3 * 2 * (F)->n)

/* Tangent at T = (X, Y, Z) (jacobian on the twist), then T = 2T.
 * lambda = 3X^2 / (2YZ); scaled by s = 2YZ^3: L0 = 2YZ^3, L1 = -3X^2Z^2,
 * L3 = 3X^3 - 2Y^2. */
static void line_dbl(const pairing_params *pp, uint64_t *L, uint64_t *T)
{
    const field_desc *F = pp->F;
    const unsigned m = 2 * F->n;
    const uint64_t *X = T, *Y = T + m, *Z = T + 2 * m;
    uint64_t *L0 = L, *L1 = L + m, *L3 = L + 2 * m;
    uint64_t XX[FQ2_MAX], ZZ[FQ2_MAX], t[FQ2_MAX];
    fe2_sqr(F, XX, X);
    fe2_add(F, t, XX, XX);
    fe2_add(F, XX, t, XX); /* 3X^2 */
    fe2_sqr(F, ZZ, Z);
    fe2_mul(F, L1, XX, ZZ);
    fe2_neg(F, L1, L1);    /* -3X^2 Z^2 */
    fe2_mul(F, L3, XX, X); /* 3X^3 */
    fe2_sqr(F, t, Y);
    fe2_add(F, t, t, t);
    fe2_sub(F, L3, L3, t); /* 3X^3 - 2Y^2 */
    fe2_mul(F, L0, Y, Z);
    fe2_mul(F, L0, L0, ZZ);
    fe2_add(F, L0, L0, L0); /* 2YZ^3 */
    ec_dbl(pp->g2, T, T);
}

/* Line through T and Q (affine), then T = T + Q.
 * lambda = R / (Z H) with R = yQ Z^3 - Y, H = xQ Z^2 - X; scaled by s = Z H:
 * L0 = Z H, L1 = -R, L3 = R xQ - yQ Z H. */
static void line_add(const pairing_params *pp, uint64_t *L, uint64_t *T, const uint64_t *Q)
{
    const field_desc *F = pp->F;
    const unsigned m = 2 * F->n;
    const uint64_t *X = T, *Y = T + m, *Z = T + 2 * m;
    uint64_t *L0 = L, *L1 = L + m, *L3 = L + 2 * m;
    uint64_t ZZ[FQ2_MAX], R[FQ2_MAX], t[FQ2_MAX];
    fe2_sqr(F, ZZ, Z);
    fe2_mul(F, L0, Q, ZZ);
    fe2_sub(F, L0, L0, X); /* H = xQ Z^2 - X */
    fe2_mul(F, R, ZZ, Z);
    fe2_mul(F, R, R, Q + m);
    fe2_sub(F, R, R, Y);   /* R = yQ Z^3 - Y */
    fe2_mul(F, L0, L0, Z); /* s = Z H */
    fe2_neg(F, L1, R);
    fe2_mul(F, L3, R, Q);
    fe2_mul(F, t, Q + m, L0);
    fe2_sub(F, L3, L3, t);
    ec_add_aff(pp->g2, T, T, Q);
}

/* f *= the line L at P (affine G1). */
static void line_eval(const pairing_params *pp, uint64_t *f, const uint64_t *L, const uint64_t *P)
{
    const field_desc *F = pp->F;
    const unsigned n = F->n, m = 2 * n;
    uint64_t A0[FQ2_MAX], A1[FQ2_MAX];
    fq2_mul_fq(F, A0, L, P + n);
    fq2_mul_fq(F, A1, L + m, P);
    mul_line(pp, f, A0, A1, L + 2 * m);
}

/* pi^k of a twist point (D twist, BN254): (conj^k(x) xi^(2(q^k-1)/6), conj^k(y) xi^(3(q^k-1)/6)). */
static void twist_frob(const pairing_params *pp, uint64_t *r, const uint64_t *Q, unsigned k)
{
    const field_desc *F = pp->F;
    const unsigned m = 2 * F->n;
    uint64_t t[FQ2_MAX];
    for (unsigned c = 0; c < 2; c++) {
        if (k % 2)
            fq2_conj(F, t, Q + c * m);
        else
            fq2_copy(F, t, Q + c * m);
        fe2_mul(F, r + c * m, t, pp->frob[k - 1][2 + c]);
    }
}

/* The Frobenius points of the BN tail: Q1 = pi(Q), Q2 = -pi^2(Q). */
static void bn_tail_points(const pairing_params *pp, uint64_t *Q1, uint64_t *Q2, const uint64_t *Q)
{
    twist_frob(pp, Q1, Q, 1);
    twist_frob(pp, Q2, Q, 2);
    fe2_neg(pp->F, Q2 + 2 * pp->F->n, Q2 + 2 * pp->F->n);
}

/* The lines of Q's Miller loop in the order the loop uses them: per bit below the top
 * a tangent, and a chord where the bit is set; on BN the two Frobenius chords
 * (Vercauteren, Alg. 1: f_{6x+2,Q} l_{[6x+2]Q, pi(Q)} l_{[6x+2]Q + pi(Q), -pi^2(Q)}).
 * L NULL: only counts them. Q finite. */
static size_t lines_walk(const pairing_params *pp, uint64_t *L, const uint64_t *Q)
{
    const size_t ll = LINE_LIMBS(pp->F);
    uint64_t T[EC_MAX_JAC], S[3 * FQ2_MAX];
    size_t k = 0;
    ec_jac_from_aff(pp->g2, T, Q);
    for (unsigned i = pp->loop_bits - 1; i-- > 0;) {
        line_dbl(pp, L ? L + k * ll : S, T);
        k++;
        if ((pp->loop[i / 64] >> (i % 64)) & 1) {
            line_add(pp, L ? L + k * ll : S, T, Q);
            k++;
        }
    }
    if (pp->bn) {
        uint64_t Q1[EC_MAX_AFF], Q2[EC_MAX_AFF];
        bn_tail_points(pp, Q1, Q2, Q);
        line_add(pp, L ? L + k * ll : S, T, Q1);
        k++;
        line_add(pp, L ? L + k * ll : S, T, Q2);
        k++;
    }
    return k;
}

int pairing_g2_lines_make(const pairing_params *pp, pairing_g2_lines *out, const uint64_t *g2_aff)
{
    if (!pp || !out) return -EINVAL;
    out->n = 0;
    out->c = NULL;
    if (ec_aff_is_inf(pp->g2, g2_aff)) return 0;
    size_t n = lines_walk(pp, NULL, g2_aff);
    out->c = malloc(n * LINE_LIMBS(pp->F) * sizeof *out->c);
    if (!out->c) return -ENOMEM;
    out->n = lines_walk(pp, out->c, g2_aff);
    return 0;
}

void pairing_g2_lines_free(pairing_g2_lines *l)
{
    if (!l) return;
    free(l->c);
    l->c = NULL;
    l->n = 0;
}

/* One pair of a Miller loop batch: P, and either Q with its running point T, or L,
 * Q's prepared lines. */
struct ml_pair {
    const uint64_t *P, *Q, *L;
    uint64_t T[EC_MAX_JAC];
};

static void ml_line(const pairing_params *pp, uint64_t *g, struct ml_pair *p, size_t k, const uint64_t *chord)
{
    uint64_t L[3 * FQ2_MAX];
    if (p->L) {
        line_eval(pp, g, p->L + k * LINE_LIMBS(pp->F), p->P);
        return;
    }
    if (chord)
        line_add(pp, L, p->T, chord);
    else
        line_dbl(pp, L, p->T);
    line_eval(pp, g, L, p->P);
}

/* g = the Miller loop value of the nb pairs multiplied together: the pairs share the
 * squarings of g. */
static void ml_batch(const pairing_params *pp, uint64_t *g, struct ml_pair *b, size_t nb)
{
    size_t k = 0; /* the line's index in lines_walk's order */
    fq12_set_one(pp->F, g);
    for (size_t j = 0; j < nb; j++)
        if (!b[j].L) ec_jac_from_aff(pp->g2, b[j].T, b[j].Q);
    for (unsigned i = pp->loop_bits - 1; i-- > 0;) {
        fq12_sqr_pp(pp, g, g);
        for (size_t j = 0; j < nb; j++) ml_line(pp, g, &b[j], k, NULL);
        k++;
        if ((pp->loop[i / 64] >> (i % 64)) & 1) {
            for (size_t j = 0; j < nb; j++) ml_line(pp, g, &b[j], k, b[j].Q);
            k++;
        }
    }
    if (pp->bn) {
        for (size_t j = 0; j < nb; j++) {
            uint64_t Q1[EC_MAX_AFF], Q2[EC_MAX_AFF];
            if (!b[j].L) bn_tail_points(pp, Q1, Q2, b[j].Q);
            ml_line(pp, g, &b[j], k, Q1);
            ml_line(pp, g, &b[j], k + 1, Q2);
        }
    }
    if (pp->x_negative) fq12_conj(pp->F, g, g); /* f_{-|x|} = 1/f_{|x|} up to what the final exp removes */
}

void pairing_miller_loop_prep(const pairing_params *pp, uint64_t *f, const uint64_t *const g1_aff[],
                              const uint64_t *const g2_aff[], size_t n, const uint64_t *const pg1_aff[],
                              const pairing_g2_lines *const lines[], size_t np)
{
    enum { MAXP = 8 };
    struct ml_pair b[MAXP];
    uint64_t g[FQ12_MAX];
    size_t nb = 0;
    fq12_set_one(pp->F, f);
    /* Pairs in batches of MAXP, prepared ones first; a pair with infinity gives 1. */
    for (size_t i = 0; i < np + n; i++) {
        const uint64_t *P = i < np ? pg1_aff[i] : g1_aff[i - np];
        if (ec_aff_is_inf(pp->g1, P)) continue;
        if (i < np ? lines[i]->n == 0 : ec_aff_is_inf(pp->g2, g2_aff[i - np])) continue;
        b[nb].P = P;
        b[nb].Q = i < np ? NULL : g2_aff[i - np];
        b[nb].L = i < np ? lines[i]->c : NULL;
        if (++nb == MAXP) {
            ml_batch(pp, g, b, nb);
            fq12_mul_pp(pp, f, f, g);
            nb = 0;
        }
    }
    if (nb) {
        ml_batch(pp, g, b, nb);
        fq12_mul_pp(pp, f, f, g);
    }
}

void pairing_miller_loop(const pairing_params *pp, uint64_t *f, const uint64_t *const g1_aff[],
                         const uint64_t *const g2_aff[], size_t n)
{
    pairing_miller_loop_prep(pp, f, g1_aff, g2_aff, n, NULL, NULL, 0);
}

/* ---- final exponentiation -------------------------------------------------- */

void pairing_final_exp(const pairing_params *pp, uint64_t *r, const uint64_t *f)
{
    const field_desc *F = pp->F;
    const size_t sz = 12 * F->n * sizeof *r;
    uint64_t t[FQ12_MAX], u[FQ12_MAX];
    /* easy part: f^(q^6 - 1) = conj(f) / f, then ^(q^2 + 1) */
    fq12_inv_pp(pp, t, f);
    fq12_conj(F, u, f);
    fq12_mul_pp(pp, t, u, t);
    fq12_frob(pp, u, t, 2);
    fq12_mul_pp(pp, t, u, t);
    /* hard part: t^(h0 + h1 q + h2 q^2 + h3 q^3) = prod frob^i(t)^(h_i), jointly:
     * tab[mask] = prod over bits i of mask of t^(q^i); one squaring per digit bit. */
    uint64_t tab[16][FQ12_MAX], acc[FQ12_MAX];
    fq12_set_one(F, tab[0]);
    memcpy(tab[1], t, sz);
    for (unsigned k = 1; k < 4; k++) fq12_frob(pp, tab[1u << k], t, k);
    for (unsigned mask = 3; mask < 16; mask++) {
        if ((mask & (mask - 1)) == 0) continue;
        unsigned low = mask & -mask;
        fq12_mul_pp(pp, tab[mask], tab[mask ^ low], tab[low]);
    }
    fq12_set_one(F, acc);
    for (unsigned b = pp->hard_bits; b-- > 0;) {
        fq12_sqr_pp(pp, acc, acc);
        unsigned mask = 0;
        for (unsigned k = 0; k < 4; k++) mask |= (unsigned)((pp->hard[k][b / 64] >> (b % 64)) & 1) << k;
        if (mask) fq12_mul_pp(pp, acc, acc, tab[mask]);
    }
    memcpy(r, acc, sz);
}

void pairing(const pairing_params *pp, uint64_t *r, const uint64_t *g1_aff, const uint64_t *g2_aff)
{
    uint64_t f[FQ12_MAX];
    const uint64_t *p[1] = { g1_aff }, *q[1] = { g2_aff };
    pairing_miller_loop(pp, f, p, q, 1);
    pairing_final_exp(pp, r, f);
}

int pairing_multi_check(const pairing_params *pp, const uint64_t *const g1_aff[],
                        const uint64_t *const g2_aff[], size_t n, bool *is_one)
{
    if (!pp || n == 0) return -EINVAL;
    uint64_t f[FQ12_MAX];
    pairing_miller_loop(pp, f, g1_aff, g2_aff, n);
    pairing_final_exp(pp, f, f);
    *is_one = fq12_is_one(pp->F, f);
    return 0;
}

bool pairing_in_subgroup(const curve_group *G, const uint64_t *aff)
{
    uint64_t p[EC_MAX_JAC];
    ec_jac_from_aff(G, p, aff);
    ec_jac_mul_scalar(G, p, p, G->Fr->p, fe_n(G->Fr));
    return ec_jac_is_inf(G, p);
}
