/* worker.c — the proving stage loop (gpuworker/worker.h). */
#include "gpuworker/worker.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpuworker/backend.h"
#include "gpuworker/busy.h"
#include "gpuworker/fixed_base.h"
#include "gpuworker/nvml.h"
#include "base/error.h"
#include "zk/ntt.h"

#define POLL_NS 100000000ll /* the 100 ms heartbeat promise */
#define HB_NS   50000000ull /* async loop: beat at most every 50 ms */
#define FILL_NS \
    1000000ll /* async loop, work in flight and room for more: poll the
                             * ring every 1 ms (a partition that arrives while the device
                             * computes is submitted at once, so its copy overlaps) */
#define MAX_DEPTH 4

/* ntt and the five MSMs are the compute sections (the device's time; CPU backend:
 * measured around each section). What the worker spends around them is busy.
 * device: an asynchronous backend holds partitions and the worker waits for them. */
enum { S_ZKEY = STATS_STAGE0, S_NTT, S_MSM_A, S_MSM_B1, S_MSM_B2, S_MSM_C, S_MSM_H, S_DEVICE };
enum {
    C_DONE,
    C_FAILED,
    C_LOST,
    C_MSM_A,
    C_MSM_B1,
    C_MSM_B2,
    C_MSM_C,
    C_MSM_H,
    C_NTT,
    C_INFLIGHT_OCCUPY, /* named "lane_occupy_ns" below: see there */
    C_DOMAIN_HITS,
    C_DOMAIN_BUILDS,
    C_GPU_BUSY,
    C_FIXED_TABLES, /* fixed-base tables built (fixed_base.h) */
    C_FIXED_MSMS,   /* MSMs run through one */
    C_FIXED_EVICT   /* circuits whose tables went for the budget */
};
/* Gauges: per-circuit tables this worker keeps between partitions (ntt.h's cache). */
enum {
    G_PRECOMP_BYTES,
    G_PRECOMP_BUDGET,
    G_WAIT_BLOCKS,
    G_CPU_NS, /* this process's CPU time (user + system), ns: sampled with NVML */
    G_NVML_OK,
    G_NVML_UTIL,
    G_NVML_MEM,
    G_NVML_POWER,
    G_NVML_SM,
    G_FIXED_BYTES,  /* the fixed-base tables' bytes now, their budget, circuits due or */
    G_FIXED_BUDGET, /* being built (fixed_base.h) */
    G_FIXED_PENDING
};
static const char *const nvml_gauge_names[] = { "cpu_ns",         "nvml_ok",       "nvml_util_pct",
                                                "nvml_mem_bytes", "nvml_power_mw", "nvml_sm_mhz" };
#define SAMPLE_NS 100000000ull /* NVML and CPU time every 100 ms */
enum { H_GAP, H_PROVE, H_NTT, H_MSM };

static const char *const state_names[] = { "zkey",  "ntt",   "msm_a",  "msm_b1", "msm_b2",
                                           "msm_c", "msm_h", "device", NULL };
/* "lane_occupy_ns" is C_INFLIGHT_OCCUPY under its earlier name, kept: it is the key
 * in `cuzk-top --json` and the source of cuzk_gpu_lane_occupied_seconds_total, which
 * scripts and dashboards outside this tree read (docs/operations.md). */
static const char *const counter_names[] = { "parts_done",  "parts_failed",   "claims_lost", "msm_a_ns",
                                             "msm_b1_ns",   "msm_b2_ns",      "msm_c_ns",    "msm_h_ns",
                                             "ntt_ns",      "lane_occupy_ns", "domain_hits", "domain_builds",
                                             "gpu_busy_ns", "fixed_tables",   "fixed_msms",  "fixed_evicted",
                                             NULL };
static const char *const hist_names[] = { "gap", "prove", "ntt", "msm", NULL };

struct worker;

struct release_ctx {
    struct worker *w;
    uint32_t part, buf;
    int done;
};

/* A partition handed to an asynchronous backend and not yet collected. */
struct flight {
    int used;
    uint32_t p;
    struct release_ctx rel;
    struct backend_key key;
    uint64_t t_submit;
};

