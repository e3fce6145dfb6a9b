/* test_setup_cmd.c — `cuzk test-setup CIRCUIT.r1cs OUT.zkey`: an INSECURE Groth16 setup
 * for tests and benchmarks (what it writes: tools/test_setup_cmd.h).
 *
 * Plan, for n = domainSize and N = nVars:
 *  1. Lagrange basis at tau over {w^j}: L_j(tau) = w^j (tau^n - 1) / (n (tau - w^j)),
 *     all n values with one batch inversion (O(n)). tau is redrawn in the (2^-220
 *     likely) case that it lies on the 2n domain, where the formulas divide by zero.
 *  2. One pass over the r1cs: u_i += coef L_c for every A term (i, coef) of constraint
 *     c, v_i and w_i alike for B and C; u_i += L_(nC+i) for the input rows i <= nPublic.
 *  3. H: snarkjs copies the ptau's Lagrange points of the 2n domain at the odd indices
 *     2i+1, i.e. at x_i = w_2n w^i; with the formula of 1 for the 2n domain,
 *     L^(2n)_(2i+1)(tau) = x_i (tau^2n - 1) / (2n (tau - x_i)), another batch inversion.
 *  4. Every point is [s]G for a scalar s computed above: fixed-base multiplication
 *     with a table T[w][d] = d 2^(cw) G (affine), so [s]G = sum_w T[w][digit_w(s)]
 *     costs one mixed addition per nonzero c-bit window, with no doublings. Threads
 *     take chunks of points; each chunk goes to affine with one shared inversion.
 *  5. Sections 1..10 in id order through a temp file, fsync, rename.
 * The toxic waste and every array it was mixed into are erased (explicit_bzero)
 * before they are freed, the point tables are public multiples of the generator. */
#include "shm/futex.h"
#include "tools/test_setup_cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "zk/curve.h"
#include "base/error.h"
#include "zk/field.h"
#include "zk/ntt.h"
#include "zk/r1cs.h"
#include "base/os.h"

#define FR_LIMBS    4 /* both scalar fields: 4 limbs, n8r = 32 (array stride) */
/* Temporaries are FE_MAX_LIMBS wide: with a run-time descriptor gcc cannot see that
 * the limb loops of field.h stop at 4. */
#define FB_CHUNK    2048 /* points per task: one shared inversion per window */
#define FB_PREFETCH 8    /* table entries requested this many points ahead */

static const char usage_text[] =
    "usage: cuzk test-setup [--threads N] [-q] CIRCUIT.r1cs OUT.zkey\n"
    "  INSECURE: FOR TESTS AND BENCHMARKS ONLY.\n"
    "  Writes a Groth16 proving key for a circom .r1cs (bn128 or bls12381): a snarkjs .zkey\n"
    "  like `snarkjs groth16 setup` + one contribution makes (snarkjs and cuzk prove with\n"
    "  it), but without a powers-of-tau ceremony: the toxic waste (tau, alpha, beta, gamma,\n"
    "  delta) is drawn at random by this process and erased after use. Nobody can check\n"
    "  that it was erased; whoever has it can forge proofs. Never use such a key for\n"
    "  anything a proof is meant to protect.\n"
    "  Export the verification key with `snarkjs zkey export verificationkey OUT.zkey VK.json`.\n"
    "  --threads N   worker threads (default: all online CPUs)\n"
    "  -q, --quiet   no summary line (the warning is always printed)\n";

static const struct cuzk_cmd cmd = { "cuzk test-setup", usage_text,
                                     (const int[]){ 0, 2, 3, 4, 5, 6, 9, 10, -1 } };

static const char warning_text[] =
    "cuzk test-setup: WARNING: INSECURE KEY, FOR TESTS ONLY: made from random toxic waste without\n"
    "  a ceremony; proofs under it prove nothing to anyone who did not watch this process.\n";

/* A uniform nonzero element of Fr, Montgomery form, by rejection (at most ~4 tries
 * expected: r is above 2^253). 0 or -CUZK_E_INTERNAL when getrandom fails. */
static int fr_random(const field_desc *Fr, uint64_t *out)
{
    uint64_t v[FE_MAX_LIMBS] = { 0 };
    const unsigned top = Fr->bits % 64;
    for (;;) {
        ssize_t got = getrandom(v, FR_LIMBS * sizeof *v, 0);
        if (got < 0 && errno == EINTR) continue;
        if (got != (ssize_t)(FR_LIMBS * sizeof *v)) return -CUZK_E_INTERNAL;
        if (top) v[FR_LIMBS - 1] &= (UINT64_C(1) << top) - 1;
        if (fe_is_reduced(Fr, v) && !fe_is_zero(Fr, v)) break;
    }
    fe_to_mont(Fr, out, v);
    explicit_bzero(v, sizeof v);
    return 0;
}

/* Field element from a small integer, Montgomery form. */
static void fr_from_u64(const field_desc *Fr, uint64_t *out, uint64_t x)
{
    uint64_t v[FE_MAX_LIMBS] = { x };
    fe_to_mont(Fr, out, v);
}

