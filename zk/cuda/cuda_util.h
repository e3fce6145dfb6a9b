/* cuda_util.h — what the .cu files of zk/cuda/ share (C++, nvcc only): the project's C
 * headers with C linkage, error reporting, device buffers, the device struct, and the
 * entry points of msm.cu and ntt.cu used by gpu_api.cu. */
#ifndef CUZK_CUDA_UTIL_H
#define CUZK_CUDA_UTIL_H

#include <cuda_runtime.h>
#include <stdio.h>
#if defined(__x86_64__)
#include <x86intrin.h> /* before the extern "C" block: field.h includes it on x86-64 */
#endif

extern "C" {
#include "zk/curve.h"
#include "base/error.h"
#include "zk/field.h"
#include "zk/groth16.h"
#include "zk/ntt.h"
#include "zk/zkey.h"
}
#include "zk/gpu.h"

/* Errors that leave the context unusable ("sticky"): the process must exit. The list
 * is what the CUDA runtime documents as corrupting the context (every later call
 * returns the same error); anything it misses is caught by gpu_ctx_dead's probe. */
static inline bool gpu_err_sticky(cudaError_t e)
{
    switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorECCUncorrectable:
    case cudaErrorNvlinkUncorrectable:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorUnknown:
    case cudaErrorDeviceUninitialized:
    case cudaErrorCudartUnloading:
    case cudaErrorContextIsDestroyed: return true;
    default: return false;
    }
}

/* After a failed call that is not out-of-memory: is the context still alive? A sticky
 * error is returned again by every later call on the context, so a query of the legacy
 * stream (cheap, never waits) tells: success or cudaErrorNotReady means it is usable.
 * Without this probe a dead context (an error code the list above misses) would fail
 * partition after partition instead of the worker exiting 111 for a restart. */
static inline bool gpu_ctx_dead(void)
{
    cudaError_t q = cudaStreamQuery(0);
    if (q == cudaSuccess || q == cudaErrorNotReady) return false;
    (void)cudaGetLastError();
    return true;
}

/* The project's code for a CUDA error: a sticky one (or any error after which the
 * context is found dead) -CUZK_E_DEVICE, out of device memory -CUZK_E_DEVICE_NOMEM (the
 * caller may free something and retry: the backend evicts a cached circuit), anything
 * else -CUZK_E_INTERNAL.
 *
 * A non-sticky error is cleared here (cudaGetLastError resets the thread's last-error
 * state): the runtime keeps the error of any failed call until it is read, and
 * CK_LAUNCH reads it after the next kernel launch, so an out-of-memory that the caller
 * handles (evict, retry) would otherwise be reported again by an unrelated launch. */
static inline int gpu_err_code(cudaError_t e)
{
    if (gpu_err_sticky(e)) return -CUZK_E_DEVICE;
    (void)cudaGetLastError();
    if (e == cudaErrorMemoryAllocation) return -CUZK_E_DEVICE_NOMEM;
    return gpu_ctx_dead() ? -CUZK_E_DEVICE : -CUZK_E_INTERNAL;
}

/* err <- "what: CUDA error text (name)"; returns gpu_err_code(e). */
static inline int gpu_fail(cudaError_t e, const char *what, char *err, size_t errlen)
{
    if (err && errlen)
        snprintf(err, errlen, "%s: %s%s (%s)", what,
                 e == cudaErrorMemoryAllocation ? "out of device memory: " : "", cudaGetErrorString(e),
                 cudaGetErrorName(e));
    return gpu_err_code(e);
}

#define CK_STR_(x) #x
#define CK_STR(x)  CK_STR_(x)
/* Every CUDA call goes through CK: on failure the function returns the coded error,
 * its sentence naming the expression, the file and the line ("cudaMalloc(&p, n) at
 * zk/cuda/ntt.cu:102: out of device memory: ..."). Functions using it have `char
 * *err, size_t errlen` in scope and hold device memory only in DevBuf (freed by its
 * destructor on every return path). */