struct worker {
    struct stage st;
    const struct stage_opts *o;
    struct backend be;
    uint64_t last_end;                   /* when the last backend call returned; 0 before the first */
    uint64_t domain_hits, domain_builds; /* ntt cache counts already reported */
    fixed_base_stats fixed;              /* fixed-base counts already reported */
    /* asynchronous backends */
    unsigned depth, n_flight;
    struct flight fl[MAX_DEPTH];
    uint32_t state;        /* the slot's state as last entered by the async loop */
    uint64_t busy_seen;    /* backend_done.busy_total_ns already counted in lane_occupy_ns */
    struct busy_union dev; /* the device spans: gpu_busy_ns and the gap histogram */
    struct nvml *nvml;     /* NULL: no driver, or not a CUDA backend */
    uint64_t last_sample;
    uint64_t last_hb;
};

/* The backend no longer reads the buffer: free it, then forget it (worker.h says why
 * in this order). Asynchronous backends call it on their own thread: it touches only
 * the pool (atomics) and the partition's buf word, which we own (PROVING). */
static void release_buf(void *arg)
{
    struct release_ctx *r = arg;
    struct pipeline *pl = &r->w->st.pl;

    if (r->done) return;
    r->done = 1;
    pool_buf_free(&pl->data.pool, r->buf, (uint32_t)r->w->st.pid); /* taken in claim_part */
    /* Relaxed: we own the partition (PROVING); published by our next CAS. */
    barrier_store_relaxed(&pl->data.jobtab.parts[r->part].buf, JOBTAB_NONE);
}

static void fail_part(struct worker *w, uint32_t p, const char *file, const char *msg)
{
    char who[32];

    snprintf(who, sizeof(who), "cuzk-gpuworker %u", w->o->index);
    stage_fail(&w->st, p, JOBTAB_PROVING, C_FAILED, file, msg, who);
}

/* The device is unusable (a sticky CUDA error): say so and exit non-zero at once,
 * leaving the partitions we hold PROVING. cuzkd reclaims them (their buffers were
 * taken, so they are synthesized again), counts the crash against each (poison rules,
 * --max-attempts) and restarts us with a fresh CUDA context. No clean-up: another in-flight
 * thread may still be inside the CUDA runtime, and the context cannot be used again. */
static void device_fault(struct worker *w, const char *what, const char *err)
{
    fprintf(stderr,
            "cuzk-gpuworker %u: device fault (%s): %s; exiting so that cuzkd "
            "restarts the worker and retries its partitions\n",
            w->o->index, what, err);
    fflush(stderr);
    _exit(CUZK_EXIT_SYSTEM);
}

static uint64_t s_to_ns(double s)
{
    return s > 0 ? (uint64_t)(s * 1e9) : 0;
}

/* A partition's device span (backend_done.dev_*): its newly covered time into
 * gpu_busy_ns and its idle gap, when it has one, into the gap histogram (busy.h). */
static void device_span(struct worker *w, uint64_t b, uint64_t e)
{
    uint64_t gap, cov;
    int has_gap;

    cov = busy_add(&w->dev, b, e, &gap, &has_gap);
    stage_count(&w->st, C_GPU_BUSY, cov);
    if (has_gap) stage_hist(&w->st, H_GAP, gap);
}

/* Every SAMPLE_NS: this process's CPU seconds and, with a driver, NVML's figures of
 * the device, into the gauges in one write. */
/* The fixed-base tables (fixed_base.h): their bytes and budget as gauges, tables built,
 * MSMs through them and evictions as counters (deltas since the last report). Also from
 * the idle loop: the builder finishes between partitions. */
static void report_fixed(struct worker *w)
{
    fixed_base_stats fs;

    fixed_base_get_stats(&fs);
    uint64_t fg[3] = { fs.bytes, fs.budget, fs.pending };
    stage_gauges(&w->st, G_FIXED_BYTES, fg, 3);
    stage_count(&w->st, C_FIXED_TABLES, fs.built - w->fixed.built);
    stage_count(&w->st, C_FIXED_MSMS, fs.msms - w->fixed.msms);
    stage_count(&w->st, C_FIXED_EVICT, fs.evictions - w->fixed.evictions);
    w->fixed = fs;
}

