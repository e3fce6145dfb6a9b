/* gpu_bench.c — figures for bench/gpu-check.sh (CUDA builds only: build/bench-gpu/).
 *
 *   gpu_bench msm [--device N] [--reps R] [--g2-max LG] LG...
 *                                                  BN254 G1 and G2 MSM at 2^LG points
 *   gpu_bench ntt [--device N] [--reps R] [--coset] LG...
 *                                                  BN254 Fr forward NTT at 2^LG (--coset:
 *                                                  and to the odd coset, as a proof runs it)
 *   gpu_bench h2d [--device N] [--reps R] MIB     host-to-device copy of MIB MiB from
 *                                                  pinned and from malloc'd memory, GB/s
 *   gpu_bench snap INSTANCE FILE                   the slots of a cuzkd instance's stats
 *                                                  page, raw, for:
 *   gpu_bench report BEFORE AFTER                  between two snaps: each worker's gpu_busy
 *                                                  share (device events), in-flight occupancy,
 *                                                  the idle-gap histogram, its CPU seconds,
 *                                                  and the synth stages' busy share
 *
 * Inputs: distinct points (i+1)·G (running sums on all CPUs, batch-converted to
 * affine; not random, but every base is different, as in a zkey) and pseudo-random
 * 254-bit scalars (gpu_msm multiplies values >= r exactly). Times are gpu.h's
 * event-timed kernel_ms (device only, without the input copies), the best of --reps
 * (default 3) after one warm-up run, and the wall time of the call (copies included).
 * A size whose inputs would not fit in the device's free memory is skipped with a
 * line saying so. Correctness is tests/gpu's job (against the CPU); this only times.
 * Exit 0, 1 when a CUDA call fails (its error text printed), 2 usage. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gmp.h>

#include "zk/curve.h"
#include "zk/field.h"
#include "zk/gpu.h"
#include "shm/shmlayout.h"
#include "shm/stats.h"

#include "../rng.h"
#include "base/os.h"

static double now_ms(void)
{
    return (double)os_now_ns() * 1e-6;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

/* ---- distinct bases: (i+1)·G ---- */
struct gen_job {
    const curve_group *G;
    uint8_t *bases;
    size_t first, count;
    int rc;
};

#define GEN_CHUNK 4096

static void *gen_thread(void *arg)
{
    struct gen_job *j = arg;
    const curve_group *G = j->G;
    unsigned cl = ec_cl(G), aff = 2 * cl, jac = 3 * cl;
    uint64_t *tmp = malloc((size_t)GEN_CHUNK * jac * 8), gj[EC_MAX_JAC], cur[EC_MAX_JAC], k[4];

    if (!tmp) {
        j->rc = -ENOMEM;
        return NULL;
    }
    /* cur = (first+1)·G */
    memset(gj, 0, sizeof(gj));
    memcpy(gj, G->gen, aff * 8);
    memcpy(gj + 2 * cl, G->F->one, fe_n(G->F) * 8); /* Z = 1 (Montgomery) */
    k[0] = j->first + 1;
    k[1] = k[2] = k[3] = 0;
    ec_jac_mul_scalar(G, cur, gj, k, 4);
    for (size_t done = 0; done < j->count;) {
        size_t n = j->count - done < GEN_CHUNK ? j->count - done : GEN_CHUNK;

        for (size_t i = 0; i < n; i++) {
            memcpy(tmp + i * jac, cur, jac * 8);
            ec_add_aff(G, cur, cur, G->gen);
        }
        if ((j->rc = ec_batch_to_aff(G, (uint64_t *)(j->bases + (j->first + done) * aff * 8), tmp, n))) break;
        done += n;
    }
    free(tmp);
    return NULL;
}

static int gen_bases(const curve_group *G, uint8_t *bases, size_t count)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned nt = ncpu > 0 ? (unsigned)ncpu : 1;
    pthread_t th[256];
    struct gen_job jobs[256];
    int rc = 0;

    if (nt > 256) nt = 256;
    for (unsigned t = 0; t < nt; t++) {
        jobs[t] = (struct gen_job){ G, bases, count * t / nt, count * (t + 1) / nt - count * t / nt, 0 };
        pthread_create(&th[t], NULL, gen_thread, &jobs[t]);
    }
    for (unsigned t = 0; t < nt; t++) {
        pthread_join(th[t], NULL);
        if (jobs[t].rc) rc = jobs[t].rc;
    }
    return rc;
}

