/* backend_cpu.c — the CPU backend: groth16_compute on the worker's threads, reading
 * the shared buffer in place (no copy).
 *
 * "cpu-async" is the same arithmetic behind the asynchronous interface (backend.h,
 * inflight.h): two in-flight threads of half the threads each, so the worker's submit/collect path —
 * the one the CUDA backend takes — runs and is tested (tests/scripts/gpuworker_async.sh)
 * on machines without a GPU. Not for production: it is slower than "cpu".
 *
 * "cpu-inflight" (accepted as "cpu-lanes" too, its earlier name) is what cuzkd's CPU
 * workers run when they have two threads or more (worker.c): the same two in-flight
 * threads, but a partition of a domain up to 2^CPU_SIDE_BY_SIDE_MAX_LG
 * runs on half the threads beside the other in-flight thread's, and a larger one takes every
 * thread alone (a writer-preferring lock, so that it is not starved by small ones); a
 * small one with no other in flight takes every thread as well (a lone proof's
 * latency stays what "cpu" gives). A
 * small proof splits badly over threads: on 2 cores merkle-13's worker spent about
 * 9 ms of core time per partition with one thread idle at the MSMs' joins and serial
 * steps; two proofs side by side, one thread each, fill those (bench/pipeline.sh,
 * merkle-13, 32 partitions, load ~2.5, cpu then cpu-async in three pairs: 27.9 / 32.6,
 * 19.7 / 28.0, 28.5 / 31.1 partitions/s; worker CPU 51.6-52.5 against 48.8-50.0 ms a
 * partition). A large proof parallelizes well and would only double its memory. */
#include "gpuworker/backend.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/os.h"
#include "gpuworker/fixed_base.h"
#include "gpuworker/inflight.h"
#include "base/barrier.h"

static int cpu_init(struct backend *be, const struct backend_params *p, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    be->params = *p;
    be->priv = NULL;
    return 0;
}

static int cpu_compute(const struct backend_params *bp, const struct backend_input *in, unsigned threads,
                       groth16_raw *raw, groth16_timings *t, char *err, size_t errlen)
{
    groth16_tables tabs;
    unsigned msms = 0;
    /* The circuit's fixed-base tables where the worker has built them (fixed_base.h). */
    struct fixed_base_entry *fe = fixed_base_acquire(in->z, &in->key, &tabs);
    int rc = groth16_compute_tables(in->z, in->values, in->a, in->b, in->c, raw, threads, t, &tabs, &msms);

    fixed_base_release(fe, msms);
    (void)bp;
    /* The MSMs read the buffer (the witness, and h written over a) to the end. */
    if (in->release) in->release(in->release_arg);
    if (rc) snprintf(err, errlen, "CPU prove: %s", rc == -ENOMEM ? "out of memory" : strerror(-rc));
    return rc;
}

static int cpu_prove(struct backend *be, const struct backend_input *in, groth16_raw *raw, groth16_timings *t,
                     char *err, size_t errlen)
{
    return cpu_compute(&be->params, in, be->params.threads, raw, t, err, errlen);
}

static void cpu_fini(struct backend *be)
{
    be->priv = NULL;
}

const struct backend_ops backend_cpu_ops = {
    .name = "cpu",
    .init = cpu_init,
    .prove = cpu_prove,
    .fini = cpu_fini,
};

/* ---- cpu-async ---- */
#define CPU_INFLIGHT_THREADS 2

/* cpu-inflight: partitions of domains up to 2^CPU_SIDE_BY_SIDE_MAX_LG share the threads. */
#define CPU_SIDE_BY_SIDE_MAX_LG 15

struct cpu_async {
    struct backend_params p;
    struct inflight *inflight;
    bool by_size;          /* cpu-inflight: a large partition runs alone on every thread */
    pthread_rwlock_t solo; /* cpu-inflight: read by small partitions, written by large ones */
    unsigned unfinished;   /* cpu-inflight: submitted and not finished (atomic) */
};

static void cpu_async_prove(void *ctx, unsigned thread_idx, const struct backend_input *in,
                            struct backend_done *d)
{
    struct cpu_async *ca = ctx;
    bool large = ca->by_size && in->z->lg_domain > CPU_SIDE_BY_SIDE_MAX_LG, all;
    unsigned th, half = ca->p.threads / CPU_INFLIGHT_THREADS;

