/* proofs.c — a job's proofs in few requests (api.h), in both modes (local and queue):
 *   POST ...?wait=S               the submit, then a wait of up to S seconds: the job
 *                                 ended in time, 200 with its proofs inline (else the
 *                                 202 as without wait)
 *   GET /v1/jobs/ID/proofs        every partition's proof in one answer, paged
 *                                 (?offset=, ?limit= up to API_PROOFS_PAGE)
 *   GET .../proofs/K?format=calldata  the proof as snarkjs's `zkey export
 *                                 soliditycalldata` prints it, byte for byte
 * Built on the one-job and one-proof answers (jobs.c, queue.c), so both modes answer
 * alike and a tenant sees only its own jobs. */
#include "api.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>

static void get_job(struct api_resp *r, uint64_t id, const struct api_tenant *t, long wait_s, int client_fd)
{
    (g_api.cfg.queue[0] ? api_queue_get_job : api_get_job)(r, id, t, wait_s, client_fd);
}

static void get_proof(struct api_resp *r, uint64_t id, uint64_t k, const struct api_tenant *t)
{
    (g_api.cfg.queue[0] ? api_queue_get_proof : api_get_proof)(r, id, k, t);
}

/* The body of a 200 answer as JSON (NULL otherwise). */
static json_t *body_of(const struct api_resp *r)
{
    return r->status == 200 && r->body ? json_loadb(r->body, r->len, 0, NULL) : NULL;
}

/* The stored proofs of partitions [offset, offset + limit) at once: one control
 * request ("proofs") in local mode, one query of the fleet's database in queue mode,
 * by index: an array whose element i is partition offset + i's {"proof","public"}
 * (null where none is stored yet). NULL when it could not be had: each proof is then
 * asked for alone (get_proof), which answers the problem. */
static json_t *proof_batch(uint64_t id, const struct api_tenant *t, size_t offset, size_t limit)
{
    struct api_resp ignored = { 0 };
    json_t *rep, *out, *e, *list;
    size_t i;

    if (!limit) return NULL;
    if (g_api.cfg.queue[0])
        rep = (list = api_queue_proofs(id, t, offset, limit)) ? json_pack("{s:o}", "proofs", list) : NULL;
    else
        rep = api_ctl(json_pack("{s:s,s:I,s:I,s:I,s:s}", "req", PROTO_REQ_PROOFS, "job", (json_int_t)id,
                                "index", (json_int_t)offset, "count", (json_int_t)limit, "tenant", t->name),
                      NULL, 0, &ignored, NULL);
    free(ignored.body);
    if (!rep) return NULL;
    out = json_array();
    for (i = 0; out && i < limit; i++) json_array_append_new(out, json_null());
    json_array_foreach (json_object_get(rep, "proofs"), i, e) {
        json_int_t k = json_integer_value(json_object_get(e, "index"));

        if (k >= (json_int_t)offset && k < (json_int_t)(offset + limit) && json_object_get(e, "proof"))
            json_array_set(out, (size_t)(k - (json_int_t)offset), e);
    }
    json_decref(rep);
    return out;
}

/* Partitions [offset, offset + limit) of the job in view j: each {"k", "proof",
 * "publicSignals", "verified"} when done, else {"k", "state", "reason"?}. NULL, r
 * answered, when a proof cannot be read for another reason than its partition's. A
 * page is the job's request and one "proofs" request in local mode (one query in
 * queue mode), whatever its size; a proof the batch lacks (done since) is asked for
 * alone. */
