/* control.c — cuzkd's side of the control protocol: framing, parsing, replies, job
 * status (control.h; the checks of a submit's files are submit_check.c). No sockets
 * here. */
#include "supervisor/control.h"
#include "supervisor/circuit_decl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int control_fail(struct control_err *e, const char *code, int rc, const char *fmt, ...)
{
    va_list ap;

    e->code = code;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof(e->message), fmt, ap);
    va_end(ap);
    return rc;
}

static const struct {
    const char *name;
    enum control_kind kind;
} kinds[] = {
    { PROTO_REQ_SUBMIT, CONTROL_SUBMIT },     { PROTO_REQ_STATUS, CONTROL_STATUS },
    { PROTO_REQ_WAIT, CONTROL_WAIT },         { PROTO_REQ_CANCEL, CONTROL_CANCEL },
    { PROTO_REQ_RESTART, CONTROL_RESTART },   { PROTO_REQ_DRAIN, CONTROL_DRAIN },
    { PROTO_REQ_SHUTDOWN, CONTROL_SHUTDOWN }, { PROTO_REQ_PRELOAD, CONTROL_PRELOAD },
    { PROTO_REQ_EVICT, CONTROL_EVICT },       { PROTO_REQ_CIRCUITS, CONTROL_CIRCUITS },
    { PROTO_REQ_RELOAD, CONTROL_RELOAD },     { PROTO_REQ_PROOF, CONTROL_PROOF },
    { PROTO_REQ_WATCH, CONTROL_WATCH },       { PROTO_REQ_JOBS, CONTROL_JOBS },
    { PROTO_REQ_PROOFS, CONTROL_PROOFS },
};

/* *v = member k of o, NULL when it is missing: an error when it is required, saying
 * what it should be (what: after "\"k\" is required"). */
static int member(json_t *o, const char *k, int required, const char *what, json_t **v, struct control_err *e)
{
    *v = json_object_get(o, k);
    if (!*v && required)
        return control_fail(e, PROTO_E_BAD_REQUEST, -EINVAL, "\"%s\" is required%s", k, what);
    return 0;
}

static int get_str(json_t *o, const char *k, int required, const char **out, struct control_err *e)
{
    json_t *v;
    int rc;

    *out = NULL;
    if ((rc = member(o, k, required, " (a string)", &v, e)) || !v) return rc;
    if (!json_is_string(v) || !json_string_length(v))
        return control_fail(e, PROTO_E_BAD_REQUEST, -EINVAL, "\"%s\" must be a non-empty string", k);
    if (strlen(json_string_value(v)) != json_string_length(v))
        return control_fail(e, PROTO_E_BAD_REQUEST, -EINVAL, "\"%s\" contains a NUL byte", k);
    *out = json_string_value(v);
    return 0;
}

static int get_int(json_t *o, const char *k, int required, json_int_t lo, json_int_t hi, int *has,
                   json_int_t *out, struct control_err *e)
{
    json_t *v;
    int rc;

    *has = 0;
    if ((rc = member(o, k, required, " (a number)", &v, e)) || !v) return rc;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return control_fail(e, PROTO_E_BAD_REQUEST, -EINVAL,
                            "\"%s\" must be a whole number from %lld to %lld", k, (long long)lo,
                            (long long)hi);
    *has = 1;
    *out = json_integer_value(v);
    return 0;
}

static bool text_valid(const char *p)
{
    for (; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f) return false;
    return true;
}

/* A file of the request, F = {"fd":I,"path":P} (control.h). A bare path string is
 * refused with the sentence that says what to send instead. */
static int get_file(json_t *o, const char *k, int required, uint32_t n_fds, const char **path, int *fd,
                    struct control_err *e)
{
    json_t *v, *f, *p;
    int rc;

