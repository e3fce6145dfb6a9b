/* msm_fixed.c — the fixed-base MSM: an MSM over bases known ahead, from a table of
 * their window multiples (msm.h, msm_table).
 *
 * The table keeps, for each base P_i, the points 2^(cw) P_i for w = 0 .. W-1, W =
 * tb/c + 1 windows of c bits over tb, the bit length of (r-1)/2 (the scalars after the
 * r - s fold). Then sum_i s_i P_i = sum_(i,w) d_iw 2^(cw) P_i with s_i's signed c-bit
 * digits d_iw: ONE window of N·W terms into one set of 2^(c-1) buckets, with no
 * doublings and one bucket reduction instead of one per window. That flattened MSM is
 * an ordinary job of msm.c's steps (msm_job.h) over the table as its bases, with one
 * window, so it runs the same scatter, batch-affine buckets, IFMA lanes and reduction.
 *
 * What it costs: the table is W times the bases' bytes (c = 15 on BN254: 17x), and
 * building it takes tb doublings a base, against the c·nwin doublings of a whole
 * ordinary MSM (docs/performance.md, "Fixed-base tables", has the measured costs and
 * when they are repaid). msm_table_window says where a table pays at all. */
#include "zk/msm_job.h"
#include "base/hugemem.h"
#include "zk/team.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct msm_table {
    const curve_group *G;
    const uint8_t *bases; /* what it was built from (the plain path for scalars >= r) */
    size_t count;
    unsigned c, nwin;
    uint64_t *pts; /* count * nwin affine points, 2cl limbs each; base i window w at i*nwin + w */
};

/* Bit length of (r-1)/2: r is odd and above 2^(bits-1) + 1, so bits - 1. */
static unsigned msm_table_bits(const curve_group *G)
{
    return G->Fr->bits - 1;
}

/* The cheapest window by the model within max_bytes (its cost in *cost), 0 if none fits. */
static unsigned msm_table_best_c(const curve_group *G, size_t count, size_t max_bytes, double *cost)
{
    if (!G || count == 0 || count >= (MSM_PHI_BIT >> 8)) return 0;
    const unsigned tb = msm_table_bits(G);
    const size_t pb = 2 * ec_cl(G) * sizeof(uint64_t);
    double best = -1;
    unsigned best_c = 0;
    for (unsigned c = 2; c <= MSM_MAX_WINDOW; c++) {
        const size_t nwin = tb / c + 1;
        if (count > max_bytes / pb / nwin) continue; /* does not fit */
        /* The top window's digits reach only 2^(tb - (W-1)c): where that is a few
         * buckets, its N terms pile into them, the batches collide and the additions go
         * jacobian. bench/msm_ntt-like runs, BN254 2^14, 1 thread, CPU ms against
         * msm_run's 22-23 (shared 2-core box, load ~12): c=15 (top window 13 bits)
         * 17-18, c=16 (13 bits) 19, but c=14 (1 bit) 27-28, c=13 (6 bits) 30, c=12 (1
         * bit) 34. So only windows whose top digit spans at least 2^(c-4) buckets. */
        if (tb - (nwin - 1) * c + 3 < c) continue;
        double here = msm_fixed_cost(G, count * nwin, c);
        if (best < 0 || here < best) {
            best = here;
            best_c = c;
        }
    }
    *cost = best;
    return best_c;
}

/* The model's window for a table of count bases, or 0 where none pays or fits.
 * Cost, in msm.c's units (msm_fixed_cost): N·W batch-affine additions plus one
 * reduction of 2^(c-1) buckets; it falls with c until the reduction's 2^c outweighs
 * the N·W terms it saves (c = 15 at 2^14 terms on both curves, among the windows whose
 * top digit is wide enough: msm_table_best_c). The table's bytes, N·W·(affine point),
 * must be at most max_bytes; and the table is taken only where the model's cost is
 * below msm_plan's for the same MSM today (2N GLV halves of half the bits): 0.73x at
 * 2^14 (measured 0.66-0.85x, docs/performance.md). That is per MSM: the table's
 * build, tb doublings a base, is the caller's to weigh (the file's head). */
unsigned msm_table_window(const curve_group *G, size_t count, size_t max_bytes)
{
    double best;
    const unsigned best_c = msm_table_best_c(G, count, max_bytes, &best);
    if (!best_c) return 0;
    struct msm_job today = { .G = G, .nact = 2 * count, .bits = (msm_table_bits(G) + 2) / 2 };
    msm_plan(&today, 1, 0, MSM_BUCKETS_AUTO);
    return best < today.cost ? best_c : 0;
}

struct msm_table_build {
    struct msm_table *t;
    int err;
};

/* Bases per batch of the conversion to affine: one inversion each. */
#define MSM_TABLE_CHUNK 256

/* Part of the build over bases [lo, hi): each base's doubling chain in jacobian form,
 * MSM_TABLE_CHUNK bases' points converted to affine at a time. */
