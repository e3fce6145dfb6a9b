/* field.c — field constants and the out-of-line field helpers (decimal I/O, batch
 * inversion, lookup by modulus). The arithmetic itself is inline in field.h. */
#include "zk/field.h"

#include <errno.h>
#include <gmp.h>
#include <stdlib.h>
#include <string.h>

/* ---- Montgomery products: portable C and x86-64 mulx/adcx/adox ---------------
 *
 * fe_mul_<field> is what fe_mul calls. On x86-64 CPUs with BMI2 and ADX (checked once
 * at start-up, fe_cpu_has_mulx) the 4-limb fields take fe_mul4_mulx below and
 * BLS12-381 Fq fe_mul6_mulx (with its own square and lazy Fq2 product); otherwise
 * the portable no-carry CIOS of field.h.
 * tests/unit/test_field.c checks both paths against each other bit for bit and against
 * GMP. */

#if defined(__x86_64__)
static bool fe_mulx_on;
static bool fe_mulx_cpu;

__attribute__((constructor)) static void fe_detect_cpu(void)
{
    __builtin_cpu_init();
    fe_mulx_cpu = __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("adx");
    const char *e = getenv("CUZK_NO_MULX"); /* debugging: force the portable path */
    fe_mulx_on = fe_mulx_cpu && !(e && *e && strcmp(e, "0") != 0);
}

bool fe_cpu_has_mulx(void)
{
    return fe_mulx_cpu;
}

bool fe_set_mulx(bool on)
{
    bool was = fe_mulx_on;
    fe_mulx_on = on && fe_mulx_cpu;
    return was;
}

/* One outer step of CIOS for 4 limbs, as in gnark-crypto's generated amd64 code:
 * t (t0..t3, t4 = top word) += a * b_i with two carry chains (adox for the low
 * halves, adcx for the high halves), then m = t0 * inv and t = (t + m p) / 2^64, again
 * with two chains. For p < 2^255 (all 4-limb fields here) t stays below 2p < 2^256
 * between steps and t + a b_i + m p < 2^320, so five words suffice and no carry word
 * is needed (the same "no-carry" bound the C path relies on).
 * Operands: %0..%3 t0..t3, %4 t4, %5 lo scratch, %6 hi scratch, rdx = multiplier,
 * [P] the modulus (a register: F->p), [inv] -p^-1 mod 2^64.
 * Registers, counted for -O0 (tests/scripts/field_o0.sh builds this file so): gcc
 * does not fold F = &FIELD_X there, so each "m"(F->p[k]) operand took a register of
 * its own for its address, and fe_mul4_mulx asked for 16 ("impossible constraints").
 * One pointer for the four limbs costs at -O2 one lea per product. The descriptors
 * are const objects never written, so the asm needs no memory operand to be ordered
 * after a store to them. */
/* The asm below is laid out by hand (one instruction a line, with its operand
 * comments): make format leaves it alone. */
/* clang-format off */
#define FE4_REDUCE                                                     \
    "movq %0, %%rdx\n\t"                                               \
    "imulq %[inv], %%rdx\n\t"                                          \
    "xorl %k5, %k5\n\t"                                                \
    "mulxq 0(%[P]), %5, %6\n\t"                                          \
    "adcxq %0, %5\n\t"    /* t0 + lo(m p0) = 0 mod 2^64: only CF */   \
    "movq %6, %0\n\t"                                                 \
    "adcxq %1, %0\n\t"                                                \
    "mulxq 8(%[P]), %5, %1\n\t"                                         \
    "adoxq %5, %0\n\t"                                                \
    "adcxq %2, %1\n\t"                                                \
    "mulxq 16(%[P]), %5, %2\n\t"                                         \
    "adoxq %5, %1\n\t"                                                \
    "adcxq %3, %2\n\t"                                                \
    "mulxq 24(%[P]), %5, %3\n\t"                                         \
    "adoxq %5, %2\n\t"                                                \
    "movl $0, %k5\n\t"                                                \
    "adcxq %4, %3\n\t"                                                \
    "adoxq %5, %3\n\t"

/* Row 0 of the schoolbook product, one carry chain: (%0..%3, %4 top) = a * b_0.
 * %5 lo scratch. The first step of fe_mul4_mulx and of fe4_mul_wide_mulx. */
#define FE4_ROW0                                                       \
    "movq 0(%[b]), %%rdx\n\t"                                          \
    "mulxq 0(%[a]), %0, %1\n\t"                                        \
    "xorl %k5, %k5\n\t"                                                \
    "mulxq 8(%[a]), %5, %2\n\t"                                        \
    "adoxq %5, %1\n\t"                                                 \
    "mulxq 16(%[a]), %5, %3\n\t"                                       \
    "adoxq %5, %2\n\t"                                                 \
    "mulxq 24(%[a]), %5, %4\n\t"                                       \
    "adoxq %5, %3\n\t"                                                 \
    "movl $0, %k5\n\t"                                                 \
    "adoxq %5, %4\n\t"

/* One row of the schoolbook product: (x0..x3, top) += a * b_i with two carry chains;
 * top is written (it was free). %5 lo scratch, %6 hi scratch. */
