/* http.c — libmicrohttpd's side of cuzk-api (api.h): a thread per connection (a long
 * poll blocks only its own), the route and the bearer token decided when the head
 * has arrived, a POST body counted against its limit and hashed for the idempotency
 * key as it comes, and handed to body.c (scanned, kept in one memfd, reserved in the
 * process's budget), sealed, then handed on. */
#include "api.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <microhttpd.h>
#include <openssl/evp.h>

#include "api/conns.h"
#include "api/tenant_count.h"

enum route {
    R_NONE,
    R_HEALTH,
    R_READY,
    R_METRICS,
    R_CIRCUITS,
    R_SUBMIT,
    R_VKEY,
    R_JOB,
    R_PROOF,
    R_PROOFS,
    R_JOBS,
    R_EVENTS
};

struct req {
    enum route route;
    int get, del, post, options;
    char circuit[65];
    uint64_t id, k;
    uint64_t wait_s;                 /* POST ?wait=S: the proofs inline when the job ends in S seconds */
    const struct api_tenant *tenant; /* &tenant_copy once authenticated */
    struct api_tenant tenant_copy;
    struct api_resp resp; /* status != 0: answered, the rest of the body is dropped */
    struct api_body body;
    struct api_rx rx;     /* the body being received (body.c) */
    uint64_t limit, seen; /* seen: the body's bytes so far, kept or dropped */
    const char *limit_of; /* whose limit is q->limit: "circuit", "tenant", "server" */
    EVP_MD_CTX *md;
    int entered;                 /* counted in its tenant's requests in flight (tenant_enter) */
    const char *callback_url;    /* POST ?callback_url= (checked), or NULL */
    struct MHD_Response *stream; /* GET /events: the Server-Sent Events (events.c) */
};

static struct MHD_Daemon *g_mhd;

/* Each tenant's requests in flight (tenant_count.h). */
static struct tenant_count inflight = TENANT_COUNT_INIT;

static uint32_t requests_cap(const struct api_tenant *t)
{
    return t->max_requests ? t->max_requests : API_TENANT_REQUESTS;
}

static int num(const char *s, size_t n, uint64_t *out)
{
    uint64_t v = 0;

    if (!n || n > 18) return -1;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i])) return -1;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    *out = v;
    return 0;
}

/* The path's route; 0, or -1 when no route matches (404). Nothing in it is a path to
 * open: a circuit is a name looked up in cuzkd's list, ids are numbers. */
static int route(struct req *q, const char *url)
{
    const char *p, *e;

    if (!strcmp(url, "/healthz")) return q->route = R_HEALTH, 0;
    if (!strcmp(url, "/readyz")) return q->route = R_READY, 0;
    if (!strcmp(url, "/metrics")) return q->route = R_METRICS, 0;
    if (!strcmp(url, "/v1/circuits")) return q->route = R_CIRCUITS, 0;
    if (!strcmp(url, "/v1/jobs")) return q->route = R_JOBS, 0;
    if (!strncmp(url, "/v1/circuits/", 13)) {
        p = url + 13;
        e = strchr(p, '/');
        if (!e || (strcmp(e, "/proofs") && strcmp(e, "/vkey")) || e == p ||
            (size_t)(e - p) >= sizeof(q->circuit))
            return -1;
        for (const char *c = p; c < e; c++)
            if (!isalnum((unsigned char)*c) && *c != '.' && *c != '_' && *c != '-') return -1;
        memcpy(q->circuit, p, (size_t)(e - p));
        q->circuit[e - p] = '\0';
        return q->route = strcmp(e, "/vkey") ? R_SUBMIT : R_VKEY, 0;
    }
    if (strncmp(url, "/v1/jobs/", 9)) return -1;
    p = url + 9;
    e = strchr(p, '/');
    if (num(p, e ? (size_t)(e - p) : strlen(p), &q->id)) return -1;
    if (!e) return q->route = R_JOB, 0;
    if (!strcmp(e, "/proofs")) return q->route = R_PROOFS, 0;
    if (!strcmp(e, "/events")) return q->route = R_EVENTS, 0;
    if (strncmp(e, "/proofs/", 8) || num(e + 8, strlen(e + 8), &q->k)) return -1;
    return q->route = R_PROOF, 0;
}

