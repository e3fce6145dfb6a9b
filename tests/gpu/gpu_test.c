/* gpu_test.c — the CUDA kernels on a real GPU against the CPU backend (run by
 * bench/gpu-check.sh, never by make test).
 *
 *   gpu_test [--max-lg N] [--bench-lg N]... [--zkey F.zkey --wtns F.wtns]
 *
 *  1. MSM: gpu_msm against msm_run for G1 and G2 of BN254 and BLS12-381 at 2^10, 2^12,
 *     ... 2^max-lg (default 16) points, uniform scalars and witness-like ones (mostly
 *     0 and 1: one huge bucket), compared as group elements (ec_jac_eq).
 *  2. NTT: gpu_ntt forward / inverse / odd coset against ntt_forward / ntt_inverse /
 *     ntt_to_odd_coset at 2^1, 2^10, 2^11, 2^16 and 2^max-lg, bit for bit.
 *  3. With --zkey/--wtns: gpu_prove against groth16_compute (the five raw MSM results)
 *     for that circuit, from the same synthesized a, b, c.
 *  4. --bench-lg N (repeatable): G1 and G2 BN254 MSM and the NTT at 2^N, timed only
 *     (bases: 2^16 distinct points tiled; MSM cost does not depend on their distinctness).
 * Prints one line per check with its timing; exits 0 when all match, 1 on a mismatch or
 * error, 77 (SKIP) when there is no CUDA device. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zk/curve.h"
#include "shm/futex.h"
#include "zk/gpu.h"
#include "zk/groth16.h"
#include "zk/msm.h"
#include "zk/ntt.h"
#include "zk/wtns.h"
#include "zk/zkey.h"

#include "../unit/helper_test.h"
#include "base/os.h"

static int failures;

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "gpu_test: out of host memory (%zu bytes)\n", n);
        exit(1);
    }
    return p;
}

static void check_msm(gpu_dev *d, const curve_group *G, unsigned lg)
{
    static const char *const kinds[] = { "uniform scalars", "witness scalars", "infinity bases" };
    const size_t n = (size_t)1 << lg;
    uint64_t *bases = test_rand_points(G, n), *sc = xmalloc(n * 32);
    /* round 0 uniform, 1 witness-like scalars; round 2 uniform again with every third
     * base at infinity ((0,0) in the zkey layout: unused variables' bases are) */
    for (int wl = 0; wl < 3; wl++) {
        if (wl == 2)
            for (size_t i = 0; i < n; i += 3) memset(bases + i * 2 * ec_cl(G), 0, 2 * ec_cl(G) * 8);
        uint64_t want[EC_MAX_JAC], got[EC_MAX_JAC];
        char err[512] = "";
        double ms = 0;
        test_rand_scalars(G->Fr, sc, n, wl == 1 ? TEST_SCALARS_WITNESS : TEST_SCALARS_UNIFORM);
        double t0 = os_now_s();
        int rc = msm_run(G, want, (const uint8_t *)bases, (const uint8_t *)sc, n, 32, 0);
        double cpu = os_now_s() - t0;
        if (rc) {
            printf("FAIL msm %s 2^%u: CPU msm_run returned %d\n", G->name, lg, rc);
            failures++;
            continue;
        }
        rc = gpu_msm(d, G, got, (const uint8_t *)bases, (const uint8_t *)sc, n, &ms, err, sizeof err);
        if (rc) {
            printf("FAIL msm %s 2^%u %s: %s (rc %d)\n", G->name, lg, kinds[wl], err, rc);
            failures++;
            if (rc == -CUZK_E_DEVICE) exit(1);
            continue;
        }
        bool ok = ec_jac_eq(G, want, got);
        printf("%s msm %s 2^%u %s: gpu %.3f ms, cpu %.3f ms\n", ok ? "ok  " : "FAIL", G->name, lg, kinds[wl],
               ms, cpu * 1e3);
        if (!ok) failures++;
    }
    free(bases);
    free(sc);
}

