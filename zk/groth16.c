/* groth16.c — the snarkjs-compatible Groth16 prover (docs/snarkjs-groth16.md §4).
 *
 * Every step follows the spec section named in its comment; the pitfalls list of §10
 * is why some steps look unusual (coefficients carry an extra R, c is a∘b, no division
 * by Z, the coset shift is snarkjs's ω_2n). */
#include "zk/groth16.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "zk/ifma.h"
#include "base/hugemem.h"
#include "zk/msm.h"
#include "zk/ntt.h"
#include "zk/team.h"
#include "ntt_kernels.h"
#include "base/os.h"

#define FR_LIMBS 4

int groth16_tmp_prefix(char *buf, size_t len, const char *final, long tag_pid)
{
    return snprintf(buf, len, "%s.tmp.%ld.", final, tag_pid);
}

const char *groth16_curve_name(const zkey *z)
{
    return z->Fq->id == FIELD_ID_BLS12_381_FQ ? "bls12381" : "bn128";
}

/* ---- blinding factors ---------------------------------------------------- */

/* Reduce 4 random limbs to a scalar < r by masking to r's bit length and rejecting
 * values >= r (at most a few tries: r > 2^253). Returns true when accepted. */
static bool scalar_accept(const field_desc *Fr, uint64_t *v)
{
    unsigned top = Fr->bits - 192; /* bits used in limb 3 */
    if (top < 64) v[3] &= (1ULL << top) - 1;
    return fe_is_reduced(Fr, v);
}

int groth16_blind_random(const zkey *z, groth16_blind *out)
{
    for (int which = 0; which < 2; which++) {
        uint64_t *v = which ? out->s : out->r;
        do {
            size_t got = 0;
            while (got < 4 * sizeof(uint64_t)) {
                ssize_t k = getrandom((uint8_t *)v + got, 4 * sizeof(uint64_t) - got, 0);
                if (k < 0) {
                    if (errno == EINTR) continue;
                    return -errno;
                }
                got += (size_t)k;
            }
        } while (!scalar_accept(z->Fr, v));
    }
    return 0;
}

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t zz = (*x += 0x9e3779b97f4a7c15ULL);
    zz = (zz ^ (zz >> 30)) * 0xbf58476d1ce4e5b9ULL;
    zz = (zz ^ (zz >> 27)) * 0x94d049bb133111ebULL;
    return zz ^ (zz >> 31);
}

void groth16_blind_from_seed(const zkey *z, uint64_t seed, groth16_blind *out)
{
    uint64_t st = seed;
    for (int which = 0; which < 2; which++) {
        uint64_t *v = which ? out->s : out->r;
        do {
            for (int i = 0; i < 4; i++) v[i] = splitmix64(&st);
        } while (!scalar_accept(z->Fr, v));
    }
}

/* ---- §4.1: a, b, c on the domain ------------------------------------------ */

/* The rows [lo, hi) of a = A·w and b = B·w, then c = a∘b on them. Each thread owns a
 * range of rows and scans every coefficient entry, skipping other rows: decoding an
 * entry costs a few ns against the ~20 ns product, the entries need no particular
 * order, and each row still sums its terms in file order, so the result is the same
 * for every thread count. Body specialised per scalar field by FR_DISPATCH. */
CUZK_HD void synth_rows(const field_desc *Fr, const zkey *z, const uint8_t *values, uint64_t *a, uint64_t *b,
                        uint64_t *c, size_t lo, size_t hi)
{
    memset(a + lo * FR_LIMBS, 0, (hi - lo) * FR_LIMBS * sizeof *a);
    memset(b + lo * FR_LIMBS, 0, (hi - lo) * FR_LIMBS * sizeof *b);
    for (uint64_t i = 0; i < z->ncoefs; i++) {
        uint32_t m, row, sig;
        uint64_t coef[FR_LIMBS], wv[FR_LIMBS], prod[FR_LIMBS];
        zkey_coef(z, i, &m, &row, &sig, coef);
        if (row < lo || row >= hi) continue;
        memcpy(wv, values + (size_t)sig * z->n8r, sizeof wv);
        /* stored coef·R² times canonical w, one Montgomery product: (coef·w)·R (§3.3) */
        fe_mul(Fr, prod, coef, wv);
        uint64_t *dst = (m == 0 ? a : b) + (size_t)row * FR_LIMBS;
        fe_add(Fr, dst, dst, prod);
    }
    for (size_t i = lo; i < hi; i++) fe_mul(Fr, c + i * FR_LIMBS, a + i * FR_LIMBS, b + i * FR_LIMBS);
}

struct synth_job {
    const zkey *z;
    const uint8_t *values;
    uint64_t *a, *b, *c;
    size_t n;
};

/* One part of team_run: rows [n part/nparts, n (part+1)/nparts). Each row sums its
 * terms in the zkey's order whatever the split, so the result does not depend on it. */
static void synth_part(void *arg, unsigned part, unsigned nparts)
{
    const struct synth_job *j = arg;
    size_t lo = j->n * part / nparts, hi = j->n * (part + 1) / nparts;
    FR_DISPATCH(j->z->Fr, synth_rows, j->z, j->values, j->a, j->b, j->c, lo, hi);
}

#define SYNTH_MAX_THREADS         64
#define SYNTH_MIN_ROWS_PER_THREAD 1024 /* fewer and a thread costs more than its share */

