/* ifma.c — BN254 Fq products: scalar fe_mul (mulx) against 8 AVX-512 IFMA lanes, and
 * the MSM's batch-affine bucket addition both ways.
 *
 *   ifma [--reps N]
 *
 * (a) fe_mul: a dependent chain x = x·y, and 8 independent chains interleaved;
 * (b) IFMA: ifma_fq8_mul_n over 64 blocks (512 independent products, in L1), a
 *     dependent chain of 8-lane products, and ifma_fq_mul_aos (the same products with
 *     the field.h <-> lane layout changes and the 2^4 scalings included);
 * (c) B independent affine additions into B distinct buckets out of 4B (msm.c takes
 *     batches of a quarter of the buckets), random points of G1 and G2: the scalar
 *     flush of msm.c (ifma_batch_add_ref) against the lanes (ifma_batch_add); both
 *     results are checked against the jacobian mixed addition ec_add_aff. Both take
 *     their one inversion from GMP's gcd, so the ratio is that of the products alone;
 * (d) the same on BLS12-381.
 * Best of N runs in thread CPU time (the dev box is shared; load only adds time). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zk/curve.h"
#include "zk/field.h"
#include "zk/ifma.h"

static const field_desc *const F = &FIELD_BN254_FQ;
static int reps = 7;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t rng = 0x1234567;
static uint64_t rnd(void)
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static void rnd_elem(uint64_t a[4])
{
    do {
        for (int i = 0; i < 4; i++) a[i] = rnd();
        a[3] &= (UINT64_C(1) << 62) - 1;
    } while (!fe_is_reduced(F, a));
}

#define BEST(var, body)                     \
    do {                                    \
        var = 1e30;                         \
        for (int r_ = 0; r_ < reps; r_++) { \
            double t0_ = now_s();           \
            body;                           \
            double t_ = now_s() - t0_;      \
            if (t_ < var) var = t_;         \
        }                                   \
    } while (0)

static void bench_products(void)
{
    const long iters = 1000000;
    uint64_t x[8][4], y[4];
    double t;
    rnd_elem(y);
    for (int k = 0; k < 8; k++) rnd_elem(x[k]);
    printf("(a) scalar fe_mul (mulx: %s)\n", fe_cpu_has_mulx() ? "yes" : "no");
    BEST(t, for (long i = 0; i < iters; i++) fe_mul(F, x[0], x[0], y));
    printf("    dependent chain        %7.2f ns/product\n", t * 1e9 / (double)iters);
    BEST(t, for (long i = 0; i < iters; i += 8) for (int k = 0; k < 8; k++) fe_mul(F, x[k], x[k], y));
    printf("    8 independent chains   %7.2f ns/product\n", t * 1e9 / (double)iters);
    if (!ifma_available()) {
        printf("(b) IFMA: not available on this CPU (or CUZK_NO_IFMA=1): skipped\n");
        return;
    }
    enum { NB = 64 };
    ifma_fq8 *a = aligned_alloc(64, NB * sizeof *a), *b = aligned_alloc(64, NB * sizeof *b);
    uint64_t *aos = malloc(NB * 8 * 4 * 8), *bos = malloc(NB * 8 * 4 * 8), *ros = malloc(NB * 8 * 4 * 8);
    if (!a || !b || !aos || !bos || !ros) abort();
    for (int i = 0; i < NB * 8; i++) {
        rnd_elem(aos + 4 * i);
        rnd_elem(bos + 4 * i);
    }
    for (int k = 0; k < NB; k++) {
        ifma_fq8_load(a + k, aos + 32 * k);
        ifma_fq8_load(b + k, bos + 32 * k);
    }
    const long rounds = iters / (8 * NB);
    printf("(b) IFMA, 8 lanes of 52-bit limbs\n");
    BEST(t, for (long i = 0; i < rounds; i++) ifma_fq8_mul_n(a, a, b, NB));
    printf("    independent, lanes     %7.2f ns/product  (%d blocks of 8 in L1)\n",
           t * 1e9 / (double)(rounds * 8 * NB), NB);
    BEST(t, for (long i = 0; i < iters / 8; i++) ifma_fq8_mul(a, a, b));
    printf("    dependent chain        %7.2f ns/product  (%.1f ns per 8-lane product)\n",
           t * 1e9 / (double)iters, t * 8e9 / (double)iters);
    BEST(t, for (long i = 0; i < rounds; i++) ifma_fq_mul_aos(ros, aos, bos, NB * 8));
    printf("    with layout changes    %7.2f ns/product  (field.h form in and out)\n",
           t * 1e9 / (double)(rounds * 8 * NB));
    volatile uint64_t sink = a[0].l[0][0] ^ x[3][0] ^ ros[5];
    (void)sink;
    free(a);
    free(b);
    free(aos);
    free(bos);
    free(ros);
}

/* n affine points k0 G + i k1 G of group G (one shared inversion). */
static uint64_t *points(const curve_group *G, size_t n)
{
    const unsigned cl = ec_cl(G);
    uint64_t k[4] = { rnd(), rnd(), rnd(), rnd() >> 4 }, q[EC_MAX_JAC], s[EC_MAX_JAC], gj[EC_MAX_JAC];
    uint64_t *jac = malloc(n * 3 * cl * 8), *aff = malloc(n * 2 * cl * 8);
    if (!jac || !aff) abort();
    ec_jac_from_aff(G, gj, G->gen);
    ec_jac_mul_scalar(G, q, gj, k, 4);
    k[0] = rnd();
    ec_jac_mul_scalar(G, s, gj, k, 4);
    for (size_t i = 0; i < n; i++) {
        memcpy(jac + 3 * cl * i, q, 3 * cl * 8);
        ec_add(G, q, q, s);
    }
    if (ec_batch_to_aff(G, aff, jac, n)) abort();
    free(jac);
    return aff;
}

