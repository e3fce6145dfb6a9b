/* submit.c — the submit path (sup.h): refusals before and after, the intake that
 * checks and copies the files off the loop (intake.h), and the job's start. */
#include "sup.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "supervisor/owners.h"

/* The loop's part of a submit's durable copies, which its intake wrote and fsync'd
 * in its own thread (intake_persist): the job holds each name from now on (jobs_dur_ref).
 * A shared copy (zkey, r1cs, generator) can have gone between that write and now:
 * the last job holding it retired (jobs_dur_unref removes it). Held now, it cannot go
 * any more, so each shared name is checked once (copies_persist finds it in one
 * fstatat) and, in that rare case, written again here. 0, or -errno with err; the
 * caller releases held (jobs_dur_release) either way when the submit fails. */
static int take_copies(struct sup *s, const struct control_submit *sub, json_t *held, char *err,
                       size_t errlen)
{
    const struct {
        const char *prefix;
        int fd;
    } sh[] = {
        { "zkey-", sub->zkey_fd },
        { "r1cs-", sub->r1cs_fd },
        { "wgen-", sub->wgen_fd },
    };
    char e[400];
    size_t i;
    json_t *v;
    int rc;

    json_array_foreach (held, i, v) jobs_dur_ref(s, json_string_value(v));
    json_array_foreach (held, i, v)
        for (size_t j = 0; j < sizeof(sh) / sizeof(sh[0]); j++)
            if (!strncmp(json_string_value(v), sh[j].prefix, 5) &&
                (rc = copies_persist(s->copies_dfd, sh[j].fd, json_string_value(v), e, sizeof(e))) < 0) {
                snprintf(err, errlen,
                         "the job could not be recorded, so it was not "
                         "accepted: %s",
                         e);
                return rc;
            }
    return 0;
}

/* Partitions of running jobs not yet DONE or FAILED (--max-queued counts these). */
static uint32_t unfinished_parts(const struct sup *s)
{
    const struct jobtab *jt = &s->pl.data.jobtab;
    uint32_t n = 0;

    for (uint32_t p = 0; p < jt->hdr->max_parts; p++) {
        uint32_t st = jobtab_word_state(jobtab_part_load(jt, p));

        n += st >= JOBTAB_QUEUED && st < JOBTAB_DONE;
    }
    return n;
}

/* Job slot j's submitter and tenant (owners_submit_check). */
static uid_t job_owner(const void *arg, uint32_t j, const char **tenant)
{
    *tenant = ((const struct sup *)arg)->jobs[j].tenant;
    return ((const struct sup *)arg)->jobs[j].owner;
}

/* Refusals a submit gets before and after its intake: draining, the quotas of its
 * uid or tenant. After the intake this runs in the same step of the loop as the
 * job's entry into the table, so a count and its admission are one (16 submits at
 * once under a max-running-jobs of 2 make 2 jobs). 1 (refused, answered) or 0. */
static int submit_refused(struct sup *s, struct conn *k, uint32_t n_parts, const char *tenant,
                          uint32_t max_running)
{
    const struct owners_who who = { k->uid, tenant, max_running };
    struct owners_quota q;
    char m[256];
    int rc;

    if (daemon_fsm_draining(&s->life)) {
        conns_reply_err(s, k, PROTO_E_DRAINING,
                        daemon_fsm_stopping(&s->life) ? "cuzkd is shutting down; "
                                                        "submit to another instance"
                                                      : "cuzkd is draining (not accepting jobs)");
        return 1;
    }
    owners_quota(s->c, &q);
    if ((rc = owners_submit_check(&s->pl.data.jobtab, job_owner, s, &who, n_parts, &q, m, sizeof(m)))) {
        conns_reply_err(s, k, rc == -ENOSPC ? PROTO_E_FULL : PROTO_E_QUOTA, m);
        return 1;
    }
    return 0;
}

/* Durable copies an intake wrote that no job took (its submit given up on, its
 * client gone): each goes unless a job holds it (a shared zkey copy, say). */
static void drop_unheld(struct sup *s, json_t *held)
{
    size_t i;
    json_t *v;

    json_array_foreach (held, i, v)
        if (!json_object_get(s->dur, json_string_value(v)) &&
            unlinkat(s->copies_dfd, json_string_value(v), 0) && errno != ENOENT)
            logmsg("durable copy %s: cannot remove it: %s", json_string_value(v), strerror(errno));
}

/* A submit that will not run: its files, and its durable copies (take_copies). */
static void submit_drop(struct sup *s, struct control_submit *sub, json_t *copies, json_t *held)
{
    json_decref(copies);
    jobs_dur_release(s, held);
    control_submit_free(sub, &s->copies);
}