int groth16_synth(const zkey *z, const uint8_t *values, uint64_t *a, uint64_t *b, uint64_t *c,
                  unsigned threads, groth16_timings *t)
{
    double t0 = os_now_s(), c0 = os_cpu_s();
    const size_t n = z->domain_size;
    struct synth_job j = { .z = z, .values = values, .a = a, .b = b, .c = c, .n = n };

    if (threads == 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        threads = cpus > 0 ? (unsigned)cpus : 1;
    }
    if (threads > SYNTH_MAX_THREADS) threads = SYNTH_MAX_THREADS;
    if (threads > n / SYNTH_MIN_ROWS_PER_THREAD)
        threads = n >= 2 * SYNTH_MIN_ROWS_PER_THREAD ? (unsigned)(n / SYNTH_MIN_ROWS_PER_THREAD) : 1;
    team_run(threads, synth_part, &j); /* the process's persistent threads (team.h) */
    if (t) {
        t->matvec += os_now_s() - t0;
        t->cpu.matvec += os_cpu_s() - c0;
    }
    return 0;
}

/* h_j = a_j b_j - c_j, then out of Montgomery form: MSM scalars are canonical (§4.3).
 * h is written over a. */
CUZK_HD void h_impl(const field_desc *Fr, uint64_t *a, const uint64_t *b, const uint64_t *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t *ai = a + i * FR_LIMBS;
        fe_mul(Fr, ai, ai, b + i * FR_LIMBS);
        fe_sub(Fr, ai, ai, c + i * FR_LIMBS);
        fe_from_mont(Fr, ai, ai);
    }
}

/* ---- §4.2-4.4: coset NTTs, h, MSMs ----------------------------------------- */

/* h over a after the NTTs (§4.3): b and c are dead afterwards. */
static void groth16_h_only(const zkey *z, uint64_t *a, uint64_t *b, uint64_t *c)
{
    const field_desc *Fr = z->Fr;
    const size_t n = z->domain_size;

#if defined(__x86_64__)
    /* the IFMA lanes, 8 elements at a time: the same bits (test_ntt) */
    if (n % 8 == 0 && ifma_available())
        (Fr->id == FIELD_ID_BN254_FR ? ntt_lanes_h_bn254 : ntt_lanes_h_bls12_381)(a, b, c, n);
    else
#endif
        FR_DISPATCH(Fr, h_impl, a, b, c, n);
}

/* §4.2-4.3: the three coset NTTs, then h over a. b and c are dead afterwards. */
static int groth16_h(const zkey *z, uint64_t *a, uint64_t *b, uint64_t *c, unsigned threads,
                     groth16_timings *t)
{
    const ntt_domain *d;

    double t0 = os_now_s(), c0 = os_cpu_s();
    int rc = ntt_domain_acquire(z->Fr, z->lg_domain, &d); /* kept across partitions (ntt.h) */
    if (rc) return rc;
    ntt_to_odd_coset(d, a, threads);
    ntt_to_odd_coset(d, b, threads);
    ntt_to_odd_coset(d, c, threads);
    ntt_domain_release(d);
    groth16_h_only(z, a, b, c);
    if (t) {
        t->ntt += os_now_s() - t0;
        t->cpu.ntt += os_cpu_s() - c0;
    }
    return 0;
}

void groth16_msm_bases(const zkey *z, unsigned k, const curve_group **G, const uint8_t **bases, size_t *count)
{
    switch (k) {
    case 0: *G = z->g1, *bases = z->a, *count = z->nvars; break;
    case 1: *G = z->g1, *bases = z->b1, *count = z->nvars; break;
    case 2: *G = z->g2, *bases = z->b2, *count = z->nvars; break;
    case 3: *G = z->g1, *bases = z->c, *count = z->nvars - z->npublic - 1; break;
    default: *G = z->g1, *bases = z->h, *count = z->domain_size; break;
    }
}

/* §4.4: one of the five MSMs, k in the order A, B1, B2, C, H (groth16_msm_bases). */
typedef struct {
    const curve_group *G; /* from groth16_msm_bases */
    const uint8_t *bases;
    size_t count;
    uint64_t *out;
    const uint8_t *scalars;
    double *slot, *cpu;
    size_t first; /* A, B1, B2, C: the witness split's entry of scalars[0] */
} msm_job;

/* The five MSMs' jobs; the witness bytes are the scalars as they lie, h is a. */
static void msm_jobs_fill(const zkey *z, const uint8_t *values, const uint64_t *a, groth16_raw *raw,
                          groth16_timings *t, msm_job jobs[GROTH16_MSMS])
{
    uint64_t *outs[GROTH16_MSMS] = { raw->a, raw->b1, raw->b2, raw->c, raw->h };
    double *slots[GROTH16_MSMS] = { t ? &t->msm_a : NULL, t ? &t->msm_b1 : NULL, t ? &t->msm_b2 : NULL,
                                    t ? &t->msm_c : NULL, t ? &t->msm_h : NULL };
    double *cpus[GROTH16_MSMS] = { t ? &t->cpu.msm_a : NULL, t ? &t->cpu.msm_b1 : NULL,
                                   t ? &t->cpu.msm_b2 : NULL, t ? &t->cpu.msm_c : NULL,
                                   t ? &t->cpu.msm_h : NULL };

    for (unsigned k = 0; k < GROTH16_MSMS; k++) {
        jobs[k] = (msm_job){ .out = outs[k], .scalars = values, .slot = slots[k], .cpu = cpus[k] };
        groth16_msm_bases(z, k, &jobs[k].G, &jobs[k].bases, &jobs[k].count);
    }
    jobs[3].scalars = values + (z->npublic + 1) * z->n8r; /* C: the private part */
    jobs[3].first = z->npublic + 1;
    jobs[4].scalars = (const uint8_t *)a;
}

