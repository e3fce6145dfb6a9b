/* field.c — ns per Montgomery product, portable C vs mulx/adcx/adox.
 *
 *   field [--iters N]
 *
 * Two loops per field: a dependent chain x = x*y (latency, what a curve formula
 * mostly sees) and 8 independent chains interleaved (throughput). Best of 5 runs in
 * thread CPU time: on the shared 2-core dev box wall time moved by 2x between runs,
 * and load only ever adds time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuzk/field.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); /* CPU time: the dev box is shared */
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void run_chain(const field_desc *F, uint64_t *x, const uint64_t *y, long iters)
{
    for (long i = 0; i < iters; i++) FIELD_DISPATCH(F, fe_mul, x, x, y);
}

static void run_par(const field_desc *F, uint64_t (*x)[FE_MAX_LIMBS], const uint64_t *y, long iters)
{
    for (long i = 0; i < iters; i += 8)
        for (int k = 0; k < 8; k++) FIELD_DISPATCH(F, fe_mul, x[k], x[k], y);
}

static double median_ns(const field_desc *F, int par, long iters)
{
    double t[5];
    uint64_t y[FE_MAX_LIMBS], x[8][FE_MAX_LIMBS];
    fe_copy(F, y, F->r2);
    for (int k = 0; k < 8; k++) {
        fe_copy(F, x[k], F->one);
        x[k][0] ^= (uint64_t)k;
    }
    for (int r = 0; r < 5; r++) {
        double t0 = now_s();
        if (par) run_par(F, x, y, iters);
        else run_chain(F, x[0], y, iters);
        t[r] = (now_s() - t0) * 1e9 / (double)iters;
    }
    qsort(t, 5, sizeof t[0], cmp_d);
    volatile uint64_t sink = x[0][0] ^ x[7][0];
    (void)sink;
    return t[0];
}

int main(int argc, char **argv)
{
    long iters = 2000000;
    if (argc == 3 && strcmp(argv[1], "--iters") == 0) iters = atol(argv[2]);
    const field_desc *fs[] = {&FIELD_BN254_FQ, &FIELD_BN254_FR, &FIELD_BLS12_381_FQ, &FIELD_BLS12_381_FR};
    printf("Montgomery product, ns (best of 5; mulx: %s)\n", fe_cpu_has_mulx() ? "available" : "absent");
    printf("%-14s %10s %10s %10s %10s\n", "field", "C chain", "C 8-way", "mulx chain", "mulx 8-way");
    for (unsigned i = 0; i < sizeof fs / sizeof fs[0]; i++) {
        double v[4];
        for (int m = 0; m < 2; m++) {
            bool was = fe_set_mulx(m == 1);
            v[2 * m] = median_ns(fs[i], 0, iters);
            v[2 * m + 1] = median_ns(fs[i], 1, iters);
            fe_set_mulx(was);
        }
        printf("%-14s %10.1f %10.1f %10.1f %10.1f\n", fs[i]->name, v[0], v[1], v[2], v[3]);
    }
    return 0;
}
