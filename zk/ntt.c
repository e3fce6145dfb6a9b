/* ntt.c — radix-2/4 NTTs over BN254 and BLS12-381 Fr with snarkjs's roots (spec §4.2, §7.3).
 *
 * Forward transform, decimation in time: bit-reverse permutation, then log2(n) butterfly
 * stages m = 1, 2, ..., n/2 (a, b) -> (a + w b, a - w b), w = w[2m]^j from the per-stage
 * contiguous table tw[m + j]. The inverse is the same with omega^-1, then 1/n.
 *
 * Threads split the work in two phases so that there are few barriers:
 *  - the first stages (m < B, B = 2^12 elements = 128 KiB, an L2-sized block) only
 *    mix elements inside aligned blocks of B: each thread takes whole blocks and runs
 *    all those stages on a block while it is in cache;
 *  - the remaining lg - 12 stages run over the whole vector, two at a time as one
 *    radix-4 pass (half the memory traffic of two radix-2 passes, same 4 products per
 *    4 elements), each pass split into contiguous ranges with a barrier after it.
 * The arithmetic per element is the same whatever the split, so results are identical
 * for every thread count.
 *
 * The odd-coset transform (what the prover runs, three times per proof) avoids both
 * bit-reversal passes: the inverse runs decimation in frequency (Gentleman-Sande:
 * natural order in, bit-reversed out, same blocking mirrored: global radix-4 passes
 * first, then in-cache blocks), the scale by 1/n·coset^i is one product per element
 * from a table already in bit-reversed order, and the forward DIT starts from that
 * order. Measured at 2^16 on 2 threads: see the commit that introduced it.
 *
 * The odd coset's middle (the DIF's in-cache stages, the scale, the DIT's in-cache
 * stages) is one pass over each block (kernel block_coset), not three with a barrier
 * between each.
 *
 * Two sets of kernels (struct ntt_kernels, ntt_kernels.h), the same bits out:
 *  - the AVX-512 IFMA lanes (zk/ntt_lanes.h), 8 elements a lane product, where
 *    ifma_available() (CUZK_NO_IFMA=1 turns them off). Measured with prove-local
 *    --timings, 2 threads, interleaved medians, load 5-6 on this 2-core AMD EPYC VM:
 *    the ntt line (3 coset transforms, domain, h) 0.233 -> 0.045 s at BN254 2^16,
 *    0.87 -> 0.20 s at 2^18, 0.158 -> 0.037 s at BLS12-381 2^16; bench/ntt one
 *    thread at 2^16, odd coset, 500-1100 -> 130-170 ns/element (same load);
 *  - the scalar ones (field.h's mulx products): inline bodies specialised per field
 *    and instantiated once each, out of line, for the two Fr fields; FIELD_DISPATCH
 *    would also instantiate dead 6-limb Fq copies. */
#include "zk/ntt.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zk/ifma.h"
#include "base/hugemem.h"
#include "zk/team.h"
#include "ntt_kernels.h"

#define NTT_LIMBS       4
#define NTT_LOCAL_LG    12 /* block of 2^12 elements (128 KiB) for the in-cache stages */
#define NTT_MT_MIN_LG   12 /* below 2^12 elements one thread: hand-over cost > the work */
#define NTT_MAX_THREADS 256

typedef uint64_t fe4[NTT_LIMBS];

/* ---- roots (§7.3) -------------------------------------------------------- */

/* r - 1 = t * 2^s with t odd; s returned, t into t (n limbs). */
static unsigned fr_two_adicity(const field_desc *F, uint64_t *t)
{
    const unsigned n = fe_n(F);
    unsigned s = 0;
    memcpy(t, F->p, n * sizeof *t);
    t[0] -= 1; /* p odd: no borrow */
    while (!(t[0] & 1)) {
        for (unsigned i = 0; i < n; i++) t[i] = (t[i] >> 1) | (i + 1 < n ? t[i + 1] << 63 : 0);
        s++;
    }
    return s;
}

