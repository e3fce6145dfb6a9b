/* field.c — ns per Montgomery product, portable C vs mulx/adcx/adox.
 *
 *   field [--iters N]
 *
 * One row per operation: the product of each field, the BLS12-381 Fq square (its own
 * mulx code: 57 mulx against the product's 72) and the Fq2 products (lazy Karatsuba
 * with mulx). Two loops each: a dependent chain x = x*y (latency, what a curve formula
 * mostly sees) and 8 independent chains interleaved (throughput). Best of 5 runs in
 * thread CPU time: on the shared 2-core dev box wall time moved by 2x between runs,
 * and load only ever adds time. The last column is C chain / mulx chain. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zk/field.h"

enum op { OP_MUL, OP_SQR, OP_FQ2_MUL };

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

/* x = x op y, the op chosen outside the timed loop's body by the compiler (op is
 * loop-invariant and each case is a direct call). */
static inline void apply(const field_desc *F, enum op op, uint64_t *x, const uint64_t *y)
{
    switch (op) {
    case OP_MUL: FIELD_DISPATCH(F, fe_mul, x, x, y); break;
    case OP_SQR: FIELD_DISPATCH(F, fe_sqr, x, x); break;
    case OP_FQ2_MUL: FIELD_DISPATCH(F, fe2_mul, x, x, y); break;
    }
}

static void run_chain(const field_desc *F, enum op op, uint64_t *x, const uint64_t *y, long iters)
{
    for (long i = 0; i < iters; i++) apply(F, op, x, y);
}

static void run_par(const field_desc *F, enum op op, uint64_t (*x)[2 * FE_MAX_LIMBS], const uint64_t *y,
                    long iters)
{
    for (long i = 0; i < iters; i += 8)
        for (int k = 0; k < 8; k++) apply(F, op, x[k], y);
}

static double best_ns(const field_desc *F, enum op op, int par, long iters)
{
    double t[5];
    uint64_t y[2 * FE_MAX_LIMBS], x[8][2 * FE_MAX_LIMBS];
    fe_copy(F, y, F->r2);
    fe_copy(F, y + F->n, F->one);
    for (int k = 0; k < 8; k++) {
        fe_copy(F, x[k], F->one);
        fe_copy(F, x[k] + F->n, F->r2);
        x[k][0] ^= (uint64_t)k;
    }
    for (int r = 0; r < 5; r++) {
        double t0 = now_s();
        if (par)
            run_par(F, op, x, y, iters);
        else
            run_chain(F, op, x[0], y, iters);
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
    const struct {
        const field_desc *F;
        enum op op;
        const char *what;
        long div; /* the Fq2 rows run fewer iterations: 3 products each */
    } rows[] = {
        { &FIELD_BN254_FQ, OP_MUL, "mul", 1 },
        { &FIELD_BN254_FR, OP_MUL, "mul", 1 },
        { &FIELD_BLS12_381_FQ, OP_MUL, "mul", 1 },
        { &FIELD_BLS12_381_FR, OP_MUL, "mul", 1 },
        { &FIELD_BLS12_381_FQ, OP_SQR, "sqr", 1 },
        { &FIELD_BN254_FQ, OP_FQ2_MUL, "fq2 mul", 3 },
        { &FIELD_BLS12_381_FQ, OP_FQ2_MUL, "fq2 mul", 3 },
    };
    printf("Montgomery product, ns (best of 5; mulx: %s)\n", fe_cpu_has_mulx() ? "available" : "absent");
    printf("%-14s %-8s %10s %10s %10s %10s %8s\n", "field", "op", "C chain", "C 8-way", "mulx chain",
           "mulx 8-way", "C/mulx");
    for (unsigned i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        double v[4];
        long it = iters / rows[i].div / 8 * 8;
        for (int m = 0; m < 2; m++) {
            bool was = fe_set_mulx(m == 1);
            v[2 * m] = best_ns(rows[i].F, rows[i].op, 0, it);
            v[2 * m + 1] = best_ns(rows[i].F, rows[i].op, 1, it);
            fe_set_mulx(was);
        }
        printf("%-14s %-8s %10.1f %10.1f %10.1f %10.1f %8.2f\n", rows[i].F->name, rows[i].what, v[0], v[1],
               v[2], v[3], v[0] / v[2]);
    }
    return 0;
}
