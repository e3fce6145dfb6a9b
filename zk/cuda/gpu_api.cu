// gpu_api.cu — the C API of zk/gpu.h: devices, resident circuits, gpu_prove
// (groth16_compute's math on the device), and the gpu_msm / gpu_ntt building blocks.
//
// A gpu_dev is used by one host thread at a time (the worker's prove loop; gpu_prove
// runs its G2 MSM on the second stream from a thread of its own, joined before it
// returns); every call here is synchronous when it returns.
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <thread>

#include "cuda_util.h"
#include "zk/curve.h"
#include "msm_logic.h"
#include "base/os.h"

extern "C" int gpu_device_count(void)
{
    int n = 0;
    return gpu_device_probe(&n, nullptr, 0) ? 0 : n;
}

// "CUDA 12.8" from a version number (1000 major + 10 minor).
static void cuda_ver(char *b, size_t len, int v)
{
    snprintf(b, len, "CUDA %d.%d", v / 1000, v % 1000 / 10);
}

// Why the runtime found no usable device, as a sentence an operator can act on. The
// statically linked runtime loads the driver (libcuda.so.1) itself and reports a missing
// library and a too old one alike as cudaErrorInsufficientDriver: dlopen tells them
// apart, and cudaDriverGetVersion says what the driver supports.
static void probe_why(cudaError_t e, char *why, size_t len)
{
    char rt[32], dv[32];
    int rv = 0, drv = 0;
    (void)cudaRuntimeGetVersion(&rv);
    (void)cudaDriverGetVersion(&drv);
    (void)cudaGetLastError();
    cuda_ver(rt, sizeof rt, rv);
    cuda_ver(dv, sizeof dv, drv);
    if (e == cudaErrorNoDevice) {
        snprintf(why, len,
                 "no CUDA device: the NVIDIA driver lists no GPU (cudaErrorNoDevice): check nvidia-smi and "
                 "CUDA_VISIBLE_DEVICES, or use --devices cpu:N");
        return;
    }
    if (e == cudaErrorInsufficientDriver) {
        void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
        if (!h) {
            snprintf(
                why, len,
                "no CUDA device: no NVIDIA driver (libcuda.so.1 not found; cudaErrorInsufficientDriver): "
                "install the driver (nvidia-smi must list the GPUs), or use --devices cpu:N");
            return;
        }
        dlclose(h); // never initialised by us: unloading is safe
        snprintf(why, len,
                 "the NVIDIA driver supports %s, older than this build's runtime (%s) "
                 "(cudaErrorInsufficientDriver): update the driver, or build with an older CUDA toolkit",
                 drv ? dv : "no CUDA version it would tell", rt);
        return;
    }
    snprintf(why, len,
             "the CUDA driver cannot be used: %s (%s; driver %s, runtime %s): check nvidia-smi, dmesg (the "
             "kernel module) and the permissions of /dev/nvidia*",
             cudaGetErrorString(e), cudaGetErrorName(e), drv ? dv : "unknown", rt);
}

extern "C" int gpu_device_probe(int *count, char *why, size_t len)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    *count = 0;
    if (e == cudaSuccess && n > 0) {
        *count = n;
        return 0;
    }
    if (e == cudaSuccess) e = cudaErrorNoDevice;
    (void)cudaGetLastError(); // handled here: never seen by a later CK_LAUNCH
    if (why && len) probe_why(e, why, len);
    return e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver ? -CUZK_E_UNSUPPORTED : -CUZK_E_DEVICE;
}

extern "C" void gpu_close(gpu_dev *d)
{
    if (!d) return;
    (void)cudaSetDevice(d->ordinal);
    gpu_ntt_tables_free(&d->ntt_cache);
    for (int i = 0; i < 4; i++)
        if (d->ev[i]) (void)cudaEventDestroy(d->ev[i]);
    for (int i = 0; i < 10; i++)
        if (d->ev_msm[i]) (void)cudaEventDestroy(d->ev_msm[i]);
    if (d->ev_anchor) (void)cudaEventDestroy(d->ev_anchor);
    for (int i = 0; i < 2; i++)
        if (d->stream[i]) (void)cudaStreamDestroy(d->stream[i]);
    free(d);
}