#define FE4W_ROW(bi, x0, x1, x2, x3, top)                             \
    "movq " bi ", %%rdx\n\t"                                           \
    "xorl %k5, %k5\n\t"                                                \
    "mulxq 0(%[a]), %5, %6\n\t"                                       \
    "adoxq %5, " x0 "\n\t"                                            \
    "adcxq %6, " x1 "\n\t"                                            \
    "mulxq 8(%[a]), %5, %6\n\t"                                       \
    "adoxq %5, " x1 "\n\t"                                            \
    "adcxq %6, " x2 "\n\t"                                            \
    "mulxq 16(%[a]), %5, %6\n\t"                                      \
    "adoxq %5, " x2 "\n\t"                                            \
    "adcxq %6, " x3 "\n\t"                                            \
    "mulxq 24(%[a]), %5, " top "\n\t"                                 \
    "adoxq %5, " x3 "\n\t"                                            \
    "movl $0, %k5\n\t"                                                \
    "adcxq %5, " top "\n\t"                                           \
    "adoxq %5, " top "\n\t"

/* One CIOS step's product row: (%0..%3, %4 top) += a * b_i. */
#define FE4_MULADD(bi) FE4W_ROW(bi, "%0", "%1", "%2", "%3", "%4")

static inline __attribute__((always_inline)) void fe_mul4_mulx(const field_desc *F, uint64_t *r, const uint64_t *a,
                                                               const uint64_t *b)
{
    uint64_t t0, t1, t2, t3, t4, lo, hi;
    __asm__(FE4_ROW0 /* step 0: t = a b_0 */
            FE4_REDUCE
            FE4_MULADD("8(%[b])")
            FE4_REDUCE
            FE4_MULADD("16(%[b])")
            FE4_REDUCE
            FE4_MULADD("24(%[b])")
            FE4_REDUCE
            : "=&r"(t0), "=&r"(t1), "=&r"(t2), "=&r"(t3), "=&r"(t4), "=&r"(lo), "=&r"(hi)
            : [a] "r"(a), [b] "r"(b), [P] "r"(F->p), [inv] "rm"(F->inv)
            : "rdx", "cc", "memory"); /* reads a[0..3], b[0..3]: "m" operands would take
                                       * 2 more registers at -O0 (see FE4_REDUCE) */
    uint64_t t[4] = {t0, t1, t2, t3};
    fe_reduce_once(F, r, t, 0);
}
/* ---- Fq2 product with lazy reduction (4-limb Fq, mulx) -----------------------
 *
 * (a0 + a1 u)(b0 + b1 u), u^2 = -1, by Karatsuba on unreduced 512-bit products:
 *   T0 = a0 b0, T1 = a1 b1, T2 = (a0 + a1)(b0 + b1)   (the sums < 2p, not reduced)
 *   c0 = REDC(T0 + p^2 - T1),  c1 = REDC(T2 - T0 - T1) = REDC(a0 b1 + a1 b0)
 * Both REDC arguments lie in [0, 2p^2), inside [0, pR) since 2p < R, so each REDC is
 * below 2p before its one conditional subtraction. That is 3 wide products and 2
 * reductions (48 + 32 mulx) against 3 full Montgomery products (96), and 2 final
 * subtractions instead of 3 plus the 5 reduced additions of the plain Karatsuba.
 * REDC(T) = (T + M p) / R with M fixed by the low half alone, so it is
 * (T_lo + M p) / R + T_hi: the four FE4_REDUCE steps on T_lo (<= p) plus T_hi (< p). */

/* t (8 limbs) = a b (4 limbs each). Five rotating accumulators: after row i, limb i is
 * final and its register becomes the next row's top word. */
static inline __attribute__((always_inline)) void fe4_mul_wide_mulx(uint64_t *t, const uint64_t *a,
                                                                    const uint64_t *b)
{
    uint64_t x0, x1, x2, x3, x4, lo, hi;
    __asm__ volatile(FE4_ROW0
            "movq %0, 0(%[t])\n\t"
            FE4W_ROW("8(%[b])", "%1", "%2", "%3", "%4", "%0")
            "movq %1, 8(%[t])\n\t"
            FE4W_ROW("16(%[b])", "%2", "%3", "%4", "%0", "%1")
            "movq %2, 16(%[t])\n\t"
            FE4W_ROW("24(%[b])", "%3", "%4", "%0", "%1", "%2")
            "movq %3, 24(%[t])\n\t"
            "movq %4, 32(%[t])\n\t"
            "movq %0, 40(%[t])\n\t"
            "movq %1, 48(%[t])\n\t"
            "movq %2, 56(%[t])\n\t"
            : "=&r"(x0), "=&r"(x1), "=&r"(x2), "=&r"(x3), "=&r"(x4), "=&r"(lo), "=&r"(hi)
            : [a] "r"(a), [b] "r"(b), [t] "r"(t)
            : "rdx", "cc", "memory"); /* as fe6_mul_wide_mulx: no "m" operands */
}

/* r (4 limbs, < p) = T R^-1 mod p for T (8 limbs) < pR. */
static inline __attribute__((always_inline)) void fe4_redc_mulx(const field_desc *F, uint64_t *r,
                                                                const uint64_t *T)
{
    uint64_t t0 = T[0], t1 = T[1], t2 = T[2], t3 = T[3], zero = 0, lo, hi;
    __asm__(FE4_REDUCE FE4_REDUCE FE4_REDUCE FE4_REDUCE
            : "+&r"(t0), "+&r"(t1), "+&r"(t2), "+&r"(t3), "+&r"(zero), "=&r"(lo), "=&r"(hi)
            : [P] "r"(F->p), [inv] "rm"(F->inv)
            : "rdx", "cc");
    /* (T_lo + M p) / R <= p, plus T_hi < p: below 2p < 2^256, no carry out */
    uint64_t u[4];
    unsigned char c = 0;
    u[0] = fe_adc(t0, T[4], &c);
    u[1] = fe_adc(t1, T[5], &c);
    u[2] = fe_adc(t2, T[6], &c);
    u[3] = fe_adc(t3, T[7], &c);
    fe_reduce_once(F, r, u, 0);
}