static void check_ntt(gpu_dev *d, const field_desc *Fr, unsigned lg)
{
    const size_t n = (size_t)1 << lg;
    ntt_domain dom;
    if (ntt_domain_init(&dom, Fr, lg)) {
        printf("FAIL ntt %s 2^%u: ntt_domain_init\n", Fr->name, lg);
        failures++;
        return;
    }
    uint64_t *v = xmalloc(n * 32), *want = xmalloc(n * 32), *got = xmalloc(n * 32);
    for (size_t i = 0; i < n; i++) test_rand_scalar(Fr, v + 4 * i); /* < r: valid Montgomery limbs */
    static const char *const names[] = { "forward", "inverse", "odd-coset" };
    for (int op = 0; op < 3; op++) {
        char err[512] = "";
        double ms = 0;
        memcpy(want, v, n * 32);
        memcpy(got, v, n * 32);
        if (op == GPU_NTT_FORWARD)
            ntt_forward(&dom, want, 0);
        else if (op == GPU_NTT_INVERSE)
            ntt_inverse(&dom, want, 0);
        else
            ntt_to_odd_coset(&dom, want, 0);
        int rc = gpu_ntt(d, Fr, lg, got, op, &ms, err, sizeof err);
        if (rc) {
            printf("FAIL ntt %s %s 2^%u: %s (rc %d)\n", Fr->name, names[op], lg, err, rc);
            failures++;
            if (rc == -CUZK_E_DEVICE) exit(1);
            continue;
        }
        bool ok = memcmp(want, got, n * 32) == 0;
        printf("%s ntt %s %s 2^%u: gpu %.3f ms\n", ok ? "ok  " : "FAIL", Fr->name, names[op], lg, ms);
        if (!ok) failures++;
    }
    ntt_domain_free(&dom);
    free(v), free(want), free(got);
}

static void check_prove(gpu_dev *d, const char *zpath, const char *wpath)
{
    zkey z;
    wtns w;
    char err[512] = "";
    if (zkey_open(&z, zpath, err, sizeof err) || wtns_open(&w, wpath, err, sizeof err) ||
        wtns_check_zkey(&w, &z, err, sizeof err)) {
        printf("FAIL prove: %s\n", err);
        failures++;
        return;
    }
    const size_t n = z.domain_size, vb = n * 32;
    uint64_t *a = xmalloc(vb), *b = xmalloc(vb), *c = xmalloc(vb);
    uint64_t *a2 = xmalloc(vb), *b2 = xmalloc(vb), *c2 = xmalloc(vb);
    groth16_raw want, got;
    groth16_timings tc = { 0 }, tg = { 0 };
    memset(a, 0, vb), memset(b, 0, vb), memset(c, 0, vb);
    groth16_synth(&z, w.values, a, b, c, 0, NULL);
    memcpy(a2, a, vb), memcpy(b2, b, vb), memcpy(c2, c, vb);
    double t0 = os_now_s();
    int rc = groth16_compute(&z, w.values, a, b, c, &want, 0, &tc);
    double cpu = os_now_s() - t0;
    gpu_circuit *gc = NULL;
    t0 = os_now_s();
    if (rc == 0) rc = gpu_circuit_load(d, &z, &gc, err, sizeof err);
    double load = os_now_s() - t0;
    gpu_prove_times pt;
    memset(&pt, 0, sizeof pt);
    uint64_t h0 = os_now_ns();
    t0 = os_now_s();
    if (rc == 0) rc = gpu_prove(d, gc, &z, w.values, a2, b2, c2, NULL, NULL, &got, &tg, &pt, err, sizeof err);
    double gpu = os_now_s() - t0;
    uint64_t h1 = os_now_ns();
    double dev = pt.device_s;
    if (rc) {
        printf("FAIL prove %s: %s (rc %d)\n", zpath, err, rc);
        failures++;
    } else {
        bool ok = ec_jac_eq(z.g1, want.a, got.a) && ec_jac_eq(z.g1, want.b1, got.b1) &&
            ec_jac_eq(z.g2, want.b2, got.b2) && ec_jac_eq(z.g1, want.c, got.c) &&
            ec_jac_eq(z.g1, want.h, got.h);
        printf("%s prove %s (2^%u, %u vars): gpu %.3f s (device %.3f s; ntt %.3f, msm a %.3f b1 %.3f b2 %.3f "
               "c %.3f h %.3f), cpu %.3f s, circuit load %.3f s (%zu MiB)\n",
               ok ? "ok  " : "FAIL", zpath, z.lg_domain, z.nvars, gpu, dev, tg.ntt, tg.msm_a, tg.msm_b1,
               tg.msm_b2, tg.msm_c, tg.msm_h, cpu, load, gpu_circuit_bytes(gc) >> 20);
        if (!ok) failures++;
        /* the device span on the host clock: inside the call (the anchor is read a few
         * microseconds after its event; 1 ms of slack), each MSM's event pair positive */
        bool span = pt.begin_ns >= h0 && pt.end_ns > pt.begin_ns && pt.end_ns <= h1 + 1000000;
        for (int k = 0; k < 5; k++) span = span && pt.msm_kernel_s[k] > 0;
        printf(
            "%s prove timeline: span %.3f ms of the call's %.3f ms (starts %.3f ms in); msm kernels a %.3f "
            "b1 %.3f b2 %.3f c %.3f h %.3f ms; copies %.3f ms, ntt %.3f ms\n",
            span ? "ok  " : "FAIL", (double)(pt.end_ns - pt.begin_ns) / 1e6, (double)(h1 - h0) / 1e6,
            (double)(pt.begin_ns - h0) / 1e6, pt.msm_kernel_s[0] * 1e3, pt.msm_kernel_s[1] * 1e3,
            pt.msm_kernel_s[2] * 1e3, pt.msm_kernel_s[3] * 1e3, pt.msm_kernel_s[4] * 1e3, pt.copy_s * 1e3,
            pt.ntt_s * 1e3);
        if (!span) failures++;
    }
    gpu_circuit_free(d, gc);
    free(a), free(b), free(c), free(a2), free(b2), free(c2);
    wtns_close(&w);
    zkey_close(&z);
}

