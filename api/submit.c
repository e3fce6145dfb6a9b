/* submit.c — POST /v1/circuits/NAME/proofs (api.h): the body, already in a sealed
 * memfd (http.c, body.c), becomes a submit of the declared circuit with
 * "results":"store", its one descriptor passed whatever the number of inputs:
 *   application/json, an object    one partition, the memfd is its input.json
 *   application/json, an array     one job, a partition per element: the memfd holds
 *                                  them framed ("inputs_batch", protocol.h)
 *   application/octet-stream       a .wtns: one partition
 * cuzkd reads the descriptor; no path of this machine is named by the request. */
#include "api.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* The "inputs"/"witnesses" or "inputs_batch" member naming the body's descriptor 0. */
static void body_member(json_t *q, const struct api_body *b, int wtns)
{
    if (b->framed)
        json_object_set_new(
            q, "inputs_batch",
            json_pack("{s:i,s:s,s:I}", "fd", 0, "path", "body.json", "count", (json_int_t)b->count));
    else
        json_object_set_new(
            q, wtns ? "witnesses" : "inputs",
            json_pack("[{s:i,s:s,s:s}]", "fd", 0, "path", wtns ? "body.wtns" : "body.json", "name", "0"));
}

bool api_idem_key_valid(const char *k)
{
    size_t n = strlen(k);

    if (!n || n > 128) return false;
    for (; *k; k++)
        if (*k < 0x20 || *k > 0x7e) return false;
    return true;
}

static json_t *submit_req(const char *circuit, const struct api_tenant *t, const struct api_body *b, int wtns)
{
    json_t *q = json_pack("{s:s,s:s,s:i,s:s,s:s}", "req", PROTO_REQ_SUBMIT, "circuit", circuit, "fds", 1,
                          "results", "store", "tenant", t->name);
    int prio = b->priority;

    if (q) body_member(q, b, wtns);
    if (t->prio_cap >= 0 && prio > t->prio_cap) prio = t->prio_cap;
    if (q && prio >= 0) json_object_set_new(q, "priority", json_integer(prio));
    /* The token line's max-running-jobs: counted and admitted by cuzkd in one step. */
    if (q && t->max_running) json_object_set_new(q, "max_running", json_integer((json_int_t)t->max_running));
    /* the client's own; not in body_sha256: a retry with the same key and body is
     * the first job whatever metadata it carries */
    if (q && b->metadata) json_object_set(q, "metadata", b->metadata);
    if (q && b->idem_key) {
        json_object_set_new(q, "idempotency_key", json_string(b->idem_key));
        json_object_set_new(q, "body_sha256", json_string(b->sha256));
    }
    return q;
}

void api_submit(struct api_resp *r, const char *circuit, const struct api_tenant *t, struct api_body *b)
{
    int wtns = b->ctype && !strncasecmp(b->ctype, "application/octet-stream", 24);
    json_t *rep;
    char loc[64];

    if (b->idem_key && !api_idem_key_valid(b->idem_key)) {
        api_problem(r, 400, "usage", "bad_request", "Idempotency-Key: 1 to 128 printable ASCII characters",
                    NULL);
        return;
    }
    /* The body's memfd itself: cuzkd copies what it reads, so the one descriptor is
     * lent, not given (http.c closes it when the request ends). */
    rep = api_ctl(submit_req(circuit, t, b, wtns), &b->fd, 1, r, NULL);
    if (!rep) return;
    {
        json_int_t id = json_integer_value(json_object_get(rep, "job"));

        snprintf(loc, sizeof(loc), "/v1/jobs/%" JSON_INTEGER_FORMAT, id);
        snprintf(r->location, sizeof(r->location), "%s", loc);
        api_json(r, 202,
                 json_pack("{s:I,s:s,s:I,s:b,s:s}", "job", id, "circuit", circuit, "partitions",
                           json_integer_value(json_object_get(rep, "partitions")), "existing",
                           json_is_true(json_object_get(rep, "existing")), "location", loc));
        /* the job's own (the first job's, for a key seen before) */
        if (r->body && json_is_object(json_object_get(rep, "metadata"))) {
            json_t *o = json_loadb(r->body, r->len, 0, NULL);

            json_object_set(o, "metadata", json_object_get(rep, "metadata"));
            api_json(r, 202, o);
        }
    }
    json_decref(rep);
}