/* p^2 for BN254 Fq, 8 limbs (c0 = T0 - T1 + p^2 stays non-negative). */
static const uint64_t FE2_BN254_P2[8] = {0x3b5458a2275d69b1ULL, 0xa602072d09eac101ULL, 0x4a50189c6d96cadcULL,
                                         0x04689e957a1242c8ULL, 0x26edfa5c34c6b38dULL, 0xb00b855116375606ULL,
                                         0x599a6f7c0348d21cULL, 0x0925c4b8763cbf9cULL};

/* The lazy Karatsuba Fq2 product of both fields' mulx code, on N-limb elements:
 * T0 = a0·b0, T1 = a1·b1, T2 = (a0 + a1)(b0 + b1) as 2N-limb wide products (the sums
 * need no reduction: each field's comment says why they fit N limbs), then
 * c1 = REDC(T2 - T0 - T1) = a0b1 + a1b0 and c0 = REDC(T0 + p^2 - T1), where p^2 (P2)
 * keeps c0's argument non-negative. A macro rather than a function of N: each
 * expansion is the same straight-line code, with the limb count's always_inline wide
 * product and REDC, that the two fields spelled out before. */
#define FE2_MUL_LAZY_KARATSUBA(N, MUL_WIDE, REDC, P2, r, a, b)                                   \
    do {                                                                                         \
        uint64_t sa[N], sb[N], T0[2 * (N)], T1[2 * (N)], T2[2 * (N)];                            \
        unsigned char c = 0, d = 0;                                                              \
        for (unsigned i = 0; i < (N); i++) sa[i] = fe_adc((a)[i], (a)[(N) + i], &c);             \
        for (unsigned i = 0; i < (N); i++) sb[i] = fe_adc((b)[i], (b)[(N) + i], &d);             \
        MUL_WIDE(T0, (a), (b));                                                                  \
        MUL_WIDE(T1, (a) + (N), (b) + (N));                                                      \
        MUL_WIDE(T2, sa, sb);                                                                    \
        c = 0;                                                                                   \
        d = 0;                                                                                   \
        for (unsigned i = 0; i < 2 * (N); i++) T2[i] = fe_sbb(fe_sbb(T2[i], T0[i], &c), T1[i], &d); \
        c = 0;                                                                                   \
        d = 0;                                                                                   \
        for (unsigned i = 0; i < 2 * (N); i++) T0[i] = fe_sbb(fe_adc(T0[i], (P2)[i], &c), T1[i], &d); \
        REDC((r), T0); /* a and b are no longer read: r may alias them */                       \
        REDC((r) + (N), T2);                                                                     \
    } while (0)

static inline __attribute__((always_inline)) void fe4_redc_bn254_fq_mulx(uint64_t *r, const uint64_t *T)
{
    fe4_redc_mulx(&FIELD_BN254_FQ, r, T);
}

/* a0 + a1 < 2p < 2^255 fits four limbs. */
static __attribute__((noinline)) void fe2_mul_bn254_fq_mulx(uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    FE2_MUL_LAZY_KARATSUBA(4, fe4_mul_wide_mulx, fe4_redc_bn254_fq_mulx, FE2_BN254_P2, r, a, b);
}

/* ---- BLS12-381 Fq (6 limbs): mulx/adcx/adox ------------------------------------
 *
 * The same CIOS as fe_mul4_mulx, 6 words wide: t (t0..t5, t6 = top word) += a b_i,
 * then t = (t + m p) / 2^64. With p < 2^381 (top limb 0x1a01.. < 2^63 - 1) t stays
 * below 2p < 2^382 between steps and t + a b_i + m p < 2^448, so seven words hold
 * every intermediate and no carry word is needed — the bound fe_mul_inline relies on.
 * 72 mulx a product. The modulus and inv are read from FIELD_BLS12_381_FQ directly
 * (RIP-relative), not through a descriptor pointer: 9 accumulators and scratch plus
 * the two operand pointers and rdx leave no register for one at -O1 (the asan build).
 * Operands: %0..%5 t0..t5, %6 t6, %7 lo scratch, %8 hi scratch, rdx = multiplier. */
#define FE6_P(k) [p##k] "m"(FIELD_BLS12_381_FQ.p[k])
#define FE6_CONSTS FE6_P(0), FE6_P(1), FE6_P(2), FE6_P(3), FE6_P(4), FE6_P(5), [inv] "m"(FIELD_BLS12_381_FQ.inv)

#define FE6_REDUCE                                                     \
    "movq %0, %%rdx\n\t"                                               \
    "imulq %[inv], %%rdx\n\t"                                          \
    "xorl %k7, %k7\n\t"                                                \
    "mulxq %[p0], %7, %8\n\t"                                         \
    "adcxq %0, %7\n\t"    /* t0 + lo(m p0) = 0 mod 2^64: only CF */   \
    "movq %8, %0\n\t"                                                 \
    "adcxq %1, %0\n\t"                                                \
    "mulxq %[p1], %7, %1\n\t"                                         \
    "adoxq %7, %0\n\t"                                                \
    "adcxq %2, %1\n\t"                                                \
    "mulxq %[p2], %7, %2\n\t"                                         \
    "adoxq %7, %1\n\t"                                                \
    "adcxq %3, %2\n\t"                                                \
    "mulxq %[p3], %7, %3\n\t"                                         \
    "adoxq %7, %2\n\t"                                                \
    "adcxq %4, %3\n\t"                                                \
    "mulxq %[p4], %7, %4\n\t"                                         \
    "adoxq %7, %3\n\t"                                                \
    "adcxq %5, %4\n\t"                                                \
    "mulxq %[p5], %7, %5\n\t"                                         \
    "adoxq %7, %4\n\t"                                                \
    "movl $0, %k7\n\t"                                                \
    "adcxq %6, %5\n\t"                                                \
    "adoxq %7, %5\n\t"