static void sample_device(struct worker *w)
{
    struct nvml_sample ns = { 0 };
    struct rusage ru;
    uint64_t now = stage_now(), g[6];

    if (now - w->last_sample < SAMPLE_NS) return;
    w->last_sample = now;
    getrusage(RUSAGE_SELF, &ru);
    g[0] = ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000ull +
        ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000ull;
    g[1] = w->nvml ? 1 : 0;
    if (w->nvml) (void)nvml_sample(w->nvml, &ns); /* a failed read is a 0 for once */
    g[2] = ns.util_pct;
    g[3] = ns.mem_used;
    g[4] = ns.power_mw;
    g[5] = ns.sm_clock_mhz;
    stage_gauges(&w->st, G_CPU_NS, g, 6);
    report_fixed(w);
}

static void push_final(struct worker *w, uint32_t p)
{
    struct ring *out = pipeline_ring(&w->st.pl, PIPE_RING_FINAL(w->st.pl.config->n_workers));
    struct stage_push_state pw = { 0 };

    if (ring_try_push(out, p) == 0) return;
    /* Stopping: the supervisor re-pushes PROVED partitions on restart. */
    do {
        if (stage_push_wait(&w->st, &pw)) return;
    } while (ring_push_timeout(out, p, POLL_NS) != 0);
}

static void drain(struct worker *w);

/* Claim p, take its buffer, open its zkey, fill *in. 0: ready to prove; -1: p was
 * dealt with (lost, or failed with the reason). */
