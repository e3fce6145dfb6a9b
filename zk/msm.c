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
 *     Threads (the process's persistent set, team.h) claim tasks from a counter
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
 * (msm_plan) in units of one mixed addition; see the numbers there.
 *
 * Files: this one plans and runs (the cost model, the window combine, the entry
 * points); msm_prepare.c does step 1, msm_bucket.c step 3 (scatter, batch-affine
 * accumulation, bucket reduction), msm_repeat.c the passes for repeated scalars,
 * msm_split.c the GLV split shared by several MSMs; msm_job.h is what they share. */
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

unsigned msm_auto_min_batch(void)
{
    return ifma_available() ? MSM_AUTO_MIN_BATCH_IFMA : MSM_AUTO_MIN_BATCH;
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
 * (team.h) and a hand-over costs less, but the constant is kept so that the plans,
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

void msm_plan(struct msm_job *j, unsigned threads, unsigned force_c, enum msm_buckets mode)
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
                j->cost = cost;
                j->c = c;
                j->nwin = nwin;
                j->nsplit = s;
            }
        }
    }
    j->ntasks = j->nwin * j->nsplit;
}

/* The same model for the one window of a fixed-base MSM (msm_fixed.c): nterms table
 * points into 2^(c-1) buckets on one thread, reduced once, no doublings. */
double msm_fixed_cost(const curve_group *G, size_t nterms, unsigned c)
{
    const double affine = ifma_available() ? MSM_AFFINE_COST_IFMA : MSM_AFFINE_COST;
    const double inv = G->deg == 1 ? MSM_INV_COST_G1 : MSM_INV_COST_G2;
    unsigned b = msm_batch_for(nterms, c, 1, MSM_BUCKETS_AUTO);
    double add = b ? affine + inv / b : 1.0, red = b ? 2 * affine + MSM_REDUCE_AFF_EXTRA : MSM_REDUCE_COST;
    return add * (double)nterms + red * (double)((size_t)1 << (c - 1));
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

unsigned msm_threads(unsigned threads)
{
    if (threads == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        threads = n > 0 ? (unsigned)n : 1;
    }
    return threads > 1024 ? 1024 : threads;
}

/* The job's batch (see msm_batch_for), once msm_plan has set c and nsplit. */
unsigned msm_batch_size(const struct msm_job *j, enum msm_buckets mode)
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
bool msm_glv_wanted(const curve_group *G, size_t count, enum msm_glv glv)
{
    if (glv == MSM_GLV_OFF) return false;
    if (count > MSM_GLV_MAX_TABLE / (ec_cl(G) * sizeof(uint64_t))) return false;
    return glv == MSM_GLV_ON || count >= MSM_GLV_MIN;
}

/* Steps 3 and 4 for a planned job (c, nwin, nsplit, batch set): the tasks on the worker
 * threads, then out = sum_w 2^(wc) W_w, W_w the sum of window w's range partials. */
int msm_execute(struct msm_job *j, unsigned threads, uint64_t *out)
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
    team_run(threads, msm_part, j); /* fewer parts than asked just take more tasks each */
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

int msm_run_impl(const curve_group *G, uint64_t *result, const uint8_t *bases, const uint8_t *scalars,
                 size_t count, size_t scalar_bytes, unsigned threads, unsigned c, enum msm_buckets mode,
                 enum msm_glv glv, const struct msm_split *sp, size_t first)
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
