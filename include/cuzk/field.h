/* field.h — prime fields in Montgomery form, generic over the modulus width.
 *
 * An element is n little-endian 64-bit limbs (n = 4 for BN254 Fq/Fr and both Fr,
 * n = 6 for BLS12-381 Fq) holding x·R mod p with R = 2^(64n), fully reduced (< p).
 * That is byte for byte the layout of points in a snarkjs .zkey (spec §2.1), so bases
 * from a mapped zkey are used where they lie.
 *
 * Every operation takes a `const field_desc *` first. Callers pass one of the
 * constant descriptors below; since the functions are always-inline, the compiler
 * folds the descriptor's fields (limb count, modulus) into the code and unrolls the
 * limb loops, so one source serves every curve without token-pasting templates.
 *
 * Results come first and may alias inputs. Inputs must be reduced (< p).
 *
 * Fq2 = Fq[u]/(u^2 + 1) for both BN254 and BLS12-381 (spec §7): an element is c0
 * then c1, each n limbs — again the zkey's G2 coordinate layout. */
#ifndef CUZK_FIELD_H
#define CUZK_FIELD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cuzk/hd.h"

#define FE_MAX_LIMBS 6

typedef unsigned __int128 fe_u128;

enum field_id { FIELD_ID_BN254_FQ, FIELD_ID_BN254_FR, FIELD_ID_BLS12_381_FQ, FIELD_ID_BLS12_381_FR };

typedef struct field_desc {
    enum field_id id;           /* identity: compare ids, not pointers (copies per TU) */
    unsigned n;                 /* limbs */
    unsigned bits;              /* bit length of p */
    uint64_t p[FE_MAX_LIMBS];   /* modulus, plain */
    uint64_t inv;               /* -p^-1 mod 2^64 */
    uint64_t one[FE_MAX_LIMBS]; /* R mod p (Montgomery 1) */
    uint64_t r2[FE_MAX_LIMBS];  /* R^2 mod p (to_mont multiplier) */
    const char *name;
} field_desc;

/* The descriptors are defined here, not in a .c file, so that every translation unit
 * sees their values: gcc then folds n, p and inv into the inlined arithmetic.
 * Constants from ../shared/spec/snarkjs-groth16.md §7; tests check them against GMP. */
static const field_desc FIELD_BN254_FQ = {
    .id = FIELD_ID_BN254_FQ,
    .n = 4,
    .bits = 254,
    .p = { 0x3c208c16d87cfd47ULL, 0x97816a916871ca8dULL, 0xb85045b68181585dULL, 0x30644e72e131a029ULL },
    .inv = 0x87d20782e4866389ULL,
    .one = { 0xd35d438dc58f0d9dULL, 0x0a78eb28f5c70b3dULL, 0x666ea36f7879462cULL, 0x0e0a77c19a07df2fULL },
    .r2 = { 0xf32cfc5b538afa89ULL, 0xb5e71911d44501fbULL, 0x47ab1eff0a417ff6ULL, 0x06d89f71cab8351fULL },
    .name = "bn254-fq",
};

static const field_desc FIELD_BN254_FR = {
    .id = FIELD_ID_BN254_FR,
    .n = 4,
    .bits = 254,
    .p = { 0x43e1f593f0000001ULL, 0x2833e84879b97091ULL, 0xb85045b68181585dULL, 0x30644e72e131a029ULL },
    .inv = 0xc2e1f593efffffffULL,
    .one = { 0xac96341c4ffffffbULL, 0x36fc76959f60cd29ULL, 0x666ea36f7879462eULL, 0x0e0a77c19a07df2fULL },
    .r2 = { 0x1bb8e645ae216da7ULL, 0x53fe3ab1e35c59e3ULL, 0x8c49833d53bb8085ULL, 0x0216d0b17f4e44a5ULL },
    .name = "bn254-fr",
};