static json_t *proof_list(struct api_resp *r, uint64_t id, const struct api_tenant *t, json_t *j,
                          size_t offset, size_t limit)
{
    json_t *parts = json_object_get(j, "parts"), *out = json_array(), *batch = NULL;
    size_t n = json_array_size(parts), any = 0;

    for (size_t k = offset; k < n && k < offset + limit; k++)
        any += !strcmp(json_string_value(json_object_get(json_array_get(parts, k), "state")) ?: "", "done");
    if (any) batch = proof_batch(id, t, offset, (n > offset ? n - offset : 0) < limit ? n - offset : limit);

    for (size_t k = offset; out && k < n && k < offset + limit; k++) {
        json_t *p = json_array_get(parts, k), *e;
        const char *st = json_string_value(json_object_get(p, "state")) ?: "";
        struct api_resp one = { 0 };

        if (strcmp(st, "done")) {
            e = json_pack("{s:I,s:s}", "k", (json_int_t)k, "state", st);
            if (e && json_is_string(json_object_get(p, "reason")))
                json_object_set(e, "reason", json_object_get(p, "reason"));
            json_array_append_new(out, e);
            continue;
        }
        if ((e = json_array_get(batch, k - offset)) && !json_is_null(e)) {
            /* verified: cuzkd's finalizer checks each proof's pairing before it is kept */
            json_array_append_new(out,
                                  json_pack("{s:O,s:O,s:b,s:I}", "proof", json_object_get(e, "proof"),
                                            "publicSignals", json_object_get(e, "public"), "verified", 1, "k",
                                            (json_int_t)k));
            continue;
        }
        get_proof(&one, id, k, t);
        if (!(e = body_of(&one))) {
            free(r->body);
            *r = one; /* its problem is the answer */
            json_decref(out);
            json_decref(batch);
            return NULL;
        }
        json_object_set_new(e, "k", json_integer((json_int_t)k));
        json_array_append_new(out, e);
        free(one.body);
    }
    json_decref(batch);
    if (!out) api_problem(r, 500, "internal", PROTO_E_INTERNAL, "out of memory", NULL);
    return out;
}

/* {"job","state","partitions","offset","proofs":[...],"next"?}: next is the path of
 * the following page while there is one. */
static json_t *proofs_page(struct api_resp *r, uint64_t id, const struct api_tenant *t, json_t *j,
                           size_t offset, size_t limit)
{
    size_t n = json_array_size(json_object_get(j, "parts"));
    json_t *list = proof_list(r, id, t, j, offset, limit), *o;
    char next[96];

    if (!list) return NULL;
    o = json_pack("{s:I,s:O,s:I,s:I,s:o}", "job", (json_int_t)id, "state", json_object_get(j, "state"),
                  "partitions", (json_int_t)n, "offset", (json_int_t)offset, "proofs", list);
    if (o && offset + limit < n) {
        snprintf(next, sizeof(next), "/v1/jobs/%" PRIu64 "/proofs?offset=%zu&limit=%zu", id, offset + limit,
                 limit);
        json_object_set_new(o, "next", json_string(next));
    }
    return o;
}

void api_job_proofs(struct api_resp *r, uint64_t id, const struct api_tenant *t, uint64_t offset,
                    uint64_t limit)
{
    json_t *j, *o;

    get_job(r, id, t, 0, -1);
    if (!(j = body_of(r))) return; /* r: the job's problem (404, 503) */
    o = proofs_page(r, id, t, j, (size_t)offset, (size_t)limit);
    json_decref(j);
    if (o) api_json(r, 200, o);
}

void api_submit_wait(struct api_resp *r, const struct api_tenant *t, long wait_s, int client_fd)
{
    json_t *sub = r->status == 202 && r->body ? json_loadb(r->body, r->len, 0, NULL) : NULL, *j = NULL, *o;
    struct api_resp w = { 0 };
    uint64_t id = (uint64_t)json_integer_value(json_object_get(sub, "job"));
    const char *st;

    if (!sub) return; /* refused: the answer stands */
    get_job(&w, id, t, wait_s, client_fd);
    j = body_of(&w);
    free(w.body);
    st = json_string_value(json_object_get(j, "state")) ?: "running";
    if (!strcmp(st, "running")) { /* not in time (or not readable): the 202 as it is */
        json_decref(j);
        json_decref(sub);
        return;
    }
    w = (struct api_resp){ 0 };
    o = proofs_page(&w, id, t, j, 0, API_PROOFS_PAGE);
    if (o) {
        json_object_set(o, "circuit", json_object_get(sub, "circuit"));
        json_object_set(o, "existing", json_object_get(sub, "existing"));
        json_object_set(o, "location", json_object_get(sub, "location"));
        if (json_object_get(sub, "metadata"))
            json_object_set(o, "metadata", json_object_get(sub, "metadata"));
        api_json(r, 200, o); /* Location stays: the job's path */
    }
    free(w.body);
    json_decref(j);
    json_decref(sub);
}

