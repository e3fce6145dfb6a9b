/* resume.c — a previous cuzkd's unfinished jobs taken over from the job store
 * (sup.h): their durable copies and out directories reopened, proofs already on disk
 * verified, the rest queued again before any stage runs. */
#include "sup.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "supervisor/open_deadline.h"
#include "zk/wtns.h"
#include "zk/zkey.h"
#include "zk/verify.h"

/* The public signals of the witness at wtns_path are sig (npub canonical 4-limb
 * values; little-endian limbs are the witness file's byte order). */
static int signals_match(const char *wtns_path, const uint64_t *sig, uint32_t npub)
{
    char err[256];
    wtns w;
    int ok;

    if (wtns_open(&w, wtns_path, err, sizeof(err))) return 0;
    ok = w.n8 == 32 && w.nwitness > npub;
    for (uint32_t i = 0; ok && i < npub; i++)
        ok = !memcmp(sig + 4 * (size_t)i, w.values + (size_t)(1 + i) * w.n8, 32);
    wtns_close(&w);
    return ok;
}

/* A partition's proof is already published (a finalizer wrote it before the store
 * heard of it): OUT/NAME.proof.json and .public.json exist, verify against the
 * zkey's key, and the public signals are this partition's witness's (a proof left
 * in the out dir by an earlier job with other witnesses of the same names verifies
 * too). vk: loaded once per job by the caller (NULL: cannot check, redo). */
static int proof_on_disk(const groth16_vk *vk, const char *out_dir, const char *name, const char *wtns_path)
{
    char pp[2 * JOBTAB_PATH_LEN], pub[2 * JOBTAB_PATH_LEN], err[256];
    groth16_proof pr;
    uint64_t *sig = NULL;
    bool valid = false;
    int ok;

    if (!vk) return 0;
    snprintf(pp, sizeof(pp), "%s/%s.proof.json", out_dir, name);
    snprintf(pub, sizeof(pub), "%s/%s.public.json", out_dir, name);
    if (access(pp, F_OK) || access(pub, F_OK)) return 0;
    ok = !groth16_public_from_json(vk, &sig, pub, err, sizeof(err)) &&
        !groth16_proof_from_json(vk, &pr, pp, err, sizeof(err)) &&
        !groth16_verify_proof(vk, &pr, sig, vk->npublic, &valid, err, sizeof(err)) && valid &&
        signals_match(wtns_path, sig, vk->npublic);
    free(sig);
    return ok;
}

/* The stored jobs' out dirs, opened all at once before any job is resumed
 * (open_all_deadline): one deadline for all of them, however many hang. */
struct preopened {
    size_t n, cap;
    uint64_t *job;
    char **path;
    struct open_result *res; /* res[i].fd is taken (set to -1) by the job that uses it */
};

struct resume_ctx {
    struct sup *s;
    uint64_t next_id;
    json_t *ids; /* the ids resumed, or left for a later start */
    struct preopened pre;
};

/* store_each_running's first pass: each job whose out dir resume_files will reopen by
 * its path (not one whose proofs go into the store, not one unreadable). */
static int preopen_note(void *arg, const struct store_job *sj)
{
    struct preopened *p = arg;
    json_t *req = json_loads(sj->request, 0, NULL);
    const char *od = json_string_value(json_object_get(req, "out_dir"));

    if (od && !json_is_string(json_object_get(req, "results")) &&
        json_is_object(json_object_get(req, "out")) && json_is_object(json_object_get(req, "peer"))) {
        if (p->n == p->cap) {
            size_t cap = p->cap ? 2 * p->cap : 16;
            uint64_t *j = realloc(p->job, cap * sizeof(*j));
            char **pa = j ? realloc(p->path, cap * sizeof(*pa)) : NULL;

            if (j) p->job = j;
            if (pa) p->path = pa;
            if (!j || !pa) goto out; /* that job's dir is opened on its own, later */
            p->cap = cap;
        }
        if ((p->path[p->n] = strdup(od))) p->job[p->n++] = sj->id;
    }
out:
    json_decref(req);
    return 0;
}

/* Open every stored out dir at once: a hung file system costs the start one deadline,
 * not one per job (16 jobs on a hung NFS mount were 80 s before cuzkd answered). */
