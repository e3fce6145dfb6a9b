/* verify.c — Groth16 verification and the snarkjs JSON readers (verify.h). */
#include "zk/verify.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "zk/pairing.h"
#include "verify_prep.h"

#define FR_LIMBS      4
/* A bound on nPublic from a JSON file, so a hostile count cannot ask for terabytes;
 * zkeys cap the same count by their section sizes. */
#define VK_MAX_PUBLIC (1u << 24)

static void vk_prep_free(struct groth16_vk_prep *prep)
{
    if (!prep) return;
    pairing_g2_lines_free(&prep->gamma2);
    pairing_g2_lines_free(&prep->delta2);
    free(prep);
}

void groth16_vk_free(groth16_vk *vk)
{
    if (!vk) return;
    free(vk->ic);
    vk->ic = NULL;
    vk_prep_free(vk->prep);
    vk->prep = NULL;
}

int groth16_vk_prepare(groth16_vk *vk)
{
    const pairing_params *pp = pairing_params_get(vk->Fq);
    if (!pp) return -CUZK_E_INTERNAL;
    if (vk->prep) return 0;
    struct groth16_vk_prep *prep = calloc(1, sizeof *prep);
    if (!prep) return -CUZK_E_INTERNAL;
    const uint64_t *g1[1] = { vk->alpha1 }, *g2[1] = { vk->beta2 };
    pairing_miller_loop(pp, prep->ab, g1, g2, 1);
    if (pairing_g2_lines_make(pp, &prep->gamma2, vk->gamma2) ||
        pairing_g2_lines_make(pp, &prep->delta2, vk->delta2)) {
        vk_prep_free(prep);
        return -CUZK_E_INTERNAL;
    }
    vk->prep = prep;
    return 0;
}

static void vk_set_curve(groth16_vk *vk, const curve_group *g1, const curve_group *g2)
{
    vk->g1 = g1;
    vk->g2 = g2;
    vk->Fq = g1->F;
    vk->Fr = g1->Fr;
}

/* The checks a key gets whatever its source: points on their curves, G2 ones in
 * the order-r subgroup (3 scalar multiplications, ~1 ms; not with subgroups false:
 * groth16_self_check's fast path). */
static int vk_check(const groth16_vk *vk, const char *src, bool subgroups, char *err, size_t errlen)
{
    const unsigned n = vk->Fq->n;
    const struct {
        const char *name;
        const curve_group *G;
        const uint64_t *p;
    } pts[] = { { "vk_alpha_1", vk->g1, vk->alpha1 },
                { "vk_beta_2", vk->g2, vk->beta2 },
                { "vk_gamma_2", vk->g2, vk->gamma2 },
                { "vk_delta_2", vk->g2, vk->delta2 } };
    for (size_t i = 0; i < sizeof pts / sizeof pts[0]; i++) {
        if (!ec_aff_is_on_curve(pts[i].G, pts[i].p)) {
            snprintf(err, errlen, "%s: %s is not a point of the curve", src, pts[i].name);
            return -CUZK_E_FORMAT;
        }
        if (subgroups && pts[i].G->deg == 2 && !pairing_in_subgroup(pts[i].G, pts[i].p)) {
            snprintf(err, errlen, "%s: %s is on the twist but not in the order-r subgroup G2", src,
                     pts[i].name);
            return -CUZK_E_FORMAT;
        }
    }
    for (uint32_t i = 0; i <= vk->npublic; i++) {
        if (!ec_aff_is_on_curve(vk->g1, vk->ic + (size_t)i * 2 * n)) {
            snprintf(err, errlen, "%s: IC[%u] is not a point of the curve", src, i);
            return -CUZK_E_FORMAT;
        }
    }
    return 0;
}