/* Hand request *r (a submit or a preload) and its n_fds descriptors (the first of
 * k's queue) to an intake (intake.h): both are moved into it when it starts; k then
 * waits for its answer (submit_handle_intakes). Refused (answered, nothing moved) when k's
 * uid already has STUCK_PER_UID intakes given up on. */
static void intake_begin_extra(struct sup *s, struct conn *k, struct control_req *r, size_t n_fds,
                               const int *extra, size_t n_extra);

void submit_intake_begin(struct sup *s, struct conn *k, struct control_req *r, size_t n_fds)
{
    intake_begin_extra(s, k, r, n_fds, NULL, 0);
}

/* The same with n_extra more descriptors of cuzkd's own after the client's (a circuit
 * by name: its files, catalog.c), moved in as well (closed when refused). */
static void intake_begin_extra(struct sup *s, struct conn *k, struct control_req *r, size_t n_fds,
                               const int *extra, size_t n_extra)
{
    struct intake *t;
    unsigned stuck = 0;
    int *all;
    int rc;

    for (t = s->intakes; t; t = t->next) stuck += t->abandoned && t->uid == k->uid;
    if (stuck >= STUCK_PER_UID) {
        char m[256];

        snprintf(m, sizeof(m),
                 "busy: %u earlier submit(s) or preload(s) of uid %u are "
                 "still stuck reading their files (--copy-timeout %u s passed); submit again once "
                 "those reads return",
                 stuck, (unsigned)k->uid, s->c->copy_timeout_s);
        conns_reply_err(s, k, PROTO_E_BUSY, m);
        for (size_t i = 0; i < n_extra; i++) close(extra[i]);
        return;
    }

    all = malloc((n_fds + n_extra + 1) * sizeof(*all));
    if (all) {
        memcpy(all, k->fds, n_fds * sizeof(*all));
        if (n_extra) memcpy(all + n_fds, extra, n_extra * sizeof(*all));
    }
    t = all ? intake_new(r, all, n_fds + n_extra, k->uid, k->gid, k->groups, k->n_groups) : NULL;
    free(all);
    if (!t) {
        for (size_t i = 0; i < n_extra; i++) close(extra[i]);
        conns_reply_err(s, k, PROTO_E_INTERNAL, "out of memory");
        return;
    }
    /* The descriptors are the intake's now: out of the queue without closing them. */
    memmove(k->fds, k->fds + n_fds, (k->n_fds - n_fds) * sizeof(*k->fds));
    k->n_fds -= (uint32_t)n_fds;
    t->cp = &s->copies;
    t->buf_size = s->pl.config->buf_size;
    t->max_parts = s->pl.config->max_parts;
    t->bytes_quota = uid_bytes_quota(s, k->uid);
    t->bytes_used = t->bytes_quota ? uid_bytes(s, k->uid) : 0;
    t->notify_fd = s->intake_fd;
    /* A dup: the thread may outlive this loop's descriptor (cuzkd stopping). */
    if (s->store && t->r.kind != CONTROL_PRELOAD &&
        (t->durable_dfd = fcntl(s->copies_dfd, F_DUPFD_CLOEXEC, 0)) < 0) {
        intake_free(t);
        conns_reply_err(s, k, PROTO_E_INTERNAL,
                        "cannot start the submit's checks: out of "
                        "descriptors");
        return;
    }
    t->conn = (uint32_t)(k - s->conns);
    t->conn_gen = k->gen;
    t->seen_ns = os_now_ns();
    if ((rc = intake_start(t))) {
        char m[128];

        intake_free(t);
        snprintf(m, sizeof(m), "cannot start the submit's checks: %s", strerror(-rc));
        conns_reply_err(s, k, PROTO_E_INTERNAL, m);
        return;
    }
    t->next = s->intakes;
    s->intakes = t;
    k->pending = t;
}

/* The fields of a client that keeps no files (protocol.h): a tenant is named by the
 * operator's own processes alone (the API process runs as cuzkd's user); results and
 * idempotency keys live in the job store; a key seen before is answered here, before
 * anything is copied. 1: answered. */
static int service_refused(struct sup *s, struct conn *k, const struct control_req *r)
{
    if (r->tenant && !k->privileged) {
        conns_reply_err(s, k, PROTO_E_NOT_PERMITTED,
                        "\"tenant\" may be given only by root, cuzkd's own user or its --api-user "
                        "(the HTTP API)");
        return 1;
    }
    if ((r->results_store || r->idem_key) && !s->store) {
        conns_reply_err(
            s, k, PROTO_E_BAD_REQUEST,
            "cuzkd runs with --no-store: \"results\":\"store\" and idempotency keys need the job store");
        return 1;
    }
    return s->store && results_idem(s, k, r->tenant, r->idem_key, r->body_sha256);
}

