/* r1cs.c — open a circom .r1cs and check a witness against every constraint. */
#include "zk/r1cs.h"

#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "zk/wtns.h"

enum { R1CS_MAX_VERSION = 1 };

static const char *const r1cs_names[] = { "header", "constraints" };
static const struct fr_file r1cs_kind = { "r1cs", R1CS_MAX_VERSION, r1cs_names, 28, "circuit" };

void r1cs_close(r1cs *r)
{
    if (r) binfile_close_reader(r, sizeof *r, &r->bf);
}

/* Walks one linear combination at *off (bounds and content checked); returns 0 or
 * -CUZK_E_FORMAT. */
static int scan_lc(const r1cs *r, uint64_t *off, uint32_t ci, char lc, char *err, size_t errlen)
{
    const uint8_t *p = r->constraints;
    uint64_t size = r->constraints_size, term = 4 + (uint64_t)r->n8;
    if (size - *off < 4) goto trunc;
    uint32_t nterms = binfile_rd32(p + *off);
    *off += 4;
    if ((size - *off) / term < nterms) goto trunc;
    for (uint32_t t = 0; t < nterms; t++, *off += term) {
        uint32_t wire = binfile_rd32(p + *off);
        uint64_t v[FE_MAX_LIMBS] = { 0 };
        memcpy(v, p + *off + 4, r->n8);
        if (wire >= r->nwires)
            return binfile_err(err, errlen, CUZK_E_FORMAT,
                               "%s: constraint %u (%c) refers to wire %u, but the circuit has %u wires",
                               r->bf.path, ci, lc, wire, r->nwires);
        if (!fe_is_reduced(r->Fr, v))
            return binfile_err(err, errlen, CUZK_E_FORMAT,
                               "%s: constraint %u (%c) has a coefficient not below the prime", r->bf.path, ci,
                               lc);
    }
    return 0;
trunc:
    return binfile_err(err, errlen, CUZK_E_FORMAT,
                       "%s: constraint %u (%c) runs past the end of section 2 (%llu bytes)", r->bf.path, ci,
                       lc, (unsigned long long)size);
}

int r1cs_open(r1cs *r, const char *path, char *err, size_t errlen)
{
    const uint8_t *f;
    int rc;

    if ((rc = wtns_open_fr_file(r, sizeof *r, &r->bf, path, &r1cs_kind, &r->n8, &r->Fr, &f, err, errlen)))
        goto fail;
    r->nwires = binfile_rd32(f);
    r->npubout = binfile_rd32(f + 4);
    r->npubin = binfile_rd32(f + 8);
    r->nprvin = binfile_rd32(f + 12);
    memcpy(&r->nlabels, f + 16, 8);
    r->nconstraints = binfile_rd32(f + 24);
    if (r->nwires == 0 || (uint64_t)r->npubout + r->npubin + r->nprvin + 1 > r->nwires) {
        rc = binfile_err(err, errlen, CUZK_E_FORMAT,
                         "%s: %u outputs + %u public + %u private inputs + 1 exceed %u wires", path,
                         r->npubout, r->npubin, r->nprvin, r->nwires);
        goto fail;
    }

    const struct binfile_section *s2 = binfile_section(&r->bf, 2);
    r->constraints = binfile_payload(&r->bf, s2);
    r->constraints_size = s2->size;
    uint64_t off = 0;
    for (uint32_t c = 0; c < r->nconstraints; c++)
        for (int k = 0; k < 3; k++)
            if ((rc = scan_lc(r, &off, c, "ABC"[k], err, errlen))) goto fail;
    if (off != r->constraints_size) {
        rc =
            binfile_err(err, errlen, CUZK_E_FORMAT,
                        "section 2 (constraints) of %s is %llu bytes, but its %u constraints take %llu", path,
                        (unsigned long long)r->constraints_size, r->nconstraints, (unsigned long long)off);
        goto fail;
    }
    return 0;
fail:
    r1cs_close(r);
    return rc;
}

/* out = <lc, w> as a canonical integer; *off advances past the combination.
 * Per term: to_mont(coef) = coef*R, then mont_mul(coef*R, w) = coef*w, canonical, so the
 * witness needs no converted copy. */
static void eval_lc(const r1cs *r, const uint8_t *values, uint64_t *off, uint64_t *out)
{
    const field_desc *F = r->Fr;
    const uint8_t *p = r->constraints + *off;
    uint32_t nterms = binfile_rd32(p);
    p += 4;
    fe_set_zero(F, out);
    for (uint32_t t = 0; t < nterms; t++, p += 4 + r->n8) {
        uint64_t c[FE_MAX_LIMBS] = { 0 }, w[FE_MAX_LIMBS] = { 0 };
        memcpy(c, p + 4, r->n8);
        memcpy(w, values + (uint64_t)binfile_rd32(p) * r->n8, r->n8);
        fe_to_mont(F, c, c);
        fe_mul(F, c, c, w);
        fe_add(F, out, out, c);
    }
    *off += 4 + (uint64_t)nterms * (4 + r->n8);
}

int r1cs_check_witness(const r1cs *r, const uint8_t *values, uint32_t nwitness, uint32_t *bad, char *err,
                       size_t errlen)
{
    const field_desc *F = r->Fr;
    if (nwitness != r->nwires)
        return binfile_err(err, errlen, CUZK_E_MISMATCH,
                           "witness has %u values, %s has %u wires: was it computed for another circuit?",
                           nwitness, r->bf.path, r->nwires);
    for (uint32_t i = 0; i < nwitness; i++) {
        uint64_t v[FE_MAX_LIMBS] = { 0 };
        memcpy(v, values + (uint64_t)i * r->n8, r->n8);
        if (!fe_is_reduced(F, v))
            return binfile_err(err, errlen, CUZK_E_FORMAT, "witness value %u is not below the prime of %s", i,
                               r->bf.path);
    }
    uint64_t off = 0;
    for (uint32_t c = 0; c < r->nconstraints; c++) {
        uint64_t a[FE_MAX_LIMBS], b[FE_MAX_LIMBS], cc[FE_MAX_LIMBS], one[FE_MAX_LIMBS] = { 1 };
        eval_lc(r, values, &off, a);
        eval_lc(r, values, &off, b);
        eval_lc(r, values, &off, cc);
        /* canonical a, b, c: mont_mul(a, b) = ab/R and mont_mul(c, 1) = c/R */
        fe_mul(F, a, a, b);
        fe_mul(F, cc, cc, one);
        if (!fe_eq(F, a, cc)) {
            if (bad) *bad = c;
            return binfile_err(err, errlen, CUZK_E_UNSATISFIED,
                               "witness does not satisfy constraint %u of %s", c, r->bf.path);
        }
    }
    return 0;
}

int r1cs_check_wtns(const r1cs *r, const wtns *w, uint32_t *bad, char *err, size_t errlen)
{
    if (w->Fr->id != r->Fr->id || w->n8 != r->n8)
        return binfile_err(err, errlen, CUZK_E_MISMATCH, "witness %s is over %s but %s is over %s",
                           w->bf.path, w->Fr->name, r->bf.path, r->Fr->name);
    return r1cs_check_witness(r, w->values, w->nwitness, bad, err, errlen);
}
