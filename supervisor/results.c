/* results.c — jobs whose proofs are kept in the job store (sup.h; protocol.h's
 * "results":"store", for a client that keeps no files: the HTTP API process).
 *
 * Such a job has no out dir of the client's: cuzkd makes STATE_DIR/INSTANCE.results/ID
 * (0700, its own, beside the durable copies), the finalizer writes there as into any
 * out dir, and the tick that records a partition done (journal_sync) reads its two
 * files (spooled.h) into the store's results table in the same transaction: a proof
 * the store calls done is in the store. Once the job's end is committed its spool
 * dir goes. A cuzkd killed between the two finds the files again: the job is resumed
 * with that dir as its out dir (a proof there that verifies is done, then read in). */
#include "sup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store/fleet_pg.h"
#include "base/os.h"
#include "fleet/spooled.h"
#include "store/store_results.h"
#include "supervisor/owners.h"

#define RESULTS_DISPLAY "(job store)" /* the out_dir such a job shows */

int results_open(struct sup *s, char *err, size_t errlen)
{
    s->results_dfd = copies_private_dir(s->c->state_dir, s->c->instance, ".results", err, errlen);
    return s->results_dfd < 0 ? s->results_dfd : 0;
}

/* What the job JSON says of job slot's origin (results_job_fields). */
void results_note(struct sup *s, uint32_t slot, const char *circuit, const char *tenant, int store,
                  int64_t submitted, json_t *metadata)
{
    struct job_state *js = &s->jobs[slot];

    json_decref(js->metadata);
    js->metadata = json_is_object(metadata) ? json_incref(metadata) : NULL;
    snprintf(js->circuit, sizeof(js->circuit), "%s", circuit ? circuit : "");
    snprintf(js->tenant, sizeof(js->tenant), "%s", tenant ? tenant : "");
    js->results_store = (uint8_t) !!store;
    js->spool_gone = 0;
    js->submitted_unix = submitted;
}

/* A "results":"store" submit about to enter the table as the next job id: its
 * spool dir made and opened as its out dir. 0, or -errno with err. */