/* Row 0 of the 6x6 schoolbook product, one carry chain: (%0..%5, %6 top) = a * b_0.
 * %7 lo scratch. The first step of fe_mul6_mulx and of fe6_mul_wide_mulx. */
#define FE6_ROW0                                                    \
    "movq 0(%[b]), %%rdx\n\t"                                       \
    "mulxq 0(%[a]), %0, %1\n\t"                                     \
    "xorl %k7, %k7\n\t"                                             \
    "mulxq 8(%[a]), %7, %2\n\t"                                     \
    "adoxq %7, %1\n\t"                                              \
    "mulxq 16(%[a]), %7, %3\n\t"                                    \
    "adoxq %7, %2\n\t"                                              \
    "mulxq 24(%[a]), %7, %4\n\t"                                    \
    "adoxq %7, %3\n\t"                                              \
    "mulxq 32(%[a]), %7, %5\n\t"                                    \
    "adoxq %7, %4\n\t"                                              \
    "mulxq 40(%[a]), %7, %6\n\t"                                    \
    "adoxq %7, %5\n\t"                                              \
    "movl $0, %k7\n\t"                                              \
    "adoxq %7, %6\n\t"

/* One row of the 6x6 schoolbook product: (x0..x5, top) += a * b_i with two carry
 * chains; top is written (it was free). %7 lo scratch, %8 hi scratch. */
#define FE6W_ROW(bi, x0, x1, x2, x3, x4, x5, top)                     \
    "movq " bi ", %%rdx\n\t"                                           \
    "xorl %k7, %k7\n\t"                                                \
    "mulxq 0(%[a]), %7, %8\n\t"                                       \
    "adoxq %7, " x0 "\n\t"                                            \
    "adcxq %8, " x1 "\n\t"                                            \
    "mulxq 8(%[a]), %7, %8\n\t"                                       \
    "adoxq %7, " x1 "\n\t"                                            \
    "adcxq %8, " x2 "\n\t"                                            \
    "mulxq 16(%[a]), %7, %8\n\t"                                      \
    "adoxq %7, " x2 "\n\t"                                            \
    "adcxq %8, " x3 "\n\t"                                            \
    "mulxq 24(%[a]), %7, %8\n\t"                                      \
    "adoxq %7, " x3 "\n\t"                                            \
    "adcxq %8, " x4 "\n\t"                                            \
    "mulxq 32(%[a]), %7, %8\n\t"                                      \
    "adoxq %7, " x4 "\n\t"                                            \
    "adcxq %8, " x5 "\n\t"                                            \
    "mulxq 40(%[a]), %7, " top "\n\t"                                 \
    "adoxq %7, " x5 "\n\t"                                            \
    "movl $0, %k7\n\t"                                                \
    "adcxq %7, " top "\n\t"                                           \
    "adoxq %7, " top "\n\t"

/* One CIOS step's product row: (%0..%5, %6 top) += a * b_i. */
#define FE6_MULADD(bi) FE6W_ROW(bi, "%0", "%1", "%2", "%3", "%4", "%5", "%6")

static inline __attribute__((always_inline)) void fe_mul6_mulx(uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    uint64_t t0, t1, t2, t3, t4, t5, t6, lo, hi;
    __asm__(FE6_ROW0 /* step 0: t = a b_0 */
            FE6_REDUCE
            FE6_MULADD("8(%[b])")
            FE6_REDUCE
            FE6_MULADD("16(%[b])")
            FE6_REDUCE
            FE6_MULADD("24(%[b])")
            FE6_REDUCE
            FE6_MULADD("32(%[b])")
            FE6_REDUCE
            FE6_MULADD("40(%[b])")
            FE6_REDUCE
            : "=&r"(t0), "=&r"(t1), "=&r"(t2), "=&r"(t3), "=&r"(t4), "=&r"(t5), "=&r"(t6), "=&r"(lo), "=&r"(hi)
            : [a] "r"(a), [b] "r"(b), "m"(*(const uint64_t(*)[6])a), "m"(*(const uint64_t(*)[6])b), FE6_CONSTS
            : "rdx", "cc");
    uint64_t t[6] = {t0, t1, t2, t3, t4, t5};
    fe_reduce_once(&FIELD_BLS12_381_FQ, r, t, 0);
}

/* t (12 limbs) = a b (6 limbs each). Seven rotating accumulators, as fe4_mul_wide_mulx:
 * after row i limb i is final, is stored, and its register is the next row's top.
 * Registers: 9 accumulators and scratch, the three pointers and rdx are 13, every
 * general register but rsp and rbp (the frame pointer at -O0 and in the sanitizer
 * builds). So what the asm reads and writes through a, b and t is told by a "memory"
 * clobber, not by "m" operands: at -O0 gcc forms each "m" operand's address in a
 * register of its own (it loads the pointer from its stack slot), 3 more than exist
 * ("impossible constraints"). The asm is volatile because its register outputs are
 * all dead: without "m" outputs gcc would otherwise delete it as unused (it did).
 * At -O2 the clobber costs nothing here: the caller's a, b, sa, sb are in memory
 * already and T0..T2 are read from memory after it.
 * tests/scripts/field_o0.sh builds this file at -O0 and runs the field tests. */
