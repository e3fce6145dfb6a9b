/* msm_repeat.c — the passes of the host MSM (msm.c) for scalars that a real witness
 * repeats: the terms whose scalar is 1, summed apart, and groups of equal scalars,
 * whose points are summed first. */
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
size_t msm_take_ones(struct msm_job *j, uint64_t *idx, uint64_t *sc)
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
int msm_run_ones(const struct msm_job *j, size_t n1, unsigned threads, enum msm_buckets mode, uint64_t *out)
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

int msm_take_repeats(struct msm_job *j, uint64_t *idx, uint64_t *sc, unsigned threads, enum msm_buckets mode,
                     uint64_t *out)
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