static void preopen_all(struct sup *s, struct preopened *p)
{
    char err[512];
    size_t hung = 0;

    if (store_each_running(s->store, preopen_note, p, err, sizeof(err)) || !p->n) return;
    if (!(p->res = calloc(p->n, sizeof(*p->res)))) return;
    open_all_deadline((const char *const *)p->path, p->n, O_PATH | O_DIRECTORY | O_NOFOLLOW, RESUME_OPEN_MS,
                      p->res);
    for (size_t i = 0; i < p->n; i++) hung += p->res[i].fd == -ETIMEDOUT;
    if (hung)
        logmsg("job store: %zu of %zu stored out dir(s) did not answer within %u s (opened at once, "
               "in processes of their own): their jobs fail",
               hung, p->n, RESUME_OPEN_MS / 1000);
}

/* Job id's out dir as preopen_all opened it (its descriptor now the caller's), or, for
 * a job it did not open, opened now. */
static int preopened_take(struct preopened *p, uint64_t id, const char *out_dir, struct stat *st)
{
    for (size_t i = 0; p->res && i < p->n; i++)
        if (p->job[i] == id && !strcmp(p->path[i], out_dir)) {
            int fd = p->res[i].fd;

            if (fd >= 0) *st = p->res[i].st;
            p->res[i].fd = -EBADF;
            return fd;
        }
    return open_deadline(out_dir, O_PATH | O_DIRECTORY | O_NOFOLLOW, RESUME_OPEN_MS, st);
}

static void preopened_free(struct preopened *p)
{
    for (size_t i = 0; i < p->n; i++) {
        if (p->res && p->res[i].fd >= 0) close(p->res[i].fd);
        free(p->path[i]);
    }
    free(p->res);
    free(p->path);
    free(p->job);
}

/* A resumed job's out directory: reopened by the path the client named, O_DIRECTORY,
 * and accepted only if it is still the directory the client passed (device and inode
 * recorded at submit) and the recorded peer may still write it; a path that now
 * names something else is never followed there. A descriptor, or -1 with why. */
static int reopen_out_dir(struct preopened *pre, uint64_t id, json_t *req, const char *out_dir, char *why,
                          size_t len)
{
    json_t *out = json_object_get(req, "out"), *peer = json_object_get(req, "peer"), *g;
    gid_t groups[64];
    struct control_peer pr;
    struct stat st;
    size_t i;
    int fd;

    if (!json_is_object(out) || !json_is_object(peer)) {
        snprintf(why, len, "the job store has no identity for its out dir");
        return -1;
    }
    /* The path is the client's word and is opened with cuzkd's rights: whether it is
     * absent, unreadable or another directory is not the user's to learn (a path under
     * /root would tell), so every case reads the same and names only that path. */
    /* With a deadline: a path on a hung mount must not keep cuzkd from starting. */
    fd = preopened_take(pre, id, out_dir, &st);
    if (fd == -ETIMEDOUT) {
        snprintf(why, len,
                 "out dir %s did not answer within %u s (a hung file system?): "
                 "submit again once it is back",
                 out_dir, RESUME_OPEN_MS / 1000);
        return -1;
    }
    if (fd < 0 || (uint64_t)st.st_dev != (uint64_t)json_integer_value(json_object_get(out, "dev")) ||
        (uint64_t)st.st_ino != (uint64_t)json_integer_value(json_object_get(out, "ino"))) {
        snprintf(why, len,
                 "out dir changed since submit (%s is not the directory passed: "
                 "moved, replaced or gone): submit again",
                 out_dir);
        if (fd >= 0) close(fd);
        return -1;
    }
    pr.uid = (uid_t)json_integer_value(json_object_get(peer, "uid"));
    pr.gid = (gid_t)json_integer_value(json_object_get(peer, "gid"));
    pr.n_groups = 0;
    json_array_foreach (json_object_get(peer, "groups"), i, g)
        if (pr.n_groups < sizeof(groups) / sizeof(groups[0]))
            groups[pr.n_groups++] = (gid_t)json_integer_value(g);
    pr.groups = groups;
    if (!control_peer_may_write_dirfd(&pr, fd, &st)) {
        snprintf(why, len, "out dir %s: uid %u may no longer create files there", out_dir, (unsigned)pr.uid);
        close(fd);
        return -1;
    }
    return fd;
}

/* A durable copy (copies.h) of a resumed job into a fresh memfd copy (copies_take):
 * its descriptor (> 2), or -1 with why; name NULL or JSON null: none wanted (0). */
