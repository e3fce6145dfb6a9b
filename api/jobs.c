/* jobs.c — the read side of cuzk-api (api.h): a job's state (long-polled on the
 * job-end doorbell, bell.c), its proofs, cancel, the
 * circuits, readiness and the metrics text. What cuzkd says of its own machine (the
 * zkey's path, the spool directory, pids) is not passed on to tenants. */
#include "api.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/os.h"
#include "shm/stats_reader.h"

/* v, or for a "reason" (a job's, a partition's) or an "error" (a circuit's) a copy
 * with the server's paths cut (api_unpath). */
static json_t *shown(const char *key, json_t *v)
{
    char *u;
    json_t *o;

    if ((strcmp(key, "reason") && strcmp(key, "error")) || !json_is_string(v) ||
        !(u = api_unpath(json_string_value(v))))
        return json_incref(v);
    o = json_string(u);
    free(u);
    return o;
}

/* A failed job one of whose partitions a cancel failed: its state reads "cancelled"
 * (cuzkd keeps it as failed, with "N of M partitions failed"), as in queue mode. */
static int job_cancelled(json_t *j)
{
    json_t *p;
    size_t i;

    if (strcmp(json_string_value(json_object_get(j, "state")) ?: "", "failed")) return 0;
    json_array_foreach (json_object_get(j, "parts"), i, p)
        if (!strcmp(json_string_value(json_object_get(p, "reason")) ?: "", "cancelled")) return 1;
    return 0;
}

json_t *api_job_view(json_t *j)
{
    static const char *const keep[] = { "id",         "state", "reason", "priority",       "circuit",
                                        "partitions", "done",  "failed", "submitted_unix", "resumed",
                                        "metadata" };
    static const char *const part_keep[] = { "index", "state", "attempts", "reason", "timings_ms" };
    json_t *o = json_object(), *parts = json_array(), *p;
    size_t i;

    for (size_t k = 0; k < sizeof(keep) / sizeof(keep[0]); k++) {
        json_t *v = json_object_get(j, keep[k]);

        if (v) json_object_set_new(o, keep[k], shown(keep[k], v));
    }
    json_array_foreach (json_object_get(j, "parts"), i, p) {
        json_t *q = json_object();

        for (size_t k = 0; k < sizeof(part_keep) / sizeof(part_keep[0]); k++) {
            json_t *v = json_object_get(p, part_keep[k]);

            if (v) json_object_set_new(q, part_keep[k], shown(part_keep[k], v));
        }
        json_array_append_new(parts, q);
    }
    json_object_set_new(o, "parts", parts);
    if (job_cancelled(j)) {
        json_object_set_new(o, "state", json_string("cancelled"));
        json_object_set_new(o, "reason", json_string("cancelled"));
    }
    return o;
}

/* Each request about one job names the tenant: cuzkd answers no_such_job for a job
 * that is not the tenant's, so the ownership check costs no round trip of its own.
 * A long poll holds no connection to cuzkd while it sleeps: it looks at the job
 * (one short request), sleeps on the job-end doorbell (bell.c, rung by watch.c's one
 * subscription), and looks again when rung, at its deadline, and at least every
 * 10 s (a watch that died without a reset rings nothing). */
void api_get_job(struct api_resp *r, uint64_t id, const struct api_tenant *t, long wait_s, int client_fd)
{
    uint64_t deadline = os_now_ns() + (uint64_t)(wait_s > 0 ? wait_s : 0) * 1000000000u, mark;
    json_t *j;

    for (;;) {
        const char *st;

        /* The mark before the look: a job that ends after the look rings after it. */
        mark = api_bell_mark();
        if (!(j = api_job_of(id, t, r))) return;
        st = json_string_value(json_object_get(j, "state")) ?: "";
        if (strcmp(st, "running") || wait_s <= 0 || os_now_ns() >= deadline) break;
        json_decref(j);
        if (api_bell_wait(mark, id,
                          deadline < os_now_ns() + 10000000000ull ? deadline : os_now_ns() + 10000000000ull,
                          client_fd) < 0) {
            api_problem(r, 503, "refused", "client_gone", "the client hung up", NULL);
            return;
        }
    }
    {
        json_t *v = api_job_view(j), *cbv = api_callback_view(id);

        if (cbv) json_object_set_new(v, "callback", cbv); /* ?callback_url='s delivery */
        api_json(r, 200, v);
    }
    json_decref(j);
}

