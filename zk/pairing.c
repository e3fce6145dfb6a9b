/* pairing.c — optimal ate pairing: the Miller loop (with lines prepared once for a
 * fixed G2 point, or computed as it goes), the final exponentiation, the multi-pairing
 * check and the subgroup test; the tower arithmetic is pairing_tower.c's. */
#include "zk/pairing.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "zk/pairing_tower.h"

#define FQ2_MAX  (2 * FE_MAX_LIMBS)
#define FQ12_MAX FQ12_MAX_LIMBS

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
    fq12_mul_line(pp, f, A0, A1, L + 2 * m);
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
        fq12_cyclo_sqr_pp(pp, acc, acc); /* acc, a product of t's powers, is cyclotomic */
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