static int reopen_copy(struct sup *s, json_t *name, int shared, const char *what, const char *display,
                       json_t *held, char *why, size_t len)
{
    const char *n = json_string_value(name);
    char e[400];
    int fd, c;

    if (!n) return 0;
    fd = copies_open_durable(s->copies_dfd, n);
    if (fd < 0) {
        snprintf(why, len, "%s %s: its durable copy is gone (%s)", what, display, strerror(-fd));
        return -1;
    }
    c = copies_take(&s->copies, fd, shared, what, display, e, sizeof(e));
    close(fd);
    if (c < 0) {
        snprintf(why, len, "%s", e);
        return -1;
    }
    jobs_dur_ref(s, n);
    json_array_append_new(held, json_string(n));
    return c;
}

/* One stored job on its way back into the table (resume_job's steps). */
struct resumed {
    const struct store_job *sj;
    json_t *req, *parts, *cps;
    json_t *held; /* the durable names it refers to (jobs_dur_ref'd) */
    const char *zpath, *out_dir, *r1cs, *wgen;
    uint32_t n;
    struct pipe_submit_part *sp;
    int zfd, rfd, gfd, ofd, *wfd; /* its files, until the job holds them */
    char why[600];                /* its files cannot be had: its unfinished partitions fail so */
};

static void resume_unreadable(const struct store_job *sj)
{
    logmsg("job %llu in the job store is unreadable (request %.200s): not resumed",
           (unsigned long long)sj->id, sj->request);
}

/* The request as journal_request recorded it. -1: unreadable (logged). */
static int resume_parse(struct resumed *r)
{
    r->parts = json_object_get(r->req, "parts");
    r->cps = json_object_get(r->req, "copies");
    r->zpath = json_string_value(json_object_get(r->req, "zkey"));
    r->out_dir = json_string_value(json_object_get(r->req, "out_dir"));
    r->r1cs = json_string_value(json_object_get(r->req, "r1cs"));
    r->wgen = json_string_value(json_object_get(r->req, "witness_gen"));
    r->n = (uint32_t)json_array_size(r->parts);
    if (!r->zpath || !r->out_dir || !r->n || r->n != r->sj->n_parts ||
        !(r->sp = calloc(r->n, sizeof(*r->sp))) || !(r->wfd = calloc(r->n, sizeof(*r->wfd)))) {
        resume_unreadable(r->sj);
        return -1;
    }
    if (json_integer_value(json_object_get(r->req, "version")) < 2 || !json_is_object(r->cps))
        snprintf(r->why, sizeof(r->why),
                 "recorded by a cuzkd that kept no copies of its files: "
                 "submit it again");
    return 0;
}

/* Its out dir and its shared files (none is opened by a client's path); a first
 * failure is the reason. */
static void resume_files(struct sup *s, struct preopened *pre, struct resumed *r)
{
    char *why = r->why;
    const size_t wl = sizeof(r->why);

    /* A job whose proofs go into the store: its out dir is cuzkd's own spool dir. */
    if (!why[0] && json_is_string(json_object_get(r->req, "results")))
        r->ofd = results_reopen(s, r->sj->id, why, wl);
    else if (!why[0] && (r->ofd = reopen_out_dir(pre, r->sj->id, r->req, r->out_dir, why, wl)) < 0)
        r->ofd = -1;
    if (!why[0] &&
        (r->zfd = reopen_copy(s, json_object_get(r->cps, "zkey"), 1, "zkey", r->zpath, r->held, why, wl)) <=
            0 &&
        !why[0])
        snprintf(why, wl, "zkey %s: no durable copy recorded", r->zpath);
    if (!why[0] && r->r1cs)
        r->rfd = reopen_copy(s, json_object_get(r->cps, "r1cs"), 1, "r1cs", r->r1cs, r->held, why, wl);
    if (!why[0] && r->wgen &&
        (r->gfd = reopen_copy(s, json_object_get(r->cps, "wgen"), 1, "witness generator", r->wgen, r->held,
                              why, wl)) <= 0 &&
        !why[0])
        snprintf(why, wl, "witness generator %s: no durable copy recorded", r->wgen);
}

/* Partition i's part of the submit, with its witness (or input) copy. -1: unreadable
 * (logged). */
