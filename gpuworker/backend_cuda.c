/* backend_cuda.c — the CUDA backend (backend.h, asynchronous): the kernels of zk/cuda/
 * through their C API (gpu.h), two partitions in flight, circuits resident on the device.
 *
 * Compiled only in CUDA builds (Makefile: CUDA_ON). The CUDA context is created in
 * init, which runs in the exec'd cuzk-gpuworker, never in cuzkd before a fork.
 *
 * In-flight threads. gpu_prove is one blocking call per partition (copies, kernels, results), so
 * the copy of partition N+1 can only overlap the kernels of N if two calls run at
 * once: INFLIGHT_THREADS host threads (inflight.h), each with its own gpu_dev (its own streams,
 * events and scratch) on the same device, take partitions from a small FIFO. The GPU interleaves
 * their copies (copy engines) with the other thread's kernels. A thread calls the
 * partition's release as soon as its copies are complete (gpu_prove's callback).
 *
 * Resident circuits. The bases of each circuit (A, B1, B2, C, H) are loaded once and
 * shared by the in-flight threads (same device, same process: one primary context, so a device
 * pointer of one gpu_dev is valid on the other). A small cache keyed by the zkey
 * file's identity (backend_key: dev, inode, size, mtime — as the stage zkey cache) holds
 * them, least recently used evicted first when gpu_mem_info shows too little free
 * memory for the next one, or when a load fails with -CUZK_E_DEVICE_NOMEM; entries in
 * use by a thread are never evicted, preloaded ones only when nothing else can go.
 *
 * Faults. gpu.h returns -CUZK_E_DEVICE for a sticky error (the context is unusable):
 * the result is marked fatal and the worker exits (backend.h). Out of device memory
 * that eviction cannot cure fails the partition with the text (it would not fit on a
 * fresh context either when nothing else is resident). */
#include "gpuworker/backend.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "zk/gpu.h"
#include "gpuworker/inflight.h"
#include "stage/stage.h"

#define INFLIGHT_THREADS 2
#define CACHE_MAX        8

struct circ {
    int used;
    struct backend_key key;
    gpu_circuit *c;
    gpu_dev *owner; /* the gpu_dev that loaded it (and frees it) */
    size_t bytes;
    uint64_t last_use;
    int pinned; /* preloaded: evicted only when nothing else can go */
    int refs;   /* in-flight threads proving with it now */
};

struct cuda_be {
    int ordinal;
    gpu_dev *dev[INFLIGHT_THREADS]; /* one per in-flight thread; dev[0] also registers the slab */
    struct inflight *inflight;
    pthread_mutex_t mu;      /* cache metadata */
    pthread_mutex_t load_mu; /* one load/eviction at a time (taken before mu) */
    struct circ cache[CACHE_MAX];
    uint64_t clock;
    void *slab; /* registered with dev[0], or NULL */
};

/* What a circuit will take on the device: its points (A, B1 and C, H in G1; B2 in
 * G2; affine, the zkey's own layout) and two domain-size Fr tables for the NTTs. An
 * estimate (the loader may round up): eviction keeps an eighth more free. */
static size_t circuit_estimate(const zkey *z)
{
    size_t g1 = 2u * z->n8q, g2 = 4u * z->n8q, nv = z->nvars, dom = z->domain_size;
    size_t nc = nv > (size_t)z->npublic + 1 ? nv - z->npublic - 1 : 0;

    return nv * (2 * g1 + g2) + nc * g1 + dom * g1 + 2 * dom * z->n8r;
}

/* Out of device memory: gpu.h says so by the CUDA error code (cudaErrorMemoryAllocation
 * -> -CUZK_E_DEVICE_NOMEM), never by the text of err. */
static int is_oom(int rc)
{
    return rc == -CUZK_E_DEVICE_NOMEM;
}

/* The least recently used entry that may go (refs 0), unpinned first; NULL if none.
 * Called with mu held. */
static struct circ *victim(struct cuda_be *cb)
{
    struct circ *v = NULL;