static const field_desc FIELD_BLS12_381_FQ = {
    .id = FIELD_ID_BLS12_381_FQ,
    .n = 6,
    .bits = 381,
    .p = { 0xb9feffffffffaaabULL, 0x1eabfffeb153ffffULL, 0x6730d2a0f6b0f624ULL, 0x64774b84f38512bfULL,
           0x4b1ba7b6434bacd7ULL, 0x1a0111ea397fe69aULL },
    .inv = 0x89f3fffcfffcfffdULL,
    .one = { 0x760900000002fffdULL, 0xebf4000bc40c0002ULL, 0x5f48985753c758baULL, 0x77ce585370525745ULL,
             0x5c071a97a256ec6dULL, 0x15f65ec3fa80e493ULL },
    .r2 = { 0xf4df1f341c341746ULL, 0x0a76e6a609d104f1ULL, 0x8de5476c4c95b6d5ULL, 0x67eb88a9939d83c0ULL,
            0x9a793e85b519952dULL, 0x11988fe592cae3aaULL },
    .name = "bls12-381-fq",
};

static const field_desc FIELD_BLS12_381_FR = {
    .id = FIELD_ID_BLS12_381_FR,
    .n = 4,
    .bits = 255,
    .p = { 0xffffffff00000001ULL, 0x53bda402fffe5bfeULL, 0x3339d80809a1d805ULL, 0x73eda753299d7d48ULL },
    .inv = 0xfffffffeffffffffULL,
    .one = { 0x00000001fffffffeULL, 0x5884b7fa00034802ULL, 0x998c4fefecbc4ff5ULL, 0x1824b159acc5056fULL },
    .r2 = { 0xc999e990f3f29c6dULL, 0x2b6cedcb87925c23ULL, 0x05d314967254398fULL, 0x0748d9d99f59ff11ULL },
    .name = "bls12-381-fr",
};

/* ---- limb helpers ------------------------------------------------------- */

/* The limb count, with the bound stated so the compiler knows loops stay inside
 * FE_MAX_LIMBS-sized temporaries when the descriptor is not a compile-time constant. */
CUZK_HD unsigned fe_n(const field_desc *F)
{
    unsigned n = F->n;
    if (n > FE_MAX_LIMBS || n == 0) __builtin_unreachable();
    return n;
}

CUZK_HD void fe_copy(const field_desc *F, uint64_t *r, const uint64_t *a)
{
    CUZK_UNROLL for (unsigned i = 0; i < fe_n(F); i++) r[i] = a[i];
}

CUZK_HD void fe_set_zero(const field_desc *F, uint64_t *r)
{
    CUZK_UNROLL for (unsigned i = 0; i < fe_n(F); i++) r[i] = 0;
}

CUZK_HD void fe_set_one(const field_desc *F, uint64_t *r)
{
    fe_copy(F, r, F->one);
}

CUZK_HD bool fe_is_zero(const field_desc *F, const uint64_t *a)
{
    uint64_t acc = 0;
    CUZK_UNROLL for (unsigned i = 0; i < fe_n(F); i++) acc |= a[i];
    return acc == 0;
}

CUZK_HD bool fe_eq(const field_desc *F, const uint64_t *a, const uint64_t *b)
{
    uint64_t acc = 0;
    CUZK_UNROLL for (unsigned i = 0; i < fe_n(F); i++) acc |= a[i] ^ b[i];
    return acc == 0;
}

/* a < p: whether raw limbs (e.g. from a file) are a reduced element. */
CUZK_HD bool fe_is_reduced(const field_desc *F, const uint64_t *a)
{
    for (unsigned i = fe_n(F); i-- > 0;) {
        if (a[i] != F->p[i]) return a[i] < F->p[i];
    }
    return false;
}

/* Add-with-carry and subtract-with-borrow on one limb. On x86-64 hosts these are the
 * adc/sbb intrinsics: with the 128-bit-integer form gcc 12 kept each carry in a
 * register pair and fe_add/fe_sub cost ~12 ns (perf: 35% of a 2^16 prove sat in the
 * additions of ec_add_aff, against 53% in products). */