/* MSM k on threads threads: by its table where tabs has one, else A..C by the shared
 * split sp, else plainly. *tabled: whether a table ran it. 0 or -errno. */
static int msm_job_run(const zkey *z, const msm_job *j, unsigned k, const msm_split *sp,
                       const groth16_tables *tabs, unsigned threads, bool *tabled)
{
    *tabled = tabs && tabs->t[k];
    if (*tabled) return msm_run_table(tabs->t[k], j->out, j->scalars, j->count, z->n8r, threads);
    if (k < 4)
        return msm_run_split(j->G, j->out, j->bases, j->scalars, j->count, z->n8r, sp, j->first, threads);
    return msm_run(j->G, j->out, j->bases, j->scalars, j->count, z->n8r, threads);
}

/* msm_job_run timed on the process's clocks into the job's slots (its threads are all
 * the process works on then), a run by a table counted in *table_runs. */
static int msm_job_timed(const zkey *z, const msm_job *j, unsigned k, const msm_split *sp,
                         const groth16_tables *tabs, unsigned threads, unsigned *table_runs)
{
    double s0 = os_now_s(), c0 = os_cpu_s();
    bool tabled;
    int rc = msm_job_run(z, j, k, sp, tabs, threads, &tabled);

    if (rc) return rc;
    if (tabled && table_runs) ++*table_runs;
    if (j->slot) {
        *j->slot += os_now_s() - s0;
        *j->cpu += os_cpu_s() - c0;
    }
    return 0;
}

/* A, B1, B2 and C share the witness: its GLV split is made once (msm.h msm_split;
 * NULL when GLV does not apply, and each MSM then runs as msm_run), and only when a
 * witness MSM has no table. Its time counts to msm A. */
static int witness_split(const zkey *z, const uint8_t *values, const groth16_tables *tabs, unsigned threads,
                         groth16_timings *t, msm_split **sp)
{
    bool need = !tabs;
    for (size_t k = 0; tabs && k < 4; k++)
        if (!tabs->t[k]) need = true;
    double s0 = os_now_s(), c0 = os_cpu_s();
    int rc = need ? msm_split_make(z->g1, sp, values, z->nvars, z->n8r, threads) : 0;
    if (t) {
        t->msm_a += os_now_s() - s0;
        t->cpu.msm_a += os_cpu_s() - c0;
    }
    return rc;
}

/* §4.4: the five MSMs, one after another, each split over the threads. */
static int groth16_msms(const zkey *z, const uint8_t *values, const uint64_t *a, groth16_raw *raw,
                        unsigned threads, groth16_timings *t, const groth16_tables *tabs,
                        unsigned *table_runs)
{
    msm_job jobs[GROTH16_MSMS];
    msm_split *sp = NULL;
    int rc;

    msm_jobs_fill(z, values, a, raw, t, jobs);
    if ((rc = witness_split(z, values, tabs, threads, t, &sp))) return rc;
    for (unsigned k = 0; k < GROTH16_MSMS; k++) {
        if ((rc = msm_job_timed(z, &jobs[k], k, sp, tabs, threads, table_runs))) break;
        if (k == 3) { /* H's MSM, the last, makes the memory peak: the split is gone by then */
            msm_split_free(sp);
            sp = NULL;
        }
    }
    msm_split_free(sp);
    return rc;
}

/* ---- small proofs: the NTTs and the witness MSMs as jobs at once --------------
 *
 * Up to a domain of 2^GROTH16_JOBS_MAX_LG, with two threads or more, the three coset
 * NTTs and the four witness MSMs (A, B1, B2, C) run as seven independent jobs, each on
 * one thread, the threads taking the next job as they finish one; then h, and H's MSM
 * split over the threads as in a large proof. Split over the threads instead, each of
 * these short steps has stretches on one thread alone (an MSM's scalar preparation
 * below its split size, its window combine; the NTTs at these sizes), through which
 * the other core idles: by each team call's CPU critical path, a 2^13-2^15 proof's
 * wall on two idle cores would be 1.15-1.35x its CPU / 2 (docs/performance.md, "Where
 * a small proof leaves a core idle"). As jobs, one job's serial stretch overlaps
 * another job's work: on two threads that critical path (the wall on two idle cores)
 * went 52 -> 46 ms on merkle-13, 75 -> 64 on eddsa-14, 55 -> 53 on sha256-15, the CPU
 * unchanged. The NTTs go first, then the MSMs longest first (B2, the G2 one, then A,
 * C, B1; the NTTs last measured the same). Above 2^15 each step splits well on its
 * own, and seven at once would hold seven MSMs' scratch. The results are the same bits
 * either way (test_small_jobs). Timings: each job's own wall and its thread's CPU, so the
 * steps' walls overlap and their sum exceeds the proof's. */
#define GROTH16_JOBS_MAX_LG 15
#define SMALL_JOBS          7