static inline __attribute__((always_inline)) void fe6_mul_wide_mulx(uint64_t *t, const uint64_t *a,
                                                                    const uint64_t *b)
{
    uint64_t x0, x1, x2, x3, x4, x5, x6, lo, hi;
    __asm__ volatile(FE6_ROW0
            "movq %0, 0(%[t])\n\t"
            FE6W_ROW("8(%[b])", "%1", "%2", "%3", "%4", "%5", "%6", "%0")
            "movq %1, 8(%[t])\n\t"
            FE6W_ROW("16(%[b])", "%2", "%3", "%4", "%5", "%6", "%0", "%1")
            "movq %2, 16(%[t])\n\t"
            FE6W_ROW("24(%[b])", "%3", "%4", "%5", "%6", "%0", "%1", "%2")
            "movq %3, 24(%[t])\n\t"
            FE6W_ROW("32(%[b])", "%4", "%5", "%6", "%0", "%1", "%2", "%3")
            "movq %4, 32(%[t])\n\t"
            FE6W_ROW("40(%[b])", "%5", "%6", "%0", "%1", "%2", "%3", "%4")
            "movq %5, 40(%[t])\n\t"
            "movq %6, 48(%[t])\n\t"
            "movq %0, 56(%[t])\n\t"
            "movq %1, 64(%[t])\n\t"
            "movq %2, 72(%[t])\n\t"
            "movq %3, 80(%[t])\n\t"
            "movq %4, 88(%[t])\n\t"
            : "=&r"(x0), "=&r"(x1), "=&r"(x2), "=&r"(x3), "=&r"(x4), "=&r"(x5), "=&r"(x6), "=&r"(lo), "=&r"(hi)
            : [a] "r"(a), [b] "r"(b), [t] "r"(t)
            : "rdx", "cc", "memory");
}

/* r (6 limbs, < p) = T R^-1 mod p for T (12 limbs) < pR: six FE6_REDUCE steps on
 * T_lo give (T_lo + M p) / R <= p, plus T_hi < p: below 2p < 2^384, no carry out. */
static inline __attribute__((always_inline)) void fe6_redc_mulx(uint64_t *r, const uint64_t *T)
{
    uint64_t t0 = T[0], t1 = T[1], t2 = T[2], t3 = T[3], t4 = T[4], t5 = T[5], zero = 0, lo, hi;
    __asm__(FE6_REDUCE FE6_REDUCE FE6_REDUCE FE6_REDUCE FE6_REDUCE FE6_REDUCE
            : "+&r"(t0), "+&r"(t1), "+&r"(t2), "+&r"(t3), "+&r"(t4), "+&r"(t5), "+&r"(zero), "=&r"(lo), "=&r"(hi)
            : FE6_CONSTS
            : "rdx", "cc");
    uint64_t u[6];
    unsigned char c = 0;
    u[0] = fe_adc(t0, T[6], &c);
    u[1] = fe_adc(t1, T[7], &c);
    u[2] = fe_adc(t2, T[8], &c);
    u[3] = fe_adc(t3, T[9], &c);
    u[4] = fe_adc(t4, T[10], &c);
    u[5] = fe_adc(t5, T[11], &c);
    fe_reduce_once(&FIELD_BLS12_381_FQ, r, u, 0);
}

/* p^2 for BLS12-381 Fq, 12 limbs (762 bits). */
static const uint64_t FE2_BLS_P2[12] = {
    0x26aa00001c718e39ULL, 0x7ced6b1d76382eabULL, 0x162c338362113cfdULL, 0x66bf91ed3e71b743ULL,
    0x292e85a87091a049ULL, 0x1d68619c86185c7bULL, 0xf53149330978ef01ULL, 0x50a62cfd16ddca6eULL,
    0x66e59e49349e8bd0ULL, 0xe2dc90e50e7046b4ULL, 0x4bd278eaa22f25e9ULL, 0x02a437a4b8c35fc7ULL};

/* The BN254 scheme above, 6 limbs: the sums a0 + a1 < 2p < 2^382 fit six limbs, the
 * three wide products 12, and both REDC arguments lie in [0, 2p^2) inside [0, pR). */
static __attribute__((noinline)) void fe2_mul_bls12_381_fq_mulx(uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    FE2_MUL_LAZY_KARATSUBA(6, fe6_mul_wide_mulx, fe6_redc_mulx, FE2_BLS_P2, r, a, b);
}

/* t (12 limbs) = a^2 (6 limbs): the 15 products a_i a_j (i < j) once, doubled, plus
 * the 6 squares a_i^2 — 21 mulx against the 36 of fe6_mul_wide_mulx(t, a, a).
 * Pass 1 sums the off-diagonal triangle into t[1..10] with rotating accumulators
 * (row i adds a_i a_{i+1..5} at columns 2i+1..i+6; after it columns 2i+1, 2i+2 are
 * final and stored). Pass 2 doubles each column on the CF chain (adcx x, x) and adds
 * the square's half on the OF chain; 2W + D = a^2 < 2^768, so neither chain carries
 * out of column 11 (t[0] and t[11] of W are zero and not stored in pass 1). */
