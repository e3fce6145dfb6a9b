/* ntt.h — number-theoretic transforms over a scalar field Fr, with snarkjs's roots.
 *
 * The roots are derived exactly as ffjavascript/ffiasm derive them (spec §7.3):
 * nqr = smallest quadratic non-residue (5 for BN254 and BLS12-381), r-1 = t·2^s,
 * w[s] = nqr^t, w[k] = w[k+1]^2. For BLS12-381 this is NOT the 7-based root used by
 * arkworks/blst; the odd-coset shift of §4.2 is w[lg+1], not a multiplicative generator.
 *
 * Vectors are n = 2^lg elements of fe_n(Fr) = 4 limbs each, Montgomery form, in
 * natural order on input and output. Transforms are in place and deterministic: the
 * result does not depend on the thread count. */
#ifndef CUZK_NTT_H
#define CUZK_NTT_H

#include <stddef.h>
#include <stdint.h>

#include "zk/field.h"

typedef struct ntt_domain {
    const field_desc *Fr;
    unsigned lg; /* n = 2^lg */
    size_t n;
    uint64_t omega[4]; /* primitive n-th root w[lg] (Montgomery) */
    uint64_t omega_inv[4];
    uint64_t n_inv[4];        /* 1/n (Montgomery) */
    uint64_t coset[4];        /* snarkjs's odd-coset shift w[lg+1] (Montgomery) */
    uint64_t *tw;             /* forward twiddles: tw[m + j] = w[2m]^j for m = 1, 2, ..., n/2,
                                  * j < m (n elements, tw[0] unused), so each stage is contiguous */
    uint64_t *tw_inv;         /* the same for omega_inv */
    uint64_t *coset_scale_br; /* coset^i / n stored at bitrev(i), i < n (Montgomery): the
                                  * inverse's 1/n and the coset shift as one product, in the
                                  * order ntt_to_odd_coset's DIF pass leaves the elements */
} ntt_domain;

/* Builds the domain of size 2^lg (about 96·n bytes; 21 ms at 2^16, 0.4 s at 2^20 on
 * one core, a third of it page faults): roots, 1/n, twiddle tables (3·n elements, 64-byte
 * aligned). The roots are checked (ω^(2^lg) = 1, ω^(2^(lg-1)) ≠ 1, coset^2 = ω) as a
 * guard against a bug in their derivation.
 * Returns 0, -EINVAL when Fr has not 4 limbs or lg + 1 > its 2-adicity s (28 for BN254,
 * 32 for BLS12-381: the odd coset needs w[lg+1]) or a root check fails, -ENOMEM.
 * On failure *d holds no allocation (ntt_domain_free on it is harmless). */
int ntt_domain_init(ntt_domain *d, const field_desc *Fr, unsigned lg);

/* Frees the tables; accepts NULL and a zeroed or failed domain. */
void ntt_domain_free(ntt_domain *d);

/* Process-wide cache of domains, so a long-lived process (the daemon's worker) builds
 * each domain once instead of once per partition — work a one-shot prover cannot
 * amortize. ntt_domain_acquire returns a shared read-only domain (building it on a
 * miss; concurrent callers may share it) that stays alive until the matching
 * ntt_domain_release. Released domains are kept, least recently used first out, while
 * the cache holds no more than its budget; a domain in use is never freed, so the
 * cache can exceed the budget by what callers hold.
 * Returns 0 or ntt_domain_init's error (then *out is NULL). Thread-safe. */
int ntt_domain_acquire(const field_desc *Fr, unsigned lg, const ntt_domain **out);
void ntt_domain_release(const ntt_domain *d);

#define NTT_CACHE_DEFAULT_BUDGET ((size_t)512 << 20)
/* Sets the budget in bytes (0 keeps nothing once released) and trims to it. */
void ntt_cache_set_budget(size_t bytes);

typedef struct ntt_cache_stats {
    size_t bytes;     /* table bytes held now, in use or kept */
    unsigned domains; /* domains held now */
    uint64_t hits, misses, evictions;
} ntt_cache_stats;
void ntt_cache_get_stats(ntt_cache_stats *out);

/* The primitive 2^k-th root w[k] of §7.3 (nqr = smallest non-residue, w[s] = nqr^t,
 * squaring down), Montgomery form, into out (fe_n(Fr) limbs). Returns 0, or -EINVAL
 * if k > s (out unchanged). */
int fr_root_of_unity(const field_desc *Fr, unsigned k, uint64_t *out);

/* In-place transforms over the n elements of v, natural order in and out.
 * threads: worker threads to use (0 = all online CPUs); small sizes run on the
 * calling thread alone. If a thread cannot be created the work is done by fewer. */
void ntt_forward(const ntt_domain *d, uint64_t *v, unsigned threads); /* v[j] = sum_i v[i] w^(ij) */
void ntt_inverse(const ntt_domain *d, uint64_t *v, unsigned threads); /* includes the 1/n factor */

/* snarkjs §4.2: inverse NTT, multiply element i by coset^i, forward NTT; afterwards
 * v[j] = P(coset·ω^j) for the interpolant P of the input over {ω^i}. */
void ntt_to_odd_coset(const ntt_domain *d, uint64_t *v, unsigned threads);

#endif
