/* pairing.c — optimal ate pairing over the Fq12 tower (see pairing.h for the layout).
 *
 * Written once for both curves: every function takes the base-field descriptor and
 * works on run-time limb counts. These are ordinary functions on purpose (field.h's
 * note on compile time); a 4-pair check costs a few ms, against a 2^16 proof's seconds.
 *
 * Sizes in limbs with n = F->n: Fq2 2n, Fq6 6n, Fq12 12n. */
#include "cuzk/pairing.h"

#include <errno.h>
#include <gmp.h>
#include <pthread.h>
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

/* r = a^e, e little-endian limbs (any length: Frobenius exponents reach q^3). */
static void fq2_pow(const field_desc *F, uint64_t *r, const uint64_t *a, const uint64_t *e, size_t ne)
{
    uint64_t acc[FQ2_MAX], base[FQ2_MAX];
    fq2_copy(F, base, a);
    fe_set_zero(F, acc + F->n);
    fe_set_one(F, acc);
    for (size_t i = ne * 64; i-- > 0;) {
        fe2_sqr(F, acc, acc);
        if ((e[i / 64] >> (i % 64)) & 1) fe2_mul(F, acc, acc, base);
    }
    fq2_copy(F, r, acc);
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
static const pairing_params *params_of(const field_desc *F);

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

/* The line, scaled by an Fq2 factor s, is A0 + A1 w + A3 w^3 for the D twist with
 * A0 = yP s, A1 = -lambda xP s, A3 = (lambda xT - yT) s (lambda: the slope on the
 * twist). For the M twist the untwisted line times w^3 is A3 + A1 w^2 + A0 w^3.
 * Fq2 factors and w^3 (whose square xi is in Fq2) lie in proper subfields, which the
 * final exponentiation sends to 1. */
static void line_to_fq12(const pairing_params *pp, uint64_t *l, const uint64_t *A0, const uint64_t *A1,
                         const uint64_t *A3)
{
    const field_desc *F = pp->F;
    const unsigned m = 2 * F->n;
    memset(l, 0, 12 * F->n * sizeof *l);
    if (pp->twist == PAIRING_TWIST_D) {
        fq2_copy(F, l + wpos(0) * m, A0);
        fq2_copy(F, l + wpos(1) * m, A1);
        fq2_copy(F, l + wpos(3) * m, A3);
    } else {
        fq2_copy(F, l + wpos(0) * m, A3);
        fq2_copy(F, l + wpos(2) * m, A1);
        fq2_copy(F, l + wpos(3) * m, A0);
    }
}

/* Sparse product f *= l for l from line_to_fq12: the general product on a mostly
 * zero operand. (A dedicated sparse product would save ~40% of the loop; the whole
 * check is already a few ms.) */
static void mul_line(const pairing_params *pp, uint64_t *f, const uint64_t *A0, const uint64_t *A1,
                     const uint64_t *A3)
{
    uint64_t l[FQ12_MAX];
    line_to_fq12(pp, l, A0, A1, A3);
    fq12_mul_pp(pp, f, f, l);
}

/* Tangent at T = (X, Y, Z) (jacobian on the twist) at P, then T = 2T.
 * lambda = 3X^2 / (2YZ); scaled by s = 2YZ^3: A0 = 2YZ^3 yP, A1 = -3X^2Z^2 xP,
 * A3 = 3X^3 - 2Y^2. */
static void step_dbl(const pairing_params *pp, uint64_t *f, uint64_t *T, const uint64_t *P)
{
    const field_desc *F = pp->F;
    const unsigned n = F->n, m = 2 * n;
    const uint64_t *X = T, *Y = T + m, *Z = T + 2 * m;
    uint64_t A0[FQ2_MAX], A1[FQ2_MAX], A3[FQ2_MAX], XX[FQ2_MAX], ZZ[FQ2_MAX], t[FQ2_MAX];
    fe2_sqr(F, XX, X);
    fe2_add(F, t, XX, XX);
    fe2_add(F, XX, t, XX); /* 3X^2 */
    fe2_sqr(F, ZZ, Z);
    fe2_mul(F, A1, XX, ZZ);
    fq2_mul_fq(F, A1, A1, P);
    fe2_neg(F, A1, A1);    /* -3X^2 Z^2 xP */
    fe2_mul(F, A3, XX, X); /* 3X^3 */
    fe2_sqr(F, t, Y);
    fe2_add(F, t, t, t);
    fe2_sub(F, A3, A3, t); /* 3X^3 - 2Y^2 */
    fe2_mul(F, A0, Y, Z);
    fe2_mul(F, A0, A0, ZZ);
    fe2_add(F, A0, A0, A0);
    fq2_mul_fq(F, A0, A0, P + n); /* 2YZ^3 yP */
    mul_line(pp, f, A0, A1, A3);
    ec_dbl(pp->g2, T, T);
}

/* Line through T and Q (affine) at P, then T = T + Q.
 * lambda = R / (Z H) with R = yQ Z^3 - Y, H = xQ Z^2 - X; scaled by s = Z H:
 * A0 = Z H yP, A1 = -R xP, A3 = R xQ - yQ Z H. */
static void step_add(const pairing_params *pp, uint64_t *f, uint64_t *T, const uint64_t *Q, const uint64_t *P)
{
    const field_desc *F = pp->F;
    const unsigned n = F->n, m = 2 * n;
    const uint64_t *X = T, *Y = T + m, *Z = T + 2 * m;
    uint64_t A0[FQ2_MAX], A1[FQ2_MAX], A3[FQ2_MAX], ZZ[FQ2_MAX], R[FQ2_MAX], H[FQ2_MAX], t[FQ2_MAX];
    fe2_sqr(F, ZZ, Z);
    fe2_mul(F, H, Q, ZZ);
    fe2_sub(F, H, H, X); /* H = xQ Z^2 - X */
    fe2_mul(F, R, ZZ, Z);
    fe2_mul(F, R, R, Q + m);
    fe2_sub(F, R, R, Y); /* R = yQ Z^3 - Y */
    fe2_mul(F, H, H, Z); /* s = Z H */
    fq2_mul_fq(F, A0, H, P + n);
    fq2_mul_fq(F, A1, R, P);
    fe2_neg(F, A1, A1);
    fe2_mul(F, A3, R, Q);
    fe2_mul(F, t, Q + m, H);
    fe2_sub(F, A3, A3, t);
    mul_line(pp, f, A0, A1, A3);
    ec_add_aff(pp->g2, T, T, Q);
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

void pairing_miller_loop(const pairing_params *pp, uint64_t *f, const uint64_t *const g1_aff[],
                         const uint64_t *const g2_aff[], size_t n)
{
    const field_desc *F = pp->F;
    const curve_group *G1 = pp->g1, *G2 = pp->g2;
    enum { MAXP = 8 };
    uint64_t T[MAXP][EC_MAX_JAC];
    fq12_set_one(F, f);
    for (size_t base = 0; base < n; base += MAXP) {
        /* Pairs in batches of MAXP share the squarings of f: f_batch multiplied in. */
        size_t cnt = n - base < MAXP ? n - base : MAXP, live[MAXP], nl = 0;
        for (size_t j = 0; j < cnt; j++) {
            if (ec_aff_is_inf(G1, g1_aff[base + j]) || ec_aff_is_inf(G2, g2_aff[base + j])) continue;
            live[nl] = base + j;
            ec_jac_from_aff(G2, T[nl], g2_aff[base + j]);
            nl++;
        }
        if (nl == 0) continue;
        uint64_t g[FQ12_MAX];
        fq12_set_one(F, g);
        for (unsigned i = pp->loop_bits - 1; i-- > 0;) {
            fq12_sqr_pp(pp, g, g);
            for (size_t j = 0; j < nl; j++) step_dbl(pp, g, T[j], g1_aff[live[j]]);
            if ((pp->loop[i / 64] >> (i % 64)) & 1)
                for (size_t j = 0; j < nl; j++) step_add(pp, g, T[j], g2_aff[live[j]], g1_aff[live[j]]);
        }
        if (pp->bn) {
            /* f_{6x+2,Q} l_{[6x+2]Q, pi(Q)} l_{[6x+2]Q + pi(Q), -pi^2(Q)} (Vercauteren, Alg. 1 for BN) */
            for (size_t j = 0; j < nl; j++) {
                uint64_t Q1[EC_MAX_AFF], Q2[EC_MAX_AFF];
                const unsigned m = 2 * F->n;
                twist_frob(pp, Q1, g2_aff[live[j]], 1);
                twist_frob(pp, Q2, g2_aff[live[j]], 2);
                fe2_neg(F, Q2 + m, Q2 + m);
                step_add(pp, g, T[j], Q1, g1_aff[live[j]]);
                step_add(pp, g, T[j], Q2, g1_aff[live[j]]);
            }
        }
        if (pp->x_negative) fq12_conj(F, g, g); /* f_{-|x|} = 1/f_{|x|} up to what the final exp removes */
        fq12_mul_pp(pp, f, f, g);
    }
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

/* ---- parameters ---------------------------------------------------------------- */

static pairing_params params_bn254, params_bls12_381;
static pthread_once_t params_once = PTHREAD_ONCE_INIT;

static void mpz_from_limbs(mpz_t r, const uint64_t *a, size_t n)
{
    mpz_import(r, n, -1, sizeof *a, 0, 0, a);
}

/* Exports z (>= 0) into limbs, zero-padded to cap limbs; returns the number used. */
static size_t mpz_to_limbs(uint64_t *r, size_t cap, const mpz_t z)
{
    size_t cnt = 0;
    memset(r, 0, cap * sizeof *r);
    mpz_export(r, &cnt, -1, sizeof *r, 0, 0, z);
    return cnt;
}

static void params_init_one(pairing_params *pp, const field_desc *F, const curve_group *g1,
                            const curve_group *g2, enum pairing_twist tw, bool bn, uint64_t x_abs, bool x_neg,
                            unsigned xi0)
{
    const unsigned n = F->n;
    mpz_t q, e, t, rr;
    mpz_inits(q, e, t, rr, NULL);
    pp->F = F;
    pp->g1 = g1;
    pp->g2 = g2;
    pp->twist = tw;
    pp->bn = bn;
    pp->x_abs = x_abs;
    pp->x_negative = x_neg;
    /* loop count: 6x+2 (BN, x > 0 on BN254) or |x| */
    mpz_set_ui(t, x_abs);
    if (bn) {
        mpz_mul_ui(t, t, 6);
        mpz_add_ui(t, t, 2);
    }
    mpz_to_limbs(pp->loop, 2, t);
    pp->loop_bits = (unsigned)mpz_sizeinbase(t, 2);
    /* xi = xi0 + u, Montgomery */
    uint64_t c[FE_MAX_LIMBS] = { xi0 };
    fe_to_mont(F, pp->xi, c);
    fe_set_one(F, pp->xi + n);
    /* frob[k-1][i] = xi^(i (q^k - 1) / 6) */
    mpz_from_limbs(q, F->p, n);
    for (unsigned k = 1; k <= 3; k++) {
        for (unsigned i = 0; i < 6; i++) {
            uint64_t ex[3 * FE_MAX_LIMBS + 1];
            mpz_pow_ui(e, q, k);
            mpz_sub_ui(e, e, 1);
            mpz_mul_ui(e, e, i);
            mpz_divexact_ui(e, e, 6); /* q = 1 mod 6 on both curves */
            size_t ne = mpz_to_limbs(ex, sizeof ex / sizeof *ex, e);
            fq2_pow(F, pp->frob[k - 1][i], pp->xi, ex, ne);
        }
    }
    /* hard part exponent (q^4 - q^2 + 1)/r in base q */
    mpz_from_limbs(rr, g1->Fr->p, fe_n(g1->Fr));
    mpz_pow_ui(e, q, 4);
    mpz_pow_ui(t, q, 2);
    mpz_sub(e, e, t);
    mpz_add_ui(e, e, 1);
    mpz_divexact(e, e, rr);
    pp->hard_bits = 0;
    for (unsigned k = 0; k < 4; k++) {
        mpz_fdiv_qr(e, t, e, q);
        mpz_to_limbs(pp->hard[k], FE_MAX_LIMBS, t);
        unsigned bits = (unsigned)mpz_sizeinbase(t, 2);
        if (bits > pp->hard_bits) pp->hard_bits = bits;
    }
    mpz_clears(q, e, t, rr, NULL);
}

static void params_init(void)
{
    /* BN254: x = 4965661367192848881, D twist, xi = 9 + u.
     * BLS12-381: x = -0xd201000000010000, M twist, xi = 1 + u. */
    params_init_one(&params_bn254, &FIELD_BN254_FQ, &G1_BN254, &G2_BN254, PAIRING_TWIST_D, true,
                    4965661367192848881ULL, false, 9);
    params_init_one(&params_bls12_381, &FIELD_BLS12_381_FQ, &G1_BLS12_381, &G2_BLS12_381, PAIRING_TWIST_M,
                    false, 0xd201000000010000ULL, true, 1);
}

const pairing_params *pairing_params_get(const field_desc *F)
{
    pthread_once(&params_once, params_init);
    switch (F->id) {
    case FIELD_ID_BN254_FQ: return &params_bn254;
    case FIELD_ID_BLS12_381_FQ: return &params_bls12_381;
    default: return NULL;
    }
}

static const pairing_params *params_of(const field_desc *F)
{
    return pairing_params_get(F);
}