static int resume_part(struct sup *s, struct resumed *r, uint32_t i)
{
    json_t *p = json_array_get(r->parts, i);
    struct pipe_submit_part *sp = &r->sp[i];
    const int decided = r->sj->state[i] == STORE_DONE || r->sj->state[i] == STORE_FAILED;

    sp->wtns_path = json_string_value(json_object_get(p, "wtns"));
    sp->name = json_string_value(json_object_get(p, "name"));
    sp->r1cs_path = r->r1cs;
    sp->wgen_path = r->wgen;
    r->wfd[i] = -1;
    /* a witness the submit named again has one durable copy: one memfd too */
    for (uint32_t k = 0; k < i && !r->why[0] && !decided; k++)
        if (r->wfd[k] > 0 &&
            json_equal(json_object_get(p, "copy"), json_object_get(json_array_get(r->parts, k), "copy")) &&
            !copies_ref(&s->copies, r->wfd[k])) {
            r->wfd[i] = r->wfd[k];
            break;
        }
    /* a partition already decided needs no copy (and has none after a retire) */
    if (r->wfd[i] < 0 && !r->why[0] && !decided &&
        (r->wfd[i] = reopen_copy(s, json_object_get(p, "copy"), 0, r->wgen ? "input" : "witness",
                                 sp->wtns_path ? sp->wtns_path : "?", r->held, r->why, sizeof(r->why))) <=
            0 &&
        !r->why[0])
        snprintf(r->why, sizeof(r->why), "no durable copy of %s recorded", sp->wtns_path);
    sp->wtns_fd = r->wfd[i] > 0 ? r->wfd[i] : -1;
    sp->r1cs_fd = r->rfd > 0 ? r->rfd : -1;
    sp->wgen_fd = r->gfd > 0 ? r->gfd : -1;
    if (!sp->wtns_path || !sp->name) {
        resume_unreadable(r->sj);
        return -1;
    }
    return 0;
}

/* Into the table under its own id, owned by the submitter recorded with the request
 * (journal_request "peer"); the job holds its files from then on (released when its
 * slot retires). -1: not resumed (logged; it stays in the store). */
static int resume_enter(struct sup *s, struct resumed *r, uint32_t *slot)
{
    struct jobtab *jt = &s->pl.data.jobtab;
    json_t *uid = json_object_get(json_object_get(r->req, "peer"), "uid");
    struct job_files f;
    char err[512];
    int rc;

    /* Its own id: ids are the supervisor's alone (relaxed, as in setup_segments);
     * the counter is set back past every id after the resume. */
    barrier_store_relaxed(&jt->hdr->next_job_id, r->sj->id);
    rc = pipeline_submit_job_fds(&s->pl, r->zpath, r->zfd > 0 ? r->zfd : -1, r->out_dir, r->ofd,
                                 json_is_integer(uid) ? json_integer_value(uid) : -1,
                                 (int32_t)json_integer_value(json_object_get(r->req, "priority")), r->n,
                                 r->sp, os_now_ns(), slot, err, sizeof(err));
    if (rc == -ENOBUFS) {
        s->repush_needed = 1;
        rc = 0;
    }
    if (rc) {
        logmsg("job %llu not resumed: %s; it stays in the job store for a later start "
               "(raise --max-jobs/--max-parts)",
               (unsigned long long)r->sj->id, err);
        return -1;
    }
    f = (struct job_files){ .zkey_fd = r->zfd,
                            .r1cs_fd = r->rfd,
                            .wgen_fd = r->gfd,
                            .out_fd = r->ofd,
                            .wtns_fd = r->wfd,
                            .n = r->n,
                            .dur = r->held };
    f.bytes = files_bytes(&f);
    jobs_begin(s, *slot, (uid_t)json_integer_value(uid), 1, &f);
    results_note(s, *slot, json_string_value(json_object_get(r->req, "circuit")),
                 json_string_value(json_object_get(r->req, "tenant")),
                 json_is_string(json_object_get(r->req, "results")), r->sj->submitted,
                 json_object_get(r->req, "metadata"));
    r->zfd = r->rfd = r->gfd = r->ofd = -1;
    r->wfd = NULL;
    r->held = NULL;
    return 0;
}

/* The key of job slot slot, to check a proof found on disk. NULL: none. */
static groth16_vk *resume_vk(struct sup *s, uint32_t slot, groth16_vk *vk)
{
    groth16_vk *vkp = NULL;
    zkey zk;
    char zerr[256], zp[64];

    snprintf(zp, sizeof(zp), "/proc/self/fd/%d", s->jobs[slot].files.zkey_fd);
    if (!zkey_open(&zk, zp, zerr, sizeof(zerr))) {
        if (!groth16_vk_from_zkey(vk, &zk, zerr, sizeof(zerr))) vkp = vk;
        zkey_close(&zk);
    }
    return vkp;
}

