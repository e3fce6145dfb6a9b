/* r1cs.h — circom constraint systems (.r1cs), mapped read-only, and a witness check.
 *
 * Format (magic "r1cs", version 1; sections in any order, circom writes 2,1,3):
 *   section 1, header: u32 n8, prime (n8 bytes, plain LE), u32 nWires, u32 nPubOut,
 *     u32 nPubIn, u32 nPrvIn, u64 nLabels, u32 nConstraints      (n8 + 32 bytes)
 *   section 2, constraints: nConstraints x (A, B, C), each linear combination
 *     u32 nTerms then nTerms x (u32 wireId, n8-byte coefficient, canonical LE < prime)
 *   section 3, wire -> label map (u64 per wire): not read.
 * The constraint is <A,w> * <B,w> = <C,w> over the prime field, w the witness (wire i
 * is witness value i). r1cs_open checks the whole of section 2 (term counts, wire ids
 * < nWires, coefficients < prime, exact size), so the check below cannot run off it. */
#ifndef CUZK_R1CS_H
#define CUZK_R1CS_H

#include <stddef.h>
#include <stdint.h>

#include "zk/binfile.h"
#include "zk/field.h"

struct wtns;

typedef struct r1cs {
    binfile bf;
    const field_desc *Fr;
    uint32_t n8, nwires, npubout, npubin, nprvin, nconstraints;
    uint64_t nlabels;
    const uint8_t *constraints; /* section 2 payload, possibly misaligned */
    uint64_t constraints_size;
} r1cs;

/* 0, or on failure (r left closed) the binfile_open codes, -CUZK_E_FORMAT for a bad
 * header or constraint section, -CUZK_E_UNSUPPORTED for a prime that is not BN254 or
 * BLS12-381 Fr. */
int r1cs_open(r1cs *r, const char *path, char *err, size_t errlen);

/* Checks every constraint <A,w>*<B,w> = <C,w> for the canonical witness values
 * (nwitness entries of n8 bytes, possibly misaligned). Returns 0; -CUZK_E_MISMATCH if
 * nwitness != nwires; -CUZK_E_FORMAT if a value is not below the prime;
 * -CUZK_E_UNSATISFIED with *bad (if bad != NULL) = the first failing constraint and the
 * message "witness does not satisfy constraint 17 of circuit.r1cs". Single-threaded:
 * two Montgomery products per term. */
int r1cs_check_witness(const r1cs *r, const uint8_t *values, uint32_t nwitness, uint32_t *bad, char *err,
                       size_t errlen);

/* r1cs_check_witness for a .wtns, after checking that its prime is the r1cs prime
 * (-CUZK_E_MISMATCH otherwise). */
int r1cs_check_wtns(const r1cs *r, const struct wtns *w, uint32_t *bad, char *err, size_t errlen);

/* Accepts a zeroed or already-closed struct. */
void r1cs_close(r1cs *r);

#endif