static void *xcalloc(size_t n, size_t size)
{
    return n ? calloc(n, size) : malloc(1);
}

/* Erases and frees an array of count field elements (or points); accepts NULL. */
static void wipe_free(uint64_t *p, size_t limbs)
{
    if (!p) return;
    explicit_bzero(p, limbs * sizeof *p);
    free(p);
}

/* ---- fixed-base multiplication -------------------------------------------- */

typedef struct fb_table {
    const curve_group *G;
    unsigned c, nwin, cl;
    uint64_t *pts; /* nwin x 2^c affine points: entry (w, d) = d 2^(cw) G; d = 0 unused */
} fb_table;

/* Window width for `count` points: one mixed addition per window and point, and
 * nwin 2^c jacobian additions plus a share of the batch conversion to affine (about 3
 * mixed additions) per table entry, so c minimises nwin (3 2^c + count), capped at
 * 12 (22 x 4096 x 64 B = 5.8 MB for BN254 G1: beyond that the table leaves the caches).
 * Callgrind, bn128 mulchain-12 (5 x 2^12 points, tables included, with jacobian
 * accumulators): c = 8 4.67 G instructions, c = 10 4.58 G, c = 12 6.47 G; this model
 * picks 10 there (4.37 G with the G2 table sized for its own count). */
static unsigned fb_window(const curve_group *G, size_t count)
{
    unsigned best = 4;
    double best_cost = 0;
    for (unsigned c = 4; c <= 12; c++) {
        double cost = (double)((G->Fr->bits + c - 1) / c) * (3.0 * (double)((size_t)1 << c) + (double)count);
        if (c == 4 || cost < best_cost) best = c, best_cost = cost;
    }
    return best;
}

/* Builds the table of G's generator for scalars of Fr->bits bits, for about `count`
 * multiplications. 0 or -ENOMEM. */
static int fb_build(fb_table *t, const curve_group *G, size_t count)
{
    memset(t, 0, sizeof *t);
    t->G = G;
    t->c = fb_window(G, count);
    t->cl = ec_cl(G);
    t->nwin = (G->Fr->bits + t->c - 1) / t->c;
    const size_t per = (size_t)1 << t->c, total = per * t->nwin, jl = 3 * (size_t)t->cl;
    uint64_t *jac = malloc(total * jl * sizeof *jac), base[EC_MAX_JAC];
    t->pts = malloc(total * 2 * t->cl * sizeof *t->pts);
    if (!jac || !t->pts) {
        free(jac);
        free(t->pts);
        t->pts = NULL;
        return -ENOMEM;
    }
    ec_jac_from_aff(G, base, G->gen);
    for (unsigned w = 0; w < t->nwin; w++) {
        uint64_t *row = jac + (size_t)w * per * jl;
        ec_jac_set_inf(G, row);
        ec_jac_copy(G, row + jl, base);
        for (size_t d = 2; d < per; d++) ec_add(G, row + d * jl, row + (d - 1) * jl, base);
        ec_add(G, base, row + (per - 1) * jl, base); /* 2^c times the row's base */
    }
    int rc = ec_batch_to_aff(G, t->pts, jac, total);
    free(jac);
    if (rc) {
        free(t->pts);
        t->pts = NULL;
    }
    return rc;
}

static void fb_free(fb_table *t)
{
    free(t->pts);
    t->pts = NULL;
}

/* c bits of the canonical scalar s starting at bit off (bits past 256 read as 0). */
static inline unsigned fb_digit(const uint64_t *s, unsigned off, unsigned c)
{
    unsigned i = off / 64, sh = off % 64;
    uint64_t v = s[i] >> sh;
    if (sh + c > 64 && i + 1 < FR_LIMBS) v |= s[i + 1] << (64 - sh);
    return (unsigned)(v & ((UINT64_C(1) << c) - 1));
}

/* Scratch of one worker for a chunk of up to FB_CHUNK points. */
struct fb_scratch {
    uint64_t *den, *pre; /* FB_CHUNK coordinates each: x_T - x_acc, running products */
    uint32_t *idx;       /* FB_CHUNK: point of the k-th pending addition */
    const uint64_t **tp; /* FB_CHUNK: its table entry */
    uint8_t *inf;        /* FB_CHUNK: accumulator still at infinity */
};

/* acc[i] = [sc[i]]G for i < cnt, affine (infinity as (0, 0)), window by window from
 * the least significant: each window adds T[w][digit] to every accumulator in affine
 * coordinates, the cnt slopes sharing one inversion (Montgomery's trick): 6M per
 * addition against 11M for a mixed jacobian one, and no conversion at the end.
 * Measured, bn128 mulchain-16 (5 x 2^16 points), one thread, CPU time on this
 * machine under load: mixed jacobian additions 4.4 s, batch-affine 3.3 s, and with
 * the table entries prefetched (the G1 table is 5.8 MB) 2.3-2.5 s.
 * No addition here can be a doubling or give infinity: before window w the
 * accumulator holds [s']G with 0 < s' = s mod 2^(cw) < 2^(cw) <= d 2^(cw), and
 * s' + d 2^(cw) <= s < r, so s' differs from both d 2^(cw) and r - d 2^(cw). The
 * x_T = x_acc branch is a guard that keeps a wrong scalar (>= r) from going silent. */
