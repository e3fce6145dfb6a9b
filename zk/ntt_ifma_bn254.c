/* ntt_ifma_bn254.c — zk/ntt_lanes.h's NTT kernels on the IFMA lanes of BN254 Fr (the body:
 * zk/ntt_ifma_fr.h). ntt.c calls them when ifma_available(). */
#define NTT_FR_BLS 0
#include "ntt_ifma_fr.h"