int fr_root_of_unity(const field_desc *F, unsigned k, uint64_t *out)
{
    const unsigned n = fe_n(F);
    uint64_t t[FE_MAX_LIMBS], half[FE_MAX_LIMBS], minus1[FE_MAX_LIMBS], x[FE_MAX_LIMBS], y[FE_MAX_LIMBS];
    unsigned s = fr_two_adicity(F, t);

    if (k > s) return -EINVAL;
    /* (r-1)/2 */
    memcpy(half, F->p, n * sizeof *half);
    half[0] -= 1;
    for (unsigned i = 0; i < n; i++) half[i] = (half[i] >> 1) | (i + 1 < n ? half[i + 1] << 63 : 0);
    fe_neg(F, minus1, F->one);
    /* nqr: the smallest integer >= 2 with nqr^((r-1)/2) = -1 (Euler's criterion). */
    for (uint64_t c = 2;; c++) {
        uint64_t cc[FE_MAX_LIMBS] = { c };
        fe_to_mont(F, x, cc);
        fe_pow(F, y, x, half, n);
        if (fe_eq(F, y, minus1)) break;
    }
    fe_pow(F, y, x, t, n); /* w[s] = nqr^t */
    for (unsigned i = s; i > k; i--) fe_sqr(F, y, y);
    fe_copy(F, out, y);
    return 0;
}

/* ---- domain -------------------------------------------------------------- */

static size_t bitrev(size_t i, unsigned lg)
{
    if (lg == 0) return 0; /* the shift below would be by 64 */
    uint64_t x = i;
    x = ((x >> 1) & 0x5555555555555555ULL) | ((x & 0x5555555555555555ULL) << 1);
    x = ((x >> 2) & 0x3333333333333333ULL) | ((x & 0x3333333333333333ULL) << 2);
    x = ((x >> 4) & 0x0f0f0f0f0f0f0f0fULL) | ((x & 0x0f0f0f0f0f0f0f0fULL) << 4);
    x = __builtin_bswap64(x);
    return (size_t)(x >> (64 - lg));
}

/* A table of count elements (huge pages from 2 MiB, 2^16 elements, on: the domain
 * build's time was mostly first-touch page faults, base/hugemem.c). */
static uint64_t *fe_vec_alloc(size_t count)
{
    return huge_alloc(count * NTT_LIMBS * sizeof(uint64_t));
}

/* out[i] = x0·w^i for i < count: through the IFMA lanes where they run (count a
 * multiple of 8), else one serial product an element. The same bits either way. */
static void ntt_powers(const field_desc *F, uint64_t *out, const uint64_t *x0, const uint64_t *w,
                       size_t count)
{
#if defined(__x86_64__)
    if (count >= 8 && count % 8 == 0 && ifma_available()) {
        (F->id == FIELD_ID_BN254_FR ? ntt_lanes_pow_bn254 : ntt_lanes_pow_bls12_381)(out, x0, w, count);
        return;
    }
#endif
    if (count) fe_copy(F, out, x0);
    for (size_t i = 1; i < count; i++) fe_mul(F, out + i * NTT_LIMBS, out + (i - 1) * NTT_LIMBS, w);
}

static void ntt_bitrev_range(uint64_t *v, unsigned lg, size_t lo, size_t hi);

/* tw[m + j] = w^(j n / 2m) for m = 1 .. n/2, j < m, from the last stage's powers. */
static void ntt_twiddles(const field_desc *F, uint64_t *tw, const uint64_t *w, size_t n)
{
    if (n < 2) return;
    size_t h = n / 2;
    ntt_powers(F, tw + h * NTT_LIMBS, F->one, w, h);
    for (size_t m = h / 2; m >= 1; m /= 2) /* w[2m]^j = w[4m]^(2j) */
        for (size_t j = 0; j < m; j++) fe_copy(F, tw + (m + j) * NTT_LIMBS, tw + (2 * m + 2 * j) * NTT_LIMBS);
}

/* ω^(2^lg) = 1 and, for lg >= 1, ω^(2^(lg-1)) = -1 ≠ 1. */
static bool ntt_root_is_primitive(const field_desc *F, const uint64_t *w, unsigned lg)
{
    uint64_t x[FE_MAX_LIMBS], prev[FE_MAX_LIMBS];
    fe_copy(F, x, w);
    fe_copy(F, prev, w);
    for (unsigned i = 0; i < lg; i++) {
        fe_copy(F, prev, x);
        fe_sqr(F, x, x);
    }
    if (!fe_eq(F, x, F->one)) return false;
    return lg == 0 || !fe_eq(F, prev, F->one);
}

void ntt_domain_free(ntt_domain *d)
{
    if (!d) return;
    free(d->tw);
    free(d->tw_inv);
    free(d->coset_scale_br);
    d->tw = d->tw_inv = d->coset_scale_br = NULL;
}