static int vk_from_zkey(groth16_vk *vk, const zkey *z, bool subgroups, char *err, size_t errlen)
{
    const size_t aff = 2 * (size_t)z->Fq->n; /* G1 affine limbs */
    memset(vk, 0, sizeof *vk);
    vk_set_curve(vk, z->g1, z->g2);
    vk->npublic = z->npublic;
    memcpy(vk->alpha1, z->alpha1, sizeof vk->alpha1);
    memcpy(vk->beta2, z->beta2, sizeof vk->beta2);
    memcpy(vk->gamma2, z->gamma2, sizeof vk->gamma2);
    memcpy(vk->delta2, z->delta2, sizeof vk->delta2);
    vk->ic = malloc(((size_t)z->npublic + 1) * aff * sizeof *vk->ic);
    if (!vk->ic) {
        snprintf(err, errlen, "out of memory for %u IC points", z->npublic + 1);
        return -CUZK_E_INTERNAL;
    }
    memcpy(vk->ic, z->ic, ((size_t)z->npublic + 1) * aff * sizeof *vk->ic); /* z->ic may be misaligned */
    int rc = vk_check(vk, "zkey", subgroups, err, errlen);
    if (rc) groth16_vk_free(vk);
    return rc;
}

int groth16_vk_from_zkey(groth16_vk *vk, const zkey *z, char *err, size_t errlen)
{
    return vk_from_zkey(vk, z, true, err, errlen);
}

/* ---- JSON -------------------------------------------------------------------- */

static int json_read(const char *path, json_t **out, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        return -CUZK_E_IO;
    }
    json_error_t je;
    *out = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
    fclose(f);
    if (!*out) {
        snprintf(err, errlen, "%s is not valid JSON (line %d, column %d: %s)", path, je.line, je.column,
                 je.text);
        return -CUZK_E_FORMAT;
    }
    return 0;
}

/* One decimal string < F's modulus into canonical limbs. */
static int num_parse(const field_desc *F, uint64_t *r, const json_t *v, const char *path, const char *what,
                     char *err, size_t errlen)
{
    if (!json_is_string(v)) {
        snprintf(err, errlen, "%s: %s must be a decimal string", path, what);
        return -CUZK_E_FORMAT;
    }
    int rc = fe_canon_from_dec(F, r, json_string_value(v));
    if (rc == -ERANGE) {
        snprintf(err, errlen, "%s: %s is not below the %s modulus (%s): out of range", path, what,
                 F->id == FIELD_ID_BN254_FR || F->id == FIELD_ID_BLS12_381_FR ? "scalar field" : "base field",
                 F->name);
        return -CUZK_E_FORMAT;
    }
    if (rc) {
        snprintf(err, errlen, "%s: %s is \"%.40s\", not a decimal number", path, what, json_string_value(v));
        return -CUZK_E_FORMAT;
    }
    return 0;
}

/* A decimal coordinate into Montgomery form. */
static int coord_parse(const field_desc *F, uint64_t *r, const json_t *v, const char *path, const char *what,
                       char *err, size_t errlen)
{
    uint64_t c[FE_MAX_LIMBS];
    int rc = num_parse(F, c, v, path, what, err, errlen);
    if (rc) return rc;
    fe_to_mont(F, r, c);
    return 0;
}

/* Whether v is the decimal string s. */
static bool str_is(const json_t *v, const char *s)
{
    return json_is_string(v) && strcmp(json_string_value(v), s) == 0;
}

/* A G1 point ["x", "y", "z"] with z "1" (affine) or "0" (infinity). */
static int g1_parse(const groth16_vk *vk, uint64_t *aff, const json_t *v, const char *path, const char *name,
                    char *err, size_t errlen)
{
    const field_desc *F = vk->Fq;
    char what[80];
    if (!json_is_array(v) || json_array_size(v) != 3) {
        snprintf(err, errlen, "%s: %s must be an array of 3 decimal strings [x, y, z]", path, name);
        return -CUZK_E_FORMAT;
    }
    for (unsigned c = 0; c < 2; c++) {
        snprintf(what, sizeof what, "%s[%u]", name, c);
        int rc = coord_parse(F, aff + c * F->n, json_array_get(v, c), path, what, err, errlen);
        if (rc) return rc;
    }
    const json_t *z = json_array_get(v, 2);
    if (str_is(z, "0")) {
        memset(aff, 0, 2 * F->n * sizeof *aff);
    } else if (!str_is(z, "1")) {
        snprintf(err, errlen, "%s: %s[2] (z) must be \"1\" (affine) or \"0\" (infinity)", path, name);
        return -CUZK_E_FORMAT;
    }
    return 0;
}

