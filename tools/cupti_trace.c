/* cupti_trace.c — the CUPTI recorder's file into a job's trace (cupti_trace.h). */
#include "tools/cupti_trace.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define CUPTI_MAX_FIELDS 8

/* A decimal number filling the whole token. */
static int parse_u64(const char *s, uint64_t *v)
{
    char *end;

    if (*s < '0' || *s > '9') return -1;
    errno = 0;
    *v = strtoull(s, &end, 10);
    return errno || *end ? -1 : 0;
}

static int parse_u32(const char *s, uint32_t *v)
{
    uint64_t w;

    if (parse_u64(s, &w) || w > UINT32_MAX) return -1;
    *v = (uint32_t)w;
    return 0;
}

static int rec_push(struct cupti_file *cf, const struct cupti_rec *r)
{
    if (cf->n == cf->cap) {
        size_t cap = cf->cap ? 2 * cf->cap : 256;
        struct cupti_rec *p = realloc(cf->recs, cap * sizeof(*p));

        if (!p) return -1;
        cf->recs = p;
        cf->cap = cap;
    }
    cf->recs[cf->n++] = *r;
    return 0;
}

/* One line, without its newline: 0, 1 (a clock pair: *d its host - CUPTI), or -1 with
 * why set. rest: a kernel's name, the line after its fifth field. */
static int parse_line(char *line, struct cupti_rec *r, int64_t *d, const char **why)
{
    char *f[CUPTI_MAX_FIELDS], *p = line, *rest = NULL;
    int n = 0;

    while (n < CUPTI_MAX_FIELDS && *p) {
        while (*p == ' ') p++;
        if (!*p) break;
        if (n == 5 && !strcmp(f[0], "kernel")) { /* the name: the rest, spaces and all */
            rest = p;
            break;
        }
        f[n++] = p;
        while (*p && *p != ' ') p++;
        if (*p) *p++ = 0;
    }
    *why = "unknown record";
    if (n == 0) return (*why = "empty line"), -1;
    if (!strcmp(f[0], "cuzk-cupti"))
        return n == 2 && !strcmp(f[1], "1") ? 2 : ((*why = "unknown version"), -1);
    if (!strcmp(f[0], "clock")) {
        uint64_t c, m;

        if (n != 3 || parse_u64(f[1], &c) || parse_u64(f[2], &m))
            return (*why = "clock: want CUPTI_NS MONO_NS"), -1;
        *d = (int64_t)(m - c);
        return 1;
    }
    memset(r, 0, sizeof(*r));
    if (!strcmp(f[0], "kernel")) {
        r->kind = CUPTI_REC_KERNEL;
        if (n != 5 || !rest || !*rest) return (*why = "kernel: want DEVICE STREAM START END NAME"), -1;
    } else if (!strcmp(f[0], "memcpy")) {
        r->kind = CUPTI_REC_MEMCPY;
        if (n != 7 || parse_u64(f[5], &r->bytes) || !*f[6])
            return (*why = "memcpy: want DEVICE STREAM START END BYTES KIND"), -1;
        rest = f[6];
    } else if (!strcmp(f[0], "memset")) {
        r->kind = CUPTI_REC_MEMSET;
        if (n != 6 || parse_u64(f[5], &r->bytes))
            return (*why = "memset: want DEVICE STREAM START END BYTES"), -1;
    } else
        return -1;
    if (parse_u32(f[1], &r->device) || parse_u32(f[2], &r->stream) || parse_u64(f[3], &r->start) ||
        parse_u64(f[4], &r->end))
        return (*why = "a field is not a number"), -1;
    if (r->end < r->start) return (*why = "ends before it starts"), -1;
    if (rest && !(r->name = strdup(rest))) return (*why = "out of memory"), -1;
    return 0;
}

int cupti_file_read(FILE *f, const char *path, struct cupti_file *cf, char *err, size_t errlen)
{
    char *line = NULL;
    size_t cap = 0, lineno = 0;
    ssize_t len;
    int64_t d0 = 0, dsum = 0; /* the pairs' differences, as offsets from the first */
    int rc = 0;

    memset(cf, 0, sizeof(*cf));
    while ((len = getline(&line, &cap, f)) > 0) {
        struct cupti_rec r;
        const char *why;
        int64_t d = 0;
        int k;

        lineno++;
        if (line[len - 1] != '\n') { /* the last line, cut short: the recorder was */
            cf->truncated++;
            break;
        }
        line[len - 1] = 0;
        k = parse_line(line, &r, &d, &why);
        if (k < 0) {
            snprintf(err, errlen, "%s:%zu: %s", path, lineno, why);
            rc = -1;
            break;
        }
        if (k == 1) {
            if (!cf->clocks) d0 = d;
            dsum += d - d0;
            cf->clocks++;
        } else if (k == 0 && rec_push(cf, &r)) {
            free(r.name);
            snprintf(err, errlen, "%s:%zu: out of memory", path, lineno);
            rc = -1;
            break;
        }
    }
    free(line);
    if (!rc && ferror(f)) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        rc = -1;
    }
    if (!rc && !cf->clocks) {
        snprintf(err, errlen,
                 "%s: no clock line: not a file of the CUPTI recorder, or one cut before it began", path);
        rc = -1;
    }
    if (rc) {
        cupti_file_free(cf);
        return -1;
    }
    cf->offset_ns = d0 + dsum / (int64_t)cf->clocks;
    return 0;
}

