/* test_fixed_base.c — the CPU worker's fixed-base tables (gpuworker/fixed_base.c) and
 * groth16_compute_tables, on the bn128 and bls12381 chain fixtures:
 *   - a circuit gets no tables before its CUZK_FIXED_BASE_AFTER-th proof, then the
 *     builder thread makes all five (waited for, a liveness bound only), and the five
 *     MSM results through them equal groth16_compute's without;
 *   - a second mapping of the same file (another key, as each job's copy is) finds the
 *     same tables: a circuit is its bases, not its file;
 *   - with a budget that holds one circuit's tables, the other circuit's build drops
 *     the least recently proved one's (evictions 1), bytes within the budget;
 *   - budget 0: nothing is counted, built or handed out. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "gpuworker/fixed_base.h"
#include "helper_test.h"
#include "zk/wtns.h"

/* One circuit opened as the worker holds it: the zkey, its key, a witness. */
struct circ {
    zkey z;
    wtns w;
    struct backend_key key;
};

static void circ_open(struct circ *c, const char *set)
{
    char zp[4096], wp[4096], err[512];
    struct stat sb;

    test_ref_fixture(zp, sizeof zp, set, "circuit_final.zkey");
    test_ref_fixture(wp, sizeof wp, set, "witness.wtns");
    memset(c, 0, sizeof *c);
    ck_assert_msg(zkey_open(&c->z, zp, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(wtns_open(&c->w, wp, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(stat(zp, &sb), 0);
    backend_key_of(&c->key, sb.st_dev, sb.st_ino, sb.st_size, &sb.st_mtim);
}

static void circ_close(struct circ *c)
{
    zkey_close(&c->z);
    wtns_close(&c->w);
}

/* One proof's compute step as the CPU backend runs it; the tables it used counted. */
static void prove(const struct circ *c, const struct backend_key *key, groth16_raw *raw, unsigned *msms,
                  int with_tables)
{
    const size_t n = c->z.domain_size, bytes = n * 4 * sizeof(uint64_t);
    uint64_t *a = aligned_alloc(64, 3 * bytes);
    groth16_tables tabs;

    ck_assert_ptr_nonnull(a);
    ck_assert_int_eq(groth16_synth(&c->z, c->w.values, a, a + 4 * n, a + 8 * n, 2, NULL), 0);
    struct fixed_base_entry *e = with_tables ? fixed_base_acquire(&c->z, key, &tabs) : NULL;
    *msms = 0;
    ck_assert_int_eq(groth16_compute_tables(&c->z, c->w.values, a, a + 4 * n, a + 8 * n, raw, 2, NULL,
                                            e ? &tabs : NULL, msms),
                     0);
    fixed_base_release(e, *msms);
    free(a);
}

static int raw_eq(const zkey *z, const groth16_raw *x, const groth16_raw *y)
{
    return ec_jac_eq(z->g1, x->a, y->a) && ec_jac_eq(z->g1, x->b1, y->b1) && ec_jac_eq(z->g2, x->b2, y->b2) &&
        ec_jac_eq(z->g1, x->c, y->c) && ec_jac_eq(z->g1, x->h, y->h);
}

/* Until the builder is idle (liveness bound: 120 s). */
static void wait_idle(void)
{
    fixed_base_stats st;

    for (int i = 0; i < 12000; i++) {
        fixed_base_get_stats(&st);
        if (!st.pending) return;
        nanosleep(&(struct timespec){ 0, 10000000L }, NULL);
    }
    ck_abort_msg("the fixed-base builder did not finish in 120 s");
}

TEST(test_tables_after_threshold_same_results, 1)
{
    struct circ c;
    groth16_raw want, got;
    fixed_base_stats st;
    unsigned msms;

    setenv("CUZK_FIXED_BASE_AFTER", "3", 1);
    fixed_base_set_budget(64u << 20);
    circ_open(&c, "bn128-chain");
    prove(&c, &c.key, &want, &msms, 0);
    for (int i = 0; i < 2; i++) { /* proofs 1 and 2: not due yet */
        prove(&c, &c.key, &got, &msms, 1);
        ck_assert_uint_eq(msms, 0);
        ck_assert(raw_eq(&c.z, &want, &got));
    }
    wait_idle();
    fixed_base_get_stats(&st);
    ck_assert_uint_eq(st.built, 0);
    prove(&c, &c.key, &got, &msms, 1); /* the 3rd: due, built in the background */
    ck_assert(raw_eq(&c.z, &want, &got));
    wait_idle();
    fixed_base_get_stats(&st);
    ck_assert_uint_eq(st.built, 5);
    ck_assert_uint_gt(st.bytes, 0);
    ck_assert_uint_le(st.bytes, 64u << 20);
    prove(&c, &c.key, &got, &msms, 1);
    ck_assert_uint_eq(msms, 5);
    ck_assert_msg(raw_eq(&c.z, &want, &got), "the MSMs through the tables differ from msm_run's");

    /* Another file key for the same bytes (a job's own copy): the same tables. */
    struct backend_key other = c.key;
    other.ino ^= 0x5a5a;
    prove(&c, &other, &got, &msms, 1);
    ck_assert_uint_eq(msms, 5);
    ck_assert(raw_eq(&c.z, &want, &got));
    fixed_base_get_stats(&st);
    ck_assert_uint_eq(st.built, 5);
    circ_close(&c);
}
END_TEST

TEST(test_least_recent_circuit_evicted, 1)
{
    struct circ bn, bls;
    groth16_raw want, got;
    fixed_base_stats st0, st;
    unsigned msms;

    setenv("CUZK_FIXED_BASE_AFTER", "1", 1);
    circ_open(&bn, "bn128-chain");
    circ_open(&bls, "bls12381-chain");
    /* Room for either chain's tables (0.58 and 0.87 MB), not both. */
    fixed_base_set_budget(1u << 20);
    fixed_base_get_stats(&st0);
    prove(&bn, &bn.key, &got, &msms, 1);
    wait_idle();
    prove(&bls, &bls.key, &want, &msms, 0);
    prove(&bls, &bls.key, &got, &msms, 1);
    wait_idle();
    fixed_base_get_stats(&st);
    ck_assert_uint_le(st.bytes, 1u << 20);
    ck_assert_uint_ge(st.evictions - st0.evictions, 1);
    prove(&bls, &bls.key, &got, &msms, 1);
    ck_assert_uint_eq(msms, 5);
    ck_assert(raw_eq(&bls.z, &want, &got));

    /* Budget 0: tables dropped, nothing handed out. */
    fixed_base_set_budget(0);
    fixed_base_get_stats(&st);
    ck_assert_uint_eq(st.bytes, 0);
    prove(&bls, &bls.key, &got, &msms, 1);
    ck_assert_uint_eq(msms, 0);
    ck_assert(raw_eq(&bls.z, &want, &got));
    circ_close(&bn);
    circ_close(&bls);
}
END_TEST

int main(void)
{
    const struct test_opts o = { .timeout = 300 };

    return test_main("fixed_base", &o);
}