static int claim_part(struct worker *w, uint32_t p, struct release_ctx *rel, struct backend_input *in)
{
    struct stage *st = &w->st;
    struct pipeline *pl = &st->pl;
    struct jobtab *jt = &pl->data.jobtab;
    const uint32_t pid = (uint32_t)st->pid;
    struct pipe_result *res = pipeline_result(pl, p);
    struct jobtab_job *jb;
    const zkey *z;
    char err[1024] = "", zb[64];
    const char *zpath;
    uint64_t n, l;
    unsigned char *buf;
    int rc;

    *rel = (struct release_ctx){ w, p, JOBTAB_NONE, 0 };
    if (!res || !(jb = stage_claim_part(st, p, JOBTAB_READY, JOBTAB_PROVING))) {
        stage_count(st, C_LOST, 1);
        return -1;
    }
    stage_enter(st, STATS_BUSY);
    w->state = STATS_BUSY;
    pipe_part_begin(pl, p, PIPE_T_PROVE, w->o->index, stage_now());          /* `cuzk trace` */
    zpath = pipe_input_path(pl, jb->zkey_fd, jb->zkey_path, zb, sizeof(zb)); /* cuzkd's copy */
    {
        /* Test-only fault hook (tests/faults/poison.sh; docs/operations.md, "Failure handling"):
         * with CUZK_TEST_CRASH_ON=NAME in cuzkd's environment the worker aborts on
         * the partition named NAME, as a partition that crashes the prover would. */
        const char *crash = getenv("CUZK_TEST_CRASH_ON");
        const struct pipe_partinfo *pi = pipeline_partinfo(pl, p);

        if (crash && *crash && pi && !strcmp(crash, pi->name)) {
            fprintf(stderr,
                    "cuzk-gpuworker %u: CUZK_TEST_CRASH_ON=%s: aborting on "
                    "partition %u\n",
                    w->o->index, crash, p);
            abort();
        }
        /* CUZK_TEST_HANG_ON=NAME (tests/faults/long_call.sh): the worker never returns
         * from a long call on that partition, as a prover stuck in a kernel or a read
         * would; only --long-call-timeout can end it. */
        crash = getenv("CUZK_TEST_HANG_ON");
        if (crash && *crash && pi && !strcmp(crash, pi->name)) {
            fprintf(stderr,
                    "cuzk-gpuworker %u: CUZK_TEST_HANG_ON=%s: hanging in a long "
                    "call on partition %u\n",
                    w->o->index, crash, p);
            stage_long_begin(st);
            for (;;) pause();
        }
    }
    /* Relaxed: the acquire of our CAS ordered the synth's store (its release CAS). */
    rel->buf = barrier_load_relaxed(&jt->parts[p].buf);
    if (rel->buf == JOBTAB_NONE || pool_buf_owner(&pl->data.pool, rel->buf) != pool_owner_part(p)) {
        /* A READY partition always holds its buffer: a bug somewhere upstream. */
        snprintf(err, sizeof(err),
                 "partition %u is READY without its buffer (%u): internal "
                 "error",
                 p, rel->buf);
        rel->done = 1;
        fail_part(w, p, jb->zkey_path, err);
        return -1;
    }
    /* Take the buffer (PART|p -> our pid) before the backend consumes a, b, c in place
     * (backend.h): from here a death leaves nothing to resume from, and reclaim sees
     * the buffer no longer held for p, so p is synthesized again (QUEUED) instead of
     * being proved from a half-overwritten buffer (READY); pool_reclaim_pid frees it.
     * A death before this line leaves the buffer intact and held: READY is right. */
    if (pool_buf_transfer(&pl->data.pool, rel->buf, pool_owner_part(p), pid)) {
        snprintf(err, sizeof(err), "partition %u: buffer %u taken from it: internal error", p, rel->buf);
        rel->done = 1;
        fail_part(w, p, jb->zkey_path, err);
        return -1;
    }
    if (w->n_flight) {
        /* The zkey cache may close an entry to open this one (another circuit, or this
         * file rewritten): the partitions in flight read theirs until collected, so
         * let them finish first when this one's file is not theirs. */
        struct stat sb;
        struct backend_key k;
        int same = stat(zpath, &sb) == 0;

        if (same) {
            backend_key_of(&k, sb.st_dev, sb.st_ino, sb.st_size, &sb.st_mtim);
            for (unsigned i = 0; i < MAX_DEPTH; i++)
                if (w->fl[i].used && !backend_key_equal(&w->fl[i].key, &k)) same = 0;
        }
        if (!same) drain(w);
    }
    stage_enter(st, S_ZKEY);
    rc = stage_job_zkey(st, zpath, jb->zkey_path, &z, err, sizeof(err));
    if (rc) {
        release_buf(rel);
        fail_part(w, p, jb->zkey_path, err);
        return -1;
    }
    memset(&in->key, 0, sizeof(in->key));
    for (int i = 0; i < PIPE_ZKEY_CACHE; i++)
        if (st->zc[i].used && &st->zc[i].z == z)
            backend_key_of(&in->key, st->zc[i].dev, st->zc[i].ino, st->zc[i].size, &st->zc[i].mtim);
    buf = pool_buf_ptr(&pl->data.pool, rel->buf);
    n = z->domain_size;
    l = z->n8r / 8;
    in->z = z;
    in->a = (uint64_t *)buf;
    in->b = in->a + n * l;
    in->c = in->a + 2 * n * l;
    in->values = buf + 3 * n * z->n8r;
    in->release = release_buf;
    in->release_arg = rel;
    return 0;
}

/* The NTT domain cache (what a one-shot prover rebuilds per proof): its bytes as a
 * gauge, its hits and builds as counters (deltas since the last report); the same for
 * the fixed-base tables (fixed_base.h). */
static void report_precompute(struct worker *w)
{
    ntt_cache_stats cs;
    ntt_cache_get_stats(&cs);
    uint64_t g[2] = { cs.bytes, (uint64_t)w->o->precompute_mb << 20 };
    stage_gauges(&w->st, G_PRECOMP_BYTES, g, 2);
    stage_count(&w->st, C_DOMAIN_HITS, cs.hits - w->domain_hits);
    stage_count(&w->st, C_DOMAIN_BUILDS, cs.misses - w->domain_builds);
    w->domain_hits = cs.hits;
    w->domain_builds = cs.misses;
    report_fixed(w);
}

