/* msm.c — Pippenger multi-scalar multiplication on the host.
 *
 * Plan (one generic body, instantiated once per group through CURVE_DISPATCH):
 *
 *  1. Prepare: drop terms with a zero scalar or a base at infinity; a scalar s above
 *     (r-1)/2 becomes r - s with the base negated, so small negative witness values
 *     (-1 = r - 1) cost as little as small positive ones. The OR of what remains
 *     gives the bit length b that the windows must cover (small witnesses: few windows).
 *  2. Window digits, Booth-style signed: window w of width c reads the c+1 bits
 *     [wc-1, wc+c-1] of s as t and takes d = (t>>1) + (t&1) - 2^c (t>>c), a digit in
 *     [-2^(c-1), 2^(c-1)]; sum_w d_w 2^(wc) = s when the windows cover b+1 bits
 *     (b/c + 1 windows). Every digit is computed on its own from the scalar, with no
 *     carry chain, so any thread can take any window.
 *  3. Tasks = (window, point range). A task adds each base with a nonzero digit into
 *     bucket |d| (the affine base negated when d < 0), then reduces the buckets by
 *     running sums (sum_k k B_k with 2 additions per bucket). Buckets are affine with
 *     batched additions (one inversion per batch, see "batch-affine buckets") when the
 *     window has enough buckets for big batches, else jacobian with mixed additions;
 *     affine buckets are also reduced in batches (msm_aff_reduce), and a short top
 *     window runs on copies of its buckets so that its batches are full (msm_aff_fold).
 *     Threads (the process's persistent set, workers.h) claim tasks from a counter
 *     under a mutex (tasks are milliseconds long).
 *  4. Windows are combined by c doublings between them, most significant first.
 *
 * GLV (msm_prepare_all with phi, from MSM_GLV_MIN terms): step 1 splits each k into +-k1, +-k2
 * of 128 bits with k P = +-k1 P +- k2 phi(P) (curve.h ec_glv_split), so steps 2-4 run
 * on twice the terms with half the windows: the same number of bucket additions, half
 * the bucket reductions and doublings. MSMs over one scalar vector (Groth16's A, B1,
 * B2 and C) can share one split (msm_split_make, msm_run_split).
 *
 * The window width c and the number of point ranges per window come from a cost model
 * (msm_plan) in units of one mixed addition; see the numbers there. */
#include "zk/msm.h"
#include "base/hugemem.h"
#include "zk/ifma.h"
#include "zk/workers.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MSM_MAX_SCALAR_LIMBS 8 /* scalar_bytes <= 64 */
#define MSM_NEG_BIT          (UINT64_C(1) << 63)
#define MSM_PHI_BIT          (UINT64_C(1) << 62) /* GLV: the base's image phi(P), from msm_job.phi */
#define MSM_IDX_MASK         (~(MSM_NEG_BIT | MSM_PHI_BIT))

struct msm_split {
    const field_desc *Fr;
    uint64_t lambda[4];
    size_t count;
    uint64_t *k;  /* entry i: k1 (2 limbs), k2 (2 limbs) of scalar i; all 0 for s = 0 */
    uint8_t *neg; /* entry i: ec_glv_split's sign bits */
};

struct msm_job {
    const curve_group *G;
    const uint8_t *bases;          /* zkey layout, maybe misaligned */
    const uint64_t *phi;           /* GLV: the x of phi(base i) at i, cl limbs (its y is the
                                 base's); NULL without GLV */
    const uint64_t *idx;           /* active term k -> base index; MSM_NEG_BIT: negate the base,
                                 MSM_PHI_BIT: take phi(base) */
    const uint64_t *sc;            /* active term k -> scalar, nl limbs (after the r - s fold) */
    const struct msm_split *split; /* the scalars' GLV split made once (msm_split_make), */
    size_t split_first;            /* from its entry split_first on; NULL: split here */
    size_t nact;                   /* active terms */
    unsigned nl;                   /* limbs per scalar */
    unsigned bits;                 /* bit length of the OR of all active scalars */
    unsigned c, nwin, nsplit, ntasks;
    unsigned batch;       /* batch-affine buckets: additions per shared inversion; 0: jacobian */
    unsigned min_batch;   /* a window whose buckets allow smaller batches goes jacobian */
    uint64_t *partial;    /* task t -> its window partial sum, jacobian */
    pthread_mutex_t lock; /* guards next and err */
    unsigned next;        /* next unclaimed task */
    int err;              /* first error seen by a worker, 0 if none */
};

/* w (<= 32) bits of the scalar s (nl limbs) starting at bit off; bits past the end are 0. */
static inline uint64_t msm_bits(const uint64_t *s, unsigned nl, unsigned off, unsigned w)
{
    unsigned i = off / 64, sh = off % 64;
    if (i >= nl) return 0;
    uint64_t v = s[i] >> sh;
    if (sh + w > 64 && i + 1 < nl) v |= s[i + 1] << (64 - sh);
    return v & ((UINT64_C(1) << w) - 1);
}

/* Signed digit of window w (width c): see step 2 above. */
static inline int msm_digit(const uint64_t *s, unsigned nl, unsigned w, unsigned c)
{
    uint64_t t = w ? msm_bits(s, nl, w * c - 1, c + 1) : msm_bits(s, nl, 0, c) << 1;
    return (int)((t >> 1) + (t & 1)) - (int)((t >> c) << c);
}

/* The scalar of active term k: its own copy (j->sc), or with a shared split the
 * split's entry of the term's input index (k1, or k2 for a phi term), read in place
 * (the copy would be 16 bytes a term more, 8 MiB at 2^18, beside the split). */
static inline const uint64_t *msm_term_sc(const struct msm_job *j, size_t k)
{
    if (!j->split) return j->sc + k * j->nl;
    const uint64_t ix = j->idx[k];
    return j->split->k + 4 * (j->split_first + (ix & MSM_IDX_MASK)) + ((ix & MSM_PHI_BIT) ? 2 : 0);
}

/* Buckets window w can touch: |d| <= 2^(bits - wc) when fewer than c-1 bits remain. */
static inline size_t msm_window_buckets(const struct msm_job *j, unsigned w)
{
    unsigned rem = j->bits > w * j->c ? j->bits - w * j->c : 0;
    return rem < j->c - 1 ? (size_t)1 << rem : (size_t)1 << (j->c - 1);
}

/* Point of base reference ix (MSM_PHI_BIT: phi of the base; MSM_NEG_BIT: negated) into P. */
CUZK_HD void msm_load(const curve_group *G, const struct msm_job *j, uint64_t *P, uint64_t ix)
{
    const unsigned cl = ec_cl(G);
    const size_t pb = 2 * cl * sizeof(uint64_t), i = ix & MSM_IDX_MASK;
    if (ix & MSM_PHI_BIT) { /* phi(P) = (beta x, y) */
        memcpy(P, j->phi + i * cl, cl * sizeof(uint64_t));
        memcpy(P + cl, j->bases + i * pb + cl * sizeof(uint64_t), cl * sizeof(uint64_t));
    } else {
        memcpy(P, j->bases + i * pb, pb);
    }
    if (ix & MSM_NEG_BIT) ecf_neg(G, P + cl, P + cl);
}

/* One task: window w over active terms [lo, hi) into out (jacobian). B holds
 * 2^(c-1) jacobian buckets of scratch. The loop (digits, base loads, negation) is
 * specialised per group by CURVE_DISPATCH; the additions call the per-group
 * out-of-line formulas of zk/curve.c. Inlining them here instead made msm.o 2.9 MB
 * and 70 s of compile time, and was not faster: 2^16 BN254 G1, c = 13, one thread,
 * 2.02 s CPU inlined vs 1.95 s out of line for 3 runs (the call is a few ns on a ~300 ns
 * addition). */
CUZK_HD void msm_task_impl(const curve_group *G, const struct msm_job *j, unsigned w, size_t lo, size_t hi,
                           uint64_t *B, uint64_t *out)
{
    const unsigned jl = 3 * ec_cl(G), nl = j->nl, c = j->c;
    const size_t nb = msm_window_buckets(j, w);
    uint64_t P[EC_MAX_AFF];

    memset(B, 0, nb * jl * sizeof *B); /* Z = 0: every bucket starts at infinity */
    for (size_t k = lo; k < hi; k++) {
        int d = msm_digit(msm_term_sc(j, k), nl, w, c);
        if (d == 0) continue;
        msm_load(G, j, P, j->idx[k] ^ (d < 0 ? MSM_NEG_BIT : 0));
        uint64_t *b = B + (size_t)((d < 0 ? -d : d) - 1) * jl;
        ec_add_aff(G, b, b, P);
    }

    /* sum_k (k+1) B[k]: running = B[top] + ... + B[k], sum += running. */
    uint64_t run[EC_MAX_JAC], sum[EC_MAX_JAC];
    ec_jac_set_inf(G, run);
    ec_jac_set_inf(G, sum);
    for (size_t k = nb; k-- > 0;) {
        ec_add(G, run, run, B + k * jl);
        ec_add(G, sum, sum, run);
    }
    ec_jac_copy(G, out, sum);
}

/* ---- batch-affine buckets ------------------------------------------------------
 *
 * Buckets held in affine form; the additions P + B into distinct buckets are gathered
 * into a batch and done together: lambda = (Py - By) / (Px - Bx) with the inverses of
 * all the denominators from one field inversion (Montgomery's trick), then
 * x3 = lambda^2 - Bx - Px, y3 = lambda (Bx - x3) - By. Per addition that is 6 products
 * (3 for the shared inversion, lambda, lambda^2, y3) against 11 for a mixed jacobian
 * addition, plus 1/batch of an inversion.
 *
 * A bucket already in the open batch cannot take a second addition: that point is
 * deferred and retried after the next flush. When the deferred list is full (many
 * points into one bucket, e.g. scalars that are all 1), or when Px = Bx (doubling
 * or cancellation), the point goes instead into a per-bucket jacobian overflow
 * accumulator with the mixed addition, so the worst case is the jacobian path's cost.
 * The bucket's value is then affine part + jacobian part. */
