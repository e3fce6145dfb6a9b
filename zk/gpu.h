/* gpu.h — the CUDA kernels (zk/cuda/) as a plain C API, for the CUDA backend
 * (gpuworker/) and the GPU tests (tests/gpu/).
 *
 * BUILD NOTES for the Makefile (owned by the cuda-worker helper; requested here):
 *  1. zk/cuda/NAME.cu are compiled with
 *       $(NVCC) -O2 -std=c++17 -I. -gencode arch=compute_80,code=sm_80 \
 *               -gencode arch=compute_90,code=sm_90 -c
 *     (no -rdc: every kernel is in the .cu that launches it; no -Xcompiler -Wall: the
 *     host pass warns about the device-only #pragma unroll of hd.h). CUB comes with
 *     the toolkit (header-only), nothing to link for it. The .cu files include
 *     zk/cuda/NAME.h headers: add them to the .o dependencies (or use -MMD via
 *     nvcc's -MD); zk/cuda/msm_impl.cuh is included by the four msm_GROUP.cu files
 *     (one per group so that make -j2 compiles them in parallel: each is ~25-45 s of
 *     CPU per architecture, mostly ptxas).
 *  2. Anything that links libcuzk_cuda.a needs, after it:
 *       -L$(CUDA_HOME)/lib64 -lcudart_static -ldl -lrt -lpthread -lstdc++
 *     (the static runtime: no libcudart.so needed at run time, only the driver).
 *     gpu_device_count() returns 0 without a driver, so binaries linked with it still
 *     run on machines without a GPU.
 *  3. tests/gpu/gpu_test.c -> build/tests/gpu/gpu_test, built only when CUDA=1, linked
 *     with every lib + the CUDA libs of 2 (no Check, no tests/unit helpers). NOT run by
 *     make test; bench/gpu-check.sh runs it. It exits 77 (SKIP) when
 *     gpu_device_count() is 0, 1 on a mismatch. Arguments (see its top comment):
 *       gpu_test [--max-lg N] [--bench-lg N]... [--zkey F.zkey --wtns F.wtns]
 *  4. tests/unit/test_gpu_emul.c is an ordinary Check unit test (auto-discovered);
 *     it includes the kernels' logic headers by relative path ("../../zk/cuda/NAME.h"),
 *     so it needs no extra flags and no CUDA.
 *
 * Conventions: every function returns 0 or -CUZK_E_* (base/error.h) and writes
 * a sentence into err (with cudaGetErrorString's text for CUDA failures). A device
 * fault (illegal address, launch failure: a "sticky" error that poisons the context)
 * is returned as -CUZK_E_DEVICE; the caller must then exit the process (the context
 * cannot be used again), the supervisor restarts it. Out of device memory
 * (cudaErrorMemoryAllocation) is -CUZK_E_DEVICE_NOMEM (not sticky: free and retry).
 *
 * Layouts are the host ones: points affine Montgomery in zkey layout (x || y, (0,0) =
 * infinity), results jacobian Montgomery (3*cl limbs), scalars canonical 32-byte LE,
 * Fr vectors 4 limbs Montgomery in natural order. Results equal the CPU backend's
 * bit for bit after normalisation (jacobian results may differ in Z: compare with
 * ec_jac_eq or after ec_jac_to_aff). */
#ifndef CUZK_GPU_H
#define CUZK_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "zk/curve.h"
#include "base/error.h"
#include "zk/field.h"
#include "zk/groth16.h"
#include "zk/zkey.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A sticky device error is -CUZK_E_DEVICE (error.h): the CUDA context is unusable;
 * exit and restart. */

typedef struct gpu_dev gpu_dev;         /* one device: context, streams, events, scratch */
typedef struct gpu_circuit gpu_circuit; /* one circuit's bases resident on the device */

/* Number of usable CUDA devices; 0 when there is no driver or no GPU (never fails). */
int gpu_device_count(void);

/* The usable CUDA devices: 0 with *count > 0; otherwise *count = 0 and a sentence in
 * why (may be NULL) naming the CUDA error (cudaGetErrorName) and what to do:
 * -CUZK_E_UNSUPPORTED for no driver or no GPU (the sentence starts "no CUDA device"),
 * -CUZK_E_DEVICE for a driver that is there but cannot be used (too old for this
 * build's runtime, module not loaded, devices unavailable). */
int gpu_device_probe(int *count, char *why, size_t len);

/* Binds the calling process to device `ordinal`, creates >= 2 streams and scratch.
 * Call it after exec, never before a fork. 0 or -CUZK_E_* with the CUDA error in err. */
int gpu_open(int ordinal, gpu_dev **out, char *err, size_t errlen);
void gpu_close(gpu_dev *d);

/* How many gpu_devs of this process use the same device at once (the backend's in-flight threads):
 * each MSM sizes its scratch from 1/sharers of the free memory (default 1). */
void gpu_set_sharers(gpu_dev *d, unsigned sharers);

/* 1 when a synchronize puts the calling thread to sleep (the context has
 * cudaDeviceScheduleBlockingSync, set by the first gpu_open), 0 when it spins. */
int gpu_blocking_sync(const gpu_dev *d);

/* The device's PCI address, "DDDD:BB:DD.F" (cudaDeviceGetPCIBusId), into buf: how NVML
 * is told which device this is whatever CUDA_VISIBLE_DEVICES renumbered. 0, or
 * -CUZK_E_DEVICE with buf "". */
