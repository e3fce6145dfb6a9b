/* ntt_ifma_fr.h — the body of zk/ntt_ifma_bn254.c and zk/ntt_ifma_bls12_381.c: the
 * IFMA lanes (zk/ifma_lanes.h, arithmetic only) instantiated for one scalar field Fr,
 * chosen by NTT_FR_BLS (0 BN254, 1 BLS12-381), and zk/ntt_lanes.h's kernels over
 * them. One field a translation unit, as ifma_lanes.h requires. Constants: p, R' =
 * 2^260 and R = 2^256 in radix 2^52 (test_ntt checks what they compute against the
 * scalar kernels, a naive DFT and field.h's products). */
#include "ntt_kernels.h"

#include "zk/field.h"
#include "zk/ifma.h"

#if defined(__x86_64__)
#define LANE_N IFMA_LIMBS
#define LANE_W 4
typedef ifma_fq8 lane_block;
/* per field (BN254, BLS12-381): p, 2^264 mod p (lane_c_in), 2^256 mod p (lane_c_out) */
static const uint64_t lane_k_fr[2][3][LANE_N] = {
    { { 0x1f593f0000001ULL, 0x4879b9709143eULL, 0x181585d2833e8ULL, 0xa029b85045b68ULL, 0x030644e72e131ULL },
      { 0x31f8c9ffffab6ULL, 0xac31329faef6eULL, 0x9e2a3495d7570ULL, 0xe357276f48b70ULL, 0x00d791464ef86ULL },
      { 0x6341c4ffffffbULL, 0x959f60cd29ac9ULL, 0x879462e36fc76ULL, 0xdf2f666ea36f7ULL,
        0x00e0a77c19a07ULL } },
    { { 0xfffff00000001ULL, 0x02fffe5bfefffULL, 0x9a1d80553bda4ULL, 0x7d483339d8080ULL, 0x073eda753299dULL },
      { 0x00234fffffdcbULL, 0x61039ef635000ULL, 0xdce3c3e2e7505ULL, 0x7fa6f1563642bULL, 0x0247db575276aULL },
      { 0x00001fffffffeULL, 0xfa00034802000ULL, 0xcbc4ff55884b7ULL, 0x056f998c4fefeULL,
        0x01824b159acc5ULL } },
};
#define LANE_F    (NTT_FR_BLS ? &FIELD_BLS12_381_FR : &FIELD_BN254_FR)
/* field.h's -p^-1, low 52 bits */
#define LANE_PINV (NTT_FR_BLS ? UINT64_C(0xffffeffffffff) : UINT64_C(0x1f593efffffff))
#if NTT_FR_BLS
#define NTT_LANES_TABLE ntt_lanes_bls12_381
#define NTT_LANES_H     ntt_lanes_h_bls12_381
#define NTT_LANES_POW   ntt_lanes_pow_bls12_381
#else
#define NTT_LANES_TABLE ntt_lanes_bn254
#define NTT_LANES_H     ntt_lanes_h_bn254
#define NTT_LANES_POW   ntt_lanes_pow_bn254
#endif
#define lane_k     lane_k_fr[NTT_FR_BLS]
#define lane_p     lane_k[0]
#define lane_c_in  lane_k[1]
#define lane_c_out lane_k[2]
#include "ifma_lanes.h"
#include "ntt_lanes.h"
#endif
