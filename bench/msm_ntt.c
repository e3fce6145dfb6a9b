/* msm_ntt.c — MSM timings (and, with HAVE_NTT_BENCH, NTT timings added separately).
 *
 *   msm_ntt [--sizes 16,20] [--threads T] [--window C] [--groups g1,g2]
 *           [--curves bn254,bls12381] [--buckets auto|jacobian|affine]
 *           [--glv auto|on|off] [--reps N] [--table]
 *
 * Prints ns/point for G1 and G2 MSMs of BN254 and BLS12-381 (one row per group and
 * size, the curves beside each other) on random full-size scalars of each curve's Fr,
 * all CPUs unless --threads. Bases: 2^16 distinct points P_i = P_0 + i·Q (P_0, Q random
 * multiples of the generator; one addition each instead of a scalar multiplication,
 * which would take ~30 s for G2), tiled to larger sizes. Pippenger's cost does not
 * depend on how the bases relate, and tiling keeps bucket additions generic (the
 * doubling case needs the same base twice in one bucket: with random scalars that is
 * as rare as with distinct points).
 *
 * --table adds, under each row, the fixed-base MSM over the same bases and scalars
 * (msm.h msm_table, the model's window): the CPU time of building its table once, the
 * table's size, and the CPU time of one MSM through it (best of the reps; its result
 * checked against msm_run's): what a long-lived prover would pay once and then save
 * per MSM (docs/performance.md, "Fixed-base tables"). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zk/curve.h"
#include "shm/futex.h"
#include "zk/msm.h"

#include "rng.h"
#include "base/os.h"

#define BENCH_DISTINCT_LG 16

static uint64_t rng_state = 0x243f6a8885a308d3ULL;

static void rand_scalar(const curve_group *G, uint64_t k[4])
{
    const field_desc *R = G->Fr;
    for (;;) {
        for (int i = 0; i < 4; i++) k[i] = bench_rng64(&rng_state);
        k[3] &= (UINT64_C(1) << (R->bits - 192)) - 1;
        if (fe_is_reduced(R, k)) return;
    }
}

/* CPU seconds of the whole process (all threads): on a shared machine this moves far
 * less than wall time; with T threads fully busy it is T times the wall time. */
static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* n affine bases in zkey layout: 2^BENCH_DISTINCT_LG distinct points, tiled. */
static uint8_t *bench_bases(const curve_group *G, size_t n)
{
    const unsigned cl = ec_cl(G);
    const size_t nd = (size_t)1 << BENCH_DISTINCT_LG, pb = 2 * cl * 8;
    uint64_t g[EC_MAX_JAC], q[EC_MAX_JAC], k[4];
    uint64_t *jac = malloc(nd * 3 * cl * 8);
    uint8_t *aff = malloc((n > nd ? n : nd) * pb);
    if (!jac || !aff) {
        free(jac);
        free(aff);
        return NULL;
    }
    ec_jac_from_aff(G, g, G->gen);
    rand_scalar(G, k);
    ec_jac_mul_scalar(G, jac, g, k, 4);
    rand_scalar(G, k);
    ec_jac_mul_scalar(G, q, g, k, 4);
    for (size_t i = 1; i < nd; i++) ec_add(G, jac + i * 3 * cl, jac + (i - 1) * 3 * cl, q);
    if (ec_batch_to_aff(G, (uint64_t *)aff, jac, nd)) {
        free(jac);
        free(aff);
        return NULL;
    }
    free(jac);
    for (size_t i = nd; i < n; i += nd) memcpy(aff + i * pb, aff, (n - i < nd ? n - i : nd) * pb);
    return aff;
}

struct bench_opts {
    unsigned sizes[8], nsizes;
    unsigned threads, window, reps;
    enum msm_buckets buckets;
    enum msm_glv glv;
    int g1, g2;
    int bn254, bls12381;
    int table;
};

/* The fixed-base row under an MSM row (--table): want is msm_run's result on these
 * inputs, plain_cpu its CPU seconds. */