static bool method_allowed(const struct req *q)
{
    switch (q->route) {
    case R_SUBMIT: return q->post;
    case R_JOB: return q->get || q->del;
    default: return q->get;
    }
}

/* The Allow header of a route: the methods method_allowed takes (OPTIONS on every one). */
static const char *allow_of(enum route r)
{
    switch (r) {
    case R_SUBMIT: return "POST, OPTIONS";
    case R_JOB: return "GET, HEAD, DELETE, OPTIONS";
    default: return "GET, HEAD, OPTIONS";
    }
}

/* The request's Origin when --cors-origin lets it call (that origin, or any with *):
 * the value of Access-Control-Allow-Origin; else NULL, and no CORS header is sent
 * (the browser then refuses the answer to the page, as without CORS). */
static const char *cors_origin(struct MHD_Connection *c)
{
    const char *o = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");

    if (!g_api.cfg.cors[0] || !o) return NULL;
    if (!strcmp(g_api.cfg.cors, "*")) return "*";
    return strcmp(o, g_api.cfg.cors) ? NULL : g_api.cfg.cors;
}

static const struct api_tenant *auth(struct req *q, struct MHD_Connection *c)
{
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);

    if (!h || strncasecmp(h, "Bearer ", 7)) return NULL;
    h += 7;
    while (*h == ' ') h++;
    return *h && !api_tokens_auth(h, strlen(h), &q->tenant_copy) ? &q->tenant_copy : NULL;
}

/* Whose limit, in words. */
static const char *limit_name(const char *of)
{
    return !strcmp(of, "circuit") ? "this circuit's max-input-bytes"
        : !strcmp(of, "tenant")   ? "this tenant's max-body limit"
                                  : "the server's --max-body";
}

/* POST's limit: the circuit's max-input-bytes, the tenant's max-body, the API's
 * --max-body, whichever is least; a Content-Length over it is refused at once, and
 * one that the in-flight budget cannot hold now (budget.h) too. */
static void begin_body(struct req *q, struct MHD_Connection *c)
{
    json_t *circ = api_circuit(q->circuit, &q->resp);
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    uint64_t lim = g_api.cfg.max_body, v = 0;
    json_int_t m;
    char d[160];

    if (!circ) return;
    m = json_integer_value(json_object_get(circ, "max_input_bytes"));
    q->body.signals = json_incref(json_object_get(circ, "inputs"));
    json_decref(circ);
    q->limit_of = "server";
    if (m > 0 && (uint64_t)m < lim) lim = (uint64_t)m, q->limit_of = "circuit";
    if (q->tenant->max_body && q->tenant->max_body < lim) lim = q->tenant->max_body, q->limit_of = "tenant";
    q->limit = lim;
    if (cl && num(cl, strlen(cl), &v)) v = 0;
    if (v > lim) {
        snprintf(d, sizeof(d), "the body's %" PRIu64 " bytes are over %s of %" PRIu64 " bytes", v,
                 limit_name(q->limit_of), lim);
        api_problem(&q->resp, 413, "refused", PROTO_E_INPUT_LIMIT, d,
                    json_pack("{s:I,s:s}", "limit", (json_int_t)lim, "limit_source", q->limit_of));
        return;
    }
    q->body.ctype = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    if (q->body.ctype && strncasecmp(q->body.ctype, "application/json", 16) &&
        strncasecmp(q->body.ctype, "application/octet-stream", 24)) {
        api_problem(&q->resp, 415, "usage", "unsupported_media_type",
                    "Content-Type: application/json (input.json) or application/octet-stream (.wtns)", NULL);
        return;
    }
    q->body.idem_key = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Idempotency-Key");
    if (api_metadata_header(&q->resp, MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Cuzk-Metadata"),
                            &q->body))
        return;
    q->md = EVP_MD_CTX_new();
    if (!q->md || !EVP_DigestInit_ex(q->md, EVP_sha256(), NULL)) {
        api_problem(&q->resp, 500, "internal", PROTO_E_INTERNAL, "no memory for the body", NULL);
        return;
    }
    api_rx_begin(&q->rx, &q->body, &q->resp, q->tenant_copy.name, v);
}

/* Query parameter name as a number up to max, or def when absent: 0, or -1 with r a 400
 * naming it. */
