/* finalizer.c — the finalizing stage loop (finalizer/finalizer.h). */
#include "finalizer/finalizer.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "finalizer/out_writer.h"
#include "zk/verify.h"
#include "zk/wtns.h"
#include "base/barrier.h"

#define POLL_NS       100000000ll   /* the 100 ms heartbeat promise */
#define WRITE_POLL_NS 1000000ll     /* while writes are under way: look at them each 1 ms */
#define STOP_GRACE_MS 1000          /* stopping: writes under way get this long */
#define IDLE_TRIM_NS  1000000000ull /* trim once after 1 s without work */

/* serialize: the two texts. The files themselves are written by the out dir's writer
 * process (out_writer.h): its time is the "write" histogram, not a state of this
 * loop; write, fsync and rename stay named for the slot's layout. */
enum { S_ZKEY = STATS_STAGE0, S_BLIND, S_READ, S_WRITE, S_TRIM, S_VERIFY, S_SERIALIZE, S_FSYNC, S_RENAME };
enum { C_DONE, C_FAILED, C_LOST, C_JOBS_DONE, C_JOBS_FAILED, C_TRIMS, C_VERIFY_FAILED };
enum { H_PART, H_TRIM, H_JOB, H_WRITE };

static const char *const state_names[] = { "zkey",   "blind",     "read_wtns", "write",  "trim",
                                           "verify", "serialize", "fsync",     "rename", NULL };
static const char *const counter_names[] = { "parts_done",  "parts_failed", "claims_lost",   "jobs_done",
                                             "jobs_failed", "trims",        "verify_failed", NULL };
static const char *const hist_names[] = { "part", "trim", "job", "write", NULL };

struct finalizer {
    struct stage st;
    const struct stage_opts *o;
    uint32_t since_trim; /* partitions since the last trim */
    uint64_t last_work;  /* when the last partition ended */
    int trimmed_idle;    /* this idle period has had its trim */
    /* The verification key of the last zkey used, with that zkey's identity (the
     * cache entry it came from may be reused for another file). */
    int vk_valid;
    struct stage_zkey_entry vk_of;
    groth16_vk vk;
    /* The writes of proof files, one process per out dir (out_writer.h): a partition
     * handed over stays FINAL (ours) until its writer answers. */
    struct out_writers *ow;
};

/* The key for z (a pointer into the stage's zkey cache), derived once per zkey file. */
static int vk_for(struct finalizer *f, const zkey *z, const groth16_vk **out, char *err, size_t errlen)
{
    const struct stage_zkey_entry *e = NULL;
    int rc;

    for (int i = 0; i < PIPE_ZKEY_CACHE; i++)
        if (&f->st.zc[i].z == z) e = &f->st.zc[i];
    if (f->vk_valid && e && e->dev == f->vk_of.dev && e->ino == f->vk_of.ino && e->size == f->vk_of.size &&
        e->mtim.tv_sec == f->vk_of.mtim.tv_sec && e->mtim.tv_nsec == f->vk_of.mtim.tv_nsec) {
        *out = &f->vk;
        return 0;
    }
    if (f->vk_valid) groth16_vk_free(&f->vk);
    f->vk_valid = 0;
    rc = groth16_vk_from_zkey(&f->vk, z, err, errlen);
    if (rc) return rc;
    if (e) {
        /* Every partition of the circuit is checked against this kept key: its fixed
         * pairs' Miller-loop lines once, not per proof (out of memory: unprepared). */
        (void)groth16_vk_prepare(&f->vk);
        f->vk_of.dev = e->dev;
        f->vk_of.ino = e->ino;
        f->vk_of.size = e->size;
        f->vk_of.mtim = e->mtim;
        f->vk_valid = 1;
    }
    *out = &f->vk;
    return 0;
}

/* Pairing check of the proof against the zkey's key (cached) and the witness's public
 * values, before anything is published. 0, -CUZK_E_UNSATISFIED (invalid: reason in
 * err), or the key's error. */
static int verify(struct finalizer *f, const zkey *z, const uint8_t *values, const groth16_proof *proof,
                  char *err, size_t errlen)
{
    const groth16_vk *vk;
    int rc = vk_for(f, z, &vk, err, errlen);

    if (rc) return rc;
    return groth16_verify_witness(vk, z, values, proof, err, errlen);
}