    for (int pass = 0; pass < 2 && !v; pass++)
        for (int i = 0; i < CACHE_MAX; i++) {
            struct circ *e = &cb->cache[i];

            if (!e->used || e->refs || (pass == 0 && e->pinned)) continue;
            if (!v || e->last_use < v->last_use) v = e;
        }
    return v;
}

/* Free one entry (refs 0). Called with load_mu held; takes mu for the metadata. */
static void circ_drop(struct cuda_be *cb, struct circ *e)
{
    gpu_circuit *c;
    gpu_dev *owner;

    pthread_mutex_lock(&cb->mu);
    c = e->c;
    owner = e->owner;
    memset(e, 0, sizeof(*e));
    pthread_mutex_unlock(&cb->mu);
    gpu_circuit_free(owner, c);
}

/* Evict the least recent evictable entry. 1 if one went. load_mu held. */
static int evict_one(struct cuda_be *cb)
{
    struct circ *v;

    pthread_mutex_lock(&cb->mu);
    v = victim(cb);
    pthread_mutex_unlock(&cb->mu);
    if (!v) return 0;
    circ_drop(cb, v);
    return 1;
}

/* The resident circuit of (z, key), loading it with dev on a miss; refs taken. 0, or
 * negative with err (*fatal: the device is unusable). */
static int circ_get(struct cuda_be *cb, gpu_dev *dev, const zkey *z, const struct backend_key *key,
                    struct circ **out, int *fatal, char *err, size_t errlen)
{
    struct circ *e = NULL;
    gpu_circuit *c = NULL;
    size_t need = circuit_estimate(z), fr = 0, tot = 0;
    int rc;

    *fatal = 0;
    pthread_mutex_lock(&cb->load_mu);
    pthread_mutex_lock(&cb->mu);
    for (int i = 0; i < CACHE_MAX; i++)
        if (cb->cache[i].used && backend_key_equal(&cb->cache[i].key, key)) {
            e = &cb->cache[i];
            e->refs++;
            e->last_use = ++cb->clock;
        }
    pthread_mutex_unlock(&cb->mu);
    if (e) {
        pthread_mutex_unlock(&cb->load_mu);
        *out = e;
        return 0;
    }
    /* Room first: by the free memory the driver reports, then by the table's size. */
    for (;;) {
        if ((rc = gpu_mem_info(dev, &fr, &tot))) {
            snprintf(err, errlen, "cudaMemGetInfo failed on device %d (a sticky CUDA error)", cb->ordinal);
            *fatal = 1;
            goto out;
        }
        if (fr >= need + need / 8 || !evict_one(cb)) break;
    }
    for (;;) {
        int full = 1;

        pthread_mutex_lock(&cb->mu);
        for (int i = 0; i < CACHE_MAX; i++)
            if (!cb->cache[i].used) full = 0;
        pthread_mutex_unlock(&cb->mu);
        if (!full || !evict_one(cb)) break;
    }
    for (;;) {
        rc = gpu_circuit_load(dev, z, &c, err, errlen);
        if (!rc || !is_oom(rc) || !evict_one(cb)) break;
    }
    if (rc) {
        *fatal = rc == -CUZK_E_DEVICE;
        if (is_oom(rc)) {
            char tmp[512];

            snprintf(tmp, sizeof(tmp), "%s", err);
            snprintf(err, errlen,
                     "the circuit's bases (about %zu MiB) do not fit in device "
                     "%d's memory (%zu of %zu MiB free, nothing left to evict): %s",
                     need >> 20, cb->ordinal, fr >> 20, tot >> 20, tmp);
        }
        goto out;
    }
    pthread_mutex_lock(&cb->mu);
    for (int i = 0; i < CACHE_MAX && !e; i++)
        if (!cb->cache[i].used) e = &cb->cache[i];
    if (e) {
        e->used = 1;
        e->key = *key;
        e->c = c;
        e->owner = dev;
        e->bytes = gpu_circuit_bytes(c);
        e->last_use = ++cb->clock;
        e->pinned = 0;
        e->refs = 1;
    }
    pthread_mutex_unlock(&cb->mu);
    if (!e) {
        /* Every entry is in use by the in-flight threads (CACHE_MAX > INFLIGHT_THREADS: cannot happen). */
        gpu_circuit_free(dev, c);
        snprintf(err, errlen, "device circuit cache full: internal error");
        rc = -CUZK_E_INTERNAL;
        goto out;
    }
    *out = e;
out:
    pthread_mutex_unlock(&cb->load_mu);
    return rc;
}