/* Measured (bench/msm_ntt --buckets, BN254, random scalars, 1 thread, CPU seconds on the
 * shared 2-core EPYC, ranges over 2 runs; mulx products):
 *            jacobian      affine
 *   G1 2^10  0.012         0.031      (c = 8: batches of 32, the inversion dominates)
 *   G1 2^12  0.038-0.040   0.040-0.047
 *   G1 2^14  0.138-0.149   0.104-0.123
 *   G1 2^16  0.48-0.55     0.29-0.37
 *   G2 2^12  0.096-0.121   0.117
 *   G2 2^14  0.34-0.43     0.32-0.36
 *   G2 2^16  1.22-1.51     1.05-1.15
 * so AUTO takes the affine form from batches of 256 (c >= 11) on, for both groups.
 * Batches of a quarter of the buckets, capped at 1024: at 2^16 (c = 13) nb/2, nb/4,
 * nb/8 and nb/16 were within the noise of each other except nb/16 (~20% slower). */
#define MSM_BATCH_MAX           1024
#define MSM_AUTO_MIN_BATCH      256
/* With the IFMA lanes (ifma.h) the affine form wins from far smaller
 * batches: bench/msm_ntt --buckets, 1 thread, forced window, ms (BN254 G1 / G2,
 * BLS12-381 G1 / G2; shared 2-core IFMA box, load 5-8):
 *   2^13 c=8  (batch 32):  jacobian 66 / 162 / 110 / 295   affine 30 / 51 / 67 / 133
 *   2^13 c=10 (batch 128): jacobian 56 / 138 /  92 / 248   affine 18 / 37 / 30 /  73
 *   2^14 c=11 (batch 256): jacobian 112 / 254 / 172 / 457  affine 32 / 67 / 54 / 135
 * so AUTO goes affine from batches of 32 there. (Forced affine at c=9 read slower,
 * 47 ms at 2^13 G1: its top window, 4 buckets, ran batches of 1; AUTO runs such a
 * window jacobian through min_batch.) */
#define MSM_AUTO_MIN_BATCH_IFMA 32
/* One batch-affine bucket addition in mixed additions, for the cost model (msm_plan):
 * MSM_AFFINE_COST(_IFMA) for the addition itself plus MSM_INV_COST_G1/G2 / batch, its
 * share of the batch's one inversion (GMP's gcd, 1.2-1.8 us: about 10 G1 or 4 G2 mixed
 * additions, an Fq2 inverse being one Fq inverse and a few products). At batch 256 that
 * is the 0.25 (IFMA) and 0.7 (mulx) measured from the rows above at 2^14 c=11 less the
 * bucket reduction. Without the inversion term the model saw no cost in small batches
 * and took c = 8 (batches of 32) for BN254 at 2^13, where GLV halves have 127 bits
 * (BLS12-381's 128 took c = 10): GMP's gcd was 23% of that proof's CPU time (perf,
 * cpu-clock samples). bench/msm_ntt, 2^13, 1 thread, CPU ms, min of 5 (shared box,
 * load ~25), BN254 G1 / G2: c=8 27.8 / 54.7, c=9 21.4 / 51.2, c=10 16.1 / 40.3,
 * c=11 18.8 / 51.1; with the term the model takes c = 10. */
#define MSM_AFFINE_COST_IFMA    0.21
#define MSM_AFFINE_COST         0.66
#define MSM_INV_COST_G1         10.0
#define MSM_INV_COST_G2         4.0

static unsigned msm_auto_min_batch(void)
{
    return ifma_available() ? MSM_AUTO_MIN_BATCH_IFMA : MSM_AUTO_MIN_BATCH;
}
#define MSM_DEFER_MAX     512
#define MSM_PREFETCH      6
#define MSM_PREFETCH_RING 8 /* a power of two above MSM_PREFETCH */

struct msm_scratch {
    uint64_t *B;     /* jacobian buckets (jacobian path; overflow of the affine path) */
    uint64_t *A;     /* affine buckets, 2cl limbs each */
    uint32_t *stamp; /* bucket -> id of the batch it is in */
    uint8_t *state;  /* bucket -> MSM_A_FULL | MSM_B_FULL */
    uint64_t *bp;    /* batch: points (2cl), denominators and prefix products (cl each) */
    uint64_t *den, *pre;
    uint32_t *bb;              /* batch: bucket of each addition */
    uint64_t *dref;            /* deferred: base index | MSM_NEG_BIT when negated */
    uint32_t *db;              /* deferred: bucket */
    void *ifma;                /* on an AVX-512 IFMA CPU: scratch of ifma_batch_add_refs */
    const uint64_t **px, **py; /* with ifma: batch: where the point's x and y lie (bases, phi, bp) */
    uint8_t *ng;               /* with ifma: batch: whether y is negated */
    uint64_t *R; /* bucket reduction (msm_aff_reduce): run, sum (affine), xs (jacobian), flags */
};
#define MSM_A_FULL 1
#define MSM_B_FULL 2

struct msm_aff_ctx {
    const struct msm_job *j;
    struct msm_scratch *S;
    unsigned nbat, ndef;
    unsigned batch; /* additions per flush in this window */
    uint32_t cur;   /* id of the open batch */
};

/* Into the jacobian overflow accumulator of bucket b. */
CUZK_HD void msm_aff_overflow(const curve_group *G, struct msm_aff_ctx *x, uint32_t b, const uint64_t *P)
{
    const unsigned jl = 3 * ec_cl(G);
    uint64_t *Bj = x->S->B + (size_t)b * jl;
    if (x->S->state[b] & MSM_B_FULL) {
        ec_add_aff(G, Bj, Bj, P);
    } else {
        ec_jac_from_aff(G, Bj, P);
        x->S->state[b] |= MSM_B_FULL;
    }
}

/* P (affine) as the open batch's next point: copied into bp, which the IFMA flush
 * reads by reference. */
static inline void msm_aff_put(struct msm_aff_ctx *x, const uint64_t *P, unsigned cl)
{
    struct msm_scratch *S = x->S;
    uint64_t *Q = S->bp + (size_t)x->nbat * 2 * cl;
    memcpy(Q, P, 2 * cl * sizeof *P);
    if (S->ifma) {
        S->px[x->nbat] = Q;
        S->py[x->nbat] = Q + cl;
        S->ng[x->nbat] = 0;
    }
}

/* The open batch's additions, with one inversion; then a new batch id. */
CUZK_HD void msm_aff_flush(const curve_group *G, struct msm_aff_ctx *x)
{
    const unsigned cl = ec_cl(G);
    struct msm_scratch *S = x->S;
    const unsigned nb = x->nbat;
    uint64_t inv[EC_MAX_CL], di[EC_MAX_CL], l[EC_MAX_CL], x3[EC_MAX_CL], t[EC_MAX_CL];
    if (nb == 0) return;
    if (S->ifma) { /* the same flush eight lanes at a time, bit for bit (ifma.h): 3-5x per addition */
        ifma_batch_add_refs(G, S->A, S->bb, S->px, S->py, S->ng, nb, S->ifma);
        x->nbat = 0;
        x->cur++;
        return;
    }
    ecf_copy(G, S->pre, S->den);
    for (unsigned i = 1; i < nb; i++) ecf_mul(G, S->pre + i * cl, S->pre + (i - 1) * cl, S->den + i * cl);
    ecf_inv(G, inv, S->pre + (nb - 1) * cl);
    for (unsigned i = nb; i-- > 0;) {
        if (i >= MSM_PREFETCH) {
            const uint64_t *Ab = S->A + (size_t)S->bb[i - MSM_PREFETCH] * 2 * cl;
            __builtin_prefetch(Ab, 1);
            __builtin_prefetch(Ab + 2 * cl - 1, 1);
        }
        if (i > 0) {
            ecf_mul(G, di, inv, S->pre + (i - 1) * cl); /* 1/den_i */
            ecf_mul(G, inv, inv, S->den + i * cl);      /* 1/(den_0 ... den_{i-1}) */
        } else {
            ecf_copy(G, di, inv);
        }
        uint64_t *Bx = S->A + (size_t)S->bb[i] * 2 * cl, *By = Bx + cl;
        const uint64_t *Px = S->bp + (size_t)i * 2 * cl, *Py = Px + cl;
        ec_aff_add_inv(G, Bx, By, Px, Py, di, t, l, x3);
    }
    x->nbat = 0;
    x->cur++;
}

/* Add P (base reference ix) into bucket b: fill an empty bucket, join the open batch,
 * or defer / overflow. */
CUZK_HD void msm_aff_add(const curve_group *G, struct msm_aff_ctx *x, uint32_t b, uint64_t ix)
{
    const unsigned cl = ec_cl(G);
    struct msm_scratch *S = x->S;
    uint64_t *A = S->A + (size_t)b * 2 * cl;
    if (!(S->state[b] & MSM_A_FULL)) {
        msm_load(G, x->j, A, ix);
        S->state[b] |= MSM_A_FULL;
        return;
    }
    if (S->stamp[b] == x->cur) {
        if (x->ndef < MSM_DEFER_MAX) {
            S->dref[x->ndef] = ix;
            S->db[x->ndef++] = b;
        } else {
            uint64_t P[EC_MAX_AFF];
            msm_load(G, x->j, P, ix);
            msm_aff_overflow(G, x, b, P);
        }
        return;
    }
    /* With the lanes the point is not copied into bp: the flush reads x and y where they
     * lie (base, phi image; the zkey's bases may be misaligned, the lanes load unaligned)
     * and negates y itself (ifma_batch_add_refs). Measured against the copy (interleaved
     * whole proofs, 2 threads, 7-9 pairs a run, shared 2-core EPYC, load 2-4.8): CPU ratio
     * medians 0.96, 0.98, 0.97 at 2^16 (0.61-0.79 s), 0.95 and 0.95 at 2^18 (2.5 s);
     * peak RSS the same. */
    if (S->ifma) {
        const struct msm_job *j = x->j;
        const size_t i = ix & MSM_IDX_MASK;
        const uint64_t *Px = (const uint64_t *)(j->bases + i * 2 * cl * sizeof(uint64_t));
        const uint64_t *Py = Px + cl;
        if (ix & MSM_PHI_BIT) Px = j->phi + i * cl;
        if (memcmp(Px, A, cl * sizeof *Px) == 0) { /* P = +-B (x both reduced): rare */
            uint64_t P[EC_MAX_AFF];
            msm_load(G, j, P, ix);
            msm_aff_overflow(G, x, b, P);
            return;
        }
        S->px[x->nbat] = Px;
        S->py[x->nbat] = Py;
        S->ng[x->nbat] = (ix & MSM_NEG_BIT) != 0;
    } else {
        uint64_t *P = S->bp + (size_t)x->nbat * 2 * cl;
        msm_load(G, x->j, P, ix);
        uint64_t *den = S->den + (size_t)x->nbat * cl;
        ecf_sub(G, den, P, A);
        if (ecf_is_zero(G, den)) { /* P = +-B: doubling or cancellation, rare */
            msm_aff_overflow(G, x, b, P);
            return;
        }
    }
    S->stamp[b] = x->cur;
    S->bb[x->nbat++] = b;
}