int ntt_domain_init(ntt_domain *d, const field_desc *F, unsigned lg)
{
    uint64_t t[FE_MAX_LIMBS], x[FE_MAX_LIMBS];
    int rc;

    memset(d, 0, sizeof *d);
    if (F->id != FIELD_ID_BN254_FR && F->id != FIELD_ID_BLS12_381_FR) return -EINVAL;
    if (lg + 1 > fr_two_adicity(F, t) || lg >= 8 * sizeof(size_t) - 8) return -EINVAL;
    d->Fr = F;
    d->lg = lg;
    d->n = (size_t)1 << lg;

    if ((rc = fr_root_of_unity(F, lg, d->omega)) || (rc = fr_root_of_unity(F, lg + 1, d->coset))) return rc;
    fe_inv(F, d->omega_inv, d->omega);
    fe_sqr(F, x, d->coset);
    if (!ntt_root_is_primitive(F, d->omega, lg) || !ntt_root_is_primitive(F, d->coset, lg + 1) ||
        !fe_eq(F, x, d->omega))
        return -EINVAL; /* a bug in the root derivation, not a caller error */
    uint64_t nn[FE_MAX_LIMBS] = { (uint64_t)d->n };
    fe_to_mont(F, x, nn);
    fe_inv(F, d->n_inv, x);

    d->tw = fe_vec_alloc(d->n);
    d->tw_inv = fe_vec_alloc(d->n);
    d->coset_scale_br = fe_vec_alloc(d->n);
    if (!d->tw || !d->tw_inv || !d->coset_scale_br) {
        ntt_domain_free(d);
        return -ENOMEM;
    }
    ntt_twiddles(F, d->tw, d->omega, d->n);
    ntt_twiddles(F, d->tw_inv, d->omega_inv, d->n);
    fe_set_one(F, d->tw); /* unused slot, defined anyway */
    fe_set_one(F, d->tw_inv);
    /* coset_scale_br[bitrev(i)] = coset^i / n: the powers in order, then permuted to where the
     * DIF output holds element i */
    ntt_powers(F, d->coset_scale_br, d->n_inv, d->coset, d->n);
    ntt_bitrev_range(d->coset_scale_br, lg, 0, d->n);
    return 0;
}

/* ---- the process-wide domain cache ------------------------------------------ */

struct ntt_cache_entry {
    ntt_domain d; /* first: ntt_domain_release finds the entry from &d */
    unsigned refs;
    uint64_t last_use; /* cache clock at the last acquire */
    struct ntt_cache_entry *next;
};

static struct {
    pthread_mutex_t lock;
    pthread_cond_t built; /* signalled when building goes back to 0 */
    bool building;        /* a domain is being built outside the lock */
    struct ntt_cache_entry *head;
    size_t budget, bytes;
    unsigned domains;
    uint64_t clock, hits, misses, evictions;
} ntt_cache = { .lock = PTHREAD_MUTEX_INITIALIZER,
                .built = PTHREAD_COND_INITIALIZER,
                .budget = NTT_CACHE_DEFAULT_BUDGET };

static size_t ntt_domain_bytes(const ntt_domain *d)
{
    return 3 * d->n * NTT_LIMBS * sizeof(uint64_t);
}

/* Frees unused entries, least recently used first, until the cache fits its budget.
 * Called with the lock held. */
static void ntt_cache_trim_locked(void)
{
    while (ntt_cache.bytes > ntt_cache.budget) {
        struct ntt_cache_entry **victim = NULL;
        for (struct ntt_cache_entry **pp = &ntt_cache.head; *pp; pp = &(*pp)->next)
            if (!(*pp)->refs && (!victim || (*pp)->last_use < (*victim)->last_use)) victim = pp;
        if (!victim) return; /* everything left is in use */
        struct ntt_cache_entry *e = *victim;
        *victim = e->next;
        ntt_cache.bytes -= ntt_domain_bytes(&e->d);
        ntt_cache.domains--;
        ntt_cache.evictions++;
        ntt_domain_free(&e->d);
        free(e);
    }
}

