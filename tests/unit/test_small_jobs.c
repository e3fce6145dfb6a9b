/* test_small_jobs.c — a small proof's NTTs and witness MSMs run as jobs at once
 * (groth16.c, "small proofs"): with two threads or more and a domain up to 2^15,
 * groth16_compute and groth16_prove take that path; with one thread, the steps one
 * after another. Both must give the same five MSM results and the same proof, on both
 * curves, whatever number of threads the team hands out (3 threads: more than there
 * are long jobs at the end; 8: more threads than jobs). The proofs themselves are
 * checked by snarkjs in the prove-local tests, which run at the machine's thread count. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "helper_test.h"
#include "zk/groth16.h"
#include "zk/wtns.h"

struct circ {
    zkey z;
    wtns w;
};

static void circ_open(struct circ *c, const char *set)
{
    char zp[4096], wp[4096], err[512];

    test_ref_fixture(zp, sizeof zp, set, "circuit_final.zkey");
    test_ref_fixture(wp, sizeof wp, set, "witness.wtns");
    memset(c, 0, sizeof *c);
    ck_assert_msg(zkey_open(&c->z, zp, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(wtns_open(&c->w, wp, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(c->z.lg_domain <= 15, "%s: domain 2^%u, above the jobs' limit: the test needs a small one",
                  set, (unsigned)c->z.lg_domain);
}

static void circ_close(struct circ *c)
{
    zkey_close(&c->z);
    wtns_close(&c->w);
}

/* The five MSM results of one proof computed on threads threads. */
static void compute(const struct circ *c, unsigned threads, groth16_raw *raw)
{
    const size_t n = c->z.domain_size, bytes = n * 4 * sizeof(uint64_t);
    uint64_t *a = aligned_alloc(64, 3 * bytes);
    groth16_timings t;

    ck_assert_ptr_nonnull(a);
    memset(&t, 0, sizeof t);
    ck_assert_int_eq(groth16_synth(&c->z, c->w.values, a, a + 4 * n, a + 8 * n, threads, NULL), 0);
    ck_assert_int_eq(groth16_compute(&c->z, c->w.values, a, a + 4 * n, a + 8 * n, raw, threads, &t), 0);
    /* every step of the jobs path is accounted for */
    ck_assert(t.ntt > 0 && t.msm_a > 0 && t.msm_b1 > 0 && t.msm_b2 > 0 && t.msm_c > 0 && t.msm_h > 0);
    free(a);
}

static int raw_eq(const zkey *z, const groth16_raw *x, const groth16_raw *y)
{
    return ec_jac_eq(z->g1, x->a, y->a) && ec_jac_eq(z->g1, x->b1, y->b1) && ec_jac_eq(z->g2, x->b2, y->b2) &&
        ec_jac_eq(z->g1, x->c, y->c) && ec_jac_eq(z->g1, x->h, y->h);
}

static const char *const sets[] = { "bn128-chain", "bls12381-chain" };

TEST(test_jobs_equal_steps_one_after_another, TEST_N(sets))
{
    struct circ c;
    groth16_raw want, got;
    static const unsigned threads[] = { 2, 3, 8 };

    circ_open(&c, sets[_i]);
    compute(&c, 1, &want);
    for (size_t k = 0; k < TEST_N(threads); k++) {
        compute(&c, threads[k], &got);
        ck_assert_msg(raw_eq(&c.z, &want, &got),
                      "%s: %u threads (jobs at once) differ from 1 (one after another)", sets[_i],
                      threads[k]);
    }
    circ_close(&c);
}
END_TEST

/* groth16_prove (prove-local's path, which frees b and c early on the other path):
 * the same proof for the same blinding. */
TEST(test_prove_same_proof, TEST_N(sets))
{
    struct circ c;
    groth16_blind bl;
    groth16_proof p1, p2;
    char err[256];

    circ_open(&c, sets[_i]);
    memset(&p1, 0, sizeof p1); /* the limbs a curve does not use are not written */
    memset(&p2, 0, sizeof p2);
    groth16_blind_from_seed(&c.z, 7, &bl);
    ck_assert_msg(groth16_prove(&c.z, &c.w, &bl, &p1, 1, NULL, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(groth16_prove(&c.z, &c.w, &bl, &p2, 2, NULL, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(!memcmp(&p1, &p2, sizeof p1), "%s: the proof on 2 threads differs from 1's", sets[_i]);
    circ_close(&c);
}
END_TEST

int main(void)
{
    const struct test_opts o = { .timeout = 300 };

    return test_main("small_jobs", &o);
}