/* Retry the deferred additions (in place; those that still collide stay). */
CUZK_HD void msm_aff_retry(const curve_group *G, struct msm_aff_ctx *x)
{
    struct msm_scratch *S = x->S;
    unsigned n = x->ndef;
    x->ndef = 0;
    for (unsigned i = 0; i < n; i++) {
        if (x->nbat == x->batch) msm_aff_flush(G, x);
        msm_aff_add(G, x, S->db[i], S->dref[i]);
    }
}

/* ---- batch-affine bucket reduction ---------------------------------------------
 *
 * sum_k (k+1) B_k over the window's nb buckets. The running sums of msm_task_impl are
 * a chain of dependent jacobian additions (one mixed, one general a bucket: 27
 * products); here the buckets are cut into ng groups of m consecutive ones, and each
 * group runs its own running sums from its top bucket down, all groups in step, so
 * that step t is ng independent affine additions run_g += B_(gm+t), then ng more
 * sum_g += run_g, each set one batch of the flush above (one inversion, the IFMA lanes
 * when there are). Then sum_g = sum over the group of (k - gm + 1) B_k and run_g = the
 * group's total, and
 *   sum_k (k+1) B_k = sum_g sum_g + m sum_g g run_g,
 * the last by running sums over the groups (jacobian, 2 additions a group) and log2 m
 * doublings. An empty bucket or sum is (0, 0), not a curve point: an addition into it
 * copies. x equal in run_g += B (the two equal or opposite) is done on its own
 * (jacobian, one inversion: rare, the group's partial sums would have to match); in
 * sum_g += run_g it is common (a group whose only nonempty bucket is at the top
 * doubles at the next step), so run_g goes into a jacobian side sum xs_g instead.
 * Measured (perf, cpu-clock samples, bench/msm_ntt BN254 G1 2^16, 1 thread, IFMA):
 * the chain's ec_add, ec_add_aff and their fe_mul were ~15% of the MSM; after, all
 * fe_mul (group sums, phi, the lanes' 8-way inverse) 5.5%. Callgrind, portable path,
 * same MSM: 4.06 G -> 3.85 G instructions (G2 12.13 G -> 11.53 G). */
#define MSM_RED_MIN_GROUPS 8
#define MSM_RED_GROUP_SIZE 32
#define MSM_RED_MAX_GROUPS 512

/* target (affine, (0, 0) = empty) += P in the open batch of x, whose scratch's A is the
 * target array; returns false when x equal (the caller handles it, nothing done). */
CUZK_HD bool msm_red_add(const curve_group *G, struct msm_aff_ctx *x, uint32_t g, const uint64_t *P)
{
    const unsigned cl = ec_cl(G);
    struct msm_scratch *S = x->S;
    uint64_t *T = S->A + (size_t)g * 2 * cl;
    if (ec_aff_is_inf(G, T)) {
        memcpy(T, P, 2 * cl * sizeof *T);
        return true;
    }
    uint64_t *den = S->den + (size_t)x->nbat * cl;
    ecf_sub(G, den, P, T);
    if (ecf_is_zero(G, den)) return false;
    msm_aff_put(x, P, cl);
    S->bb[x->nbat++] = g;
    return true;
}

/* The reduction above into out (jacobian); false when the window is too small for it
 * (the caller runs the chain). Buckets with a jacobian overflow part are made affine
 * first (batches of ec_batch_to_aff). */
CUZK_HD bool msm_aff_reduce(const curve_group *G, struct msm_aff_ctx *x, size_t nb, uint64_t *out)
{
    const unsigned cl = ec_cl(G), al = 2 * cl, jl = 3 * cl;
    struct msm_scratch *S = x->S;
    size_t ng = nb / MSM_RED_GROUP_SIZE; /* nb is a power of two */
    while (2 * ng > x->batch || ng > MSM_RED_MAX_GROUPS) ng >>= 1;
    if (!S->R || ng < MSM_RED_MIN_GROUPS) return false;
    const size_t m = nb / ng;
    uint64_t *run = S->R, *sum = run + MSM_RED_MAX_GROUPS * al, *xs = sum + MSM_RED_MAX_GROUPS * al;
    uint8_t *xsf = (uint8_t *)(xs + MSM_RED_MAX_GROUPS * jl);

    /* empty buckets to (0, 0); overflow parts folded in, ng at a time (run, xs as scratch) */
    size_t no = 0;
    for (size_t k = 0; k <= nb; k++) {
        if (k < nb && !(S->state[k] & MSM_B_FULL)) {
            if (!(S->state[k] & MSM_A_FULL)) memset(S->A + k * al, 0, al * sizeof *S->A);
            continue;
        }
        if (k < nb) {
            uint64_t *J = xs + no * jl;
            ec_jac_copy(G, J, S->B + k * jl);
            if (S->state[k] & MSM_A_FULL) ec_add_aff(G, J, J, S->A + k * al);
            S->bb[no++] = (uint32_t)k;
        }
        if (no == ng || (k == nb && no)) {
            if (ec_batch_to_aff(G, run, xs, no))
                for (size_t i = 0; i < no; i++) ec_jac_to_aff(G, run + i * al, xs + i * jl);
            for (size_t i = 0; i < no; i++)
                memcpy(S->A + (size_t)S->bb[i] * al, run + i * al, al * sizeof *run);
            no = 0;
        }
    }

    struct msm_scratch Sr = *S;
    Sr.A = run; /* run_g at g, sum_g at MSM_RED_MAX_GROUPS + g: one target array */
    struct msm_aff_ctx xr = { .j = x->j, .S = &Sr, .batch = x->batch };
    memset(run, 0, ng * al * sizeof *run);
    memset(sum, 0, ng * al * sizeof *sum);
    memset(xsf, 0, ng);
    /* Step t's sum_g += run_g rides in step t-1's batch (its copy of run_g taken
     * before run_g += B): m + 1 flushes, not 2m. */
    for (size_t t = m + 1; t-- > 0;) {
        for (size_t g = 0; g < ng && t < m; g++) { /* sum_g += run_g (after B_(gm+t)) */
            const uint64_t *Rg = run + g * al;
            if (ec_aff_is_inf(G, Rg)) continue;
            if (!msm_red_add(G, &xr, (uint32_t)(MSM_RED_MAX_GROUPS + g), Rg)) { /* sum_g = +-run_g */
                uint64_t *X = xs + g * jl;
                if (xsf[g])
                    ec_add_aff(G, X, X, Rg);
                else
                    ec_jac_from_aff(G, X, Rg);
                xsf[g] = 1;
            }
        }
        for (size_t g = 0; g < ng && t > 0; g++) { /* run_g += B_(gm+t-1) */
            const uint64_t *Bk = S->A + (g * m + t - 1) * al;
            if (ec_aff_is_inf(G, Bk)) continue;
            if (!msm_red_add(G, &xr, (uint32_t)g, Bk)) { /* run_g = +-B: on its own */
                uint64_t J[EC_MAX_JAC];
                ec_jac_from_aff(G, J, run + g * al);
                ec_add_aff(G, J, J, Bk);
                ec_jac_to_aff(G, run + g * al, J);
            }
        }
        msm_aff_flush(G, &xr);
    }

    /* sum_g sum_g + m sum_g g run_g */
    uint64_t rs[EC_MAX_JAC], ts[EC_MAX_JAC], acc[EC_MAX_JAC];
    ec_jac_set_inf(G, rs);
    ec_jac_set_inf(G, ts);
    for (size_t g = ng; g-- > 1;) {
        ec_add_aff(G, rs, rs, run + g * al);
        ec_add(G, ts, ts, rs);
    }
    for (size_t i = 1; i < m && !ec_jac_is_inf(G, ts); i <<= 1) ec_dbl(G, ts, ts);
    ec_jac_copy(G, acc, ts);
    for (size_t g = 0; g < ng; g++) {
        ec_add_aff(G, acc, acc, sum + g * al);
        if (xsf[g]) ec_add(G, acc, acc, xs + g * jl);
    }
    ec_jac_copy(G, out, acc);
    return true;
}

/* A window with fewer buckets than the others (the top one: 2^(bits - wc) when fewer
 * than c-1 bits remain) runs on K = 2^(c-1) / nb copies of its buckets, term k into
 * copy k mod K, so that its batches are as large as the other windows' (before, its
 * batch was a quarter of its own buckets: BN254 GLV at c = 12 has 128 top buckets, and
 * its batches of 32 took 4096 of the MSM's 6600 inversions, 4 us each in place); then
 * the copies are summed into the first (msm_aff_fold) before the reduction. */
CUZK_HD void msm_aff_fold(const curve_group *G, struct msm_aff_ctx *x, size_t nb, size_t K)
{
    const unsigned cl = ec_cl(G), al = 2 * cl, jl = 3 * cl;
    struct msm_scratch *S = x->S;
    for (size_t step = 1; step < K; step <<= 1) { /* copy c += copy c + step, c a multiple of 2 step */
        for (size_t cp = 0; cp + step < K; cp += 2 * step)
            for (size_t k = 0; k < nb; k++) {
                const uint32_t t = (uint32_t)(cp * nb + k), f = (uint32_t)((cp + step) * nb + k);
                if (S->state[f] & MSM_B_FULL) {
                    if (S->state[t] & MSM_B_FULL)
                        ec_add(G, S->B + (size_t)t * jl, S->B + (size_t)t * jl, S->B + (size_t)f * jl);
                    else
                        ec_jac_copy(G, S->B + (size_t)t * jl, S->B + (size_t)f * jl);
                    S->state[t] |= MSM_B_FULL;
                }
                if (!(S->state[f] & MSM_A_FULL)) continue;
                const uint64_t *P = S->A + (size_t)f * al;
                uint64_t *T = S->A + (size_t)t * al;
                if (!(S->state[t] & MSM_A_FULL)) {
                    memcpy(T, P, al * sizeof *T);
                    S->state[t] |= MSM_A_FULL;
                    continue;
                }
                uint64_t *den = S->den + (size_t)x->nbat * cl;
                ecf_sub(G, den, P, T);
                if (ecf_is_zero(G, den)) { /* P = +-T */
                    msm_aff_overflow(G, x, t, P);
                    continue;
                }
                msm_aff_put(x, P, cl);
                S->bb[x->nbat++] = t;
                if (x->nbat == x->batch) msm_aff_flush(G, x);
            }
        msm_aff_flush(G, x);
    }
}