/* A submit: its files are checked and copied by an intake (intake.h), off this loop;
 * submit_finish takes it from there. */
void submit_run(struct sup *s, struct conn *k, struct control_req *r, size_t n_fds)
{
    /* Before anything is copied: a user at its quota costs cuzkd nothing. */
    if (service_refused(s, k, r) || submit_refused(s, k, (uint32_t)r->n_witnesses, r->tenant, r->max_running))
        return;
    if (r->circuit) {
        /* By name: the circuit's files (cuzkd's descriptors) after the client's. */
        int extra[3];
        size_t n_extra;
        const char *code;
        char m[512];

        if (catalog_submit(s, r, extra, &n_extra, &code, m, sizeof(m))) {
            conns_reply_err(s, k, code, m);
            return;
        }
        intake_begin_extra(s, k, r, n_fds, extra, n_extra);
        return;
    }
    submit_intake_begin(s, k, r, n_fds);
}

/* The store on: the job holds the durable copies its intake wrote (take_copies). 1:
 * refused (answered; the submit and copies are consumed). */
static int submit_durable(struct sup *s, struct conn *k, struct intake *t, struct control_submit *sub,
                          json_t *copies, json_t *held)
{
    char err[512];
    int rc;

    if (!(rc = t->dur_rc) && !(rc = take_copies(s, sub, held, err, sizeof(err)))) return 0;
    /* held (NULL when the intake failed: it removed its own) is released: the job's
     * own copies go, a shared one only if no other job holds it. */
    json_decref(copies);
    jobs_dur_release(s, held);
    control_submit_free(sub, &s->copies);
    conns_reply_err(s, k, PROTO_E_STORE, t->dur_rc ? t->dur_err : err);
    return 1;
}

/* The refusals once the files are read: draining and the uid's quotas again (the
 * table moved while the files were read: other intakes landed), the bytes of its
 * copies, --max-queued. 1: refused (answered; the submit and copies are dropped). */
static int submit_late_refused(struct sup *s, struct conn *k, struct control_submit *sub, json_t *copies,
                               json_t *held)
{
    uint64_t q = uid_bytes_quota(s, k->uid), used = q ? uid_bytes(s, k->uid) : 0;
    uint32_t queued = s->c->max_queued ? unfinished_parts(s) : 0;
    const char *code = PROTO_E_BUSY;
    char m[256];

    if (submit_refused(s, k, (uint32_t)sub->n, sub->tenant, sub->max_running)) {
        submit_drop(s, sub, copies, held);
        return 1;
    }
    if (q && sub->bytes + used > q) {
        snprintf(m, sizeof(m),
                 "quota: this job's files are %.1f MiB and uid %u's unfinished "
                 "jobs hold %.1f MiB of copies; --quota-bytes is %.1f MiB: retry "
                 "when some finish",
                 (double)sub->bytes / 1048576.0, (unsigned)k->uid, (double)used / 1048576.0,
                 (double)q / 1048576.0);
        code = PROTO_E_QUOTA;
    } else if (s->c->max_queued && sub->n > s->c->max_queued) {
        snprintf(m, sizeof(m),
                 "busy: a job of %zu partitions is more than "
                 "this cuzkd queues (--max-queued %u): split it",
                 sub->n, s->c->max_queued);
    } else if (s->c->max_queued && queued + sub->n > s->c->max_queued) {
        snprintf(m, sizeof(m),
                 "busy: %u partition(s) queued or in progress, "
                 "this job's %zu would pass --max-queued %u; retry when "
                 "some finish",
                 queued, sub->n, s->c->max_queued);
    } else {
        return 0;
    }
    submit_drop(s, sub, copies, held);
    conns_reply_err(s, k, code, m);
    return 1;
}

/* The submit into the job table, retiring decided jobs when it is full. With a store
 * it is recorded first (copies: the durable names), and taken out again when the
 * table refuses it. NULL with *slot, or the error code of the reply with err
 * (nothing started). */