static int open_dev(int device, gpu_dev **d)
{
    char err[512];
    int n = 0, rc;

    if (gpu_device_probe(&n, err, sizeof(err))) {
        fprintf(stderr, "gpu_bench: %s\n", err);
        return 1;
    }
    if ((rc = gpu_open(device, d, err, sizeof(err)))) {
        fprintf(stderr, "gpu_bench: gpu_open(%d): %s (%d)\n", device, err, rc);
        return 1;
    }
    return 0;
}

/* G2 sizes above this are skipped: its bases take 2.5x the generation time of G1's
 * (2^26 G2 points would be ~40 s of the script's 8 minutes). --g2-max changes it. */
static unsigned g2_max = 24;

static int bench_msm(gpu_dev *d, int reps, const unsigned *lg, int nlg)
{
    static const curve_group *const groups[] = { &G1_BN254, &G2_BN254 };
    static const char *const names[] = { "G1", "G2" };
    unsigned maxlg = 0;
    uint8_t *sc;
    char err[512];

    for (int i = 0; i < nlg; i++)
        if (lg[i] > maxlg) maxlg = lg[i];
    sc = malloc(((size_t)32) << maxlg);
    if (!sc) {
        fprintf(stderr, "gpu_bench: out of host memory for 2^%u scalars\n", maxlg);
        return 1;
    }
    for (size_t i = 0; i < ((size_t)4 << maxlg); i++) ((uint64_t *)sc)[i] = bench_rng64(&rng_state);
    for (size_t i = 0; i < ((size_t)1 << maxlg); i++)
        sc[i * 32 + 31] &= 0x3f; /* 254 bits, as BN254 scalars */
    for (int g = 0; g < 2; g++) {
        const curve_group *G = groups[g];
        size_t psz = (size_t)2 * ec_cl(G) * 8, fr = 0, tot = 0;
        unsigned top = 0;
        uint8_t *bases;
        double t0;

        /* The largest size whose bases and scalars take at most half the free memory
         * (the rest: the kernels' buckets and sort scratch). */
        gpu_mem_info(d, &fr, &tot);
        for (int i = 0; i < nlg; i++)
            if (lg[i] > top && ((psz + 32) << lg[i]) <= fr / 2 && (g == 0 || lg[i] <= g2_max)) top = lg[i];
        bases = top ? malloc(psz << top) : NULL;
        if (top && !bases) {
            fprintf(stderr, "gpu_bench: out of host memory for 2^%u %s bases\n", top, names[g]);
            free(sc);
            return 1;
        }
        t0 = now_ms();
        if (top && gen_bases(G, bases, (size_t)1 << top)) {
            fprintf(stderr, "gpu_bench: generating bases: out of memory\n");
            free(bases);
            free(sc);
            return 1;
        }
        if (top)
            printf("# %s: 2^%u distinct bases generated on the CPU in %.1f s\n", names[g], top,
                   (now_ms() - t0) / 1e3);
        for (int i = 0; i < nlg; i++) {
            size_t n = (size_t)1 << lg[i];
            uint64_t res[EC_MAX_JAC];
            double best = 1e30, bestw = 1e30, bestc = 1e30;

            if (lg[i] > top) {
                if (g == 1 && lg[i] > g2_max)
                    printf("msm %s 2^%u: skipped (above --g2-max %u)\n", names[g], lg[i], g2_max);
                else
                    printf("msm %s 2^%u: skipped (inputs %zu MiB > half of the %zu MiB free)\n", names[g],
                           lg[i], ((psz + 32) << lg[i]) >> 20, fr >> 20);
                continue;
            }
            for (int r = 0; r <= reps; r++) {
                double k = 0, c = 0, w = now_ms();
                int rc = gpu_msm_timed(d, G, res, bases, sc, n, &k, &c, err, sizeof(err));

                w = now_ms() - w;
                if (rc) {
                    fprintf(stderr, "gpu_bench: msm %s 2^%u: %s (%d)\n", names[g], lg[i], err, rc);
                    free(bases);
                    free(sc);
                    return 1;
                }
                if (r && k < best) best = k;
                if (r && k + c < bestc) bestc = k + c;
                if (r && w < bestw) bestw = w;
            }
            printf("msm %s 2^%u: %.3f ms kernels, %.2f ns/point; %.3f ms with the H2D copy (events); "
                   "%.3f ms wall (best of %d)\n",
                   names[g], lg[i], best, best * 1e6 / (double)n, bestc, bestw, reps);
            fflush(stdout);
        }
        free(bases);
    }
    free(sc);
    return 0;
}