#if defined(__x86_64__) && !defined(__CUDA_ARCH__)
#include <x86intrin.h>
CUZK_HD uint64_t fe_adc(uint64_t a, uint64_t b, unsigned char *carry)
{
    unsigned long long r;
    *carry = _addcarry_u64(*carry, a, b, &r);
    return r;
}
CUZK_HD uint64_t fe_sbb(uint64_t a, uint64_t b, unsigned char *borrow)
{
    unsigned long long r;
    *borrow = _subborrow_u64(*borrow, a, b, &r);
    return r;
}
#else
CUZK_HD uint64_t fe_adc(uint64_t a, uint64_t b, unsigned char *carry)
{
    fe_u128 s = (fe_u128)a + b + *carry;
    *carry = (unsigned char)(s >> 64);
    return (uint64_t)s;
}
CUZK_HD uint64_t fe_sbb(uint64_t a, uint64_t b, unsigned char *borrow)
{
    fe_u128 d = (fe_u128)a - b - *borrow;
    *borrow = (unsigned char)((d >> 64) & 1);
    return (uint64_t)d;
}
#endif

/* r = a - p if a >= p (a given as n limbs plus a carry-out word `hi`). */
CUZK_HD void fe_reduce_once(const field_desc *F, uint64_t *r, const uint64_t *a, uint64_t hi)
{
    uint64_t t[FE_MAX_LIMBS];
    unsigned char borrow = 0;
    CUZK_UNROLL for (unsigned i = 0; i < fe_n(F); i++) t[i] = fe_sbb(a[i], F->p[i], &borrow);
    /* a >= p exactly when the subtraction did not borrow past the carry word. */
    uint64_t take = (uint64_t)0 - (uint64_t)(hi || !borrow);
    CUZK_UNROLL for (unsigned i = 0; i < fe_n(F); i++) r[i] = (t[i] & take) | (a[i] & ~take);
}

CUZK_HD void fe_add(const field_desc *F, uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    uint64_t t[FE_MAX_LIMBS];
    unsigned char carry = 0;
    CUZK_UNROLL for (unsigned i = 0; i < fe_n(F); i++) t[i] = fe_adc(a[i], b[i], &carry);
    fe_reduce_once(F, r, t, carry);
}

CUZK_HD void fe_sub(const field_desc *F, uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    uint64_t t[FE_MAX_LIMBS];
    unsigned char borrow = 0;
    CUZK_UNROLL for (unsigned i = 0; i < fe_n(F); i++) t[i] = fe_sbb(a[i], b[i], &borrow);
    /* On borrow add p back; mask instead of branch. */
    uint64_t mask = (uint64_t)0 - borrow;
    unsigned char carry = 0;
    CUZK_UNROLL for (unsigned i = 0; i < fe_n(F); i++) r[i] = fe_adc(t[i], F->p[i] & mask, &carry);
}

CUZK_HD void fe_dbl(const field_desc *F, uint64_t *r, const uint64_t *a)
{
    fe_add(F, r, a, a);
}

CUZK_HD void fe_neg(const field_desc *F, uint64_t *r, const uint64_t *a)
{
    if (fe_is_zero(F, a)) {
        fe_set_zero(F, r);
        return;
    }
    uint64_t borrow = 0;
    CUZK_UNROLL for (unsigned i = 0; i < fe_n(F); i++)
    {
        fe_u128 d = (fe_u128)F->p[i] - a[i] - borrow;
        r[i] = (uint64_t)d;
        borrow = (uint64_t)(d >> 64) & 1;
    }
}

/* Montgomery product r = a·b·R^-1 mod p: CIOS (Koç, Acar, Kaliski 1996) in the
 * "no-carry" form (gnark-crypto, "Faster big-integer modular multiplication for most
 * moduli"): when the modulus' top limb is below 2^63 - 1 — true of all four fields
 * here, and checked by test_field — the running sum never needs an extra carry word,
 * which saves two additions per outer step. Measured 20.9 ns against 29.3 ns for the
 * textbook CIOS (BN254 Fq, dependent chain, this machine); 45 ns against 73 ns for
 * BLS12-381 Fq. One conditional subtraction at the end. */