static void trim(struct finalizer *f)
{
    uint64_t t0 = stage_now();

    stage_enter_at(&f->st, S_TRIM, t0);
    stage_long_begin(&f->st);
    malloc_trim(0);
    if (f->o->test_trim_delay_ms) {
        /* Planted delay (tests only): the isolation test checks it lands here. */
        struct timespec d = { f->o->test_trim_delay_ms / 1000,
                              (long)(f->o->test_trim_delay_ms % 1000) * 1000000L };

        while (nanosleep(&d, &d) && errno == EINTR)
            ;
    }
    stage_long_end(&f->st);
    stage_hist(&f->st, H_TRIM, stage_now() - t0);
    stage_count(&f->st, C_TRIMS, 1);
    f->since_trim = 0;
}

/* The job counters and histogram, once for each job this stage decided. */
static void job_ended(struct finalizer *f, uint32_t job)
{
    struct jobtab *jt = &f->st.pl.data.jobtab;
    uint64_t w = barrier_load_acquire(&jt->jobs[job].word);

    stage_count(&f->st, jobtab_word_state(w) == JOBTAB_DONE ? C_JOBS_DONE : C_JOBS_FAILED, 1);
    stage_hist(&f->st, H_JOB, stage_now() - jt->jobs[job].submit_ns);
}

static void complete(struct finalizer *f, uint32_t job)
{
    if (stage_job_try_complete(&f->st, job) == 1) job_ended(f, job);
}

static void fail_part(struct finalizer *f, uint32_t p, const char *file, const char *msg)
{
    uint32_t job = f->st.pl.data.jobtab.parts[p].job;

    if (stage_fail(&f->st, p, JOBTAB_FINAL, C_FAILED, file, msg, "cuzk-finalizer") == 1) job_ended(f, job);
}