CUZK_HD void fb_chunk_impl(const curve_group *G, const fb_table *t, const uint64_t *sc, size_t cnt,
                           uint64_t *acc, struct fb_scratch *S, int *err)
{
    const unsigned cl = ec_cl(G);
    const size_t al = 2 * (size_t)cl, per = (size_t)1 << t->c;
    uint64_t prod[EC_MAX_CL], inv[EC_MAX_CL], di[EC_MAX_CL], lam[EC_MAX_CL], x3[EC_MAX_CL], u[EC_MAX_CL];
    memset(S->inf, 1, cnt);
    for (unsigned w = 0; w < t->nwin; w++) {
        size_t na = 0;
        ecf_set_one(G, prod);
        for (size_t i = 0; i < cnt; i++) {
            if (i + FB_PREFETCH < cnt) { /* the table is MBs: ask for the entry early */
                const uint64_t *f = t->pts +
                    ((size_t)w * per + fb_digit(sc + (i + FB_PREFETCH) * FR_LIMBS, w * t->c, t->c)) * al;
                __builtin_prefetch(f);
                __builtin_prefetch(f + al - 1);
            }
            unsigned d = fb_digit(sc + i * FR_LIMBS, w * t->c, t->c);
            if (!d) continue;
            const uint64_t *T = t->pts + ((size_t)w * per + d) * al;
            uint64_t *P = acc + i * al;
            if (S->inf[i]) {
                ecf_copy(G, P, T);
                ecf_copy(G, P + cl, T + cl);
                S->inf[i] = 0;
                continue;
            }
            uint64_t *dk = S->den + na * cl;
            ecf_sub(G, dk, T, P); /* x_T - x_acc */
            if (ecf_is_zero(G, dk)) {
                *err = -EINVAL;
                return;
            }
            ecf_mul(G, prod, prod, dk);
            ecf_copy(G, S->pre + na * cl, prod);
            S->idx[na] = (uint32_t)i;
            S->tp[na] = T;
            na++;
        }
        if (!na) continue;
        ecf_inv(G, inv, prod); /* 1 / prod of all x_T - x_acc */
        for (size_t k = na; k-- > 0;) {
            uint64_t *P = acc + (size_t)S->idx[k] * al;
            const uint64_t *T = S->tp[k];
            if (k) {
                ecf_mul(G, di, inv, S->pre + (k - 1) * cl); /* 1 / (x_T - x_acc) of this one */
                ecf_mul(G, inv, inv, S->den + k * cl);      /* drop it from the running inverse */
            } else {
                ecf_copy(G, di, inv);
            }
            ecf_sub(G, lam, T + cl, P + cl);
            ecf_mul(G, lam, lam, di); /* lambda = (y_T - y_acc) / (x_T - x_acc) */
            ecf_sqr(G, x3, lam);
            ecf_sub(G, x3, x3, P);
            ecf_sub(G, x3, x3, T); /* x3 = lambda^2 - x_acc - x_T */
            ecf_sub(G, u, P, x3);
            ecf_mul(G, u, u, lam);
            ecf_sub(G, P + cl, u, P + cl); /* y3 = lambda (x_acc - x3) - y_acc */
            ecf_copy(G, P, x3);
        }
    }
    for (size_t i = 0; i < cnt; i++)
        if (S->inf[i]) memset(acc + i * al, 0, al * sizeof *acc); /* scalar 0: infinity */
}

struct fb_job {
    const fb_table *t;
    const uint64_t *sc; /* count canonical scalars, FR_LIMBS each */
    size_t count;
    uint64_t *out;        /* count affine points, zkey layout */
    pthread_mutex_t lock; /* guards next and err */
    size_t next;
    int err;
};

static void *fb_worker(void *arg)
{
    struct fb_job *j = arg;
    const size_t cl = j->t->cl, al = 2 * cl;
    struct fb_scratch S = {
        .den = malloc(FB_CHUNK * cl * sizeof *S.den),
        .pre = malloc(FB_CHUNK * cl * sizeof *S.pre),
        .idx = malloc(FB_CHUNK * sizeof *S.idx),
        .tp = malloc(FB_CHUNK * sizeof *S.tp),
        .inf = malloc(FB_CHUNK),
    };
    int err = (S.den && S.pre && S.idx && S.tp && S.inf) ? 0 : -ENOMEM;
    for (;;) {
        pthread_mutex_lock(&j->lock);
        if (err && !j->err) j->err = err;
        size_t lo = j->err ? j->count : j->next;
        j->next = lo + FB_CHUNK < j->count ? lo + FB_CHUNK : j->count;
        pthread_mutex_unlock(&j->lock);
        if (lo >= j->count) break;
        size_t hi = lo + FB_CHUNK < j->count ? lo + FB_CHUNK : j->count;
        CURVE_DISPATCH(j->t->G, fb_chunk_impl, j->t, j->sc + lo * FR_LIMBS, hi - lo, j->out + lo * al, &S,
                       &err);
    }
    free(S.den);
    free(S.pre);
    free(S.idx);
    free(S.tp);
    free(S.inf);
    return NULL;
}