static int gpu_open_impl(gpu_dev *d, int ordinal, char *err, size_t errlen)
{
    int n = 0, rc;
    if ((rc = gpu_device_probe(&n, err, errlen))) return rc;
    if (ordinal < 0 || ordinal >= n) {
        snprintf(err, errlen, "GPU %d does not exist (%d CUDA device%s visible)", ordinal, n,
                 n == 1 ? "" : "s");
        return -CUZK_E_UNSUPPORTED;
    }
    d->ordinal = ordinal;
    d->sharers = 1;
    CK(cudaSetDevice(ordinal));
    // A synchronize sleeps instead of spinning. The default, cudaDeviceScheduleAuto,
    // spins while the process has fewer active contexts than the machine has logical
    // CPUs (always, here): each in-flight thread waiting for its MSM would take a core from the
    // synthesis stages that feed it. The flags belong to the device's primary context;
    // the first gpu_open of the process sets them, a later one (the second in-flight thread, with
    // the context already active) may be refused with cudaErrorSetOnActiveProcess:
    // what matters is what the context has, read back below.
    cudaError_t fe = cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync);
    if (fe != cudaSuccess && fe != cudaErrorSetOnActiveProcess)
        return gpu_fail(fe, "cudaSetDeviceFlags", err, errlen);
    (void)cudaGetLastError();
    unsigned fl = 0;
    CK(cudaGetDeviceFlags(&fl));
    d->blocking = (fl & cudaDeviceScheduleMask) == cudaDeviceScheduleBlockingSync;
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, ordinal));
    snprintf(d->name, sizeof d->name, "%.200s (sm_%d%d, %zu MiB)", prop.name, prop.major, prop.minor,
             (size_t)(prop.totalGlobalMem >> 20));
    for (int i = 0; i < 2; i++) CK(cudaStreamCreateWithFlags(&d->stream[i], cudaStreamNonBlocking));
    // cudaEventBlockingSync: a cudaEventSynchronize on them sleeps. Without it the
    // wait for each partition's copies and NTTs spins whatever the context's flags say,
    // a core taken from synthesis for the whole wait.
    for (int i = 0; i < 4; i++) CK(cudaEventCreateWithFlags(&d->ev[i], cudaEventBlockingSync));
    for (int i = 0; i < 10; i++) CK(cudaEventCreateWithFlags(&d->ev_msm[i], cudaEventBlockingSync));
    CK(cudaEventCreateWithFlags(&d->ev_anchor, cudaEventDefault)); // polled, never waited on
    // Keep freed stream-ordered memory in the pool between calls (each MSM's scratch
    // would otherwise be unmapped and mapped again). Reserved pool memory counts as used
    // in cudaMemGetInfo: gpu_mem_info and a failing circuit load trim the pool first.
    CK(cudaDeviceGetDefaultMemPool(&d->pool, ordinal));
    uint64_t thr = UINT64_MAX;
    CK(cudaMemPoolSetAttribute(d->pool, cudaMemPoolAttrReleaseThreshold, &thr));
    return 0;
}

extern "C" int gpu_open(int ordinal, gpu_dev **out, char *err, size_t errlen)
{
    *out = nullptr;
    gpu_dev *d = (gpu_dev *)calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, errlen, "out of host memory");
        return -CUZK_E_INTERNAL;
    }
    int rc = gpu_open_impl(d, ordinal, err, errlen);
    if (rc) {
        gpu_close(d);
        return rc;
    }
    *out = d;
    return 0;
}

extern "C" int gpu_pci_bus_id(const gpu_dev *d, char *buf, size_t len)
{
    if (len) buf[0] = 0;
    if (len < 13 || cudaDeviceGetPCIBusId(buf, (int)len, d->ordinal) != cudaSuccess) {
        (void)cudaGetLastError();
        if (len) buf[0] = 0;
        return -CUZK_E_DEVICE;
    }
    return 0;
}

extern "C" int gpu_host_register(gpu_dev *d, void *p, size_t len, char *err, size_t errlen)
{
    CK(cudaSetDevice(d->ordinal));
    CK(cudaHostRegister(p, len, cudaHostRegisterPortable));
    return 0;
}

extern "C" int gpu_host_unregister(gpu_dev *d, void *p)
{
    char err[256];
    size_t errlen = sizeof err;
    CK(cudaSetDevice(d->ordinal));
    CK(cudaHostUnregister(p));
    return 0;
}

extern "C" void gpu_set_sharers(gpu_dev *d, unsigned sharers)
{
    d->sharers = sharers ? sharers : 1;
}

