/* requests.c — the control requests that are answered in the loop (sup.h): status,
 * wait, cancel, restart, drain, shutdown, preload and evict. */
#include "sup.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "supervisor/check.h"
#include "supervisor/owners.h"

static void reply_job(struct sup *s, struct conn *k, uint32_t slot)
{
    json_t *o = json_object(), *j = control_job_json(&s->pl.data.jobtab, s->pl.partinfo, slot, 1);

    if (j && s->jobs[slot].resumed) json_object_set_new(j, "resumed", json_true());
    if (j) json_object_set_new(j, "owner", json_integer((json_int_t)s->jobs[slot].owner));
    results_job_fields(s, slot, j);

    json_object_set_new(o, "job", j ? j : json_null());
    conn_reply(s, k, control_reply_ok(o));
}

/* Job slot's job is k's to see (owners_may_see); else it answers as one never
 * submitted. */
static int job_visible(const struct sup *s, const struct conn *k, uint32_t slot)
{
    return owners_may_see(k->uid, k->privileged, k->api_user, s->jobs[slot].owner,
                          s->jobs[slot].tenant[0] != '\0');
}

static void do_status(struct sup *s, struct conn *k, const struct control_req *r)
{
    const struct jobtab *jt = &s->pl.data.jobtab;
    uint32_t slot;
    json_t *o, *jobs;

    if (r->has_job) {
        if (results_tenant_hides(s, k, r)) return;
        if (job_slot(s, r->job, &slot) || !job_visible(s, k, slot)) {
            char m[256];

            if (job_slot(s, r->job, &slot) && results_stored_job(s, k, r->job))
                return; /* decided, retired: the store has it */

            if (!k->privileged || !lost_msg(s, r->job, m, sizeof(m)))
                snprintf(m, sizeof(m),
                         "no job %llu (never submitted, or retired %llu s "
                         "after it finished)",
                         (unsigned long long)r->job, (unsigned long long)s->c->keep_finished_s);
            reply_err(s, k, PROTO_E_NO_JOB, m);
            return;
        }
        reply_job(s, k, slot);
        return;
    }
    jobs = json_array();
    for (uint32_t j = 0; j < jt->hdr->max_jobs; j++) {
        json_t *jj = job_visible(s, k, j) ? control_job_json(jt, s->pl.partinfo, j, 0) : NULL;

        if (jj && s->jobs[j].resumed) json_object_set_new(jj, "resumed", json_true());
        if (jj) json_object_set_new(jj, "owner", json_integer((json_int_t)s->jobs[j].owner));
        results_job_fields(s, j, jj);
        if (jj) json_array_append_new(jobs, jj);
    }
    o = json_pack("{s:s,s:o,s:o,s:b,s:b,s:i,s:I}", "instance", s->c->instance, "jobs", jobs, "children",
                  children_json(s), "draining", daemon_fsm_draining(&s->life), "stopping",
                  daemon_fsm_stopping(&s->life), "pid", (int)getpid(), "doorbell_rings",
                  (json_int_t)s->doorbell_rings);
    {
        uint32_t used = 0, fr = 0;

        pool_node_counts(&s->pl.data.pool, -1, &used, &fr);
        json_object_set_new(o, "pool", json_pack("{s:i,s:i}", "in_use", (int)used, "free", (int)fr));
    }
    {
        /* cuzkd's copies of inputs (copies.h): what they cost in memory now. */
        uint64_t b;
        size_t n = copies_usage(&s->copies, &b);

        json_object_set_new(o, "copies",
                            json_pack("{s:I,s:I}", "count", (json_int_t)n, "bytes", (json_int_t)b));
    }
    if (s->lost && k->privileged) json_object_set(o, "lost_jobs", s->lost); /* anyone's */
    if (s->fleet) {
        struct fleet_health h;

        fleet_daemon_health(s->fleet, &h);
        json_object_set_new(o, "fleet",
                            json_pack("{s:b,s:I,s:I}", "db_reachable", h.db_reachable, "db_errors",
                                      (json_int_t)h.db_errors, "reconnects", (json_int_t)h.reconnects));
    }
    {
        struct circ_live lv[MAX_CHILDREN];
        size_t n = live_stages(s, lv);

        json_object_set_new(o, "circuits", circuits_json(&s->pl, lv, n));
    }
    conn_reply(s, k, control_reply_ok(o));
}