CUZK_HD void msm_task_affine_impl(const curve_group *G, const struct msm_job *j, unsigned w, size_t lo,
                                  size_t hi, struct msm_scratch *S, uint64_t *out, unsigned batch)
{
    const unsigned cl = ec_cl(G), jl = 3 * cl, nl = j->nl, c = j->c;
    const size_t nb = msm_window_buckets(j, w), K = ((size_t)1 << (c - 1)) / nb, nbk = nb * K;
    struct msm_aff_ctx x = { .j = j, .S = S, .batch = batch, .cur = 1 };

    memset(S->stamp, 0, nbk * sizeof *S->stamp);
    memset(S->state, 0, nbk);
    /* digits of the terms k .. k + MSM_PREFETCH - 1, each computed once (it was twice:
     * for the prefetch and for the addition) */
    int ring[MSM_PREFETCH_RING];
    for (size_t k = lo; k < hi && k < lo + MSM_PREFETCH; k++)
        ring[k % MSM_PREFETCH_RING] = msm_digit(msm_term_sc(j, k), nl, w, c);
    for (size_t k = lo; k < hi; k++) {
        /* The bucket reads miss L1 (4096 buckets = 256 KiB at c = 13 on G1): fetch the
         * bucket of the term MSM_PREFETCH ahead (perf: ~15% of the task time was the
         * first load of a bucket before this). */
        if (k + MSM_PREFETCH < hi) {
            int dn = msm_digit(msm_term_sc(j, k + MSM_PREFETCH), nl, w, c);
            ring[(k + MSM_PREFETCH) % MSM_PREFETCH_RING] = dn;
            if (dn) {
                const uint64_t *Ab =
                    S->A + ((size_t)((dn < 0 ? -dn : dn) - 1) + nb * ((k + MSM_PREFETCH) & (K - 1))) * 2 * cl;
                __builtin_prefetch(Ab);
                __builtin_prefetch(Ab + 2 * cl - 1);
            }
        }
        int d = ring[k % MSM_PREFETCH_RING];
        if (d == 0) continue;
        uint64_t ix = j->idx[k];
        if (d < 0) ix ^= MSM_NEG_BIT;
        msm_aff_add(G, &x, (uint32_t)((size_t)((d < 0 ? -d : d) - 1) + nb * (k & (K - 1))), ix);
        if (x.nbat == x.batch) {
            msm_aff_flush(G, &x);
            msm_aff_retry(G, &x);
        }
    }
    while (x.nbat || x.ndef) {
        msm_aff_flush(G, &x);
        msm_aff_retry(G, &x);
    }
    if (K > 1) msm_aff_fold(G, &x, nb, K);
    if (msm_aff_reduce(G, &x, nb, out)) return;

    /* sum_k (k+1) bucket_k by running sums, as in msm_task_impl */
    uint64_t run[EC_MAX_JAC], sum[EC_MAX_JAC];
    ec_jac_set_inf(G, run);
    ec_jac_set_inf(G, sum);
    for (size_t k = nb; k-- > 0;) {
        if (S->state[k] & MSM_A_FULL) ec_add_aff(G, run, run, S->A + k * 2 * cl);
        if (S->state[k] & MSM_B_FULL) ec_add(G, run, run, S->B + k * jl);
        ec_add(G, sum, sum, run);
    }
    ec_jac_copy(G, out, sum);
}

/* One out-of-line function per (group, bucket form). With all eight bodies inlined
 * into one dispatcher, msm_task was a single 210 KB function: 48 s to compile at -O2
 * and over ten minutes under ASan (compile time grows faster than linearly with a
 * function's size). Split, each body is compiled on its own; same code, same speed. */
#define MSM_TASK_FORMS(tag, group)                                                                           \
    static __attribute__((noinline)) void msm_task_jac_##tag(                                                \
        const struct msm_job *j, unsigned w, size_t lo, size_t hi, struct msm_scratch *S, uint64_t *out)     \
    {                                                                                                        \
        msm_task_impl(&group, j, w, lo, hi, S->B, out);                                                      \
    }                                                                                                        \
    static __attribute__((noinline)) void msm_task_aff_##tag(const struct msm_job *j, unsigned w, size_t lo, \
                                                             size_t hi, struct msm_scratch *S,               \
                                                             uint64_t *out, unsigned batch)                  \
    {                                                                                                        \
        msm_task_affine_impl(&group, j, w, lo, hi, S, out, batch);                                           \
    }
MSM_TASK_FORMS(g1_bn254, G1_BN254)
MSM_TASK_FORMS(g2_bn254, G2_BN254)
MSM_TASK_FORMS(g1_bls12_381, G1_BLS12_381)
MSM_TASK_FORMS(g2_bls12_381, G2_BLS12_381)

/* The window's batch: at most a quarter of the buckets it can touch. The top window
 * often has far fewer buckets than the others (2^(bits - wc) when fewer than c-1 bits
 * remain): there a full-size batch kept colliding, the deferred list filled and most
 * points went to the jacobian overflow, paying both forms (callgrind, 2^16 G1 with
 * GLV: 124k overflow additions of 1.3M, against 41k for the bucket reduction). Such a
 * window runs jacobian buckets instead, when its batch falls below min_batch. */
static unsigned msm_window_batch(const struct msm_job *j, unsigned w)
{
    (void)w; /* a short window runs on copies of its buckets (msm_aff_fold) */
    size_t b = ((size_t)1 << (j->c - 1)) / 4;
    if (b > j->batch) b = j->batch;
    if (b < 1) b = 1;
    return b < j->min_batch ? 0 : (unsigned)b;
}

/* The two forms of each group, by curve_id. */
static const struct {
    void (*jac)(const struct msm_job *j, unsigned w, size_t lo, size_t hi, struct msm_scratch *S,
                uint64_t *out);
    void (*aff)(const struct msm_job *j, unsigned w, size_t lo, size_t hi, struct msm_scratch *S,
                uint64_t *out, unsigned batch);
} msm_task_forms[] = {
    [CURVE_G1_BN254] = { msm_task_jac_g1_bn254, msm_task_aff_g1_bn254 },
    [CURVE_G2_BN254] = { msm_task_jac_g2_bn254, msm_task_aff_g2_bn254 },
    [CURVE_G1_BLS12_381] = { msm_task_jac_g1_bls12_381, msm_task_aff_g1_bls12_381 },
    [CURVE_G2_BLS12_381] = { msm_task_jac_g2_bls12_381, msm_task_aff_g2_bls12_381 },
};

static void msm_task(const struct msm_job *j, unsigned w, size_t lo, size_t hi, struct msm_scratch *S,
                     uint64_t *out)
{
    unsigned b = j->batch ? msm_window_batch(j, w) : 0;
    if (b)
        msm_task_forms[j->G->id].aff(j, w, lo, hi, S, out, b);
    else
        msm_task_forms[j->G->id].jac(j, w, lo, hi, S, out);
}

static void msm_scratch_free(struct msm_scratch *S)
{
    free(S->B);
    free(S->A);
    free(S->stamp);
    free(S->state);
    free(S->bp);
    free(S->den);
    free(S->pre);
    free(S->bb);
    free(S->dref);
    free(S->db);
    free(S->ifma);
    free(S->px);
    free(S->py);
    free(S->ng);
    free(S->R);
}

static int msm_scratch_alloc(const struct msm_job *j, struct msm_scratch *S)
{
    const unsigned cl = ec_cl(j->G);
    const size_t nb = (size_t)1 << (j->c - 1);
    memset(S, 0, sizeof *S);
    S->B = malloc(nb * 3 * cl * sizeof *S->B);
    if (!S->B) return -ENOMEM;
    if (!j->batch) return 0;
    S->A = malloc(nb * 2 * cl * sizeof *S->A);
    S->stamp = malloc(nb * sizeof *S->stamp);
    S->state = malloc(nb);
    S->bp = malloc((size_t)j->batch * 2 * cl * sizeof *S->bp);
    S->den = malloc((size_t)j->batch * cl * sizeof *S->den);
    S->pre = malloc((size_t)j->batch * cl * sizeof *S->pre);
    S->bb = malloc((size_t)j->batch * sizeof *S->bb);
    S->dref = malloc(MSM_DEFER_MAX * sizeof *S->dref);
    S->db = malloc(MSM_DEFER_MAX * sizeof *S->db);
    if (!S->A || !S->stamp || !S->state || !S->bp || !S->den || !S->pre || !S->bb || !S->dref || !S->db)
        return -ENOMEM;
    S->R = malloc(MSM_RED_MAX_GROUPS * ((2 * 2 + 3) * cl * sizeof *S->R + 1));
    if (!S->R) return -ENOMEM;
    if (ifma_available()) { /* every group has its lane flush */
        S->ifma = aligned_alloc(64, ifma_batch_scratch_bytes(j->G, j->batch));
        S->px = malloc(j->batch * sizeof *S->px);
        S->py = malloc(j->batch * sizeof *S->py);
        S->ng = malloc(j->batch);
        if (!S->ifma || !S->px || !S->py || !S->ng) return -ENOMEM;
    }
    return 0;
}

/* One part of workers_run: claims tasks until none is left. The partial sums go by task,
 * not by part, so the result does not depend on how many parts ran or which took what. */
static void msm_part(void *arg, unsigned part, unsigned nparts)
{
    (void)part;
    (void)nparts;
    struct msm_job *j = arg;
    const unsigned jl = 3 * ec_cl(j->G);
    struct msm_scratch S;
    int aerr = msm_scratch_alloc(j, &S);

    for (;;) {
        pthread_mutex_lock(&j->lock);
        if (aerr && !j->err) j->err = aerr;
        unsigned t = j->err ? j->ntasks : j->next;
        if (t < j->ntasks) j->next++;
        pthread_mutex_unlock(&j->lock);
        if (t >= j->ntasks) break;

        unsigned w = t % j->nwin, s = t / j->nwin;
        size_t lo = j->nact * s / j->nsplit, hi = j->nact * (s + 1) / j->nsplit;
        msm_task(j, w, lo, hi, &S, j->partial + (size_t)t * jl);
    }
    msm_scratch_free(&S);
}

