/* zkey.h — the snarkjs Groth16 proving key (.zkey, spec §3), mapped read-only.
 *
 * zkey_open validates everything the prover relies on, once, so the prover can index
 * the sections without further checks:
 *   magic "zkey", version 1 or 2; sections 1-9 present and unique (3, IC, is checked
 *   for size only; 10 is ignored); protocol id 1 (groth16); the curve from q and r
 *   (BN254 or BLS12-381); n8q/n8r equal to the curve's; domainSize a power of two
 *   with log2 below the Fr 2-adicity (spec §4.7: 2^28 and up refused on BN254);
 *   nPublic + 1 <= nVars; every section's exact size; the six header points on their
 *   curves; and every coefficient entry (matrix in {0,1}, constraint < domainSize,
 *   signal < nVars, value < r) in one linear pass (~44 bytes per entry, memory speed).
 * Point sections 3, 5-9 are not checked point by point (that would be an MSM-sized
 * cost per open); their bytes are used as Montgomery affine coordinates as they lie. */
#ifndef CUZK_ZKEY_H
#define CUZK_ZKEY_H

#include <stddef.h>
#include <stdint.h>

#include "zk/binfile.h"
#include "zk/curve.h"
#include "zk/field.h"

typedef struct zkey {
    binfile bf;
    const field_desc *Fq, *Fr;
    const curve_group *g1, *g2;
    uint32_t n8q, n8r, nvars, npublic, domain_size, lg_domain;
    /* header points, affine Montgomery, copied into aligned storage */
    uint64_t alpha1[EC_MAX_AFF], beta1[EC_MAX_AFF], beta2[EC_MAX_AFF], gamma2[EC_MAX_AFF], delta1[EC_MAX_AFF],
        delta2[EC_MAX_AFF];
    const uint8_t *coefs; /* section 4 entries (after the u32 count): ncoefs x (12+n8r) bytes, packed */
    uint64_t ncoefs;
    const uint8_t *ic;     /* section 3: (npublic+1) G1 */
    const uint8_t *a, *b1; /* sections 5, 6: nvars G1 */
    const uint8_t *b2;     /* section 7: nvars G2 */
    const uint8_t *c;      /* section 8: (nvars-npublic-1) G1, entry j for signal npublic+1+j */
    const uint8_t *h;      /* section 9: domain_size G1 */
    /* All of the above point into the mapping: possibly misaligned (spec §1). */
    /* the circuit fingerprint (fingerprint.h), filled by fp_of_zkey on first use */
    uint8_t fp[32];
    int fp_done;
} zkey;

/* Opens and validates (see above). Returns 0, or on failure (z left closed):
 *   -CUZK_E_IO, -CUZK_E_TRUNCATED, -CUZK_E_FORMAT (as binfile_open; also wrong sizes,
 *       bad counts, off-curve header points, out-of-range coefficient entries),
 *   -CUZK_E_UNSUPPORTED (PLONK/FFLONK or unknown protocol id, unknown curve, version > 2),
 *   -CUZK_E_INTERNAL (out of memory). */
int zkey_open(zkey *z, const char *path, char *err, size_t errlen);

/* Accepts a zeroed or already-closed struct. */
void zkey_close(zkey *z);

/* Decodes coefficient entry i < ncoefs (memcpy; no packed struct). value receives
 * n8r/8 limbs, raw as stored: the canonical integer coef*Rr^2 mod r (spec §3.3), i.e.
 * a Montgomery-form element whose value is coef*Rr. */
void zkey_coef(const zkey *z, uint64_t i, uint32_t *matrix, uint32_t *constraint, uint32_t *signal,
               uint64_t *value);

#endif