static bool small_jobs_apply(const zkey *z, unsigned threads)
{
    return threads >= 2 && z->lg_domain <= GROTH16_JOBS_MAX_LG;
}

typedef struct {
    const zkey *z;
    const ntt_domain *d;
    uint64_t *vec[3]; /* a, b, c: the NTT jobs' vectors */
    msm_job *msm;
    const msm_split *sp;
    const groth16_tables *tabs;
    unsigned next;           /* the next job to take (atomic) */
    int rc[SMALL_JOBS];      /* each job's; written by the one thread that ran it */
    bool tabled[SMALL_JOBS]; /* each MSM job's: a table ran it */
    double wall[SMALL_JOBS], cpu[SMALL_JOBS];
} small_jobs;

/* Job i: 0-2 the NTTs of a, b, c, then 3-6 the MSMs B2, A, C, B1 (longest first). */
static const unsigned small_msm_order[4] = { 2, 0, 3, 1 };
#define SMALL_NTTS 3

/* One part of team_run: takes jobs until none is left. Each job writes only its own
 * outputs and slots; team_run's return orders them before the caller's reads. */
static void small_jobs_part(void *arg, unsigned part, unsigned nparts)
{
    small_jobs *j = arg;
    unsigned i;

    (void)part, (void)nparts;
    while ((i = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED)) < SMALL_JOBS) {
        double w0 = os_now_s(), c0 = os_thread_cpu_s();

        if (i < SMALL_NTTS) {
            ntt_to_odd_coset(j->d, j->vec[i], 1);
            j->rc[i] = 0;
        } else {
            unsigned k = small_msm_order[i - SMALL_NTTS];
            j->rc[i] = msm_job_run(j->z, &j->msm[k], k, j->sp, j->tabs, 1, &j->tabled[i]);
        }
        j->wall[i] = os_now_s() - w0;
        j->cpu[i] = os_thread_cpu_s() - c0;
    }
}

/* §4.2-4.4 for a small proof, as the jobs above: the same results as groth16_h and
 * groth16_msms one after the other. */
static int groth16_small(const zkey *z, const uint8_t *values, uint64_t *a, uint64_t *b, uint64_t *c,
                         groth16_raw *raw, unsigned threads, groth16_timings *t, const groth16_tables *tabs,
                         unsigned *table_runs)
{
    msm_job msm[GROTH16_MSMS];
    small_jobs j = { .z = z, .vec = { a, b, c }, .msm = msm, .tabs = tabs };
    msm_split *sp = NULL;
    const ntt_domain *d;
    int rc;

    msm_jobs_fill(z, values, a, raw, t, msm);
    if ((rc = ntt_domain_acquire(z->Fr, z->lg_domain, &d))) return rc; /* kept across partitions (ntt.h) */
    if ((rc = witness_split(z, values, tabs, threads, t, &sp))) goto out;
    j.d = d;
    j.sp = sp;
    team_run(threads, small_jobs_part, &j);
    for (unsigned i = 0; i < SMALL_JOBS; i++) {
        if (!rc) rc = j.rc[i];
        if (j.tabled[i] && table_runs) ++*table_runs;
        if (!t) continue;
        if (i < SMALL_NTTS) {
            t->ntt += j.wall[i];
            t->cpu.ntt += j.cpu[i];
        } else {
            msm_job *m = &msm[small_msm_order[i - SMALL_NTTS]];
            *m->slot += j.wall[i];
            *m->cpu += j.cpu[i];
        }
    }
    msm_split_free(sp);
    sp = NULL;
    if (rc) goto out;
    double t0 = os_now_s(), c0 = os_cpu_s();
    groth16_h_only(z, a, b, c);
    if (t) {
        t->ntt += os_now_s() - t0;
        t->cpu.ntt += os_cpu_s() - c0;
    }
    rc = msm_job_timed(z, &msm[4], 4, NULL, tabs, threads, table_runs);
out:
    ntt_domain_release(d);
    return rc;
}

int groth16_compute(const zkey *z, const uint8_t *values, uint64_t *a, uint64_t *b, uint64_t *c,
                    groth16_raw *raw, unsigned threads, groth16_timings *t)
{
    return groth16_compute_tables(z, values, a, b, c, raw, threads, t, NULL, NULL);
}

int groth16_compute_tables(const zkey *z, const uint8_t *values, uint64_t *a, uint64_t *b, uint64_t *c,
                           groth16_raw *raw, unsigned threads, groth16_timings *t, const groth16_tables *tabs,
                           unsigned *table_runs)
{
    if (small_jobs_apply(z, threads))
        return groth16_small(z, values, a, b, c, raw, threads, t, tabs, table_runs);
    int rc = groth16_h(z, a, b, c, threads, t);
    return rc ? rc : groth16_msms(z, values, a, raw, threads, t, tabs, table_runs);
}

/* ---- §4.5-4.6: blinding ---------------------------------------------------- */

