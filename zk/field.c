/* field.c — field constants and the out-of-line field helpers (decimal I/O, batch
 * inversion, lookup by modulus). The arithmetic itself is inline in field.h. */
#include "cuzk/field.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void fe_mul_bn254_fq(uint64_t *r, const uint64_t *a, const uint64_t *b) { fe_mul_inline(&FIELD_BN254_FQ, r, a, b); }
void fe_mul_bn254_fr(uint64_t *r, const uint64_t *a, const uint64_t *b) { fe_mul_inline(&FIELD_BN254_FR, r, a, b); }
void fe_mul_bls12_381_fq(uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    fe_mul_inline(&FIELD_BLS12_381_FQ, r, a, b);
}
void fe_mul_bls12_381_fr(uint64_t *r, const uint64_t *a, const uint64_t *b)
{
    fe_mul_inline(&FIELD_BLS12_381_FR, r, a, b);
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
