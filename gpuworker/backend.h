/* backend.h — how cuzk-gpuworker proves one partition on its device: a small table of
 * operations, so the CUDA backend plugs in where the CPU one is.
 *
 * The worker owns the partition (PROVING) and hands the backend the partition's
 * pinned buffer in place (layout in pipeline.h): a, b, c (Montgomery) and the witness
 * values. The backend calls in->release exactly once, as soon as it no longer reads
 * the buffer (CUDA: after the H2D copies; CPU: after the last MSM), so the worker can
 * return the buffer to the pool while the proof is still being computed.
 *
 * Two ways to run a partition:
 *   - synchronous (`prove`, the CPU backend): one call per partition on the worker's
 *     thread, which spreads the work over its --threads.
 *   - asynchronous (`submit` / `collect`, `depth` > 0: the CUDA backend): the worker
 *     keeps up to `depth` partitions in flight, so the copy of partition N+1 overlaps
 *     the kernels of N. Chosen over "submit/collect inside one device call" because
 *     gpu_prove (gpu.h) is one blocking call per partition: the backend runs `depth`
 *     in-flight threads (inflight.h), each with its own gpu_dev (streams, events,
 *     scratch) on the same device, sharing the device-resident circuits; the GPU
 *     overlaps their copies and kernels. in->release is then called on an in-flight
 *     thread (it must be
 *     thread-safe: the worker's frees the pool buffer with atomics only).
 *     The worker keeps in->z valid until the partition is collected (it drains the
 *     in-flight threads before anything could close that zkey: another circuit, a circuits
 *     request).
 *
 * Device faults: a result with `fatal` set means the device context is unusable (a
 * sticky CUDA error, an out-of-memory that eviction cannot cure): the worker logs the
 * text and exits non-zero without failing the partitions it holds, so cuzkd restarts
 * it and retries them (their attempts count: --max-attempts). */
#ifndef CUZK_BACKEND_H
#define CUZK_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "zk/groth16.h"
#include "zk/zkey.h"

struct backend;

struct backend_params {
    unsigned threads; /* CPU threads (CPU backend), host threads (CUDA) */
    int device;       /* device ordinal: from --backend cuda:N, else the worker index */
    void *slab;       /* the pool's buffers, for cudaHostRegister */
    uint64_t slab_size;
};

/* A zkey file's identity, as the stage zkey cache keys it (pipeline.h): a replaced
 * or rewritten file is another key, so a stale device copy is never used. */
struct backend_key {
    uint64_t dev, ino, size;
    int64_t mtime_sec, mtime_nsec;
};

/* The key of a file: from its stat (st_dev, st_ino, st_size, &st_mtim) or from a stage
 * zkey cache entry's copy of them. */
void backend_key_of(struct backend_key *k, dev_t dev, ino_t ino, off_t size, const struct timespec *mtim);
/* Whether two keys name the same file in the same state. */
bool backend_key_equal(const struct backend_key *a, const struct backend_key *b);

struct backend_input {
    const zkey *z;
    uint64_t *a, *b, *c;   /* domain_size elements each, in the buffer; consumed */
    const uint8_t *values; /* nvars canonical scalars, in the buffer */
    void (*release)(void *arg);
    void *release_arg;
    struct backend_key key; /* identity of z's file (device-resident circuits) */
};

/* One finished partition of an asynchronous backend (collect). */
struct backend_done {
    void *tag; /* submit's tag */
    int rc;    /* 0 or negative (-errno / -CUZK_E_*) with err */
    int fatal; /* the device is unusable: exit, cuzkd restarts us */
    groth16_raw raw;
    groth16_timings t;         /* step times, device-timed (CUDA: ntt and each msm_* from
                                * the kernels' own event pairs) */
    double device_s;           /* the partition's device time (copies + kernels, events) */
    uint64_t begin_ns, end_ns; /* CLOCK_MONOTONIC: its in-flight thread started / finished it */
    /* The span the device had the partition's work, on CLOCK_MONOTONIC (CUDA: events
     * at its first copy and after its last device-to-host copy, gpu_prove_times; CPU:
     * the compute section). 0, 0: none (failed before it ran). The worker's gpu_busy_ns
     * and gap histogram (busy.h). */
    uint64_t dev_begin_ns, dev_end_ns;
    uint64_t busy_total_ns; /* the backend's time with at least one partition in
                              * progress (union over its in-flight threads), cumulative, as of this
                              * completion: the worker's lane_occupy_ns (host clock: circuit
                              * loads, host round trips, the G2 join included) */
    char err[512];
};

struct backend_ops {
    const char *name;
    /* 0 or -errno / -CUZK_E_* with err. */
    int (*init)(struct backend *be, const struct backend_params *p, char *err, size_t errlen);
    /* Synchronous backends: the five MSM results before blinding; t gets the step
     * times (ntt, msm_*). Calls in->release once, on success and on failure. 0 or
     * negative with err. NULL for asynchronous backends. */
    int (*prove)(struct backend *be, const struct backend_input *in, groth16_raw *raw, groth16_timings *t,
                 char *err, size_t errlen);
    void (*fini)(struct backend *be);
    /* Asynchronous backends (depth > 0): submit queues a partition (the backend copies
     * *in); the caller never has more than depth submitted and not collected. 0, or
     * negative with err (nothing queued; in->release not called). collect waits up to
     * timeout_ns (0: do not wait) for a finished one: 1 (*out filled; in->release has
     * been called), 0 (none yet). */
    unsigned depth;
    int (*submit)(struct backend *be, const struct backend_input *in, void *tag, char *err, size_t errlen);
    int (*collect)(struct backend *be, uint64_t timeout_ns, struct backend_done *out);
    /* Optional: the circuits table (pipeline.h, "Circuits") — action PIPE_CIRCUIT_PRELOAD
     * (make z's bases resident and keep them) or PIPE_CIRCUIT_EVICT (drop them). Only
     * called with nothing in flight. 0, or negative with err; *fatal set when the
     * device is unusable (the worker exits as for a fatal result). */
    int (*circuit)(struct backend *be, uint32_t action, const zkey *z, const struct backend_key *key,
                   int *fatal, char *err, size_t errlen);
};

struct backend {
    const struct backend_ops *ops;
    struct backend_params params;
    void *priv; /* the backend's own state */
    /* Set by init: 1 when a thread waiting for the device sleeps (CUDA: the context's
     * cudaDeviceScheduleBlockingSync), 0 when it spins or there is no device. */
    int device_wait_blocks;
    /* Set by init where the backend has a PCI device (CUDA): its address, "" otherwise.
     * NVML finds the same device by it (nvml.h), not by an ordinal that
     * CUDA_VISIBLE_DEVICES may have renumbered. */
    char pci_bus_id[32];
};

extern const struct backend_ops backend_cpu_ops;
extern const struct backend_ops backend_cpu_async_ops;    /* tests (backend_cpu.c) */
extern const struct backend_ops backend_cpu_inflight_ops; /* cuzkd's CPU workers (backend_cpu.c) */
#ifdef CUZK_HAVE_CUDA
extern const struct backend_ops backend_cuda_ops;
#endif

/* The backend called name ("cpu", "cpu-async", "cpu-inflight" or its earlier name
 * "cpu-lanes", "cuda"; a ":N" suffix is ignored), or NULL. */
const struct backend_ops *backend_find(const char *name);

/* The backends this build has, for messages (static string). */
const char *backend_list(void);

#endif