#define CK(call)                                                                           \
    do {                                                                                   \
        cudaError_t ck_e_ = (call);                                                        \
        if (ck_e_ != cudaSuccess) return gpu_fail(ck_e_, #call " at " CK_AT, err, errlen); \
    } while (0)
#define CK_AT __FILE__ ":" CK_STR(__LINE__)

/* After a kernel launch: launch configuration errors now, faults at the next sync.
 * cudaGetLastError returns the oldest unread error of this thread, not necessarily the
 * launch's: gpu_err_code clears every handled error, so the only one left is this
 * launch's own. */
#define CK_LAUNCH(name)                                                                             \
    do {                                                                                            \
        cudaError_t ck_e_ = cudaGetLastError();                                                     \
        if (ck_e_ != cudaSuccess) return gpu_fail(ck_e_, "kernel " name " at " CK_AT, err, errlen); \
    } while (0)

/* Free device memory for sizing decisions (MSM chunks, the G2 overlap): cudaMemGetInfo
 * plus the stream-ordered pool's idle reserve (reserved, not in use: with the release
 * threshold at UINT64_MAX a gpu_dev's last MSM scratch stays reserved and cudaMemGetInfo
 * counts it as used, though the next stream-ordered allocation reuses it). The pool
 * is the current device's default one (gpu_open's). */
static inline cudaError_t gpu_free_bytes(size_t *free_bytes, size_t *total_bytes)
{
    int dev = 0;
    cudaMemPool_t pool;
    uint64_t reserved = 0, used = 0; // the attributes are 64-bit (cuuint64_t)
    cudaError_t e = cudaMemGetInfo(free_bytes, total_bytes);
    if (e != cudaSuccess) return e;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetDefaultMemPool(&pool, dev) != cudaSuccess ||
        cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved) != cudaSuccess ||
        cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used) != cudaSuccess) {
        (void)cudaGetLastError(); // the pool figures are a refinement: without them, the plain reading
        return cudaSuccess;
    }
    if (reserved > used) *free_bytes += (size_t)(reserved - used);
    return cudaSuccess;
}

/* cudaMalloc, and on out-of-memory the current device's pool trimmed (its idle reserve
 * is invisible to cudaMalloc) and one more try, before a caller gives up or evicts a
 * circuit. */
static inline cudaError_t gpu_malloc_trim(void **p, size_t bytes)
{
    int dev = 0;
    cudaMemPool_t pool;
    cudaError_t e = cudaMalloc(p, bytes);
    if (e != cudaErrorMemoryAllocation) return e;
    (void)cudaGetLastError();
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetDefaultMemPool(&pool, dev) != cudaSuccess ||
        cudaMemPoolTrimTo(pool, 0) != cudaSuccess) {
        (void)cudaGetLastError();
        return cudaErrorMemoryAllocation;
    }
    return cudaMalloc(p, bytes);
}

/* Stream-ordered device allocation, freed when the holder goes out of scope. */
struct DevBuf {
    void *p = nullptr;
    cudaStream_t s = 0;
    DevBuf() = default;
    DevBuf(const DevBuf &) = delete;
    DevBuf &operator=(const DevBuf &) = delete;
    ~DevBuf()
    {
        release();
    }
    void release()
    {
        if (p) (void)cudaFreeAsync(p, s);
        p = nullptr;
    }
    cudaError_t alloc(size_t bytes, cudaStream_t st)
    {
        release();
        s = st;
        return cudaMallocAsync(&p, bytes ? bytes : 8, st);
    }
    template <typename T> T *as() const
    {
        return static_cast<T *>(p);
    }
};

/* Grid for n threads of `block` each (n > 0). */
static inline unsigned gpu_grid(size_t n, unsigned block)
{
    return (unsigned)((n + block - 1) / block);
}

/* NTT tables of one domain on the device. */
struct gpu_ntt_tables {
    enum field_id f;
    unsigned lg;
    uint64_t *tw, *twi, *cs; /* n elements each: forward and inverse twiddles, coset^i / n */
    uint64_t ninv[4];        /* 1/n, Montgomery */
};