static void circ_put(struct cuda_be *cb, struct circ *e)
{
    pthread_mutex_lock(&cb->mu);
    e->refs--;
    pthread_mutex_unlock(&cb->mu);
}

/* One partition on in-flight thread `thread_idx` (inflight.h): the circuit, then gpu_prove. */
static void inflight_prove(void *ctx, unsigned thread_idx, const struct backend_input *in,
                           struct backend_done *d)
{
    struct cuda_be *cb = ctx;
    struct circ *e = NULL;

    d->rc = circ_get(cb, cb->dev[thread_idx], in->z, &in->key, &e, &d->fatal, d->err, sizeof(d->err));
    if (d->rc) {
        /* gpu_prove never ran: the buffer is released here (backend.h: once). */
        if (in->release) in->release(in->release_arg);
        return;
    }
    gpu_prove_times pt;
    d->rc = gpu_prove(cb->dev[thread_idx], e->c, in->z, in->values, in->a, in->b, in->c, in->release,
                      in->release_arg, &d->raw, &d->t, &pt, d->err, sizeof(d->err));
    circ_put(cb, e);
    /* the device's own clock: the span for gpu_busy_ns, each MSM's event pair for the
     * msm_*_ns counters (gpu_prove's t has their host wall time) */
    d->device_s = pt.device_s;
    d->dev_begin_ns = pt.begin_ns;
    d->dev_end_ns = pt.end_ns;
    if (d->rc == 0) {
        d->t.msm_a = pt.msm_kernel_s[0];
        d->t.msm_b1 = pt.msm_kernel_s[1];
        d->t.msm_b2 = pt.msm_kernel_s[2];
        d->t.msm_c = pt.msm_kernel_s[3];
        d->t.msm_h = pt.msm_kernel_s[4];
    }
    if (d->rc == -CUZK_E_DEVICE) d->fatal = 1;
}

static void cuda_teardown(struct cuda_be *cb)
{
    inflight_stop(cb->inflight);
    for (int i = 0; i < CACHE_MAX; i++)
        if (cb->cache[i].used) gpu_circuit_free(cb->cache[i].owner, cb->cache[i].c);
    if (cb->slab) gpu_host_unregister(cb->dev[0], cb->slab);
    for (int i = INFLIGHT_THREADS - 1; i >= 0; i--)
        if (cb->dev[i]) gpu_close(cb->dev[i]);
    pthread_mutex_destroy(&cb->load_mu);
    pthread_mutex_destroy(&cb->mu);
    free(cb);
}