static inline __attribute__((always_inline)) void fe6_sqr_wide_mulx(uint64_t *t, const uint64_t *a)
{
    uint64_t x0, x1, x2, x3, x4, x5, x6, lo, hi;
    __asm__(/* row 0: a0 a_{1..5} -> columns 1..6, one chain */
            "movq 0(%[a]), %%rdx\n\t"
            "xorl %k7, %k7\n\t"
            "mulxq 8(%[a]), %1, %2\n\t"
            "mulxq 16(%[a]), %7, %3\n\t"
            "adcxq %7, %2\n\t"
            "mulxq 24(%[a]), %7, %4\n\t"
            "adcxq %7, %3\n\t"
            "mulxq 32(%[a]), %7, %5\n\t"
            "adcxq %7, %4\n\t"
            "mulxq 40(%[a]), %7, %6\n\t"
            "adcxq %7, %5\n\t"
            "movl $0, %k7\n\t"
            "adcxq %7, %6\n\t"
            "movq %1, 8(%[t])\n\t"
            "movq %2, 16(%[t])\n\t"
            /* row 1: a1 a_{2..5} -> columns 3..7 (x3..x6, top x0) */
            "movq 8(%[a]), %%rdx\n\t"
            "xorl %k7, %k7\n\t"
            "mulxq 16(%[a]), %7, %8\n\t"
            "adoxq %7, %3\n\t"
            "adcxq %8, %4\n\t"
            "mulxq 24(%[a]), %7, %8\n\t"
            "adoxq %7, %4\n\t"
            "adcxq %8, %5\n\t"
            "mulxq 32(%[a]), %7, %8\n\t"
            "adoxq %7, %5\n\t"
            "adcxq %8, %6\n\t"
            "mulxq 40(%[a]), %7, %0\n\t"
            "adoxq %7, %6\n\t"
            "movl $0, %k7\n\t"
            "adcxq %7, %0\n\t"
            "adoxq %7, %0\n\t"
            "movq %3, 24(%[t])\n\t"
            "movq %4, 32(%[t])\n\t"
            /* row 2: a2 a_{3..5} -> columns 5..8 (x5, x6, x0, top x1) */
            "movq 16(%[a]), %%rdx\n\t"
            "xorl %k7, %k7\n\t"
            "mulxq 24(%[a]), %7, %8\n\t"
            "adoxq %7, %5\n\t"
            "adcxq %8, %6\n\t"
            "mulxq 32(%[a]), %7, %8\n\t"
            "adoxq %7, %6\n\t"
            "adcxq %8, %0\n\t"
            "mulxq 40(%[a]), %7, %1\n\t"
            "adoxq %7, %0\n\t"
            "movl $0, %k7\n\t"
            "adcxq %7, %1\n\t"
            "adoxq %7, %1\n\t"
            "movq %5, 40(%[t])\n\t"
            "movq %6, 48(%[t])\n\t"
            /* row 3: a3 a_{4,5} -> columns 7..9 (x0, x1, top x2) */
            "movq 24(%[a]), %%rdx\n\t"
            "xorl %k7, %k7\n\t"
            "mulxq 32(%[a]), %7, %8\n\t"
            "adoxq %7, %0\n\t"
            "adcxq %8, %1\n\t"
            "mulxq 40(%[a]), %7, %2\n\t"
            "adoxq %7, %1\n\t"
            "movl $0, %k7\n\t"
            "adcxq %7, %2\n\t"
            "adoxq %7, %2\n\t"
            "movq %0, 56(%[t])\n\t"
            /* row 4: a4 a5 -> columns 9..10 (x2, top x3) */
            "movq 32(%[a]), %%rdx\n\t"
            "xorl %k7, %k7\n\t"
            "mulxq 40(%[a]), %7, %3\n\t"
            "adcxq %7, %2\n\t"
            "movl $0, %k7\n\t"
            "adcxq %7, %3\n\t"
            "movq %1, 64(%[t])\n\t"
            "movq %2, 72(%[t])\n\t"
            "movq %3, 80(%[t])\n\t"
            /* pass 2: t = 2 W + sum a_i^2 2^(128 i) */
            "movq 0(%[a]), %%rdx\n\t"
            "xorl %k7, %k7\n\t"
            "mulxq %%rdx, %7, %8\n\t"
            "movq %7, 0(%[t])\n\t"        /* column 0: W has none */
            "movq 8(%[t]), %0\n\t"
            "adcxq %0, %0\n\t"
            "adoxq %8, %0\n\t"
            "movq %0, 8(%[t])\n\t"
#define FE6S_DIAG(ai, c0, c1)                                          \
            "movq " ai ", %%rdx\n\t"                                   \
            "mulxq %%rdx, %7, %8\n\t"                                  \
            "movq " c0 ", %0\n\t"                                      \
            "adcxq %0, %0\n\t"                                         \
            "adoxq %7, %0\n\t"                                         \
            "movq %0, " c0 "\n\t"                                      \
            "movq " c1 ", %0\n\t"                                      \
            "adcxq %0, %0\n\t"                                         \
            "adoxq %8, %0\n\t"                                         \
            "movq %0, " c1 "\n\t"
            FE6S_DIAG("8(%[a])", "16(%[t])", "24(%[t])")
            FE6S_DIAG("16(%[a])", "32(%[t])", "40(%[t])")
            FE6S_DIAG("24(%[a])", "48(%[t])", "56(%[t])")
            FE6S_DIAG("32(%[a])", "64(%[t])", "72(%[t])")
#undef FE6S_DIAG
            "movq 40(%[a]), %%rdx\n\t"
            "mulxq %%rdx, %7, %8\n\t"
            "movq 80(%[t]), %0\n\t"
            "adcxq %0, %0\n\t"
            "adoxq %7, %0\n\t"
            "movq %0, 80(%[t])\n\t"
            "movl $0, %k0\n\t"            /* column 11: W's is zero, only the carries */
            "adcxq %0, %0\n\t"
            "adoxq %8, %0\n\t"
            "movq %0, 88(%[t])\n\t"
            : "=&r"(x0), "=&r"(x1), "=&r"(x2), "=&r"(x3), "=&r"(x4), "=&r"(x5), "=&r"(x6), "=&r"(lo), "=&r"(hi),
              "=m"(*(uint64_t(*)[12])t)
            : [a] "r"(a), [t] "r"(t), "m"(*(const uint64_t(*)[6])a)
            : "rdx", "cc");
}

