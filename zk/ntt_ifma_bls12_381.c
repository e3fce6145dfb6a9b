/* ntt_ifma_bls12_381.c — zk/ntt_lanes.h's NTT kernels on the IFMA lanes of BLS12-381 Fr
 * (the body: zk/ntt_ifma_fr.h). ntt.c calls them when ifma_available(). */
#define NTT_FR_BLS 1
#include "ntt_ifma_fr.h"
