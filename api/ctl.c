/* ctl.c — cuzk-api's requests to cuzkd (api.h): one short control connection per
 * request, at most API_CTL_CONNS of them open at once (a request that finds them all
 * in use waits for one), so however many HTTP clients there are the API never takes
 * more than that many of cuzkd's connections. Nothing waits on one: a long poll
 * sleeps on the job-end doorbell (bell.c, watch.c). */
#include "api.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "proto/ctl_client.h"

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned open;
} conns = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

static void conn_take(void)
{
    pthread_mutex_lock(&conns.mu);
    while (conns.open >= API_CTL_CONNS) pthread_cond_wait(&conns.cv, &conns.mu);
    conns.open++;
    pthread_mutex_unlock(&conns.mu);
}

static void conn_give(void)
{
    pthread_mutex_lock(&conns.mu);
    conns.open--;
    pthread_cond_signal(&conns.cv);
    pthread_mutex_unlock(&conns.mu);
}

static json_t *ctl_one(json_t *req, const int *fds, size_t nfds, struct api_resp *r, json_t **err_out);

json_t *api_ctl(json_t *req, const int *fds, size_t nfds, struct api_resp *r, json_t **err_out)
{
    json_t *rep;

    conn_take();
    rep = ctl_one(req, fds, nfds, r, err_out);
    conn_give();
    return rep;
}

/* api_ctl's request on a connection of its own. */
static json_t *ctl_one(json_t *req, const int *fds, size_t nfds, struct api_resp *r, json_t **err_out)
{
    struct proto_conn c = { .fd = -1 };
    json_t *rep = NULL;

    if (err_out) *err_out = NULL;
    if (proto_connect(&c, g_api.cfg.socket)) {
        json_decref(req);
        api_problem(r, 503, "no_daemon", "no_daemon", "cuzkd does not answer on its control socket", NULL);
        r->retry_after = 5;
        return NULL;
    }
    rep = proto_request(&c, req, fds, nfds);
    proto_close(&c);
    if (!rep) {
        api_problem(r, 503, "no_daemon", "no_daemon", c.err, NULL);
        r->retry_after = 5;
        return NULL;
    }
    if (json_is_true(json_object_get(rep, "ok"))) return rep;
    api_ctl_problem(r, rep);
    if (err_out)
        *err_out = rep;
    else
        json_decref(rep);
    return NULL;
}

json_t *api_job_of(uint64_t id, const struct api_tenant *t, struct api_resp *r)
{
    json_t *rep =
        api_ctl(json_pack("{s:s,s:I,s:s}", "req", PROTO_REQ_STATUS, "job", (json_int_t)id, "tenant", t->name),
                NULL, 0, r, NULL);
    json_t *j = rep ? json_object_get(rep, "job") : NULL;
    const char *owner = json_string_value(json_object_get(j, "tenant"));
    char m[96];

    /* Another tenant's job, or one submitted without a tenant (the CLI's), is not
     * there for this caller: the same answer as a job that never was. */
    if (rep && (!json_is_object(j) || !owner || strcmp(owner, t->name))) {
        snprintf(m, sizeof(m), "no job %" PRIu64, id);
        api_problem(r, 404, "refused", PROTO_E_NO_JOB, m, NULL);
        json_decref(rep);
        return NULL;
    }
    if (!rep) return NULL;
    json_incref(j);
    json_decref(rep);
    return j;
}

json_t *api_circuit(const char *name, struct api_resp *r)
{
    json_t *rep = api_ctl(json_pack("{s:s}", "req", PROTO_REQ_CIRCUITS), NULL, 0, r, NULL), *e;
    size_t i;
    char m[160];

    if (!rep) return NULL;
    json_array_foreach (json_object_get(rep, "circuits"), i, e) {
        const char *n = json_string_value(json_object_get(e, "name"));

        if (n && !strcmp(n, name)) {
            json_incref(e);
            json_decref(rep);
            return e;
        }
    }
    json_decref(rep);
    snprintf(m, sizeof(m), "no circuit \"%.64s\" is declared", name);
    api_problem(r, 404, "refused", PROTO_E_NO_CIRCUIT, m, NULL);
    return NULL;
}