/* A G2 point [[x.c0, x.c1], [y.c0, y.c1], [z.c0, z.c1]], z ["1","0"] or ["0","0"]. */
static int g2_parse(const groth16_vk *vk, uint64_t *aff, const json_t *v, const char *path, const char *name,
                    char *err, size_t errlen)
{
    const field_desc *F = vk->Fq;
    char what[80];
    bool shape = json_is_array(v) && json_array_size(v) == 3;
    for (unsigned c = 0; shape && c < 3; c++) {
        const json_t *e = json_array_get(v, c);
        shape = json_is_array(e) && json_array_size(e) == 2;
    }
    if (!shape) {
        snprintf(err, errlen,
                 "%s: %s must be 3 pairs of decimal strings [[x.c0, x.c1], [y.c0, y.c1], [z.c0, z.c1]]", path,
                 name);
        return -CUZK_E_FORMAT;
    }
    for (unsigned c = 0; c < 4; c++) {
        snprintf(what, sizeof what, "%s[%u][%u]", name, c / 2, c % 2);
        int rc = coord_parse(F, aff + c * F->n, json_array_get(json_array_get(v, c / 2), c % 2), path, what,
                             err, errlen);
        if (rc) return rc;
    }
    const json_t *z = json_array_get(v, 2);
    if (str_is(json_array_get(z, 0), "0") && str_is(json_array_get(z, 1), "0")) {
        memset(aff, 0, 4 * F->n * sizeof *aff);
    } else if (!str_is(json_array_get(z, 0), "1") || !str_is(json_array_get(z, 1), "0")) {
        snprintf(err, errlen, "%s: %s[2] (z) must be [\"1\", \"0\"] (affine) or [\"0\", \"0\"] (infinity)",
                 path, name);
        return -CUZK_E_FORMAT;
    }
    return 0;
}

