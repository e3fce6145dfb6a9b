/* msm_prepare.c — step 1 of the host MSM (msm.c's plan): the scalars into the job's
 * active terms, zero terms dropped, the r - s fold, and the GLV split into 128-bit
 * halves when the job has phi; in parallel parts over the input. */
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
bool msm_all_below_r(const curve_group *G, const uint8_t *scalars, size_t lo, size_t hi, size_t scalar_bytes)
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
unsigned msm_bit_length(const uint64_t *acc, unsigned nl)
{
    for (unsigned l = nl; l-- > 0;)
        if (acc[l]) return 64 * l + (64 - (unsigned)__builtin_clzll(acc[l]));
    return 0;
}

/* Step 1 for the job (GLV when phi is given): 0 when prepared; 1 when a scalar is not
 * below r and GLV was asked (nothing usable written: prepare again without it);
 * -ENOMEM. Sets nl (GLV: 2), nact, bits and phi. */
int msm_prepare_all(struct msm_job *j, const uint8_t *scalars, size_t count, size_t scalar_bytes,
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
    nparts = team_run(want, msm_prep_part_run, &pp);
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
