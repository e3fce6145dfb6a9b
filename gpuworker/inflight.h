/* inflight.h — the asynchronous half of a gpuworker backend (backend.h, submit/collect):
 * n host threads ("lanes") that each run one partition at a time through the
 * backend's blocking prove function, fed by a FIFO and returning results in the order
 * they finish. The CUDA backend runs one lane per gpu_dev (so the copy of one
 * partition overlaps the kernels of the other); the cpu-async test backend runs
 * groth16_compute in them, so the worker's asynchronous path is tested without a GPU.
 *
 * Threads: lanes_submit and lanes_collect are called by the worker's thread only; fn
 * runs on a lane thread (it must call in->release exactly once). */
#ifndef CUZK_LANES_H
#define CUZK_LANES_H

#include <stddef.h>
#include <stdint.h>

#include "gpuworker/backend.h"

#define LANES_MAX 4

struct lanes;

/* Prove one partition on lane `lane`: fill d->rc, d->fatal, d->err, d->raw, d->t,
 * d->device_s (tag and times are filled by the lanes). */
typedef void (*lanes_fn)(void *ctx, unsigned lane, const struct backend_input *in, struct backend_done *d);

/* Start n (1..LANES_MAX) lane threads. 0, or -errno with err (nothing left running). */
int lanes_start(struct lanes **out, unsigned n, lanes_fn fn, void *ctx, char *err, size_t errlen);
/* Queue a partition (*in copied). 0, or -CUZK_E_INTERNAL when n are already queued
 * and not collected (the caller's depth is n). */
int lanes_submit(struct lanes *l, const struct backend_input *in, void *tag, char *err, size_t errlen);
/* A finished partition within timeout_ns (0: no wait): 1 and *out, or 0. */
int lanes_collect(struct lanes *l, uint64_t timeout_ns, struct backend_done *out);
/* Finish what is queued, join the threads, free. Accepts NULL. */
void lanes_stop(struct lanes *l);

#endif