/* A resumed partition's tries from the store's count a (stored state was, ps is now):
 * a final one keeps its count; one the previous cuzkd had in flight was cut short
 * by its death, so its next try is one more; one queued after a retry has that retry
 * counted already. */
static void resume_attempts(struct part_state *pp, enum store_part_state was, enum store_part_state ps,
                            uint32_t a)
{
    a = a < PART_ATT_UNKNOWN ? a : PART_ATT_UNKNOWN - 1;
    pp->rec_att = (uint16_t)a;
    if (ps == STORE_DONE || ps == STORE_FAILED)
        pp->fixed_attempts = (uint16_t)(a ? a : 1);
    else
        pp->retries = (uint16_t)(was == STORE_QUEUED && a ? a - 1 : a);
}

/* Each partition of the resumed job in slot: done or failed as the store says, done
 * when its proof is on disk and verifies (vkp), failed with r->why when its files
 * could not be had, else queued. */
static void resume_states(struct sup *s, const struct resumed *r, uint32_t slot, const groth16_vk *vkp)
{
    struct jobtab *jt = &s->pl.data.jobtab;
    const struct store_job *sj = r->sj;
    uint32_t found = 0, done = 0, failed = 0;

    for (uint32_t i = 0; i < r->n; i++) {
        uint32_t p = jt->jobs[slot].first_part + i;
        enum store_part_state ps = sj->state[i];
        char od[64], wp[64];

        snprintf(od, sizeof(od), "/proc/self/fd/%d", s->jobs[slot].files.out_fd);
        snprintf(wp, sizeof(wp), "/proc/self/fd/%d", r->sp[i].wtns_fd);
        if (ps == STORE_FAILED) {
            jobtab_part_fail(jt, p, JOBTAB_QUEUED, 0,
                             sj->reason[i] ? sj->reason[i] : "failed (reason not recorded)");
            failed++;
        } else if (ps == STORE_DONE ||
                   (vkp && proof_on_disk(vkp, od, pipeline_partinfo(&s->pl, p)->name, wp))) {
            jobtab_part_move(jt, p, JOBTAB_QUEUED, 0, JOBTAB_DONE, 0, NULL);
            found += ps != STORE_DONE;
            done++;
            ps = STORE_DONE;
        } else if (r->why[0]) {
            jobtab_part_fail(jt, p, JOBTAB_QUEUED, 0, r->why);
            failed++;
            ps = STORE_FAILED;
        } else {
            ps = STORE_QUEUED;
        }
        /* What the store holds now differs from ps where a proof was found or an
         * unfinished state goes back to queued: let the next sync write it. */
        s->parts[p].rec = ps == sj->state[i] ? (uint8_t)ps : REC_UNKNOWN;
        resume_attempts(&s->parts[p], sj->state[i], ps, sj->attempts[i]);
    }
    jobtab_job_try_complete(jt, slot);
    logmsg("job %llu resumed from the job store: %u of %u partition(s) done (%u found "
           "on disk and verified), %u failed, %u to prove -> %s%s%s",
           (unsigned long long)sj->id, done, r->n, found, failed, r->n - done - failed, r->out_dir,
           r->why[0] ? "; " : "", r->why);
}

static void resume_free(struct sup *s, struct resumed *r)
{
    copies_put(&s->copies, r->zfd);
    copies_put(&s->copies, r->rfd);
    copies_put(&s->copies, r->gfd);
    for (uint32_t i = 0; r->wfd && i < r->n; i++) copies_put(&s->copies, r->wfd[i]);
    free(r->wfd);
    if (r->ofd >= 0) close(r->ofd);
    jobs_dur_release(s, r->held);
    free(r->sp);
    json_decref(r->req);
}

/* One unfinished job of the store: into the table under its own id, before any stage
 * runs (so no stage can claim a partition before it is set): partitions the store has
 * done or failed are set so, those whose proof is on disk and verifies are marked
 * done, the rest are queued. Its files are cuzkd's durable copies and its out dir is
 * reopened only as the very directory the client passed (reopen_out_dir); when either
 * cannot be had, its unfinished partitions fail with the reason, before any stage
 * could open anything for them. */