int groth16_vk_from_json(groth16_vk *vk, const char *path, char *err, size_t errlen)
{
    json_t *j = NULL;
    int rc;
    memset(vk, 0, sizeof *vk);
    if ((rc = json_read(path, &j, err, errlen)) != 0) return rc;
    rc = -CUZK_E_FORMAT;
    if (!json_is_object(j)) {
        snprintf(err, errlen, "%s: a verification key is a JSON object", path);
        goto out;
    }
    const json_t *proto = json_object_get(j, "protocol"), *curve = json_object_get(j, "curve");
    if (!json_is_string(proto)) {
        snprintf(err, errlen, "%s: no \"protocol\" string: is it a snarkjs verification_key.json?", path);
        goto out;
    }
    if (strcmp(json_string_value(proto), "groth16") != 0) {
        snprintf(err, errlen, "%s: protocol is \"%.20s\"; cuzk verifies groth16 proofs only", path,
                 json_string_value(proto));
        rc = -CUZK_E_UNSUPPORTED;
        goto out;
    }
    const char *cn = json_is_string(curve) ? json_string_value(curve) : "";
    if (!strcmp(cn, "bn128") || !strcmp(cn, "bn254") || !strcmp(cn, "altbn128")) {
        vk_set_curve(vk, &G1_BN254, &G2_BN254);
    } else if (!strcmp(cn, "bls12381") || !strcmp(cn, "bls12-381")) {
        vk_set_curve(vk, &G1_BLS12_381, &G2_BLS12_381);
    } else {
        snprintf(err, errlen, "%s: curve \"%.20s\" is not bn128 or bls12381", path, cn);
        rc = json_is_string(curve) ? -CUZK_E_UNSUPPORTED : -CUZK_E_FORMAT;
        goto out;
    }
    const json_t *np = json_object_get(j, "nPublic"), *ic = json_object_get(j, "IC");
    if (!json_is_integer(np) || json_integer_value(np) < 0 || json_integer_value(np) >= VK_MAX_PUBLIC) {
        snprintf(err, errlen, "%s: nPublic must be an integer from 0 to %u", path, VK_MAX_PUBLIC - 1);
        goto out;
    }
    vk->npublic = (uint32_t)json_integer_value(np);
    if (!json_is_array(ic) || json_array_size(ic) != (size_t)vk->npublic + 1) {
        snprintf(err, errlen, "%s: IC must be an array of nPublic + 1 = %u points (has %zu)", path,
                 vk->npublic + 1, json_is_array(ic) ? json_array_size(ic) : (size_t)0);
        goto out;
    }
    if ((rc = g1_parse(vk, vk->alpha1, json_object_get(j, "vk_alpha_1"), path, "vk_alpha_1", err, errlen)) ||
        (rc = g2_parse(vk, vk->beta2, json_object_get(j, "vk_beta_2"), path, "vk_beta_2", err, errlen)) ||
        (rc = g2_parse(vk, vk->gamma2, json_object_get(j, "vk_gamma_2"), path, "vk_gamma_2", err, errlen)) ||
        (rc = g2_parse(vk, vk->delta2, json_object_get(j, "vk_delta_2"), path, "vk_delta_2", err, errlen)))
        goto out;
    const size_t aff = 2 * (size_t)vk->Fq->n;
    vk->ic = malloc(((size_t)vk->npublic + 1) * aff * sizeof *vk->ic);
    if (!vk->ic) {
        snprintf(err, errlen, "%s: out of memory for %u IC points", path, vk->npublic + 1);
        rc = -CUZK_E_INTERNAL;
        goto out;
    }
    for (uint32_t i = 0; i <= vk->npublic; i++) {
        char name[32];
        snprintf(name, sizeof name, "IC[%u]", i);
        if ((rc = g1_parse(vk, vk->ic + i * aff, json_array_get(ic, i), path, name, err, errlen))) goto out;
    }
    rc = vk_check(vk, path, true, err, errlen);
out:
    json_decref(j);
    if (rc) groth16_vk_free(vk);
    return rc;
}

int groth16_proof_from_json(const groth16_vk *vk, groth16_proof *p, const char *path, char *err,
                            size_t errlen)
{
    json_t *j = NULL;
    int rc;
    if ((rc = json_read(path, &j, err, errlen)) != 0) return rc;
    memset(p, 0, sizeof *p);
    if (!json_is_object(j)) {
        snprintf(err, errlen, "%s: a proof is a JSON object with pi_a, pi_b, pi_c", path);
        rc = -CUZK_E_FORMAT;
    } else if (!(rc = g1_parse(vk, p->a, json_object_get(j, "pi_a"), path, "pi_a", err, errlen)) &&
               !(rc = g2_parse(vk, p->b, json_object_get(j, "pi_b"), path, "pi_b", err, errlen))) {
        rc = g1_parse(vk, p->c, json_object_get(j, "pi_c"), path, "pi_c", err, errlen);
    }
    json_decref(j);
    return rc;
}

int groth16_public_from_json(const groth16_vk *vk, uint64_t **out, const char *path, char *err, size_t errlen)
{
    json_t *j = NULL;
    int rc;
    *out = NULL;
    if ((rc = json_read(path, &j, err, errlen)) != 0) return rc;
    rc = -CUZK_E_FORMAT;
    if (!json_is_array(j)) {
        snprintf(err, errlen, "%s: public signals are a JSON array of decimal strings", path);
        goto out;
    }
    if (json_array_size(j) != vk->npublic) {
        snprintf(
            err, errlen,
            "%s has %zu public signals, the verification key expects %u: were they made for another circuit?",
            path, json_array_size(j), vk->npublic);
        goto out;
    }
    uint64_t *v = NULL;
    if (vk->npublic) {
        v = malloc((size_t)vk->npublic * FR_LIMBS * sizeof *v);
        if (!v) {
            snprintf(err, errlen, "%s: out of memory", path);
            rc = -CUZK_E_INTERNAL;
            goto out;
        }
    }
    for (uint32_t i = 0; i < vk->npublic; i++) {
        char what[32];
        snprintf(what, sizeof what, "public signal %u", i);
        if ((rc = num_parse(vk->Fr, v + (size_t)i * FR_LIMBS, json_array_get(j, i), path, what, err,
                            errlen))) {
            free(v);
            goto out;
        }
    }
    *out = v;
    rc = 0;
out:
    json_decref(j);
    return rc;
}