void groth16_finalize(const zkey *z, const groth16_raw *raw, const groth16_blind *bl, groth16_proof *out)
{
    const curve_group *g1 = z->g1, *g2 = z->g2;
    const field_desc *Fr = z->Fr;
    uint64_t pa[EC_MAX_JAC], pb[EC_MAX_JAC], b1[EC_MAX_JAC], pc[EC_MAX_JAC], t[EC_MAX_JAC], base[EC_MAX_JAC];

    /* pi_a = A + alpha1 + r·delta1 */
    ec_jac_from_aff(g1, base, z->alpha1);
    ec_add(g1, pa, raw->a, base);
    ec_jac_from_aff(g1, base, z->delta1);
    ec_jac_mul_scalar(g1, t, base, bl->r, FR_LIMBS);
    ec_add(g1, pa, pa, t);

    /* pi_b = B2 + beta2 + s·delta2 */
    ec_jac_from_aff(g2, base, z->beta2);
    ec_add(g2, pb, raw->b2, base);
    ec_jac_from_aff(g2, base, z->delta2);
    ec_jac_mul_scalar(g2, t, base, bl->s, FR_LIMBS);
    ec_add(g2, pb, pb, t);

    /* b1 = B1 + beta1 + s·delta1 (not output) */
    ec_jac_from_aff(g1, base, z->beta1);
    ec_add(g1, b1, raw->b1, base);
    ec_jac_from_aff(g1, base, z->delta1);
    ec_jac_mul_scalar(g1, t, base, bl->s, FR_LIMBS);
    ec_add(g1, b1, b1, t);

    /* pi_c = C + H + s·pi_a + r·b1 − (r·s mod r)·delta1 */
    ec_add(g1, pc, raw->c, raw->h);
    ec_jac_mul_scalar(g1, t, pa, bl->s, FR_LIMBS);
    ec_add(g1, pc, pc, t);
    ec_jac_mul_scalar(g1, t, b1, bl->r, FR_LIMBS);
    ec_add(g1, pc, pc, t);
    uint64_t rm[FE_MAX_LIMBS], sm[FE_MAX_LIMBS], rs[FE_MAX_LIMBS];
    fe_to_mont(Fr, rm, bl->r);
    fe_to_mont(Fr, sm, bl->s);
    fe_mul(Fr, rs, rm, sm);
    fe_neg(Fr, rs, rs);
    fe_from_mont(Fr, rs, rs); /* −rs mod r, canonical */
    ec_jac_from_aff(g1, base, z->delta1);
    ec_jac_mul_scalar(g1, t, base, rs, FR_LIMBS);
    ec_add(g1, pc, pc, t);

    ec_jac_to_aff(g1, out->a, pa);
    ec_jac_to_aff(g2, out->b, pb);
    ec_jac_to_aff(g1, out->c, pc);
}

/* ---- everything in one process ------------------------------------------- */

int groth16_prove(const zkey *z, const wtns *w, const groth16_blind *bl, groth16_proof *out, unsigned threads,
                  groth16_timings *t, char *err, size_t errlen)
{
    const size_t n = z->domain_size, bytes = n * FR_LIMBS * sizeof(uint64_t);
    groth16_raw *raw = NULL;
    uint64_t *a = huge_alloc(bytes), *b = huge_alloc(bytes), *c = huge_alloc(bytes); /* hugemem.h: why */
    int rc = -ENOMEM;

    raw = malloc(sizeof *raw);
    if (!a || !b || !c || !raw) goto out;
    rc = groth16_synth(z, w->values, a, b, c, threads, t);
    if (rc) goto out;
    if (small_jobs_apply(z, threads)) {
        rc = groth16_small(z, w->values, a, b, c, raw, threads, t, NULL, NULL);
    } else {
        rc = groth16_h(z, a, b, c, threads, t);
        if (rc) goto out;
        /* b and c are dead once h is in a: freed before the MSMs, whose scratch (up
         * to 112 bytes a term for the G2 one, msm.c) makes the memory peak, so that
         * peak is 2 vectors (16 MiB at 2^18) lower */
        free(b);
        free(c);
        b = c = NULL;
        rc = groth16_msms(z, w->values, a, raw, threads, t, NULL, NULL);
    }
    if (rc) goto out;
    double t0 = os_now_s(), c0 = os_cpu_s();
    groth16_finalize(z, raw, bl, out);
    if (t) {
        t->finalize += os_now_s() - t0;
        t->cpu.finalize += os_cpu_s() - c0;
    }
out:
    if (rc) snprintf(err, errlen, "proving failed: %s", rc == -ENOMEM ? "out of memory" : strerror(-rc));
    free(a);
    free(b);
    free(c);
    free(raw);
    return rc == -ENOMEM || rc == -EINVAL ? -CUZK_E_INTERNAL : rc;
}

/* ---- output (§6) ------------------------------------------------------------ */

/* One output being published: its directory (an fd, so nothing below re-resolves
 * the path), its final name and its temp name in that directory, and the temp file's
 * fd while its data is on the way to the disk (out_prepare to out_sync). */
typedef struct {
    int dfd, fd;
    char name[NAME_MAX + 1], tmp[NAME_MAX + 1];
    const char *path;
} out_file;

static void out_close(out_file *o)
{
    if (o->fd >= 0) close(o->fd);
    o->fd = -1;
    if (o->dfd >= 0) close(o->dfd);
    o->dfd = -1;
}

/* Write text to a new temp file next to path, created relative to its directory's fd
 * with O_EXCL|O_NOFOLLOW (a name planted there, symlink or not, is refused, never
 * followed or truncated). With sync, the file's writeback is started
 * (sync_file_range, which does not wait) and its fd kept for out_sync: two files
 * written back side by side wait for the disk once, not twice in turn. Without, the
 * fd is closed. wt (may be NULL) gets the times. */