/* r = a^2 R^-1 mod p: the wide square (a^2 < p^2 < pR) and one REDC; 57 mulx. */
static __attribute__((noinline)) void fe_sqr_bls12_381_fq_mulx(uint64_t *r, const uint64_t *a)
{
    uint64_t T[12];
    fe6_sqr_wide_mulx(T, a);
    fe6_redc_mulx(r, T);
}

#undef FE6_REDUCE
#undef FE6_MULADD
#undef FE6_CONSTS
#undef FE6_P

#undef FE4_REDUCE
#undef FE4_MULADD
/* clang-format on */

/* The two paths as separate functions, entered by a tail jump: sharing one body made
 * every mulx product save and restore the six callee-saved registers the portable
 * code needs. */
#define FE_MUL4(name, FD)                                                                                \
    static __attribute__((noinline)) void name##_mulx(uint64_t *r, const uint64_t *a, const uint64_t *b) \
    {                                                                                                    \
        fe_mul4_mulx(&FD, r, a, b);                                                                      \
    }                                                                                                    \
    static __attribute__((noinline)) void name##_c(uint64_t *r, const uint64_t *a, const uint64_t *b)    \
    {                                                                                                    \
        fe_mul_inline(&FD, r, a, b);                                                                     \
    }                                                                                                    \
    void name(uint64_t *r, const uint64_t *a, const uint64_t *b)                                         \
    {                                                                                                    \
        if (__builtin_expect(fe_mulx_on, 1))                                                             \
            name##_mulx(r, a, b);                                                                        \
        else                                                                                             \
            name##_c(r, a, b);                                                                           \
    }
#else
bool fe_cpu_has_mulx(void)
{
    return false;
}
bool fe_set_mulx(bool on)
{
    (void)on;
    return false;
}
#define FE_MUL4(name, FD)                                        \
    void name(uint64_t *r, const uint64_t *a, const uint64_t *b) \
    {                                                            \
        fe_mul_inline(&FD, r, a, b);                             \
    }
#endif

/* The run-time choice of the products below that have a path of their own: MULX where
 * the CPU has mulx/adx and fe_set_mulx left it on, else PORTABLE (each a tail call). */
#if defined(__x86_64__)
#define FE_MULX_OR(MULX, PORTABLE)           \
    do {                                     \
        if (__builtin_expect(fe_mulx_on, 1)) \
            MULX;                            \
        else                                 \
            PORTABLE;                        \
    } while (0)
#else
#define FE_MULX_OR(MULX, PORTABLE) PORTABLE
#endif

FE_MUL4(fe_mul_bn254_fq, FIELD_BN254_FQ)

/* The portable Karatsuba of field.h's fe2_mul_generic is the other path (and the
 * oracle in test_field). */
void fe2_mul_bn254_fq(uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    FE_MULX_OR(fe2_mul_bn254_fq_mulx(r, a, b), fe2_mul_generic(&FIELD_BN254_FQ, r, a, b));
}
FE_MUL4(fe_mul_bn254_fr, FIELD_BN254_FR)
FE_MUL4(fe_mul_bls12_381_fr, FIELD_BLS12_381_FR)

/* BLS12-381 Fq: the same two-function split as FE_MUL4, and the square and Fq2
 * product beside it (the portable forms are field.h's: a product by itself and
 * fe2_mul_generic, the oracles in test_field). */
#if defined(__x86_64__)
static __attribute__((noinline)) void fe_mul_bls12_381_fq_mulx(uint64_t *r, const uint64_t *a,
                                                               const uint64_t *b)
{
    fe_mul6_mulx(r, a, b);
}
#endif
static __attribute__((noinline)) void fe_mul_bls12_381_fq_c(uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    fe_mul_inline(&FIELD_BLS12_381_FQ, r, a, b);
}

void fe_mul_bls12_381_fq(uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    FE_MULX_OR(fe_mul_bls12_381_fq_mulx(r, a, b), fe_mul_bls12_381_fq_c(r, a, b));
}

void fe_sqr_bls12_381_fq(uint64_t *r, const uint64_t *a)
{
    FE_MULX_OR(fe_sqr_bls12_381_fq_mulx(r, a), fe_mul_bls12_381_fq_c(r, a, a));
}

void fe2_mul_bls12_381_fq(uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    FE_MULX_OR(fe2_mul_bls12_381_fq_mulx(r, a, b), fe2_mul_generic(&FIELD_BLS12_381_FQ, r, a, b));
}

/* GMP inverts the integer A = x R to A^-1 = x^-1 R^-1 mod p; one Montgomery product
 * by R^3 (= R^2 R^2 R^-1) turns that into x^-1 R. mpz_roinit_n reads a and p where
 * they lie; the one allocation is the result's. */
