/* msm_bucket.c — step 3 of the host MSM (msm.c's plan): a task's bucket scatter, the
 * batch-affine accumulation and the bucket reduction, each specialised per group, and
 * the worker part that claims tasks. */
#include "zk/msm_job.h"
#include "base/hugemem.h"
#include "zk/ifma.h"
#include "zk/team.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* Whether the x coordinates at a and b (cl limbs, a possibly misaligned) are equal. A
 * limb loop rather than memcmp: at BLS12-381 G2's 96 bytes GCC called the library's
 * memcmp once a bucket addition (2.6% of a bls12381 mulchain-13 proof's CPU samples,
 * perf), where at the smaller sizes it compares inline. */
CUZK_HD bool msm_x_equal(const uint64_t *a, const uint64_t *b, unsigned cl)
{
    uint64_t d = 0;
    for (unsigned i = 0; i < cl; i++) {
        uint64_t w;
        memcpy(&w, a + i, sizeof w);
        d |= w ^ b[i];
    }
    return d == 0;
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
        if (msm_x_equal(Px, A, cl)) { /* P = +-B (x both reduced): rare */
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

/* P of reference ix into bucket b, the batch flushed once it is full. */
static inline void msm_aff_add_flushing(const curve_group *G, struct msm_aff_ctx *x, uint32_t b, uint64_t ix)
{
    msm_aff_add(G, x, b, ix);
    if (x->nbat == x->batch) {
        msm_aff_flush(G, x);
        msm_aff_retry(G, x);
    }
}

/* The open batch and every deferred point done. */
static inline void msm_aff_drain(const curve_group *G, struct msm_aff_ctx *x)
{
    while (x->nbat || x->ndef) {
        msm_aff_flush(G, x);
        msm_aff_retry(G, x);
    }
}

/* out = sum_k (k+1) bucket_k over the nb buckets of x's scratch: msm_aff_reduce, or
 * where it does not apply the running sums of msm_task_impl. */
CUZK_HD void msm_aff_sum_buckets(const curve_group *G, struct msm_aff_ctx *x, size_t nb, uint64_t *out)
{
    const unsigned cl = ec_cl(G), jl = 3 * cl;
    const struct msm_scratch *S = x->S;
    if (msm_aff_reduce(G, x, nb, out)) return;
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

CUZK_HD void msm_task_affine_impl(const curve_group *G, const struct msm_job *j, unsigned w, size_t lo,
                                  size_t hi, struct msm_scratch *S, uint64_t *out, unsigned batch)
{
    const unsigned cl = ec_cl(G), nl = j->nl, c = j->c;
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
        msm_aff_add_flushing(G, &x, (uint32_t)((size_t)((d < 0 ? -d : d) - 1) + nb * (k & (K - 1))), ix);
    }
    msm_aff_drain(G, &x);
    if (K > 1) msm_aff_fold(G, &x, nb, K);
    msm_aff_sum_buckets(G, &x, nb, out);
}

/* Two windows in one pass: w and w + 1 (both full: 2^(c-1) buckets, the same batch b),
 * each with its own buckets (w + 1's at nb on), in batches of 2b. A bucket of one window
 * never collides with one of the other, so a batch of 2b has the collision odds of one
 * of b and shares one inversion (and the 21 products of lanes_batch_inv8 around it);
 * each term's index and scalar are read once for both digits. Measured at 2^13-2^14,
 * where c = 11 and batches of 256 left the inversions and their products 18% of a
 * proof's CPU (docs/performance.md): merkle-13 0.971x, eddsa-14 0.942x process CPU;
 * from c = 13 the batches are capped (MSM_BATCH_MAX) and windows run alone.
 * Each window's partial goes to its own slot (out, out + 3cl), reduced as
 * msm_task_affine_impl reduces one window. */
CUZK_HD void msm_task_pair_impl(const curve_group *G, const struct msm_job *j, unsigned w, size_t lo,
                                size_t hi, struct msm_scratch *S, uint64_t *out, unsigned batch)
{
    const unsigned cl = ec_cl(G), jl = 3 * cl, nl = j->nl, c = j->c;
    const size_t nb = (size_t)1 << (c - 1);
    struct msm_aff_ctx x = { .j = j, .S = S, .batch = 2 * batch, .cur = 1 };

    memset(S->stamp, 0, 2 * nb * sizeof *S->stamp);
    memset(S->state, 0, 2 * nb);
    int ring[2][MSM_PREFETCH_RING];
    for (size_t k = lo; k < hi && k < lo + MSM_PREFETCH; k++) {
        const uint64_t *sc = msm_term_sc(j, k);
        ring[0][k % MSM_PREFETCH_RING] = msm_digit(sc, nl, w, c);
        ring[1][k % MSM_PREFETCH_RING] = msm_digit(sc, nl, w + 1, c);
    }
    for (size_t k = lo; k < hi; k++) {
        if (k + MSM_PREFETCH < hi) { /* as msm_task_affine_impl: the buckets MSM_PREFETCH ahead */
            const uint64_t *sc = msm_term_sc(j, k + MSM_PREFETCH);
            for (unsigned h = 0; h < 2; h++) {
                int dn = msm_digit(sc, nl, w + h, c);
                ring[h][(k + MSM_PREFETCH) % MSM_PREFETCH_RING] = dn;
                if (dn) {
                    const uint64_t *Ab = S->A + ((size_t)((dn < 0 ? -dn : dn) - 1) + h * nb) * 2 * cl;
                    __builtin_prefetch(Ab);
                    __builtin_prefetch(Ab + 2 * cl - 1);
                }
            }
        }
        for (unsigned h = 0; h < 2; h++) {
            int d = ring[h][k % MSM_PREFETCH_RING];
            if (d == 0) continue;
            uint64_t ix = j->idx[k];
            if (d < 0) ix ^= MSM_NEG_BIT;
            msm_aff_add_flushing(G, &x, (uint32_t)((size_t)((d < 0 ? -d : d) - 1) + h * nb), ix);
        }
    }
    msm_aff_drain(G, &x);

    /* each window's buckets reduced on their own: the scratch's views moved to w + 1's
     * half for the second, and back */
    x.batch = batch;
    for (unsigned h = 0; h < 2; h++) {
        msm_aff_sum_buckets(G, &x, nb, out + h * jl);
        S->A += h ? -(ptrdiff_t)(nb * 2 * cl) : (ptrdiff_t)(nb * 2 * cl);
        S->B += h ? -(ptrdiff_t)(nb * jl) : (ptrdiff_t)(nb * jl);
        S->state += h ? -(ptrdiff_t)nb : (ptrdiff_t)nb;
    }
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
    }                                                                                                        \
    static __attribute__((noinline)) void msm_task_pair_##tag(const struct msm_job *j, unsigned w,           \
                                                              size_t lo, size_t hi, struct msm_scratch *S,   \
                                                              uint64_t *out, unsigned batch)                 \
    {                                                                                                        \
        msm_task_pair_impl(&group, j, w, lo, hi, S, out, batch);                                             \
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
    void (*pair)(const struct msm_job *j, unsigned w, size_t lo, size_t hi, struct msm_scratch *S,
                 uint64_t *out, unsigned batch);
} msm_task_forms[] = {
    [CURVE_G1_BN254] = { msm_task_jac_g1_bn254, msm_task_aff_g1_bn254, msm_task_pair_g1_bn254 },
    [CURVE_G2_BN254] = { msm_task_jac_g2_bn254, msm_task_aff_g2_bn254, msm_task_pair_g2_bn254 },
    [CURVE_G1_BLS12_381] = { msm_task_jac_g1_bls12_381, msm_task_aff_g1_bls12_381,
                             msm_task_pair_g1_bls12_381 },
    [CURVE_G2_BLS12_381] = { msm_task_jac_g2_bls12_381, msm_task_aff_g2_bls12_381,
                             msm_task_pair_g2_bls12_381 },
};

/* Whether window w (even) runs together with w + 1 (msm_task_pair_impl): both full and
 * batch-affine with the same batch b, and 2b within MSM_BATCH_MAX, so from the
 * windows whose batches are capped (c >= 13: 1024) nothing changes. */
static bool msm_pairs_with_next(const struct msm_job *j, unsigned w)
{
    const size_t full = (size_t)1 << (j->c - 1);
    if (!j->batch || w % 2 || w + 1 >= j->nwin) return false;
    if (msm_window_buckets(j, w) != full || msm_window_buckets(j, w + 1) != full) return false;
    unsigned b = msm_window_batch(j, w);
    return b && b == msm_window_batch(j, w + 1) && 2 * (size_t)b <= MSM_BATCH_MAX;
}

static void msm_task(const struct msm_job *j, unsigned w, size_t lo, size_t hi, struct msm_scratch *S,
                     uint64_t *out)
{
    unsigned b = j->batch ? msm_window_batch(j, w) : 0;
    if (msm_pairs_with_next(j, w)) {
        msm_task_forms[j->G->id].pair(j, w, lo, hi, S, out, b);
        return;
    }
    if (w % 2 && msm_pairs_with_next(j, w - 1)) return; /* window w - 1's task did this one */
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
    /* a job whose windows run in pairs holds two windows' buckets and batches of 2b */
    const size_t pair = msm_pairs_with_next(j, 0) ? 2 : 1;
    const size_t nb = ((size_t)1 << (j->c - 1)) * pair, batch = (size_t)j->batch * pair;
    memset(S, 0, sizeof *S);
    S->B = malloc(nb * 3 * cl * sizeof *S->B);
    if (!S->B) return -ENOMEM;
    if (!j->batch) return 0;
    S->A = malloc(nb * 2 * cl * sizeof *S->A);
    S->stamp = malloc(nb * sizeof *S->stamp);
    S->state = malloc(nb);
    S->bp = malloc(batch * 2 * cl * sizeof *S->bp);
    S->den = malloc(batch * cl * sizeof *S->den);
    S->pre = malloc(batch * cl * sizeof *S->pre);
    S->bb = malloc(batch * sizeof *S->bb);
    S->dref = malloc(MSM_DEFER_MAX * sizeof *S->dref);
    S->db = malloc(MSM_DEFER_MAX * sizeof *S->db);
    if (!S->A || !S->stamp || !S->state || !S->bp || !S->den || !S->pre || !S->bb || !S->dref || !S->db)
        return -ENOMEM;
    S->R = malloc(MSM_RED_MAX_GROUPS * ((2 * 2 + 3) * cl * sizeof *S->R + 1));
    if (!S->R) return -ENOMEM;
    if (ifma_available()) { /* every group has its lane flush */
        S->ifma = aligned_alloc(64, ifma_batch_scratch_bytes(j->G, batch));
        S->px = malloc(batch * sizeof *S->px);
        S->py = malloc(batch * sizeof *S->py);
        S->ng = malloc(batch);
        if (!S->ifma || !S->px || !S->py || !S->ng) return -ENOMEM;
    }
    return 0;
}

/* One part of team_run: claims tasks until none is left. The partial sums go by task,
 * not by part, so the result does not depend on how many parts ran or which took what. */
void msm_part(void *arg, unsigned part, unsigned nparts)
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