static int query_num(struct req *q, struct MHD_Connection *c, const char *name, uint64_t max, uint64_t def,
                     uint64_t *out)
{
    const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
    char d[96];

    *out = def;
    if (!v) return 0;
    if (!num(v, strlen(v), out) && *out <= max) return 0;
    snprintf(d, sizeof(d), "%s: a whole number from 0 to %" PRIu64, name, max);
    api_problem(&q->resp, 400, "usage", "bad_request", d, json_pack("{s:s}", "parameter", name));
    return -1;
}

/* GET /v1/jobs's parameters (api.h): 0, or -1 with a 400 naming the one at fault. */
static int list_query(struct req *q, struct MHD_Connection *c, struct api_list_query *lq)
{
    const char *st = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "state");
    const char *ci = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "circuit");
    const char *cu = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "cursor");
    const char *bad = NULL, *why = NULL;
    uint64_t v;

    memset(lq, 0, sizeof(*lq));
    if (query_num(q, c, "since", (uint64_t)1 << 40, 0, &v)) return -1;
    lq->since = (int64_t)v;
    if (query_num(q, c, "limit", PROTO_JOBS_PAGE_MAX, PROTO_JOBS_PAGE_DEFAULT, &v)) return -1;
    lq->limit = (uint32_t)v;
    if (!lq->limit)
        bad = "limit", why = "limit: a whole number from 1 to 200";
    else if (st && strcmp(st, "running") && strcmp(st, "done") && strcmp(st, "failed") &&
             strcmp(st, "cancelled"))
        bad = "state", why = "state: running, done, failed or cancelled";
    else if (ci && !proto_circuit_name_valid(ci))
        bad = "circuit", why = "circuit: a circuit's name (letters, digits, '.', '_', '-')";
    else if (cu && api_cursor_decode(cu, &lq->before))
        bad = "cursor", why = "cursor: not one this API gave (take next_cursor from the previous page)";
    if (bad) {
        api_problem(&q->resp, 400, "usage", "bad_request", why, json_pack("{s:s}", "parameter", bad));
        return -1;
    }
    lq->state = st;
    lq->circuit = ci;
    return 0;
}

/* The head has arrived: route, method, token, and a POST's limit. */
static void head(struct req *q, struct MHD_Connection *c, const char *url, const char *method)
{
    q->get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
    q->del = !strcmp(method, "DELETE");
    q->post = !strcmp(method, "POST");
    q->options = !strcmp(method, "OPTIONS");
    q->body.fd = -1;
    q->body.priority = -1;
    if (route(q, url)) {
        api_problem(&q->resp, 404, "usage", "no_such_path", "no such resource", NULL);
        return;
    }
    if (q->options) { /* the methods, and a CORS preflight's answer (send_resp) */
        q->resp.status = 204;
        return;
    }
    if (!method_allowed(q)) {
        char d[96];

        snprintf(d, sizeof(d), "this method is not allowed here; allowed: %s", allow_of(q->route));
        api_problem(&q->resp, 405, "usage", "method_not_allowed", d, NULL);
        return;
    }
    if (q->route == R_HEALTH || q->route == R_READY || q->route == R_METRICS) return;
    if (!(q->tenant = auth(q, c))) {
        api_problem(&q->resp, 401, "refused", "unauthorized", "a valid bearer token is needed", NULL);
        return;
    }
    if (tenant_count_add(&inflight, q->tenant->name, 1, requests_cap(q->tenant))) {
        api_problem(&q->resp, 429, "quota", "too_many_requests",
                    "this tenant has its max-requests requests in flight (long polls included)",
                    json_pack("{s:I}", "max_requests", (json_int_t)requests_cap(q->tenant)));
        q->resp.retry_after = 1;
        return;
    }
    q->entered = 1;
    if (q->route == R_SUBMIT) {
        const char *pr = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "priority");
        uint64_t v;

        if (pr && (num(pr, strlen(pr), &v) || v > 1000000)) {
            api_problem(&q->resp, 400, "usage", "bad_request",
                        "priority: a whole number from 0 to 1000000; a higher one is proved first",
                        json_pack("{s:s}", "parameter", "priority"));
            return;
        }
        if (pr) q->body.priority = (int)v;
        q->callback_url = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "callback_url");
        if (q->callback_url && api_callback_check(q->callback_url, q->tenant, &q->resp)) return;
        if (query_num(q, c, "wait", 600, 0, &q->wait_s)) return;
        begin_body(q, c);
    }
}