static void do_wait(struct sup *s, struct conn *k, const struct control_req *r)
{
    uint32_t slot, st;

    if (results_tenant_hides(s, k, r)) return;
    if (job_slot(s, r->job, &slot) || !job_visible(s, k, slot)) {
        char m[256];

        if (job_slot(s, r->job, &slot) && results_stored_job(s, k, r->job)) return;
        if (!k->privileged || !lost_msg(s, r->job, m, sizeof(m)))
            snprintf(m, sizeof(m), "no job %llu (never submitted, or already retired)",
                     (unsigned long long)r->job);
        reply_err(s, k, PROTO_E_NO_JOB, m);
        return;
    }
    st = job_state(s, slot);
    if (st == JOBTAB_DONE || st == JOBTAB_FAILED || jobtab_job_try_complete(&s->pl.data.jobtab, slot) == 1) {
        reply_job(s, k, slot);
        return;
    }
    if (k->waiting) {
        reply_err(s, k, PROTO_E_BAD_REQUEST, "this connection already waits for a job");
        return;
    }
    k->waiting = 1;
    k->wait_slot = slot;
    k->wait_job = r->job;
    k->wait_deadline = r->timeout_ms >= 0 ? os_now_ns() + (uint64_t)r->timeout_ms * 1000000ull : 0;
}

static void do_cancel(struct sup *s, struct conn *k, const struct control_req *r)
{
    uint32_t slot;

    if (results_tenant_hides(s, k, r)) return;
    if (job_slot(s, r->job, &slot)) {
        reply_err(s, k, PROTO_E_NO_JOB, "no such job");
        return;
    }
    if (!k->privileged && s->jobs[slot].owner != k->uid) {
        char m[160];

        /* status lists every job with its owner: this tells no more than that. */
        snprintf(m, sizeof(m),
                 "job %llu is uid %u's, not uid %u's: only its owner (or "
                 "root, or cuzkd's user) may cancel it",
                 (unsigned long long)r->job, (unsigned)s->jobs[slot].owner, (unsigned)k->uid);
        reply_err(s, k, PROTO_E_NOT_OWNER, m);
        return;
    }
    if (job_state(s, slot) == JOBTAB_QUEUED) {
        char err[512];

        /* Durable before it is answered, as a submit: a restart never revives it. */
        if (s->store && store_job_cancel(s->store, r->job, err, sizeof(err))) {
            reply_err(s, k, PROTO_E_STORE, err);
            return;
        }
        s->jobs[slot].cancelled = 1;
        cancel_sweep(s, slot);
        logmsg("job %llu: cancelled", (unsigned long long)r->job);
    }
    conn_reply(s, k,
               control_reply_ok(json_pack("{s:I,s:s}", "job", (json_int_t)r->job, "state",
                                          job_state(s, slot) == JOBTAB_QUEUED ? "cancelling" : "decided")));
}

static void do_restart(struct sup *s, struct conn *k, const struct control_req *r)
{
    enum plan_role role = r->stage[0] == 's' ? PLAN_SYNTH : r->stage[0] == 'f' ? PLAN_FINALIZER : PLAN_WORKER;
    json_t *pids = json_array();
    int found = 0;

    for (uint32_t i = 0; i < s->n_ch; i++) {
        struct child *c = &s->ch[i];

        if (c->role != role || (r->has_index && c->index != r->index)) continue;
        found++;
        if (c->pid) {
            json_array_append_new(pids, json_integer(c->pid));
            logmsg("restart of %s %u (pid %d) requested", child_bin(role), c->index, (int)c->pid);
        }
        child_event(s, c, CHILD_EV_RESTART, os_now_ns(), 0);
    }
    if (!found) {
        char m[128];

        json_decref(pids);
        snprintf(m, sizeof(m), "no %s %u in this instance", plan_role_name(role), r->index);
        reply_err(s, k, PROTO_E_BAD_REQUEST, m);
        return;
    }
    conn_reply(s, k, control_reply_ok(json_pack("{s:o}", "stopped", pids)));
}

/* preload / evict, once its zkey is checked (copy >= 0: by an intake; else evict):
 * answered at once; the stages apply it between partitions. */
