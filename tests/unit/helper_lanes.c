/* helper_lanes.c — see helper_lanes.h. */
#include "helper_lanes.h"

#include <check.h>

void test_lane_get(mpz_t z, const uint64_t (*l)[8], int limbs, int j, const char *what)
{
    mpz_set_ui(z, 0);
    for (int k = limbs; k-- > 0;) {
        ck_assert_msg(l[k][j] >> 52 == 0, "%s: limb %d of lane %d not normalised: %#llx", what, k, j,
                      (unsigned long long)l[k][j]);
        mpz_mul_2exp(z, z, 52);
        mpz_add_ui(z, z, l[k][j]);
    }
}

void test_lane_set(uint64_t (*l)[8], int limbs, int j, const mpz_t z)
{
    mpz_t t;
    mpz_init_set(t, z);
    for (int k = 0; k < limbs; k++) {
        l[k][j] = mpz_get_ui(t) & ((UINT64_C(1) << 52) - 1);
        mpz_tdiv_q_2exp(t, t, 52);
    }
    ck_assert(mpz_sgn(t) == 0);
    mpz_clear(t);
}
