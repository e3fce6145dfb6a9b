/* pairing.h — the optimal ate pairing on BN254 and BLS12-381, generic over the curve.
 *
 * Tower (both curves, spec §7): Fq2 = Fq[u]/(u^2 + 1), Fq6 = Fq2[v]/(v^3 - xi),
 * Fq12 = Fq6[w]/(w^2 - v), with xi = 9 + u (BN254) or 1 + u (BLS12-381).
 * An Fq12 element is c0 + c1 w with c0, c1 in Fq6, each a0 + a1 v + a2 v^2 with a_i in
 * Fq2: 12 Fq elements of n limbs, Montgomery form, in the order
 *   c0.a0 c0.a1 c0.a2 c1.a0 c1.a1 c1.a2   (= the coefficients of w^0 w^2 w^4 w^1 w^3 w^5).
 *
 * G1 points are affine Montgomery (x || y), G2 points affine Montgomery on the twist
 * (x.c0 x.c1 y.c0 y.c1): the zkey's and groth16_proof's layouts. (0, 0) is infinity,
 * and a pair with an infinite point contributes 1.
 *
 * The pairing is e(P, Q) = f_{loop,Q}(P)^((q^12 - 1)/r) with the Miller loop of the
 * optimal ate pairing (Vercauteren 2010): loop 6x+2 plus two Frobenius lines on BN254,
 * |x| and a final conjugation (x < 0) on BLS12-381. Lines are scaled by Fq2 factors
 * that the final exponentiation removes. G2 inputs must be in the order-r subgroup
 * (callers check with pairing_g2_in_subgroup); the loop assumes it. Not constant time:
 * everything a verifier pairs is public. */
#ifndef CUZK_PAIRING_H
#define CUZK_PAIRING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zk/curve.h"
#include "zk/field.h"

#define FQ12_MAX_LIMBS (12 * FE_MAX_LIMBS)

enum pairing_twist { PAIRING_TWIST_D, PAIRING_TWIST_M };

typedef struct pairing_params {
    const field_desc *F; /* Fq */
    const curve_group *g1, *g2;
    enum pairing_twist twist; /* D: psi(x,y) = (x w^2, y w^3); M: (x / w^2, y / w^3) */
    bool bn;                  /* BN: the two extra Frobenius lines after the loop */
    bool x_negative;          /* conjugate f after the loop */
    uint64_t x_abs;           /* |x|, the curve's seed */
    uint64_t loop[2];         /* the Miller loop count: 6x+2 (BN, 65 bits), |x| (BLS) */
    unsigned loop_bits;
    uint64_t xi[2 * FE_MAX_LIMBS]; /* xi in Fq2, Montgomery */
    /* Computed once by pairing_params_get (GMP), never typed in: */
    uint64_t frob[3][6][2 * FE_MAX_LIMBS]; /* frob[k-1][i] = xi^(i (q^k - 1) / 6), k = 1..3 */
    uint64_t hard[4][FE_MAX_LIMBS];        /* (q^4 - q^2 + 1)/r = sum hard[i] q^i, digits < q */
    unsigned hard_bits;                    /* bit length of the largest digit */
} pairing_params;

/* The parameters of the curve whose base field is F (BN254 or BLS12-381 Fq), built on
 * first use (thread safe). NULL for any other field. */
const pairing_params *pairing_params_get(const field_desc *F);

/* Fq12 helpers on the layout above (F: the base field). */
void fq12_set_one(const field_desc *F, uint64_t *r);
bool fq12_is_one(const field_desc *F, const uint64_t *a);
bool fq12_eq(const field_desc *F, const uint64_t *a, const uint64_t *b);
void fq12_mul(const field_desc *F, uint64_t *r, const uint64_t *a, const uint64_t *b);
void fq12_sqr(const field_desc *F, uint64_t *r, const uint64_t *a);
void fq12_inv(const field_desc *F, uint64_t *r, const uint64_t *a);
/* r = a^e, e canonical little-endian limbs (ne limbs). */
void fq12_pow(const field_desc *F, uint64_t *r, const uint64_t *a, const uint64_t *e, unsigned ne);

/* The Miller loop value of the n pairs multiplied together (no final exponentiation). */
void pairing_miller_loop(const pairing_params *pp, uint64_t *f, const uint64_t *const g1_aff[],
                         const uint64_t *const g2_aff[], size_t n);

/* The lines of a fixed G2 point's Miller loop (a verification key's beta2, gamma2,
 * delta2), computed once: what a line takes from the G2 side (the running point's
 * doublings and additions, the slopes) is the same for every G1 point, so a loop over
 * prepared lines only evaluates each line at P. n is 0 for the point at infinity
 * (its pairs contribute 1). */
typedef struct pairing_g2_lines {
    size_t n;    /* lines */
    uint64_t *c; /* n × 3 Fq2 coefficients, malloc'd */
} pairing_g2_lines;

/* Computes Q's lines (Q in the order-r subgroup, or infinity). Returns 0, -EINVAL
 * (NULL pp or out), -ENOMEM (out holds nothing to free). */
int pairing_g2_lines_make(const pairing_params *pp, pairing_g2_lines *out, const uint64_t *g2_aff);
/* Accepts a zeroed or already-freed value. */
void pairing_g2_lines_free(pairing_g2_lines *l);

/* pairing_miller_loop of the n pairs (g1_aff[i], g2_aff[i]) and the np pairs
 * (pg1_aff[i], the G2 point of lines[i]) multiplied together. The value equals
 * pairing_miller_loop's on the same pairs (the same lines, evaluated the same way). */
void pairing_miller_loop_prep(const pairing_params *pp, uint64_t *f, const uint64_t *const g1_aff[],
                              const uint64_t *const g2_aff[], size_t n, const uint64_t *const pg1_aff[],
                              const pairing_g2_lines *const lines[], size_t np);

/* r = f^((q^12 - 1)/r): easy part f^((q^6 - 1)(q^2 + 1)), hard part by the base-q
 * digits of (q^4 - q^2 + 1)/r with a joint (Shamir) exponentiation of f, f^q, f^q^2,
 * f^q^3. r may alias f. */
void pairing_final_exp(const pairing_params *pp, uint64_t *r, const uint64_t *f);

/* e(P, Q) in Fq12 (P in G1, Q in G2, affine Montgomery). */
void pairing(const pairing_params *pp, uint64_t *r, const uint64_t *g1_aff, const uint64_t *g2_aff);

/* *is_one = (prod_i e(g1_aff[i], g2_aff[i]) == 1), with one shared final
 * exponentiation. Returns 0, or -EINVAL when pp is NULL or n is 0 (is_one unchanged). */
int pairing_multi_check(const pairing_params *pp, const uint64_t *const g1_aff[],
                        const uint64_t *const g2_aff[], size_t n, bool *is_one);

/* Whether the affine point is in the order-r subgroup: r*P = O (infinity counts).
 * The point must be on the curve (ec_aff_is_on_curve). */
bool pairing_in_subgroup(const curve_group *G, const uint64_t *aff);

#endif