static int out_prepare(out_file *o, const char *path, const char *text, long tag_pid, bool sync,
                       groth16_write_times *wt, char *err, size_t errlen)
{
    uint64_t t0 = os_now_ns();
    const char *slash = strrchr(path, '/');
    char dir[PATH_MAX];
    int fd = -1;

    o->dfd = o->fd = -1;
    o->tmp[0] = '\0';
    o->path = path;
    if (slash) {
        size_t dl = (size_t)(slash - path);
        if (dl >= sizeof dir) {
            snprintf(err, errlen, "cannot write %s: path too long", path);
            return -CUZK_E_OUTPUT;
        }
        memcpy(dir, path, dl);
        dir[dl ? dl : 1] = '\0';
        if (!dl) dir[0] = '/';
    } else
        snprintf(dir, sizeof dir, ".");
    const char *base = slash ? slash + 1 : path;
    if (!*base || strlen(base) + 32 > sizeof o->name) {
        snprintf(err, errlen, "cannot write %s: bad file name", path);
        return -CUZK_E_OUTPUT;
    }
    snprintf(o->name, sizeof o->name, "%s", base);
    o->dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (o->dfd < 0) {
        snprintf(err, errlen, "cannot write %s: %s: %s", path, dir, strerror(errno));
        return -CUZK_E_OUTPUT;
    }
    /* A random part in the temp name, and another on EEXIST: in a shared sticky dir a
     * predictable name (NAME.tmp.PID) let another user create it first and fail the
     * partition for good. cuzkd finds a dead finalizer's temps by the PID prefix. */
    fd = -1;
    for (int tries = 0; tries < 8 && fd < 0; tries++) {
        uint32_t rnd = 0;
        if (getrandom(&rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) rnd = (uint32_t)tries;
        int n = groth16_tmp_prefix(o->tmp, sizeof o->tmp, base, tag_pid);
        if (n > 0 && (size_t)n < sizeof o->tmp) snprintf(o->tmp + n, sizeof o->tmp - (size_t)n, "%08x", rnd);
        fd = openat(o->dfd, o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
        snprintf(err, errlen, "cannot create %s: %s%s", o->tmp, strerror(errno),
                 errno == EEXIST || errno == ELOOP ? " (refused: not ours)" : "");
        o->tmp[0] = '\0';
        out_close(o);
        return -CUZK_E_OUTPUT;
    }
    size_t len = strlen(text), off = 0;
    while (off < len) {
        ssize_t k = write(fd, text + off, len - off);
        if (k < 0) {
            if (errno == EINTR) continue;
            snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
            goto fail;
        }
        off += (size_t)k;
    }
    if (sync) {
        /* Only a hint: on a file system without it (EINVAL, ESPIPE) out_sync's
         * fdatasync does the whole writeback. */
        (void)sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
        o->fd = fd;
    } else if (close(fd) != 0) {
        fd = -1;
        snprintf(err, errlen, "cannot write %s: close: %s", path, strerror(errno));
        goto fail;
    }
    if (wt) wt->write_ns += os_now_ns() - t0;
    return 0;
fail:
    if (fd >= 0) close(fd);
    unlinkat(o->dfd, o->tmp, 0);
    o->tmp[0] = '\0';
    out_close(o);
    return -CUZK_E_OUTPUT;
}

/* Drop a prepared temp file (failure path). */
static void out_abort(out_file *o)
{
    if (o->dfd >= 0 && o->tmp[0]) unlinkat(o->dfd, o->tmp, 0);
    o->tmp[0] = '\0';
    out_close(o);
}

/* Wait until a prepared temp file's data and size are on the disk (fdatasync: a new
 * file's size is data to it; its timestamps are not needed to read it back), and
 * close it. Nothing to do for a file prepared without sync. On failure the temp file
 * is dropped. */
static int out_sync(out_file *o, groth16_write_times *wt, char *err, size_t errlen)
{
    if (o->fd < 0) return 0;
    uint64_t t0 = os_now_ns();
    int fd = o->fd;
    o->fd = -1;
    if (fdatasync(fd) != 0) {
        snprintf(err, errlen, "cannot write %s: fdatasync: %s", o->path, strerror(errno));
        close(fd);
        out_abort(o);
        return -CUZK_E_OUTPUT;
    }
    if (close(fd) != 0) {
        snprintf(err, errlen, "cannot write %s: close: %s", o->path, strerror(errno));
        out_abort(o);
        return -CUZK_E_OUTPUT;
    }
    if (wt) wt->fsync_ns += os_now_ns() - t0;
    return 0;
}

/* Rename the temp file to its final name: only where that name is absent or a regular
 * file (a symlink, directory, FIFO or device there is refused, never replaced). */
static int out_commit(out_file *o, char *err, size_t errlen)
{
    struct stat st;
    int absent = 0, r;

    if (fstatat(o->dfd, o->name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (!S_ISREG(st.st_mode)) {
            snprintf(err, errlen, "refused: %s is %s, not a regular file", o->name,
                     S_ISLNK(st.st_mode)       ? "a symlink"
                         : S_ISDIR(st.st_mode) ? "a directory"
                                               : "special");
            return -CUZK_E_OUTPUT;
        }
    } else if (errno != ENOENT) {
        snprintf(err, errlen, "cannot write %s: %s", o->path, strerror(errno));
        return -CUZK_E_OUTPUT;
    } else {
        absent = 1;
    }
    /* A name seen absent is taken only if it still is (RENAME_NOREPLACE): what the
     * caller checked before (the finalizer's sticky rule: no other user's file is
     * replaced) cannot be undone by a file created meanwhile. A file system without
     * the flag (EINVAL) gets the plain rename. */
    r = absent ? renameat2(o->dfd, o->tmp, o->dfd, o->name, RENAME_NOREPLACE) : -1;
    if (absent && r != 0 && errno == EEXIST) {
        snprintf(err, errlen,
                 "refused: %s appeared while it was being written; not "
                 "replaced",
                 o->name);
        return -CUZK_E_OUTPUT;
    }
    if ((!absent || (r != 0 && errno == EINVAL)) && (r = renameat(o->dfd, o->tmp, o->dfd, o->name)) != 0) {
        snprintf(err, errlen, "cannot write %s: %s", o->path, strerror(errno));
        return -CUZK_E_OUTPUT;
    }
    if (r != 0) {
        snprintf(err, errlen, "cannot write %s: %s", o->path, strerror(errno));
        return -CUZK_E_OUTPUT;
    }
    o->tmp[0] = '\0';
    return 0;
}

/* Publish one file: prepare + sync + commit + directory fsync. */
static int publish_file(const char *path, const char *text, groth16_write_times *wt, char *err, size_t errlen)
{
    out_file o;
    int rc = out_prepare(&o, path, text, (long)getpid(), true, wt, err, errlen);
    if (rc || (rc = out_sync(&o, wt, err, errlen))) return rc;
    uint64_t t2 = os_now_ns();
    rc = out_commit(&o, err, errlen);
    if (!rc) fsync(o.dfd); /* make the rename durable */
    if (!rc && wt) wt->rename_ns += os_now_ns() - t2;
    out_abort(&o);
    return rc;
}

/* Appends the decimal of a Montgomery coordinate. */
static size_t put_coord(const field_desc *F, const uint64_t *mont, char *dst, size_t cap)
{
    char dec[128];
    fe_mont_to_dec(F, mont, dec, sizeof dec);
    return (size_t)snprintf(dst, cap, "\"%s\"", dec);
}

int groth16_write_proof(const zkey *z, const groth16_proof *p, const char *path, char *err, size_t errlen)
{
    return groth16_write_proof_timed(z, p, path, NULL, err, errlen);
}

#define PROOF_TEXT_CAP 4096
/* The proof's JSON into buf (PROOF_TEXT_CAP bytes). */
static int proof_text(const zkey *z, const groth16_proof *p, const char *path, char *buf,
                      groth16_write_times *wt, char *err, size_t errlen)
{
    uint64_t t0 = os_now_ns();
    const field_desc *F = z->Fq;
    const unsigned n = F->n;
    const size_t cap = PROOF_TEXT_CAP;
    size_t o = 0;
#define PUT(...) (o += (size_t)snprintf(buf + o, cap - o, __VA_ARGS__))
#define COORD(m) (o += put_coord(F, (m), buf + o, cap - o))
    /* snarkjs writes infinity as z = 0 with (0, 1); the verifier accepts that (§6.1) */
#define G1_POINT(P)                           \
    do {                                      \
        if (ec_aff_is_inf(z->g1, (P)))        \
            PUT("\"0\",\n  \"1\",\n  \"0\""); \
        else {                                \
            COORD(P);                         \
            PUT(",\n  ");                     \
            COORD((P) + n);                   \
            PUT(",\n  \"1\"");                \
        }                                     \
    } while (0)
    PUT("{\n \"pi_a\": [\n  ");
    G1_POINT(p->a);
    PUT("\n ],\n \"pi_b\": [\n");
    if (ec_aff_is_inf(z->g2, p->b)) {
        PUT("  [\n   \"0\",\n   \"0\"\n  ],\n  [\n   \"1\",\n   \"0\"\n  ],\n  [\n   \"0\",\n   \"0\"\n  ]");
    } else {
        for (int k = 0; k < 2; k++) {
            PUT("  [\n   ");
            COORD(p->b + 2 * k * n);
            PUT(",\n   ");
            COORD(p->b + 2 * k * n + n);
            PUT("\n  ],\n");
        }
        PUT("  [\n   \"1\",\n   \"0\"\n  ]");
    }
    PUT("\n ],\n \"pi_c\": [\n  ");
    G1_POINT(p->c);
    PUT("\n ],\n \"protocol\": \"groth16\",\n \"curve\": \"%s\"\n}", groth16_curve_name(z));
#undef PUT
#undef COORD
#undef G1_POINT
    if (o >= cap) {
        snprintf(err, errlen, "%s: proof text too long (bug)", path);
        return -CUZK_E_INTERNAL;
    }
    if (wt) wt->serialize_ns += os_now_ns() - t0;
    return 0;
}

int groth16_write_proof_timed(const zkey *z, const groth16_proof *p, const char *path,
                              groth16_write_times *wt, char *err, size_t errlen)
{
    char buf[PROOF_TEXT_CAP];
    int rc = proof_text(z, p, path, buf, wt, err, errlen);
    return rc ? rc : publish_file(path, buf, wt, err, errlen);
}

int groth16_write_public(const zkey *z, const uint8_t *values, const char *path, char *err, size_t errlen)
{
    return groth16_write_public_timed(z, values, path, NULL, err, errlen);
}

/* The public signals' JSON, malloc'd (NULL: out of memory, err set). */
static char *public_text(const zkey *z, const uint8_t *values, const char *path, groth16_write_times *wt,
                         char *err, size_t errlen)
{
    uint64_t t0 = os_now_ns();
    size_t cap = 16 + (size_t)z->npublic * 90, o = 0;
    char *buf = malloc(cap);
    if (!buf) {
        snprintf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    o += (size_t)snprintf(buf + o, cap - o, "[");
    for (uint32_t i = 1; i <= z->npublic; i++) {
        uint64_t v[FR_LIMBS];
        char dec[128];
        memcpy(v, values + (size_t)i * z->n8r, sizeof v);
        fe_canon_to_dec(z->Fr, v, dec, sizeof dec);
        o += (size_t)snprintf(buf + o, cap - o, "%s\n \"%s\"", i > 1 ? "," : "", dec);
    }
    o += (size_t)snprintf(buf + o, cap - o, "%s]", z->npublic ? "\n" : "");
    if (wt) wt->serialize_ns += os_now_ns() - t0;
    return buf;
}

int groth16_write_public_timed(const zkey *z, const uint8_t *values, const char *path,
                               groth16_write_times *wt, char *err, size_t errlen)
{
    char *buf = public_text(z, values, path, wt, err, errlen);
    if (!buf) return -CUZK_E_INTERNAL;
    int rc = publish_file(path, buf, wt, err, errlen);
    free(buf);
    return rc;
}

int groth16_pair_texts(const zkey *z, const groth16_proof *p, const uint8_t *values, char **proof_out,
                       char **public_out, groth16_write_times *wt, char *err, size_t errlen)
{
    char *pbuf = malloc(PROOF_TEXT_CAP);
    int rc;

    *proof_out = *public_out = NULL;
    if (!pbuf) {
        snprintf(err, errlen, "out of memory");
        return -CUZK_E_INTERNAL;
    }
    rc = proof_text(z, p, "proof.json", pbuf, wt, err, errlen);
    if (!rc && !(*public_out = public_text(z, values, "public.json", wt, err, errlen))) rc = -CUZK_E_INTERNAL;
    if (rc) {
        free(pbuf);
        return rc;
    }
    *proof_out = pbuf;
    return 0;
}

/* Whether two directory fds name one directory (then one fsync makes both renames
 * durable). */
static bool same_dir(int a, int b)
{
    struct stat sa, sb;
    return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* groth16_publish_pair, durable or not. */
static int publish_pair(const char *proof_path, const char *public_path, const char *ptext, const char *utext,
                        long tag_pid, bool sync, groth16_write_times *wt, char *err, size_t errlen)
{
    out_file po, uo;
    /* Both temp files complete (and with sync on the disk) before either final name
     * changes; their writebacks run side by side. */
    int rc = out_prepare(&po, proof_path, ptext, tag_pid, sync, wt, err, errlen);
    if (rc) return rc;
    rc = out_prepare(&uo, public_path, utext, tag_pid, sync, wt, err, errlen);
    if (!rc && !(rc = out_sync(&po, wt, err, errlen))) rc = out_sync(&uo, wt, err, errlen);
    if (rc) {
        out_abort(&po);
        out_abort(&uo);
        return rc;
    }
    uint64_t t2 = os_now_ns();
    rc = out_commit(&po, err, errlen);
    if (!rc && (rc = out_commit(&uo, err, errlen)))
        unlinkat(po.dfd, po.name, 0); /* never a proof.json whose public.json failed */
    if (!rc && sync) {
        fsync(po.dfd); /* make the renames durable: one fsync when both share a directory */
        if (!same_dir(po.dfd, uo.dfd)) fsync(uo.dfd);
    }
    if (!rc && wt) wt->rename_ns += os_now_ns() - t2;
    out_abort(&po);
    out_abort(&uo);
    return rc;
}

int groth16_publish_pair(const char *proof_path, const char *public_path, const char *ptext,
                         const char *utext, long tag_pid, groth16_write_times *wt, char *err, size_t errlen)
{
    return publish_pair(proof_path, public_path, ptext, utext, tag_pid, true, wt, err, errlen);
}

int groth16_write_pair(const zkey *z, const groth16_proof *p, const uint8_t *values, const char *proof_path,
                       const char *public_path, bool sync, char *err, size_t errlen)
{
    char *ptext, *utext;
    int rc = groth16_pair_texts(z, p, values, &ptext, &utext, NULL, err, errlen);

    if (rc) return rc;
    rc = publish_pair(proof_path, public_path, ptext, utext, (long)getpid(), sync, NULL, err, errlen);
    free(ptext);
    free(utext);
    return rc;
}

int groth16_write_pair_timed(const zkey *z, const groth16_proof *p, const uint8_t *values,
                             const char *proof_path, const char *public_path, groth16_write_times *wt,
                             char *err, size_t errlen)
{
    char *ptext, *utext;
    int rc = groth16_pair_texts(z, p, values, &ptext, &utext, wt, err, errlen);

    if (rc) return rc;
    rc = groth16_publish_pair(proof_path, public_path, ptext, utext, (long)getpid(), wt, err, errlen);
    free(ptext);
    free(utext);
    return rc;
}
