/* msm_split.c — one GLV split shared by several MSMs over one scalar vector
 * (Groth16's A, B1, B2 and C: msm_split_make, msm_run_split; msm.h). */
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
    unsigned nparts = team_run(want, msm_split_part, &sj);
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