/* Cost model, in mixed additions (madd-2007-bl, 7M+4S = 11 products):
 *   per task: n/s bucket additions + 2^(c-1) buckets * MSM_REDUCE_COST;
 *   makespan: ceil(nwin*s / T) tasks per thread; plus thread start-up.
 * The reduction's 2 general additions (11M+5S each) are 2*16/11 = 2.9 mixed ones.
 * It picks c = 13 at 2^16 and 16 at 2^20 (one or two threads). Measured on the 2-core
 * dev box (bench/msm_ntt --window, BN254 G1, CPU seconds, machine shared so +-5%):
 *   2^16, 1 thread, 3 runs:  c=11 1.99  12 1.94  13 1.91  14 2.00  15 2.14  16 2.88
 *   2^20, 2 threads, 1 run:  c=14 11.4  15 12.5  16 11.1  17 11.5
 * so the model's choice holds at 2^16; at 2^20 the model's 14% gain from c=14 to 16 is
 * mostly eaten by the buckets leaving L2 (3 MiB at c=16), and wider windows gain
 * nothing measurable: MSM_AUTO_MAX_C caps c at 16.
 * With GLV (2n terms of 128 bits) the model picks c = 13 at 2^16 again; callgrind,
 * BN254 G1, 1 thread, instructions (portable products):
 *   2^16 GLV:  c=12 4.94 G  13 4.33 G  14 4.68 G  15 4.94 G  16 5.41 G
 * so the model's choice holds. (Wall-clock sweeps at 1 and 2 threads were not
 * readable while this was tuned: the shared 2-core box ran at load 7-9.) */
#define MSM_REDUCE_COST      3
/* With msm_aff_reduce a bucket costs its 2 batched additions plus its share of the
 * group sums (3.5/32 mixed additions), of the m+1 inversions and of the fold. The
 * model then takes c = 13 at 2^16 with GLV (c = 12 before, with the chain's 3).
 * bench/msm_ntt --window, BN254 2^16, 1 thread, IFMA, CPU ms, min of 10, two rounds
 * (shared 2-core box, load 6-8), G1 / G2:
 *   c=12 89-90 / 181-224   13 75-78 / 155-166   14 73-79 / 156-172
 *   15 71-73 / 155-187     16 73-89 / 167-189
 * (batches capped at 2048 or 4096 instead of MSM_BATCH_MAX read 5-40% slower). */
#define MSM_REDUCE_AFF_EXTRA 0.2
/* ~50 us to create and join a thread, in mixed additions. The threads now persist
 * (workers.h) and a hand-over costs less, but the constant is kept so that the plans,
 * and with them every result bit for bit, stay as they were measured. */
#define MSM_THREAD_COST      200
/* 15, not 16: with the cheaper reduction the model went to c = 16 at 2^18, where
 * c = 15 and 16 read the same (bench/msm_ntt --window, BN254 2^18, 1 thread, CPU ms,
 * min of 3, four rounds, load ~4.7: G1 c=15 325-336, c=16 298-334; G2 624-719 against
 * 607-754) while c = 16's touched buckets are twice as large: the 2^18 proof's peak RSS
 * rose by 5 MiB. */
#define MSM_AUTO_MAX_C       15

/* Additions per shared inversion for batch-affine buckets at window c with nsplit
 * point ranges, 0 for jacobian buckets. */
static unsigned msm_batch_for(size_t nact, unsigned c, unsigned nsplit, enum msm_buckets mode)
{
    size_t nb = (size_t)1 << (c - 1);
    size_t per_task = nact / nsplit;
    size_t b = nb / 4; /* a quarter of the buckets: few collisions, few deferrals */
    if (b > MSM_BATCH_MAX) b = MSM_BATCH_MAX;
    if (b > per_task) b = per_task;
    if (b < 1) b = 1;
    if (mode == MSM_BUCKETS_JACOBIAN) return 0;
    if (mode == MSM_BUCKETS_AFFINE) return (unsigned)b;
    return b >= msm_auto_min_batch() ? (unsigned)b : 0;
}

static void msm_plan(struct msm_job *j, unsigned threads, unsigned force_c, enum msm_buckets mode)
{
    const size_t n = j->nact;
    const double affine = ifma_available() ? MSM_AFFINE_COST_IFMA : MSM_AFFINE_COST;
    const double inv = j->G->deg == 1 ? MSM_INV_COST_G1 : MSM_INV_COST_G2;
    double best = -1;
    unsigned cmin = force_c ? force_c : 1, cmax = force_c ? force_c : MSM_AUTO_MAX_C;

    for (unsigned c = cmin; c <= cmax; c++) {
        unsigned nwin = j->bits / c + 1;
        /* more ranges than threads per window never helps; keep >= 64 terms a range */
        unsigned smax = threads;
        if (smax > n / 64) smax = (unsigned)(n / 64);
        if (smax < 1) smax = 1;
        for (unsigned s = 1; s <= smax; s++) {
            unsigned tasks = nwin * s, T = threads < tasks ? threads : tasks;
            unsigned rounds = (tasks + T - 1) / T;
            unsigned b = msm_batch_for(n, c, s, mode);
            double add = b ? affine + inv / b : 1.0;
            /* a bucket of the reduction: 2 affine additions when msm_aff_reduce runs, else
             * the jacobian chain; a short top window folds copies: ~1 addition a bucket */
            double red = b ? 2 * affine + MSM_REDUCE_AFF_EXTRA : MSM_REDUCE_COST;
            double fold = b && j->bits % c < c - 1 ? affine * (double)((size_t)1 << (c - 1)) : 0;
            double cost = (double)rounds * (add * (double)n / s + red * (double)((size_t)1 << (c - 1))) +
                fold + MSM_THREAD_COST * (double)(T - 1);
            if (best < 0 || cost < best) {
                best = cost;
                j->c = c;
                j->nwin = nwin;
                j->nsplit = s;
            }
        }
    }
    j->ntasks = j->nwin * j->nsplit;
}

/* GLV from this many terms up (MSM_GLV_AUTO). Instructions per BN254 G1 MSM (callgrind,
 * random scalars, 1 thread, auto window; callgrind runs the portable products, so the
 * products weigh more here than with mulx):
 *            plain     GLV
 *   2^8      64.4 M    59.8 M   (-7%)
 *   2^10    202 M     178 M     (-12%)
 *   2^12    633 M     576 M     (-9%)
 *   2^14   2175 M    1369 M     (-37%: the plain plan's top windows overflowed)
 *   2^16   4686 M    4331 M     (-8%; G2: 14.11 G -> 12.92 G, -8%)
 * The split and the phi table cost under 2% of the GLV total at 2^16. */
#define MSM_GLV_MIN       256
#define MSM_GLV_MAX_TABLE ((size_t)1 << 30)

/* Scalar limbs a, b (MSM_MAX_SCALAR_LIMBS each): a < b? */
static bool msm_lt(const uint64_t *a, const uint64_t *b)
{
    for (unsigned i = MSM_MAX_SCALAR_LIMBS; i-- > 0;)
        if (a[i] != b[i]) return a[i] < b[i];
    return false;
}

/* Step 1: active terms into j->idx / j->sc; sets nact and bits. */
/* Step 1 on the input terms [lo, hi): the active ones are written from slot out of idx
 * and sc (nl limbs a term), in input order; returns how many, ORs their scalars into acc. */
static size_t msm_prepare_range(const struct msm_job *j, const uint8_t *scalars, size_t lo, size_t hi,
                                size_t scalar_bytes, uint64_t *idx, uint64_t *sc, size_t out, uint64_t *acc)
{
    const curve_group *G = j->G;
    const unsigned cl = ec_cl(G), nl = j->nl;
    const size_t pb = 2 * cl * sizeof(uint64_t);
    uint64_t r[MSM_MAX_SCALAR_LIMBS] = { 0 }, half[MSM_MAX_SCALAR_LIMBS] = { 0 };

    memcpy(r, G->Fr->p, G->Fr->n * sizeof *r);
    for (unsigned i = 0; i < G->Fr->n; i++) /* (r-1)/2 = r >> 1 (r odd) */
        half[i] = (r[i] >> 1) | (i + 1 < G->Fr->n ? r[i + 1] << 63 : 0);

    size_t k = out;
    for (size_t i = lo; i < hi; i++) {
        uint64_t s[MSM_MAX_SCALAR_LIMBS] = { 0 }, any = 0, neg = 0;
        memcpy(s, scalars + i * scalar_bytes, scalar_bytes); /* little-endian host */
        for (unsigned l = 0; l < nl; l++) any |= s[l];
        if (!any) continue;
        uint64_t P[EC_MAX_AFF];
        memcpy(P, j->bases + i * pb, pb);
        if (ec_aff_is_inf(G, P)) continue;
        if (msm_lt(half, s) && msm_lt(s, r)) { /* s > (r-1)/2: use r - s, negate base */
            uint64_t borrow = 0;
            for (unsigned l = 0; l < MSM_MAX_SCALAR_LIMBS; l++) {
                fe_u128 dd = (fe_u128)r[l] - s[l] - borrow;
                s[l] = (uint64_t)dd;
                borrow = (uint64_t)(dd >> 64) & 1;
            }
            neg = MSM_NEG_BIT;
        }
        for (unsigned l = 0; l < nl; l++) acc[l] |= s[l];
        memcpy(sc + k * nl, s, nl * sizeof *s);
        idx[k++] = (uint64_t)i | neg;
    }
    return k - out;
}

/* Whether the scalars [lo, hi) are all below r (GLV's split needs them reduced). */
static bool msm_all_below_r(const curve_group *G, const uint8_t *scalars, size_t lo, size_t hi,
                            size_t scalar_bytes)
{
    const uint64_t *r = G->Fr->p;
    for (size_t i = lo; i < hi; i++) {
        uint64_t s[MSM_MAX_SCALAR_LIMBS] = { 0 };
        memcpy(s, scalars + i * scalar_bytes, scalar_bytes);
        for (unsigned l = 4; l < MSM_MAX_SCALAR_LIMBS; l++)
            if (s[l]) return false;
        bool below = false;
        for (unsigned l = 4; l-- > 0;)
            if (s[l] != r[l]) {
                below = s[l] < r[l];
                break;
            }
        if (!below) return false;
    }
    return true;
}

