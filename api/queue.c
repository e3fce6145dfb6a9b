/* queue.c — cuzk-api in queue mode (--queue, api.h): the fleet without a shared file
 * system. A POST is checked against the local cuzkd's circuits (the name declared
 * here, its fingerprint) and written, inputs and all, into the fleet's PostgreSQL
 * (fleet_job_add_inputs); any cuzkd of the fleet that has that circuit with the same
 * fingerprint claims its partitions and stores the proofs in the table. GET, the
 * proofs and DELETE answer from the table (fleet_pg.h), so every server's API
 * answers for every job; job ids are the queue's. ?wait=S sleeps on the job-end
 * doorbell (queue_db.c). What the table says of the fleet's machines (which daemon
 * proved what) is not passed on to tenants. */
#include "api.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <unistd.h>

#include "store/fleet_pg.h"
#include "base/os.h"

/* --queue URL (never with a password: argv is every local user's to read) and
 * --queue-fd N (the URL read from descriptor N: how cuzkd hands over its own, which
 * may hold the password of its 0600 config file). */
int api_queue_opt(struct api_cfg *c, const char *name, char *v)
{
    char *e;
    long fd;
    ssize_t n;
    size_t len = 0;

    if (!strcmp(name, "queue")) {
        if (fleet_url_has_password(v)) {
            fleet_url_scrub(v);
            fprintf(stderr,
                    "cuzk-api: --queue: a password on the command line is visible to every local "
                    "user (/proc/PID/cmdline): give it in a PGPASSFILE (mode 0600) or by --queue-fd\n");
            return -1;
        }
        if (!fleet_is_url(v) && !strchr(v, '=')) goto bad;
        if (strlen(v) >= sizeof(c->queue)) goto bad;
        memcpy(c->queue, v, strlen(v) + 1);
        return 0;
    }
    fd = strtol(v, &e, 10);
    if (*e || fd < 0 || fd > 65535) goto bad;
    while (len + 1 < sizeof(c->queue) &&
           (n = pread((int)fd, c->queue + len, sizeof(c->queue) - 1 - len, (off_t)len)) != 0) {
        if (n < 0) {
            fprintf(stderr, "cuzk-api: --queue-fd %ld: %s\n", fd, strerror(errno));
            return -1;
        }
        len += (size_t)n;
    }
    close((int)fd);
    while (len && (c->queue[len - 1] == '\n' || c->queue[len - 1] == '\r')) len--;
    c->queue[len] = '\0';
    if (len + 1 >= sizeof(c->queue) || !len || memchr(c->queue, '\n', len)) goto bad;
    return 0;
bad:
    fprintf(stderr, "cuzk-api: --%s: expected %s\n", name,
            name[5] ? "a descriptor holding one postgresql:// URL or libpq connection string"
                    : "a postgresql:// URL or libpq connection string (no password)");
    return -1;
}

/* The database did not answer: the detail is logged, the tenant told no more than
 * that (the error names the fleet's hosts). */
static void db_problem(struct api_resp *r, const char *err)
{
    api_qlog("queue: %s", err);
    api_problem(r, 503, "internal", PROTO_E_STORE, "the fleet's queue database does not answer", NULL);
    r->retry_after = 10;
}

/* A handle from the pool, or NULL with r answered. */
static struct fleet *take(struct api_resp *r)
{
    char err[512];
    struct fleet *f = api_queue_take(err, sizeof(err));

    if (!f) db_problem(r, err);
    return f;
}

static void no_job(struct api_resp *r, uint64_t id)
{
    char m[64];

    snprintf(m, sizeof(m), "no job %" PRIu64, id);
    api_problem(r, 404, "refused", PROTO_E_NO_JOB, m, NULL);
}

/* The job as the local mode shows it (openapi.json's Job): partitions, done and
 * failed counted; a cancelled job is "cancelled" with reason "cancelled", as in local mode;
 * the tenant, the end time and each part's done_by (a daemon's id) left out. */