CUZK_HD void fe_mul_inline(const field_desc *F, uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    const unsigned n = fe_n(F);
    uint64_t t[FE_MAX_LIMBS];
    CUZK_UNROLL for (unsigned i = 0; i < n; i++) t[i] = 0;

    CUZK_UNROLL for (unsigned i = 0; i < n; i++)
    {
        /* column 0: t0 += a0 b_i; m makes the low word cancel in t + m p */
        fe_u128 x = (fe_u128)a[0] * b[i] + t[0];
        uint64_t ca = (uint64_t)(x >> 64);
        t[0] = (uint64_t)x;
        uint64_t m = t[0] * F->inv;
        x = (fe_u128)m * F->p[0] + t[0];
        uint64_t cm = (uint64_t)(x >> 64);
        CUZK_UNROLL for (unsigned j = 1; j < n; j++)
        {
            x = (fe_u128)a[j] * b[i] + t[j] + ca; /* t += a b_i */
            ca = (uint64_t)(x >> 64);
            t[j] = (uint64_t)x;
            x = (fe_u128)m * F->p[j] + t[j] + cm; /* (t + m p) / 2^64 */
            cm = (uint64_t)(x >> 64);
            t[j - 1] = (uint64_t)x;
        }
        t[n - 1] = cm + ca; /* cannot overflow: top limb of p < 2^63 - 1 */
    }
    fe_reduce_once(F, r, t, 0);
}

/* One out-of-line copy of the product per field (zk/field.c). Inlining the unrolled
 * product into every curve formula made zk/curve.c a 2.6 MB object that took 2.5
 * minutes to compile, for a call overhead of a few ns on a ~20 ns product. */
void fe_mul_bn254_fq(uint64_t *r, const uint64_t *a, const uint64_t *b);
void fe_mul_bn254_fr(uint64_t *r, const uint64_t *a, const uint64_t *b);
void fe_mul_bls12_381_fq(uint64_t *r, const uint64_t *a, const uint64_t *b);
void fe_mul_bls12_381_fr(uint64_t *r, const uint64_t *a, const uint64_t *b);
/* r = a^2 for BLS12-381 Fq: with mulx a dedicated square (57 mulx, not 72). */
void fe_sqr_bls12_381_fq(uint64_t *r, const uint64_t *a);

/* Whether this CPU has BMI2 and ADX, so that the products above (and the BLS12-381
 * Fq square and the Fq2 products) use the mulx/adcx/adox code of zk/field.c (~2.5x the
 * portable C). fe_set_mulx(false) forces
 * the portable path (tests compare the two; the environment variable CUZK_NO_MULX=1
 * does the same at start-up); it returns the previous setting. Not thread safe: set it
 * before starting work. */
bool fe_cpu_has_mulx(void);
bool fe_set_mulx(bool on);

/* Montgomery product; with a constant descriptor the switch folds to one call. */
CUZK_HD void fe_mul(const field_desc *F, uint64_t *r, const uint64_t *a, const uint64_t *b)
{
#ifdef __CUDA_ARCH__
    fe_mul_inline(F, r, a, b);
#else
    switch (F->id) {
    case FIELD_ID_BN254_FQ: fe_mul_bn254_fq(r, a, b); break;
    case FIELD_ID_BN254_FR: fe_mul_bn254_fr(r, a, b); break;
    case FIELD_ID_BLS12_381_FQ: fe_mul_bls12_381_fq(r, a, b); break;
    case FIELD_ID_BLS12_381_FR: fe_mul_bls12_381_fr(r, a, b); break;
    }
#endif
}

CUZK_HD void fe_sqr(const field_desc *F, uint64_t *r, const uint64_t *a)
{
#ifndef __CUDA_ARCH__
    if (F->id == FIELD_ID_BLS12_381_FQ) {
        fe_sqr_bls12_381_fq(r, a);
        return;
    }
#endif
    fe_mul(F, r, a, a);
}

/* canonical integer -> Montgomery form (a < p). */
CUZK_HD void fe_to_mont(const field_desc *F, uint64_t *r, const uint64_t *a)
{
    fe_mul(F, r, a, F->r2);
}

/* Montgomery form -> canonical integer: multiply by plain 1. */
CUZK_HD void fe_from_mont(const field_desc *F, uint64_t *r, const uint64_t *a)
{
    uint64_t one[FE_MAX_LIMBS] = { 1 };
    fe_mul(F, r, a, one);
}

/* r = a^e for an exponent given as little-endian limbs (ne limbs). Square-and-multiply,
 * left to right; not constant time (exponents here are public: p-2, (p-1)/2, ...). */
