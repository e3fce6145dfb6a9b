/* backend.h — how cuzk-gpuworker proves one partition on its device: a small table of
 * operations, so the CUDA backend (a later issue) plugs in where the CPU one is.
 *
 * The worker owns the partition (PROVING) and hands the backend the partition's
 * pinned buffer in place (layout in pipeline.h): a, b, c (Montgomery) and the witness
 * values. The backend calls in->release exactly once, as soon as it no longer reads
 * the buffer (CUDA: after the H2D copies; CPU: after the last MSM), so the worker can
 * return the buffer to the pool while the proof is still being computed. */
#ifndef CUZK_BACKEND_H
#define CUZK_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "cuzk/groth16.h"
#include "cuzk/zkey.h"

struct backend;

struct backend_params {
    unsigned threads;        /* CPU threads (CPU backend), host threads (CUDA) */
    int device;              /* device ordinal: the worker index */
    void *slab;              /* the pool's buffers, for cudaHostRegister */
    uint64_t slab_size;
};

struct backend_input {
    const zkey *z;
    uint64_t *a, *b, *c;     /* domain_size elements each, in the buffer; consumed */
    const uint8_t *values;   /* nvars canonical scalars, in the buffer */
    void (*release)(void *arg);
    void *release_arg;
};

struct backend_ops {
    const char *name;
    /* 0 or -errno / -CUZK_E_* with err. */
    int (*init)(struct backend *be, const struct backend_params *p, char *err, size_t errlen);
    /* The five MSM results before blinding; t gets the step times (ntt, msm_*).
     * Calls in->release once, on success and on failure. 0 or negative with err. */
    int (*prove)(struct backend *be, const struct backend_input *in, groth16_raw *raw,
                 groth16_timings *t, char *err, size_t errlen);
    void (*fini)(struct backend *be);
};

struct backend {
    const struct backend_ops *ops;
    struct backend_params params;
    void *priv;              /* the backend's own state */
};

extern const struct backend_ops backend_cpu_ops;

/* The backend called name ("cpu"), or NULL. */
const struct backend_ops *backend_find(const char *name);

#endif
