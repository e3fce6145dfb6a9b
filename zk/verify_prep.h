/* verify_prep.h — the layout of a prepared verification key (verify.h's
 * groth16_vk_prepare), private to zk/verify.c and to test_verify_prepared, which
 * plants bugs in it to show that the prepared check reads every part. */
#ifndef CUZK_ZK_VERIFY_PREP_H
#define CUZK_ZK_VERIFY_PREP_H

#include <stdint.h>

#include "zk/pairing.h"

/* What a key's check computes the same way for every proof. */
struct groth16_vk_prep {
    uint64_t ab[FQ12_MAX_LIMBS];     /* the Miller loop value of (alpha1, beta2) */
    pairing_g2_lines gamma2, delta2; /* their loops' lines */
};

#endif
