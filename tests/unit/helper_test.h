/* helper_test.h — what several unit-test programs share (tests/unit/helper_test.c is
 * linked into every test program by the Makefile): deterministic randomness, tests
 * that register themselves (TEST) and the "cases -> suite -> run" main. */
#ifndef CUZK_TEST_HELPER_H
#define CUZK_TEST_HELPER_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

#include "zk/curve.h"
#include "zk/field.h"

/* splitmix64; each program seeds it once so its sequence is its own and repeatable. */
void test_rng_seed(uint64_t seed);
uint64_t test_rng64(void);

/* A uniform random scalar k < r of the given scalar field (4 limbs, canonical),
 * by rejection below r's bit length. */
void test_rand_scalar(const field_desc *Fr, uint64_t k[4]);

/* out[0..k) = k distinct values below n (k <= n) in random order: the head of a random
 * permutation of 0..n-1. Aborts when memory runs out. */
void test_rand_distinct(uint32_t *out, size_t k, size_t n);

/* What test_rand_scalars draws: uniform scalars < r; witness-like ones (mostly 0 and
 * 1, which pile into one bucket of an MSM, some r - 1, small and uniform ones); or
 * all 2^256 - 1 (beyond r: every window digit nonzero, the top carry). */
enum test_scalars { TEST_SCALARS_UNIFORM, TEST_SCALARS_WITNESS, TEST_SCALARS_ONES };

/* n scalars of the field Fr (4 limbs each) of the given kind. */
void test_rand_scalars(const field_desc *Fr, uint64_t *s, size_t n, enum test_scalars kind);

/* n affine points of G, malloc'd (2·cl limbs each): the consecutive multiples
 * (k0 + i·k1)·G for random k0, k1, so distinct; one addition a point and one batch
 * inversion. Aborts when memory runs out. */
uint64_t *test_rand_points(const curve_group *G, size_t n);

/* dst = the reference fixture file FILE of set SET ("bn128", "bn128-chain", ...), made
 * by snarkjs and committed in tests/fixtures/snarkjs-groth16/ (make_reference.sh there
 * says how): under $CUZK_REF_FIXTURES if set, else found from this binary's place in
 * the build tree, else relative to the working directory. */
void test_ref_fixture(char *dst, size_t len, const char *set, const char *file);

/* A Check fixture for the tests that need files (.setup / .teardown of test_opts): a
 * fresh directory /tmp/cuzk-test-PROGRAM-XXXXXX in test_tmp before each case, removed
 * with all it holds after; test_db names the SQLite file t.db in it. */
extern char test_tmp[64], test_db[128];
void test_tmpdir_setup(void);
void test_tmpdir_teardown(void);

/* One test case run `loops` times (Check's loop tests: _i = 0 .. loops-1); a table
 * written { name, fn } (loops 0) runs it once. */
struct test_case {
    const char *name;
    const TTest *fn;
    int loops;
};

/* What every tcase of a table shares: a checked fixture (either may be NULL), a
 * timeout in seconds (0: Check's default, or CK_DEFAULT_TIMEOUT), and one case to
 * leave out (its name; NULL: none), for a case that cannot run in this build (the
 * caller says why). */
struct test_opts {
    SFun setup, teardown;
    double timeout;
    const char *leave_out;
};

/* Run suite s (and free it); return the process exit status (EXIT_SUCCESS when
 * nothing failed). The one place a unit-test main turns Check's count into a status. */
int test_run(Suite *s);

/* Build a suite with one tcase per case, named after it (CK_RUN_CASE picks one), with
 * the shared options o (NULL: none), run it, and return test_run's status. */
int test_run_cases(const char *suite, const struct test_case *cases, size_t n, const struct test_opts *o);

/* test_run_cases with only a timeout. */
int test_run_suite(const char *suite, const struct test_case *cases, size_t n, double timeout);

/* TEST(fn, loops) { body } END_TEST: Check's START_TEST (the body sees the loop index
 * _i = 0 .. loops-1; fn##_fn is the body's function) that also registers the test,
 * before main, as the tcase named fn of this program's test_main; TEST_AS names the
 * tcase otherwise (a name a script picks with CK_RUN_CASE). A test is written in one
 * place: there is no second list of cases to keep in step with the definitions. */
#define TEST_AS(tcase, fn, loops)                                         \
    static void fn##_fn(int _i);                                          \
    static const TTest fn##_ttest = { #fn, fn##_fn, __FILE__, __LINE__ }; \
    __attribute__((constructor)) static void fn##_register(void)          \
    {                                                                     \
        test_register(tcase, &fn##_ttest, loops);                         \
    }                                                                     \
    static void fn##_fn(int _i CK_ATTRIBUTE_UNUSED)
#define TEST(fn, loops) TEST_AS(#fn, fn, loops)

/* Called by TEST's constructor: add a case to this program's list. */
void test_register(const char *tcase, const TTest *t, int loops);

/* test_run_cases over the registered TESTs, in the order they are written. */
int test_main(const char *suite, const struct test_opts *o);

/* The number of rows of a case table. */
#define TEST_N(t) (sizeof(t) / sizeof((t)[0]))

#endif
