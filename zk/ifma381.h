/* ifma381.h — the AVX-512 IFMA lanes on BLS12-381 (zk/ifma381.c: zk/ifma_lanes.h with
 * 8 limbs of 52 bits, 416 bits for p < 2^381). Callers use ifma.h's ifma_batch_add,
 * which comes here for the BLS12-381 groups; every function needs a CPU with AVX-512
 * F, VL and IFMA: check ifma_available() (ifma.h) first. */
#ifndef CUZK_IFMA381_H
#define CUZK_IFMA381_H

#include <stddef.h>
#include <stdint.h>

#include "zk/curve.h"

/* ifma_batch_add (ifma.h) on G = G1_BLS12_381 or G2_BLS12_381, in lanes. */
void ifma381_batch_add(const curve_group *G, uint64_t *A, const uint32_t *bb, const uint64_t *bp,
                       size_t count, void *scratch);
/* ifma_batch_add_refs (ifma.h) on the same groups. */
void ifma381_batch_add_refs(const curve_group *G, uint64_t *A, const uint32_t *bb, const uint64_t *const *px,
                            const uint64_t *const *py, const uint8_t *neg, size_t count, void *scratch);

/* r[i] = fe_mul(a[i], b[i]) on BLS12-381 Fq for count elements (a multiple of 8) in
 * field.h's form, through the lanes (relimbed, one lane product, canonical): for tests
 * and bench. */
void ifma381_fq_mul_aos(uint64_t *r, const uint64_t *a, const uint64_t *b, size_t count);

/* For tests only (tests/unit/test_ifma381.c; x86-64 builds, a CPU with IFMA): G2's
 * batch-affine addition from lambda on, as ifma381_batch_add runs it, on one block of
 * 8 lanes. in: 8 lane blocks (64-byte aligned, each uint64_t[8 limbs][8 lanes] of
 * 52-bit limbs, c0 then c1 of each value): lambda, Bx, Px, By. out: 14 blocks, the
 * stages l' = lambda·2^32, lambda^2, x3 before and after it is made canonical,
 * l'·(Bx + p - x3), y3 before and after. */
void ifma381_test_g2_from_lambda(void *out, const void *in);

#endif