extern "C" int gpu_blocking_sync(const gpu_dev *d)
{
    return d->blocking;
}

// Give the pool's reserved but unused memory back, so that cudaMemGetInfo and cudaMalloc
// see it: with the release threshold at UINT64_MAX each gpu_dev's last MSM scratch (GBs at
// 2^24) stays reserved otherwise. Memory of allocations still pending on a stream stays.
static int pool_trim(gpu_dev *d, char *err, size_t errlen)
{
    CK(cudaMemPoolTrimTo(d->pool, 0));
    return 0;
}

extern "C" int gpu_mem_info(gpu_dev *d, size_t *free_bytes, size_t *total_bytes)
{
    char err[256];
    size_t errlen = sizeof err;
    int rc;
    CK(cudaSetDevice(d->ordinal));
    if ((rc = pool_trim(d, err, errlen))) return rc;
    CK(cudaMemGetInfo(free_bytes, total_bytes));
    return 0;
}

// Host -> device, complete on return. Kernels run on cudaStreamNonBlocking streams,
// which do not wait for the legacy stream; and a cudaMemcpy from pageable memory (the
// zkey's mapping, a malloc'd table) may return once the data is staged, before the DMA
// has landed. So the copy goes on an explicit stream that is then synchronized: any
// kernel launched after this returns, on any stream, reads the whole upload.
int gpu_upload(void *dst, const void *src, size_t bytes, cudaStream_t s, char *err, size_t errlen)
{
    if (!bytes) return 0;
    CK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s));
    CK(cudaStreamSynchronize(s));
    return 0;
}

// ---- circuits -----------------------------------------------------------------------

extern "C" size_t gpu_circuit_bytes(const gpu_circuit *c)
{
    return c ? c->bytes : 0;
}

extern "C" void gpu_circuit_free(gpu_dev *d, gpu_circuit *c)
{
    if (!c) return;
    if (d) (void)cudaSetDevice(d->ordinal);
    uint64_t *ps[] = { c->a, c->b1, c->b2, c->c, c->h };
    for (auto p : ps)
        if (p) (void)cudaFree(p);
    gpu_ntt_tables_free(&c->ntt);
    free(c);
}

// cudaMalloc, and on out-of-memory the pool trimmed and one more try: the sharers' MSM
// scratch reserved in the stream-ordered pool is not visible to cudaMalloc.
static int dev_malloc(gpu_dev *d, void **p, size_t bytes, char *err, size_t errlen)
{
    cudaError_t e = cudaMalloc(p, bytes ? bytes : 8);
    if (e == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        int rc = pool_trim(d, err, errlen);
        if (rc) return rc;
        e = cudaMalloc(p, bytes ? bytes : 8);
    }
    if (e != cudaSuccess) {
        *p = nullptr;
        return gpu_fail(e, "cudaMalloc", err, errlen);
    }
    return 0;
}

static int circuit_load_impl(gpu_dev *d, gpu_circuit *c, const zkey *z, char *err, size_t errlen)
{
    const size_t g1 = 2 * ec_cl(z->g1) * 8, g2 = 2 * ec_cl(z->g2) * 8;
    const size_t npriv = z->nvars - z->npublic - 1;
    struct {
        uint64_t **dst;
        const uint8_t *src;
        size_t bytes;
    } secs[] = {
        { &c->a, z->a, (size_t)z->nvars * g1 },       { &c->b1, z->b1, (size_t)z->nvars * g1 },
        { &c->b2, z->b2, (size_t)z->nvars * g2 },     { &c->c, z->c, npriv * g1 },
        { &c->h, z->h, (size_t)z->domain_size * g1 },
    };
    int rc;
    for (auto &s : secs) {
        if ((rc = dev_malloc(d, (void **)s.dst, s.bytes, err, errlen))) return rc;
        // the mapping is only 4-byte aligned: a copy takes any alignment
        if ((rc = gpu_upload(*s.dst, s.src, s.bytes, d->stream[0], err, errlen))) return rc;
        c->bytes += s.bytes;
    }
    rc = gpu_ntt_tables_build(&c->ntt, z->Fr, z->lg_domain, d->stream[0], err, errlen);
    if (rc) return rc;
    c->bytes += (size_t)3 * 32 << z->lg_domain;
    return 0;
}

