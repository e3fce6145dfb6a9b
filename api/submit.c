/* submit.c — POST /v1/circuits/NAME/proofs (api.h): the body, already in a sealed
 * memfd (http.c), becomes a submit of the declared circuit with "results":"store":
 *   application/json, an object    one partition, the body's memfd itself
 *   application/json, an array     one job, a partition per element (each its own
 *                                  sealed memfd, in the array's order)
 *   application/octet-stream       a .wtns: one partition
 * cuzkd reads the descriptors; no path of this machine is named by the request. */
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

#define API_MAX_PARTS 4096 /* elements of one array body */

/* A sealed memfd holding data[0..n). -1 on failure. */
int api_sealed_memfd(const char *name, const void *data, size_t n);
int api_sealed_memfd(const char *name, const void *data, size_t n)
{
    int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    size_t off = 0;

    if (fd < 0) return -1;
    while (off < n) {
        ssize_t w = write(fd, (const char *)data + off, n - off);

        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            close(fd);
            return -1;
        }
        off += (size_t)w;
    }
    if (fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL)) {
        close(fd);
        return -1;
    }
    return fd;
}

/* The body as JSON: an object or an array of objects, else a 400 with the byte
 * offset jansson stopped at. */
json_t *api_parse_body(struct api_resp *r, const struct api_body *b)
{
    void *m = b->len ? mmap(NULL, b->len, PROT_READ, MAP_SHARED, b->fd, 0) : NULL;
    json_error_t je;
    json_t *j;

    if (b->len && m == MAP_FAILED) {
        api_problem(r, 500, "internal", CONTROL_E_INTERNAL, strerror(errno), NULL);
        return NULL;
    }
    j = json_loadb(m ? m : "", b->len, JSON_REJECT_DUPLICATES, &je);
    if (m) munmap(m, b->len);
    if (!j) {
        api_problem(r, 400, "format", "bad_json", je.text,
                    json_pack("{s:I,s:i,s:i}", "position", (json_int_t)je.position, "line", je.line, "column",
                              je.column));
        return NULL;
    }
    if (json_is_array(j)) {
        size_t i, n = json_array_size(j);
        json_t *e;

        if (!n || n > API_MAX_PARTS) {
            api_problem(r, 400, "usage", "bad_request", "an array body holds 1 to 4096 input objects", NULL);
            json_decref(j);
            return NULL;
        }
        json_array_foreach (j, i, e)
            if (!json_is_object(e)) {
                char m2[96];

                snprintf(m2, sizeof(m2), "element %zu of the array is not an input object", i);
                api_problem(r, 400, "format", "bad_json", m2, json_pack("{s:I}", "index", (json_int_t)i));
                json_decref(j);
                return NULL;
            }
    } else if (!json_is_object(j)) {
        api_problem(r, 400, "format", "bad_json", "the body is neither an input object nor an array of them",
                    NULL);
        json_decref(j);
        return NULL;
    }
    return j;
}

/* The partitions' descriptors and their "inputs"/"witnesses" entries. */
static int body_parts(struct api_resp *r, const struct api_body *b, int wtns, int *fds, size_t *nfds,
                      json_t *list)
{
    json_t *j = NULL, *e;
    size_t i;

    *nfds = 0;
    if (!wtns && !(j = api_parse_body(r, b))) return -1;
    if (!wtns && api_check_signals(r, b->signals, j)) {
        json_decref(j);
        return -1;
    }
    if (wtns || json_is_object(j)) {
        fds[(*nfds)++] = dup(b->fd);
        json_array_append_new(
            list, json_pack("{s:i,s:s,s:s}", "fd", 0, "path", wtns ? "body.wtns" : "body.json", "name", "0"));
        json_decref(j);
        return fds[0] < 0 ? -1 : 0;
    }
    json_array_foreach (j, i, e) {
        char *s = json_dumps(e, JSON_COMPACT), nm[32], path[48];

        fds[i] = s ? api_sealed_memfd("cuzk-api-input", s, strlen(s)) : -1;
        free(s);
        if (fds[i] < 0) {
            api_problem(r, 500, "internal", CONTROL_E_INTERNAL, "could not copy an input", NULL);
            json_decref(j);
            return -1;
        }
        *nfds = i + 1;
        snprintf(nm, sizeof(nm), "%zu", i);
        snprintf(path, sizeof(path), "input-%zu.json", i);
        json_array_append_new(list, json_pack("{s:i,s:s,s:s}", "fd", (int)i, "path", path, "name", nm));
    }
    json_decref(j);
    return 0;
}