void circuit_finish(struct sup *s, struct conn *k, const struct control_req *r, const int *fds, size_t n_fds,
                    int copy)
{
    struct circ_live lv[MAX_CHILDREN];
    size_t n = live_stages(s, lv);
    char log[JOBTAB_PATH_LEN + 64] = "", m[JOBTAB_PATH_LEN + 160];
    const char *code = NULL;
    struct owners_quota q;
    char *line;

    owners_quota(s->c, &q);
    if (owners_preload_check(s->pl.circuits, s->preload_owner, k->uid, r->kind == CONTROL_EVICT, r->zkey,
                             q.preloads, &code, m, sizeof(m))) {
        copies_put(&s->copies, copy); /* -1: none */
        reply_err(s, k, code, m);
        return;
    }
    line = circuits_request(&s->pl, r, fds, n_fds, &s->copies, copy, lv, n, log, sizeof(log));
    if (log[0]) { /* accepted */
        logmsg("%s", log);
        owners_preload_note(s->preload_owner, r->kind == CONTROL_EVICT, r->zkey, k->uid);
    }
    conn_reply(s, k, line);
}

/* preload: the zkey is copied by an intake, like a submit's (a preload's read can
 * block as long); evict opens nothing. The owner checks run before and again after. */
static void do_circuit(struct sup *s, struct conn *k, struct control_req *r, size_t n_fds)
{
    struct owners_quota q;
    const char *code = NULL;
    char m[JOBTAB_PATH_LEN + 160];

    if (r->kind != CONTROL_PRELOAD) {
        circuit_finish(s, k, r, k->fds, n_fds, -1);
        return;
    }
    owners_quota(s->c, &q);
    if (owners_preload_check(s->pl.circuits, s->preload_owner, k->uid, 0, r->zkey, q.preloads, &code, m,
                             sizeof(m))) {
        reply_err(s, k, code, m);
        return;
    }
    intake_begin(s, k, r, n_fds);
}

/* watch: from now on every job's end is pushed on this connection (answer_waiters);
 * the HTTP API's long polls all sleep on its one. Jobs decided before are not told
 * (the watcher looks at a job after subscribing). */
static void do_watch(struct sup *s, struct conn *k)
{
    if (!k->privileged) {
        reply_err(s, k, PROTO_E_NOT_PERMITTED,
                  "watch is for root or cuzkd's own user (the HTTP API process)");
        return;
    }
    for (uint32_t j = 0; j < s->pl.data.jobtab.hdr->max_jobs; j++) {
        uint32_t st = job_state(s, j);

        if (st == JOBTAB_DONE || st == JOBTAB_FAILED) s->jobs[j].end_told = 1;
    }
    k->watching = 1;
    conn_reply(s, k, control_reply_ok(json_pack("{s:b}", "watching", 1)));
}

/* Each job decided since the last look, as one line to every watcher. */
static void tell_watchers(struct sup *s)
{
    int any = 0;

    for (int i = 0; i < N_CONNS && !any; i++) any = s->conns[i].fd >= 0 && s->conns[i].watching;
    for (uint32_t j = 0; j < s->pl.data.jobtab.hdr->max_jobs; j++) {
        uint32_t st = job_state(s, j);
        char line[128];

        if ((st != JOBTAB_DONE && st != JOBTAB_FAILED) || s->jobs[j].end_told) continue;
        s->jobs[j].end_told = 1;
        if (!any) continue;
        snprintf(line, sizeof(line), "{\"event\":\"job_end\",\"job\":%llu,\"state\":\"%s\"}\n",
                 (unsigned long long)s->pl.data.jobtab.jobs[j].id, st == JOBTAB_DONE ? "done" : "failed");
        for (int i = 0; i < N_CONNS; i++)
            if (s->conns[i].fd >= 0 && s->conns[i].watching) conn_reply(s, &s->conns[i], strdup(line));
    }
}

static void do_drain(struct sup *s, struct conn *k)
{
    life_event(s, DAEMON_EV_DRAIN, os_now_ns(), 0, NULL);
    if (!jobs_busy(s))
        conn_reply(s, k, control_reply_ok(json_pack("{s:b}", "drained", 1)));
    else
        k->drain_wait = 1;
}

/* Clients waiting on a job (`cuzk prove --wait`, `cuzk wait`) whose job is decided,
 * retired or past its --timeout, or cuzkd going down; and drains that are done. From
 * the tick and from the doorbell (EV_DOORBELL: a stage decided a job). */