/* n, a decimal string, as snarkjs's p256 writes it: "0x" and at least 64 lower-case
 * hex digits. 0, or -1 when n is no decimal number. */
static int p256(FILE *f, const char *n)
{
    BIGNUM *b = NULL;
    char *h, *s;
    size_t len;

    if (!n || !*n || strspn(n, "0123456789") != strlen(n) || !BN_dec2bn(&b, n)) return -1;
    h = BN_bn2hex(b); /* upper case, whole bytes: "0A..." has a leading zero JS's toString(16) has not */
    BN_free(b);
    if (!h) return -1;
    for (s = h; s[0] == '0' && s[1]; s++) {
    }
    len = strlen(s);
    fputs("\"0x", f);
    for (size_t i = len; i < 64; i++) fputc('0', f);
    for (size_t i = 0; i < len; i++) fputc(tolower((unsigned char)s[i]), f);
    fputc('"', f);
    OPENSSL_free(h);
    return 0;
}

static const char *str_at(json_t *a, size_t i, size_t j)
{
    json_t *e = json_array_get(a, i);

    return json_string_value(j == (size_t)-1 ? e : json_array_get(e, j));
}

void api_proof_calldata(struct api_resp *r)
{
    json_t *o = body_of(r), *p = json_object_get(o, "proof"), *pub = json_object_get(o, "publicSignals");
    json_t *a = json_object_get(p, "pi_a"), *b = json_object_get(p, "pi_b"), *c = json_object_get(p, "pi_c");
    char *buf = NULL;
    size_t len = 0, i;
    FILE *f;
    int bad = 0;

    if (!o) return; /* a problem: it stays */
    if (!(f = open_memstream(&buf, &len))) {
        json_decref(o);
        api_problem(r, 500, "internal", PROTO_E_INTERNAL, "out of memory", NULL);
        return;
    }
    /* snarkjs's groth16ExportSolidityCallData: pi_b's Fq2 pairs swapped (c1, c0) */
    fputc('[', f);
    bad |= p256(f, str_at(a, 0, -1)), fputs(", ", f), bad |= p256(f, str_at(a, 1, -1));
    fputs("],[[", f);
    bad |= p256(f, str_at(b, 0, 1)), fputs(", ", f), bad |= p256(f, str_at(b, 0, 0));
    fputs("],[", f);
    bad |= p256(f, str_at(b, 1, 1)), fputs(", ", f), bad |= p256(f, str_at(b, 1, 0));
    fputs("]],[", f);
    bad |= p256(f, str_at(c, 0, -1)), fputs(", ", f), bad |= p256(f, str_at(c, 1, -1));
    fputs("],[", f);
    for (i = 0; i < json_array_size(pub); i++) {
        if (i) fputc(',', f);
        bad |= p256(f, str_at(pub, i, -1));
    }
    fputs("]\n", f); /* the CLI's console.log ends the line */
    fclose(f);
    json_decref(o);
    if (bad || !buf) {
        free(buf);
        api_problem(r, 500, "internal", PROTO_E_INTERNAL, "the proof's numbers do not read", NULL);
        return;
    }
    free(r->body);
    r->body = buf;
    r->len = len;
    r->ctype = "text/plain; charset=utf-8";
}