static void msm_table_build_part(void *arg, unsigned part, unsigned nparts)
{
    struct msm_table_build *b = arg;
    struct msm_table *t = b->t;
    const curve_group *G = t->G;
    const unsigned cl = ec_cl(G), jl = 3 * cl, W = t->nwin;
    const size_t pb = 2 * cl * sizeof(uint64_t);
    const size_t lo = t->count * part / nparts, hi = t->count * (part + 1) / nparts;
    uint64_t *jac = malloc((size_t)MSM_TABLE_CHUNK * W * jl * sizeof *jac);
    if (!jac) {
        __atomic_store_n(&b->err, -ENOMEM, __ATOMIC_RELAXED);
        return;
    }
    for (size_t i0 = lo; i0 < hi; i0 += MSM_TABLE_CHUNK) {
        const size_t n = hi - i0 < MSM_TABLE_CHUNK ? hi - i0 : MSM_TABLE_CHUNK;
        for (size_t i = 0; i < n; i++) {
            uint64_t P[EC_MAX_AFF], J[EC_MAX_JAC];
            memcpy(P, t->bases + (i0 + i) * pb, pb); /* zkey bases may be misaligned */
            if (ec_aff_is_inf(G, P))
                ec_jac_set_inf(G, J);
            else
                ec_jac_from_aff(G, J, P);
            for (unsigned w = 0; w < W; w++) {
                ec_jac_copy(G, jac + ((size_t)i * W + w) * jl, J);
                if (w + 1 < W)
                    for (unsigned d = 0; d < t->c && !ec_jac_is_inf(G, J); d++) ec_dbl(G, J, J);
            }
        }
        if (ec_batch_to_aff(G, t->pts + i0 * W * 2 * cl, jac, n * W)) {
            __atomic_store_n(&b->err, -ENOMEM, __ATOMIC_RELAXED);
            break;
        }
    }
    free(jac);
}

int msm_table_build(const curve_group *G, msm_table **out, const uint8_t *bases, size_t count, unsigned c,
                    unsigned threads)
{
    if (!G || !out || (count && !bases) || count == 0 || c > MSM_MAX_WINDOW || count >= (MSM_PHI_BIT >> 8))
        return -EINVAL;
    double cost;
    if (c == 0) c = msm_table_best_c(G, count, SIZE_MAX, &cost);
    if (c < 2) return -EINVAL; /* a digit of one bit has no buckets to share */
    struct msm_table *t = calloc(1, sizeof *t);
    if (!t) return -ENOMEM;
    t->G = G;
    t->bases = bases;
    t->count = count;
    t->c = c;
    t->nwin = msm_table_bits(G) / c + 1;
    t->pts = huge_alloc(count * t->nwin * 2 * ec_cl(G) * sizeof *t->pts);
    if (!t->pts) {
        free(t);
        return -ENOMEM;
    }
    struct msm_table_build b = { t, 0 };
    unsigned want = msm_threads(threads);
    if (want > count / MSM_TABLE_CHUNK + 1) want = (unsigned)(count / MSM_TABLE_CHUNK + 1);
    team_run(want, msm_table_build_part, &b);
    if (b.err) {
        msm_table_free(t);
        return b.err;
    }
    *out = t;
    return 0;
}

size_t msm_table_bytes(const msm_table *t)
{
    return t ? t->count * t->nwin * 2 * ec_cl(t->G) * sizeof(uint64_t) : 0;
}

unsigned msm_table_c(const msm_table *t)
{
    return t ? t->c : 0;
}

void msm_table_free(msm_table *t)
{
    if (!t) return;
    free(t->pts);
    free(t);
}

/* ---- the run ------------------------------------------------------------------ */

struct msm_fixed_prep {
    const struct msm_table *t;
    const uint8_t *scalars;
    size_t scalar_bytes;
    uint64_t *idx, *sc;
    size_t *nout; /* part -> terms written from its first slot, lo·W */
};

/* The terms of input terms [lo, hi): each nonzero digit d of the folded scalar of a
 * base not at infinity is the term |d| · (2^(cw) P_i, negated where d < 0 or the fold
 * negated), written from slot lo·W on. The one-window job reads a term's scalar u as
 * window 0's signed digit: u for u < 2^(c-1), but -2^(c-1) for u = 2^(c-1) (its carry
 * has no window to go to), so that term's sign is flipped here in advance. */