int ntt_domain_acquire(const field_desc *Fr, unsigned lg, const ntt_domain **out)
{
    *out = NULL;
    pthread_mutex_lock(&ntt_cache.lock);
    for (;;) {
        for (struct ntt_cache_entry *e = ntt_cache.head; e; e = e->next)
            if (e->d.Fr->id == Fr->id && e->d.lg == lg) {
                e->refs++;
                e->last_use = ++ntt_cache.clock;
                ntt_cache.hits++;
                pthread_mutex_unlock(&ntt_cache.lock);
                *out = &e->d;
                return 0;
            }
        if (!ntt_cache.building) break;
        /* One build at a time (builds are once per domain): a thread missing while
         * another builds waits and looks again, so two partitions of a new circuit
         * proved side by side (the CPU worker's in-flight threads) build its domain once. */
        pthread_cond_wait(&ntt_cache.built, &ntt_cache.lock);
    }
    ntt_cache.misses++;
    ntt_cache.building = true;
    pthread_mutex_unlock(&ntt_cache.lock);

    /* Built outside the lock (0.4 s at 2^20): hits on other domains go on meanwhile. */
    struct ntt_cache_entry *e = calloc(1, sizeof *e);
    int rc = e ? ntt_domain_init(&e->d, Fr, lg) : -ENOMEM;
    pthread_mutex_lock(&ntt_cache.lock);
    ntt_cache.building = false;
    pthread_cond_broadcast(&ntt_cache.built);
    if (rc) {
        pthread_mutex_unlock(&ntt_cache.lock);
        free(e);
        return rc;
    }
    e->refs = 1;
    e->last_use = ++ntt_cache.clock;
    e->next = ntt_cache.head;
    ntt_cache.head = e;
    ntt_cache.bytes += ntt_domain_bytes(&e->d);
    ntt_cache.domains++;
    ntt_cache_trim_locked();
    pthread_mutex_unlock(&ntt_cache.lock);
    *out = &e->d;
    return 0;
}

void ntt_domain_release(const ntt_domain *d)
{
    if (!d) return;
    pthread_mutex_lock(&ntt_cache.lock);
    struct ntt_cache_entry *e = (struct ntt_cache_entry *)d; /* d is the entry's first member */
    if (e->refs) e->refs--;
    ntt_cache_trim_locked();
    pthread_mutex_unlock(&ntt_cache.lock);
}

void ntt_cache_set_budget(size_t bytes)
{
    pthread_mutex_lock(&ntt_cache.lock);
    ntt_cache.budget = bytes;
    ntt_cache_trim_locked();
    pthread_mutex_unlock(&ntt_cache.lock);
}

void ntt_cache_get_stats(ntt_cache_stats *out)
{
    pthread_mutex_lock(&ntt_cache.lock);
    *out = (ntt_cache_stats){ .bytes = ntt_cache.bytes,
                              .domains = ntt_cache.domains,
                              .hits = ntt_cache.hits,
                              .misses = ntt_cache.misses,
                              .evictions = ntt_cache.evictions };
    pthread_mutex_unlock(&ntt_cache.lock);
}

/* ---- transform bodies ---------------------------------------------------- */

enum ntt_op { NTT_OP_FORWARD, NTT_OP_INVERSE, NTT_OP_COSET };

struct ntt_job {
    const ntt_domain *d;
    uint64_t *v;
    enum ntt_op op;
    const struct ntt_kernels *K;
    unsigned nt; /* threads taking part; set by part 0 before the gate opens */
    pthread_barrier_t bar;
    pthread_mutex_t lock; /* gate: the parts start once nt is final */
    pthread_cond_t cond;
    bool go;
};

static void ntt_sync(struct ntt_job *job)
{
    if (job->nt > 1) pthread_barrier_wait(&job->bar);
}

/* Part tid of nt of [0, total), in units of 8 where total is a multiple of 8 (the lane
 * kernels take 8 elements at a time; the scalar ones any range). */
static void ntt_range(size_t total, unsigned tid, unsigned nt, size_t *lo, size_t *hi)
{
    const size_t u = total % 8 ? 1 : 8, units = total / u;
    *lo = u * (units / nt * tid + (tid < units % nt ? tid : units % nt));
    *hi = *lo + u * (units / nt + (tid < units % nt));
}

/* Swaps i <-> rev(i) for i in [lo, hi) with i < rev(i): each pair is owned by the
 * thread holding its smaller index, so ranges never touch the same pair. */
static void ntt_bitrev_range(uint64_t *v, unsigned lg, size_t lo, size_t hi)
{
    for (size_t i = lo; i < hi; i++) {
        size_t r = bitrev(i, lg);
        if (i < r) {
            fe4 t;
            memcpy(t, v + i * NTT_LIMBS, sizeof t);
            memcpy(v + i * NTT_LIMBS, v + r * NTT_LIMBS, sizeof t);
            memcpy(v + r * NTT_LIMBS, t, sizeof t);
        }
    }
}