/* Step 1 with GLV on [lo, hi): each input term gives up to two terms of 2 limbs, written
 * from slot out; phi(P)'s x goes to phi at the base's index. -1 if a scalar is not below
 * r (GLV's split needs it reduced; the caller then prepares without GLV), else how many. */
static ptrdiff_t msm_prepare_glv_range(const struct msm_job *j, const uint8_t *scalars, size_t lo, size_t hi,
                                       size_t scalar_bytes, uint64_t *idx, uint64_t *sc, uint64_t *phi,
                                       size_t out, uint64_t *acc)
{
    const curve_group *G = j->G;
    const unsigned cl = ec_cl(G);
    const size_t pb = 2 * cl * sizeof(uint64_t);
    if (!j->split && !msm_all_below_r(G, scalars, lo, hi, scalar_bytes)) return -1;

    size_t k = out;
    for (size_t i = lo; i < hi; i++) {
        uint64_t k1[2], k2[2];
        unsigned neg;
        if (j->split) { /* split once for all the MSMs on these scalars */
            const uint64_t *e = j->split->k + 4 * (j->split_first + i);
            if (!(e[0] | e[1] | e[2] | e[3])) continue; /* s = 0 */
            k1[0] = e[0];
            k1[1] = e[1];
            k2[0] = e[2];
            k2[1] = e[3];
            neg = j->split->neg[j->split_first + i];
        } else {
            uint64_t s[MSM_MAX_SCALAR_LIMBS] = { 0 };
            memcpy(s, scalars + i * scalar_bytes, scalar_bytes);
            if (!(s[0] | s[1] | s[2] | s[3])) continue;
            neg = ec_glv_split(G, k1, k2, s);
        }
        uint64_t P[EC_MAX_AFF];
        memcpy(P, j->bases + i * pb, pb);
        if (ec_aff_is_inf(G, P)) continue;
        if (k1[0] | k1[1]) {
            if (sc) {
                sc[2 * k] = k1[0];
                sc[2 * k + 1] = k1[1];
            }
            idx[k++] = (uint64_t)i | ((neg & 1) ? MSM_NEG_BIT : 0);
            acc[0] |= k1[0];
            acc[1] |= k1[1];
        }
        if (k2[0] | k2[1]) {
            uint64_t E[EC_MAX_AFF];
            ec_aff_endo(G, E, P);
            memcpy(phi + i * cl, E, cl * sizeof *E);
            if (sc) {
                sc[2 * k] = k2[0];
                sc[2 * k + 1] = k2[1];
            }
            idx[k++] = (uint64_t)i | MSM_PHI_BIT | ((neg & 2) ? MSM_NEG_BIT : 0);
            acc[0] |= k2[0];
            acc[1] |= k2[1];
        }
    }
    return (ptrdiff_t)(k - out);
}

/* Step 1 on the worker threads: it reads every base and scalar once (the zkey's pages
 * are touched here first) and splits each GLV scalar, 9% of a bn128 2^16 proof's CPU
 * time (perf), which on one thread left the other cores idle. Each part takes a range
 * of the input and writes from the range's first possible slot (GLV: 2 a term); the
 * ranges are then closed up in order, so the terms are those of one pass. */
#define MSM_PREP_MIN_PART 4096 /* input terms a part at least: below, threads cost more */

struct msm_prep_part {
    size_t first;                       /* the slot its terms were written from */
    size_t k;                           /* terms written */
    bool bad;                           /* GLV: a scalar not below r */
    uint64_t acc[MSM_MAX_SCALAR_LIMBS]; /* OR of the scalars written */
};

struct msm_prep {
    struct msm_job *j;
    const uint8_t *scalars;
    size_t count, scalar_bytes;
    uint64_t *idx, *sc, *phi; /* phi: GLV */
    struct msm_prep_part *parts;
};

static void msm_prep_part_run(void *arg, unsigned part, unsigned nparts)
{
    struct msm_prep *pp = arg;
    struct msm_prep_part *me = &pp->parts[part];
    size_t lo = pp->count * part / nparts, hi = pp->count * (part + 1) / nparts;

    memset(me, 0, sizeof(*me));
    me->first = pp->phi ? 2 * lo : lo;
    if (pp->phi) {
        ptrdiff_t k = msm_prepare_glv_range(pp->j, pp->scalars, lo, hi, pp->scalar_bytes, pp->idx, pp->sc,
                                            pp->phi, me->first, me->acc);
        me->bad = k < 0;
        me->k = k < 0 ? 0 : (size_t)k;
    } else {
        me->k = msm_prepare_range(pp->j, pp->scalars, lo, hi, pp->scalar_bytes, pp->idx, pp->sc, me->first,
                                  me->acc);
    }
}

/* Bit length of the OR of scalars (nl limbs): what the windows must cover. */
static unsigned msm_bit_length(const uint64_t *acc, unsigned nl)
{
    for (unsigned l = nl; l-- > 0;)
        if (acc[l]) return 64 * l + (64 - (unsigned)__builtin_clzll(acc[l]));
    return 0;
}

/* Step 1 for the job (GLV when phi is given): 0 when prepared; 1 when a scalar is not
 * below r and GLV was asked (nothing usable written: prepare again without it);
 * -ENOMEM. Sets nl (GLV: 2), nact, bits and phi. */
static int msm_prepare_all(struct msm_job *j, const uint8_t *scalars, size_t count, size_t scalar_bytes,
                           uint64_t *idx, uint64_t *sc, uint64_t *phi, unsigned threads)
{
    unsigned want = (unsigned)(count / MSM_PREP_MIN_PART), nparts;
    const unsigned nl = phi ? 2 : j->nl;
    uint64_t acc[MSM_MAX_SCALAR_LIMBS] = { 0 };
    size_t k = 0;

    if (want > threads) want = threads;
    if (want < 1) want = 1;
    struct msm_prep pp = { j, scalars, count, scalar_bytes, idx, sc, phi, calloc(want, sizeof(*pp.parts)) };
    if (!pp.parts) return -ENOMEM;
    nparts = workers_run(want, msm_prep_part_run, &pp);
    for (unsigned p = 0; p < nparts; p++)
        if (pp.parts[p].bad) {
            free(pp.parts);
            return 1;
        }
    for (unsigned p = 0; p < nparts; p++) {
        const size_t from = pp.parts[p].first, n = pp.parts[p].k;

        if (from != k) { /* close up: the part's first slot lies past the terms so far */
            memmove(idx + k, idx + from, n * sizeof *idx);
            if (sc) memmove(sc + k * nl, sc + from * nl, n * nl * sizeof *sc);
        }
        k += n;
        for (unsigned l = 0; l < nl; l++) acc[l] |= pp.parts[p].acc[l];
    }
    free(pp.parts);
    j->nl = nl;
    j->nact = k;
    j->phi = phi;
    j->bits = msm_bit_length(acc, nl);
    return 0;
}

static unsigned msm_threads(unsigned threads)
{
    if (threads == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        threads = n > 0 ? (unsigned)n : 1;
    }
    return threads > 1024 ? 1024 : threads;
}

/* The job's batch (see msm_batch_for), once msm_plan has set c and nsplit. */
static unsigned msm_batch_size(const struct msm_job *j, enum msm_buckets mode)
{
    return msm_batch_for(j->nact, j->c, j->nsplit, mode);
}

int msm_run_window(const curve_group *G, uint64_t *result, const uint8_t *bases, const uint8_t *scalars,
                   size_t count, size_t scalar_bytes, unsigned threads, unsigned c)
{
    return msm_run_opts(G, result, bases, scalars, count, scalar_bytes, threads, c, MSM_BUCKETS_AUTO);
}

int msm_run_opts(const curve_group *G, uint64_t *result, const uint8_t *bases, const uint8_t *scalars,
                 size_t count, size_t scalar_bytes, unsigned threads, unsigned c, enum msm_buckets mode)
{
    return msm_run_ext(G, result, bases, scalars, count, scalar_bytes, threads, c, mode, MSM_GLV_AUTO);
}

/* Whether GLV is worth it: see MSM_GLV_MIN. The phi table costs cl*8 bytes a term
 * on top of the zkey's bases; past MSM_GLV_MAX_TABLE it is not taken. */
static bool msm_glv_wanted(const curve_group *G, size_t count, enum msm_glv glv)
{
    if (glv == MSM_GLV_OFF) return false;
    if (count > MSM_GLV_MAX_TABLE / (ec_cl(G) * sizeof(uint64_t))) return false;
    return glv == MSM_GLV_ON || count >= MSM_GLV_MIN;
}

/* Steps 3 and 4 for a planned job (c, nwin, nsplit, batch set): the tasks on the worker
 * threads, then out = sum_w 2^(wc) W_w, W_w the sum of window w's range partials. */
static int msm_execute(struct msm_job *j, unsigned threads, uint64_t *out)
{
    const curve_group *G = j->G;
    const unsigned jl = 3 * ec_cl(G);
    uint64_t acc[EC_MAX_JAC];

    j->ntasks = j->nwin * j->nsplit;
    j->next = 0;
    j->err = 0;
    if (threads > j->ntasks) threads = j->ntasks;
    j->partial = malloc((size_t)j->ntasks * jl * sizeof *j->partial);
    if (!j->partial) return -ENOMEM;
    pthread_mutex_init(&j->lock, NULL);
    workers_run(threads, msm_part, j); /* fewer parts than asked just take more tasks each */
    pthread_mutex_destroy(&j->lock);
    int err = j->err;
    if (!err) {
        ec_jac_set_inf(G, acc);
        for (unsigned w = j->nwin; w-- > 0;) {
            for (unsigned i = 0; i < j->c && !ec_jac_is_inf(G, acc); i++) ec_dbl(G, acc, acc);
            for (unsigned s = 0; s < j->nsplit; s++)
                ec_add(G, acc, acc, j->partial + ((size_t)s * j->nwin + w) * jl);
        }
        ec_jac_copy(G, out, acc);
    }
    free(j->partial);
    j->partial = NULL;
    return err;
}

