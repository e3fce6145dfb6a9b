/* field.h — prime fields in Montgomery form, generic over the modulus width.
 *
 * An element is n little-endian 64-bit limbs (n = 4 for BN254 Fq/Fr and both Fr,
 * n = 6 for BLS12-381 Fq) holding x·R mod p with R = 2^(64n), fully reduced (< p).
 * That is byte for byte the layout of points in a snarkjs .zkey (spec §2.1), so bases
 * from a mapped zkey are used where they lie.
 *
 * One copy for the host and the CUDA kernels. Every operation the kernels use is
 * written once, below, as a CUZK_HD always-inline function taking the field as an
 * `enum field_id` (the _id forms: fe_add_id, fe_mul_id, fe2_mul_id, ...). An id and not
 * the descriptor because device code may not take the address of a host `static const`
 * (the descriptors), while an id is a constant that the kernels' templates pass in.
 * The constants come through fe_n_id, fe_p_id, fe_inv_id, fe_one_id and fe_r2_id: on
 * the host a read of the descriptor FIELD_TABLE[f] (an immediate when f is a constant,
 * an ordinary load when it is not, as reading F->p always was); in device code a switch
 * over the same constant lists (FIELD_BN254_FQ_P, ...) that folds to immediates once
 * the function is specialised and its limb loops unrolled (a __device__ table would
 * cost a memory load per limb). Where host and device differ it is said at the spot:
 * the host's carries are the adc/sbb intrinsics and its products, the BLS12-381 Fq
 * square, the Fq2 products and the Fq2 inverse are out of line in zk/field.c (mulx/adx
 * or portable, chosen at run time); the device's product is fe_mul32_id (32-bit words,
 * PTX carry chains: carry32.h), inline, and out of line by value inside the Fq2
 * arithmetic (fe2_base_mul_id).
 * tests/unit/test_gpu_emul.c compiles the device form with gcc (CUZK_DEVICE_EMUL, hd.h)
 * and checks it against GMP and the host.
 *
 * The descriptor API (fe_add(F, ...), what host code calls) is each a one-line call of
 * the _id form with F->id. Callers pass one of the constant descriptors below (or
 * dispatch to one: FIELD_DISPATCH); since everything is always-inline, F->id folds and
 * the host compiles to the code it had when these functions read F directly. The
 * reverse (descriptor forms as the one copy) cannot run on the device, and a generator
 * would put a build step between the reader and the code.
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

#include "zk/carry32.h"
#include "zk/hd.h"

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

/* The constants, once (docs/snarkjs-groth16.md §7; tests check them against
 * GMP): the host descriptors and the device switches below are both made from these. */
#define FIELD_BN254_FQ_N    4
#define FIELD_BN254_FQ_BITS 254
#define FIELD_BN254_FQ_P \
    0x3c208c16d87cfd47ULL, 0x97816a916871ca8dULL, 0xb85045b68181585dULL, 0x30644e72e131a029ULL
#define FIELD_BN254_FQ_INV 0x87d20782e4866389ULL
#define FIELD_BN254_FQ_ONE \
    0xd35d438dc58f0d9dULL, 0x0a78eb28f5c70b3dULL, 0x666ea36f7879462cULL, 0x0e0a77c19a07df2fULL
#define FIELD_BN254_FQ_R2 \
    0xf32cfc5b538afa89ULL, 0xb5e71911d44501fbULL, 0x47ab1eff0a417ff6ULL, 0x06d89f71cab8351fULL

#define FIELD_BN254_FR_N    4
#define FIELD_BN254_FR_BITS 254
#define FIELD_BN254_FR_P \
    0x43e1f593f0000001ULL, 0x2833e84879b97091ULL, 0xb85045b68181585dULL, 0x30644e72e131a029ULL
#define FIELD_BN254_FR_INV 0xc2e1f593efffffffULL
#define FIELD_BN254_FR_ONE \
    0xac96341c4ffffffbULL, 0x36fc76959f60cd29ULL, 0x666ea36f7879462eULL, 0x0e0a77c19a07df2fULL
#define FIELD_BN254_FR_R2 \
    0x1bb8e645ae216da7ULL, 0x53fe3ab1e35c59e3ULL, 0x8c49833d53bb8085ULL, 0x0216d0b17f4e44a5ULL