static const char *submit_enter(struct sup *s, struct conn *k, struct control_submit *sub, json_t *copies,
                                uint32_t *slot, char *err, size_t errlen)
{
    const struct control_peer peer = { k->uid, k->gid, k->groups, k->n_groups };
    struct pipe_submit_part *parts = calloc(sub->n, sizeof(*parts));
    int rc;

    if (!parts) {
        snprintf(err, errlen, "out of memory");
        return PROTO_E_INTERNAL;
    }
    for (size_t i = 0; i < sub->n; i++)
        parts[i] = (struct pipe_submit_part){ .wtns_path = sub->wtns[i],
                                              .r1cs_path = sub->r1cs,
                                              .name = sub->name[i],
                                              .wgen_path = sub->wgen,
                                              .wtns_fd = sub->wtns_fd[i],
                                              .r1cs_fd = sub->r1cs_fd,
                                              .wgen_fd = sub->wgen_fd };
    /* Durable first: the job and its partitions are committed to the store under
     * the id the table will give it (ids are the supervisor's alone) before any stage
     * can see it, so a store that cannot record it (disk full) refuses the submit
     * with nothing started; and a job the client is told about survives cuzkd. */
    if (s->store && journal_record(s, sub, copies, &peer, err, errlen)) {
        free(parts);
        return PROTO_E_STORE;
    }
    for (int tries = 0; tries < 2; tries++) {
        rc = pipeline_submit_job_fds(&s->pl, sub->zkey, sub->zkey_fd, sub->out_dir, sub->out_fd,
                                     (int64_t)k->uid, sub->priority, (uint32_t)sub->n, parts, os_now_ns(),
                                     slot, err, errlen);
        if (rc != -ENOSPC || tries) break;
        journal_sync(s); /* a decided job is retired only once its end is recorded */
        if (jobs_retire(s, 1) <= 0) break;
    }
    free(parts);
    if (rc == -ENOBUFS) {
        s->repush_needed = 1;
        rc = 0;
    }
    if (rc && s->store) {
        char e2[512];
        uint64_t id = barrier_load_relaxed(&s->pl.data.jobtab.hdr->next_job_id);

        /* Not started after all: take it out again, so no later cuzkd starts it. */
        if (store_job_delete(s->store, id, e2, sizeof(e2)))
            logmsg("job %llu was refused (%s) but stays in the job store: %s; a later "
                   "cuzkd will run it",
                   (unsigned long long)id, err, e2);
    }
    return !rc ? NULL : rc == -ENOSPC ? PROTO_E_FULL : PROTO_E_BAD_REQUEST;
}

/* The job took slot: it holds the submit's files and durable copies (held) from now
 * on (released when its slot retires); the client is told its id. */
static void submit_started(struct sup *s, struct conn *k, struct control_submit *sub, json_t *held,
                           uint32_t slot)
{
    const struct jobtab_job *jb = &s->pl.data.jobtab.jobs[slot];
    struct job_files f = { .zkey_fd = sub->zkey_fd,
                           .r1cs_fd = sub->r1cs_fd,
                           .out_fd = sub->out_fd,
                           .wgen_fd = sub->wgen_fd,
                           .wtns_fd = sub->wtns_fd,
                           .n = sub->n,
                           .bytes = sub->bytes,
                           .dur = held };

    jobs_begin(s, slot, k->uid, 0, &f);
    {
        json_t *meta = sub->metadata[0] ? json_loads(sub->metadata, 0, NULL) : NULL;

        results_note(s, slot, sub->circuit, sub->tenant, sub->results_store, (int64_t)time(NULL), meta);
        json_decref(meta);
    }
    for (uint32_t i = 0; s->store && i < sub->n; i++) s->parts[jb->first_part + i].rec = STORE_QUEUED;
    sub->zkey_fd = sub->r1cs_fd = sub->out_fd = sub->wgen_fd = -1;
    sub->wtns_fd = NULL;
    logmsg("job %llu: %zu partition(s) of %s -> %s", (unsigned long long)jb->id, sub->n, sub->zkey,
           sub->out_dir);
    if (s->slot) stats_counter_add(s->slot, SUP_C_SUBMITS, 1);
    {
        json_t *o = json_pack("{s:I,s:i}", "job", (json_int_t)jb->id, "partitions", (int)sub->n);

        if (o && s->jobs[slot].metadata) json_object_set(o, "metadata", s->jobs[slot].metadata);
        conns_reply(s, k, control_reply_ok(o));
    }
}

/* The rest of a submit, in the loop, once its intake checked it (and, with a job
 * store, wrote its durable copies): its submit and copies are consumed. */