    *path = NULL;
    *fd = -1;
    if ((rc = member(o, k, required, ": {\"fd\":I,\"path\":P}", &v, e)) || !v) return rc;
    if (json_is_string(v))
        return control_fail(e, PROTO_E_BAD_REQUEST, -EINVAL,
                            "\"%s\" is a path: cuzkd opens no "
                            "path a client names; pass the open file over SCM_RIGHTS and send "
                            "{\"fd\":I,\"path\":P} with \"fds\":N (cuzk prove does this)",
                            k);
    f = json_object_get(v, "fd");
    p = json_object_get(v, "path");
    if (!json_is_object(v) || !json_is_integer(f) || !json_is_string(p))
        return control_fail(e, PROTO_E_BAD_REQUEST, -EINVAL,
                            "\"%s\" must be {\"fd\":I,"
                            "\"path\":P}",
                            k);
    if (json_integer_value(f) < 0 || json_integer_value(f) >= (json_int_t)n_fds)
        return control_fail(e, PROTO_E_BAD_REQUEST, -EINVAL,
                            "\"%s\": fd %lld is not one of the "
                            "%u descriptor(s) the request passed (\"fds\")",
                            k, (long long)json_integer_value(f), n_fds);
    if (!json_string_length(p) || strlen(json_string_value(p)) != json_string_length(p) ||
        json_string_length(p) >= JOBTAB_PATH_LEN || !text_valid(json_string_value(p)))
        return control_fail(e, PROTO_E_BAD_REQUEST, -EINVAL,
                            "\"%s\": \"path\" must be 1 to %d "
                            "bytes of text (it names the file in messages)",
                            k, JOBTAB_PATH_LEN - 1);
    *path = json_string_value(p);
    *fd = (int)json_integer_value(f);
    return 0;
}

/* Whether every byte of p is in set (a C string of allowed characters; NULL: printable
 * ASCII) and p is 1 to max bytes long. */