static void final_one(struct finalizer *f, uint32_t p)
{
    struct stage *st = &f->st;
    struct pipeline *pl = &st->pl;
    struct pipe_partinfo *pi = pipeline_partinfo(pl, p);
    struct jobtab_job *jb;
    const zkey *z;
    groth16_blind bl;
    groth16_proof proof;
    wtns w;
    char err[1024] = "";
    char zb[64], wb[64], ob[64];
    const char *zpath, *wpath, *odir;
    uint64_t t0 = stage_now();
    int rc;

    if (!pi || !(jb = stage_claim_part(st, p, JOBTAB_PROVED, JOBTAB_FINAL))) {
        stage_count(st, C_LOST, 1);
        return;
    }
    stage_enter_at(st, STATS_BUSY, t0);
    pipe_part_begin(pl, p, PIPE_T_FINAL, f->o->index, t0); /* timeline (`cuzk trace`) */
    memset(&w, 0, sizeof(w));
    /* Open cuzkd's copies and write through its descriptor of the client's out dir
     * (/proc/<cuzkd>/fd/N/NAME: the directory the client opened, whatever its path
     * names now); messages name them as the client did. */
    zpath = pipe_input_path(pl, jb->zkey_fd, jb->zkey_path, zb, sizeof(zb));
    wpath = pipe_input_path(pl, pi->wtns_fd, pi->wtns_path, wb, sizeof(wb));
    odir = pipe_input_path(pl, jb->out_fd, jb->out_dir, ob, sizeof(ob));
    stage_enter(st, S_ZKEY);
    rc = stage_job_zkey(st, zpath, jb->zkey_path, &z, err, sizeof(err));
    if (rc) {
        fail_part(f, p, jb->zkey_path, err);
        return;
    }
    stage_enter(st, S_BLIND);
    rc = groth16_blind_random(z, &bl);
    if (rc) {
        snprintf(err, sizeof(err), "getrandom for r, s: %s", strerror(-rc));
        fail_part(f, p, pi->wtns_path, err);
        return;
    }
    /* Acquire of our CAS (R1) ordered the worker's writes of results[p]. */
    groth16_finalize(z, &pipeline_result(pl, p)->raw, &bl, &proof);
    memset(&bl, 0, sizeof(bl)); /* r, s known = witness known: keep them nowhere */

    stage_enter(st, S_READ);
    if (pi->wgen_path[0]) {
        /* input.json: the synth left signals 0..nPublic in publics[p] (ordered by
         * the CAS chain SYNTH->READY ... PROVED->FINAL); only those are read below */
        const struct pipe_publics *pu = pipeline_publics(pl, p);

        if (pu->n != z->npublic + 1) {
            fail_part(f, p, pi->wtns_path, "the synth left no public signals (bug)");
            goto out;
        }
        if (wtns_of_values(&w, pi->wtns_path, z->Fr, pu->n, pu->values)) {
            fail_part(f, p, pi->wtns_path, "out of memory");
            goto out;
        }
    } else if ((rc = wtns_open(&w, wpath, err, sizeof(err))) ||
               (rc = wtns_check_zkey(&w, z, err, sizeof(err)))) {
        pipe_err_rename(err, sizeof(err), wpath, pi->wtns_path);
        pipe_err_rename(err, sizeof(err), zpath, jb->zkey_path);
        fail_part(f, p, pi->wtns_path, err);
        goto out;
    }
    /* Verify before publishing: a witness the zkey cannot tell is wrong (no r1cs) or a
     * device fault fails the partition here instead of reaching OUT. */
    stage_enter(st, S_VERIFY);
    stage_long_begin(st);
    rc = verify(f, z, w.values, &proof, err, sizeof(err));
    stage_long_end(st);
    if (rc) {
        if (rc == -CUZK_E_UNSATISFIED) {
            /* Name the worker that computed it: a fault that follows one device
             * shows up in the reasons (and in verify_failed) rather than as a
             * silent retry into a different answer. */
            char tag[32];
            size_t k = (size_t)snprintf(tag, sizeof(tag), "worker %u: ", pipeline_result(pl, p)->worker);
            size_t len = strlen(err);
            stage_count(st, C_VERIFY_FAILED, 1);
            if (k + len >= sizeof(err)) len = sizeof(err) - k - 1;
            memmove(err + k, err, len);
            memcpy(err, tag, k);
            err[k + len] = '\0';
        }
        fail_part(f, p, pi->wtns_path, err);
        goto out;
    }
    /* The texts here; the files in the out dir's writer process, so a hung file
     * system there holds only this directory's partitions (out_writer.h). */
    stage_enter(st, S_SERIALIZE);
    {
        struct out_write ow = { .p = p,
                                .odir = odir,
                                .shown_dir = jb->out_dir,
                                .name = pi->name,
                                .dev = jb->out_dev,
                                .ino = jb->out_ino,
                                .owner_known = jb->owner_known,
                                .owner_uid = jb->owner_uid };

        rc = groth16_pair_texts(z, &proof, w.values, &ow.proof_text, &ow.public_text, NULL, err, sizeof(err));
        if (!rc) rc = out_writers_submit(f->ow, &ow, err, sizeof(err));
    }
    stage_enter(st, STATS_BUSY);
    if (rc) fail_part(f, p, pi->wtns_path, err);
out:
    wtns_close(&w);
}

/* A writer's answer for partition p (out_writer.h): publish the partition's end, or
 * fail it, or (stopping) give it back to PROVED for the next finalizer. */
static void written(void *arg, uint32_t p, int rc, const char *msg, const groth16_write_times *wt)
{
    struct finalizer *f = arg;
    struct stage *st = &f->st;
    struct pipeline *pl = &st->pl;
    struct jobtab *jt = &pl->data.jobtab;
    const uint32_t pid = (uint32_t)st->pid;
    struct pipe_partinfo *pi = pipeline_partinfo(pl, p);
    const struct jobtab_job *jb = &jt->jobs[jt->parts[p].job];
    uint64_t t = stage_now(), t0 = pi ? barrier_load_relaxed(&pi->times.begin_ns[PIPE_T_FINAL]) : t;
    char err[1024], ob[64];

    if (rc == OUT_WRITE_HANDBACK) {
        /* cuzkd re-pushes PROVED partitions when it starts the next finalizer */
        (void)jobtab_part_move(jt, p, JOBTAB_FINAL, pid, JOBTAB_PROVED, 0, NULL);
        return;
    }
    if (rc) {
        snprintf(err, sizeof(err), "%s", msg);
        pipe_err_rename(err, sizeof(err), pipe_input_path(pl, jb->out_fd, jb->out_dir, ob, sizeof(ob)),
                        jb->out_dir);
        fail_part(f, p, pi ? pi->wtns_path : "", err);
        return;
    }
    stage_hist(st, H_WRITE, wt->write_ns + wt->fsync_ns + wt->rename_ns);
    pipe_part_end(pl, p, PIPE_T_FINAL, t); /* published by the CAS below */
    if (jobtab_part_move(jt, p, JOBTAB_FINAL, pid, JOBTAB_DONE, 0, NULL)) {
        fprintf(stderr, "cuzk-finalizer: partition %u taken from us\n", p);
        return;
    }
    stage_count(st, C_DONE, 1);
    complete(f, jt->parts[p].job);
    if (t0 && t0 <= t) stage_hist(st, H_PART, t - t0);
    if (f->o->verbose && pi)
        fprintf(stderr, "cuzk-finalizer: partition %u -> %s/%s.proof.json\n", p, jb->out_dir, pi->name);
}

