/* ntt_ifma_bls12_381.c — zk/ntt_lanes.h's NTT kernels on the IFMA lanes of BLS12-381 Fr
 * (zk/ifma_lanes.h instantiated for the scalar field, arithmetic only). ntt.c calls
 * them when ifma_available(). */
#include "ntt_kernels.h"

#include "cuzk/field.h"
#include "cuzk/ifma.h"

#if defined(__x86_64__)
/* BLS12-381 Fr: p, R' = 2^260, R = 2^256, all in radix 2^52 (test_ntt checks the transforms
 * they make against the scalar kernels and a naive DFT). */
#define LANE_N IFMA_LIMBS
#define LANE_W 4
#define LANE_F (&FIELD_BLS12_381_FR)
#define LANE_PINV \
    (UINT64_C(0xfffffffeffffffff) & ((UINT64_C(1) << 52) - 1)) /* field.h's -p^-1, low 52 bits */
typedef ifma_fq8 lane_block;
static const uint64_t lane_p[LANE_N] = { 0xfffff00000001ULL, 0x02fffe5bfefffULL, 0x9a1d80553bda4ULL,
                                         0x7d483339d8080ULL, 0x073eda753299dULL };
static const uint64_t lane_c_in[LANE_N] = { 0x00234fffffdcbULL, 0x61039ef635000ULL, 0xdce3c3e2e7505ULL,
                                            0x7fa6f1563642bULL, 0x0247db575276aULL }; /* 2^264 mod p */
static const uint64_t lane_c_out[LANE_N] = { 0x00001fffffffeULL, 0xfa00034802000ULL, 0xcbc4ff55884b7ULL,
                                             0x056f998c4fefeULL, 0x01824b159acc5ULL }; /* 2^256 mod p */
#include "ifma_lanes.h"

#define NTT_LANES_TABLE ntt_lanes_bls12_381
#define NTT_LANES_H     ntt_lanes_h_bls12_381
#define NTT_LANES_POW   ntt_lanes_pow_bls12_381
#include "ntt_lanes.h"
#endif