static void msm_fixed_prep_part(void *arg, unsigned part, unsigned nparts)
{
    struct msm_fixed_prep *pp = arg;
    const struct msm_table *t = pp->t;
    const curve_group *G = t->G;
    const unsigned W = t->nwin, c = t->c, cl = ec_cl(G);
    const size_t pb = 2 * cl * sizeof(uint64_t);
    const size_t lo = t->count * part / nparts, hi = t->count * (part + 1) / nparts;
    const uint64_t *r = G->Fr->p;
    uint64_t half[4];
    for (unsigned l = 0; l < 4; l++) half[l] = (r[l] >> 1) | (l < 3 ? r[l + 1] << 63 : 0);

    size_t k = lo * W;
    for (size_t i = lo; i < hi; i++) {
        uint64_t s[4] = { 0 }, P[EC_MAX_AFF];
        memcpy(s, pp->scalars + i * pp->scalar_bytes, pp->scalar_bytes < 32 ? pp->scalar_bytes : 32);
        if (!(s[0] | s[1] | s[2] | s[3])) continue;
        memcpy(P, t->bases + i * pb, pb);
        if (ec_aff_is_inf(G, P)) continue;
        uint64_t fold = 0;
        bool above = false; /* s > (r-1)/2: r - s and the base negated (s < r is checked) */
        for (unsigned l = 4; l-- > 0;)
            if (s[l] != half[l]) {
                above = s[l] > half[l];
                break;
            }
        if (above) {
            uint64_t borrow = 0;
            for (unsigned l = 0; l < 4; l++) {
                fe_u128 dd = (fe_u128)r[l] - s[l] - borrow;
                s[l] = (uint64_t)dd;
                borrow = (uint64_t)(dd >> 64) & 1;
            }
            fold = MSM_NEG_BIT;
        }
        for (unsigned w = 0; w < W; w++) {
            int d = msm_digit(s, 4, w, c);
            if (d == 0) continue;
            uint64_t u = (uint64_t)(d < 0 ? -d : d), neg = fold ^ (d < 0 ? MSM_NEG_BIT : 0);
            if (u == UINT64_C(1) << (c - 1)) neg ^= MSM_NEG_BIT;
            pp->idx[k] = ((uint64_t)i * W + w) | neg;
            pp->sc[k++] = u;
        }
    }
    pp->nout[part] = k - lo * W;
}

/* Terms a range of the one window takes at least, so that each thread's buckets
 * (2^(c-1) of them, reduced once) are worth their reduction. */
#define MSM_FIXED_MIN_RANGE 4096

int msm_run_table(const msm_table *t, uint64_t *result, const uint8_t *scalars, size_t count,
                  size_t scalar_bytes, unsigned threads)
{
    if (!t || !result || !scalars || scalar_bytes == 0 || scalar_bytes > 8 * MSM_MAX_SCALAR_LIMBS)
        return -EINVAL;
    if (count != t->count) return -EINVAL; /* a table stands for its own bases only */
    const curve_group *G = t->G;
    /* The table covers scalars below r (folded to at most (r-1)/2); others, which only
     * a caller outside Groth16 passes, go the ordinary way over the same bases. */
    if (!msm_all_below_r(G, scalars, 0, count, scalar_bytes))
        return msm_run(G, result, t->bases, scalars, count, scalar_bytes, threads);

    threads = msm_threads(threads);
    const size_t slots = count * t->nwin;
    uint64_t *idx = huge_alloc(slots * sizeof *idx), *sc = huge_alloc(slots * sizeof *sc);
    unsigned want = (unsigned)(count / MSM_PREP_MIN_PART);
    if (want > threads) want = threads;
    if (want < 1) want = 1;
    size_t *nout = calloc(want, sizeof *nout);
    int err = 0;
    if (!idx || !sc || !nout) {
        err = -ENOMEM;
        goto out;
    }
    struct msm_fixed_prep pp = { t, scalars, scalar_bytes, idx, sc, nout };
    unsigned nparts = team_run(want, msm_fixed_prep_part, &pp);
    size_t nact = 0;
    for (unsigned p = 0; p < nparts; p++) { /* close up the parts' terms, in order */
        const size_t from = count * p / nparts * t->nwin;
        if (from != nact) {
            memmove(idx + nact, idx + from, nout[p] * sizeof *idx);
            memmove(sc + nact, sc + from, nout[p] * sizeof *sc);
        }
        nact += nout[p];
    }
    if (nact == 0) {
        ec_jac_set_inf(G, result);
        goto out;
    }
    /* One window (w = 0) of width c over the table: bits = c gives it all 2^(c-1)
     * buckets (msm_window_buckets); ranges split it over the threads. */
    struct msm_job j = { .G = G,
                         .bases = (const uint8_t *)t->pts,
                         .idx = idx,
                         .sc = sc,
                         .nact = nact,
                         .nl = 1,
                         .bits = t->c,
                         .c = t->c,
                         .nwin = 1 };
    j.nsplit = threads;
    if (j.nsplit > nact / MSM_FIXED_MIN_RANGE) j.nsplit = (unsigned)(nact / MSM_FIXED_MIN_RANGE);
    if (j.nsplit < 1) j.nsplit = 1;
    j.batch = msm_batch_size(&j, MSM_BUCKETS_AUTO);
    j.min_batch = msm_auto_min_batch();
    err = msm_execute(&j, threads, result);
out:
    free(nout);
    free(sc);
    free(idx);
    return err;
}
