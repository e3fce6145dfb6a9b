/* fingerprint.h — a circuit's fingerprint, computed alike from its zkey and from its
 * r1cs, so a witness generator (built from the r1cs's circuit) can be matched to a
 * zkey: two circuits with the same curve and witness size but other constraints get
 * other fingerprints.
 *
 * The zkey has no r1cs hash (its section 10 csHash covers the ptau's points too), but
 * its section 4 is the r1cs's A and B matrices plus snarkjs's nPublic+1 input rows
 * (spec §3.3), so the fingerprint hashes exactly that content, in a form that does not
 * depend on how a writer ordered or split the entries:
 *
 *   SHA-256 of
 *     "cuzk-circuit-fp-v1" (18 bytes)
 *     u32 n8r, r (n8r bytes LE), u32 nVars, u32 nPublic, u32 domainSize
 *     for every nonzero (constraint, matrix, signal) of A and B, in increasing
 *     (constraint, matrix, signal) order, duplicates summed:
 *       u32 constraint, u32 matrix (0 = A, 1 = B), u32 signal,
 *       n8r bytes: the value as the zkey stores it, coef*Rr^2 mod r, canonical LE
 *     u64 number of entries hashed
 *   (all integers LE). From an r1cs: nVars = nWires, nPublic = nPubOut + nPubIn,
 *   domainSize the smallest power of two above nConstraints + nPublic (snarkjs's
 *   rule, spec §3.2), rows c < nConstraints from the constraints' A and B, and rows
 *   nConstraints + i (i = 0..nPublic) holding (A, signal i, 1).
 *
 * The values are hashed in the zkey's encoding so that the zkey side, which runs in
 * every synth process per circuit, costs no arithmetic in the common case: a zkey whose
 * entries are already in that order (snarkjs writes them row by row) is hashed in one
 * streaming pass over the mapping; any other order is sorted first (16 bytes of index
 * per entry). The r1cs side (once, in `cuzk build-witness --r1cs`) multiplies each
 * coefficient by Rr^2 and sorts each row by signal.
 *
 * A check against mix-ups, not a security measure: whoever can rewrite a generator can
 * make it compute anything. SHA-256 is OpenSSL's (libcrypto). */
#ifndef CUZK_FINGERPRINT_H
#define CUZK_FINGERPRINT_H

#include <stddef.h>
#include <stdint.h>

#define FP_BYTES 32
#define FP_HEX   (2 * FP_BYTES + 1)

struct zkey;
struct r1cs;

/* The zkey's fingerprint into out. Computed on the first call and kept in z (later
 * calls copy it): not for two threads at once on one zkey. 0, or -CUZK_E_INTERNAL (out
 * of memory for the sort, libcrypto failure) with err set; z unchanged then. */
int fp_of_zkey(const struct zkey *z, uint8_t out[FP_BYTES], char *err, size_t errlen);

/* The fingerprint of the circuit an r1cs describes (the zkey that snarkjs groth16
 * setup makes from it has the same one). 0, or -CUZK_E_INTERNAL (out of memory,
 * libcrypto) or -CUZK_E_UNSUPPORTED (so many constraints that no domain fits) with err
 * set. r must have been opened by r1cs_open (its section 2 is checked there). */
int fp_of_r1cs(const struct r1cs *r, uint8_t out[FP_BYTES], char *err, size_t errlen);

/* Lower-case hex, NUL-terminated. */
void fp_hex(const uint8_t fp[FP_BYTES], char out[FP_HEX]);

#endif
