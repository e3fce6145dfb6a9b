/* verify.h — Groth16 verification, snarkjs-compatible.
 *
 * A proof (A, B, C) with public signals s_1..s_l is valid when
 *   e(A, B) = e(alpha1, beta2) · e(vk_x, gamma2) · e(C, delta2),  vk_x = IC[0] + sum s_i IC[i],
 * checked as one product e(-A, B) e(alpha1, beta2) e(vk_x, gamma2) e(C, delta2) = 1
 * with a single final exponentiation (pairing_multi_check).
 *
 * The key comes from a zkey (groth16_vk_from_zkey) or from snarkjs's
 * verification_key.json; the proof and the public signals from proof.json and
 * public.json (spec §6). Inputs are checked as snarkjs checks them, and more:
 *   - every number is a decimal string of a canonical integer: coordinates < q,
 *     public signals < r (snarkjs refuses >= r too);
 *   - lengths: 3 coordinates per point, 2 per Fq2 element, nPublic + 1 IC points,
 *     exactly nPublic public signals;
 *   - key points on their curves and the G2 ones in the order-r subgroup (r·Q = O);
 *   - proof points on their curves, B in the order-r subgroup (snarkjs checks only the
 *     curve; B outside it could not pass the product anyway, the check makes that a
 *     stated reason), and on BLS12-381, whose G1 has a cofactor, A and C as well.
 * A proof point off its curve or outside its subgroup makes the proof invalid (with
 * the reason), not the input malformed: it is what a changed coordinate produces.
 * Only affine points are read: z = "1" (["1","0"] for G2), or z = "0" for infinity. */
#ifndef CUZK_VERIFY_H
#define CUZK_VERIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zk/curve.h"
#include "zk/groth16.h"
#include "zk/zkey.h"

typedef struct groth16_vk {
    const field_desc *Fq, *Fr;
    const curve_group *g1, *g2;
    uint32_t npublic;
    /* affine Montgomery, (0, 0) = infinity */
    uint64_t alpha1[EC_MAX_AFF], beta2[EC_MAX_AFF], gamma2[EC_MAX_AFF], delta2[EC_MAX_AFF];
    uint64_t *ic;                 /* (npublic + 1) G1 points, 2n limbs each, malloc'd */
    struct groth16_vk_prep *prep; /* groth16_vk_prepare's, or NULL */
} groth16_vk;

/* Copies the key out of an open zkey (the zkey may be closed afterwards) and checks
 * the IC points on the curve and beta2, gamma2, delta2 in the subgroup. Returns 0,
 * -CUZK_E_FORMAT (with the reason in err), or -CUZK_E_INTERNAL (out of memory); on
 * failure *vk holds nothing to free. */
int groth16_vk_from_zkey(groth16_vk *vk, const zkey *z, char *err, size_t errlen);

/* Reads snarkjs's verification_key.json. Returns 0, or (with a sentence in err, *vk
 * holding nothing to free): -CUZK_E_IO (unreadable), -CUZK_E_FORMAT (not JSON, a field
 * missing or of the wrong type or length, a number not decimal or >= q, a point off
 * its curve or outside its subgroup), -CUZK_E_UNSUPPORTED (protocol not "groth16",
 * unknown curve), -CUZK_E_INTERNAL (out of memory). */
int groth16_vk_from_json(groth16_vk *vk, const char *path, char *err, size_t errlen);

/* Readies the key for many verifications (a daemon's finalizer: every proof of a
 * circuit against one key): the Miller loop value of the constant pair (alpha1, beta2)
 * and the lines of gamma2's and delta2's loops, once, so that each check runs one full
 * Miller loop (-A, B), two over prepared lines (vk_x, C) and one final exponentiation.
 * The check itself is unchanged. Costs about one verification; a key used once
 * (prove-local, cuzk verify) is better left unprepared. Returns 0 or -CUZK_E_INTERNAL
 * (out of memory, or no pairing for the curve; the key stays usable, unprepared). */
int groth16_vk_prepare(groth16_vk *vk);

/* Accepts a zeroed or already-freed key. */
void groth16_vk_free(groth16_vk *vk);

/* Reads proof.json for the key's curve: pi_a, pi_b, pi_c (protocol and curve fields
 * are not needed and, as in snarkjs, not read). Coordinates are parsed, range
 * checked and converted to Montgomery form; curve membership is left to
 * groth16_verify_proof. Returns 0, -CUZK_E_IO or -CUZK_E_FORMAT with err. */
int groth16_proof_from_json(const groth16_vk *vk, groth16_proof *p, const char *path, char *err,
                            size_t errlen);

/* Reads public.json: exactly vk->npublic decimal strings < r, into *out (malloc'd,
 * npublic × 4 canonical limbs; NULL when npublic is 0). Returns 0, -CUZK_E_IO,
 * -CUZK_E_FORMAT (also for a wrong count: the message names both counts) or
 * -CUZK_E_INTERNAL; *out is NULL on failure. */
int groth16_public_from_json(const groth16_vk *vk, uint64_t **out, const char *path, char *err,
                             size_t errlen);

/* Verifies. public_canon: npublic × 4 limbs, canonical (not Montgomery). Returns 0
 * with *valid set (when false, err says why when it is known: a point off its curve
 * or outside its subgroup, or "the pairing check fails"), or -CUZK_E_FORMAT when
 * npublic differs from the key's or a signal is >= r (*valid unchanged). */
int groth16_verify_proof(const groth16_vk *vk, const groth16_proof *p, const uint64_t *public_canon,
                         size_t npublic, bool *valid, char *err, size_t errlen);

/* A proof just made from a witness, checked before it is published (the finalizer,
 * prove-local, cuzk-gpuworker prove): groth16_verify_proof against vk with the public
 * signals 1..nPublic of values (the witness in the zkey's layout, canonical). Returns
 * 0 when it holds; -CUZK_E_UNSATISFIED when it does not, err saying "the witness does
 * not satisfy the circuit, or the computation was faulty: the proof fails verification
 * (WHY)"; else the verifier's error (-CUZK_E_INTERNAL: out of memory) with err. */
int groth16_verify_witness(const groth16_vk *vk, const zkey *z, const uint8_t *values, const groth16_proof *p,
                           char *err, size_t errlen);

/* A proof just made, checked by its prover (prove-local): the pairing product of
 * groth16_verify_witness against the zkey's own key, with the points checked on their
 * curves but not in their subgroups, since the proof is the prover's own and what the
 * subgroup checks guard against, a point chosen to pass a verifier, is its verifier's
 * concern (snarkjs, cuzk verify). Only when that fails are the full checks run, so the
 * reason given is theirs (a key point outside G2 rather than a failed pairing). Returns
 * as groth16_verify_witness, or groth16_vk_from_zkey's error. */
int groth16_self_check(const zkey *z, const uint8_t *values, const groth16_proof *p, char *err,
                       size_t errlen);

#endif
