/* ifma.h — BN254 Fq arithmetic eight elements at a time with AVX-512 IFMA, and the
 * batch-affine bucket addition of the MSM built on it.
 *
 * Layout ("fq8"): 8 elements in radix 2^52, 5 limbs (254 bits < 260), structure of
 * arrays: l[k][j] is limb k of lane j, so one zmm register holds limb k of all eight
 * lanes and vpmadd52luq/vpmadd52huq form eight 52x52-bit partial products at once.
 *
 * Montgomery form: products divide by R' = 2^260 (five 52-bit reduction steps), while
 * the rest of cuzk keeps x·R mod p with R = 2^256 in 4x64 limbs (field.h). The fq8
 * value of an element x is x·2^260 mod p, so that ifma_fq8_mul maps the fq8 values of
 * x and y to the fq8 value of x·y; ifma_fq8_load multiplies the field.h form by 2^4
 * (one lane product by 2^264 mod p) and ifma_fq8_store divides by it (one product by
 * 2^256 mod p, then a full reduction), so store(load(a)) = a bit for bit and
 * store(mul(load(a), load(b))) = fe_mul(a, b).
 *
 * Reduction is lazy: every fq8 value these functions return is in [0, 2p) with limbs
 * below 2^52 (p < 2^254, so a Montgomery product of two such values stays below
 * (4p/2^260 + 1) p < 2p); inputs must satisfy the same. Only store gives canonical
 * (< p) results.
 *
 * Every function needs a CPU with AVX-512 F, VL and IFMA: call ifma_available() first
 * (the default build targets x86-64-v3; these functions are compiled for AVX-512 alone,
 * with __attribute__((target)), and would fault elsewhere).
 *
 * Measured (bench/ifma, 2-vCPU AMD EPYC with AVX-512 IFMA, thread CPU time, best of
 * 7-40 runs, load average 8-9 from other builds): fe_mul (mulx) 16-21 ns a product,
 * chained or independent; eight lanes 2.6-2.9 ns a product independent, 33-37 ns an
 * 8-lane product in a dependent chain; 5.8-6.3 ns a product with field.h's layout in
 * and out (ifma_fq_mul_aos). Batch-affine addition (ifma_g1_batch_add against the same
 * flush with fe_mul), B additions into distinct buckets of 4B, ns an addition:
 *              inversion by fe_inv         inversion by ifma_fq_inv (both ways)
 *   B =  512   144 -> 44   (3.3x)          153 -> 36   (4.2x)
 *   B = 1024   135 -> 35   (3.8x)          167 -> 35   (4.8x)
 *   B = 2048   135 -> 31   (4.3x)          173 -> 34   (5.1x)
 * (the scalar column moves by 20% between runs with the machine's load; the IFMA one
 * by less). Not the double-pumped 512-bit units of Zen 4 nor the transposes dominate:
 * the lane product is 6-7x a mulx product in throughput. */
#ifndef CUZK_IFMA_H
#define CUZK_IFMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IFMA_LANES 8
#define IFMA_LIMBS 5

typedef struct ifma_fq8 {
    uint64_t l[IFMA_LIMBS][IFMA_LANES];
} __attribute__((aligned(64))) ifma_fq8;

/* Whether this CPU (and OS) runs AVX-512 F+VL+IFMA, and the environment variable
 * CUZK_NO_IFMA is not set to 1 (to compare against the scalar path). Cached after the
 * first call; thread safe (idempotent). */
bool ifma_available(void);

/* r = the fq8 values of a[0..7], 8 elements in field.h's Montgomery form (4 limbs
 * each, contiguous, reduced). */
void ifma_fq8_load(ifma_fq8 *r, const uint64_t *a);

/* r[0..31] = the 8 lanes of a back in field.h's form, 4 limbs each, canonical. */
void ifma_fq8_store(uint64_t *r, const ifma_fq8 *a);

/* Lane-wise Montgomery product r = a·b·2^-260 mod p, in [0, 2p). r may alias a or b. */
void ifma_fq8_mul(ifma_fq8 *r, const ifma_fq8 *a, const ifma_fq8 *b);

