/* vkey.c — GET /v1/circuits/NAME/vkey (api.h): the circuit's verification key as
 * snarkjs's verification_key.json, byte for byte what `snarkjs zkey export
 * verificationkey` writes for the same zkey (one-space indent, no final newline),
 * with vk_alphabeta_12 = e(alpha1, beta2) from zk/pairing.c (the same tower and
 * coefficient order as ffjavascript's Gt.toObject) raised to the constant power by
 * which ffjavascript's pairing differs from ours (snarkjs_gt). The zkey's path comes from cuzkd's
 * circuits list, never from the request; the key, made once per circuit fingerprint,
 * is kept (a reload that changes the zkey changes the fingerprint). */
#include "api.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "zk/groth16.h"
#include "zk/pairing.h"
#include "zk/verify.h"
#include "zk/zkey.h"

static json_t *fe(const field_desc *F, const uint64_t *a)
{
    char buf[160];

    return json_string(fe_mont_to_dec(F, a, buf, sizeof(buf)));
}

static int is_zero(const uint64_t *a, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i]) return 0;
    return 1;
}

/* ffjavascript's G1.toObject of an affine point: [x, y, "1"]; infinity ["0","1","0"]. */
static json_t *g1_obj(const field_desc *F, const uint64_t *p)
{
    if (is_zero(p, 2 * F->n)) return json_pack("[s,s,s]", "0", "1", "0");
    return json_pack("[o,o,s]", fe(F, p), fe(F, p + F->n), "1");
}

/* G2: [[x.c0, x.c1], [y.c0, y.c1], ["1", "0"]]; infinity [["0","0"],["1","0"],["0","0"]]. */
static json_t *g2_obj(const field_desc *F, const uint64_t *p)
{
    unsigned n = F->n;

    if (is_zero(p, 4 * n)) return json_pack("[[s,s],[s,s],[s,s]]", "0", "0", "1", "0", "0", "0");
    return json_pack("[[o,o],[o,o],[s,s]]", fe(F, p), fe(F, p + n), fe(F, p + 2 * n), fe(F, p + 3 * n), "1",
                     "0");
}

/* Fq12 (pairing.h's order c0.a0 c0.a1 c0.a2 c1.a0 c1.a1 c1.a2, each Fq2 c0 c1) as
 * [[[..,..],[..,..],[..,..]],[[..,..],[..,..],[..,..]]]. */
static json_t *gt_obj(const field_desc *F, const uint64_t *f)
{
    json_t *o = json_array();

    for (unsigned c = 0; c < 2; c++) {
        json_t *six = json_array();

        for (unsigned a = 0; a < 3; a++) {
            const uint64_t *e = f + (size_t)(3 * c + a) * 2 * F->n;

            json_array_append_new(six, json_pack("[o,o]", fe(F, e), fe(F, e + F->n)));
        }
        json_array_append_new(o, six);
    }
    return o;
}

/* ffjavascript's final exponentiations compute a fixed power of the reduced pairing,
 * not the reduced pairing itself (both are pairings; a verifier's product check
 * cannot tell them apart, a key's alphabeta can): on BN254 e^(2x(6x^2+3x+1)) (its
 * hard part is Fuentes-Castaneda et al.'s, x = 4965661367192848881), on BLS12-381
 * e^3. Found by comparing with snarkjs's own verification_key.json of the test
 * fixtures, which tests/scripts/api_proofs.sh checks byte for byte. */
static void snarkjs_gt(const field_desc *F, const char *curve, uint64_t *f)
{
    static const uint64_t bn_e[3] = { 0x2e5d4e223ddedaf4ull, 0x1ea96b02d9d9e38dull, 0x3bec47df15e307c8ull };
    static const uint64_t bls_e[1] = { 3 };
    uint64_t t[FQ12_MAX_LIMBS];

    memcpy(t, f, sizeof(t));
    if (!strcmp(curve, "bn128"))
        fq12_pow(F, f, t, bn_e, 3);
    else
        fq12_pow(F, f, t, bls_e, 1);
}

