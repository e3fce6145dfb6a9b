/* ntt_kernels.h — the butterfly kernels zk/ntt.c drives, one table per field and
 * per arithmetic: the scalar (mulx) ones in ntt.c, the AVX-512 IFMA lane ones in
 * zk/ntt_ifma_bn254.c and zk/ntt_ifma_bls12_381.c (zk/ntt_lanes.h). Not a public
 * header: only those include it.
 *
 * Every kernel takes and leaves canonical field.h elements (x·R mod p, 4 limbs) in
 * the vector, so a transform may mix the two tables and gives the same bits with
 * either. Element ranges [lo, hi) of the lane kernels are multiples of 8, and their
 * blocks are at least 8 elements (ntt.c uses the lane table only from n = 8 and
 * splits ranges in units of 8). */
#ifndef CUZK_NTT_KERNELS_H
#define CUZK_NTT_KERNELS_H
#include <stddef.h>
#include <stdint.h>

struct ntt_kernels {
    /* DIT: all stages m = 1 .. B/2 on the block of B = 2^lb elements (bit-reversed in) */
    void (*block)(uint64_t *blk, unsigned lb, const uint64_t *tw);
    /* one radix-2 stage m = 2^lgm over butterflies [lo, hi) of the n/2 */
    void (*stage2)(uint64_t *v, unsigned lgm, const uint64_t *tw, size_t lo, size_t hi);
    /* stages m and 2m fused over quadruples [lo, hi) of the n/4 */
    void (*stage4)(uint64_t *v, unsigned lgm, const uint64_t *tw, size_t lo, size_t hi);
    /* v[i] *= s for i in [lo, hi) */
    void (*scale)(uint64_t *v, const uint64_t *s, size_t lo, size_t hi);
    /* the Gentleman-Sande mirrors: stages B/2 .. 1, natural order in, bit-reversed out */
    void (*block_dif)(uint64_t *blk, unsigned lb, const uint64_t *tw);
    void (*stage2_dif)(uint64_t *v, unsigned lgm, const uint64_t *tw, size_t lo, size_t hi);
    void (*stage4_dif)(uint64_t *v, unsigned lgh, const uint64_t *tw, size_t lo, size_t hi);
    /* the odd coset's middle on one block: block_dif with tw_inv, blk[i] *= tab[i],
     * block with tw (tab: the block's slice of coset_scale_br) */
    void (*block_coset)(uint64_t *blk, unsigned lb, const uint64_t *tw_inv, const uint64_t *tab,
                        const uint64_t *tw);
};

#if defined(__x86_64__)
extern const struct ntt_kernels ntt_lanes_bn254, ntt_lanes_bls12_381;
/* r[i] = a[i]·b[i] - c[i], then out of Montgomery form (groth16's h), count a
 * multiple of 8, canonical in and out */
void ntt_lanes_h_bn254(uint64_t *a, const uint64_t *b, const uint64_t *c, size_t count);
void ntt_lanes_h_bls12_381(uint64_t *a, const uint64_t *b, const uint64_t *c, size_t count);
/* out[i] = x0·w^i for i < count (a multiple of 8), canonical */
void ntt_lanes_pow_bn254(uint64_t *out, const uint64_t *x0, const uint64_t *w, size_t count);
void ntt_lanes_pow_bls12_381(uint64_t *out, const uint64_t *x0, const uint64_t *w, size_t count);
#endif
#endif