/* ---- verification ---------------------------------------------------------------- */

/* Whether a proof point may enter the pairing: on its curve, and in the order-r
 * subgroup where the curve has a cofactor (G2 always; G1 on BLS12-381). */
static bool point_valid(const curve_group *G, const uint64_t *aff, const char *name, bool subgroups,
                        char *err, size_t errlen)
{
    if (!ec_aff_is_on_curve(G, aff)) {
        snprintf(err, errlen, "invalid proof: %s is not a point of the curve", name);
        return false;
    }
    bool cofactor = subgroups && (G->deg == 2 || G->id == CURVE_G1_BLS12_381);
    if (cofactor && !pairing_in_subgroup(G, aff)) {
        snprintf(err, errlen, "invalid proof: %s is on the curve but not in the order-r subgroup", name);
        return false;
    }
    return true;
}

/* The product e(-A, B) e(alpha1, beta2) e(vk_x, gamma2) e(C, delta2) == 1 on a
 * prepared key: the constant pair's Miller value multiplied in, gamma2's and delta2's
 * lines evaluated, one final exponentiation for the product. */
static bool pairing_check_prepared(const groth16_vk *vk, const uint64_t *na, const uint64_t *b,
                                   const uint64_t *vkx, const uint64_t *c)
{
    const pairing_params *pp = pairing_params_get(vk->Fq);
    const uint64_t *g1[1] = { na }, *g2[1] = { b }, *pg1[2] = { vkx, c };
    const pairing_g2_lines *lines[2] = { &vk->prep->gamma2, &vk->prep->delta2 };
    uint64_t f[FQ12_MAX_LIMBS];
    pairing_miller_loop_prep(pp, f, g1, g2, 1, pg1, lines, 2);
    fq12_mul(vk->Fq, f, f, vk->prep->ab);
    pairing_final_exp(pp, f, f);
    return fq12_is_one(vk->Fq, f);
}

static int verify_proof(const groth16_vk *vk, const groth16_proof *p, const uint64_t *public_canon,
                        size_t npublic, bool subgroups, bool *valid, char *err, size_t errlen)
{
    const curve_group *G1 = vk->g1;
    const size_t aff = 2 * (size_t)vk->Fq->n;
    if (npublic != vk->npublic) {
        snprintf(err, errlen, "%zu public signals given, the verification key expects %u", npublic,
                 vk->npublic);
        return -CUZK_E_FORMAT;
    }
    for (size_t i = 0; i < npublic; i++) {
        if (!fe_is_reduced(vk->Fr, public_canon + i * FR_LIMBS)) {
            snprintf(err, errlen, "public signal %zu is not below the scalar field modulus", i);
            return -CUZK_E_FORMAT;
        }
    }
    if (!point_valid(G1, p->a, "pi_a", subgroups, err, errlen) ||
        !point_valid(vk->g2, p->b, "pi_b", subgroups, err, errlen) ||
        !point_valid(G1, p->c, "pi_c", subgroups, err, errlen)) {
        *valid = false;
        return 0;
    }
    /* vk_x = IC[0] + sum s_i IC[i]: one double-and-add per signal (~0.1-0.3 ms each;
     * circuits have few public signals). */
    uint64_t acc[EC_MAX_JAC], t[EC_MAX_JAC], vkx[EC_MAX_AFF], na[EC_MAX_AFF];
    ec_jac_from_aff(G1, acc, vk->ic);
    for (size_t i = 0; i < npublic; i++) {
        const uint64_t *s = public_canon + i * FR_LIMBS;
        if (fe_is_zero(vk->Fr, s)) continue;
        ec_jac_from_aff(G1, t, vk->ic + (i + 1) * aff);
        ec_jac_mul_scalar(G1, t, t, s, FR_LIMBS);
        ec_add(G1, acc, acc, t);
    }
    ec_jac_to_aff(G1, vkx, acc);
    ec_aff_neg(G1, na, p->a);
    const uint64_t *g1s[4] = { na, vk->alpha1, vkx, p->c };
    const uint64_t *g2s[4] = { p->b, vk->beta2, vk->gamma2, vk->delta2 };
    bool one = false;
    if (vk->prep)
        one = pairing_check_prepared(vk, na, p->b, vkx, p->c);
    else if (pairing_multi_check(pairing_params_get(vk->Fq), g1s, g2s, 4, &one) != 0) {
        snprintf(err, errlen, "no pairing for the curve of %s", vk->Fq->name);
        return -CUZK_E_INTERNAL;
    }
    *valid = one;
    if (!one) snprintf(err, errlen, "invalid proof: the pairing check fails");
    return 0;
}

