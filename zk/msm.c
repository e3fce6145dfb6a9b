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
 *     bucket |d| (jacobian, mixed addition, the affine base negated when d < 0), then
 *     reduces the buckets by running sums (sum_k k B_k with 2 additions per bucket).
 *     Threads claim tasks from a counter under a mutex (tasks are milliseconds long).
 *  4. Windows are combined by c doublings between them, most significant first.
 *
 * The window width c and the number of point ranges per window come from a cost model
 * (msm_plan) in units of one mixed addition; see the numbers there. */
#include "cuzk/msm.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MSM_MAX_SCALAR_LIMBS 8 /* scalar_bytes <= 64 */
#define MSM_NEG_BIT (UINT64_C(1) << 63)

struct msm_job {
    const curve_group *G;
    const uint8_t *bases;     /* zkey layout, maybe misaligned */
    const uint64_t *idx;      /* active term k -> base index; MSM_NEG_BIT: negate the base */
    const uint64_t *sc;       /* active term k -> scalar, nl limbs (after the r - s fold) */
    size_t nact;              /* active terms */
    unsigned nl;              /* limbs per scalar */
    unsigned bits;            /* bit length of the OR of all active scalars */
    unsigned c, nwin, nsplit, ntasks;
    uint64_t *partial;        /* task t -> its window partial sum, jacobian */
    pthread_mutex_t lock;     /* guards next and err */
    unsigned next;            /* next unclaimed task */
    int err;                  /* first error seen by a worker, 0 if none */
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

/* Buckets window w can touch: |d| <= 2^(bits - wc) when fewer than c-1 bits remain. */
static inline size_t msm_window_buckets(const struct msm_job *j, unsigned w)
{
    unsigned rem = j->bits > w * j->c ? j->bits - w * j->c : 0;
    return rem < j->c - 1 ? (size_t)1 << rem : (size_t)1 << (j->c - 1);
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
    const unsigned cl = ec_cl(G), jl = 3 * cl, nl = j->nl, c = j->c;
    const size_t pb = 2 * cl * sizeof(uint64_t);
    const size_t nb = msm_window_buckets(j, w);
    uint64_t P[EC_MAX_AFF];

    memset(B, 0, nb * jl * sizeof *B); /* Z = 0: every bucket starts at infinity */
    for (size_t k = lo; k < hi; k++) {
        int d = msm_digit(j->sc + k * nl, nl, w, c);
        if (d == 0) continue;
        uint64_t ix = j->idx[k];
        bool neg = (d < 0) ^ ((ix & MSM_NEG_BIT) != 0);
        memcpy(P, j->bases + (ix & ~MSM_NEG_BIT) * pb, pb);
        if (neg) ecf_neg(G, P + cl, P + cl);
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

static void msm_task(const struct msm_job *j, unsigned w, size_t lo, size_t hi, uint64_t *B, uint64_t *out)
{
    CURVE_DISPATCH(j->G, msm_task_impl, j, w, lo, hi, B, out);
}

static void *msm_worker(void *arg)
{
    struct msm_job *j = arg;
    const unsigned jl = 3 * ec_cl(j->G);
    uint64_t *B = malloc(((size_t)1 << (j->c - 1)) * jl * sizeof *B);

    for (;;) {
        pthread_mutex_lock(&j->lock);
        if (!B && !j->err) j->err = -ENOMEM;
        unsigned t = j->err ? j->ntasks : j->next;
        if (t < j->ntasks) j->next++;
        pthread_mutex_unlock(&j->lock);
        if (t >= j->ntasks) break;

        unsigned w = t % j->nwin, s = t / j->nwin;
        size_t lo = j->nact * s / j->nsplit, hi = j->nact * (s + 1) / j->nsplit;
        msm_task(j, w, lo, hi, B, j->partial + (size_t)t * jl);
    }
    free(B);
    return NULL;
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
 * nothing measurable: MSM_AUTO_MAX_C caps c at 16. */
#define MSM_REDUCE_COST 3
#define MSM_THREAD_COST 200 /* ~50 us to create and join a thread, in mixed additions */
#define MSM_AUTO_MAX_C 16

static void msm_plan(struct msm_job *j, unsigned threads, unsigned force_c)
{
    const size_t n = j->nact;
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
            double cost = (double)rounds * ((double)n / s + MSM_REDUCE_COST * (double)((size_t)1 << (c - 1))) +
                          MSM_THREAD_COST * (double)(T - 1);
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

/* Scalar limbs a, b (MSM_MAX_SCALAR_LIMBS each): a < b? */
static bool msm_lt(const uint64_t *a, const uint64_t *b)
{
    for (unsigned i = MSM_MAX_SCALAR_LIMBS; i-- > 0;)
        if (a[i] != b[i]) return a[i] < b[i];
    return false;
}

/* Step 1: active terms into j->idx / j->sc; sets nact and bits. */
static void msm_prepare(struct msm_job *j, const uint8_t *scalars, size_t count, size_t scalar_bytes,
                        uint64_t *idx, uint64_t *sc)
{
    const curve_group *G = j->G;
    const unsigned cl = ec_cl(G), nl = j->nl;
    const size_t pb = 2 * cl * sizeof(uint64_t);
    uint64_t r[MSM_MAX_SCALAR_LIMBS] = {0}, half[MSM_MAX_SCALAR_LIMBS] = {0}, ortop = 0;
    unsigned top = 0;

    memcpy(r, G->Fr->p, G->Fr->n * sizeof *r);
    for (unsigned i = 0; i < G->Fr->n; i++) /* (r-1)/2 = r >> 1 (r odd) */
        half[i] = (r[i] >> 1) | (i + 1 < G->Fr->n ? r[i + 1] << 63 : 0);

    size_t k = 0;
    uint64_t acc[MSM_MAX_SCALAR_LIMBS] = {0};
    for (size_t i = 0; i < count; i++) {
        uint64_t s[MSM_MAX_SCALAR_LIMBS] = {0}, any = 0, neg = 0;
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
    for (unsigned l = nl; l-- > 0;)
        if (acc[l]) {
            top = l;
            ortop = acc[l];
            break;
        }
    j->nact = k;
    j->bits = ortop ? 64 * top + (64 - (unsigned)__builtin_clzll(ortop)) : 0;
}

static unsigned msm_threads(unsigned threads)
{
    if (threads == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        threads = n > 0 ? (unsigned)n : 1;
    }
    return threads > 1024 ? 1024 : threads;
}

int msm_run_window(const curve_group *G, uint64_t *result, const uint8_t *bases, const uint8_t *scalars,
                   size_t count, size_t scalar_bytes, unsigned threads, unsigned c)
{
    if (!G || !result || (count && (!bases || !scalars)) || scalar_bytes == 0 ||
        scalar_bytes > 8 * MSM_MAX_SCALAR_LIMBS || c > MSM_MAX_WINDOW || count >= MSM_NEG_BIT)
        return -EINVAL;

    const unsigned jl = 3 * ec_cl(G);
    struct msm_job j = {.G = G, .bases = bases, .nl = (unsigned)((scalar_bytes + 7) / 8)};
    uint64_t *idx = NULL, *sc = NULL;
    pthread_t *tid = NULL;
    uint64_t acc[EC_MAX_JAC];
    unsigned started = 0;
    int err = 0;

    if (count == 0) {
        ec_jac_set_inf(G, result);
        return 0;
    }
    idx = malloc(count * sizeof *idx);
    sc = malloc(count * j.nl * sizeof *sc);
    if (!idx || !sc) {
        err = -ENOMEM;
        goto out;
    }
    msm_prepare(&j, scalars, count, scalar_bytes, idx, sc);
    j.idx = idx;
    j.sc = sc;
    if (j.nact == 0) {
        ec_jac_set_inf(G, result);
        goto out;
    }

    threads = msm_threads(threads);
    msm_plan(&j, threads, c);
    if (threads > j.ntasks) threads = j.ntasks;
    j.partial = malloc((size_t)j.ntasks * jl * sizeof *j.partial);
    tid = malloc(threads * sizeof *tid);
    if (!j.partial || !tid) {
        err = -ENOMEM;
        goto out;
    }
    pthread_mutex_init(&j.lock, NULL);
    /* A thread that fails to start leaves its share to the others. */
    for (unsigned t = 1; t < threads; t++)
        if (pthread_create(&tid[started], NULL, msm_worker, &j) == 0) started++;
    msm_worker(&j);
    for (unsigned t = 0; t < started; t++) pthread_join(tid[t], NULL);
    pthread_mutex_destroy(&j.lock);
    err = j.err;
    if (err) goto out;

    /* Step 4: acc = sum_w 2^(wc) W_w, W_w = sum of the window's range partials. */
    ec_jac_set_inf(G, acc);
    for (unsigned w = j.nwin; w-- > 0;) {
        for (unsigned i = 0; i < j.c && !ec_jac_is_inf(G, acc); i++) ec_dbl(G, acc, acc);
        for (unsigned s = 0; s < j.nsplit; s++) ec_add(G, acc, acc, j.partial + ((size_t)s * j.nwin + w) * jl);
    }
    ec_jac_copy(G, result, acc);
out:
    free(tid);
    free(j.partial);
    free(sc);
    free(idx);
    return err;
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
        uint64_t k[MSM_MAX_SCALAR_LIMBS] = {0};
        memcpy(P, bases + i * pb, pb);
        memcpy(k, scalars + i * scalar_bytes, scalar_bytes);
        ec_jac_from_aff(G, pj, P);
        ec_jac_mul_scalar(G, t, pj, k, nl);
        ec_add(G, acc, acc, t);
    }
    ec_jac_copy(G, result, acc);
    return 0;
}