/* out[i] = [sc[i]]G (affine, Montgomery: the zkey layout) for i < count, canonical
 * scalars < r, on `threads` threads (the caller's included). 0, -ENOMEM, or -EINVAL
 * for a scalar >= r (see fb_chunk_impl). */
static int fb_run(const fb_table *t, uint64_t *out, const uint64_t *sc, size_t count, unsigned threads)
{
    struct fb_job j = { .t = t, .sc = sc, .count = count, .out = out };
    size_t chunks = (count + FB_CHUNK - 1) / FB_CHUNK;
    if (threads > chunks) threads = chunks ? (unsigned)chunks : 1;
    pthread_t *tid = threads > 1 ? calloc(threads - 1, sizeof *tid) : NULL;
    unsigned started = 0;
    pthread_mutex_init(&j.lock, NULL);
    for (unsigned k = 0; tid && k + 1 < threads; k++)
        if (pthread_create(&tid[started], NULL, fb_worker, &j) == 0) started++;
    fb_worker(&j); /* a thread that could not start leaves its share to the others */
    for (unsigned k = 0; k < started; k++) pthread_join(tid[k], NULL);
    pthread_mutex_destroy(&j.lock);
    free(tid);
    return j.err;
}

/* ---- output ------------------------------------------------------------------ */

struct out {
    FILE *f;
    const char *path;
    char tmp[4096];
    int err; /* errno of the first failed write, 0 if none */
};

static void put(struct out *o, const void *p, size_t n)
{
    if (!o->err && n && fwrite(p, 1, n, o->f) != n) o->err = errno ? errno : EIO;
}
static void put32(struct out *o, uint32_t v)
{
    put(o, &v, 4);
}
static void put64(struct out *o, uint64_t v)
{
    put(o, &v, 8);
}
static void section(struct out *o, uint32_t id, uint64_t size)
{
    put32(o, id);
    put64(o, size);
}

/* ---- the setup ----------------------------------------------------------------- */

struct waste {
    uint64_t tau[FE_MAX_LIMBS], alpha[FE_MAX_LIMBS], beta[FE_MAX_LIMBS], gamma[FE_MAX_LIMBS],
        delta[FE_MAX_LIMBS];
};

/* Everything derived from the waste, erased on every exit path. */
struct derived {
    size_t nvars, n;
    uint64_t *lag;          /* n: L_j(tau), later reused for the H denominators */
    uint64_t *u, *v, *w;    /* nvars each: the A, B, C columns at tau (Montgomery) */
    uint64_t *sa, *sb, *sk; /* nvars each, canonical: u_i, v_i, (beta u + alpha v + w)/(gamma|delta) */
    uint64_t *sh;           /* n, canonical: H scalars */
};

static void derived_free(struct derived *d)
{
    wipe_free(d->lag, d->n * FR_LIMBS);
    wipe_free(d->u, d->nvars * FR_LIMBS);
    wipe_free(d->v, d->nvars * FR_LIMBS);
    wipe_free(d->w, d->nvars * FR_LIMBS);
    wipe_free(d->sa, d->nvars * FR_LIMBS);
    wipe_free(d->sb, d->nvars * FR_LIMBS);
    wipe_free(d->sk, d->nvars * FR_LIMBS);
    wipe_free(d->sh, d->n * FR_LIMBS);
    memset(d, 0, sizeof *d);
}

/* Step 1: lag[j] = L_j(tau) for the domain of n = 2^lg with generator omega; tau
 * must not be on it. Returns 0 or -ENOMEM. */
static int lagrange_at_tau(const field_desc *Fr, const uint64_t *tau, const uint64_t *omega, size_t n,
                           uint64_t *lag)
{
    uint64_t pw[FE_MAX_LIMBS], zn[FE_MAX_LIMBS], k[FE_MAX_LIMBS], e[1] = { n };
    fe_set_one(Fr, pw);
    for (size_t j = 0; j < n; j++) {
        fe_sub(Fr, lag + j * FR_LIMBS, tau, pw); /* tau - w^j, nonzero */
        fe_mul(Fr, pw, pw, omega);
    }
    if (fe_batch_inv(Fr, lag, lag, n, NULL)) return -ENOMEM;
    fe_pow(Fr, zn, tau, e, 1);
    fe_sub(Fr, zn, zn, Fr->one); /* tau^n - 1 */
    fr_from_u64(Fr, k, n);
    fe_inv(Fr, k, k);
    fe_mul(Fr, k, k, zn); /* (tau^n - 1) / n */
    fe_set_one(Fr, pw);
    for (size_t j = 0; j < n; j++) {
        uint64_t *l = lag + j * FR_LIMBS;
        fe_mul(Fr, l, l, pw);
        fe_mul(Fr, l, l, k); /* w^j (tau^n - 1) / (n (tau - w^j)) */
        fe_mul(Fr, pw, pw, omega);
    }
    return 0;
}