    /* The lock first, then the choice: a small partition that waited behind a large
     * one decides on the count as it is once that one has ended (the ending thread
     * counts itself out before it unlocks). */
    if (ca->by_size) (large ? pthread_rwlock_wrlock : pthread_rwlock_rdlock)(&ca->solo);
    /* cpu-inflight: a small partition with no other in flight (a lone proof, a backlog's
     * last) takes every thread too, so its latency is "cpu"'s; one submitted while it
     * runs shares the cores for the rest of it. Two side by side split the threads,
     * the odd one to thread 0 (two at once are always on different threads). */
    all = large || (ca->by_size && barrier_load_acquire(&ca->unfinished) == 1);
    th = all ? ca->p.threads : thread_idx == 0 ? ca->p.threads - half : half;
    d->dev_begin_ns = os_now_ns();
    d->rc = cpu_compute(&ca->p, in, th ? th : 1, &d->raw, &d->t, d->err, sizeof(d->err));
    d->dev_end_ns = os_now_ns();
    if (ca->by_size) {
        barrier_fetch_sub_release(&ca->unfinished, 1);
        pthread_rwlock_unlock(&ca->solo);
    }
    /* The compute sections stand for the device's time. */
    d->device_s = d->t.ntt + d->t.msm_a + d->t.msm_b1 + d->t.msm_b2 + d->t.msm_c + d->t.msm_h;
}

static int cpu_inflight_start(struct backend *be, const struct backend_params *p, bool by_size, char *err,
                              size_t errlen)
{
    struct cpu_async *ca = calloc(1, sizeof(*ca));
    pthread_rwlockattr_t ra;
    int rc;

    be->params = *p;
    be->priv = NULL;
    if (!ca) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    ca->p = *p;
    ca->by_size = by_size;
    /* Writer-preferring: a large partition waiting for the lock is not overtaken by the
     * small ones the other in-flight thread keeps taking. */
    pthread_rwlockattr_init(&ra);
    pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    rc = pthread_rwlock_init(&ca->solo, &ra);
    pthread_rwlockattr_destroy(&ra);
    if (rc) {
        free(ca);
        snprintf(err, errlen, "in-flight lock: %s", strerror(rc));
        return -rc;
    }
    rc = inflight_start(&ca->inflight, CPU_INFLIGHT_THREADS, cpu_async_prove, ca, err, errlen);
    if (rc) {
        pthread_rwlock_destroy(&ca->solo);
        free(ca);
        return rc;
    }
    be->priv = ca;
    return 0;
}

static int cpu_async_init(struct backend *be, const struct backend_params *p, char *err, size_t errlen)
{
    return cpu_inflight_start(be, p, false, err, errlen);
}

static int cpu_inflight_init(struct backend *be, const struct backend_params *p, char *err, size_t errlen)
{
    return cpu_inflight_start(be, p, true, err, errlen);
}

static int cpu_async_submit(struct backend *be, const struct backend_input *in, void *tag, char *err,
                            size_t errlen)
{
    struct cpu_async *ca = be->priv;
    int rc;

    if (ca->by_size) barrier_fetch_add_acq_rel(&ca->unfinished, 1);
    rc = inflight_submit(ca->inflight, in, tag, err, errlen);
    if (rc && ca->by_size) barrier_fetch_sub_acq_rel(&ca->unfinished, 1);
    return rc;
}

static int cpu_async_collect(struct backend *be, uint64_t timeout_ns, struct backend_done *out)
{
    return inflight_collect(((struct cpu_async *)be->priv)->inflight, timeout_ns, out);
}

static void cpu_async_fini(struct backend *be)
{
    struct cpu_async *ca = be->priv;

    if (ca) {
        inflight_stop(ca->inflight);
        pthread_rwlock_destroy(&ca->solo);
        free(ca);
    }
    be->priv = NULL;
}

const struct backend_ops backend_cpu_async_ops = {
    .name = "cpu-async",
    .init = cpu_async_init,
    .fini = cpu_async_fini,
    .depth = CPU_INFLIGHT_THREADS,
    .submit = cpu_async_submit,
    .collect = cpu_async_collect,
};

const struct backend_ops backend_cpu_inflight_ops = {
    .name = "cpu-inflight", /* "cpu-lanes" too (backend.c) */
    .init = cpu_inflight_init,
    .fini = cpu_async_fini,
    .depth = CPU_INFLIGHT_THREADS,
    .submit = cpu_async_submit,
    .collect = cpu_async_collect,
};