extern "C" int gpu_circuit_load(gpu_dev *d, const zkey *z, gpu_circuit **out, char *err, size_t errlen)
{
    *out = nullptr;
    CK(cudaSetDevice(d->ordinal));
    if (z->n8r != 32) {
        snprintf(err, errlen, "GPU: scalars of %u bytes are not supported", z->n8r);
        return -CUZK_E_UNSUPPORTED;
    }
    gpu_circuit *c = (gpu_circuit *)calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of host memory");
        return -CUZK_E_INTERNAL;
    }
    c->z = z;
    int rc = circuit_load_impl(d, c, z, err, errlen);
    if (rc) {
        gpu_circuit_free(d, c);
        return rc;
    }
    *out = c;
    return 0;
}

// ---- prove ----------------------------------------------------------------------------

// Milliseconds between two recorded events (after both completed).
static int ev_ms(cudaEvent_t a, cudaEvent_t b, float *ms, char *err, size_t errlen)
{
    CK(cudaEventSynchronize(b));
    CK(cudaEventElapsedTime(ms, a, b));
    return 0;
}

// One MSM on the gpu_dev's second stream in a thread of its own (prove_impl). The thread
// is joined by join() or, on an early return of the caller, by the destructor: declared
// after the device buffers it reads, it goes first, and on any error (of this MSM or
// of the first stream's) it waits for both streams, so that no kernel still reads a
// buffer when the DevBufs free it.
struct G2Side {
    std::thread th;
    gpu_dev *dev = nullptr;
    int rc = 0;
    bool ok = false; // set by the caller once both streams are known idle
    double el = 0;
    char err[512] = "";
    void start(gpu_dev *d, enum curve_id g, uint64_t *out, const uint64_t *bases, const uint64_t *scalars,
               size_t count, unsigned share, cudaEvent_t ev_begin, cudaEvent_t ev_done)
    {
        dev = d;
        th = std::thread([=] {
            double t0 = os_now_s();
            cudaError_t e = cudaSetDevice(d->ordinal); // the current device is per host thread
            if (e == cudaSuccess) e = cudaEventRecord(ev_begin, d->stream[1]);
            rc = e != cudaSuccess ? gpu_fail(e, "cudaSetDevice/cudaEventRecord (G2 side)", err, sizeof err)
                                  : gpu_msm_device(g, out, bases, scalars, count, share, d->stream[1],
                                                   ev_done, err, sizeof err);
            el = os_now_s() - t0;
        });
    }
    void join()
    {
        if (th.joinable()) th.join();
    }
    ~G2Side()
    {
        join();
        if (dev && !ok) {
            (void)cudaStreamSynchronize(dev->stream[1]);
            (void)cudaStreamSynchronize(dev->stream[0]);
            (void)cudaGetLastError(); // the error being returned is the caller's
        }
    }
};

// Milliseconds from event a to event b, both complete (b may precede a: negative).
static int ev_since(cudaEvent_t a, cudaEvent_t b, double *ms, char *err, size_t errlen)
{
    float f = 0;
    CK(cudaEventElapsedTime(&f, a, b));
    *ms = f;
    return 0;
}

