/* pairing_params.c — the pairing's constants (pairing.h's pairing_params), derived
 * once per curve with GMP from the curve's seed and moduli, never typed in: the Miller
 * loop count, xi, the Frobenius coefficients and the hard part's base-q digits. */
#include <gmp.h>
#include <pthread.h>
#include <string.h>

#include "zk/pairing.h"
#include "zk/pairing_tower.h"

#define FQ2_MAX (2 * FE_MAX_LIMBS)

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

/* ---- parameters ---------------------------------------------------------------- */

static pairing_params params_bn254, params_bls12_381;

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
    /* frob[k-1][i] = xi^(i (q^k - 1) / 6) = g_k^i, from one exponentiation:
     * g_1 = xi^((q - 1)/6), and since a^q = conj(a) in Fq2 (so a^(q^2) = a),
     * g_2 = g_1^(q + 1) = conj(g_1) g_1 and g_3 = g_1^(q^2 + q + 1) = g_1 conj(g_1) g_1.
     * The 18 exponentiations by the exponents themselves (up to 3 x 254 bits) cost
     * ~1.4 ms of a one-shot prover's self-check; this ~0.04 ms. test_pairing's checks of
     * the Frobenius map and the final exponentiation hold the values to the definition. */
    mpz_from_limbs(q, F->p, n);
    uint64_t ex[FE_MAX_LIMBS + 1], cj[FQ2_MAX];
    mpz_sub_ui(e, q, 1);
    mpz_divexact_ui(e, e, 6); /* q = 1 mod 6 on both curves */
    size_t ne = mpz_to_limbs(ex, sizeof ex / sizeof *ex, e);
    fq2_pow(F, pp->frob[0][1], pp->xi, ex, ne);
    fq2_copy(F, cj, pp->frob[0][1]);
    fe_neg(F, cj + n, cj + n);
    fe2_mul(F, pp->frob[1][1], cj, pp->frob[0][1]);
    fe2_mul(F, pp->frob[2][1], pp->frob[1][1], pp->frob[0][1]);
    for (unsigned k = 0; k < 3; k++) {
        fe_set_one(F, pp->frob[k][0]);
        fe_set_zero(F, pp->frob[k][0] + n);
        for (unsigned i = 2; i < 6; i++) fe2_mul(F, pp->frob[k][i], pp->frob[k][i - 1], pp->frob[k][1]);
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

/* BN254: x = 4965661367192848881, D twist, xi = 9 + u.
 * BLS12-381: x = -0xd201000000010000, M twist, xi = 1 + u.
 * Each curve's constants on its first use only: a one-shot prover or verifier of one
 * curve (prove-local's self-check) does not pay for the other's (~1 ms of GMP). */
static pthread_once_t once_bn254 = PTHREAD_ONCE_INIT, once_bls12_381 = PTHREAD_ONCE_INIT;

static void params_init_bn254(void)
{
    params_init_one(&params_bn254, &FIELD_BN254_FQ, &G1_BN254, &G2_BN254, PAIRING_TWIST_D, true,
                    4965661367192848881ULL, false, 9);
}

static void params_init_bls12_381(void)
{
    params_init_one(&params_bls12_381, &FIELD_BLS12_381_FQ, &G1_BLS12_381, &G2_BLS12_381, PAIRING_TWIST_M,
                    false, 0xd201000000010000ULL, true, 1);
}

const pairing_params *pairing_params_get(const field_desc *F)
{
    switch (F->id) {
    case FIELD_ID_BN254_FQ: pthread_once(&once_bn254, params_init_bn254); return &params_bn254;
    case FIELD_ID_BLS12_381_FQ:
        pthread_once(&once_bls12_381, params_init_bls12_381);
        return &params_bls12_381;
    default: return NULL;
    }
}