struct gpu_dev {
    int ordinal;
    unsigned sharers; /* gpu_devs sharing this device's free memory (gpu_set_sharers; >= 1) */
    int blocking;     /* 1: the host thread sleeps in a synchronize (cudaDeviceScheduleBlockingSync) */
    cudaStream_t stream[2];
    cudaEvent_t ev[4];        /* copies / NTT timing (cudaEventBlockingSync: a wait sleeps) */
    cudaEvent_t ev_msm[10];   /* each MSM of a partition: begin, end (after its D2H copy) */
    cudaEvent_t ev_anchor;    /* gpu_prove's anchor on the host clock (gpu_prove_times) */
    cudaMemPool_t pool;       /* the device's default pool (stream-ordered allocations) */
    gpu_ntt_tables ntt_cache; /* tables of the last gpu_ntt domain (tw == NULL: none) */
    char name[256];
};

struct gpu_circuit {
    const zkey *z;
    uint64_t *a, *b1, *b2, *c, *h; /* point sections as in the zkey (affine Montgomery) */
    gpu_ntt_tables ntt;
    size_t bytes;
};

/* ntt.cu */
/* Builds the tables on the host and copies them on stream s, then synchronizes s (see
 * gpu_upload in gpu_api.cu for why never on the legacy stream). */
int gpu_ntt_tables_build(gpu_ntt_tables *t, const field_desc *Fr, unsigned lg, cudaStream_t s, char *err,
                         size_t errlen);
void gpu_ntt_tables_free(gpu_ntt_tables *t);
/* op: GPU_NTT_FORWARD / INVERSE / ODD_COSET on device vector v (n elements), on stream s. */
int gpu_ntt_device(const gpu_ntt_tables *t, uint64_t *v, int op, cudaStream_t s, char *err, size_t errlen);
/* a[i] = a[i] b[i] - c[i], canonical */
int gpu_h_device(enum field_id f, size_t n, uint64_t *a, const uint64_t *b, const uint64_t *c, cudaStream_t s,
                 char *err, size_t errlen);

/* Host -> device copy on stream s, complete when it returns: a copy that kernels on
 * another stream of this device read (circuit bases, NTT tables). gpu_api.cu. */
int gpu_upload(void *dst, const void *src, size_t bytes, cudaStream_t s, char *err, size_t errlen);

/* msm.cu: result (jacobian, 3·cl limbs, host) = sum scalars[i]·bases[i] over device
 * arrays (bases affine 2·cl limbs, scalars 4 limbs canonical). Synchronous on s.
 * sharers: how many callers share the device's free memory (the scratch budget is split).
 * done (may be NULL): recorded on s right after the last device-to-host copy of the
 * windows, so that an event pair around the call times the device's part alone. */
int gpu_msm_device(enum curve_id g, uint64_t *result, const uint64_t *bases, const uint64_t *scalars,
                   size_t count, unsigned sharers, cudaStream_t s, cudaEvent_t done, char *err,
                   size_t errlen);

/* msm.cu: the CUB primitives the MSM uses, compiled once (CUB's radix sort is a large
 * part of a .cu's compile time); same arguments as cub::DeviceRadixSort::SortPairs,
 * cub::DeviceScan::ExclusiveSum, cub::DeviceReduce::Sum (temp NULL: size query). */
cudaError_t gpu_sort_pairs_u32(void *temp, size_t &temp_bytes, const uint32_t *keys_in, uint32_t *keys_out,
                               const uint32_t *vals_in, uint32_t *vals_out, int n, int begin_bit, int end_bit,
                               cudaStream_t s);
cudaError_t gpu_exclusive_sum_u32(void *temp, size_t &temp_bytes, const uint32_t *in, uint32_t *out, int n,
                                  cudaStream_t s);
cudaError_t gpu_sum_u32(void *temp, size_t &temp_bytes, const uint32_t *in, uint32_t *out, int n,
                        cudaStream_t s);

/* one instance per group (msm_GROUP.cu) */
#define GPU_MSM_DECL(sfx)                                                                             \
    int gpu_msm_##sfx(uint64_t *result, const uint64_t *bases, const uint64_t *scalars, size_t count, \
                      unsigned sharers, cudaStream_t s, cudaEvent_t done, char *err, size_t errlen);
GPU_MSM_DECL(g1_bn254)
GPU_MSM_DECL(g2_bn254)
GPU_MSM_DECL(g1_bls12_381)
GPU_MSM_DECL(g2_bls12_381)

#endif