CUZK_HD void fe_pow(const field_desc *F, uint64_t *r, const uint64_t *a, const uint64_t *e, unsigned ne)
{
    uint64_t acc[FE_MAX_LIMBS], base[FE_MAX_LIMBS];
    fe_copy(F, base, a);
    fe_set_one(F, acc);
    for (unsigned i = ne * 64; i-- > 0;) {
        fe_sqr(F, acc, acc);
        if ((e[i / 64] >> (i % 64)) & 1) fe_mul(F, acc, acc, base);
    }
    fe_copy(F, r, acc);
}

/* r = a^-1 (Fermat: a^(p-2)); the inverse of 0 is 0. */
CUZK_HD void fe_inv(const field_desc *F, uint64_t *r, const uint64_t *a)
{
    uint64_t e[FE_MAX_LIMBS];
    fe_copy(F, e, F->p);
    e[0] -= 2; /* p is odd and > 2, so no borrow */
    fe_pow(F, r, a, e, fe_n(F));
}

/* r = a^-1 like fe_inv (0 -> 0), bit for bit, by GMP's extended gcd instead of
 * Fermat's power (host only, zk/field.c). fe_inv stays the portable reference (and the
 * device's inversion); the MSM's batch-affine flush and Fq2 inversions on the host take
 * this one: for BLS12-381 Fq the power is ~380 squares and ~190 products, ~17 us with
 * mulx, for one inversion per flush of ~256-1024 additions. */
void fe_inv_gcd(const field_desc *F, uint64_t *r, const uint64_t *a);

/* ---- Fq2 = Fq[u]/(u^2+1); element = c0 (n limbs) then c1 (n limbs) ---------- */

CUZK_HD void fe2_add(const field_desc *F, uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    fe_add(F, r, a, b);
    fe_add(F, r + F->n, a + F->n, b + F->n);
}

CUZK_HD void fe2_sub(const field_desc *F, uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    fe_sub(F, r, a, b);
    fe_sub(F, r + F->n, a + F->n, b + F->n);
}

CUZK_HD void fe2_neg(const field_desc *F, uint64_t *r, const uint64_t *a)
{
    fe_neg(F, r, a);
    fe_neg(F, r + F->n, a + F->n);
}

/* Karatsuba: 3 base multiplications. (a0+a1u)(b0+b1u) = a0b0 - a1b1 + (a0b1 + a1b0)u */
CUZK_HD void fe2_mul_generic(const field_desc *F, uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    const unsigned n = fe_n(F);
    uint64_t t0[FE_MAX_LIMBS], t1[FE_MAX_LIMBS], sa[FE_MAX_LIMBS], sb[FE_MAX_LIMBS];
    fe_mul(F, t0, a, b);         /* a0 b0 */
    fe_mul(F, t1, a + n, b + n); /* a1 b1 */
    fe_add(F, sa, a, a + n);     /* a0 + a1 */
    fe_add(F, sb, b, b + n);     /* b0 + b1 */
    fe_mul(F, sa, sa, sb);       /* (a0+a1)(b0+b1) */
    fe_sub(F, sa, sa, t0);
    fe_sub(F, r + n, sa, t1); /* c1 = a0b1 + a1b0 */
    fe_sub(F, r, t0, t1);     /* c0 = a0b0 - a1b1 */
}

/* Fq2 products out of line (zk/field.c): with mulx, Karatsuba on unreduced
 * double-width products and 2 Montgomery reductions instead of 3 full products. */
void fe2_mul_bn254_fq(uint64_t *r, const uint64_t *a, const uint64_t *b);
void fe2_mul_bls12_381_fq(uint64_t *r, const uint64_t *a, const uint64_t *b);

CUZK_HD void fe2_mul(const field_desc *F, uint64_t *r, const uint64_t *a, const uint64_t *b)
{
#ifndef __CUDA_ARCH__
    if (F->id == FIELD_ID_BN254_FQ) {
        fe2_mul_bn254_fq(r, a, b);
        return;
    }
    if (F->id == FIELD_ID_BLS12_381_FQ) {
        fe2_mul_bls12_381_fq(r, a, b);
        return;
    }
#endif
    fe2_mul_generic(F, r, a, b);
}

