/* worker.c — the proving stage loop (include/cuzk/worker.h). */
#include "cuzk/worker.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuzk/backend.h"
#include "cuzk/error.h"

#define POLL_NS 100000000ll /* the 100 ms heartbeat promise */

/* ntt and the five MSMs are the compute sections (the device's time; CPU backend:
 * measured around each section). What the worker spends around them is busy. */
enum { S_ZKEY = STATS_STAGE0, S_NTT, S_MSM_A, S_MSM_B1, S_MSM_B2, S_MSM_C, S_MSM_H };
enum { C_DONE, C_FAILED, C_LOST, C_MSM_A, C_MSM_B1, C_MSM_B2, C_MSM_C, C_MSM_H, C_NTT,
       C_DEVICE };
enum { H_GAP, H_PROVE, H_NTT, H_MSM };

static const char *const state_names[] = { "zkey", "ntt", "msm_a", "msm_b1", "msm_b2",
                                           "msm_c", "msm_h", NULL };
static const char *const counter_names[] = { "parts_done", "parts_failed", "claims_lost",
                                             "msm_a_ns", "msm_b1_ns", "msm_b2_ns", "msm_c_ns",
                                             "msm_h_ns", "ntt_ns", "device_ns", NULL };
static const char *const hist_names[] = { "gap", "prove", "ntt", "msm", NULL };

struct worker {
    struct pipe_stage st;
    const struct pipe_stage_opts *o;
    struct backend be;
    uint64_t last_end; /* when the last backend call returned; 0 before the first */
};

struct release_ctx {
    struct worker *w;
    uint32_t part, buf;
    int done;
};

/* The backend no longer reads the buffer: free it, then forget it (worker.h says why
 * in this order). */
static void release_buf(void *arg)
{
    struct release_ctx *r = arg;
    struct pipeline *pl = &r->w->st.pl;

    if (r->done)
        return;
    r->done = 1;
    pool_buf_free(&pl->data.pool, r->buf, (uint32_t)r->w->st.pid); /* taken in prove_one */
    /* Relaxed: we own the partition (PROVING); published by our next CAS. */
    barrier_store_relaxed(&pl->data.jobtab.parts[r->part].buf, JOBTAB_NONE);
}

static void fail_part(struct worker *w, uint32_t p, const char *file, const char *msg)
{
    struct jobtab *jt = &w->st.pl.data.jobtab;
    char reason[JOBTAB_REASON_LEN];

    pipe_reason(reason, sizeof(reason), file, msg);
    if (jobtab_part_fail(jt, p, JOBTAB_PROVING, (uint32_t)w->st.pid, reason) == 0) {
        pipe_stage_count(&w->st, C_FAILED, 1);
        jobtab_job_try_complete(jt, jt->parts[p].job);
    }
    fprintf(stderr, "cuzk-gpuworker %u: partition %u failed: %s\n", w->o->index, p, reason);
}

static uint64_t s_to_ns(double s)
{
    return s > 0 ? (uint64_t)(s * 1e9) : 0;
}

static void push_final(struct worker *w, uint32_t p)
{
    struct ring *out = pipeline_ring(&w->st.pl, PIPE_RING_FINAL(w->st.pl.config->n_workers));
    uint64_t t_stop = 0;

    if (ring_try_push(out, p) == 0)
        return;
    pipe_stage_enter(&w->st, STATS_WAIT_OUTPUT);
    while (ring_push_timeout(out, p, POLL_NS) != 0) {
        pipe_stage_heartbeat(&w->st);
        /* Stopping: the supervisor re-pushes PROVED partitions on restart. */
        if (pipe_stage_stopping(&w->st)) {
            if (!t_stop)
                t_stop = pipe_stage_now();
            else if (pipe_stage_now() - t_stop > 1000000000ull)
                return;
        }
    }
}

