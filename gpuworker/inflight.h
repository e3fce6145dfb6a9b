/* inflight.h — the asynchronous half of a gpuworker backend (backend.h, submit/collect):
 * n host threads ("in-flight threads": up to n partitions in flight) that each run
 * one partition at a time through the backend's blocking prove function, fed by a FIFO
 * and returning results in the order they finish. The CUDA backend runs one in-flight
 * thread per gpu_dev (so the copy of one
 * partition overlaps the kernels of the other); the cpu-async test backend runs
 * groth16_compute in them, so the worker's asynchronous path is tested without a GPU.
 *
 * Threads: inflight_submit and inflight_collect are called by the worker's thread only; fn
 * runs on an in-flight thread (it must call in->release exactly once). */
#ifndef CUZK_INFLIGHT_H
#define CUZK_INFLIGHT_H

#include <stddef.h>
#include <stdint.h>

#include "gpuworker/backend.h"

#define INFLIGHT_MAX 4

struct inflight;

/* Prove one partition on in-flight thread `thread_idx`: fill d->rc, d->fatal, d->err, d->raw, d->t,
 * d->device_s (tag and times are filled by inflight.c). */
typedef void (*inflight_fn)(void *ctx, unsigned thread_idx, const struct backend_input *in,
                            struct backend_done *d);

/* Start n (1..INFLIGHT_MAX) in-flight threads. 0, or -errno with err (nothing left running). */
int inflight_start(struct inflight **out, unsigned n, inflight_fn fn, void *ctx, char *err, size_t errlen);
/* Queue a partition (*in copied). 0, or -CUZK_E_INTERNAL when n are already queued
 * and not collected (the caller's depth is n). */
int inflight_submit(struct inflight *l, const struct backend_input *in, void *tag, char *err, size_t errlen);
/* A finished partition within timeout_ns (0: no wait): 1 and *out, or 0. */
int inflight_collect(struct inflight *l, uint64_t timeout_ns, struct backend_done *out);
/* Finish what is queued, join the threads, free. Accepts NULL. */
void inflight_stop(struct inflight *l);

#endif