static json_t *job_view(const char *text, int *running)
{
    static const char *const part_keep[] = { "index", "state", "attempts", "reason" };
    json_t *j = json_loads(text, 0, NULL), *o, *parts, *p;
    const char *st = json_string_value(json_object_get(j, "state"));
    size_t i, done = 0, failed = 0;

    if (!j || !st) {
        json_decref(j);
        return NULL;
    }
    *running = !strcmp(st, "running");
    o = json_pack("{s:O,s:s}", "id", json_object_get(j, "id"), "state", st);
    if (!strcmp(st, "cancelled")) json_object_set_new(o, "reason", json_string("cancelled"));
    if (json_is_string(json_object_get(j, "circuit")))
        json_object_set(o, "circuit", json_object_get(j, "circuit"));
    if (json_is_integer(json_object_get(j, "submitted_unix")))
        json_object_set(o, "submitted_unix", json_object_get(j, "submitted_unix"));
    if (json_is_object(json_object_get(j, "metadata")))
        json_object_set(o, "metadata", json_object_get(j, "metadata"));
    parts = json_array();
    json_array_foreach (json_object_get(j, "parts"), i, p) {
        json_t *q = json_object();
        const char *ps = json_string_value(json_object_get(p, "state")) ?: "";

        for (size_t k = 0; k < sizeof(part_keep) / sizeof(part_keep[0]); k++) {
            json_t *v = json_object_get(p, part_keep[k]);

            char *u;

            if (!v || json_is_null(v)) continue;
            /* A reason is a daemon's sentence: the server's paths cut, as on one server. */
            if (!strcmp(part_keep[k], "reason") && json_is_string(v) &&
                (u = api_unpath(json_string_value(v)))) {
                json_object_set_new(q, "reason", json_string(u));
                free(u);
            } else
                json_object_set(q, part_keep[k], v);
        }
        done += !strcmp(ps, "done");
        failed += !strcmp(ps, "failed");
        json_array_append_new(parts, q);
    }
    json_object_set_new(o, "partitions", json_integer((json_int_t)json_array_size(parts)));
    json_object_set_new(o, "done", json_integer((json_int_t)done));
    json_object_set_new(o, "failed", json_integer((json_int_t)failed));
    json_object_set_new(o, "parts", parts);
    json_decref(j);
    return o;
}

/* fleet_job_json, once more on a fresh connection when the first was lost. */
static int job_text(struct api_resp *r, uint64_t id, const struct api_tenant *t, char **text)
{
    char err[512];
    struct fleet *f;
    int rc = -ECONNREFUSED;

    for (int tries = 0; tries < 2 && rc == -ECONNREFUSED; tries++) {
        if (!(f = take(r))) return -1;
        rc = fleet_job_json(f, id, t->name, text, err, sizeof(err));
        api_queue_put(f, rc);
    }
    if (rc == -ENOENT)
        no_job(r, id);
    else if (rc)
        db_problem(r, err);
    return rc ? -1 : 0;
}

/* The job's view now; NULL with r answered. */
static json_t *job_now(struct api_resp *r, uint64_t id, const struct api_tenant *t, int *running)
{
    char *text;
    json_t *v;

    if (job_text(r, id, t, &text)) return NULL;
    v = job_view(text, running);
    free(text);
    if (!v) api_problem(r, 500, "internal", PROTO_E_INTERNAL, "the queue's job could not be read", NULL);
    return v;
}

void api_queue_get_job(struct api_resp *r, uint64_t id, const struct api_tenant *t, long wait_s,
                       int client_fd)
{
    uint64_t deadline = os_now_ns() + (uint64_t)wait_s * 1000000000u, mark;
    json_t *v;
    int running;

    for (;;) {
        /* The mark before the look: a job that ends after the look rings after it. */
        mark = api_bell_mark();
        if (!(v = job_now(r, id, t, &running))) return;
        if (!running || wait_s <= 0 || os_now_ns() >= deadline) break;
        /* Rung, or the time is up: look again. At least every 10 s as well: a doorbell
         * connection that died without a reset (a dropped route) rings nothing. */
        if (api_bell_wait(mark, id,
                          deadline < os_now_ns() + 10000000000ull ? deadline : os_now_ns() + 10000000000ull,
                          client_fd) < 0) {
            json_decref(v);
            api_problem(r, 503, "refused", "client_gone", "the client hung up", NULL);
            return;
        }
        json_decref(v);
    }
    api_json(r, 200, v);
}

void api_queue_get_proof(struct api_resp *r, uint64_t id, uint64_t k, const struct api_tenant *t)
{
    char err[512], *proof = NULL, *pub = NULL, *text;
    struct fleet *f;
    json_t *jp, *js;
    int rc = -ECONNREFUSED;

    for (int tries = 0; tries < 2 && rc == -ECONNREFUSED; tries++) {
        if (!(f = take(r))) return;
        rc = k < 4096 ? fleet_part_proof(f, id, (uint32_t)k, t->name, &proof, &pub, err, sizeof(err))
                      : -ENOENT;
        api_queue_put(f, rc);
    }
    if (rc == -ENOENT) {
        /* No such job, or no such partition of one: 404 or 400, as cuzkd says them. */
        json_t *j;

        if (job_text(r, id, t, &text)) return;
        j = json_loads(text, 0, NULL);
        free(text);
        api_proof_range(r, id, k, j ? (long)json_array_size(json_object_get(j, "parts")) : -1);
        json_decref(j);
        return;
    }
    if (rc == -EAGAIN) {
        api_problem(r, 409, "refused", PROTO_E_NOT_READY, "the partition is not done yet", NULL);
        r->retry_after = 1;
        return;
    }
    if (rc == -EIO) {
        api_problem(r, 422, "job_failed", PROTO_E_PART_FAILED, err, NULL);
        return;
    }
    if (rc) {
        db_problem(r, err);
        return;
    }
    jp = json_loads(proof, 0, NULL);
    js = json_loads(pub, 0, NULL);
    free(proof);
    free(pub);
    if (json_is_object(jp) && json_is_array(js))
        api_json(r, 200, json_pack("{s:o,s:o,s:b}", "proof", jp, "publicSignals", js, "verified", 1));
    else {
        json_decref(jp);
        json_decref(js);
        api_problem(r, 500, "internal", PROTO_E_INTERNAL, "the stored proof does not read", NULL);
    }
}