static void bench(gpu_dev *d, unsigned lg)
{
    const size_t n = (size_t)1 << lg, distinct = n < 65536 ? n : 65536;
    const curve_group *gs[] = { &G1_BN254, &G2_BN254 };
    for (int gi = 0; gi < 2; gi++) {
        const curve_group *G = gs[gi];
        const size_t pb = 2 * ec_cl(G) * 8;
        uint64_t *base = test_rand_points(G, distinct);
        uint8_t *bases = xmalloc(n * pb);
        uint64_t *sc = xmalloc(n * 32), r[EC_MAX_JAC];
        for (size_t i = 0; i < n; i += distinct) memcpy(bases + i * pb, base, distinct * pb);
        test_rand_scalars(G->Fr, sc, n, TEST_SCALARS_UNIFORM);
        char err[512] = "";
        double ms = 0;
        int rc = gpu_msm(d, G, r, bases, (const uint8_t *)sc, n, &ms, err, sizeof err);
        if (rc == 0) rc = gpu_msm(d, G, r, bases, (const uint8_t *)sc, n, &ms, err, sizeof err); /* warm */
        if (rc) {
            printf("FAIL bench msm %s 2^%u: %s\n", G->name, lg, err);
            failures++;
        } else {
            printf("bench msm %s 2^%u: %.3f ms, %.2f ns/point\n", G->name, lg, ms, ms * 1e6 / n);
        }
        free(base), free(bases), free(sc);
    }
    uint64_t *v = xmalloc(n * 32);
    for (size_t i = 0; i < n; i++) test_rand_scalar(&FIELD_BN254_FR, v + 4 * i);
    char err[512] = "";
    double ms = 0;
    int rc = gpu_ntt(d, &FIELD_BN254_FR, lg, v, GPU_NTT_FORWARD, &ms, err, sizeof err);
    if (rc == 0) rc = gpu_ntt(d, &FIELD_BN254_FR, lg, v, GPU_NTT_FORWARD, &ms, err, sizeof err);
    if (rc) {
        printf("FAIL bench ntt 2^%u: %s\n", lg, err);
        failures++;
    } else {
        printf("bench ntt bn254-fr forward 2^%u: %.3f ms (without copies)\n", lg, ms);
    }
    free(v);
}

int main(int argc, char **argv)
{
    unsigned max_lg = 16, bench_lgs[8], nbench = 0;
    const char *zpath = NULL, *wpath = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--max-lg") && i + 1 < argc)
            max_lg = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--bench-lg") && i + 1 < argc && nbench < 8)
            bench_lgs[nbench++] = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--zkey") && i + 1 < argc)
            zpath = argv[++i];
        else if (!strcmp(argv[i], "--wtns") && i + 1 < argc)
            wpath = argv[++i];
        else {
            fprintf(stderr, "usage: gpu_test [--max-lg N] [--bench-lg N]... [--zkey F --wtns W]\n");
            return 2;
        }
    }
    int ndev = 0;
    char why[512] = "";
    if (gpu_device_probe(&ndev, why, sizeof why)) {
        printf("SKIP: %s\n", why); /* names the CUDA error (a driver problem is no "no device") */
        return 77;
    }
    gpu_dev *d = NULL;
    char err[512] = "";
    if (gpu_open(0, &d, err, sizeof err)) {
        printf("FAIL gpu_open: %s\n", err);
        return 1;
    }
    const curve_group *groups[] = { &G1_BN254, &G2_BN254, &G1_BLS12_381, &G2_BLS12_381 };
    for (int gi = 0; gi < 4; gi++)
        for (unsigned lg = 10; lg <= max_lg; lg += 2) check_msm(d, groups[gi], lg);
    const field_desc *frs[] = { &FIELD_BN254_FR, &FIELD_BLS12_381_FR };
    const unsigned nlgs[] = { 1, 10, 11, 16, max_lg };
    for (int fi = 0; fi < 2; fi++)
        for (int li = 0; li < 5; li++)
            if (li < 4 || (max_lg != 16 && max_lg > 11)) check_ntt(d, frs[fi], nlgs[li]);
    if (zpath && wpath) check_prove(d, zpath, wpath);
    for (unsigned i = 0; i < nbench; i++) bench(d, bench_lgs[i]);
    gpu_close(d);
    printf("%s: %d failure%s\n", failures ? "FAIL" : "PASS", failures, failures == 1 ? "" : "s");
    return failures ? 1 : 0;
}
