/* events.c — GET /v1/jobs/ID/events (api.h; docs/api.md, "Completion pushed"): the
 * job as Server-Sent Events. An `event: part` (data {"k","state","reason"?}) each
 * time a partition is seen in another state, an `event: job` (the job's end) last,
 * then the stream ends; `: keepalive` every EV_KEEPALIVE_NS so that proxies keep an
 * idle stream open.
 *
 * It holds no connection to cuzkd of its own: like a long poll (?wait) it looks at
 * the job with one short request, sleeps on the job-end doorbell (bell.c) and looks
 * again when rung, or every EV_LOOK_NS (a partition's step rings nothing), and it
 * counts as one of the tenant's long polls. The stream's thread is the connection's
 * own (http.c: a thread per connection); a client that hangs up is seen within the
 * doorbell's slice and everything is freed then.
 *
 * Ids: the last event of each batch carries `id: P`, P the job's progress (the sum
 * of its partitions' steps: queued 0, synthesizing 1, proving 2, finalizing 3, done
 * or failed 4); the job event's is `end`. A part event says a partition's state as
 * it is (sending one twice changes nothing), so a client that comes back with
 * Last-Event-ID P gets nothing while the job is still at P, else every partition's
 * state afresh; one that comes back with `end` is answered 204 (EventSource then
 * stops reconnecting). */
#include "api.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "base/os.h"

#define EV_KEEPALIVE_NS 15000000000ull
#define EV_LOOK_NS      500000000ull

struct ev {
    uint64_t id;
    struct api_tenant t;
    int fd;
    long long last_id; /* the client's Last-Event-ID, -1 none */
    int looked, ended;
    char **seen; /* per partition: the state last sent (NULL none) */
    size_t nparts;
    char *out; /* text not yet handed to libmicrohttpd */
    size_t len, off, cap;
    int open_event; /* an event is written but its blank line is not */
    uint64_t keepalive_at;
};