static int cuda_init(struct backend *be, const struct backend_params *p, char *err, size_t errlen)
{
    struct cuda_be *cb;
    int n = 0, rc;
    char e2[512];

    be->params = *p;
    be->priv = NULL;
    be->pci_bus_id[0] = 0;
    /* No driver, no GPU, or a driver this build's runtime cannot use: the sentence
     * names the CUDA error and the fix (gpu_device_probe), never just "no device". */
    if (gpu_device_probe(&n, e2, sizeof(e2))) {
        snprintf(err, errlen, "%s", e2);
        return -ENODEV;
    }
    if (p->device < 0 || p->device >= n) {
        snprintf(err, errlen,
                 "no CUDA device %d: the driver lists %d device(s), 0 to %d "
                 "(check CUDA_VISIBLE_DEVICES and cuzkd --devices)",
                 p->device, n, n - 1);
        return -ENODEV;
    }
    cb = calloc(1, sizeof(*cb));
    if (!cb) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    cb->ordinal = p->device;
    pthread_mutex_init(&cb->mu, NULL);
    pthread_mutex_init(&cb->load_mu, NULL);
    for (int i = 0; i < INFLIGHT_THREADS; i++) {
        rc = gpu_open(p->device, &cb->dev[i], e2, sizeof(e2));
        if (rc) {
            cb->dev[i] = NULL;
            snprintf(err, errlen, "CUDA device %d: opening in-flight thread %d: %s", p->device, i, e2);
            cuda_teardown(cb);
            return rc;
        }
        /* The in-flight threads share the device's free memory: each MSM budgets 1/INFLIGHT_THREADS of it. */
        gpu_set_sharers(cb->dev[i], INFLIGHT_THREADS);
    }
    /* Whether a thread waiting for the device sleeps (the worker publishes it as a gauge:
     * its CPU time would show spinning otherwise). */
    be->device_wait_blocks = gpu_blocking_sync(cb->dev[0]) ? 1 : 0;
    (void)gpu_pci_bus_id(cb->dev[0], be->pci_bus_id, sizeof(be->pci_bus_id)); /* "": NVML by index */
    /* The pool's buffers, pinned once for the whole life of the worker: the copies
     * then read the shared memory by DMA. Without it (memlock limit) they still work,
     * staged through the driver's pinned bounce buffers, slower: say so, go on. */
    if (p->slab && p->slab_size) {
        rc = gpu_host_register(cb->dev[0], p->slab, p->slab_size, e2, sizeof(e2));
        if (rc == -CUZK_E_DEVICE) {
            snprintf(err, errlen, "CUDA device %d: registering the buffer pool: %s", p->device, e2);
            cuda_teardown(cb);
            return rc;
        }
        if (rc)
            fprintf(stderr,
                    "cuzk-gpuworker: warning: the buffer pool (%llu MiB) could not be "
                    "pinned for DMA (%s); copies will be staged and slower: raise "
                    "LimitMEMLOCK / ulimit -l\n",
                    (unsigned long long)(p->slab_size >> 20), e2);
        else
            cb->slab = p->slab;
    }
    rc = inflight_start(&cb->inflight, INFLIGHT_THREADS, inflight_prove, cb, err, errlen);
    if (rc) {
        cuda_teardown(cb);
        return rc;
    }
    be->priv = cb;
    return 0;
}

static int cuda_submit(struct backend *be, const struct backend_input *in, void *tag, char *err,
                       size_t errlen)
{
    return inflight_submit(((struct cuda_be *)be->priv)->inflight, in, tag, err, errlen);
}

static int cuda_collect(struct backend *be, uint64_t timeout_ns, struct backend_done *out)
{
    return inflight_collect(((struct cuda_be *)be->priv)->inflight, timeout_ns, out);
}

/* Preload: load and keep (pinned); evict: drop it (nothing is in flight: backend.h). */
static int cuda_circuit(struct backend *be, uint32_t action, const zkey *z, const struct backend_key *key,
                        int *fatal, char *err, size_t errlen)
{
    struct cuda_be *cb = be->priv;
    struct circ *e = NULL;
    int rc = 0;

    *fatal = 0;
    if (action == PIPE_CIRCUIT_PRELOAD) {
        rc = circ_get(cb, cb->dev[0], z, key, &e, fatal, err, errlen);
        if (rc) return rc;
        pthread_mutex_lock(&cb->mu);
        e->pinned = 1;
        e->refs--;
        pthread_mutex_unlock(&cb->mu);
        return 0;
    }
    if (action != PIPE_CIRCUIT_EVICT) return 0;
    pthread_mutex_lock(&cb->load_mu);
    pthread_mutex_lock(&cb->mu);
    for (int i = 0; i < CACHE_MAX; i++)
        if (cb->cache[i].used && backend_key_equal(&cb->cache[i].key, key) && !cb->cache[i].refs)
            e = &cb->cache[i];
    pthread_mutex_unlock(&cb->mu);
    if (e) circ_drop(cb, e);
    pthread_mutex_unlock(&cb->load_mu);
    return rc;
}

static void cuda_fini(struct backend *be)
{
    if (be->priv) cuda_teardown(be->priv);
    be->priv = NULL;
}

const struct backend_ops backend_cuda_ops = {
    .name = "cuda",
    .init = cuda_init,
    .prove = NULL,
    .fini = cuda_fini,
    .depth = INFLIGHT_THREADS,
    .submit = cuda_submit,
    .collect = cuda_collect,
    .circuit = cuda_circuit,
};