static int prove_impl(gpu_dev *d, gpu_circuit *c, const zkey *z, const uint8_t *values, const uint64_t *a,
                      const uint64_t *b, const uint64_t *cc, void (**release)(void *), void *arg,
                      groth16_raw *raw, groth16_timings *t, gpu_prove_times *pt, char *err, size_t errlen)
{
    cudaStream_t s = d->stream[0];
    const size_t n = z->domain_size, vb = (size_t)n * 32, npriv = z->nvars - z->npublic - 1;
    const enum field_id f = z->Fr->id;
    float ms_copy = 0, ms_ntt = 0;
    // The anchor: the stream is idle (the last call was synchronous), so the event
    // completes at once; polled, not waited on, so the host's reading follows the
    // device's timestamp by microseconds. Every event below is placed on the host's
    // clock as anchor_ns + its time since the anchor (float milliseconds: exact to well
    // under a microsecond over a partition's seconds).
    CK(cudaEventRecord(d->ev_anchor, s));
    cudaError_t q;
    while ((q = cudaEventQuery(d->ev_anchor)) == cudaErrorNotReady) {
    }
    CK(q);
    const uint64_t anchor_ns = os_now_ns();
    DevBuf da, db, dc, dv;
    CK(da.alloc(vb, s));
    CK(db.alloc(vb, s));
    CK(dc.alloc(vb, s));
    CK(dv.alloc((size_t)z->nvars * 32, s));
    CK(cudaEventRecord(d->ev[0], s));
    CK(cudaMemcpyAsync(da.p, a, vb, cudaMemcpyHostToDevice, s));
    CK(cudaMemcpyAsync(db.p, b, vb, cudaMemcpyHostToDevice, s));
    CK(cudaMemcpyAsync(dc.p, cc, vb, cudaMemcpyHostToDevice, s));
    CK(cudaMemcpyAsync(dv.p, values, (size_t)z->nvars * 32, cudaMemcpyHostToDevice, s));
    CK(cudaEventRecord(d->ev[1], s));
    // the input buffer goes back to the pool as soon as the copies are done
    CK(cudaEventSynchronize(d->ev[1]));
    if (*release) (*release)(arg);
    *release = nullptr;
    int rc;
    if ((rc = gpu_ntt_device(&c->ntt, da.as<uint64_t>(), GPU_NTT_ODD_COSET, s, err, errlen)) ||
        (rc = gpu_ntt_device(&c->ntt, db.as<uint64_t>(), GPU_NTT_ODD_COSET, s, err, errlen)) ||
        (rc = gpu_ntt_device(&c->ntt, dc.as<uint64_t>(), GPU_NTT_ODD_COSET, s, err, errlen)) ||
        (rc = gpu_h_device(f, n, da.as<uint64_t>(), db.as<uint64_t>(), dc.as<uint64_t>(), s, err, errlen)))
        return rc;
    CK(cudaEventRecord(d->ev[2], s));
    if ((rc = ev_ms(d->ev[0], d->ev[1], &ms_copy, err, errlen)) ||
        (rc = ev_ms(d->ev[1], d->ev[2], &ms_ntt, err, errlen)))
        return rc;
    db.release();
    dc.release();
    double dev = (ms_copy + ms_ntt) / 1e3;
    if (t) t->ntt += ms_ntt / 1e3;
    if (pt) {
        pt->copy_s = ms_copy / 1e3;
        pt->ntt_s = ms_ntt / 1e3;
    }

    const uint64_t *vals = dv.as<uint64_t>();
    struct {
        enum curve_id g;
        uint64_t *out;
        const uint64_t *bases, *scalars;
        size_t count;
        double *slot;
    } jobs[] = {
        { z->g1->id, raw->a, c->a, vals, z->nvars, t ? &t->msm_a : nullptr },
        { z->g1->id, raw->b1, c->b1, vals, z->nvars, t ? &t->msm_b1 : nullptr },
        { z->g2->id, raw->b2, c->b2, vals, z->nvars, t ? &t->msm_b2 : nullptr },
        { z->g1->id, raw->c, c->c, vals + (z->npublic + 1) * 4, npriv, t ? &t->msm_c : nullptr },
        { z->g1->id, raw->h, c->h, da.as<uint64_t>(), n, t ? &t->msm_h : nullptr },
    };
    // The G2 MSM (jobs[2], B2) on the second stream from a second host thread while the
    // four G1 MSMs run on the first: it is the costliest of the five (Fq2 arithmetic),
    // and the G1 kernels fill the device where it leaves room. Each result has its own
    // slot in raw, so the order of the results never depends on which ends first. Only
    // when the free memory gives both MSMs their whole chunk with the device's memory
    // shared by twice the sharers (gmsm_chunk_points); otherwise one after the other.
    size_t fr = 0, tot = 0;
    CK(gpu_free_bytes(&fr, &tot));
    const size_t want = z->nvars < GMSM_MAX_CHUNK ? z->nvars : GMSM_MAX_CHUNK;
    const unsigned share = 2 * d->sharers;
    const bool overlap = gmsm_chunk_points(ec_cl_id(z->g1->id), z->nvars, fr, share) == want &&
        gmsm_chunk_points(ec_cl_id(z->g2->id), z->nvars, fr, share) == want;
    G2Side g2;
    if (overlap)
        g2.start(d, jobs[2].g, jobs[2].out, jobs[2].bases, jobs[2].scalars, jobs[2].count, share,
                 d->ev_msm[4], d->ev_msm[5]);
    for (auto &j : jobs) {
        const int k = (int)(&j - jobs);
        if (overlap && k == 2) continue;
        double t0 = os_now_s();
        CK(cudaEventRecord(d->ev_msm[2 * k], s));
        if ((rc = gpu_msm_device(j.g, j.out, j.bases, j.scalars, j.count, overlap ? share : d->sharers, s,
                                 d->ev_msm[2 * k + 1], err, errlen)))
            return rc; // g2's destructor joins the other thread and waits for both streams
        // synchronous: host wall time of the call (the device's part is the event pair)
        if (j.slot) *j.slot += os_now_s() - t0;
    }
    if (overlap) {
        g2.join();
        if (g2.rc) {
            snprintf(err, errlen, "%s", g2.err);
            return g2.rc;
        }
        if (jobs[2].slot) *jobs[2].slot += g2.el;
    }
    g2.ok = true; // both streams idle: every MSM returned after its final synchronize
    // Each MSM's event pair, and the partition's span: its first copy to the latest
    // MSM's last device-to-host copy (the G2 one may end last, on the other stream).
    double begin_ms = 0, end_ms = 0;
    if ((rc = ev_since(d->ev_anchor, d->ev[0], &begin_ms, err, errlen))) return rc;
    end_ms = begin_ms;
    for (int k = 0; k < 5; k++) {
        double b_ms = 0, e_ms = 0;
        if ((rc = ev_since(d->ev_anchor, d->ev_msm[2 * k], &b_ms, err, errlen)) ||
            (rc = ev_since(d->ev_anchor, d->ev_msm[2 * k + 1], &e_ms, err, errlen)))
            return rc;
        if (pt) pt->msm_kernel_s[k] = (e_ms - b_ms) / 1e3;
        dev += (e_ms - b_ms) / 1e3; // overlapped: device_s may exceed the partition's span
        if (e_ms > end_ms) end_ms = e_ms;
    }
    if (pt) {
        pt->begin_ns = anchor_ns + (uint64_t)(begin_ms > 0 ? begin_ms * 1e6 : 0);
        pt->end_ns = anchor_ns + (uint64_t)(end_ms > 0 ? end_ms * 1e6 : 0);
        pt->device_s = dev;
    }
    return 0;
}