/* The backend is done with p (rc): results, accounting of the totals, hand-off. */
static void finish_part(struct worker *w, uint32_t p, int rc, const char *err, const groth16_raw *raw,
                        const groth16_timings *t, uint64_t occupy_ns, uint64_t prove_ns)
{
    struct stage *st = &w->st;
    struct pipeline *pl = &st->pl;
    struct jobtab *jt = &pl->data.jobtab;
    struct jobtab_job *jb = &jt->jobs[jt->parts[p].job];
    struct pipe_result *res = pipeline_result(pl, p);
    uint64_t t_ntt, t_msm;

    if (rc) {
        fail_part(w, p, jb->zkey_path, err);
        return;
    }
    t_ntt = s_to_ns(t->ntt);
    t_msm =
        s_to_ns(t->msm_a) + s_to_ns(t->msm_b1) + s_to_ns(t->msm_b2) + s_to_ns(t->msm_c) + s_to_ns(t->msm_h);
    stage_hist(st, H_PROVE, prove_ns);
    stage_hist(st, H_NTT, t_ntt);
    stage_hist(st, H_MSM, t_msm);
    stage_count(st, C_NTT, t_ntt);
    stage_count(st, C_MSM_A, s_to_ns(t->msm_a));
    stage_count(st, C_MSM_B1, s_to_ns(t->msm_b1));
    stage_count(st, C_MSM_B2, s_to_ns(t->msm_b2));
    stage_count(st, C_MSM_C, s_to_ns(t->msm_c));
    stage_count(st, C_MSM_H, s_to_ns(t->msm_h));
    stage_count(st, C_INFLIGHT_OCCUPY, occupy_ns);
    report_precompute(w);

    /* Written while we own the partition; published by the CAS (R1) and read by the
     * finalizer after its CAS PROVED->FINAL. */
    res->raw = *raw;
    res->worker = w->o->index;
    res->prove_ns = prove_ns;
    pipe_part_end(pl, p, PIPE_T_PROVE, stage_now());
    if (jobtab_part_move(jt, p, JOBTAB_PROVING, (uint32_t)st->pid, JOBTAB_PROVED, 0, NULL)) {
        fprintf(stderr, "cuzk-gpuworker %u: partition %u taken from us\n", w->o->index, p);
        return;
    }
    push_final(w, p);
    stage_count(st, C_DONE, 1);
    if (w->o->verbose)
        fprintf(stderr, "cuzk-gpuworker %u: partition %u proved in %.3f s\n", w->o->index, p,
                (double)prove_ns * 1e-9);
}

/* Synchronous backend (CPU): one call on this thread. */
static void prove_one(struct worker *w, uint32_t p)
{
    struct stage *st = &w->st;
    struct release_ctx rel;
    struct backend_input in;
    groth16_timings t = { 0 };
    groth16_raw raw;
    char err[1024] = "";
    uint64_t t0, t1, t_ntt, n_msm = 0, tm[5], at;
    int rc;

    if (claim_part(w, p, &rel, &in)) return;
    t0 = stage_now();
    stage_enter_at(st, S_NTT, t0);
    stage_long_begin(st);
    rc = w->be.ops->prove(&w->be, &in, &raw, &t, err, sizeof(err));
    stage_long_end(st);
    t1 = stage_now();
    w->last_end = t1;
    release_buf(&rel); /* a backend that forgot: never leak the buffer */
    /* Sub-steps measured inside the call, entered in order now (stats.h: sum to wall). */
    t_ntt = s_to_ns(t.ntt);
    tm[0] = s_to_ns(t.msm_a);
    tm[1] = s_to_ns(t.msm_b1);
    tm[2] = s_to_ns(t.msm_b2);
    tm[3] = s_to_ns(t.msm_c);
    tm[4] = s_to_ns(t.msm_h);
    /* In the order they ran, each clamped to the call's end; the rest is busy. */
    at = t0 + t_ntt < t1 ? t0 + t_ntt : t1;
    for (int k = 0; k < 5; k++) {
        stage_enter_at(st, S_MSM_A + (uint32_t)k, at);
        at = at + tm[k] < t1 ? at + tm[k] : t1;
        n_msm += tm[k];
    }
    stage_enter_at(st, STATS_BUSY, at);
    stage_enter_at(st, STATS_BUSY, t1);
    /* CPU: the compute section is the "device" span (gpu_busy_ns, gaps) and the
     * sections' sum the in-flight occupancy. */
    device_span(w, t0, t1);
    finish_part(w, p, rc, err, &raw, &t, t_ntt + n_msm, t1 - t0);
}

