/* backend_cpu.c — the CPU backend: groth16_compute on the worker's threads, reading
 * the shared buffer in place (no copy).
 *
 * "cpu-async" is the same arithmetic behind the asynchronous interface (backend.h,
 * lanes.h): two lanes of half the threads each, so the worker's submit/collect path —
 * the one the CUDA backend takes — runs and is tested (tests/scripts/gpuworker_async.sh)
 * on machines without a GPU. Not for production: it is slower than "cpu". */
#include "cuzk/backend.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuzk/error.h"
#include "cuzk/lanes.h"

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
    int rc = groth16_compute(in->z, in->values, in->a, in->b, in->c, raw, threads, t);

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
#define CPU_ASYNC_LANES 2

struct cpu_async {
    struct backend_params p;
    struct lanes *lanes;
};

static void cpu_async_lane(void *ctx, unsigned lane, const struct backend_input *in, struct backend_done *d)
{
    struct cpu_async *ca = ctx;
    unsigned th = ca->p.threads / CPU_ASYNC_LANES;

    (void)lane;
    d->rc = cpu_compute(&ca->p, in, th ? th : 1, &d->raw, &d->t, d->err, sizeof(d->err));
    /* The compute sections stand for the device's time. */
    d->device_s = d->t.ntt + d->t.msm_a + d->t.msm_b1 + d->t.msm_b2 + d->t.msm_c + d->t.msm_h;
}

static int cpu_async_init(struct backend *be, const struct backend_params *p, char *err, size_t errlen)
{
    struct cpu_async *ca = calloc(1, sizeof(*ca));
    int rc;

    be->params = *p;
    be->priv = NULL;
    if (!ca) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    ca->p = *p;
    rc = lanes_start(&ca->lanes, CPU_ASYNC_LANES, cpu_async_lane, ca, err, errlen);
    if (rc) {
        free(ca);
        return rc;
    }
    be->priv = ca;
    return 0;
}

static int cpu_async_submit(struct backend *be, const struct backend_input *in, void *tag, char *err,
                            size_t errlen)
{
    return lanes_submit(((struct cpu_async *)be->priv)->lanes, in, tag, err, errlen);
}

static int cpu_async_collect(struct backend *be, uint64_t timeout_ns, struct backend_done *out)
{
    return lanes_collect(((struct cpu_async *)be->priv)->lanes, timeout_ns, out);
}

static void cpu_async_fini(struct backend *be)
{
    struct cpu_async *ca = be->priv;

    if (ca) {
        lanes_stop(ca->lanes);
        free(ca);
    }
    be->priv = NULL;
}

const struct backend_ops backend_cpu_async_ops = {
    .name = "cpu-async",
    .init = cpu_async_init,
    .fini = cpu_async_fini,
    .depth = CPU_ASYNC_LANES,
    .submit = cpu_async_submit,
    .collect = cpu_async_collect,
};