#define FIELD_BLS12_381_FQ_N    6
#define FIELD_BLS12_381_FQ_BITS 381
#define FIELD_BLS12_381_FQ_P                                                                    \
    0xb9feffffffffaaabULL, 0x1eabfffeb153ffffULL, 0x6730d2a0f6b0f624ULL, 0x64774b84f38512bfULL, \
        0x4b1ba7b6434bacd7ULL, 0x1a0111ea397fe69aULL
#define FIELD_BLS12_381_FQ_INV 0x89f3fffcfffcfffdULL
#define FIELD_BLS12_381_FQ_ONE                                                                  \
    0x760900000002fffdULL, 0xebf4000bc40c0002ULL, 0x5f48985753c758baULL, 0x77ce585370525745ULL, \
        0x5c071a97a256ec6dULL, 0x15f65ec3fa80e493ULL
#define FIELD_BLS12_381_FQ_R2                                                                   \
    0xf4df1f341c341746ULL, 0x0a76e6a609d104f1ULL, 0x8de5476c4c95b6d5ULL, 0x67eb88a9939d83c0ULL, \
        0x9a793e85b519952dULL, 0x11988fe592cae3aaULL

#define FIELD_BLS12_381_FR_N    4
#define FIELD_BLS12_381_FR_BITS 255
#define FIELD_BLS12_381_FR_P \
    0xffffffff00000001ULL, 0x53bda402fffe5bfeULL, 0x3339d80809a1d805ULL, 0x73eda753299d7d48ULL
#define FIELD_BLS12_381_FR_INV 0xfffffffeffffffffULL
#define FIELD_BLS12_381_FR_ONE \
    0x00000001fffffffeULL, 0x5884b7fa00034802ULL, 0x998c4fefecbc4ff5ULL, 0x1824b159acc5056fULL
#define FIELD_BLS12_381_FR_R2 \
    0xc999e990f3f29c6dULL, 0x2b6cedcb87925c23ULL, 0x05d314967254398fULL, 0x0748d9d99f59ff11ULL

/* The descriptors, indexed by id, defined here and not in a .c file so that every
 * translation unit sees their values: gcc then folds n, p and inv into the inlined
 * arithmetic. FIELD_BN254_FQ etc. name the entries (&FIELD_BN254_FQ is a descriptor). */