/* ---- asynchronous backends (CUDA): up to depth partitions in flight ---------- */

static void async_enter(struct worker *w, uint32_t state)
{
    if (w->state != state) {
        stage_enter(&w->st, state);
        w->state = state;
    }
}

static void async_beat(struct worker *w)
{
    uint64_t now = stage_now();

    if (now - w->last_hb >= HB_NS) {
        stage_heartbeat(&w->st);
        w->last_hb = now;
    }
    sample_device(w);
}

/* Take one finished partition if there is one within timeout_ns. 1 if one was. */
static int collect_one(struct worker *w, uint64_t timeout_ns)
{
    struct backend_done d;
    struct flight *f = NULL;
    uint64_t dev_ns;
    int rc;

    memset(&d, 0, sizeof(d));
    rc = w->be.ops->collect(&w->be, timeout_ns, &d);
    if (rc <= 0) return 0;
    for (unsigned i = 0; i < MAX_DEPTH; i++)
        if (w->fl[i].used && (void *)&w->fl[i] == d.tag) f = &w->fl[i];
    if (!f) {
        fprintf(stderr,
                "cuzk-gpuworker %u: backend returned an unknown partition: "
                "internal error\n",
                w->o->index);
        fflush(stderr);
        _exit(CUZK_EXIT_BUG);
    }
    if (d.fatal) device_fault(w, "proving", d.err);
    release_buf(&f->rel); /* a backend that forgot: never leak the buffer */
    w->n_flight--;
    f->used = 0;
    if (d.end_ns > w->last_end) w->last_end = d.end_ns;
    async_enter(w, STATS_BUSY);
    device_span(w, d.dev_begin_ns, d.dev_end_ns);
    /* lane_occupy_ns: the union of the in-flight threads' busy time on the host clock (never above
     * wall, unlike the sum of per-partition device times when two partitions overlap;
     * circuit loads and host round trips included: gpu_busy_ns is the device's). */
    dev_ns = d.busy_total_ns > w->busy_seen ? d.busy_total_ns - w->busy_seen : 0;
    if (d.busy_total_ns > w->busy_seen) w->busy_seen = d.busy_total_ns;
    finish_part(w, f->p, d.rc, d.err, &d.raw, &d.t, dev_ns,
                (d.end_ns > f->t_submit ? d.end_ns : stage_now()) - f->t_submit);
    return 1;
}

/* Wait for everything in flight (heartbeats meanwhile). */
static void drain(struct worker *w)
{
    while (w->n_flight) {
        async_enter(w, S_DEVICE);
        collect_one(w, POLL_NS);
        async_beat(w);
    }
}

static void submit_one(struct worker *w, uint32_t p)
{
    struct flight *f = NULL;
    struct backend_input in;
    char err[1024] = "";
    uint64_t now;

    for (unsigned i = 0; i < MAX_DEPTH && !f; i++)
        if (!w->fl[i].used) f = &w->fl[i];
    if (!f || claim_part(w, p, &f->rel, &in)) return;
    async_enter(w, STATS_BUSY);
    now = stage_now();
    f->p = p;
    f->key = in.key;
    f->t_submit = now;
    if (w->be.ops->submit(&w->be, &in, f, err, sizeof(err))) {
        release_buf(&f->rel);
        finish_part(w, p, -EIO, err, NULL, NULL, 0, 0);
        return;
    }
    f->used = 1;
    w->n_flight++;
}

static void worker_circuit(struct stage *st, uint32_t action, struct stage_zkey_entry *e, void *arg);

