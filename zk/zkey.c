/* zkey.c — open and validate a snarkjs Groth16 .zkey (spec §3, checks of §4.0). */
#include "zk/zkey.h"

#include <stdio.h>
#include <string.h>

#include "base/error.h"

enum { ZKEY_MAX_VERSION = 2 }; /* snarkjs prove accepts <= 2; writers emit 1 (spec §1) */

static const uint32_t zkey_ids[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
static const char *const zkey_names[] = {
    "header", "groth16 header", "IC", "coefficients", "A", "B1", "B2", "C", "H"
};

/* 2-adicity of the scalar field: the largest k with 2^k | r-1 (spec §7). */
static unsigned fr_two_adicity(const field_desc *Fr)
{
    return Fr->id == FIELD_ID_BN254_FR ? 28 : 32;
}

static const char *curve_name(const field_desc *Fr)
{
    return Fr->id == FIELD_ID_BN254_FR ? "BN254" : "BLS12-381";
}

void zkey_close(zkey *z)
{
    if (z) binfile_close_reader(z, sizeof *z, &z->bf);
}

void zkey_coef(const zkey *z, uint64_t i, uint32_t *matrix, uint32_t *constraint, uint32_t *signal,
               uint64_t *value)
{
    const uint8_t *e = z->coefs + i * (12 + (uint64_t)z->n8r);
    memcpy(matrix, e, 4);
    memcpy(constraint, e + 4, 4);
    memcpy(signal, e + 8, 4);
    memcpy(value, e + 12, z->n8r);
}

/* Section `id` must be exactly `expect` bytes; `what` says what it holds. */
static int check_size(const zkey *z, uint32_t id, uint64_t expect, const char *what, char *err, size_t errlen)
{
    const struct binfile_section *s = binfile_section(&z->bf, id);
    if (s->size == expect) return 0;
    return binfile_err(err, errlen, CUZK_E_FORMAT,
                       "section %u (%s) of %s is %llu bytes, expected %llu for %s", id, zkey_names[id - 1],
                       z->bf.path, (unsigned long long)s->size, (unsigned long long)expect, what);
}

static int parse_header(zkey *z, char *err, size_t errlen)
{
    const binfile *b = &z->bf;
    const struct binfile_section *s1 = binfile_section(b, 1), *s2 = binfile_section(b, 2);
    const uint8_t *p;
    uint64_t sz, need;

    if (s1->size != 4)
        return binfile_err(err, errlen, CUZK_E_FORMAT, "section 1 (header) of %s is %llu bytes, expected 4",
                           b->path, (unsigned long long)s1->size);
    uint32_t proto = binfile_rd32(binfile_payload(b, s1));
    if (proto == 2 || proto == 10)
        return binfile_err(err, errlen, CUZK_E_UNSUPPORTED,
                           "%s is a %s proving key; cuzk proves Groth16 only (run snarkjs groth16 setup)",
                           b->path, proto == 2 ? "PLONK" : "FFLONK");
    if (proto != 1)
        return binfile_err(err, errlen, CUZK_E_UNSUPPORTED,
                           "%s has unknown protocol id %u; cuzk proves Groth16 (id 1) only", b->path, proto);

    /* Section 2, read with a bound check before each variable-length field. */
    p = binfile_payload(b, s2);
    sz = s2->size;
    if (sz < 4) goto short2;
    z->n8q = binfile_rd32(p);
    need = 4 + (uint64_t)z->n8q + 4;
    if (sz < need) goto short2;
    z->n8r = binfile_rd32(p + 4 + z->n8q);
    need += (uint64_t)z->n8r + 12;
    if (sz < need) goto short2;
    const uint8_t *q = p + 4, *r = p + 8 + z->n8q, *rest = r + z->n8r;

    z->Fq = field_by_modulus(q, z->n8q);
    z->Fr = field_by_modulus(r, z->n8r);
    if (z->Fq) {
        /* curve_g1_for wants (Fq, Fr) of one curve; a q that is some curve's r fails here too */
        z->g1 = z->Fr ? curve_g1_for(z->Fq, z->Fr) : NULL;
        z->g2 = z->Fr ? curve_g2_for(z->Fq, z->Fr) : NULL;
    }
    if (!z->g1 || !z->g2) {
        char qh[2 * 64 + 8], rh[2 * 64 + 8];
        binfile_le_hex(q, z->n8q < 64 ? z->n8q : 64, qh, sizeof qh);
        binfile_le_hex(r, z->n8r < 64 ? z->n8r : 64, rh, sizeof rh);
        if (!z->Fq || z->Fq->id == FIELD_ID_BN254_FR || z->Fq->id == FIELD_ID_BLS12_381_FR)
            return binfile_err(err, errlen, CUZK_E_UNSUPPORTED,
                               "%s: curve with q=%s is not supported (BN254 and BLS12-381 are)", b->path, qh);
        return binfile_err(err, errlen, CUZK_E_UNSUPPORTED,
                           "%s: curve with q=%s and r=%s is not supported (BN254 and BLS12-381 are)", b->path,
                           qh, rh);
    }
    z->nvars = binfile_rd32(rest);
    z->npublic = binfile_rd32(rest + 4);
    z->domain_size = binfile_rd32(rest + 8);

    uint64_t sg1 = 2 * (uint64_t)z->n8q, sg2 = 4 * (uint64_t)z->n8q;
    int rc = check_size(z, 2, need + 3 * sg1 + 3 * sg2, curve_name(z->Fr), err, errlen);
    if (rc) return rc;

    if (z->domain_size == 0 || (z->domain_size & (z->domain_size - 1)))
        return binfile_err(err, errlen, CUZK_E_FORMAT, "%s: domain size %u is not a power of two", b->path,
                           z->domain_size);
    z->lg_domain = (uint32_t)__builtin_ctz(z->domain_size);
    if (z->lg_domain >= fr_two_adicity(z->Fr))
        return binfile_err(
            err, errlen, CUZK_E_UNSUPPORTED,
            "%s: domain size 2^%u reaches the %s 2-adicity 2^%u, a case snarkjs handles with a "
            "different coset and cuzk does not",
            b->path, z->lg_domain, curve_name(z->Fr), fr_two_adicity(z->Fr));
    if ((uint64_t)z->npublic + 1 > z->nvars)
        return binfile_err(err, errlen, CUZK_E_FORMAT, "%s: %u public signals + 1 exceed the %u signals",
                           b->path, z->npublic, z->nvars);

    /* header points: alpha1, beta1 (G1), beta2, gamma2 (G2), delta1 (G1), delta2 (G2) */
    const uint8_t *pt = rest + 12;
    struct {
        uint64_t *dst;
        const curve_group *g;
        const char *name;
    } hp[] = {
        { z->alpha1, z->g1, "alpha1" }, { z->beta1, z->g1, "beta1" },   { z->beta2, z->g2, "beta2" },
        { z->gamma2, z->g2, "gamma2" }, { z->delta1, z->g1, "delta1" }, { z->delta2, z->g2, "delta2" },
    };
    for (unsigned i = 0; i < sizeof hp / sizeof hp[0]; i++) {
        uint64_t len = hp[i].g->deg == 1 ? sg1 : sg2;
        memcpy(hp[i].dst, pt, len);
        pt += len;
        if (!ec_aff_is_on_curve(hp[i].g, hp[i].dst))
            return binfile_err(
                err, errlen, CUZK_E_FORMAT,
                "%s: header point %s is not on %s (or a coordinate is not below q): the file is "
                "corrupt",
                b->path, hp[i].name, hp[i].g->name);
    }
    return 0;

short2:
    return binfile_err(err, errlen, CUZK_E_FORMAT,
                       "section 2 (groth16 header) of %s is %llu bytes, too short for its own field sizes",
                       b->path, (unsigned long long)sz);
}

static int check_sections(zkey *z, char *err, size_t errlen)
{
    const binfile *b = &z->bf;
    uint64_t sg1 = 2 * (uint64_t)z->n8q, sg2 = 4 * (uint64_t)z->n8q;
    uint64_t npriv = (uint64_t)z->nvars - z->npublic - 1;
    char what[96];
    int rc;

    snprintf(what, sizeof what, "%u public signals", z->npublic);
    if ((rc = check_size(z, 3, ((uint64_t)z->npublic + 1) * sg1, what, err, errlen))) return rc;

    const struct binfile_section *s4 = binfile_section(b, 4);
    if (s4->size < 4)
        return binfile_err(err, errlen, CUZK_E_FORMAT,
                           "section 4 (coefficients) of %s is %llu bytes, too short", b->path,
                           (unsigned long long)s4->size);
    z->ncoefs = binfile_rd32(binfile_payload(b, s4));
    snprintf(what, sizeof what, "%llu coefficients", (unsigned long long)z->ncoefs);
    if ((rc = check_size(z, 4, 4 + z->ncoefs * (12 + (uint64_t)z->n8r), what, err, errlen))) return rc;

    snprintf(what, sizeof what, "%u signals", z->nvars);
    if ((rc = check_size(z, 5, z->nvars * sg1, what, err, errlen))) return rc;
    if ((rc = check_size(z, 6, z->nvars * sg1, what, err, errlen))) return rc;
    if ((rc = check_size(z, 7, z->nvars * sg2, what, err, errlen))) return rc;
    snprintf(what, sizeof what, "%llu private signals", (unsigned long long)npriv);
    if ((rc = check_size(z, 8, npriv * sg1, what, err, errlen))) return rc;
    snprintf(what, sizeof what, "domain size %u", z->domain_size);
    if ((rc = check_size(z, 9, (uint64_t)z->domain_size * sg1, what, err, errlen))) return rc;

    z->coefs = binfile_payload(b, s4) + 4;
    z->ic = binfile_payload(b, binfile_section(b, 3));
    z->a = binfile_payload(b, binfile_section(b, 5));
    z->b1 = binfile_payload(b, binfile_section(b, 6));
    z->b2 = binfile_payload(b, binfile_section(b, 7));
    z->c = binfile_payload(b, binfile_section(b, 8));
    z->h = binfile_payload(b, binfile_section(b, 9));
    return 0;
}

/* One pass over section 4: every entry must index inside the QAP and hold a reduced value. */
static int check_coefs(const zkey *z, char *err, size_t errlen)
{
    for (uint64_t i = 0; i < z->ncoefs; i++) {
        uint32_t m, c, s;
        uint64_t v[FE_MAX_LIMBS] = { 0 };
        zkey_coef(z, i, &m, &c, &s, v);
        if (m > 1)
            return binfile_err(err, errlen, CUZK_E_FORMAT,
                               "%s: coefficient %llu has matrix %u (only 0 = A and 1 = B exist)", z->bf.path,
                               (unsigned long long)i, m);
        if (c >= z->domain_size)
            return binfile_err(err, errlen, CUZK_E_FORMAT,
                               "%s: coefficient %llu is in constraint %u, outside the domain of size %u",
                               z->bf.path, (unsigned long long)i, c, z->domain_size);
        if (s >= z->nvars)
            return binfile_err(err, errlen, CUZK_E_FORMAT,
                               "%s: coefficient %llu refers to signal %u, but the circuit has %u signals",
                               z->bf.path, (unsigned long long)i, s, z->nvars);
        if (!fe_is_reduced(z->Fr, v))
            return binfile_err(err, errlen, CUZK_E_FORMAT, "%s: coefficient %llu has a value not below r",
                               z->bf.path, (unsigned long long)i);
    }
    return 0;
}

int zkey_open(zkey *z, const char *path, char *err, size_t errlen)
{
    int rc;

    rc = binfile_open_reader(z, sizeof *z, &z->bf, path, "zkey", ZKEY_MAX_VERSION, zkey_ids, zkey_names,
                             sizeof zkey_ids / sizeof zkey_ids[0], err, errlen);
    if (rc) goto fail;
    if ((rc = parse_header(z, err, errlen))) goto fail;
    if ((rc = check_sections(z, err, errlen))) goto fail;
    if ((rc = check_coefs(z, err, errlen))) goto fail;
    return 0;
fail:
    zkey_close(z);
    return rc;
}