/* Step 2: one pass over the constraints, accumulating the columns at tau; counts the
 * A and B terms (the coefficient entries of section 4). */
static void columns_at_tau(const r1cs *r, const uint64_t *lag, struct derived *d, uint64_t *ncoefs)
{
    const field_desc *Fr = r->Fr;
    const uint8_t *p = r->constraints;
    uint64_t cnt = 0;
    uint64_t *col[3] = { d->u, d->v, d->w };
    for (uint32_t c = 0; c < r->nconstraints; c++) {
        const uint64_t *lc = lag + (size_t)c * FR_LIMBS;
        for (int m = 0; m < 3; m++) {
            uint32_t nterms = binfile_rd32(p);
            p += 4;
            if (m < 2) cnt += nterms;
            for (uint32_t t = 0; t < nterms; t++, p += 4 + r->n8) {
                uint64_t coef[FE_MAX_LIMBS] = { 0 };
                uint64_t *dst =
                    col[m] + (size_t)binfile_rd32(p) * FR_LIMBS; /* wire < nwires: r1cs_open checked */
                memcpy(coef, p + 4, r->n8);
                fe_to_mont(Fr, coef, coef);
                fe_mul(Fr, coef, coef, lc);
                fe_add(Fr, dst, dst, coef);
            }
        }
    }
    /* The input-consistency rows snarkjs appends: A[nC + i][i] = 1, i = 0..nPublic. */
    uint32_t npub = r->npubout + r->npubin;
    for (uint32_t i = 0; i <= npub; i++)
        fe_add(Fr, d->u + (size_t)i * FR_LIMBS, d->u + (size_t)i * FR_LIMBS,
               lag + ((size_t)r->nconstraints + i) * FR_LIMBS);
    *ncoefs = cnt + npub + 1;
}

/* Step 3: sh[i] = L^(2n)_(2i+1)(tau) / delta, canonical; tau must not be on the 2n
 * domain. lag (n elements) is scratch. Returns 0 or -ENOMEM. */
static int h_scalars(const field_desc *Fr, const struct waste *x, const uint64_t *omega, const uint64_t *inc,
                     size_t n, uint64_t *lag, uint64_t *sh)
{
    uint64_t pt[FE_MAX_LIMBS], k[FE_MAX_LIMBS], t[FE_MAX_LIMBS], e[1] = { 2 * n };
    fe_copy(Fr, pt, inc);
    for (size_t i = 0; i < n; i++) {
        fe_sub(Fr, lag + i * FR_LIMBS, x->tau, pt); /* tau - w_2n w^i, nonzero */
        fe_mul(Fr, pt, pt, omega);
    }
    if (fe_batch_inv(Fr, lag, lag, n, NULL)) return -ENOMEM;
    fe_pow(Fr, k, x->tau, e, 1);
    fe_sub(Fr, k, k, Fr->one); /* tau^2n - 1 */
    fr_from_u64(Fr, t, 2 * n);
    fe_mul(Fr, t, t, x->delta);
    fe_inv(Fr, t, t);
    fe_mul(Fr, k, k, t); /* (tau^2n - 1) / (2n delta) */
    fe_copy(Fr, pt, inc);
    for (size_t i = 0; i < n; i++) {
        uint64_t *l = lag + i * FR_LIMBS;
        fe_mul(Fr, l, l, pt);
        fe_mul(Fr, l, l, k);
        fe_from_mont(Fr, sh + i * FR_LIMBS, l);
        fe_mul(Fr, pt, pt, omega);
    }
    explicit_bzero(k, sizeof k);
    explicit_bzero(t, sizeof t);
    return 0;
}

static int write_points(struct out *o, const fb_table *t, uint32_t id, const uint64_t *sc, size_t count,
                        unsigned threads, uint64_t *buf)
{
    const size_t bytes = count * 2 * t->cl * sizeof *buf;
    int rc = fb_run(t, buf, sc, count, threads);
    if (rc) return rc;
    section(o, id, bytes);
    put(o, buf, bytes); /* limbs are little-endian words: the zkey's byte layout */
    return 0;
}

