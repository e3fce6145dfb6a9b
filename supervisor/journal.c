/* journal.c — the job table mirrored into the job store (store.h, sup.h): each
 * submit recorded before it starts, partition states batched once a tick, pruning. */
#include "sup.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "base/error.h"

static enum store_part_state journal_state_of(uint32_t st)
{
    switch (st) {
    case JOBTAB_SYNTH: return STORE_SYNTHESIZING;
    case JOBTAB_READY:
    case JOBTAB_PROVING: return STORE_PROVING;
    case JOBTAB_PROVED:
    case JOBTAB_FINAL: return STORE_FINALIZING;
    case JOBTAB_DONE: return STORE_DONE;
    case JOBTAB_FAILED: return STORE_FAILED;
    default: return STORE_QUEUED;
    }
}

/* Partition p's tries: 0 before its first claim, then 1, one more for each try a
 * dead or killed stage cut short (retries); a resumed final partition keeps the
 * count the store had. Not the job table's claims: a clean partition is claimed
 * twice (synth, then a worker). */
uint32_t part_attempts(const struct sup *s, uint32_t p)
{
    const struct part_state *pp = &s->parts[p];

    if (pp->fixed_attempts) return pp->fixed_attempts;
    if (!pp->retries && !barrier_load_relaxed(&s->pl.data.jobtab.parts[p].attempts)) return 0;
    return 1u + pp->retries;
}

/* A job store write that failed: counted (the supervisor's counter "store_errors",
 * which the alert rules watch), logged once per 10 s. */
static void journal_log_err(struct sup *s, const char *what, const char *err)
{
    uint64_t t = os_now_ns();

    if (s->slot) stats_counter_add(s->slot, SUP_C_STORE_ERRORS, 1);
    if (s->store_err_ns && t - s->store_err_ns < 10000000000ull) return;
    s->store_err_ns = t;
    logmsg("%s: %s (retried every tick; proving goes on)", what, err);
}

/* Record every partition state change since the last call, and the jobs decided
 * since, in one transaction per tick (100 ms) whatever the number of partitions,
 * not fsync'd (store.h says why that is enough) and nothing in the stages' path. A job's word is read before its
 * partitions' so that a job recorded decided has its partitions recorded final.
 * When the commit fails, everything is written again next time. */
void journal_sync(struct sup *s)
{
    struct jobtab *jt = &s->pl.data.jobtab;
    char err[512];
    int changed = 0, rc;

    if (!s->store) return;
    for (uint32_t j = 0; j < jt->hdr->max_jobs; j++) {
        const struct jobtab_job *jb = &jt->jobs[j];
        uint32_t st;

        if (s->jobs[j].rec != REC_RUNNING) continue;
        st = job_state(s, j);
        for (uint32_t i = 0; i < jb->n_parts; i++) {
            uint32_t p = jb->first_part + i;
            enum store_part_state ps = journal_state_of(jobtab_word_state(jobtab_part_load(jt, p)));

            const char *reason = jt->parts[p].reason;
            enum store_part_state put = ps;
            uint32_t att = part_attempts(s, p);
            char why[512];

            if (s->parts[p].rec_att != att) {
                if (store_part_attempts(s->store, jb->id, i, att)) goto fail;
                s->parts[p].rec_att = (uint16_t)att;
                changed = 1;
            }
            if (s->parts[p].rec == ps) continue;
            /* A proof kept in the store goes in with its done state (results.c); one
                 * that cannot be read is recorded failed, with why. */
            if (ps == STORE_DONE && s->jobs[j].results_store && results_harvest(s, j, i, why, sizeof(why))) {
                logmsg("job %llu partition %u: %s", (unsigned long long)jb->id, i, why);
                put = STORE_FAILED;
                reason = why;
            }
            if (store_part_set(s->store, jb->id, i, put, reason)) goto fail;
            s->parts[p].rec = (uint8_t)ps;
            changed = 1;
        }
        if (st == JOBTAB_DONE || st == JOBTAB_FAILED) {
            if (store_job_set(s->store, jb->id, st == JOBTAB_DONE ? STORE_JOB_DONE : STORE_JOB_FAILED))
                goto fail;
            s->jobs[j].rec = REC_FINAL;
            changed = 1;
        }
    }
    if (!changed) return;
    {
        uint64_t t0 = os_now_ns();

        rc = store_commit(s->store, err, sizeof(err));
        /* The batch's cost (the updates before t0 are in memory; the commit
         * writes the WAL), shown by cuzk-top / cuzk metrics as store_commits and
         * store_ns in the supervisor's counters. */
        if (s->slot) {
            stats_counter_add(s->slot, SUP_C_STORE_COMMITS, 1);
            stats_counter_add(s->slot, SUP_C_STORE_NS, os_now_ns() - t0);
        }
    }
    if (!rc) {
        results_synced(s);
        return;
    }
    journal_log_err(s, "job store: recording partition states failed", err);
    goto redo;
fail:
    snprintf(err, sizeof(err), "an update failed");
    store_commit(s->store, err, sizeof(err)); /* ends (or rolls back) the batch */
    journal_log_err(s, "job store: recording partition states failed", err);
redo:
    for (uint32_t j = 0; j < jt->hdr->max_jobs; j++) {
        const struct jobtab_job *jb = &jt->jobs[j];

        if (s->jobs[j].rec == REC_NONE) continue;
        if (s->jobs[j].rec == REC_FINAL && job_state(s, j) != JOBTAB_FREE) s->jobs[j].rec = REC_RUNNING;
        for (uint32_t i = 0; s->jobs[j].rec == REC_RUNNING && i < jb->n_parts; i++) {
            s->parts[jb->first_part + i].rec = REC_UNKNOWN;
            s->parts[jb->first_part + i].rec_att = PART_ATT_UNKNOWN;
        }
    }
}