/* Lane-wise r = a + b and r = a - b mod p, in [0, 2p). */
void ifma_fq8_add(ifma_fq8 *r, const ifma_fq8 *a, const ifma_fq8 *b);
void ifma_fq8_sub(ifma_fq8 *r, const ifma_fq8 *a, const ifma_fq8 *b);

/* r[k] = a[k]·b[k] for k < n blocks (n·8 products): the throughput form. */
void ifma_fq8_mul_n(ifma_fq8 *r, const ifma_fq8 *a, const ifma_fq8 *b, size_t n);

/* r[i] = fe_mul(a[i], b[i]) for count elements in field.h's form (count a multiple of
 * 8): load, product, store — the cost of a product with the layout changes included. */
void ifma_fq_mul_aos(uint64_t *r, const uint64_t *a, const uint64_t *b, size_t count);

/* r = a^-1 for a BN254 Fq element in field.h's form (0 -> 0), equal to fe_inv's: by
 * GMP's extended gcd and one product, 1.2 us against fe_inv's 8-10 us (Fermat). Needs
 * no AVX-512. The batch additions below take their one inversion from it; fe_inv and
 * msm.c's other batch inversions could too. */
void ifma_fq_inv(uint64_t r[4], const uint64_t a[4]);

/* ---- batch-affine addition (msm.c's bucket flush) --------------------------------
 *
 * For i < count: A[bb[i]] = A[bb[i]] + P_i on BN254 G1, affine, where
 *   A    the affine buckets: bucket b at A + 8b (x then y, 4 limbs each, field.h's
 *        Montgomery form, reduced) — msm.c's struct msm_scratch.A for G1 BN254;
 *   bb   bucket of addition i (msm_scratch.bb);
 *   bp   P_i at bp + 8i, same form (msm_scratch.bp);
 * with the preconditions msm_aff_add already ensures: the buckets bb[0..count-1] are
 * distinct, and P_i.x != bucket.x (no doubling or cancellation; neither point is
 * infinity). The results are canonical and equal, bit for bit, those of msm.c's scalar
 * flush (lambda = (Py - By)/(Px - Bx), x3 = lambda^2 - Bx - Px, y3 = lambda (Bx - x3)
 * - By). One shared inversion (scalar, of 8 lane products), everything else in lanes.
 * scratch: ifma_g1_batch_scratch_bytes(count) bytes (a multiple of 64), 64-byte
 * aligned (aligned_alloc), reusable across calls with count no larger.
 *
 * How msm.c calls it (the whole change; test_msm's affine-bucket cases then cover it):
 *   - struct msm_scratch gets `void *ifma;`; msm_scratch_alloc, after S->bb:
 *         if (j->G->id == CURVE_G1_BN254 && ifma_available()) {
 *             S->ifma = aligned_alloc(64, ifma_g1_batch_scratch_bytes(j->batch));
 *             if (!S->ifma) return -ENOMEM;
 *         }
 *     and msm_scratch_free frees it;
 *   - msm_aff_flush, after `if (nb == 0) return;`:
 *         if (G->id == CURVE_G1_BN254 && S->ifma) {
 *             ifma_g1_batch_add(S->A, S->bb, S->bp, nb, S->ifma);
 *             x->nbat = 0;
 *             x->cur++;
 *             return;
 *         }
 *   (S->den is then computed by msm_aff_add only for its doubling check, S->pre not
 *   used.) Measured so, on a copy of the tree (bench/msm_ntt, G1 BN254, random
 *   scalars, 1 thread, CPU ms, CUZK_NO_IFMA=1 against IFMA, the batch's inversion still
 *   by fe_inv): before GLV 2^16 370 -> 146, 2^18 1306 -> 488; with GLV, two runs each,
 *   2^16 255-299 -> 116-129, 2^18 1072-1227 -> 639-666; test_msm passed with it. */
size_t ifma_g1_batch_scratch_bytes(size_t count);
void ifma_g1_batch_add(uint64_t *A, const uint32_t *bb, const uint64_t *bp, size_t count, void *scratch);

/* The same with field.h's scalar products (mulx where available): the portable
 * version, and the baseline bench/ifma compares with. scratch as above. */
void ifma_g1_batch_add_ref(uint64_t *A, const uint32_t *bb, const uint64_t *bp, size_t count, void *scratch);

