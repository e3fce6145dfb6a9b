/* gf.h — prime-field arithmetic for the CUDA kernels, also compiled by gcc for the
 * CPU emulation test (tests/unit/test_gpu_emul.c).
 *
 * Why not field.h's functions directly: they read the modulus from a host `static
 * const field_desc`, which device code may not take the address of. Here the field is
 * a compile-time `enum field_id` argument instead, and the constants come from
 * switch/ternary picks that fold to immediates once the (forced-inline) function is
 * specialised and its limb loops unrolled. The arithmetic is the same as field.h's:
 * elements are n little-endian 64-bit limbs in Montgomery form, fully reduced, so
 * results are bit for bit the CPU's (test_gpu_emul checks gf_mul against fe_mul).
 *
 * The product is the "no-carry" CIOS of fe_mul_inline (valid because every modulus'
 * top limb is below 2^63 - 1); 64x64->128 products use __umul64hi on the device and
 * unsigned __int128 on the host. */
#ifndef CUZK_CUDA_GF_H
#define CUZK_CUDA_GF_H

#include <stdbool.h>
#include <stdint.h>

#include "cuzk/field.h"
#include "cuzk/hd.h"

#define GF_MAX 6

/* i-th of 4 or 6 constants; i is a loop index that unrolling makes constant. */
#define GF_PICK4(i, a, b, c, d) ((i) == 0 ? (a) : (i) == 1 ? (b) : (i) == 2 ? (c) : (d))
#define GF_PICK6(i, a, b, c, d, e, f) \
    ((i) == 0 ? (a) : (i) == 1 ? (b) : (i) == 2 ? (c) : (i) == 3 ? (d) : (i) == 4 ? (e) : (f))

CUZK_HD unsigned gf_n(enum field_id f)
{
    return f == FIELD_ID_BLS12_381_FQ ? 6u : 4u;
}

/* Modulus limb i (values of field.h, ../shared/spec/snarkjs-groth16.md §7). */
CUZK_HD uint64_t gf_p(enum field_id f, unsigned i)
{
    switch (f) {
    case FIELD_ID_BN254_FQ:
        return GF_PICK4(i, 0x3c208c16d87cfd47ULL, 0x97816a916871ca8dULL, 0xb85045b68181585dULL,
                        0x30644e72e131a029ULL);
    case FIELD_ID_BN254_FR:
        return GF_PICK4(i, 0x43e1f593f0000001ULL, 0x2833e84879b97091ULL, 0xb85045b68181585dULL,
                        0x30644e72e131a029ULL);
    case FIELD_ID_BLS12_381_FQ:
        return GF_PICK6(i, 0xb9feffffffffaaabULL, 0x1eabfffeb153ffffULL, 0x6730d2a0f6b0f624ULL,
                        0x64774b84f38512bfULL, 0x4b1ba7b6434bacd7ULL, 0x1a0111ea397fe69aULL);
    case FIELD_ID_BLS12_381_FR:
        return GF_PICK4(i, 0xffffffff00000001ULL, 0x53bda402fffe5bfeULL, 0x3339d80809a1d805ULL,
                        0x73eda753299d7d48ULL);
    }
    return 0;
}

/* -p^-1 mod 2^64 */
CUZK_HD uint64_t gf_pinv(enum field_id f)
{
    switch (f) {
    case FIELD_ID_BN254_FQ: return 0x87d20782e4866389ULL;
    case FIELD_ID_BN254_FR: return 0xc2e1f593efffffffULL;
    case FIELD_ID_BLS12_381_FQ: return 0x89f3fffcfffcfffdULL;
    case FIELD_ID_BLS12_381_FR: return 0xfffffffeffffffffULL;
    }
    return 0;
}

/* R mod p: Montgomery one */
CUZK_HD uint64_t gf_one(enum field_id f, unsigned i)
{
    switch (f) {
    case FIELD_ID_BN254_FQ:
        return GF_PICK4(i, 0xd35d438dc58f0d9dULL, 0x0a78eb28f5c70b3dULL, 0x666ea36f7879462cULL,
                        0x0e0a77c19a07df2fULL);
    case FIELD_ID_BN254_FR:
        return GF_PICK4(i, 0xac96341c4ffffffbULL, 0x36fc76959f60cd29ULL, 0x666ea36f7879462eULL,
                        0x0e0a77c19a07df2fULL);
    case FIELD_ID_BLS12_381_FQ:
        return GF_PICK6(i, 0x760900000002fffdULL, 0xebf4000bc40c0002ULL, 0x5f48985753c758baULL,
                        0x77ce585370525745ULL, 0x5c071a97a256ec6dULL, 0x15f65ec3fa80e493ULL);
    case FIELD_ID_BLS12_381_FR:
        return GF_PICK4(i, 0x00000001fffffffeULL, 0x5884b7fa00034802ULL, 0x998c4fefecbc4ff5ULL,
                        0x1824b159acc5056fULL);
    }
    return 0;
}