int results_spool_make(struct sup *s, struct control_submit *sub, char *err, size_t errlen)
{
    uint64_t id = barrier_load_relaxed(&s->pl.data.jobtab.hdr->next_job_id);
    char name[32];

    snprintf(name, sizeof(name), "%llu", (unsigned long long)id);
    if (s->results_dfd < 0) {
        snprintf(err, errlen, "\"results\":\"store\" needs the job store (cuzkd runs with --no-store)");
        return -EINVAL;
    }
    if ((mkdirat(s->results_dfd, name, 0700) && errno != EEXIST) ||
        (sub->out_fd = openat(s->results_dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
        int e = errno;

        snprintf(err, errlen, "cannot make its spool dir: %s", strerror(e));
        return -e;
    }
    spooled_clean(sub->out_fd); /* a refused submit's leftovers under this id */
    snprintf(sub->out_dir, sizeof(sub->out_dir), "%s", RESULTS_DISPLAY);
    return 0;
}

/* Job id's spool dir, emptied and removed (its proofs are in the store, or it was
 * refused). */
void results_spool_remove(struct sup *s, uint64_t id)
{
    char name[32];
    int fd;

    snprintf(name, sizeof(name), "%llu", (unsigned long long)id);
    if (s->results_dfd < 0) return;
    if ((fd = openat(s->results_dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) >= 0) {
        spooled_clean(fd);
        close(fd);
    }
    if (unlinkat(s->results_dfd, name, AT_REMOVEDIR) && errno != ENOENT)
        logmsg("job %llu: its spool dir stays: %s", (unsigned long long)id, strerror(errno));
}

/* A resumed job's spool dir as its out dir: a descriptor, or -1 with why. */
int results_reopen(struct sup *s, uint64_t id, char *why, size_t len)
{
    char name[32];
    int fd;

    snprintf(name, sizeof(name), "%llu", (unsigned long long)id);
    if (s->results_dfd < 0) {
        snprintf(why, len, "no spool directory (the job store is off)");
        return -1;
    }
    mkdirat(s->results_dfd, name, 0700); /* gone: its partitions are proved again */
    fd = openat(s->results_dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) snprintf(why, len, "its spool dir in the job store's directory: %s", strerror(errno));
    return fd;
}

/* journal_sync: partition i of job slot is done; its proof and public JSON read from
 * the spool dir into the store's batch (with its timings). 0, or -1 with why.
 * This runs in the loop's tick, as the store's commit of the same batch does: both
 * touch only cuzkd's own state dir (a few KiB here, read back just after the
 * finalizer wrote them), never a client's file system, so a disk slow enough to
 * stall this read stalls that commit as much. Moving both off the loop is one change;
 * this read alone would not shorten the tick. */
int results_harvest(struct sup *s, uint32_t slot, uint32_t i, char *why, size_t len)
{
    const struct jobtab_job *jb = &s->pl.data.jobtab.jobs[slot];
    const struct pipe_partinfo *pi = pipeline_partinfo(&s->pl, jb->first_part + i);
    char tp[PIPE_NAME_LEN + 16], tq[PIPE_NAME_LEN + 16], *proof = NULL, *pub = NULL, *tm;
    json_t *t = control_part_timings(&pi->times, jb->submit_ns);
    int rc = -1;

    snprintf(tp, sizeof(tp), "%.*s.proof.json", PIPE_NAME_LEN, pi->name);
    snprintf(tq, sizeof(tq), "%.*s.public.json", PIPE_NAME_LEN, pi->name);
    tm = t ? json_dumps(t, JSON_COMPACT) : NULL;
    json_decref(t);
    if ((proof = spooled_read(s->jobs[slot].files.out_fd, tp, FLEET_PROOF_MAX, why, len)) &&
        (pub = spooled_read(s->jobs[slot].files.out_fd, tq, FLEET_PUBLIC_MAX, why, len))) {
        rc = store_result_put(s->store, jb->id, i, proof, pub, tm);
        if (rc) snprintf(why, len, "stored proof: the job store refused it: %s", strerror(-rc));
    }
    free(proof);
    free(pub);
    free(tm);
    return rc ? -1 : 0;
}

/* After a commit: the spool dirs of jobs whose end (and so every proof) is now in
 * the store are removed. */
void results_synced(struct sup *s)
{
    const struct jobtab *jt = &s->pl.data.jobtab;

    for (uint32_t j = 0; j < jt->hdr->max_jobs; j++) {
        struct job_state *js = &s->jobs[j];

        if (!js->results_store || js->spool_gone || js->rec != REC_FINAL) continue;
        results_spool_remove(s, jt->jobs[j].id);
        js->spool_gone = 1;
    }
}

/* At start, after the resume: spool dirs no job in the table has (their jobs were
 * decided, or their submit was refused) are removed. */
void results_sweep(struct sup *s)
{
    DIR *d = s->results_dfd >= 0 ? os_dir_stream(s->results_dfd) : NULL;
    struct dirent *e;

    if (!d) return;
    while ((e = readdir(d))) {
        char *end;
        unsigned long long id = strtoull(e->d_name, &end, 10);
        uint32_t slot;

        if (e->d_name[0] < '0' || e->d_name[0] > '9' || *end) continue;
        if (jobs_slot(s, id, &slot)) results_spool_remove(s, id);
    }
    closedir(d);
}

/* A submit with an idempotency key the store has, in the key's scope (its tenant, or
 * without one its submitter's uid: "uid:N", never a tenant's name, so one user's keys
 * never answer another's): answered with the first job when the body's hash is the
 * same, else refused (a conflict). 1 when answered, 0 when the key is new. */
struct idem_job {
    uint32_t n;
    json_t *metadata; /* the first job's, or NULL */
};

static int count_parts(void *arg, const struct store_job *j)
{
    struct idem_job *x = arg;
    json_t *req = json_loads(j->request, 0, NULL);

    x->n = j->n_parts;
    if (json_is_object(json_object_get(req, "metadata")))
        x->metadata = json_incref(json_object_get(req, "metadata"));
    json_decref(req);
    return 0;
}

int results_idem(struct sup *s, struct conn *k, const char *tenant, const char *key, const char *sha)
{
    char h[65], err[512], m[320], scope[CONTROL_TENANT_MAX + 16];
    uint64_t job;
    struct idem_job n = { 0, NULL };
    json_t *o;
    int rc, cbret;

    if (!key || !key[0]) return 0;
    if (tenant && tenant[0])
        snprintf(scope, sizeof(scope), "%s", tenant);
    else
        snprintf(scope, sizeof(scope), "uid:%u", (unsigned)k->uid);
    rc = store_idem_find(s->store, scope, key, &job, h, err, sizeof(err));
    if (rc > 0 && !strcmp(h, sha))
        rc = store_job_one(s->store, job, count_parts, &n, &cbret, err, sizeof(err));
    if (rc < 0) {
        json_decref(n.metadata);
        conns_reply_err(s, k, PROTO_E_STORE, err);
        return 1;
    }
    if (!rc) return 0;
    if (strcmp(h, sha)) {
        snprintf(m, sizeof(m),
                 "idempotency key \"%.128s\" was used for job %llu with another body: use a new key "
                 "for a new request",
                 key, (unsigned long long)job);
        conns_reply_err(s, k, PROTO_E_CONFLICT, m);
        return 1;
    }
    o = json_pack("{s:I,s:i,s:b}", "job", (json_int_t)job, "partitions", (int)n.n, "existing", 1);
    if (o && n.metadata) json_object_set(o, "metadata", n.metadata);
    json_decref(n.metadata);
    conns_reply(s, k, control_reply_ok(o));
    return 1;
}

/* The job JSON's fields of a job's origin (protocol.h). */
void results_job_fields(const struct sup *s, uint32_t slot, json_t *j)
{
    const struct job_state *js = &s->jobs[slot];

    if (!j) return;
    if (js->circuit[0]) json_object_set_new(j, "circuit", json_string(js->circuit));
    if (js->tenant[0]) json_object_set_new(j, "tenant", json_string(js->tenant));
    if (js->metadata) json_object_set(j, "metadata", js->metadata);
    {
        const struct jobtab_job *jb = &s->pl.data.jobtab.jobs[slot];
        size_t i;
        json_t *po;

        /* tries, not claims (a clean partition is claimed twice: synth, worker) */
        json_array_foreach (json_object_get(j, "parts"), i, po)
            if (i < jb->n_parts)
                json_object_set_new(po, "attempts",
                                    json_integer(part_attempts(s, jb->first_part + (uint32_t)i)));
    }
    if (js->results_store) {
        size_t i;
        json_t *po;

        json_object_set_new(j, "results", json_string("store"));
        /* no file of the client's: the proof request reads them */
        json_array_foreach (json_object_get(j, "parts"), i, po) {
            json_object_del(po, "proof");
            json_object_del(po, "public");
        }
    }
    json_object_set_new(j, "submitted_unix", json_integer((json_int_t)js->submitted_unix));
}

/* The job table's word for a stored partition state. */
static const char *stored_state(enum store_part_state ps)
{
    static const char *const n[STORE_NSTATES] = { "queued", "synth", "proving", "final", "done", "failed" };

    return (unsigned)ps < STORE_NSTATES ? n[ps] : "?";
}

struct stored_ctx {
    struct sup *s;
    const struct conn *k; /* who asks: a job not theirs to see is not built */
    json_t *o;            /* the job JSON built */
};

/* A job the table no longer has (decided, retired, or before a restart), as the job
 * JSON from its store rows. */
static int stored_json(void *arg, const struct store_job *j)
{
    struct stored_ctx *x = arg;
    json_t *req = json_loads(j->request, 0, NULL), *parts;
    json_t *uid = json_object_get(json_object_get(req, "peer"), "uid");
    const char *tenant = json_string_value(json_object_get(req, "tenant"));
    uint32_t done = 0, failed = 0;

    /* owners_may_see: a stored job of another's answers as one that never was */
    if (!json_is_integer(uid) ? !x->k->privileged || x->k->api_user
                              : !owners_may_see(x->k->uid, x->k->privileged, x->k->api_user,
                                                (uid_t)json_integer_value(uid), tenant && tenant[0])) {
        json_decref(req);
        return 0;
    }
    parts = json_array();

    for (uint32_t i = 0; i < j->n_parts; i++) {
        json_t *po = json_pack("{s:i,s:s,s:s,s:i}", "index", (int)i, "name", j->name[i], "state",
                               stored_state(j->state[i]), "attempts", (int)j->attempts[i]);
        char *pr, *pu, *tm = NULL, e[256];

        done += j->state[i] == STORE_DONE;
        failed += j->state[i] == STORE_FAILED;
        if (j->reason[i]) json_object_set_new(po, "reason", json_string(j->reason[i]));
        if (j->state[i] == STORE_DONE &&
            store_result_get(x->s->store, j->id, i, &pr, &pu, &tm, e, sizeof(e)) > 0) {
            free(pr);
            free(pu);
        }
        json_object_set_new(
            po, "timings_ms",
            tm ? json_loads(tm, 0, NULL)
               : json_pack("{s:n,s:n,s:n,s:n}", "queue_wait", "witness", "prove", "finalize"));
        free(tm);
        json_array_append_new(parts, po);
    }
    x->o = json_pack("{s:I,s:s,s:O?,s:O?,s:O?,s:i,s:i,s:i,s:I,s:b,s:o}", "id", (json_int_t)j->id, "state",
                     j->state_job == STORE_JOB_DONE         ? "done"
                         : j->state_job == STORE_JOB_FAILED ? "failed"
                                                            : "running",
                     "priority", json_object_get(req, "priority"), "zkey", json_object_get(req, "zkey"),
                     "out_dir", json_object_get(req, "out_dir"), "partitions", (int)j->n_parts, "done",
                     (int)done, "failed", (int)failed, "submitted_unix", (json_int_t)j->submitted, "stored",
                     1, "parts", parts);
    for (const char *const *f = (const char *const[]){ "circuit", "tenant", "results", NULL }; *f; f++)
        if (json_is_string(json_object_get(req, *f))) json_object_set(x->o, *f, json_object_get(req, *f));
    if (json_is_object(json_object_get(req, "metadata")))
        json_object_set(x->o, "metadata", json_object_get(req, "metadata"));
    if (json_is_integer(json_object_get(json_object_get(req, "peer"), "uid")))
        json_object_set(x->o, "owner", json_object_get(json_object_get(req, "peer"), "uid"));
    json_decref(req);
    return 0;
}

/* status or wait of job id that the table does not have: answered from the store
 * when it has it (1), else 0 (not answered). */
int results_stored_job(struct sup *s, struct conn *k, uint64_t id)
{
    struct stored_ctx x = { s, k, NULL };
    char err[512];
    int cbret;

    if (!s->store || store_job_one(s->store, id, stored_json, &x, &cbret, err, sizeof(err)) <= 0 || !x.o)
        return 0;
    conns_reply(s, k, control_reply_ok(json_pack("{s:o}", "job", x.o)));
    return 1;
}

/* store_job_one's callback: the stored request's "tenant" into arg (64+1 bytes). */
static int stored_tenant(void *arg, const struct store_job *j)
{
    json_t *req = json_loads(j->request, 0, NULL);

    snprintf(arg, CONTROL_TENANT_MAX, "%s", json_string_value(json_object_get(req, "tenant")) ?: "");
    json_decref(req);
    return 0;
}

int results_tenant_hides(struct sup *s, struct conn *k, const struct control_req *r)
{
    char t[CONTROL_TENANT_MAX] = "", err[256], m[96];
    uint32_t slot;
    int cbret;

    if (!r->tenant) return 0;
    if (!k->privileged) { /* as a submit's "tenant": the API's, which runs as cuzkd's user */
        conns_reply_err(
            s, k, PROTO_E_NOT_PERMITTED,
            "\"tenant\" may be given only by root, cuzkd's own user or its --api-user (the HTTP API)");
        return 1;
    }
    if (!jobs_slot(s, r->job, &slot))
        snprintf(t, sizeof(t), "%s", s->jobs[slot].tenant);
    else if (s->store)
        (void)store_job_one(s->store, r->job, stored_tenant, t, &cbret, err, sizeof(err));
    if (!strcmp(t, r->tenant)) return 0;
    /* The same answer as a job that never was: a tenant learns nothing of another's. */
    snprintf(m, sizeof(m), "no job %llu", (unsigned long long)r->job);
    conns_reply_err(s, k, PROTO_E_NO_JOB, m);
    return 1;
}

/* The refusals of a proof request by what the store has of the job and partition
 * (p). 1: refused (answered). */
static int proof_refused(struct sup *s, struct conn *k, const struct control_req *r,
                         const struct store_part_one *p)
{
    json_t *req = json_loads(p->request, 0, NULL);
    json_t *uid = json_object_get(json_object_get(req, "peer"), "uid");
    const int store = json_is_string(json_object_get(req, "results"));
    const int owner = json_is_integer(uid) && json_integer_value(uid) == (json_int_t)k->uid;
    char m[sizeof(p->reason) + 128];

    json_decref(req);
    if (!store)
        snprintf(m, sizeof(m),
                 "job %llu was not submitted with \"results\":\"store\": its proofs are in its out dir",
                 (unsigned long long)r->job);
    else if (!p->has_part)
        snprintf(m, sizeof(m), "job %llu has %u partition(s): index %u is out of range",
                 (unsigned long long)r->job, p->n_parts, r->index);
    else if (!k->privileged && !owner) {
        conns_reply_err(s, k, PROTO_E_NOT_OWNER, "another user's job");
        return 1;
    } else if (p->state == STORE_FAILED) {
        conns_reply_err(s, k, PROTO_E_PART_FAILED, p->reason[0] ? p->reason : "failed");
        return 1;
    } else if (p->state != STORE_DONE) {
        snprintf(m, sizeof(m), "job %llu partition %u is %s", (unsigned long long)r->job, r->index,
                 store_part_state_name(p->state));
        conns_reply_err(s, k, PROTO_E_NOT_READY, m);
        return 1;
    } else
        return 0;
    conns_reply_err(s, k, PROTO_E_BAD_REQUEST, m);
    return 1;
}

/* store_results_range's callback: a partition of the "proofs" reply. */
static int range_row(void *arg, uint32_t idx, enum store_part_state st, const char *proof, const char *pub)
{
    json_t *o = json_pack("{s:i}", "index", (int)idx);
    json_t *p = st == STORE_DONE && proof ? json_loads(proof, 0, NULL) : NULL;
    json_t *q = p && pub ? json_loads(pub, 0, NULL) : NULL;

    if (o && p && q) {
        json_object_set_new(o, "proof", p);
        json_object_set_new(o, "public", q);
    } else {
        json_decref(p);
        json_decref(q);
    }
    return !o || json_array_append_new(arg, o) ? -ENOMEM : 0;
}

/* {"req":"proofs","job":ID,"index":K,"count":N}: a page of a stored job's proofs in
 * one reply (one query), refused as a proof request is (not a "results":"store" job,
 * another user's); a partition the table has done is recorded first. */
static void do_proofs(struct sup *s, struct conn *k, const struct control_req *r)
{
    struct store_part_one x;
    char err[512];
    uint32_t slot;
    json_t *req, *uid, *a;
    int rc, store, owner;

    if (!jobs_slot(s, r->job, &slot)) journal_sync(s);
    rc = store_part_one(s->store, r->job, 0, &x, err, sizeof(err));
    if (rc <= 0) {
        if (!rc) snprintf(err, sizeof(err), "no job %llu in the job store", (unsigned long long)r->job);
        conns_reply_err(s, k, rc ? PROTO_E_STORE : PROTO_E_NO_JOB, err);
        return;
    }
    req = json_loads(x.request, 0, NULL);
    free(x.request);
    uid = json_object_get(json_object_get(req, "peer"), "uid");
    store = json_is_string(json_object_get(req, "results"));
    owner = json_is_integer(uid) && json_integer_value(uid) == (json_int_t)k->uid;
    json_decref(req);
    if (!store) {
        snprintf(err, sizeof(err),
                 "job %llu was not submitted with \"results\":\"store\": its proofs are in its out dir",
                 (unsigned long long)r->job);
        conns_reply_err(s, k, PROTO_E_BAD_REQUEST, err);
        return;
    }
    if (!k->privileged && !owner) {
        conns_reply_err(s, k, PROTO_E_NOT_OWNER, "another user's job");
        return;
    }
    if (!(a = json_array()) ||
        (rc = store_results_range(s->store, r->job, r->index, r->count, range_row, a, err, sizeof(err)))) {
        json_decref(a);
        conns_reply_err(s, k, rc == -ENOMEM || !a ? PROTO_E_INTERNAL : PROTO_E_STORE,
                        !a || rc == -ENOMEM ? "out of memory" : err);
        return;
    }
    conns_reply(s, k,
                control_reply_ok(json_pack("{s:I,s:i,s:o}", "job", (json_int_t)r->job, "partitions",
                                           (int)x.n_parts, "proofs", a)));
}

/* {"req":"proof","job":ID,"index":K}: a stored proof, from the store alone (the job
 * may be long retired, or of a previous cuzkd). A partition the table has done but
 * the store not yet (the tick's batch is up to 100 ms behind) is recorded first. */
void results_proof(struct sup *s, struct conn *k, const struct control_req *r)
{
    const struct jobtab *jt = &s->pl.data.jobtab;
    struct store_part_one x;
    char err[512], *pr = NULL, *pu = NULL, *tm = NULL;
    uint32_t slot;
    int rc;

    if (!s->store) {
        conns_reply_err(s, k, PROTO_E_BAD_REQUEST, "cuzkd runs with --no-store: no proof is kept");
        return;
    }
    if (results_tenant_hides(s, k, r)) return;
    if (r->kind == CONTROL_PROOFS) {
        do_proofs(s, k, r);
        return;
    }
    if (!jobs_slot(s, r->job, &slot) && r->index < jt->jobs[slot].n_parts &&
        s->parts[jt->jobs[slot].first_part + r->index].rec != STORE_DONE)
        journal_sync(s);
    rc = store_part_one(s->store, r->job, r->index, &x, err, sizeof(err));
    if (rc <= 0) {
        if (!rc) snprintf(err, sizeof(err), "no job %llu in the job store", (unsigned long long)r->job);
        conns_reply_err(s, k, rc ? PROTO_E_STORE : PROTO_E_NO_JOB, err);
        return;
    }
    rc = proof_refused(s, k, r, &x);
    free(x.request);
    if (rc) return;
    rc = store_result_get(s->store, r->job, r->index, &pr, &pu, &tm, err, sizeof(err));
    if (rc <= 0) {
        if (!rc)
            snprintf(err, sizeof(err), "job %llu partition %u: done, but no proof is stored",
                     (unsigned long long)r->job, r->index);
        conns_reply_err(s, k, rc ? PROTO_E_STORE : PROTO_E_INTERNAL, err);
    } else {
        json_t *p = json_loads(pr, 0, NULL), *q = json_loads(pu, 0, NULL);

        if (!p || !q) {
            json_decref(p);
            json_decref(q);
            conns_reply_err(s, k, PROTO_E_INTERNAL, "the stored proof is not JSON");
        } else
            conns_reply(
                s, k,
                control_reply_ok(json_pack("{s:I,s:i,s:s,s:o,s:o}", "job", (json_int_t)r->job, "index",
                                           (int)r->index, "name", x.name, "proof", p, "public", q)));
    }
    free(pr);
    free(pu);
    free(tm);
}

/* store_jobs_list's callback: a row as the "jobs" reply's element. */
static int list_row(void *arg, const struct store_list_row *row)
{
    json_t *req = json_loads(row->request, 0, NULL), *o;

    o = json_pack("{s:I,s:s,s:I,s:i,s:i,s:i}", "id", (json_int_t)row->id, "state", row->state,
                  "submitted_unix", (json_int_t)row->submitted, "partitions", (int)row->parts, "done",
                  (int)row->done, "failed", (int)row->failed);
    if (o && !strcmp(row->state, "cancelled"))
        json_object_set_new(o, "reason", json_string("cancelled"));
    else if (o && !strcmp(row->state, "failed")) /* the job table's words for it */
        json_object_set_new(o, "reason", json_sprintf("%u of %u partitions failed", row->failed, row->parts));
    if (o && json_is_string(json_object_get(req, "circuit")))
        json_object_set(o, "circuit", json_object_get(req, "circuit"));
    if (o && json_is_object(json_object_get(req, "metadata")))
        json_object_set(o, "metadata", json_object_get(req, "metadata"));
    json_decref(req);
    if (!o || json_array_append_new(arg, o)) return -ENOMEM;
    return 0;
}

/* {"req":"jobs"}: one query of the store for the whole page, after the tick's batch
 * is written (so a job just decided reads decided, as its status does). A tenant's
 * list is the API's (root or cuzkd's user); an ordinary user sees its own jobs, the
 * operator every one. */
void results_jobs(struct sup *s, struct conn *k, const struct control_req *r)
{
    struct store_list_query q = { .tenant = r->tenant,
                                  .state = r->state_filter,
                                  .circuit = r->circuit_filter,
                                  .uid = k->privileged ? -1 : (int64_t)k->uid,
                                  .since = r->since,
                                  .before = r->before,
                                  .limit = r->limit };
    json_t *jobs;
    char err[512];
    int more, rc;

    if (!s->store) {
        conns_reply_err(s, k, PROTO_E_BAD_REQUEST, "cuzkd runs with --no-store: no job list is kept");
        return;
    }
    if (r->tenant && !k->privileged) {
        conns_reply_err(s, k, PROTO_E_NOT_PERMITTED,
                        "\"tenant\" may be given only by root or cuzkd's own user (the HTTP API process)");
        return;
    }
    journal_sync(s);
    if (!(jobs = json_array())) {
        conns_reply_err(s, k, PROTO_E_INTERNAL, "out of memory");
        return;
    }
    rc = store_jobs_list(s->store, &q, list_row, jobs, &more, err, sizeof(err));
    if (rc < 0) {
        json_decref(jobs);
        conns_reply_err(s, k, rc == -ENOMEM ? PROTO_E_INTERNAL : PROTO_E_STORE,
                        rc == -ENOMEM ? "out of memory" : err);
        return;
    }
    conns_reply(s, k, control_reply_ok(json_pack("{s:o,s:b}", "jobs", jobs, "more", more)));
}