static int coset;

static int bench_ntt(gpu_dev *d, int reps, const unsigned *lg, int nlg)
{
    char err[512];

    for (int i = 0; i < nlg * (coset ? 2 : 1); i++) {
        int dir = i >= nlg ? GPU_NTT_ODD_COSET : GPU_NTT_FORWARD;
        const char *what = i >= nlg ? "ntt-coset" : "ntt";

        unsigned l = lg[i % nlg];
        size_t n = (size_t)1 << l;
        uint64_t *v = malloc(n * 32);
        double best = 1e30, bestw = 1e30;

        if (!v) {
            fprintf(stderr, "gpu_bench: out of host memory for 2^%u\n", l);
            return 1;
        }
        for (size_t k = 0; k < 4 * n; k++) v[k] = bench_rng64(&rng_state);
        for (size_t k = 0; k < n; k++)
            v[4 * k + 3] &= 0x0fffffffffffffffull; /* < 2^252 < r: a valid Montgomery value */
        for (int r = 0; r <= reps; r++) {
            double k = 0, w = now_ms();
            int rc = gpu_ntt(d, &FIELD_BN254_FR, l, v, dir, &k, err, sizeof(err));

            w = now_ms() - w;
            if (rc) {
                fprintf(stderr, "gpu_bench: %s 2^%u: %s (%d)\n", what, l, err, rc);
                free(v);
                return 1;
            }
            if (r && k < best) best = k;
            if (r && w < bestw) bestw = w;
        }
        printf("%s Fr 2^%u: %.3f ms kernels; %.3f ms with copies (best of %d)\n", what, l, best, bestw, reps);
        fflush(stdout);
        free(v);
    }
    return 0;
}

/* ---- closed form: bases (i+1)·G, result (sum (i+1)·s_i mod r)·G ---- */

/* MSM of `count` points of group G against a result the CPU computes in O(count): the
 * bases are (i+1)·G (gen_bases), so sum s_i·(i+1)·G = (sum (i+1)·s_i mod r)·G. Scalars
 * are 254-bit pseudo-random (some >= r: the GPU multiplies them exactly, and G has
 * order r). Checks the sizes the CPU backend's msm_run is too slow for on one machine:
 * 2^20, 2^24 and the chunked path above GMSM_MAX_CHUNK (2^24). 0 match, 1 not. */
static int closed_one(gpu_dev *d, const curve_group *G, size_t count)
{
    const size_t psz = (size_t)2 * ec_cl(G) * 8;
    uint8_t *bases = malloc(psz * count), *sc = malloc(32 * count);
    uint64_t got[EC_MAX_JAC], want[EC_MAX_JAC], gj[EC_MAX_JAC], k[4] = { 0, 0, 0, 0 };
    mpz_t acc, t, r;
    char err[512];
    double km = 0, cm = 0, t0;
    int rc = 1;

    if (!bases || !sc) {
        fprintf(stderr, "gpu_bench: out of host memory for %zu points\n", count);
        goto out;
    }
    t0 = now_ms();
    if (gen_bases(G, bases, count)) {
        fprintf(stderr, "gpu_bench: generating bases: out of memory\n");
        goto out;
    }
    for (size_t i = 0; i < 4 * count; i++) ((uint64_t *)sc)[i] = bench_rng64(&rng_state);
    for (size_t i = 0; i < count; i++) sc[i * 32 + 31] &= 0x3f;
    mpz_inits(acc, t, r, NULL);
    mpz_import(r, fe_n(G->Fr), -1, 8, 0, 0, G->Fr->p);
    for (size_t i = 0; i < count; i++) {
        mpz_import(t, 4, -1, 8, 0, 0, sc + 32 * i);
        mpz_addmul_ui(acc, t, (unsigned long)(i + 1));
    }
    mpz_mod(acc, acc, r);
    mpz_export(k, NULL, -1, 8, 0, 0, acc);
    mpz_clears(acc, t, r, NULL);
    memset(gj, 0, sizeof(gj));
    memcpy(gj, G->gen, psz);
    memcpy(gj + 2 * ec_cl(G), G->F->one, fe_n(G->F) * 8);
    ec_jac_mul_scalar(G, want, gj, k, 4);
    printf("# closed %s %zu: inputs and the CPU's answer in %.1f s\n", G->name, count, (now_ms() - t0) / 1e3);
    if (gpu_msm_timed(d, G, got, bases, sc, count, &km, &cm, err, sizeof(err))) {
        printf("FAIL closed %s %zu points: %s\n", G->name, count, err);
        goto out;
    }
    rc = !ec_jac_eq(G, got, want);
    printf("%s closed %s %zu points: %.3f ms kernels, %.3f ms H2D copy\n", rc ? "FAIL" : "ok", G->name, count,
           km, cm);
out:
    free(bases);
    free(sc);
    return rc;
}