/* The submit as the store keeps it: what a later cuzkd needs to start it again.
 * Version 2 (descriptors): the paths are the client's names (display only, except
 * out_dir, reopened at resume and accepted only as the same directory: "out"); the
 * files are cuzkd's durable copies, by name in STATE_DIR/INSTANCE.copies ("copies");
 * "peer" is who submitted (the out dir must still be theirs to write). */
char *journal_request(const struct control_submit *sub, json_t *copies, const struct control_peer *peer,
                      const struct stat *od)
{
    json_t *parts = json_array(), *groups = json_array(), *cp = json_object_get(copies, "parts"), *o;
    char *t;

    for (size_t i = 0; parts && i < sub->n; i++)
        json_array_append_new(parts,
                              json_pack("{s:s,s:s,s:O,s:s}", "wtns", sub->wtns[i], "name", sub->name[i],
                                        "copy", json_array_get(cp, i), "wtns_id", sub->wtns_id[i]));
    for (size_t i = 0; groups && i < peer->n_groups; i++)
        json_array_append_new(groups, json_integer((json_int_t)peer->groups[i]));
    o = json_pack("{s:i,s:s,s:s,s:s?,s:s?,s:i,s:o,s:{s:I,s:I},s:{s:I,s:I,s:o},s:{s:O,s:O?,s:O?}}", "version",
                  2, "zkey", sub->zkey, "out_dir", sub->out_dir, "r1cs", sub->r1cs[0] ? sub->r1cs : NULL,
                  "witness_gen", sub->wgen[0] ? sub->wgen : NULL, "priority", (int)sub->priority, "parts",
                  parts, "out", "dev", (json_int_t)od->st_dev, "ino", (json_int_t)od->st_ino, "peer", "uid",
                  (json_int_t)peer->uid, "gid", (json_int_t)peer->gid, "groups", groups, "copies", "zkey",
                  json_object_get(copies, "zkey"), "r1cs", json_object_get(copies, "r1cs"), "wgen",
                  json_object_get(copies, "wgen"));
    if (o && sub->results_store) json_object_set_new(o, "results", json_string("store"));
    for (size_t i = 0; o && i < 4; i++) {
        const char *k[] = { "circuit", "tenant", "idempotency_key", "body_sha256" };
        const char *v[] = { sub->circuit, sub->tenant, sub->idem_key, sub->body_sha256 };

        if (v[i][0]) json_object_set_new(o, k[i], json_string(v[i]));
    }
    if (o && sub->metadata[0]) json_object_set_new(o, "metadata", json_loads(sub->metadata, 0, NULL));
    t = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return t;
}

/* --store-keep-days: decided jobs leave the store that long after they finished, so
 * the file does not grow with every job ever run. At start, then hourly (from
 * tick): a DELETE of old rows, cheap next to a tick's batch commit. */
void journal_prune(struct sup *s)
{
    uint64_t n;
    char err[512];

    if (!s->store || !s->c->store_keep_days) return;
    if (store_prune(s->store, (int64_t)time(NULL) - (int64_t)s->c->store_keep_days * 86400, &n, err,
                    sizeof(err)))
        journal_log_err(s, "pruning", err);
    else if (n)
        logmsg("job store: removed %llu decided job(s) finished more than %u day(s) ago "
               "(--store-keep-days)",
               (unsigned long long)n, s->c->store_keep_days);
}

/* Each user's decided jobs, and each API tenant's apart from the others (they all
 * share the API's uid), bounded by count and bytes (a user submitting many small
 * jobs grew the store for --store-keep-days). A minute apart: fast enough against a
 * burst, rare enough to cost nothing. */
void journal_prune_owner(struct sup *s)
{
    uint64_t n;
    char err[512];

    if (store_prune_per_owner(s->store, s->c->store_keep_jobs, (uint64_t)s->c->store_keep_mb << 20, &n, err,
                              sizeof(err)))
        journal_log_err(s, "pruning", err);
    else if (n)
        logmsg("job store: removed %llu decided job(s) beyond a user's or API tenant's "
               "--store-keep-jobs %u / --store-keep-mb %u",
               (unsigned long long)n, s->c->store_keep_jobs, s->c->store_keep_mb);
}

/* Record a submit in the store under the next job id. 0 or -errno with err. */
int journal_record(struct sup *s, const struct control_submit *sub, json_t *copies,
                   const struct control_peer *peer, char *err, size_t errlen)
{
    uint64_t id = barrier_load_relaxed(&s->pl.data.jobtab.hdr->next_job_id);
    const char **names = calloc(sub->n, sizeof(*names));
    struct stat od;
    char *req, e[400];
    uint64_t t0;
    int rc;

    if (fstat(sub->out_fd, &od)) {
        rc = -errno;
        free(names);
        snprintf(err, errlen, "out_dir %s: %s", sub->out_dir, strerror(-rc));
        return rc;
    }
    req = journal_request(sub, copies, peer, &od);
    if (!names || !req) {
        free(names);
        free(req);
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    for (size_t i = 0; i < sub->n; i++) names[i] = sub->name[i];
    t0 = os_now_ns();
    rc = store_job_add(s->store, id, req, (uint32_t)sub->n, names, e, sizeof(e));
    if (s->slot) {
        stats_counter_add(s->slot, SUP_C_STORE_COMMITS, 1);
        stats_counter_add(s->slot, SUP_C_STORE_NS, os_now_ns() - t0);
    }
    if (rc) snprintf(err, errlen, "the job could not be recorded, so it was not accepted: %s", e);
    free(names);
    free(req);
    return rc;
}
