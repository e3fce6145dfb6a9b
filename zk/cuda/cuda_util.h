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
#include "cuzk/curve.h"
#include "cuzk/error.h"
#include "cuzk/field.h"
#include "cuzk/groth16.h"
#include "cuzk/ntt.h"
#include "cuzk/zkey.h"
}
#include "cuzk/gpu.h"

/* Errors that leave the context unusable ("sticky"): the process must exit. */
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
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorContextIsDestroyed: return true;
    default: return false;
    }
}

/* The project's code for a CUDA error: a sticky one -CUZK_E_DEVICE, out of device
 * memory -CUZK_E_DEVICE_NOMEM (the caller may free something and retry: the backend
 * evicts a cached circuit), anything else -CUZK_E_INTERNAL. */
static inline int gpu_err_code(cudaError_t e)
{
    if (gpu_err_sticky(e)) return -CUZK_E_DEVICE;
    return e == cudaErrorMemoryAllocation ? -CUZK_E_DEVICE_NOMEM : -CUZK_E_INTERNAL;
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

/* Every CUDA call goes through CK: on failure the function returns the coded error.
 * Functions using it have `char *err, size_t errlen` in scope and hold device memory
 * only in DevBuf (freed by its destructor on every return path). */
#define CK(call)                                                              \
    do {                                                                      \
        cudaError_t ck_e_ = (call);                                           \
        if (ck_e_ != cudaSuccess) return gpu_fail(ck_e_, #call, err, errlen); \
    } while (0)

/* After a kernel launch: launch configuration errors now, faults at the next sync. */
#define CK_LAUNCH(name) CK(cudaGetLastError())

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
    cudaStream_t stream[2];
    cudaEvent_t ev[4];
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
int gpu_ntt_tables_build(gpu_ntt_tables *t, const field_desc *Fr, unsigned lg, char *err, size_t errlen);
void gpu_ntt_tables_free(gpu_ntt_tables *t);
/* op: GPU_NTT_FORWARD / INVERSE / ODD_COSET on device vector v (n elements), on stream s. */
int gpu_ntt_device(const gpu_ntt_tables *t, uint64_t *v, int op, cudaStream_t s, char *err, size_t errlen);
/* a[i] = a[i] b[i] - c[i], canonical */
int gpu_h_device(enum field_id f, size_t n, uint64_t *a, const uint64_t *b, const uint64_t *c, cudaStream_t s,
                 char *err, size_t errlen);

/* msm.cu: result (jacobian, 3·cl limbs, host) = sum scalars[i]·bases[i] over device
 * arrays (bases affine 2·cl limbs, scalars 4 limbs canonical). Synchronous on s. */
int gpu_msm_device(enum curve_id g, uint64_t *result, const uint64_t *bases, const uint64_t *scalars,
                   size_t count, cudaStream_t s, char *err, size_t errlen);

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
                      cudaStream_t s, char *err, size_t errlen);
GPU_MSM_DECL(g1_bn254)
GPU_MSM_DECL(g2_bn254)
GPU_MSM_DECL(g1_bls12_381)
GPU_MSM_DECL(g2_bls12_381)

#endif