static int bench_table(const struct bench_opts *o, const curve_group *G, const uint8_t *bases,
                       const uint8_t *sc, size_t n, const uint64_t *want, double plain_cpu)
{
    msm_table *t = NULL;
    double c0 = cpu_s();
    int rc = msm_table_build(G, &t, bases, n, 0, o->threads);
    double build = cpu_s() - c0, bestc = 1e30;
    if (rc) {
        fprintf(stderr, "msm_ntt: msm_table_build on %s failed: %s\n", G->name, strerror(-rc));
        return rc;
    }
    int reps = o->reps ? (int)o->reps : 3;
    for (int rep = 0; rep < reps; rep++) {
        uint64_t r[EC_MAX_JAC];
        c0 = cpu_s();
        rc = msm_run_table(t, r, sc, n, 32, o->threads);
        double tc = cpu_s() - c0;
        if (rc || !ec_jac_eq(G, r, want)) {
            fprintf(stderr, "msm_ntt: the table MSM on %s %s\n", G->name,
                    rc ? strerror(-rc) : "differs from msm_run");
            msm_table_free(t);
            return rc ? rc : -EIO;
        }
        if (tc < bestc) bestc = tc;
    }
    printf(
        "  table c=%-2u %8.1f MiB  build cpu %9.1f ms  msm cpu %8.1f ms (%.2fx msm_run's; build = %.0f of msm_run)\n",
        msm_table_c(t), (double)msm_table_bytes(t) / (1 << 20), build * 1e3, bestc * 1e3, bestc / plain_cpu,
        build / plain_cpu);
    fflush(stdout);
    msm_table_free(t);
    return 0;
}

/* One group at every size; scalars: sc (32 bytes each, below the group's r). */
static int bench_group(const struct bench_opts *o, const curve_group *G, const uint8_t *sc, size_t nmax)
{
    uint8_t *bases = bench_bases(G, nmax);
    if (!bases) return -ENOMEM;
    for (unsigned i = 0; i < o->nsizes; i++) {
        size_t n = (size_t)1 << o->sizes[i];
        uint64_t r[EC_MAX_JAC];
        double best = 1e30, bestc = 1e30;
        int reps = o->reps ? (int)o->reps : o->sizes[i] <= 16 ? 3 : 1;
        for (int rep = 0; rep < reps; rep++) {
            double t0 = os_now_s(), c0 = cpu_s();
            int rc = msm_run_ext(G, r, bases, sc, n, 32, o->threads, o->window, o->buckets, o->glv);
            double t = os_now_s() - t0, tc = cpu_s() - c0;
            if (tc < bestc) bestc = tc;
            if (rc) {
                fprintf(stderr, "msm_ntt: msm_run on %s 2^%u failed: %s\n", G->name, o->sizes[i],
                        strerror(-rc));
                free(bases);
                return rc;
            }
            if (t < best) best = t;
        }
        printf("%-13s   2^%-2u %10.1f %12.1f %10.1f %14.1f\n", G->name, o->sizes[i], best * 1e3,
               best * 1e9 / (double)n, bestc * 1e3, bestc * 1e9 / (double)n);
        fflush(stdout);
        if (o->table && bench_table(o, G, bases, sc, n, r, bestc)) {
            free(bases);
            return -EIO;
        }
    }
    free(bases);
    return 0;
}

