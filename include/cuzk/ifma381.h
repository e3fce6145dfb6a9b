/* ifma381.h — BLS12-381 Fq eight elements at a time with AVX-512 IFMA, and the G1 and
 * G2 batch-affine bucket additions of the MSM built on it (ifma.h's BN254 G1 scheme at 6
 * limbs).
 *
 * Lanes hold 8 limbs of 52 bits (416 bits, p < 2^381), limb k of all eight lanes in
 * one zmm register; a lane product is a Montgomery product by 2^-416. The coordinates
 * stay in field.h's form x·2^384 (6x64 limbs, only relimbed on the way in and out)
 * and, as in ifma.c, each product's 2^-416 is tracked as a scale and made up by
 * 32-bit shifts or by the scalar inversion (zk/ifma381.c says where). With 2^416 >
 * 2^35 p a lane product of a < αp by b < βp is below (αβ 2^-35 + 1) p, which leaves
 * room for the shifted operands; results are made canonical by conditional
 * subtractions. Measured (bench/ifma, ns an addition, scalar = the 6-limb mulx flush,
 * shared 2-core AMD EPYC at load ~8): G1 209 -> 68 (3.1x), G2 614 -> 199 (3.1x) at
 * B = 512-1024.
 *
 * Needs a CPU with AVX-512 F, VL and IFMA: check ifma_available() (ifma.h) first. */
#ifndef CUZK_IFMA381_H
#define CUZK_IFMA381_H

#include <stddef.h>
#include <stdint.h>

/* For i < count: A[bb[i]] = A[bb[i]] + P_i on BLS12-381 G1, affine: bucket b at
 * A + 12b (x then y, 6 limbs each, field.h's Montgomery form, reduced), P_i at
 * bp + 12i, with msm_aff_add's preconditions (distinct buckets, P_i.x != bucket.x,
 * neither infinity). Results canonical and equal, bit for bit, to msm.c's scalar
 * flush. scratch: ifma381_g1_batch_scratch_bytes(count) bytes, 64-byte aligned,
 * reusable across calls with count no larger. */
size_t ifma381_g1_batch_scratch_bytes(size_t count);
void ifma381_g1_batch_add(uint64_t *A, const uint32_t *bb, const uint64_t *bp, size_t count, void *scratch);

/* The same with field.h's scalar products (mulx where available) and fe_inv_gcd: the
 * portable version, and the oracle of test_ifma. scratch as above. */
void ifma381_g1_batch_add_ref(uint64_t *A, const uint32_t *bb, const uint64_t *bp, size_t count,
                              void *scratch);

/* The same on G2 (Fq2 = Fq[u]/(u^2+1)): 24 limbs a point, bucket b at A + 24b (x then
 * y, each c0 then c1), P_i at bp + 24i; portable form beside it. */
size_t ifma381_g2_batch_scratch_bytes(size_t count);
void ifma381_g2_batch_add(uint64_t *A, const uint32_t *bb, const uint64_t *bp, size_t count, void *scratch);
void ifma381_g2_batch_add_ref(uint64_t *A, const uint32_t *bb, const uint64_t *bp, size_t count,
                              void *scratch);

/* r[i] = fe_mul(a[i], b[i]) on BLS12-381 Fq for count elements (a multiple of 8) in
 * field.h's form, through the lanes (load, product, store): for tests and bench. */
void ifma381_fq_mul_aos(uint64_t *r, const uint64_t *a, const uint64_t *b, size_t count);

#endif