int test_setup_cmd_write(const char *r1cs_path, const char *zkey_path, unsigned threads,
                         test_setup_cmd_stats *st, char *err, size_t errlen)
{
    r1cs r;
    struct waste x;
    struct derived d;
    fb_table t1 = { 0 }, t2 = { 0 };
    struct out o = { .path = zkey_path };
    uint64_t *buf = NULL;
    test_setup_cmd_stats s = { 0 };
    int rc = 0;
    double t0 = os_now_s(), tm;

    memset(&d, 0, sizeof d);
    memset(&x, 0, sizeof x);
    if (threads == 0) {
        long nc = sysconf(_SC_NPROCESSORS_ONLN);
        threads = nc > 0 ? (unsigned)nc : 1;
    }
    if ((rc = r1cs_open(&r, r1cs_path, err, errlen)) != 0) return rc;

    const field_desc *Fr = r.Fr;
    const field_desc *Fq = Fr->id == FIELD_ID_BN254_FR ? &FIELD_BN254_FQ : &FIELD_BLS12_381_FQ;
    const curve_group *g1 = curve_g1_for(Fq, Fr), *g2 = curve_g2_for(Fq, Fr);
    const uint32_t npub = r.npubout + r.npubin, nvars = r.nwires, nc = r.nconstraints;
    const uint64_t m = (uint64_t)nc + npub;
    unsigned lg = 0;
    uint64_t omega[FE_MAX_LIMBS], inc[FE_MAX_LIMBS];
    if (m == 0) {
        rc = binfile_err(err, errlen, CUZK_E_UNSUPPORTED, "%s has no constraints and no public signals",
                         r1cs_path);
        goto out;
    }
    while ((m >> lg) > 1) lg++;
    lg++; /* as snarkjs: 2^(floor(log2(nConstraints + nPublic)) + 1), so nC + nPublic + 1 <= n */
    /* snarkjs treats lg == s apart (shift = 25, other ptau points; spec §4.7) and the
     * provers reject it: the odd coset needs the 2^(lg+1)-th root. */
    if (fr_root_of_unity(Fr, lg, omega) || fr_root_of_unity(Fr, lg + 1, inc)) {
        rc = binfile_err(
            err, errlen, CUZK_E_UNSUPPORTED,
            "%s needs a domain of 2^%u, too big for its curve (the odd coset needs a 2^%u-th root of unity)",
            r1cs_path, lg, lg + 1);
        goto out;
    }
    const size_t n = (size_t)1 << lg;
    s.nconstraints = nc;
    s.npublic = npub;
    s.nvars = nvars;
    s.domain_size = (uint32_t)n;
    s.lg_domain = lg;

    /* The output first, so a bad path fails before any work. */
    snprintf(o.tmp, sizeof o.tmp, "%s.tmp.%ld", zkey_path, (long)getpid());
    int fd = open(o.tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 || !(o.f = fdopen(fd, "wb"))) {
        int e = errno;
        if (fd >= 0) {
            close(fd);
            unlink(o.tmp);
        }
        rc = binfile_err(err, errlen, CUZK_E_OUTPUT, "cannot write %s: %s", zkey_path, strerror(e));
        goto out;
    }
    setvbuf(o.f, NULL, _IOFBF, 1 << 20);
    s.secs_read = os_now_s() - t0;

    /* ---- scalars ---- */
    tm = os_now_s();
    d.nvars = nvars;
    d.n = n;
    d.lag = malloc(n * FR_LIMBS * sizeof *d.lag);
    d.u = xcalloc((size_t)nvars * FR_LIMBS, sizeof *d.u);
    d.v = xcalloc((size_t)nvars * FR_LIMBS, sizeof *d.v);
    d.w = xcalloc((size_t)nvars * FR_LIMBS, sizeof *d.w);
    d.sa = malloc((size_t)nvars * FR_LIMBS * sizeof *d.sa);
    d.sb = malloc((size_t)nvars * FR_LIMBS * sizeof *d.sb);
    d.sk = malloc((size_t)nvars * FR_LIMBS * sizeof *d.sk);
    d.sh = malloc(n * FR_LIMBS * sizeof *d.sh);
    if (!d.lag || !d.u || !d.v || !d.w || !d.sa || !d.sb || !d.sk || !d.sh) goto oom;
    for (;;) {
        if (fr_random(Fr, x.tau) || fr_random(Fr, x.alpha) || fr_random(Fr, x.beta) ||
            fr_random(Fr, x.gamma) || fr_random(Fr, x.delta)) {
            rc = binfile_err(err, errlen, CUZK_E_INTERNAL, "getrandom failed: %s", strerror(errno));
            goto out;
        }
        /* tau^2n = 1 would put tau on the 2n domain (probability 2n/r): draw again. */
        uint64_t e[1] = { 2 * (uint64_t)n }, t2n[FE_MAX_LIMBS];
        fe_pow(Fr, t2n, x.tau, e, 1);
        bool on_domain = fe_eq(Fr, t2n, Fr->one);
        explicit_bzero(t2n, sizeof t2n);
        if (!on_domain) break;
    }
    if (lagrange_at_tau(Fr, x.tau, omega, n, d.lag)) goto oom;
    uint64_t ncoefs = 0;
    columns_at_tau(&r, d.lag, &d, &ncoefs);
    if (ncoefs > UINT32_MAX) {
        rc = binfile_err(err, errlen, CUZK_E_UNSUPPORTED, "%s has more than 2^32 A and B terms", r1cs_path);
        goto out;
    }
    s.ncoefs = ncoefs;
    {
        uint64_t ginv[FE_MAX_LIMBS], dinv[FE_MAX_LIMBS], k[FE_MAX_LIMBS], t[FE_MAX_LIMBS];
        fe_inv(Fr, ginv, x.gamma);
        fe_inv(Fr, dinv, x.delta);
        for (size_t i = 0; i < nvars; i++) {
            const uint64_t *ui = d.u + i * FR_LIMBS, *vi = d.v + i * FR_LIMBS, *wi = d.w + i * FR_LIMBS;
            fe_from_mont(Fr, d.sa + i * FR_LIMBS, ui);
            fe_from_mont(Fr, d.sb + i * FR_LIMBS, vi);
            fe_mul(Fr, k, x.beta, ui);
            fe_mul(Fr, t, x.alpha, vi);
            fe_add(Fr, k, k, t);
            fe_add(Fr, k, k, wi);
            fe_mul(Fr, k, k, i <= npub ? ginv : dinv); /* IC over gamma, C over delta */
            fe_from_mont(Fr, d.sk + i * FR_LIMBS, k);
        }
        explicit_bzero(ginv, sizeof ginv);
        explicit_bzero(dinv, sizeof dinv);
        explicit_bzero(k, sizeof k);
        explicit_bzero(t, sizeof t);
    }
    if (h_scalars(Fr, &x, omega, inc, n, d.lag, d.sh)) goto oom;
    s.secs_scalars = os_now_s() - tm;

    /* ---- points and the file ---- */
    tm = os_now_s();
    if (fb_build(&t1, g1, 4 * (size_t)nvars + n) || fb_build(&t2, g2, nvars)) goto oom;
    const size_t big = (size_t)nvars > n ? nvars : n;
    buf = malloc((big > 3 ? big : 3) * 2 * (size_t)t2.cl * sizeof *buf); /* G2 points are the largest */
    if (!buf) goto oom;
    const uint32_t n8q = Fq->n * 8, n8r = Fr->n * 8;
    const size_t sg1 = 2 * (size_t)n8q, sg2 = 4 * (size_t)n8q;

    put(&o, "zkey", 4);
    put32(&o, 1);  /* version */
    put32(&o, 10); /* sections, written in id order */
    section(&o, 1, 4);
    put32(&o, 1); /* groth16 */

    section(&o, 2, 4 + n8q + 4 + n8r + 12 + 3 * sg1 + 3 * sg2);
    put32(&o, n8q);
    put(&o, Fq->p, n8q);
    put32(&o, n8r);
    put(&o, Fr->p, n8r);
    put32(&o, nvars);
    put32(&o, npub);
    put32(&o, (uint32_t)n);
    {
        uint64_t sc[3 * FR_LIMBS], p1[3 * 2 * FE_MAX_LIMBS], p2[3 * 4 * FE_MAX_LIMBS];
        fe_from_mont(Fr, sc, x.alpha);
        fe_from_mont(Fr, sc + FR_LIMBS, x.beta);
        fe_from_mont(Fr, sc + 2 * FR_LIMBS, x.delta);
        if ((rc = fb_run(&t1, p1, sc, 3, 1))) goto oom; /* alpha1, beta1, delta1 */
        fe_from_mont(Fr, sc, x.beta);
        fe_from_mont(Fr, sc + FR_LIMBS, x.gamma);
        if ((rc = fb_run(&t2, p2, sc, 3, 1))) goto oom; /* beta2, gamma2, delta2 */
        explicit_bzero(sc, sizeof sc);
        put(&o, p1, sg1);               /* alpha1 */
        put(&o, p1 + sg1 / 8, sg1);     /* beta1 */
        put(&o, p2, sg2);               /* beta2 */
        put(&o, p2 + sg2 / 8, sg2);     /* gamma2 */
        put(&o, p1 + 2 * sg1 / 8, sg1); /* delta1 */
        put(&o, p2 + 2 * sg2 / 8, sg2); /* delta2 */
    }
    /* The toxic waste proper is no longer needed: only the scalar arrays remain. */
    explicit_bzero(&x, sizeof x);

    if ((rc = write_points(&o, &t1, 3, d.sk, (size_t)npub + 1, threads, buf))) goto oom;

    /* Section 4: A and B terms as (matrix, constraint, signal, coef R^2 mod r), in the
     * order snarkjs writes them, then the input rows (value 1, stored as R^2). */
    section(&o, 4, 4 + ncoefs * (12 + (uint64_t)n8r));
    put32(&o, (uint32_t)ncoefs);
    {
        const uint8_t *p = r.constraints;
        for (uint32_t c = 0; c < nc; c++) {
            for (uint32_t mtx = 0; mtx < 3; mtx++) {
                uint32_t nterms = binfile_rd32(p);
                p += 4;
                for (uint32_t t = 0; t < nterms; t++, p += 4 + r.n8) {
                    if (mtx == 2) continue; /* C is not stored (spec §3.3) */
                    uint64_t v[FE_MAX_LIMBS] = { 0 };
                    memcpy(v, p + 4, r.n8);
                    fe_to_mont(Fr, v, v);
                    fe_to_mont(Fr, v, v); /* coef R^2 mod r, written as a plain integer */
                    uint8_t e[12];
                    uint32_t sig = binfile_rd32(p);
                    memcpy(e, &mtx, 4);
                    memcpy(e + 4, &c, 4);
                    memcpy(e + 8, &sig, 4);
                    put(&o, e, 12);
                    put(&o, v, n8r);
                }
            }
        }
        for (uint32_t i = 0; i <= npub; i++) {
            uint32_t row = nc + i;
            put32(&o, 0);
            put32(&o, row);
            put32(&o, i);
            put(&o, Fr->r2, n8r);
        }
    }

    if ((rc = write_points(&o, &t1, 5, d.sa, nvars, threads, buf))) goto oom;
    if ((rc = write_points(&o, &t1, 6, d.sb, nvars, threads, buf))) goto oom;
    if ((rc = write_points(&o, &t2, 7, d.sb, nvars, threads, buf))) goto oom;
    if ((rc = write_points(&o, &t1, 8, d.sk + ((size_t)npub + 1) * FR_LIMBS, (size_t)nvars - npub - 1,
                           threads, buf)))
        goto oom;
    if ((rc = write_points(&o, &t1, 9, d.sh, n, threads, buf))) goto oom;

    /* Section 10: snarkjs's BLAKE2b circuit hash is left zero (no reader of the proving
     * or verifying path uses it; `snarkjs zkey verify` could not accept this key anyway:
     * it has no ceremony to check against), and no contributions. */
    section(&o, 10, 64 + 4);
    {
        static const uint8_t zero[64];
        put(&o, zero, sizeof zero);
        put32(&o, 0);
    }
    s.secs_points = os_now_s() - tm;

    tm = os_now_s();
    if (!o.err && fflush(o.f) != 0) o.err = errno;
    if (!o.err && fsync(fileno(o.f)) != 0) o.err = errno;
    s.zkey_bytes = (uint64_t)ftell(o.f);
    if (fclose(o.f) != 0 && !o.err) o.err = errno;
    o.f = NULL;
    if (!o.err && rename(o.tmp, zkey_path) != 0) o.err = errno;
    if (o.err) {
        unlink(o.tmp);
        rc = binfile_err(err, errlen, CUZK_E_OUTPUT, "cannot write %s: %s", zkey_path, strerror(o.err));
        goto out;
    }
    s.secs_write = os_now_s() - tm;
    s.secs_total = os_now_s() - t0;
    if (st) *st = s;
    rc = 0;
    goto out;
oom:
    if (rc == -EINVAL) /* fb_run: a scalar >= r cannot come from fe_from_mont */
        rc = binfile_err(err, errlen, CUZK_E_INTERNAL, "internal error: an unreduced scalar setting up %s",
                         r1cs_path);
    else
        rc = binfile_err(err, errlen, CUZK_E_INTERNAL, "out of memory setting up %s (domain 2^%u)", r1cs_path,
                         lg);
out:
    if (o.f) {
        fclose(o.f);
        unlink(o.tmp);
    }
    explicit_bzero(&x, sizeof x);
    explicit_bzero(omega, sizeof omega);
    derived_free(&d);
    free(buf);
    fb_free(&t1);
    fb_free(&t2);
    r1cs_close(&r);
    return rc;
}