static int bench_msm(const struct bench_opts *o)
{
    /* G1 then G2 of each curve; a curve's scalars are drawn below its own r. */
    const curve_group *groups[2][2] = { { &G1_BN254, &G2_BN254 }, { &G1_BLS12_381, &G2_BLS12_381 } };
    const int curve_on[2] = { o->bn254, o->bls12381 };
    const int group_on[2] = { o->g1, o->g2 };
    unsigned maxlg = 0;
    for (unsigned i = 0; i < o->nsizes; i++)
        if (o->sizes[i] > maxlg) maxlg = o->sizes[i];
    size_t nmax = (size_t)1 << maxlg;
    uint8_t *sc = malloc(nmax * 32);
    if (!sc) return -ENOMEM;
    static const char *const bk[] = { "auto", "jacobian", "affine" }, *const gl[] = { "auto", "off", "on" };
    printf("msm (random full-size scalars of each curve's Fr, threads=%u%s, window=%s, buckets=%s, glv=%s)\n",
           o->threads, o->threads ? "" : " = all CPUs", o->window ? "forced" : "auto", bk[o->buckets],
           gl[o->glv]);
    printf("%-13s %6s %10s %12s %10s %14s\n", "group", "size", "ms", "ns/point", "cpu ms", "cpu ns/point");
    for (int g = 0; g < 2; g++) {
        if (!group_on[g]) continue;
        for (int c = 0; c < 2; c++) {
            if (!curve_on[c]) continue;
            const curve_group *G = groups[c][g];
            for (size_t i = 0; i < nmax; i++) {
                uint64_t k[4];
                rand_scalar(G, k);
                memcpy(sc + 32 * i, k, 32);
            }
            int rc = bench_group(o, G, sc, nmax);
            if (rc) {
                free(sc);
                return rc;
            }
        }
    }
    free(sc);
    return 0;
}

static int parse_sizes(struct bench_opts *o, const char *s)
{
    o->nsizes = 0;
    while (*s && o->nsizes < 8) {
        char *end;
        unsigned long v = strtoul(s, &end, 10);
        if (end == s || v < 1 || v > 26) return -1;
        o->sizes[o->nsizes++] = (unsigned)v;
        s = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') return -1;
    }
    return o->nsizes ? 0 : -1;
}

int main(int argc, char **argv)
{
    struct bench_opts o = { .sizes = { 16, 20 }, .nsizes = 2, .g1 = 1, .g2 = 1, .bn254 = 1, .bls12381 = 1 };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--sizes") && v && parse_sizes(&o, v) == 0)
            i++;
        else if (!strcmp(a, "--threads") && v)
            o.threads = (unsigned)atoi(argv[++i]);
        else if (!strcmp(a, "--window") && v)
            o.window = (unsigned)atoi(argv[++i]);
        else if (!strcmp(a, "--table"))
            o.table = 1;
        else if (!strcmp(a, "--reps") && v)
            o.reps = (unsigned)atoi(argv[++i]); /* e.g. 1 under callgrind */
        else if (!strcmp(a, "--buckets") && v) {
            o.buckets = !strcmp(v, "jacobian") ? MSM_BUCKETS_JACOBIAN
                : !strcmp(v, "affine")         ? MSM_BUCKETS_AFFINE
                                               : MSM_BUCKETS_AUTO;
            i++;
        } else if (!strcmp(a, "--glv") && v) {
            o.glv = !strcmp(v, "on") ? MSM_GLV_ON : !strcmp(v, "off") ? MSM_GLV_OFF : MSM_GLV_AUTO;
            i++;
        } else if (!strcmp(a, "--groups") && v) {
            o.g1 = strstr(v, "g1") != NULL;
            o.g2 = strstr(v, "g2") != NULL;
            i++;
        } else if (!strcmp(a, "--curves") && v) {
            o.bn254 = strstr(v, "bn254") != NULL || strstr(v, "bn128") != NULL;
            o.bls12381 = strstr(v, "bls12381") != NULL || strstr(v, "bls12-381") != NULL;
            i++;
        } else {
            fprintf(
                stderr,
                "usage: msm_ntt [--sizes 16,20] [--threads T] [--window C] [--groups g1,g2] "
                "[--curves bn254,bls12381] [--buckets auto|jacobian|affine] [--glv auto|on|off] [--reps N] [--table]\n");
            return 2;
        }
    }
    if (bench_msm(&o)) return 1;
#ifdef HAVE_NTT_BENCH
#endif
    return 0;
}