/* The JSON text of zkey path's key; NULL with err. */
static char *vkey_text(const char *path, char *err, size_t errlen)
{
    zkey z = { 0 };
    groth16_vk vk = { 0 };
    const pairing_params *pp;
    uint64_t ab[FQ12_MAX_LIMBS];
    json_t *o = NULL, *ic;
    char *text = NULL;

    if (zkey_open(&z, path, err, errlen)) return NULL;
    if (groth16_vk_from_zkey(&vk, &z, err, errlen)) goto out;
    if (!(pp = pairing_params_get(vk.Fq))) {
        snprintf(err, errlen, "no pairing for this curve");
        goto out;
    }
    pairing(pp, ab, vk.alpha1, vk.beta2);
    snarkjs_gt(vk.Fq, groth16_curve_name(&z), ab);
    ic = json_array();
    for (uint32_t i = 0; i <= vk.npublic; i++)
        json_array_append_new(ic, g1_obj(vk.Fq, vk.ic + (size_t)i * 2 * vk.Fq->n));
    /* snarkjs's member order (zkey_export_verificationkey.js) */
    o = json_pack("{s:s,s:s,s:i,s:o,s:o,s:o,s:o,s:o,s:o}", "protocol", "groth16", "curve",
                  groth16_curve_name(&z), "nPublic", (int)vk.npublic, "vk_alpha_1", g1_obj(vk.Fq, vk.alpha1),
                  "vk_beta_2", g2_obj(vk.Fq, vk.beta2), "vk_gamma_2", g2_obj(vk.Fq, vk.gamma2), "vk_delta_2",
                  g2_obj(vk.Fq, vk.delta2), "vk_alphabeta_12", gt_obj(vk.Fq, ab), "IC", ic);
    if (o) text = json_dumps(o, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    if (!text) snprintf(err, errlen, "out of memory");
out:
    json_decref(o);
    groth16_vk_free(&vk);
    zkey_close(&z);
    return text;
}

/* The keys made so far, by fingerprint (a circuit's zkey is large; its key is not). */
static struct {
    pthread_mutex_t mu;
    struct vk_entry {
        char fp[80];
        char *text;
    } e[32];
    unsigned next;
} cache = { .mu = PTHREAD_MUTEX_INITIALIZER };

static char *cached(const char *fp)
{
    char *t = NULL;

    pthread_mutex_lock(&cache.mu);
    for (unsigned i = 0; i < 32 && !t; i++)
        if (cache.e[i].text && !strcmp(cache.e[i].fp, fp)) t = strdup(cache.e[i].text);
    pthread_mutex_unlock(&cache.mu);
    return t;
}

static void keep(const char *fp, const char *text)
{
    struct vk_entry *e;

    pthread_mutex_lock(&cache.mu);
    e = &cache.e[cache.next++ % 32];
    free(e->text);
    snprintf(e->fp, sizeof(e->fp), "%s", fp);
    e->text = strdup(text);
    pthread_mutex_unlock(&cache.mu);
}

void api_vkey(struct api_resp *r, const char *name)
{
    json_t *c = api_circuit(name, r);
    const char *path = json_string_value(json_object_get(c, "zkey"));
    const char *fp = json_string_value(json_object_get(c, "fingerprint"));
    char err[256], *text = NULL;

    if (!c) return;
    if (!path || !fp) {
        api_problem(r, 503, "refused", PROTO_E_NOT_READY, "the circuit is not described yet (loading)", NULL);
        r->retry_after = 1;
        goto out;
    }
    if (!(text = cached(fp))) {
        if (!(text = vkey_text(path, err, sizeof(err)))) {
            api_problem(r, 500, "internal", PROTO_E_INTERNAL, err, NULL);
            goto out;
        }
        keep(fp, text);
    }
    free(r->body);
    r->status = 200;
    r->body = text;
    r->len = strlen(text);
    r->ctype = "application/json";
out:
    json_decref(c);
}