static void prove_one(struct worker *w, uint32_t p)
{
    struct pipe_stage *st = &w->st;
    struct pipeline *pl = &st->pl;
    struct jobtab *jt = &pl->data.jobtab;
    const uint32_t pid = (uint32_t)st->pid;
    struct release_ctx rel = { w, p, JOBTAB_NONE, 0 };
    struct backend_input in;
    struct pipe_result *res = pipeline_result(pl, p);
    struct jobtab_job *jb;
    groth16_timings t = { 0 };
    groth16_raw raw;
    const zkey *z;
    char err[1024] = "";
    uint64_t t0, t1, t_ntt, t_msm, n, l, tm[5], at;
    unsigned char *buf;
    int rc;

    if (!res || jobtab_part_move(jt, p, JOBTAB_READY, 0, JOBTAB_PROVING, pid, NULL)) {
        pipe_stage_count(st, C_LOST, 1);
        return;
    }
    pipe_stage_enter(st, STATS_BUSY);
    pipe_part_begin(pl, p, PIPE_T_PROVE, w->o->index, pipe_stage_now()); /* `cuzk trace` */
    jb = &jt->jobs[jt->parts[p].job];
    {
        /* Test-only fault hook (tests/faults/poison.sh; README "Failure handling"):
         * with CUZK_TEST_CRASH_ON=NAME in cuzkd's environment the worker aborts on
         * the partition named NAME, as a partition that crashes the prover would. */
        const char *crash = getenv("CUZK_TEST_CRASH_ON");
        const struct pipe_partinfo *pi = pipeline_partinfo(pl, p);

        if (crash && *crash && pi && !strcmp(crash, pi->name)) {
            fprintf(stderr, "cuzk-gpuworker %u: CUZK_TEST_CRASH_ON=%s: aborting on "
                    "partition %u\n", w->o->index, crash, p);
            abort();
        }
    }
    /* Relaxed: the acquire of our CAS ordered the synth's store (its release CAS). */
    rel.buf = barrier_load_relaxed(&jt->parts[p].buf);
    if (rel.buf == JOBTAB_NONE || pool_buf_owner(&pl->data.pool, rel.buf) != pool_owner_part(p)) {
        /* A READY partition always holds its buffer: a bug somewhere upstream. */
        snprintf(err, sizeof(err), "partition %u is READY without its buffer (%u): internal "
                 "error", p, rel.buf);
        rel.done = 1;
        fail_part(w, p, jb->zkey_path, err);
        return;
    }
    /* Take the buffer (PART|p -> our pid) before the backend consumes a, b, c in place
     * (backend.h): from here a death leaves nothing to resume from, and reclaim sees
     * the buffer no longer held for p, so p is synthesized again (QUEUED) instead of
     * being proved from a half-overwritten buffer (READY); pool_reclaim_pid frees it.
     * A death before this line leaves the buffer intact and held: READY is right. */
    if (pool_buf_transfer(&pl->data.pool, rel.buf, pool_owner_part(p), pid)) {
        snprintf(err, sizeof(err), "partition %u: buffer %u taken from it: internal error",
                 p, rel.buf);
        rel.done = 1;
        fail_part(w, p, jb->zkey_path, err);
        return;
    }
    pipe_stage_enter(st, S_ZKEY);
    pipe_stage_long_begin(st);
    rc = pipe_stage_zkey(st, jb->zkey_path, &z, err, sizeof(err));
    pipe_stage_long_end(st);
    if (rc) {
        release_buf(&rel);
        fail_part(w, p, jb->zkey_path, err);
        return;
    }
    buf = pool_buf_ptr(&pl->data.pool, rel.buf);
    n = z->domain_size;
    l = z->n8r / 8;
    in.z = z;
    in.a = (uint64_t *)buf;
    in.b = in.a + n * l;
    in.c = in.a + 2 * n * l;
    in.values = buf + 3 * n * z->n8r;
    in.release = release_buf;
    in.release_arg = &rel;

    t0 = pipe_stage_now();
    if (w->last_end)
        pipe_stage_hist(st, H_GAP, t0 - w->last_end);
    pipe_stage_enter_at(st, S_NTT, t0);
    pipe_stage_long_begin(st);
    rc = w->be.ops->prove(&w->be, &in, &raw, &t, err, sizeof(err));
    pipe_stage_long_end(st);
    t1 = pipe_stage_now();
    w->last_end = t1;
    release_buf(&rel); /* a backend that forgot: never leak the buffer */
    /* Sub-steps measured inside the call, entered in order now (stats.h: sum to wall). */
    t_ntt = s_to_ns(t.ntt);
    tm[0] = s_to_ns(t.msm_a);
    tm[1] = s_to_ns(t.msm_b1);
    tm[2] = s_to_ns(t.msm_b2);
    tm[3] = s_to_ns(t.msm_c);
    tm[4] = s_to_ns(t.msm_h);
    t_msm = tm[0] + tm[1] + tm[2] + tm[3] + tm[4];
    /* In the order they ran, each clamped to the call's end; the rest is busy. */
    at = t0 + t_ntt < t1 ? t0 + t_ntt : t1;
    for (int k = 0; k < 5; k++) {
        pipe_stage_enter_at(st, S_MSM_A + (uint32_t)k, at);
        at = at + tm[k] < t1 ? at + tm[k] : t1;
    }
    pipe_stage_enter_at(st, STATS_BUSY, at);
    pipe_stage_enter_at(st, STATS_BUSY, t1);
    if (rc) {
        fail_part(w, p, jb->zkey_path, err);
        return;
    }
    pipe_stage_hist(st, H_PROVE, t1 - t0);
    pipe_stage_hist(st, H_NTT, t_ntt);
    pipe_stage_hist(st, H_MSM, t_msm);
    pipe_stage_count(st, C_NTT, t_ntt);
    pipe_stage_count(st, C_MSM_A, s_to_ns(t.msm_a));
    pipe_stage_count(st, C_MSM_B1, s_to_ns(t.msm_b1));
    pipe_stage_count(st, C_MSM_B2, s_to_ns(t.msm_b2));
    pipe_stage_count(st, C_MSM_C, s_to_ns(t.msm_c));
    pipe_stage_count(st, C_MSM_H, s_to_ns(t.msm_h));
    pipe_stage_count(st, C_DEVICE, t_ntt + t_msm);

    /* Written while we own the partition; published by the CAS (R1) and read by the
     * finalizer after its CAS PROVED->FINAL. */
    res->raw = raw;
    res->worker = w->o->index;
    res->prove_ns = t1 - t0;
    pipe_part_end(pl, p, PIPE_T_PROVE, pipe_stage_now());
    if (jobtab_part_move(jt, p, JOBTAB_PROVING, pid, JOBTAB_PROVED, 0, NULL)) {
        fprintf(stderr, "cuzk-gpuworker %u: partition %u taken from us\n", w->o->index, p);
        return;
    }
    push_final(w, p);
    pipe_stage_count(st, C_DONE, 1);
    if (w->o->verbose)
        fprintf(stderr, "cuzk-gpuworker %u: partition %u proved in %.3f s\n", w->o->index, p,
                (double)(t1 - t0) * 1e-9);
}