static int resume_job(void *arg, const struct store_job *sj)
{
    struct resume_ctx *x = arg;
    struct sup *s = x->s;
    struct resumed r = { .sj = sj,
                         .req = json_loads(sj->request, 0, NULL),
                         .held = json_array(),
                         .zfd = -1,
                         .rfd = -1,
                         .gfd = -1,
                         .ofd = -1 };
    groth16_vk vk, *vkp = NULL;
    uint32_t slot;

    if (sj->id >= x->next_id) x->next_id = sj->id + 1;
    json_array_append_new(x->ids, json_integer((json_int_t)sj->id));
    if (resume_parse(&r)) goto out;
    resume_files(s, &x->pre, &r);
    for (uint32_t i = 0; i < r.n; i++)
        if (resume_part(s, &r, i)) goto out;
    if (resume_enter(s, &r, &slot)) goto out;
    if (!r.why[0] && !r.wgen) vkp = resume_vk(s, slot, &vk); /* input.json jobs: redone */
    resume_states(s, &r, slot, vkp);
    if (vkp) groth16_vk_free(vkp);
out:
    resume_free(s, &r);
    return 0;
}

static int dur_keep(void *arg, const char *name)
{
    return json_object_get(((struct sup *)arg)->dur, name) != NULL;
}

/* Open the store and take over its unfinished jobs (before the stages start). The
 * previous cuzkd's table (collect_lost) lists what it was running: those the store
 * resumes are not lost. 0, or 3 with the reason logged (a store that cannot be
 * opened stops cuzkd: silently running without it would lose jobs again). */
int resume_start(struct sup *s, uint64_t next_id)
{
    struct jobtab *jt = &s->pl.data.jobtab;
    struct resume_ctx x = { .s = s, .next_id = next_id, .ids = json_array() };
    char err[1024];
    size_t i;
    json_t *o;
    int rc;

    if ((rc = store_open(&s->store, s->c->state_dir, s->c->instance, err, sizeof(err)))) {
        logmsg("%s", err);
        json_decref(x.ids);
        return CUZK_EXIT_IO;
    }
    /* The durable copies live beside the store, in a directory only cuzkd writes. */
    if ((s->copies_dfd = copies_dir_open(s->c->state_dir, s->c->instance, err, sizeof(err))) < 0) {
        logmsg("job store: %s", err);
        json_decref(x.ids);
        return CUZK_EXIT_IO;
    }
    if ((rc = results_open(s, err, sizeof(err)))) {
        logmsg("job store: %s", err);
        json_decref(x.ids);
        return CUZK_EXIT_IO;
    }
    if (store_max_job_id(s->store) >= x.next_id) x.next_id = store_max_job_id(s->store) + 1;
    preopen_all(s, &x.pre);
    rc = store_each_running(s->store, resume_job, &x, err, sizeof(err));
    preopened_free(&x.pre);
    if (rc) logmsg("%s", err);
    /* Copies no unfinished job refers to (their jobs were decided, or a submit died
     * half way): removed. Not after a failed scan: a job it missed may need them. */
    if (!rc) {
        int nrm = copies_sweep(s->copies_dfd, dur_keep, s);

        if (nrm > 0) logmsg("job store: removed %d durable copies no unfinished job needs", nrm);
        results_sweep(s);
    }
    if (x.next_id < 1) x.next_id = 1;
    barrier_store_relaxed(&jt->hdr->next_job_id, x.next_id);
    /* The previous cuzkd's jobs that the store knows were resumed, not lost. */
    for (i = 0; s->lost && i < json_array_size(s->lost);) {
        uint64_t id = (uint64_t)json_integer_value(json_object_get(json_array_get(s->lost, i), "id"));
        size_t k;
        int known = 0;

        json_array_foreach (x.ids, k, o) known |= (uint64_t)json_integer_value(o) == id;
        if (known) {
            json_array_remove(s->lost, i);
            continue;
        }
        logmsg("job %llu LOST: the previous cuzkd died while it ran and the job store "
               "has no record of it (it ran with --no-store?); submit it again",
               (unsigned long long)id);
        i++;
    }
    if (s->lost && !json_array_size(s->lost)) {
        json_decref(s->lost);
        s->lost = NULL;
    }
    json_decref(x.ids);
    logmsg("job store %s: next job id %llu", store_path(s->store), (unsigned long long)x.next_id);
    journal_sync(s);
    journal_prune(s);
    timers_pruned(s, os_now_ns());
    return rc ? 3 : 0;
}
