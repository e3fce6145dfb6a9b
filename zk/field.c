/* field.c — field constants and the out-of-line field helpers (decimal I/O, batch
 * inversion, lookup by modulus). The arithmetic itself is inline in field.h. */
#include "cuzk/field.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- Montgomery products: portable C and x86-64 mulx/adcx/adox ---------------
 *
 * fe_mul_<field> is what fe_mul calls. On x86-64 CPUs with BMI2 and ADX (checked once
 * at start-up, fe_cpu_has_mulx) the 4-limb fields take fe_mul4_mulx below; otherwise,
 * and always for the 6-limb field so far, the portable no-carry CIOS of field.h.
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

bool fe_cpu_has_mulx(void) { return fe_mulx_cpu; }

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
 * Operands: %0..%3 t0..t3, %4 t4, %5 lo scratch, %6 hi scratch, rdx = multiplier. */
#define FE4_REDUCE                                                     \
    "movq %0, %%rdx\n\t"                                               \
    "imulq %[inv], %%rdx\n\t"                                          \
    "xorl %k5, %k5\n\t"                                                \
    "mulxq %[p0], %5, %6\n\t"                                          \
    "adcxq %0, %5\n\t"    /* t0 + lo(m p0) = 0 mod 2^64: only CF */   \
    "movq %6, %0\n\t"                                                 \
    "adcxq %1, %0\n\t"                                                \
    "mulxq %[p1], %5, %1\n\t"                                         \
    "adoxq %5, %0\n\t"                                                \
    "adcxq %2, %1\n\t"                                                \
    "mulxq %[p2], %5, %2\n\t"                                         \
    "adoxq %5, %1\n\t"                                                \
    "adcxq %3, %2\n\t"                                                \
    "mulxq %[p3], %5, %3\n\t"                                         \
    "adoxq %5, %2\n\t"                                                \
    "movl $0, %k5\n\t"                                                \
    "adcxq %4, %3\n\t"                                                \
    "adoxq %5, %3\n\t"

#define FE4_MULADD(bi)                                                 \
    "movq " bi ", %%rdx\n\t"                                           \
    "xorl %k5, %k5\n\t"                                                \
    "mulxq 0(%[a]), %5, %6\n\t"                                       \
    "adoxq %5, %0\n\t"                                                \
    "adcxq %6, %1\n\t"                                                \
    "mulxq 8(%[a]), %5, %6\n\t"                                       \
    "adoxq %5, %1\n\t"                                                \
    "adcxq %6, %2\n\t"                                                \
    "mulxq 16(%[a]), %5, %6\n\t"                                      \
    "adoxq %5, %2\n\t"                                                \
    "adcxq %6, %3\n\t"                                                \
    "mulxq 24(%[a]), %5, %4\n\t"                                      \
    "adoxq %5, %3\n\t"                                                \
    "movl $0, %k5\n\t"                                                \
    "adcxq %5, %4\n\t"                                                \
    "adoxq %5, %4\n\t"

static inline __attribute__((always_inline)) void fe_mul4_mulx(const field_desc *F, uint64_t *r, const uint64_t *a,
                                                               const uint64_t *b)
{
    uint64_t t0, t1, t2, t3, t4, lo, hi;
    __asm__("movq 0(%[b]), %%rdx\n\t"
            "mulxq 0(%[a]), %0, %1\n\t" /* step 0: t = a b_0, one chain */
            "xorl %k5, %k5\n\t"
            "mulxq 8(%[a]), %5, %2\n\t"
            "adoxq %5, %1\n\t"
            "mulxq 16(%[a]), %5, %3\n\t"
            "adoxq %5, %2\n\t"
            "mulxq 24(%[a]), %5, %4\n\t"
            "adoxq %5, %3\n\t"
            "movl $0, %k5\n\t"
            "adoxq %5, %4\n\t"
            FE4_REDUCE
            FE4_MULADD("8(%[b])")
            FE4_REDUCE
            FE4_MULADD("16(%[b])")
            FE4_REDUCE
            FE4_MULADD("24(%[b])")
            FE4_REDUCE
            : "=&r"(t0), "=&r"(t1), "=&r"(t2), "=&r"(t3), "=&r"(t4), "=&r"(lo), "=&r"(hi)
            : [a] "r"(a), [b] "r"(b), "m"(*(const uint64_t(*)[4])a), "m"(*(const uint64_t(*)[4])b),
              [p0] "m"(F->p[0]), [p1] "m"(F->p[1]), [p2] "m"(F->p[2]), [p3] "m"(F->p[3]), [inv] "m"(F->inv)
            : "rdx", "cc");
    uint64_t t[4] = {t0, t1, t2, t3};
    fe_reduce_once(F, r, t, 0);
}
#undef FE4_REDUCE
#undef FE4_MULADD

/* The two paths as separate functions, entered by a tail jump: sharing one body made
 * every mulx product save and restore the six callee-saved registers the portable
 * code needs. */
#define FE_MUL4(name, FD)                                                                 \
    static __attribute__((noinline)) void name##_mulx(uint64_t *r, const uint64_t *a,     \
                                                      const uint64_t *b)                  \
    {                                                                                     \
        fe_mul4_mulx(&FD, r, a, b);                                                       \
    }                                                                                     \
    static __attribute__((noinline)) void name##_c(uint64_t *r, const uint64_t *a,        \
                                                   const uint64_t *b)                     \
    {                                                                                     \
        fe_mul_inline(&FD, r, a, b);                                                      \
    }                                                                                     \
    void name(uint64_t *r, const uint64_t *a, const uint64_t *b)                          \
    {                                                                                     \
        if (__builtin_expect(fe_mulx_on, 1)) name##_mulx(r, a, b);                        \
        else name##_c(r, a, b);                                                           \
    }
#else
bool fe_cpu_has_mulx(void) { return false; }
bool fe_set_mulx(bool on) { (void)on; return false; }
#define FE_MUL4(name, FD)                                                     \
    void name(uint64_t *r, const uint64_t *a, const uint64_t *b) { fe_mul_inline(&FD, r, a, b); }
#endif

FE_MUL4(fe_mul_bn254_fq, FIELD_BN254_FQ)
FE_MUL4(fe_mul_bn254_fr, FIELD_BN254_FR)
FE_MUL4(fe_mul_bls12_381_fr, FIELD_BLS12_381_FR)
void fe_mul_bls12_381_fq(uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    fe_mul_inline(&FIELD_BLS12_381_FQ, r, a, b);
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
    uint64_t t[FE_MAX_LIMBS + 1] = {0};
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
        if (i > 0) fe_copy(F, prev, pre + (i - 1) * n);
        else fe_set_one(F, prev);
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
    const field_desc *const all[] = {&FIELD_BN254_FQ, &FIELD_BN254_FR, &FIELD_BLS12_381_FQ,
                                            &FIELD_BLS12_381_FR};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) {
        const field_desc *F = all[k];
        if (nbytes != F->n * 8) continue;
        uint64_t p[FE_MAX_LIMBS];
        memcpy(p, bytes, nbytes); /* little-endian host assumed (x86-64, aarch64) */
        if (memcmp(p, F->p, nbytes) == 0) return F;
    }
    return NULL;
}