extern "C" int gpu_prove(gpu_dev *d, gpu_circuit *c, const zkey *z, const uint8_t *values, const uint64_t *a,
                         const uint64_t *b, const uint64_t *cc, void (*release)(void *), void *arg,
                         groth16_raw *raw, groth16_timings *t, gpu_prove_times *pt, char *err, size_t errlen)
{
    int rc;
    if (pt) memset(pt, 0, sizeof *pt);
    cudaError_t e = cudaSetDevice(d->ordinal);
    if (e != cudaSuccess)
        rc = gpu_fail(e, "cudaSetDevice", err, errlen);
    else if (z->n8r != 32 || !c) {
        snprintf(err, errlen, "GPU prove: %s", c ? "scalars are not 32 bytes" : "circuit not loaded");
        rc = -CUZK_E_INTERNAL;
    } else {
        rc = prove_impl(d, c, z, values, a, b, cc, &release, arg, raw, t, pt, err, errlen);
    }
    if (release) { // failed before the copies completed: wait for any in flight, then release once
        (void)cudaStreamSynchronize(d->stream[0]);
        release(arg);
    }
    return rc;
}

// ---- building blocks ----------------------------------------------------------------

static int msm_impl(gpu_dev *d, const curve_group *G, uint64_t *result, const uint8_t *bases,
                    const uint8_t *scalars, size_t count, double *kernel_ms, double *copy_ms, char *err,
                    size_t errlen)
{
    cudaStream_t s = d->stream[0];
    const size_t pb = 2 * ec_cl(G) * 8;
    DevBuf db, ds;
    CK(db.alloc(count * pb, s));
    CK(ds.alloc(count * 32, s));
    CK(cudaEventRecord(d->ev[0], s));
    if (count) {
        CK(cudaMemcpyAsync(db.p, bases, count * pb, cudaMemcpyHostToDevice, s));
        CK(cudaMemcpyAsync(ds.p, scalars, count * 32, cudaMemcpyHostToDevice, s));
    }
    CK(cudaEventRecord(d->ev[1], s));
    int rc = gpu_msm_device(G->id, result, db.as<uint64_t>(), ds.as<uint64_t>(), count, d->sharers, s,
                            nullptr, err, errlen);
    if (rc) return rc;
    // device times from events on the stream (the MSM's own host steps between its
    // launches are inside the kernel figure: they delay the stream too)
    CK(cudaEventRecord(d->ev[2], s));
    float ms_copy = 0, ms_kern = 0;
    if ((rc = ev_ms(d->ev[0], d->ev[1], &ms_copy, err, errlen)) ||
        (rc = ev_ms(d->ev[1], d->ev[2], &ms_kern, err, errlen)))
        return rc;
    if (kernel_ms) *kernel_ms = ms_kern;
    if (copy_ms) *copy_ms = ms_copy;
    return 0;
}

