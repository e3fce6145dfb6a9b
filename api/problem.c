/* problem.c — cuzk-api's answers (api.h): JSON bodies and RFC 9457 problem documents
 * (application/problem+json). A problem's "type" is a name of the CLI's exit table
 * (error.h: usage, format, refused, quota, job_failed, ...), so a script reads the
 * same word from `cuzk` and from the API; "code" is the finer word: the control
 * protocol's error code (protocol.h) or the API's own (unauthorized, bad_json, ...).
 * No path of the server reaches a tenant: cuzkd's sentences name its files (a zkey,
 * the run directory, the control socket), and each path in a detail or a reason is
 * cut to its last part (api_unpath), which still says which file it was. */
#include "api.h"

#include <stdlib.h>
#include <string.h>

void api_json(struct api_resp *r, int status, json_t *j)
{
    free(r->body);
    r->status = status;
    r->ctype = "application/json";
    r->body = j ? json_dumps(j, JSON_COMPACT) : NULL;
    r->len = r->body ? strlen(r->body) : 0;
    json_decref(j);
    if (!r->body) {
        r->status = 500;
        r->body = strdup("{}");
        r->len = r->body ? 2 : 0;
    }
}

static const char *title_of(int status)
{
    switch (status) {
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 413: return "Content Too Large";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Content";
    case 429: return "Too Many Requests";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return status >= 500 ? "Internal Server Error" : "Error";
    }
}

/* Where a path may start: the text's start or after one of these. */
static int path_may_start(const char *s, const char *p)
{
    return p == s || strchr(" \t\"'(=,:[", p[-1]);
}

/* Where a path ends: white space, quotes, and what a sentence puts after one. */
static int path_ends(char c)
{
    return !c || strchr(" \t\n\"'),;:]", c);
}

char *api_unpath(const char *text)
{
    char *out = strdup(text ? text : ""), *w = out;
    const char *p = text ? text : "";

    if (!out) return NULL;
    while (*p) {
        const char *e, *base;

        if (*p != '/' || !path_may_start(text, p)) {
            *w++ = *p++;
            continue;
        }
        for (e = p; !path_ends(*e); e++) {
        }
        /* its last named part: "/srv/x/circuit.zkey" -> "circuit.zkey" */
        while (e > p + 1 && e[-1] == '/') e--;
        for (base = e; base > p && base[-1] != '/'; base--) {
        }
        while (*p && !path_ends(*p)) p++;
        if (base == e) {
            *w++ = '/';
            continue;
        }
        memmove(w, base, (size_t)(e - base));
        w += e - base;
    }
    *w = '\0';
    return out;
}

void api_problem(struct api_resp *r, int status, const char *type, const char *code, const char *detail,
                 json_t *extra)
{
    char *d = api_unpath(detail);
    json_t *o = json_pack("{s:s,s:s,s:i,s:s,s:s}", "type", type, "title", title_of(status), "status", status,
                          "detail", d ? d : "", "code", code);

    free(d);
    if (o && extra) json_object_update(o, extra);
    json_decref(extra);
    api_json(r, status, o);
    r->status = status;
    r->ctype = "application/problem+json";
}

/* A control error code: its HTTP status and exit-table name. */
static const struct {
    const char *code;
    int status;
    const char *type;
    int retry; /* Retry-After seconds; 0 none */
} ctl_map[] = {
    { PROTO_E_BAD_JSON, 400, "usage", 0 },         { PROTO_E_BAD_REQUEST, 400, "usage", 0 },
    { PROTO_E_NOT_FOUND, 400, "io", 0 },           { PROTO_E_BAD_INPUT, 422, "format", 0 },
    { PROTO_E_TOO_BIG, 413, "refused", 0 },        { PROTO_E_INPUT_LIMIT, 413, "refused", 0 },
    { PROTO_E_FULL, 503, "refused", 5 },           { PROTO_E_BUSY, 503, "refused", 5 },
    { PROTO_E_NO_JOB, 404, "refused", 0 },         { PROTO_E_NO_CIRCUIT, 404, "refused", 0 },
    { PROTO_E_DRAINING, 503, "refused", 30 },      { PROTO_E_TIMEOUT, 504, "timeout", 0 },
    { PROTO_E_PERM, 403, "refused", 0 },           { PROTO_E_NOT_OWNER, 404, "refused", 0 },
    { PROTO_E_NOT_PERMITTED, 403, "refused", 0 },  { PROTO_E_QUOTA, 429, "quota", 10 },
    { PROTO_E_CONFLICT, 409, "refused", 0 },       { PROTO_E_NOT_READY, 409, "refused", 1 },
    { PROTO_E_PART_FAILED, 422, "job_failed", 0 }, { PROTO_E_STORE, 503, "internal", 10 },
};

void api_ctl_problem(struct api_resp *r, json_t *reply)
{
    const char *code = json_string_value(json_object_get(reply, "error"));
    const char *msg = json_string_value(json_object_get(reply, "message"));

    if (!code) code = PROTO_E_INTERNAL;
    for (size_t i = 0; i < sizeof(ctl_map) / sizeof(ctl_map[0]); i++)
        if (!strcmp(code, ctl_map[i].code)) {
            api_problem(r, ctl_map[i].status, ctl_map[i].type, code, msg, NULL);
            r->retry_after = ctl_map[i].retry;
            return;
        }
    api_problem(r, 500, "internal", code, msg, NULL);
}
