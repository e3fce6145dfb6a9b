/* hd.h — the one switch that lets field and curve code run on host and device.
 *
 * Field and curve arithmetic is written once, as inline functions in headers marked
 * CUZK_HD. Under nvcc they become __host__ __device__, so the code the CPU tests check
 * is the code the GPU runs (DESIGN.md, "Code layout"). */
#ifndef CUZK_HD_H
#define CUZK_HD_H

#ifdef __CUDACC__
#define CUZK_HD     static __host__ __device__ __forceinline__
#define CUZK_UNROLL _Pragma("unroll")
#else
#define CUZK_HD     static inline __attribute__((always_inline))
#define CUZK_UNROLL _Pragma("GCC unroll 16")
#endif

#endif