/* A 400 about the partition index, said with the path's name for it, k. */
void api_proof_range(struct api_resp *r, uint64_t id, uint64_t k, long parts)
{
    char d[128];

    if (parts >= 0)
        snprintf(d, sizeof(d), "k = %" PRIu64 ": job %" PRIu64 " has %ld partition(s), k from 0 to %ld", k,
                 id, parts, parts - 1);
    else
        snprintf(d, sizeof(d), "k = %" PRIu64 ": job %" PRIu64 " has no such partition", k, id);
    api_problem(r, 400, "usage", PROTO_E_BAD_REQUEST, d, json_pack("{s:s}", "parameter", "k"));
}

void api_get_proof(struct api_resp *r, uint64_t id, uint64_t k, const struct api_tenant *t)
{
    json_t *err = NULL;
    json_t *rep = api_ctl(json_pack("{s:s,s:I,s:I,s:s}", "req", PROTO_REQ_PROOF, "job", (json_int_t)id,
                                    "index", (json_int_t)k, "tenant", t->name),
                          NULL, 0, r, &err);
    /* cuzkd names its request's member ("index"): the tenant sent k */
    if (!rep && r->status == 400 &&
        strstr(json_string_value(json_object_get(err, "message")) ?: "", "range")) {
        json_t *j = api_job_of(id, t, r);

        api_proof_range(r, id, k, j ? (long)json_integer_value(json_object_get(j, "partitions")) : -1);
        json_decref(j);
    }
    json_decref(err);
    if (!rep) return;
    /* verified: cuzkd's finalizer checks each proof's pairing before it is kept */
    api_json(r, 200,
             json_pack("{s:O,s:O,s:b}", "proof", json_object_get(rep, "proof"), "publicSignals",
                       json_object_get(rep, "public"), "verified", 1));
    json_decref(rep);
}

/* DELETE answers the same for the job's whole life: "cancelled" true once it is
 * cancelled (by this request or an earlier one), false for a job that had ended
 * before; after the job leaves cuzkd's table (cancel: no_such_job) it is read from
 * the store, so the answer stays until the store forgets the job (then 404). */
void api_cancel(struct api_resp *r, uint64_t id, const struct api_tenant *t)
{
    json_t *err = NULL, *j, *v;
    json_t *rep =
        api_ctl(json_pack("{s:s,s:I,s:s}", "req", PROTO_REQ_CANCEL, "job", (json_int_t)id, "tenant", t->name),
                NULL, 0, r, &err);
    int now = rep && !strcmp(json_string_value(json_object_get(rep, "state")) ?: "", "cancelling");
    int gone = !rep && !strcmp(json_string_value(json_object_get(err, "error")) ?: "", PROTO_E_NO_JOB);

    json_decref(err);
    json_decref(rep);
    if (!rep && !gone) return;
    if (!(j = api_job_of(id, t, r))) return;
    v = api_job_view(j);
    json_decref(j);
    api_cancelled(r, id, now, json_string_value(json_object_get(v, "state")));
    json_decref(v);
}

void api_cancelled(struct api_resp *r, uint64_t id, int now, const char *state)
{
    api_json(r, 200,
             json_pack("{s:I,s:b,s:s}", "job", (json_int_t)id, "cancelled",
                       now || !strcmp(state, "cancelled"), "state", state));
}

void api_circuits(struct api_resp *r)
{
    static const char *const keep[] = { "name",   "state",   "fingerprint", "curve",           "constraints",
                                        "public", "signals", "domain_size", "max_input_bytes", "inputs",
                                        "error" };
    json_t *rep = api_ctl(json_pack("{s:s}", "req", PROTO_REQ_CIRCUITS), NULL, 0, r, NULL), *a, *e;
    size_t i;

    if (!rep) return;
    a = json_array();
    json_array_foreach (json_object_get(rep, "circuits"), i, e) {
        json_t *o = json_object();

        for (size_t k = 0; k < sizeof(keep) / sizeof(keep[0]); k++) {
            json_t *v = json_object_get(e, keep[k]);

            if (v) json_object_set_new(o, keep[k], shown(keep[k], v));
        }
        json_object_set_new(o, "has_witness_gen", json_boolean(json_object_get(e, "witness_gen") != NULL));
        json_array_append_new(a, o);
    }
    json_decref(rep);
    api_json(r, 200, json_pack("{s:o}", "circuits", a));
}