void api_queue_cancel(struct api_resp *r, uint64_t id, const struct api_tenant *t)
{
    char err[512];
    struct fleet *f;
    int rc = -ECONNREFUSED;

    for (int tries = 0; tries < 2 && rc == -ECONNREFUSED; tries++) {
        if (!(f = take(r))) return;
        rc = fleet_job_cancel(f, id, t->name, err, sizeof(err));
        api_queue_put(f, rc);
    }
    if (rc == -ENOENT)
        no_job(r, id);
    else if (rc < 0)
        db_problem(r, err);
    else { /* cancelled now (1), or ended already (0): which way, as in local mode */
        int running;
        json_t *v = job_now(r, id, t, &running);

        if (v) api_cancelled(r, id, rc == 1, json_string_value(json_object_get(v, "state")));
        json_decref(v);
    }
}

/* The circuit's fingerprint here; NULL with r answered (404 undeclared, 503 not
 * described yet or failed here). */
static char *local_fingerprint(struct api_resp *r, const char *circuit)
{
    json_t *c = api_circuit(circuit, r);
    const char *fp = json_string_value(json_object_get(c, "fingerprint"));
    char *out = fp && *fp ? strdup(fp) : NULL;
    char m[160];

    if (c && !out) {
        snprintf(m, sizeof(m), "circuit \"%.64s\" is %s here: no fingerprint to queue it under", circuit,
                 json_string_value(json_object_get(c, "state")) ?: "not loaded");
        api_problem(r, 503, "refused", PROTO_E_NOT_READY, m, NULL);
        r->retry_after = 5;
    }
    json_decref(c);
    return out;
}

/* The inputs of the body (its memfd mapped at bytes, b->stored long): the bytes
 * for an object or a .wtns, each frame's for an array (body.c; the signals were
 * checked as the body arrived). 0, or -1 with r set. */
static int body_inputs(struct api_resp *r, const struct api_body *b, int wtns, const unsigned char *bytes,
                       struct fleet_input **in, uint32_t *n)
{
    uint64_t at = 0;

    if (wtns && (b->stored < 4 || memcmp(bytes, "wtns", 4))) {
        api_problem(r, 422, "format", PROTO_E_BAD_INPUT, "the body is not a .wtns (no \"wtns\" magic)", NULL);
        return -1;
    }
    *n = b->framed ? b->count : 1;
    if (!(*in = calloc(*n, sizeof(**in)))) {
        api_problem(r, 500, "internal", PROTO_E_INTERNAL, "out of memory", NULL);
        return -1;
    }
    if (!b->framed) {
        (*in)[0] = (struct fleet_input){ .bytes = bytes, .len = b->stored, .wtns = wtns };
        return 0;
    }
    for (uint32_t i = 0; i < *n; i++) {
        uint32_t len;

        if (at + 4 > b->stored) break;
        len = (uint32_t)bytes[at] | (uint32_t)bytes[at + 1] << 8 | (uint32_t)bytes[at + 2] << 16 |
            (uint32_t)bytes[at + 3] << 24;

        if (at + 4 + len > b->stored) break;
        (*in)[i] = (struct fleet_input){ .bytes = bytes + at + 4, .len = len };
        at += 4 + (uint64_t)len;
    }
    if (at == b->stored) return 0;
    free(*in);
    *in = NULL;
    api_problem(r, 500, "internal", PROTO_E_INTERNAL, "the body's frames do not fill it", NULL);
    return -1;
}

