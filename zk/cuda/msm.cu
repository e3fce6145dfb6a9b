// msm.cu — the GPU MSM entry point (one instance per group: msm_GROUP.cu, all from
// msm_impl.cuh) and the CUB primitives they use, instantiated here once.
#include <cub/cub.cuh>

#include "cuda_util.h"

cudaError_t gpu_sort_pairs_u32(void *temp, size_t &temp_bytes, const uint32_t *keys_in, uint32_t *keys_out,
                               const uint32_t *vals_in, uint32_t *vals_out, int n, int begin_bit, int end_bit,
                               cudaStream_t s)
{
    return cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys_in, keys_out, vals_in, vals_out, n,
                                           begin_bit, end_bit, s);
}

cudaError_t gpu_exclusive_sum_u32(void *temp, size_t &temp_bytes, const uint32_t *in, uint32_t *out, int n,
                                  cudaStream_t s)
{
    return cub::DeviceScan::ExclusiveSum(temp, temp_bytes, in, out, n, s);
}

cudaError_t gpu_sum_u32(void *temp, size_t &temp_bytes, const uint32_t *in, uint32_t *out, int n,
                        cudaStream_t s)
{
    return cub::DeviceReduce::Sum(temp, temp_bytes, in, out, n, s);
}

int gpu_msm_device(enum curve_id g, uint64_t *result, const uint64_t *bases, const uint64_t *scalars,
                   size_t count, unsigned sharers, cudaStream_t s, cudaEvent_t done, char *err, size_t errlen)
{
    switch (g) {
    case CURVE_G1_BN254:
        return gpu_msm_g1_bn254(result, bases, scalars, count, sharers, s, done, err, errlen);
    case CURVE_G2_BN254:
        return gpu_msm_g2_bn254(result, bases, scalars, count, sharers, s, done, err, errlen);
    case CURVE_G1_BLS12_381:
        return gpu_msm_g1_bls12_381(result, bases, scalars, count, sharers, s, done, err, errlen);
    case CURVE_G2_BLS12_381:
        return gpu_msm_g2_bls12_381(result, bases, scalars, count, sharers, s, done, err, errlen);
    }
    snprintf(err, errlen, "GPU MSM: unknown group %d", (int)g);
    return -CUZK_E_UNSUPPORTED;
}
