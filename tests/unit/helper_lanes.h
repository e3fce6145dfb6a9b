/* helper_lanes.h — what the IFMA lane tests (test_ifma, test_ifma381) share: one lane
 * of a limb-major block of 8 lanes (zk/ifma_lanes.h's layout: limb k of lane j at
 * l[k][j], 52-bit limbs) to and from a GMP integer. */
#ifndef CUZK_TEST_HELPER_LANES_H
#define CUZK_TEST_HELPER_LANES_H

#include <gmp.h>
#include <stdint.h>

/* z = lane j of l (limbs rows); fails the running Check test, naming `what`, if a
 * limb is not normalised (>= 2^52): every lane kernel's output must be. */
void test_lane_get(mpz_t z, const uint64_t (*l)[8], int limbs, int j, const char *what);

/* lane j of l = z (0 <= z < 2^(52 limbs), else the running test fails). */
void test_lane_set(uint64_t (*l)[8], int limbs, int j, const mpz_t z);

#endif