/* lo, hi of a*b + c + d (cannot overflow 128 bits). */
CUZK_HD void gf_mac(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t *lo, uint64_t *hi)
{
#ifdef __CUDA_ARCH__
    uint64_t l = a * b, h = __umul64hi(a, b);
    l += c;
    h += l < c;
    l += d;
    h += l < d;
    *lo = l;
    *hi = h;
#else
    unsigned __int128 x = (unsigned __int128)a * b + c + d;
    *lo = (uint64_t)x;
    *hi = (uint64_t)(x >> 64);
#endif
}

CUZK_HD void gf_copy(enum field_id f, uint64_t *r, const uint64_t *a)
{
    CUZK_UNROLL for (unsigned i = 0; i < gf_n(f); i++) r[i] = a[i];
}

CUZK_HD void gf_set_zero(enum field_id f, uint64_t *r)
{
    CUZK_UNROLL for (unsigned i = 0; i < gf_n(f); i++) r[i] = 0;
}

CUZK_HD void gf_set_one(enum field_id f, uint64_t *r)
{
    CUZK_UNROLL for (unsigned i = 0; i < gf_n(f); i++) r[i] = gf_one(f, i);
}

CUZK_HD bool gf_is_zero(enum field_id f, const uint64_t *a)
{
    uint64_t acc = 0;
    CUZK_UNROLL for (unsigned i = 0; i < gf_n(f); i++) acc |= a[i];
    return acc == 0;
}

/* r = t - p if t (n limbs + carry word hi) >= p, else t. */
CUZK_HD void gf_reduce_once(enum field_id f, uint64_t *r, const uint64_t *t, uint64_t hi)
{
    uint64_t s[GF_MAX], borrow = 0;
    CUZK_UNROLL for (unsigned i = 0; i < gf_n(f); i++)
    {
        uint64_t p = gf_p(f, i), d = t[i] - p;
        uint64_t b1 = t[i] < p;
        uint64_t d2 = d - borrow;
        uint64_t b2 = d < borrow;
        s[i] = d2;
        borrow = b1 | b2;
    }
    bool take = hi || !borrow;
    CUZK_UNROLL for (unsigned i = 0; i < gf_n(f); i++) r[i] = take ? s[i] : t[i];
}

CUZK_HD void gf_add(enum field_id f, uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    uint64_t t[GF_MAX], carry = 0;
    CUZK_UNROLL for (unsigned i = 0; i < gf_n(f); i++)
    {
        uint64_t s = a[i] + b[i];
        uint64_t c1 = s < a[i];
        uint64_t s2 = s + carry;
        uint64_t c2 = s2 < s;
        t[i] = s2;
        carry = c1 | c2;
    }
    gf_reduce_once(f, r, t, carry);
}

CUZK_HD void gf_sub(enum field_id f, uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    uint64_t t[GF_MAX], borrow = 0;
    CUZK_UNROLL for (unsigned i = 0; i < gf_n(f); i++)
    {
        uint64_t d = a[i] - b[i];
        uint64_t b1 = a[i] < b[i];
        uint64_t d2 = d - borrow;
        uint64_t b2 = d < borrow;
        t[i] = d2;
        borrow = b1 | b2;
    }
    /* on borrow add p back */
    uint64_t mask = (uint64_t)0 - borrow, carry = 0;
    CUZK_UNROLL for (unsigned i = 0; i < gf_n(f); i++)
    {
        uint64_t p = gf_p(f, i) & mask;
        uint64_t s = t[i] + p;
        uint64_t c1 = s < p;
        uint64_t s2 = s + carry;
        uint64_t c2 = s2 < s;
        r[i] = s2;
        carry = c1 | c2;
    }
}

CUZK_HD void gf_dbl(enum field_id f, uint64_t *r, const uint64_t *a)
{
    gf_add(f, r, a, a);
}

CUZK_HD void gf_neg(enum field_id f, uint64_t *r, const uint64_t *a)
{
    uint64_t z[GF_MAX];
    gf_set_zero(f, z);
    gf_sub(f, r, z, a); /* 0 - 0 = 0, else p - a */
}

/* Montgomery product r = a b R^-1 mod p (no-carry CIOS, as fe_mul_inline). r may
 * alias a or b. */