/* (a, b) <- (a + w b, a - w b) */
CUZK_HD void ntt_bfly(const field_desc *F, uint64_t *a, uint64_t *b, const uint64_t *w)
{
    fe4 t;
    fe_mul_inline(F, t, b, w);
    fe_sub(F, b, a, t);
    fe_add(F, a, a, t);
}

/* Gentleman-Sande butterfly: (a, b) <- (a + b, (a - b) w) */
CUZK_HD void ntt_bfly_dif(const field_desc *F, uint64_t *a, uint64_t *b, const uint64_t *w)
{
    fe4 t;
    fe_sub(F, t, a, b);
    fe_add(F, a, a, b);
    fe_mul_inline(F, b, t, w);
}

/* (a, b) <- (a + b, a - b): either butterfly with twiddle 1 */
CUZK_HD void ntt_bfly_1(const field_desc *F, uint64_t *a, uint64_t *b)
{
    fe4 t;
    fe_copy(F, t, b);
    fe_sub(F, b, a, t);
    fe_add(F, a, a, t);
}

/* All stages m = 1 .. B/2 on the block of B = 2^lb elements at blk (bit-reversed order). */
CUZK_HD void ntt_block(const field_desc *F, uint64_t *blk, unsigned lb, const uint64_t *tw)
{
    const size_t B = (size_t)1 << lb;
    if (lb == 0) return;
    for (size_t i = 0; i < B; i += 2) /* m = 1: the twiddle is 1 */
        ntt_bfly_1(F, blk + i * NTT_LIMBS, blk + (i + 1) * NTT_LIMBS);
    /* j = 0 has twiddle 1: skipping its product saves ~n of the (n/2)·lg products */
    for (size_t m = 2; m < B; m *= 2)
        for (size_t g = 0; g < B; g += 2 * m) {
            ntt_bfly_1(F, blk + g * NTT_LIMBS, blk + (g + m) * NTT_LIMBS);
            for (size_t j = 1; j < m; j++)
                ntt_bfly(F, blk + (g + j) * NTT_LIMBS, blk + (g + j + m) * NTT_LIMBS,
                         tw + (m + j) * NTT_LIMBS);
        }
}

/* Radix-2 stage m (= 2^lgm) over butterflies k in [lo, hi) of the n/2: elements i and
 * i+m with i = (k / m)·2m + k mod m. dif: Gentleman-Sande butterflies, else
 * Cooley-Tukey (a constant: each caller's loop has one kind). */
CUZK_HD void ntt_stage2_any(const field_desc *F, uint64_t *v, unsigned lgm, const uint64_t *tw, size_t lo,
                            size_t hi, bool dif)
{
    const size_t m = (size_t)1 << lgm;
    for (size_t k = lo; k < hi; k++) {
        size_t j = k & (m - 1), i = ((k >> lgm) << (lgm + 1)) + j;
        uint64_t *a = v + i * NTT_LIMBS, *b = v + (i + m) * NTT_LIMBS;
        if (dif)
            ntt_bfly_dif(F, a, b, tw + (m + j) * NTT_LIMBS);
        else
            ntt_bfly(F, a, b, tw + (m + j) * NTT_LIMBS);
    }
}

/* Stages m and 2m (m = 2^lgm) fused, over the quadruples k in [lo, hi) of the n/4:
 * elements i, i+m, i+2m, i+3m with i = (k / m)·4m + k mod m. Forward (Cooley-Tukey):
 * stage m, then 2m. dif (Gentleman-Sande, the mirror): first (x0, x2) and (x1, x3) at
 * stage 2m, then (x0, x1) and (x2, x3) at stage m. */
CUZK_HD void ntt_stage4_any(const field_desc *F, uint64_t *v, unsigned lgm, const uint64_t *tw, size_t lo,
                            size_t hi, bool dif)
{
    const size_t m = (size_t)1 << lgm;
    for (size_t k = lo; k < hi; k++) {
        size_t j = k & (m - 1), i = ((k >> lgm) << (lgm + 2)) + j;
        uint64_t *x0 = v + i * NTT_LIMBS, *x1 = x0 + m * NTT_LIMBS, *x2 = x1 + m * NTT_LIMBS,
                 *x3 = x2 + m * NTT_LIMBS;
        const uint64_t *w1 = tw + (m + j) * NTT_LIMBS, *w2 = tw + (2 * m + j) * NTT_LIMBS,
                       *w3 = w2 + m * NTT_LIMBS;
        if (dif) {
            ntt_bfly_dif(F, x0, x2, w2); /* stage 2m: x1 sits at j + m in its group */
            ntt_bfly_dif(F, x1, x3, w3);
            ntt_bfly_dif(F, x0, x1, w1); /* stage m */
            ntt_bfly_dif(F, x2, x3, w1);
        } else {
            ntt_bfly(F, x0, x1, w1); /* stage m */
            ntt_bfly(F, x2, x3, w1);
            ntt_bfly(F, x0, x2, w2); /* stage 2m: x1 sits at j + m in its group */
            ntt_bfly(F, x1, x3, w3);
        }
    }
}