/* ---- stats page: worker slots ---- */
#define SNAP_MAX 32
struct snapfile {
    uint32_t n;
    struct stats_snapshot s[SNAP_MAX];
};

static int snap(const char *instance, const char *path)
{
    struct shmlayout_stats st;
    struct snapfile *sf = calloc(1, sizeof(*sf));
    char err[512];
    FILE *f;
    uint64_t now;

    if (!sf || shmlayout_stats_attach(&st, instance, SEGMENT_RDONLY, err, sizeof(err))) {
        fprintf(stderr, "gpu_bench snap: %s\n", sf ? err : "out of memory");
        free(sf);
        return 1;
    }
    now = os_now_ns();
    for (uint32_t i = 0; i < st.page->slot_count && sf->n < SNAP_MAX; i++) {
        const struct stats_slot *s = stats_page_slot(st.page, i);

        if (s && stats_slot_read(s, &sf->s[sf->n], now, 1000) == 0 && sf->s[sf->n].role != STATS_ROLE_NONE)
            sf->n++;
    }
    shmlayout_stats_detach(&st);
    f = fopen(path, "wb");
    if (!f || fwrite(sf, sizeof(*sf), 1, f) != 1 || fclose(f)) {
        fprintf(stderr, "gpu_bench snap: cannot write %s\n", path);
        free(sf);
        return 1;
    }
    free(sf);
    return 0;
}

static int find(const struct stats_snapshot *s, const char (*names)[STATS_NAME_LEN], int n, const char *want)
{
    (void)s;
    for (int i = 0; i < n; i++)
        if (!strncmp(names[i], want, STATS_NAME_LEN)) return i;
    return -1;
}