/* Preload: derive the verification key (header, IC: sections 1-3) now. Evict: drop
 * it with the zkey. */
static void final_circuit(struct stage *st, uint32_t action, struct stage_zkey_entry *e, void *arg)
{
    static const uint32_t ids[] = { 1, 2, 3 };
    struct finalizer *f = arg;
    const groth16_vk *vk;
    char err[512];

    (void)st;
    if (action == PIPE_CIRCUIT_PRELOAD) {
        stage_zkey_touch(&e->z, ids, 3);
        if (vk_for(f, &e->z, &vk, err, sizeof(err)))
            fprintf(stderr, "cuzk-finalizer: preload of %s: %s\n", e->path, err);
    } else if (f->vk_valid && e->dev == f->vk_of.dev && e->ino == f->vk_of.ino && e->size == f->vk_of.size &&
               e->mtim.tv_sec == f->vk_of.mtim.tv_sec && e->mtim.tv_nsec == f->vk_of.mtim.tv_nsec) {
        groth16_vk_free(&f->vk);
        f->vk_valid = 0;
    }
}

int finalizer_run(const struct stage_opts *o, char *err, size_t errlen)
{
    int rc;
    struct finalizer *f =
        stage_new(sizeof(*f), offsetof(struct finalizer, st), o, STATS_ROLE_FINALIZER, &rc, err, errlen);
    struct ring *in;
    uint32_t p;

    if (!f) return rc;
    f->o = o;
    stage_names(&f->st, state_names, counter_names, hist_names);
    f->ow = out_writers_new(f->st.pl.config->write_timeout_s, f->st.pl.config->max_attempts, (long)f->st.pid,
                            o->self_exe);
    if (!f->ow) {
        stage_close(&f->st);
        free(f);
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    in = pipeline_ring(&f->st.pl, PIPE_RING_FINAL(f->st.pl.config->n_workers));
    f->last_work = stage_now();
    while (!stage_stopping(&f->st)) {
        stage_circuits(&f->st, final_circuit, f);
        out_writers_poll(f->ow, 0, written, f);
        if (ring_try_pop(in, &p) != 0) {
            stage_enter(&f->st, stage_wait_state(&f->st));
            if (out_writers_pending(f->ow)) {
                /* Writes under way: wake for their answers as for new partitions. */
                out_writers_poll(f->ow, (int)(WRITE_POLL_NS / 1000000), written, f);
                stage_heartbeat(&f->st);
                continue;
            }
            if (ring_pop_timeout(in, &p, POLL_NS) != 0) {
                stage_heartbeat(&f->st);
                if (!f->trimmed_idle && f->since_trim && stage_now() - f->last_work >= IDLE_TRIM_NS) {
                    trim(f);
                    f->trimmed_idle = 1;
                }
                continue;
            }
        }
        final_one(f, p);
        f->since_trim++;
        f->trimmed_idle = 0;
        if ((o->trim_every && f->since_trim >= o->trim_every) || o->test_trim_delay_ms) trim(f);
        f->last_work = stage_now();
        stage_heartbeat(&f->st);
    }
    /* Writes under way get a moment; the rest go back to PROVED for the next
     * finalizer, so cuzkd's clean-up never opens a directory that does not answer. */
    out_writers_stop(f->ow, STOP_GRACE_MS, written, f);
    if (f->vk_valid) groth16_vk_free(&f->vk);
    stage_close(&f->st);
    free(f);
    return 0;
}