/* (a0 + a1u)^2 = (a0+a1)(a0-a1) + 2 a0 a1 u: 2 base multiplications. */
CUZK_HD void fe2_sqr(const field_desc *F, uint64_t *r, const uint64_t *a)
{
    const unsigned n = fe_n(F);
    uint64_t s[FE_MAX_LIMBS], d[FE_MAX_LIMBS], m[FE_MAX_LIMBS];
    fe_add(F, s, a, a + n);
    fe_sub(F, d, a, a + n);
    fe_mul(F, m, a, a + n);
    fe_mul(F, r, s, d);
    fe_add(F, r + n, m, m);
}

/* 1/(a0 + a1u) = (a0 - a1u) / (a0^2 + a1^2) */
CUZK_HD void fe2_inv(const field_desc *F, uint64_t *r, const uint64_t *a)
{
    const unsigned n = fe_n(F);
    uint64_t t0[FE_MAX_LIMBS], t1[FE_MAX_LIMBS];
    fe_sqr(F, t0, a);
    fe_sqr(F, t1, a + n);
    fe_add(F, t0, t0, t1);
#ifdef __CUDA_ARCH__
    fe_inv(F, t0, t0);
#else
    fe_inv_gcd(F, t0, t0);
#endif
    fe_mul(F, r, a, t0);
    fe_mul(F, r + n, a + n, t0);
    fe_neg(F, r + n, r + n);
}

/* Runs `fn(&FIELD_X, ...)` with the descriptor that has F's id, as a compile-time
 * constant, so out-of-line generic code gets specialised arithmetic. */
#define FIELD_DISPATCH(F, fn, ...)                                               \
    do {                                                                         \
        switch ((F)->id) {                                                       \
        case FIELD_ID_BN254_FQ: fn(&FIELD_BN254_FQ, __VA_ARGS__); break;         \
        case FIELD_ID_BN254_FR: fn(&FIELD_BN254_FR, __VA_ARGS__); break;         \
        case FIELD_ID_BLS12_381_FQ: fn(&FIELD_BLS12_381_FQ, __VA_ARGS__); break; \
        case FIELD_ID_BLS12_381_FR: fn(&FIELD_BLS12_381_FR, __VA_ARGS__); break; \
        }                                                                        \
    } while (0)

/* The same for the scalar fields only (both 4 limbs), for code that works on Fr. */
#define FR_DISPATCH(F, fn, ...)                                                  \
    do {                                                                         \
        switch ((F)->id) {                                                       \
        case FIELD_ID_BN254_FR: fn(&FIELD_BN254_FR, __VA_ARGS__); break;         \
        case FIELD_ID_BLS12_381_FR: fn(&FIELD_BLS12_381_FR, __VA_ARGS__); break; \
        default: break;                                                          \
        }                                                                        \
    } while (0)

/* ---- out-of-line helpers (zk/field.c) ------------------------------------ */

/* Canonical little-endian limbs -> decimal string (no leading zeros; "0" for zero).
 * buf must hold at least 120 bytes (enough for 384 bits). Returns buf. */
char *fe_canon_to_dec(const field_desc *F, const uint64_t *a, char *buf, size_t len);

/* Decimal string -> canonical limbs. Returns 0, or -EINVAL when s is not a decimal
 * number or -ERANGE when it is >= p. */
int fe_canon_from_dec(const field_desc *F, uint64_t *r, const char *s);

/* Montgomery-form element -> decimal string of its canonical value. */
char *fe_mont_to_dec(const field_desc *F, const uint64_t *a, char *buf, size_t len);

/* r[i] = a[i]^-1 for count elements with 3(count-1) multiplications and one inversion
 * (Montgomery's trick). Zero entries stay zero. r may alias a. scratch: count*n limbs,
 * or NULL to allocate; returns 0 or -ENOMEM. */
int fe_batch_inv(const field_desc *F, uint64_t *r, const uint64_t *a, size_t count, uint64_t *scratch);

/* Which descriptor has this modulus (plain LE bytes, nbytes long)? NULL if none. */
const field_desc *field_by_modulus(const uint8_t *bytes, size_t nbytes);

#endif