/* DIF mirror of ntt_block: stages m = B/2 .. 1 on the block of B = 2^lb elements,
 * natural order in, bit-reversed (within the block) out. */
CUZK_HD void ntt_block_dif(const field_desc *F, uint64_t *blk, unsigned lb, const uint64_t *tw)
{
    const size_t B = (size_t)1 << lb;
    for (size_t m = B / 2; m >= 2; m /= 2)
        for (size_t g = 0; g < B; g += 2 * m) {
            ntt_bfly_1(F, blk + g * NTT_LIMBS, blk + (g + m) * NTT_LIMBS);
            for (size_t j = 1; j < m; j++)
                ntt_bfly_dif(F, blk + (g + j) * NTT_LIMBS, blk + (g + j + m) * NTT_LIMBS,
                             tw + (m + j) * NTT_LIMBS);
        }
    if (lb) /* m = 1 */
        for (size_t i = 0; i < B; i += 2) ntt_bfly_1(F, blk + i * NTT_LIMBS, blk + (i + 1) * NTT_LIMBS);
}

/* v[i] *= s for i in [lo, hi) */
CUZK_HD void ntt_scale(const field_desc *F, uint64_t *v, const uint64_t *s, size_t lo, size_t hi)
{
    for (size_t i = lo; i < hi; i++) fe_mul_inline(F, v + i * NTT_LIMBS, v + i * NTT_LIMBS, s);
}

/* The odd coset's middle on one block: DIF with tw_inv, blk[i] *= tab[i], DIT with tw. */
CUZK_HD void ntt_block_coset(const field_desc *F, uint64_t *blk, unsigned lb, const uint64_t *tw_inv,
                             const uint64_t *tab, const uint64_t *tw)
{
    ntt_block_dif(F, blk, lb, tw_inv);
    for (size_t i = 0; i < (size_t)1 << lb; i++)
        fe_mul_inline(F, blk + i * NTT_LIMBS, blk + i * NTT_LIMBS, tab + i * NTT_LIMBS);
    ntt_block(F, blk, lb, tw);
}

/* One out-of-line copy of each kernel per field (struct ntt_kernels, ntt_kernels.h).
 * Inlining them all into one transform function made a 200 KB body with a 40 KB stack
 * frame whose spills tripled the time per butterfly (perf: 650 ns/element at 2^16 vs
 * 2xx after the split). */

/* The kernels of one field, each with the field F a constant (one line each). */
/* clang-format off */
#define NTT_INSTANCE(sfx, F)                                                                                       \
    static void block_##sfx(uint64_t *b, unsigned lb, const uint64_t *tw) { ntt_block(F, b, lb, tw); }            \
    static void block_dif_##sfx(uint64_t *b, unsigned lb, const uint64_t *tw) { ntt_block_dif(F, b, lb, tw); }    \
    static void stage2_##sfx(uint64_t *v, unsigned lg, const uint64_t *tw, size_t lo, size_t hi)                  \
    { ntt_stage2_any(F, v, lg, tw, lo, hi, false); }                                                              \
    static void stage2_dif_##sfx(uint64_t *v, unsigned lg, const uint64_t *tw, size_t lo, size_t hi)              \
    { ntt_stage2_any(F, v, lg, tw, lo, hi, true); }                                                               \
    static void stage4_##sfx(uint64_t *v, unsigned lg, const uint64_t *tw, size_t lo, size_t hi)                  \
    { ntt_stage4_any(F, v, lg, tw, lo, hi, false); }                                                              \
    static void stage4_dif_##sfx(uint64_t *v, unsigned lg, const uint64_t *tw, size_t lo, size_t hi)              \
    { ntt_stage4_any(F, v, lg, tw, lo, hi, true); }                                                               \
    static void scale_##sfx(uint64_t *v, const uint64_t *s, size_t lo, size_t hi)                                 \
    { ntt_scale(F, v, s, lo, hi); }                                                                               \
    static void block_coset_##sfx(uint64_t *b, unsigned lb, const uint64_t *twi, const uint64_t *tab,             \
                                  const uint64_t *tw)                                                             \
    { ntt_block_coset(F, b, lb, twi, tab, tw); }                                                                  \
    static const struct ntt_kernels NTT_KERNELS_##sfx = { block_##sfx,     stage2_##sfx,     stage4_##sfx,        \
                                                          scale_##sfx,     block_dif_##sfx,  stage2_dif_##sfx,    \
                                                          stage4_dif_##sfx, block_coset_##sfx };
