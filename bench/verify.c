/* bench/verify.c — Groth16 verification time per proof, BN254 and BLS12-381, on the
 * reference snarkjs fixtures (key, proof and public signals already parsed), with its
 * parts: the proof point checks (G2 subgroup r·B), vk_x, the 4-pair Miller loop and
 * the final exponentiation; and on a prepared key (groth16_vk_prepare: what a daemon's
 * finalizer does once per key), the check and the preparation's own cost. Median of
 * VERIFY_BENCH_REPS runs (default 21) of the thread's CPU time, so that a loaded
 * machine's waits for a core are not counted.
 *   usage: verify [FIXTURES_DIR]   (default tests/fixtures/snarkjs-groth16, run
 *                                   from the repository root as bench/run.sh does) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zk/pairing.h"
#include "zk/verify.h"

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#define MAX_REPS 1001

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Median of reps timings of what(ctx). */
typedef void (*bench_fn)(void *ctx);
static double median_ms(bench_fn what, void *ctx, int reps)
{
    double t[MAX_REPS];
    for (int i = 0; i < reps; i++) {
        double t0 = cpu_s();
        what(ctx);
        t[i] = (cpu_s() - t0) * 1e3;
    }
    qsort(t, (size_t)reps, sizeof t[0], cmp_d);
    return t[reps / 2];
}

typedef struct ctx {
    groth16_vk vk, vkp; /* vkp: prepared */
    groth16_proof proof;
    uint64_t *pub;
    const pairing_params *pp;
    uint64_t f[FQ12_MAX_LIMBS];
    const uint64_t *g1[4], *g2[4];
    uint64_t na[EC_MAX_AFF];
    bool ok;
    const char *vkpath;
} ctx;

static void run_verify(void *p)
{
    ctx *c = p;
    char err[256];
    bool valid = false;
    c->ok =
        groth16_verify_proof(&c->vk, &c->proof, c->pub, c->vk.npublic, &valid, err, sizeof err) == 0 && valid;
}

static void run_verify_prepared(void *p)
{
    ctx *c = p;
    char err[256];
    bool valid = false;
    c->ok = groth16_verify_proof(&c->vkp, &c->proof, c->pub, c->vkp.npublic, &valid, err, sizeof err) == 0 &&
        valid;
}

static void run_prepare(void *p)
{
    ctx *c = p;
    groth16_vk_free(&c->vkp);
    char err[256];
    c->ok =
        groth16_vk_from_json(&c->vkp, c->vkpath, err, sizeof err) == 0 && groth16_vk_prepare(&c->vkp) == 0;
}

static void run_subgroup(void *p)
{
    ctx *c = p;
    c->ok = pairing_in_subgroup(c->vk.g2, c->proof.b);
}

static void run_miller(void *p)
{
    ctx *c = p;
    pairing_miller_loop(c->pp, c->f, c->g1, c->g2, 4);
}

static void run_final_exp(void *p)
{
    ctx *c = p;
    uint64_t r[FQ12_MAX_LIMBS];
    pairing_final_exp(c->pp, r, c->f);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "tests/fixtures/snarkjs-groth16";
    const char *env = getenv("VERIFY_BENCH_REPS");
    int reps = env ? atoi(env) : 21;
    if (reps < 1) reps = 1;
    if (reps > MAX_REPS) reps = MAX_REPS;
    static const char *const fixtures[] = { "bn128", "bls12381" };
    printf("verify: ms per proof, median of %d, one thread (key and proof parsed beforehand)\n", reps);
    printf("%-10s %8s %10s %10s %10s %10s %10s %10s\n", "curve", "verify", "r*B check", "miller(4)",
           "final exp", "prepared", "prepare*", "nPublic");
    int failed = 0;
    for (size_t i = 0; i < sizeof fixtures / sizeof fixtures[0]; i++) {
        char vkp[4096], pubp[4096], prp[4096], err[1024];
        snprintf(vkp, sizeof vkp, "%s/%s/verification_key.json", dir, fixtures[i]);
        snprintf(pubp, sizeof pubp, "%s/%s/public_snarkjs.json", dir, fixtures[i]);
        snprintf(prp, sizeof prp, "%s/%s/proof_snarkjs.json", dir, fixtures[i]);
        ctx *c = calloc(1, sizeof *c);
        if (!c || groth16_vk_from_json(&c->vk, vkp, err, sizeof err) ||
            groth16_public_from_json(&c->vk, &c->pub, pubp, err, sizeof err) ||
            groth16_proof_from_json(&c->vk, &c->proof, prp, err, sizeof err)) {
            printf("%-10s skipped: %s\n", fixtures[i], c ? err : "out of memory");
            failed = 1;
            if (c) groth16_vk_free(&c->vk);
            free(c);
            continue;
        }
        c->pp = pairing_params_get(c->vk.Fq);
        ec_aff_neg(c->vk.g1, c->na, c->proof.a);
        /* the Miller loop's inputs as in a verification (vk_x replaced by IC[0]: the
         * cost is the same) */
        const uint64_t *g1[4] = { c->na, c->vk.alpha1, c->vk.ic, c->proof.c };
        const uint64_t *g2[4] = { c->proof.b, c->vk.beta2, c->vk.gamma2, c->vk.delta2 };
        memcpy(c->g1, g1, sizeof g1);
        memcpy(c->g2, g2, sizeof g2);
        run_verify(c); /* warm-up, and builds the pairing parameters */
        if (!c->ok) {
            printf("%-10s the fixture's proof does not verify\n", fixtures[i]);
            failed = 1;
        }
        c->vkpath = vkp;
        run_prepare(c);
        run_verify_prepared(c);
        if (!c->ok) {
            printf("%-10s the fixture's proof does not verify on a prepared key\n", fixtures[i]);
            failed = 1;
        }
        double tp = median_ms(run_verify_prepared, c, reps);
        double tk = median_ms(run_prepare, c, reps);
        double tv = median_ms(run_verify, c, reps);
        double ts = median_ms(run_subgroup, c, reps);
        double tm = median_ms(run_miller, c, reps);
        double tf = median_ms(run_final_exp, c, reps);
        printf("%-10s %8.2f %10.2f %10.2f %10.2f %10.2f %10.2f %10u\n", fixtures[i], tv, ts, tm, tf, tp, tk,
               c->vk.npublic);
        free(c->pub);
        groth16_vk_free(&c->vk);
        groth16_vk_free(&c->vkp);
        free(c);
    }
    printf("(prepare*: reading verification_key.json included)\n");
    return failed;
}