static void put(struct ev *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct ev *e, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if (e->len + (size_t)n + 1 > e->cap) {
        size_t nc = (e->len + (size_t)n + 1) * 2;
        char *no = realloc(e->out, nc);

        if (!no) return;
        e->out = no, e->cap = nc;
    }
    va_start(ap, fmt);
    vsnprintf(e->out + e->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    e->len += (size_t)n;
}

static int step_of(const char *st)
{
    static const char *const steps[] = { "queued", "synthesizing", "proving", "finalizing" };

    for (int i = 0; i < 4; i++)
        if (!strcmp(st, steps[i])) return i;
    return !strcmp(st, "done") || !strcmp(st, "failed") ? 4 : 2; /* queue mode's leased: being proved */
}

/* The job as GET /v1/jobs/ID answers it (either mode), or NULL with r set. */
static json_t *look(const struct ev *e, struct api_resp *r)
{
    json_t *j;

    memset(r, 0, sizeof(*r));
    (g_api.cfg.queue[0] ? api_queue_get_job : api_get_job)(r, e->id, &e->t, 0, -1);
    if (r->status != 200) return NULL;
    j = json_loadb(r->body, r->len, 0, NULL);
    free(r->body);
    r->body = NULL;
    return j;
}

/* The events since the last look into e->out. */
static void events_of(struct ev *e, json_t *job)
{
    json_t *parts = json_object_get(job, "parts"), *p;
    const char *jst = json_string_value(json_object_get(job, "state")) ?: "running";
    long long progress = 0;
    size_t i, sent = 0;

    if (json_array_size(parts) > e->nparts) {
        char **ns = realloc(e->seen, json_array_size(parts) * sizeof(*ns));

        if (!ns) return;
        memset(ns + e->nparts, 0, (json_array_size(parts) - e->nparts) * sizeof(*ns));
        e->seen = ns, e->nparts = json_array_size(parts);
    }
    json_array_foreach (parts, i, p)
        progress += step_of(json_string_value(json_object_get(p, "state")) ?: "");
    /* A client back at the progress it had seen, the job still running: nothing new. */
    int quiet = !e->looked && e->last_id == progress && !strcmp(jst, "running");
    e->looked = 1;
    json_array_foreach (parts, i, p) {
        const char *st = json_string_value(json_object_get(p, "state")) ?: "";
        json_t *d;
        char *txt;

        if (e->seen[i] && !strcmp(e->seen[i], st)) continue;
        free(e->seen[i]);
        e->seen[i] = strdup(st);
        if (quiet) continue;
        d = json_pack("{s:I,s:s}", "k", (json_int_t)i, "state", st);
        if (json_object_get(p, "reason")) json_object_set(d, "reason", json_object_get(p, "reason"));
        if ((txt = json_dumps(d, JSON_COMPACT))) {
            put(e, "%sevent: part\ndata: %s\n", e->open_event ? "\n" : "", txt);
            e->open_event = 1;
            sent++;
        }
        free(txt);
        json_decref(d);
    }
    if (sent) put(e, "id: %lld\n\n", progress), e->open_event = 0;
    if (strcmp(jst, "running")) {
        json_t *d = json_pack("{s:I,s:s}", "job", (json_int_t)e->id, "state", jst);
        static const char *const copy[] = { "reason", "partitions", "done", "failed" };
        char *txt;

        for (size_t k = 0; k < sizeof(copy) / sizeof(copy[0]); k++)
            if (json_object_get(job, copy[k])) json_object_set(d, copy[k], json_object_get(job, copy[k]));
        if ((txt = json_dumps(d, JSON_COMPACT))) put(e, "event: job\ndata: %s\nid: end\n\n", txt);
        free(txt);
        json_decref(d);
        e->ended = 1;
    }
}

/* Set when the server stops: a stream ends at its next look instead of holding the
 * stop until its job ends. */
static int stopping;

void api_events_stop(void)
{
    __atomic_store_n(&stopping, 1, __ATOMIC_RELAXED);
}

static ssize_t ev_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct ev *e = cls;

    (void)pos;
    while (e->off == e->len) {
        struct api_resp r;
        uint64_t mark, now, until;
        json_t *job;
        int rc;

        if (e->ended) return MHD_CONTENT_READER_END_OF_STREAM;
        if (__atomic_load_n(&stopping, __ATOMIC_RELAXED))
            return MHD_CONTENT_READER_END_WITH_ERROR; /* the client may come back */
        e->off = e->len = 0;
        mark = api_bell_mark();
        if (!(job = look(e, &r))) { /* gone from the store, or cuzkd down: the client may come back */
            free(r.body);
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        events_of(e, job);
        json_decref(job);
        if (e->len) break;
        now = os_now_ns();
        if (now >= e->keepalive_at) {
            put(e, ": keepalive\n\n");
            e->keepalive_at = now + EV_KEEPALIVE_NS;
            break;
        }
        until = now + EV_LOOK_NS < e->keepalive_at ? now + EV_LOOK_NS : e->keepalive_at;
        if ((rc = api_bell_wait(mark, e->id, until, e->fd)) < 0) return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    if (e->len - e->off < max) max = e->len - e->off;
    memcpy(buf, e->out + e->off, max);
    e->off += max;
    e->keepalive_at = os_now_ns() + EV_KEEPALIVE_NS;
    return (ssize_t)max;
}

static void ev_free(void *cls)
{
    struct ev *e = cls;

    api_wait_leave(e->t.name);
    for (size_t i = 0; i < e->nparts; i++) free(e->seen[i]);
    free(e->seen);
    free(e->out);
    free(e);
}

struct MHD_Response *api_events(struct api_resp *r, uint64_t id, const struct api_tenant *t,
                                const char *last_event_id, int client_fd)
{
    struct ev *e;
    struct MHD_Response *m;
    char *end;

    /* the job as GET answers it, in either mode: another tenant's job is 404 here too */
    (g_api.cfg.queue[0] ? api_queue_get_job : api_get_job)(r, id, t, 0, -1);
    if (r->status != 200) return NULL;
    free(r->body);
    memset(r, 0, sizeof(*r));
    if (last_event_id && !strcmp(last_event_id, "end")) { /* it saw the end: nothing more will come */
        r->status = 204;
        return NULL;
    }
    if (api_wait_enter(t->name)) {
        api_problem(r, 429, "quota", "too_many_waits",
                    "this tenant has its most long polls (?wait, events) at once: retry later",
                    json_pack("{s:I}", "max_waits", (json_int_t)API_TENANT_WAITS));
        r->retry_after = 1;
        return NULL;
    }
    if (!(e = calloc(1, sizeof(*e)))) {
        api_wait_leave(t->name);
        api_problem(r, 500, "internal", PROTO_E_INTERNAL, "out of memory", NULL);
        return NULL;
    }
    e->id = id;
    e->t = *t;
    e->fd = client_fd;
    e->last_id = last_event_id ? strtoll(last_event_id, &end, 10) : -1;
    if (last_event_id && (*end || !*last_event_id)) e->last_id = -1; /* not ours: start afresh */
    e->keepalive_at = os_now_ns() + EV_KEEPALIVE_NS;
    if (!(m = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, ev_read, e, ev_free))) {
        ev_free(e);
        api_problem(r, 500, "internal", PROTO_E_INTERNAL, "out of memory", NULL);
        return NULL;
    }
    MHD_add_response_header(m, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream; charset=utf-8");
    MHD_add_response_header(m, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    MHD_add_response_header(m, "X-Accel-Buffering", "no"); /* nginx: pass each event on at once */
    return m;
}