void api_queue_submit(struct api_resp *r, const char *circuit, const struct api_tenant *t, struct api_body *b)
{
    int wtns = b->ctype && !strncasecmp(b->ctype, "application/octet-stream", 24), rc = 0;
    char *fp = NULL, err[512], loc[64], *meta = b->metadata ? json_dumps(b->metadata, JSON_COMPACT) : NULL;
    unsigned char *bytes = NULL;
    struct fleet_input *in = NULL;
    struct fleet *f = NULL;
    uint32_t n = 0;
    uint64_t job = 0;

    if (b->idem_key && !api_idem_key_valid(b->idem_key)) {
        api_problem(r, 400, "usage", "bad_request", "Idempotency-Key: 1 to 128 printable ASCII characters",
                    NULL);
        return;
    }
    if (!(fp = local_fingerprint(r, circuit))) return;
    if (b->stored && (bytes = mmap(NULL, b->stored, PROT_READ, MAP_SHARED, b->fd, 0)) == MAP_FAILED) {
        bytes = NULL;
        api_problem(r, 500, "internal", PROTO_E_INTERNAL, strerror(errno), NULL);
        goto out;
    }
    if (body_inputs(r, b, wtns, bytes ? bytes : (const unsigned char *)"", &in, &n) || !(f = take(r)))
        goto out;
    rc = fleet_job_add_inputs(f,
                              &(struct fleet_circuit_job){ .circuit = circuit,
                                                           .fingerprint = fp,
                                                           .tenant = t->name,
                                                           .idem_key = b->idem_key,
                                                           .body_sha256 = b->idem_key ? b->sha256 : NULL,
                                                           .max_running = t->max_running,
                                                           .metadata = meta },
                              n, in, &job, err, sizeof(err));
    if (rc == -EDQUOT) {
        /* The token line's max-running-jobs, counted in the queue (all servers). */
        api_problem(r, 429, "quota", PROTO_E_QUOTA, "this tenant has its max-running-jobs jobs running",
                    json_pack("{s:i}", "max_running_jobs", (int)t->max_running));
        r->retry_after = 5;
        rc = 0;
    } else if (rc == -EEXIST)
        api_problem(r, 409, "refused", PROTO_E_CONFLICT,
                    "this Idempotency-Key was used with another body or circuit", NULL);
    else if (rc == -EINVAL)
        api_problem(r, 400, "usage", PROTO_E_BAD_REQUEST, err, NULL);
    else if (rc < 0)
        db_problem(r, err);
    else {
        snprintf(loc, sizeof(loc), "/v1/jobs/%" PRIu64, job);
        snprintf(r->location, sizeof(r->location), "%s", loc);
        json_t *o = json_pack("{s:I,s:s,s:I,s:b,s:s}", "job", (json_int_t)job, "circuit", circuit,
                              "partitions", (json_int_t)n, "existing", rc == 0, "location", loc);

        if (o && rc == 0) { /* a key seen before: the first job's metadata, as it was stored */
            struct api_resp w = { 0 };
            int running;
            json_t *v;

            api_queue_put(f, rc);
            f = NULL;
            if ((v = job_now(&w, job, t, &running)) && json_object_get(v, "metadata"))
                json_object_set(o, "metadata", json_object_get(v, "metadata"));
            json_decref(v);
            free(w.body);
        } else if (o && b->metadata)
            json_object_set(o, "metadata", b->metadata);
        api_json(r, 202, o);
    }
out:
    if (f) api_queue_put(f, rc);
    free(in);
    if (bytes) munmap(bytes, b->stored);
    free(fp);
    free(meta);
}

json_t *api_queue_proofs(uint64_t id, const struct api_tenant *t, size_t offset, size_t limit)
{
    char err[512], *text = NULL;
    struct api_resp ignored = { 0 };
    struct fleet *f;
    json_t *a;
    int rc = -ECONNREFUSED;

    for (int tries = 0; tries < 2 && rc == -ECONNREFUSED; tries++) {
        if (!(f = take(&ignored))) break;
        rc = fleet_part_proofs(f, id, (uint32_t)offset, (uint32_t)limit, t->name, &text, err, sizeof(err));
        api_queue_put(f, rc);
    }
    free(ignored.body);
    if (rc) {
        if (rc != -ECONNREFUSED) api_qlog("queue: %s", err);
        return NULL;
    }
    a = json_loads(text, 0, NULL);
    free(text);
    if (!json_is_array(a)) {
        json_decref(a);
        return NULL;
    }
    return a;
}

json_t *api_queue_list(struct api_resp *r, const struct api_tenant *t, const struct api_list_query *q,
                       int *more)
{
    char err[512], *text = NULL;
    struct fleet *f;
    json_t *a;
    int rc = -ECONNREFUSED;

    for (int tries = 0; tries < 2 && rc == -ECONNREFUSED; tries++) {
        if (!(f = take(r))) return NULL;
        rc = fleet_jobs_list(f, t->name, q->state, q->circuit, q->since, q->before, q->limit, &text, more,
                             err, sizeof(err));
        api_queue_put(f, rc);
    }
    if (rc) {
        db_problem(r, err);
        return NULL;
    }
    a = json_loads(text, 0, NULL);
    free(text);
    if (!json_is_array(a)) {
        json_decref(a);
        api_problem(r, 500, "internal", PROTO_E_INTERNAL, "the queue's job list could not be read", NULL);
    }
    return a;
}
