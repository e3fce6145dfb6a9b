/* ifma.h — BN254 Fq arithmetic eight elements at a time with AVX-512 IFMA, and the
 * batch-affine bucket addition of the MSM built on such lanes, for every group.
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
 * The fq8 and Fq2 lane functions need a CPU with AVX-512 F, VL and IFMA: call
 * ifma_available() first (the default build targets x86-64-v3; they are compiled for
 * AVX-512 alone, with __attribute__((target)), and would fault elsewhere).
 *
 * Measured (bench/ifma, 2-vCPU AMD EPYC with AVX-512 IFMA, thread CPU time, best of
 * 7-40 runs, load average 8-9 from other builds): fe_mul (mulx) 16-21 ns a product,
 * chained or independent; eight lanes 2.6-2.9 ns a product independent, 33-37 ns an
 * 8-lane product in a dependent chain; 5.8-6.3 ns a product with field.h's layout in
 * and out (ifma_fq_mul_aos). Batch-affine addition on G1 (ifma_batch_add against the
 * same flush with fe_mul), B additions into distinct buckets of 4B, ns an addition:
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

#include "zk/curve.h"

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

/* r = a^-1 for a BN254 Fq element in field.h's form (0 -> 0): fe_inv_gcd (GMP's
 * extended gcd and one product), 1.2 us against fe_inv's 8-10 us (Fermat). Needs no
 * AVX-512. */
void ifma_fq_inv(uint64_t r[4], const uint64_t a[4]);

/* Lane-wise Fq2 = Fq[u]/(u^2+1) on BN254: an Fq2 lane value is two fq8 blocks, c0 then
 * c1 (r[0], r[1]), each component in the fq8 form above; the products the G2 batch
 * below makes (zk/ifma_lanes.h), exported for test_ifma's bound checks against GMP.
 * r = a·b (Karatsuba, 3 lane products, reduced lazily) with a's components in [0, 2p)
 * and b's in [0, 8p): c0 in [0, 4p), c1 in [0, 6p). r = a^2 (2 lane products) with a
 * canonical (< p): both components in [0, 2p). r may alias a or b. */
void ifma_fq2x8_mul(ifma_fq8 r[2], const ifma_fq8 a[2], const ifma_fq8 b[2]);
void ifma_fq2x8_sqr(ifma_fq8 r[2], const ifma_fq8 a[2]);

/* ---- batch-affine addition (msm.c's bucket flush), every group ---------------------
 *
 * For i < count: A[bb[i]] = A[bb[i]] + P_i on G (BN254 or BLS12-381, G1 or G2),
 * affine, where
 *   A    the affine buckets: bucket b at A + 2cb (x then y, cl = ec_cl(G) limbs each,
 *        field.h's Montgomery form, reduced; an Fq2 coordinate c0 then c1) — msm.c's
 *        struct msm_scratch.A;
 *   bb   bucket of addition i (msm_scratch.bb);
 *   bp   P_i at bp + 2cl·i, same form (msm_scratch.bp);
 * with the preconditions msm_aff_add already ensures: the buckets bb[0..count-1] are
 * distinct, and P_i.x != bucket.x (no doubling or cancellation; neither point is
 * infinity). The results are canonical and equal, bit for bit, those of msm.c's scalar
 * flush (lambda = (Py - By)/(Px - Bx), x3 = lambda^2 - Bx - Px, y3 = lambda (Bx - x3)
 * - By). One shared inversion (scalar, of 8 lane products), everything else in lanes:
 * 6 lane products an addition on G1, 17 on G2 (zk/ifma_lanes.h, written once for both
 * curves; BN254 in zk/ifma.c, BLS12-381 in zk/ifma381.c). Without IFMA (ifma_available()
 * false) it is ifma_batch_add_ref.
 * scratch: ifma_batch_scratch_bytes(G, count) bytes (a multiple of 64), 64-byte
 * aligned (aligned_alloc), reusable across calls with count no larger.
 *
 * Measured (bench/ifma, shared 2-core AMD EPYC, ns an addition, scalar = the same flush
 * with field.h's mulx products): BN254 G1 135-173 -> 31-36 (3.8-5x), G2 462-506 ->
 * 91-94 (4.9-5.6x) at B = 512-2048; BLS12-381 G1 209 -> 68 (3.1x), G2 614 -> 199 (3.1x)
 * at B = 512-1024. In msm.c (bench/msm_ntt, 1 thread, CUZK_NO_IFMA=1 against IFMA):
 * BN254 G1 2^18 1072-1227 -> 639-666 CPU ms, G2 2^18 2595 -> 1212. */
size_t ifma_batch_scratch_bytes(const curve_group *G, size_t count);
void ifma_batch_add(const curve_group *G, uint64_t *A, const uint32_t *bb, const uint64_t *bp, size_t count,
                    void *scratch);

/* The same with field.h's scalar products (mulx where available) and ecf_inv: the
 * portable version, test_ifma's oracle beside the jacobian addition, and the baseline
 * bench/ifma compares with. scratch as above. */
void ifma_batch_add_ref(const curve_group *G, uint64_t *A, const uint32_t *bb, const uint64_t *bp,
                        size_t count, void *scratch);

/* The same with P_i by reference instead of copied into bp: x at px[i], y at py[i]
 * (cl limbs each, same form, reduced), and P_i = (x, -y) where neg[i] is nonzero —
 * msm.c's flush reads its bases (and their phi images' x) where they lie, the
 * negation of a signed digit done in the lanes. Same preconditions (on the point
 * after negation) and the same results bit for bit; scratch as above. */
void ifma_batch_add_refs(const curve_group *G, uint64_t *A, const uint32_t *bb, const uint64_t *const *px,
                         const uint64_t *const *py, const uint8_t *neg, size_t count, void *scratch);
void ifma_batch_add_refs_ref(const curve_group *G, uint64_t *A, const uint32_t *bb, const uint64_t *const *px,
                             const uint64_t *const *py, const uint8_t *neg, size_t count, void *scratch);

#endif
