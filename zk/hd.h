/* hd.h — the one switch that lets field and curve code run on host and device.
 *
 * Field and curve arithmetic is written once, as inline functions in headers marked
 * CUZK_HD (field.h, curve.h). Under nvcc they become __host__ __device__, so the code
 * the CPU tests check is the code the GPU runs (DESIGN.md, "Code layout"). */
#ifndef CUZK_HD_H
#define CUZK_HD_H

#ifdef __CUDACC__
#define CUZK_HD     static __host__ __device__ __forceinline__
#define CUZK_UNROLL _Pragma("unroll")
#else
#define CUZK_HD     static inline __attribute__((always_inline))
#define CUZK_UNROLL _Pragma("GCC unroll 16")
#endif

/* CUZK_DEVICE_CODE: this is the device form of the arithmetic — nvcc's device pass, or
 * a gcc translation unit that defines CUZK_DEVICE_EMUL before its first include
 * (tests/unit/test_gpu_emul.c: the kernels' logic run on the CPU, so that what it
 * checks is what the device runs). Where the two forms differ the headers say why. */
#if defined(__CUDA_ARCH__) || defined(CUZK_DEVICE_EMUL)
#define CUZK_DEVICE_CODE 1
#endif

/* CUZK_DEVICE_OUTLINE: the few device functions kept out of line (one copy per field or
 * group, for compile time: field.h, curve.h). Defined where device code can call them:
 * every nvcc pass (device functions; the host pass never calls them) and the emulation.
 * CUZK_DEVICE_INLINE: a device-only helper of theirs, forced inline (field.h's copies
 * in and out of a by-value call). */
#if defined(__CUDACC__)
#define CUZK_DEVICE_OUTLINE_ON 1
#define CUZK_DEVICE_OUTLINE    static __device__ __noinline__
#define CUZK_DEVICE_INLINE     static __device__ __forceinline__
#elif defined(CUZK_DEVICE_EMUL)
#define CUZK_DEVICE_OUTLINE_ON 1
#define CUZK_DEVICE_OUTLINE    static __attribute__((noinline, unused))
#define CUZK_DEVICE_INLINE     static inline __attribute__((always_inline))
#endif

#endif