/* clang-format on */
NTT_INSTANCE(BN254, &FIELD_BN254_FR)
NTT_INSTANCE(BLS12_381, &FIELD_BLS12_381_FR)

/* Block size 2^lb for the in-cache stages: at least one block per thread, at most
 * 2^NTT_LOCAL_LG elements. */
static unsigned ntt_block_lg(unsigned lg, unsigned nt)
{
    unsigned lt = 0;
    while ((1u << lt) < nt) lt++;
    unsigned lb = lg > lt ? lg - lt : 0;
    return lb > NTT_LOCAL_LG ? NTT_LOCAL_LG : lb;
}

/* One pass of the global stages: this thread's share of stage lgm's `units` (n/2
 * butterflies for a radix-2 stage, n/4 quadruples for a fused pair), then the barrier. */
static void ntt_pass(struct ntt_job *job, unsigned tid,
                     void (*stage)(uint64_t *v, unsigned lgm, const uint64_t *tw, size_t lo, size_t hi),
                     size_t units, unsigned lgm, const uint64_t *tw)
{
    size_t lo, hi;

    ntt_range(units, tid, job->nt, &lo, &hi);
    stage(job->v, lgm, tw, lo, hi);
    ntt_sync(job);
}

/* One thread's share of the global DIF stages m = n/2 .. B (as lgm = lg-1 .. lb) of
 * table tw. */
static void ntt_dif_global(const struct ntt_kernels *K, struct ntt_job *job, unsigned tid, const uint64_t *tw,
                           unsigned lb)
{
    const unsigned lg = job->d->lg;
    const size_t n = job->d->n;
    unsigned lgm = lg - 1;

    /* An odd count: the largest stage alone; then stages lgm and lgm-1, both >= lb. */
    if ((lg - lb) & 1) ntt_pass(job, tid, K->stage2_dif, n / 2, lgm--, tw);
    for (; lgm + 1 >= lb + 2; lgm -= 2) ntt_pass(job, tid, K->stage4_dif, n / 4, lgm - 1, tw);
}

/* The global DIT stages m = B .. n/2 of table tw. */
static void ntt_dit_global(const struct ntt_kernels *K, struct ntt_job *job, unsigned tid, const uint64_t *tw,
                           unsigned lb)
{
    const unsigned lg = job->d->lg;
    const size_t n = job->d->n;
    unsigned lgm = lb;

    /* An odd count: one radix-2 stage first; then stages lgm and lgm+1, both < lg. */
    if ((lg - lb) & 1) ntt_pass(job, tid, K->stage2, n / 2, lgm++, tw);
    for (; lgm + 2 <= lg; lgm += 2) ntt_pass(job, tid, K->stage4, n / 4, lgm, tw);
}

/* One thread's share of an unscaled DIT transform with table tw; the input is in
 * natural order (permuted here). Ends with a barrier. */
static void ntt_dit(const struct ntt_kernels *K, struct ntt_job *job, unsigned tid, const uint64_t *tw)
{
    const ntt_domain *d = job->d;
    const unsigned nt = job->nt, lg = d->lg, lb = ntt_block_lg(lg, nt);
    uint64_t *v = job->v;
    size_t lo, hi;

    ntt_range(d->n, tid, nt, &lo, &hi);
    ntt_bitrev_range(v, lg, lo, hi);
    ntt_sync(job);
    for (size_t b = tid; b < (d->n >> lb); b += nt) K->block(v + (b << lb) * NTT_LIMBS, lb, tw);
    ntt_sync(job);
    ntt_dit_global(K, job, tid, tw, lb);
}

/* The kernels for the field of d: the IFMA lanes where the CPU has them (and
 * CUZK_NO_IFMA is not 1) and n >= 8, else the scalar ones. Both give the same bits
 * (test_ntt checks it). */
