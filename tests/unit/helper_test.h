/* helper_test.h — what several unit-test programs share (tests/unit/helper_test.c is
 * linked into every test program by the Makefile): deterministic randomness and the
 * "table of looped test cases -> suite -> run" main. */
#ifndef CUZK_TEST_HELPER_H
#define CUZK_TEST_HELPER_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

#include <cuzk/field.h>

/* splitmix64; each program seeds it once so its sequence is its own and repeatable. */
void test_rng_seed(uint64_t seed);
uint64_t test_rng64(void);

/* A uniform random scalar k < r of the given scalar field (4 limbs, canonical),
 * by rejection below r's bit length. */
void test_rand_scalar(const field_desc *Fr, uint64_t k[4]);

/* dst = the shared snarkjs fixture file FILE of set SET ("bn128", "bn128-chain", ...):
 * under $CUZK_SHARED, else ../shared (tests run from the repository's root). */
void test_shared_fixture(char *dst, size_t len, const char *set, const char *file);

/* One test case run `loops` times (Check's loop tests: _i = 0 .. loops-1). */
struct test_case {
    const char *name;
    const TTest *fn;
    int loops;
};

/* Build a suite with one tcase per case (timeout seconds each), run it, and return
 * the process exit status (EXIT_SUCCESS when nothing failed). */
int test_run_suite(const char *suite, const struct test_case *cases, size_t n, double timeout);

#endif