void cupti_file_free(struct cupti_file *cf)
{
    if (!cf) return;
    for (size_t i = 0; i < cf->n; i++) free(cf->recs[i].name);
    free(cf->recs);
    memset(cf, 0, sizeof(*cf));
}

uint64_t cupti_to_host(const struct cupti_file *cf, uint64_t t)
{
    return t + (uint64_t)cf->offset_ns; /* two's complement: a negative offset subtracts */
}

/* The end of the job's last event, ns after submit (0: none). */
static uint64_t trace_span_ns(json_t *ev)
{
    double end_us = 0;
    size_t i;
    json_t *e;

    json_array_foreach (ev, i, e) {
        const char *ph = json_string_value(json_object_get(e, "ph"));
        double t;

        if (!ph || strcmp(ph, "X")) continue;
        t = json_number_value(json_object_get(e, "ts")) + json_number_value(json_object_get(e, "dur"));
        if (t > end_us) end_us = t;
    }
    return (uint64_t)(end_us * 1e3);
}

static json_t *meta(const char *what, int pid, int tid, const char *name)
{
    return json_pack("{s:s,s:s,s:i,s:i,s:{s:s}}", "name", what, "ph", "M", "pid", pid, "tid", tid, "args",
                     "name", name);
}

int cupti_trace_merge(json_t *trace, const struct cupti_file *cf, size_t *kept, size_t *outside)
{
    json_t *ev = json_object_get(trace, "traceEvents"), *other = json_object_get(trace, "otherData");
    json_t *sub = json_object_get(other, "submit_ns"), *seen = json_object();
    uint64_t t_sub, span;

    *kept = *outside = 0;
    if (!json_is_array(ev) || !json_is_integer(sub) || !seen) {
        json_decref(seen);
        return -1;
    }
    t_sub = (uint64_t)json_integer_value(sub);
    span = trace_span_ns(ev);
    for (size_t i = 0; i < cf->n; i++) {
        const struct cupti_rec *r = &cf->recs[i];
        uint64_t b = cupti_to_host(cf, r->start), e = cupti_to_host(cf, r->end);
        int pid = CUPTI_TRACE_PID0 + (int)(r->device < 1000 ? r->device : 1000);
        char key[48], name[64];
        const char *cat = r->kind == CUPTI_REC_KERNEL ? "kernel"
            : r->kind == CUPTI_REC_MEMCPY             ? "memcpy"
                                                      : "memset";
        json_t *x;

        if (e <= t_sub || (span && b >= t_sub + span)) { /* another job's, or idle time */
            (*outside)++;
            continue;
        }
        snprintf(key, sizeof(key), "%d", pid);
        if (!json_object_get(seen, key)) {
            snprintf(name, sizeof(name), "gpu %u", r->device);
            json_object_set_new(seen, key, json_true());
            json_array_append_new(ev, meta("process_name", pid, 0, name));
        }
        snprintf(key, sizeof(key), "%d/%u", pid, r->stream);
        if (!json_object_get(seen, key)) {
            snprintf(name, sizeof(name), "stream %u", r->stream);
            json_object_set_new(seen, key, json_true());
            json_array_append_new(ev, meta("thread_name", pid, (int)r->stream, name));
        }
        if (r->kind == CUPTI_REC_KERNEL)
            x = json_pack("{s:s,s:s,s:s,s:f,s:f,s:i,s:i}", "name", r->name, "cat", cat, "ph", "X", "ts",
                          (double)(int64_t)(b - t_sub) / 1e3, "dur", (double)(e - b) / 1e3, "pid", pid, "tid",
                          (int)r->stream);
        else {
            snprintf(name, sizeof(name), "%s%s%s", cat, r->name ? " " : "", r->name ? r->name : "");
            x = json_pack("{s:s,s:s,s:s,s:f,s:f,s:i,s:i,s:{s:I}}", "name", name, "cat", cat, "ph", "X", "ts",
                          (double)(int64_t)(b - t_sub) / 1e3, "dur", (double)(e - b) / 1e3, "pid", pid, "tid",
                          (int)r->stream, "args", "bytes", (json_int_t)r->bytes);
        }
        if (!x || json_array_append_new(ev, x)) {
            json_decref(seen);
            return -1;
        }
        (*kept)++;
    }
    json_decref(seen);
    if (json_is_object(other)) {
        json_object_set_new(other, "cupti_events", json_integer((json_int_t)*kept));
        json_object_set_new(other, "cupti_outside", json_integer((json_int_t)*outside));
    }
    return 0;
}