static void body_chunk(struct req *q, const char *data, size_t n)
{
    char d[128];

    if (q->resp.status || q->body.fd < 0) return; /* answered already: dropped */
    if (q->body.len + n > q->limit) {
        snprintf(d, sizeof(d), "the body is over %s of %" PRIu64 " bytes", limit_name(q->limit_of), q->limit);
        api_problem(&q->resp, 413, "refused", PROTO_E_INPUT_LIMIT, d,
                    json_pack("{s:I,s:s}", "limit", (json_int_t)q->limit, "limit_source", q->limit_of));
        return;
    }
    EVP_DigestUpdate(q->md, data, n);
    api_rx_feed(&q->rx, data, n);
}

static void body_done(struct req *q)
{
    unsigned char h[32];
    unsigned hl = 0;

    if (q->resp.status || q->body.fd < 0) return;
    EVP_DigestFinal_ex(q->md, h, &hl);
    for (unsigned i = 0; i < 32; i++) snprintf(q->body.sha256 + 2 * i, 3, "%02x", h[i]);
    api_rx_end(&q->rx);
}

/* GET /v1/jobs/ID[?wait=S]: a wait counts against the tenant's API_TENANT_WAITS and
 * watches the client's socket (a hang-up ends it at once). */
static void long_poll(struct req *q, struct MHD_Connection *c, int queue, long ws)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    int fd = ci ? ci->connect_fd : -1;

    if (ws > 0 && api_wait_enter(q->tenant->name)) {
        api_problem(&q->resp, 429, "quota", "too_many_waits",
                    "this tenant has its most long polls (?wait) at once: retry, or look without wait",
                    json_pack("{s:I}", "max_waits", (json_int_t)API_TENANT_WAITS));
        q->resp.retry_after = 1;
        return;
    }
    (queue ? api_queue_get_job : api_get_job)(&q->resp, q->id, q->tenant, ws, fd);
    if (ws > 0) api_wait_leave(q->tenant->name);
}

static void answer(struct req *q, struct MHD_Connection *c)
{
    const char *w = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "wait");
    uint64_t ws = 0;
    int queue = g_api.cfg.queue[0] != '\0'; /* jobs live in the fleet's database (queue.c) */

    switch (q->route) {
    case R_HEALTH: api_json(&q->resp, 200, json_pack("{s:s}", "status", "ok")); break;
    case R_READY: api_readyz(&q->resp); break;
    case R_METRICS: api_metrics(&q->resp); break;
    case R_CIRCUITS: api_circuits(&q->resp); break;
    case R_VKEY: api_vkey(&q->resp, q->circuit); break;
    case R_SUBMIT:
        body_done(q);
        if (!q->resp.status)
            (queue ? api_queue_submit : api_submit)(&q->resp, q->circuit, q->tenant, &q->body);
        if (q->callback_url && q->resp.status == 202 &&
            api_callback_add(strtoull(q->resp.location + 9, NULL, 10), q->tenant->name, q->callback_url,
                             &q->resp))
            break;
        /* ?wait on a POST is a long poll like GET's: counted against the tenant's
         * API_TENANT_WAITS (past it, the 202 stands), given up when the client hangs up */
        if (q->wait_s && q->resp.status == 202 && !api_wait_enter(q->tenant->name)) {
            const union MHD_ConnectionInfo *ci =
                MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);

            api_submit_wait(&q->resp, q->tenant, (long)q->wait_s, ci ? ci->connect_fd : -1);
            api_wait_leave(q->tenant->name);
        }
        break;
    case R_JOB:
        if (q->del) {
            (queue ? api_queue_cancel : api_cancel)(&q->resp, q->id, q->tenant);
            break;
        }
        if (w && (num(w, strlen(w), &ws) || ws > 600)) {
            api_problem(&q->resp, 400, "usage", "bad_request", "wait: 0 to 600 seconds",
                        json_pack("{s:s}", "parameter", "wait"));
            break;
        }
        long_poll(q, c, queue, (long)ws);
        break;
    case R_PROOF: {
        const char *f = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "format");

        if (f && strcmp(f, "json") && strcmp(f, "calldata")) {
            api_problem(&q->resp, 400, "usage", "bad_request", "format: json (the default) or calldata",
                        json_pack("{s:s}", "parameter", "format"));
            break;
        }
        (queue ? api_queue_get_proof : api_get_proof)(&q->resp, q->id, q->k, q->tenant);
        if (f && !strcmp(f, "calldata")) api_proof_calldata(&q->resp);
        break;
    }
    case R_JOBS: {
        struct api_list_query lq;

        if (!list_query(q, c, &lq)) api_list(&q->resp, q->tenant, &lq);
        break;
    }
    case R_PROOFS: {
        uint64_t off, lim;

        if (!query_num(q, c, "offset", 1u << 20, 0, &off) &&
            !query_num(q, c, "limit", API_PROOFS_PAGE, API_PROOFS_PAGE, &lim))
            api_job_proofs(&q->resp, q->id, q->tenant, off, lim ? lim : API_PROOFS_PAGE);
        break;
    }
    case R_EVENTS: {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);

        q->stream = api_events(&q->resp, q->id, q->tenant,
                               MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Last-Event-ID"),
                               ci ? ci->connect_fd : -1);
        break;
    }
    default: break;
    }
}