static int report(const char *bpath, const char *apath)
{
    struct snapfile *b = calloc(1, sizeof(*b)), *a = calloc(1, sizeof(*a));
    FILE *fb = fopen(bpath, "rb"), *fa = fopen(apath, "rb");
    int rc = 0;

    if (!a || !b || !fb || !fa || fread(b, sizeof(*b), 1, fb) != 1 || fread(a, sizeof(*a), 1, fa) != 1) {
        fprintf(stderr, "gpu_bench report: cannot read %s / %s\n", bpath, apath);
        rc = 1;
        goto out;
    }
    /* the synth stages over the same window: busy share (work states / wall) */
    for (uint32_t i = 0; i < a->n; i++) {
        const struct stats_snapshot *A = &a->s[i], *B = NULL;
        uint64_t wa, wb;

        if (A->role != STATS_ROLE_SYNTH) continue;
        for (uint32_t j = 0; j < b->n; j++)
            if (b->s[j].role == A->role && b->s[j].index == A->index) B = &b->s[j];
        if (!B || B->generation != A->generation || A->wall_ns <= B->wall_ns) continue;
        wa = 0, wb = 0;
        for (int k = 0; k < STATS_MAX_STATES; k++)
            if (k != STATS_IDLE && k != STATS_WAIT_INPUT && k != STATS_WAIT_OUTPUT) {
                wa += A->state_ns[k];
                wb += B->state_ns[k];
            }
        printf("synth %u: busy %.1f%% of the window (work states)\n", A->index,
               100.0 * (double)(wa - wb) / (double)(A->wall_ns - B->wall_ns));
    }
    for (uint32_t i = 0; i < a->n; i++) {
        const struct stats_snapshot *A = &a->s[i], *B = NULL;
        int dv, dn, gap, pr, ntt, gb, cpu;
        double wall, dev, gsum;
        uint64_t cnt = 0, acc = 0, need50, need99, p50 = 0, p99 = 0, mx = 0;
        uint64_t dbk[STATS_HIST_BUCKETS];

        if (A->role != STATS_ROLE_GPUWORKER) continue;
        for (uint32_t j = 0; j < b->n; j++)
            if (b->s[j].role == A->role && b->s[j].index == A->index) B = &b->s[j];
        if (!B || B->generation != A->generation) {
            printf("worker %u: restarted during the run (generation %u -> %u): no figures\n", A->index,
                   B ? B->generation : 0, A->generation);
            rc = 1;
            continue;
        }
        dv = find(A, A->counter_names, STATS_MAX_COUNTERS, "lane_occupy_ns");
        gb = find(A, A->counter_names, STATS_MAX_COUNTERS, "gpu_busy_ns");
        cpu = find(A, A->gauge_names, STATS_MAX_GAUGES, "cpu_ns");
        dn = find(A, A->counter_names, STATS_MAX_COUNTERS, "parts_done");
        ntt = find(A, A->counter_names, STATS_MAX_COUNTERS, "ntt_ns");
        gap = find(A, A->hist_names, STATS_MAX_HISTS, "gap");
        pr = find(A, A->hist_names, STATS_MAX_HISTS, "prove");
        if (dv < 0 || gb < 0 || dn < 0 || gap < 0 || pr < 0 || ntt < 0) {
            printf("worker %u: counters gpu_busy_ns/lane_occupy_ns/parts_done/ntt_ns or hists gap/prove "
                   "missing\n",
                   A->index);
            rc = 1;
            continue;
        }
        wall = (double)(A->wall_ns - B->wall_ns);
        dev = (double)(A->counters[dv] - B->counters[dv]);
        /* kernels only: ntt + the five msm_*_ns counters, which follow ntt_ns's block */
        {
            double k = (double)(A->counters[ntt] - B->counters[ntt]);
            static const char *const m[] = { "msm_a_ns", "msm_b1_ns", "msm_b2_ns", "msm_c_ns", "msm_h_ns" };

            for (int q = 0; q < 5; q++) {
                int c = find(A, A->counter_names, STATS_MAX_COUNTERS, m[q]);

                if (c >= 0) k += (double)(A->counters[c] - B->counters[c]);
            }
            printf("worker %u: %llu partitions in %.3f s; gpu_busy (device events: first copy to last "
                   "D2H, union) %.1f%% of wall; in-flight occupancy (host clock) %.1f%%; kernels alone "
                   "(events, summed over in-flight threads) %.1f%%; cpu %.2f s\n",
                   A->index, (unsigned long long)(A->counters[dn] - B->counters[dn]), wall / 1e9,
                   100.0 * (double)(A->counters[gb] - B->counters[gb]) / wall, 100.0 * dev / wall,
                   100.0 * k / wall, cpu >= 0 ? (double)(A->gauges[cpu] - B->gauges[cpu]) * 1e-9 : 0.0);
        }
        for (int k = 0; k < STATS_HIST_BUCKETS; k++) {
            dbk[k] = A->hists[gap].bucket[k] - B->hists[gap].bucket[k];
            cnt += dbk[k];
        }
        gsum = (double)(A->hists[gap].sum_ns - B->hists[gap].sum_ns);
        printf("worker %u: gap histogram:", A->index);
        for (int k = 0; k < STATS_HIST_BUCKETS; k++)
            if (dbk[k])
                printf(" <%.3gus:%llu", k ? (double)(1ull << k) / 1e3 : 0.001, (unsigned long long)dbk[k]);
        printf("\n");
        need50 = (cnt + 1) / 2;
        need99 = cnt - cnt / 100;
        for (int k = 0; k < STATS_HIST_BUCKETS; k++) {
            uint64_t ub = k ? (k >= 63 ? UINT64_MAX : (1ull << k) - 1) : 0;

            acc += dbk[k];
            if (!p50 && acc >= need50 && cnt) p50 = ub ? ub : 1;
            if (!p99 && acc >= need99 && cnt) p99 = ub ? ub : 1;
            if (dbk[k]) mx = ub;
        }
        printf("worker %u: gaps (device idle between partitions; 0 while another was in "
               "flight): %llu, mean %.3f ms, p50 <= %.3f ms, p99 <= %.3f ms, max <= %.3f ms "
               "(log2 buckets)\n",
               A->index, (unsigned long long)cnt, cnt ? gsum / (double)cnt / 1e6 : 0.0,
               p50 == 1 ? 0.0 : (double)p50 / 1e6, p99 == 1 ? 0.0 : (double)p99 / 1e6, (double)mx / 1e6);
        {
            uint64_t pc = A->hists[pr].count - B->hists[pr].count;
            double ps = (double)(A->hists[pr].sum_ns - B->hists[pr].sum_ns);

            printf("worker %u: prove (submit to collect) mean %.3f ms over %llu\n", A->index,
                   pc ? ps / (double)pc / 1e6 : 0.0, (unsigned long long)pc);
        }
    }
out:
    if (fb) fclose(fb);
    if (fa) fclose(fa);
    free(a);
    free(b);
    return rc;
}