int groth16_verify_proof(const groth16_vk *vk, const groth16_proof *p, const uint64_t *public_canon,
                         size_t npublic, bool *valid, char *err, size_t errlen)
{
    return verify_proof(vk, p, public_canon, npublic, true, valid, err, errlen);
}

/* groth16_verify_witness, with or without the subgroup checks of the proof's points. */
static int verify_witness(const groth16_vk *vk, const zkey *z, const uint8_t *values, const groth16_proof *p,
                          bool subgroups, char *err, size_t errlen)
{
    bool valid = false;
    char why[256] = "";
    uint64_t *pub = malloc(((size_t)z->npublic + 1) * FR_LIMBS * sizeof *pub);
    if (!pub) {
        snprintf(err, errlen, "out of memory");
        return -CUZK_E_INTERNAL;
    }
    /* Signals 1..nPublic, canonical, copied to aligned memory. */
    memcpy(pub, values + z->n8r, (size_t)z->npublic * FR_LIMBS * sizeof *pub);
    int rc = verify_proof(vk, p, pub, z->npublic, subgroups, &valid, why, sizeof why);
    free(pub);
    if (rc == 0 && !valid) {
        snprintf(err, errlen,
                 "the witness does not satisfy the circuit, or the computation was faulty: the proof fails "
                 "verification (%s)",
                 why);
        return -CUZK_E_UNSATISFIED;
    }
    if (rc) snprintf(err, errlen, "%s", why);
    return rc;
}

int groth16_verify_witness(const groth16_vk *vk, const zkey *z, const uint8_t *values, const groth16_proof *p,
                           char *err, size_t errlen)
{
    return verify_witness(vk, z, values, p, true, err, errlen);
}

int groth16_self_check(const zkey *z, const uint8_t *values, const groth16_proof *p, char *err, size_t errlen)
{
    groth16_vk vk;
    /* The fast path: the pairing product alone (points on their curves, no subgroup
     * checks: 4 scalar multiplications by r on BN254, 6 on BLS12-381, more than half of
     * the check's cost). */
    int rc = vk_from_zkey(&vk, z, false, err, errlen);
    if (rc == 0) {
        rc = verify_witness(&vk, z, values, p, false, err, errlen);
        groth16_vk_free(&vk);
    }
    if (rc != -CUZK_E_UNSATISFIED && rc != -CUZK_E_FORMAT) return rc;
    /* It failed: the full checks, whose reason (a key point outside G2, a proof point
     * outside its subgroup) is the one to give. */
    if ((rc = groth16_vk_from_zkey(&vk, z, err, errlen)) != 0) return rc;
    rc = groth16_verify_witness(&vk, z, values, p, err, errlen);
    groth16_vk_free(&vk);
    return rc;
}