/* ---- G2: Fq2 = Fq[u]/(u^2+1) in lanes, and the G2 batch-affine addition ----------
 *
 * An Fq2 lane value is two fq8 blocks, c0 then c1 (r[0], r[1]), each component in the
 * fq8 form above. Lane-wise r = a·b (Karatsuba, 3 lane products) with a's components
 * in [0, 2p) and b's in [0, 8p), and r = a^2 (2 lane products) with a's in [0, 2p);
 * results in [0, 2p) per component; r may alias a or b. (Exported for test_ifma's
 * bound checks against GMP; the batch below inlines them.) */
void ifma_fq2x8_mul(ifma_fq8 r[2], const ifma_fq8 a[2], const ifma_fq8 b[2]);
void ifma_fq2x8_sqr(ifma_fq8 r[2], const ifma_fq8 a[2]);

/* For i < count: A[bb[i]] = A[bb[i]] + P_i on BN254 G2, affine, with the contract of
 * ifma_g1_batch_add but 16 limbs a point: bucket b at A + 16b, x then y, each an Fq2
 * element c0 then c1 of 4 limbs (field.h's Montgomery form, reduced) — msm.c's
 * msm_scratch.A for G2 BN254 (2·ec_cl = 16 limbs); P_i at bp + 16i (msm_scratch.bp);
 * distinct buckets, P_i.x != bucket.x, neither infinity. Results canonical and equal
 * bit for bit to msm.c's scalar flush (ecf_* on Fq2: lambda = (Py - By)/(Px - Bx),
 * x3 = lambda^2 - Bx - Px, y3 = lambda (Bx - x3) - By). One shared inversion (8 Fq2
 * lane totals: norms in Fq, one ifma_fq_inv), 17 lane products an addition.
 * Measured (bench/ifma, same machine, load average 5-6 from other builds, best of 9,
 * ns an addition, scalar = ifma_g2_batch_add_ref with fe2_mul's lazy mulx Karatsuba):
 *   B = 512 462 -> 94 (4.9x), B = 1024 506 -> 91 (5.6x), B = 2048 499 -> 93 (5.4x);
 * with the msm.c change below (bench/msm_ntt, BN254 G2, 1 thread, CPU ms, CUZK_NO_IFMA=1
 * against IFMA): 2^16 660-715 -> 243-252, 2^18 2595 -> 1212; test_msm passed with it.
 * scratch: ifma_g2_batch_scratch_bytes(count) bytes (a multiple of 64), 64-byte
 * aligned, reusable across calls with count no larger.
 *
 * How msm.c calls it (on top of the G1 change above; the same three places):
 *   - msm_scratch_alloc:
 *         if ((j->G->id == CURVE_G1_BN254 || j->G->id == CURVE_G2_BN254) && ifma_available()) {
 *             S->ifma = aligned_alloc(64, j->G->id == CURVE_G1_BN254
 *                                             ? ifma_g1_batch_scratch_bytes(j->batch)
 *                                             : ifma_g2_batch_scratch_bytes(j->batch));
 *             if (!S->ifma) return -ENOMEM;
 *         }
 *   - msm_aff_flush, after `if (nb == 0) return;`:
 *         if (S->ifma && (G->id == CURVE_G1_BN254 || G->id == CURVE_G2_BN254)) {
 *             if (G->id == CURVE_G1_BN254) ifma_g1_batch_add(S->A, S->bb, S->bp, nb, S->ifma);
 *             else ifma_g2_batch_add(S->A, S->bb, S->bp, nb, S->ifma);
 *             x->nbat = 0;
 *             x->cur++;
 *             return;
 *         }
 *   (G is a compile-time constant in each msm_task_aff_* body, so each keeps one call.) */
size_t ifma_g2_batch_scratch_bytes(size_t count);
void ifma_g2_batch_add(uint64_t *A, const uint32_t *bb, const uint64_t *bp, size_t count, void *scratch);

/* The same with field.h's scalar Fq2 arithmetic (fe2_mul: mulx, lazy Karatsuba): the
 * portable version and bench/ifma's baseline. scratch as above. */
void ifma_g2_batch_add_ref(uint64_t *A, const uint32_t *bb, const uint64_t *bp, size_t count, void *scratch);

#endif