/* Host-to-device bandwidth: mib MiB from pinned memory (the pool's buffers are
 * registered, so a partition's copies run at this rate) and from malloc'd memory (what
 * gpu_msm_timed's copies see), best of reps after a warm-up. */
static int bench_h2d(gpu_dev *d, int reps, size_t mib)
{
    char err[512];

    for (int pinned = 1; pinned >= 0; pinned--) {
        double best = 0;

        for (int r = 0; r <= reps; r++) {
            double gbps = 0;

            if (gpu_h2d_bandwidth(d, mib << 20, pinned, &gbps, err, sizeof(err))) {
                fprintf(stderr, "gpu_bench: h2d %zu MiB: %s\n", mib, err);
                return 1;
            }
            if (r && gbps > best) best = gbps;
        }
        printf("h2d %s %zu MiB: %.1f GB/s (best of %d)\n", pinned ? "pinned" : "malloc", mib, best, reps);
        fflush(stdout);
    }
    return 0;
}

static int usage(void)
{
    fprintf(stderr,
            "usage: gpu_bench msm|ntt [--device N] [--reps R] [--coset] LG...\n"
            "       gpu_bench h2d [--device N] [--reps R] MIB\n"
            "       gpu_bench closed [--device N] LG|COUNT...   (COUNT: a number of points > 64)\n"
            "       gpu_bench probe                            (exit 0: a device; 77: none, why)\n"
            "       gpu_bench snap INSTANCE FILE | report BEFORE AFTER\n");
    return 2;
}

/* probe: one line, "device: N visible" (0) or "SKIP: <why, with the CUDA error name>" (77). */
static int probe(void)
{
    char why[512];
    int n = 0;

    if (gpu_device_probe(&n, why, sizeof(why))) {
        printf("SKIP: %s\n", why);
        return 77;
    }
    printf("device: %d CUDA device(s) visible\n", n);
    return 0;
}

int main(int argc, char **argv)
{
    size_t lg[16];
    unsigned lgu[16];
    int nlg = 0, device = 0, reps = 3, rc, i = 2, closed, h2d;
    gpu_dev *d = NULL;

    if (argc < 2) return usage();
    if (!strcmp(argv[1], "snap")) return argc == 4 ? snap(argv[2], argv[3]) : usage();
    if (!strcmp(argv[1], "report")) return argc == 4 ? report(argv[2], argv[3]) : usage();
    if (!strcmp(argv[1], "probe")) return argc == 2 ? probe() : usage();
    closed = !strcmp(argv[1], "closed");
    h2d = !strcmp(argv[1], "h2d");
    if (strcmp(argv[1], "msm") && strcmp(argv[1], "ntt") && !closed && !h2d) return usage();
    for (; i < argc; i++) {
        long long v = atoll(argv[i]);

        if (!strcmp(argv[i], "--device") && i + 1 < argc)
            device = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--g2-max") && i + 1 < argc)
            g2_max = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--coset"))
            coset = 1;
        else if (h2d && !nlg && v > 0 && v <= 16384)
            lg[nlg++] = (size_t)v;
        else if (nlg < 16 && v > 0 && v <= 28)
            lg[nlg] = (size_t)1 << v, lgu[nlg++] = (unsigned)v;
        else if (nlg < 16 && closed && v > 64 && v <= (1ll << 28))
            lg[nlg] = (size_t)v, lgu[nlg++] = 0;
        else
            return usage();
    }
    if (!nlg || reps < 1) return usage();
    if ((rc = open_dev(device, &d))) return rc;
    if (h2d) {
        rc = bench_h2d(d, reps, lg[0]);
    } else if (closed) {
        rc = 0;
        for (int k = 0; k < nlg; k++) rc |= closed_one(d, &G1_BN254, lg[k]);
        /* G2 at the smallest size given (its bases take 2.5x longer to generate) */
        rc |= closed_one(d, &G2_BN254, lg[0]);
    } else {
        rc = !strcmp(argv[1], "msm") ? bench_msm(d, reps, lgu, nlg) : bench_ntt(d, reps, lgu, nlg);
    }
    gpu_close(d);
    return rc;
}
