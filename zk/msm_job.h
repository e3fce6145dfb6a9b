/* msm_job.h — what the files of the host MSM share (msm.c the plan, msm_prepare.c,
 * msm_bucket.c, msm_repeat.c, msm_split.c): the job a run builds, the packing of a
 * term's base reference, the window digits, and the steps each file exports to the
 * others. Private to zk/: the MSM's public face is zk/msm.h. */
#ifndef CUZK_MSM_JOB_H
#define CUZK_MSM_JOB_H

#include "zk/msm.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

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
    double cost;          /* msm_plan's model cost of the plan it chose (msm_table_window) */
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

/* Batch-affine buckets: additions per shared inversion at most (msm.c's "Measured"). */
#define MSM_BATCH_MAX     1024
/* Input terms a part of the preparation (or of the shared split) takes at least: below,
 * threads cost more than they save. */
#define MSM_PREP_MIN_PART 4096

/* ---- the steps, by file ---------------------------------------------------------- */

/* msm.c, the plan: the smallest batch worth the affine form on this CPU; the window,
 * ranges and batch of a job; the worker threads a run takes (0: all); whether GLV is
 * worth it for count terms; steps 3 and 4 for a planned job (the tasks on the worker
 * threads, the windows combined into out); the whole run of one MSM (sp: a shared GLV
 * split from its entry first on, or NULL). */
unsigned msm_auto_min_batch(void);
void msm_plan(struct msm_job *j, unsigned threads, unsigned force_c, enum msm_buckets mode);
unsigned msm_batch_size(const struct msm_job *j, enum msm_buckets mode);
unsigned msm_threads(unsigned threads);
double msm_fixed_cost(const curve_group *G, size_t nterms, unsigned c);
bool msm_glv_wanted(const curve_group *G, size_t count, enum msm_glv glv);
int msm_execute(struct msm_job *j, unsigned threads, uint64_t *out);
int msm_run_impl(const curve_group *G, uint64_t *result, const uint8_t *bases, const uint8_t *scalars,
                 size_t count, size_t scalar_bytes, unsigned threads, unsigned c, enum msm_buckets mode,
                 enum msm_glv glv, const struct msm_split *sp, size_t first);

/* msm_prepare.c, step 1: the scalars into the job's terms (zero terms dropped, the
 * r - s fold, the GLV halves when phi is given; nl, nact, phi and bits set), 0 or
 * -errno; the bit length of the OR of scalars (nl limbs), what the windows must cover;
 * whether the scalars [lo, hi) are all below r (GLV's split needs them reduced). */
int msm_prepare_all(struct msm_job *j, const uint8_t *scalars, size_t count, size_t scalar_bytes,
                    uint64_t *idx, uint64_t *sc, uint64_t *phi, unsigned threads);
unsigned msm_bit_length(const uint64_t *acc, unsigned nl);
bool msm_all_below_r(const curve_group *G, const uint8_t *scalars, size_t lo, size_t hi, size_t scalar_bytes);

/* msm_bucket.c, step 3: one part of the worker threads' run of a job's tasks
 * (team_run's callback; msm_execute). */
void msm_part(void *arg, unsigned part, unsigned nparts);

/* msm_repeat.c: the terms whose scalar is 1 moved to the end of the job's terms (their
 * count returned), then summed apart into out; the groups of equal scalars summed
 * first, a second MSM over their sums into out (infinity when there was no pass). */
size_t msm_take_ones(struct msm_job *j, uint64_t *idx, uint64_t *sc);
int msm_run_ones(const struct msm_job *j, size_t n1, unsigned threads, enum msm_buckets mode, uint64_t *out);
int msm_take_repeats(struct msm_job *j, uint64_t *idx, uint64_t *sc, unsigned threads, enum msm_buckets mode,
                     uint64_t *out);

#endif
