/* fingerprint.c — a circuit's fingerprint from its zkey or its r1cs (fingerprint.h). */
#include "zk/fingerprint.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "zk/binfile.h"
#include "base/error.h"
#include "zk/field.h"
#include "zk/r1cs.h"
#include "zk/zkey.h"

static const char fp_tag[] = "cuzk-circuit-fp-v1";

/* Entries go to the hash in chunks: one EVP call per 64 KiB, not per 44 bytes. */
enum { FP_CHUNK = 1 << 16 };

struct fp_ctx {
    EVP_MD_CTX *md;
    uint8_t buf[FP_CHUNK];
    size_t used;
    uint64_t count;
    unsigned n8;
    bool bad;
};

static void put(struct fp_ctx *h, const void *p, size_t n)
{
    if (h->used + n > sizeof h->buf) {
        h->bad |= EVP_DigestUpdate(h->md, h->buf, h->used) != 1;
        h->used = 0;
    }
    memcpy(h->buf + h->used, p, n);
    h->used += n;
}

static void put32(struct fp_ctx *h, uint32_t v)
{
    put(h, &v, 4); /* x86-64: the host order is the encoding's (LE) */
}

static int fp_begin(struct fp_ctx *h, const field_desc *Fr, unsigned n8, uint32_t nvars, uint32_t npublic,
                    uint32_t domain, char *err, size_t errlen)
{
    memset(h, 0, sizeof *h);
    h->n8 = n8;
    if (!(h->md = EVP_MD_CTX_new()) || EVP_DigestInit_ex(h->md, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(h->md);
        h->md = NULL;
        return binfile_err(err, errlen, CUZK_E_INTERNAL,
                           "circuit fingerprint: cannot start SHA-256 (libcrypto)");
    }
    put(h, fp_tag, sizeof fp_tag - 1);
    put32(h, n8);
    put(h, Fr->p, n8);
    put32(h, nvars);
    put32(h, npublic);
    put32(h, domain);
    return 0;
}

/* One entry; value is n8 bytes in the zkey's encoding. Zeros are not hashed (an entry
 * with a zero value changes no product). */
static void fp_entry(struct fp_ctx *h, uint32_t c, uint32_t m, uint32_t s, const void *value)
{
    static const uint8_t zero[64];
    if (memcmp(value, zero, h->n8) == 0) return;
    put32(h, c);
    put32(h, m);
    put32(h, s);
    put(h, value, h->n8);
    h->count++;
}

static int fp_end(struct fp_ctx *h, uint8_t out[FP_BYTES], char *err, size_t errlen)
{
    unsigned len = 0;
    put(h, &h->count, 8);
    h->bad |= EVP_DigestUpdate(h->md, h->buf, h->used) != 1;
    h->bad |= EVP_DigestFinal_ex(h->md, out, &len) != 1 || len != FP_BYTES;
    EVP_MD_CTX_free(h->md);
    h->md = NULL;
    if (h->bad)
        return binfile_err(err, errlen, CUZK_E_INTERNAL, "circuit fingerprint: SHA-256 failed (libcrypto)");
    return 0;
}

static void fp_abort(struct fp_ctx *h)
{
    EVP_MD_CTX_free(h->md);
    h->md = NULL;
}

void fp_hex(const uint8_t fp[FP_BYTES], char out[FP_HEX])
{
    static const char d[] = "0123456789abcdef";
    for (int i = 0; i < FP_BYTES; i++) {
        out[2 * i] = d[fp[i] >> 4];
        out[2 * i + 1] = d[fp[i] & 15];
    }
    out[2 * FP_BYTES] = '\0';
}

/* ---- from a zkey ---------------------------------------------------------------- */

/* (constraint, matrix, signal) as one ordered 64-bit key: constraint < domainSize <=
 * 2^31 (zkey_open: log2 below the 2-adicity, 28 or 32), matrix in {0,1}, signal < 2^32. */
static uint64_t zkey_key(const uint8_t *e)
{
    uint32_t m, c, s;
    memcpy(&m, e, 4);
    memcpy(&c, e + 4, 4);
    memcpy(&s, e + 8, 4);
    return (uint64_t)c << 33 | (uint64_t)m << 32 | s;
}

struct keyed {
    uint64_t key, index;
};

static int cmp_keyed(const void *a, const void *b)
{
    const struct keyed *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

static void key_split(uint64_t k, uint32_t *c, uint32_t *m, uint32_t *s)
{
    *c = (uint32_t)(k >> 33);
    *m = (uint32_t)(k >> 32) & 1;
    *s = (uint32_t)k;
}

/* Entries in any order: sort an index by key, sum runs of one key (the prover sums
 * them too: spec §3.3, "the same (m, c, s) could repeat"). */
static int zkey_sorted(struct fp_ctx *h, const zkey *z, char *err, size_t errlen)
{
    const uint64_t esz = 12 + (uint64_t)z->n8r;
    struct keyed *ix = malloc((z->ncoefs ? z->ncoefs : 1) * sizeof *ix);
    if (!ix)
        return binfile_err(err, errlen, CUZK_E_INTERNAL, "circuit fingerprint of %s: out of memory",
                           z->bf.path);
    for (uint64_t i = 0; i < z->ncoefs; i++) ix[i] = (struct keyed){ zkey_key(z->coefs + i * esz), i };
    qsort(ix, z->ncoefs, sizeof *ix, cmp_keyed);
    for (uint64_t i = 0; i < z->ncoefs;) {
        uint64_t sum[FE_MAX_LIMBS] = { 0 }, v[FE_MAX_LIMBS];
        uint64_t k = ix[i].key;
        for (; i < z->ncoefs && ix[i].key == k; i++) {
            memset(v, 0, sizeof v);
            memcpy(v, z->coefs + ix[i].index * esz + 12, z->n8r);
            fe_add(z->Fr, sum, sum, v); /* (a + b)·R² = a·R² + b·R²: the encoding is linear */
        }
        uint32_t c, m, s;
        key_split(k, &c, &m, &s);
        fp_entry(h, c, m, s, sum);
    }
    free(ix);
    return 0;
}

int fp_of_zkey(const zkey *z, uint8_t out[FP_BYTES], char *err, size_t errlen)
{
    struct fp_ctx *h;
    int rc;

    if (z->fp_done) {
        memcpy(out, z->fp, FP_BYTES);
        return 0;
    }
    if (!(h = malloc(sizeof *h)))
        return binfile_err(err, errlen, CUZK_E_INTERNAL, "circuit fingerprint of %s: out of memory",
                           z->bf.path);
    if ((rc = fp_begin(h, z->Fr, z->n8r, z->nvars, z->npublic, z->domain_size, err, errlen))) goto out;
    /* One pass while the keys increase strictly (snarkjs's order); the first entry out
     * of order or repeated restarts the hash on the sorted path. */
    const uint64_t esz = 12 + (uint64_t)z->n8r;
    uint64_t prev = 0;
    bool ordered = true;
    for (uint64_t i = 0; i < z->ncoefs; i++) {
        const uint8_t *e = z->coefs + i * esz;
        uint64_t k = zkey_key(e);
        if (i && k <= prev) {
            ordered = false;
            break;
        }
        prev = k;
        uint32_t c, m, s;
        key_split(k, &c, &m, &s);
        fp_entry(h, c, m, s, e + 12);
    }
    if (!ordered) {
        fp_abort(h);
        if ((rc = fp_begin(h, z->Fr, z->n8r, z->nvars, z->npublic, z->domain_size, err, errlen))) goto out;
        if ((rc = zkey_sorted(h, z, err, errlen))) {
            fp_abort(h);
            goto out;
        }
    }
    if ((rc = fp_end(h, out, err, errlen))) goto out;
    /* the cache: fp_of_zkey's callers hold the zkey as const, and this is no change of
     * what the zkey is (z is never a const object: zkey_open fills it) */
    zkey *zw = (zkey *)z;
    memcpy(zw->fp, out, FP_BYTES);
    zw->fp_done = 1;
out:
    free(h);
    return rc;
}

/* ---- from an r1cs --------------------------------------------------------------- */

struct term {
    uint32_t signal;
    uint64_t v[FE_MAX_LIMBS]; /* coef·R² mod r, canonical */
};

static int cmp_term(const void *a, const void *b)
{
    const struct term *x = a, *y = b;
    return x->signal < y->signal ? -1 : x->signal > y->signal;
}

/* Hashes one linear combination at *off as row c of matrix m, and steps past it. rr3
 * = R³ mod r, so a Montgomery product by it turns a coefficient into coef·R² (the
 * zkey's encoding). *terms grows to the longest row. */
static int r1cs_lc(struct fp_ctx *h, const r1cs *r, uint64_t *off, uint32_t c, uint32_t m,
                   const uint64_t *rr3, struct term **terms, uint32_t *cap, char *err, size_t errlen)
{
    const uint8_t *p = r->constraints + *off;
    uint32_t n;
    memcpy(&n, p, 4);
    p += 4;
    *off += 4 + (uint64_t)n * (4 + r->n8);
    if (m > 1) return 0; /* C: not in the zkey */
    if (n > *cap) {
        struct term *t = realloc(*terms, (size_t)n * sizeof *t);
        if (!t)
            return binfile_err(err, errlen, CUZK_E_INTERNAL, "circuit fingerprint of %s: out of memory",
                               r->bf.path);
        *terms = t;
        *cap = n;
    }
    struct term *t = *terms;
    bool sorted = true;
    for (uint32_t i = 0; i < n; i++, p += 4 + r->n8) {
        uint64_t coef[FE_MAX_LIMBS] = { 0 };
        memcpy(&t[i].signal, p, 4);
        memcpy(coef, p + 4, r->n8);
        memset(t[i].v, 0, sizeof t[i].v);
        fe_mul(r->Fr, t[i].v, coef, rr3);
        sorted &= i == 0 || t[i - 1].signal < t[i].signal;
    }
    if (!sorted) qsort(t, n, sizeof *t, cmp_term); /* circom writes rows sorted; others may not */
    for (uint32_t i = 0; i < n;) {
        uint64_t sum[FE_MAX_LIMBS] = { 0 };
        uint32_t s = t[i].signal;
        for (; i < n && t[i].signal == s; i++) fe_add(r->Fr, sum, sum, t[i].v);
        fp_entry(h, c, m, s, sum);
    }
    return 0;
}

int fp_of_r1cs(const r1cs *r, uint8_t out[FP_BYTES], char *err, size_t errlen)
{
    const field_desc *Fr = r->Fr;
    uint32_t npublic = r->npubout + r->npubin, domain = 1, cap = 0;
    uint64_t rows = (uint64_t)r->nconstraints + npublic, off = 0, rr3[FE_MAX_LIMBS] = { 0 };
    uint64_t one[FE_MAX_LIMBS] = { 0 };
    struct term *terms = NULL;
    struct fp_ctx *h;
    int rc;

    /* snarkjs: 2^(floor(log2(nConstraints + nPublic)) + 1) */
    while (domain <= rows) {
        if (domain >= 1u << 31)
            return binfile_err(err, errlen, CUZK_E_UNSUPPORTED, "%s: %llu rows fit no domain of 2^31 or less",
                               r->bf.path, (unsigned long long)rows);
        domain <<= 1;
    }
    fe_mul(Fr, rr3, Fr->r2, Fr->r2); /* R²·R²/R = R³ */
    if (!(h = malloc(sizeof *h)))
        return binfile_err(err, errlen, CUZK_E_INTERNAL, "circuit fingerprint of %s: out of memory",
                           r->bf.path);
    if ((rc = fp_begin(h, Fr, r->n8, r->nwires, npublic, domain, err, errlen))) goto out;
    for (uint32_t c = 0; c < r->nconstraints && !rc; c++)
        for (uint32_t m = 0; m < 3 && !rc; m++)
            rc = r1cs_lc(h, r, &off, c, m, rr3, &terms, &cap, err, errlen);
    if (rc) {
        fp_abort(h);
        goto out;
    }
    /* the input rows: coefficient 1, stored as 1·R² */
    memcpy(one, Fr->r2, sizeof one);
    for (uint32_t i = 0; i <= npublic; i++) fp_entry(h, r->nconstraints + i, 0, i, one);
    rc = fp_end(h, out, err, errlen);
out:
    free(terms);
    free(h);
    return rc;
}