static bool chars_valid(const char *p, const char *set, size_t max)
{
    size_t n = strlen(p);

    if (!n || n > max) return false;
    for (; *p; p++)
        if (set ? !strchr(set, *p) : (unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e) return false;
    return true;
}

/* A submit's fields for a client that keeps no files (protocol.h): "results",
 * "tenant", "idempotency_key" with "body_sha256". */
static const char tenant_set[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-";

static int submit_service_fields(struct control_req *r, struct control_err *e)
{
    const char *res;
    int rc;

    if ((rc = get_str(r->root, "results", 0, &res, e)) ||
        (rc = get_str(r->root, "tenant", 0, &r->tenant, e)) ||
        (rc = get_str(r->root, "idempotency_key", 0, &r->idem_key, e)) ||
        (rc = get_str(r->root, "body_sha256", r->idem_key != NULL, &r->body_sha256, e)))
        return rc;
    if (res && strcmp(res, "store"))
        return control_fail(e, PROTO_E_BAD_REQUEST, -EINVAL, "\"results\" is \"store\" or absent");
    r->results_store = res != NULL;
    if (r->results_store && json_object_get(r->root, "out_dir"))
        return control_fail(e, PROTO_E_BAD_REQUEST, -EINVAL,
                            "a submit has \"out_dir\" or \"results\":\"store\", not both");
    if (r->tenant && !chars_valid(r->tenant, tenant_set, CONTROL_TENANT_MAX - 1))
        return control_fail(e, PROTO_E_BAD_REQUEST, -EINVAL,
                            "\"tenant\" must be 1 to %d of letters, digits, '.', '_' and '-'",
                            CONTROL_TENANT_MAX - 1);
    if (r->idem_key && !chars_valid(r->idem_key, NULL, CONTROL_IDEM_MAX - 1))
        return control_fail(e, PROTO_E_BAD_REQUEST, -EINVAL,
                            "\"idempotency_key\" must be 1 to %d printable ASCII characters",
                            CONTROL_IDEM_MAX - 1);
    if (r->body_sha256 &&
        (strlen(r->body_sha256) != CONTROL_SHA256_HEX - 1 ||
         !chars_valid(r->body_sha256, "0123456789abcdef", 64)))
        return control_fail(e, PROTO_E_BAD_REQUEST, -EINVAL,
                            "\"body_sha256\" must be 64 lower-case hex digits");
    if (r->body_sha256 && !r->idem_key)
        return control_fail(e, PROTO_E_BAD_REQUEST, -EINVAL, "\"body_sha256\" goes with \"idempotency_key\"");
    {
        json_int_t x;
        int has;

        if ((rc = get_int(r->root, "max_running", 0, 1, UINT32_MAX, &has, &x, e))) return rc;
        if (has && !r->tenant)
            return control_fail(e, PROTO_E_BAD_REQUEST, -EINVAL, "\"max_running\" goes with \"tenant\"");
        r->max_running = has ? (uint32_t)x : 0;
    }
    if ((r->metadata = json_object_get(r->root, "metadata"))) {
        char m[200];

        if (!proto_metadata_valid(r->metadata, m, sizeof(m)))
            return control_fail(e, PROTO_E_BAD_REQUEST, -EINVAL, "\"metadata\": %s", m);
    }
    return 0;
}

/* A submit's job source: "witnesses" (.wtns) or "inputs" (input.json + "witness_gen"),
 * how many descriptors it passes ("fds"), and a "circuit" by name or the generator's
 * file. *in: the "inputs" member, NULL for witnesses. */
static int submit_source(struct control_req *r, json_t **in, struct control_err *e)
{
    json_t *w = json_object_get(r->root, "witnesses"), *batch = json_object_get(r->root, "inputs_batch");
    json_int_t x;
    int has, rc;

    *in = json_object_get(r->root, "inputs");
    if ((w != NULL) + (*in != NULL) + (batch != NULL) > 1)
        return control_fail(e, PROTO_E_BAD_REQUEST, -EINVAL,
                            "a job has \"witnesses\" (.wtns), \"inputs\" or \"inputs_batch\" "
                            "(input.json), one of them");
    if (batch) *in = batch;
    if ((rc = get_int(r->root, "fds", 0, 0, 1 << 20, &has, &x, e))) return rc;
    r->n_fds = has ? (uint32_t)x : 0;
    if (!r->n_fds)
        return control_fail(e, PROTO_E_BAD_REQUEST, -EINVAL,
                            "a submit passes its files as "
                            "descriptors (SCM_RIGHTS) and says how many in \"fds\": cuzkd "
                            "opens no path a client names (cuzk prove does this)");
    /* A circuit by name (circuit_decl.h): cuzkd opens the operator's zkey, r1cs
     * and generator; the client passes only its inputs and out dir. */
    if ((rc = get_str(r->root, "circuit", 0, &r->circuit, e))) return rc;
    if (r->circuit && !proto_circuit_name_valid(r->circuit))
        return control_fail(e, PROTO_E_BAD_REQUEST, -EINVAL,
                            "\"circuit\" must be a circuit's name: letters, digits, "
                            "'-', '_' and '.', beginning with a letter or a digit");
    if (r->circuit &&
        (json_object_get(r->root, "zkey") || json_object_get(r->root, "r1cs") ||
         json_object_get(r->root, "witness_gen")))
        return control_fail(e, PROTO_E_BAD_REQUEST, -EINVAL,
                            "a submit names a \"circuit\" or passes its \"zkey\" "
                            "(and r1cs, witness_gen), not both");
    /* the generator is a file like the others: {"fd":I,"path":P}, copied */
    if ((rc = get_file(r->root, "witness_gen", *in != NULL && !r->circuit, r->n_fds, &r->witness_gen,
                       &r->witness_gen_fd, e)))
        return rc;
    if (!*in && r->witness_gen)
        return control_fail(e, PROTO_E_BAD_REQUEST, -EINVAL,
                            "\"witness_gen\" goes with "
                            "\"inputs\" (input.json files), not with \"witnesses\"");
    r->inputs = *in != NULL;
    return 0;
}

/* A submit's other files and options: "zkey", the service fields, "out_dir", "r1cs",
 * "priority" (in this order: the first bad one is the one reported). */
static int submit_options(struct control_req *r, struct control_err *e)
{
    json_int_t x;
    int has, rc;

    if ((rc = get_file(r->root, "zkey", !r->circuit, r->n_fds, &r->zkey, &r->zkey_fd, e)) ||
        (rc = submit_service_fields(r, e)) ||
        (rc = get_file(r->root, "out_dir", !r->results_store, r->n_fds, &r->out_dir, &r->out_fd, e)) ||
        (rc = get_file(r->root, "r1cs", 0, r->n_fds, &r->r1cs, &r->r1cs_fd, e)))
        return rc;
    if ((rc = get_int(r->root, "priority", 0, -PROTO_PRIORITY_MAX, PROTO_PRIORITY_MAX, &has, &x, e)))
        return rc;
    r->priority = has ? (int32_t)x : 0;
    return 0;
}

/* The job's list w: each element a file (as get_file) with an optional "name"; list
 * is the member's name in messages ("witnesses" or "inputs"). */
static int submit_list(struct control_req *r, json_t *w, const char *list, struct control_err *e)
{
    size_t i;
    int rc;

    if (!json_is_array(w) || !json_array_size(w))
        return control_fail(e, PROTO_E_BAD_REQUEST, -EINVAL, "\"%s\" must be a non-empty array of %s paths",
                            list, r->inputs ? "input.json" : ".wtns");
    r->n_witnesses = json_array_size(w);
    r->witnesses = calloc(r->n_witnesses, sizeof(*r->witnesses));
    r->witness_names = calloc(r->n_witnesses, sizeof(*r->witness_names));
    r->witness_fd = calloc(r->n_witnesses, sizeof(*r->witness_fd));
    if (!r->witnesses || !r->witness_names || !r->witness_fd)
        return control_fail(e, PROTO_E_INTERNAL, -ENOMEM, "out of memory");
    for (i = 0; i < r->n_witnesses; i++) {
        json_t *s = json_array_get(w, i);
        char key[32];

        snprintf(key, sizeof(key), "%s[%zu]", list, i);
        {
            /* get_file reads o[key]: wrap the element under its name. */
            json_t *one = json_pack("{s:O}", key, s);

            rc = one ? get_file(one, key, 1, r->n_fds, &r->witnesses[i], &r->witness_fd[i], e)
                     : control_fail(e, PROTO_E_INTERNAL, -ENOMEM, "out of memory");
            json_decref(one); /* the strings live on in s, held by root */
        }
        if (rc) return rc;
        if ((rc = get_str(s, "name", 0, &r->witness_names[i], e))) return rc;
    }
    return 0;
}

/* "inputs_batch":{"fd":I,"path":P,"count":N}: N input.json framed in one file
 * (protocol.h), named "I" with the display path "input-I.json" each. */
static int submit_batch(struct control_req *r, struct control_err *e)
{
    enum { SLOT = 32 }; /* "input-16777215.json" and "16777215", each with its NUL */
    json_int_t x;
    int has, rc;

    if ((rc = get_file(r->root, "inputs_batch", 1, r->n_fds, &r->batch_path, &r->batch_fd, e)) ||
        (rc = get_int(json_object_get(r->root, "inputs_batch"), "count", 1, 1, 1 << 24, &has, &x, e)))
        return rc;
    r->n_witnesses = (size_t)x;
    r->witnesses = calloc(r->n_witnesses, sizeof(*r->witnesses));
    r->witness_names = calloc(r->n_witnesses, sizeof(*r->witness_names));
    r->witness_fd = calloc(r->n_witnesses, sizeof(*r->witness_fd));
    r->batch_text = malloc(r->n_witnesses * 2 * SLOT);
    if (!r->witnesses || !r->witness_names || !r->witness_fd || !r->batch_text)
        return control_fail(e, PROTO_E_INTERNAL, -ENOMEM, "out of memory");
    for (size_t i = 0; i < r->n_witnesses; i++) {
        char *p = r->batch_text + i * 2 * SLOT;

        snprintf(p, SLOT, "input-%zu.json", i);
        snprintf(p + SLOT, SLOT, "%zu", i);
        r->witnesses[i] = p;
        r->witness_names[i] = p + SLOT;
        r->witness_fd[i] = r->batch_fd;
    }
    return 0;
}

static int parse_submit(struct control_req *r, struct control_err *e)
{
    json_t *in;
    int rc;

    if ((rc = submit_source(r, &in, e)) || (rc = submit_options(r, e))) return rc;
    if (json_object_get(r->root, "inputs_batch")) return submit_batch(r, e);
    /* "witnesses" (.wtns) or "inputs" (input.json + "witness_gen"): the list is
     * checked the same way; only the word in messages differs */
    return submit_list(r, in ? in : json_object_get(r->root, "witnesses"), in ? "inputs" : "witnesses", e);
}

/* proof, status, wait, cancel: "job" (optional for status), proof's "index", wait's
 * "timeout_ms", and "tenant" (the HTTP API's: a job of another tenant is no job). */
static int parse_job_request(struct control_req *r, struct control_err *e)
{
    json_int_t x;
    int has, rc;

    if ((rc = get_str(r->root, "tenant", 0, &r->tenant, e))) return rc;
    if (r->tenant && !chars_valid(r->tenant, tenant_set, CONTROL_TENANT_MAX - 1))
        return control_fail(e, PROTO_E_BAD_REQUEST, -EINVAL,
                            "\"tenant\" must be 1 to %d of letters, digits, '.', '_' and '-'",
                            CONTROL_TENANT_MAX - 1);

    if (r->kind == CONTROL_PROOF || r->kind == CONTROL_PROOFS) {
        if ((rc = get_int(r->root, "index", 1, 0, UINT32_MAX, &has, &x, e))) return rc;
        r->has_index = 1;
        r->index = (uint32_t)x;
    }
    if (r->kind == CONTROL_PROOFS) {
        if ((rc = get_int(r->root, "count", 1, 1, PROTO_PROOFS_PAGE_MAX, &has, &x, e))) return rc;
        r->count = (uint32_t)x;
    }
    if ((rc = get_int(r->root, "job", r->kind != CONTROL_STATUS, 0, INT64_MAX, &has, &x, e))) return rc;
    r->has_job = has;
    r->job = (uint64_t)x;
    if (r->kind == CONTROL_WAIT) {
        if ((rc = get_int(r->root, "timeout_ms", 0, 0, INT64_MAX / 2, &has, &x, e))) return rc;
        if (has) r->timeout_ms = x;
    }
    return 0;
}

/* jobs: a page of the job store's jobs (protocol.h). */
static int parse_jobs(struct control_req *r, struct control_err *e)
{
    static const char *const states[] = { "running", "done", "failed", "cancelled" };
    json_int_t x;
    int has, rc, known = 0;

    if ((rc = get_str(r->root, "tenant", 0, &r->tenant, e)) ||
        (rc = get_str(r->root, "state", 0, &r->state_filter, e)) ||
        (rc = get_str(r->root, "circuit", 0, &r->circuit_filter, e)))
        return rc;
    if (r->tenant && !chars_valid(r->tenant, tenant_set, CONTROL_TENANT_MAX - 1))
        return control_fail(e, PROTO_E_BAD_REQUEST, -EINVAL,
                            "\"tenant\" must be 1 to %d of letters, digits, '.', '_' and '-'",
                            CONTROL_TENANT_MAX - 1);
    for (size_t i = 0; r->state_filter && i < sizeof(states) / sizeof(states[0]); i++)
        known |= !strcmp(r->state_filter, states[i]);
    if (r->state_filter && !known)
        return control_fail(e, PROTO_E_BAD_REQUEST, -EINVAL,
                            "\"state\" is running, done, failed or cancelled");
    if ((rc = get_int(r->root, "since", 0, 0, INT64_MAX, &has, &x, e))) return rc;
    r->since = has ? x : 0;
    if ((rc = get_int(r->root, "before", 0, 1, INT64_MAX, &has, &x, e))) return rc;
    r->before = has ? (uint64_t)x : 0;
    if ((rc = get_int(r->root, "limit", 0, 1, PROTO_JOBS_PAGE_MAX, &has, &x, e))) return rc;
    r->limit = has ? (uint32_t)x : PROTO_JOBS_PAGE_DEFAULT;
    return 0;
}

static int parse_restart(struct control_req *r, struct control_err *e)
{
    json_int_t x;
    int has, rc;

    if ((rc = get_str(r->root, "stage", 1, &r->stage, e))) return rc;
    if (strcmp(r->stage, "synth") && strcmp(r->stage, "worker") && strcmp(r->stage, "gpuworker") &&
        strcmp(r->stage, "finalizer"))
        return control_fail(e, PROTO_E_BAD_REQUEST, -EINVAL, "\"stage\" must be synth, worker or finalizer");
    if ((rc = get_int(r->root, "index", 0, 0, 1 << 20, &has, &x, e))) return rc;
    r->has_index = has;
    r->index = has ? (uint32_t)x : 0;
    return 0;
}

static int parse_preload(struct control_req *r, struct control_err *e)
{
    json_int_t x;
    int has, rc;

    if ((rc = get_int(r->root, "fds", 0, 0, 1 << 20, &has, &x, e))) return rc;
    r->n_fds = has ? (uint32_t)x : 0;
    return get_file(r->root, "zkey", 1, r->n_fds, &r->zkey, &r->zkey_fd, e);
}

/* The request's fields by its kind (r->kind set). */
static int parse_fields(struct control_req *r, struct control_err *e)
{
    switch (r->kind) {
    case CONTROL_SUBMIT: return parse_submit(r, e);
    case CONTROL_PROOF:
    case CONTROL_PROOFS:
    case CONTROL_STATUS:
    case CONTROL_WAIT:
    case CONTROL_CANCEL: return parse_job_request(r, e);
    case CONTROL_RESTART: return parse_restart(r, e);
    case CONTROL_JOBS: return parse_jobs(r, e);
    case CONTROL_DRAIN:
    case CONTROL_SHUTDOWN:
    case CONTROL_CIRCUITS:
    case CONTROL_WATCH:
    case CONTROL_RELOAD: return 0;
    case CONTROL_PRELOAD: return parse_preload(r, e);
    case CONTROL_EVICT: return get_str(r->root, "zkey", 1, &r->zkey, e);
    }
    return 0;
}

int control_parse(const char *line, size_t len, struct control_req *r, struct control_err *e)
{
    json_error_t je;
    const char *req;
    int rc;
    size_t i;

    memset(r, 0, sizeof(*r));
    r->timeout_ms = -1;
    r->zkey_fd = r->r1cs_fd = r->out_fd = r->witness_gen_fd = r->batch_fd = -1;
    if (len > PROTO_LINE_MAX)
        return control_fail(e, PROTO_E_TOO_LONG, -EINVAL, "request line longer than %d bytes",
                            PROTO_LINE_MAX);
    r->root = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
    if (!r->root)
        return control_fail(e, PROTO_E_BAD_JSON, -EINVAL,
                            "not valid JSON (column %d: %s); send one object per line", je.column, je.text);
    if (!json_is_object(r->root)) {
        rc = control_fail(e, PROTO_E_BAD_JSON, -EINVAL,
                          "a request is a JSON object like {\"req\":\"status\"}");
        goto err;
    }
    if ((rc = get_str(r->root, "req", 1, &req, e))) goto err;
    for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (!strcmp(req, kinds[i].name)) break;
    if (i == sizeof(kinds) / sizeof(kinds[0])) {
        rc = control_fail(e, PROTO_E_UNKNOWN, -EINVAL,
                          "unknown request \"%.64s\"; known: submit, status, wait, cancel, "
                          "restart, drain, shutdown, preload, evict, circuits, reload, proof, watch",
                          req);
        goto err;
    }
    r->kind = kinds[i].kind;
    if ((rc = parse_fields(r, e))) goto err;
    return 0;
err:
    control_req_free(r);
    return rc;
}

void control_req_free(struct control_req *r)
{
    free(r->witnesses);
    free(r->witness_names);
    free(r->witness_fd);
    free(r->batch_text);
    json_decref(r->root);
    memset(r, 0, sizeof(*r));
}

bool control_name_valid(const char *name)
{
    size_t n = strlen(name);

    return n && n < PIPE_NAME_LEN && !strchr(name, '/') && text_valid(name) && strcmp(name, ".") &&
        strcmp(name, "..");
}

static char *dump_line(json_t *o)
{
    /* ASCII only: names are the clients' (a U+202E or a C1 control in one reaches
     * every reader of status as \uXXXX, never as a character that rewrites a line). */
    char *s = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII), *line;
    size_t n;

    json_decref(o);
    if (!s) return NULL;
    n = strlen(s);
    line = realloc(s, n + 2);
    if (!line) {
        free(s);
        return NULL;
    }
    line[n] = '\n';
    line[n + 1] = '\0';
    return line;
}

char *control_reply_error(const char *code, const char *message)
{
    return dump_line(json_pack("{s:b,s:s,s:s}", "ok", 0, "error", code, "message", message));
}

char *control_reply_ok(json_t *obj)
{
    if (!obj) obj = json_object();
    if (!obj) return NULL;
    json_object_set_new(obj, "ok", json_true());
    return dump_line(obj);
}

static const char *lstate(uint32_t s)
{
    static const char *n[] = { "free",   "queued", "synth", "ready", "proving",
                               "proved", "final",  "done",  "failed" };
    return s < sizeof(n) / sizeof(n[0]) ? n[s] : "?";
}

/* A partition's timeline (pipeline.h, struct pipe_part_times) for `cuzk trace`:
 * {"synth": {"begin_ns", "end_ns" (absent while running), "by"}, "prove": ..,
 * "final": ..}, stages not begun left out. Read while the stages write: each value
 * is whole (atomic), a pair may be one stage behind; the client skips an end < begin. */
static json_t *part_times_json(const struct pipe_part_times *t0)
{
    static const char *const k[PIPE_T_STAGES] = { "synth", "prove", "final" };
    struct pipe_part_times *t = (struct pipe_part_times *)t0; /* atomics: loads only */
    json_t *o = json_object();

    for (unsigned i = 0; o && i < PIPE_T_STAGES; i++) {
        /* Relaxed: a racy reading on purpose; only placement on a timeline. */
        uint64_t b = barrier_load_relaxed(&t->begin_ns[i]);
        uint64_t e = barrier_load_relaxed(&t->end_ns[i]);
        json_t *s;

        if (!b) continue;
        s = json_pack("{s:I,s:i}", "begin_ns", (json_int_t)b, "by", (int)barrier_load_relaxed(&t->who[i]));
        if (s && e) json_object_set_new(s, "end_ns", json_integer((json_int_t)e));
        if (s && i == PIPE_T_SYNTH) {
            /* the NUMA node of its buffer (routing, route.h); absent with a one-share pool */
            uint32_t bn = barrier_load_relaxed(&t->buf_node);

            if (bn) json_object_set_new(s, "buf_node", json_integer((json_int_t)bn - 1));
        }
        if (s) json_object_set_new(o, k[i], s);
    }
    return o;
}

/* A partition's "timings_ms" (protocol.h) from the same timeline: queue_wait from the
 * job's submit to the synth's start, then each stage's own span (witness: the synth's,
 * which reads or computes the witness); null while a stage has not ended (or, for a
 * job resumed by a later cuzkd, never ran in this one). */
json_t *control_part_timings(const struct pipe_part_times *t0, uint64_t submit_ns)
{
    static const char *const k[PIPE_T_STAGES] = { "witness", "prove", "finalize" };
    struct pipe_part_times *t = (struct pipe_part_times *)t0; /* atomics: loads only */
    uint64_t sb = barrier_load_relaxed(&t->begin_ns[PIPE_T_SYNTH]);
    json_t *o =
        json_pack("{s:o}", "queue_wait",
                  sb && submit_ns && sb >= submit_ns ? json_integer((json_int_t)((sb - submit_ns) / 1000000))
                                                     : json_null());

    for (unsigned i = 0; o && i < PIPE_T_STAGES; i++) {
        uint64_t b = barrier_load_relaxed(&t->begin_ns[i]), e = barrier_load_relaxed(&t->end_ns[i]);

        json_object_set_new(o, k[i],
                            b && e >= b ? json_integer((json_int_t)((e - b) / 1000000)) : json_null());
    }
    return o;
}

json_t *control_job_json(const struct jobtab *jt, const struct pipe_partinfo *partinfo, uint32_t slot,
                         int with_parts)
{
    const struct jobtab_job *jb;
    uint32_t st, done = 0, failed = 0;
    json_t *o, *parts;

    if (slot >= jt->hdr->max_jobs) return NULL;
    jb = &jt->jobs[slot];
    /* Acquire: the fields written before the job was published or decided. */
    st = jobtab_word_state(barrier_load_acquire(&((struct jobtab_job *)jb)->word));
    if (st == JOBTAB_FREE) return NULL;
    jobtab_job_counts(jt, slot, &done, &failed);
    o = json_pack("{s:I,s:s,s:i,s:s,s:s,s:i,s:i,s:i}", "id", (json_int_t)jb->id, "state",
                  st == JOBTAB_QUEUED ? "running" : lstate(st), "priority", jb->priority, "zkey",
                  jb->zkey_path, "out_dir", jb->out_dir, "partitions", (int)jb->n_parts, "done", (int)done,
                  "failed", (int)failed);
    if (!o) return NULL;
    if (with_parts) /* the origin of the parts' "times" (CLOCK_MONOTONIC ns) */
        json_object_set_new(o, "submit_ns", json_integer((json_int_t)jb->submit_ns));
    if (st == JOBTAB_FAILED && jb->reason[0])
        json_object_set_new(o, "reason", json_stringn(jb->reason, strnlen(jb->reason, sizeof(jb->reason))));
    if (!with_parts) return o;
    parts = json_array();
    for (uint32_t i = 0; parts && i < jb->n_parts; i++) {
        uint32_t p = jb->first_part + i;
        uint64_t w = jobtab_part_load(jt, p);
        uint32_t ps = jobtab_word_state(w);
        const struct jobtab_part *pt = &jt->parts[p];
        json_t *po = json_pack("{s:i,s:s,s:i}", "index", (int)i, "state", lstate(ps), "attempts",
                               (int)barrier_load_relaxed(&((struct jobtab_part *)pt)->attempts));

        if (!po) continue;
        if (jobtab_word_pid(w)) json_object_set_new(po, "pid", json_integer(jobtab_word_pid(w)));
        if (partinfo) {
            const char *nm = partinfo[p].name;
            char path[JOBTAB_PATH_LEN + PIPE_NAME_LEN + 32];

            json_object_set_new(po, "name", json_stringn(nm, strnlen(nm, PIPE_NAME_LEN)));
            if (ps == JOBTAB_DONE) {
                snprintf(path, sizeof(path), "%s/%s.proof.json", jb->out_dir, nm);
                json_object_set_new(po, "proof", json_string(path));
                snprintf(path, sizeof(path), "%s/%s.public.json", jb->out_dir, nm);
                json_object_set_new(po, "public", json_string(path));
            }
            json_object_set_new(po, "times", part_times_json(&partinfo[p].times));
            json_object_set_new(po, "timings_ms", control_part_timings(&partinfo[p].times, jb->submit_ns));
        }
        if (ps == JOBTAB_FAILED)
            json_object_set_new(po, "reason",
                                json_stringn(pt->reason, strnlen(pt->reason, sizeof(pt->reason))));
        json_array_append_new(parts, po);
    }
    if (parts) json_object_set_new(o, "parts", parts);
    return o;
}

int control_framer_feed(struct control_framer *f, const char *data, size_t n, control_line_fn fn, void *arg)
{
    while (n) {
        const char *nl = memchr(data, '\n', n);
        size_t take = nl ? (size_t)(nl - data) : n;

        if (f->discarding) {
            if (!nl) return 0;
            f->discarding = 0;
            data += take + 1;
            n -= take + 1;
            continue;
        }
        if (f->len + take > PROTO_LINE_MAX) {
            /* Oversized: report once, drop it up to its newline. */
            f->len = 0;
            f->discarding = !nl;
            if (fn(arg, NULL, 0)) return 0;
            if (!nl) return 0;
            data += take + 1;
            n -= take + 1;
            continue;
        }
        if (f->len + take + 1 > f->cap) {
            size_t cap = f->cap ? f->cap : 4096;
            char *b;

            while (cap < f->len + take + 1) cap *= 2;
            if (!(b = realloc(f->buf, cap))) return -ENOMEM;
            f->buf = b;
            f->cap = cap;
        }
        memcpy(f->buf + f->len, data, take);
        f->len += take;
        if (!nl) return 0;
        data += take + 1;
        n -= take + 1;
        {
            size_t len = f->len;

            if (len && f->buf[len - 1] == '\r') len--;
            f->len = 0;
            if (len && fn(arg, f->buf, len)) return 0;
        }
    }
    return 0;
}

void control_framer_free(struct control_framer *f)
{
    free(f->buf);
    memset(f, 0, sizeof(*f));
}