#define FIELD_DESC(ID, NAME)                                                                    \
    {                                                                                           \
        FIELD_ID_##ID, FIELD_##ID##_N, FIELD_##ID##_BITS, { FIELD_##ID##_P }, FIELD_##ID##_INV, \
            { FIELD_##ID##_ONE }, { FIELD_##ID##_R2 }, NAME                                     \
    }
static const field_desc FIELD_TABLE[4] = {
    /* in enum field_id order */
    FIELD_DESC(BN254_FQ, "bn254-fq"),
    FIELD_DESC(BN254_FR, "bn254-fr"),
    FIELD_DESC(BLS12_381_FQ, "bls12-381-fq"),
    FIELD_DESC(BLS12_381_FR, "bls12-381-fr"),
};
#define FIELD_BN254_FQ     (FIELD_TABLE[FIELD_ID_BN254_FQ])
#define FIELD_BN254_FR     (FIELD_TABLE[FIELD_ID_BN254_FR])
#define FIELD_BLS12_381_FQ (FIELD_TABLE[FIELD_ID_BLS12_381_FQ])
#define FIELD_BLS12_381_FR (FIELD_TABLE[FIELD_ID_BLS12_381_FR])

/* ---- the constants by id ----------------------------------------------------- */

/* Device code: limb i of a constant list; i is a loop index that unrolling makes
 * constant, so the ternaries fold. Zeros pad the lists past their end. */
#define FE_PICK_(i, a, b, c, d, e, f, ...) \
    ((i) == 0 ? (a) : (i) == 1 ? (b) : (i) == 2 ? (c) : (i) == 3 ? (d) : (i) == 4 ? (e) : (f))
#define FE_PICK(i, ...) FE_PICK_(i, __VA_ARGS__, 0, 0, 0, 0, 0, 0)
#define FE_CONST_SWITCH(f, WHAT, i)                                           \
    switch (f) {                                                              \
    case FIELD_ID_BN254_FQ: return FE_PICK(i, FIELD_BN254_FQ_##WHAT);         \
    case FIELD_ID_BN254_FR: return FE_PICK(i, FIELD_BN254_FR_##WHAT);         \
    case FIELD_ID_BLS12_381_FQ: return FE_PICK(i, FIELD_BLS12_381_FQ_##WHAT); \
    case FIELD_ID_BLS12_381_FR: return FE_PICK(i, FIELD_BLS12_381_FR_##WHAT); \
    }                                                                         \
    return 0

/* The limb count, with the bound stated so the compiler knows loops stay inside
 * FE_MAX_LIMBS-sized temporaries when the id is not a compile-time constant. */
CUZK_HD unsigned fe_n_id(enum field_id f)
{
#ifdef CUZK_DEVICE_CODE
    FE_CONST_SWITCH(f, N, 0);
#else
    unsigned n = FIELD_TABLE[f].n;
    if (n > FE_MAX_LIMBS || n == 0) __builtin_unreachable();
    return n;
#endif
}

/* limb i of the modulus */
CUZK_HD uint64_t fe_p_id(enum field_id f, unsigned i)
{
#ifdef CUZK_DEVICE_CODE
    FE_CONST_SWITCH(f, P, i);
#else
    return FIELD_TABLE[f].p[i];
#endif
}

/* -p^-1 mod 2^64 */
CUZK_HD uint64_t fe_inv_id(enum field_id f)
{
#ifdef CUZK_DEVICE_CODE
    FE_CONST_SWITCH(f, INV, 0);
#else
    return FIELD_TABLE[f].inv;
#endif
}

/* limb i of R mod p (Montgomery 1) */
CUZK_HD uint64_t fe_one_id(enum field_id f, unsigned i)
{
#ifdef CUZK_DEVICE_CODE
    FE_CONST_SWITCH(f, ONE, i);
#else
    return FIELD_TABLE[f].one[i];
#endif
}

/* limb i of R^2 mod p */
CUZK_HD uint64_t fe_r2_id(enum field_id f, unsigned i)
{
#ifdef CUZK_DEVICE_CODE
    FE_CONST_SWITCH(f, R2, i);
#else
    return FIELD_TABLE[f].r2[i];
#endif
}

/* ---- limb helpers ------------------------------------------------------- */

CUZK_HD void fe_copy_id(enum field_id f, uint64_t *r, const uint64_t *a)
{
    CUZK_UNROLL for (unsigned i = 0; i < fe_n_id(f); i++) r[i] = a[i];
}

CUZK_HD void fe_set_zero_id(enum field_id f, uint64_t *r)
{
    CUZK_UNROLL for (unsigned i = 0; i < fe_n_id(f); i++) r[i] = 0;
}

CUZK_HD void fe_set_one_id(enum field_id f, uint64_t *r)
{
    CUZK_UNROLL for (unsigned i = 0; i < fe_n_id(f); i++) r[i] = fe_one_id(f, i);
}

CUZK_HD bool fe_is_zero_id(enum field_id f, const uint64_t *a)
{
    uint64_t acc = 0;
    CUZK_UNROLL for (unsigned i = 0; i < fe_n_id(f); i++) acc |= a[i];
    return acc == 0;
}

/* Add-with-carry and subtract-with-borrow on one limb. On x86-64 hosts these are the
 * adc/sbb intrinsics: with the 128-bit-integer form gcc 12 kept each carry in a
 * register pair and fe_add/fe_sub cost ~12 ns (perf: 35% of a 2^16 prove sat in the
 * additions of ec_add_aff, against 53% in products). In device code, comparisons,
 * which nvcc turns into its carry chains. */
#if defined(__x86_64__) && !defined(CUZK_DEVICE_CODE)
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
    uint64_t s = a + b, s2 = s + *carry;
    *carry = (unsigned char)((s < a) | (s2 < s));
    return s2;
}
CUZK_HD uint64_t fe_sbb(uint64_t a, uint64_t b, unsigned char *borrow)
{
    uint64_t d = a - b, d2 = d - *borrow;
    *borrow = (unsigned char)((a < b) | (d < *borrow));
    return d2;
}
#endif

/* lo, hi of a·b + c + d (cannot overflow 128 bits). The device has no 128-bit
 * product: the high word is __umul64hi (in the CPU emulation, a 128-bit one). */
CUZK_HD void fe_mac(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t *lo, uint64_t *hi)
{
#ifdef CUZK_DEVICE_CODE
#ifdef __CUDA_ARCH__
    uint64_t l = a * b, h = __umul64hi(a, b);
#else
    uint64_t l = a * b, h = (uint64_t)(((fe_u128)a * b) >> 64);
#endif
    l += c;
    h += l < c;
    l += d;
    h += l < d;
    *lo = l;
    *hi = h;
#else
    fe_u128 x = (fe_u128)a * b + c + d;
    *lo = (uint64_t)x;
    *hi = (uint64_t)(x >> 64);
#endif
}

/* r = a - p if a >= p (a given as n limbs plus a carry-out word `hi`). */
CUZK_HD void fe_reduce_once_id(enum field_id f, uint64_t *r, const uint64_t *a, uint64_t hi)
{
    uint64_t t[FE_MAX_LIMBS];
    unsigned char borrow = 0;
    CUZK_UNROLL for (unsigned i = 0; i < fe_n_id(f); i++) t[i] = fe_sbb(a[i], fe_p_id(f, i), &borrow);
    /* a >= p exactly when the subtraction did not borrow past the carry word. */
    uint64_t take = (uint64_t)0 - (uint64_t)(hi || !borrow);
    CUZK_UNROLL for (unsigned i = 0; i < fe_n_id(f); i++) r[i] = (t[i] & take) | (a[i] & ~take);
}

CUZK_HD void fe_add_id(enum field_id f, uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    uint64_t t[FE_MAX_LIMBS];
    unsigned char carry = 0;
    CUZK_UNROLL for (unsigned i = 0; i < fe_n_id(f); i++) t[i] = fe_adc(a[i], b[i], &carry);
    fe_reduce_once_id(f, r, t, carry);
}

CUZK_HD void fe_sub_id(enum field_id f, uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    uint64_t t[FE_MAX_LIMBS];
    unsigned char borrow = 0;
    CUZK_UNROLL for (unsigned i = 0; i < fe_n_id(f); i++) t[i] = fe_sbb(a[i], b[i], &borrow);
    /* On borrow add p back; mask instead of branch. */
    uint64_t mask = (uint64_t)0 - borrow;
    unsigned char carry = 0;
    CUZK_UNROLL for (unsigned i = 0; i < fe_n_id(f); i++) r[i] = fe_adc(t[i], fe_p_id(f, i) & mask, &carry);
}

CUZK_HD void fe_dbl_id(enum field_id f, uint64_t *r, const uint64_t *a)
{
    fe_add_id(f, r, a, a);
}

/* r = p - a, and 0 for 0 (p masked off: no branch). */
CUZK_HD void fe_neg_id(enum field_id f, uint64_t *r, const uint64_t *a)
{
    uint64_t mask = (uint64_t)0 - (uint64_t)!fe_is_zero_id(f, a);
    unsigned char borrow = 0;
    CUZK_UNROLL for (unsigned i = 0; i < fe_n_id(f); i++) r[i] = fe_sbb(fe_p_id(f, i) & mask, a[i], &borrow);
}

/* Montgomery product r = a·b·R^-1 mod p: CIOS (Koç, Acar, Kaliski 1996) in the
 * "no-carry" form (gnark-crypto, "Faster big-integer modular multiplication for most
 * moduli"): when the modulus' top limb is below 2^63 - 1 — true of all four fields
 * here, and checked by test_field — the running sum never needs an extra carry word,
 * which saves two additions per outer step. Measured 20.9 ns against 29.3 ns for the
 * textbook CIOS (BN254 Fq, dependent chain, this machine); 45 ns against 73 ns for
 * BLS12-381 Fq. One conditional subtraction at the end. The host's portable product
 * (zk/field.c; test_field checks it against GMP), and the reference test_gpu_emul
 * holds the device's fe_mul32_id to. */
CUZK_HD void fe_mul_inline_id(enum field_id f, uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    const unsigned n = fe_n_id(f);
    uint64_t t[FE_MAX_LIMBS];
    CUZK_UNROLL for (unsigned i = 0; i < n; i++) t[i] = 0;

    CUZK_UNROLL for (unsigned i = 0; i < n; i++)
    {
        /* column 0: t0 += a0 b_i; m makes the low word cancel in t + m p */
        uint64_t ca, cm;
        fe_mac(a[0], b[i], t[0], 0, &t[0], &ca);
        uint64_t m = t[0] * fe_inv_id(f), lo;
        fe_mac(m, fe_p_id(f, 0), t[0], 0, &lo, &cm);
        CUZK_UNROLL for (unsigned j = 1; j < n; j++)
        {
            fe_mac(a[j], b[i], t[j], ca, &t[j], &ca);           /* t += a b_i */
            fe_mac(m, fe_p_id(f, j), t[j], cm, &t[j - 1], &cm); /* (t + m p) / 2^64 */
        }
        t[n - 1] = cm + ca; /* cannot overflow: top limb of p < 2^63 - 1 */
    }
    fe_reduce_once_id(f, r, t, 0);
}

/* The device's Montgomery product: 32-bit words (N = 2n) and PTX carry chains
 * (carry32.h), in sppark's form (mont_t): the accumulator is two word arrays, `even`
 * holding the products a_j·b_i of even j at their own weight and `odd` those of odd j
 * one word up, so each row a·b_i is one unbroken mad.lo.cc / madc.hi.cc chain per array
 * (2 instructions per 32-bit product, no carry word between them); each half-step
 * adds m·p with m = t_0·(-p^-1) mod 2^32, divides by 2^32 by moving the other array
 * down one word, and swaps the arrays' roles. Sums stay below 2^(32(N+1)) because the
 * top 32-bit word of every modulus here is below 2^31 - 1 (fe_mul_inline_id's no-carry
 * condition on 32-bit words; BLS12-381 Fr's 0x73eda753 is the largest), so the carries
 * the chains drop (the last madc.hi of a shift, the chain into `odd` before the one
 * into `even`) are always 0; tests/unit/test_gpu_emul.c checks the product against GMP
 * and fe_mul_inline_id on the edge values where a dropped carry would show. One
 * conditional subtraction at the end (the 64-bit limbs'). */
#define FE32_MAX_WORDS (2 * FE_MAX_LIMBS)

/* acc[j], acc[j+1] (+)= lo, hi of a[j]·bi for even j < nw: a fresh chain (cc set). */
CUZK_HD void fe32_cmad_row(uint32_t *acc, const uint32_t *a, uint32_t bi, unsigned nw, c32_cc *cc)
{
    acc[0] = c32_mad_lo_cc(a[0], bi, acc[0], cc);
    acc[1] = c32_madc_hi_cc(a[0], bi, acc[1], cc);
    CUZK_UNROLL for (unsigned j = 2; j < nw; j += 2)
    {
        acc[j] = c32_madc_lo_cc(a[j], bi, acc[j], cc);
        acc[j + 1] = c32_madc_hi_cc(a[j], bi, acc[j + 1], cc);
    }
}

/* One half-step: (e, o) -> the accumulator plus a·bi, reduced by one word. On entry
 * (not first) the value is o + e·2^32 with o[0] = 0; on return e + o·2^32 with e[0] = 0. */
CUZK_HD void fe32_mad_redc(enum field_id f, uint32_t *e, uint32_t *o, const uint32_t *a, uint32_t bi,
                           const uint32_t *p, bool first, c32_cc *cc)
{
    const unsigned nw = 2 * fe_n_id(f);
    if (first) {
        CUZK_UNROLL for (unsigned j = 0; j < nw; j += 2)
        {
            o[j] = c32_mul_lo(a[j + 1], bi);
            o[j + 1] = c32_mul_hi(a[j + 1], bi);
            e[j] = c32_mul_lo(a[j], bi);
            e[j + 1] = c32_mul_hi(a[j], bi);
        }
    } else {
        /* divide by 2^32: e += o >> 32 word by word, o moved down two words (its new
         * word k weighs 2^(32(k+1))), the odd products added on the way */
        e[0] = c32_add_cc(e[0], o[1], cc);
        CUZK_UNROLL for (unsigned j = 0; j + 2 < nw; j += 2)
        {
            o[j] = c32_madc_lo_cc(a[j + 1], bi, o[j + 2], cc);
            o[j + 1] = c32_madc_hi_cc(a[j + 1], bi, o[j + 3], cc);
        }
        o[nw - 2] = c32_madc_lo_cc(a[nw - 1], bi, 0, cc);
        o[nw - 1] = c32_madc_hi(a[nw - 1], bi, 0, cc);
        fe32_cmad_row(e, a, bi, nw, cc);
        o[nw - 1] = c32_addc(o[nw - 1], 0, cc);
    }
    const uint32_t m = c32_mul_lo(e[0], (uint32_t)fe_inv_id(f));
    fe32_cmad_row(o, p + 1, m, nw, cc);
    fe32_cmad_row(e, p, m, nw, cc);
    o[nw - 1] = c32_addc(o[nw - 1], 0, cc);
}

CUZK_HD void fe_mul32_id(enum field_id f, uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    const unsigned n = fe_n_id(f), nw = 2 * n;
    uint32_t aw[FE32_MAX_WORDS], bw[FE32_MAX_WORDS], pw[FE32_MAX_WORDS], e[FE32_MAX_WORDS], o[FE32_MAX_WORDS];
    c32_cc cc = { 0 };
    CUZK_UNROLL for (unsigned i = 0; i < n; i++)
    {
        aw[2 * i] = (uint32_t)a[i], aw[2 * i + 1] = (uint32_t)(a[i] >> 32);
        bw[2 * i] = (uint32_t)b[i], bw[2 * i + 1] = (uint32_t)(b[i] >> 32);
        pw[2 * i] = (uint32_t)fe_p_id(f, i), pw[2 * i + 1] = (uint32_t)(fe_p_id(f, i) >> 32);
    }
    CUZK_UNROLL for (unsigned i = 0; i < nw; i += 2)
    {
        fe32_mad_redc(f, e, o, aw, bw[i], pw, i == 0, &cc);
        fe32_mad_redc(f, o, e, aw, bw[i + 1], pw, false, &cc);
    }
    /* the value is o + e·2^32 with o[0] = 0: e + o / 2^32 */
    e[0] = c32_add_cc(e[0], o[1], &cc);
    CUZK_UNROLL for (unsigned j = 1; j + 1 < nw; j++) e[j] = c32_addc_cc(e[j], o[j + 1], &cc);
    e[nw - 1] = c32_addc(e[nw - 1], 0, &cc);
    uint64_t t[FE_MAX_LIMBS];
    CUZK_UNROLL for (unsigned i = 0; i < n; i++) t[i] = (uint64_t)e[2 * i + 1] << 32 | e[2 * i];
    fe_reduce_once_id(f, r, t, 0);
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

/* Montgomery product: inline on the device; on the host the field's out-of-line
 * product (with a constant id the switch folds to one call). */
CUZK_HD void fe_mul_id(enum field_id f, uint64_t *r, const uint64_t *a, const uint64_t *b)
{
#ifdef CUZK_DEVICE_CODE
    fe_mul32_id(f, r, a, b);
#else
    switch (f) {
    case FIELD_ID_BN254_FQ: fe_mul_bn254_fq(r, a, b); break;
    case FIELD_ID_BN254_FR: fe_mul_bn254_fr(r, a, b); break;
    case FIELD_ID_BLS12_381_FQ: fe_mul_bls12_381_fq(r, a, b); break;
    case FIELD_ID_BLS12_381_FR: fe_mul_bls12_381_fr(r, a, b); break;
    }
#endif
}

CUZK_HD void fe_sqr_id(enum field_id f, uint64_t *r, const uint64_t *a)
{
#ifndef CUZK_DEVICE_CODE
    if (f == FIELD_ID_BLS12_381_FQ) {
        fe_sqr_bls12_381_fq(r, a);
        return;
    }
#endif
    fe_mul_id(f, r, a, a);
}

/* Montgomery form -> canonical integer: multiply by plain 1. */
CUZK_HD void fe_from_mont_id(enum field_id f, uint64_t *r, const uint64_t *a)
{
    uint64_t one[FE_MAX_LIMBS] = { 1 };
    fe_mul_id(f, r, a, one);
}

/* ---- Fq2 = Fq[u]/(u^2+1); element = c0 (n limbs) then c1 (n limbs) ---------- */

CUZK_HD void fe2_add_id(enum field_id f, uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    const unsigned n = fe_n_id(f);
    fe_add_id(f, r, a, b);
    fe_add_id(f, r + n, a + n, b + n);
}

CUZK_HD void fe2_sub_id(enum field_id f, uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    const unsigned n = fe_n_id(f);
    fe_sub_id(f, r, a, b);
    fe_sub_id(f, r + n, a + n, b + n);
}

CUZK_HD void fe2_neg_id(enum field_id f, uint64_t *r, const uint64_t *a)
{
    const unsigned n = fe_n_id(f);
    fe_neg_id(f, r, a);
    fe_neg_id(f, r + n, a + n);
}

/* The base product inside the Fq2 arithmetic. Device: out of line, one copy per base
 * field, operands and result by value (a struct of the n limbs). Inlined, each G2 point
 * formula held ~50 unrolled base products (minutes of ptxas per kernel); an Fq2 product
 * out of line taking its operands by address put the G2 formulas' Fq2 temporaries in
 * local memory (1536-1728 bytes of stack per thread in every G2 bucket kernel: an
 * array whose address reaches an out-of-line function cannot live in registers). By
 * value the ABI passes them in registers, and the base product needs few enough that
 * the formula's Fq2 values stay in registers across the call. Host: fe_mul_id. */
#ifdef CUZK_DEVICE_OUTLINE_ON
#define FE_DEVICE_MUL_INSTANCE(sfx, ID)                                                             \
    typedef struct {                                                                                \
        uint64_t v[FIELD_##ID##_N];                                                                 \
    } fe_val_##sfx;                                                                                 \
    CUZK_DEVICE_OUTLINE fe_val_##sfx fe_mul_dev_##sfx(fe_val_##sfx a, fe_val_##sfx b)               \
    {                                                                                               \
        fe_val_##sfx r;                                                                             \
        fe_mul32_id(FIELD_ID_##ID, r.v, a.v, b.v);                                                  \
        return r;                                                                                   \
    }                                                                                               \
    CUZK_DEVICE_INLINE void fe_mul_dev_ptr_##sfx(uint64_t *r, const uint64_t *a, const uint64_t *b) \
    {                                                                                               \
        fe_val_##sfx x, y;                                                                          \
        CUZK_UNROLL for (unsigned i = 0; i < FIELD_##ID##_N; i++) x.v[i] = a[i], y.v[i] = b[i];     \
        x = fe_mul_dev_##sfx(x, y);                                                                 \
        CUZK_UNROLL for (unsigned i = 0; i < FIELD_##ID##_N; i++) r[i] = x.v[i];                    \
    }
FE_DEVICE_MUL_INSTANCE(bn254_fq, BN254_FQ)
FE_DEVICE_MUL_INSTANCE(bls12_381_fq, BLS12_381_FQ)
#endif
CUZK_HD void fe2_base_mul_id(enum field_id f, uint64_t *r, const uint64_t *a, const uint64_t *b)
{
#ifdef CUZK_DEVICE_CODE
    if (f == FIELD_ID_BN254_FQ)
        fe_mul_dev_ptr_bn254_fq(r, a, b);
    else
        fe_mul_dev_ptr_bls12_381_fq(r, a, b);
#else
    fe_mul_id(f, r, a, b);
#endif
}

/* Karatsuba: 3 base multiplications. (a0+a1u)(b0+b1u) = a0b0 - a1b1 + (a0b1 + a1b0)u */
CUZK_HD void fe2_mul_generic_id(enum field_id f, uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    const unsigned n = fe_n_id(f);
    uint64_t t0[FE_MAX_LIMBS], t1[FE_MAX_LIMBS], sa[FE_MAX_LIMBS], sb[FE_MAX_LIMBS];
    fe2_base_mul_id(f, t0, a, b);         /* a0 b0 */
    fe2_base_mul_id(f, t1, a + n, b + n); /* a1 b1 */
    fe_add_id(f, sa, a, a + n);           /* a0 + a1 */
    fe_add_id(f, sb, b, b + n);           /* b0 + b1 */
    fe2_base_mul_id(f, sa, sa, sb);       /* (a0+a1)(b0+b1) */
    fe_sub_id(f, sa, sa, t0);
    fe_sub_id(f, r + n, sa, t1); /* c1 = a0b1 + a1b0 */
    fe_sub_id(f, r, t0, t1);     /* c0 = a0b0 - a1b1 */
}

/* (a0 + a1u)^2 = (a0+a1)(a0-a1) + 2 a0 a1 u: 2 base multiplications. */
CUZK_HD void fe2_sqr_generic_id(enum field_id f, uint64_t *r, const uint64_t *a)
{
    const unsigned n = fe_n_id(f);
    uint64_t s[FE_MAX_LIMBS], d[FE_MAX_LIMBS], m[FE_MAX_LIMBS];
    fe_add_id(f, s, a, a + n);
    fe_sub_id(f, d, a, a + n);
    fe2_base_mul_id(f, m, a, a + n);
    fe2_base_mul_id(f, r, s, d);
    fe_add_id(f, r + n, m, m);
}

/* Fq2 products out of line (zk/field.c): with mulx, Karatsuba on unreduced
 * double-width products and 2 Montgomery reductions instead of 3 full products. */
void fe2_mul_bn254_fq(uint64_t *r, const uint64_t *a, const uint64_t *b);
void fe2_mul_bls12_381_fq(uint64_t *r, const uint64_t *a, const uint64_t *b);

/* f: FIELD_ID_BN254_FQ or FIELD_ID_BLS12_381_FQ (the G2 coordinate fields). */
CUZK_HD void fe2_mul_id(enum field_id f, uint64_t *r, const uint64_t *a, const uint64_t *b)
{
#ifdef CUZK_DEVICE_CODE
    fe2_mul_generic_id(f, r, a, b);
#else
    if (f == FIELD_ID_BN254_FQ)
        fe2_mul_bn254_fq(r, a, b);
    else if (f == FIELD_ID_BLS12_381_FQ)
        fe2_mul_bls12_381_fq(r, a, b);
    else
        fe2_mul_generic_id(f, r, a, b);
#endif
}

CUZK_HD void fe2_sqr_id(enum field_id f, uint64_t *r, const uint64_t *a)
{
    fe2_sqr_generic_id(f, r, a);
}

/* ---- the descriptor API: each the _id form above for F->id -------------------- */

/* The limb count (a descriptor field; fe_n_id for an id). */
CUZK_HD unsigned fe_n(const field_desc *F)
{
    unsigned n = F->n;
    if (n > FE_MAX_LIMBS || n == 0) __builtin_unreachable();
    return n;
}

/* void NAME(D, params) is NAME_id(D->id, args), D a `const DESC *` (field_desc here,
 * curve_group in curve.h): the descriptor forms as a table, one line each. */
#define CUZK_UNPAREN(...) __VA_ARGS__
#define CUZK_BY_ID(name, DESC, params, args)              \
    CUZK_HD void name(const DESC *D, CUZK_UNPAREN params) \
    {                                                     \
        name##_id(D->id, CUZK_UNPAREN args);              \
    }
#define FE_BY_ID(name, params, args) CUZK_BY_ID(name, field_desc, params, args)
CUZK_HD bool fe_is_zero(const field_desc *F, const uint64_t *a)
{
    return fe_is_zero_id(F->id, a);
}
/* (clang-format would read "uint64_t *r" in these lists as a product) */
/* clang-format off */
FE_BY_ID(fe_copy, (uint64_t *r, const uint64_t *a), (r, a))
FE_BY_ID(fe_set_zero, (uint64_t *r), (r))
FE_BY_ID(fe_set_one, (uint64_t *r), (r))
FE_BY_ID(fe_reduce_once, (uint64_t *r, const uint64_t *a, uint64_t hi), (r, a, hi))
FE_BY_ID(fe_add, (uint64_t *r, const uint64_t *a, const uint64_t *b), (r, a, b))
FE_BY_ID(fe_sub, (uint64_t *r, const uint64_t *a, const uint64_t *b), (r, a, b))
FE_BY_ID(fe_dbl, (uint64_t *r, const uint64_t *a), (r, a))
FE_BY_ID(fe_neg, (uint64_t *r, const uint64_t *a), (r, a))
FE_BY_ID(fe_mul_inline, (uint64_t *r, const uint64_t *a, const uint64_t *b), (r, a, b))
FE_BY_ID(fe_mul, (uint64_t *r, const uint64_t *a, const uint64_t *b), (r, a, b))
FE_BY_ID(fe_sqr, (uint64_t *r, const uint64_t *a), (r, a))
FE_BY_ID(fe_from_mont, (uint64_t *r, const uint64_t *a), (r, a))
FE_BY_ID(fe2_add, (uint64_t *r, const uint64_t *a, const uint64_t *b), (r, a, b))
FE_BY_ID(fe2_sub, (uint64_t *r, const uint64_t *a, const uint64_t *b), (r, a, b))
FE_BY_ID(fe2_neg, (uint64_t *r, const uint64_t *a), (r, a))
FE_BY_ID(fe2_mul_generic, (uint64_t *r, const uint64_t *a, const uint64_t *b), (r, a, b))
FE_BY_ID(fe2_mul, (uint64_t *r, const uint64_t *a, const uint64_t *b), (r, a, b))
FE_BY_ID(fe2_sqr, (uint64_t *r, const uint64_t *a), (r, a))
/* clang-format on */

/* ---- host-side operations (descriptor only; the kernels do not use them) -------- */

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

/* canonical integer -> Montgomery form (a < p). */
CUZK_HD void fe_to_mont(const field_desc *F, uint64_t *r, const uint64_t *a)
{
    fe_mul(F, r, a, F->r2);
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
 * Fermat's power (host only, zk/field.c). fe_inv stays the portable reference; the
 * MSM's batch-affine flush and Fq2 inversions on the host take
 * this one: for BLS12-381 Fq the power is ~380 squares and ~190 products, ~17 us with
 * mulx, for one inversion per flush of ~256-1024 additions. */
void fe_inv_gcd(const field_desc *F, uint64_t *r, const uint64_t *a);

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