/* Preload: the worker reads the bases (sections 5-9: A, B1, B2, C, H). The CPU
 * backend uses them in place; a device backend would upload them here. */
static void worker_circuit(struct pipe_stage *st, uint32_t action, struct pipe_zkey_entry *e,
                           void *arg)
{
    static const uint32_t ids[] = { 1, 2, 5, 6, 7, 8, 9 };

    (void)st;
    (void)arg;
    if (action == PIPE_CIRCUIT_PRELOAD)
        pipe_zkey_touch(&e->z, ids, 7);
}

int worker_run(const struct pipe_stage_opts *o, char *err, size_t errlen)
{
    struct worker *w = calloc(1, sizeof(*w));
    struct backend_params bp = { 0 };
    struct ring *in;
    uint32_t p;
    int rc;

    if (!w) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    w->o = o;
    w->be.ops = backend_find(o->backend ? o->backend : "cpu");
    if (!w->be.ops) {
        snprintf(err, errlen, "unknown backend \"%s\" (this build has: cpu)", o->backend);
        free(w);
        return -EINVAL;
    }
    rc = pipe_stage_open(&w->st, o, STATS_ROLE_GPUWORKER, err, errlen);
    if (rc) {
        free(w);
        return rc;
    }
    pipe_stage_names(&w->st, state_names, counter_names, hist_names);
    bp.threads = o->threads ? o->threads : 1;
    bp.device = (int)o->index;
    bp.slab = w->st.pl.data.pool.slab;
    bp.slab_size = (uint64_t)w->st.pl.data.pool.hdr->buf_count * w->st.pl.data.pool.hdr->buf_size;
    rc = w->be.ops->init(&w->be, &bp, err, errlen);
    if (rc)
        goto out;
    in = pipeline_ring(&w->st.pl, PIPE_RING_WORKER(o->index));
    while (!pipe_stage_stopping(&w->st)) {
        pipe_stage_circuits(&w->st, worker_circuit, w);
        if (ring_try_pop(in, &p) != 0) {
            pipe_stage_enter(&w->st, pipe_stage_wait_state(&w->st));
            if (ring_pop_timeout(in, &p, POLL_NS) != 0) {
                pipe_stage_heartbeat(&w->st);
                continue;
            }
        }
        prove_one(w, p);
        pipe_stage_heartbeat(&w->st);
    }
    w->be.ops->fini(&w->be);
out:
    pipe_stage_close(&w->st);
    free(w);
    return rc;
}