static enum MHD_Result send_resp(struct req *q, struct MHD_Connection *c)
{
    struct api_resp *r = &q->resp;
    struct MHD_Response *m = MHD_create_response_from_buffer(r->len, r->body, MHD_RESPMEM_MUST_FREE);
    enum MHD_Result rc;
    const char *origin;
    char ra[16];

    if (!m) return MHD_NO;
    r->body = NULL; /* MHD frees it */
    if (r->body || r->status != 204)
        MHD_add_response_header(m, MHD_HTTP_HEADER_CONTENT_TYPE, r->ctype ? r->ctype : "application/json");
    MHD_add_response_header(m, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (r->location[0]) MHD_add_response_header(m, MHD_HTTP_HEADER_LOCATION, r->location);
    if (r->retry_after) {
        snprintf(ra, sizeof(ra), "%d", r->retry_after);
        MHD_add_response_header(m, MHD_HTTP_HEADER_RETRY_AFTER, ra);
    }
    if (r->status == 401) MHD_add_response_header(m, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    if (r->status == 405 || q->options) MHD_add_response_header(m, MHD_HTTP_HEADER_ALLOW, allow_of(q->route));
    if ((origin = cors_origin(c))) {
        MHD_add_response_header(m, "Access-Control-Allow-Origin", origin);
        MHD_add_response_header(m, "Vary", "Origin");
        MHD_add_response_header(m, "Access-Control-Expose-Headers", "Location, Retry-After");
        if (q->options) { /* the preflight: what the real request may carry */
            MHD_add_response_header(m, "Access-Control-Allow-Methods", allow_of(q->route));
            MHD_add_response_header(
                m, "Access-Control-Allow-Headers",
                "Authorization, Content-Type, Idempotency-Key, Cuzk-Metadata, Last-Event-ID");
            MHD_add_response_header(m, "Access-Control-Max-Age", "600");
        }
    }
    rc = MHD_queue_response(c, (unsigned)r->status, m);
    MHD_destroy_response(m);
    return rc;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                               const char *version, const char *data, size_t *data_size, void **con_cls)
{
    struct req *q = *con_cls;

    (void)cls;
    (void)version;
    if (!q) {
        if (!(q = calloc(1, sizeof(*q)))) return MHD_NO;
        *con_cls = q;
        head(q, c, url, method);
        /* The head is in: no longer under --header-timeout; a valid token takes the
         * connection out of the pre-auth share for good (conns.h). */
        api_conns_headed(c, q->tenant != NULL);
        /* A refusal before the body: answered now, the body never read. */
        if (q->resp.status && q->post) return send_resp(q, c);
        return MHD_YES;
    }
    if (*data_size) {
        /* Past the limit the bytes are dropped, and the 413 goes out at the body's
         * end (libmicrohttpd answers only then); a body that goes on for as much
         * again is cut off. */
        body_chunk(q, data, *data_size);
        q->seen += *data_size;
        *data_size = 0;
        return q->resp.status && q->seen > 2 * q->limit + (1u << 20) ? MHD_NO : MHD_YES;
    }
    if (!q->resp.status) answer(q, c);
    if (q->stream) { /* the events' stream: answered as it goes */
        const char *origin = cors_origin(c);
        enum MHD_Result rc;

        if (origin) {
            MHD_add_response_header(q->stream, "Access-Control-Allow-Origin", origin);
            MHD_add_response_header(q->stream, "Vary", "Origin");
        }
        rc = MHD_queue_response(c, MHD_HTTP_OK, q->stream);

        MHD_destroy_response(q->stream);
        q->stream = NULL;
        return rc;
    }
    return send_resp(q, c);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode t)
{
    struct req *q = *con_cls;

    (void)cls;
    (void)t;
    api_conns_request_ended(c); /* the next head is awaited under --header-timeout again */
    if (!q) return;
    if (q->entered) tenant_count_sub(&inflight, q->tenant_copy.name, 1);
    api_rx_free(&q->rx); /* the body's memfd, its bytes given back to the budget */
    json_decref(q->body.signals);
    json_decref(q->body.metadata);
    EVP_MD_CTX_free(q->md);
    free(q->resp.body);
    free(q);
    *con_cls = NULL;
}

/* libmicrohttpd's messages end in a newline; the log line has its own. */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    char m[512];
    size_t n;

    (void)cls;
    vsnprintf(m, sizeof(m), fmt, ap);
    n = strlen(m);
    while (n && m[n - 1] == '\n') m[--n] = '\0';
    /* Its messages come once per connection (one closed early, one refused at its
     * own limit): a crowd's would flood the log, so each kind is said once a minute
     * with a count, like the refusals of conns.c. */
    api_conns_mhd_said(m);
}

/* TLS as GnuTLS's NORMAL less what an attacker could steer a client down to: no
 * version before 1.2, no static-RSA key exchange (no forward secrecy), the server's
 * order of preference. */
#define API_TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-RSA:%SERVER_PRECEDENCE"

int api_serve(int listen_fd, const char *cert, const char *key, char *err, size_t errlen)
{
    /* poll(), not select(): a descriptor numbered 1024 or more (many connections,
     * each with its body's memfd and its control connection) is served, not refused. */
    unsigned flags =
        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ERROR_LOG;
    /* --per-ip and --max-conns are conns.c's (the accept policy), so that a full
     * address or server makes room among the connections without a token first;
     * libmicrohttpd's own limit is above them, for the ones being closed. */
    struct MHD_OptionItem o[16] = {
        { MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_log, NULL },
        { MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)completed, NULL },
        { MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)api_conns_notify, NULL },
        { MHD_OPTION_CONNECTION_TIMEOUT, g_api.cfg.timeout_s, NULL },
        { MHD_OPTION_CONNECTION_LIMIT, api_conns_hard_limit(g_api.cfg.max_conns), NULL },
        { MHD_OPTION_THREAD_STACK_SIZE, 256 << 10, NULL },
    };
    size_t n = 6;

    if (listen_fd >= 0)
        o[n++] = (struct MHD_OptionItem){ MHD_OPTION_LISTEN_SOCKET, listen_fd, NULL };
    else /* no listening socket: the harness's connections only */
        flags |= MHD_USE_NO_LISTEN_SOCKET;
    if (cert) {
        flags |= MHD_USE_TLS;
        o[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)cert };
        o[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)key };
        o[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)API_TLS_PRIORITIES };
    }
    o[n] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };
    if (api_conns_start(g_api.cfg.max_conns, g_api.cfg.per_ip, g_api.cfg.header_timeout_s, err, errlen))
        return -1;
    g_mhd = MHD_start_daemon(flags, 0, api_conns_accept, NULL, handler, NULL, MHD_OPTION_ARRAY, o,
                             MHD_OPTION_END);
    if (!g_mhd) {
        api_conns_stop();
        snprintf(err, errlen, "libmicrohttpd could not start%s",
                 cert ? " (is the TLS certificate and key valid?)" : "");
        return -1;
    }
    return 0;
}

int api_add_conn(int fd)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

    return MHD_add_connection(g_mhd, fd, (struct sockaddr *)&a, sizeof(a)) == MHD_YES ? 0 : -1;
}

void api_stop(void)
{
    if (g_mhd) MHD_stop_daemon(g_mhd);
    g_mhd = NULL;
    api_conns_stop();
}