static void run_async(struct worker *w, struct ring *in)
{
    uint32_t p;

    while (!stage_stopping(&w->st) || w->n_flight) {
        /* Finished partitions first: their buffers and results go on at once. */
        while (w->n_flight && collect_one(w, 0))
            ;
        if (stage_stopping(&w->st)) {
            drain(w);
            break;
        }
        if (!w->n_flight) {
            /* Nothing in flight: changes to the circuits table are applied now, when
             * no partition can be reading a zkey an eviction would close. */
            stage_circuits(&w->st, worker_circuit, w);
        } else if (w->st.pl.circuits && barrier_load_acquire(&w->st.pl.circuits->seq) != w->st.circ_seq) {
            drain(w);
            continue;
        }
        if (w->n_flight < w->depth) {
            if (ring_try_pop(in, &p) == 0) {
                submit_one(w, p);
                continue;
            }
            async_enter(w, w->n_flight ? S_DEVICE : stage_wait_state(&w->st));
            if (ring_pop_timeout(in, &p, w->n_flight ? FILL_NS : POLL_NS) == 0) {
                submit_one(w, p);
                continue;
            }
        } else {
            async_enter(w, S_DEVICE);
            collect_one(w, POLL_NS);
        }
        async_beat(w);
    }
}

/* Preload: the worker reads the bases (sections 5-9: A, B1, B2, C, H). The CPU
 * backend uses them in place (faulted in here); a device backend uploads them and
 * keeps them resident (evict drops them). */
static void worker_circuit(struct stage *st, uint32_t action, struct stage_zkey_entry *e, void *arg)
{
    static const uint32_t ids[] = { 1, 2, 5, 6, 7, 8, 9 };
    struct worker *w = arg;
    struct backend_key key;
    char err[1024] = "";
    int fatal = 0;

    (void)st;
    if (!w->be.ops->circuit) {
        if (action == PIPE_CIRCUIT_PRELOAD) stage_zkey_touch(&e->z, ids, 7);
        return;
    }
    backend_key_of(&key, e->dev, e->ino, e->size, &e->mtim);
    if (w->be.ops->circuit(&w->be, action, &e->z, &key, &fatal, err, sizeof(err))) {
        if (fatal) device_fault(w, action == PIPE_CIRCUIT_PRELOAD ? "preload" : "evict", err);
        fprintf(stderr, "cuzk-gpuworker %u: %s of %s on the device failed: %s\n", w->o->index,
                action == PIPE_CIRCUIT_PRELOAD ? "preload" : "evict", e->path, err);
    }
}