static int bench_batch(const curve_group *G, size_t B)
{
    const size_t nb = 4 * B, al = 2 * ec_cl(G), pb = al * 8;
    uint64_t *pts = points(G, B + nb), *bp = pts, *A0 = pts + al * B;
    uint64_t *A = malloc(nb * pb), *want = malloc(nb * pb);
    uint32_t *bb = malloc(B * sizeof *bb), *perm = malloc(nb * sizeof *perm);
    void *scratch = aligned_alloc(64, ifma_batch_scratch_bytes(G, B));
    if (!A || !want || !bb || !perm || !scratch) abort();
    for (size_t i = 0; i < nb; i++) perm[i] = (uint32_t)i;
    for (size_t i = nb; i-- > 1;) {
        size_t c = rnd() % (i + 1);
        uint32_t t = perm[i];
        perm[i] = perm[c];
        perm[c] = t;
    }
    memcpy(bb, perm, B * sizeof *bb);
    /* the reference: one jacobian mixed addition per bucket */
    memcpy(want, A0, nb * pb);
    for (size_t i = 0; i < B; i++) {
        uint64_t j[EC_MAX_JAC], *Bk = want + al * (size_t)bb[i];
        ec_jac_from_aff(G, j, Bk);
        ec_add_aff(G, j, j, bp + al * i);
        ec_jac_to_aff(G, Bk, j);
    }
    int bad = 0;
    double tr = 1e30, ti = 1e30;
    for (int form = 0; form < 2; form++) {
        if (form == 1 && !ifma_available()) break;
        for (int r = 0; r < reps; r++) {
            memcpy(A, A0, nb * pb);
            double t0 = now_s();
            if (form == 0)
                ifma_batch_add_ref(G, A, bb, bp, B, scratch);
            else
                ifma_batch_add(G, A, bb, bp, B, scratch);
            double t = now_s() - t0;
            if (memcmp(A, want, nb * pb) != 0) bad = 1;
            if (form == 0 && t < tr) tr = t;
            if (form == 1 && t < ti) ti = t;
        }
    }
    if (ti < 1e30)
        printf("    %s B = %4zu   scalar %7.1f   IFMA %7.1f ns/addition   (%.2fx)%s\n", G->name, B,
               tr * 1e9 / (double)B, ti * 1e9 / (double)B, tr / ti, bad ? "   RESULTS WRONG" : "");
    else
        printf("    %s B = %4zu   scalar %7.1f ns/addition   (IFMA not available)%s\n", G->name, B,
               tr * 1e9 / (double)B, bad ? "   RESULTS WRONG" : "");
    free(pts);
    free(A);
    free(want);
    free(bb);
    free(perm);
    free(scratch);
    return bad;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--reps") == 0) reps = atoi(argv[2]);
    if (reps < 1) reps = 1;
    printf("BN254 Fq, best of %d, thread CPU time\n", reps);
    bench_products();
    uint64_t a[4], r[4];
    double t;
    rnd_elem(a);
    BEST(t, fe_inv(F, r, a));
    printf("    one inversion: fe_inv  %7.0f ns", t * 1e9);
    BEST(t, ifma_fq_inv(r, a));
    printf(", ifma_fq_inv (GMP gcd) %.0f ns (the batches below use the latter, both ways)\n", t * 1e9);
    printf("(c) batch-affine additions, B into distinct buckets of 4B (results checked against ec_add_aff);\n"
           "    G2: scalar fe2_mul (lazy mulx Karatsuba) against the Fq2 lanes\n");
    int bad = 0;
    for (size_t B = 512; B <= 2048; B *= 2) bad |= bench_batch(&G1_BN254, B);
    for (size_t B = 512; B <= 2048; B *= 2) bad |= bench_batch(&G2_BN254, B);
    printf("(d) the same on BLS12-381 (zk/ifma381.c: 8 limbs of 52 bits; scalar: 6-limb mulx)\n");
    for (size_t B = 256; B <= 1024; B *= 2) bad |= bench_batch(&G1_BLS12_381, B);
    for (size_t B = 256; B <= 1024; B *= 2) bad |= bench_batch(&G2_BLS12_381, B);
    return bad ? EXIT_FAILURE : EXIT_SUCCESS;
}