/* ---- scalars equal to 1 -------------------------------------------------------------
 *
 * A real witness is full of bits (SHA-256's is all 0 and 1, an EdDSA check's has ~9%
 * ones): in Pippenger's window 0 every such term lands in bucket 1, so the batch-affine
 * buckets see one collision after another and the terms go to the deferred list, then
 * to the jacobian overflow (a mixed addition each: about 4x a batched affine one with
 * the IFMA lanes); and an MSM of bits alone was planned as one jacobian bucket. Here
 * the ones are moved out of the job and summed on their own: a job of bit length 1 (one
 * window, digits all 1) whose window runs on K = 2b copies of its bucket, term k into
 * copy k mod K, so that batches of b consecutive terms never collide
 * (msm_task_affine_impl's copies; msm_aff_fold then sums the copies in log2 K batched
 * rounds). The other terms' bit length is taken again without the ones. */
#define MSM_ONES_MIN 64 /* fewer ones than this stay in the job (the pass has fixed costs) */

static bool msm_is_one(const uint64_t *s, unsigned nl)
{
    uint64_t hi = 0;
    for (unsigned l = 1; l < nl; l++) hi |= s[l];
    return s[0] == 1 && hi == 0;
}

/* Keeps term k of j as term m (m <= k: idx, and sc when the job has its own scalars,
 * closed up in order), its scalar s ORed into bits; returns m + 1. */
static size_t msm_keep_term(const struct msm_job *j, uint64_t *idx, uint64_t *sc, size_t k, size_t m,
                            const uint64_t *s, uint64_t *bits)
{
    for (unsigned l = 0; l < j->nl; l++) bits[l] |= s[l];
    if (sc && m != k) memmove(sc + m * j->nl, s, j->nl * sizeof *sc);
    idx[m] = idx[k];
    return m + 1;
}

/* Moves the terms with scalar 1 to the end of idx (and sc, when the job has its own
 * scalars), leaves the others in order at the front with nact and bits theirs; returns
 * how many ones (0 when fewer than MSM_ONES_MIN: nothing moved), SIZE_MAX when out of
 * memory. */
static size_t msm_take_ones(struct msm_job *j, uint64_t *idx, uint64_t *sc)
{
    const unsigned nl = j->nl;
    size_t n1 = 0;
    for (size_t k = 0; k < j->nact; k++) n1 += msm_is_one(msm_term_sc(j, k), nl);
    if (n1 < MSM_ONES_MIN) return 0;
    uint64_t *ones = malloc(n1 * sizeof *ones), bits[MSM_MAX_SCALAR_LIMBS] = { 0 };
    if (!ones) return SIZE_MAX;
    size_t m = 0, o = 0;
    for (size_t k = 0; k < j->nact; k++) {
        const uint64_t *s = msm_term_sc(j, k);
        if (msm_is_one(s, nl)) {
            ones[o++] = idx[k];
            continue;
        }
        m = msm_keep_term(j, idx, sc, k, m, s, bits);
    }
    memcpy(idx + m, ones, n1 * sizeof *idx);
    free(ones);
    if (sc) { /* the tail's scalars: 1 */
        memset(sc + m * nl, 0, n1 * nl * sizeof *sc);
        for (size_t k = m; k < m + n1; k++) sc[k * nl] = 1;
    }
    j->nact = m;
    j->bits = msm_bit_length(bits, nl);
    return n1;
}

/* out = the sum of the n1 ones left at the end of j's terms by msm_take_ones. Batches
 * of b = a power of two up to MSM_BATCH_MAX, at most an eighth of a range's terms (the
 * fold's K = 2b additions stay a quarter of the range's); below the bucket form's
 * smallest batch (AUTO), or forced jacobian, one jacobian bucket as before. */
static int msm_run_ones(const struct msm_job *j, size_t n1, unsigned threads, enum msm_buckets mode,
                        uint64_t *out)
{
    struct msm_job o = *j;
    const size_t mb = mode == MSM_BUCKETS_AFFINE ? 1 : msm_auto_min_batch();
    unsigned s = threads;
    while (s > 1 && n1 / s < 8 * mb) s--; /* ranges big enough for batches (or one range) */
    size_t b = 1;
    while (2 * b <= MSM_BATCH_MAX && 2 * b <= n1 / s / 8) b *= 2;
    o.idx = j->idx + j->nact;
    if (!j->split) o.sc = j->sc + j->nact * j->nl;
    o.nact = n1;
    o.bits = 1;
    o.nwin = 1;
    o.nsplit = s;
    o.min_batch = (unsigned)mb;
    if (mode == MSM_BUCKETS_JACOBIAN || b < mb) {
        o.c = 2;
        o.batch = 0;
    } else {
        o.c = 3 + (unsigned)__builtin_ctzll(b); /* 2^(c-1) = 4b: 2 buckets in 2b copies */
        o.batch = (unsigned)b;
    }
    return msm_execute(&o, threads, out);
}

/* ---- repeated scalars ------------------------------------------------------------
 *
 * A real witness repeats values: a signal and its copies, the same constant-derived
 * value in every instance of a subcircuit (an EdDSA-Poseidon check's witness holds
 * 130k values of which 44k are distinct). Terms with one scalar s are one term:
 * s P1 + ... + s Pm = s (P1 + ... + Pm), m - 1 mixed additions against m - 1 terms'
 * worth of bucket additions in every window; and in Pippenger they are worse than
 * their count, since equal scalars land in the same bucket in every window, so that
 * nearby copies collide in each batch (deferred again and again, then the jacobian
 * overflow: 27% of that MSM's bucket additions before). msm_take_repeats groups the
 * terms by scalar (a hash table over the prepared terms, GLV halves or folded
 * scalars), sums each group's points, and runs the groups as a second MSM over the
 * sums (their own, smaller, job). A probe of the first MSM_REP_PROBE terms decides
 * first: a witness without repeats (a mulchain's) pays one small hash pass. */
#define MSM_REP_MIN   1024 /* fewer terms: no pass */
#define MSM_REP_PROBE 4096 /* terms probed ... */
#define MSM_REP_SHARE 32   /* ... and at least 1/32 of them repeats, else no pass */

static inline uint64_t msm_rep_hash(const uint64_t *s, unsigned nl)
{
    uint64_t h = s[0] ^ (nl > 1 ? s[1] * UINT64_C(0x9e3779b97f4a7c15) : 0);
    return h * UINT64_C(0xff51afd7ed558ccd);
}

/* Open addressing over terms [0, n) of j: head[k] = the first term with k's scalar
 * (k itself when it is the first). Returns how many terms repeat an earlier one. tab:
 * size entries (a power of two >= 2n), zeroed by the caller. */
static size_t msm_rep_group(const struct msm_job *j, size_t n, uint32_t *tab, size_t size, uint32_t *head)
{
    const unsigned nl = j->nl;
    const unsigned shift = 64 - (unsigned)__builtin_ctzll(size);
    size_t dups = 0;
    for (size_t k = 0; k < n; k++) {
        const uint64_t *s = msm_term_sc(j, k);
        size_t h = (size_t)(msm_rep_hash(s, nl) >> shift);
        for (;; h = (h + 1) & (size - 1)) {
            if (!tab[h]) {
                tab[h] = (uint32_t)k + 1;
                head[k] = (uint32_t)k;
                break;
            }
            const uint32_t f = tab[h] - 1;
            if (memcmp(msm_term_sc(j, f), s, nl * sizeof *s) == 0) {
                head[k] = f;
                dups++;
                break;
            }
        }
    }
    return dups;
}

/* The groups of equal scalars among j's terms out of the job: their point sums become
 * the bases, their scalars the scalars, of a second MSM whose result goes into out
 * (infinity when there was no pass); the job keeps the terms that are alone, in
 * order, with nact and bits theirs. 0 or -ENOMEM. */
static int msm_run_impl(const curve_group *G, uint64_t *result, const uint8_t *bases, const uint8_t *scalars,
                        size_t count, size_t scalar_bytes, unsigned threads, unsigned c,
                        enum msm_buckets mode, enum msm_glv glv, const struct msm_split *sp, size_t first);

static int msm_take_repeats(struct msm_job *j, uint64_t *idx, uint64_t *sc, unsigned threads,
                            enum msm_buckets mode, uint64_t *out)
{
    const curve_group *G = j->G;
    const unsigned nl = j->nl, cl = ec_cl(G), jl = 3 * cl, al = 2 * cl;
    const size_t n = j->nact;
    ec_jac_set_inf(G, out);
    if (n < MSM_REP_MIN || n >= UINT32_MAX / 2) return 0;

    /* the probe on a table of its own: the full one (4n bytes or more, 64 MiB for a
     * 2^22 GLV MSM) is only made, and its pages touched, for a witness that repeats */
    const size_t probe = n < MSM_REP_PROBE ? n : MSM_REP_PROBE;
    uint32_t *tab = calloc(2 * MSM_REP_PROBE, sizeof *tab), *head = malloc(n * sizeof *head);
    uint32_t *gid = NULL;
    uint64_t *J = NULL, *E = NULL, *S = NULL;
    int err = -ENOMEM;
    if (!tab || !head) goto out;
    if (msm_rep_group(j, probe, tab, 2 * MSM_REP_PROBE, head) * MSM_REP_SHARE < probe) {
        err = 0;
        goto out;
    }
    size_t size = 2;
    while (size < 2 * n) size <<= 1;
    free(tab);
    tab = calloc(size, sizeof *tab);
    if (!tab) goto out;
    if (msm_rep_group(j, n, tab, size, head) == 0) {
        err = 0;
        goto out;
    }