/* Ready: every stage has a pid and at least one circuit is resident. Looked up
 * afresh (two control requests, a database round trip in queue mode). */
static void readyz_now(struct api_resp *r)
{
    json_t *st = api_ctl(json_pack("{s:s}", "req", PROTO_REQ_STATUS), NULL, 0, r, NULL), *c, *e;
    size_t i, resident = 0, stages = 0, up = 0;
    const char *why = NULL;

    if (!st) return;
    c = api_ctl(json_pack("{s:s}", "req", PROTO_REQ_CIRCUITS), NULL, 0, r, NULL);
    if (!c) {
        json_decref(st);
        return;
    }
    json_array_foreach (json_object_get(st, "children"), i, e) {
        stages++;
        up += json_integer_value(json_object_get(e, "pid")) > 0;
    }
    json_array_foreach (json_object_get(c, "circuits"), i, e)
        resident += !strcmp(json_string_value(json_object_get(e, "state")) ?: "", "resident");
    if (json_is_true(json_object_get(st, "draining")) || json_is_true(json_object_get(st, "stopping")))
        why = "cuzkd is draining or stopping";
    else if (!stages || up < stages)
        why = "a stage is not running";
    else if (!resident)
        why = "no circuit is resident";
    else if (g_api.cfg.queue[0] && api_queue_ping())
        why = "the fleet's database does not answer (jobs are written there)";
    if (why)
        api_problem(r, 503, "refused", "not_ready", why,
                    json_pack("{s:I,s:I,s:I}", "stages", (json_int_t)stages, "stages_up", (json_int_t)up,
                              "circuits_resident", (json_int_t)resident));
    else
        api_json(r, 200,
                 json_pack("{s:s,s:I,s:I}", "status", "ready", "stages", (json_int_t)stages,
                           "circuits_resident", (json_int_t)resident));
    json_decref(st);
    json_decref(c);
}

/* /readyz needs no token: answered from one look shared by every caller, taken again
 * at most once per READYZ_CACHE_NS by whichever request finds it stale first while
 * the others wait for that look (one at a time), so a crowd of probes costs cuzkd
 * one control connection, not one each. */
#define READYZ_CACHE_NS 1000000000ull

static struct {
    pthread_mutex_t mu;
    uint64_t at; /* os_now_ns of the look; 0 none yet */
    struct api_resp r;
} ready = { .mu = PTHREAD_MUTEX_INITIALIZER };

void api_readyz(struct api_resp *r)
{
    pthread_mutex_lock(&ready.mu);
    if (!ready.at || os_now_ns() - ready.at >= READYZ_CACHE_NS) {
        free(ready.r.body);
        memset(&ready.r, 0, sizeof(ready.r));
        readyz_now(&ready.r);
        ready.at = os_now_ns();
    }
    free(r->body);
    *r = ready.r;
    r->body = ready.r.body ? malloc(ready.r.len ? ready.r.len : 1) : NULL;
    if (r->body) memcpy(r->body, ready.r.body, ready.r.len);
    pthread_mutex_unlock(&ready.mu);
    if (ready.r.body && !r->body) {
        memset(r, 0, sizeof(*r));
        api_problem(r, 500, "internal", PROTO_E_INTERNAL, "out of memory", NULL);
    }
}

/* The stats page in the Prometheus text format (stats_reader.h), read here: the
 * API process runs as cuzkd's user and maps the page read-only. */
void api_metrics(struct api_resp *r)
{
    struct stats_reading t;
    char *buf = NULL;
    size_t len = 0;
    FILE *f;
    int rc = stats_reading_take(&t, g_api.cfg.instance);

    if (rc) {
        api_problem(r, 503, "no_daemon", "no_daemon", "the stats page cannot be read", NULL);
        return;
    }
    if ((f = open_memstream(&buf, &len))) {
        stats_reading_prometheus(f, &t);
        api_waits_prometheus(f);
        fclose(f);
    }
    stats_reading_free(&t);
    if (!buf) {
        api_problem(r, 500, "internal", PROTO_E_INTERNAL, "out of memory", NULL);
        return;
    }
    free(r->body);
    r->status = 200;
    r->body = buf;
    r->len = len;
    r->ctype = "text/plain; version=0.0.4; charset=utf-8";
}