int worker_run(const struct stage_opts *o, char *err, size_t errlen)
{
    struct worker *w = calloc(1, sizeof(*w));
    struct backend_params bp = { 0 };
    const char *name = o->backend ? o->backend : "cpu", *colon, *test_be;
    struct ring *in;
    uint32_t p;
    int rc;

    /* Test hook (tests/scripts/gpuworker_async.sh): CUZK_TEST_BACKEND=cpu-async in
     * cuzkd's environment gives its CPU workers the asynchronous CPU backend. */
    test_be = getenv("CUZK_TEST_BACKEND");
    if (test_be && *test_be && !strcmp(name, "cpu"))
        name = test_be; /* "cpu" there: the synchronous path, whatever the threads */
    else if (!strcmp(name, "cpu") && o->threads >= 2)
        name = "cpu-inflight"; /* small partitions two at a time (backend_cpu.c) */
    colon = strchr(name, ':');
    if (!w) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    w->o = o;
    w->be.ops = backend_find(name);
    if (!w->be.ops) {
        if (!strncmp(name, "cuda", 4) && (!name[4] || name[4] == ':'))
            snprintf(err, errlen,
                     "--backend %s: the CUDA backend is not built into this "
                     "cuzk-gpuworker (built with CUDA=0 or without nvcc); this build has: %s",
                     name, backend_list());
        else
            snprintf(err, errlen, "unknown backend \"%s\" (this build has: %s)", name, backend_list());
        free(w);
        return -EINVAL;
    }
    /* cuda:N: device N (cuzkd passes the plan's device); plain "cuda": the index. */
    bp.device = (int)o->index;
    if (colon) {
        char *end;
        long d = strtol(colon + 1, &end, 10);

        if (end == colon + 1 || *end || d < 0 || d > 1024) {
            snprintf(err, errlen,
                     "--backend %s: expected %.*s or %.*s:DEVICE (a device "
                     "number)",
                     name, (int)(colon - name), name, (int)(colon - name), name);
            free(w);
            return -EINVAL;
        }
        bp.device = (int)d;
    }
    rc = stage_open(&w->st, o, STATS_ROLE_GPUWORKER, err, errlen);
    if (rc) {
        free(w);
        return rc;
    }
    stage_names(&w->st, state_names, counter_names, hist_names);
    stage_name_gauge(&w->st, G_PRECOMP_BYTES, "precomp_bytes");
    stage_name_gauge(&w->st, G_PRECOMP_BUDGET, "precomp_budget");
    stage_name_gauge(&w->st, G_WAIT_BLOCKS, "device_wait_blocks");
    for (unsigned k = 0; k < sizeof(nvml_gauge_names) / sizeof(nvml_gauge_names[0]); k++)
        stage_name_gauge(&w->st, G_CPU_NS + k, nvml_gauge_names[k]);
    ntt_cache_set_budget((size_t)o->precompute_mb << 20);
    stage_name_gauge(&w->st, G_FIXED_BYTES, "fixed_bytes");
    stage_name_gauge(&w->st, G_FIXED_BUDGET, "fixed_budget");
    stage_name_gauge(&w->st, G_FIXED_PENDING, "fixed_pending");
    /* The CPU backends' tables; a device backend never asks for them (budget 0 shown). */
    fixed_base_set_budget(strncmp(w->be.ops->name, "cpu", 3) ? 0 : (size_t)o->fixed_base_mb << 20);
    report_precompute(w);
    bp.threads = o->threads ? o->threads : 1;
    bp.slab = w->st.pl.data.pool.slab;
    bp.slab_size = (uint64_t)w->st.pl.data.pool.hdr->buf_count * w->st.pl.data.pool.hdr->buf_size;
    stage_long_begin(&w->st); /* a CUDA context takes a while */
    rc = w->be.ops->init(&w->be, &bp, err, errlen);
    stage_long_end(&w->st);
    if (rc) goto out;
    /* NVML for a CUDA device, where the driver has it (nvml.h); its absence is no
     * error: the gauges stay 0 with nvml_ok 0. The device is found by its PCI address
     * (the backend's pci_bus_id): NVML's index counts every device of the machine, CUDA's
     * only those CUDA_VISIBLE_DEVICES leaves. */
    if (!strncmp(w->be.ops->name, "cuda", 4)) {
        char why[256];

        if (nvml_open(&w->nvml, NULL, (unsigned)w->be.params.device, w->be.pci_bus_id, why, sizeof(why)) &&
            o->verbose)
            fprintf(stderr, "cuzk-gpuworker %u: %s\n", o->index, why);
    }
    sample_device(w);
    /* 1: the backend's threads sleep while the device works (their CPU time is not
     * a spin); a reader of the CPU-time gauge needs to know which. */
    {
        uint64_t g = (uint64_t)w->be.device_wait_blocks;
        stage_gauges(&w->st, G_WAIT_BLOCKS, &g, 1);
    }
    in = pipeline_ring(&w->st.pl, PIPE_RING_WORKER(o->index));
    if (w->be.ops->depth) {
        w->depth = w->be.ops->depth < MAX_DEPTH ? w->be.ops->depth : MAX_DEPTH;
        w->state = STATS_IDLE;
        run_async(w, in);
    } else {
        while (!stage_stopping(&w->st)) {
            stage_circuits(&w->st, worker_circuit, w);
            if (ring_try_pop(in, &p) != 0) {
                stage_enter(&w->st, stage_wait_state(&w->st));
                if (ring_pop_timeout(in, &p, POLL_NS) != 0) {
                    stage_heartbeat(&w->st);
                    sample_device(w);
                    continue;
                }
            }
            prove_one(w, p);
            stage_heartbeat(&w->st);
            sample_device(w);
        }
    }
    w->be.ops->fini(&w->be);
    fixed_base_shutdown();
    nvml_close(w->nvml);
out:
    stage_close(&w->st);
    free(w);
    return rc;
}