    /* group ids for heads with a repeat (gid: UINT32_MAX = alone), then the sums */
    gid = malloc(n * sizeof *gid);
    if (!gid) goto out;
    for (size_t k = 0; k < n; k++) gid[k] = UINT32_MAX;
    size_t ng = 0;
    for (size_t k = 0; k < n; k++)
        if (head[k] != k && gid[head[k]] == UINT32_MAX) gid[head[k]] = (uint32_t)ng++;
    J = malloc(ng * jl * sizeof *J);
    E = malloc(ng * al * sizeof *E);
    S = malloc(ng * nl * sizeof *S);
    if (!J || !E || !S) goto out;
    uint64_t P[EC_MAX_AFF], bits[MSM_MAX_SCALAR_LIMBS] = { 0 };
    size_t m = 0;
    for (size_t k = 0; k < n; k++) {
        const uint64_t *s = msm_term_sc(j, k);
        const uint32_t g = gid[head[k]];
        if (g == UINT32_MAX) { /* alone: stays in the job */
            m = msm_keep_term(j, idx, sc, k, m, s, bits);
            continue;
        }
        msm_load(G, j, P, idx[k]);
        if (head[k] == k) {
            ec_jac_from_aff(G, J + (size_t)g * jl, P);
            memcpy(S + (size_t)g * nl, s, nl * sizeof *S);
        } else {
            ec_add_aff(G, J + (size_t)g * jl, J + (size_t)g * jl, P);
        }
    }
    j->nact = m;
    j->bits = msm_bit_length(bits, nl);
    if (ec_batch_to_aff(G, E, J, ng)) /* a sum at infinity: one at a time, (0, 0) for it */
        for (size_t g = 0; g < ng; g++) ec_jac_to_aff(G, E + g * al, J + g * jl);
    err = msm_run_impl(G, out, (const uint8_t *)E, (const uint8_t *)S, ng, nl * sizeof *S, threads, 0, mode,
                       MSM_GLV_AUTO, NULL, 0);
out:
    free(S);
    free(E);
    free(J);
    free(gid);
    free(head);
    free(tab);
    return err;
}

/* msm_run_ext, with the GLV split taken from sp (entries first ..) when sp is given. */
static int msm_run_impl(const curve_group *G, uint64_t *result, const uint8_t *bases, const uint8_t *scalars,
                        size_t count, size_t scalar_bytes, unsigned threads, unsigned c,
                        enum msm_buckets mode, enum msm_glv glv, const struct msm_split *sp, size_t first)
{
    if (!G || !result || (count && (!bases || !scalars)) || scalar_bytes == 0 ||
        scalar_bytes > 8 * MSM_MAX_SCALAR_LIMBS || c > MSM_MAX_WINDOW || count >= MSM_PHI_BIT)
        return -EINVAL;

    struct msm_job j = {
        .G = G, .bases = bases, .nl = (unsigned)((scalar_bytes + 7) / 8), .split = sp, .split_first = first
    };
    uint64_t *idx = NULL, *sc = NULL, *phi = NULL;
    uint64_t acc[EC_MAX_JAC];
    int err = 0;

    if (count == 0) {
        ec_jac_set_inf(G, result);
        return 0;
    }
    /* GLV: 2 terms of 2 limbs per input term; plain: 1 term of nl limbs */
    idx = huge_alloc(2 * count * sizeof *idx);                            /* the big vectors: hugemem.h */
    if (!sp) sc = huge_alloc(count * (j.nl > 4 ? j.nl : 4) * sizeof *sc); /* with sp: msm_term_sc */
    if (!idx || (!sp && !sc)) {
        err = -ENOMEM;
        goto out;
    }
    threads = msm_threads(threads);
    err = 1; /* not prepared yet */
    if (sp || msm_glv_wanted(G, count, glv)) {
        phi = huge_alloc(count * ec_cl(G) * sizeof *phi);
        if (!phi) {
            err = -ENOMEM;
            goto out;
        }
        err = msm_prepare_all(&j, scalars, count, scalar_bytes, idx, sc, phi, threads);
    }
    if (err == 1) err = msm_prepare_all(&j, scalars, count, scalar_bytes, idx, sc, NULL, threads);
    if (err) goto out;
    j.idx = idx;
    j.sc = sc;
    if (j.nact == 0) {
        ec_jac_set_inf(G, result);
        goto out;
    }

    /* Terms whose scalar is 1 (witness bits, and -1 folded to 1 with the base negated)
     * are summed on their own (msm_run_ones), terms of one repeated scalar are one term
     * of a second MSM (msm_take_repeats); the other terms' windows cover only their own
     * bit length. */
    size_t n1 = msm_take_ones(&j, idx, sc);
    if (n1 == SIZE_MAX) {
        err = -ENOMEM;
        goto out;
    }
    ec_jac_set_inf(G, acc);
    if (n1) {
        err = msm_run_ones(&j, n1, threads, mode, acc);
        if (err) goto out;
    }
    if (j.nact) {
        uint64_t rest[EC_MAX_JAC];
        err = msm_take_repeats(&j, idx, sc, threads, mode, rest);
        if (err) goto out;
        ec_add(G, acc, acc, rest);
    }
    if (j.nact) {
        uint64_t rest[EC_MAX_JAC];
        msm_plan(&j, threads, c, mode);
        j.batch = msm_batch_size(&j, mode);
        j.min_batch = mode == MSM_BUCKETS_AFFINE ? 1 : msm_auto_min_batch();
        err = msm_execute(&j, threads, rest);
        if (err) goto out;
        ec_add(G, acc, acc, rest);
    }
    ec_jac_copy(G, result, acc);
out:
    free(phi);
    free(sc);
    free(idx);
    return err;
}

int msm_run_ext(const curve_group *G, uint64_t *result, const uint8_t *bases, const uint8_t *scalars,
                size_t count, size_t scalar_bytes, unsigned threads, unsigned c, enum msm_buckets mode,
                enum msm_glv glv)
{
    return msm_run_impl(G, result, bases, scalars, count, scalar_bytes, threads, c, mode, glv, NULL, 0);
}

/* ---- one GLV split for several MSMs -------------------------------------------- */

struct msm_split_job {
    const curve_group *G;
    const uint8_t *scalars;
    size_t scalar_bytes;
    struct msm_split *sp;
    bool *bad; /* part -> a scalar not below r */
};

static void msm_split_part(void *arg, unsigned part, unsigned nparts)
{
    struct msm_split_job *sj = arg;
    struct msm_split *sp = sj->sp;
    size_t lo = sp->count * part / nparts, hi = sp->count * (part + 1) / nparts;
    sj->bad[part] = !msm_all_below_r(sj->G, sj->scalars, lo, hi, sj->scalar_bytes);
    if (sj->bad[part]) return;
    for (size_t i = lo; i < hi; i++) {
        uint64_t s[MSM_MAX_SCALAR_LIMBS] = { 0 }, *e = sp->k + 4 * i;
        memcpy(s, sj->scalars + i * sj->scalar_bytes, sj->scalar_bytes);
        if (!(s[0] | s[1] | s[2] | s[3])) {
            e[0] = e[1] = e[2] = e[3] = 0;
            sp->neg[i] = 0;
            continue;
        }
        sp->neg[i] = (uint8_t)ec_glv_split(sj->G, e, e + 2, s);
    }
}

int msm_split_make(const curve_group *G, msm_split **out, const uint8_t *scalars, size_t count,
                   size_t scalar_bytes, unsigned threads)
{
    if (!G || !out || (count && !scalars) || scalar_bytes == 0 || scalar_bytes > 8 * MSM_MAX_SCALAR_LIMBS)
        return -EINVAL;
    *out = NULL;
    if (!msm_glv_wanted(G, count, MSM_GLV_AUTO)) return 0;
    struct msm_split *sp = calloc(1, sizeof *sp);
    if (!sp) return -ENOMEM;
    sp->Fr = G->Fr;
    memcpy(sp->lambda, G->lambda, sizeof sp->lambda);
    sp->count = count;
    sp->k = huge_alloc(count * 4 * sizeof *sp->k);
    sp->neg = malloc(count);
    unsigned want = (unsigned)(count / MSM_PREP_MIN_PART);
    threads = msm_threads(threads);
    if (want > threads) want = threads;
    if (want < 1) want = 1;
    bool *bad = calloc(want, sizeof *bad);
    if (!sp->k || !sp->neg || !bad) {
        free(bad);
        msm_split_free(sp);
        return -ENOMEM;
    }
    struct msm_split_job sj = { G, scalars, scalar_bytes, sp, bad };
    unsigned nparts = workers_run(want, msm_split_part, &sj);
    for (unsigned p = 0; p < nparts; p++)
        if (bad[p]) { /* a scalar >= r: no split; the MSMs run the plain path */
            free(bad);
            msm_split_free(sp);
            return 0;
        }
    free(bad);
    *out = sp;
    return 0;
}

void msm_split_free(msm_split *sp)
{
    if (!sp) return;
    free(sp->k);
    free(sp->neg);
    free(sp);
}

int msm_run_split(const curve_group *G, uint64_t *result, const uint8_t *bases, const uint8_t *scalars,
                  size_t count, size_t scalar_bytes, const msm_split *sp, size_t first, unsigned threads)
{
    /* the split fits G when G has the same scalar field and lambda (G1 and G2 of a curve) */
    bool fits = sp && G && sp->Fr == G->Fr && !memcmp(sp->lambda, G->lambda, sizeof sp->lambda) &&
        first <= sp->count && count <= sp->count - first && msm_glv_wanted(G, count, MSM_GLV_AUTO);
    return msm_run_impl(G, result, bases, scalars, count, scalar_bytes, threads, 0, MSM_BUCKETS_AUTO,
                        MSM_GLV_AUTO, fits ? sp : NULL, first);
}

int msm_run(const curve_group *G, uint64_t *result, const uint8_t *bases, const uint8_t *scalars,
            size_t count, size_t scalar_bytes, unsigned threads)
{
    return msm_run_window(G, result, bases, scalars, count, scalar_bytes, threads, 0);
}

int msm_naive(const curve_group *G, uint64_t *result, const uint8_t *bases, const uint8_t *scalars,
              size_t count, size_t scalar_bytes)
{
    if (!G || !result || (count && (!bases || !scalars)) || scalar_bytes == 0 ||
        scalar_bytes > 8 * MSM_MAX_SCALAR_LIMBS)
        return -EINVAL;
    const unsigned cl = ec_cl(G), nl = (unsigned)((scalar_bytes + 7) / 8);
    const size_t pb = 2 * cl * sizeof(uint64_t);
    uint64_t acc[EC_MAX_JAC], pj[EC_MAX_JAC], t[EC_MAX_JAC], P[EC_MAX_AFF];

    ec_jac_set_inf(G, acc);
    for (size_t i = 0; i < count; i++) {
        uint64_t k[MSM_MAX_SCALAR_LIMBS] = { 0 };
        memcpy(P, bases + i * pb, pb);
        memcpy(k, scalars + i * scalar_bytes, scalar_bytes);
        ec_jac_from_aff(G, pj, P);
        ec_jac_mul_scalar(G, t, pj, k, nl);
        ec_add(G, acc, acc, t);
    }
    ec_jac_copy(G, result, acc);
    return 0;
}