extern "C" int gpu_msm(gpu_dev *d, const curve_group *G, uint64_t *result, const uint8_t *bases,
                       const uint8_t *scalars, size_t count, double *kernel_ms, char *err, size_t errlen)
{
    return gpu_msm_timed(d, G, result, bases, scalars, count, kernel_ms, nullptr, err, errlen);
}

extern "C" int gpu_msm_timed(gpu_dev *d, const curve_group *G, uint64_t *result, const uint8_t *bases,
                             const uint8_t *scalars, size_t count, double *kernel_ms, double *copy_ms,
                             char *err, size_t errlen)
{
    CK(cudaSetDevice(d->ordinal));
    uint64_t r[EC_MAX_JAC];
    int rc = msm_impl(d, G, r, bases, scalars, count, kernel_ms, copy_ms, err, errlen);
    if (rc == 0) memcpy(result, r, 3 * ec_cl(G) * 8);
    return rc;
}

extern "C" int gpu_ntt(gpu_dev *d, const field_desc *Fr, unsigned lg, uint64_t *v, int inverse,
                       double *kernel_ms, char *err, size_t errlen)
{
    CK(cudaSetDevice(d->ordinal));
    cudaStream_t s = d->stream[0];
    int rc;
    if (!d->ntt_cache.tw || d->ntt_cache.f != Fr->id || d->ntt_cache.lg != lg) {
        gpu_ntt_tables_free(&d->ntt_cache);
        if ((rc = gpu_ntt_tables_build(&d->ntt_cache, Fr, lg, s, err, errlen))) return rc;
    }
    const size_t vb = (size_t)32 << lg;
    DevBuf dv;
    CK(dv.alloc(vb, s));
    CK(cudaMemcpyAsync(dv.p, v, vb, cudaMemcpyHostToDevice, s));
    CK(cudaEventRecord(d->ev[0], s));
    if ((rc = gpu_ntt_device(&d->ntt_cache, dv.as<uint64_t>(), inverse, s, err, errlen))) return rc;
    CK(cudaEventRecord(d->ev[1], s));
    CK(cudaMemcpyAsync(v, dv.p, vb, cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    float ms = 0;
    if ((rc = ev_ms(d->ev[0], d->ev[1], &ms, err, errlen))) return rc;
    if (kernel_ms) *kernel_ms = ms;
    return 0;
}

// One host-to-device copy of bytes, event-timed: from pinned memory (what the pool's
// registered buffers give a partition's copies) or from malloc'd memory (staged by the
// driver through its own pinned buffers).
static int h2d_impl(gpu_dev *d, size_t bytes, int pinned, double *gbps, void **host, char *err, size_t errlen)
{
    cudaStream_t s = d->stream[0];
    if (pinned) {
        CK(cudaMallocHost(host, bytes));
    } else if (!(*host = malloc(bytes))) {
        snprintf(err, errlen, "h2d: out of host memory for %zu bytes", bytes);
        return -CUZK_E_INTERNAL;
    }
    memset(*host, 0x5a, bytes); // touched: no page faults inside the timed copy
    DevBuf dst;
    CK(dst.alloc(bytes, s));
    CK(cudaEventRecord(d->ev[0], s));
    CK(cudaMemcpyAsync(dst.p, *host, bytes, cudaMemcpyHostToDevice, s));
    CK(cudaEventRecord(d->ev[1], s));
    float ms = 0;
    int rc;
    if ((rc = ev_ms(d->ev[0], d->ev[1], &ms, err, errlen))) return rc;
    *gbps = ms > 0 ? (double)bytes / (ms * 1e6) : 0;
    return 0;
}

extern "C" int gpu_h2d_bandwidth(gpu_dev *d, size_t bytes, int pinned, double *gbps, char *err, size_t errlen)
{
    CK(cudaSetDevice(d->ordinal));
    void *host = nullptr;
    int rc = h2d_impl(d, bytes, pinned, gbps, &host, err, errlen);
    if (host) {
        if (pinned)
            (void)cudaFreeHost(host);
        else
            free(host);
    }
    return rc;
}