int test_setup_cmd_main(int argc, char **argv)
{
    static const struct option opts[] = {
        CUZK_OPT_THREADS,
        { "quiet", no_argument, NULL, 'q' },
        CUZK_OPT_HELP,
        { NULL, 0, NULL, 0 },
    };
    unsigned threads = 0;
    bool quiet = false;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+hq", opts, NULL)) != -1) {
        int code;

        switch (c) {
        case 't':
            if ((code = cuzk_cmd_threads(&cmd, optarg, &threads))) return code;
            break;
        case 'q': quiet = true; break;
        default: return cuzk_cmd_other_option(&cmd, c);
        }
    }
    if (argc - optind != 2) {
        cuzk_cmd_usage(&cmd, stderr);
        return cuzk_cmd_fail(&cmd, CUZK_E_USAGE, "expected 2 arguments: CIRCUIT.r1cs OUT.zkey");
    }
    fputs(warning_text, stderr);
    char err[1024] = "";
    test_setup_cmd_stats st;
    int rc = test_setup_cmd_write(argv[optind], argv[optind + 1], threads, &st, err, sizeof err);
    if (rc) return cuzk_cmd_fail(&cmd, rc, "%s", err);
    if (!quiet)
        fprintf(stderr,
                "cuzk test-setup: INSECURE key %s: %u constraints, %u public, %u signals, domain 2^%u, "
                "%llu coefficients, %.1f MB in %.2f s (scalars %.2f s, points+write %.2f s, fsync %.2f s)\n",
                argv[optind + 1], st.nconstraints, st.npublic, st.nvars, st.lg_domain,
                (unsigned long long)st.ncoefs, (double)st.zkey_bytes / 1048576.0, st.secs_total,
                st.secs_scalars, st.secs_points, st.secs_write);
    return 0;
}
