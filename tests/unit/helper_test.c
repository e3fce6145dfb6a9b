/* helper_test.c — shared unit-test helpers (see helper_test.h). */
#include "helper_test.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

void test_rng_seed(uint64_t seed)
{
    rng_state = seed;
}

uint64_t test_rng64(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void test_rand_scalar(const field_desc *Fr, uint64_t k[4])
{
    for (;;) {
        for (int i = 0; i < 4; i++) k[i] = test_rng64();
        k[3] &= (UINT64_C(1) << (Fr->bits - 192)) - 1;
        if (fe_is_reduced(Fr, k)) return;
    }
}

void test_rand_scalars(const field_desc *Fr, uint64_t *s, size_t n, enum test_scalars kind)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t *k = s + 4 * i;

        memset(k, kind == TEST_SCALARS_ONES ? 0xff : 0, 32);
        if (kind == TEST_SCALARS_ONES) continue;
        /* uniform, or one of the witness-like mix (x out of 16) */
        uint64_t x = kind == TEST_SCALARS_WITNESS ? test_rng64() % 16 : 15;
        if (x < 6)
            k[0] = 0;
        else if (x < 13)
            k[0] = 1;
        else if (x == 13)
            memcpy(k, Fr->p, 32), k[0] -= 1;
        else if (x == 14)
            k[0] = test_rng64() % 1000;
        else
            test_rand_scalar(Fr, k);
    }
}

static void *alloc_or_die(size_t n)
{
    void *p = malloc(n ? n : 1);

    if (!p) {
        fprintf(stderr, "helper_test: out of memory (%zu bytes)\n", n);
        abort();
    }
    return p;
}

void test_rand_distinct(uint32_t *out, size_t k, size_t n)
{
    uint32_t *perm = alloc_or_die(n * sizeof *perm);

    for (size_t i = 0; i < n; i++) perm[i] = (uint32_t)i;
    for (size_t i = 0; i < k; i++) { /* Fisher-Yates, stopped after k places */
        size_t c = i + test_rng64() % (n - i);
        out[i] = perm[c];
        perm[c] = perm[i];
    }
    free(perm);
}

uint64_t *test_rand_points(const curve_group *G, size_t n)
{
    const unsigned cl = ec_cl(G);
    uint64_t g[EC_MAX_JAC], p[EC_MAX_JAC], step[EC_MAX_JAC], k[4];
    uint64_t *jac = alloc_or_die(n * 3 * cl * 8), *aff = alloc_or_die(n * 2 * cl * 8);

    ec_jac_from_aff(G, g, G->gen);
    test_rand_scalar(G->Fr, k);
    ec_jac_mul_scalar(G, p, g, k, 4);
    test_rand_scalar(G->Fr, k);
    ec_jac_mul_scalar(G, step, g, k, 4);
    for (size_t i = 0; i < n; i++) {
        memcpy(jac + i * 3 * cl, p, 3 * cl * 8);
        ec_add(G, p, p, step);
    }
    if (ec_batch_to_aff(G, aff, jac, n)) {
        fprintf(stderr, "helper_test: ec_batch_to_aff: out of memory\n");
        abort();
    }
    free(jac);
    return aff;
}

void test_ref_fixture(char *dst, size_t len, const char *set, const char *file)
{
    static char dir[PATH_MAX];

    if (!dir[0]) {
        const char *env = getenv("CUZK_REF_FIXTURES");
        char exe[PATH_MAX];
        ssize_t n;

        if (env && *env) {
            snprintf(dir, sizeof dir, "%s", env);
        } else if ((n = readlink("/proc/self/exe", exe, sizeof exe - 1)) > 0) {
            /* <repo>/<build>/tests/test_x -> <repo>/tests/fixtures/snarkjs-groth16, so a
             * test binary finds its fixtures from any working directory. */
            exe[n] = 0;
            snprintf(dir, sizeof dir, "%s/tests/fixtures/snarkjs-groth16", dirname(dirname(dirname(exe))));
        }
        if (!dir[0] || access(dir, R_OK | X_OK) != 0)
            snprintf(dir, sizeof dir, "tests/fixtures/snarkjs-groth16");
    }
    snprintf(dst, len, "%s/%s/%s", dir, set, file);
}

/* What TEST registered before main: a program's tests fit in a fixed table. */
#define TEST_MAX 64
static struct test_case registered[TEST_MAX];
static size_t n_registered;

void test_register(const char *tcase, const TTest *t, int loops)
{
    if (n_registered == TEST_MAX) {
        fprintf(stderr, "helper_test: more than %d TESTs in one program: raise TEST_MAX\n", TEST_MAX);
        abort();
    }
    registered[n_registered++] = (struct test_case){ tcase, t, loops };
}

/* Constructors run in an order C does not promise: the source line decides. */
static int by_line(const void *a, const void *b)
{
    const struct test_case *x = a, *y = b;

    return (x->fn->line > y->fn->line) - (x->fn->line < y->fn->line);
}

int test_main(const char *suite, const struct test_opts *o)
{
    qsort(registered, n_registered, sizeof(registered[0]), by_line);
    return test_run_cases(suite, registered, n_registered, o);
}

int test_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

int test_run_cases(const char *suite, const struct test_case *cases, size_t n, const struct test_opts *o)
{
    Suite *s = suite_create(suite);

    for (size_t i = 0; i < n; i++) {
        if (o && o->leave_out && !strcmp(cases[i].name, o->leave_out)) continue;
        TCase *tc = tcase_create(cases[i].name);

        if (o && (o->setup || o->teardown)) tcase_add_checked_fixture(tc, o->setup, o->teardown);
        if (o && o->timeout > 0) tcase_set_timeout(tc, o->timeout);
        tcase_add_loop_test(tc, cases[i].fn, 0, cases[i].loops > 0 ? cases[i].loops : 1);
        suite_add_tcase(s, tc);
    }
    return test_run(s);
}

int test_run_suite(const char *suite, const struct test_case *cases, size_t n, double timeout)
{
    const struct test_opts o = { .timeout = timeout };

    return test_run_cases(suite, cases, n, &o);
}

char test_tmp[64], test_db[128];

void test_tmpdir_setup(void)
{
    snprintf(test_tmp, sizeof(test_tmp), "/tmp/cuzk-test-%.24s-XXXXXX", program_invocation_short_name);
    ck_assert_ptr_nonnull(mkdtemp(test_tmp));
    snprintf(test_db, sizeof(test_db), "%s/t.db", test_tmp);
}

void test_tmpdir_teardown(void)
{
    char cmd[160];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", test_tmp);
    ck_assert_int_eq(system(cmd), 0);
}