CUZK_HD void gf_mul(enum field_id f, uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    const unsigned n = gf_n(f);
    uint64_t t[GF_MAX];
    CUZK_UNROLL for (unsigned i = 0; i < n; i++) t[i] = 0;
    CUZK_UNROLL for (unsigned i = 0; i < n; i++)
    {
        uint64_t lo, ca, cm;
        gf_mac(a[0], b[i], t[0], 0, &lo, &ca);
        t[0] = lo;
        uint64_t m = t[0] * gf_pinv(f);
        gf_mac(m, gf_p(f, 0), t[0], 0, &lo, &cm);
        CUZK_UNROLL for (unsigned j = 1; j < n; j++)
        {
            gf_mac(a[j], b[i], t[j], ca, &lo, &ca);
            t[j] = lo;
            gf_mac(m, gf_p(f, j), t[j], cm, &lo, &cm);
            t[j - 1] = lo;
        }
        t[n - 1] = cm + ca;
    }
    gf_reduce_once(f, r, t, 0);
}

CUZK_HD void gf_sqr(enum field_id f, uint64_t *r, const uint64_t *a)
{
    gf_mul(f, r, a, a);
}

/* Montgomery -> canonical: product with plain 1. */
CUZK_HD void gf_from_mont(enum field_id f, uint64_t *r, const uint64_t *a)
{
    uint64_t one[GF_MAX];
    CUZK_UNROLL for (unsigned i = 0; i < gf_n(f); i++) one[i] = i == 0;
    gf_mul(f, r, a, one);
}

/* ---- Fq2 = Fq[u]/(u^2 + 1): c0 then c1 (n limbs each), as field.h's fe2_* ----- */

CUZK_HD void gf2_add(enum field_id f, uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    gf_add(f, r, a, b);
    gf_add(f, r + gf_n(f), a + gf_n(f), b + gf_n(f));
}

CUZK_HD void gf2_sub(enum field_id f, uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    gf_sub(f, r, a, b);
    gf_sub(f, r + gf_n(f), a + gf_n(f), b + gf_n(f));
}

CUZK_HD void gf2_neg(enum field_id f, uint64_t *r, const uint64_t *a)
{
    gf_neg(f, r, a);
    gf_neg(f, r + gf_n(f), a + gf_n(f));
}

/* Karatsuba, same operation order as fe2_mul. */
CUZK_HD void gf2_mul_body(enum field_id f, uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    const unsigned n = gf_n(f);
    uint64_t t0[GF_MAX], t1[GF_MAX], sa[GF_MAX], sb[GF_MAX];
    gf_mul(f, t0, a, b);
    gf_mul(f, t1, a + n, b + n);
    gf_add(f, sa, a, a + n);
    gf_add(f, sb, b, b + n);
    gf_mul(f, sa, sa, sb);
    gf_sub(f, sa, sa, t0);
    gf_sub(f, r + n, sa, t1);
    gf_sub(f, r, t0, t1);
}

CUZK_HD void gf2_sqr_body(enum field_id f, uint64_t *r, const uint64_t *a)
{
    const unsigned n = gf_n(f);
    uint64_t s[GF_MAX], d[GF_MAX], m[GF_MAX];
    gf_add(f, s, a, a + n);
    gf_sub(f, d, a, a + n);
    gf_mul(f, m, a, a + n);
    gf_mul(f, r, s, d);
    gf_add(f, r + n, m, m);
}

/* Fq2 products out of line, one copy per base field: inlined, every G2 formula held
 * ~50 unrolled base products and ptxas spent minutes per kernel (the base products
 * inside stay inline). */
#ifdef __CUDACC__
#define GF_OUTLINE static __host__ __device__ __noinline__
#else
#define GF_OUTLINE static __attribute__((noinline, unused))
#endif
GF_OUTLINE void gf2_mul_bn254(uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    gf2_mul_body(FIELD_ID_BN254_FQ, r, a, b);
}
GF_OUTLINE void gf2_mul_bls(uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    gf2_mul_body(FIELD_ID_BLS12_381_FQ, r, a, b);
}
GF_OUTLINE void gf2_sqr_bn254(uint64_t *r, const uint64_t *a)
{
    gf2_sqr_body(FIELD_ID_BN254_FQ, r, a);
}
GF_OUTLINE void gf2_sqr_bls(uint64_t *r, const uint64_t *a)
{
    gf2_sqr_body(FIELD_ID_BLS12_381_FQ, r, a);
}

/* f: FIELD_ID_BN254_FQ or FIELD_ID_BLS12_381_FQ (the G2 coordinate fields). */
CUZK_HD void gf2_mul(enum field_id f, uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    if (f == FIELD_ID_BN254_FQ)
        gf2_mul_bn254(r, a, b);
    else
        gf2_mul_bls(r, a, b);
}
CUZK_HD void gf2_sqr(enum field_id f, uint64_t *r, const uint64_t *a)
{
    if (f == FIELD_ID_BN254_FQ)
        gf2_sqr_bn254(r, a);
    else
        gf2_sqr_bls(r, a);
}

#endif
