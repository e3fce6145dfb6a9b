// msm_g1_bls12_381.cu — the GPU MSM (msm_impl.cuh) for CURVE_G1_BLS12_381.
#include "msm_impl.cuh"

int gpu_msm_g1_bls12_381(uint64_t *result, const uint64_t *bases, const uint64_t *scalars, size_t count,
                         unsigned sharers, cudaStream_t s, cudaEvent_t done, char *err, size_t errlen)
{
    return msm_all<CURVE_G1_BLS12_381>(result, bases, scalars, count, sharers, s, done, err, errlen);
}