static void submit_finish(struct sup *s, struct conn *k, struct intake *t)
{
    struct control_submit sub = t->sub, *sub_ = &t->sub;
    json_t *copies = t->copies, *held = t->held;
    const char *code;
    char err[512];
    uint32_t slot;

    memset(sub_, 0, sizeof(*sub_));
    sub_->zkey_fd = sub_->r1cs_fd = sub_->out_fd = sub_->wgen_fd = -1;
    t->copies = t->held = NULL; /* ours now */
    if (!s->store) {
        json_decref(copies);
        json_decref(held);
        copies = held = NULL;
    } else if (submit_durable(s, k, t, &sub, copies, held)) {
        return;
    }
    if (submit_late_refused(s, k, &sub, copies, held)) return;
    /* The same key may have come in while the files were read. */
    if (s->store && results_idem(s, k, sub.tenant, sub.idem_key, sub.body_sha256)) {
        submit_drop(s, &sub, copies, held);
        return;
    }
    code = sub.results_store && results_spool_make(s, &sub, err, sizeof(err))
        ? PROTO_E_STORE
        : submit_enter(s, k, &sub, copies, &slot, err, sizeof(err));
    if (code && sub.results_store)
        results_spool_remove(s, barrier_load_relaxed(&s->pl.data.jobtab.hdr->next_job_id));
    json_decref(copies);
    if (code) {
        jobs_dur_release(s, held);
        conns_reply_err(s, k, code, err);
    } else {
        submit_started(s, k, &sub, held, slot);
    }
    control_submit_free(&sub, &s->copies);
}

/* The connection an intake answers, or NULL when it closed meanwhile. */
static struct conn *intake_conn(struct sup *s, const struct intake *t)
{
    struct conn *k = &s->conns[t->conn];

    return k->fd >= 0 && k->gen == t->conn_gen && k->pending == t ? k : NULL;
}

/* EV_INTAKE: answer each finished intake's client, free those given up on. */
void submit_handle_intakes(struct sup *s)
{
    uint64_t n;

    (void)!read(s->intake_fd, &n, sizeof(n));
    for (struct intake **pp = &s->intakes; *pp;) {
        struct intake *t = *pp;
        struct conn *k;

        if (!intake_done(t)) {
            pp = &t->next;
            continue;
        }
        *pp = t->next;
        if (t->held && (t->abandoned || !intake_conn(s, t))) drop_unheld(s, t->held);
        if (t->abandoned) {
            logmsg("a %s of uid %u given up on (--copy-timeout) ended after all",
                   t->r.kind == CONTROL_PRELOAD ? "preload" : "submit", (unsigned)t->uid);
        } else if ((k = intake_conn(s, t))) {
            k->pending = NULL;
            k->active_ns = os_now_ns();
            if (t->rc)
                conns_reply_err(s, k, t->e.code, t->e.message);
            else if (t->r.kind == CONTROL_PRELOAD) {
                requests_circuit_finish(s, k, &t->r, NULL, 0, t->copy_fd);
                t->copy_fd = -1; /* taken: pinned, or put on refusal */
            } else
                submit_finish(s, k, t);
            intake_free(t);
            conns_resume(s, k);
            continue;
        }
        intake_free(t);
    }
}

/* --copy-timeout: an intake whose copies read nothing for that long fails its
 * submit; its thread is left to end on its own (intake.h). */
void submit_check_intakes(struct sup *s, uint64_t t_ns)
{
    const uint64_t limit = (uint64_t)s->c->copy_timeout_s * 1000000000ull;

    for (struct intake *t = s->intakes; t; t = t->next) {
        uint64_t b = intake_bytes(t);
        struct conn *k;
        char m[384];

        if (t->abandoned || intake_done(t)) continue;
        if (b != t->seen_bytes) {
            t->seen_bytes = b;
            t->seen_ns = t_ns;
            continue;
        }
        if (!limit || t_ns - t->seen_ns < limit) continue;
        t->abandoned = 1;
        logmsg("a %s of uid %u read nothing of its files for %u s (%llu bytes in "
               "all): refused; its reads are left to end on their own",
               t->r.kind == CONTROL_PRELOAD ? "preload" : "submit", (unsigned)t->uid, s->c->copy_timeout_s,
               (unsigned long long)b);
        if (!(k = intake_conn(s, t))) continue;
        k->pending = NULL;
        snprintf(m, sizeof(m),
                 "%s: no byte of its files could be read for %u s "
                 "(--copy-timeout; %llu bytes read in all): is one on a filesystem whose "
                 "reads block (a FUSE mount, a hung NFS server)? Copy the files to a local "
                 "disk and try again",
                 t->r.kind == CONTROL_PRELOAD ? "preload" : "submit", s->c->copy_timeout_s,
                 (unsigned long long)b);
        conns_reply_err(s, k, PROTO_E_BAD_INPUT, m);
        conns_resume(s, k);
    }
}