/* The token line's max-running-jobs: the tenant's jobs not yet decided. */
static int over_running(struct api_resp *r, const struct api_tenant *t)
{
    json_t *rep, *e;
    size_t i, n = 0;

    if (!t->max_running) return 0;
    if (!(rep = api_ctl(json_pack("{s:s}", "req", CONTROL_REQ_STATUS), NULL, 0, r, NULL))) return 1;
    json_array_foreach (json_object_get(rep, "jobs"), i, e) {
        const char *tn = json_string_value(json_object_get(e, "tenant"));
        const char *st = json_string_value(json_object_get(e, "state"));

        if (tn && !strcmp(tn, t->name) && st && !strcmp(st, "running")) n++;
    }
    json_decref(rep);
    if (n < t->max_running) return 0;
    api_problem(r, 429, "quota", CONTROL_E_QUOTA, "this tenant has its max-running-jobs jobs running",
                json_pack("{s:i}", "max_running_jobs", (int)t->max_running));
    r->retry_after = 5;
    return 1;
}

int api_idem_key_ok(const char *k)
{
    size_t n = strlen(k);

    if (!n || n > 128) return 0;
    for (; *k; k++)
        if (*k < 0x20 || *k > 0x7e) return 0;
    return 1;
}

static json_t *submit_req(const char *circuit, const struct api_tenant *t, const struct api_body *b, int wtns,
                          json_t *list, size_t nfds)
{
    json_t *q =
        json_pack("{s:s,s:s,s:i,s:o,s:s,s:s}", "req", CONTROL_REQ_SUBMIT, "circuit", circuit, "fds",
                  (int)nfds, wtns ? "witnesses" : "inputs", list, "results", "store", "tenant", t->name);
    int prio = b->priority;

    if (t->prio_cap >= 0 && prio > t->prio_cap) prio = t->prio_cap;
    if (q && prio >= 0) json_object_set_new(q, "priority", json_integer(prio));
    if (q && b->idem_key) {
        json_object_set_new(q, "idempotency_key", json_string(b->idem_key));
        json_object_set_new(q, "body_sha256", json_string(b->sha256));
    }
    return q;
}

void api_submit(struct api_resp *r, const char *circuit, const struct api_tenant *t, struct api_body *b)
{
    int wtns = b->ctype && !strncasecmp(b->ctype, "application/octet-stream", 24);
    int *fds = calloc(API_MAX_PARTS, sizeof(int));
    json_t *list = json_array(), *rep;
    size_t nfds = 0;
    char loc[64];

    if (!fds || !list) {
        api_problem(r, 500, "internal", CONTROL_E_INTERNAL, "out of memory", NULL);
        goto out;
    }
    if (b->idem_key && !api_idem_key_ok(b->idem_key)) {
        api_problem(r, 400, "usage", "bad_request", "Idempotency-Key: 1 to 128 printable ASCII characters",
                    NULL);
        goto out;
    }
    if (over_running(r, t) || body_parts(r, b, wtns, fds, &nfds, list)) goto out;
    rep = api_ctl(submit_req(circuit, t, b, wtns, list, nfds), fds, nfds, r, NULL);
    list = NULL; /* the request took it */
    if (!rep) goto out;
    {
        json_int_t id = json_integer_value(json_object_get(rep, "job"));

        snprintf(loc, sizeof(loc), "/v1/jobs/%" JSON_INTEGER_FORMAT, id);
        snprintf(r->location, sizeof(r->location), "%s", loc);
        api_json(r, 202,
                 json_pack("{s:I,s:s,s:I,s:b,s:s}", "job", id, "circuit", circuit, "partitions",
                           json_integer_value(json_object_get(rep, "partitions")), "existing",
                           json_is_true(json_object_get(rep, "existing")), "location", loc));
    }
    json_decref(rep);
out:
    for (size_t i = 0; i < nfds; i++) close(fds[i]);
    free(fds);
    json_decref(list);
}
