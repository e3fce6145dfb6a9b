/* backend_cpu.c — the CPU backend: groth16_compute on the worker's threads, reading
 * the shared buffer in place (no copy). */
#include "cuzk/backend.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cuzk/error.h"

static int cpu_init(struct backend *be, const struct backend_params *p, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    be->params = *p;
    be->priv = NULL;
    return 0;
}

static int cpu_prove(struct backend *be, const struct backend_input *in, groth16_raw *raw,
                     groth16_timings *t, char *err, size_t errlen)
{
    int rc = groth16_compute(in->z, in->values, in->a, in->b, in->c, raw, be->params.threads, t);

    /* The MSMs read the buffer (the witness, and h written over a) to the end. */
    if (in->release)
        in->release(in->release_arg);
    if (rc)
        snprintf(err, errlen, "CPU prove: %s", rc == -ENOMEM ? "out of memory" : strerror(-rc));
    return rc;
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
