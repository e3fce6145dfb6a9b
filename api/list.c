/* list.c — GET /v1/jobs, a tenant's jobs newest first (api.h), and the Cuzk-Metadata
 * header a POST may carry. A page is one control request to cuzkd ("jobs",
 * answered from its job store) or, in queue mode, one query of the fleet's database:
 * never one request per job. The cursor is the last job id of the page, so a page
 * reads the same while new jobs come in (they have higher ids). */
#include "api.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

void api_cursor_encode(uint64_t id, char out[32])
{
    char d[24];
    size_t n = (size_t)snprintf(d, sizeof(d), "%" PRIu64, id), o = 0;

    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)(unsigned char)d[i] << 16;

        if (i + 1 < n) v |= (uint32_t)(unsigned char)d[i + 1] << 8;
        if (i + 2 < n) v |= (unsigned char)d[i + 2];
        out[o++] = b64url[v >> 18 & 63];
        out[o++] = b64url[v >> 12 & 63];
        if (i + 1 < n) out[o++] = b64url[v >> 6 & 63];
        if (i + 2 < n) out[o++] = b64url[v & 63];
    }
    out[o] = '\0';
}

int api_cursor_decode(const char *text, uint64_t *id)
{
    char d[24], *e;
    size_t n = strlen(text), o = 0;
    uint32_t v = 0;
    int bits = 0;

    if (!n || n > 27) return -1; /* 20 digits at most */
    for (size_t i = 0; i < n; i++) {
        const char *p = strchr(b64url, text[i]);

        if (!p || !text[i]) return -1;
        v = v << 6 | (uint32_t)(p - b64url);
        if ((bits += 6) >= 8) {
            bits -= 8;
            d[o++] = (char)(v >> bits & 0xff);
        }
    }
    d[o] = '\0';
    if (!o || d[0] < '1' || d[0] > '9' || strspn(d, "0123456789") != o) return -1;
    *id = strtoull(d, &e, 10);
    return *id ? 0 : -1;
}

int api_metadata_header(struct api_resp *r, const char *text, struct api_body *b)
{
    json_error_t je;
    char why[200];
    json_t *m;

    if (!text) return 0;
    if (strlen(text) > PROTO_META_BYTES) {
        snprintf(why, sizeof(why), "Cuzk-Metadata: the header is over %d bytes", PROTO_META_BYTES);
        goto bad;
    }
    if (!(m = json_loads(text, JSON_REJECT_DUPLICATES, &je))) {
        snprintf(why, sizeof(why), "Cuzk-Metadata: not one JSON object: %s", je.text);
        goto bad;
    }
    if (!proto_metadata_valid(m, why + 15, sizeof(why) - 15)) {
        memcpy(why, "Cuzk-Metadata: ", 15);
        json_decref(m);
        goto bad;
    }
    json_decref(b->metadata);
    b->metadata = m;
    return 0;
bad:
    api_problem(r, 400, "usage", PROTO_E_BAD_REQUEST, why, json_pack("{s:s}", "parameter", "Cuzk-Metadata"));
    return -1;
}

/* A job of the page as the tenant sees it (openapi.json's JobSummary), from the
 * control reply's or the queue's element. */
static json_t *summary(json_t *e)
{
    static const char *const keep[] = { "circuit", "state",  "submitted_unix", "partitions",
                                        "done",    "failed", "metadata" };
    json_t *o = json_pack("{s:O}", "job", json_object_get(e, "id"));
    const char *st = json_string_value(json_object_get(e, "state")) ?: "";

    for (size_t k = 0; o && k < sizeof(keep) / sizeof(keep[0]); k++) {
        json_t *v = json_object_get(e, keep[k]);

        if (v && !json_is_null(v)) json_object_set(o, keep[k], v);
    }
    /* The words GET /v1/jobs/ID has for an ended job that did not succeed. */
    if (o && !strcmp(st, "cancelled"))
        json_object_set_new(o, "reason", json_string("cancelled"));
    else if (o && !strcmp(st, "failed"))
        json_object_set_new(o, "reason",
                            json_sprintf("%" JSON_INTEGER_FORMAT " of %" JSON_INTEGER_FORMAT
                                         " partitions failed",
                                         json_integer_value(json_object_get(e, "failed")),
                                         json_integer_value(json_object_get(e, "partitions"))));
    return o;
}

void api_list(struct api_resp *r, const struct api_tenant *t, const struct api_list_query *q)
{
    json_t *rep = NULL, *jobs, *out, *e;
    int more = 0;
    size_t i;

    if (g_api.cfg.queue[0]) {
        if (!(jobs = api_queue_list(r, t, q, &more))) return;
    } else {
        json_t *req =
            json_pack("{s:s,s:s,s:i}", "req", PROTO_REQ_JOBS, "tenant", t->name, "limit", (int)q->limit);

        if (req && q->state) json_object_set_new(req, "state", json_string(q->state));
        if (req && q->circuit) json_object_set_new(req, "circuit", json_string(q->circuit));
        if (req && q->since) json_object_set_new(req, "since", json_integer((json_int_t)q->since));
        if (req && q->before) json_object_set_new(req, "before", json_integer((json_int_t)q->before));
        if (!(rep = api_ctl(req, NULL, 0, r, NULL))) return;
        jobs = json_incref(json_object_get(rep, "jobs"));
        more = json_is_true(json_object_get(rep, "more"));
        json_decref(rep);
    }
    out = json_array();
    json_array_foreach (jobs, i, e) json_array_append_new(out, summary(e));
    rep = json_pack("{s:o}", "jobs", out);
    if (rep && more && json_array_size(jobs)) {
        uint64_t last = (uint64_t)json_integer_value(
            json_object_get(json_array_get(jobs, json_array_size(jobs) - 1), "id"));
        char cur[32], next[256];
        int n;

        api_cursor_encode(last, cur);
        /* the same filters, so that following next walks one list; each value was
         * checked (a state word, a circuit name, digits): nothing to escape */
        n = snprintf(next, sizeof(next), "/v1/jobs?limit=%u", q->limit);
        if (q->state) n += snprintf(next + n, sizeof(next) - (size_t)n, "&state=%s", q->state);
        if (q->circuit) n += snprintf(next + n, sizeof(next) - (size_t)n, "&circuit=%s", q->circuit);
        if (q->since) n += snprintf(next + n, sizeof(next) - (size_t)n, "&since=%" PRId64, q->since);
        snprintf(next + n, sizeof(next) - (size_t)n, "&cursor=%s", cur);
        json_object_set_new(rep, "next_cursor", json_string(cur));
        json_object_set_new(rep, "next", json_string(next));
    }
    json_decref(jobs);
    if (!rep) {
        api_problem(r, 500, "internal", PROTO_E_INTERNAL, "out of memory", NULL);
        return;
    }
    api_json(r, 200, rep);
}