int gpu_pci_bus_id(const gpu_dev *d, char *buf, size_t len);

/* cudaHostRegister of a host range (the pool slab), once per range. */
int gpu_host_register(gpu_dev *d, void *p, size_t len, char *err, size_t errlen);
int gpu_host_unregister(gpu_dev *d, void *p);

/* cudaMemGetInfo, after giving the stream-ordered pool's unused reservations back (they
 * count as used otherwise). 0 or -CUZK_E_*. */
int gpu_mem_info(gpu_dev *d, size_t *free_bytes, size_t *total_bytes);

/* Copies a zkey's point sections (A, B1, B2, C, H) to device memory (the device layout
 * is the zkey's own: affine Montgomery, so the copy is a plain memcpy). Also builds the
 * NTT tables of the zkey's domain on the device. -CUZK_E_DEVICE_NOMEM when it does
 * not fit (nothing is left allocated then). */
int gpu_circuit_load(gpu_dev *d, const zkey *z, gpu_circuit **out, char *err, size_t errlen);
size_t gpu_circuit_bytes(const gpu_circuit *c);
void gpu_circuit_free(gpu_dev *d, gpu_circuit *c);

/* A partition's device timeline, from CUDA events (gpu_prove). The span runs from an
 * event recorded before its first host-to-device copy to the latest of the events
 * recorded after each MSM's device-to-host copy of its windows: the time the device
 * had this partition's work, without the host's round trips before and after.
 * begin_ns/end_ns put it on the host's CLOCK_MONOTONIC (os_now_ns) through an anchor
 * event recorded on the idle stream at the start of the call and polled to completion
 * (a few microseconds of error), so that spans of different in-flight threads can be joined.
 * msm_kernel_s: each MSM's own event pair (its kernels, host steps between launches
 * and its D2H copy), beside groth16_timings' msm_* which are host wall time around
 * each synchronous MSM call. device_s: copies + NTT + the five MSMs, event-timed
 * (overlapped G2: may exceed end - begin). */
typedef struct gpu_prove_times {
    uint64_t begin_ns, end_ns;
    double msm_kernel_s[5]; /* a, b1, b2, c, h */
    double copy_s, ntt_s, device_s;
} gpu_prove_times;

/* One partition, the same math as groth16_compute (zk/groth16.c): H2D copies of a, b,
 * c (Montgomery, domain_size x 4 limbs) and values (nvars canonical 32-byte scalars);
 * release(arg) (may be NULL) is called as soon as the copies have completed (a CUDA
 * event), before the kernels finish — on failure too, exactly once; then
 * iNTT/coset/NTT, h = a*b - c, the five MSMs; raw gets the five jacobian Montgomery
 * results (same format as the CPU backend). t (may be NULL) gets step times in
 * seconds: ntt event-timed (copies excluded), msm_a .. msm_h host wall time around
 * each MSM call (the kernels' own event times are in pt). pt (may be NULL): the
 * device timeline above. 0 or -CUZK_E_* with err. */
int gpu_prove(gpu_dev *d, gpu_circuit *c, const zkey *z, const uint8_t *values, const uint64_t *a,
              const uint64_t *b, const uint64_t *cc, void (*release)(void *), void *arg, groth16_raw *raw,
              groth16_timings *t, gpu_prove_times *pt, char *err, size_t errlen);

/* Host-to-device bandwidth: one copy of bytes from pinned (cudaMallocHost) or from
 * malloc'd memory, event-timed, in GB/s (1e9 bytes). 0 or -CUZK_E_*. */
int gpu_h2d_bandwidth(gpu_dev *d, size_t bytes, int pinned, double *gbps, char *err, size_t errlen);

/* Building blocks for tests and bench/gpu-check.sh (host arrays in, host result out).
 * gpu_msm: result (3*cl limbs, jacobian) = sum scalars[i] * bases[i]; bases count
 * affine points in zkey layout (any alignment), scalars count canonical 32-byte LE
 * integers (< 2^256; values >= r are multiplied exactly too). Count 0 gives infinity.
 * Groups: G1 and G2 of BN254 and BLS12-381. *kernel_ms (may be NULL): event-timed
 * device time without the host->device copies of the inputs. */
int gpu_msm(gpu_dev *d, const curve_group *G, uint64_t *result, const uint8_t *bases, const uint8_t *scalars,
            size_t count, double *kernel_ms, char *err, size_t errlen);
/* gpu_msm, and *copy_ms (may be NULL): the event-timed host->device copy of the bases
 * and scalars (kernel_ms is event-timed too: from the end of the copies to the result). */
int gpu_msm_timed(gpu_dev *d, const curve_group *G, uint64_t *result, const uint8_t *bases,
                  const uint8_t *scalars, size_t count, double *kernel_ms, double *copy_ms, char *err,
                  size_t errlen);

/* In-place transform of v (2^lg elements, 4 limbs Montgomery, natural order), equal to
 * ntt_forward (inverse = 0), ntt_inverse (1, includes 1/n) or ntt_to_odd_coset (2) of
 * zk/ntt.c bit for bit. Fr: FIELD_BN254_FR or FIELD_BLS12_381_FR. *kernel_ms: device
 * time without the copies. */
#define GPU_NTT_FORWARD   0
#define GPU_NTT_INVERSE   1
#define GPU_NTT_ODD_COSET 2
int gpu_ntt(gpu_dev *d, const field_desc *Fr, unsigned lg, uint64_t *v, int inverse, double *kernel_ms,
            char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
