/* ntt_ifma_bn254.c — zk/ntt_lanes.h's NTT kernels on the IFMA lanes of BN254 Fr
 * (zk/ifma_lanes.h instantiated for the scalar field, arithmetic only). ntt.c calls
 * them when ifma_available(). */
#include "ntt_kernels.h"

#include "cuzk/field.h"
#include "cuzk/ifma.h"

#if defined(__x86_64__)
/* BN254 Fr: p, R' = 2^260, R = 2^256, all in radix 2^52 (test_ntt checks the transforms
 * they make against the scalar kernels and a naive DFT). */
#define LANE_N IFMA_LIMBS
#define LANE_W 4
#define LANE_F (&FIELD_BN254_FR)
#define LANE_PINV \
    (UINT64_C(0xc2e1f593efffffff) & ((UINT64_C(1) << 52) - 1)) /* field.h's -p^-1, low 52 bits */
typedef ifma_fq8 lane_block;
static const uint64_t lane_p[LANE_N] = { 0x1f593f0000001ULL, 0x4879b9709143eULL, 0x181585d2833e8ULL,
                                         0xa029b85045b68ULL, 0x030644e72e131ULL };
static const uint64_t lane_c_in[LANE_N] = { 0x31f8c9ffffab6ULL, 0xac31329faef6eULL, 0x9e2a3495d7570ULL,
                                            0xe357276f48b70ULL, 0x00d791464ef86ULL }; /* 2^264 mod p */
static const uint64_t lane_c_out[LANE_N] = { 0x6341c4ffffffbULL, 0x959f60cd29ac9ULL, 0x879462e36fc76ULL,
                                             0xdf2f666ea36f7ULL, 0x00e0a77c19a07ULL }; /* 2^256 mod p */
#include "ifma_lanes.h"

#define NTT_LANES_TABLE ntt_lanes_bn254
#define NTT_LANES_H     ntt_lanes_h_bn254
#define NTT_LANES_POW   ntt_lanes_pow_bn254
#include "ntt_lanes.h"
#endif
