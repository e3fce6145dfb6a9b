/* test_verify_prepared.c — Groth16 verification on a prepared key (groth16_vk_prepare:
 * the constant pair's Miller value and gamma2's and delta2's lines computed once)
 * against the plain four-pair check, on the reference proofs made by snarkjs (the
 * known answer: snarkjs accepts them) for BN254 and BLS12-381. Each wrong proof (a
 * public signal changed, A and C swapped, B negated) is rejected by both, and a
 * planted bug in the prepared lines makes the true proof fail: the prepared path is
 * what decides. Each loop index is a curve. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "zk/pairing.h"
#include "zk/verify.h"

#include "../../zk/verify_prep.h"
#include "helper_test.h"

static const char *const SETS[] = { "bn128", "bls12381" };

struct ref {
    groth16_vk plain, prep;
    groth16_proof proof;
    uint64_t *pub;
};

static void ref_load(struct ref *r, const char *set)
{
    char vkp[4096], prp[4096], pubp[4096], err[512];
    test_ref_fixture(vkp, sizeof vkp, set, "verification_key.json");
    test_ref_fixture(prp, sizeof prp, set, "proof_snarkjs.json");
    test_ref_fixture(pubp, sizeof pubp, set, "public_snarkjs.json");
    ck_assert_msg(groth16_vk_from_json(&r->plain, vkp, err, sizeof err) == 0, "%s: %s", vkp, err);
    ck_assert_msg(groth16_vk_from_json(&r->prep, vkp, err, sizeof err) == 0, "%s: %s", vkp, err);
    ck_assert_msg(groth16_proof_from_json(&r->plain, &r->proof, prp, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(groth16_public_from_json(&r->plain, &r->pub, pubp, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(groth16_vk_prepare(&r->prep), 0);
    ck_assert_ptr_nonnull(r->prep.prep);
    ck_assert_int_eq(groth16_vk_prepare(&r->prep), 0); /* twice: kept */
}

static void ref_free(struct ref *r)
{
    groth16_vk_free(&r->plain);
    groth16_vk_free(&r->prep);
    groth16_vk_free(&r->prep); /* a freed key is accepted again */
    free(r->pub);
}

/* Both keys' verdict on (proof, public), which must agree; returns it. */
static bool verdict(struct ref *r, const groth16_proof *p, const uint64_t *pub)
{
    char err[256];
    bool v1 = false, v2 = false;
    ck_assert_int_eq(groth16_verify_proof(&r->plain, p, pub, r->plain.npublic, &v1, err, sizeof err), 0);
    ck_assert_int_eq(groth16_verify_proof(&r->prep, p, pub, r->prep.npublic, &v2, err, sizeof err), 0);
    ck_assert_int_eq(v1, v2);
    return v2;
}

TEST(test_verify_prepared_agrees_with_plain, 2)
{
    struct ref r = { 0 };
    ref_load(&r, SETS[_i]);
    ck_assert(verdict(&r, &r.proof, r.pub)); /* snarkjs's own proof */
    ck_assert_uint_gt(r.plain.npublic, 0);
    uint64_t *pub = malloc(r.plain.npublic * 4 * sizeof *pub);
    ck_assert_ptr_nonnull(pub);
    memcpy(pub, r.pub, r.plain.npublic * 4 * sizeof *pub);
    pub[0] ^= 1; /* a public signal changed */
    ck_assert(!verdict(&r, &r.proof, pub));
    groth16_proof q = r.proof; /* A and C swapped */
    memcpy(q.a, r.proof.c, sizeof q.a);
    memcpy(q.c, r.proof.a, sizeof q.c);
    ck_assert(!verdict(&r, &q, r.pub));
    q = r.proof; /* B negated */
    ec_aff_neg(r.plain.g2, q.b, r.proof.b);
    ck_assert(!verdict(&r, &q, r.pub));
    free(pub);
    ref_free(&r);
}
END_TEST

/* A planted bug in the prepared key (one coefficient of delta2's lines, or the
 * constant pair's value) makes snarkjs's true proof fail on it, and only on it. */
TEST(test_verify_prepared_planted_bug_is_caught, 2)
{
    struct ref r = { 0 };
    char err[256];
    bool valid = true;
    ref_load(&r, SETS[_i]);
    struct groth16_vk_prep *prep = r.prep.prep;
    prep->delta2.c[7] ^= 1;
    ck_assert_int_eq(groth16_verify_proof(&r.prep, &r.proof, r.pub, r.prep.npublic, &valid, err, sizeof err),
                     0);
    ck_assert(!valid);
    ck_assert_str_eq(err, "invalid proof: the pairing check fails");
    prep->delta2.c[7] ^= 1;
    ck_assert(verdict(&r, &r.proof, r.pub));
    prep->ab[0] ^= 2;
    ck_assert_int_eq(groth16_verify_proof(&r.prep, &r.proof, r.pub, r.prep.npublic, &valid, err, sizeof err),
                     0);
    ck_assert(!valid);
    ref_free(&r);
}
END_TEST

int main(void)
{
    const struct test_opts o = { .timeout = 120 };
    return test_main("verify_prepared", &o);
}