void fe_inv_gcd(const field_desc *F, uint64_t *r, const uint64_t *a)
{
    const unsigned n = fe_n(F);
    uint64_t y[FE_MAX_LIMBS] = { 0 }, r3[FE_MAX_LIMBS];
    mpz_t za, zy, zp;
    mpz_init2(zy, 64 * (n + 1));
    mpz_roinit_n(za, (const mp_limb_t *)a, (mp_size_t)n);
    mpz_roinit_n(zp, (const mp_limb_t *)F->p, (mp_size_t)n);
    if (!mpz_invert(zy, za, zp)) mpz_set_ui(zy, 0); /* a = 0: 0, as fe_inv */
    mpz_export(y, NULL, -1, 8, 0, 0, zy);
    mpz_clear(zy);
    fe_mul(F, r3, F->r2, F->r2);
    fe_mul(F, r, y, r3);
}

char *fe_canon_to_dec(const field_desc *F, const uint64_t *a, char *buf, size_t len)
{
    /* Repeated division of a copy by 10^19 (the largest power of ten in a limb). */
    uint64_t t[FE_MAX_LIMBS];
    char tmp[128];
    size_t pos = sizeof tmp;
    const uint64_t chunk = 10000000000000000000ULL;
    unsigned n = fe_n(F);

    memcpy(t, a, n * sizeof *t);
    tmp[--pos] = '\0';
    for (;;) {
        fe_u128 rem = 0;
        bool nonzero = false;
        for (unsigned i = n; i-- > 0;) {
            fe_u128 cur = (rem << 64) | t[i];
            t[i] = (uint64_t)(cur / chunk);
            rem = cur % chunk;
            nonzero |= t[i] != 0;
        }
        uint64_t r = (uint64_t)rem;
        for (int d = 0; d < 19; d++) {
            tmp[--pos] = (char)('0' + r % 10);
            r /= 10;
            if (!nonzero && r == 0) break;
        }
        if (!nonzero) break;
    }
    /* strip leading zeros but keep a single "0" */
    while (tmp[pos] == '0' && tmp[pos + 1] != '\0') pos++;
    size_t out = sizeof tmp - pos;
    if (out > len) out = len;
    memcpy(buf, tmp + pos, out);
    if (len) buf[len - 1 < out - 1 ? len - 1 : out - 1] = '\0';
    return buf;
}

char *fe_mont_to_dec(const field_desc *F, const uint64_t *a, char *buf, size_t len)
{
    uint64_t c[FE_MAX_LIMBS];
    FIELD_DISPATCH(F, fe_from_mont, c, a);
    return fe_canon_to_dec(F, c, buf, len);
}

int fe_canon_from_dec(const field_desc *F, uint64_t *r, const char *s)
{
    uint64_t t[FE_MAX_LIMBS + 1] = { 0 };
    if (!s || !*s) return -EINVAL;
    for (const char *c = s; *c; c++) {
        if (*c < '0' || *c > '9') return -EINVAL;
        uint64_t carry = (uint64_t)(*c - '0');
        for (unsigned i = 0; i <= fe_n(F); i++) {
            fe_u128 x = (fe_u128)t[i] * 10 + carry;
            t[i] = (uint64_t)x;
            carry = (uint64_t)(x >> 64);
        }
        if (carry || t[fe_n(F)]) return -ERANGE;
    }
    if (!fe_is_reduced(F, t)) return -ERANGE;
    fe_copy(F, r, t);
    return 0;
}

CUZK_HD void batch_inv_impl(const field_desc *F, uint64_t *r, const uint64_t *a, size_t count, uint64_t *pre)
{
    const unsigned n = fe_n(F);
    /* pre[i] = product of the nonzero a[0..i] */
    uint64_t acc[FE_MAX_LIMBS];
    fe_set_one(F, acc);
    for (size_t i = 0; i < count; i++) {
        if (!fe_is_zero(F, a + i * n)) fe_mul(F, acc, acc, a + i * n);
        fe_copy(F, pre + i * n, acc);
    }
    uint64_t inv[FE_MAX_LIMBS], prev[FE_MAX_LIMBS], ai[FE_MAX_LIMBS];
    fe_inv(F, inv, acc);
    for (size_t i = count; i-- > 0;) {
        fe_copy(F, ai, a + i * n);
        if (fe_is_zero(F, ai)) {
            fe_set_zero(F, r + i * n);
            continue;
        }
        if (i > 0)
            fe_copy(F, prev, pre + (i - 1) * n);
        else
            fe_set_one(F, prev);
        fe_mul(F, r + i * n, inv, prev); /* 1/a_i = inv(prefix_i) * prefix_{i-1} */
        fe_mul(F, inv, inv, ai);         /* inv(prefix_{i-1}) */
    }
}

int fe_batch_inv(const field_desc *F, uint64_t *r, const uint64_t *a, size_t count, uint64_t *scratch)
{
    uint64_t *pre = scratch;
    if (count == 0) return 0;
    if (!pre) {
        pre = malloc(count * fe_n(F) * sizeof *pre);
        if (!pre) return -ENOMEM;
    }
    FIELD_DISPATCH(F, batch_inv_impl, r, a, count, pre);
    if (!scratch) free(pre);
    return 0;
}

const field_desc *field_by_modulus(const uint8_t *bytes, size_t nbytes)
{
    const field_desc *const all[] = { &FIELD_BN254_FQ, &FIELD_BN254_FR, &FIELD_BLS12_381_FQ,
                                      &FIELD_BLS12_381_FR };
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) {
        const field_desc *F = all[k];
        if (nbytes != F->n * 8) continue;
        uint64_t p[FE_MAX_LIMBS];
        memcpy(p, bytes, nbytes); /* little-endian host assumed (x86-64, aarch64) */
        if (memcmp(p, F->p, nbytes) == 0) return F;
    }
    return NULL;
}