void answer_waiters(struct sup *s, uint64_t t)
{
    tell_watchers(s);
    for (int i = 0; i < N_CONNS; i++) {
        struct conn *k = &s->conns[i];

        if (k->fd < 0) continue;
        if (k->waiting) {
            uint32_t st = job_state(s, k->wait_slot);

            if (st == JOBTAB_DONE || st == JOBTAB_FAILED) {
                k->waiting = 0;
                reply_job(s, k, k->wait_slot);
            } else if (st == JOBTAB_FREE) {
                k->waiting = 0;
                reply_err(s, k, PROTO_E_NO_JOB, "the job was retired");
            } else if (k->wait_deadline && t >= k->wait_deadline) {
                char m[96];

                k->waiting = 0;
                snprintf(m, sizeof(m), "job %llu is still running", (unsigned long long)k->wait_job);
                reply_err(s, k, PROTO_E_TIMEOUT, m);
            } else if (daemon_fsm_killing(&s->life)) {
                k->waiting = 0;
                reply_err(s, k, PROTO_E_DRAINING,
                          "cuzkd is shutting down before "
                          "the job finished");
            }
        }
        if (k->fd >= 0 && k->drain_wait && !jobs_busy(s)) {
            k->drain_wait = 0;
            conn_reply(s, k, control_reply_ok(json_pack("{s:b}", "drained", 1)));
        }
    }
}

/* reload: the config's [circuit NAME] sections read again (catalog.c); the answer
 * lists each circuit's change. A file that does not read changes nothing. */
static void do_reload(struct sup *s, struct conn *k)
{
    json_t *changed;
    char err[512];

    api_child_reload(s); /* its tokens file, whatever becomes of the circuits */
    if (catalog_reload(s, &changed, err, sizeof(err))) {
        logmsg("reload refused: %s", err);
        reply_err(s, k, PROTO_E_BAD_REQUEST, err);
        return;
    }
    logmsg("reload: %u circuit(s) declared", (unsigned)s->n_cat);
    conn_reply(s, k,
               control_reply_ok(json_pack("{s:o,s:o}", "changed", changed, "circuits", catalog_json(s))));
}

/* restart, drain, shutdown, reload act on every user's work: the operator's (root, cuzkd's
 * user) alone. */
static void operator_request(struct sup *s, struct conn *k, const struct control_req *r)
{
    char m[160];

    if (!k->privileged || k->api_user) {
        snprintf(m, sizeof(m),
                 "uid %u may not %s cuzkd: only root or cuzkd's own "
                 "user may",
                 (unsigned)k->uid,
                 r->kind == CONTROL_RESTART      ? "restart a stage of"
                     : r->kind == CONTROL_DRAIN  ? "drain"
                     : r->kind == CONTROL_RELOAD ? "reload"
                                                 : "shut down");
        reply_err(s, k, PROTO_E_NOT_PERMITTED, m);
    } else if (r->kind == CONTROL_RESTART) {
        do_restart(s, k, r);
    } else if (r->kind == CONTROL_DRAIN) {
        do_drain(s, k);
    } else if (r->kind == CONTROL_RELOAD) {
        do_reload(s, k);
    } else {
        conn_reply(s, k, control_reply_ok(json_pack("{s:b}", "shutting_down", 1)));
        life_event(s, DAEMON_EV_STOP, os_now_ns(), 0, "shutdown requested");
    }
}

/* One parsed request, to its handler (a submit or a preload moves r). */
void run_request(struct sup *s, struct conn *k, struct control_req *r)
{
    switch (r->kind) {
    case CONTROL_SUBMIT: do_submit(s, k, r, r->n_fds); break;
    case CONTROL_STATUS: do_status(s, k, r); break;
    case CONTROL_WAIT: do_wait(s, k, r); break;
    case CONTROL_CANCEL: do_cancel(s, k, r); break;
    case CONTROL_RESTART:
    case CONTROL_DRAIN:
    case CONTROL_SHUTDOWN: operator_request(s, k, r); break;
    case CONTROL_PRELOAD:
    case CONTROL_EVICT: do_circuit(s, k, r, r->n_fds); break;
    case CONTROL_CIRCUITS:
        conn_reply(s, k, control_reply_ok(json_pack("{s:o}", "circuits", catalog_json(s))));
        break;
    case CONTROL_RELOAD: operator_request(s, k, r); break;
    case CONTROL_PROOF:
    case CONTROL_PROOFS: do_proof(s, k, r); break;
    case CONTROL_WATCH: do_watch(s, k); break;
    case CONTROL_JOBS: do_jobs(s, k, r); break;
    }
}