static const struct ntt_kernels *ntt_kernels_for(const ntt_domain *d)
{
    const bool bn = d->Fr->id == FIELD_ID_BN254_FR; /* init admits no other than the two */
#if defined(__x86_64__)
    if (d->lg >= 3 && ifma_available()) return bn ? &ntt_lanes_bn254 : &ntt_lanes_bls12_381;
#endif
    return bn ? &NTT_KERNELS_BN254 : &NTT_KERNELS_BLS12_381;
}

static void ntt_run(struct ntt_job *job, unsigned tid)
{
    const ntt_domain *d = job->d;
    const struct ntt_kernels *K = job->K;
    const unsigned lb = ntt_block_lg(d->lg, job->nt);
    size_t lo, hi;

    switch (job->op) {
    case NTT_OP_FORWARD: ntt_dit(K, job, tid, d->tw); return;
    case NTT_OP_INVERSE:
        ntt_dit(K, job, tid, d->tw_inv);
        ntt_range(d->n, tid, job->nt, &lo, &hi);
        K->scale(job->v, d->n_inv, lo, hi);
        return;
    case NTT_OP_COSET:
        /* DIF inverse (natural in, bit-reversed out), the scale in bit-reversed order,
         * DIT forward from there: no permutation pass; the middle (the last DIF
         * stages, the scale, the first DIT stages) is one pass over each block. */
        ntt_dif_global(K, job, tid, d->tw_inv, lb);
        for (size_t b = tid; b < (d->n >> lb); b += job->nt)
            K->block_coset(job->v + (b << lb) * NTT_LIMBS, lb, d->tw_inv,
                           d->coset_scale_br + (b << lb) * NTT_LIMBS, d->tw);
        ntt_sync(job);
        ntt_dit_global(K, job, tid, d->tw, lb);
        return;
    }
}

/* ---- threads --------------------------------------------------------------- */

/* One part of team_run (the process's persistent threads, team.h). The barrier
 * needs the number of parts, which team_run fixes only as the parts start: part 0
 * sets nt and the barrier up, the others wait at the gate until it has. */
static void ntt_part(void *arg, unsigned part, unsigned nparts)
{
    struct ntt_job *job = arg;

    pthread_mutex_lock(&job->lock);
    if (part == 0) {
        job->nt = nparts;
        if (nparts > 1) pthread_barrier_init(&job->bar, NULL, nparts);
        job->go = true;
        pthread_cond_broadcast(&job->cond);
    }
    while (!job->go) pthread_cond_wait(&job->cond, &job->lock);
    pthread_mutex_unlock(&job->lock);
    ntt_run(job, part);
}

static unsigned ntt_threads(const ntt_domain *d, unsigned threads)
{
    if (threads == 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        threads = c > 0 ? (unsigned)c : 1;
    }
    if (d->lg < NTT_MT_MIN_LG) return 1;
    if (threads > NTT_MAX_THREADS) threads = NTT_MAX_THREADS;
    return threads;
}

static void ntt_exec(const ntt_domain *d, uint64_t *v, enum ntt_op op, unsigned threads)
{
    struct ntt_job job = { .d = d, .v = v, .op = op, .K = ntt_kernels_for(d), .nt = 1 };
    unsigned want = ntt_threads(d, threads);

    if (d->n < 2) {
        if (op == NTT_OP_INVERSE || op == NTT_OP_COSET) fe_mul(d->Fr, v, v, d->n_inv); /* n_inv = 1 */
        return;
    }
    if (want == 1) {
        ntt_run(&job, 0);
        return;
    }
    /* Fewer parts than wanted (no thread to be had) just split the work fewer ways. */
    pthread_mutex_init(&job.lock, NULL);
    pthread_cond_init(&job.cond, NULL);
    team_run(want, ntt_part, &job);
    if (job.nt > 1) pthread_barrier_destroy(&job.bar);
    pthread_cond_destroy(&job.cond);
    pthread_mutex_destroy(&job.lock);
}

void ntt_forward(const ntt_domain *d, uint64_t *v, unsigned threads)
{
    ntt_exec(d, v, NTT_OP_FORWARD, threads);
}

void ntt_inverse(const ntt_domain *d, uint64_t *v, unsigned threads)
{
    ntt_exec(d, v, NTT_OP_INVERSE, threads);
}

void ntt_to_odd_coset(const ntt_domain *d, uint64_t *v, unsigned threads)
{
    ntt_exec(d, v, NTT_OP_COSET, threads);
}
